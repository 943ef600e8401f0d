/**
 * Bytes already on disk that went bad are found when read, never handed on: each txn record's
 * checksum and link to the record before it (log-record.ts), stored numbers' checksums, LevelDB's
 * own refusals, and a log that does not continue its snapshot.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Level } from "level";

import { StorageDamagedError } from "../../src/store/disk/damage.js";
import { logKey, stableKey } from "../../src/store/disk/keys.js";
import { decodeLogRecord, encodeLogRecord, LOG_RECORD_HEADER_BYTES, LogChain } from "../../src/store/disk/log-record.js";
import { dataDirLayout, recover } from "../../src/store/disk/recovery.js";
import { type LogEntry, LevelTxnLog } from "../../src/store/disk/txn-log.js";
import { makeTempDir } from "../helpers/temp-dir.js";

const TIMEOUT = { timeout: 20_000 };
const EPOCH = 2 ** 32;
const payload = (zxid: number): Uint8Array => new TextEncoder().encode(`txn-${zxid}`);

async function withDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await makeTempDir("corral-damage-");
  try {
    await body(dir.path);
  } finally {
    await dir.remove();
  }
}

/** Appends `zxids` to the log in `dir`, then closes it. */
async function writeLog(dir: string, zxids: number[]): Promise<void> {
  const log = await LevelTxnLog.open(dir);
  try {
    await Promise.all(zxids.map((zxid) => log.append(zxid, payload(zxid))));
  } finally {
    await log.close();
  }
}

/** Changes the stored bytes under `key` with LevelDB itself, as damage on disk would leave them. */
async function tamper(dir: string, change: (db: Level<Buffer, Uint8Array>) => Promise<void>): Promise<void> {
  const db = new Level<Buffer, Uint8Array>(dir, { keyEncoding: "buffer", valueEncoding: "view" });
  await db.open();
  try {
    await change(db);
  } finally {
    await db.close();
  }
}

async function readAll(log: LevelTxnLog, after = 0): Promise<LogEntry[]> {
  const entries: LogEntry[] = [];
  for await (const entry of log.readFrom(after)) entries.push(entry);
  return entries;
}

/** The damage opening the log in `dir` finds: open reads and checks the whole database. */
async function damageOnOpen(dir: string): Promise<StorageDamagedError> {
  const error = await LevelTxnLog.open(dir).then(
    async (log) => {
      await log.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  assert.ok(error instanceof StorageDamagedError, `expected StorageDamagedError, got ${String(error)}`);
  return error;
}

test("a stored record round-trips its payload and the zxid it follows", () => {
  const key = logKey(EPOCH + 7);
  const stored = encodeLogRecord(key, EPOCH + 6, payload(7));
  assert.equal(stored.byteLength, LOG_RECORD_HEADER_BYTES + payload(7).byteLength);
  const decoded = decodeLogRecord(key, stored);
  assert.ok(decoded.ok);
  assert.equal(decoded.prevZxid, EPOCH + 6);
  assert.deepEqual(Buffer.from(decoded.payload), Buffer.from(payload(7)));
});

test("a flipped bit anywhere in a stored record, or the record read under another key, is refused", () => {
  const key = logKey(EPOCH + 7);
  const stored = encodeLogRecord(key, EPOCH + 6, payload(7));
  for (let byte = 0; byte < stored.byteLength; byte++) {
    for (const bit of [0x01, 0x80]) {
      const damaged = Uint8Array.from(stored);
      damaged[byte] = damaged[byte]! ^ bit;
      assert.equal(decodeLogRecord(key, damaged).ok, false, `byte ${byte} bit ${bit}`);
    }
  }
  assert.equal(decodeLogRecord(logKey(EPOCH + 8), stored).ok, false);
  assert.equal(decodeLogRecord(key, stored.subarray(0, LOG_RECORD_HEADER_BYTES - 1)).ok, false);
  assert.equal(decodeLogRecord(key, new Uint8Array(0)).ok, false);
});

test("a record written before the checksum (the bare txn, version byte 1) is read as it is", () => {
  const legacy = Uint8Array.from([1, 2, 3, 4]);
  const decoded = decodeLogRecord(logKey(5), legacy);
  assert.ok(decoded.ok);
  assert.equal(decoded.prevZxid, undefined);
  assert.deepEqual(decoded.payload, legacy);
});

test("the chain finds a missing record, a log that does not continue its snapshot, and a skipped counter between old records", () => {
  const linked = new LogChain(EPOCH + 10);
  assert.equal(linked.next(EPOCH + 11, EPOCH + 10), undefined);
  assert.equal(linked.next(EPOCH + 12, EPOCH + 11), undefined);
  assert.match(linked.next(EPOCH + 14, EPOCH + 13) ?? "", /records missing between 0x10000000c and 0x10000000e/);

  assert.match(new LogChain(EPOCH + 10).next(EPOCH + 12, EPOCH + 11) ?? "", /does not continue its snapshot at 0x10000000a/);
  // A new epoch's first record follows the last of the old one.
  assert.equal(new LogChain(EPOCH + 10).next(2 * EPOCH + 1, EPOCH + 10), undefined);

  const legacy = new LogChain(EPOCH + 10);
  assert.equal(legacy.next(EPOCH + 11, undefined), undefined);
  assert.match(legacy.next(EPOCH + 13, undefined) ?? "", /records missing/);
  assert.equal(legacy.next(2 * EPOCH + 1, undefined), undefined, "across epochs old records cannot be checked");
  assert.match(new LogChain(EPOCH + 10).next(EPOCH + 12, undefined) ?? "", /records missing between the snapshot/);
});

test("a record whose stored bytes changed on disk fails the open with StorageDamagedError naming the log and the zxid", TIMEOUT, async () => {
  await withDir(async (dir) => {
    await writeLog(dir, [EPOCH + 1, EPOCH + 2, EPOCH + 3]);
    await tamper(dir, async (db) => {
      const stored = Uint8Array.from(await db.get(logKey(EPOCH + 2)));
      stored[stored.byteLength - 1] = stored[stored.byteLength - 1]! ^ 0x40;
      await db.put(logKey(EPOCH + 2), stored);
    });
    const damage = await damageOnOpen(dir);
    assert.equal(damage.file, dir);
    assert.match(damage.reason, /record 0x100000002: record checksum mismatch/);
  });
});

test("a record missing from the middle of the log (what LevelDB's recovery skips silently) is found", TIMEOUT, async () => {
  await withDir(async (dir) => {
    await writeLog(dir, [EPOCH + 1, EPOCH + 2, EPOCH + 3, EPOCH + 4]);
    await tamper(dir, (db) => db.del(logKey(EPOCH + 3)));
    assert.match((await damageOnOpen(dir)).reason, /records missing between 0x100000002 and 0x100000004/);
  });
});

test("records of the format before the checksum are read, and new records chain onto them", TIMEOUT, async () => {
  await withDir(async (dir) => {
    await tamper(dir, async (db) => {
      for (const zxid of [EPOCH + 1, EPOCH + 2]) await db.put(logKey(zxid), Uint8Array.from([1, zxid % 256]));
    });
    await writeLog(dir, [EPOCH + 3]);
    const log = await LevelTxnLog.open(dir);
    try {
      const entries = await readAll(log);
      assert.deepEqual(
        entries.map((e) => [e.zxid, e.prevZxid]),
        [
          [EPOCH + 1, undefined],
          [EPOCH + 2, undefined],
          [EPOCH + 3, EPOCH + 2],
        ],
      );
    } finally {
      await log.close();
    }
  });
});

test("a stable number whose bytes changed is refused, not read as another number", TIMEOUT, async () => {
  await withDir(async (dir) => {
    const log = await LevelTxnLog.open(dir);
    await log.stable.putNumber("acceptedEpoch", 7);
    await log.close();
    await tamper(dir, async (db) => {
      const stored = Uint8Array.from(await db.get(stableKey("acceptedEpoch")));
      stored[7] = 9;
      await db.put(stableKey("acceptedEpoch"), stored);
    });
    assert.match((await damageOnOpen(dir)).reason, /stored number acceptedEpoch: checksum mismatch/);
  });
});

test("a LevelDB file LevelDB cannot read back (a damaged CURRENT) fails the open with StorageDamagedError", TIMEOUT, async () => {
  await withDir(async (dir) => {
    await writeLog(dir, [1, 2]);
    const { writeFile } = await import("node:fs/promises");
    await writeFile(`${dir}/CURRENT`, "MANIFEST-0000");
    await assert.rejects(LevelTxnLog.open(dir), (e: unknown) => e instanceof StorageDamagedError && /LevelDB: Corruption/.test(e.reason));
  });
});

test("after a truncation or a reset the next record follows the log's new end, or the snapshot it now continues", TIMEOUT, async () => {
  await withDir(async (dir) => {
    const log = await LevelTxnLog.open(dir);
    try {
      for (const zxid of [1, 2, 3, 4]) await log.append(zxid, payload(zxid));
      await log.truncateAfter(2);
      await log.append(EPOCH + 1, payload(EPOCH + 1));
      assert.deepEqual(
        (await readAll(log)).map((e) => [e.zxid, e.prevZxid]),
        [
          [1, 0],
          [2, 1],
          [EPOCH + 1, 2],
        ],
      );
      await log.reset(EPOCH + 40);
      await log.append(EPOCH + 41, payload(EPOCH + 41));
      assert.deepEqual(
        (await readAll(log)).map((e) => [e.zxid, e.prevZxid]),
        [[EPOCH + 41, EPOCH + 40]],
      );
    } finally {
      await log.close();
    }
  });
});

test("recovery refuses a log whose first record after the snapshot does not follow it", TIMEOUT, async () => {
  await withDir(async (dataDir) => {
    const state = await recover(dataDir);
    try {
      for (const zxid of [1, 2, 3, 4, 5]) await state.log.append(zxid, payload(zxid));
      await state.snapshots.save(3, new TextEncoder().encode("tree@3"));
    } finally {
      await state.log.close();
    }
    // Records 1..4 gone with no purge bound recorded: what is left is a whole chain, from the wrong place.
    await tamper(dataDirLayout(dataDir).logDir, async (db) => {
      for (const zxid of [1, 2, 3, 4]) await db.del(logKey(zxid));
    });
    const again = await recover(dataDir);
    try {
      const zxids: number[] = [];
      const error = await (async () => {
        for await (const entry of again.tail) zxids.push(entry.zxid);
      })().then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof StorageDamagedError);
      assert.match(error.reason, /does not continue its snapshot at 0x3/);
      assert.deepEqual(zxids, []);
    } finally {
      await again.log.close();
    }
  });
});

test("an empty log continues the snapshot recovery found: its next record follows that snapshot", TIMEOUT, async () => {
  await withDir(async (dataDir) => {
    const state = await recover(dataDir);
    await state.snapshots.save(EPOCH + 9, new TextEncoder().encode("tree"));
    await state.log.close();
    const again = await recover(dataDir);
    try {
      await again.log.append(EPOCH + 10, payload(EPOCH + 10));
      const [entry] = await readAll(again.log);
      assert.equal(entry?.prevZxid, EPOCH + 9);
    } finally {
      await again.log.close();
    }
  });
});

test("a damaged last record (appended, so acknowledged, whole) fails the open as damage: it is never cut back as a torn write", TIMEOUT, async () => {
  await withDir(async (dir) => {
    await writeLog(dir, [1, 2, 3, 4, 5]);
    // What a torn write would look like: the record's last bytes missing.
    let tornBytes = 0;
    await tamper(dir, async (db) => {
      const stored = await db.get(logKey(5));
      tornBytes = stored.byteLength - 3;
      await db.put(logKey(5), stored.subarray(0, tornBytes));
    });
    const damage = await damageOnOpen(dir);
    assert.match(damage.reason, /record 0x5: /);
    // Nothing was cut: the damaged record is still there for the repair (which keeps it aside) or a person.
    await tamper(dir, async (db) => assert.equal((await db.get(logKey(5))).byteLength, tornBytes));
  });
});
