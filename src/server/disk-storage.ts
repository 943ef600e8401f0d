/**
 * The replica's storage ports over a data directory: the txn log and epochs in LevelDB (fsynced,
 * group-committed), snapshots in files. Opening it recovers what the replica starts from: the newest
 * valid snapshot's tree, the log records after it (not known to be committed: Zab applies them once
 * it knows), and the epochs.
 */
import { rename } from "node:fs/promises";
import { join } from "node:path";
import { ByteWriter } from "../store/bytes.js";
import { decodeSnapshot, SnapshotEncoder } from "../store/snapshot-codec.js";
import { levelDbDamage, StorageDamagedError } from "../store/disk/damage.js";
import { dataDirLayout, purgeOld, recover, RecoveryError } from "../store/disk/recovery.js";
import type { DiskFaults } from "../store/disk/faults.js";
import { DurableWatermark, WATERMARK_FILE } from "../store/disk/durable-watermark.js";
import { clearRepairMarker, readRepairMarker, writeRepairMarker } from "../store/disk/repair-marker.js";
import { fsyncDirectory, snapshotFileName, SnapshotStore } from "../store/disk/snapshot-store.js";
import { LevelTxnLog, type LevelTxnLogOptions } from "../store/disk/txn-log.js";
import { DataTree } from "../store/data-tree.js";
import { epochOf, formatZxid } from "../store/zxid.js";
import type { LogRecord } from "../consensus/messages.js";
import type { Done, RecoveredState, ReplicaStorage, SnapshotPort, StableStorePort, StorageDamage, TxnLogPort } from "../replica/ports.js";
import type { Logger } from "./log.js";

/** Nodes encoded per event-loop turn while a snapshot is written: about 0.3 ms of work, what a write's hop may wait behind. */
const SNAPSHOT_SLICE_NODES = 100;
/** Encoded bytes gathered before one write to the snapshot file. */
const SNAPSHOT_WRITE_BYTES = 1024 * 1024;
/**
 * Encoding time between two rests of the snapshot encoder. Slices back to back with only
 * setImmediate between them keep a core busy for the whole snapshot; where servers share cores
 * (a laptop cluster, this project's benchmarks) the others' wake-ups then wait for one. A timer
 * after each millisecond of work holds the encoder to about half a core: on two cores and a
 * million znodes, a single write's p99 while snapshots were written fell from 2.8× to 1.8× the
 * quiet one (bench:snapshot), and a snapshot took 3 s instead of 2.
 */
const SNAPSHOT_BUSY_MS = 1;

/** The stable numbers Zab's epochs are kept under, in the log's LevelDB (restore and import set them). */
export const EPOCH_NAMES = { accepted: "acceptedEpoch", current: "currentEpoch" } as const;
const ACCEPTED_EPOCH = EPOCH_NAMES.accepted;
const CURRENT_EPOCH = EPOCH_NAMES.current;

export interface DiskStorageOptions {
  snapshotRetainCount: number;
  /**
   * Damaged files found at start: a cluster member repairs them from its leader ("repair": the
   * damaged txn log is kept aside, and the member starts empty, marked as repairing); a standalone
   * server holds the only copy and refuses to start ("refuse": DataDamagedError, nothing touched).
   */
  onDamage: "repair" | "refuse";
  log?: LevelTxnLogOptions;
  /** Test only: the snapshot store's fault hook (src/server/disk-faults.ts). */
  snapshotFaults?: DiskFaults;
  /** Called after each snapshot is written: how long encoding and writing it took (the server's snapshottime). */
  onSnapshotTaken?: (durationMs: number, bytes: number) => void;
}

/** A promise's outcome, as a port's callback. */
function settle(promise: Promise<unknown>, done: Done): void {
  promise.then(
    () => done(),
    (error: unknown) => done(error ?? new Error("a durable write failed")),
  );
}

export class DiskStorage implements ReplicaStorage {
  readonly log: TxnLogPort;
  readonly stable: StableStorePort;
  readonly snapshots: SnapshotPort;
  private snapshotInFlight: Promise<void> | undefined;
  private closed = false;
  /** Until a snapshot from the leader is installed: the data dir holds the repair mark. */
  private repairing = false;

  private constructor(
    private readonly dataDir: string,
    private readonly levelLog: LevelTxnLog,
    private readonly snapshotStore: SnapshotStore,
    private readonly options: DiskStorageOptions,
    private readonly logger: Logger,
  ) {
    this.log = {
      append: (zxid, record, done) => levelLog.appendThen(zxid, record, done),
      truncateAfter: (zxid, done) => settle(this.truncateAfter(zxid), done),
      lastAppendedZxid: () => levelLog.lastAppendedZxid(),
    };
    this.stable = {
      saveEpoch: (which, epoch, done) => settle(levelLog.stable.putNumber(which === "accepted" ? ACCEPTED_EPOCH : CURRENT_EPOCH, epoch), done),
    };
    this.snapshots = {
      save: (tree, written) => {
        this.saveSnapshot(tree).then(written, written);
      },
      install: (zxid, bytes, done) => settle(this.installSnapshot(zxid, bytes), done),
    };
  }

  static async open(dataDir: string, options: DiskStorageOptions, logger: Logger): Promise<{ storage: DiskStorage; recovered: RecoveredState }> {
    const unfinished = await readRepairMarker(dataDir);
    if (unfinished !== undefined) {
      logger.warn({ damage: unfinished }, "an earlier repair did not finish: repairing from the leader again");
      return DiskStorage.openRepairing(dataDir, unfinished, options, logger, false);
    }
    try {
      return await DiskStorage.openRecovered(dataDir, options, logger);
    } catch (error) {
      const damage = damageOf(error, dataDir);
      if (damage === undefined) throw error;
      if (options.onDamage === "refuse") throw new DataDamagedError(dataDir, damage, { cause: error });
      logger.error({ damage }, "damaged files found: this server will not serve from them; it keeps them aside and fetches a full snapshot from the leader");
      return DiskStorage.openRepairing(dataDir, damage, options, logger, true);
    }
  }

  /** The normal start: the newest valid snapshot's tree, the log after it, the epochs; throws on damage. */
  private static async openRecovered(
    dataDir: string,
    options: DiskStorageOptions,
    logger: Logger,
  ): Promise<{ storage: DiskStorage; recovered: RecoveredState }> {
    const onFailed = options.log?.onFailed;
    const recovered = await recover(dataDir, {
      log: {
        ...options.log,
        // A write that fails because LevelDB found its own files damaged (a compaction reading a
        // bad table): the server stops as for any failed write, and repairs when it starts again.
        onFailed: (error) => {
          const damage = levelDbDamage(error.cause, dataDirLayout(dataDir).logDir);
          if (damage !== undefined) {
            writeRepairMarker(dataDir, damage, new Date());
            logger.error(
              { damage: { file: damage.file, reason: damage.reason } },
              "the txn log's files are damaged: this server repairs from the leader when it starts again",
            );
          }
          onFailed?.(error);
        },
      },
      ...(options.snapshotFaults ? { snapshotFaults: options.snapshotFaults } : {}),
      onInvalidSnapshot: (invalid) => logger.warn({ snapshot: invalid }, "skipping invalid snapshot"),
    });
    try {
      const tree = recovered.snapshot ? decodeSnapshotFile(recovered.snapshots, recovered.snapshot.zxid, recovered.snapshot.bytes) : new DataTree();
      const unappliedTail: LogRecord[] = [];
      for await (const entry of recovered.tail) unappliedTail.push({ zxid: entry.zxid, record: entry.record });
      const lastLoggedZxid = Math.max(tree.lastProcessedZxid, recovered.log.lastAppendedZxid());
      const fallback = epochOf(lastLoggedZxid);
      const acceptedEpoch = (await recovered.log.stable.getNumber(ACCEPTED_EPOCH)) ?? fallback;
      const currentEpoch = (await recovered.log.stable.getNumber(CURRENT_EPOCH)) ?? fallback;
      logger.info(
        {
          snapshotZxid: formatZxid(recovered.snapshot?.zxid ?? 0),
          // Read back from the log after the snapshot; Zab applies them once it knows they are committed
          // (at once for a standalone server, whose own log is its quorum's).
          replayedTxns: unappliedTail.length,
          lastZxid: formatZxid(tree.lastProcessedZxid),
          nodes: tree.nodeCount(),
        },
        "database recovered",
      );
      const storage = new DiskStorage(dataDir, recovered.log, recovered.snapshots, options, logger);
      return { storage, recovered: { tree, unappliedTail, acceptedEpoch, currentEpoch } };
    } catch (error) {
      await recovered.log.close();
      throw error;
    }
  }

  /**
   * A member repairing damaged files: marked as such (repair-marker.ts) until the leader's snapshot
   * is installed, its damaged txn log moved aside for inspection (`moveLogAside`) and a fresh one
   * opened; it starts with an empty tree and log, so that nothing it serves or votes with comes
   * from the damage.
   */
  private static async openRepairing(
    dataDir: string,
    damage: StorageDamage,
    options: DiskStorageOptions,
    logger: Logger,
    moveLogAside: boolean,
  ): Promise<{ storage: DiskStorage; recovered: RecoveredState }> {
    const layout = dataDirLayout(dataDir);
    writeRepairMarker(dataDir, damage, new Date());
    if (moveLogAside) await moveAside(layout.logDir, logger);
    // What the damaged log once held durably no longer counts: the repair starts a log over.
    const watermark = await DurableWatermark.fresh(join(dataDir, WATERMARK_FILE));
    let log: LevelTxnLog;
    try {
      log = await LevelTxnLog.open(layout.logDir, { ...options.log, watermark });
    } catch (error) {
      // The log of an earlier, unfinished repair is damaged in turn: it held nothing checked yet.
      if (!(error instanceof StorageDamagedError)) {
        await watermark.close();
        throw error;
      }
      await moveAside(layout.logDir, logger);
      log = await LevelTxnLog.open(layout.logDir, { ...options.log, watermark });
    }
    try {
      // Records an unfinished repair synced were never checked against the snapshot they follow.
      if (log.lastAppendedZxid() > 0) await log.reset(0);
      const snapshots = await SnapshotStore.open(layout.snapshotDir, options.snapshotFaults ? { faults: options.snapshotFaults } : {});
      const epoch = async (name: string): Promise<number> => (await log.stable.getNumber(name).catch(() => undefined)) ?? 0;
      const acceptedEpoch = await epoch(ACCEPTED_EPOCH);
      const currentEpoch = Math.min(acceptedEpoch, await epoch(CURRENT_EPOCH));
      const storage = new DiskStorage(dataDir, log, snapshots, options, logger);
      storage.repairing = true;
      return { storage, recovered: { tree: new DataTree(), unappliedTail: [], acceptedEpoch, currentEpoch, repairing: damage } };
    } catch (error) {
      await log.close();
      throw error;
    }
  }

  /**
   * The tree is captured now, so the image is exact as of this zxid; it is encoded a slice at a
   * time between the server's other work (a million znodes took ~3 s of encoding in one piece, and
   * every write waited for it) and written as it is encoded, then old snapshots and log are purged.
   */
  private saveSnapshot(tree: DataTree): Promise<void> {
    const startedMs = performance.now();
    const encoder = new SnapshotEncoder(tree);
    const zxid = encoder.zxid;
    const previous = this.snapshotInFlight ?? Promise.resolve();
    const write = (async () => {
      await previous;
      try {
        let bytes = 0;
        await this.snapshotStore.saveChunks(
          zxid,
          snapshotChunks(encoder, {
            counted: (n) => (bytes += n),
            stopped: () => this.closed,
          }),
        );
        this.options.onSnapshotTaken?.(performance.now() - startedMs, bytes);
        const oldestKept = await purgeOld(this.levelLog, this.snapshotStore, this.options.snapshotRetainCount);
        this.logger.info(
          {
            zxid: formatZxid(zxid),
            bytes,
            ms: Math.round(performance.now() - startedMs),
            purgedLogBefore: oldestKept === undefined ? undefined : formatZxid(oldestKept),
          },
          "snapshot taken",
        );
      } catch (error) {
        // A snapshot is a redundant copy: every txn since the last good one is still in the log, so
        // ZooKeeper logs the failure and carries on, and so do we. A failure of the log itself
        // (the purge after the save) fail-stops the server through the log's onFailed instead.
        if (!this.closed)
          this.logger.error(
            { err: error, zxid: formatZxid(zxid) },
            "snapshot failed: carrying on, the txn log still holds every txn since the last good snapshot",
          );
      } finally {
        encoder.abort();
      }
    })();
    this.snapshotInFlight = write;
    void write.finally(() => {
      if (this.snapshotInFlight === write) this.snapshotInFlight = undefined;
    });
    return write;
  }

  private async truncateAfter(zxid: number): Promise<void> {
    await this.levelLog.truncateAfter(zxid);
    this.logger.info({ zxid: formatZxid(zxid) }, "log truncated");
  }

  /**
   * Zab's SNAP: the snapshot is made durable first, then the log is emptied, so a crash in between
   * recovers from the new snapshot. A repair ends here: the leader's snapshot is the good copy.
   */
  private async installSnapshot(zxid: number, bytes: Uint8Array): Promise<void> {
    await this.snapshotInFlight;
    await this.snapshotStore.save(zxid, bytes);
    await this.levelLog.reset(zxid);
    await this.snapshotStore.removeNewerThan(zxid);
    if (this.repairing) {
      await clearRepairMarker(this.dataDir);
      this.repairing = false;
      this.logger.warn({ zxid: formatZxid(zxid) }, "repaired: the leader's snapshot replaced the damaged files");
    }
  }

  /** The last `count` logged records, oldest first (tests read what the log holds). */
  async recentLog(count: number): Promise<LogRecord[]> {
    const records: LogRecord[] = [];
    for await (const entry of this.levelLog.readFrom(0)) {
      records.push({ zxid: entry.zxid, record: entry.record });
      if (records.length > count) records.shift();
    }
    return records;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.snapshotInFlight;
    await this.levelLog.close();
  }
}

/**
 * A standalone server's data is damaged: the only copy, so it refuses to start and says what to do.
 * The damaged files are left as they are.
 */
export class DataDamagedError extends Error {
  readonly code = "DATA_DAMAGED";
  constructor(
    readonly dataDir: string,
    readonly damage: StorageDamage,
    options?: { cause?: unknown },
  ) {
    super(
      `refusing to start: the data in ${dataDir} is damaged (${damage.file}: ${damage.reason}). This server holds the only copy, ` +
        `so it cannot repair itself from a leader, and serving what is left could answer with data that was never written. ` +
        `To recover: restore ${dataDir} from a backup (corral restore), or, accepting the loss of every znode, move ${dataDir} ` +
        `aside and start with an empty data directory. The damaged files are left as they are for inspection (corral data).`,
      options,
    );
    this.name = "DataDamagedError";
  }
}

/** The damage `error` reports (files that do not read back), or undefined for any other failure. */
function damageOf(error: unknown, dataDir: string): StorageDamage | undefined {
  if (error instanceof StorageDamagedError) return { file: error.file, reason: error.reason };
  // Records the snapshots do not cover were purged: the snapshots that covered them are damaged.
  if (error instanceof RecoveryError) return { file: dataDirLayout(dataDir).snapshotDir, reason: error.message };
  if (error instanceof SnapshotUndecodable) return { file: error.file, reason: error.message };
  return undefined;
}

/** A snapshot whose checksums hold but whose body does not decode: damage all the same, never a crash. */
class SnapshotUndecodable extends Error {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(message);
  }
}

function decodeSnapshotFile(snapshots: SnapshotStore, zxid: number, bytes: Uint8Array): DataTree {
  try {
    return decodeSnapshot(bytes);
  } catch (error) {
    throw new SnapshotUndecodable(join(snapshots.dir, snapshotFileName(zxid)), `the snapshot does not decode: ${(error as Error).message}`);
  }
}

/** Renames a damaged LevelDB directory to `<dir>.damaged-<time>`, kept for inspection. */
async function moveAside(dir: string, logger: Logger): Promise<void> {
  const aside = `${dir}.damaged-${new Date().toISOString().replace(/[:.]/g, "-")}`;
  try {
    await rename(dir, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  await fsyncDirectory(join(dir, ".."));
  logger.warn({ from: dir, to: aside }, "damaged txn log kept aside");
}

/**
 * The encoder's output in pieces of about SNAPSHOT_WRITE_BYTES, one slice of nodes per event-loop
 * turn, resting after each SNAPSHOT_BUSY_MS of work. Every piece is a view into one reused buffer,
 * valid until the consumer asks for the next (the snapshot store writes each before it does): a big
 * tree's snapshot allocates next to nothing per slice, so it does not drive the scavenger while
 * writes go on. Used for snapshot files and for backups streamed from the admin port.
 */
export async function* snapshotChunks(
  encoder: SnapshotEncoder,
  options: { counted?: (bytes: number) => void; stopped?: () => boolean } = {},
): AsyncGenerator<Uint8Array> {
  const writer = new ByteWriter(SNAPSHOT_WRITE_BYTES + SNAPSHOT_WRITE_BYTES / 8);
  const piece = (): Uint8Array => {
    options.counted?.(writer.length);
    return writer.finish();
  };
  let busySince = performance.now();
  for (;;) {
    if (options.stopped?.() === true) throw new Error("storage closed while a snapshot was being written");
    if (!encoder.writeNext(writer, SNAPSHOT_SLICE_NODES)) break;
    if (writer.length >= SNAPSHOT_WRITE_BYTES) {
      yield piece();
      writer.reset();
      // A slice of nodes with megabytes of data each grew it: let that go.
      writer.shrinkTo(SNAPSHOT_WRITE_BYTES * 4);
    }
    if (performance.now() - busySince >= SNAPSHOT_BUSY_MS) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      busySince = performance.now();
    } else {
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  if (writer.length > 0) yield piece();
}
