/**
 * A soak: a cluster with a proxy on every link under a steady mixed load — sessions opened and
 * closed, ephemerals, one-shot watches that fire, sequential creates and deletes — while the
 * nemesis injects faults, sampling every server's RSS, open descriptors, sessions, watches and
 * ephemerals, and the load's latency. Judged by soak-judge.ts.
 */
import { readdir, readFile } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import { Client, ZkError } from "../../src/index.js";
import { Prng } from "../sim/prng.js";
import { Scrape } from "../helpers/prometheus.js";
import { waitFor } from "../helpers/wait.js";
import { ChaosCluster } from "./chaos-cluster.js";
import { clusterNeeds, Nemesis, type NemesisName } from "./nemesis.js";
import { judgeSoak, median, type LatencyWindow, type ProcessSample, type SoakVerdict } from "./soak-judge.js";
import { withLimit } from "./workloads.js";

export interface SoakOptions {
  durationMs: number;
  voters: number;
  nemeses: readonly NemesisName[];
  seed: number;
  /** Concurrent load workers, each one session at a time. */
  workers?: number;
  sampleMs?: number;
  /** Time at the start not judged for trends (processes warming up). */
  warmUpMs?: number;
  judgeLatency: boolean;
  log?: (line: string) => void;
}

export interface SoakResult {
  valid: boolean;
  verdicts: SoakVerdict[];
  steady: ProcessSample[];
  windows: LatencyWindow[];
  sessionsOpened: number;
  opsOk: number;
  opsFailed: number;
  faults: number;
}

const ROOT = "/soak";
const KEYS = `${ROOT}/keys`;
const EPHEMERALS = `${ROOT}/ephemerals`;
const QUEUE = `${ROOT}/queue`;
const KEY_COUNT = 32;
const OPS_PER_SESSION = 40;
const TICK_MS = 100;
const SESSION_TIMEOUT_MS = 20 * TICK_MS;
const OPERATION_LIMIT_MS = 10_000;
/** How long the cluster gets, after the load, to expire what killed connections left behind. */
const SETTLE_LIMIT_MS = 60_000;

/** One server's reading: the process from /proc, the counts from its /metrics. */
async function sampleServer(cluster: ChaosCluster, id: number, atMs: number): Promise<ProcessSample | undefined> {
  const server = cluster.server(id);
  const pid = server.pid;
  if (pid === undefined || !server.running) return undefined;
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const rssKb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN);
    const fds = (await readdir(`/proc/${pid}/fd`)).length;
    const scrape = await withLimit(Scrape.of(server.metricsUrl), 5_000, `server ${id}'s metrics`);
    return {
      atMs,
      serverId: id,
      pid,
      rssBytes: rssKb * 1024,
      fds,
      sessions: scrape.value("global_sessions"),
      watches: scrape.value("watch_count"),
      ephemerals: scrape.value("ephemerals_count"),
    };
  } catch {
    return undefined; // paused, restarting, or killed between the checks: no reading this round
  }
}

/** Latencies of the current sampling interval, closed into a window at each sample. */
class LatencyRecorder {
  private latencies: number[] = [];
  private faultsInForce = 0;
  private faultSeen = false;
  private failed = 0;
  private startMs = 0;
  totalOk = 0;
  totalFailed = 0;

  async time<T>(action: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      const value = await withLimit(action(), OPERATION_LIMIT_MS, "soak op");
      this.latencies.push(performance.now() - started);
      this.totalOk += 1;
      return value;
    } catch (error) {
      this.failed += 1;
      this.totalFailed += 1;
      throw error;
    }
  }

  /** A fault started (+1) or healed (-1). */
  fault(change: 1 | -1): void {
    this.faultsInForce += change;
    this.faultSeen = true;
  }

  close(nowMs: number): LatencyWindow {
    const sorted = this.latencies.sort((a, b) => a - b);
    const at = (q: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
    const window = {
      startMs: this.startMs,
      ok: sorted.length,
      failed: this.failed,
      p50Ms: at(0.5),
      p99Ms: at(0.99),
      faulted: this.faultSeen || this.faultsInForce > 0,
    };
    this.faultSeen = false;
    this.latencies = [];
    this.failed = 0;
    this.startMs = nowMs;
    return window;
  }
}

/** Errors a worker expects from faults: it closes its session and opens another. */
function expected(error: unknown): boolean {
  return error instanceof ZkError || (error instanceof Error && /no answer within/.test(error.message));
}

async function loadWorker(
  worker: number,
  connectString: string,
  prng: Prng,
  latency: LatencyRecorder,
  stopping: () => boolean,
  counts: { sessions: number },
): Promise<void> {
  const payload = new Uint8Array(256).fill(worker);
  for (let cycle = 0; !stopping(); cycle++) {
    let client: Client | undefined;
    try {
      client = await withLimit(Client.connect(connectString, { sessionTimeoutMs: SESSION_TIMEOUT_MS, connectTimeoutMs: 5_000 }), 10_000, "connect");
      counts.sessions += 1;
      const session = client;
      await latency.time(() => session.create(`${EPHEMERALS}/w${worker}-${cycle}`, payload, { mode: "ephemeral" }));
      for (let i = 0; i < OPS_PER_SESSION && !stopping(); i++) {
        const key = `${KEYS}/k${prng.int(KEY_COUNT)}`;
        await latency.time(() => session.getData(key, { watch: () => undefined }));
        await latency.time(() => session.setData(`${KEYS}/k${prng.int(KEY_COUNT)}`, payload));
        await latency.time(() => session.exists(`${EPHEMERALS}/w${prng.int(8)}-${cycle + 1}`, { watch: () => undefined }));
        if (i % 8 === 0) await latency.time(() => session.getChildren(KEYS, { watch: () => undefined }));
        const item = await latency.time(() => session.create(`${QUEUE}/item-`, payload, { mode: "persistent-sequential" }));
        await latency.time(() => session.delete(item));
      }
    } catch (error) {
      if (!expected(error)) throw error;
    } finally {
      await withLimit(client?.close() ?? Promise.resolve(), 10_000, "close").catch(() => undefined);
    }
  }
}

async function prepareTree(connectString: string): Promise<void> {
  const client = await Client.connect(connectString, { connectTimeoutMs: 30_000 });
  try {
    for (const path of [ROOT, KEYS, EPHEMERALS, QUEUE]) {
      await client.create(path).catch((error: unknown) => {
        if (!(error instanceof ZkError && error.code === "NODEEXISTS")) throw error;
      });
    }
    for (let k = 0; k < KEY_COUNT; k++) {
      await client.create(`${KEYS}/k${k}`).catch((error: unknown) => {
        if (!(error instanceof ZkError && error.code === "NODEEXISTS")) throw error;
      });
    }
  } finally {
    await client.close();
  }
}

async function sampleAll(cluster: ChaosCluster, atMs: number): Promise<ProcessSample[]> {
  const samples = await Promise.all(cluster.ids.map((id) => sampleServer(cluster, id, atMs)));
  return samples.filter((s): s is ProcessSample => s !== undefined);
}

export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const log = options.log ?? (() => undefined);
  const sampleMs = options.sampleMs ?? 5_000;
  const warmUpMs = options.warmUpMs ?? Math.min(60_000, options.durationMs / 5);
  const cluster = await ChaosCluster.start({ voters: options.voters, tickMs: TICK_MS, metrics: true, ...clusterNeeds(options.nemeses) });
  const started = performance.now();
  const now = () => performance.now() - started;
  try {
    await waitFor("a leader", () => cluster.agreedLeader(), 120_000);
    await prepareTree(cluster.connectString);
    const baseline = new Map((await sampleAll(cluster, now())).map((s) => [s.serverId, s] as const));
    log(`baseline: ${[...baseline.values()].map((s) => `server ${s.serverId} rss ${(s.rssBytes / 2 ** 20).toFixed(0)} MiB fds ${s.fds}`).join(", ")}`);

    const latency = new LatencyRecorder();
    latency.close(now());
    const steady: ProcessSample[] = [];
    const windows: LatencyWindow[] = [];
    let loadRunning = true;
    const sampler = (async () => {
      while (loadRunning) {
        await new Promise((resolve) => setTimeout(resolve, sampleMs));
        const at = now();
        const window = latency.close(at);
        const samples = await sampleAll(cluster, at);
        if (at < warmUpMs || !loadRunning) continue;
        windows.push(window);
        steady.push(...samples);
        log(
          `${(at / 1000).toFixed(0)} s: ${window.ok} ok, ${window.failed} failed, p99 ${window.p99Ms.toFixed(1)} ms; ` +
            samples.map((s) => `#${s.serverId} ${(s.rssBytes / 2 ** 20).toFixed(0)} MiB ${s.fds} fds ${s.sessions} sessions ${s.watches} watches`).join(", "),
        );
      }
    })();

    const nemesis = new Nemesis(cluster, {
      nemeses: options.nemeses,
      seed: options.seed,
      now,
      faultMs: [2_000, 6_000],
      quietMs: [4_000, 10_000],
      onFault: (fault) => {
        latency.fault(fault.endedAt === undefined ? 1 : -1);
        log(`${fault.endedAt === undefined ? "fault" : "healed"}: ${fault.description}`);
      },
    });
    const nemesisRun = options.nemeses.length > 0 ? nemesis.run() : Promise.resolve();
    const prng = new Prng(options.seed + 1);
    const counts = { sessions: 0 };
    let stopping = false;
    const workers = Array.from({ length: options.workers ?? 4 }, (_, w) => loadWorker(w, cluster.connectString, prng, latency, () => stopping, counts));

    await new Promise((resolve) => setTimeout(resolve, options.durationMs));
    nemesis.stop();
    await nemesisRun;
    stopping = true;
    loadRunning = false;
    await Promise.all(workers);
    await sampler;

    // Every client has closed; what killed connections left behind expires within a session timeout.
    const settled = new Map<number, ProcessSample>();
    await waitFor(
      "sessions, watches and ephemerals back to the baseline",
      async () => {
        for (const sample of await sampleAll(cluster, now())) settled.set(sample.serverId, sample);
        const back = [...baseline].every(([id, before]) => {
          const after = settled.get(id);
          return after !== undefined && after.sessions <= before.sessions && after.watches <= before.watches && after.ephemerals <= before.ephemerals;
        });
        return back ? true : undefined;
      },
      SETTLE_LIMIT_MS,
    ).catch(() => undefined); // the verdict below says what stayed behind

    const verdicts = judgeSoak({ steady, baseline, settled, windows }, { judgeLatency: options.judgeLatency });
    log(`p99 per window: median ${median(windows.map((w) => w.p99Ms)).toFixed(1)} ms`);
    return {
      valid: verdicts.every((v) => v.valid !== false),
      verdicts,
      steady,
      windows,
      sessionsOpened: counts.sessions,
      opsOk: latency.totalOk,
      opsFailed: latency.totalFailed,
      faults: nemesis.faults.length,
    };
  } finally {
    await cluster.stop();
  }
}
