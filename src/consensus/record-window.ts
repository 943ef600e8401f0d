import { assert } from "../common/assert.js";
import type { LogRecord } from "./messages.js";

/** The array is compacted once this many records at its front are dead, and they are half of it. */
const COMPACT_AFTER = 1024;

/**
 * Log records in zxid order, oldest first, of which at most `appliedMax` already applied ones are
 * kept (every later one is): the leader's DIFF window (History) and the replica's in-memory log
 * tail (RecentLog). Records are read from `head` and the array is compacted only once half of it
 * is dead, so that dropping the oldest is amortised O(1) on every write.
 */
export class RecordWindow {
  private records: LogRecord[] = [];
  private head = 0;

  constructor(readonly appliedMax: number) {
    assert(appliedMax >= 1, "the window keeps at least one applied record");
  }

  get count(): number {
    return this.records.length - this.head;
  }

  /** The `i`-th record, oldest first (0 ≤ i < count). */
  at(i: number): LogRecord {
    return this.records[this.head + i]!;
  }

  get last(): LogRecord | undefined {
    return this.count > 0 ? this.records[this.records.length - 1] : undefined;
  }

  push(record: LogRecord): void {
    this.records.push(record);
  }

  /** Drops the newest record, if any (Zab's TRUNC, one at a time). */
  pop(): void {
    if (this.count > 0) this.records.pop();
  }

  /** Records `from` (a window index) to the newest, oldest first: a copy. */
  from(from: number): LogRecord[] {
    return this.records.slice(this.head + from);
  }

  clear(): void {
    this.records = [];
    this.head = 0;
  }

  /**
   * The first `applied` records are applied: drops the oldest beyond `appliedMax` of them and
   * returns the newest one dropped (undefined when none was).
   */
  trimApplied(applied: number): LogRecord | undefined {
    const drop = applied - this.appliedMax;
    if (drop <= 0) return undefined;
    const newestDropped = this.at(drop - 1);
    this.head += drop;
    if (this.head > COMPACT_AFTER && this.head * 2 > this.records.length) {
      this.records = this.records.slice(this.head);
      this.head = 0;
    }
    return newestDropped;
  }
}
