/** LearnerSyncPlan as a table: the learner's last zxid against the leader's in-memory history. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { historyIndexOf, planLearnerSync, type LearnerSyncPlan } from "../../src/consensus/sync-plan.js";
import { makeZxid } from "../../src/store/zxid.js";

const z = makeZxid;

// The leader's history: base 1.2 (its tree is at 1.4), then 1.3 1.4 1.5 3.1 3.2.
const window = [z(1, 3), z(1, 4), z(1, 5), z(3, 1), z(3, 2)];
const history = historyIndexOf(z(1, 2), window, z(1, 4));

const table: { name: string; learner: number; want: Pick<LearnerSyncPlan, "mode"> & { zxid: number } }[] = [
  { name: "in sync: empty DIFF", learner: z(3, 2), want: { mode: "DIFF", zxid: z(3, 2) } },
  { name: "learner at a window record: DIFF after it", learner: z(1, 4), want: { mode: "DIFF", zxid: z(1, 4) } },
  { name: "learner at the window base: DIFF after it", learner: z(1, 2), want: { mode: "DIFF", zxid: z(1, 2) } },
  { name: "learner at the last record of an old epoch: DIFF", learner: z(1, 5), want: { mode: "DIFF", zxid: z(1, 5) } },
  { name: "learner behind the window: SNAP", learner: z(1, 1), want: { mode: "SNAP", zxid: z(1, 4) } },
  { name: "fresh learner behind the window: SNAP", learner: 0, want: { mode: "SNAP", zxid: z(1, 4) } },
  { name: "uncommitted tail of an older epoch (2.1): TRUNC to 1.5", learner: z(2, 1), want: { mode: "TRUNC", zxid: z(1, 5) } },
  { name: "uncommitted tail past an old epoch's end (1.7): TRUNC to 1.5", learner: z(1, 7), want: { mode: "TRUNC", zxid: z(1, 5) } },
  { name: "learner ahead of the whole history (3.5): TRUNC to 3.2", learner: z(3, 5), want: { mode: "TRUNC", zxid: z(3, 2) } },
  { name: "learner ahead in a newer epoch (4.1): TRUNC to 3.2", learner: z(4, 1), want: { mode: "TRUNC", zxid: z(3, 2) } },
];

for (const row of table) {
  test(`sync plan: ${row.name}`, () => {
    const plan = planLearnerSync(row.learner, history);
    const zxid = plan.mode === "DIFF" ? plan.fromZxid : plan.mode === "TRUNC" ? plan.truncZxid : plan.snapshotZxid;
    assert.deepEqual({ mode: plan.mode, zxid }, row.want);
    assert.ok(plan.reason.length > 0, "every plan says why");
  });
}

test("sync plan: an empty window DIFFs a learner at the base and TRUNCs one past it", () => {
  const empty = historyIndexOf(z(2, 7), [], z(2, 7));
  assert.equal(planLearnerSync(z(2, 7), empty).mode, "DIFF");
  assert.deepEqual(planLearnerSync(z(2, 9), empty), { mode: "TRUNC", truncZxid: z(2, 7), reason: "learner is ahead of the leader's history" });
  assert.equal(planLearnerSync(z(2, 6), empty).mode, "SNAP");
});

test("sync plan: a divergent zxid just above the base truncates to the base", () => {
  const h = historyIndexOf(z(1, 5), [z(3, 1)], z(1, 5));
  assert.deepEqual(planLearnerSync(z(2, 4), h), { mode: "TRUNC", truncZxid: z(1, 5), reason: "learner has a txn the leader's history lacks" });
});
