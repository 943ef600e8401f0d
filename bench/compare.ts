/**
 * `npm run bench:compare`: corral against a real Apache ZooKeeper 3.8, on this machine, in one
 * invocation. Starts a three-server ZooKeeper ensemble (Debian's package, three JVMs) and a
 * three-voter corral (three `corral server` processes), both on 127.0.0.1 with fsync on and the
 * same tickTime, and runs rep after rep of each scenario against one system then the other,
 * alternating which goes first. Every measurement runs the same load generator: a child
 * `node dist/bench/run.js` for throughput and latency, measureFailover (bench/failover.ts) for
 * failover. stdout carries one JSON line per measurement; progress and, at the end, the markdown
 * table of medians, ranges and ratios go to stderr (and to --table-out FILE). See bench/README.md.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { CorralCluster, someFollower, poll, waitWholeQuorum, ZooKeeperCluster, type ClusterUnderTest } from "./cluster-under-test.js";
import { formatTable, isScenarioName, rowSpecs, SCENARIOS, tableRows, type ClientName, type Measurement, type ScenarioName } from "./compare-report.js";
import { isWorkloadName, WORKLOADS, type WorkloadName } from "./driver.js";
import { measureFailover, restartAndRejoin } from "./failover.js";
import { createZookeeperTarget } from "./targets/zookeeper.js";
import { assertZooKeeperInstalled, JAVA } from "../test/helpers/real-zookeeper.js";

const RUN_JS = fileURLToPath(new URL("./run.js", import.meta.url));
const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

export const COMPARE_USAGE = `usage: npm run bench:compare -- [flags]     (or: node dist/bench/compare.js [flags])

Starts a three-server ZooKeeper 3.8 (Debian's package) and a three-voter corral on 127.0.0.1
(free ports, temporary data dirs, fsync on, the same tickTime), then runs each scenario against
both, rep after rep, alternating which system goes first. One JSON line per measurement on
stdout; progress and the table (medians [min–max], ratio corral / ZooKeeper) on stderr.

  --reps N                 repetitions of every scenario                                  [3]
  --scenarios LIST         comma-separated: ${SCENARIOS.join(",")}            [all]
  --tick-ms MS             tickTime of both clusters (ZooKeeper's tickTime, corral's tickMs) [2000]
  --warmup-s S             warm-up per workload, not measured                             [2]
  --duration-s S           measured window per workload                                   [10]
  --workloads LIST         throughput workloads: ${WORKLOADS.join(",")}  [all]
  --connections N          throughput: client connections, spread over the 3 servers      [8]
  --inflight K             throughput: requests in flight per connection                  [16]
  --value-bytes B          payload of every create / setData                              [100]
  --keys N                 key space for getData / setData                                [1000]
  --read-percent P         getData share of "mixed"                                       [90]
  --writes-before-kill N   failover: acknowledged writes through the follower before the kill [200]
  --spin-delay-ms MS       failover: node-zookeeper-client's reconnect back-off (spinDelay)  [50]
  --prime-s S              before rep 1, each throughput workload for S s against each system
                           through node-zookeeper-client, not recorded (JIT warm-up); 0: none [5]
  --without-sdk            skip the "corral (SDK)" runs (throughput and latency)
  --json-out FILE          also append the JSON lines to FILE
  --table-out FILE         also write the table (with the machine line) to FILE
  --verbose                pass the load generator's progress lines through to stderr
  --help`;

interface CompareOptions {
  reps: number;
  scenarios: ScenarioName[];
  tickMs: number;
  warmupS: number;
  durationS: number;
  workloads: WorkloadName[];
  connections: number;
  inflight: number;
  valueBytes: number;
  keys: number;
  readPercent: number;
  writesBeforeKill: number;
  spinDelayMs: number;
  primeS: number;
  withSdk: boolean;
  jsonOut: string | undefined;
  tableOut: string | undefined;
  verbose: boolean;
  help: boolean;
}

function positiveInteger(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`--${flag} must be a positive integer, got "${text}"`);
  return value;
}

function nonNegativeNumber(flag: string, text: string): number {
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value) || value < 0) throw new Error(`--${flag} must be a number ≥ 0, got "${text}"`);
  return value;
}

function list(text: string): string[] {
  return [
    ...new Set(
      text
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s.length > 0),
    ),
  ];
}

export function parseCompareArgs(argv: readonly string[]): CompareOptions {
  const { values, positionals } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: true,
    options: {
      reps: { type: "string", default: "3" },
      scenarios: { type: "string", default: SCENARIOS.join(",") },
      "tick-ms": { type: "string", default: "2000" },
      "warmup-s": { type: "string", default: "2" },
      "duration-s": { type: "string", default: "10" },
      workloads: { type: "string", default: WORKLOADS.join(",") },
      connections: { type: "string", default: "8" },
      inflight: { type: "string", default: "16" },
      "value-bytes": { type: "string", default: "100" },
      keys: { type: "string", default: "1000" },
      "read-percent": { type: "string", default: "90" },
      "writes-before-kill": { type: "string", default: "200" },
      "spin-delay-ms": { type: "string", default: "50" },
      "prime-s": { type: "string", default: "5" },
      "without-sdk": { type: "boolean", default: false },
      "json-out": { type: "string" },
      "table-out": { type: "string" },
      verbose: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (positionals.length > 0) throw new Error(`unexpected argument: ${positionals[0]}`);
  const scenarios = list(values.scenarios);
  for (const name of scenarios) {
    if (!isScenarioName(name)) throw new Error(`unknown scenario "${name}"; known: ${SCENARIOS.join(", ")}`);
  }
  if (scenarios.length === 0) throw new Error("--scenarios is empty");
  const workloads = list(values.workloads);
  for (const name of workloads) {
    if (!isWorkloadName(name)) throw new Error(`unknown workload "${name}"; known: ${WORKLOADS.join(", ")}`);
  }
  if (workloads.length === 0) throw new Error("--workloads is empty");
  const durationS = nonNegativeNumber("duration-s", values["duration-s"]);
  if (durationS === 0) throw new Error("--duration-s must be > 0");
  const readPercent = nonNegativeNumber("read-percent", values["read-percent"]);
  if (readPercent > 100) throw new Error("--read-percent must be ≤ 100");
  const valueBytes = Number(values["value-bytes"]);
  if (!Number.isSafeInteger(valueBytes) || valueBytes < 0) throw new Error(`--value-bytes must be an integer ≥ 0`);
  return {
    reps: positiveInteger("reps", values.reps),
    // Keep SCENARIOS' order whatever order the flag lists them in.
    scenarios: SCENARIOS.filter((s) => scenarios.includes(s)),
    tickMs: positiveInteger("tick-ms", values["tick-ms"]),
    warmupS: nonNegativeNumber("warmup-s", values["warmup-s"]),
    durationS,
    workloads: workloads as WorkloadName[],
    connections: positiveInteger("connections", values.connections),
    inflight: positiveInteger("inflight", values.inflight),
    valueBytes,
    keys: positiveInteger("keys", values.keys),
    readPercent,
    writesBeforeKill: positiveInteger("writes-before-kill", values["writes-before-kill"]),
    spinDelayMs: nonNegativeNumber("spin-delay-ms", values["spin-delay-ms"]),
    primeS: nonNegativeNumber("prime-s", values["prime-s"]),
    withSdk: !values["without-sdk"],
    jsonOut: values["json-out"],
    tableOut: values["table-out"],
    verbose: values.verbose,
    help: values.help,
  };
}

function info(message: string): void {
  process.stderr.write(`[bench compare] ${message}\n`);
}

// ---------------------------------------------------------------------------------------------
// Clusters and child processes, torn down on every way out (error, Ctrl-C, exit).

const clusters: ClusterUnderTest[] = [];
const starting: Promise<unknown>[] = [];
let currentChild: ChildProcess | undefined;
let stopping: Promise<void> | undefined;
let stopped = false;

/** Stops every cluster (once, however often it is called) and removes their data. */
function stopAll(): Promise<void> {
  stopping ??= (async () => {
    currentChild?.kill("SIGKILL");
    await Promise.allSettled(starting);
    await Promise.allSettled(clusters.map((c) => c.stop()));
    stopped = true;
  })();
  return stopping;
}

process.once("exit", () => {
  currentChild?.kill("SIGKILL");
  if (stopped) return;
  for (const cluster of clusters) {
    try {
      cluster.killNowAndRemove();
    } catch {
      // best effort on the way out
    }
  }
});

let interrupted = false;
function onSignal(): void {
  if (interrupted) process.exit(130);
  interrupted = true;
  info("interrupted: stopping both clusters and removing their data (interrupt again to quit at once)");
  void stopAll().finally(() => process.exit(130));
}

/** Runs the load generator once; resolves with its JSON lines. */
function runLoad(args: string[], verbose: boolean): Promise<Record<string, unknown>[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [RUN_JS, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    currentChild = child;
    let stdout = "";
    let stderrTail = "";
    child.stdout.setEncoding("utf8");
    child.stderr.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => (stdout += chunk));
    child.stderr.on("data", (chunk: string) => {
      if (verbose) process.stderr.write(chunk);
      stderrTail = (stderrTail + chunk).slice(-4_000);
    });
    child.once("error", reject);
    child.once("close", (code, signal) => {
      if (currentChild === child) currentChild = undefined;
      if (code !== 0) {
        reject(new Error(`run.js ${args.join(" ")} exited with ${code ?? signal}\n${stderrTail}`));
        return;
      }
      try {
        resolve(
          stdout
            .split("\n")
            .filter((l) => l.trim().length > 0)
            .map((l) => JSON.parse(l) as Record<string, unknown>),
        );
      } catch (error) {
        reject(new Error(`run.js printed something other than JSON lines: ${(error as Error).message}`));
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Scenarios

interface Subject {
  cluster: ClusterUnderTest;
  client: ClientName;
}

/** "zookeeper via node-zookeeper-client" etc., for progress lines. */
function describe(subject: Subject): string {
  return `${subject.cluster.system} via ${subject.client}`;
}

function hostOf(subject: Subject, id: number): string {
  if (subject.client === "node-zookeeper-client") return subject.cluster.zkHost(id);
  const host = subject.cluster.sdkHost(id);
  if (host === undefined) throw new Error(`${subject.cluster.system} has no SDK port`);
  return host;
}

function commonLoadArgs(options: CompareOptions, seed: number, window = { warmupS: options.warmupS, durationS: options.durationS }): string[] {
  return [
    "--warmup-s",
    String(window.warmupS),
    "--duration-s",
    String(window.durationS),
    "--value-bytes",
    String(options.valueBytes),
    "--keys",
    String(options.keys),
    "--read-percent",
    String(options.readPercent),
    "--seed",
    String(seed),
  ];
}

function summaryOf(line: Record<string, unknown>): string {
  const ms = (v: unknown): string => (typeof v === "number" ? v.toFixed(3) : "—");
  return `${String(line.workload)}: ${String(line.opsPerSec)} ops/s, p50 ${ms(line.p50Ms)} p99 ${ms(line.p99Ms)} p99.9 ${ms(line.p999Ms)} ms, ${String(line.errors)} errors`;
}

type Recorder = (measurement: Measurement) => void;

async function throughput(subject: Subject, rep: number, seed: number, options: CompareOptions, record: Recorder): Promise<void> {
  const { cluster } = subject;
  const hosts = cluster.serverIds.map((id) => hostOf(subject, id));
  info(`rep ${rep} throughput: ${describe(subject)}, ${options.connections}×${options.inflight} over ${hosts.join(",")}`);
  const lines = await runLoad(
    [
      "--target",
      subject.client === "corral-sdk" ? "corral" : "zookeeper",
      "--connect",
      hosts.join(","),
      "--connections",
      String(options.connections),
      "--inflight",
      String(options.inflight),
      "--workloads",
      options.workloads.join(","),
      ...commonLoadArgs(options, seed),
    ],
    options.verbose,
  );
  for (const line of lines) {
    info(`  ${summaryOf(line)}`);
    record({ system: cluster.system, client: subject.client, scenario: "throughput", rep, ...line, workload: String(line.workload) });
  }
}

/**
 * The throughput workloads once, unrecorded, so that a freshly started JVM has compiled
 * ZooKeeper's hot paths (and V8 corral's) before the first measured rep.
 */
async function prime(cluster: ClusterUnderTest, options: CompareOptions): Promise<void> {
  const hosts = cluster.serverIds.map((id) => cluster.zkHost(id));
  info(`priming ${cluster.system}: ${options.workloads.join(", ")} for ${options.primeS} s each through node-zookeeper-client (not recorded)`);
  await runLoad(
    [
      "--target",
      "zookeeper",
      "--connect",
      hosts.join(","),
      "--connections",
      String(options.connections),
      "--inflight",
      String(options.inflight),
      "--workloads",
      options.workloads.join(","),
      ...commonLoadArgs(options, 1, { warmupS: 0, durationS: options.primeS }),
    ],
    options.verbose,
  );
}

async function latency(subject: Subject, rep: number, seed: number, options: CompareOptions, record: Recorder): Promise<void> {
  const { cluster } = subject;
  const follower = await poll(`a follower of ${cluster.system}`, () => someFollower(cluster), 60_000);
  const host = hostOf(subject, follower);
  info(`rep ${rep} latency: ${describe(subject)}, 1×1 through follower ${follower} (${host})`);
  const lines = await runLoad(
    [
      "--target",
      subject.client === "corral-sdk" ? "corral" : "zookeeper",
      "--connect",
      host,
      "--connections",
      "1",
      "--inflight",
      "1",
      "--workloads",
      "setData,getData",
      ...commonLoadArgs(options, seed),
    ],
    options.verbose,
  );
  for (const line of lines) {
    info(`  ${summaryOf(line)}`);
    record({ system: cluster.system, client: subject.client, scenario: "latency", rep, ...line, workload: String(line.workload), server: follower });
  }
}

async function failover(subject: Subject, rep: number, options: CompareOptions, record: Recorder): Promise<void> {
  const { cluster } = subject;
  const target = createZookeeperTarget({ spinDelayMs: options.spinDelayMs });
  // ZooKeeper's largest session timeout (20 ticks): the session must outlive the election.
  const sessionTimeoutMs = options.tickMs * 20;
  info(`rep ${rep} failover: ${describe(subject)}, 1×1 setData through a follower, kill -9 of the leader after ${options.writesBeforeKill} writes`);
  const result = await measureFailover(cluster, (id) => target.connect(hostOf(subject, id), { sessionTimeoutMs }), {
    run: rep,
    writesBeforeKill: options.writesBeforeKill,
  });
  info(
    `  killed leader ${result.killedLeader}, server ${result.newLeader} leads; first write after the kill ${result.failoverMs} ms ` +
      `(${result.failedWritesDuringFailover} failed writes); restarting server ${result.killedLeader}`,
  );
  record({
    system: cluster.system,
    client: subject.client,
    scenario: "failover",
    workload: "failover",
    rep,
    ...result,
    tickMs: options.tickMs,
    spinDelayMs: options.spinDelayMs,
  });
  const restartedAt = Date.now();
  await restartAndRejoin(cluster, result.killedLeader);
  info(`  server ${result.killedLeader} serves again and the leader counts it synced (${Date.now() - restartedAt} ms)`);
}

// ---------------------------------------------------------------------------------------------
// The machine line

function machineLine(zookeeperVersion: string): string {
  const model = /^model name\s*:\s*(.+)$/m.exec(readTextOr("/proc/cpuinfo", ""))?.[1] ?? cpus()[0]?.model ?? "unknown CPU";
  const memoryGiB = Math.round(totalmem() / 2 ** 30);
  const corralVersion = (JSON.parse(readTextOr(`${REPO_ROOT}package.json`, "{}")) as { version?: string }).version ?? "?";
  let commit: string;
  try {
    commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: REPO_ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], {
      cwd: REPO_ROOT,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    if (dirty.trim().length > 0) commit += "+changes";
  } catch {
    commit = "no git";
  }
  return (
    `machine: ${cpus().length} cores, ${model}, ${memoryGiB} GiB; node ${process.version}; ` +
    `ZooKeeper ${/^[0-9.]+/.exec(zookeeperVersion)?.[0] ?? zookeeperVersion} (Debian's package, Java ${javaVersion()}); corral ${corralVersion} (${commit}); ${new Date().toISOString()}`
  );
}

/** "17.0.15" from `java -version` (which writes to stderr), or "?". */
function javaVersion(): string {
  const result = spawnSync(JAVA, ["-version"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  return /version "([^"]+)"/.exec(`${result.stdout ?? ""}${result.stderr ?? ""}`)?.[1] ?? "?";
}

function readTextOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return fallback;
  }
}

function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
}

// ---------------------------------------------------------------------------------------------

async function main(argv: readonly string[]): Promise<number> {
  let options: CompareOptions;
  try {
    options = parseCompareArgs(argv);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${COMPARE_USAGE}\n`);
    return 2;
  }
  if (options.help) {
    process.stdout.write(`${COMPARE_USAGE}\n`);
    return 0;
  }
  if (!existsSync(RUN_JS)) {
    process.stderr.write(`${RUN_JS} is missing: build first (npm run build)\n`);
    return 2;
  }
  try {
    assertZooKeeperInstalled();
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return 2;
  }
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  info(`starting three ZooKeeper 3.8 servers and three corral voters on 127.0.0.1, tickTime ${options.tickMs} ms, fsync on`);
  const zookeeperStart = ZooKeeperCluster.start({ tickMs: options.tickMs }).then((c) => (clusters.push(c), c));
  const corralStart = CorralCluster.start({ tickMs: options.tickMs }).then((c) => (clusters.push(c), c));
  starting.push(zookeeperStart, corralStart);
  const measurements: Measurement[] = [];
  let failure: unknown;
  let machine = "";
  const loadBefore = loadAverage();
  try {
    const [zookeeper, corral] = await Promise.all([zookeeperStart, corralStart]);
    await Promise.all([waitWholeQuorum(zookeeper), waitWholeQuorum(corral)]);
    machine = machineLine(zookeeper.version);
    info(machine);
    info(
      `serving: ZooKeeper ${zookeeper.serverIds.map((id) => zookeeper.zkHost(id)).join(",")}; ` +
        `corral ${corral.serverIds.map((id) => `${corral.zkHost(id)} (SDK ${corral.sdkHost(id)})`).join(",")}`,
    );
    const record = (measurement: Measurement): void => {
      measurements.push(measurement);
      const line = JSON.stringify(measurement);
      process.stdout.write(`${line}\n`);
      if (options.jsonOut !== undefined) appendFileSync(options.jsonOut, `${line}\n`);
    };
    const subjects = (scenario: ScenarioName): Subject[] => {
      const list: Subject[] = [
        { cluster: zookeeper, client: "node-zookeeper-client" },
        { cluster: corral, client: "node-zookeeper-client" },
      ];
      if (scenario !== "failover" && options.withSdk) list.push({ cluster: corral, client: "corral-sdk" });
      return list;
    };
    if (options.primeS > 0 && options.scenarios.some((s) => s !== "failover")) {
      for (const cluster of [zookeeper, corral]) await prime(cluster, options);
    }
    for (let rep = 1; rep <= options.reps; rep++) {
      // One seed per rep: within a rep every system and client draws the same keys.
      const seed = Math.floor(Math.random() * 2 ** 32);
      info(`rep ${rep} of ${options.reps} (seed ${seed}; ${rep % 2 === 1 ? "ZooKeeper" : "corral"} first; load average ${loadAverage()})`);
      for (const scenario of options.scenarios) {
        const order = subjects(scenario);
        // Alternate which system goes first, so neither always runs on the warmer (or busier) machine.
        if (rep % 2 === 0) order.reverse();
        for (const subject of order) {
          const before = measurements.length;
          if (scenario === "throughput") await throughput(subject, rep, seed, options, record);
          else if (scenario === "latency") await latency(subject, rep, seed, options, record);
          else await failover(subject, rep, options, record);
          if (measurements.length === before) throw new Error(`rep ${rep} ${scenario}: ${describe(subject)} gave no measurement`);
        }
      }
    }
  } catch (error) {
    if (interrupted) throw error;
    // Hours of measurements are not thrown away for one failure: the table shows what was measured.
    failure = error;
    info(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  } finally {
    await stopAll();
  }
  if (measurements.length === 0) return 1;
  const rows = tableRows(
    measurements,
    rowSpecs({ scenarios: options.scenarios, workloads: options.workloads, connections: options.connections, inflight: options.inflight }),
  );
  const scenarioNotes = {
    throughput: `throughput ${options.connections}×${options.inflight} spread over the 3 servers`,
    latency: "latency 1×1 through a follower",
    failover: `failover 1×1 setData through a follower (node-zookeeper-client, spinDelay ${options.spinDelayMs} ms)`,
  };
  const settings =
    `${options.reps} reps, tickTime ${options.tickMs} ms, ${options.warmupS} s warm-up + ${options.durationS} s per workload, ` +
    `${options.valueBytes}-byte values over ${options.keys} keys; ` +
    `${options.primeS > 0 && options.scenarios.some((s) => s !== "failover") ? `primed ${options.primeS} s per workload; ` : ""}` +
    `${options.scenarios.map((s) => scenarioNotes[s]).join("; ")}; ` +
    `load average ${loadBefore} before, ${loadAverage()} after`;
  const legend =
    'Cells: median [min–max] over the reps. Ratios: corral / ZooKeeper of the medians; "better" says which way is better ' +
    '(a ratio > 1 favours corral on "higher" rows, < 1 on "lower" rows). "corral" is its ZooKeeper-protocol port through ' +
    'node-zookeeper-client, the same client as ZooKeeper\'s column; "ahead" names a system only when every rep of it beat every rep of the other.';
  const incomplete = failure === undefined ? "" : "INCOMPLETE: the run failed before it finished; the table holds only what was measured\n";
  const table = `${incomplete}${machine}\n${settings}\n\n${formatTable(rows, { withSdk: options.withSdk && !options.scenarios.every((s) => s === "failover") })}\n\n${legend}\n`;
  process.stderr.write(`\n${table}`);
  if (options.tableOut !== undefined) writeFileSync(options.tableOut, table);
  if (failure !== undefined) info("the run failed before it finished (see above): the table holds only what was measured");
  return failure === undefined ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (!interrupted) process.stderr.write(`[bench compare] ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    // The exit handler kills whatever is still running; stopAll already ran in main's finally.
    process.exit(interrupted ? 130 : 1);
  },
);
