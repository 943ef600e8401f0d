/**
 * The replica's storage ports over a data directory: the txn log and epochs in LevelDB (fsynced,
 * group-committed), snapshots in files. Opening it recovers what the replica starts from: the newest
 * valid snapshot's tree, the log records after it (not known to be committed: Zab applies them once
 * it knows), and the epochs.
 */
import { ByteWriter } from "../store/bytes.js";
import { decodeSnapshot, SnapshotEncoder } from "../store/snapshot-codec.js";
import { purgeOld, recover } from "../store/disk/recovery.js";
import type { DiskFaults } from "../store/disk/faults.js";
import type { SnapshotStore } from "../store/disk/snapshot-store.js";
import type { LevelTxnLog, LevelTxnLogOptions } from "../store/disk/txn-log.js";
import { DataTree } from "../store/data-tree.js";
import { epochOf, formatZxid } from "../store/zxid.js";
import type { LogRecord } from "../consensus/messages.js";
import type { Done, RecoveredState, ReplicaStorage, SnapshotPort, StableStorePort, TxnLogPort } from "../replica/ports.js";
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

  private constructor(
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
    const recovered = await recover(dataDir, {
      ...(options.log ? { log: options.log } : {}),
      ...(options.snapshotFaults ? { snapshotFaults: options.snapshotFaults } : {}),
      onInvalidSnapshot: (invalid) => logger.warn({ snapshot: invalid }, "skipping invalid snapshot"),
    });
    try {
      const tree = recovered.snapshot ? decodeSnapshot(recovered.snapshot.bytes) : new DataTree();
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
      const storage = new DiskStorage(recovered.log, recovered.snapshots, options, logger);
      return { storage, recovered: { tree, unappliedTail, acceptedEpoch, currentEpoch } };
    } catch (error) {
      await recovered.log.close();
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

  /** Zab's SNAP: the snapshot is made durable first, then the log is emptied, so a crash in between recovers from the new snapshot. */
  private async installSnapshot(zxid: number, bytes: Uint8Array): Promise<void> {
    await this.snapshotInFlight;
    await this.snapshotStore.save(zxid, bytes);
    await this.levelLog.truncateAfter(0);
    await this.snapshotStore.removeNewerThan(zxid);
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
