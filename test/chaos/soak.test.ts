/**
 * The soak's short version in `npm test`: 60 s (SOAK_SECONDS) of mixed load with kill -9 and
 * partitions on three voters. Resources and counts are judged; latency is measured and printed,
 * never asserted here (`npm run soak` judges its drift).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { runSoak } from "./soak.js";

const SECONDS = Number(process.env["SOAK_SECONDS"] ?? 60);

test(
  `soak: ${SECONDS} s of load and faults leave no sessions, watches or ephemerals behind, and no resource grows`,
  { timeout: (SECONDS + 300) * 1000 },
  async () => {
    const seed = process.env["SOAK_SEED"] === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env["SOAK_SEED"]);
    const result = await runSoak({
      durationMs: SECONDS * 1000,
      voters: 3,
      nemeses: ["kill", "partition"],
      seed,
      sampleMs: 2_000,
      warmUpMs: 10_000,
      judgeLatency: false,
    });
    const summary = result.verdicts.map((v) => `${String(v.valid)} ${v.check}: ${v.detail}`).join("\n");
    assert.ok(result.sessionsOpened > 4 && result.opsOk > 200, `the load did work: ${result.sessionsOpened} sessions, ${result.opsOk} ops`);
    assert.ok(result.faults > 0, "the nemesis injected faults");
    const settled = result.verdicts.find((v) => v.check.startsWith("sessions, watches and ephemerals back"));
    assert.equal(settled?.valid, true, `seed ${seed}\n${summary}`);
    assert.ok(result.valid, `seed ${seed}\n${summary}`);
  },
);
