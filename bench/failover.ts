/**
 * `npm run bench -- --failover`: ANCHORS.md's failover row. Starts its own three-voter cluster on
 * 127.0.0.1 (separate `corral server` processes, temporary data dir, removed afterwards), keeps a
 * 1 × 1 setData load going through a follower, kills the leader with SIGKILL and reports the time
 * from the kill to the first successful write issued after it. Repeats with the old leader
 * restarted each time; prints one JSON line per run and one summary line on stdout.
 */
import { appendFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { Client, ZkError } from "../src/index.js";
import { ClusterProcess } from "../test/helpers/cluster-process.js";
import { waitFor } from "../test/helpers/wait.js";

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

const VOTERS = [1, 2, 3];

function info(message: string): void {
  process.stderr.write(`[bench failover] ${message}\n`);
}

interface FailoverRun {
  run: number;
  killedLeader: number;
  newLeader: number;
  follower: number;
  failoverMs: number;
  writesBeforeKill: number;
  failedWritesDuringFailover: number;
}

/** One failover: load through `follower`, kill the leader after `writesBeforeKill` acks, time the first later write. */
async function measureOnce(cluster: ClusterProcess, run: number, options: FailoverOptions): Promise<FailoverRun> {
  const leader = await waitFor("an agreed leader", () => cluster.agreedLeader(), 60_000);
  const follower = VOTERS.find((id) => id !== leader)!;
  const session = options.tickMs * 20;
  const client = await Client.connect(cluster.server(follower).connectString, { sessionTimeoutMs: session, connectTimeoutMs: 60_000 });
  try {
    const path = `/failover-${run}`;
    await client.create(path, "");
    let acked = 0;
    let failed = 0;
    let killedAt = 0;
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (Date.now() > deadline) throw new Error(`no write succeeded within 120 s of killing leader ${leader}`);
      const issuedAt = performance.now();
      try {
        await client.setData(path, String(acked));
        acked += 1;
        if (killedAt > 0 && issuedAt > killedAt) {
          const failoverMs = performance.now() - killedAt;
          const newLeader = await waitFor("the new leader", () => {
            const agreed = cluster.agreedLeader();
            return agreed !== undefined && agreed !== leader ? agreed : undefined;
          }, 60_000);
          return { run, killedLeader: leader, newLeader, follower, failoverMs: Math.round(failoverMs), writesBeforeKill: options.writesBeforeKill, failedWritesDuringFailover: failed };
        }
      } catch (error) {
        if (!(error instanceof ZkError) || (error.code !== "CONNECTIONLOSS" && error.code !== "OPERATIONTIMEOUT")) throw error;
        failed += 1;
        // Disconnected, the SDK fails at once: give it a moment to reconnect instead of spinning.
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      if (killedAt === 0 && acked === options.writesBeforeKill) {
        killedAt = performance.now();
        await cluster.server(leader).crash();
      }
    }
  } finally {
    await client.close();
  }
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
  const cluster = await ClusterProcess.start({ voters: 3, tickMs: options.tickMs, initLimitTicks: 10, syncLimitTicks: 5 });
  const times: number[] = [];
  try {
    for (let run = 1; run <= options.runs; run++) {
      const result = await measureOnce(cluster, run, options);
      times.push(result.failoverMs);
      emit(JSON.stringify({ target: "corral", workload: "failover", ...result }), options.jsonOut);
      info(`run ${run}: killed leader ${result.killedLeader}, server ${result.newLeader} leads; first write after the kill ${result.failoverMs} ms`);
      await cluster.server(result.killedLeader).restart();
      await waitFor(`server ${result.killedLeader} rejoins`, () => {
        const role = cluster.roles().get(result.killedLeader)?.role;
        return cluster.agreedLeader() !== undefined && role === "following" ? true : undefined;
      }, 120_000);
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
