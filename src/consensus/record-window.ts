import { assert } from "../common/assert.js";
import type { LogRecord } from "./messages.js";

/** The array is compacted once this many records at its front are dead, and they are half of it. */
const COMPACT_AFTER = 1024;

/**
 * What the slot of a record no longer kept holds until the array is compacted: records are up to a
 * message's size, and a thousand dead ones of 512 KiB held on would be half a GiB past the bound.
 */
export const RELEASED_RECORD: LogRecord = { zxid: 0, record: new Uint8Array(0) };

/** How many applied records a window keeps: at most `count` of them, holding at most `bytes` together. */
export interface AppliedBound {
  count: number;
  bytes: number;
}

/**
 * Log records in zxid order, oldest first, of which only the newest applied ones within a bound
 * (count and bytes) are kept (every later one is): the leader's DIFF window (History) and the
 * replica's in-memory log tail (RecentLog). At least one applied record stays, whatever its size.
 * Records are read from `head` and the array is compacted only once half of it is dead, so that
 * dropping the oldest is amortised O(1) on every write. Each record's running byte total is kept
 * beside it, so that the bytes of any span of the window are one subtraction.
 */
export class RecordWindow {
  private records: LogRecord[] = [];
  /** `ends[k]`: the running byte total through records[k], inclusive; `start`: the total before records[0]. */
  private ends: number[] = [];
  private start = 0;
  private head = 0;

  constructor(readonly applied: AppliedBound) {
    assert(applied.count >= 1 && applied.bytes >= 1, "the window keeps at least one applied record");
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

  /** Bytes of the records with window indices in [from, to) (0 ≤ from ≤ to ≤ count). */
  bytesBetween(from: number, to: number): number {
    if (to <= from) return 0;
    return this.endOf(this.head + to - 1) - this.endOf(this.head + from - 1);
  }

  push(record: LogRecord): void {
    this.ends.push(this.endOf(this.records.length - 1) + record.record.byteLength);
    this.records.push(record);
  }

  /** Drops the newest record, if any (Zab's TRUNC, one at a time). */
  pop(): void {
    if (this.count === 0) return;
    this.records.pop();
    this.ends.pop();
  }

  /** Records `from` (a window index) to the newest, oldest first: a copy. */
  from(from: number): LogRecord[] {
    return this.records.slice(this.head + from);
  }

  clear(): void {
    this.records = [];
    this.ends = [];
    this.start = 0;
    this.head = 0;
  }

  /**
   * How many of the first `applied` records (all applied) fall outside the applied bound: the
   * oldest beyond its count, then more while the applied records kept hold too many bytes.
   */
  beyondAppliedBound(applied: number): number {
    let drop = Math.max(0, applied - this.applied.count);
    while (drop < applied - 1 && this.bytesBetween(drop, applied) > this.applied.bytes) drop += 1;
    return drop;
  }

  /**
   * The first `applied` records are applied: drops those beyond the applied bound. Returns how many
   * were dropped and the newest of them (undefined when none was).
   */
  trimApplied(applied: number): { dropped: number; newestDropped: LogRecord | undefined } {
    const drop = this.beyondAppliedBound(applied);
    if (drop <= 0) return { dropped: 0, newestDropped: undefined };
    const newestDropped = this.at(drop - 1);
    for (let k = this.head; k < this.head + drop; k++) this.records[k] = RELEASED_RECORD;
    this.head += drop;
    if (this.head > COMPACT_AFTER && this.head * 2 > this.records.length) {
      this.start = this.ends[this.head - 1]!;
      this.records = this.records.slice(this.head);
      this.ends = this.ends.slice(this.head);
      this.head = 0;
    }
    return { dropped: drop, newestDropped };
  }

  /** The running byte total through array index `k` (-1: before the first record). */
  private endOf(k: number): number {
    return k < 0 ? this.start : this.ends[k]!;
  }
}
