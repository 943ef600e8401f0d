/**
 * The leader's in-memory history: a window of its most recent logged txns, oldest first, each
 * either committed (and applied to the tree) or still outstanding. It answers the sync plan's
 * questions (HistoryIndex) and hands out the records a learner needs. Bounded: only the newest
 * applied records within `committed` (a count and a byte bound) are kept; records not yet applied are always kept (they
 * are bounded by the proposals in flight, and at start-up by what the host's log holds after
 * its snapshot).
 */
import { assert } from "../common/assert.js";
import type { LogRecord } from "./messages.js";
import { RecordWindow, type AppliedBound } from "./record-window.js";
import { largestBelowIn, searchZxid, type HistoryIndex } from "./sync-plan.js";

export class History implements HistoryIndex {
  private readonly window: RecordWindow;
  private base: number;
  private applied: number;
  private committed: number;

  /**
   * @param treeZxid the zxid the host's tree is at (everything up to it is committed and applied)
   * @param log the host's log tail: every record after `treeZxid`, optionally preceded by earlier ones
   */
  constructor(treeZxid: number, log: readonly LogRecord[], committed: AppliedBound) {
    this.window = new RecordWindow(committed);
    this.base = treeZxid;
    this.applied = treeZxid;
    this.committed = treeZxid;
    let previous = -1;
    for (const record of log) {
      assert(record.zxid > previous, "log records ascend");
      previous = record.zxid;
    }
    const first = log[0];
    if (first !== undefined && first.zxid <= treeZxid) {
      // The window starts inside the applied part: its first record becomes the base.
      assert(
        log.some((r) => r.zxid === treeZxid),
        "a log that reaches back past the tree contains the tree's zxid",
      );
      this.base = first.zxid;
      for (const record of log.slice(1)) this.window.push(record);
    } else {
      for (const record of log) this.window.push(record);
    }
    this.trim();
  }

  get baseZxid(): number {
    return this.base;
  }

  get lastZxid(): number {
    return this.window.last?.zxid ?? this.base;
  }

  /** Everything up to here is committed (for a leader still establishing its epoch: nothing beyond the tree). */
  get committedZxid(): number {
    return this.committed;
  }

  /** The tree (and so the snapshot) is at this zxid. */
  get snapshotZxid(): number {
    return this.applied;
  }

  get count(): number {
    return this.window.count;
  }

  /** Outstanding records: logged, not yet committed. */
  get outstandingCount(): number {
    return this.count - this.indexAfter(this.committed);
  }

  contains(zxid: number): boolean {
    return searchZxid(this.count, (i) => this.at(i).zxid, zxid).found;
  }

  largestBelow(zxid: number): number | undefined {
    return largestBelowIn(this.base, this.count, (i) => this.at(i).zxid, zxid);
  }

  /** The record with this zxid, if in the window. */
  get(zxid: number): LogRecord | undefined {
    const { index, found } = searchZxid(this.count, (i) => this.at(i).zxid, zxid);
    return found ? this.at(index) : undefined;
  }

  append(record: LogRecord): void {
    if (!(record.zxid > this.lastZxid)) assert(false, `history appends ascend: ${record.zxid} after ${this.lastZxid}`);
    this.window.push(record);
  }

  /** How many records, and how many bytes of them, have fromZxid < zxid ≤ toZxid (only those still in the window count). */
  span(fromZxid: number, toZxid: number): { count: number; bytes: number } {
    const start = this.indexAfter(fromZxid);
    const end = this.indexAfter(toZxid);
    if (end <= start) return { count: 0, bytes: 0 };
    return { count: end - start, bytes: this.window.bytesBetween(start, end) };
  }

  /**
   * The record right after `zxid` in the history, to send a learner that has everything up to
   * `zxid`: undefined when there is none yet, "trimmed" when it is no longer kept (`zxid` is below
   * the window's base).
   */
  recordAfter(zxid: number): LogRecord | "trimmed" | undefined {
    if (zxid < this.base) return "trimmed";
    const index = this.indexAfter(zxid);
    return index < this.count ? this.at(index) : undefined;
  }

  /** Records with fromZxid < zxid ≤ toZxid; fromZxid must be the base or later. */
  between(fromZxid: number, toZxid: number): LogRecord[] {
    if (!(fromZxid >= this.base)) assert(false, `records after ${fromZxid} reach below the window base ${this.base}`);
    const start = this.indexAfter(fromZxid);
    const end = this.indexAfter(toZxid);
    const out: LogRecord[] = [];
    for (let i = start; i < end; i++) out.push(this.at(i));
    return out;
  }

  /** Marks every record up to `zxid` committed and applied; returns the newly committed ones, in order. */
  commitThrough(zxid: number): LogRecord[] {
    if (!(zxid >= this.committed && zxid <= this.lastZxid)) assert(false, `commit point ${zxid} within (${this.committed}, ${this.lastZxid}]`);
    const newly = this.between(this.committed, zxid);
    this.committed = zxid;
    this.applied = zxid;
    this.trim();
    return newly;
  }

  /** Index (0-based within the window) of the first record with zxid > `zxid`. */
  private indexAfter(zxid: number): number {
    const count = this.count;
    if (count === 0) return 0;
    const last = this.at(count - 1).zxid;
    if (zxid >= last) return count;
    // Within an epoch zxids are consecutive, and what the leader asks for (its commit point, a
    // follower's ack) is near the end: the index arithmetic gives is checked before any search. The
    // leader asks this several times for every write it admits.
    const guess = count - 1 - (last - zxid);
    if (guess >= 0 && this.at(guess).zxid === zxid) return guess + 1;
    const { index, found } = searchZxid(count, (i) => this.at(i).zxid, zxid);
    return found ? index + 1 : index;
  }

  private at(i: number): LogRecord {
    return this.window.at(i);
  }

  /** Drops the oldest applied records beyond the bound: the newest dropped one becomes the base. */
  private trim(): void {
    const { newestDropped } = this.window.trimApplied(this.indexAfter(this.applied));
    if (newestDropped !== undefined) this.base = newestDropped.zxid;
  }
}
