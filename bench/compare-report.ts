/**
 * The arithmetic and the table of `npm run bench:compare`, with no I/O: medians and ranges over
 * reps, the corral / ZooKeeper ratio of medians, which system is ahead (and in which direction
 * "ahead" lies: more ops/s, fewer ms), and the markdown table. test/unit/bench-compare.test.ts
 * checks it.
 */

export type SystemName = "zookeeper" | "corral";
/** node-zookeeper-client over the ZooKeeper protocol (both systems), or corral's own SDK over gRPC. */
export type ClientName = "node-zookeeper-client" | "corral-sdk";
export const SCENARIOS = ["throughput", "latency", "failover"] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

export function isScenarioName(name: string): name is ScenarioName {
  return (SCENARIOS as readonly string[]).includes(name);
}

/** One JSON line of bench:compare's stdout: the tags, then the measurement's own fields. */
export interface Measurement {
  system: SystemName;
  client: ClientName;
  scenario: ScenarioName;
  workload: string;
  rep: number;
  [field: string]: unknown;
}

/** Which way is better for corral: more (ops/s) or less (ms). */
export type Better = "higher" | "lower";

export interface RowSpec {
  label: string;
  scenario: ScenarioName;
  workload: string;
  /** The measurement field the row summarises, e.g. "opsPerSec", "p99Ms", "failoverMs". */
  field: string;
  unit: "ops/s" | "ms";
  better: Better;
}

export interface Summary {
  median: number;
  min: number;
  max: number;
  count: number;
}

/** The middle value; the mean of the two middle ones for an even count. */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError("median of no values");
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Median, min, max of the finite values; undefined when there are none. */
export function summarize(values: readonly unknown[]): Summary | undefined {
  const numbers = values.filter((v): v is number => typeof v === "number" && Number.isFinite(v));
  if (numbers.length === 0) return undefined;
  return { median: median(numbers), min: Math.min(...numbers), max: Math.max(...numbers), count: numbers.length };
}

/** subject's median / base's median: corral / ZooKeeper. Undefined when either is missing or base is 0. */
export function ratioOf(subject: Summary | undefined, base: Summary | undefined): number | undefined {
  if (subject === undefined || base === undefined || base.median === 0) return undefined;
  return subject.median / base.median;
}

export type Lead = "corral" | "ZooKeeper" | "overlap";

/**
 * Who is ahead, counting only a clear gap: every rep of one system better than every rep of the
 * other ("overlap" when the min–max ranges meet). With one rep each the ranges are points.
 */
export function lead(corral: Summary | undefined, zookeeper: Summary | undefined, better: Better): Lead | undefined {
  if (corral === undefined || zookeeper === undefined) return undefined;
  const corralWorst = better === "higher" ? corral.min : corral.max;
  const zookeeperBest = better === "higher" ? zookeeper.max : zookeeper.min;
  const corralBest = better === "higher" ? corral.max : corral.min;
  const zookeeperWorst = better === "higher" ? zookeeper.min : zookeeper.max;
  const beats = (a: number, b: number): boolean => (better === "higher" ? a > b : a < b);
  if (beats(corralWorst, zookeeperBest)) return "corral";
  if (beats(zookeeperWorst, corralBest)) return "ZooKeeper";
  return "overlap";
}

export interface RowSpecOptions {
  scenarios: readonly ScenarioName[];
  /** Throughput workloads, in order. */
  workloads: readonly string[];
  connections: number;
  inflight: number;
}

/** The table's rows: throughput ops/s and p99 per workload; 1 × 1 latency through a follower; failover. */
export function rowSpecs(options: RowSpecOptions): RowSpec[] {
  const rows: RowSpec[] = [];
  const shape = `${options.connections}×${options.inflight}`;
  if (options.scenarios.includes("throughput")) {
    for (const workload of options.workloads) {
      rows.push({ label: `${workload} ${shape} ops/s`, scenario: "throughput", workload, field: "opsPerSec", unit: "ops/s", better: "higher" });
      rows.push({ label: `${workload} ${shape} p99 ms`, scenario: "throughput", workload, field: "p99Ms", unit: "ms", better: "lower" });
    }
  }
  if (options.scenarios.includes("latency")) {
    const latency: [string, string, string][] = [
      ["setData", "p50Ms", "p50"],
      ["setData", "p99Ms", "p99"],
      ["setData", "p999Ms", "p99.9"],
      ["getData", "p50Ms", "p50"],
      ["getData", "p99Ms", "p99"],
    ];
    for (const [workload, field, name] of latency) {
      rows.push({ label: `${workload} 1×1 follower ${name} ms`, scenario: "latency", workload, field, unit: "ms", better: "lower" });
    }
  }
  if (options.scenarios.includes("failover")) {
    rows.push({
      label: "failover ms (kill -9 leader → first write)",
      scenario: "failover",
      workload: "failover",
      field: "failoverMs",
      unit: "ms",
      better: "lower",
    });
  }
  return rows;
}

export interface TableRow {
  spec: RowSpec;
  zookeeper: Summary | undefined;
  /** corral through node-zookeeper-client on its ZooKeeper-protocol port. */
  corral: Summary | undefined;
  /** corral through its SDK. */
  corralSdk: Summary | undefined;
  /** corral / ZooKeeper, medians. */
  ratio: number | undefined;
  /** corral (SDK) / ZooKeeper, medians. */
  sdkRatio: number | undefined;
  lead: Lead | undefined;
}

export function tableRows(measurements: readonly Measurement[], specs: readonly RowSpec[]): TableRow[] {
  return specs.map((spec) => {
    const values = (system: SystemName, client: ClientName): unknown[] =>
      measurements
        .filter((m) => m.system === system && m.client === client && m.scenario === spec.scenario && m.workload === spec.workload)
        .map((m) => m[spec.field]);
    const zookeeper = summarize(values("zookeeper", "node-zookeeper-client"));
    const corral = summarize(values("corral", "node-zookeeper-client"));
    const corralSdk = summarize(values("corral", "corral-sdk"));
    return {
      spec,
      zookeeper,
      corral,
      corralSdk,
      ratio: ratioOf(corral, zookeeper),
      sdkRatio: ratioOf(corralSdk, zookeeper),
      lead: lead(corral, zookeeper, spec.better),
    };
  });
}

/** ops/s as whole numbers with thousands separators; ms with three significant digits (at least integers). */
export function formatValue(value: number, unit: "ops/s" | "ms"): string {
  if (unit === "ops/s") return Math.round(value).toLocaleString("en-US");
  const magnitude = Math.abs(value);
  const decimals = magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : magnitude >= 1 ? 2 : 3;
  return value.toLocaleString("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

/** "median [min–max]", or just the value for one rep; "—" when nothing was measured. */
export function formatSummary(summary: Summary | undefined, unit: "ops/s" | "ms"): string {
  if (summary === undefined) return "—";
  const middle = formatValue(summary.median, unit);
  if (summary.count === 1) return middle;
  return `${middle} [${formatValue(summary.min, unit)}–${formatValue(summary.max, unit)}]`;
}

export function formatRatio(ratio: number | undefined): string {
  return ratio === undefined ? "—" : ratio.toFixed(2);
}

/**
 * The markdown table. Ratios are corral / ZooKeeper of the medians whatever the unit; the
 * "better" column says which way is better (higher for ops/s, lower for ms), so a ratio below 1
 * on a "lower" row is in corral's favour. "ahead" names a system only when the ranges are apart.
 */
export function formatTable(rows: readonly TableRow[], options: { withSdk: boolean }): string {
  const header = ["measure", "better", "ZooKeeper", "corral", "corral / ZooKeeper", "ahead (ranges apart)"];
  if (options.withSdk) header.push("corral (SDK)", "SDK / ZooKeeper");
  // Words left-aligned, figures right-aligned.
  const words = new Set(["measure", "better", "ahead (ranges apart)"]);
  const lines = [`| ${header.join(" | ")} |`, `|${header.map((name) => (words.has(name) ? "---" : "---:")).join("|")}|`];
  for (const row of rows) {
    const { unit, better } = row.spec;
    const cells = [row.spec.label, better, formatSummary(row.zookeeper, unit), formatSummary(row.corral, unit), formatRatio(row.ratio), row.lead ?? "—"];
    if (options.withSdk) cells.push(formatSummary(row.corralSdk, unit), formatRatio(row.sdkRatio));
    lines.push(`| ${cells.join(" | ")} |`);
  }
  return lines.join("\n");
}
