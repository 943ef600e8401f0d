/**
 * The pure parts of the election-family recipes: candidate ordering and who watches whom, member
 * ordering, the two-phase-commit decision rule, and the master's assignment plan.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { sameMembers, memberNodesInOrder } from "../../src/recipes/group-membership.js";
import { candidatesInOrder, standingOf } from "../../src/recipes/leader-election.js";
import { planAssignments, tasksInOrder, type AssignmentAction } from "../../src/recipes/master-worker.js";
import { checkSites, decideOutcome, JOINED } from "../../src/recipes/two-phase-commit.js";

const P1 = "_c_11111111-1111-1111-1111-111111111111-";
const P2 = "_c_22222222-2222-2222-2222-222222222222-";

describe("leader election ordering", () => {
  test("candidates sort by sequence number whatever their protected prefix, and other children are ignored", () => {
    const children = [`${P1}n_0000000007`, "config", `${P2}n_0000000003`, "n_0000000005", `${P1}lock-0000000001`];
    assert.deepEqual(candidatesInOrder(children), [`${P2}n_0000000003`, "n_0000000005", `${P1}n_0000000007`]);
  });

  test("the lowest candidate leads and every other one watches only the candidate right below it", () => {
    const children = [`${P1}n_0000000009`, `${P2}n_0000000002`, "n_0000000004"];
    assert.deepEqual(standingOf(children, `${P2}n_0000000002`), { kind: "leader" });
    assert.deepEqual(standingOf(children, "n_0000000004"), { kind: "follower", predecessor: `${P2}n_0000000002` });
    assert.deepEqual(standingOf(children, `${P1}n_0000000009`), { kind: "follower", predecessor: "n_0000000004" });
  });

  test("a candidate whose node is not among the children is absent", () => {
    assert.deepEqual(standingOf(["n_0000000001"], "n_0000000002"), { kind: "absent" });
  });
});

describe("group membership", () => {
  test("members are listed in join order, non-member children ignored", () => {
    assert.deepEqual(memberNodesInOrder([`${P1}member-0000000010`, "x", `${P2}member-0000000002`]), [`${P2}member-0000000002`, `${P1}member-0000000010`]);
  });

  test("two lists are the same only with the same ids, data and order", () => {
    const a = [{ id: "member-0000000001", data: Buffer.from("a") }];
    assert.equal(sameMembers(a, [{ id: "member-0000000001", data: Buffer.from("a") }]), true);
    assert.equal(sameMembers(a, [{ id: "member-0000000001", data: Buffer.from("b") }]), false);
    assert.equal(sameMembers(a, []), false);
  });
});

describe("two-phase commit decision", () => {
  const site = (name: string, vote: string, alive = true) => ({ site: name, vote, alive });

  test("commits only once every site voted commit", () => {
    assert.equal(decideOutcome([site("a", "commit"), site("b", "commit")]), "commit");
    assert.equal(decideOutcome([site("a", "commit"), site("b", JOINED)]), undefined);
    assert.equal(decideOutcome([site("a", "commit"), site("b", "")]), undefined);
  });

  test("one abort vote decides abort at once, whatever the others have not voted yet", () => {
    assert.equal(decideOutcome([site("a", ""), site("b", "abort"), site("c", JOINED)]), "abort");
  });

  test("a site that joined and lost its session before voting aborts; one that never joined only delays", () => {
    assert.equal(decideOutcome([site("a", "commit"), site("b", JOINED, false)]), "abort");
    assert.equal(decideOutcome([site("a", "commit"), site("b", "", false)]), undefined);
    assert.equal(decideOutcome([site("a", "commit", false)]), "commit");
  });

  test("site names that would collide with the layout are refused", () => {
    for (const bad of [[], ["a", "a"], ["outcome"], ["alive-a"], ["a/b"], [""]]) {
      assert.throws(
        () => checkSites(bad),
        (error: Error & { code?: string }) => error.code === "BADARGUMENTS",
        JSON.stringify(bad),
      );
    }
    checkSites(["a", "b-1", "site.3"]);
  });
});

describe("master assignment plan", () => {
  const task = (n: number) => `${P1}task-${String(n).padStart(10, "0")}`;
  const plan = (liveWorkers: string[], tasks: string[], assignments: Record<string, string[]>): AssignmentAction[] =>
    planAssignments({ liveWorkers, tasks, assignments: new Map(Object.entries(assignments)) });

  test("tasks are ordered by submission sequence", () => {
    assert.deepEqual(tasksInOrder([task(3), task(1), task(2)]), [task(1), task(2), task(3)]);
  });

  test("unassigned tasks go oldest first to the least-loaded live worker", () => {
    assert.deepEqual(plan(["w1", "w2"], [task(1), task(2), task(3)], { w1: [task(1)] }), [
      { kind: "assign", task: task(2), worker: "w2" },
      { kind: "assign", task: task(3), worker: "w1" },
    ]);
  });

  test("a dead worker's unfinished tasks move to live workers, its finished ones are dropped", () => {
    assert.deepEqual(plan(["w2"], [task(1), task(3)], { w1: [task(1), task(2)], w2: [task(3)] }), [
      { kind: "drop", task: task(2), from: "w1" },
      { kind: "reassign", task: task(1), from: "w1", worker: "w2" },
    ]);
  });

  test("with no live worker nothing is assigned, and a dead worker's empty dir is removed", () => {
    assert.deepEqual(plan([], [task(1)], { w1: [], w2: [task(1)] }), [{ kind: "removeDir", worker: "w1" }]);
  });

  test("live workers' assignments are never touched and a task is never planned twice", () => {
    const actions = plan(["w1", "w2"], [task(1), task(2)], { w1: [task(1)], dead: [task(1), task(2)] });
    assert.deepEqual(actions, [
      { kind: "drop", task: task(1), from: "dead" },
      { kind: "reassign", task: task(2), from: "dead", worker: "w2" },
    ]);
  });
});
