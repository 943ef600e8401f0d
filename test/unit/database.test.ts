/** The server database's cluster operations against real LevelDB and snapshot files. */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { pino } from "pino";
import { ServerDatabase } from "../../src/server/database.js";
import { DataTree } from "../../src/store/data-tree.js";
import { encodeSnapshot } from "../../src/store/snapshot-codec.js";
import { encodeTxn } from "../../src/store/txn-codec.js";
import type { Txn } from "../../src/store/types.js";
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

async function openWith(zxids: number[], snapshotAfter?: number) {
  const dir = await makeTempDir();
  removals.push(dir.remove);
  const db = await ServerDatabase.open(dir.path, { snapshotEveryTxns: 1_000_000, snapshotRetainCount: 3 }, logger);
  for (const [index, zxid] of zxids.entries()) {
    const txn = createTxn(zxid, index + 1);
    await db.log.append(zxid, encodeTxn(txn));
    db.apply(txn);
    if (zxid === snapshotAfter) await db.takeSnapshot();
  }
  return { db, dir: dir.path };
}

const paths = (tree: DataTree) => [...(tree.getNode("/")?.children ?? [])].filter((c) => c !== "zookeeper").sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));

test("a cluster-mode recovery keeps the log tail after the snapshot aside instead of applying it", async () => {
  const { db, dir } = await openWith([1, 2, 3, 4, 5, 6, 7], 4);
  await db.close();
  const reopened = await ServerDatabase.open(dir, { snapshotEveryTxns: 1_000_000, snapshotRetainCount: 3, replayLog: false }, logger);
  assert.equal(reopened.tree.lastProcessedZxid, 4);
  assert.deepEqual(reopened.unappliedTail.map((r) => r.zxid), [5, 6, 7]);
  assert.equal(reopened.lastLoggedZxid(), 7);
  await reopened.close();
});

test("truncateLogAfter drops the uncommitted tail from the log and never touches committed state", async () => {
  const { db, dir } = await openWith([1, 2, 3, 4, 5, 6, 7], 4);
  await db.close();
  const reopened = await ServerDatabase.open(dir, { snapshotEveryTxns: 1_000_000, snapshotRetainCount: 3, replayLog: false }, logger);
  await reopened.truncateLogAfter(5);
  assert.equal(reopened.lastLoggedZxid(), 5);
  await assert.rejects(reopened.truncateLogAfter(3), /would cut committed txns/);
  await reopened.close();
  const again = await ServerDatabase.open(dir, { snapshotEveryTxns: 1_000_000, snapshotRetainCount: 3, replayLog: false }, logger);
  assert.deepEqual(again.unappliedTail.map((r) => r.zxid), [5]);
  await again.close();
});

test("installSnapshot replaces tree and log, and a reopen recovers the leader's state", async () => {
  const { db, dir } = await openWith([1, 2, 3]);
  const leader = new DataTree();
  for (const zxid of [1, 2, 3, 4, 5, 6]) leader.apply(createTxn(zxid));
  leader.apply({ header: { sessionId: 0n, cxid: 0, zxid: 0x1_0000_0001, timeMs: 9 }, body: { type: "setData", path: "/n6", data: new Uint8Array([66]), version: 1 } });
  const bytes = encodeSnapshot(leader);
  db.replaceTree(leader.lastProcessedZxid, bytes);
  await db.persistInstalledSnapshot(leader.lastProcessedZxid, bytes);
  assert.equal(db.tree.digest(), leader.digest());
  assert.equal(db.lastLoggedZxid(), 0x1_0000_0001);
  const next = createTxn(0x1_0000_0002);
  next.body = { ...next.body, path: "/after", parentCversion: 6 } as Txn["body"];
  await db.log.append(next.header.zxid, encodeTxn(next));
  db.apply(next);
  await db.close();
  const reopened = await ServerDatabase.open(dir, { snapshotEveryTxns: 1_000_000, snapshotRetainCount: 3 }, logger);
  assert.equal(reopened.tree.digest(), db.tree.digest());
  await reopened.close();
});

test("epochs persist across a reopen and default to the last logged zxid's epoch", async () => {
  const { db, dir } = await openWith([0x2_0000_0001]);
  assert.deepEqual(await db.readEpochs(), { acceptedEpoch: 2, currentEpoch: 2 });
  await db.persistEpoch("accepted", 3);
  await db.close();
  const reopened = await ServerDatabase.open(dir, { snapshotEveryTxns: 1_000_000, snapshotRetainCount: 3 }, logger);
  assert.deepEqual(await reopened.readEpochs(), { acceptedEpoch: 3, currentEpoch: 2 });
  await reopened.persistEpoch("current", 3);
  assert.deepEqual(await reopened.readEpochs(), { acceptedEpoch: 3, currentEpoch: 3 });
  assert.deepEqual((await reopened.recentLog(5)).map((r) => r.zxid), [0x2_0000_0001]);
  await reopened.close();
});
