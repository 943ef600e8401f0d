/**
 * `npm run bench -- --failover`: the failover row of bench/README.md's reference figures. Starts its own three-voter cluster on
 * 127.0.0.1 (separate `corral server` processes, temporary data dir, removed afterwards), keeps a
 * 1 × 1 setData load going through a follower, kills the leader with SIGKILL and reports the time
 * from the kill to the first successful write issued after it. Repeats with the old leader
 * restarted each time; prints one JSON line per run and one summary line on stdout.
 *
 * The measurement itself (`measureFailover`, `restartAndRejoin`) works on any ClusterUnderTest
 * through any BenchConnection: `npm run bench:compare` runs it on ZooKeeper and corral alike.
 */
import { appendFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { agreedLeader, CorralCluster, poll, waitWholeQuorum, type ClusterUnderTest } from "./cluster-under-test.js";
import { withTimeout } from "./connect.js";
import { errorLabel, type BenchConnection } from "./target.js";
import { corralTarget } from "./targets/corral.js";

export const FAILOVER_USAGE = `usage: npm run bench -- --failover [--runs N] [--tick-ms MS] [--writes-before-kill N] [--json-out FILE]

Starts a three-voter cluster of its own on 127.0.0.1 (temporary data dir), drives a 1 × 1 setData
load through a follower, kill -9s the leader, and reports the time from the kill to the first
successful write issued after it. One JSON line per run, then a summary line.

  --runs N                 failovers to measure (the old leader is restarted between runs)  [5]
  --tick-ms MS             the cluster's tickMs (ZooKeeper's tickTime)                    [2000]
  --writes-before-kill N   acknowledged writes through the follower before the kill       [200]
  --json-out FILE          also append the JSON lines to FILE`;

interface FailoverOptions {
  runs: number;
  tickMs: number;
  writesBeforeKill: number;
  jsonOut: string | undefined;
  help: boolean;
}

function parseFailoverArgs(argv: readonly string[]): FailoverOptions {
  const { values, positionals } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: true,
    options: {
      failover: { type: "boolean" },
      runs: { type: "string", default: "5" },
      "tick-ms": { type: "string", default: "2000" },
      "writes-before-kill": { type: "string", default: "200" },
      "json-out": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (positionals.length > 0) throw new Error(`unexpected argument: ${positionals[0]}`);
  const positive = (flag: string, text: string): number => {
    const value = Number(text);
    if (!Number.isSafeInteger(value) || value < 1) throw new Error(`--${flag} must be a positive integer, got "${text}"`);
    return value;
  };
  return {
    runs: positive("runs", values.runs),
    tickMs: positive("tick-ms", values["tick-ms"]),
    writesBeforeKill: positive("writes-before-kill", values["writes-before-kill"]),
    jsonOut: values["json-out"],
    help: values.help,
  };
}

function info(message: string): void {
  process.stderr.write(`[bench failover] ${message}\n`);
}

export interface FailoverRun {
  run: number;
  killedLeader: number;
  newLeader: number;
  follower: number;
  failoverMs: number;
  writesBeforeKill: number;
  failedWritesDuringFailover: number;
}

/**
 * Errors a write may meet while the cluster fails over, to be retried: the connection to the
 * follower dropped (or the request timed out) while it lost and found its leader. Anything else
 * ends the measurement. Labels as bench/target.ts's errorLabel gives them, for either client.
 */
const RETRIED_DURING_FAILOVER = new Set(["CONNECTIONLOSS", "OPERATIONTIMEOUT"]);

const FAILOVER_LIMIT_MS = 120_000;

/**
 * One failover: 1 × 1 setData through a follower, kill -9 of the leader after `writesBeforeKill`
 * acknowledged writes, and the time from the kill to the completion of the first write *issued*
 * after it. `connect` opens the measuring session to the given server (any client: the SDK or
 * node-zookeeper-client). The killed server is left down: see `restartAndRejoin`.
 */
export async function measureFailover(
  cluster: ClusterUnderTest,
  connect: (serverId: number) => Promise<BenchConnection>,
  options: { run: number; writesBeforeKill: number },
): Promise<FailoverRun> {
  const leader = await poll("an agreed leader", () => agreedLeader(cluster), 60_000);
  const follower = cluster.serverIds.find((id) => id !== leader)!;
  const connection = await withTimeout(connect(follower), 60_000, `connect to server ${follower}`);
  try {
    const path = `/failover-${options.run}-${Date.now().toString(36)}`;
    await connection.create(path, new Uint8Array(0));
    let acked = 0;
    let failed = 0;
    let killedAt = 0;
    const deadline = Date.now() + FAILOVER_LIMIT_MS;
    for (;;) {
      if (Date.now() > deadline) throw new Error(`no write succeeded within ${FAILOVER_LIMIT_MS} ms of killing leader ${leader}`);
      const issuedAt = performance.now();
      try {
        // Bounded: a client that queues requests while disconnected could otherwise wait forever.
        await withTimeout(connection.setData(path, new TextEncoder().encode(String(acked))), FAILOVER_LIMIT_MS, "setData");
        acked += 1;
        if (killedAt > 0 && issuedAt > killedAt) {
          const failoverMs = performance.now() - killedAt;
          const newLeader = await poll(
            "the new leader",
            async () => {
              const agreed = await agreedLeader(cluster);
              return agreed !== undefined && agreed !== leader ? agreed : undefined;
            },
            60_000,
          );
          return {
            run: options.run,
            killedLeader: leader,
            newLeader,
            follower,
            failoverMs: Math.round(failoverMs),
            writesBeforeKill: options.writesBeforeKill,
            failedWritesDuringFailover: failed,
          };
        }
      } catch (error) {
        if (!RETRIED_DURING_FAILOVER.has(errorLabel(error))) throw error;
        failed += 1;
        // Disconnected, the SDK fails at once: give it a moment to reconnect instead of spinning.
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      if (killedAt === 0 && acked === options.writesBeforeKill) {
        killedAt = performance.now();
        await cluster.crash(leader);
      }
    }
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** Restarts server `id` and waits until every server serves and the leader counts them all synced. */
export async function restartAndRejoin(cluster: ClusterUnderTest, id: number, limitMs = 120_000): Promise<void> {
  await cluster.restart(id);
  await waitWholeQuorum(cluster, limitMs);
}

export async function runFailoverBench(argv: readonly string[]): Promise<number> {
  let options: FailoverOptions;
  try {
    options = parseFailoverArgs(argv);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${FAILOVER_USAGE}\n`);
    return 2;
  }
  if (options.help) {
    process.stdout.write(`${FAILOVER_USAGE}\n`);
    return 0;
  }
  info(`three voters on 127.0.0.1, tickMs ${options.tickMs}, ${options.runs} runs`);
  const cluster = await CorralCluster.start({ tickMs: options.tickMs });
  const times: number[] = [];
  const sessionTimeoutMs = options.tickMs * 20;
  try {
    await waitWholeQuorum(cluster);
    for (let run = 1; run <= options.runs; run++) {
      const result = await measureFailover(cluster, (id) => corralTarget.connect(cluster.sdkHost(id), { sessionTimeoutMs }), {
        run,
        writesBeforeKill: options.writesBeforeKill,
      });
      times.push(result.failoverMs);
      emit(JSON.stringify({ target: "corral", workload: "failover", ...result }), options.jsonOut);
      info(`run ${run}: killed leader ${result.killedLeader}, server ${result.newLeader} leads; first write after the kill ${result.failoverMs} ms`);
      await restartAndRejoin(cluster, result.killedLeader);
    }
  } finally {
    await cluster.stop();
  }
  const sorted = [...times].sort((a, b) => a - b);
  const summary = {
    target: "corral",
    workload: "failover-summary",
    runs: sorted.length,
    tickMs: options.tickMs,
    minMs: sorted[0],
    medianMs: sorted[Math.floor(sorted.length / 2)],
    maxMs: sorted[sorted.length - 1],
  };
  emit(JSON.stringify(summary), options.jsonOut);
  return 0;
}

function emit(line: string, jsonOut: string | undefined): void {
  process.stdout.write(`${line}\n`);
  if (jsonOut !== undefined) appendFileSync(jsonOut, `${line}\n`);
}
