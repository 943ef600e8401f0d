/**
 * A log-linear latency histogram in the manner of HdrHistogram, for latencies in microseconds.
 *
 * Values are kept internally as integer nanoseconds. Below 256 ns every nanosecond has its own
 * slot; above, each power of two [2^m, 2^(m+1)) is split into 128 equal slots, so a slot is never
 * wider than 1/128 of the values it holds. A percentile is reported as the middle of the slot
 * holding the value of that rank (clamped to the exact minimum and maximum seen), hence within
 * 1/256 (≈ 0.4 %) of the exact order statistic, or 0.0005 µs for tiny values. Memory is fixed:
 * about 4,600 counters (37 KiB) for values up to an hour. Values beyond `highestTrackableUs` are
 * counted in the top slot (and `max` stays exact).
 */
const SUB_BUCKET_BITS = 7;
const SUB_BUCKET_HALF_COUNT = 1 << SUB_BUCKET_BITS; // 128
const SUB_BUCKET_COUNT = SUB_BUCKET_HALF_COUNT * 2; // 256: the linear slots of bucket 0
const NS_PER_US = 1000;
const TWO_POW_32 = 2 ** 32;

export const HISTOGRAM_HIGHEST_TRACKABLE_US_DEFAULT = 3_600_000_000; // one hour

/** Index of the highest set bit of a positive integer below 2^53. */
function highestBit(value: number): number {
  if (value < TWO_POW_32) return 31 - Math.clz32(value);
  return 63 - Math.clz32(Math.floor(value / TWO_POW_32));
}

/** Slot index of a non-negative integer nanosecond value. */
function slotIndexOf(valueNs: number): number {
  if (valueNs < SUB_BUCKET_COUNT) return valueNs;
  const bucket = highestBit(valueNs) - SUB_BUCKET_BITS; // ≥ 1
  const subBucket = Math.floor(valueNs / 2 ** bucket); // in [128, 256)
  return SUB_BUCKET_COUNT + (bucket - 1) * SUB_BUCKET_HALF_COUNT + (subBucket - SUB_BUCKET_HALF_COUNT);
}

/** Lowest value (ns) a slot holds, and its width (ns). */
function slotRange(index: number): { lowNs: number; widthNs: number } {
  if (index < SUB_BUCKET_COUNT) return { lowNs: index, widthNs: 1 };
  const offset = index - SUB_BUCKET_COUNT;
  const bucket = Math.floor(offset / SUB_BUCKET_HALF_COUNT) + 1;
  const subBucket = (offset % SUB_BUCKET_HALF_COUNT) + SUB_BUCKET_HALF_COUNT;
  const widthNs = 2 ** bucket;
  return { lowNs: subBucket * widthNs, widthNs };
}

/**
 * Rank (1-based) of the order statistic reported for a percentile: the smallest value with at
 * least `percentile` % of all values at or below it. Exact integer arithmetic: the percentile is
 * taken in parts per million, so 99.9 means exactly 999,000 ppm.
 */
export function percentileRank(percentile: number, count: number): number {
  if (!(percentile >= 0 && percentile <= 100)) throw new RangeError(`percentile out of [0, 100]: ${percentile}`);
  const ppm = Math.round(percentile * 10_000);
  return Math.max(1, Math.ceil((ppm * count) / 1_000_000));
}

export class LatencyHistogram {
  readonly highestTrackableUs: number;
  private readonly counts: Float64Array;
  private readonly topSlot: number;
  private totalCount = 0;
  private minRecordedUs = Number.POSITIVE_INFINITY;
  private maxRecordedUs = 0;
  private sumUs = 0;

  constructor(highestTrackableUs: number = HISTOGRAM_HIGHEST_TRACKABLE_US_DEFAULT) {
    if (!(highestTrackableUs >= 1 && highestTrackableUs * NS_PER_US < Number.MAX_SAFE_INTEGER)) {
      throw new RangeError(`highestTrackableUs out of range: ${highestTrackableUs}`);
    }
    this.highestTrackableUs = highestTrackableUs;
    this.topSlot = slotIndexOf(Math.floor(highestTrackableUs * NS_PER_US));
    this.counts = new Float64Array(this.topSlot + 1);
  }

  /** Number of counters; constant for a given `highestTrackableUs`. */
  get slotCount(): number {
    return this.counts.length;
  }

  get count(): number {
    return this.totalCount;
  }

  /** Exact smallest value recorded, in µs; NaN when empty. */
  get minUs(): number {
    return this.totalCount === 0 ? Number.NaN : this.minRecordedUs;
  }

  /** Exact largest value recorded, in µs; NaN when empty. */
  get maxUs(): number {
    return this.totalCount === 0 ? Number.NaN : this.maxRecordedUs;
  }

  get meanUs(): number {
    return this.totalCount === 0 ? Number.NaN : this.sumUs / this.totalCount;
  }

  /** Records one latency in microseconds (negative values count as 0). */
  record(latencyUs: number): void {
    this.recordCount(latencyUs, 1);
  }

  recordCount(latencyUs: number, count: number): void {
    if (!Number.isFinite(latencyUs)) throw new RangeError(`latency is not finite: ${latencyUs}`);
    if (!(Number.isInteger(count) && count > 0)) throw new RangeError(`count must be a positive integer: ${count}`);
    const valueUs = latencyUs <= 0 ? 0 : latencyUs;
    const valueNs = Math.floor(Math.min(valueUs * NS_PER_US, Number.MAX_SAFE_INTEGER));
    const slot = Math.min(slotIndexOf(valueNs), this.topSlot);
    this.counts[slot] = (this.counts[slot] ?? 0) + count;
    this.totalCount += count;
    this.sumUs += valueUs * count;
    if (valueUs < this.minRecordedUs) this.minRecordedUs = valueUs;
    if (valueUs > this.maxRecordedUs) this.maxRecordedUs = valueUs;
  }

  /**
   * The value at a percentile (0..100) in µs, within 1/256 of the exact order statistic of rank
   * `percentileRank(percentile, count)`; NaN when empty.
   */
  percentileUs(percentile: number): number {
    if (this.totalCount === 0) return Number.NaN;
    const rank = percentileRank(percentile, this.totalCount);
    let seen = 0;
    for (let index = 0; index < this.counts.length; index++) {
      seen += this.counts[index] ?? 0;
      if (seen >= rank) {
        const { lowNs, widthNs } = slotRange(index);
        const middleUs = (lowNs + widthNs / 2) / NS_PER_US;
        return Math.min(Math.max(middleUs, this.minRecordedUs), this.maxRecordedUs);
      }
    }
    return this.maxRecordedUs; // unreachable: the counts sum to totalCount
  }

  /** Adds every value of `other` (which must track the same range) to this histogram. */
  merge(other: LatencyHistogram): void {
    if (other.counts.length !== this.counts.length) throw new RangeError("histograms track different ranges");
    if (other.totalCount === 0) return;
    for (let index = 0; index < other.counts.length; index++) {
      const c = other.counts[index] ?? 0;
      if (c !== 0) this.counts[index] = (this.counts[index] ?? 0) + c;
    }
    this.totalCount += other.totalCount;
    this.sumUs += other.sumUs;
    this.minRecordedUs = Math.min(this.minRecordedUs, other.minRecordedUs);
    this.maxRecordedUs = Math.max(this.maxRecordedUs, other.maxRecordedUs);
  }

  reset(): void {
    this.counts.fill(0);
    this.totalCount = 0;
    this.minRecordedUs = Number.POSITIVE_INFINITY;
    this.maxRecordedUs = 0;
    this.sumUs = 0;
  }
}
