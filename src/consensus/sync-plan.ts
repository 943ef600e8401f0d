/**
 * LearnerSyncPlan: how the leader brings one learner to its history (ZooKeeper's
 * LearnerHandler.syncFollower), decided from the learner's last logged zxid and what the leader
 * holds in memory. A pure function, unit-tested as a table (test/unit/consensus-sync-plan.test.ts).
 *
 * The leader's history, as this module sees it: `baseZxid`, a zxid known to be in the history,
 * then every record after it in memory (the window), ending at `lastZxid`; and a snapshot of its
 * tree at `snapshotZxid` (base ≤ snapshotZxid ≤ lastZxid, every record after it in the window).
 *
 * - DIFF: the learner's last zxid is in the history (equal to the base or to a record in the
 *   window, or the learner is exactly in sync): send the records after it.
 * - TRUNC: the learner has txns the history does not — beyond its end, or one that falls between
 *   two of the window's records (an uncommitted tail of an older epoch): truncate to the largest
 *   history zxid below the learner's, then send the records after that.
 * - SNAP: the learner is behind the window, or truncating would need history below the window:
 *   send the snapshot, then the records after it.
 */
import { assert } from "../common/assert.js";
import { isZxid } from "../store/zxid.js";

/** What the plan needs of the leader's in-memory history. */
export interface HistoryIndex {
  /** A zxid known to be in the history; every later record is in the window. */
  readonly baseZxid: number;
  /** The last zxid of the history (the base itself when the window is empty). */
  readonly lastZxid: number;
  /** The zxid of the snapshot the leader would send. */
  readonly snapshotZxid: number;
  /** Whether a record with exactly this zxid is in the window. */
  contains(zxid: number): boolean;
  /** The largest history zxid (the base included) strictly below `zxid`, or undefined if below the base. */
  largestBelow(zxid: number): number | undefined;
}

export type LearnerSyncPlan =
  /** Send the records after `fromZxid` (the learner's own last zxid). */
  | { mode: "DIFF"; fromZxid: number; reason: string }
  /** Truncate the learner's log to `truncZxid`, then send the records after it. */
  | { mode: "TRUNC"; truncZxid: number; reason: string }
  /** Replace the learner's state with the snapshot at `snapshotZxid`, then send the records after it. */
  | { mode: "SNAP"; snapshotZxid: number; reason: string };

export function planLearnerSync(learnerLastZxid: number, history: HistoryIndex): LearnerSyncPlan {
  assert(isZxid(learnerLastZxid), `learner zxid is a zxid: ${learnerLastZxid}`);
  assert(history.baseZxid <= history.snapshotZxid && history.snapshotZxid <= history.lastZxid, "history bounds ordered");
  const L = learnerLastZxid;
  const snap = (reason: string): LearnerSyncPlan => ({ mode: "SNAP", snapshotZxid: history.snapshotZxid, reason });

  if (L === history.lastZxid) return { mode: "DIFF", fromZxid: L, reason: "learner is in sync" };
  if (L === history.baseZxid || history.contains(L)) {
    return { mode: "DIFF", fromZxid: L, reason: "learner's last zxid is in the committed-log window" };
  }
  if (L < history.baseZxid) return snap("learner is behind the committed-log window");
  // The learner has a txn the history lacks (L > last, or L between two window records).
  const below = history.largestBelow(L);
  if (below === undefined) return snap("learner's divergent txns reach below the committed-log window");
  const reason = L > history.lastZxid ? "learner is ahead of the leader's history" : "learner has a txn the leader's history lacks";
  return { mode: "TRUNC", truncZxid: below, reason };
}

/** A HistoryIndex over a sorted array of zxids (tests, and small windows). */
export function historyIndexOf(baseZxid: number, zxids: readonly number[], snapshotZxid = baseZxid): HistoryIndex {
  for (let i = 0; i < zxids.length; i++) assert(zxids[i]! > (i === 0 ? baseZxid : zxids[i - 1]!), "window zxids ascend past the base");
  return {
    baseZxid,
    lastZxid: zxids.length > 0 ? zxids[zxids.length - 1]! : baseZxid,
    snapshotZxid,
    contains: (zxid) => searchZxid(zxids.length, (i) => zxids[i]!, zxid).found,
    largestBelow: (zxid) => largestBelowIn(baseZxid, zxids.length, (i) => zxids[i]!, zxid),
  };
}

/** Binary search over `count` ascending zxids: the first index whose zxid is ≥ `zxid`, and whether it is equal. */
export function searchZxid(count: number, zxidAt: (i: number) => number, zxid: number): { index: number; found: boolean } {
  let lo = 0;
  let hi = count;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (zxidAt(mid) < zxid) lo = mid + 1;
    else hi = mid;
  }
  return { index: lo, found: lo < count && zxidAt(lo) === zxid };
}

export function largestBelowIn(baseZxid: number, count: number, zxidAt: (i: number) => number, zxid: number): number | undefined {
  if (zxid <= baseZxid) return undefined;
  const { index } = searchZxid(count, zxidAt, zxid);
  return index === 0 ? baseZxid : zxidAt(index - 1);
}
