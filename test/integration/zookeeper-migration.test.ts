/**
 * Moving a ZooKeeper deployment onto corral and back, with real parts: a three-server ZooKeeper 3.8
 * ensemble (snapCount low, so snapshots are written while txns apply and the logs must be replayed)
 * runs the migration workload — persistent, ephemeral, sequential, container and TTL nodes; world,
 * digest and ip ACLs; multis; deletes; a quota — and is stopped. `corral import` takes one member's
 * data dir; a corral server on the result serves, through its ZooKeeper port, the tree ZooKeeper
 * served (every znode, data, ACL and Stat field); a ZooKeeper session goes on against corral with the
 * password ZooKeeper gave it. `corral export` writes the tree back, and a real ZooKeeper started on
 * the export serves the same tree. Each parent's next sequential number comes out the same on all three.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, test } from "node:test";
import { CLI, runScript } from "../helpers/cli-process.js";
import { fourLetterWord } from "../helpers/four-letter-word.js";
import { JuteClient } from "../helpers/jute-client.js";
import { long, Nzk, zookeeper } from "../helpers/nzk.js";
import { RealZooKeeper } from "../helpers/real-zookeeper.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { ZooKeeperEnsemble } from "../helpers/zookeeper-ensemble.js";
import {
  nextSequentialNumber,
  readZnodes,
  runZooKeeperWorkload,
  SUPER_AUTH,
  SUPER_DIGEST,
  treeDifferences,
  WORKLOAD_SESSION_TIMEOUT_MS,
} from "../helpers/zookeeper-workload.js";

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

const ZOOKEEPER_PROPERTIES = {
  "zookeeper.extendedTypesEnabled": "true",
  "zookeeper.DigestAuthenticationProvider.superDigest": SUPER_DIGEST,
};

/** Until every server's `srvr` shows the same zxid (followers apply commits a little after the leader). */
async function zxidsAgree(ensemble: ZooKeeperEnsemble): Promise<string> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const zxids = await Promise.all(ensemble.serverIds.map(async (id) => /^Zxid: (\S+)$/m.exec(await fourLetterWord(ensemble.clientPort(id), "srvr"))?.[1]));
    if (zxids.every((zxid) => zxid !== undefined && zxid === zxids[0])) return zxids[0]!;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("the ensemble's zxids did not agree");
}

async function runCli(args: string[]): Promise<string> {
  const run = runScript(CLI, args);
  const code = await run.exit;
  assert.equal(code, 0, `corral ${args.join(" ")}: ${run.err()}`);
  return run.out();
}

/** Creates a sequential child of each parent; answers the number each got. */
async function sequentialNumbers(server: string, parents: readonly string[]): Promise<number[]> {
  const client = await Nzk.connect(server);
  client.addAuthInfo("digest", SUPER_AUTH);
  try {
    const numbers: number[] = [];
    for (const parent of parents) {
      const created = await client.create(`${parent === "/" ? "" : parent}/probe-`, null, { mode: zookeeper.CreateMode.PERSISTENT_SEQUENTIAL });
      numbers.push(Number(created.slice(created.lastIndexOf("-") + 1)));
    }
    return numbers;
  } finally {
    await client.close();
  }
}

test("a ZooKeeper 3.8 ensemble's data dir imported into corral, and exported back, serves the same tree on both", async () => {
  const dir = await makeTempDir("corral-migration-");
  cleanups.push(dir.remove);
  const ensemble = await ZooKeeperEnsemble.start({
    servers: 3,
    tickTimeMs: 3000,
    superDigest: SUPER_DIGEST,
    jvmArgs: ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dzookeeper.extendedTypesEnabled=true"],
    extraConfig: ["snapCount=40", "preAllocSize=64"],
  });
  cleanups.push(() => ensemble.stop());
  const servers = ensemble.serverIds.map((id) => ensemble.connectString(id));
  const workload = await runZooKeeperWorkload(servers, 12);
  const served = await readZnodes(servers[0]!);
  const ephemerals = [...workload.ephemerals.values()].flat();
  assert.ok(
    ephemerals.length > 0 && ephemerals.every((path) => served.get(path)?.stat["ephemeralOwner"] !== "0"),
    "ephemerals of open sessions are in the tree",
  );
  const zxid = await zxidsAgree(ensemble);
  const ephemeralOwner = workload.open[1]!;
  const resumable = { sessionId: long(ephemeralOwner.sessionId), password: Uint8Array.from(ephemeralOwner.client.getSessionPassword()) };
  for (const id of ensemble.serverIds) await ensemble.crash(id);
  for (const session of workload.open) session.client.close();
  const logs = (await readFile(join(ensemble.dataDir(1), "..", "zookeeper.log"), "utf8")).split("\n");
  assert.ok(logs.filter((line) => /Snapshotting: 0x/.test(line)).length >= 3, "ZooKeeper took several snapshots during the workload");

  // Import one member's data dir into corral.
  const corralDir = join(dir.path, "corral");
  const imported = await runCli(["import", "--zookeeper-data-dir", ensemble.dataDir(1), "--data-dir", corralDir]);
  assert.match(imported, new RegExp(`imported ZooKeeper's tree at zxid ${zxid}`));
  assert.match(imported, /then [1-9]\d* txns from \d+ log files/);
  assert.match(imported, /digests compared: [1-9]\d*, differing: 0/);

  const corral = await ServerProcess.start({ dataDir: corralDir, zkPort: await freePort(), tickMs: 3000, extraArgs: ["--super-digest", SUPER_DIGEST] });
  cleanups.push(() => corral.stop());
  assert.deepEqual(treeDifferences(served, await readZnodes(corral.zkConnectString)), []);

  // A ZooKeeper client's session goes on against corral: same id, ZooKeeper's password accepted.
  const resumed = await JuteClient.connect(corral.zkConnectString, { resume: resumable, timeoutMs: WORKLOAD_SESSION_TIMEOUT_MS });
  assert.equal(resumed.response?.sessionId, resumable.sessionId);
  assert.ok((resumed.response?.timeOut ?? 0) > 0, "corral accepted the session ZooKeeper had given out");
  await resumed.close();

  // And back: export, then a real ZooKeeper 3.8 on the export.
  const exportDir = join(dir.path, "zookeeper-again");
  const exported = await runCli(["export", "--data-dir", corralDir, "--zookeeper-data-dir", exportDir]);
  assert.match(exported, /exported zxid 0x[0-9a-f]+ \(\d+ znodes, \d+ sessions\) to .*version-2\/snapshot\.[0-9a-f]+/);
  const back = await RealZooKeeper.start({ dataDir: exportDir, tickTimeMs: 3000, systemProperties: ZOOKEEPER_PROPERTIES });
  cleanups.push(() => back.stop());
  assert.deepEqual(treeDifferences(served, await readZnodes(back.connectString)), []);
  const backLog = await readFile(back.logFiles.log, "utf8");
  assert.match(backLog, /The digest in the snapshot has digest version of 2/);
  assert.doesNotMatch(backLog, /[Dd]igests? (are )?not matching|[Dd]igest mismatch/);

  // Each parent's next sequential number is ZooKeeper's, on corral and on the ZooKeeper it went back to.
  const parents = ["/app/seq", "/app/live", "/app/ttl", "/app", "/"];
  const expected = parents.map((parent) => nextSequentialNumber(served.get(parent)!));
  assert.deepEqual(await sequentialNumbers(corral.zkConnectString, parents), expected);
  assert.deepEqual(await sequentialNumbers(back.connectString, parents), expected);
});
