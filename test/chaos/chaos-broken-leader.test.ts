/**
 * The proof that the chaos checkers can fail: a deliberately broken leader (commits on its own ack,
 * CORRAL_TEST_UNSAFE_SOLO_COMMIT=1) that a partition run must catch. A file of its own: a cluster
 * whose replicas diverged can spend minutes in the run's recovery, liveness and final-read limits.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { describe, test } from "node:test";
import { explain, run, RUN_LIMIT_MS, SECONDS } from "./chaos-harness.js";

describe("chaos: a broken leader is caught", () => {
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
