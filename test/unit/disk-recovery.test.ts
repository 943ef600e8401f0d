import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { dataDirLayout, purgeOld, type Recovered, recover, RecoveryError } from "../../src/store/disk/recovery.js";
import { SNAPSHOT_HEADER_BYTES, snapshotFileName } from "../../src/store/disk/snapshot-store.js";
import type { LogEntry } from "../../src/store/disk/txn-log.js";

/** A promise that never settles must fail its test, not hang the run. */
const TIMEOUT = { timeout: 10_000 };

async function withDataDir(body: (dataDir: string) => Promise<void>): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), "corral-recover-"));
  try {
    await body(dataDir);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

function record(zxid: number): Uint8Array {
  return new TextEncoder().encode(`txn-${zxid}`);
}

async function collect(tail: AsyncIterable<LogEntry>): Promise<number[]> {
  const zxids: number[] = [];
  for await (const entry of tail) {
    assert.deepEqual(Buffer.from(entry.record), Buffer.from(record(entry.zxid)));
    zxids.push(entry.zxid);
  }
  return zxids;
}

function range(fromInclusive: number, toInclusive: number): number[] {
  return Array.from({ length: toInclusive - fromInclusive + 1 }, (_, i) => fromInclusive + i);
}

/** Writes log records 1..lastZxid and a snapshot at each of `snapshotZxids`, then closes. */
async function populate(dataDir: string, lastZxid: number, snapshotZxids: number[]): Promise<void> {
  const state = await recover(dataDir);
  try {
    await Promise.all(range(1, lastZxid).map((zxid) => state.log.append(zxid, record(zxid))));
    for (const zxid of snapshotZxids) await state.snapshots.save(zxid, new TextEncoder().encode(`tree@${zxid}`));
  } finally {
    await state.log.close();
  }
}

async function withRecovered(dataDir: string, body: (state: Recovered) => Promise<void>): Promise<void> {
  const state = await recover(dataDir);
  try {
    await body(state);
  } finally {
    await state.log.close();
  }
}

test("recovery answers the newest snapshot at S and exactly the log records in (S, L]", TIMEOUT, async () => {
  await withDataDir(async (dataDir) => {
    await populate(dataDir, 50, [20, 35]);
    await withRecovered(dataDir, async (state) => {
      assert.equal(state.snapshot?.zxid, 35);
      assert.equal(new TextDecoder().decode(state.snapshot?.bytes), "tree@35");
      assert.deepEqual(await collect(state.tail), range(36, 50));
      assert.equal(state.log.lastDurableZxid(), 50);
    });
  });
});

test("recovery without a snapshot replays the whole log; a fresh data dir recovers empty", TIMEOUT, async () => {
  await withDataDir(async (dataDir) => {
    await withRecovered(dataDir, async (state) => {
      assert.equal(state.snapshot, undefined);
      assert.deepEqual(await collect(state.tail), []);
    });
    await populate(dataDir, 12, []);
    await withRecovered(dataDir, async (state) => {
      assert.equal(state.snapshot, undefined);
      assert.deepEqual(await collect(state.tail), range(1, 12));
    });
  });
});

test("recovery falls back to the previous snapshot when the newest is corrupt, and replays from it", TIMEOUT, async () => {
  await withDataDir(async (dataDir) => {
    await populate(dataDir, 40, [10, 30]);
    const newest = join(dataDirLayout(dataDir).snapshotDir, snapshotFileName(30));
    const contents = await readFile(newest);
    contents[SNAPSHOT_HEADER_BYTES] = (contents[SNAPSHOT_HEADER_BYTES] ?? 0) ^ 0xff;
    await writeFile(newest, contents);
    const skipped: number[] = [];
    const state = await recover(dataDir, { onInvalidSnapshot: (invalid) => skipped.push(invalid.zxid) });
    try {
      assert.deepEqual(skipped, [30]);
      assert.equal(state.snapshot?.zxid, 10);
      assert.deepEqual(await collect(state.tail), range(11, 40));
    } finally {
      await state.log.close();
    }
  });
});

test("a snapshot newer than the whole log leaves an empty tail", TIMEOUT, async () => {
  await withDataDir(async (dataDir) => {
    await populate(dataDir, 5, [9]);
    await withRecovered(dataDir, async (state) => {
      assert.equal(state.snapshot?.zxid, 9);
      assert.deepEqual(await collect(state.tail), []);
    });
  });
});

test("purgeOld keeps N snapshots and the log records from the oldest kept one on", TIMEOUT, async () => {
  await withDataDir(async (dataDir) => {
    await populate(dataDir, 40, [10, 20, 30]);
    await withRecovered(dataDir, async (state) => {
      assert.equal(await purgeOld(state.log, state.snapshots, 2), 20);
      assert.deepEqual(await state.snapshots.list(), [30, 20]);
      assert.equal(state.log.firstZxid(), 20);
      assert.deepEqual(await collect(state.log.readFrom(0)), range(20, 40));
    });
    await withRecovered(dataDir, async (state) => {
      assert.equal(state.snapshot?.zxid, 30);
      assert.deepEqual(await collect(state.tail), range(31, 40));
    });
  });
});

test("after purgeOld, losing the newest snapshot still recovers from the oldest kept one", TIMEOUT, async () => {
  await withDataDir(async (dataDir) => {
    await populate(dataDir, 40, [10, 20, 30]);
    await withRecovered(dataDir, async (state) => void (await purgeOld(state.log, state.snapshots, 2)));
    await writeFile(join(dataDirLayout(dataDir).snapshotDir, snapshotFileName(30)), "torn");
    await withRecovered(dataDir, async (state) => {
      assert.equal(state.snapshot?.zxid, 20);
      assert.deepEqual(await collect(state.tail), range(21, 40));
    });
  });
});

test("recovery refuses a data dir whose log was purged past every valid snapshot", TIMEOUT, async () => {
  await withDataDir(async (dataDir) => {
    await populate(dataDir, 40, [10, 30]);
    await withRecovered(dataDir, async (state) => void (await purgeOld(state.log, state.snapshots, 1)));
    await writeFile(join(dataDirLayout(dataDir).snapshotDir, snapshotFileName(30)), "torn");
    await assert.rejects(recover(dataDir), RecoveryError);
    // The log was closed on the way out: the directory can be opened again.
    await assert.rejects(recover(dataDir), RecoveryError);
  });
});
