import { mkdir } from "node:fs/promises";
import { Level } from "level";

import { assert } from "../../common/assert.js";
import { limits } from "../../common/constants.js";
import {
  assertZxid,
  decodeStableNumber,
  encodeStableNumber,
  LOG_KEY_PREFIX,
  LOG_RANGE_END,
  LOG_RANGE_START,
  logKey,
  META_KEY_PREFIX,
  META_PURGED_BEFORE_KEY,
  STABLE_KEY_PREFIX,
  stableKey,
  zxidOfLogKey,
} from "./keys.js";
import { levelDbDamage, StorageDamagedError } from "./damage.js";
import { type DiskFaults, type DiskWriteKind, writeWithFaults } from "./faults.js";
import type { DurableWatermark } from "./durable-watermark.js";
import { decodeLogRecord, encodeLogRecord, LogChain } from "./log-record.js";

export { type DiskFaults, type DiskWriteKind, type InjectedFaultTiming, InjectedWriteFault } from "./faults.js";

/** One logged transaction. `record` is opaque here: the txn codec lives in src/store. */
export interface LogEntry {
  zxid: number;
  record: Uint8Array;
  /** The record before it in this log (log-record.ts); undefined for a record of the format before that. */
  prevZxid?: number | undefined;
}

export interface TxnLogStats {
  /** `sync: true` batches that carried appended records (one fsync each). */
  batchesWritten: number;
  /** Records made durable by those batches. */
  recordsWritten: number;
  /** Record payload bytes made durable (keys not counted). */
  recordBytesWritten: number;
  /** Records in the largest single batch. */
  largestBatchRecords: number;
}

/**
 * The transaction log port. Appends are acknowledged only once durable; a failed write stops the
 * log for good (fail-stop), because a record that may or may not be on disk must never be acked.
 */
export interface TxnLog {
  /**
   * Resolves once `record` is fsynced; promises resolve in append order. zxids strictly increase
   * across calls (a bug otherwise: throws AssertionError at once). The record is stored with its
   * checksum and the zxid it follows (log-record.ts), copied before the call returns.
   */
  append(zxid: number, record: Uint8Array): Promise<void>;
  /** The highest zxid handed to append (durable or not); 0 when the log is empty. */
  lastAppendedZxid(): number;
  /** The highest zxid known durable; 0 when the log is empty. */
  lastDurableZxid(): number;
  /** The oldest durable zxid still stored (after purges); 0 when the log is empty. */
  firstZxid(): number;
  /** Records with a zxid below this may have been purged; 0 if the log was never purged. */
  purgedBeforeZxid(): number;
  /**
   * Durable records with zxid > afterZxid, in zxid order, as of when iteration starts, each
   * checked: a record that fails its checksum, one missing between two others, or a LevelDB file
   * LevelDB cannot read ends the iteration with StorageDamagedError.
   */
  readFrom(afterZxid: number): AsyncIterable<LogEntry>;
  /** Durably drops every record with zxid > zxid (Zab TRUNC). Waits for earlier appends first. */
  truncateAfter(zxid: number): Promise<void>;
  /** Drops every durable record with zxid < zxid (retention). Not fsynced; the bound is kept. */
  purgeBefore(zxid: number): Promise<void>;
  stats(): TxnLogStats;
  close(): Promise<void>;
}

/** Small durable numbers (Zab's acceptedEpoch and currentEpoch). */
export interface StableStore {
  /** The stored value, or undefined when it was never put. */
  getNumber(name: string): Promise<number | undefined>;
  /** Resolves once the value is fsynced. */
  putNumber(name: string, value: number): Promise<void>;
}

/** The log's fault hook (test only): see faults.ts. Asked with "append", "stable", "truncate", "purge". */
export type TxnLogFaults = DiskFaults;

export interface LevelTxnLogOptions {
  /** Records per group-commit batch; defaults to limits.logBatchTxnsMax. */
  batchTxnsMax?: number;
  /** Record bytes per batch (a single larger record still goes alone); default 16 MiB. */
  batchBytesMax?: number;
  faults?: TxnLogFaults;
  /**
   * Called once, synchronously, when a write fails and the log fail-stops — whichever write it was.
   * Pending appends are rejected too, but a failed purge (run in the background after a snapshot)
   * has nobody waiting on it: without this the server would carry on with a dead log until its next
   * write.
   */
  onFailed?: (error: TxnLogFailedError) => void;
  /**
   * Called after each group-commit batch is durable, before its appends resolve: how many records
   * it carried and how long its `sync: true` write took (the server's fsynctime and batch size).
   */
  onBatchDurable?: (records: number, durationMs: number) => void;
  /** The durable watermark kept beside the database (durable-watermark.ts); none for a log opened only to be read. */
  watermark?: DurableWatermark;
}

/** Default byte budget of one group-commit batch. */
export const LOG_BATCH_BYTES_MAX_DEFAULT = 16 * 1024 * 1024;
assert(LOG_BATCH_BYTES_MAX_DEFAULT >= limits.messageBytesMax, "a batch must hold the largest record");

/** The log is fail-stopped: a write failed, nothing more is accepted. `cause` is the disk error. */
export class TxnLogFailedError extends Error {
  readonly code = "TXN_LOG_FAILED";
  constructor(cause: unknown) {
    super(`txn log failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "TxnLogFailedError";
  }
}

/** The log was closed before this operation. */
export class TxnLogClosedError extends Error {
  readonly code = "TXN_LOG_CLOSED";
  constructor() {
    super("txn log is closed");
    this.name = "TxnLogClosedError";
  }
}

interface PendingAppend {
  zxid: number;
  key: Buffer;
  /** As stored: header and payload (log-record.ts). */
  stored: Uint8Array;
  /** The payload's length (what the stats count). */
  recordBytes: number;
  done: AppendDone;
}

/** Called once: with no argument when the record is durable, with the error when the log failed or closed first. */
export type AppendDone = (error?: Error) => void;

type Db = Level<Buffer, Uint8Array>;

/** Deletions per batch in truncate / purge. */
const DELETE_CHUNK_KEYS_MAX = 10_000;

/**
 * TxnLog and StableStore over one LevelDB database. Group commit: at most one `sync: true` batch
 * is in flight; every append arriving meanwhile waits for the next batch, so the fsync rate, not
 * the append rate, bounds the number of batches.
 */
export class LevelTxnLog implements TxnLog {
  readonly stable: StableStore;

  private readonly db: Db;
  private readonly batchTxnsMax: number;
  private readonly batchBytesMax: number;
  private readonly faults: TxnLogFaults;
  private readonly onFailed: ((error: TxnLogFailedError) => void) | undefined;
  private readonly onBatchDurable: ((records: number, durationMs: number) => void) | undefined;
  private readonly watermark: DurableWatermark | undefined;
  /** What the watermark file holds. */
  private watermarkZxid: number;

  /** Appended, not yet handed to LevelDB, in zxid order. */
  private queued: PendingAppend[] = [];
  /** The batch being written, if any. */
  private inFlight: PendingAppend[] | undefined = undefined;
  private flushScheduled = false;
  private idleWaiters: (() => void)[] = [];

  private lastAppended: number;
  /**
   * What the next record follows (its stored prevZxid): the last record appended, or when the log
   * holds none, the snapshot it continues (continueFrom, reset).
   */
  private chainTail: number;
  /** The snapshot an empty log continues (0: none known). */
  private chainBase = 0;
  private lastDurable: number;
  private first: number;
  private purgedBefore: number;

  private failure: TxnLogFailedError | undefined = undefined;
  private closing = false;
  private closed: Promise<void> | undefined = undefined;
  /** truncateAfter calls not yet finished; appends are a bug meanwhile. */
  private truncatesPending = 0;
  /** Truncate and purge run one at a time, in call order. */
  private maintenance: Promise<void> = Promise.resolve();

  private readonly counters: TxnLogStats = {
    batchesWritten: 0,
    recordsWritten: 0,
    recordBytesWritten: 0,
    largestBatchRecords: 0,
  };

  private constructor(
    db: Db,
    /** The database's directory: what a damage report names when LevelDB names no file. */
    readonly dir: string,
    first: number,
    last: number,
    purgedBefore: number,
    options: LevelTxnLogOptions,
  ) {
    this.db = db;
    this.chainTail = last;
    this.first = first;
    this.purgedBefore = purgedBefore;
    this.lastAppended = last;
    this.lastDurable = last;
    this.batchTxnsMax = options.batchTxnsMax ?? limits.logBatchTxnsMax;
    this.batchBytesMax = options.batchBytesMax ?? LOG_BATCH_BYTES_MAX_DEFAULT;
    this.faults = options.faults ?? {};
    this.onFailed = options.onFailed;
    this.onBatchDurable = options.onBatchDurable;
    this.watermark = options.watermark;
    this.watermarkZxid = options.watermark?.atOpen ?? 0;
    assert(Number.isSafeInteger(this.batchTxnsMax) && this.batchTxnsMax >= 1, "batchTxnsMax >= 1");
    assert(Number.isSafeInteger(this.batchBytesMax) && this.batchBytesMax >= 1, "batchBytesMax >= 1");
    this.stable = {
      getNumber: (name) => this.getNumber(name),
      putNumber: (name, value) => this.putNumber(name, value),
    };
  }

  /**
   * Opens (creating if needed) the LevelDB database in `dir`, e.g. `<dataDir>/log`. Throws
   * StorageDamagedError when LevelDB cannot read its own files back (a damaged table, manifest or
   * CURRENT file).
   */
  static async open(dir: string, options: LevelTxnLogOptions = {}): Promise<LevelTxnLog> {
    await mkdir(dir, { recursive: true });
    const db: Db = new Level<Buffer, Uint8Array>(dir, {
      keyEncoding: "buffer",
      valueEncoding: "view",
      createIfMissing: true,
    });
    try {
      await db.open();
    } catch (error) {
      throw levelDbDamage(error, dir) ?? error;
    }
    try {
      await verifyDatabase(db, dir);
      const first = await boundaryZxid(db, dir, false);
      const last = await boundaryZxid(db, dir, true);
      const purgedBefore = await readNumber(db, dir, META_PURGED_BEFORE_KEY);
      return new LevelTxnLog(db, dir, first, last, purgedBefore ?? 0, options);
    } catch (error) {
      await db.close();
      throw levelDbDamage(error, dir) ?? error;
    }
  }

  append(zxid: number, record: Uint8Array): Promise<void> {
    let settle: AppendDone = () => {};
    const durable = new Promise<void>((resolve, reject) => {
      settle = (error) => (error === undefined ? resolve() : reject(error));
    });
    // Outside the executor: a caller's bug (a zxid out of order) throws here, not as a rejection.
    this.appendThen(zxid, record, settle);
    return durable;
  }

  /**
   * `append` with a callback, for the server's write path: no promise per record, and `done` runs
   * straight from the batch's completion rather than a few microtasks later. Callbacks run in
   * append order; a failure is reported asynchronously, never from inside this call.
   */
  appendThen(zxid: number, record: Uint8Array, done: AppendDone): void {
    const refusal = this.failure ?? (this.closing ? new TxnLogClosedError() : undefined);
    if (refusal !== undefined) {
      queueMicrotask(() => done(refusal));
      return;
    }
    assert(this.truncatesPending === 0, "append while truncateAfter is running");
    assertZxid(zxid, "append");
    if (!(zxid > this.lastAppended)) assert(false, `append out of order: zxid ${zxid} after ${this.lastAppended}`);
    assert(record instanceof Uint8Array, "record must be a Uint8Array");
    const key = logKey(zxid);
    const stored = encodeLogRecord(key, this.chainTail, record);
    this.lastAppended = zxid;
    this.chainTail = zxid;
    this.queued.push({ zxid, key, stored, recordBytes: record.byteLength, done });
    this.scheduleFlush();
  }

  /**
   * The log continues the snapshot at `zxid` (recovery calls it with the snapshot it replays onto):
   * when it holds no record after it, the next record appended follows the snapshot.
   */
  continueFrom(zxid: number): void {
    assertZxid(zxid, "continueFrom");
    this.chainBase = zxid;
    if (this.chainTail < zxid) this.chainTail = zxid;
  }

  lastAppendedZxid(): number {
    return this.lastAppended;
  }

  lastDurableZxid(): number {
    return this.lastDurable;
  }

  firstZxid(): number {
    return this.first;
  }

  purgedBeforeZxid(): number {
    return this.purgedBefore;
  }

  readFrom(afterZxid: number): AsyncIterable<LogEntry> {
    assertZxid(afterZxid, "readFrom");
    return this.iterate(afterZxid);
  }

  private async *iterate(afterZxid: number): AsyncGenerator<LogEntry> {
    this.checkUsable();
    const upper = this.lastDurable;
    if (upper <= afterZxid) return;
    // LevelDB iterators read from an implicit snapshot taken here; the bound keeps a batch that
    // is still being written (not yet acknowledged durable) out of the answer.
    const chain = new LogChain();
    for await (const [key, value] of entriesOf(this.db.iterator({ gt: logKey(afterZxid), lte: logKey(upper) }), this.dir)) {
      yield checkedRecord(key, value, chain, this.dir);
    }
  }

  truncateAfter(zxid: number): Promise<void> {
    assertZxid(zxid, "truncateAfter");
    // From this call until it settles, append() is a bug: nothing may slip in between the drain
    // of earlier appends and the deletes.
    this.truncatesPending += 1;
    const run = this.exclusive(async () => {
      await this.drain();
      this.checkUsable();
      // Lowered first: a crash part-way must not leave it above the records that remain.
      if (zxid < this.watermarkZxid) await this.moveWatermark(zxid);
      // Highest keys first: a crash part-way leaves a shorter log, never a log with a hole.
      for (;;) {
        const keys = await this.db.keys({ gt: logKey(zxid), lt: LOG_RANGE_END, reverse: true, limit: DELETE_CHUNK_KEYS_MAX }).all();
        if (keys.length === 0) break;
        await this.write("truncate", () =>
          this.db.batch(
            keys.map((key) => ({ type: "del" as const, key })),
            { sync: true },
          ),
        );
      }
      const last = await boundaryZxid(this.db, this.dir, true);
      assert(last <= zxid, "truncate left a record above its bound");
      this.lastAppended = last;
      this.lastDurable = last;
      this.chainTail = Math.max(last, this.chainBase);
      if (last === 0) this.first = 0;
    });
    return run.finally(() => {
      this.truncatesPending -= 1;
    });
  }

  /**
   * Durably drops every record and makes the log continue the snapshot at `zxid` (Zab's SNAP: the
   * leader's image replaces what this log held).
   */
  async reset(zxid: number): Promise<void> {
    assertZxid(zxid, "reset");
    await this.truncateAfter(0);
    this.chainBase = zxid;
    this.chainTail = zxid;
  }

  purgeBefore(zxid: number): Promise<void> {
    assertZxid(zxid, "purgeBefore");
    // Appends still queued below the bound are not touched: they land after the deletes and merely
    // survive this purge, which is harmless.
    return this.exclusive(async () => {
      this.checkUsable();
      const purgedBefore = Math.max(this.purgedBefore, zxid);
      // The bound is written first: LevelDB replays its write-ahead log in order, so no delete
      // below can survive a crash without it, and recovery can tell a purged log from a complete
      // one. The deletes run natively on LevelDB's thread (clear walks forward, lowest keys first:
      // a crash part-way leaves a suffix of the log, still a valid log) — a JS batch of 100k deletes
      // stalled the event loop for ~100 ms after every snapshot. Neither is synced: a purge lost in
      // a crash only brings back records nobody needs.
      await this.write("purge", () => this.db.put(META_PURGED_BEFORE_KEY, encodeStableNumber(META_PURGED_BEFORE_KEY, purgedBefore)));
      this.purgedBefore = purgedBefore;
      await this.write("purge", () => this.db.clear({ gt: LOG_RANGE_START, lt: logKey(zxid) }));
      this.first = await boundaryZxid(this.db, this.dir, false);
    });
  }

  stats(): TxnLogStats {
    return { ...this.counters };
  }

  /** Waits for queued appends to become durable (or fail), then closes. Idempotent. */
  close(): Promise<void> {
    if (this.closed === undefined) {
      this.closing = true;
      this.closed = (async () => {
        await this.drain();
        await this.maintenance.catch(() => undefined);
        await this.db.close();
        await this.watermark?.close();
      })();
    }
    return this.closed;
  }

  // --- group commit -----------------------------------------------------------------------------

  private scheduleFlush(): void {
    if (this.flushScheduled || this.inFlight !== undefined) return;
    this.flushScheduled = true;
    // A microtask, not a turn of the event loop: an idle log starts its write with every append of
    // this run (a frame's worth of proposals) and no later; under load the batch in flight is what
    // gathers the next one.
    queueMicrotask(() => {
      this.flushScheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    assert(this.inFlight === undefined, "one batch in flight at a time");
    if (this.failure !== undefined || this.queued.length === 0) {
      this.notifyIdle();
      return;
    }
    const batch = this.cutBatch();
    this.inFlight = batch;
    let recordBytes = 0;
    for (const pending of batch) recordBytes += pending.recordBytes;
    const startedMs = performance.now();
    try {
      await this.write("append", () => this.writeRecords(batch));
      await this.moveWatermark(batch.at(-1)?.zxid ?? this.lastDurable);
    } catch {
      // write() has already failed the log and rejected every pending append, this batch included.
      return;
    } finally {
      this.inFlight = undefined;
    }
    const lastInBatch = batch[batch.length - 1];
    assert(lastInBatch !== undefined, "batches are never empty");
    assert(lastInBatch.zxid > this.lastDurable, "durable zxid only grows");
    if (this.first === 0) this.first = batch[0]?.zxid ?? 0;
    this.lastDurable = lastInBatch.zxid;
    this.counters.batchesWritten += 1;
    this.counters.recordsWritten += batch.length;
    this.counters.recordBytesWritten += recordBytes;
    this.counters.largestBatchRecords = Math.max(this.counters.largestBatchRecords, batch.length);
    this.onBatchDurable?.(batch.length, performance.now() - startedMs);
    for (const pending of batch) pending.done();
    if (this.queued.length > 0) this.scheduleFlush();
    else this.notifyIdle();
  }

  /**
   * One atomic `sync: true` LevelDB write holding every record of `batch`. A chained batch hands
   * each record to LevelDB's WriteBatch as it is added (keys and values are already in their
   * stored encodings, 'buffer' and 'view'); abstract-level's array form costs several times more
   * JS per record (it clones and re-normalises every operation object).
   */
  private writeRecords(batch: readonly PendingAppend[]): Promise<void> {
    const chained = this.db.batch();
    try {
      for (const pending of batch) chained.put(pending.key, pending.stored);
    } catch (error) {
      void chained.close();
      throw error;
    }
    return chained.write({ sync: true });
  }

  private cutBatch(): PendingAppend[] {
    let count = 0;
    let bytes = 0;
    while (count < this.queued.length && count < this.batchTxnsMax) {
      const next = this.queued[count];
      assert(next !== undefined, "queue index in range");
      if (count > 0 && bytes + next.recordBytes > this.batchBytesMax) break;
      bytes += next.recordBytes;
      count += 1;
    }
    return this.queued.splice(0, count);
  }

  /** Durably moves the watermark to `zxid`; a failure fail-stops the log like any write's. */
  private async moveWatermark(zxid: number): Promise<void> {
    if (this.watermark === undefined) return;
    if (this.failure !== undefined) throw this.failure;
    try {
      await this.watermark.set(zxid);
    } catch (cause) {
      throw this.fail(cause);
    }
    this.watermarkZxid = zxid;
  }

  /** Runs one database write; any failure (real or injected) fail-stops the whole log. */
  private async write(kind: DiskWriteKind, run: () => Promise<void>): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    try {
      await writeWithFaults(this.faults, kind, run);
    } catch (cause) {
      throw this.fail(cause);
    }
  }

  /** Fail-stops the log (the first failure stays the one reported) and returns that failure. */
  private fail(cause: unknown): TxnLogFailedError {
    const first = this.failure === undefined;
    if (this.failure === undefined) this.failure = new TxnLogFailedError(cause);
    const failure = this.failure;
    const rejected = [...(this.inFlight ?? []), ...this.queued];
    this.inFlight = undefined;
    this.queued = [];
    // After onFailed, as promises' rejections would be: the owner hears of the failure first.
    queueMicrotask(() => {
      for (const pending of rejected) pending.done(failure);
    });
    this.notifyIdle();
    // Last: the owner may end the process here, and everything above only settles promises.
    if (first) this.onFailed?.(failure);
    return failure;
  }

  /** Reads and maintenance refuse to run on a failed or closing log. */
  private checkUsable(): void {
    if (this.failure !== undefined) throw this.failure;
    if (this.closing) throw new TxnLogClosedError();
  }

  /** Resolves when nothing is queued or in flight. */
  private drain(): Promise<void> {
    if (this.queued.length === 0 && this.inFlight === undefined) return Promise.resolve();
    return new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private notifyIdle(): void {
    if (this.queued.length !== 0 || this.inFlight !== undefined) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const waiter of waiters) waiter();
  }

  private exclusive(task: () => Promise<void>): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.closing) return Promise.reject(new TxnLogClosedError());
    const run = this.maintenance.then(task, task);
    this.maintenance = run.catch(() => undefined);
    return run;
  }

  // --- stable store -----------------------------------------------------------------------------

  /** Rejects with StorageDamagedError when the stored number does not read back. */
  private getNumber(name: string): Promise<number | undefined> {
    const key = stableKey(name);
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.closing) return Promise.reject(new TxnLogClosedError());
    return readNumber(this.db, this.dir, key);
  }

  /** Argument errors throw at once (a bug); disk errors reject. */
  private putNumber(name: string, value: number): Promise<void> {
    const key = stableKey(name);
    const bytes = encodeStableNumber(key, value);
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.closing) return Promise.reject(new TxnLogClosedError());
    return this.write("stable", () => this.db.put(key, bytes, { sync: true }));
  }
}

/**
 * Reads the whole database once and checks every value in it: each record's checksum and link, each
 * stored number's checksum. Recovery itself reads only the log after the newest snapshot; a table
 * LevelDB cannot read back anywhere else would otherwise surface later, in the middle of a write.
 */
async function verifyDatabase(db: Db, dir: string): Promise<void> {
  const chain = new LogChain();
  for await (const [key, value] of entriesOf(db.iterator(), dir)) {
    const prefix = key[0];
    if (prefix === LOG_KEY_PREFIX) checkedRecord(key, value, chain, dir);
    else if (prefix === META_KEY_PREFIX || prefix === STABLE_KEY_PREFIX) {
      const decoded = decodeStableNumber(key, value);
      if (!decoded.ok) throw new StorageDamagedError(dir, `stored number ${key.subarray(1).toString("utf8")}: ${decoded.reason}`);
    } else {
      throw new StorageDamagedError(dir, `a key this log never writes: ${key.toString("hex")}`);
    }
  }
}

/** An iterator's entries, read a thousand at a time; LevelDB refusing to read a file back is damage. */
async function* entriesOf(
  iterator: { nextv(size: number): Promise<[Buffer, Uint8Array][]>; close(): Promise<void> },
  dir: string,
): AsyncGenerator<[Buffer, Uint8Array]> {
  try {
    for (;;) {
      let entries: [Buffer, Uint8Array][];
      try {
        entries = await iterator.nextv(1000);
      } catch (error) {
        throw levelDbDamage(error, dir) ?? error;
      }
      if (entries.length === 0) return;
      yield* entries;
    }
  } finally {
    await iterator.close();
  }
}

/** One stored txn record, checked: its key, its checksum, and its link to the record read before it. */
function checkedRecord(key: Buffer, value: Uint8Array, chain: LogChain, dir: string): LogEntry {
  const zxid = zxidOfLogKey(key);
  if (zxid === undefined) throw new StorageDamagedError(dir, `a log key that is no zxid: ${key.toString("hex")}`);
  const decoded = decodeLogRecord(key, value);
  if (!decoded.ok) throw new StorageDamagedError(dir, `record ${hexZxid(zxid)}: ${decoded.reason}`);
  const broken = chain.next(zxid, decoded.prevZxid);
  if (broken !== undefined) throw new StorageDamagedError(dir, broken);
  return { zxid, record: decoded.payload, prevZxid: decoded.prevZxid };
}

/** The lowest (or highest) zxid stored in the log range, 0 when it is empty. */
async function boundaryZxid(db: Db, dir: string, highest: boolean): Promise<number> {
  let keys: Buffer[];
  try {
    keys = await db.keys({ gt: LOG_RANGE_START, lt: LOG_RANGE_END, reverse: highest, limit: 1 }).all();
  } catch (error) {
    throw levelDbDamage(error, dir) ?? error;
  }
  const key = keys[0];
  if (key === undefined) return 0;
  const zxid = zxidOfLogKey(key);
  if (zxid === undefined) throw new StorageDamagedError(dir, `a log key that is no zxid: ${key.toString("hex")}`);
  return zxid;
}

/** A stored number (log metadata, a stable number), or undefined when it was never put. */
async function readNumber(db: Db, dir: string, key: Buffer): Promise<number | undefined> {
  let bytes: Uint8Array | undefined;
  try {
    bytes = await db.get(key);
  } catch (error) {
    throw levelDbDamage(error, dir) ?? error;
  }
  if (bytes === undefined) return undefined;
  const decoded = decodeStableNumber(key, bytes);
  if (!decoded.ok) throw new StorageDamagedError(dir, `stored number ${key.subarray(1).toString("utf8")}: ${decoded.reason}`);
  return decoded.value;
}

function hexZxid(zxid: number): string {
  return `0x${zxid.toString(16)}`;
}
