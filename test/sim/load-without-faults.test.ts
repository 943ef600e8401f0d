/**
 * Load alone never causes an election (docs/architecture.md §7b): with no fault injected — no lost
 * or broken message, no crash, no partition — however many clients push writes as fast as they
 * can, through both doors, with one server's disk ten times slower than the others' in some runs,
 * the first leader stays leader and drops no learner. A leader that cut off a live follower for
 * lagging behind the load it admitted itself would fail here.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Simulation } from "./cluster.js";

const SEEDS = Number(process.env["SIM_LOAD_SEEDS"] ?? 20);
const LOAD_MS = 20_000;

test("in a run without faults, however hard the clients push, no learner is dropped and no election follows the first", () => {
  const failures: string[] = [];
  let acked = 0;
  for (let seed = 0; seed < SEEDS; seed++) {
    const sim = new Simulation(seed, {
      election: "fle",
      reconfig: false,
      electionLoss: 0,
      electionDuplicate: 0,
      streamBreak: 0,
      clients: 12,
      clientThinkMsMax: 2,
    });
    sim.runFor(2_000);
    const before = { elections: sim.stats.elections, stepDowns: sim.stats.stepDowns, dropped: sim.learnersDropped.length };
    sim.runFor(LOAD_MS);
    acked += sim.stats.ackedWrites;
    const dropped = sim.learnersDropped.slice(before.dropped);
    if (sim.stats.stepDowns > before.stepDowns || sim.stats.elections > before.elections || dropped.length > 0)
      failures.push(
        `seed ${seed}: ${sim.stats.elections - before.elections} elections, ${sim.stats.stepDowns - before.stepDowns} step-downs under load; ${dropped.join("; ")}`,
      );
    assert.deepEqual(sim.checker.violations, [], `seed ${seed}`);
  }
  assert.deepEqual(failures, []);
  assert.ok(acked > SEEDS * 100, `the clients' writes were acknowledged (${acked})`);
});
