/**
 * Issue 7 acceptance: ZooKeeper's own clients, written independently of corral — the Java zkCli.sh
 * and the C cli_mt from Debian's zookeeper / zookeeper-bin — run one scripted session each against
 * a real ZooKeeper 3.8 started here and against corral's ZooKeeper-protocol port; the normalised
 * transcripts must be equal (test/helpers/zk-cli-tools.ts says what is normalised and why).
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { RealZooKeeper } from "../helpers/real-zookeeper.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { normaliseCliMt, normaliseZkCli, runCliMt, runZkCli, type CliMtStep } from "../helpers/zk-cli-tools.js";
import { cliMtScript, digestOf, freshRoot, zkCliScript } from "../helpers/zk-diff-scripts.js";

/** What a ZooKeeper ensemble with these members has in /zookeeper/config (static configuration: version 0). */
async function membershipOf(cluster: ClusterProcess): Promise<string> {
  const { servers } = JSON.parse(await readFile(cluster.configFile, "utf8")) as {
    servers: { id: number; host: string; quorumPort: number; electionPort: number; role: string; zkClientPort: number }[];
  };
  const lines = servers.map((s) => `server.${s.id}=${s.host}:${s.quorumPort}:${s.electionPort}:${s.role};${s.host}:${s.zkClientPort}`);
  return [...lines, "version=0"].join("\n");
}

/** A standalone server's cli_mt transcript with its `get /zookeeper/config` answered as by an ensemble holding `membership`. */
function asEnsembleConfig(transcript: string[], membership: string): string[] {
  const at = transcript.indexOf("/zookeeper/config: rc = 0");
  assert.ok(at >= 0 && transcript[at + 1] === " value_len = 0" && transcript[at + 2] === "", "the script reads an empty /zookeeper/config");
  const stat = transcript.indexOf("\tversion=0\taversion=ffffffff", at);
  assert.ok(stat > at, "its stat follows");
  return [
    ...transcript.slice(0, at + 1),
    ` value_len = ${new TextEncoder().encode(membership).length}`,
    ...membership.split("\n"),
    ...transcript.slice(at + 3, stat),
    "\tversion=ffffffff\taversion=ffffffff",
    ...transcript.slice(stat + 1),
  ];
}

/** Fails fast, with a reason, when nothing accepts TCP connections on a host:port of the connect string. */
async function assertAcceptsConnections(connectString: string, limitMs = 5_000): Promise<void> {
  for (const hostPort of connectString.split(",")) {
    const [host, port] = [hostPort.slice(0, hostPort.lastIndexOf(":")), Number(hostPort.slice(hostPort.lastIndexOf(":") + 1))];
    const deadline = Date.now() + limitMs;
    for (;;) {
      const open = await new Promise<boolean>((resolve) => {
        const socket = connect({ host, port });
        socket.once("connect", () => {
          socket.destroy();
          resolve(true);
        });
        socket.once("error", () => resolve(false));
      });
      if (open) break;
      if (Date.now() > deadline) throw new Error(`nothing accepts connections on the ZooKeeper port ${hostPort}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

async function zkCliTranscript(connectString: string, script: string[]): Promise<string[]> {
  await assertAcceptsConnections(connectString);
  return normaliseZkCli(await runZkCli(connectString, script, 30_000));
}

async function cliMtTranscript(connectString: string, steps: CliMtStep[]): Promise<string[]> {
  await assertAcceptsConnections(connectString);
  return normaliseCliMt(await runCliMt(connectString, steps, 8_000));
}

/** The real server's transcript must show what the script is for, so two empty or broken runs cannot agree. */
function assertZkCliCoverage(t: string[], R: string, commands: number): void {
  assert.equal(t.filter((line) => line.startsWith("$ ")).length, commands + 1, "one segment per command and one for the connect");
  for (const line of [
    "event: WatchedEvent state:SyncConnected type:None path:null",
    `err: Created ${R}/seq-0000000002`,
    `err: Created ${R}/eseq-0000000004`,
    "out: hello",
    "out: dataVersion = 3",
    "out: ephemeralOwner = <session#1>",
    "out: numChildren = 6",
    `out: [a, box, eph, eseq-0000000004, seq-0000000002, seq-0000000003]`,
    `out: ${R}/box/item`,
    `err: version No is not valid : ${R}/a`,
    `err: Node does not exist: ${R}/missing/child`,
    `err: Node already exists: ${R}/a`,
    `err: Node not empty: ${R}/p`,
    "out: Sync is OK",
    `out: [${R}/eph, ${R}/eseq-0000000004]`,
    "out: 'digest,'alice:x",
    `out: 'digest,'${digestOf("alice:secret")}`,
    `err: Insufficient permission : ${R}/locked`,
    "out: digest: alice",
    "out: locked-data",
    `event: WatchedEvent state:SyncConnected type:NodeCreated path:${R}/later`,
    `event: WatchedEvent state:SyncConnected type:NodeDataChanged path:${R}/a`,
    `event: WatchedEvent state:SyncConnected type:NodeChildrenChanged path:${R}/box`,
    `event: WatchedEvent state:SyncConnected type:NodeCreated path:${R}/tree/x/y`,
    `event: WatchedEvent state:SyncConnected type:NodeDeleted path:${R}/tree/x/y`,
  ]) {
    assert.ok(t.includes(line), `the real ZooKeeper transcript lacks ${JSON.stringify(line)}:\n${t.join("\n")}`);
  }
  // a one-time watch fires once: `set a v4` shows the event, `set a v5` does not
  const v5 = t.indexOf(`$ set ${R}/a v5`);
  assert.equal(t[v5 + 1], `$ ls -w ${R}/box`);
}

function assertCliMtCoverage(t: string[], R: string, steps: number): void {
  assert.equal(t.filter((line) => line.startsWith("$ ")).length, steps + 2, "one segment per step, connect and quit");
  for (const line of [
    "Watcher SESSION_EVENT state = CONNECTED_STATE",
    `[${R}]: rc = -110`,
    `[${R}/missing/x]: rc = -101`,
    `\tname = ${R}/seq-0000000002`,
    `\tname = ${R}/eseq-0000000003`,
    "\tephemeralOwner = <session#1>",
    `Watcher CHANGED_EVENT state = CONNECTED_STATE for path ${R}`,
    `Watcher CHILD_EVENT state = CONNECTED_STATE for path ${R}`,
    `Watcher CREATED_EVENT state = CONNECTED_STATE for path ${R}/nothing`,
    `Error -101 for ${R}/nothing`,
    `${R}: rc = -111`,
    "hello",
    "\tversion=1\taversion=0",
    "\teseq-0000000003",
    `\tname = ${R}/gone`,
    "Quitting...",
  ]) {
    assert.ok(t.includes(line), `the real ZooKeeper transcript lacks ${JSON.stringify(line)}:\n${t.join("\n")}`);
  }
}

/** An addauth with a scheme the server does not know: ZooKeeper answers AuthFailed and closes the session. */
function refusedAuthSteps(R: string): CliMtStep[] {
  return [`create ${R}`, { command: "addauth no-such-scheme whatever", until: "Authentication failure. Shutting down...\n" }];
}

describe("zkCli.sh and cli_mt get the same answers from corral's ZooKeeper port as from ZooKeeper 3.8", () => {
  let real: RealZooKeeper | undefined;
  let corral: ServerProcess | undefined;
  let corralDir: { path: string; remove: () => Promise<void> } | undefined;
  // one fresh root per script and run; the same for both servers so the transcripts compare verbatim
  const R = freshRoot("zkdiff-cli");
  const RMT = freshRoot("zkdiff-mt");
  const zkCli = zkCliScript(R);
  const cliMt = cliMtScript(RMT);
  const expected: { zkCli?: string[]; cliMt?: string[] } = {};

  /** The real server's transcripts, made once and checked for coverage. */
  async function realZkCli(): Promise<string[]> {
    if (!expected.zkCli) {
      const t = await zkCliTranscript(real!.connectString, zkCli);
      assertZkCliCoverage(t, R, zkCli.length);
      expected.zkCli = t;
    }
    return expected.zkCli;
  }
  async function realCliMt(): Promise<string[]> {
    if (!expected.cliMt) {
      const t = await cliMtTranscript(real!.connectString, cliMt);
      assertCliMtCoverage(t, RMT, cliMt.length);
      expected.cliMt = t;
    }
    return expected.cliMt;
  }

  before(async () => {
    const starting = [
      RealZooKeeper.start().then((zk) => (real = zk)),
      makeTempDir("corral-zkdiff-").then(async (dir) => {
        corralDir = dir;
        corral = await ServerProcess.start({ dataDir: dir.path, zkPort: await freePort() });
      }),
    ];
    const failed = (await Promise.allSettled(starting)).find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
  });

  after(async () => {
    await Promise.allSettled([real?.stop(), corral?.stop()]);
    await corralDir?.remove();
  });

  test("zkCli.sh: the scripted session reads the same from a standalone corral", async () => {
    const want = await realZkCli();
    const got = await zkCliTranscript(corral!.zkConnectString, zkCli);
    assert.deepEqual(got, want);
  });

  test("cli_mt: the scripted session reads the same from a standalone corral", async () => {
    const want = await realCliMt();
    const got = await cliMtTranscript(corral!.zkConnectString, cliMt);
    assert.deepEqual(got, want);
  });

  test("cli_mt: an addauth with an unknown scheme ends the session as in ZooKeeper", async () => {
    const root = freshRoot("zkdiff-auth");
    const want = await cliMtTranscript(real!.connectString, refusedAuthSteps(root));
    assert.ok(want.includes("Watcher SESSION_EVENT state = AUTH_FAILED_STATE"), want.join("\n"));
    const got = await cliMtTranscript(corral!.zkConnectString, refusedAuthSteps(root));
    assert.deepEqual(got, want);
  });

  describe("against a 3-voter corral cluster (multi-host connect string)", () => {
    let cluster: ClusterProcess | undefined;
    before(async () => {
      cluster = await ClusterProcess.start({ voters: 3 });
      await waitForLeader(cluster);
    });
    after(async () => {
      await cluster?.stop();
    });

    // The cluster is a fresh server, so the same root is fresh there and the real transcripts apply.
    test("zkCli.sh: the same session reads the same from the cluster", async () => {
      const want = await realZkCli();
      const got = await zkCliTranscript(cluster!.zkConnectString, zkCli);
      assert.deepEqual(got, want);
    });

    test("cli_mt: the same session reads the same from the cluster", async () => {
      // Everything but /zookeeper/config, which a ZooKeeper ensemble fills with its membership
      // (checked against a live 3.8 ensemble): the standalone transcript with that read as an
      // ensemble answers it, dataVersion -1 included.
      const want = asEnsembleConfig(await realCliMt(), await membershipOf(cluster!));
      const got = await cliMtTranscript(cluster!.zkConnectString, cliMt);
      assert.deepEqual(got, want);
    });
  });
});
