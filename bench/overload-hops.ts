/**
 * `node dist/bench/overload-hops.js DIR [RUN]`: where the bystander's writes waited, hop by hop,
 * from the server logs `npm run bench:overload -- --trace-dir DIR` kept. The bystander is the
 * session a follower took the most writes of fewer than `SMALL_BYTES` from; its writes' hops are
 * matched across servers by session and cxid, then by the zxid the leader gave each. Prints the median, p99 and max of each hop's wait
 * and the slowest writes whole.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const SMALL_BYTES = 1024;

interface HopLine {
  time: number;
  hop: string;
  server: number;
  session?: string;
  cxid?: number;
  zxid?: number;
  bytes?: number;
  from?: number;
  inFlightBytes?: number;
  queuedBytes?: number;
  queued?: number;
}

/** One bystander write's moments (ms since the epoch) and what the leader had waiting when it proposed it. */
interface Journey {
  key: string;
  follower: number;
  submit: number;
  forward?: number;
  arrive?: number;
  propose?: number;
  zxid?: number;
  inFlightBytes?: number;
  queuedBytes?: number;
  leaderDurable?: number;
  followerLog?: number;
  followerDurable?: number;
  leaderApply?: number;
  followerApply?: number;
}

function readHops(dir: string, run: string): HopLine[] {
  const lines: HopLine[] = [];
  for (const file of readdirSync(dir)) {
    const match = new RegExp(`^${run}-server-(\\d+)\\.log$`).exec(file);
    if (match === null) continue;
    const server = Number(match[1]);
    for (const text of readFileSync(join(dir, file), "utf8").split("\n")) {
      if (!text.includes('"msg":"hop"')) continue;
      const line = JSON.parse(text) as Omit<HopLine, "server">;
      lines.push({ ...line, server });
    }
  }
  return lines.sort((a, b) => a.time - b.time);
}

/** The session a follower took the most small writes from. */
function bystanderOf(lines: HopLine[]): string | undefined {
  const small = new Map<string, number>();
  for (const line of lines) {
    if (line.hop === "submit" && line.session !== undefined && (line.bytes ?? Infinity) < SMALL_BYTES)
      small.set(line.session, (small.get(line.session) ?? 0) + 1);
  }
  return [...small].sort((a, b) => b[1] - a[1])[0]?.[0];
}

function journeys(lines: HopLine[]): Journey[] {
  const bystander = bystanderOf(lines);
  const byKey = new Map<string, Journey>();
  const byZxid = new Map<number, Journey>();
  let leader: number | undefined;
  for (const line of lines) {
    const key = `${line.session}/${line.cxid}`;
    if (line.hop === "submit" && line.session === bystander && line.bytes !== undefined) {
      byKey.set(key, { key, follower: line.server, submit: line.time });
      continue;
    }
    if (line.hop === "forward") {
      const journey = byKey.get(key);
      if (journey !== undefined && line.server === journey.follower) journey.forward = line.time;
      continue;
    }
    if (line.hop === "arrive" || line.hop === "propose") {
      const journey = byKey.get(key);
      if (journey === undefined) continue;
      leader = line.server;
      if (line.hop === "arrive") journey.arrive = line.time;
      else {
        journey.propose = line.time;
        journey.zxid = line.zxid!;
        journey.inFlightBytes = line.inFlightBytes!;
        journey.queuedBytes = line.queuedBytes!;
        byZxid.set(line.zxid!, journey);
      }
      continue;
    }
    const journey = line.zxid === undefined ? undefined : byZxid.get(line.zxid);
    if (journey === undefined) continue;
    const onLeader = line.server === leader;
    const onOwn = line.server === journey.follower;
    if (line.hop === "durable" && onLeader) journey.leaderDurable ??= line.time;
    else if (line.hop === "log" && onOwn) journey.followerLog ??= line.time;
    else if (line.hop === "durable" && onOwn) journey.followerDurable ??= line.time;
    else if (line.hop === "apply" && onLeader) journey.leaderApply ??= line.time;
    else if (line.hop === "apply" && onOwn) journey.followerApply ??= line.time;
  }
  return [...byKey.values()].filter((j) => j.followerApply !== undefined);
}

const HOPS: [string, (j: Journey) => number | undefined][] = [
  ["submit → forward", (j) => diff(j.forward, j.submit)],
  ["forward → arrive at leader", (j) => diff(j.arrive, j.forward)],
  ["arrive → proposed", (j) => diff(j.propose, j.arrive)],
  ["proposed → leader durable", (j) => diff(j.leaderDurable, j.propose)],
  ["proposed → follower logs it", (j) => diff(j.followerLog, j.propose)],
  ["follower logs → durable", (j) => diff(j.followerDurable, j.followerLog)],
  ["proposed → leader applies", (j) => diff(j.leaderApply, j.propose)],
  ["leader applies → follower applies", (j) => diff(j.followerApply, j.leaderApply)],
  ["submit → follower applies (whole)", (j) => diff(j.followerApply, j.submit)],
];

function diff(later: number | undefined, earlier: number | undefined): number | undefined {
  return later === undefined || earlier === undefined ? undefined : later - earlier;
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function main(): void {
  const [dir, run = "corral-zk"] = process.argv.slice(2);
  if (dir === undefined) {
    process.stderr.write("usage: node dist/bench/overload-hops.js DIR [RUN]\n");
    process.exit(2);
  }
  const all = journeys(readHops(dir, run));
  process.stdout.write(`${run}: ${all.length} bystander writes traced\n\n| hop | p50 ms | p99 ms | max ms |\n|---|---:|---:|---:|\n`);
  for (const [name, of] of HOPS) {
    const values = all
      .map(of)
      .filter((v): v is number => v !== undefined)
      .sort((a, b) => a - b);
    process.stdout.write(`| ${name} | ${percentile(values, 50)} | ${percentile(values, 99)} | ${values.at(-1) ?? NaN} |\n`);
  }
  const whole = HOPS.at(-1)![1];
  const slowest = [...all].sort((a, b) => whole(b)! - whole(a)!).slice(0, 8);
  process.stdout.write("\nslowest:\n");
  for (const j of slowest) {
    const hops = HOPS.map(([name, of]) => `${name.split(" ")[0]}…${name.split(" ").at(-1)}=${of(j) ?? "?"}`).join(" ");
    process.stdout.write(`${j.key} zxid ${j.zxid} inFlight ${j.inFlightBytes} queued ${j.queuedBytes}: ${hops}\n`);
  }
}

main();
