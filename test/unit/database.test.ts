/** The replica's disk storage (LevelDB log and epochs, snapshot files): what a reopen recovers. */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { pino } from "pino";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { Level } from "level";
import { DataDamagedError, DiskStorage } from "../../src/server/disk-storage.js";
import { logKey } from "../../src/store/disk/keys.js";
import { REPAIR_MARKER_FILE } from "../../src/store/disk/repair-marker.js";
import { DataTree } from "../../src/store/data-tree.js";
import { encodeSnapshot } from "../../src/store/snapshot-codec.js";
import { decodeTxn, encodeTxn } from "../../src/store/txn-codec.js";
import type { Txn } from "../../src/store/types.js";
import type { Done } from "../../src/replica/ports.js";
import { makeTempDir } from "../helpers/temp-dir.js";

const logger = pino({ level: "silent" });
const removals: (() => Promise<void>)[] = [];
after(async () => {
  for (const remove of removals) await remove();
});

/** The n-th create under the root (n from 1) at `zxid`. */
function createTxn(zxid: number, n = zxid): Txn {
  return {
    header: { sessionId: 0n, cxid: 1, zxid, timeMs: 1_000 + zxid },
    body: { type: "create", path: `/n${zxid}`, data: new Uint8Array([zxid]), acl: [], ephemeralOwner: 0n, parentCversion: n - 1 },
  };
}

function completion(run: (done: Done) => void): Promise<void> {
  return new Promise((resolve, reject) =>
    run((error) => (error === undefined ? resolve() : reject(error instanceof Error ? error : new Error("the storage call failed", { cause: error })))),
  );
}

const open = (dir: string, onDamage: "refuse" | "repair" = "refuse") => DiskStorage.open(dir, { snapshotRetainCount: 3, onDamage }, logger);

/** Logs `zxids` (and applies them to a tree), snapshotting the tree after `snapshotAfter`. */
async function openWith(zxids: number[], snapshotAfter?: number) {
  const dir = await makeTempDir();
  removals.push(dir.remove);
  const { storage } = await open(dir.path);
  const tree = new DataTree();
  for (const [index, zxid] of zxids.entries()) {
    const txn = createTxn(zxid, index + 1);
    await completion((done) => storage.log.append(zxid, encodeTxn(txn), done));
    tree.apply(txn);
    if (zxid === snapshotAfter) await new Promise<void>((resolve) => storage.snapshots.save(tree, resolve));
  }
  return { storage, tree, dir: dir.path };
}

test("a reopen recovers the snapshot's tree and keeps the log tail after it aside, unapplied", async () => {
  const { storage, dir } = await openWith([1, 2, 3, 4, 5, 6, 7], 4);
  await storage.close();
  const { storage: reopened, recovered } = await open(dir);
  assert.equal(recovered.tree.lastProcessedZxid, 4);
  assert.deepEqual(
    recovered.unappliedTail.map((r) => r.zxid),
    [5, 6, 7],
  );
  assert.equal(reopened.log.lastAppendedZxid(), 7);
  await reopened.close();
});

test("truncateAfter drops the tail from the log, and a reopen sees the shorter log", async () => {
  const { storage, dir } = await openWith([1, 2, 3, 4, 5, 6, 7], 4);
  await storage.close();
  const { storage: reopened } = await open(dir);
  await completion((done) => reopened.log.truncateAfter(5, done));
  assert.equal(reopened.log.lastAppendedZxid(), 5);
  await reopened.close();
  const { storage: again, recovered } = await open(dir);
  assert.deepEqual(
    recovered.unappliedTail.map((r) => r.zxid),
    [5],
  );
  await again.close();
});

test("install makes the leader's snapshot the durable state, and a reopen recovers it", async () => {
  const { storage, dir } = await openWith([1, 2, 3]);
  const leader = new DataTree();
  for (const zxid of [1, 2, 3, 4, 5, 6]) leader.apply(createTxn(zxid));
  leader.apply({
    header: { sessionId: 0n, cxid: 0, zxid: 0x1_0000_0001, timeMs: 9 },
    body: { type: "setData", path: "/n6", data: new Uint8Array([66]), version: 1 },
  });
  await completion((done) => storage.snapshots.install(leader.lastProcessedZxid, encodeSnapshot(leader), done));
  assert.equal(storage.log.lastAppendedZxid(), 0, "the log is emptied");
  const next = createTxn(0x1_0000_0002);
  next.body = { ...next.body, path: "/after", parentCversion: 6 } as Txn["body"];
  await completion((done) => storage.log.append(next.header.zxid, encodeTxn(next), done));
  leader.apply(next);
  await storage.close();
  const { storage: reopened, recovered } = await open(dir);
  assert.equal(recovered.tree.lastProcessedZxid, 0x1_0000_0001);
  assert.deepEqual(
    recovered.unappliedTail.map((r) => r.zxid),
    [0x1_0000_0002],
  );
  for (const record of recovered.unappliedTail) recovered.tree.apply(decodeTxn(record.record));
  assert.equal(recovered.tree.digest(), leader.digest());
  await reopened.close();
});

test("epochs persist across a reopen and default to the last logged zxid's epoch", async () => {
  const { storage, dir } = await openWith([0x2_0000_0001]);
  await storage.close();
  const first = await open(dir);
  assert.deepEqual([first.recovered.acceptedEpoch, first.recovered.currentEpoch], [2, 2]);
  await completion((done) => first.storage.stable.saveEpoch("accepted", 3, done));
  await first.storage.close();
  const second = await open(dir);
  assert.deepEqual([second.recovered.acceptedEpoch, second.recovered.currentEpoch], [3, 2]);
  await completion((done) => second.storage.stable.saveEpoch("current", 3, done));
  await second.storage.close();
  const third = await open(dir);
  assert.deepEqual([third.recovered.acceptedEpoch, third.recovered.currentEpoch], [3, 3]);
  assert.deepEqual(
    (await third.storage.recentLog(5)).map((r) => r.zxid),
    [0x2_0000_0001],
  );
  await third.storage.close();
});

/** Drops log record `zxid` behind the storage's back, as LevelDB's recovery does with a damaged block. */
async function loseRecord(dir: string, zxid: number): Promise<void> {
  const db = new Level<Buffer, Uint8Array>(join(dir, "log"), { keyEncoding: "buffer", valueEncoding: "view" });
  await db.open();
  await db.del(logKey(zxid));
  await db.close();
}

test("a standalone server's damaged data is refused with what to do, and nothing in the data dir is touched", async () => {
  const { storage, dir } = await openWith([1, 2, 3, 4, 5, 6], 2);
  await storage.close();
  await loseRecord(dir, 4);
  const before = (await readdir(dir)).sort();
  await assert.rejects(open(dir, "refuse"), (error: unknown) => {
    assert.ok(error instanceof DataDamagedError);
    assert.match(error.message, /refusing to start: the data in .* is damaged \(.*log: records missing between 0x3 and 0x5/);
    assert.match(error.message, /restore .* from a backup/);
    return true;
  });
  assert.deepEqual((await readdir(dir)).sort(), before);
});

test("a cluster member's damaged log is kept aside; it starts empty, marked as repairing, until a snapshot is installed", async () => {
  const { storage, dir } = await openWith([1, 2, 3, 4, 5, 6], 2);
  await storage.close();
  await loseRecord(dir, 4);
  const { storage: repairing, recovered } = await open(dir, "repair");
  assert.match(recovered.repairing?.reason ?? "", /records missing between 0x3 and 0x5/);
  assert.equal(recovered.tree.lastProcessedZxid, 0);
  assert.deepEqual(recovered.unappliedTail, []);
  assert.equal(repairing.log.lastAppendedZxid(), 0);
  const entries = await readdir(dir);
  assert.ok(
    entries.some((name) => name.startsWith("log.damaged-")),
    `the damaged log is kept: ${entries.join(", ")}`,
  );
  assert.match(await readFile(join(dir, REPAIR_MARKER_FILE), "utf8"), /records missing/);
  await repairing.close();

  // Stopped mid-repair: it repairs again, from an empty state, whatever the new log holds.
  const { storage: again, recovered: againRecovered } = await open(dir, "repair");
  assert.ok(againRecovered.repairing !== undefined);
  const leader = new DataTree();
  for (const zxid of [1, 2, 3, 4, 5, 6]) leader.apply(createTxn(zxid));
  await completion((done) => again.snapshots.install(6, encodeSnapshot(leader), done));
  assert.deepEqual(
    (await readdir(dir)).filter((name) => name === REPAIR_MARKER_FILE),
    [],
    "the repair mark is gone",
  );
  await again.close();

  const { storage: repaired, recovered: after } = await open(dir, "refuse");
  assert.equal(after.repairing, undefined);
  assert.equal(after.tree.digest(), leader.digest());
  await repaired.close();
});
