/**
 * `npm run chaos -- --time 300 --nemesis partition,kill,pause [--voters 3] [--observers 0]
 * [--seed N] [--out DIR]`: one chaos run against real server processes; writes the report
 * directory, prints its summary, exits 1 on any violation (2 when a checker could not decide).
 * Nemeses: partition, kill, pause, delay, clock, corrupt, reconfig, or `all` for every one
 * (e.g. `--nemesis all --voters 5 --observers 1`).
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { parseNemeses } from "./nemesis.js";
import { runChaos } from "./run-chaos.js";

const { values } = parseArgs({
  options: {
    time: { type: "string", default: "60" },
    nemesis: { type: "string", default: "partition,kill,pause" },
    voters: { type: "string", default: "3" },
    observers: { type: "string", default: "0" },
    seed: { type: "string" },
    out: { type: "string" },
    quiet: { type: "boolean", default: false },
  },
});

function positiveInt(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 0) {
    console.error(`--${name}: expected a whole number, got "${text}"`);
    process.exit(64);
  }
  return n;
}

const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : positiveInt("seed", values.seed);
const stamp = new Date().toISOString().replace(/[:.]/g, "-");
const outDir = values.out ?? join("chaos-reports", `${stamp}-seed-${seed}`);
let nemeses;
try {
  nemeses = parseNemeses(values.nemesis);
} catch (error) {
  console.error(`--nemesis: ${(error as Error).message}`);
  process.exit(64);
}
const voters = positiveInt("voters", values.voters);
if (voters !== 3 && voters !== 5) {
  console.error("--voters: 3 or 5");
  process.exit(64);
}

// Exit through process.exit so that the cluster's exit hook kills the servers (a signal's default
// action would leave them running).
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => process.exit(130));

const result = await runChaos({
  voters,
  observers: positiveInt("observers", values.observers),
  timeMs: positiveInt("time", values.time) * 1000,
  nemeses,
  seed,
  outDir,
  ...(values.quiet ? {} : { log: (line: string) => console.error(line) }),
});
console.log(result.paragraph);
console.log(`report: ${outDir} (replay the fault schedule with --seed ${seed})`);
process.exit(result.valid === true ? 0 : result.valid === false ? 1 : 2);
