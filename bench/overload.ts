/**
 * `npm run bench:overload`: one client's write storm against a real Apache ZooKeeper 3.8 and
 * against corral, in one invocation, and what it costs everybody else.
 *
 * For each system (ZooKeeper; corral through its ZooKeeper port; corral through its SDK), on a
 * fresh three-voter cluster on 127.0.0.1:
 *   1. capacity: a few clients (4 × 4 in flight by default) of large setData for the duration —
 *      what the cluster sustains when nobody overloads it;
 *   2. storm: many clients (64 × 64 in flight × 512 KiB by default) for the duration, while a
 *      bystander session does one 2-byte setData every 20 ms on its own znode through a follower;
 *      every server's RSS is sampled, and `srvr` is asked who leads in which epoch;
 *   3. afterwards: which servers are alive, and how long a new session takes to connect and read
 *      the bystander's last acknowledged write.
 * Load runs in child processes (bench/overload-worker.ts), so that the storm generator's CPU never
 * sits in the bystander's event loop. One JSON line per run on stdout; the table on stderr.
 */
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { CorralCluster, someFollower, waitWholeQuorum, ZooKeeperCluster, type ClusterUnderTest } from "./cluster-under-test.js";
import { fourLetterWord } from "../test/helpers/four-letter-word.js";
import { srvrMode } from "../test/helpers/zookeeper-ensemble.js";
import type { BenchTarget } from "./target.js";
import type { BystanderResult, ProbeResult, StormResult } from "./overload-worker.js";

const WORKER_JS = fileURLToPath(new URL("./overload-worker.js", import.meta.url));
const MiB = 1024 * 1024;
/** Storm clients per worker process. */
const CLIENTS_PER_WORKER = 16;

type RunName = "zookeeper" | "corral-zk" | "corral-sdk";
const RUNS: readonly RunName[] = ["zookeeper", "corral-zk", "corral-sdk"];

export const OVERLOAD_USAGE = `usage: npm run bench:overload -- [flags]

  --runs LIST            comma-separated: ${RUNS.join(",")}                 [all]
  --clients N            storm sessions                                              [64]
  --inflight K           storm requests in flight per session                        [64]
  --value-kib V          storm payload per setData, KiB                              [512]
  --znodes M             storm znodes                                                [64]
  --duration-s D         each phase's measured window                                [30]
  --capacity LIST        the capacity run's clients x in flight ("4x4"); "none" skips [4x4]
  --interval-ms I        the bystander's pace                                        [20]
  --tick-ms T            both clusters' tickTime                                     [2000]
  --trace-dir DIR        corral's servers log every write's hops (log level trace)
                         into DIR/<run>-server-<id>.log (an investigation: it slows them)
  --help`;

interface OverloadOptions {
  runs: RunName[];
  clients: number;
  inflight: number;
  valueBytes: number;
  znodes: number;
  durationS: number;
  capacity: { clients: number; inflight: number } | undefined;
  intervalMs: number;
  tickMs: number;
  traceDir: string | undefined;
}

export interface OverloadRow {
  run: RunName;
  capacityMiBps: number | null;
  stormMiBps: number;
  storm: StormResult;
  bystander: BystanderResult;
  probe: ProbeResult;
  peakRssMiB: Record<number, number>;
  leaderChanges: number;
  epochsSeen: number[];
  alive: number;
  servers: number;
}

function parseOptions(argv: string[]): OverloadOptions | "help" {
  const { values } = parseArgs({
    args: argv,
    options: {
      runs: { type: "string", default: RUNS.join(",") },
      clients: { type: "string", default: "64" },
      inflight: { type: "string", default: "64" },
      "value-kib": { type: "string", default: "512" },
      znodes: { type: "string", default: "64" },
      "duration-s": { type: "string", default: "30" },
      capacity: { type: "string", default: "4x4" },
      "interval-ms": { type: "string", default: "20" },
      "tick-ms": { type: "string", default: "2000" },
      "trace-dir": { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) return "help";
  const positive = (flag: string, text: string): number => {
    const n = Number(text);
    if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${flag} must be a positive integer, got "${text}"`);
    return n;
  };
  const runs = values.runs.split(",").map((r) => {
    if (!(RUNS as readonly string[]).includes(r)) throw new Error(`--runs: unknown run "${r}"`);
    return r as RunName;
  });
  let capacity: OverloadOptions["capacity"];
  if (values.capacity !== "none") {
    const match = /^(\d+)x(\d+)$/.exec(values.capacity);
    if (match === null) throw new Error(`--capacity must be CLIENTSxINFLIGHT or none, got "${values.capacity}"`);
    capacity = { clients: positive("capacity", match[1]!), inflight: positive("capacity", match[2]!) };
  }
  return {
    runs,
    clients: positive("clients", values.clients),
    inflight: positive("inflight", values.inflight),
    valueBytes: positive("value-kib", values["value-kib"]) * 1024,
    znodes: positive("znodes", values.znodes),
    durationS: positive("duration-s", values["duration-s"]),
    capacity,
    intervalMs: positive("interval-ms", values["interval-ms"]),
    tickMs: positive("tick-ms", values["tick-ms"]),
    traceDir: values["trace-dir"],
  };
}

function info(message: string): void {
  process.stderr.write(`[overload] ${message}\n`);
}

/**
 * A worker still running this long after its own deadline is killed: a client library can hang for
 * good once its servers die (node-zookeeper-client's did, for 20 minutes, after ZooKeeper's
 * OutOfMemoryErrors), and the table should still come out, saying so.
 */
const WORKER_GRACE_MS = 120_000;

/** Runs one worker process to its end; its last stdout line is its result, or undefined if it had to be killed after `limitMs`. */
function worker<T>(args: string[], limitMs: number): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    // The storm's buffers are off-heap, but node-zookeeper-client copies each request on the heap.
    const child = spawn(process.execPath, ["--max-old-space-size=8192", WORKER_JS, ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      info(`worker ${args.slice(0, 2).join(" ")} still running after ${Math.round(limitMs / 1000)} s: killed`);
      child.kill("SIGKILL");
    }, limitMs);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => (out += chunk));
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      const last = out.trim().split("\n").at(-1) ?? "";
      if (killed) resolve(undefined);
      else if (code !== 0 || last === "") reject(new Error(`worker ${args.join(" ")} exited ${code}`));
      else resolve(JSON.parse(last) as T);
    });
  });
}

function rssMiB(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match === null ? undefined : Number(match[1]) / 1024;
  } catch {
    return undefined;
  }
}

/** Samples every server's RSS and the epochs its `srvr` reports, until stopped. */
class ClusterSampler {
  readonly peakRssMiB: Record<number, number> = {};
  readonly epochs = new Set<number>();
  private stopped = false;
  private readonly done: Promise<void>;

  constructor(private readonly cluster: ClusterUnderTest) {
    this.done = Promise.all([this.sampleRss(), this.sampleLeaders()]).then(() => undefined);
  }

  private async sampleRss(): Promise<void> {
    while (!this.stopped) {
      for (const id of this.cluster.serverIds) {
        const pid = this.cluster.pid(id);
        const rss = pid === undefined ? undefined : rssMiB(pid);
        if (rss !== undefined) this.peakRssMiB[id] = Math.max(this.peakRssMiB[id] ?? 0, rss);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  private async sampleLeaders(): Promise<void> {
    while (!this.stopped) {
      await Promise.all(
        this.cluster.serverIds
          .filter((id) => this.cluster.running(id))
          .map(async (id) => {
            const host = this.cluster.zkHost(id);
            const answer = await fourLetterWord(Number(host.slice(host.lastIndexOf(":") + 1)), "srvr", 1_500).catch(() => "");
            const zxid = /^Zxid: 0x([0-9a-f]+)$/m.exec(answer)?.[1];
            if (srvrMode(answer) !== undefined && zxid !== undefined) this.epochs.add(Number(BigInt(`0x${zxid}`) >> 32n));
          }),
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }
}

async function prepare(target: BenchTarget, host: string, znodes: string[], bystanderPath: string): Promise<void> {
  const connection = await target.connect(host, { sessionTimeoutMs: 10_000 });
  try {
    for (const path of ["/overload", "/overload/storm", ...znodes, bystanderPath]) await connection.create(path, new Uint8Array(0));
  } finally {
    await connection.close();
  }
}

async function runOne(run: RunName, options: OverloadOptions): Promise<OverloadRow> {
  info(`${run}: starting a three-server cluster`);
  const cluster: ClusterUnderTest =
    run === "zookeeper"
      ? await ZooKeeperCluster.start({ tickMs: options.tickMs, zooKeeperConfig: ["maxClientCnxns=0"] })
      : await CorralCluster.start({ tickMs: options.tickMs, ...(options.traceDir === undefined ? {} : { logLevel: "trace" }) });
  const onExit = () => cluster.killNowAndRemove();
  process.once("exit", onExit);
  try {
    await waitWholeQuorum(cluster);
    const sdk = run === "corral-sdk";
    const hostOf = (id: number) => (sdk ? cluster.sdkHost(id)! : cluster.zkHost(id));
    const hosts = cluster.serverIds.map(hostOf);
    const target: BenchTarget = sdk
      ? (await import("./targets/corral.js")).corralTarget
      : (await import("./targets/zookeeper.js")).createZookeeperTarget({ spinDelayMs: 100 });
    const targetName = sdk ? "corral" : "zookeeper";
    const znodes = Array.from({ length: options.znodes }, (_, i) => `/overload/storm/n${i}`);
    const bystanderPath = "/overload/bystander";
    await prepare(target, hosts[0]!, znodes, bystanderPath);
    const follower = (await someFollower(cluster)) ?? cluster.serverIds[0]!;
    const runMs = options.durationS * 1000 + WORKER_GRACE_MS;
    const hungStorm = (clients: number, inflight: number): StormResult => ({
      role: "storm",
      clients,
      inflight,
      valueBytes: options.valueBytes,
      durationS: options.durationS,
      acked: 0,
      ackedBytes: 0,
      unanswered: 0,
      errors: { "worker hung, killed": clients },
      connectFailures: 0,
    });
    const stormWorkers = (clients: number, inflight: number) => {
      const workers: Promise<StormResult>[] = [];
      for (let first = 0; first < clients; first += CLIENTS_PER_WORKER) {
        const count = Math.min(CLIENTS_PER_WORKER, clients - first);
        // Rotate the hosts so that client i goes to server i % 3 across all workers.
        const rotated = hosts.map((_, i) => hosts[(first + i) % hosts.length]!);
        const args = [
          ...["--role", "storm", "--target", targetName, "--hosts", rotated.join(",")],
          ...["--clients", String(count), "--inflight", String(inflight), "--value-bytes", String(options.valueBytes)],
          ...["--znodes", znodes.join(","), "--duration-s", String(options.durationS)],
        ];
        workers.push(worker<StormResult>(args, runMs).then((result) => result ?? hungStorm(count, inflight)));
      }
      return Promise.all(workers);
    };
    const merge = (results: StormResult[]): StormResult =>
      results.reduce((sum, r) => ({
        ...sum,
        clients: sum.clients + r.clients,
        acked: sum.acked + r.acked,
        ackedBytes: sum.ackedBytes + r.ackedBytes,
        unanswered: sum.unanswered + r.unanswered,
        connectFailures: sum.connectFailures + r.connectFailures,
        errors: Object.fromEntries(
          [...new Set([...Object.keys(sum.errors), ...Object.keys(r.errors)])].map((k) => [k, (sum.errors[k] ?? 0) + (r.errors[k] ?? 0)]),
        ),
      }));

    let capacityMiBps: number | null = null;
    if (options.capacity !== undefined) {
      info(`${run}: capacity, ${options.capacity.clients} × ${options.capacity.inflight} × ${options.valueBytes / 1024} KiB for ${options.durationS} s`);
      const capacity = merge(await stormWorkers(options.capacity.clients, options.capacity.inflight));
      capacityMiBps = capacity.ackedBytes / MiB / options.durationS;
      info(`${run}: capacity ${capacityMiBps.toFixed(1)} MiB/s`);
    }

    info(
      `${run}: storm, ${options.clients} × ${options.inflight} × ${options.valueBytes / 1024} KiB for ${options.durationS} s, bystander on server ${follower}`,
    );
    const sampler = new ClusterSampler(cluster);
    const [stormResults, bystander] = await Promise.all([
      stormWorkers(options.clients, options.inflight),
      worker<BystanderResult>(
        [
          ...["--role", "bystander", "--target", targetName, "--hosts", hostOf(follower)],
          ...["--path", bystanderPath, "--interval-ms", String(options.intervalMs), "--duration-s", String(options.durationS)],
        ],
        runMs,
      ).then(
        (result): BystanderResult =>
          result ?? { role: "bystander", ok: 0, failed: 0, errors: { "worker hung, killed": 1 }, p50Ms: null, p99Ms: null, maxMs: null, lastAcked: "" },
      ),
    ]);
    const storm = merge(stormResults);
    const probeLimitMs = 20_000;
    const probeResult: ProbeResult = (await worker<ProbeResult>(
      ["--role", "probe", "--target", targetName, "--hosts", hostOf(follower), "--path", bystanderPath, "--limit-ms", String(probeLimitMs)],
      probeLimitMs + WORKER_GRACE_MS,
    )) ?? { role: "probe", connectMs: null, readMs: null, value: null, error: "worker hung, killed" };
    await sampler.stop();
    const epochsSeen = [...sampler.epochs].sort((a, b) => a - b);
    const row: OverloadRow = {
      run,
      capacityMiBps,
      stormMiBps: storm.ackedBytes / MiB / options.durationS,
      storm,
      bystander,
      probe: probeResult,
      peakRssMiB: sampler.peakRssMiB,
      leaderChanges: Math.max(0, epochsSeen.length - 1),
      epochsSeen,
      alive: cluster.serverIds.filter((id) => cluster.running(id)).length,
      servers: cluster.serverIds.length,
    };
    process.stdout.write(`${JSON.stringify(row)}\n`);
    return row;
  } finally {
    await cluster.stop();
    process.off("exit", onExit);
    if (options.traceDir !== undefined && cluster instanceof CorralCluster) {
      mkdirSync(options.traceDir, { recursive: true });
      for (const id of cluster.serverIds) writeFileSync(join(options.traceDir, `${run}-server-${id}.log`), cluster.logOf(id));
    }
  }
}

function formatRows(rows: OverloadRow[], options: OverloadOptions): string {
  const fmt = (n: number | null, digits = 1) => (n === null ? "–" : n.toFixed(digits));
  const header = `storm ${options.clients} × ${options.inflight} × ${options.valueBytes / 1024} KiB for ${options.durationS} s; bystander one 2-byte setData every ${options.intervalMs} ms`;
  const lines = [
    header,
    "",
    "| run | capacity MiB/s | storm MiB/s | storm acked / errors | bystander ok / failed | bystander p50 / p99 / max ms | peak RSS MiB per server | leader changes | alive | new session → read ms | read value = last acked |",
    "|---|---:|---:|---|---|---|---|---:|---|---:|---|",
  ];
  for (const row of rows) {
    const errors = Object.entries(row.storm.errors)
      .map(([label, n]) => `${label} ${n}`)
      .join(", ");
    const rss = Object.entries(row.peakRssMiB)
      .map(([id, mib]) => `${id}: ${mib.toFixed(0)}`)
      .join(", ");
    lines.push(
      `| ${row.run} | ${fmt(row.capacityMiBps)} | ${fmt(row.stormMiBps)} | ${row.storm.acked} / ${errors === "" ? "0" : errors} | ${row.bystander.ok} / ${row.bystander.failed} | ${fmt(row.bystander.p50Ms)} / ${fmt(row.bystander.p99Ms)} / ${fmt(row.bystander.maxMs)} | ${rss} | ${row.leaderChanges} | ${row.alive} of ${row.servers} | ${fmt(row.probe.readMs, 0)} | ${row.probe.value === row.bystander.lastAcked ? "yes" : `no (${row.probe.value ?? row.probe.error})`} |`,
    );
  }
  return lines.join("\n");
}

async function main(): Promise<number> {
  let options: OverloadOptions | "help";
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n\n${OVERLOAD_USAGE}\n`);
    return 2;
  }
  if (options === "help") {
    process.stdout.write(`${OVERLOAD_USAGE}\n`);
    return 0;
  }
  const rows: OverloadRow[] = [];
  for (const run of options.runs) rows.push(await runOne(run, options));
  process.stderr.write(`\n${formatRows(rows, options)}\n`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
