/**
 * The server's copy of the replicated state: the in-memory DataTree, rebuilt at start from the
 * newest valid snapshot plus the log after it, kept durable by the txn log, and snapshotted every
 * `snapshotEveryTxns` applied txns (ZooKeeper's ZKDatabase + SyncRequestProcessor's snapshot
 * trigger). Applying is the only way the tree changes.
 */
import { assert } from "../common/assert.js";
import { DataTree } from "../store/data-tree.js";
import { purgeOld, recover } from "../store/disk/recovery.js";
import type { SnapshotStore } from "../store/disk/snapshot-store.js";
import type { LevelTxnLog, LevelTxnLogOptions } from "../store/disk/txn-log.js";
import { decodeSnapshot, encodeSnapshot } from "../store/snapshot-codec.js";
import { decodeTxn } from "../store/txn-codec.js";
import type { Txn, TxnResult, WatchDelivery } from "../store/types.js";
import type { Logger } from "./log.js";

export type ApplyListener = (txn: Txn, result: TxnResult, deliveries: WatchDelivery[]) => void;

export interface DatabaseOptions {
  snapshotEveryTxns: number;
  snapshotRetainCount: number;
  log?: LevelTxnLogOptions;
}

export class ServerDatabase {
  private listener: ApplyListener = () => {};
  private txnsSinceSnapshot = 0;
  private snapshotInFlight: Promise<void> | undefined;
  private closed = false;

  private constructor(
    readonly tree: DataTree,
    readonly log: LevelTxnLog,
    private readonly snapshots: SnapshotStore,
    private readonly options: DatabaseOptions,
    private readonly logger: Logger,
  ) {}

  static async open(dataDir: string, options: DatabaseOptions, logger: Logger): Promise<ServerDatabase> {
    const recovered = await recover(dataDir, {
      ...(options.log ? { log: options.log } : {}),
      onInvalidSnapshot: (invalid) => logger.warn({ snapshot: invalid }, "skipping invalid snapshot"),
    });
    try {
      const tree = recovered.snapshot ? decodeSnapshot(recovered.snapshot.bytes) : new DataTree();
      let replayed = 0;
      for await (const entry of recovered.tail) {
        const txn = decodeTxn(entry.record);
        assert(txn.header.zxid === entry.zxid, `log record at ${entry.zxid} holds txn ${txn.header.zxid}`);
        tree.apply(txn);
        replayed += 1;
      }
      logger.info(
        { snapshotZxid: hex(recovered.snapshot?.zxid ?? 0), replayedTxns: replayed, lastZxid: hex(tree.lastProcessedZxid), nodes: tree.nodeCount() },
        "database recovered",
      );
      return new ServerDatabase(tree, recovered.log, recovered.snapshots, options, logger);
    } catch (error) {
      await recovered.log.close();
      throw error;
    }
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
    const zxid = this.tree.lastProcessedZxid;
    const bytes = encodeSnapshot(this.tree);
    this.snapshotInFlight = (async () => {
      try {
        await this.snapshots.save(zxid, bytes);
        const oldestKept = await purgeOld(this.log, this.snapshots, this.options.snapshotRetainCount);
        this.logger.info({ zxid: hex(zxid), bytes: bytes.byteLength, purgedLogBefore: oldestKept === undefined ? undefined : hex(oldestKept) }, "snapshot taken");
      } catch (error) {
        if (!this.closed) this.logger.error({ err: error }, "snapshot failed");
      } finally {
        this.snapshotInFlight = undefined;
      }
    })();
    return this.snapshotInFlight;
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
