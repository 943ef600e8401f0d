/**
 * `npm run bench:snapshot`: what writing a snapshot of a big tree does to one writer's latency.
 *
 * Starts a three-voter cluster of its own (bench/snapshot-member.ts processes: production
 * CorralServers that also snapshot on request), loads `--znodes` znodes (default 1,000,000, in
 * multis of 500 creates), then, rep after rep, measures one SDK session doing 1 × 1 setData
 * through a follower in two phases: `quiet` (no snapshot anywhere) and `snapshot` (snapshots back
 * to back until the phase has lasted `--duration-s`: by default one server at a time — the leader,
 * the writer's follower, the other follower in turn — as the servers' staggered snapshot triggers
 * have it in production; `--snapshot-on all` makes the three write one at once). A write counts in
 * the phase it completed in. One JSON line per rep and phase on stdout, then a summary line with
 * the median p99 of each phase and their ratio.
 */
import { fork, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Client, op } from "../src/index.js";
import { freePort } from "../test/helpers/server-process.js";
import { fourLetterWord } from "../test/helpers/four-letter-word.js";
import { srvrMode } from "../test/helpers/zookeeper-ensemble.js";
import { LatencyHistogram } from "./histogram.js";
import type { MemberReport, MemberRequest } from "./snapshot-member.js";

const USAGE = `usage: npm run bench:snapshot -- [--znodes N] [--duration-s S] [--reps R] [--json-out FILE]

  --znodes N      znodes in the tree before measuring (1,000 per parent)        [1000000]
  --duration-s S  length of each phase (quiet, snapshot) per rep                [10]
  --reps R        quiet/snapshot pairs                                           [3]
  --snapshot-on   each: one server at a time, leader, writer's follower, other  [each]
                  follower in turn; all: the three at once`;

const CREATES_PER_MULTI = 500;
const LOAD_INFLIGHT = 8;
const CHILDREN_PER_PARENT = 1000;

interface Member {
  id: number;
  zkPort: number;
  clientPort: number;
  process: ChildProcess;
  reports: MemberReport[];
  waiters: ((report: MemberReport) => void)[];
}

function info(message: string): void {
  process.stderr.write(`[bench:snapshot] ${message}\n`);
}

function nextReport(member: Member): Promise<MemberReport> {
  const queued = member.reports.shift();
  if (queued !== undefined) return Promise.resolve(queued);
  return new Promise((resolve) => member.waiters.push(resolve));
}

async function startMembers(dir: string): Promise<Member[]> {
  const entries = [];
  for (let id = 1; id <= 3; id++) {
    entries.push({
      id,
      host: "127.0.0.1",
      clientPort: await freePort(),
      quorumPort: await freePort(),
      electionPort: await freePort(),
      zkClientPort: await freePort(),
      role: "participant",
    });
  }
  const configFile = join(dir, "cluster.json");
  // tickMs, initLimit and syncLimit as ZooKeeper's zoo_sample.cfg; no automatic snapshots.
  const config = { tickMs: 2000, initLimitTicks: 10, syncLimitTicks: 5, snapshotEveryTxns: 100_000_000, fourLetterWordWhitelist: "*", servers: entries };
  await writeFile(configFile, JSON.stringify(config, null, 2));
  const script = fileURLToPath(new URL("./snapshot-member.js", import.meta.url));
  const members = entries.map((entry): Member => {
    const child = fork(script, [configFile, String(entry.id), join(dir, String(entry.id))], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
    const member: Member = { id: entry.id, zkPort: entry.zkClientPort, clientPort: entry.clientPort, process: child, reports: [], waiters: [] };
    child.on("message", (report: MemberReport) => {
      const waiter = member.waiters.shift();
      if (waiter !== undefined) waiter(report);
      else member.reports.push(report);
    });
    child.on("exit", (code, signal) => {
      if (!stopping) info(`server ${entry.id} exited (code ${code}, signal ${signal})`);
    });
    return member;
  });
  for (const member of members) {
    const report = await nextReport(member);
    if (report.kind !== "serving") throw new Error(`server ${member.id}: expected serving, got ${report.kind}`);
  }
  return members;
}

let stopping = false;

async function stopMembers(members: readonly Member[]): Promise<void> {
  stopping = true;
  await Promise.all(
    members.map(async (member) => {
      if (member.process.exitCode !== null || member.process.signalCode !== null) return;
      const exited = new Promise((resolve) => member.process.once("exit", resolve));
      member.process.send({ kind: "stop" } satisfies MemberRequest);
      const timer = setTimeout(() => member.process.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(timer);
    }),
  );
}

/** The leader, the follower the writer uses (the lowest-numbered) and the other follower. */
async function findRoles(members: readonly Member[]): Promise<{ leader: Member; follower: Member; otherFollower: Member }> {
  for (let attempt = 0; attempt < 600; attempt++) {
    const modes = await Promise.all(members.map(async (m) => srvrMode(await fourLetterWord(m.zkPort, "srvr", 2_000).catch(() => ""))));
    if (modes.filter((mode) => mode === "leader").length === 1 && modes.filter((mode) => mode === "follower").length === 2) {
      const followers = members.filter((_, i) => modes[i] === "follower");
      return { leader: members[modes.indexOf("leader")]!, follower: followers[0]!, otherFollower: followers[1]! };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("no leader and two followers within a minute");
}

async function load(client: Client, znodes: number): Promise<void> {
  await client.create("/snap").catch(() => undefined);
  const parents = Math.ceil(znodes / CHILDREN_PER_PARENT);
  const value = new Uint8Array(100);
  const batches: Op[][] = [];
  let batch: Op[] = [];
  const add = (create: Op): void => {
    batch.push(create);
    if (batch.length === CREATES_PER_MULTI) {
      batches.push(batch);
      batch = [];
    }
  };
  for (let p = 0; p < parents; p++) {
    add(op.create(`/snap/p${p}`));
    for (let c = 0; c < CHILDREN_PER_PARENT && p * CHILDREN_PER_PARENT + c < znodes; c++) add(op.create(`/snap/p${p}/n${c}`, value));
  }
  if (batch.length > 0) batches.push(batch);
  let next = 0;
  let done = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: LOAD_INFLIGHT }, async () => {
      while (next < batches.length) {
        const ops = batches[next++]!;
        await client.multi(ops);
        done += ops.length;
        if (done % 100_000 < CREATES_PER_MULTI) info(`loaded ${done} znodes (${Math.round(done / ((performance.now() - started) / 1000))}/s)`);
      }
    }),
  );
}

type Op = Parameters<Client["multi"]>[0][number];

interface PhaseResult {
  rep: number;
  phase: "quiet" | "snapshot";
  ops: number;
  durationS: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  snapshotOn?: string;
  snapshots?: number;
  snapshotMsMedian?: number;
}

/** One session's closed loop of setData, recording into whichever histogram `target()` names. */
class Writer {
  private running = true;
  private readonly loop: Promise<void>;

  constructor(
    client: Client,
    private readonly target: () => LatencyHistogram | undefined,
  ) {
    const value = new Uint8Array(100);
    this.loop = (async () => {
      while (this.running) {
        const started = performance.now();
        await client.setData("/snap-writer", value);
        this.target()?.record(Math.round((performance.now() - started) * 1000));
      }
    })();
  }

  stop(): Promise<void> {
    this.running = false;
    return this.loop;
  }
}

function phaseLine(rep: number, phase: PhaseResult["phase"], histogram: LatencyHistogram, durationS: number, extra: Partial<PhaseResult> = {}): PhaseResult {
  const ms = (us: number): number => +(us / 1000).toFixed(3);
  return {
    rep,
    phase,
    ops: histogram.count,
    durationS: +durationS.toFixed(1),
    p50Ms: ms(histogram.percentileUs(50)),
    p99Ms: ms(histogram.percentileUs(99)),
    p999Ms: ms(histogram.percentileUs(99.9)),
    maxMs: ms(histogram.maxUs),
    ...extra,
  };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      "snapshot-on": { type: "string", default: "each" },
      znodes: { type: "string", default: "1000000" },
      "duration-s": { type: "string", default: "10" },
      reps: { type: "string", default: "3" },
      "json-out": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const znodes = Number(values.znodes);
  const durationMs = Number(values["duration-s"]) * 1000;
  const reps = Number(values.reps);
  const snapshotOn = values["snapshot-on"];
  if (snapshotOn !== "each" && snapshotOn !== "all") {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  if (!(Number.isSafeInteger(znodes) && znodes >= 0 && durationMs > 0 && Number.isSafeInteger(reps) && reps >= 1)) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const dir = await mkdtemp(join(tmpdir(), "corral-bench-snapshot-"));
  let members: Member[] = [];
  const lines: PhaseResult[] = [];
  try {
    members = await startMembers(dir);
    const roles = await findRoles(members);
    const follower = roles.follower;
    // Whose snapshots one round takes: all three at once, or one server at a time in turn (as the
    // servers' staggered snapshot triggers make it in production).
    const rounds: Member[][] = snapshotOn === "all" ? [members] : [[roles.leader], [roles.follower], [roles.otherFollower]];
    info(`three servers up; leader ${roles.leader.id}; writer on follower ${follower.id}; loading ${znodes} znodes`);
    const loader = await Client.connect(members.map((m) => `127.0.0.1:${m.clientPort}`).join(","));
    await load(loader, znodes);
    await loader.close();
    const client = await Client.connect(`127.0.0.1:${follower.clientPort}`);
    await client.create("/snap-writer").catch(() => undefined);
    let current: LatencyHistogram | undefined;
    const writer = new Writer(client, () => current);
    // Warm-up: 2 s unrecorded.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    for (let rep = 1; rep <= reps; rep++) {
      const quiet = new LatencyHistogram();
      current = quiet;
      await new Promise((resolve) => setTimeout(resolve, durationMs));
      lines.push(phaseLine(rep, "quiet", quiet, durationMs / 1000));
      const during = new LatencyHistogram();
      const snapshotMs: number[] = [];
      const started = performance.now();
      current = during;
      for (let round = 0; performance.now() - started < durationMs; round++) {
        const snapshotting = rounds[round % rounds.length]!;
        for (const member of snapshotting) member.process.send({ kind: "snapshot" } satisfies MemberRequest);
        for (const member of snapshotting) {
          const report = await nextReport(member);
          if (report.kind === "snapshotWritten") snapshotMs.push(report.ms);
        }
      }
      current = undefined;
      lines.push(
        phaseLine(rep, "snapshot", during, (performance.now() - started) / 1000, {
          snapshotOn,
          snapshots: snapshotMs.length,
          snapshotMsMedian: Math.round(median(snapshotMs)),
        }),
      );
      for (const line of lines.slice(-2)) process.stdout.write(`${JSON.stringify({ workload: "snapshot-tail", znodes, ...line })}\n`);
      // Let the disk settle between reps (the last snapshots' pages are still being written back).
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
    await writer.stop();
    await client.close();
    const p99 = (phase: PhaseResult["phase"]): number => median(lines.filter((l) => l.phase === phase).map((l) => l.p99Ms));
    const p999 = (phase: PhaseResult["phase"]): number => median(lines.filter((l) => l.phase === phase).map((l) => l.p999Ms));
    const summary = {
      workload: "snapshot-tail-summary",
      znodes,
      reps,
      quietP99Ms: p99("quiet"),
      snapshotP99Ms: p99("snapshot"),
      p99Ratio: +(p99("snapshot") / p99("quiet")).toFixed(2),
      quietP999Ms: p999("quiet"),
      snapshotP999Ms: p999("snapshot"),
    };
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    if (values["json-out"] !== undefined) {
      const { appendFileSync } = await import("node:fs");
      appendFileSync(
        values["json-out"],
        [...lines.map((l) => JSON.stringify({ workload: "snapshot-tail", znodes, ...l })), JSON.stringify(summary)].join("\n") + "\n",
      );
    }
    return 0;
  } finally {
    await stopMembers(members);
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
