/**
 * Quotas (issue 6): ZooKeeper's StatsTrack text, the tree keeping a quota's stats node current,
 * and prep's soft / hard limit checks, in-flight writes included.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ZkErrorCode } from "../../src/common/errors.js";
import { Prep } from "../../src/replica/prep.js";
import type { QuotaExceeded } from "../../src/replica/quota-guard.js";
import type { CreateRequest } from "../../src/replica/requests.js";
import { DataTree } from "../../src/store/data-tree.js";
import { formatQuotaFigures, limitsPathOf, parseQuotaFigures, statsPathOf } from "../../src/common/quota.js";
import { decodeSnapshot, encodeSnapshot } from "../../src/store/snapshot-codec.js";
import { PREP_SESSION, prepRunner } from "../helpers/prep-runner.js";

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

const create = (path: string, data = ""): CreateRequest => ({ op: "create", path, data: bytes(data), acl: [], mode: "persistent", ttlMs: 0 });

/** A tree and a prep; `prepare` only preps (the txn stays in flight), `apply` applies a prepped txn, `run` does both. */
function fixture(options: { enforceQuota?: boolean } = {}) {
  const tree = new DataTree();
  const events: QuotaExceeded[] = [];
  const prep = new Prep(tree, { ttlNodesEnabled: false, enforceQuota: options.enforceQuota ?? false, onQuotaExceeded: (e) => events.push(e) });
  const { prepare, apply, run } = prepRunner(tree, prep);
  /** What zkCli's setquota writes: the quota path's parents, the limits node, then the stats node. */
  const setQuota = (path: string, limits: string) => {
    let at = "/zookeeper/quota";
    for (const part of path.split("/").slice(1)) {
      at += "/" + part;
      run(create(at));
    }
    assert.equal(run(create(limitsPathOf(path), limits)).type, "create");
    assert.equal(run(create(statsPathOf(path), "count=0,bytes=0")).type, "create");
  };
  const usage = (path: string) => text(tree.getData(statsPathOf(path)).data);
  return { tree, prep, events, prepare, apply, run, setQuota, usage };
}

describe("StatsTrack text", () => {
  test("parses ZooKeeper's format, old and new, and formats it back the same way", () => {
    const f = parseQuotaFigures("count=10,bytes=-1=;byteHardLimit=-1;countHardLimit=20");
    assert.deepEqual(f, { count: 10, bytes: -1, countHardLimit: 20, byteHardLimit: -1 });
    assert.equal(formatQuotaFigures(f), "count=10,bytes=-1=;countHardLimit=20");
    assert.equal(formatQuotaFigures(parseQuotaFigures("count=3,bytes=7")), "count=3,bytes=7");
  });

  test("garbage never throws: unknown keys and non-numbers are ignored", () => {
    assert.deepEqual(parseQuotaFigures("nonsense;;count=x,bytes=5,other=1,="), { count: -1, bytes: 5, countHardLimit: -1, byteHardLimit: -1 });
    assert.deepEqual(parseQuotaFigures(new Uint8Array([0xff, 0xfe])), { count: -1, bytes: -1, countHardLimit: -1, byteHardLimit: -1 });
  });
});

describe("the tree keeps a quota's stats node current", () => {
  test("the stats node counts the subtree (its root included) from its creation, then every create, setData and delete", () => {
    const { run, setQuota, usage } = fixture();
    run(create("/app", "12345"));
    run(create("/app/a", "xy"));
    setQuota("/app", "count=100,bytes=-1");
    assert.equal(usage("/app"), "count=2,bytes=7");
    run(create("/app/a/b", "abc"));
    assert.equal(usage("/app"), "count=3,bytes=10");
    run({ op: "setData", path: "/app/a", data: bytes("xyzzy"), version: -1 });
    assert.equal(usage("/app"), "count=3,bytes=13");
    run({ op: "delete", path: "/app/a/b", version: -1 });
    assert.equal(usage("/app"), "count=2,bytes=10");
    run(create("/elsewhere", "not counted"));
    assert.equal(usage("/app"), "count=2,bytes=10");
  });

  test("the stats node's data changes without a new version, and the figures survive a snapshot", () => {
    const { tree, run, setQuota, usage } = fixture();
    run(create("/app"));
    setQuota("/app", "count=5");
    const before = tree.getData(statsPathOf("/app")).stat;
    run(create("/app/x", "1"));
    const after = tree.getData(statsPathOf("/app")).stat;
    assert.equal(after.version, before.version);
    assert.equal(after.mzxid, before.mzxid);
    assert.equal(after.dataLength, "count=2,bytes=1".length);
    const restored = decodeSnapshot(encodeSnapshot(tree));
    assert.equal(restored.quotaRootOf("/app/x/y"), "/app", "quota roots are rebuilt from the restored nodes");
    restored.apply({
      header: { sessionId: PREP_SESSION, cxid: 1, zxid: 1000, timeMs: 1 },
      body: { type: "create", path: "/app/y", data: bytes("22"), acl: [], ephemeralOwner: 0n, parentCversion: 2 },
    });
    assert.equal(text(restored.getData(statsPathOf("/app")).data), "count=3,bytes=3");
    assert.equal(usage("/app"), "count=2,bytes=1");
  });

  test("deleting the limits node removes the quota", () => {
    const { tree, run, setQuota } = fixture();
    run(create("/app"));
    setQuota("/app", "count=5");
    run({ op: "delete", path: limitsPathOf("/app"), version: -1 });
    assert.equal(tree.quotaRootOf("/app"), undefined);
  });
});

describe("prep checks quota limits", () => {
  test("a hard count limit is refused with QUOTAEXCEEDED when enforced, in-flight creates included", () => {
    const { prepare, apply, run, setQuota, events } = fixture({ enforceQuota: true });
    run(create("/app"));
    setQuota("/app", "count=-1,bytes=-1=;countHardLimit=3");
    const first = prepare(create("/app/a"));
    const second = prepare(create("/app/b"));
    const third = prepare(create("/app/c"));
    assert.equal(first.body.type, "create");
    assert.equal(second.body.type, "create");
    assert.deepEqual(third.body, { type: "error", err: ZkErrorCode.QUOTAEXCEEDED }, "the two creates still in flight count");
    apply(first);
    apply(second);
    assert.equal(events.length, 1);
    assert.deepEqual({ ...events[0]! }, { quota: "/app", path: "/app/c", limit: "count", hard: true, value: 4, max: 3, refused: true });
    run({ op: "delete", path: "/app/a", version: -1 });
    assert.equal(run(create("/app/c")).type, "create", "room again after a delete");
  });

  test("a hard bytes limit counts a setData's growth", () => {
    const { run, setQuota } = fixture({ enforceQuota: true });
    run(create("/app", "12345"));
    setQuota("/app", "count=-1,bytes=-1=;byteHardLimit=8");
    assert.equal(run({ op: "setData", path: "/app", data: bytes("12345678"), version: -1 }).type, "setData");
    assert.deepEqual(run({ op: "setData", path: "/app", data: bytes("123456789"), version: -1 }), { type: "error", err: ZkErrorCode.QUOTAEXCEEDED });
    assert.equal(run({ op: "setData", path: "/app", data: bytes("1"), version: -1 }).type, "setData", "shrinking is always allowed");
  });

  test("a setData past a hard limit with a wrong version is QUOTAEXCEEDED: ZooKeeper checks the quota first", () => {
    const { run, setQuota } = fixture({ enforceQuota: true });
    run(create("/app", "12345"));
    setQuota("/app", "count=-1,bytes=-1=;byteHardLimit=8");
    assert.deepEqual(run({ op: "setData", path: "/app", data: bytes("123456789"), version: 7 }), { type: "error", err: ZkErrorCode.QUOTAEXCEEDED });
    assert.deepEqual(run({ op: "setData", path: "/app", data: bytes("1"), version: 7 }), { type: "error", err: ZkErrorCode.BADVERSION });
  });

  test("soft limits, and hard limits without enforcement, are reported and allowed", () => {
    const soft = fixture({ enforceQuota: true });
    soft.run(create("/app"));
    soft.setQuota("/app", "count=1,bytes=-1");
    assert.equal(soft.run(create("/app/a")).type, "create");
    assert.equal(soft.events.length, 1);
    assert.equal(soft.events[0]!.hard, false);
    assert.equal(soft.events[0]!.refused, false);

    const lax = fixture({ enforceQuota: false });
    lax.run(create("/app"));
    lax.setQuota("/app", "count=-1,bytes=-1=;countHardLimit=1");
    assert.equal(lax.run(create("/app/a")).type, "create");
    assert.equal(lax.events[0]!.refused, false);
  });

  test("a multi that fails releases what its earlier ops charged", () => {
    const { run, setQuota } = fixture({ enforceQuota: true });
    run(create("/app"));
    setQuota("/app", "count=-1,bytes=-1=;countHardLimit=2");
    const failed = run({ op: "multi", ops: [create("/app/a"), create("/missing/parent")] });
    assert.equal(failed.type, "multi");
    assert.equal(run(create("/app/b")).type, "create", "the failed multi's create left no charge behind");
  });

  test("clients may write under /zookeeper/quota only; the rest of /zookeeper stays reserved", () => {
    const { run } = fixture();
    assert.equal(run(create("/zookeeper/quota/app")).type, "create");
    assert.deepEqual(run(create("/zookeeper/other")), { type: "error", err: ZkErrorCode.BADARGUMENTS });
    assert.deepEqual(run({ op: "delete", path: "/zookeeper/quota", version: -1 }), { type: "error", err: ZkErrorCode.BADARGUMENTS });
  });
});

test("the tree's quota figures read back through quotaOf", () => {
  const { tree, run, setQuota } = fixture();
  run(create("/app", "ab"));
  setQuota("/app", "count=4,bytes=100");
  assert.deepEqual(tree.quotaOf("/app"), {
    limits: { count: 4, bytes: 100, countHardLimit: -1, byteHardLimit: -1 },
    usage: { count: 1, bytes: 2, countHardLimit: -1, byteHardLimit: -1 },
  });
  assert.equal(tree.quotaOf("/other"), undefined);
  assert.ok(new DataTree().quotaRootOf("/app") === undefined);
});
