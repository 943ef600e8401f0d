/**
 * The replica's snapshot trigger (ZooKeeper's snapCount): each server snapshots after a count of
 * applied txns drawn afresh from (snapshotEveryTxns / 2, snapshotEveryTxns], so that servers applying
 * the same txns do not all encode and write their snapshots at once.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { ReplicaDatabase } from "../../src/replica/replica-database.js";
import type { Entropy, LogSink, ReplicaStorage } from "../../src/replica/ports.js";
import { DataTree } from "../../src/store/data-tree.js";
import type { Txn } from "../../src/store/types.js";

const silent: LogSink = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {}, fatal: () => {} };

function createTxn(n: number): Txn {
  return {
    header: { sessionId: 0n, cxid: 1, zxid: n, timeMs: 1_000 + n },
    body: { type: "create", path: `/n${n}`, data: new Uint8Array([n & 0xff]), acl: [], ephemeralOwner: 0n, parentCversion: n - 1 },
  };
}

/** Entropy from a fixed byte sequence, so a test knows every draw. */
function entropyOf(bytes: number[]): Entropy {
  let at = 0;
  return { bytes: (count) => Uint8Array.from({ length: count }, () => bytes[at++ % bytes.length]!) };
}

/** The counts of txns applied between successive snapshots, over `txns` txns. */
function gaps(snapshotEveryTxns: number, entropy: Entropy, txns: number): number[] {
  const snapshotsAt: number[] = [];
  let applied = 0;
  const storage = {
    snapshots: {
      save: (_tree: DataTree, written: () => void) => {
        snapshotsAt.push(applied);
        written();
      },
    },
  } as unknown as ReplicaStorage;
  const database = new ReplicaDatabase(new DataTree(), storage, snapshotEveryTxns, entropy, silent, "");
  for (let n = 1; n <= txns; n++) {
    applied = n;
    database.apply(createTxn(n), { applied: () => {} });
  }
  return snapshotsAt.map((at, i) => at - (i === 0 ? 0 : snapshotsAt[i - 1]!));
}

test("a server snapshots after a count drawn afresh each time from (N/2, N]", () => {
  // Draws of 4 bytes each: 0 → 6 (the low end), 4 → 10 (the high end), 2 → 8, for N = 10.
  const counts = gaps(10, entropyOf([0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 2]), 6 + 10 + 8);
  assert.deepEqual(counts, [6, 10, 8]);
});

test("servers drawing differently snapshot at different moments, and every count stays in (N/2, N]", () => {
  const seen = new Set<string>();
  for (const seed of [1, 2, 3, 7, 11, 200]) {
    const counts = gaps(1_000, entropyOf([seed, seed * 7, seed * 13, seed * 31]), 10_000);
    assert.ok(counts.length >= 10, `seed ${seed}: at least one snapshot every 1,000 txns`);
    for (const count of counts) assert.ok(count > 500 && count <= 1_000, `seed ${seed}: ${count} in (500, 1000]`);
    seen.add(counts.slice(0, 3).join(","));
  }
  assert.ok(seen.size > 1, "different draws stagger the servers");
});

test("the largest N allowed draws over its whole range", () => {
  // 0xffffffff % 50,000,000 = 44,967,295: a draw wider than 2^24 reaches the top of (50 M, 100 M].
  // (Applying ninety million txns to watch it would take minutes: the drawn count is read directly.)
  const database = new ReplicaDatabase(new DataTree(), {} as ReplicaStorage, 100_000_000, entropyOf([0xff, 0xff, 0xff, 0xff]), silent, "");
  assert.equal((database as unknown as { txnsBeforeSnapshot: number }).txnsBeforeSnapshot, 50_000_001 + 44_967_295);
});

test("with N = 2 the count is always 2 (tests rely on it), and with N = 1 every txn", () => {
  assert.deepEqual(gaps(2, entropyOf([9, 200, 77]), 8), [2, 2, 2, 2]);
  assert.deepEqual(gaps(1, entropyOf([9, 200, 77]), 3), [1, 1, 1]);
});
