/**
 * The replica's copy of the replicated state (ZooKeeper's ZKDatabase): the in-memory DataTree, which
 * only committed txns change, and the snapshot trigger. As ZooKeeper's SyncRequestProcessor, a
 * server snapshots after a number of applied txns drawn afresh each time from
 * (snapshotEveryTxns / 2, snapshotEveryTxns]: servers that apply the same txns would otherwise all
 * encode and write their snapshots at the same moment, and every write waits on a quorum of them.
 * The bytes on disk are the storage ports'.
 */
import { assert } from "../common/assert.js";
import type { DataTree } from "../store/data-tree.js";
import { decodeSnapshot } from "../store/snapshot-codec.js";
import type { Txn, TxnResult, WatchDelivery } from "../store/types.js";
import { formatZxid } from "../store/zxid.js";
import type { Entropy, LogSink, ReplicaStorage } from "./ports.js";
import type { SpaceAlarm } from "./space-quota.js";

/** The stage an applied txn goes to: it answers the waiting request and fires the watches. */
export interface AnswerStage {
  applied(txn: Txn, result: TxnResult, deliveries: WatchDelivery[]): void;
}

/** SIMULATION ONLY: the simulator's checkers watch every change to the tree. */
export interface TreeObserver {
  /** `txn` is about to be applied to `tree` (prep decided it against exactly this state). */
  applying(txn: Txn, tree: DataTree): void;
  /** A SNAP replaced the whole tree. */
  replaced(tree: DataTree): void;
}

export class ReplicaDatabase {
  private txnsSinceSnapshot = 0;
  private txnsBeforeSnapshot: number;
  /** Callers of takeSnapshot waiting for the snapshot being written; undefined when none is. */
  private snapshotWaiters: (() => void)[] | undefined;

  constructor(
    private currentTree: DataTree,
    private readonly storage: ReplicaStorage,
    private readonly snapshotEveryTxns: number,
    private readonly entropy: Entropy,
    private readonly logger: LogSink,
    /** What /zookeeper/config says on this server ("" for a standalone one, as ZooKeeper's). */
    private readonly membershipText: string,
    /** Told the tree's size after every change, so that clearing space clears it. */
    private readonly spaceAlarm?: Pick<SpaceAlarm, "settle">,
    private readonly observer?: TreeObserver,
  ) {
    this.txnsBeforeSnapshot = this.drawSnapshotThreshold();
    this.writeMembership();
  }

  private writeMembership(): void {
    if (this.membershipText !== "") this.currentTree.setMembershipText(this.membershipText);
  }

  /** A count in (snapshotEveryTxns / 2, snapshotEveryTxns]. */
  private drawSnapshotThreshold(): number {
    const half = Math.floor(this.snapshotEveryTxns / 2);
    const span = this.snapshotEveryTxns - half;
    const [a = 0, b = 0, c = 0, d = 0] = this.entropy.bytes(4);
    return half + 1 + ((((a << 24) | (b << 16) | (c << 8) | d) >>> 0) % span);
  }

  /** The tree as of the last applied txn; replaced as a whole when a learner installs a SNAP. */
  get tree(): DataTree {
    return this.currentTree;
  }

  /** Apply a durable, committed txn to the tree and hand its result to `answer`. */
  apply(txn: Txn, answer: AnswerStage): void {
    this.observer?.applying(txn, this.currentTree);
    const { result, deliveries } = this.currentTree.apply(txn);
    answer.applied(txn, result, deliveries);
    this.spaceAlarm?.settle(this.currentTree.estimatedBytes());
    this.txnsSinceSnapshot += 1;
    if (this.txnsSinceSnapshot >= this.txnsBeforeSnapshot && this.snapshotWaiters === undefined) this.takeSnapshot(() => {});
  }

  /** Snapshot the tree as of its last applied zxid; `written` once it is on disk (or failed: it is a redundant copy). */
  takeSnapshot(written: () => void): void {
    if (this.snapshotWaiters) {
      this.snapshotWaiters.push(written);
      return;
    }
    this.txnsSinceSnapshot = 0;
    this.txnsBeforeSnapshot = this.drawSnapshotThreshold();
    const waiters = [written];
    this.snapshotWaiters = waiters;
    this.storage.snapshots.save(this.currentTree, () => {
      this.snapshotWaiters = undefined;
      for (const waiter of waiters) waiter();
    });
  }

  /** The highest zxid in the log or the tree: what this server votes with and reports to a leader. */
  lastLoggedZxid(): number {
    return Math.max(this.currentTree.lastProcessedZxid, this.storage.log.lastAppendedZxid());
  }

  /**
   * Zab's SNAP, in memory: the leader's whole state replaces ours at once, so that the txns it sends
   * next apply on top of it (the storage makes it durable).
   */
  replaceTree(zxid: number, bytes: Uint8Array): void {
    const tree = decodeSnapshot(bytes);
    assert(tree.lastProcessedZxid === zxid, `snapshot says ${formatZxid(tree.lastProcessedZxid)}, SNAP says ${formatZxid(zxid)}`);
    this.currentTree = tree;
    this.writeMembership();
    this.txnsSinceSnapshot = 0;
    this.spaceAlarm?.settle(tree.estimatedBytes());
    this.observer?.replaced(tree);
    this.logger.info({ zxid: formatZxid(zxid), nodes: tree.nodeCount() }, "tree replaced by the leader's snapshot");
  }
}
