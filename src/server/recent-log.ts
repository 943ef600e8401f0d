/**
 * The log records a new Zab core is built from, kept in memory so that a new term does not re-read
 * the log from disk: every record after the tree's zxid (not known to be committed, always kept)
 * and up to `windowMax` records before it (the leader's DIFF window).
 */
import { assert } from "../common/assert.js";
import type { LogRecord } from "../consensus/messages.js";

export class RecentLog {
  private records: LogRecord[] = [];
  private appliedZxid: number;

  constructor(
    treeZxid: number,
    unappliedTail: readonly LogRecord[],
    private readonly windowMax: number,
  ) {
    this.appliedZxid = treeZxid;
    for (const record of unappliedTail) this.append(record);
  }

  append(record: LogRecord): void {
    const last = this.records[this.records.length - 1];
    assert(last === undefined || record.zxid > last.zxid, `log window: ${record.zxid} after ${last?.zxid}`);
    this.records.push(record);
  }

  /** The tree has applied everything up to `zxid`: older records only serve the DIFF window now. */
  applied(zxid: number): void {
    this.appliedZxid = zxid;
    let appliedCount = 0;
    for (const record of this.records) {
      if (record.zxid > zxid) break;
      appliedCount += 1;
    }
    const excess = appliedCount - this.windowMax;
    if (excess > 1024 || (excess > 0 && this.records.length > 4 * this.windowMax)) this.records.splice(0, excess);
  }

  /** Zab's TRUNC. */
  truncateAfter(zxid: number): void {
    while ((this.records[this.records.length - 1]?.zxid ?? -1) > zxid) this.records.pop();
  }

  /** Zab's SNAP: the log is emptied and the tree stands at `zxid`. */
  reset(zxid: number): void {
    this.records = [];
    this.appliedZxid = zxid;
  }

  /** Oldest first: at most `windowMax` applied records, then every unapplied one. */
  snapshot(): LogRecord[] {
    let firstApplied = 0;
    let appliedCount = 0;
    for (const record of this.records) {
      if (record.zxid > this.appliedZxid) break;
      appliedCount += 1;
    }
    firstApplied = Math.max(0, appliedCount - this.windowMax);
    return this.records.slice(firstApplied);
  }
}
