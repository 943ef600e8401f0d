/**
 * Membership under chaos: five voters and an observer whose membership changes while clocks jump,
 * files are damaged and servers die (the same nemeses at length: `npm run chaos:all`).
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { describe, test } from "node:test";
import { isDeferral } from "./report.js";
import { explain, run, RUN_LIMIT_MS, SECONDS } from "./chaos-harness.js";

describe(`chaos: membership changes beside other faults`, () => {
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
});
