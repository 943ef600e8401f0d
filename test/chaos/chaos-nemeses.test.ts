/**
 * The chaos runs CI makes for each basic nemesis: 60 s each of partitions, kills and pauses on
 * three voters, each history judged by every checker (CHAOS_SECONDS, CHAOS_SEED: chaos-harness.ts).
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { describe, test } from "node:test";
import type { NemesisName } from "./nemesis.js";
import { explain, run, RUN_LIMIT_MS, SECONDS } from "./chaos-harness.js";

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
});
