/**
 * bench:compare's arithmetic and table (bench/compare-report.ts): medians and ranges over reps,
 * the corral / ZooKeeper ratio, which way is better per row, who is ahead, and what the table
 * shows. No cluster is started.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  formatSummary,
  formatTable,
  formatValue,
  lead,
  median,
  ratioOf,
  rowSpecs,
  summarize,
  tableRows,
  type ClientName,
  type Measurement,
  type ScenarioName,
  type SystemName,
} from "../../bench/compare-report.js";

function measurement(
  system: SystemName,
  client: ClientName,
  scenario: ScenarioName,
  workload: string,
  rep: number,
  fields: Record<string, number | null>,
): Measurement {
  return { system, client, scenario, workload, rep, ...fields };
}

describe("median", () => {
  it("is the middle value of an odd count, whatever the order", () => {
    assert.equal(median([30, 10, 20]), 20);
    assert.equal(median([5]), 5);
    assert.equal(median([9, 1, 8, 2, 7]), 7);
  });

  it("is the mean of the two middle values of an even count", () => {
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.equal(median([10, 20]), 15);
  });

  it("refuses no values", () => {
    assert.throws(() => median([]), RangeError);
  });

  it("has as many values at or below it as at or above it, and lies within the range", () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: -1e6, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 25 }), (values) => {
        const m = median(values);
        assert.ok(m >= Math.min(...values) && m <= Math.max(...values));
        assert.ok(values.filter((v) => v <= m).length >= values.length / 2);
        assert.ok(values.filter((v) => v >= m).length >= values.length / 2);
      }),
    );
  });
});

describe("summarize", () => {
  it("gives median, min, max and count, skipping nulls (a run where nothing succeeded)", () => {
    assert.deepEqual(summarize([3, null, 1, 2]), { median: 2, min: 1, max: 3, count: 3 });
  });

  it("is undefined when nothing was measured", () => {
    assert.equal(summarize([]), undefined);
    assert.equal(summarize([null, undefined]), undefined);
  });
});

describe("ratio and who is ahead", () => {
  const zk = { median: 100, min: 90, max: 110, count: 3 };

  it("divides corral's median by ZooKeeper's, not the other way round", () => {
    assert.equal(ratioOf({ median: 150, min: 140, max: 160, count: 3 }, zk), 1.5);
    assert.equal(ratioOf({ median: 50, min: 40, max: 60, count: 3 }, zk), 0.5);
    assert.equal(ratioOf(undefined, zk), undefined);
    assert.equal(ratioOf(zk, { median: 0, min: 0, max: 0, count: 1 }), undefined);
  });

  it("counts more as better for ops/s and less as better for times", () => {
    const more = { median: 200, min: 190, max: 210, count: 3 };
    assert.equal(lead(more, zk, "higher"), "corral");
    assert.equal(lead(more, zk, "lower"), "ZooKeeper");
    const less = { median: 50, min: 45, max: 55, count: 3 };
    assert.equal(lead(less, zk, "lower"), "corral");
    assert.equal(lead(less, zk, "higher"), "ZooKeeper");
  });

  it("names nobody while the ranges overlap, even when the medians differ", () => {
    assert.equal(lead({ median: 108, min: 95, max: 120, count: 3 }, zk, "higher"), "overlap");
    assert.equal(lead({ median: 92, min: 80, max: 111, count: 3 }, zk, "lower"), "overlap");
    // Touching ranges are not apart.
    assert.equal(lead({ median: 120, min: 110, max: 130, count: 3 }, zk, "higher"), "overlap");
  });
});

describe("rows", () => {
  const specs = rowSpecs({ scenarios: ["throughput", "latency", "failover"], workloads: ["setData", "getData"], connections: 8, inflight: 16 });

  it("has ops/s (higher) and p99 (lower) per throughput workload, 1×1 latencies and failover (lower)", () => {
    assert.deepEqual(
      specs.map((s) => [s.label, s.better]),
      [
        ["setData 8×16 ops/s", "higher"],
        ["setData 8×16 p99 ms", "lower"],
        ["getData 8×16 ops/s", "higher"],
        ["getData 8×16 p99 ms", "lower"],
        ["setData 1×1 follower p50 ms", "lower"],
        ["setData 1×1 follower p99 ms", "lower"],
        ["setData 1×1 follower p99.9 ms", "lower"],
        ["getData 1×1 follower p50 ms", "lower"],
        ["getData 1×1 follower p99 ms", "lower"],
        ["failover ms (kill -9 leader → first write)", "lower"],
      ],
    );
  });

  it("leaves out the scenarios not run", () => {
    const only = rowSpecs({ scenarios: ["failover"], workloads: ["setData"], connections: 8, inflight: 16 });
    assert.deepEqual(
      only.map((s) => s.scenario),
      ["failover"],
    );
  });

  it("summarises each system and client apart, by scenario and workload", () => {
    const lines: Measurement[] = [];
    for (const [rep, zk, corral, sdk] of [
      [1, 1000, 2000, 3000],
      [2, 1200, 1800, 3300],
      [3, 1100, 2100, 2900],
    ] as const) {
      lines.push(measurement("zookeeper", "node-zookeeper-client", "throughput", "setData", rep, { opsPerSec: zk, p99Ms: 10 }));
      lines.push(measurement("corral", "node-zookeeper-client", "throughput", "setData", rep, { opsPerSec: corral, p99Ms: 20 }));
      lines.push(measurement("corral", "corral-sdk", "throughput", "setData", rep, { opsPerSec: sdk, p99Ms: 5 }));
      // Same workload name, other scenario: must not leak into the throughput rows.
      lines.push(measurement("zookeeper", "node-zookeeper-client", "latency", "setData", rep, { opsPerSec: 1, p50Ms: 0.7, p99Ms: 1, p999Ms: 2 }));
      lines.push(measurement("corral", "node-zookeeper-client", "latency", "setData", rep, { opsPerSec: 1, p50Ms: 0.9, p99Ms: 3, p999Ms: 4 }));
    }
    lines.push(measurement("zookeeper", "node-zookeeper-client", "failover", "failover", 1, { failoverMs: 800 }));
    lines.push(measurement("corral", "node-zookeeper-client", "failover", "failover", 1, { failoverMs: 400 }));
    const rows = tableRows(lines, specs);
    const ops = rows.find((r) => r.spec.label === "setData 8×16 ops/s")!;
    assert.deepEqual(ops.zookeeper, { median: 1100, min: 1000, max: 1200, count: 3 });
    assert.deepEqual(ops.corral, { median: 2000, min: 1800, max: 2100, count: 3 });
    assert.deepEqual(ops.corralSdk, { median: 3000, min: 2900, max: 3300, count: 3 });
    assert.equal(ops.ratio, 2000 / 1100);
    assert.equal(ops.sdkRatio, 3000 / 1100);
    assert.equal(ops.lead, "corral");
    const p99 = rows.find((r) => r.spec.label === "setData 8×16 p99 ms")!;
    assert.equal(p99.ratio, 2);
    assert.equal(p99.lead, "ZooKeeper");
    const latencyP50 = rows.find((r) => r.spec.label === "setData 1×1 follower p50 ms")!;
    assert.equal(latencyP50.zookeeper?.median, 0.7);
    assert.equal(latencyP50.corralSdk, undefined);
    const fail = rows.find((r) => r.spec.scenario === "failover")!;
    assert.equal(fail.ratio, 0.5);
    assert.equal(fail.lead, "corral");
    const getData = rows.find((r) => r.spec.label === "getData 8×16 ops/s")!;
    assert.equal(getData.zookeeper, undefined);
    assert.equal(getData.ratio, undefined);
  });
});

describe("the table", () => {
  it("formats ops/s as integers and ms with three significant digits", () => {
    assert.equal(formatValue(14413.4, "ops/s"), "14,413");
    assert.equal(formatValue(0.7125, "ms"), "0.713");
    assert.equal(formatValue(2.834, "ms"), "2.83");
    assert.equal(formatValue(42.33, "ms"), "42.3");
    assert.equal(formatValue(615.4, "ms"), "615");
    assert.equal(formatValue(1234.4, "ms"), "1,234");
  });

  it("shows median [min–max], the bare value for one rep, and — for nothing", () => {
    assert.equal(formatSummary({ median: 1100, min: 1000, max: 1200, count: 3 }, "ops/s"), "1,100 [1,000–1,200]");
    assert.equal(formatSummary({ median: 0.71, min: 0.71, max: 0.71, count: 1 }, "ms"), "0.710");
    assert.equal(formatSummary(undefined, "ms"), "—");
  });

  it("puts each row's direction, both systems, the ratio and the SDK column in a markdown table", () => {
    const specs = rowSpecs({ scenarios: ["throughput", "failover"], workloads: ["getData"], connections: 8, inflight: 16 });
    const lines: Measurement[] = [
      measurement("zookeeper", "node-zookeeper-client", "throughput", "getData", 1, { opsPerSec: 20000, p99Ms: 12.9 }),
      measurement("corral", "node-zookeeper-client", "throughput", "getData", 1, { opsPerSec: 40000, p99Ms: 6.45 }),
      measurement("corral", "corral-sdk", "throughput", "getData", 1, { opsPerSec: 30000, p99Ms: 8 }),
      measurement("zookeeper", "node-zookeeper-client", "failover", "failover", 1, { failoverMs: 900 }),
      measurement("corral", "node-zookeeper-client", "failover", "failover", 1, { failoverMs: 450 }),
    ];
    const table = formatTable(tableRows(lines, specs), { withSdk: true }).split("\n");
    assert.equal(table[0], "| measure | better | ZooKeeper | corral | corral / ZooKeeper | ahead (ranges apart) | corral (SDK) | SDK / ZooKeeper |");
    assert.equal(table[1], "|---|---|---:|---:|---:|---|---:|---:|");
    assert.equal(table[2], "| getData 8×16 ops/s | higher | 20,000 | 40,000 | 2.00 | corral | 30,000 | 1.50 |");
    assert.equal(table[3], "| getData 8×16 p99 ms | lower | 12.9 | 6.45 | 0.50 | corral | 8.00 | 0.62 |");
    assert.equal(table[4], "| failover ms (kill -9 leader → first write) | lower | 900 | 450 | 0.50 | corral | — | — |");
    const withoutSdk = formatTable(tableRows(lines, specs), { withSdk: false }).split("\n");
    assert.equal(withoutSdk[2], "| getData 8×16 ops/s | higher | 20,000 | 40,000 | 2.00 | corral |");
  });
});
