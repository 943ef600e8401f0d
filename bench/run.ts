/**
 * `npm run bench -- [flags]`: the load generator's command line. See bench/README.md and USAGE.
 * stdout carries only the JSON result lines; everything else goes to stderr.
 */
import { setMaxListeners } from "node:events";
import { appendFileSync } from "node:fs";
import { realClock, seededRandom } from "./clock.js";
import { cleanup, prepareKeySpace, resultLine, WorkloadRun, type WorkloadResult } from "./driver.js";
import { parseBenchArgs, USAGE, type BenchOptions } from "./options.js";
import { closeAll, connectAll } from "./connect.js";
import type { BenchConnection, BenchTarget } from "./target.js";
import type { ClientTlsOptions } from "../src/index.js";
import { dropIpServerNameWarning } from "../src/cli/quiet-warnings.js";
import { readClientTls } from "../src/cli/tls-options.js";

/** Adapters, loaded lazily so that one whose client library is missing does not break the others. */
const TARGETS: Record<string, () => Promise<BenchTarget>> = {
  corral: async () => (await import("./targets/corral.js")).corralTarget,
  zookeeper: async () => (await import("./targets/zookeeper.js")).zookeeperTarget,
};

const SETUP_INFLIGHT_MIN = 32;

function info(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

function describeExtras(result: WorkloadResult): string {
  const parts = [`warm-up ops ${result.warmupOps}`, `late ops ${result.lateOps}`];
  if (result.warmupErrors > 0) parts.push(`warm-up errors ${result.warmupErrors}`);
  const labels = Object.entries(result.errorsByLabel);
  if (labels.length > 0) parts.push(`errors ${labels.map(([label, n]) => `${label}×${n}`).join(" ")}`);
  if (result.histogram.count > 0) {
    parts.push(`mean ${(result.histogram.meanUs / 1000).toFixed(3)} ms`, `max ${(result.histogram.maxUs / 1000).toFixed(3)} ms`);
  }
  if (result.stuckRequests > 0) parts.push(`STUCK ${result.stuckRequests} requests`);
  return parts.join(", ");
}

async function main(argv: readonly string[]): Promise<number> {
  if (argv.includes("--failover")) return (await import("./failover.js")).runFailoverBench(argv);
  let options: BenchOptions;
  try {
    options = parseBenchArgs(argv);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n\n${USAGE}\n`);
    return 2;
  }
  if (options.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const loadTarget = TARGETS[options.target];
  if (loadTarget === undefined) {
    process.stderr.write(`unknown --target "${options.target}"; known: ${Object.keys(TARGETS).join(", ")}\n`);
    return 2;
  }
  let tls: ClientTlsOptions | undefined;
  if (options.tls !== undefined) {
    if (options.target !== "corral") {
      process.stderr.write(`--tls: only --target corral speaks TLS (node-zookeeper-client has no TLS)\n`);
      return 2;
    }
    try {
      tls = readClientTls(options.tls);
    } catch (error) {
      process.stderr.write(`${(error as Error).message}\n`);
      return 2;
    }
    dropIpServerNameWarning();
  }

  const abort = new AbortController();
  // Every slot backing off sleeps on this signal; the timers remove their listeners as they fire.
  setMaxListeners(0, abort.signal);
  let interrupts = 0;
  const onSignal = (): void => {
    interrupts++;
    if (interrupts === 1) {
      info("interrupted: stopping the current workload, then cleaning up (interrupt again to quit at once)");
      abort.abort();
    } else {
      process.exit(130);
    }
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  const target = await loadTarget();
  const random = seededRandom(options.seed);
  const runId = Math.floor(Math.random() * 2 ** 32)
    .toString(16)
    .padStart(8, "0");
  info(
    `target ${target.name}${tls === undefined ? "" : " over TLS"} at ${options.hosts.join(",")}: ${options.connections} connections × ${options.inflight} in flight, ` +
      `warm-up ${options.warmupS} s, measure ${options.durationS} s, ${options.valueBytes}-byte values over ${options.keys} keys, ` +
      `seed ${options.seed}, run ${runId}`,
  );

  let connections: BenchConnection[];
  try {
    connections = await connectAll(target, options.hosts, options.connections, {
      sessionTimeoutMs: options.sessionTimeoutMs,
      connectTimeoutMs: options.connectTimeoutS * 1000,
      ...(tls === undefined ? {} : { tls }),
    });
  } catch (error) {
    info(error instanceof Error ? error.message : String(error));
    return 1;
  }
  info(`connected ${connections.length} sessions`);

  const value = new Uint8Array(options.valueBytes);
  for (let i = 0; i < value.length; i++) value[i] = Math.floor(random() * 256);

  // Setup and cleanup are not measured: they use at least SETUP_INFLIGHT_MIN requests per connection.
  const setupInflight = Math.max(options.inflight, SETUP_INFLIGHT_MIN);
  let exitCode = 0;
  let sequentialDir: string | undefined;
  const created: string[] = [];
  try {
    const setupStartMs = realClock.now();
    const keySpace = await prepareKeySpace(connections, { root: options.root, keys: options.keys, value, perConnection: setupInflight, runId }, realClock);
    sequentialDir = keySpace.sequentialDir;
    info(`key space ready: ${options.keys} keys under ${options.root} (${Math.round(realClock.now() - setupStartMs)} ms)`);

    for (const workload of options.workloads) {
      if (abort.signal.aborted) {
        exitCode = 130;
        break;
      }
      const run = new WorkloadRun(
        connections,
        {
          workload,
          inflight: options.inflight,
          warmupMs: options.warmupS * 1000,
          durationMs: options.durationS * 1000,
          value,
          keyPaths: keySpace.keyPaths,
          sequentialPrefix: keySpace.sequentialPrefix,
          readFraction: options.readPercent / 100,
          drainTimeoutMs: options.drainTimeoutS * 1000,
        },
        { clock: realClock, random, signal: abort.signal },
      );
      info(`${workload}: warming up for ${options.warmupS} s`);
      let lastCompleted = 0;
      let lastMs = realClock.now();
      const progress = setInterval(() => {
        const nowMs = realClock.now();
        const completed = run.warmupOps + run.ops + run.lateOps;
        const rate = Math.round(((completed - lastCompleted) * 1000) / (nowMs - lastMs));
        info(`${workload}: ${run.phase()}, ${rate} ops/s, ${run.errors + run.warmupErrors} errors so far`);
        lastCompleted = completed;
        lastMs = nowMs;
      }, 1000);
      let result: WorkloadResult;
      try {
        result = await run.run();
      } finally {
        clearInterval(progress);
      }
      for (const path of result.created) created.push(path);
      if (result.aborted) {
        info(`${workload}: interrupted, no result`);
        exitCode = 130;
        break;
      }
      const line = JSON.stringify({ ...resultLine(result, target.name, options.valueBytes), ...(tls === undefined ? {} : { tls: true }) });
      process.stdout.write(`${line}\n`);
      if (options.jsonOut !== undefined) appendFileSync(options.jsonOut, `${line}\n`);
      info(`${workload}: ${describeExtras(result)}`);
      if (result.stuckRequests > 0) {
        info(`${workload}: ${result.stuckRequests} requests never completed; skipping the remaining workloads`);
        exitCode = 1;
        break;
      }
    }
  } catch (error) {
    info(`failed: ${error instanceof Error ? error.message : String(error)}`);
    exitCode = 1;
  }

  if (sequentialDir !== undefined && !options.keep) {
    const cleanupStartMs = realClock.now();
    const summary = await cleanup(
      connections,
      { created, sequentialDir, perConnection: setupInflight, deadlineMs: cleanupStartMs + options.cleanupTimeoutS * 1000 },
      realClock,
    );
    const took = Math.round(realClock.now() - cleanupStartMs);
    if (summary.directoryRemoved) {
      info(`cleanup: deleted ${summary.deleted} sequential nodes and ${sequentialDir} (${took} ms)`);
    } else {
      const hint = summary.leftBehind > 0 ? "raise --cleanup-timeout-s, or delete it by hand" : "delete it by hand";
      info(
        `cleanup incomplete after ${took} ms: deleted ${summary.deleted} nodes, ${summary.failed} requests failed, ` +
          `${summary.leftBehind} nodes not attempted; ${sequentialDir} is left in place (${hint})`,
      );
    }
  } else if (sequentialDir !== undefined) {
    info(`--keep: left ${created.length} sequential nodes under ${sequentialDir}`);
  }

  await closeAll(connections);
  return exitCode;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`[bench] ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
