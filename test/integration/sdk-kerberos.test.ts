/**
 * Kerberos (SASL GSSAPI) through corral's own gRPC port with a real KDC (Debian's MIT krb5kdc on
 * 127.0.0.1, a throw-away realm, test/helpers/kerberos-kdc.ts): the SDK and `corral shell` log in
 * with a JAAS Client section's Krb5LoginModule (a keytab, or a ticket cache) to a three-voter
 * corral whose JAAS Server section holds the service's keytab. A `sasl` ACL on the principal admits
 * it on every server and refuses another principal (NOAUTH); under sessionRequireClientSaslAuth a
 * client without a ticket is refused, reported as a failed DIGEST-MD5 login is (AUTHFAILED).
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client, saslFromJaasFile, ZkError } from "../../src/index.js";
import { runShell } from "../helpers/cli-process.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { kerberosKeytabJaas, kerberosTicketCacheJaas } from "../helpers/jaas-files.js";
import { startServiceRealm, type KerberosKdc } from "../helpers/kerberos-kdc.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { waitFor } from "../helpers/wait.js";

const REALM = "SDKTEST.ORG";
/** The service principal; the SDK asks for zookeeper@<the host it dials>, 127.0.0.1 here. */
const SERVICE = "zookeeper/127.0.0.1";

const isCode = (code: string) => (error: unknown) => error instanceof ZkError && error.code === code;

describe("Kerberos (GSSAPI) on the gRPC port: the SDK and corral shell", { concurrency: 1 }, () => {
  let kdc: KerberosKdc;
  let cluster: ClusterProcess;
  let serverEnv: Record<string, string>;
  let jaasDir: string;
  let keytabs: Record<string, string>;
  const savedEnv = { KRB5_CONFIG: process.env.KRB5_CONFIG, KRB5CCNAME: process.env.KRB5CCNAME };

  before(async () => {
    ({ kdc, keytabs, jaasDir, serverEnv } = await startServiceRealm(REALM, SERVICE, ["client", "bob"]));
    await writeFile(join(jaasDir, "client.jaas"), kerberosKeytabJaas("Client", `client@${REALM}`, keytabs.client!));
    await writeFile(join(jaasDir, "bob.jaas"), kerberosKeytabJaas("Client", `bob@${REALM}`, keytabs.bob!));
    // This process's Kerberos library reads the realm's configuration, and no cache outside the temp dir.
    process.env.KRB5_CONFIG = kdc.krb5Conf;
    process.env.KRB5CCNAME = `FILE:${join(kdc.dir, "default-cache")}`;
    cluster = await ClusterProcess.start({ voters: 3, tickMs: 500, env: serverEnv, config: { jaasConfigFile: join(jaasDir, "server.jaas") } });
    await waitFor("a leader every server agrees on", () => cluster.agreedLeader(), 60_000);
  });

  after(async () => {
    await cluster?.stop();
    await kdc?.stop();
    for (const [name, value] of Object.entries(savedEnv)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  test("the SDK with a keytab JAAS section: its sasl ACL admits it on every server and refuses another principal (NOAUTH)", async () => {
    const servers = [...cluster.servers.values()];
    const owner = await Client.connect(servers[0]!.connectString, { sasl: saslFromJaasFile(join(jaasDir, "client.jaas")) });
    try {
      assert.deepEqual(
        (await owner.whoAmI()).map((info) => `${info.authScheme}:${info.user}`),
        [`sasl:client@${REALM}`, "ip:127.0.0.1"],
      );
      await owner.create("/sdk-krb", "guarded", { acl: [{ perms: 31, id: { scheme: "sasl", id: `client@${REALM}` } }] });
    } finally {
      await owner.close();
    }
    for (const server of servers.slice(1)) {
      const again = await Client.connect(server.connectString, { sasl: saslFromJaasFile(join(jaasDir, "client.jaas")) });
      const bob = await Client.connect(server.connectString, { sasl: saslFromJaasFile(join(jaasDir, "bob.jaas")) });
      try {
        await again.sync("/sdk-krb");
        assert.equal(Buffer.from((await again.getData("/sdk-krb")).data).toString(), "guarded");
        await assert.rejects(bob.getData("/sdk-krb"), isCode("NOAUTH"));
      } finally {
        await again.close();
        await bob.close();
      }
    }
  });

  test("corral shell with a Kerberos JAAS Client section (keytab, or ticket cache) reads what its principal may, and is refused what it may not", async () => {
    const servers = [...cluster.servers.values()];
    const krb5Conf = `-Djava.security.krb5.conf=${kdc.krb5Conf}`;
    // The shell's own environment names no configuration of this realm: zkCli's property must.
    const env = { KRB5_CONFIG: join(kdc.dir, "absent.conf") };
    const owner = await runShell(
      ["--connect", servers[1]!.connectString, "--jaas-config", join(jaasDir, "client.jaas"), krb5Conf],
      `create /shell-krb data sasl:client@${REALM}:cdrwa\ngetAcl /shell-krb\nwhoami\nget /shell-krb\n`,
      env,
    );
    assert.deepEqual([owner.code, owner.stderr], [0, ""]);
    assert.equal(
      owner.stdout,
      ["Created /shell-krb", `'sasl,'client@${REALM}`, ": cdrwa", "Auth scheme: User", `sasl: client@${REALM}`, "ip: 127.0.0.1", "data", ""].join("\n"),
    );
    // A ticket cache kinit filled, named by the JAAS section; the configuration by zkCli's CLIENT_JVMFLAGS.
    const cache = join(kdc.dir, "shell-cache");
    kdc.kinit("client", keytabs.client!, cache);
    await writeFile(join(jaasDir, "cache.jaas"), kerberosTicketCacheJaas(cache));
    const fromCache = await runShell(["--connect", servers[2]!.connectString, "--jaas-config", join(jaasDir, "cache.jaas")], "get /shell-krb\n", {
      ...env,
      CLIENT_JVMFLAGS: krb5Conf,
    });
    assert.deepEqual([fromCache.code, fromCache.stdout, fromCache.stderr], [0, "data\n", ""]);
    const bob = await runShell(["--connect", servers[2]!.connectString, "--jaas-config", join(jaasDir, "bob.jaas"), krb5Conf], "get /shell-krb\nwhoami\n", env);
    assert.equal(bob.code, 1);
    assert.equal(bob.stderr, "Insufficient permission : /shell-krb\n");
    // In ZooKeeper's hash order of the ids, which puts bob's after the address (client's before it).
    assert.equal(bob.stdout, ["Auth scheme: User", "ip: 127.0.0.1", `sasl: bob@${REALM}`, ""].join("\n"));
  });

  test("with sessionRequireClientSaslAuth, a client without a ticket is refused (AUTHFAILED, as a failed DIGEST-MD5 login) and one with a ticket served", async () => {
    const server = await ServerProcess.start({
      dataDir: join(kdc.dir, "required-data"),
      zkPort: await freePort(),
      env: serverEnv,
      extraArgs: ["--jaas-config-file", join(jaasDir, "server.jaas"), "--session-require-client-sasl-auth", "true"],
    });
    try {
      const emptyCache = join(kdc.dir, "empty-cache");
      await writeFile(join(jaasDir, "required.jaas"), kerberosTicketCacheJaas(emptyCache));
      const noTicket = saslFromJaasFile(join(jaasDir, "required.jaas"));
      await assert.rejects(Client.connect(server.connectString, { sasl: noTicket, connectTimeoutMs: 20_000 }), isCode("AUTHFAILED"));
      const shell = await runShell(["--connect", server.connectString, "--jaas-config", join(jaasDir, "required.jaas")], "ls /zookeeper\n");
      assert.equal(shell.code, 1);
      assert.ok(shell.stdout.includes("WatchedEvent state:AuthFailed type:None path:null"), shell.stdout);
      assert.doesNotMatch(shell.stdout, /\[config, quota\]/);
      // Without any SASL the server refuses the session's requests, as it does any client's.
      const anonymous = await Client.connect(server.connectString, { connectTimeoutMs: 20_000 });
      try {
        await assert.rejects(anonymous.exists("/zookeeper"), isCode("SESSIONCLOSEDREQUIRESASLAUTH"));
      } finally {
        await anonymous.close().catch(() => undefined);
      }
      // The same section once the cache has a ticket.
      kdc.kinit("client", keytabs.client!, emptyCache);
      const served = await Client.connect(server.connectString, { sasl: noTicket });
      try {
        assert.notEqual(await served.exists("/zookeeper"), null);
      } finally {
        await served.close();
      }
      assert.ok(server.running);
    } finally {
      await server.stop();
    }
  });
});
