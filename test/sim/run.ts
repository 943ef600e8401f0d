/**
 * The simulator's command line (VOPR-style):
 *   npm run sim -- --seeds 200                        # 200 random seeds
 *   npm run sim -- --seed 1234 --steps 20 --verbose
 *   npm run sim -- --seeds 200 --storage-faults         # storage faults in every run without reconfigurations
 *   npm run sim -- --seeds 200 --unchecked-reads        # sabotage: storage reads back unchecked
 *   npm run sim -- --seeds 200 --silent-repair          # sabotage: a damaged server does not say it repairs
 * Prints every failing seed with the command that replays it exactly; exits 1 on any failure.
 */
import { runSeed } from "./runner.js";

interface Args {
  seeds: number;
  seed: number | undefined;
  steps: number;
  verbose: boolean;
  first: number;
  election: "fle" | "oracle" | undefined;
  /** SIMULATION SABOTAGE, to see the storage damage properties fail (RunOptions.sabotage). */
  sabotage: "uncheckedReads" | "silentRepair" | undefined;
  storageFaults: boolean;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { seeds: 20, seed: undefined, steps: 12, verbose: false, first: 0, election: undefined, sabotage: undefined, storageFaults: false };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = (): number => {
      const v = Number(argv[++i]);
      if (!Number.isSafeInteger(v) || v < 0) throw new Error(`${flag} needs a non-negative integer`);
      return v;
    };
    if (flag === "--seeds") args.seeds = value();
    else if (flag === "--seed") args.seed = value();
    else if (flag === "--steps") args.steps = value();
    else if (flag === "--first") args.first = value();
    else if (flag === "--verbose") args.verbose = true;
    else if (flag === "--unchecked-reads") args.sabotage = "uncheckedReads";
    else if (flag === "--silent-repair") args.sabotage = "silentRepair";
    else if (flag === "--storage-faults") args.storageFaults = true;
    else if (flag === "--election") {
      const kind = argv[++i];
      if (kind !== "fle" && kind !== "oracle") throw new Error("--election takes fle or oracle");
      args.election = kind;
    } else
      throw new Error(
        `unknown flag ${flag} (use --seeds N, --seed S, --steps K, --first F, --election fle|oracle, --storage-faults, --unchecked-reads, --silent-repair, --verbose)`,
      );
  }
  return args;
}

const args = parseArgs(process.argv.slice(2));
const seeds = args.seed !== undefined ? [args.seed] : Array.from({ length: args.seeds }, (_, i) => args.first + i);
const script = process.argv[1] ?? "run.js";
let failed = 0;
const started = Date.now();
const totals: Record<string, number> = {};
for (const seed of seeds) {
  const outcome = runSeed(seed, {
    steps: args.steps,
    ...(args.election === undefined ? {} : { election: args.election }),
    ...(args.sabotage === undefined ? {} : { sabotage: args.sabotage }),
    ...(args.storageFaults ? { storageFaults: true } : {}),
  });
  for (const [key, value] of Object.entries(outcome.stats)) if (key !== "events") totals[key] = (totals[key] ?? 0) + value;
  if (outcome.violations.length > 0 || args.verbose) {
    console.log(`seed ${seed}: ${outcome.violations.length === 0 ? "ok" : "FAILED"} ${JSON.stringify(outcome.stats)}`);
    console.log(`  config ${JSON.stringify(outcome.config)}`);
  }
  if (outcome.violations.length > 0) {
    failed += 1;
    for (const v of outcome.violations.slice(0, 5)) console.log(`  [${v.property}] ${v.message}`);
    if (args.verbose) for (const line of outcome.trace) console.log(`  | ${line}`);
    const election = args.election === undefined ? "" : ` --election ${args.election}`;
    const sabotage = args.sabotage === undefined ? "" : args.sabotage === "uncheckedReads" ? " --unchecked-reads" : " --silent-repair";
    const storage = args.storageFaults ? " --storage-faults" : "";
    console.log(`  replay: node ${script} --seed ${seed} --steps ${args.steps}${election}${sabotage}${storage} --verbose`);
  }
}
const seconds = ((Date.now() - started) / 1000).toFixed(1);
console.log(`${seeds.length - failed}/${seeds.length} seeds passed in ${seconds} s (steps ${args.steps}); totals ${JSON.stringify(totals)}`);
process.exitCode = failed > 0 ? 1 : 0;
