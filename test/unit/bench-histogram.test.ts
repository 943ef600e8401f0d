/**
 * The load generator's own arithmetic: the latency histogram against a sorted-array oracle, and
 * the closed-loop driver's accounting against an in-memory target on a virtual clock (no real
 * time is measured or asserted on).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { seededRandom, type Clock, type Random } from "../../bench/clock.js";
import { connectAll } from "../../bench/connect.js";
import { cleanup, keyPathsFor, prepareKeySpace, resultLine, runWorkload, WORKLOADS, type WorkloadName, type WorkloadSpec } from "../../bench/driver.js";
import { LatencyHistogram, percentileRank } from "../../bench/histogram.js";
import { parseBenchArgs, splitConnectString } from "../../bench/options.js";
import type { BenchConnection, BenchConnectOptions, BenchTarget } from "../../bench/target.js";

// ---------------------------------------------------------------------------------------------
// Histogram

const PERCENTILES = [0, 1, 10, 50, 90, 99, 99.9, 99.99, 100];

function oracle(sorted: readonly number[], percentile: number): number {
  return sorted[percentileRank(percentile, sorted.length) - 1]!;
}

/** The documented bound: 1 % of the exact order statistic, or 1 ns for tiny values. */
function assertClose(actualUs: number, expectedUs: number, context: string): void {
  const toleranceUs = Math.max(expectedUs * 0.01, 0.001);
  assert.ok(Math.abs(actualUs - expectedUs) <= toleranceUs, `${context}: got ${actualUs} µs, oracle ${expectedUs} µs`);
}

const latencyUs = fc.oneof(
  fc.double({ min: 0, max: 10_000_000, noNaN: true, noDefaultInfinity: true }),
  fc.double({ min: -10, max: 31.7, noNaN: true, noDefaultInfinity: true }).map((e) => 2 ** e), // log-spread: 1 ns … 58 min
  fc.integer({ min: 0, max: 300 }), // the linear region and its edge
);

describe("bench LatencyHistogram", () => {
  it("reports every percentile within 1 % of the sorted-array order statistic", () => {
    fc.assert(
      fc.property(fc.array(latencyUs, { minLength: 1, maxLength: 3000 }), (values) => {
        const histogram = new LatencyHistogram();
        for (const v of values) histogram.record(v);
        const sorted = [...values].sort((a, b) => a - b);
        for (const p of PERCENTILES) assertClose(histogram.percentileUs(p), oracle(sorted, p), `p${p} of ${values.length}`);
      }),
      { numRuns: 200 },
    );
  });

  it("keeps count, min and max exact", () => {
    fc.assert(
      fc.property(fc.array(latencyUs, { minLength: 1, maxLength: 500 }), (values) => {
        const histogram = new LatencyHistogram();
        for (const v of values) histogram.record(v);
        assert.equal(histogram.count, values.length);
        assert.equal(histogram.minUs, Math.min(...values));
        assert.equal(histogram.maxUs, Math.max(...values));
      }),
    );
  });

  it("merging two histograms equals recording everything into one", () => {
    fc.assert(
      fc.property(fc.array(latencyUs, { maxLength: 300 }), fc.array(latencyUs, { maxLength: 300 }), (a, b) => {
        const left = new LatencyHistogram();
        const right = new LatencyHistogram();
        const both = new LatencyHistogram();
        for (const v of a) {
          left.record(v);
          both.record(v);
        }
        for (const v of b) {
          right.record(v);
          both.record(v);
        }
        left.merge(right);
        assert.equal(left.count, both.count);
        for (const p of PERCENTILES) {
          if (both.count === 0) assert.ok(Number.isNaN(left.percentileUs(p)));
          else assert.equal(left.percentileUs(p), both.percentileUs(p));
        }
      }),
    );
  });

  it("uses a fixed number of counters whatever it records", () => {
    const histogram = new LatencyHistogram();
    const slots = histogram.slotCount;
    assert.ok(slots < 5000, `${slots} counters`);
    const random = seededRandom(7);
    for (let i = 0; i < 100_000; i++) histogram.record(2 ** (random() * 45)); // up to 4× the trackable range
    assert.equal(histogram.slotCount, slots);
    assert.equal(histogram.count, 100_000);
  });

  it("counts values above the trackable range in its top slot and keeps the exact max", () => {
    const histogram = new LatencyHistogram(1_000_000);
    histogram.record(10);
    histogram.record(5_000_000);
    assert.equal(histogram.maxUs, 5_000_000);
    assert.ok(histogram.percentileUs(100) <= 5_000_000);
    assert.ok(histogram.percentileUs(100) >= 990_000);
  });

  it("answers NaN when empty and rejects non-finite latencies", () => {
    const histogram = new LatencyHistogram();
    assert.ok(Number.isNaN(histogram.percentileUs(50)));
    assert.throws(() => histogram.record(Number.NaN), RangeError);
    assert.throws(() => histogram.record(Number.POSITIVE_INFINITY), RangeError);
  });

  it("ranks percentiles with exact arithmetic", () => {
    assert.equal(percentileRank(99.9, 1000), 999);
    assert.equal(percentileRank(99, 100), 99);
    assert.equal(percentileRank(50, 1), 1);
    assert.equal(percentileRank(0, 10), 1);
    assert.equal(percentileRank(100, 10), 10);
    assert.equal(percentileRank(99.9, 1001), 1000);
  });
});

// ---------------------------------------------------------------------------------------------
// A virtual world: discrete events in virtual milliseconds, one event per macrotask, so that every
// promise continuation an event triggers runs before time moves again.

interface ScheduledEvent {
  timeMs: number;
  order: number;
  fire: () => void;
  cancelled: boolean;
}

class VirtualWorld implements Clock {
  private timeMs = 0;
  private order = 0;
  private events: ScheduledEvent[] = [];
  private pumpScheduled = false;

  now(): number {
    return this.timeMs;
  }

  at(delayMs: number, fire: () => void): ScheduledEvent {
    const event = { timeMs: this.timeMs + Math.max(0, delayMs), order: this.order++, fire, cancelled: false };
    this.events.push(event);
    this.schedulePump();
    return event;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const event = this.at(ms, resolve);
      signal?.addEventListener(
        "abort",
        () => {
          event.cancelled = true;
          resolve();
        },
        { once: true },
      );
    });
  }

  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => this.step());
  }

  private step(): void {
    this.pumpScheduled = false;
    this.events = this.events.filter((e) => !e.cancelled);
    let next: ScheduledEvent | undefined;
    for (const e of this.events) {
      if (next === undefined || e.timeMs < next.timeMs || (e.timeMs === next.timeMs && e.order < next.order)) next = e;
    }
    if (next === undefined) return;
    this.events.splice(this.events.indexOf(next), 1);
    this.timeMs = Math.max(this.timeMs, next.timeMs);
    next.fire();
    if (this.events.length > 0) this.schedulePump();
  }
}

// ---------------------------------------------------------------------------------------------
// An in-memory BenchTarget: a znode map, 1–5 virtual ms per request, injectable failures.

type RequestKind = "createSequential" | "setData" | "getData" | "create" | "children" | "delete";

interface Completion {
  connection: number;
  kind: RequestKind;
  path: string;
  issuedMs: number;
  doneMs: number;
  ok: boolean;
}

class FakeError extends Error {
  constructor(readonly code: string) {
    super(code);
  }
}

class FakeTarget implements BenchTarget {
  readonly name = "fake";
  readonly nodes = new Map<string, Uint8Array>();
  readonly completions: Completion[] = [];
  readonly connections: FakeConnection[] = [];
  readonly hostsConnected: string[] = [];
  private readonly sequence = new Map<string, number>();
  private readonly latency: Random;
  requestsIssued = 0;

  constructor(
    readonly world: VirtualWorld,
    /** Decides, when a request is issued, whether it will fail. */
    public shouldFail: (requestIndex: number, kind: RequestKind) => boolean = () => false,
    seed = 1,
  ) {
    this.latency = seededRandom(seed);
  }

  connect(host: string, _options: BenchConnectOptions): Promise<BenchConnection> {
    const connection = new FakeConnection(this, this.connections.length);
    this.connections.push(connection);
    this.hostsConnected.push(host);
    return Promise.resolve(connection);
  }

  /** Runs `apply` on completion, 1–5 virtual ms after issue. */
  request<R>(connection: FakeConnection, kind: RequestKind, path: string, apply: () => R): Promise<R> {
    const fail = this.shouldFail(this.requestsIssued++, kind);
    const issuedMs = this.world.now();
    connection.inFlight++;
    connection.maxInFlight = Math.max(connection.maxInFlight, connection.inFlight);
    connection.issued.push({ kind, path, failed: fail });
    return new Promise((resolve, reject) => {
      this.world.at(1 + Math.floor(this.latency() * 5), () => {
        connection.inFlight--;
        let outcome: { ok: true; value: R } | { ok: false; error: Error };
        try {
          if (fail) throw new FakeError("CONNECTIONLOSS");
          outcome = { ok: true, value: apply() };
        } catch (error) {
          // `apply` fails only by throwing FakeErrors.
          outcome = { ok: false, error: error instanceof Error ? error : new Error(String(error)) };
        }
        this.completions.push({ connection: connection.id, kind, path, issuedMs, doneMs: this.world.now(), ok: outcome.ok });
        if (outcome.ok) resolve(outcome.value);
        else reject(outcome.error);
      });
    });
  }

  parentOf(path: string): string {
    const parent = path.slice(0, path.lastIndexOf("/"));
    return parent === "" ? "/" : parent;
  }

  requireParent(path: string): void {
    const parent = this.parentOf(path);
    if (parent !== "/" && !this.nodes.has(parent)) throw new FakeError("NONODE");
  }

  nextSequence(parent: string): number {
    const n = this.sequence.get(parent) ?? 0;
    this.sequence.set(parent, n + 1);
    return n;
  }
}

class FakeConnection implements BenchConnection {
  inFlight = 0;
  maxInFlight = 0;
  readonly issued: { kind: RequestKind; path: string; failed: boolean }[] = [];
  closed = false;

  constructor(
    private readonly target: FakeTarget,
    readonly id: number,
  ) {}

  createSequential(prefix: string, value: Uint8Array): Promise<string> {
    return this.target.request(this, "createSequential", prefix, () => {
      this.target.requireParent(prefix);
      const path = prefix + String(this.target.nextSequence(this.target.parentOf(prefix))).padStart(10, "0");
      this.target.nodes.set(path, value);
      return path;
    });
  }

  setData(path: string, value: Uint8Array): Promise<void> {
    return this.target.request(this, "setData", path, () => {
      if (!this.target.nodes.has(path)) throw new FakeError("NONODE");
      this.target.nodes.set(path, value);
    });
  }

  getData(path: string): Promise<Uint8Array> {
    return this.target.request(this, "getData", path, () => {
      const data = this.target.nodes.get(path);
      if (data === undefined) throw new FakeError("NONODE");
      return data;
    });
  }

  create(path: string, value: Uint8Array): Promise<boolean> {
    return this.target.request(this, "create", path, () => {
      if (this.target.nodes.has(path)) return false;
      this.target.requireParent(path);
      this.target.nodes.set(path, value);
      return true;
    });
  }

  children(path: string): Promise<string[]> {
    return this.target.request(this, "children", path, () =>
      [...this.target.nodes.keys()].filter((p) => this.target.parentOf(p) === path).map((p) => p.slice(path.length + 1)),
    );
  }

  delete(path: string): Promise<boolean> {
    return this.target.request(this, "delete", path, () => {
      if (!this.target.nodes.has(path)) return false;
      if ([...this.target.nodes.keys()].some((p) => this.target.parentOf(p) === path)) throw new FakeError("NOTEMPTY");
      this.target.nodes.delete(path);
      return true;
    });
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

// ---------------------------------------------------------------------------------------------
// Driver

const WARMUP_MS = 100;
const DURATION_MS = 1000;

async function setUp(
  connectionCount: number,
  shouldFail?: (requestIndex: number, kind: RequestKind) => boolean,
): Promise<{ world: VirtualWorld; target: FakeTarget; connections: FakeConnection[]; spec: Omit<WorkloadSpec, "workload" | "inflight"> }> {
  const world = new VirtualWorld();
  const target = new FakeTarget(world);
  for (let i = 0; i < connectionCount; i++) await target.connect("fake:1", { sessionTimeoutMs: 10_000 });
  const value = new Uint8Array(100);
  const keySpace = await prepareKeySpace(target.connections, { root: "/bench", keys: 50, value, perConnection: 4, runId: "test" }, world);
  // Failures start only once the key space exists; the clock restarts the count of the run from here.
  target.completions.length = 0;
  for (const c of target.connections) {
    c.issued.length = 0;
    c.maxInFlight = 0;
  }
  const base = target.requestsIssued;
  if (shouldFail !== undefined) target.shouldFail = (i, kind) => shouldFail(i - base, kind);
  return {
    world,
    target,
    connections: target.connections,
    spec: {
      warmupMs: WARMUP_MS,
      durationMs: DURATION_MS,
      value,
      keyPaths: keySpace.keyPaths,
      sequentialPrefix: keySpace.sequentialPrefix,
      readFraction: 0.9,
      drainTimeoutMs: 1000,
    },
  };
}

describe("bench driver", () => {
  it("counts only the requests that complete inside the measured window, and records exactly their latencies", async () => {
    const { world, target, connections, spec } = await setUp(3);
    const startMs = world.now();
    const result = await runWorkload(connections, { ...spec, workload: "setData", inflight: 4 }, { clock: world, random: seededRandom(1) });

    const windowStartMs = startMs + WARMUP_MS;
    const windowEndMs = windowStartMs + DURATION_MS;
    assert.equal(result.windowStartMs, windowStartMs);
    assert.equal(result.windowEndMs, windowEndMs);
    const inWindow = target.completions.filter((c) => c.kind === "setData" && c.doneMs >= windowStartMs && c.doneMs < windowEndMs);
    assert.ok(inWindow.length > 0);
    assert.equal(result.ops, inWindow.length);
    assert.equal(result.errors, 0);
    assert.equal(result.warmupOps, target.completions.filter((c) => c.doneMs < windowStartMs).length);
    assert.ok(result.warmupOps > 0, "the warm-up ran");
    assert.equal(result.lateOps, target.completions.filter((c) => c.doneMs >= windowEndMs).length);
    assert.equal(result.ops + result.warmupOps + result.lateOps, target.completions.length);

    assert.equal(result.histogram.count, result.ops);
    const latencies = inWindow.map((c) => (c.doneMs - c.issuedMs) * 1000).sort((a, b) => a - b);
    for (const p of [50, 99, 99.9]) assertClose(result.histogram.percentileUs(p), oracle(latencies, p), `p${p}`);
  });

  it("counts failed requests in the window as errors and re-issues the same request", async () => {
    const { world, target, connections, spec } = await setUp(3, (i) => i % 7 === 3);
    const result = await runWorkload(connections, { ...spec, workload: "mixed", inflight: 1 }, { clock: world, random: seededRandom(2) });

    const inWindow = (c: Completion): boolean => c.doneMs >= result.windowStartMs && c.doneMs < result.windowEndMs;
    assert.equal(result.errors, target.completions.filter((c) => !c.ok && inWindow(c)).length);
    assert.ok(result.errors > 0);
    assert.equal(result.ops, target.completions.filter((c) => c.ok && inWindow(c)).length);
    assert.equal(result.errorsByLabel["CONNECTIONLOSS"], result.errors);
    assert.equal(result.warmupErrors, target.completions.filter((c) => !c.ok && c.doneMs < result.windowStartMs).length);
    // One request in flight per connection: the request after a failure is the same request.
    for (const connection of connections) {
      connection.issued.forEach((request, i) => {
        const next = connection.issued[i + 1];
        if (request.failed && next !== undefined) assert.deepEqual([next.kind, next.path], [request.kind, request.path]);
      });
    }
  });

  it("backs off when every request fails instead of spinning", async () => {
    const { world, connections, spec } = await setUp(1, () => true);
    const result = await runWorkload(connections, { ...spec, workload: "getData", inflight: 1 }, { clock: world, random: seededRandom(3) });
    assert.equal(result.ops, 0);
    assert.ok(result.errors > 0 && result.errors < 100, `${result.errors} errors in ${DURATION_MS} virtual ms`);
    assert.equal(resultLine(result, "fake", 100).p50Ms, null);
  });

  for (const workload of WORKLOADS) {
    it(`keeps exactly K requests in flight per connection, never more (${workload})`, async () => {
      const { world, connections, spec } = await setUp(3, (i) => i % 11 === 5);
      const result = await runWorkload(connections, { ...spec, workload, inflight: 5 }, { clock: world, random: seededRandom(4) });
      for (const connection of connections) {
        assert.equal(connection.maxInFlight, 5, `connection ${connection.id}`);
        assert.equal(connection.inFlight, 0, "drained at the end");
      }
      assert.equal(result.stuckRequests, 0);
      assert.equal(result.aborted, false);
    });
  }

  it("issues about 90 % getData and 10 % setData in the mixed workload", async () => {
    const { world, target, connections, spec } = await setUp(2);
    await runWorkload(connections, { ...spec, workload: "mixed", inflight: 8 }, { clock: world, random: seededRandom(5) });
    const gets = target.completions.filter((c) => c.kind === "getData").length;
    const sets = target.completions.filter((c) => c.kind === "setData").length;
    const share = gets / (gets + sets);
    assert.ok(share > 0.87 && share < 0.93, `getData share ${share} of ${gets + sets}`);
  });

  it("returns every created sequential node, and cleanup removes them and their directory", async () => {
    const { world, target, connections, spec } = await setUp(2, (i) => i % 13 === 0);
    const result = await runWorkload(connections, { ...spec, workload: "create-sequential", inflight: 4 }, { clock: world, random: seededRandom(6) });
    const sequentialDir = spec.sequentialPrefix.slice(0, spec.sequentialPrefix.lastIndexOf("/"));
    const createdInTree = [...target.nodes.keys()].filter((p) => p.startsWith(`${sequentialDir}/`)).sort();
    assert.ok(createdInTree.length > 0);
    assert.deepEqual([...result.created].sort(), createdInTree);

    const summary = await cleanup(connections, { created: result.created, sequentialDir, perConnection: 4, deadlineMs: world.now() + 60_000 }, world);
    assert.equal(summary.directoryRemoved, true);
    assert.equal(summary.leftBehind, 0);
    assert.deepEqual([...target.nodes.keys()].sort(), ["/bench", ...keyPathsFor("/bench", 50)].sort());
  });

  it("cleanup also removes sequential nodes whose creation it never heard about", async () => {
    const { world, target, connections, spec } = await setUp(1);
    const sequentialDir = spec.sequentialPrefix.slice(0, spec.sequentialPrefix.lastIndexOf("/"));
    const known = await connections[0]!.createSequential(spec.sequentialPrefix, spec.value);
    await connections[0]!.createSequential(spec.sequentialPrefix, spec.value); // its answer "lost"
    const summary = await cleanup(connections, { created: [known], sequentialDir, perConnection: 2, deadlineMs: world.now() + 60_000 }, world);
    assert.equal(summary.directoryRemoved, true);
    assert.equal(summary.deleted, 2);
    assert.ok(![...target.nodes.keys()].some((p) => p.startsWith(sequentialDir)));
  });

  it("cleanup stops at its deadline and says what it left", async () => {
    const { world, connections, spec } = await setUp(1);
    const sequentialDir = spec.sequentialPrefix.slice(0, spec.sequentialPrefix.lastIndexOf("/"));
    const created: string[] = [];
    for (let i = 0; i < 200; i++) created.push(await connections[0]!.createSequential(spec.sequentialPrefix, spec.value));
    const summary = await cleanup(connections, { created, sequentialDir, perConnection: 1, deadlineMs: world.now() + 50 }, world);
    assert.equal(summary.directoryRemoved, false);
    assert.ok(summary.leftBehind > 0);
    assert.equal(summary.deleted + summary.leftBehind + summary.failed, 200);
  });

  it("prepares the key space idempotently, rewriting existing values", async () => {
    const world = new VirtualWorld();
    const target = new FakeTarget(world);
    const connections = [await target.connect("fake:1", { sessionTimeoutMs: 1 }), await target.connect("fake:2", { sessionTimeoutMs: 1 })];
    const first = await prepareKeySpace(connections, { root: "/a/b", keys: 30, value: new Uint8Array(10), perConnection: 3, runId: "one" }, world);
    const second = await prepareKeySpace(connections, { root: "/a/b", keys: 30, value: new Uint8Array(20), perConnection: 3, runId: "two" }, world);
    assert.deepEqual(first.keyPaths, second.keyPaths);
    assert.equal(first.keyPaths[7], "/a/b/k0007");
    for (const path of second.keyPaths) assert.equal(target.nodes.get(path)?.length, 20);
    assert.equal(target.nodes.size, 2 + 30 + 2); // /a, /a/b, keys, seq-one, seq-two
    assert.equal(second.sequentialPrefix, "/a/b/seq-two/n-");
  });

  it("stops issuing when aborted and marks the result", async () => {
    const { world, target, connections, spec } = await setUp(2);
    const abort = new AbortController();
    world.at(WARMUP_MS + 300, () => abort.abort());
    const result = await runWorkload(
      connections,
      { ...spec, workload: "getData", inflight: 3 },
      { clock: world, random: seededRandom(8), signal: abort.signal },
    );
    assert.equal(result.aborted, true);
    assert.ok(target.completions.every((c) => c.issuedMs <= result.windowStartMs + 300));
  });

  it("spreads connections round-robin over the hosts of the connect string", async () => {
    const target = new FakeTarget(new VirtualWorld());
    const hosts = splitConnectString("h1:2181,h2:2182,h3:2183");
    const connections = await connectAll(target, hosts, 8, { sessionTimeoutMs: 10_000, connectTimeoutMs: 1000 });
    assert.equal(connections.length, 8);
    assert.deepEqual(target.hostsConnected, ["h1:2181", "h2:2182", "h3:2183", "h1:2181", "h2:2182", "h3:2183", "h1:2181", "h2:2182"]);
  });

  it("prints the result line with the documented fields in order", async () => {
    const { world, connections, spec } = await setUp(1);
    const result = await runWorkload(connections, { ...spec, workload: "getData", inflight: 2 }, { clock: world, random: seededRandom(9) });
    const line = resultLine(result, "fake", 100);
    assert.deepEqual(Object.keys(line), [
      "target",
      "workload",
      "connections",
      "inflight",
      "valueBytes",
      "durationS",
      "ops",
      "opsPerSec",
      "p50Ms",
      "p99Ms",
      "p999Ms",
      "errors",
    ]);
    assert.equal(line.durationS, DURATION_MS / 1000);
    assert.equal(line.opsPerSec, Math.round((result.ops / line.durationS) * 10) / 10);
    assert.ok(line.p50Ms !== null && line.p99Ms !== null && line.p999Ms !== null);
    assert.ok(line.p50Ms <= line.p99Ms && line.p99Ms <= line.p999Ms);
  });
});

describe("bench options", () => {
  it("defaults to the reference throughput setup of bench/README.md", () => {
    const options = parseBenchArgs([]);
    assert.deepEqual(
      [options.hosts, options.connections, options.inflight, options.warmupS, options.durationS, options.valueBytes, options.keys, options.target],
      [["127.0.0.1:2181"], 8, 16, 2, 10, 100, 1000, "corral"],
    );
    assert.deepEqual(options.workloads, ["create-sequential", "setData", "getData", "mixed"] satisfies WorkloadName[]);
    assert.equal(options.readPercent, 90);
  });

  it("parses flags and rejects bad ones", () => {
    const options = parseBenchArgs(["--connect", "a:1,b:2/chroot", "--workloads", "setData", "--inflight=64", "--json-out", "out.jsonl"]);
    assert.deepEqual(options.hosts, ["a:1/chroot", "b:2/chroot"]);
    assert.deepEqual(options.workloads, ["setData"]);
    assert.equal(options.inflight, 64);
    assert.equal(options.jsonOut, "out.jsonl");
    assert.throws(() => parseBenchArgs(["--workloads", "put"]), /unknown workload/);
    assert.throws(() => parseBenchArgs(["--inflight", "0"]), /positive integer/);
    assert.throws(() => parseBenchArgs(["--connect", "nohost"]), /host:port/);
    assert.throws(() => parseBenchArgs(["--bogus"]));
  });
});
