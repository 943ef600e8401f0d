/**
 * Replicas check each other (ZooKeeper's digest in txns, etcd's corruption check): the leader tells
 * each learner its tree digest (DataTree.digest) at a zxid — once per interval while it serves, and
 * right after every sync, so that a learner is checked before it serves — and the learner compares
 * its own tree's digest when its tree stands at that zxid. A learner whose digest differs holds a
 * tree the leader's txns did not make: it stops serving and repairs from the leader's snapshot.
 *
 * A learner's tree only reaches a zxid after its leader's did, so a digest is usually for a zxid the
 * learner has yet to apply: it waits, and a few at most (a learner that falls that far behind is
 * checked at the next one). A zxid the learner's tree passed without standing at it (a snapshot
 * installed past it) cannot be compared and is dropped: a check never fires on a mismatch of moments.
 */
import type { DataTree } from "../store/data-tree.js";

/** How often a leader sends its learners its digest: a diverged learner serves at most this long after. */
export const TREE_DIGEST_INTERVAL_MS = 1_000;

/** The log line of a learner whose digest differs (with the zxid and both digests). */
export const TREE_DIVERGED = "tree digest differs from the leader's: this server stops serving and repairs from the leader's snapshot";

/** The leader's digests a learner keeps waiting for its tree to reach their zxid. */
const AWAITED_DIGESTS_MAX = 8;

/** A learner's tree differs from its leader's at one zxid. */
export interface TreeDivergence {
  zxid: number;
  leaderDigest: string;
  ownDigest: string;
}

/** The message a leader sends: its tree's digest at the zxid its tree stands at. */
export type TreeDigestMessage = { type: "treeDigest"; zxid: number; digest: string };

export class TreeDigestCheck {
  /** Leader: when the next periodic digest is due (undefined until the term's first tick). */
  private nextAtMs: number | undefined;
  /** Learner: the leader's digests waiting for the tree to reach their zxid, ascending. */
  private awaited: { zxid: number; digest: string }[] = [];

  constructor(
    private readonly intervalMs: number,
    /** The tree as it is now (a snapshot from the leader replaces it). */
    private readonly tree: () => DataTree,
  ) {}

  /** Leader: the digest to send every synced learner, once per interval. */
  due(nowMs: number): TreeDigestMessage | undefined {
    if (this.nextAtMs !== undefined && nowMs < this.nextAtMs) return undefined;
    const first = this.nextAtMs === undefined;
    this.nextAtMs = nowMs + this.intervalMs;
    return first ? undefined : this.current();
  }

  /** Leader: the digest now (sent to a learner right after its sync). */
  current(): TreeDigestMessage {
    const tree = this.tree();
    return { type: "treeDigest", zxid: tree.lastProcessedZxid, digest: tree.digest() };
  }

  /** Learner: the leader's digest at `zxid`, compared now if the tree stands there, else kept for later. */
  heard(zxid: number, digest: string): TreeDivergence | undefined {
    const at = this.tree().lastProcessedZxid;
    if (zxid < at) return undefined;
    if (zxid === at) return this.compare(zxid, digest);
    if (this.awaited.length >= AWAITED_DIGESTS_MAX) this.awaited.shift();
    this.awaited.push({ zxid, digest });
    return undefined;
  }

  /** Learner: the tree applied a txn; the digest awaited at its zxid, if any, is compared. */
  applied(): TreeDivergence | undefined {
    const at = this.tree().lastProcessedZxid;
    while (this.awaited.length > 0 && this.awaited[0]!.zxid < at) this.awaited.shift();
    const next = this.awaited[0];
    if (next === undefined || next.zxid !== at) return undefined;
    this.awaited.shift();
    return this.compare(next.zxid, next.digest);
  }

  /** A new term: what an earlier leader said is not compared any more, and the interval starts again. */
  newTerm(): void {
    this.nextAtMs = undefined;
    this.awaited = [];
  }

  private compare(zxid: number, leaderDigest: string): TreeDivergence | undefined {
    const ownDigest = this.tree().digest();
    return ownDigest === leaderDigest ? undefined : { zxid, leaderDigest, ownDigest };
  }
}
