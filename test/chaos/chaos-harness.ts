/**
 * What every CI chaos file shares: the run length (CHAOS_SECONDS), the seed (CHAOS_SEED replays a
 * fault schedule), and a report directory that a failing run keeps and names.
 *
 * The CI chaos runs are spread over four files (chaos-nemeses, chaos-workloads, chaos-membership,
 * chaos-broken-leader) because the test runner bounds each file, not each test: one file holding
 * them all took 460–500 s here and passed the 600 s bound in CI.
 */
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runChaos, type ChaosRunOptions, type ChaosRunResult } from "./run-chaos.js";

export const SECONDS = Number(process.env["CHAOS_SECONDS"] ?? 60);
export const RUN_LIMIT_MS = (SECONDS + 240) * 1000;

function seedFor(): number {
  const fixed = process.env["CHAOS_SEED"];
  return fixed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(fixed);
}

export async function run(name: string, options: Omit<ChaosRunOptions, "seed" | "outDir">): Promise<{ result: ChaosRunResult; seed: number; dir: string }> {
  const seed = seedFor();
  const dir = join(tmpdir(), `corral-chaos-report-${name}-${seed}-${process.pid}`);
  const result = await runChaos({ ...options, seed, outDir: dir });
  return { result, seed, dir };
}

export function explain(result: ChaosRunResult, seed: number, dir: string): string {
  const invalid = result.verdicts.filter((v) => v.valid !== true).map((v) => `${v.checker}: ${v.violations.slice(0, 5).join(" | ")}`);
  return `${result.paragraph}\n${invalid.join("\n")}\nseed ${seed}; report kept in ${dir}`;
}
