/** A repairing member's verdict on whether enough good copies are left to repair it from. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { CannotRepairError, RepairState } from "../../src/replica/repair.js";

const damage = { file: "/data/3/log", reason: "records missing between 0x10 and 0x13" };
const threeVoters = { voters: new Set([1, 2, 3]), quorumSize: 2 };

test("a member holding a good copy never refuses", () => {
  const state = new RepairState(3, undefined);
  state.heardFrom(1, true);
  state.heardFrom(2, true);
  assert.equal(state.verdict(threeVoters), undefined);
});

test("a repairing member waits while a voter it has not heard from may be a good copy", () => {
  const state = new RepairState(3, damage);
  state.heardFrom(1, true);
  assert.equal(state.verdict(threeVoters), undefined);
});

test("a repairing member refuses once every voter is heard from and the good copies make no quorum, naming the damage and what to do", () => {
  const state = new RepairState(3, damage);
  state.heardFrom(1, true);
  state.heardFrom(2, false);
  const refusal = state.verdict(threeVoters);
  assert.ok(refusal instanceof CannotRepairError);
  assert.match(refusal.message, /\/data\/3\/log: records missing/);
  assert.match(refusal.message, /of the 3 voters only 1 hold a good copy \(servers 2\), and a quorum needs 2/);
  assert.match(refusal.message, /restore .* from a backup/);
});

test("a repairing member goes on while the good copies make a quorum, and a finished repair clears the state", () => {
  const state = new RepairState(1, damage);
  state.heardFrom(2, false);
  state.heardFrom(3, false);
  assert.equal(state.verdict(threeVoters), undefined);
  state.finished();
  assert.equal(state.active, false);
  assert.equal(state.damage, undefined);
});

test("a repairing member refuses only on what it heard within the linger, and only once the linger is over", () => {
  const state = new RepairState(3, damage);
  state.heardFrom(1, true, 1_000);
  state.heardFrom(2, false, 1_000);
  const first = state.refusal(threeVoters, 1_000, 2_800);
  assert.deepEqual([first?.first, first?.due], [true, false], "found, lingering");
  // Server 1 said it repairs 2.8 s ago and nothing since (it finished, or it is paused): no refusal.
  assert.equal(state.refusal(threeVoters, 3_800, 2_800), undefined);
  assert.equal(state.lingering, false);
  // Heard afresh throughout the linger: the refusal is due.
  state.heardFrom(1, true, 3_900);
  state.heardFrom(2, false, 3_900);
  state.refusal(threeVoters, 3_900, 2_800);
  state.heardFrom(1, true, 6_600);
  state.heardFrom(2, false, 6_600);
  assert.equal(state.refusal(threeVoters, 6_700, 2_800)?.due, true);
});

test("the only voter (a standalone server) refuses at once: there is no other copy", () => {
  assert.ok(new RepairState(1, damage).verdict({ voters: new Set([1]), quorumSize: 1 }) instanceof CannotRepairError);
});
