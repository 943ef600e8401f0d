import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { AssertionError } from "../../src/common/assert.js";
import { type LevelTxnLogOptions, type LogEntry, LevelTxnLog, InjectedWriteFault, TxnLogClosedError, TxnLogFailedError } from "../../src/store/disk/txn-log.js";

/** A promise that never settles must fail its test, not hang the run. */
const TIMEOUT = { timeout: 10_000 };

/** Runs `body` with a fresh log in a temp directory; closes it and removes the directory after. */
async function withLog(body: (log: LevelTxnLog, dir: string) => Promise<void>, options: LevelTxnLogOptions = {}): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "corral-txnlog-"));
  const log = await LevelTxnLog.open(join(dir, "log"), options);
  try {
    await body(log, join(dir, "log"));
  } finally {
    await log.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}

async function readAll(log: LevelTxnLog, afterZxid = 0): Promise<LogEntry[]> {
  const entries: LogEntry[] = [];
  for await (const entry of log.readFrom(afterZxid)) entries.push(entry);
  return entries;
}

function record(zxid: number): Uint8Array {
  return new TextEncoder().encode(`txn-${zxid}`);
}

function zxidsOf(entries: LogEntry[]): number[] {
  return entries.map((entry) => entry.zxid);
}

const EPOCH = 2 ** 32;

test("readFrom returns appended records with their bytes, in zxid order, after the given zxid", TIMEOUT, async () => {
  await withLog(async (log) => {
    for (let zxid = 1; zxid <= 20; zxid += 1) await log.append(zxid, record(zxid));
    const all = await readAll(log);
    assert.deepEqual(
      zxidsOf(all),
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    for (const entry of all) assert.deepEqual(Buffer.from(entry.record), Buffer.from(record(entry.zxid)));
    assert.deepEqual(zxidsOf(await readAll(log, 15)), [16, 17, 18, 19, 20]);
    assert.deepEqual(zxidsOf(await readAll(log, 20)), []);
  });
});

test("log order is numeric zxid order across byte and epoch boundaries", TIMEOUT, async () => {
  const zxids = [1, 255, 256, 65_535, 65_536, EPOCH - 1, EPOCH, EPOCH + 1, 3 * EPOCH + 7, 2 ** 40, Number.MAX_SAFE_INTEGER];
  await withLog(async (log) => {
    await Promise.all(zxids.map((zxid) => log.append(zxid, record(zxid))));
    assert.deepEqual(zxidsOf(await readAll(log)), zxids);
    assert.deepEqual(zxidsOf(await readAll(log, EPOCH)), zxids.slice(7));
    assert.equal(log.lastDurableZxid(), Number.MAX_SAFE_INTEGER);
  });
});

test("records, first and last zxid survive close and reopen", TIMEOUT, async () => {
  await withLog(async (log, dir) => {
    for (let zxid = EPOCH + 1; zxid <= EPOCH + 5; zxid += 1) await log.append(zxid, record(zxid));
    await log.close();
    const reopened = await LevelTxnLog.open(dir);
    try {
      assert.equal(reopened.firstZxid(), EPOCH + 1);
      assert.equal(reopened.lastDurableZxid(), EPOCH + 5);
      assert.equal(reopened.lastAppendedZxid(), EPOCH + 5);
      const entries = await readAll(reopened);
      assert.deepEqual(
        zxidsOf(entries),
        [1, 2, 3, 4, 5].map((n) => EPOCH + n),
      );
      assert.deepEqual(Buffer.from(entries[2]!.record), Buffer.from(record(EPOCH + 3)));
      assert.throws(() => void reopened.append(EPOCH + 5, record(0)), AssertionError);
    } finally {
      await reopened.close();
    }
  });
});

test("an empty log reports zero for first, last appended and last durable zxid", TIMEOUT, async () => {
  await withLog(async (log) => {
    assert.equal(log.firstZxid(), 0);
    assert.equal(log.lastAppendedZxid(), 0);
    assert.equal(log.lastDurableZxid(), 0);
    assert.deepEqual(await readAll(log), []);
  });
});

test("append refuses a zxid that does not increase", TIMEOUT, async () => {
  await withLog(async (log) => {
    await log.append(5, record(5));
    assert.throws(() => void log.append(5, record(5)), AssertionError);
    assert.throws(() => void log.append(4, record(4)), AssertionError);
    assert.throws(() => void log.append(0.5 + 6, record(6)), AssertionError);
    assert.deepEqual(zxidsOf(await readAll(log)), [5]);
  });
});

test("an append is durable, and visible to readFrom, only once its promise resolves", TIMEOUT, async () => {
  await withLog(async (log) => {
    const appended = log.append(1, record(1));
    assert.equal(log.lastAppendedZxid(), 1);
    assert.equal(log.lastDurableZxid(), 0);
    assert.deepEqual(await readAll(log), []);
    await appended;
    assert.equal(log.lastDurableZxid(), 1);
    assert.deepEqual(zxidsOf(await readAll(log)), [1]);
  });
});

test("group commit: 1,000 appends fired together resolve in order using few sync batches", TIMEOUT, async () => {
  await withLog(async (log) => {
    const resolved: number[] = [];
    const appends: Promise<void>[] = [];
    for (let zxid = 1; zxid <= 1000; zxid += 1) {
      appends.push(log.append(zxid, record(zxid)).then(() => void resolved.push(zxid)));
    }
    await Promise.all(appends);
    assert.deepEqual(
      resolved,
      Array.from({ length: 1000 }, (_, i) => i + 1),
    );
    const stats = log.stats();
    assert.equal(stats.recordsWritten, 1000);
    assert.ok(stats.batchesWritten < 1000 / 4, `expected few batches, got ${stats.batchesWritten}`);
    assert.equal(log.lastDurableZxid(), 1000);
    assert.equal((await readAll(log)).length, 1000);
  });
});

test("group commit: appends arriving while a batch is being synced join the next batch", TIMEOUT, async () => {
  await withLog(async (log) => {
    // 64 writers, each appending again as soon as its previous append is durable.
    let next = 1;
    const writer = async (): Promise<void> => {
      for (let round = 0; round < 10; round += 1) {
        const zxid = next++;
        await log.append(zxid, record(zxid));
      }
    };
    await Promise.all(Array.from({ length: 64 }, writer));
    const stats = log.stats();
    assert.equal(stats.recordsWritten, 640);
    assert.ok(stats.batchesWritten < 640 / 4, `expected few batches, got ${stats.batchesWritten}`);
    assert.deepEqual(
      zxidsOf(await readAll(log)),
      Array.from({ length: 640 }, (_, i) => i + 1),
    );
  });
});

test("a single append in isolation is written as exactly one batch", TIMEOUT, async () => {
  await withLog(async (log) => {
    await log.append(1, record(1));
    assert.deepEqual(log.stats(), { batchesWritten: 1, recordsWritten: 1, recordBytesWritten: record(1).byteLength, largestBatchRecords: 1 });
    await log.append(2, record(2));
    assert.equal(log.stats().batchesWritten, 2);
  });
});

test("no batch holds more records than batchTxnsMax", TIMEOUT, async () => {
  await withLog(
    async (log) => {
      await Promise.all(Array.from({ length: 95 }, (_, i) => log.append(i + 1, record(i + 1))));
      const stats = log.stats();
      assert.equal(stats.recordsWritten, 95);
      assert.equal(stats.largestBatchRecords, 10);
      assert.equal(stats.batchesWritten, 10);
    },
    { batchTxnsMax: 10 },
  );
});

test("no batch exceeds batchBytesMax unless a single record is larger", TIMEOUT, async () => {
  await withLog(
    async (log) => {
      const big = new Uint8Array(600);
      await Promise.all(Array.from({ length: 6 }, (_, i) => log.append(i + 1, big)));
      await log.append(7, new Uint8Array(5000));
      const stats = log.stats();
      assert.equal(stats.largestBatchRecords, 1);
      assert.equal(stats.batchesWritten, 7);
    },
    { batchBytesMax: 1000 },
  );
});

test("a failed batch rejects it and every queued append, and the log refuses everything after", TIMEOUT, async () => {
  let appendWrites = 0;
  const options: LevelTxnLogOptions = {
    batchTxnsMax: 2,
    faults: { failWrite: (kind) => kind === "append" && ++appendWrites === 2 },
  };
  await withLog(async (log, dir) => {
    // Batches: {1,2} succeeds, {3,4} fails while {5} is still queued.
    const outcomes = await Promise.allSettled([1, 2, 3, 4, 5].map((zxid) => log.append(zxid, record(zxid))));
    assert.deepEqual(
      outcomes.map((outcome) => outcome.status),
      ["fulfilled", "fulfilled", "rejected", "rejected", "rejected"],
    );
    for (const outcome of outcomes.slice(2)) {
      assert.ok(outcome.status === "rejected" && outcome.reason instanceof TxnLogFailedError);
    }
    assert.equal(log.lastDurableZxid(), 2);
    await assert.rejects(log.append(6, record(6)), TxnLogFailedError);
    await assert.rejects(log.stable.putNumber("acceptedEpoch", 1), TxnLogFailedError);
    await assert.rejects(log.truncateAfter(1), TxnLogFailedError);
    await assert.rejects(readAll(log), TxnLogFailedError);
    await log.close();
    const reopened = await LevelTxnLog.open(dir);
    try {
      assert.deepEqual(zxidsOf(await readAll(reopened)), [1, 2]);
    } finally {
      await reopened.close();
    }
  }, options);
});

test("a batch whose sync fails after LevelDB wrote it is rejected all the same; the record may survive", TIMEOUT, async () => {
  let appendWrites = 0;
  await withLog(
    async (log, dir) => {
      await log.append(1, record(1));
      const failed = await log.append(2, record(2)).then(
        () => undefined,
        (error: unknown) => error,
      );
      assert.ok(failed instanceof TxnLogFailedError, String(failed));
      assert.ok(failed.cause instanceof InjectedWriteFault && failed.cause.code === "LEVEL_IO_ERROR");
      assert.equal(log.lastDurableZxid(), 1, "never reported durable");
      await log.close();
      const reopened = await LevelTxnLog.open(dir);
      try {
        assert.deepEqual(zxidsOf(await readAll(reopened)), [1, 2], "the data reached the disk before the injected sync error");
      } finally {
        await reopened.close();
      }
    },
    { faults: { failWrite: (kind) => (kind === "append" && ++appendWrites === 2 ? "afterWrite" : false) } },
  );
});

test("appendThen calls back in append order once durable, and reports a failure after onFailed, never from inside the call", TIMEOUT, async () => {
  let appendWrites = 0;
  const heard: string[] = [];
  const options: LevelTxnLogOptions = {
    batchTxnsMax: 2,
    faults: { failWrite: (kind) => kind === "append" && ++appendWrites === 2 },
    onFailed: () => heard.push("onFailed"),
  };
  await withLog(async (log) => {
    const settled = new Promise<void>((resolve) => {
      for (const zxid of [1, 2, 3, 4, 5]) {
        log.appendThen(zxid, record(zxid), (error) => {
          heard.push(error === undefined ? `durable ${zxid} (log at ${log.lastDurableZxid()})` : `failed ${zxid} ${error.name}`);
          if (zxid === 5) resolve();
        });
      }
    });
    assert.deepEqual(heard, [], "nothing is called back from inside appendThen");
    await settled;
    assert.deepEqual(heard, [
      "durable 1 (log at 2)",
      "durable 2 (log at 2)",
      "onFailed",
      "failed 3 TxnLogFailedError",
      "failed 4 TxnLogFailedError",
      "failed 5 TxnLogFailedError",
    ]);
    let returned = false;
    const refused = await new Promise<{ error: Error | undefined; afterReturn: boolean }>((resolve) => {
      log.appendThen(6, record(6), (error) => resolve({ error, afterReturn: returned }));
      returned = true;
    });
    assert.ok(refused.error instanceof TxnLogFailedError);
    assert.equal(refused.afterReturn, true, "a refusal is called back after appendThen returned");
  }, options);
});

test("onFailed hears of the first failure once, whichever write it was, even with no append waiting", TIMEOUT, async () => {
  for (const kind of ["stable", "purge", "truncate", "append"] as const) {
    const heard: TxnLogFailedError[] = [];
    let armed = false;
    const options: LevelTxnLogOptions = { faults: { failWrite: (asked) => armed && asked === kind }, onFailed: (error) => heard.push(error) };
    await withLog(async (log) => {
      for (let zxid = 1; zxid <= 4; zxid += 1) await log.append(zxid, record(zxid));
      armed = true;
      const write =
        kind === "stable"
          ? log.stable.putNumber("acceptedEpoch", 1)
          : kind === "purge"
            ? log.purgeBefore(3)
            : kind === "truncate"
              ? log.truncateAfter(2)
              : log.append(5, record(5));
      await assert.rejects(write, TxnLogFailedError);
      assert.equal(heard.length, 1, `${kind}: heard once`);
      assert.ok(heard[0]!.cause instanceof InjectedWriteFault && heard[0]!.cause.kind === kind, `${kind}: the cause is the disk's error`);
      await assert.rejects(log.append(6, record(6)), TxnLogFailedError);
      await assert.rejects(log.stable.putNumber("currentEpoch", 1), TxnLogFailedError);
      assert.equal(heard.length, 1, `${kind}: later refusals are not new failures`);
    }, options);
  }
});

test("truncateAfter durably drops every record above the zxid and appends resume after it", TIMEOUT, async () => {
  await withLog(async (log, dir) => {
    for (const zxid of [10, 20, 30, 40]) await log.append(zxid, record(zxid));
    await log.truncateAfter(25);
    assert.deepEqual(zxidsOf(await readAll(log)), [10, 20]);
    assert.equal(log.lastAppendedZxid(), 20);
    assert.equal(log.lastDurableZxid(), 20);
    await log.append(21, record(21));
    await log.close();
    const reopened = await LevelTxnLog.open(dir);
    try {
      assert.deepEqual(zxidsOf(await readAll(reopened)), [10, 20, 21]);
    } finally {
      await reopened.close();
    }
  });
});

test("truncateAfter waits for earlier appends, and an append during it is a bug", TIMEOUT, async () => {
  await withLog(async (log) => {
    const appends = [1, 2, 3, 4, 5].map((zxid) => log.append(zxid, record(zxid)));
    const truncated = log.truncateAfter(3);
    assert.throws(() => void log.append(6, record(6)), AssertionError);
    await truncated;
    await Promise.all(appends);
    assert.deepEqual(zxidsOf(await readAll(log)), [1, 2, 3]);
  });
});

test("truncateAfter(0) empties the log", TIMEOUT, async () => {
  await withLog(async (log) => {
    for (const zxid of [1, 2, 3]) await log.append(zxid, record(zxid));
    await log.truncateAfter(0);
    assert.deepEqual(await readAll(log), []);
    assert.equal(log.firstZxid(), 0);
    assert.equal(log.lastDurableZxid(), 0);
  });
});

test("purgeBefore drops every record below the zxid and remembers the bound across reopen", TIMEOUT, async () => {
  await withLog(async (log, dir) => {
    for (let zxid = 1; zxid <= 10; zxid += 1) await log.append(zxid, record(zxid));
    assert.equal(log.purgedBeforeZxid(), 0);
    await log.purgeBefore(4);
    assert.deepEqual(zxidsOf(await readAll(log)), [4, 5, 6, 7, 8, 9, 10]);
    assert.equal(log.firstZxid(), 4);
    assert.equal(log.purgedBeforeZxid(), 4);
    await log.close();
    const reopened = await LevelTxnLog.open(dir);
    try {
      assert.deepEqual(zxidsOf(await readAll(reopened)), [4, 5, 6, 7, 8, 9, 10]);
      assert.equal(reopened.firstZxid(), 4);
      assert.equal(reopened.purgedBeforeZxid(), 4);
    } finally {
      await reopened.close();
    }
  });
});

test("stable numbers are durable across reopen and live apart from the log records", TIMEOUT, async () => {
  await withLog(async (log, dir) => {
    assert.equal(await log.stable.getNumber("acceptedEpoch"), undefined);
    await log.stable.putNumber("acceptedEpoch", 3);
    await log.stable.putNumber("currentEpoch", 2);
    await log.stable.putNumber("acceptedEpoch", 4);
    await log.stable.putNumber("signed", -7);
    await log.stable.putNumber("large", Number.MAX_SAFE_INTEGER);
    assert.throws(() => void log.stable.putNumber("fraction", 1.5), AssertionError);
    await log.close();
    const reopened = await LevelTxnLog.open(dir);
    try {
      assert.equal(await reopened.stable.getNumber("acceptedEpoch"), 4);
      assert.equal(await reopened.stable.getNumber("currentEpoch"), 2);
      assert.equal(await reopened.stable.getNumber("signed"), -7);
      assert.equal(await reopened.stable.getNumber("large"), Number.MAX_SAFE_INTEGER);
      assert.equal(reopened.lastDurableZxid(), 0);
      assert.deepEqual(await readAll(reopened), []);
    } finally {
      await reopened.close();
    }
  });
});

test("close makes pending appends durable first, then refuses new ones", TIMEOUT, async () => {
  await withLog(async (log, dir) => {
    const appends = [1, 2, 3].map((zxid) => log.append(zxid, record(zxid)));
    await log.close();
    await Promise.all(appends);
    await assert.rejects(log.append(4, record(4)), TxnLogClosedError);
    const reopened = await LevelTxnLog.open(dir);
    try {
      assert.deepEqual(zxidsOf(await readAll(reopened)), [1, 2, 3]);
    } finally {
      await reopened.close();
    }
  });
});
