/**
 * Session expiry on the leader, as ZooKeeper's ExpiryQueue: sessions sit in buckets one
 * `expirationIntervalMs` apart; touching a session moves it to the bucket after
 * `now + timeout`, and a bucket whose time has come expires all of its sessions at once.
 * Pure: time only comes in as a parameter.
 */
import { assert } from "../common/assert.js";

export class SessionTable {
  private readonly expiryBySession = new Map<bigint, number>();
  private readonly buckets = new Map<number, Set<bigint>>();
  /** Bucket times in ascending order (few: about max timeout / interval). */
  private readonly bucketTimes: number[] = [];

  constructor(readonly expirationIntervalMs: number) {
    if (!(Number.isInteger(expirationIntervalMs) && expirationIntervalMs > 0)) assert(false, `expiration interval ${expirationIntervalMs}`);
  }

  /**
   * The bucket a session touched at `nowMs` lands in: ZooKeeper's roundToNextInterval,
   * `(floor((now + timeout) / interval) + 1) * interval`, always strictly after `now + timeout`.
   */
  expiryTimeFor(nowMs: number, timeoutMs: number): number {
    const interval = this.expirationIntervalMs;
    return (Math.floor((nowMs + timeoutMs) / interval) + 1) * interval;
  }

  /** Records contact from a session: (re)places it in the bucket for `nowMs + timeoutMs`. Returns that bucket time. */
  touch(sessionId: bigint, timeoutMs: number, nowMs: number): number {
    if (!(Number.isFinite(nowMs) && Number.isInteger(timeoutMs) && timeoutMs >= 0)) assert(false, `touch(${timeoutMs}, ${nowMs})`);
    const expiry = this.expiryTimeFor(nowMs, timeoutMs);
    const previous = this.expiryBySession.get(sessionId);
    if (previous === expiry) return expiry;
    if (previous !== undefined) this.leaveBucket(sessionId, previous);
    let bucket = this.buckets.get(expiry);
    if (bucket === undefined) {
      bucket = new Set();
      this.buckets.set(expiry, bucket);
      this.bucketTimes.splice(lowerBound(this.bucketTimes, expiry), 0, expiry);
    }
    bucket.add(sessionId);
    this.expiryBySession.set(sessionId, expiry);
    return expiry;
  }

  /** Forgets a session (closed). Returns whether it was tracked. */
  remove(sessionId: bigint): boolean {
    const previous = this.expiryBySession.get(sessionId);
    if (previous === undefined) return false;
    this.leaveBucket(sessionId, previous);
    this.expiryBySession.delete(sessionId);
    return true;
  }

  /**
   * Removes and returns every session whose bucket time is ≤ `nowMs`: earlier buckets first,
   * each bucket in the order its sessions entered it.
   */
  expired(nowMs: number): bigint[] {
    const due: bigint[] = [];
    let count = 0;
    while (count < this.bucketTimes.length && this.bucketTimes[count]! <= nowMs) count++;
    if (count === 0) return due;
    for (const time of this.bucketTimes.splice(0, count)) {
      const bucket = this.buckets.get(time)!;
      this.buckets.delete(time);
      for (const sessionId of bucket) {
        this.expiryBySession.delete(sessionId);
        due.push(sessionId);
      }
    }
    return due;
  }

  has(sessionId: bigint): boolean {
    return this.expiryBySession.has(sessionId);
  }

  /** The bucket time a session will expire at, if tracked. */
  expiryOf(sessionId: bigint): number | undefined {
    return this.expiryBySession.get(sessionId);
  }

  get size(): number {
    return this.expiryBySession.size;
  }

  /** When the earliest bucket falls due (undefined when no session is tracked): the next useful `expired` call. */
  nextExpirationMs(): number | undefined {
    return this.bucketTimes[0];
  }

  private leaveBucket(sessionId: bigint, time: number): void {
    const bucket = this.buckets.get(time);
    assert(bucket !== undefined && bucket.delete(sessionId), "session expiry bucket out of step");
    if (bucket.size === 0) {
      this.buckets.delete(time);
      const index = lowerBound(this.bucketTimes, time);
      assert(this.bucketTimes[index] === time, "bucket times out of step");
      this.bucketTimes.splice(index, 1);
    }
  }
}

/** First index whose value is ≥ `value` in an ascending array. */
function lowerBound(sorted: readonly number[], value: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (sorted[mid]! < value) low = mid + 1;
    else high = mid;
  }
  return low;
}
