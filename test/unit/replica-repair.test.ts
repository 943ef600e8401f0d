/** A repairing member's verdict on whether enough good copies are left to repair it from. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { CannotRepairError, RepairState } from "../../src/replica/repair.js";

const damage = { file: "/data/3/log", reason: "records missing between 0x10 and 0x13" };
const threeVoters = { voters: new Set([1, 2, 3]), quorumSize: 2 };
const pick = (refusal: { first: boolean; due: boolean } | undefined) => (refusal === undefined ? undefined : { first: refusal.first, due: refusal.due });

test("a member holding a good copy never refuses", () => {
  const state = new RepairState(3, undefined);
  state.heardFrom(1, 1);
  state.heardFrom(2, 1);
  assert.equal(state.verdict(threeVoters), undefined);
});

test("a repairing member waits while a voter it has not heard from may be a good copy", () => {
  const state = new RepairState(3, damage);
  state.heardFrom(1, 1);
  assert.equal(state.verdict(threeVoters), undefined);
});

test("a repairing member refuses once every voter is heard from and the good copies make no quorum, naming the damage and what to do", () => {
  const state = new RepairState(3, damage);
  state.heardFrom(1, 1);
  state.heardFrom(2, undefined);
  const refusal = state.verdict(threeVoters);
  assert.ok(refusal instanceof CannotRepairError);
  assert.match(refusal.message, /\/data\/3\/log: records missing/);
  assert.match(refusal.message, /of the 3 voters only 1 hold a good copy \(servers 2\), and a quorum needs 2/);
  assert.match(refusal.message, /restore .* from a backup/);
});

test("a repairing member goes on while the good copies make a quorum, and a finished repair clears the state", () => {
  const state = new RepairState(1, damage);
  state.heardFrom(2, undefined);
  state.heardFrom(3, undefined);
  assert.equal(state.verdict(threeVoters), undefined);
  state.finished();
  assert.equal(state.active, false);
  assert.equal(state.damage, undefined);
});

test("a repairing member refuses once the linger is over and each voter it counts as repairing has said so again", () => {
  const state = new RepairState(3, damage);
  state.heardFrom(1, 7);
  state.heardFrom(2, undefined);
  assert.deepEqual(pick(state.refusal(threeVoters, 1_000, 2_800)), { first: true, due: false }, "found, lingering");
  state.heardFrom(1, 8);
  assert.deepEqual(pick(state.refusal(threeVoters, 2_000, 2_800)), { first: false, due: false }, "still lingering");
  assert.deepEqual(pick(state.refusal(threeVoters, 3_800, 2_800)), { first: false, due: true });
});

test("a voter's notification re-sent from before its repair finished never makes a repairing member refuse; its next word clears the verdict", () => {
  const state = new RepairState(1, damage);
  // Server 3 repaired and was paused since; its transport re-sends what it last sent, as often as links come back.
  state.heardFrom(3, 4);
  state.heardFrom(2, undefined);
  assert.equal(state.refusal(threeVoters, 1_000, 2_800)?.first, true);
  for (const nowMs of [2_000, 3_800, 10_000, 60_000]) {
    state.heardFrom(3, 4);
    assert.equal(state.refusal(threeVoters, nowMs, 2_800)?.due, false, `at ${nowMs} ms`);
  }
  // Server 3 resumes and answers as the good copy it is.
  state.heardFrom(3, undefined);
  assert.equal(state.refusal(threeVoters, 61_000, 2_800), undefined);
  assert.equal(state.lingering, false);
});

test("a repairing member numbers its notifications while it repairs, and not once its repair is finished", () => {
  const state = new RepairState(1, damage);
  assert.deepEqual([state.nextNotificationNumber(), state.nextNotificationNumber()], [1, 2]);
  state.finished();
  assert.equal(state.nextNotificationNumber(), undefined);
});

test("the only voter (a standalone server) refuses at once: there is no other copy", () => {
  assert.ok(new RepairState(1, damage).verdict({ voters: new Set([1]), quorumSize: 1 }) instanceof CannotRepairError);
});
