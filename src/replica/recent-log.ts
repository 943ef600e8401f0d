/**
 * The log records a new Zab core is built from, kept in memory so that a new term does not re-read
 * the log from disk: every record after the tree's zxid (not known to be committed, always kept)
 * and up to `windowMax` records before it (the leader's DIFF window).
 *
 * Every write passes through `append` and `applied`, so both are O(1) amortised: the records live
 * in one array from `head`, with `appliedEnd` the index of the first record the tree has not
 * applied; the array is compacted only once half of it is dead.
 */
import { assert } from "../common/assert.js";
import type { LogRecord } from "../consensus/messages.js";

const COMPACT_AFTER = 1024;

export class RecentLog {
  private records: LogRecord[] = [];
  private head = 0;
  private appliedEnd = 0;
  private appliedZxid: number;

  constructor(
    treeZxid: number,
    unappliedTail: readonly LogRecord[],
    private readonly windowMax: number,
  ) {
    assert(windowMax >= 1, "the window keeps at least one record");
    this.appliedZxid = treeZxid;
    for (const record of unappliedTail) this.append(record);
  }

  append(record: LogRecord): void {
    const last = this.records[this.records.length - 1];
    if (!(last === undefined || record.zxid > last.zxid)) assert(false, `log window: ${record.zxid} after ${last?.zxid}`);
    this.records.push(record);
    this.advance();
  }

  /** The tree has applied everything up to `zxid`: older records only serve the DIFF window now. */
  applied(zxid: number): void {
    this.appliedZxid = zxid;
    this.advance();
    const excess = this.appliedEnd - this.head - this.windowMax;
    if (excess > 0) this.head += excess;
    if (this.head > COMPACT_AFTER && this.head * 2 > this.records.length) {
      this.records = this.records.slice(this.head);
      this.appliedEnd -= this.head;
      this.head = 0;
    }
  }

  /** Zab's TRUNC. */
  truncateAfter(zxid: number): void {
    while (this.records.length > this.head && this.records[this.records.length - 1]!.zxid > zxid) this.records.pop();
    this.appliedEnd = Math.min(this.appliedEnd, this.records.length);
  }

  /** Zab's SNAP: the log is emptied and the tree stands at `zxid`. */
  reset(zxid: number): void {
    this.records = [];
    this.head = 0;
    this.appliedEnd = 0;
    this.appliedZxid = zxid;
  }

  /** Oldest first: at most `windowMax` applied records, then every unapplied one. */
  snapshot(): LogRecord[] {
    return this.records.slice(Math.max(this.head, this.appliedEnd - this.windowMax));
  }

  /** Moves `appliedEnd` past every record at or below the applied zxid (a record may be appended after it was applied). */
  private advance(): void {
    while (this.appliedEnd < this.records.length && this.records[this.appliedEnd]!.zxid <= this.appliedZxid) this.appliedEnd += 1;
  }
}
