/**
 * The closed-loop driver: N connections × K requests in flight each, a warm-up, then a measured
 * window. It talks to the system under test only through BenchTarget / BenchConnection, and to
 * time only through Clock, so tests run it against an in-memory target on a virtual clock.
 *
 * Accounting rule: a request belongs to the measured window when it *completes* at a time t with
 * windowStart ≤ t < windowEnd (windowStart = start + warm-up, windowEnd = windowStart + duration).
 * Only those are counted in `ops` / `errors` and only their latencies are recorded. A failed
 * request is counted as an error and re-issued (same operation, same key) by the same slot; its
 * latency is measured from the re-issue. After two failures in a row a slot backs off
 * (1, 2, 4 … 100 ms) so that a dead server is not hammered by a hot loop.
 */
import type { Clock, Random } from "./clock.js";
import { LatencyHistogram } from "./histogram.js";
import { errorLabel, type BenchConnection } from "./target.js";

export const WORKLOADS = ["create-sequential", "setData", "getData", "mixed"] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

export function isWorkloadName(name: string): name is WorkloadName {
  return (WORKLOADS as readonly string[]).includes(name);
}

export interface WorkloadSpec {
  workload: WorkloadName;
  /** Requests each connection keeps in flight (K). */
  inflight: number;
  warmupMs: number;
  durationMs: number;
  /** Payload of every create and setData. */
  value: Uint8Array;
  /** Existing nodes that getData / setData pick from uniformly. */
  keyPaths: readonly string[];
  /** Prefix given to createSequential, e.g. "/bench/seq-ab12cd/n-". */
  sequentialPrefix: string;
  /** Share of getData in "mixed" (the rest is setData). */
  readFraction: number;
  /** How long after the window (or an abort) requests still in flight are awaited. */
  drainTimeoutMs: number;
}

export interface DriverEnv {
  clock: Clock;
  random: Random;
  /** Aborting stops issuing new requests; the result is then marked `aborted`. */
  signal?: AbortSignal;
}

export interface WorkloadResult {
  workload: WorkloadName;
  connections: number;
  inflight: number;
  warmupMs: number;
  durationMs: number;
  windowStartMs: number;
  windowEndMs: number;
  /** Successful requests completed inside the window. */
  ops: number;
  /** Failed requests completed inside the window (each one re-issued). */
  errors: number;
  errorsByLabel: Record<string, number>;
  warmupOps: number;
  warmupErrors: number;
  /** Requests completed after the window (not counted). */
  lateOps: number;
  /** Latencies (µs) of the `ops` requests. */
  histogram: LatencyHistogram;
  /** Every path createSequential returned (warm-up and late ones included), for cleanup. */
  created: string[];
  /** Requests still in flight when the drain timeout ran out. */
  stuckRequests: number;
  aborted: boolean;
}

const OP_CREATE = 0;
const OP_SET = 1;
const OP_GET = 2;
type OpKind = typeof OP_CREATE | typeof OP_SET | typeof OP_GET;

const BACKOFF_MS_MAX = 100;
const DRAIN_POLL_MS = 50;

/** Resolves true when `promise` settles by `deadline()`, false otherwise; polls the clock. */
async function settlesBy(promise: Promise<unknown>, clock: Clock, deadline: () => number): Promise<boolean> {
  let settled = false;
  const done = promise.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  while (!settled) {
    const remainingMs = deadline() - clock.now();
    if (remainingMs <= 0) return false;
    const stop = new AbortController();
    await Promise.race([done, clock.sleep(Math.min(remainingMs, DRAIN_POLL_MS), stop.signal)]);
    stop.abort();
  }
  return true;
}

/** One workload over already-open connections. Live counters are readable while `run()` is under way. */
export class WorkloadRun {
  readonly histogram = new LatencyHistogram();
  readonly created: string[] = [];
  readonly errorsByLabel: Record<string, number> = {};
  ops = 0;
  errors = 0;
  warmupOps = 0;
  warmupErrors = 0;
  lateOps = 0;
  inFlight = 0;
  windowStartMs = Number.NaN;
  windowEndMs = Number.NaN;
  private started = false;
  private abortedAtMs = Number.NaN;

  constructor(
    private readonly connections: readonly BenchConnection[],
    private readonly spec: WorkloadSpec,
    private readonly env: DriverEnv,
  ) {
    if (connections.length === 0) throw new RangeError("no connections");
    if (!(Number.isInteger(spec.inflight) && spec.inflight >= 1)) throw new RangeError(`bad inflight: ${spec.inflight}`);
    if (!(spec.warmupMs >= 0 && spec.durationMs > 0)) throw new RangeError("bad warm-up or duration");
    if (spec.workload !== "create-sequential" && spec.keyPaths.length === 0) throw new RangeError("no keys");
    if (!(spec.readFraction >= 0 && spec.readFraction <= 1)) throw new RangeError(`bad readFraction: ${spec.readFraction}`);
  }

  /** "warmup" | "measure" | "drain" at the clock's current time. */
  phase(): "warmup" | "measure" | "drain" {
    const now = this.env.clock.now();
    if (!(now >= this.windowStartMs)) return "warmup";
    return now < this.windowEndMs ? "measure" : "drain";
  }

  async run(): Promise<WorkloadResult> {
    if (this.started) throw new Error("a WorkloadRun runs once");
    this.started = true;
    const { clock, signal } = this.env;
    const startMs = clock.now();
    this.windowStartMs = startMs + this.spec.warmupMs;
    this.windowEndMs = this.windowStartMs + this.spec.durationMs;
    const onAbort = (): void => {
      this.abortedAtMs = clock.now();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) onAbort();

    const slots: Promise<void>[] = [];
    for (const connection of this.connections) {
      for (let k = 0; k < this.spec.inflight; k++) slots.push(this.slot(connection));
    }
    const drained = await settlesBy(
      Promise.all(slots),
      clock,
      () => Math.min(this.windowEndMs, Number.isNaN(this.abortedAtMs) ? Infinity : this.abortedAtMs) + this.spec.drainTimeoutMs,
    );
    signal?.removeEventListener("abort", onAbort);
    return {
      workload: this.spec.workload,
      connections: this.connections.length,
      inflight: this.spec.inflight,
      warmupMs: this.spec.warmupMs,
      durationMs: this.spec.durationMs,
      windowStartMs: this.windowStartMs,
      windowEndMs: this.windowEndMs,
      ops: this.ops,
      errors: this.errors,
      errorsByLabel: { ...this.errorsByLabel },
      warmupOps: this.warmupOps,
      warmupErrors: this.warmupErrors,
      lateOps: this.lateOps,
      histogram: this.histogram,
      created: this.created,
      stuckRequests: drained ? 0 : this.inFlight,
      aborted: !Number.isNaN(this.abortedAtMs),
    };
  }

  private nextOp(): OpKind {
    switch (this.spec.workload) {
      case "create-sequential":
        return OP_CREATE;
      case "setData":
        return OP_SET;
      case "getData":
        return OP_GET;
      case "mixed":
        return this.env.random() < this.spec.readFraction ? OP_GET : OP_SET;
    }
  }

  private nextKey(): string {
    const keys = this.spec.keyPaths;
    return keys[Math.floor(this.env.random() * keys.length)] ?? keys[0]!;
  }

  /** One of the K request slots of a connection: exactly one request in flight at a time. */
  private async slot(connection: BenchConnection): Promise<void> {
    const { clock, signal } = this.env;
    const { value, sequentialPrefix } = this.spec;
    let retryKind: OpKind | undefined;
    let retryKey = "";
    let failuresInRow = 0;
    for (;;) {
      if (signal?.aborted) return;
      const issuedMs = clock.now();
      if (issuedMs >= this.windowEndMs) return;
      let kind: OpKind;
      let key: string;
      if (retryKind !== undefined) {
        kind = retryKind;
        key = retryKey;
      } else {
        kind = this.nextOp();
        key = kind === OP_CREATE ? sequentialPrefix : this.nextKey();
      }
      this.inFlight++;
      try {
        if (kind === OP_GET) {
          await connection.getData(key);
        } else if (kind === OP_SET) {
          await connection.setData(key, value);
        } else {
          this.created.push(await connection.createSequential(key, value));
        }
        this.inFlight--;
        this.completed(issuedMs, clock.now());
        retryKind = undefined;
        failuresInRow = 0;
      } catch (error) {
        this.inFlight--;
        this.failed(clock.now(), error);
        retryKind = kind;
        retryKey = key;
        failuresInRow++;
        if (failuresInRow >= 2) {
          await clock.sleep(Math.min(2 ** (failuresInRow - 2), BACKOFF_MS_MAX), signal);
        }
      }
    }
  }

  private completed(issuedMs: number, doneMs: number): void {
    if (doneMs < this.windowStartMs) {
      this.warmupOps++;
    } else if (doneMs < this.windowEndMs) {
      this.ops++;
      this.histogram.record((doneMs - issuedMs) * 1000);
    } else {
      this.lateOps++;
    }
  }

  private failed(doneMs: number, error: unknown): void {
    if (doneMs < this.windowStartMs) {
      this.warmupErrors++;
    } else if (doneMs < this.windowEndMs) {
      this.errors++;
      const label = errorLabel(error);
      this.errorsByLabel[label] = (this.errorsByLabel[label] ?? 0) + 1;
    }
  }
}

export function runWorkload(connections: readonly BenchConnection[], spec: WorkloadSpec, env: DriverEnv): Promise<WorkloadResult> {
  return new WorkloadRun(connections, spec, env).run();
}

// ---------------------------------------------------------------------------------------------
// Setup and cleanup: bounded parallel work spread over every connection.

export interface PoolResult<T> {
  done: number;
  failed: { item: T; error: unknown }[];
  /** Items never started because the deadline passed or the signal aborted. */
  notStarted: number;
  /** Tasks still running at the deadline (their outcome is unknown). */
  running: number;
  /** False when some task was still running at the deadline. */
  settled: boolean;
}

/**
 * Runs `task` over `items` with `perConnection` tasks in flight on each connection, taking no new
 * item after `deadlineMs` (absolute, on `clock`) and waiting for running ones until then.
 */
export async function runPool<T>(
  connections: readonly BenchConnection[],
  perConnection: number,
  items: readonly T[],
  task: (connection: BenchConnection, item: T) => Promise<void>,
  clock: Clock,
  deadlineMs: number = Infinity,
  signal?: AbortSignal,
): Promise<PoolResult<T>> {
  let next = 0;
  let done = 0;
  let running = 0;
  const failed: { item: T; error: unknown }[] = [];
  const worker = async (connection: BenchConnection): Promise<void> => {
    while (next < items.length && clock.now() < deadlineMs && !signal?.aborted) {
      const item = items[next++] as T;
      running++;
      try {
        await task(connection, item);
        done++;
      } catch (error) {
        failed.push({ item, error });
      } finally {
        running--;
      }
    }
  };
  const workers: Promise<void>[] = [];
  for (const connection of connections) {
    for (let k = 0; k < perConnection; k++) workers.push(worker(connection));
  }
  const settled = await settlesBy(Promise.all(workers), clock, () => deadlineMs);
  return { done, failed, notStarted: items.length - next, running, settled };
}

/** Retries a setup step a few times: the key space must exist before anything is measured. */
async function withRetries<R>(attempts: number, step: () => Promise<R>): Promise<R> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      if (attempt >= attempts) throw error;
    }
  }
}

export interface KeySpace {
  /** Paths of the keys getData / setData use, e.g. /bench/k0000 … /bench/k0999. */
  keyPaths: string[];
  /** Per-run parent of the sequential nodes, removed by `cleanup`. */
  sequentialDir: string;
  sequentialPrefix: string;
}

export function keyPathsFor(root: string, keys: number): string[] {
  const width = Math.max(4, String(keys - 1).length);
  const base = root === "/" ? "" : root;
  return Array.from({ length: keys }, (_, i) => `${base}/k${String(i).padStart(width, "0")}`);
}

/** `/a/b/c` → ["/a", "/a/b", "/a/b/c"]. */
function pathAndAncestors(path: string): string[] {
  const segments = path.split("/").filter((s) => s.length > 0);
  return segments.map((_, i) => "/" + segments.slice(0, i + 1).join("/"));
}

/**
 * Idempotently makes `root` and its `keys` nodes exist, each holding exactly `value` (existing
 * keys are overwritten, so a changed --value-bytes takes effect), and creates this run's
 * sequential parent `${root}/seq-${runId}`.
 */
export async function prepareKeySpace(
  connections: readonly BenchConnection[],
  options: { root: string; keys: number; value: Uint8Array; perConnection: number; runId: string },
  clock: Clock,
): Promise<KeySpace> {
  const first = connections[0];
  if (first === undefined) throw new RangeError("no connections");
  const empty = new Uint8Array(0);
  for (const path of pathAndAncestors(options.root)) {
    await withRetries(3, () => first.create(path, empty));
  }
  const keyPaths = keyPathsFor(options.root, options.keys);
  const pool = await runPool(
    connections,
    options.perConnection,
    keyPaths,
    async (connection, path) => {
      await withRetries(3, async () => {
        if (!(await connection.create(path, options.value))) await connection.setData(path, options.value);
      });
    },
    clock,
  );
  const firstFailure = pool.failed[0];
  if (firstFailure !== undefined) {
    throw new Error(`could not prepare ${pool.failed.length} keys, e.g. ${String(firstFailure.item)}: ${errorLabel(firstFailure.error)}`, {
      cause: firstFailure.error,
    });
  }
  const sequentialDir = `${options.root === "/" ? "" : options.root}/seq-${options.runId}`;
  await withRetries(3, () => first.create(sequentialDir, empty));
  return { keyPaths, sequentialDir, sequentialPrefix: `${sequentialDir}/n-` };
}

export interface CleanupResult {
  deleted: number;
  failed: number;
  /** Nodes knowingly left behind (deadline passed); the directory then stays too. */
  leftBehind: number;
  directoryRemoved: boolean;
}

/**
 * Deletes the sequential nodes a run created (known by path, so no huge getChildren), then any
 * stragglers the listing shows (e.g. a create whose answer was lost), then the directory; stops
 * taking new work at `deadlineMs`.
 */
export async function cleanup(
  connections: readonly BenchConnection[],
  options: { created: readonly string[]; sequentialDir: string; perConnection: number; deadlineMs: number },
  clock: Clock,
): Promise<CleanupResult> {
  const remove = async (connection: BenchConnection, path: string): Promise<void> => {
    await withRetries(2, () => connection.delete(path));
  };
  const known = await runPool(connections, options.perConnection, options.created, remove, clock, options.deadlineMs);
  let deleted = known.done;
  let failed = known.failed.length;
  let leftBehind = known.notStarted + known.running;
  if (leftBehind > 0 || clock.now() >= options.deadlineMs) {
    return { deleted, failed, leftBehind, directoryRemoved: false };
  }
  const first = connections[0]!;
  let stragglers: string[];
  try {
    stragglers = (await first.children(options.sequentialDir)).map((name) => `${options.sequentialDir}/${name}`);
  } catch {
    return { deleted, failed: failed + 1, leftBehind, directoryRemoved: false };
  }
  const rest = await runPool(connections, options.perConnection, stragglers, remove, clock, options.deadlineMs);
  deleted += rest.done;
  failed += rest.failed.length;
  leftBehind += rest.notStarted + rest.running;
  if (rest.failed.length > 0 || leftBehind > 0 || !rest.settled) {
    return { deleted, failed, leftBehind, directoryRemoved: false };
  }
  try {
    await withRetries(2, () => first.delete(options.sequentialDir));
    return { deleted, failed, leftBehind, directoryRemoved: true };
  } catch {
    return { deleted, failed: failed + 1, leftBehind, directoryRemoved: false };
  }
}

// ---------------------------------------------------------------------------------------------
// Output

export interface ResultLine {
  target: string;
  workload: WorkloadName;
  connections: number;
  inflight: number;
  valueBytes: number;
  durationS: number;
  ops: number;
  opsPerSec: number;
  p50Ms: number | null;
  p99Ms: number | null;
  p999Ms: number | null;
  errors: number;
}

function percentileMs(histogram: LatencyHistogram, percentile: number): number | null {
  if (histogram.count === 0) return null;
  return Math.round(histogram.percentileUs(percentile)) / 1000; // µs resolution
}

/** The JSON line printed per workload; field order is part of the format. */
export function resultLine(result: WorkloadResult, target: string, valueBytes: number): ResultLine {
  const durationS = result.durationMs / 1000;
  return {
    target,
    workload: result.workload,
    connections: result.connections,
    inflight: result.inflight,
    valueBytes,
    durationS,
    ops: result.ops,
    opsPerSec: Math.round((result.ops / durationS) * 10) / 10,
    p50Ms: percentileMs(result.histogram, 50),
    p99Ms: percentileMs(result.histogram, 99),
    p999Ms: percentileMs(result.histogram, 99.9),
    errors: result.errors,
  };
}
