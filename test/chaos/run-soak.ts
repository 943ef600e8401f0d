/**
 * `npm run soak -- --minutes 60 [--nemesis partition,kill,pause] [--voters 3] [--workers 4]
 * [--seed N]`: mixed load and the nemeses on real server processes for that long; prints each
 * verdict and exits 1 if RSS, open descriptors, sessions or watches grow without bound, if what the
 * load made is not gone once it stops, or if latency drifts.
 */
import { parseArgs } from "node:util";
import { parseNemeses } from "./nemesis.js";
import { runSoak } from "./soak.js";

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "60" },
    nemesis: { type: "string", default: "partition,kill,pause" },
    voters: { type: "string", default: "3" },
    workers: { type: "string", default: "4" },
    seed: { type: "string" },
    quiet: { type: "boolean", default: false },
  },
});

function positive(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) {
    console.error(`--${name}: expected a positive number, got "${text}"`);
    process.exit(64);
  }
  return n;
}

const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : positive("seed", values.seed);
let nemeses;
try {
  nemeses = values.nemesis === "none" ? [] : parseNemeses(values.nemesis);
} catch (error) {
  console.error(`--nemesis: ${(error as Error).message}`);
  process.exit(64);
}
const voters = positive("voters", values.voters);
if (voters !== 3 && voters !== 5) {
  console.error("--voters: 3 or 5");
  process.exit(64);
}

// Exit through process.exit so that the cluster's exit hook kills the servers.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => process.exit(130));

const minutes = positive("minutes", values.minutes);
const result = await runSoak({
  durationMs: minutes * 60_000,
  voters,
  nemeses,
  seed,
  workers: positive("workers", values.workers),
  // Every 5 s whatever the length: kill -9 keeps a process's life short, and a trend needs 8 samples of
  // one life after its warm-up (an hour at 30 s a sample judged only two lives).
  sampleMs: 5_000,
  judgeLatency: true,
  ...(values.quiet ? {} : { log: (line: string) => console.error(line) }),
});
console.log(
  `soak: ${minutes} min, seed ${seed}, ${result.sessionsOpened} sessions opened, ${result.opsOk} ops ok, ${result.opsFailed} failed, ${result.faults} faults`,
);
for (const verdict of result.verdicts)
  console.log(`${verdict.valid === true ? "ok  " : verdict.valid === false ? "FAIL" : "??  "} ${verdict.check}: ${verdict.detail}`);
process.exit(result.valid ? 0 : 1);
