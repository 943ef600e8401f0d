/**
 * The chaos runs CI makes: 60 s per nemesis (partition, kill, pause) on three voters, each judged
 * by every checker; shorter runs of the unique-id workload alone under partitions and kills, and of
 * the queue, counter and watch workloads under partitions, kills and pauses; a run on five voters
 * and an observer whose membership changes while clocks jump, files are damaged and servers die
 * (the same nemeses at length: `npm run chaos:all`); and
 * the proof that the checkers can fail — a deliberately broken leader (commits on its own ack,
 * CORRAL_TEST_UNSAFE_SOLO_COMMIT=1) must be caught by a partition run.
 *
 * CHAOS_SECONDS shortens or lengthens the runs; CHAOS_SEED replays a fault schedule. A failing
 * run keeps its report directory (history, faults, verdicts, timeline, server logs) and names it.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { COUNTER_CHECKER, QUEUE_CHECKER, UNIQUE_IDS_CHECKER, WATCHES_CHECKER } from "./checkers/index.js";
import type { NemesisName } from "./nemesis.js";
import { isDeferral } from "./report.js";
import { runChaos, type ChaosRunOptions, type ChaosRunResult } from "./run-chaos.js";

const SECONDS = Number(process.env["CHAOS_SECONDS"] ?? 60);
const RUN_LIMIT_MS = (SECONDS + 240) * 1000;

function seedFor(): number {
  const fixed = process.env["CHAOS_SEED"];
  return fixed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(fixed);
}

async function run(name: string, options: Omit<ChaosRunOptions, "seed" | "outDir">): Promise<{ result: ChaosRunResult; seed: number; dir: string }> {
  const seed = seedFor();
  const dir = join(tmpdir(), `corral-chaos-report-${name}-${seed}-${process.pid}`);
  const result = await runChaos({ ...options, seed, outDir: dir });
  return { result, seed, dir };
}

function explain(result: ChaosRunResult, seed: number, dir: string): string {
  const invalid = result.verdicts.filter((v) => v.valid !== true).map((v) => `${v.checker}: ${v.violations.slice(0, 5).join(" | ")}`);
  return `${result.paragraph}\n${invalid.join("\n")}\nseed ${seed}; report kept in ${dir}`;
}

describe(`chaos: ${SECONDS} s per nemesis on three voters`, () => {
  for (const nemesis of ["partition", "kill", "pause"] as const satisfies readonly NemesisName[]) {
    test(`${nemesis}: every checker finds the history valid`, { timeout: RUN_LIMIT_MS }, async () => {
      const { result, seed, dir } = await run(nemesis, { voters: 3, timeMs: SECONDS * 1000, nemeses: [nemesis] });
      assert.ok(result.faults.length > 0, "the nemesis injected faults");
      assert.ok(result.ops.filter((op) => op.outcome === "ok").length > 100, "the workload did work");
      assert.equal(result.valid, true, explain(result, seed, dir));
      const lock = result.verdicts.find((v) => v.checker === "fenced-lock");
      assert.ok((lock?.stats["staleUsesFenced"] ?? 0) > 0, "stalled lock holders wrote with stale tokens and were fenced off");
      await rm(dir, { recursive: true, force: true });
    });
  }

  test(
    "unique ids: sequential creates under partitions and kills take ids never handed out twice, increasing in real time, none lost",
    { timeout: RUN_LIMIT_MS },
    async () => {
      const { result, seed, dir } = await run("ids", {
        voters: 3,
        timeMs: Math.min(SECONDS, 30) * 1000,
        nemeses: ["partition", "kill"],
        registerWorkers: 0,
        setWorkers: 0,
        lockWorkers: 0,
        idWorkers: 4,
      });
      assert.ok(result.faults.length > 0, "the nemesis injected faults");
      const ids = result.verdicts.find((v) => v.checker === UNIQUE_IDS_CHECKER);
      assert.ok(
        (ids?.stats["acknowledged"] ?? 0) > 100 && (ids?.stats["serversRead"] ?? 0) === 3,
        `ids were taken and read back: ${JSON.stringify(ids?.stats)}`,
      );
      assert.equal(result.valid, true, explain(result, seed, dir));
      await rm(dir, { recursive: true, force: true });
    },
  );

  test(
    "queue, counter and watches under partitions, kills and pauses: items taken at most once and none lost, increments counted, every watcher in step",
    { timeout: RUN_LIMIT_MS },
    async () => {
      const { result, seed, dir } = await run("recipes", {
        voters: 3,
        timeMs: Math.min(SECONDS, 30) * 1000,
        nemeses: ["partition", "kill", "pause"],
        registerWorkers: 0,
        setWorkers: 0,
        lockWorkers: 0,
        idWorkers: 0,
        queueWorkers: 3,
        counterWorkers: 3,
        watchWorkers: 4,
      });
      assert.ok(result.faults.length > 0, "the nemesis injected faults");
      const stats = (checker: string) => result.verdicts.find((v) => v.checker === checker)?.stats ?? {};
      const queue = stats(QUEUE_CHECKER);
      const counter = stats(COUNTER_CHECKER);
      const watches = stats(WATCHES_CHECKER);
      assert.ok((queue["taken"] ?? 0) > 50 && queue["serversRead"] === 3, `items were queued and taken: ${JSON.stringify(queue)}`);
      assert.ok((counter["acknowledged"] ?? 0) > 50 && (counter["reads"] ?? 0) > 20, `the counter was incremented and read: ${JSON.stringify(counter)}`);
      assert.ok(
        (watches["oneShotEvents"] ?? 0) > 20 && (watches["persistentEvents"] ?? 0) > 50,
        `watchers of both kinds were told of changes: ${JSON.stringify(watches)}`,
      );
      assert.equal(result.valid, true, explain(result, seed, dir));
      await rm(dir, { recursive: true, force: true });
    },
  );

  test(
    "five voters and an observer: reconfiguration while clocks jump and strobe, files are damaged and servers are killed",
    { timeout: RUN_LIMIT_MS + 120_000 },
    async () => {
      const { result, seed, dir } = await run("membership", {
        voters: 5,
        observers: 1,
        timeMs: SECONDS * 1000,
        nemeses: ["reconfig", "clock", "corrupt", "kill"],
      });
      const kinds = new Set(result.faults.filter((f) => !isDeferral(f)).map((f) => f.kind));
      assert.ok(kinds.has("reconfig") && kinds.size >= 3, `membership changed beside other faults: ${[...kinds].join(", ")}`);
      assert.ok(result.ops.filter((op) => op.outcome === "ok").length > 100, "the workload did work");
      assert.equal(result.valid, true, explain(result, seed, dir));
      await rm(dir, { recursive: true, force: true });
    },
  );

  test("a leader that commits on its own ack alone is caught by a partition run", { timeout: RUN_LIMIT_MS + 120_000 }, async () => {
    const { result, seed, dir } = await run("broken-leader", {
      voters: 3,
      timeMs: Math.max(30, Math.min(SECONDS, 45)) * 1000,
      nemeses: ["partition"],
      partitionShapes: ["isolate-leader"],
      serverEnv: { CORRAL_TEST_UNSAFE_SOLO_COMMIT: "1" },
    });
    assert.ok(result.faults.length > 0, "the nemesis injected faults");
    assert.equal(result.valid, false, `the broken leader went unnoticed:\n${explain(result, seed, dir)}`);
    await rm(dir, { recursive: true, force: true });
  });
});
