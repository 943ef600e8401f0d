/**
 * A Prometheus summary whose observations cost a few array writes: a log-linear bucket sketch
 * (HdrHistogram's layout: 32 buckets per power of two, so a quantile is reported within 1.6 % of
 * the value observed) over a sliding window of `ageBuckets` sketches rotated every
 * `maxAgeSeconds / ageBuckets` — the window Prometheus' Java client gives ZooKeeper's summaries
 * (10 minutes, 5 buckets). `_sum` and `_count` cover the whole life of the process, as Prometheus
 * expects of a summary.
 *
 * Why not prom-client's own Summary: it feeds a t-digest per observation (about 1 µs), and one
 * per age bucket with a sliding window (5 µs) — paid on every read a server answers. Here an
 * observation is an exponent and 5 mantissa bits read from the double, and one increment.
 * prom-client still does the exposition: this class only replaces how the quantiles are kept.
 */
import client from "prom-client";
import { assert } from "../common/assert.js";

/** Buckets per power of two (the top 5 bits of the mantissa). */
const SUB_BUCKET_BITS = 5;
const SUB_BUCKETS = 1 << SUB_BUCKET_BITS;
/** Smallest and largest power of two kept apart: 2^-20 (about 1e-6) to 2^44 (about 1.7e13). */
const EXPONENT_MIN = -20;
const EXPONENT_MAX = 44;
/** Slot 0 holds zero and everything below 2^EXPONENT_MIN; the last slot everything above. */
const SLOTS = (EXPONENT_MAX - EXPONENT_MIN) * SUB_BUCKETS + 1;

const scratch = new Float64Array(1);
const scratchWords = new Uint32Array(scratch.buffer);
/** Index of the high word of a double in a little- or big-endian Uint32Array view. */
const HIGH = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;

/** The slot a non-negative value falls in. */
export function slotOf(value: number): number {
  if (!(value > 0)) return 0;
  scratch[0] = value;
  const high = scratchWords[HIGH]!;
  const exponent = ((high >>> 20) & 0x7ff) - 1023;
  if (exponent < EXPONENT_MIN) return 0;
  if (exponent >= EXPONENT_MAX) return SLOTS - 1;
  const sub = (high >>> (20 - SUB_BUCKET_BITS)) & (SUB_BUCKETS - 1);
  return 1 + (exponent - EXPONENT_MIN) * SUB_BUCKETS + sub;
}

/** The value a slot stands for: the middle of its range (0 for slot 0). */
export function valueOfSlot(slot: number): number {
  if (slot <= 0) return 0;
  const index = slot - 1;
  const exponent = Math.floor(index / SUB_BUCKETS) + EXPONENT_MIN;
  const sub = index % SUB_BUCKETS;
  return 2 ** exponent * (1 + (sub + 0.5) / SUB_BUCKETS);
}

export interface WindowedSummaryOptions {
  name: string;
  help: string;
  percentiles: readonly number[];
  registers: client.Registry[];
  /** The window the quantiles cover (default 600 s, as Prometheus' Java client). */
  maxAgeSeconds?: number;
  ageBuckets?: number;
}

/** What prom-client's registry reads from a metric (its `MetricObjectWithValues`, not exported by name). */
type SummaryObject = Awaited<ReturnType<client.Summary["get"]>>;
type SummaryValue = SummaryObject["values"][number];

export class WindowedSummary extends client.Summary {
  private readonly metricName: string;
  private readonly metricHelp: string;
  private readonly windows: Uint32Array[];
  private readonly windowCounts: number[];
  private current = 0;
  private count = 0;
  private sum = 0;
  private readonly quantiles: readonly number[];
  private readonly rotation: NodeJS.Timeout;

  constructor(options: WindowedSummaryOptions) {
    // prom-client's constructor registers the metric and validates name, help and percentiles.
    super({ name: options.name, help: options.help, percentiles: [...options.percentiles], registers: options.registers });
    const ageBuckets = options.ageBuckets ?? 5;
    const maxAgeSeconds = options.maxAgeSeconds ?? 600;
    assert(Number.isSafeInteger(ageBuckets) && ageBuckets >= 1, "ageBuckets >= 1");
    assert(maxAgeSeconds > 0, "maxAgeSeconds > 0");
    this.metricName = options.name;
    this.metricHelp = options.help;
    this.quantiles = [...options.percentiles];
    this.windows = Array.from({ length: ageBuckets }, () => new Uint32Array(SLOTS));
    this.windowCounts = new Array<number>(ageBuckets).fill(0);
    this.rotation = setInterval(() => this.rotateWindow(), (maxAgeSeconds * 1000) / ageBuckets);
    this.rotation.unref();
  }

  /** Records one value (negative and NaN values are a caller's bug and are dropped). */
  override observe(valueOrLabels: number | client.LabelValues<string>, value?: number): void {
    const observed = typeof valueOrLabels === "number" ? valueOrLabels : value;
    if (observed === undefined || !(observed >= 0)) return;
    const slot = slotOf(observed);
    for (let i = 0; i < this.windows.length; i++) this.windows[i]![slot]! += 1;
    for (let i = 0; i < this.windowCounts.length; i++) this.windowCounts[i]! += 1;
    this.count += 1;
    this.sum += observed;
  }

  /** The quantile `q` of the values in the window (NaN when the window is empty, as Prometheus' clients report it). */
  quantile(q: number): number {
    const window = this.windows[this.current]!;
    const total = this.windowCounts[this.current]!;
    if (total === 0) return NaN;
    const rank = Math.max(1, Math.ceil(q * total));
    let seen = 0;
    for (let slot = 0; slot < SLOTS; slot++) {
      seen += window[slot]!;
      if (seen >= rank) return valueOfSlot(slot);
    }
    return valueOfSlot(SLOTS - 1);
  }

  get observations(): number {
    return this.count;
  }

  override get(): Promise<SummaryObject> {
    const values: SummaryValue[] = this.quantiles.map((q) => ({ labels: { quantile: q }, value: this.quantile(q) }));
    values.push({ metricName: `${this.metricName}_sum`, labels: {}, value: this.sum });
    values.push({ metricName: `${this.metricName}_count`, labels: {}, value: this.count });
    // The shape prom-client's own Summary.get returns; its MetricType enum is a type only, "summary" its value.
    return Promise.resolve({ name: this.metricName, help: this.metricHelp, type: "summary", values, aggregator: "sum" } as unknown as SummaryObject);
  }

  override reset(): void {
    // prom-client's constructor calls reset() before this class has set its fields up.
    if ((this.windows as Uint32Array[] | undefined) === undefined) return;
    for (const window of this.windows) window.fill(0);
    this.windowCounts.fill(0);
    this.count = 0;
    this.sum = 0;
  }

  /** Stops the window's rotation timer (the server is stopping). */
  close(): void {
    clearInterval(this.rotation);
  }

  /**
   * Each window holds everything since it was last cleared; the windows were cleared at staggered
   * times, so the current one covers between (n-1)/n and all of maxAge. Rotating clears the
   * current (oldest) window and moves on to the next. The timer calls it; tests may too.
   */
  rotateWindow(): void {
    this.windows[this.current]!.fill(0);
    this.windowCounts[this.current] = 0;
    this.current = (this.current + 1) % this.windows.length;
  }
}
