import { join } from "node:path";

import { assert } from "../../common/assert.js";
import { StorageDamagedError } from "./damage.js";
import { DurableWatermark, WATERMARK_FILE } from "./durable-watermark.js";
import type { DiskFaults } from "./faults.js";
import { LogChain } from "./log-record.js";
import { type LoadedSnapshot, type InvalidSnapshot, SnapshotStore } from "./snapshot-store.js";
import { type LevelTxnLogOptions, type LogEntry, LevelTxnLog, type TxnLog } from "./txn-log.js";

/** Where a server keeps its durable state inside its data directory. */
export interface DataDirLayout {
  /** The LevelDB database: txn log, log metadata and stable numbers (epochs). */
  logDir: string;
  /** Snapshot files. */
  snapshotDir: string;
}

export function dataDirLayout(dataDir: string): DataDirLayout {
  return { logDir: join(dataDir, "log"), snapshotDir: join(dataDir, "snapshots") };
}

export interface RecoverOptions {
  log?: LevelTxnLogOptions;
  onInvalidSnapshot?: (invalid: InvalidSnapshot) => void;
  /** Test only: the snapshot store's fault hook (the log's is `log.faults`). */
  snapshotFaults?: DiskFaults;
}

export interface Recovered {
  /** Open, ready for appends after the tail has been replayed. */
  log: LevelTxnLog;
  snapshots: SnapshotStore;
  /** The newest valid snapshot, or undefined: start from an empty tree. */
  snapshot: LoadedSnapshot | undefined;
  /**
   * Every durable log record after the snapshot's zxid (after 0 without one), in zxid order,
   * checked as read: iterating throws StorageDamagedError when a record is damaged or missing, or
   * when the log does not continue the snapshot.
   */
  tail: AsyncIterable<LogEntry>;
}

/** The durable state cannot rebuild the tree: the log was purged past every valid snapshot. */
export class RecoveryError extends Error {
  readonly code = "RECOVERY_INCOMPLETE";
  constructor(message: string) {
    super(message);
    this.name = "RecoveryError";
  }
}

/**
 * Opens `<dataDir>/log` and `<dataDir>/snapshots` and answers what a server needs to rebuild its
 * tree: the newest valid snapshot plus the log records after it. Throws RecoveryError when records
 * the snapshot does not cover were purged (every newer snapshot being corrupt), and
 * StorageDamagedError when LevelDB cannot open its files: the server must then not serve from this
 * directory, but fetch a SNAP from the leader.
 */
export async function recover(dataDir: string, options: RecoverOptions = {}): Promise<Recovered> {
  const layout = dataDirLayout(dataDir);
  const snapshots = await SnapshotStore.open(layout.snapshotDir, {
    ...(options.onInvalidSnapshot === undefined ? {} : { onInvalid: options.onInvalidSnapshot }),
    ...(options.snapshotFaults === undefined ? {} : { faults: options.snapshotFaults }),
  });
  const watermark = await DurableWatermark.open(join(dataDir, WATERMARK_FILE));
  let log: LevelTxnLog;
  try {
    log = await LevelTxnLog.open(layout.logDir, { ...options.log, watermark });
  } catch (error) {
    await watermark.close();
    throw error;
  }
  try {
    const snapshot = await snapshots.loadNewestValid();
    const from = snapshot?.zxid ?? 0;
    // LevelDB drops a damaged or cut-short end of its write-ahead file as if it had never been
    // written; records it once reported durable are missing all the same.
    const end = Math.max(log.lastDurableZxid(), from);
    if (watermark.atOpen !== undefined && watermark.atOpen > end) {
      throw new StorageDamagedError(
        layout.logDir,
        `the log ends at zxid 0x${end.toString(16)} but records up to 0x${watermark.atOpen.toString(16)} were durable (${WATERMARK_FILE}): the end of LevelDB's write-ahead file was lost`,
      );
    }
    // Records below purgedBefore are gone; the snapshot must cover all of them (zxid >= bound - 1).
    const purgedBefore = log.purgedBeforeZxid();
    if (purgedBefore > 0 && from + 1 < purgedBefore) {
      throw new RecoveryError(
        `log purged below zxid ${purgedBefore} but the newest valid snapshot is ` + (snapshot === undefined ? "none" : `at zxid ${from}`),
      );
    }
    log.continueFrom(from);
    return { log, snapshots, snapshot, tail: continuing(log, from) };
  } catch (error) {
    await log.close();
    throw error;
  }
}

/** The log after `from`, whose first record must follow the snapshot at `from` (readFrom checks the rest of the chain). */
async function* continuing(log: LevelTxnLog, from: number): AsyncGenerator<LogEntry> {
  const chain = new LogChain(from);
  let first = true;
  for await (const entry of log.readFrom(from)) {
    if (first) {
      first = false;
      const broken = chain.next(entry.zxid, entry.prevZxid);
      if (broken !== undefined) throw new StorageDamagedError(log.dir, broken);
    }
    yield entry;
  }
}

/**
 * Retention: keeps the newest `retainCount` valid snapshots and drops every log record older than
 * the oldest of them, so recovery still works from any kept snapshot. Answers that snapshot's zxid,
 * or undefined (nothing purged) when no snapshot is valid.
 */
export async function purgeOld(log: TxnLog, snapshots: SnapshotStore, retainCount: number): Promise<number | undefined> {
  assert(Number.isSafeInteger(retainCount) && retainCount >= 1, "retain at least one snapshot");
  const oldestKept = await snapshots.purge(retainCount);
  if (oldestKept !== undefined) await log.purgeBefore(oldestKept);
  return oldestKept;
}
