/**
 * Kerberos (SASL GSSAPI) on corral's ZooKeeper port with a real KDC: Debian's MIT krb5kdc started
 * here on 127.0.0.1 with a throw-away realm (test/helpers/kerberos-kdc.ts) issues the tickets, a
 * three-voter corral reads a JAAS Server section with the service's keytab, as ZooKeeper's admin
 * guide configures one. kazoo's own GSSAPI tests and zkCli.sh with a Kerberos JAAS Client section
 * authenticate; `sasl` ACLs hold across the servers; with sessionRequireClientSaslAuth a client
 * without a ticket is refused.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { kerberosKeytabJaas, kerberosTicketCacheJaas } from "../helpers/jaas-files.js";
import { removeRunFiles, runKazooSuite, verdict } from "../helpers/kazoo-suite.js";
import { startServiceRealm, type KerberosKdc } from "../helpers/kerberos-kdc.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { waitFor } from "../helpers/wait.js";
import { normaliseZkCli, runZkCli, runZkCliRaw } from "../helpers/zk-cli-tools.js";
import { freshRoot } from "../helpers/zk-diff-scripts.js";

const REALM = "KAZOOTEST.ORG";
/** kazoo's harness names its ZooKeeper's principal so; its clients ask for zookeeper@<host>. */
const SERVICE = "zookeeper/127.0.0.1";

describe("Kerberos (GSSAPI) on the ZooKeeper port with an MIT KDC", { concurrency: 1 }, () => {
  let kdc: KerberosKdc;
  let cluster: ClusterProcess;
  let serverEnv: Record<string, string>;
  let jaasDir: string;
  let keytabs: Record<string, string>;

  /** zkCli.sh's JVM options for a Kerberos client of this realm logging in with the JAAS file `jaas`. */
  const zkCliFlags = (jaas: string) => [
    `-Djava.security.auth.login.config=${jaas}`,
    `-Djava.security.krb5.conf=${kdc.krb5Conf}`,
    // Java's client would ask for zookeeper/<reverse lookup of 127.0.0.1>, that is zookeeper/localhost.
    `-Dzookeeper.server.principal=${SERVICE}@${REALM}`,
  ];

  before(async () => {
    ({ kdc, keytabs, jaasDir, serverEnv } = await startServiceRealm(REALM, SERVICE, ["client", "bob"]));
    cluster = await ClusterProcess.start({
      voters: 3,
      tickMs: 500,
      env: serverEnv,
      config: { jaasConfigFile: join(jaasDir, "server.jaas"), fourLetterWordWhitelist: "*" },
    });
    await waitFor("a leader every server agrees on", () => cluster.agreedLeader(), 60_000);
  });

  after(async () => {
    await cluster?.stop();
    await kdc?.stop();
  });

  test("kazoo's own GSSAPI tests pass against the three voters", async () => {
    // kazoo's test_sasl.py kinits `client` from $KRB5_TEST_ENV/client.keytab (and a postdated, not yet valid, ticket for its failure case).
    const servers = [...cluster.servers.values()];
    const run = await runKazooSuite({
      hosts: servers.map((s) => s.zkConnectString).join(","),
      servers,
      select: ["test_sasl.py::TestSASLGSSAPIAuthentication"],
      timeoutMs: 120_000,
      env: { ...kdc.env, KRB5_TEST_ENV: kdc.dir, KRB5CCNAME: `FILE:${join(kdc.dir, "kazoo-cache")}` },
    });
    try {
      assert.deepEqual(verdict(run), [], run.tail);
      assert.deepEqual(
        run.cases.map((c) => [c.id.split("::").slice(-1)[0], c.outcome]),
        [
          ["test_connect_gssapi_auth", "passed"],
          ["test_invalid_gssapi_auth", "passed"],
        ],
      );
    } finally {
      await removeRunFiles(run);
    }
  });

  test("zkCli.sh with a Kerberos JAAS Client section: its sasl ACL admits it on every server and refuses another principal", async () => {
    const servers = [...cluster.servers.values()];
    const root = freshRoot("krb");
    await writeFile(join(jaasDir, "client.jaas"), kerberosKeytabJaas("Client", `client@${REALM}`, keytabs.client!));
    await writeFile(join(jaasDir, "bob.jaas"), kerberosKeytabJaas("Client", `bob@${REALM}`, keytabs.bob!));
    const owner = normaliseZkCli(
      await runZkCli(servers[0]!.zkConnectString, [`create ${root} data sasl:client@${REALM}:cdrwa`, `getAcl ${root}`, "whoami"], 60_000, {
        jvmFlags: zkCliFlags(join(jaasDir, "client.jaas")),
      }),
    );
    for (const line of [
      "event: WatchedEvent state:SaslAuthenticated type:None path:null",
      `err: Created ${root}`,
      `out: 'sasl,'client@${REALM}`,
      `out: sasl: client@${REALM}`,
    ]) {
      assert.ok(owner.includes(line), `${line} missing from\n${owner.join("\n")}`);
    }
    // The node is read back on the other two servers by the same principal, and refused to bob.
    for (const server of servers.slice(1)) {
      const again = normaliseZkCli(await runZkCli(server.zkConnectString, [`get ${root}`], 60_000, { jvmFlags: zkCliFlags(join(jaasDir, "client.jaas")) }));
      assert.ok(again.includes("out: data"), again.join("\n"));
      const other = normaliseZkCli(
        await runZkCli(server.zkConnectString, [`get ${root}`, "whoami"], 60_000, { jvmFlags: zkCliFlags(join(jaasDir, "bob.jaas")) }),
      );
      assert.ok(other.includes(`err: Insufficient permission : ${root}`), other.join("\n"));
      assert.ok(other.includes(`out: sasl: bob@${REALM}`), other.join("\n"));
    }
  });

  test("with sessionRequireClientSaslAuth, a client without a ticket is refused and one with a ticket served", async () => {
    const server = await ServerProcess.start({
      dataDir: join(kdc.dir, "required-data"),
      zkPort: await freePort(),
      env: serverEnv,
      extraArgs: ["--jaas-config-file", join(jaasDir, "server.jaas"), "--session-require-client-sasl-auth", "true", "--four-letter-word-whitelist", "*"],
    });
    try {
      // An empty ticket cache: the client's Kerberos login fails and it goes on without SASL.
      const emptyCache = join(kdc.dir, "empty-cache");
      await writeFile(join(jaasDir, "cache.jaas"), kerberosTicketCacheJaas(emptyCache));
      const refused = await runZkCliRaw(server.zkConnectString, ["ls /zookeeper"], 60_000, { jvmFlags: zkCliFlags(join(jaasDir, "cache.jaas")) });
      assert.match(refused.stderr, /KeeperErrorCode = Session closed because client failed to authenticate for \/zookeeper/);
      assert.doesNotMatch(refused.stdout, /\[config, quota\]/);
      // The same JAAS section with a ticket in that cache.
      kdc.kinit("client", keytabs.client!, emptyCache);
      const served = normaliseZkCli(await runZkCli(server.zkConnectString, ["ls /zookeeper"], 60_000, { jvmFlags: zkCliFlags(join(jaasDir, "cache.jaas")) }));
      assert.ok(served.includes("out: [config, quota]"), served.join("\n"));
    } finally {
      await server.stop();
    }
  });
});
