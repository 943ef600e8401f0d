/**
 * The soak's verdicts, from its samples alone (pure: the unit test feeds it series with and
 * without a leak).
 *
 * A resource that leaks grows for as long as the load runs; one that does not levels off once
 * the process is warm. So each process lifetime's steady samples are cut in quarters, and the
 * median of the last quarter is held against the peak of the first plus an allowance. The
 * strongest check needs no trend at all: once the load has stopped and every client has closed,
 * sessions, watches and ephemerals must be back where they were before the load began.
 */

/** One reading of one server process. */
export interface ProcessSample {
  atMs: number;
  serverId: number;
  pid: number;
  rssBytes: number;
  fds: number;
  /** Sessions alive in the cluster, as this server counts them (global_sessions). */
  sessions: number;
  /** Watches held by the sessions connected to this server (watch_count). */
  watches: number;
  /** Ephemeral znodes in this server's tree (ephemerals_count). */
  ephemerals: number;
}

/** The workload's latency over one sampling interval. */
export interface LatencyWindow {
  startMs: number;
  ok: number;
  failed: number;
  p50Ms: number;
  p99Ms: number;
  /** A fault was in force, started or healed during the window: its latency is the fault's, not drift. */
  faulted: boolean;
}

export interface SoakVerdict {
  check: string;
  /** "too short" when the run gave a series too few samples to judge. */
  valid: boolean | "too short";
  detail: string;
}

export interface SoakSamples {
  /** Samples taken while the load ran, after the warm-up. */
  steady: readonly ProcessSample[];
  /** What each server counted before the load began. */
  baseline: ReadonlyMap<number, ProcessSample>;
  /** What each server counted once the load had stopped and the clients had closed. */
  settled: ReadonlyMap<number, ProcessSample>;
  windows: readonly LatencyWindow[];
}

export interface Allowance {
  /** The last quarter may reach the first quarter's peak times this... */
  ratio: number;
  /** ...or the peak plus this, whichever is larger. */
  absolute: number;
}

export const RSS_ALLOWANCE: Allowance = { ratio: 1.25, absolute: 64 * 1024 * 1024 };
export const FD_ALLOWANCE: Allowance = { ratio: 1, absolute: 16 };
/** Sessions and watches under a steady load move with the faults; only a trend well past that is a leak. */
export const COUNT_ALLOWANCE: Allowance = { ratio: 1.5, absolute: 50 };
/** p99 of the last quarter against the first: the drift allowed before the run calls it drift. */
export const LATENCY_ALLOWANCE: Allowance = { ratio: 2, absolute: 5 };
/** A server restarted during the run loads its snapshot and catches up first: not judged for this long. */
export const RESTART_WARM_UP_MS = 15_000;
/** Fewer samples than this in one process lifetime are not a trend. */
export const SAMPLES_FOR_A_TREND = 8;

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? 0 : sorted[Math.floor(sorted.length / 2)]!;
}

export interface Growth {
  firstPeak: number;
  lastMedian: number;
  limit: number;
  grew: boolean;
}

/** The last quarter's median against the first quarter's peak plus the allowance; undefined when too short. */
export function growthOf(series: readonly number[], allowance: Allowance): Growth | undefined {
  if (series.length < SAMPLES_FOR_A_TREND) return undefined;
  const quarter = Math.floor(series.length / 4);
  const firstPeak = Math.max(...series.slice(0, quarter));
  const lastMedian = median(series.slice(series.length - quarter));
  const limit = Math.max(firstPeak * allowance.ratio, firstPeak + allowance.absolute);
  return { firstPeak, lastMedian, limit, grew: lastMedian > limit };
}

const MIB = 1024 * 1024;

function trendVerdict(
  check: string,
  samples: readonly ProcessSample[],
  read: (s: ProcessSample) => number,
  allowance: Allowance,
  unit: (n: number) => string,
): SoakVerdict {
  const lifetimes = new Map<string, ProcessSample[]>();
  for (const sample of samples) {
    const key = `server ${sample.serverId} (pid ${sample.pid})`;
    let list = lifetimes.get(key);
    if (list === undefined) lifetimes.set(key, (list = []));
    list.push(sample);
  }
  const steadyStart = Math.min(...samples.map((s) => s.atMs));
  const grew: string[] = [];
  const flat: string[] = [];
  for (const [key, all] of lifetimes) {
    const started = all[0]!.atMs;
    const list = started > steadyStart ? all.filter((s) => s.atMs >= started + RESTART_WARM_UP_MS) : all;
    const growth = growthOf(list.map(read), allowance);
    if (growth === undefined) continue;
    const line = `${key}: ${unit(growth.firstPeak)} → ${unit(growth.lastMedian)} (limit ${unit(growth.limit)}, ${list.length} samples)`;
    (growth.grew ? grew : flat).push(line);
  }
  if (grew.length === 0 && flat.length === 0) return { check, valid: "too short", detail: `no process lived for ${SAMPLES_FOR_A_TREND} samples` };
  return { check, valid: grew.length === 0, detail: (grew.length > 0 ? grew : flat).join("; ") };
}

function settledVerdict(samples: SoakSamples): SoakVerdict {
  const problems: string[] = [];
  const lines: string[] = [];
  for (const [id, before] of samples.baseline) {
    const after = samples.settled.get(id);
    if (after === undefined) {
      problems.push(`server ${id}: no reading after the load`);
      continue;
    }
    lines.push(
      `server ${id}: sessions ${before.sessions} → ${after.sessions}, watches ${before.watches} → ${after.watches}, ephemerals ${before.ephemerals} → ${after.ephemerals}`,
    );
    if (after.sessions > before.sessions) problems.push(`server ${id}: ${after.sessions - before.sessions} sessions more than before the load`);
    if (after.watches > before.watches) problems.push(`server ${id}: ${after.watches - before.watches} watches more than before the load`);
    if (after.ephemerals > before.ephemerals) problems.push(`server ${id}: ${after.ephemerals - before.ephemerals} ephemerals more than before the load`);
  }
  return {
    check: "sessions, watches and ephemerals back to the baseline",
    valid: problems.length === 0,
    detail: (problems.length > 0 ? problems : lines).join("; "),
  };
}

function latencyVerdict(windows: readonly LatencyWindow[]): SoakVerdict {
  const check = "latency does not drift";
  const p99s = windows.filter((w) => w.ok > 0 && !w.faulted).map((w) => w.p99Ms);
  if (p99s.length < SAMPLES_FOR_A_TREND) return { check, valid: "too short", detail: `${p99s.length} fault-free windows with answers` };
  const quarter = Math.floor(p99s.length / 4);
  const first = median(p99s.slice(0, quarter));
  const last = median(p99s.slice(p99s.length - quarter));
  const limit = Math.max(first * LATENCY_ALLOWANCE.ratio, first + LATENCY_ALLOWANCE.absolute);
  return {
    check,
    valid: last <= limit,
    detail: `window p99 median ${first.toFixed(1)} ms in the first quarter of the fault-free windows, ${last.toFixed(1)} ms in the last (limit ${limit.toFixed(1)} ms)`,
  };
}

/**
 * Every verdict of a soak. `judgeLatency` is off in `npm test` (no timing assertions on a shared
 * machine); `npm run soak` turns it on.
 */
export function judgeSoak(samples: SoakSamples, options: { judgeLatency: boolean }): SoakVerdict[] {
  const mib = (n: number) => `${(n / MIB).toFixed(0)} MiB`;
  const count = (n: number) => String(Math.round(n));
  const verdicts = [
    trendVerdict("RSS stays flat", samples.steady, (s) => s.rssBytes, RSS_ALLOWANCE, mib),
    trendVerdict("open file descriptors stay flat", samples.steady, (s) => s.fds, FD_ALLOWANCE, count),
    trendVerdict("sessions stay flat under the load", samples.steady, (s) => s.sessions, COUNT_ALLOWANCE, count),
    trendVerdict("watches stay flat under the load", samples.steady, (s) => s.watches, COUNT_ALLOWANCE, count),
    settledVerdict(samples),
  ];
  if (options.judgeLatency) verdicts.push(latencyVerdict(samples.windows));
  return verdicts;
}
