/**
 * Prep as a specification: what txn each request becomes, given the tree and the changes still in
 * flight. Errors are ErrorTxns with ZooKeeper codes, never exceptions.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ZkErrorCode } from "../../src/common/errors.js";
import { Prep } from "../../src/server/prep.js";
import type { CreateRequest, WriteRequest } from "../../src/server/requests.js";
import { DataTree } from "../../src/store/data-tree.js";
import type { TxnBody } from "../../src/store/types.js";

const SESSION = 0x0100000000000001n;
const bytes = (s: string) => new TextEncoder().encode(s);

/** A tree, a prep, and a helper that preps and applies in one step (nothing in flight). */
function fixture() {
  const tree = new DataTree();
  const prep = new Prep(tree, { ttlNodesEnabled: false });
  let zxid = 0;
  const prepare = (request: WriteRequest, session = SESSION): { zxid: number; body: TxnBody } => {
    zxid += 1;
    return { zxid, body: prep.prepare(request, session, zxid) };
  };
  const apply = ({ zxid: z, body }: { zxid: number; body: TxnBody }, session = SESSION) => {
    const outcome = tree.apply({ header: { sessionId: session, cxid: 1, zxid: z, timeMs: 1000 + z }, body });
    prep.applied(z);
    return outcome;
  };
  const run = (request: WriteRequest, session = SESSION) => apply(prepare(request, session), session);
  tree.apply({ header: { sessionId: SESSION, cxid: 0, zxid: ++zxid, timeMs: 1 }, body: { type: "createSession", timeoutMs: 4000, password: new Uint8Array(16) } });
  return { tree, prep, prepare, apply, run };
}

const create = (path: string, mode: CreateRequest["mode"] = "persistent", data = "d"): CreateRequest => ({
  op: "create",
  path,
  data: bytes(data),
  acl: [],
  mode,
  ttlMs: 0,
});

describe("prep rejects with the ZooKeeper error code", () => {
  const cases: { name: string; setup: WriteRequest[]; request: WriteRequest; err: keyof typeof ZkErrorCode }[] = [
    { name: "relative path", setup: [], request: create("a"), err: "BADARGUMENTS" },
    { name: "empty segment", setup: [], request: create("/a//b"), err: "BADARGUMENTS" },
    { name: "dot segment", setup: [], request: create("/a/./b"), err: "BADARGUMENTS" },
    { name: "dot-dot segment", setup: [], request: create("/a/../b"), err: "BADARGUMENTS" },
    { name: "trailing slash", setup: [], request: create("/a/"), err: "BADARGUMENTS" },
    { name: "NUL in path", setup: [], request: create("/a\u0000b"), err: "BADARGUMENTS" },
    { name: "data over 1 MiB", setup: [], request: { op: "create", path: "/big", data: new Uint8Array(1024 * 1024 + 1), acl: [], mode: "persistent", ttlMs: 0 }, err: "BADARGUMENTS" },
    { name: "setData over 1 MiB", setup: [create("/a")], request: { op: "setData", path: "/a", data: new Uint8Array(1024 * 1024 + 1), version: -1 }, err: "BADARGUMENTS" },
    { name: "create without parent", setup: [], request: create("/a/b"), err: "NONODE" },
    { name: "create existing", setup: [create("/a")], request: create("/a"), err: "NODEEXISTS" },
    { name: "child of an ephemeral", setup: [create("/e", "ephemeral")], request: create("/e/c"), err: "NOCHILDRENFOREPHEMERALS" },
    { name: "delete with children", setup: [create("/a"), create("/a/b")], request: { op: "delete", path: "/a", version: -1 }, err: "NOTEMPTY" },
    { name: "delete missing", setup: [], request: { op: "delete", path: "/nope", version: -1 }, err: "NONODE" },
    { name: "delete wrong version", setup: [create("/a")], request: { op: "delete", path: "/a", version: 3 }, err: "BADVERSION" },
    { name: "delete root", setup: [], request: { op: "delete", path: "/", version: -1 }, err: "BADARGUMENTS" },
    { name: "setData wrong version", setup: [create("/a")], request: { op: "setData", path: "/a", data: bytes("x"), version: 1 }, err: "BADVERSION" },
    { name: "setData missing", setup: [], request: { op: "setData", path: "/a", data: bytes("x"), version: -1 }, err: "NONODE" },
    { name: "setAcl wrong aversion", setup: [create("/a")], request: { op: "setAcl", path: "/a", acl: [], version: 2 }, err: "BADVERSION" },
    { name: "unknown ACL scheme", setup: [], request: { op: "create", path: "/a", data: bytes(""), acl: [{ perms: 31, id: { scheme: "nope", id: "x" } }], mode: "persistent", ttlMs: 0 }, err: "INVALIDACL" },
    { name: "write under /zookeeper", setup: [], request: create("/zookeeper/x"), err: "BADARGUMENTS" },
    { name: "delete /zookeeper", setup: [], request: { op: "delete", path: "/zookeeper", version: -1 }, err: "BADARGUMENTS" },
    { name: "TTL node while disabled", setup: [], request: create("/t", "persistent-with-ttl"), err: "UNIMPLEMENTED" },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const f = fixture();
      for (const request of c.setup) f.run(request);
      const before = f.tree.digest();
      const { body } = f.prepare(c.request);
      assert.deepEqual(body, { type: "error", err: ZkErrorCode[c.err] });
      assert.equal(f.prep.inFlightChanges(), 0, "a rejected request leaves no change in flight");
      assert.equal(f.tree.digest(), before);
    });
  }
});

describe("sequential names", () => {
  test("count the parent's child creates, zero-padded to ten digits", () => {
    const f = fixture();
    f.run(create("/q"));
    const first = f.run(create("/q/item-", "persistent-sequential"));
    assert.equal(first.result.type === "create" && first.result.path, "/q/item-0000000000");
    f.run({ op: "delete", path: "/q/item-0000000000", version: -1 });
    // A delete does not give a number back: the next child is the second create.
    const second = f.run(create("/q/item-", "ephemeral-sequential"));
    assert.equal(second.result.type === "create" && second.result.path, "/q/item-0000000001");
    f.run(create("/q/other"));
    const third = f.run(create("/q/item-", "persistent-sequential"));
    assert.equal(third.result.type === "create" && third.result.path, "/q/item-0000000003", "every create counts, sequential or not");
  });

  test("count creates still in flight", () => {
    const f = fixture();
    f.run(create("/q"));
    const a = f.prepare(create("/q/n-", "persistent-sequential"));
    const b = f.prepare(create("/q/n-", "persistent-sequential"));
    assert.equal(a.body.type === "create" && a.body.path, "/q/n-0000000000");
    assert.equal(b.body.type === "create" && b.body.path, "/q/n-0000000001");
    assert.equal(b.body.type === "create" && b.body.parentCversion, 2);
  });

  test("a sequential create with a trailing slash names the child by number alone", () => {
    const f = fixture();
    f.run(create("/q"));
    const { result } = f.run(create("/q/", "persistent-sequential"));
    assert.equal(result.type === "create" && result.path, "/q/0000000000");
  });
});

describe("prep sees changes still in flight", () => {
  test("create then create of a child before either is applied", () => {
    const f = fixture();
    const parent = f.prepare(create("/a"));
    const child = f.prepare(create("/a/b"));
    assert.equal(child.body.type, "create");
    f.apply(parent);
    f.apply(child);
    assert.ok(f.tree.getNode("/a/b"));
  });

  test("delete in flight makes a later setData NONODE and a later create succeed", () => {
    const f = fixture();
    f.run(create("/a"));
    f.prepare({ op: "delete", path: "/a", version: -1 });
    assert.deepEqual(f.prepare({ op: "setData", path: "/a", data: bytes("x"), version: -1 }).body, { type: "error", err: ZkErrorCode.NONODE });
    assert.equal(f.prepare(create("/a")).body.type, "create");
  });

  test("versions advance with setData in flight", () => {
    const f = fixture();
    f.run(create("/a"));
    const first = f.prepare({ op: "setData", path: "/a", data: bytes("1"), version: 0 });
    const second = f.prepare({ op: "setData", path: "/a", data: bytes("2"), version: 1 });
    const stale = f.prepare({ op: "setData", path: "/a", data: bytes("3"), version: 1 });
    assert.deepEqual([first.body.type, second.body.type, stale.body], ["setData", "setData", { type: "error", err: ZkErrorCode.BADVERSION }]);
  });

  test("applied changes are retired", () => {
    const f = fixture();
    const t = f.prepare(create("/a"));
    assert.equal(f.prep.inFlightChanges(), 2);
    f.apply(t);
    assert.equal(f.prep.inFlightChanges(), 0);
  });
});

describe("multi", () => {
  test("later ops see earlier ones of the same multi", () => {
    const f = fixture();
    const { result } = f.run({ op: "multi", ops: [create("/m"), create("/m/c"), { op: "setData", path: "/m/c", data: bytes("x"), version: 0 }, { op: "check", path: "/m", version: 0 }] });
    assert.equal(result.type, "multi");
    assert.equal(f.tree.getNode("/m/c")?.stat.version, 1);
  });

  test("a failing op fails the whole multi with ZooKeeper's result list and leaves nothing in flight", () => {
    const f = fixture();
    const { body } = f.prepare({ op: "multi", ops: [create("/m"), { op: "check", path: "/m", version: 5 }, create("/m/c")] });
    assert.deepEqual(body, {
      type: "multi",
      ops: [
        { type: "create", path: "/m", data: bytes("d"), acl: body.type === "multi" && body.ops[0]?.type === "create" ? body.ops[0].acl : [], ephemeralOwner: 0n, parentCversion: 0 },
        { type: "error", err: ZkErrorCode.BADVERSION },
        { type: "error", err: ZkErrorCode.RUNTIMEINCONSISTENCY },
      ],
    });
    assert.equal(f.prep.inFlightChanges(), 0);
    // The failed multi's create of /m is not visible to the next request.
    assert.deepEqual(f.prepare({ op: "setData", path: "/m", data: bytes("x"), version: -1 }).body, { type: "error", err: ZkErrorCode.NONODE });
  });
});

describe("closeSession", () => {
  test("marks the session's ephemerals, applied and in flight, as going away", () => {
    const f = fixture();
    f.run(create("/e1", "ephemeral"));
    f.prepare(create("/e2", "ephemeral"));
    f.prepare({ op: "close" });
    assert.equal(f.prepare(create("/e1")).body.type, "create", "/e1 is free once the close is in flight");
    assert.equal(f.prepare(create("/e2")).body.type, "create", "/e2 (created in flight) too");
  });

  test("another session's ephemerals are untouched", () => {
    const f = fixture();
    const other = 0x0100000000000002n;
    f.tree.apply({ header: { sessionId: other, cxid: 0, zxid: 2, timeMs: 1 }, body: { type: "createSession", timeoutMs: 4000, password: new Uint8Array(16) } });
    f.prep.applied(2);
    const t = { zxid: 3, body: f.prep.prepare(create("/theirs", "ephemeral"), other, 3) };
    f.apply(t, other);
    f.prep.prepare({ op: "close" }, SESSION, 4);
    assert.deepEqual(f.prep.prepare(create("/theirs"), SESSION, 5), { type: "error", err: ZkErrorCode.NODEEXISTS });
  });
});
