/**
 * The log records a new Zab core is built from, kept in memory so that a new term does not re-read
 * the log from disk: every record after the tree's zxid (not known to be committed, always kept)
 * and the newest records before it within the DIFF window's bound (the leader's DIFF window).
 *
 * Every write passes through `append` and `applied`, so both are O(1) amortised (RecordWindow).
 */
import { assert } from "../common/assert.js";
import type { LogRecord } from "../consensus/messages.js";
import { RecordWindow, type AppliedBound } from "../consensus/record-window.js";

export class RecentLog {
  private readonly window: RecordWindow;
  /** The window's first `appliedCount` records are applied to the tree. */
  private appliedCount = 0;
  private appliedZxid: number;

  constructor(treeZxid: number, unappliedTail: readonly LogRecord[], window: AppliedBound) {
    this.window = new RecordWindow(window);
    this.appliedZxid = treeZxid;
    for (const record of unappliedTail) this.append(record);
  }

  append(record: LogRecord): void {
    const last = this.window.last;
    if (!(last === undefined || record.zxid > last.zxid)) assert(false, `log window: ${record.zxid} after ${last?.zxid}`);
    this.window.push(record);
    this.advance();
  }

  /** The tree has applied everything up to `zxid`: older records only serve the DIFF window now. */
  applied(zxid: number): void {
    this.appliedZxid = zxid;
    this.advance();
    this.appliedCount -= this.window.trimApplied(this.appliedCount).dropped;
  }

  /** Zab's TRUNC. */
  truncateAfter(zxid: number): void {
    while (this.window.count > 0 && this.window.last!.zxid > zxid) this.window.pop();
    this.appliedCount = Math.min(this.appliedCount, this.window.count);
  }

  /** Zab's SNAP: the log is emptied and the tree stands at `zxid`. */
  reset(zxid: number): void {
    this.window.clear();
    this.appliedCount = 0;
    this.appliedZxid = zxid;
  }

  /** The logged records the tree has not applied (not known committed here), oldest first. */
  unapplied(): LogRecord[] {
    return this.window.from(this.appliedCount);
  }

  /** Oldest first: the applied records within the window's bound, then every unapplied one. */
  snapshot(): LogRecord[] {
    return this.window.from(this.window.beyondAppliedBound(this.appliedCount));
  }

  /** Counts as applied every record at or below the applied zxid (a record may be appended after it was applied). */
  private advance(): void {
    while (this.appliedCount < this.window.count && this.window.at(this.appliedCount).zxid <= this.appliedZxid) this.appliedCount += 1;
  }
}
