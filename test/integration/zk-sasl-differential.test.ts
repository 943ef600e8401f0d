/**
 * SASL DIGEST-MD5 through ZooKeeper's own Java client: zkCli.sh with a JAAS `Client` section
 * authenticates, creates a node whose ACL is its `sasl` id, and another user is refused it; a
 * wrong password and a client without SASL on a server that requires it are turned away. Each
 * script runs against a real ZooKeeper 3.8 and against corral, both reading the same JAAS files;
 * the normalised transcripts must be equal (test/helpers/zk-cli-tools.ts).
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client, ZkError } from "../../src/index.js";
import { digestServerJaas, writeDigestClientJaasFiles } from "../helpers/jaas-files.js";
import { RealZooKeeper } from "../helpers/real-zookeeper.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";

type TempDir = Awaited<ReturnType<typeof makeTempDir>>;
import { normaliseZkCli, runZkCli, runZkCliRaw } from "../helpers/zk-cli-tools.js";
import { freshRoot } from "../helpers/zk-diff-scripts.js";

/** What ZooKeeper's admin guide configures for SASL: the provider, and the JAAS file the server reads. */
const SASL_PROVIDER = "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider";

interface Targets {
  zookeeper: RealZooKeeper;
  corral: ServerProcess;
}

async function startBoth(dir: string, name: string, required: boolean): Promise<Targets> {
  const serverJaas = join(dir, "server.jaas");
  await writeFile(serverJaas, digestServerJaas({ bob: "bob-secret", alice: "alice-secret" }));
  const zookeeper = await RealZooKeeper.start({
    configLines: [SASL_PROVIDER],
    systemProperties: {
      "java.security.auth.login.config": serverJaas,
      ...(required ? { "zookeeper.sessionRequireClientSASLAuth": "true" } : {}),
    },
  });
  try {
    const corral = await ServerProcess.start({
      dataDir: join(dir, `${name}-data`),
      zkPort: await freePort(),
      extraArgs: ["--jaas-config-file", serverJaas, ...(required ? ["--session-require-client-sasl-auth", "true"] : [])],
    });
    return { zookeeper, corral };
  } catch (error) {
    await zookeeper.stop();
    throw error;
  }
}

const jvmFlagsFor = (jaas: string | undefined) => (jaas === undefined ? ["-Dzookeeper.sasl.client=false"] : [`-Djava.security.auth.login.config=${jaas}`]);

/** zkCli.sh's transcript of `script` against `connectString`, logging in with the JAAS file `jaas` (none: no SASL). */
async function transcript(connectString: string, script: string[], jaas: string | undefined): Promise<string[]> {
  return normaliseZkCli(await runZkCli(connectString, script, 30_000, { jvmFlags: jvmFlagsFor(jaas) }));
}

/**
 * What zkCli.sh prints for `lines` when its client may be refused (no barrier can run then): its
 * output and error lines, less the banner and blank lines. A Disconnected event is dropped too:
 * whether the client's event thread prints it before the JVM exits at the end of its input is a
 * race inside the client, not a server answer.
 */
async function refusedTranscript(connectString: string, lines: string[], jaas: string | undefined): Promise<string[]> {
  const run = await runZkCliRaw(connectString, lines, 30_000, { jvmFlags: jvmFlagsFor(jaas) });
  const banner =
    /^(Connecting to \S+|Welcome to ZooKeeper!|JLine support is disabled|WATCHER::|WatchedEvent state:Disconnected type:None path:null|SLF4J: .*|)$/;
  return [
    ...run.stdout
      .split("\n")
      .filter((line) => !banner.test(line))
      .map((line) => `out: ${line}`),
    ...run.stderr
      .split("\n")
      .filter((line) => !banner.test(line))
      .map((line) => `err: ${line}`),
  ];
}

describe("zkCli.sh with SASL DIGEST-MD5: the same transcript from corral as from ZooKeeper 3.8", { concurrency: 1 }, () => {
  let dir: TempDir;
  let targets: Targets;
  let jaas: Record<string, string> = {};

  before(async () => {
    dir = await makeTempDir("corral-sasl-diff-");
    jaas = await writeDigestClientJaasFiles(dir.path, { bob: "bob-secret", alice: "alice-secret", mallory: "guess" });
    targets = await startBoth(dir.path, "open", false);
  });

  after(async () => {
    await targets?.corral.stop();
    await targets?.zookeeper.stop();
    await dir?.remove();
  });

  test("a sasl ACL admits its user and refuses another (NOAUTH)", async () => {
    const root = freshRoot("sasl");
    const owner = [
      `create ${root} ""`,
      `create ${root}/n data sasl:bob:cdrwa`,
      `getAcl ${root}/n`,
      `get ${root}/n`,
      "whoami",
      `set ${root}/n more`,
      `get ${root}/n`,
    ];
    const other = [`get ${root}/n`, `set ${root}/n x`, "whoami", `ls ${root}`];
    const cleanup = [`delete ${root}/n`, `delete ${root}`];
    const run = async (connectString: string) => [
      ...(await transcript(connectString, owner, jaas.bob)),
      ...(await transcript(connectString, other, jaas.alice)),
      ...(await transcript(connectString, cleanup, jaas.bob)),
    ];
    const expected = await run(targets.zookeeper.connectString);
    // The real server's answers must show what the script is for.
    for (const line of ["event: WatchedEvent state:SaslAuthenticated type:None path:null", "out: 'sasl,'bob", "out: data", "out: more"]) {
      assert.ok(expected.includes(line), `ZooKeeper's transcript lacks ${JSON.stringify(line)}:\n${expected.join("\n")}`);
    }
    assert.ok(
      expected.some((line) => line.includes("Insufficient permission")),
      `ZooKeeper refused alice nothing:\n${expected.join("\n")}`,
    );
    assert.deepEqual(await run(targets.corral.zkConnectString), expected);
  });

  test("a wrong password is refused: AuthFailed, and the client is no longer connected", async () => {
    const script = ["ls /"];
    const expected = await refusedTranscript(targets.zookeeper.connectString, script, jaas.mallory);
    assert.ok(expected.includes("out: WatchedEvent state:AuthFailed type:None path:null"), expected.join("\n"));
    assert.deepEqual(await refusedTranscript(targets.corral.zkConnectString, script, jaas.mallory), expected);
  });

  test("with sessionRequireClientSASLAuth, a client without SASL is refused (on the gRPC port too) and one with it served", async () => {
    const required = await startBoth(dir.path, "required", true);
    try {
      const script = ["ls /zookeeper"];
      const refused = await refusedTranscript(required.zookeeper.connectString, script, undefined);
      assert.ok(refused.includes("err: KeeperErrorCode = Session closed because client failed to authenticate for /zookeeper"), refused.join("\n"));
      assert.deepEqual(await refusedTranscript(required.corral.zkConnectString, script, undefined), refused);
      const served = await transcript(required.zookeeper.connectString, script, jaas.bob);
      assert.ok(served.includes("out: [config, quota]"), served.join("\n"));
      assert.deepEqual(await transcript(required.corral.zkConnectString, script, jaas.bob), served);
      // An SDK client that does not log in is refused alike on corral's gRPC port.
      const sdk = await Client.connect(required.corral.connectString, { connectTimeoutMs: 10_000 });
      try {
        await assert.rejects(sdk.exists("/zookeeper"), (error) => error instanceof ZkError && error.code === "SESSIONCLOSEDREQUIRESASLAUTH");
      } finally {
        await sdk.close().catch(() => undefined);
      }
    } finally {
      await required.corral.stop();
      await required.zookeeper.stop();
    }
  });
});
