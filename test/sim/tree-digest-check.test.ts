/**
 * Replicas check each other: a learner whose tree is changed behind its back (as a lost or doubled
 * txn, or a bug in apply, would leave it) finds its digest differs from its leader's within one
 * digest interval, stops serving, and repairs from the leader's snapshot; afterwards it holds the
 * leader's tree again. Clients keep writing throughout.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { TREE_DIGEST_INTERVAL_MS } from "../../src/replica/tree-digest-check.js";
import { Simulation } from "./cluster.js";

const QUIET = {
  voters: 3,
  observers: 1,
  clients: 3,
  reconfig: false,
  election: "fle" as const,
  electionLoss: 0,
  electionDuplicate: 0,
  streamBreak: 0,
  slowDiskServer: 0,
};

for (const seed of [1, 2, 3, 4]) {
  test(`seed ${seed}: a learner whose tree was altered is caught within one digest interval and repairs from the leader's snapshot`, () => {
    const sim = new Simulation(seed, QUIET);
    sim.runFor(3_000);
    const leader = sim.servers.find((s) => s.leading && s.serving);
    assert.ok(leader, "a leader serves");
    // An observer on odd seeds, a follower on even ones: both are learners the leader checks.
    const learner = sim.servers.find((s) => s !== leader && s.serving && s.observer === (seed % 2 === 1));
    assert.ok(learner, "a learner serves");
    const snapsBefore = sim.stats.snaps;
    const alteredAtMs = sim.nowMs;
    sim.alterTree(learner.id, "/", new TextEncoder().encode("not written by any txn"));

    sim.runFor(TREE_DIGEST_INTERVAL_MS + 500);
    const found = sim.treeDivergences.find((d) => d.serverId === learner.id);
    assert.ok(found, `server ${learner.id} found its tree diverged`);
    // A digest is due once per interval; the learner compares it when its tree reaches the zxid (a few txns away at most).
    assert.ok(found.atMs - alteredAtMs <= TREE_DIGEST_INTERVAL_MS + 500, `found ${found.atMs - alteredAtMs} ms after the change`);
    assert.deepEqual(
      sim.treeDivergences.map((d) => d.serverId),
      [learner.id],
      "no other member raised the alarm",
    );

    sim.runFor(5_000);
    assert.ok(sim.stats.snaps > snapsBefore, "the learner was synced by a SNAP");
    assert.equal(learner.treeAltered, false, "the leader's snapshot replaced the altered tree");
    assert.ok(learner.serving, "the learner serves again");
    assert.equal(learner.tree.getData("/").data.length, 0, "the root holds what the txns wrote: nothing");
    assert.equal(sim.converge(20_000), undefined, "every member converges on the leader's tree");
    assert.deepEqual(sim.checker.violations, []);
  });
}

test("trees never altered raise no alarm", () => {
  const sim = new Simulation(7, QUIET);
  sim.runFor(15_000);
  assert.ok(sim.stats.commits > 50, `clients wrote (${sim.stats.commits} commits)`);
  assert.equal(sim.stats.treeDivergences, 0);
  assert.deepEqual(sim.checker.violations, []);
});
