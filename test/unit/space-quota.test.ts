/**
 * The space quota (spaceQuotaBytes): the tree's running estimate of its own memory, and the
 * leader prep's refusal of writes that would grow it past the ceiling, with the alarm they raise.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ZkErrorCode } from "../../src/common/errors.js";
import { limitsPathOf, statsPathOf } from "../../src/common/quota.js";
import { Prep } from "../../src/replica/prep.js";
import type { CreateRequest, DeleteRequest, SetDataRequest } from "../../src/replica/requests.js";
import { SpaceAlarm, type SpaceRefusal } from "../../src/replica/space-quota.js";
import { DataTree } from "../../src/store/data-tree.js";
import { decodeSnapshot, encodeSnapshot } from "../../src/store/snapshot-codec.js";
import type { TxnBody } from "../../src/store/types.js";
import { prepRunner } from "../helpers/prep-runner.js";
import { aclCostBytes, znodeCostBytes, ZNODE_OVERHEAD_BYTES } from "../../src/store/znode-cost.js";

const bytes = (size: number) => new Uint8Array(size);
const create = (path: string, size = 0, mode: CreateRequest["mode"] = "persistent"): CreateRequest => ({
  op: "create",
  path,
  data: bytes(size),
  acl: [],
  mode,
  ttlMs: 0,
});
const setData = (path: string, size: number): SetDataRequest => ({ op: "setData", path, data: bytes(size), version: -1 });
const del = (path: string): DeleteRequest => ({ op: "delete", path, version: -1 });

/** What a full walk of the tree sums: the figure the running total must always equal. */
function recount(tree: DataTree): number {
  let total = 0;
  tree.walk((path, node) => (total += znodeCostBytes(path, node.data.length, node.acl)));
  return total;
}

/** A tree, a prep with a space quota of `quotaBytes` over what the fresh tree holds, and the alarm's reports. */
function fixture(quotaBytes = 1_000_000) {
  const tree = new DataTree();
  const reports: string[] = [];
  const refusals: SpaceRefusal[] = [];
  const alarm = new SpaceAlarm(tree.estimatedBytes() + quotaBytes, {
    refused: (refusal) => refusals.push(refusal),
    raised: (refusal) => reports.push(`raised ${refusal.path}`),
    cleared: () => reports.push("cleared"),
  });
  const prep = new Prep(tree, { ttlNodesEnabled: false, spaceAlarm: alarm });
  // As the replica does after each applied txn: the alarm looks at the tree's new size.
  const { prepare, apply, run } = prepRunner(tree, prep, () => alarm.settle(tree.estimatedBytes()));
  return { tree, alarm, reports, refusals, prepare, apply, run };
}

const refused = (body: TxnBody) => body.type === "error" && body.err === ZkErrorCode.QUOTAEXCEEDED;

describe("the tree's estimated bytes", () => {
  test("stay equal to a full recount through creates, setData, setAcl, deletes, multis, quota stats and closeSession", () => {
    const { tree, run } = fixture(100_000_000);
    assert.equal(tree.estimatedBytes(), recount(tree), "a fresh tree");
    run(create("/app", 10));
    run(create("/app/child", 300));
    run(setData("/app/child", 5));
    run(setData("/app", 2000));
    run({ op: "setAcl", path: "/app", acl: [{ perms: 31, id: { scheme: "digest", id: "user:abcdefghijklmnopqrstuvwxyz0=" } }], version: -1 });
    run(create("/zookeeper/quota/app"));
    run({ op: "create", path: limitsPathOf("/app"), data: new TextEncoder().encode("count=100,bytes=-1"), acl: [], mode: "persistent", ttlMs: 0 });
    run({ op: "create", path: statsPathOf("/app"), data: new TextEncoder().encode("count=0,bytes=0"), acl: [], mode: "persistent", ttlMs: 0 });
    run(create("/app/more", 12345));
    run(create("/eph", 77, "ephemeral"));
    run({ op: "multi", ops: [create("/m1", 40), setData("/app/more", 1), del("/app/child")] });
    assert.equal(tree.estimatedBytes(), recount(tree), "after the writes");
    run({ op: "close" });
    assert.equal(tree.getNode("/eph"), undefined, "closeSession deleted the ephemeral");
    assert.equal(tree.estimatedBytes(), recount(tree), "after closeSession");
    const restored = decodeSnapshot(encodeSnapshot(tree));
    assert.equal(restored.estimatedBytes(), tree.estimatedBytes(), "a restored tree counts the same");
  });

  test("count a znode's path twice, its data at its length, and a fixed overhead for its records", () => {
    const { tree, run } = fixture();
    const before = tree.estimatedBytes();
    run(create("/abc", 1000));
    assert.equal(tree.estimatedBytes() - before, ZNODE_OVERHEAD_BYTES + 2 * "/abc".length + 1000 + aclCostBytes(tree.getNode("/abc")!.acl));
  });
});

describe("prep refuses writes that would grow the tree past the space quota", () => {
  test("a create past the ceiling is QUOTAEXCEEDED and changes nothing; one that fits is not", () => {
    const { tree, run } = fixture(30000);
    assert.equal(run(create("/a", 10000)).type, "create");
    assert.equal(run(create("/b", 10000)).type, "create");
    const before = tree.estimatedBytes();
    assert.ok(refused(run(create("/c", 10000))), "the third would pass the ceiling");
    assert.equal(tree.estimatedBytes(), before);
    assert.equal(tree.getNode("/c"), undefined);
    assert.equal(run(create("/d", 0)).type, "create", "a small one still fits under the ceiling");
  });

  test("deletes, shrinking setData and reads keep working at the ceiling; a growing setData does not", () => {
    const { tree, run } = fixture(25000);
    run(create("/a", 10000));
    run(create("/b", 9000));
    assert.ok(refused(run(setData("/a", 15000))), "growing /a by 5000 passes the ceiling");
    assert.equal(run(setData("/a", 10)).type, "setData", "shrinking is allowed");
    assert.equal(run(setData("/a", 10)).type, "setData", "the same size is allowed");
    assert.equal(tree.getData("/b").data.length, 9000, "reads are answered");
    assert.equal(run(del("/b")).type, "delete");
  });

  test("writes still in flight count: pipelined creates cannot slip past the ceiling together", () => {
    const { tree, prepare, apply } = fixture(50000);
    const bodies = Array.from({ length: 10 }, (_, i) => prepare(create(`/n${i}`, 10000)));
    const admitted = bodies.filter(({ body }) => body.type === "create").length;
    assert.ok(admitted >= 1 && admitted < 10, `${admitted} of 10 admitted`);
    for (const prepared of bodies) apply(prepared);
    assert.ok(tree.estimatedBytes() <= recount(new DataTree()) + 50000, "the applied tree is within the ceiling");
  });

  test("a multi is charged as a whole: a delete in it makes room for a create in it", () => {
    const { run } = fixture(25000);
    run(create("/a", 10000));
    run(create("/b", 10000));
    assert.ok(refused(run(create("/c", 10000))));
    const result = run({ op: "multi", ops: [del("/a"), create("/c", 10000)] });
    assert.equal(result.type, "multi");
    assert.deepEqual(
      (result as { ops: { type: string }[] }).ops.map((op) => op.type),
      ["delete", "create"],
    );
  });

  test("a refused op fails its whole multi, and its charges are not kept", () => {
    const { tree, run } = fixture(25000);
    run(create("/a", 10000));
    const result = run({ op: "multi", ops: [create("/b", 5000), create("/c", 10000)] });
    assert.equal(result.type, "multi");
    assert.ok((result as { ops: { type: string; err?: number }[] }).ops.some((op) => op.type === "error" && op.err === ZkErrorCode.QUOTAEXCEEDED));
    assert.equal(tree.getNode("/b"), undefined);
    assert.equal(run(create("/b", 10000)).type, "create", "the failed multi's create no longer counts");
  });
});

describe("the space alarm", () => {
  test("is raised once by the first refusal, counts every refusal, and clears once the write refused last would fit", () => {
    const { alarm, reports, refusals, run } = fixture(25000);
    run(create("/a", 10000));
    run(create("/b", 10000));
    assert.equal(alarm.active, false);
    run(create("/c", 10000));
    run(create("/c", 10000));
    assert.equal(alarm.active, true);
    assert.deepEqual(reports, ["raised /c"], "one report however many refusals");
    assert.equal(refusals.length, 2);
    run(setData("/b", 9000));
    assert.equal(alarm.active, true, "1,000 bytes freed are not enough for the refused create");
    run(del("/b"));
    assert.equal(alarm.active, false);
    assert.deepEqual(reports, ["raised /c", "cleared"]);
    assert.equal(run(create("/c", 10000)).type, "create", "the write refused before now fits");
  });
});
