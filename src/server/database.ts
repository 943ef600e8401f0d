/**
 * The server's copy of the replicated state: the in-memory DataTree, rebuilt at start from the
 * newest valid snapshot plus the log after it, kept durable by the txn log, and snapshotted every
 * `snapshotEveryTxns` applied txns (ZooKeeper's ZKDatabase + SyncRequestProcessor's snapshot
 * trigger). Applying is the only way the tree changes.
 */
import { assert } from "../common/assert.js";
import { DataTree } from "../store/data-tree.js";
import { purgeOld, recover } from "../store/disk/recovery.js";
import type { DiskFaults } from "../store/disk/faults.js";
import type { SnapshotStore } from "../store/disk/snapshot-store.js";
import type { LevelTxnLog, LevelTxnLogOptions } from "../store/disk/txn-log.js";
import { decodeSnapshot, encodeSnapshot } from "../store/snapshot-codec.js";
import { decodeTxn } from "../store/txn-codec.js";
import { epochOf } from "../store/zxid.js";
import type { LogRecord } from "../consensus/messages.js";
import type { Txn, TxnResult, WatchDelivery } from "../store/types.js";
import type { Logger } from "./log.js";

const ACCEPTED_EPOCH = "acceptedEpoch";
const CURRENT_EPOCH = "currentEpoch";

export type ApplyListener = (txn: Txn, result: TxnResult, deliveries: WatchDelivery[]) => void;

export interface DatabaseOptions {
  snapshotEveryTxns: number;
  snapshotRetainCount: number;
  log?: LevelTxnLogOptions;
  /** Test only: the snapshot store's fault hook (src/server/disk-faults.ts). */
  snapshotFaults?: DiskFaults;
  /**
   * Standalone, every logged txn is committed, so recovery replays the whole log into the tree.
   * In a cluster the log may end in txns no quorum ever acked: the tree then stops at the snapshot
   * and the records after it are kept aside (`unappliedTail`) for Zab to apply once it knows they
   * are committed.
   */
  replayLog?: boolean;
  /** Called after each snapshot is written: how long encoding and writing it took (the server's snapshottime). */
  onSnapshotTaken?: (durationMs: number, bytes: number) => void;
}

export class ServerDatabase {
  private listener: ApplyListener = () => {};
  /** Cluster mode: logged records after the tree's zxid, not known to be committed (see DatabaseOptions.replayLog). */
  unappliedTail: LogRecord[] = [];
  private txnsSinceSnapshot = 0;
  private snapshotInFlight: Promise<void> | undefined;
  private closed = false;

  private constructor(
    private currentTree: DataTree,
    readonly log: LevelTxnLog,
    private readonly snapshots: SnapshotStore,
    private readonly options: DatabaseOptions,
    private readonly logger: Logger,
  ) {}

  static async open(dataDir: string, options: DatabaseOptions, logger: Logger): Promise<ServerDatabase> {
    const recovered = await recover(dataDir, {
      ...(options.log ? { log: options.log } : {}),
      ...(options.snapshotFaults ? { snapshotFaults: options.snapshotFaults } : {}),
      onInvalidSnapshot: (invalid) => logger.warn({ snapshot: invalid }, "skipping invalid snapshot"),
    });
    try {
      const tree = recovered.snapshot ? decodeSnapshot(recovered.snapshot.bytes) : new DataTree();
      const replay = options.replayLog ?? true;
      const unappliedTail: LogRecord[] = [];
      let replayed = 0;
      for await (const entry of recovered.tail) {
        if (!replay) {
          unappliedTail.push({ zxid: entry.zxid, record: entry.record });
          continue;
        }
        const txn = decodeTxn(entry.record);
        assert(txn.header.zxid === entry.zxid, `log record at ${entry.zxid} holds txn ${txn.header.zxid}`);
        tree.apply(txn);
        replayed += 1;
      }
      logger.info(
        {
          snapshotZxid: hex(recovered.snapshot?.zxid ?? 0),
          replayedTxns: replayed,
          unappliedTxns: unappliedTail.length,
          lastZxid: hex(tree.lastProcessedZxid),
          nodes: tree.nodeCount(),
        },
        "database recovered",
      );
      const database = new ServerDatabase(tree, recovered.log, recovered.snapshots, options, logger);
      database.unappliedTail = unappliedTail;
      return database;
    } catch (error) {
      await recovered.log.close();
      throw error;
    }
  }

  /** The tree as of the last applied txn; replaced as a whole by truncateAfter and installSnapshot. */
  get tree(): DataTree {
    return this.currentTree;
  }

  private set tree(tree: DataTree) {
    this.currentTree = tree;
  }

  onApply(listener: ApplyListener): void {
    this.listener = listener;
  }

  /** Apply a durable, committed txn to the tree and tell the pipeline. */
  apply(txn: Txn): void {
    const { result, deliveries } = this.tree.apply(txn);
    this.listener(txn, result, deliveries);
    this.txnsSinceSnapshot += 1;
    if (this.txnsSinceSnapshot >= this.options.snapshotEveryTxns && !this.snapshotInFlight) {
      void this.takeSnapshot();
    }
  }

  /**
   * Snapshot the tree as of its last applied zxid. The encoding happens now, synchronously, so the
   * image is exact; writing and purging happen in the background.
   */
  takeSnapshot(): Promise<void> {
    if (this.snapshotInFlight) return this.snapshotInFlight;
    this.txnsSinceSnapshot = 0;
    const startedMs = performance.now();
    const zxid = this.tree.lastProcessedZxid;
    const bytes = encodeSnapshot(this.tree);
    this.snapshotInFlight = (async () => {
      try {
        await this.snapshots.save(zxid, bytes);
        this.options.onSnapshotTaken?.(performance.now() - startedMs, bytes.byteLength);
        const oldestKept = await purgeOld(this.log, this.snapshots, this.options.snapshotRetainCount);
        this.logger.info({ zxid: hex(zxid), bytes: bytes.byteLength, purgedLogBefore: oldestKept === undefined ? undefined : hex(oldestKept) }, "snapshot taken");
      } catch (error) {
        // A snapshot is a redundant copy: every txn since the last good one is still in the log, so
        // ZooKeeper logs the failure and carries on, and so do we. A failure of the log itself
        // (the purge after the save) fail-stops the server through the log's onFailed instead.
        if (!this.closed) this.logger.error({ err: error, zxid: hex(zxid) }, "snapshot failed: carrying on, the txn log still holds every txn since the last good snapshot");
      } finally {
        this.snapshotInFlight = undefined;
      }
    })();
    return this.snapshotInFlight;
  }

  /** The highest zxid in the log or the tree: what this server votes with and reports to a leader. */
  lastLoggedZxid(): number {
    return Math.max(this.tree.lastProcessedZxid, this.log.lastAppendedZxid());
  }

  async readEpochs(): Promise<{ acceptedEpoch: number; currentEpoch: number }> {
    const fallback = epochOf(this.lastLoggedZxid());
    const acceptedEpoch = (await this.log.stable.getNumber(ACCEPTED_EPOCH)) ?? fallback;
    const currentEpoch = (await this.log.stable.getNumber(CURRENT_EPOCH)) ?? fallback;
    return { acceptedEpoch, currentEpoch };
  }

  /** fsync an epoch before anything that depends on it is said (Zab's ACKEPOCH, the NEWLEADER ack). */
  persistEpoch(which: "accepted" | "current", epoch: number): Promise<void> {
    return this.log.stable.putNumber(which === "accepted" ? ACCEPTED_EPOCH : CURRENT_EPOCH, epoch);
  }

  /** The last `count` logged records, oldest first: a new leader's window for DIFF syncs. */
  async recentLog(count: number): Promise<LogRecord[]> {
    const records: LogRecord[] = [];
    for await (const entry of this.log.readFrom(0)) {
      records.push({ zxid: entry.zxid, record: entry.record });
      if (records.length > count) records.shift();
    }
    return records;
  }

  /**
   * Zab's TRUNC: forget every logged txn after `zxid`. In a cluster the tree holds committed txns
   * only, and a committed txn is never truncated, so the tree is untouched; snapshots are taken of
   * the tree, so none is newer than `zxid` either.
   */
  async truncateLogAfter(zxid: number): Promise<void> {
    assert(this.tree.lastProcessedZxid <= zxid, `TRUNC to ${hex(zxid)} would cut committed txns (tree at ${hex(this.tree.lastProcessedZxid)})`);
    await this.log.truncateAfter(zxid);
    this.logger.info({ zxid: hex(zxid) }, "log truncated");
  }

  /**
   * Zab's SNAP, first half: the leader's whole state replaces ours in memory at once, so that the
   * txns it sends next apply on top of it. `persistInstalledSnapshot` makes it durable.
   */
  replaceTree(zxid: number, bytes: Uint8Array): void {
    const tree = decodeSnapshot(bytes);
    assert(tree.lastProcessedZxid === zxid, `snapshot says ${hex(tree.lastProcessedZxid)}, SNAP says ${hex(zxid)}`);
    this.tree = tree;
    this.txnsSinceSnapshot = 0;
    this.logger.info({ zxid: hex(zxid), nodes: tree.nodeCount() }, "tree replaced by the leader's snapshot");
  }

  /**
   * Zab's SNAP, second half: the snapshot is made durable first, then the log is emptied, so a
   * crash in between recovers from the new snapshot.
   */
  async persistInstalledSnapshot(zxid: number, bytes: Uint8Array): Promise<void> {
    await this.snapshotInFlight;
    await this.snapshots.save(zxid, bytes);
    await this.log.truncateAfter(0);
    await this.snapshots.removeNewerThan(zxid);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.snapshotInFlight;
    await this.log.close();
  }
}

export function hex(zxid: number): string {
  return "0x" + zxid.toString(16);
}
