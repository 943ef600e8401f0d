/**
 * SASL DIGEST-MD5 through corral's own gRPC port: the SDK (`ConnectOptions.sasl`) and `corral
 * shell` with a JAAS `Client` section log in as zkCli.sh does on the ZooKeeper port, against a real
 * server process whose JAAS `Server` section has the users. A `sasl` ACL admits its user and
 * refuses another (NOAUTH); the id is the one the ZooKeeper port gives the same user; a wrong
 * password is AUTHFAILED; a new connection logs in again before anything else; and under
 * sessionRequireClientSaslAuth a client without SASL is refused while one with it is served.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client, saslFromJaasFile, ZkError, type ClientState, type SaslOptions } from "../../src/index.js";
import { ZkErrorCode } from "../../src/common/errors.js";
import { GetDataRequest, GetSASLRequest, OpCode, SetSASLResponse, decodeRecord } from "../../src/server/zk-wire/records.js";
import { runShell as shell } from "../helpers/cli-process.js";
import { digestClientJaas, digestServerJaas, writeDigestClientJaasFiles } from "../helpers/jaas-files.js";
import { JuteClient } from "../helpers/jute-client.js";
import { digestResponse } from "../helpers/sasl-digest-client.js";
import { startSaslServer } from "../helpers/sasl-server.js";
import type { ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";

const BOB: SaslOptions = { mechanism: "DIGEST-MD5", username: "bob", password: "bob-secret" };
const ALICE: SaslOptions = { mechanism: "DIGEST-MD5", username: "alice", password: "alice-secret" };

const isCode = (code: string) => (error: unknown) => error instanceof ZkError && error.code === code;

/** A ZooKeeper-port client that logged in as `user` by DIGEST-MD5 (what zkCli.sh and kazoo send). */
async function zkPortLogin(address: string, user: string, password: string): Promise<JuteClient> {
  const client = await JuteClient.connect(address);
  const challenge = await client.request(OpCode.sasl, GetSASLRequest, { token: new Uint8Array(0) });
  const token = decodeRecord(SetSASLResponse, challenge.body).token!;
  const answer = await client.request(OpCode.sasl, GetSASLRequest, {
    token: Buffer.from(digestResponse(Buffer.from(token).toString("latin1"), user, password)),
  });
  assert.equal(answer.header.err, ZkErrorCode.OK);
  return client;
}

describe("SASL DIGEST-MD5 on the gRPC port: the SDK and corral shell", { concurrency: 1 }, () => {
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let server: ServerProcess;
  let jaas: Record<string, string> = {};

  before(async () => {
    dir = await makeTempDir("corral-sdk-sasl-");
    jaas = await writeDigestClientJaasFiles(dir.path, { bob: "bob-secret", alice: "alice-secret", mallory: "guess" });
    // Sessions long enough to outlive a restart of the server.
    server = await startSaslServer(dir.path, "open", digestServerJaas({ bob: "bob-secret", alice: "alice-secret" }), {
      extraArgs: ["--max-session-timeout-ms", "30000"],
    });
  });

  after(async () => {
    await server?.stop();
    await dir?.remove();
  });

  test("corral shell with a JAAS Client section: a sasl ACL admits its user and refuses another (NOAUTH)", async () => {
    const owner = await shell(
      ["--connect", server.connectString, "--jaas-config", jaas.bob!],
      "create /shell data sasl:bob:cdrwa\ngetAcl /shell\nwhoami\nget /shell\n",
    );
    assert.equal(owner.stderr, "");
    assert.equal(owner.code, 0);
    // whoami lists the ids in the order the server keeps them, through either port.
    assert.equal(owner.stdout, ["Created /shell", "'sasl,'bob", ": cdrwa", "Auth scheme: User", "sasl: bob", "ip: 127.0.0.1", "data", ""].join("\n"));

    const other = await shell(["--connect", server.connectString, "-Djava.security.auth.login.config=" + jaas.alice!], "get /shell\nwhoami\n");
    assert.equal(other.code, 1);
    assert.equal(other.stderr, "Insufficient permission : /shell\n");
    assert.equal(other.stdout, ["Auth scheme: User", "sasl: alice", "ip: 127.0.0.1", ""].join("\n"));

    // zkCli.sh's way of naming the file: CLIENT_JVMFLAGS.
    const again = await shell(["--connect", server.connectString], "get /shell\n", {
      CLIENT_JVMFLAGS: `-Xmx64m -Djava.security.auth.login.config=${jaas.bob!}`,
    });
    assert.deepEqual([again.code, again.stdout, again.stderr], [0, "data\n", ""]);

    // zookeeper.sasl.client=false: no login, so no access.
    const off = await shell(["--connect", server.connectString, "--jaas-config", jaas.bob!, "--sasl-client", "false"], "get /shell\n");
    assert.deepEqual([off.code, off.stderr], [1, "Insufficient permission : /shell\n"]);
  });

  test("a wrong password: the SDK's connect rejects with AUTHFAILED, the shell prints AuthFailed and exits 1", async () => {
    const mallory = saslFromJaasFile(jaas.mallory!);
    assert.deepEqual(mallory, { mechanism: "DIGEST-MD5", username: "mallory", password: "guess" });
    await assert.rejects(Client.connect(server.connectString, { sasl: mallory, connectTimeoutMs: 10_000 }), isCode("AUTHFAILED"));
    await assert.rejects(Client.connect(server.connectString, { sasl: { ...BOB, password: "wrong" }, connectTimeoutMs: 10_000 }), isCode("AUTHFAILED"));

    const run = await shell(["--connect", server.connectString, "--jaas-config", jaas.mallory!], "ls /\n");
    assert.equal(run.code, 1);
    assert.ok(run.stdout.includes("WatchedEvent state:AuthFailed type:None path:null"), run.stdout);
    assert.match(run.stderr, /AuthFailed|AUTHFAILED/);
    assert.ok(server.running);
  });

  test("a named JAAS section that is missing is a usage error of the shell (exit 2)", async () => {
    const missing = await shell(["--connect", server.connectString, "--jaas-config", jaas.bob!, "--sasl-client-section", "Nope"], "ls /\n");
    assert.deepEqual([missing.code, missing.stdout], [2, ""]);
    assert.match(missing.stderr, /has no section Nope/);
  });

  test("the SDK's sasl id is the ZooKeeper port's: a node bob's SDK session guards is read by bob logged in on the ZooKeeper port", async () => {
    const sdk = await Client.connect(server.connectString, { sasl: BOB });
    try {
      assert.deepEqual(
        (await sdk.whoAmI()).map((info) => `${info.authScheme}:${info.user}`),
        ["sasl:bob", "ip:127.0.0.1"],
      );
      await sdk.create("/both", "guarded", { acl: [{ perms: 31, id: { scheme: "sasl", id: "bob" } }] });
    } finally {
      await sdk.close();
    }
    const asBob = await zkPortLogin(server.zkConnectString, "bob", "bob-secret");
    const asAlice = await zkPortLogin(server.zkConnectString, "alice", "alice-secret");
    try {
      assert.equal((await asBob.request(OpCode.getData, GetDataRequest, { path: "/both", watch: false })).header.err, ZkErrorCode.OK);
      assert.equal((await asAlice.request(OpCode.getData, GetDataRequest, { path: "/both", watch: false })).header.err, ZkErrorCode.NOAUTH);
    } finally {
      await asBob.close();
      await asAlice.close();
    }
    const alice = await Client.connect(server.connectString, { sasl: ALICE });
    try {
      await assert.rejects(alice.getData("/both"), isCode("NOAUTH"));
    } finally {
      await alice.close();
    }
  });

  test("a new connection logs in again before anything else: after the server restarts, the resumed session still reads what only bob may", async () => {
    const sdk = await Client.connect(server.connectString, { sasl: BOB, sessionTimeoutMs: 30_000 });
    const states: ClientState[] = [];
    sdk.on("state", (state) => states.push(state));
    try {
      await sdk.create("/restart", "still mine", { acl: [{ perms: 31, id: { scheme: "sasl", id: "bob" } }] });
      const reconnected = new Promise<void>((resolve) => sdk.on("state", (state) => state === "reconnected" && resolve()));
      await server.stop();
      await server.restart();
      await reconnected;
      assert.equal(Buffer.from((await sdk.getData("/restart")).data).toString(), "still mine");
      assert.deepEqual(states, ["disconnected", "reconnected"]);
    } finally {
      await sdk.close();
    }
  });
});

describe("sessionRequireClientSaslAuth on the gRPC port", () => {
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let server: ServerProcess;
  let bobJaas: string;

  before(async () => {
    dir = await makeTempDir("corral-sdk-sasl-required-");
    bobJaas = join(dir.path, "bob.jaas");
    await writeFile(bobJaas, digestClientJaas("bob", "bob-secret"));
    server = await startSaslServer(dir.path, "required", digestServerJaas({ bob: "bob-secret" }), {
      extraArgs: ["--session-require-client-sasl-auth", "true"],
    });
  });

  after(async () => {
    await server?.stop();
    await dir?.remove();
  });

  test("an SDK client that does not log in is refused (SESSIONCLOSEDREQUIRESASLAUTH); one that does, and the shell with a JAAS section, are served", async () => {
    const anonymous = await Client.connect(server.connectString, { connectTimeoutMs: 10_000 });
    try {
      await assert.rejects(anonymous.exists("/zookeeper"), isCode("SESSIONCLOSEDREQUIRESASLAUTH"));
    } finally {
      await anonymous.close().catch(() => undefined);
    }
    const bob = await Client.connect(server.connectString, { sasl: BOB });
    try {
      assert.notEqual(await bob.exists("/zookeeper"), null);
    } finally {
      await bob.close();
    }
    const run = await shell(["--connect", server.connectString, "--jaas-config", bobJaas], "ls /zookeeper\n");
    assert.deepEqual([run.code, run.stdout, run.stderr], [0, "[config, quota]\n", ""]);
    // A wrong password under the requirement: the server answers SESSIONCLOSEDREQUIRESASLAUTH, the client reports AUTHFAILED.
    await assert.rejects(Client.connect(server.connectString, { sasl: { ...BOB, password: "wrong" }, connectTimeoutMs: 10_000 }), isCode("AUTHFAILED"));
  });
});
