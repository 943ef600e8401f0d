/**
 * Prep as a specification: what txn each request becomes, given the tree and the changes still in
 * flight. Errors are ErrorTxns with ZooKeeper codes, never exceptions.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { generateDigest } from "../../src/common/digest.js";
import { ZkErrorCode } from "../../src/common/errors.js";
import { SUPER_ID } from "../../src/replica/acl.js";
import { Prep } from "../../src/replica/prep.js";
import type { CreateRequest, WriteRequest } from "../../src/replica/requests.js";
import { DataTree } from "../../src/store/data-tree.js";
import { OPEN_ACL_UNSAFE, Perms, type Acl, type Id, type TxnBody } from "../../src/store/types.js";

const SESSION = 0x0100000000000001n;
const bytes = (s: string) => new TextEncoder().encode(s);

/** A tree, a prep, and a helper that preps and applies in one step (nothing in flight). */
function fixture() {
  const tree = new DataTree();
  const prep = new Prep(tree, { ttlNodesEnabled: false });
  let zxid = 0;
  const prepare = (request: WriteRequest, session = SESSION, authInfo: readonly Id[] = []): { zxid: number; body: TxnBody } => {
    zxid += 1;
    return { zxid, body: prep.prepare(request, session, zxid, authInfo) };
  };
  const apply = ({ zxid: z, body }: { zxid: number; body: TxnBody }, session = SESSION) => {
    const outcome = tree.apply({ header: { sessionId: session, cxid: 1, zxid: z, timeMs: 1000 + z }, body });
    prep.applied(z);
    return outcome;
  };
  const run = (request: WriteRequest, session = SESSION, authInfo: readonly Id[] = []) => apply(prepare(request, session, authInfo), session);
  tree.apply({
    header: { sessionId: SESSION, cxid: 0, zxid: ++zxid, timeMs: 1 },
    body: { type: "createSession", timeoutMs: 4000, password: new Uint8Array(16) },
  });
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
    {
      name: "data over 1 MiB",
      setup: [],
      request: { op: "create", path: "/big", data: new Uint8Array(1024 * 1024 + 1), acl: [], mode: "persistent", ttlMs: 0 },
      err: "BADARGUMENTS",
    },
    {
      name: "setData over 1 MiB",
      setup: [create("/a")],
      request: { op: "setData", path: "/a", data: new Uint8Array(1024 * 1024 + 1), version: -1 },
      err: "BADARGUMENTS",
    },
    { name: "create without parent", setup: [], request: create("/a/b"), err: "NONODE" },
    { name: "create existing", setup: [create("/a")], request: create("/a"), err: "NODEEXISTS" },
    { name: "child of an ephemeral", setup: [create("/e", "ephemeral")], request: create("/e/c"), err: "NOCHILDRENFOREPHEMERALS" },
    { name: "delete with children", setup: [create("/a"), create("/a/b")], request: { op: "delete", path: "/a", version: -1 }, err: "NOTEMPTY" },
    { name: "delete missing", setup: [], request: { op: "delete", path: "/nope", version: -1 }, err: "NONODE" },
    { name: "delete wrong version", setup: [create("/a")], request: { op: "delete", path: "/a", version: 3 }, err: "BADVERSION" },
    { name: "delete root", setup: [], request: { op: "delete", path: "/", version: -1 }, err: "BADARGUMENTS" },
    { name: "setData wrong version", setup: [create("/a")], request: { op: "setData", path: "/a", data: bytes("x"), version: 1 }, err: "BADVERSION" },
    { name: "setData missing", setup: [], request: { op: "setData", path: "/a", data: bytes("x"), version: -1 }, err: "NONODE" },
    { name: "setAcl wrong aversion", setup: [create("/a")], request: { op: "setAcl", path: "/a", acl: [...OPEN_ACL_UNSAFE], version: 2 }, err: "BADVERSION" },
    { name: "setAcl with an empty list", setup: [create("/a")], request: { op: "setAcl", path: "/a", acl: [], version: -1 }, err: "INVALIDACL" },
    { name: "setAcl of a missing node", setup: [], request: { op: "setAcl", path: "/a", acl: [...OPEN_ACL_UNSAFE], version: -1 }, err: "NONODE" },
    {
      name: "digest ACL id without a colon",
      setup: [],
      request: { op: "create", path: "/a", data: bytes(""), acl: [{ perms: 31, id: { scheme: "digest", id: "bob" } }], mode: "persistent", ttlMs: 0 },
      err: "INVALIDACL",
    },
    {
      name: "ip ACL id with bad bits",
      setup: [],
      request: { op: "create", path: "/a", data: bytes(""), acl: [{ perms: 31, id: { scheme: "ip", id: "10.0.0.0/33" } }], mode: "persistent", ttlMs: 0 },
      err: "INVALIDACL",
    },
    {
      name: "auth ACL from a session with no authenticated id",
      setup: [],
      request: { op: "create", path: "/a", data: bytes(""), acl: [{ perms: 31, id: { scheme: "auth", id: "" } }], mode: "persistent", ttlMs: 0 },
      err: "INVALIDACL",
    },
    {
      name: "unknown ACL scheme",
      setup: [],
      request: { op: "create", path: "/a", data: bytes(""), acl: [{ perms: 31, id: { scheme: "nope", id: "x" } }], mode: "persistent", ttlMs: 0 },
      err: "INVALIDACL",
    },
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
    const { result } = f.run({
      op: "multi",
      ops: [create("/m"), create("/m/c"), { op: "setData", path: "/m/c", data: bytes("x"), version: 0 }, { op: "check", path: "/m", version: 0 }],
    });
    assert.equal(result.type, "multi");
    assert.equal(f.tree.getNode("/m/c")?.stat.version, 1);
  });

  test("a failing op fails the whole multi with ZooKeeper's result list and leaves nothing in flight", () => {
    const f = fixture();
    const { body } = f.prepare({ op: "multi", ops: [create("/m"), { op: "check", path: "/m", version: 5 }, create("/m/c")] });
    assert.deepEqual(body, {
      type: "multi",
      ops: [
        {
          type: "create",
          path: "/m",
          data: bytes("d"),
          acl: body.type === "multi" && body.ops[0]?.type === "create" ? body.ops[0].acl : [],
          ephemeralOwner: 0n,
          parentCversion: 0,
        },
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
    const t = { zxid: 3, body: f.prep.prepare(create("/theirs", "ephemeral"), other, 3, []) };
    f.apply(t, other);
    f.prep.prepare({ op: "close" }, SESSION, 4, []);
    assert.deepEqual(f.prep.prepare(create("/theirs"), SESSION, 5, []), { type: "error", err: ZkErrorCode.NODEEXISTS });
  });
});

// ---------------------------------------------------------------------------------------------
// ACLs: ZooKeeper 3.8's PrepRequestProcessor checkACL calls, one rule a test.

const ALICE: Id = { scheme: "digest", id: generateDigest("alice:secret") };
const BOB: Id = { scheme: "digest", id: generateDigest("bob:secret") };
const ANYONE = (perms: number): Acl => ({ perms, id: { scheme: "world", id: "anyone" } });
const only = (id: Id, perms = Perms.ALL): Acl => ({ perms, id });
const withAcl = (path: string, acl: Acl[], mode: CreateRequest["mode"] = "persistent"): CreateRequest => ({ ...create(path, mode), acl });
/** The error a request is answered with: its own, or a multi's first failing op's. */
const errOf = (body: TxnBody): number => {
  if (body.type === "error") return body.err;
  if (body.type === "multi") return body.ops.find((op) => op.type === "error")?.err ?? 0;
  return 0;
};

describe("each write needs one permission on one node", () => {
  const rules: { op: string; perm: keyof typeof Perms; on: "parent" | "node"; request: WriteRequest }[] = [
    { op: "create", perm: "CREATE", on: "parent", request: create("/p/new") },
    { op: "sequential create", perm: "CREATE", on: "parent", request: create("/p/seq-", "persistent-sequential") },
    { op: "delete", perm: "DELETE", on: "parent", request: { op: "delete", path: "/p/child", version: -1 } },
    { op: "setData", perm: "WRITE", on: "node", request: { op: "setData", path: "/p/child", data: bytes("x"), version: -1 } },
    { op: "setAcl", perm: "ADMIN", on: "node", request: { op: "setAcl", path: "/p/child", acl: [ANYONE(Perms.READ)], version: -1 } },
    { op: "check in a multi", perm: "READ", on: "node", request: { op: "multi", ops: [{ op: "check", path: "/p/child", version: -1 }] } },
  ];
  /** /p and /p/child, the one named by `on` granting `perms` to everyone and the other everything. */
  const setup = (on: "parent" | "node", perms: number) => {
    const f = fixture();
    f.run(create("/p"));
    f.run(withAcl("/p/child", [ANYONE(on === "node" ? perms : Perms.ALL)]));
    f.run({ op: "setAcl", path: "/p", acl: [ANYONE(on === "parent" ? perms : Perms.ALL)], version: -1 });
    assert.equal(f.tree.getNode("/p")?.stat.aversion, 1, "set up");
    return f;
  };
  for (const rule of rules) {
    const perm = Perms[rule.perm];
    test(`${rule.op} is refused NOAUTH without ${rule.perm} on the ${rule.on}`, () => {
      const f = setup(rule.on, Perms.ALL & ~perm);
      const before = f.tree.digest();
      const { body } = f.prepare(rule.request);
      assert.equal(errOf(body), ZkErrorCode.NOAUTH);
      if (body.type === "multi") assert.deepEqual(body.ops, [{ type: "error", err: ZkErrorCode.NOAUTH }]);
      assert.equal(f.prep.inFlightChanges(), 0);
      assert.equal(f.tree.digest(), before);
    });
    test(`${rule.op} is allowed with ${rule.perm} alone on the ${rule.on}`, () => {
      const f = setup(rule.on, perm);
      assert.equal(errOf(f.prepare(rule.request).body), 0);
    });
  }

  test("the node's own ACL does not decide a delete, its parent's does", () => {
    const f = fixture();
    f.run(withAcl("/p", [ANYONE(Perms.ALL)]));
    f.run(withAcl("/p/child", [only(ALICE)]));
    assert.equal(errOf(f.prepare({ op: "delete", path: "/p/child", version: -1 }).body), 0);
  });

  test("a create is not checked against the ACL it asks for", () => {
    const f = fixture();
    assert.equal(errOf(f.prepare(withAcl("/mine", [only(ALICE)])).body), 0, "anyone may create a node only alice can use");
  });

  test("a close is never refused, even with its ephemerals under a locked parent", () => {
    const f = fixture();
    f.run(create("/e", "ephemeral"));
    f.run({ op: "setAcl", path: "/", acl: [only(ALICE)], version: -1 }, SESSION, []);
    assert.equal(f.prepare({ op: "close" }).body.type, "closeSession");
  });
});

describe("ZooKeeper's order of checks", () => {
  const locked = () => {
    const f = fixture();
    f.run(withAcl("/p", [only(ALICE)]));
    f.run(withAcl("/p/child", [only(ALICE)]), SESSION, [ALICE]);
    return f;
  };
  const cases: { name: string; request: WriteRequest; err: keyof typeof ZkErrorCode }[] = [
    { name: "create under a missing parent: NONODE before the ACL", request: create("/missing/x"), err: "NONODE" },
    { name: "create of an existing node under a locked parent: NOAUTH before NODEEXISTS", request: create("/p/child"), err: "NOAUTH" },
    {
      name: "create with an invalid ACL under a locked parent: INVALIDACL before NOAUTH",
      request: withAcl("/p/x", [{ perms: 31, id: { scheme: "bogus", id: "" } }]),
      err: "INVALIDACL",
    },
    { name: "delete of a missing node under a locked parent: NOAUTH before NONODE", request: { op: "delete", path: "/p/none", version: -1 }, err: "NOAUTH" },
    {
      name: "delete with a wrong version under a locked parent: NOAUTH before BADVERSION",
      request: { op: "delete", path: "/p/child", version: 7 },
      err: "NOAUTH",
    },
    { name: "setData of a missing node: NONODE", request: { op: "setData", path: "/p/none", data: bytes("x"), version: -1 }, err: "NONODE" },
    {
      name: "setData with a wrong version on a locked node: NOAUTH before BADVERSION",
      request: { op: "setData", path: "/p", data: bytes("x"), version: 7 },
      err: "NOAUTH",
    },
    {
      name: "setAcl with an invalid ACL on a missing node: INVALIDACL before NONODE",
      request: { op: "setAcl", path: "/none", acl: [{ perms: 31, id: { scheme: "ip", id: "nope" } }], version: -1 },
      err: "INVALIDACL",
    },
    {
      name: "setAcl with a wrong aversion on a locked node: NOAUTH before BADVERSION",
      request: { op: "setAcl", path: "/p", acl: [ANYONE(Perms.ALL)], version: 7 },
      err: "NOAUTH",
    },
    { name: "writes under /zookeeper stay BADARGUMENTS", request: { op: "setData", path: "/zookeeper", data: bytes("x"), version: -1 }, err: "BADARGUMENTS" },
  ];
  for (const c of cases) {
    test(c.name, () => {
      assert.equal(errOf(locked().prepare(c.request).body), ZkErrorCode[c.err]);
    });
  }
});

describe("requests from the ZooKeeper door (zooKeeperChecks): ZooKeeper 3.8's own order", () => {
  const zk = <R extends WriteRequest>(request: R): R => ({ ...request, zooKeeperChecks: true });
  const open = (path: string, mode: CreateRequest["mode"] = "persistent") => withAcl(path, [ANYONE(Perms.ALL)], mode);
  /** /a with a child, /ro without CREATE, /nod without DELETE (with a child), /e an ephemeral. */
  const tree = () => {
    const f = fixture();
    for (const request of [
      open("/a"),
      open("/a/child"),
      withAcl("/ro", [ANYONE(Perms.ALL & ~Perms.CREATE)]),
      open("/nod"),
      open("/nod/c"),
      open("/e", "ephemeral"),
    ])
      f.run(request);
    f.run({ op: "setAcl", path: "/nod", acl: [ANYONE(Perms.ALL & ~Perms.DELETE)], version: -1 });
    return f;
  };
  const del = (path: string, version = -1): WriteRequest => ({ op: "delete", path, version });
  const cases: { name: string; request: WriteRequest; err: keyof typeof ZkErrorCode | "OK"; gRpc: keyof typeof ZkErrorCode | "OK" }[] = [
    {
      name: "a create's empty ACL list is INVALIDACL (through the gRPC door it asks for the default ACL)",
      request: create("/x"),
      err: "INVALIDACL",
      gRpc: "OK",
    },
    { name: "a create's path without a slash: BADARGUMENTS before the empty ACL", request: create("a"), err: "BADARGUMENTS", gRpc: "BADARGUMENTS" },
    { name: "a create's path with NUL: BADARGUMENTS before the empty ACL", request: create("/a\u0000"), err: "BADARGUMENTS", gRpc: "BADARGUMENTS" },
    { name: "a create's empty segment: the empty ACL's INVALIDACL first", request: create("/a//b"), err: "INVALIDACL", gRpc: "BADARGUMENTS" },
    { name: 'a create\'s empty segment: its parent ("/a/") does not exist', request: open("/a//b"), err: "NONODE", gRpc: "BADARGUMENTS" },
    { name: "a create below a malformed missing parent: NONODE", request: open("/missing/./x"), err: "NONODE", gRpc: "BADARGUMENTS" },
    {
      name: 'a create\'s "." name under an existing parent: BADARGUMENTS once the parent allows it',
      request: open("/a/."),
      err: "BADARGUMENTS",
      gRpc: "BADARGUMENTS",
    },
    { name: 'a create\'s "." name under a parent without CREATE: NOAUTH first', request: open("/ro/."), err: "NOAUTH", gRpc: "BADARGUMENTS" },
    { name: "a create's bad character under a parent without CREATE: NOAUTH first", request: open("/ro/\u0001"), err: "NOAUTH", gRpc: "BADARGUMENTS" },
    { name: "a create with a trailing slash under a missing parent: NONODE", request: open("/missing/"), err: "NONODE", gRpc: "BADARGUMENTS" },
    { name: "a create with a trailing slash under an existing parent: BADARGUMENTS", request: open("/a/"), err: "BADARGUMENTS", gRpc: "BADARGUMENTS" },
    { name: "a relative create with a slash: its parent does not exist", request: open("a/b"), err: "NONODE", gRpc: "BADARGUMENTS" },
    { name: "a sequential create with a trailing slash names a child", request: open("/a/", "persistent-sequential"), err: "OK", gRpc: "OK" },
    { name: "a create of the root: NODEEXISTS", request: open("/"), err: "NODEEXISTS", gRpc: "NODEEXISTS" },
    { name: "a create below an ephemeral: NOCHILDRENFOREPHEMERALS", request: open("/e/x"), err: "NOCHILDRENFOREPHEMERALS", gRpc: "NOCHILDRENFOREPHEMERALS" },
    { name: 'a delete\'s empty segment: NONODE ("/a/" is no node)', request: del("/a//b"), err: "NONODE", gRpc: "BADARGUMENTS" },
    { name: "a delete with a trailing slash: NONODE", request: del("/a/"), err: "NONODE", gRpc: "BADARGUMENTS" },
    { name: "a delete's bad character: NONODE", request: del("/a/\u0001"), err: "NONODE", gRpc: "BADARGUMENTS" },
    { name: 'a delete\'s "." name under a parent without DELETE: NOAUTH', request: del("/nod/."), err: "NOAUTH", gRpc: "BADARGUMENTS" },
    { name: "a delete without a slash: BADARGUMENTS", request: del("x"), err: "BADARGUMENTS", gRpc: "BADARGUMENTS" },
    { name: "a delete of an empty path: BADARGUMENTS", request: del(""), err: "BADARGUMENTS", gRpc: "BADARGUMENTS" },
    { name: "a delete with NUL: BADARGUMENTS", request: del("/a\u0000"), err: "BADARGUMENTS", gRpc: "BADARGUMENTS" },
    { name: "a delete of the root: BADARGUMENTS", request: del("/"), err: "BADARGUMENTS", gRpc: "BADARGUMENTS" },
    { name: "a delete of /zookeeper/config: BADARGUMENTS", request: del("/zookeeper/config"), err: "BADARGUMENTS", gRpc: "BADARGUMENTS" },
    { name: "a delete with a wrong version of a node with children: BADVERSION before NOTEMPTY", request: del("/a", 5), err: "BADVERSION", gRpc: "BADVERSION" },
    { name: "a multi's create checks its path ZooKeeper's way too", request: { op: "multi", ops: [open("/a//b")] }, err: "NONODE", gRpc: "BADARGUMENTS" },
    { name: "a create's empty ACL in a multi is that op's INVALIDACL", request: { op: "multi", ops: [create("/x")] }, err: "INVALIDACL", gRpc: "OK" },
  ];
  const code = (name: keyof typeof ZkErrorCode | "OK") => (name === "OK" ? 0 : ZkErrorCode[name]);
  for (const c of cases) {
    test(c.name, () => {
      const f = tree();
      const before = f.tree.digest();
      assert.equal(errOf(f.prepare(zk(c.request)).body), code(c.err), "through the ZooKeeper door");
      if (c.err !== "OK") assert.equal(f.tree.digest(), before);
      assert.equal(errOf(tree().prepare(c.request).body), code(c.gRpc), "through the gRPC door");
    });
  }
});

describe("who passes", () => {
  const locked = () => {
    const f = fixture();
    f.run(withAcl("/p", [only(ALICE), ANYONE(Perms.READ)]));
    f.run(withAcl("/net", [{ perms: Perms.ALL, id: { scheme: "ip", id: "10.0.0.0/8" } }]));
    return f;
  };
  const setData = (path: string): WriteRequest => ({ op: "setData", path, data: bytes("x"), version: -1 });

  test("a session holding the digest id named by the ACL", () => {
    assert.equal(errOf(locked().prepare(setData("/p"), SESSION, [{ scheme: "ip", id: "127.0.0.1" }, ALICE]).body), 0);
    assert.equal(errOf(locked().prepare(setData("/p"), SESSION, [BOB]).body), ZkErrorCode.NOAUTH);
  });

  test("a session whose address is inside the ACL's ip/bits", () => {
    assert.equal(errOf(locked().prepare(setData("/net"), SESSION, [{ scheme: "ip", id: "10.200.0.1" }]).body), 0);
    assert.equal(errOf(locked().prepare(setData("/net"), SESSION, [{ scheme: "ip", id: "11.0.0.1" }]).body), ZkErrorCode.NOAUTH);
  });

  test("the super user, whatever the ACL", () => {
    const f = locked();
    const requests: WriteRequest[] = [
      setData("/p"),
      create("/p/x"),
      { op: "delete", path: "/p/x", version: -1 },
      { op: "setAcl", path: "/p", acl: [ANYONE(Perms.ALL)], version: -1 },
    ];
    for (const request of requests) assert.notEqual(f.run(request, SESSION, [SUPER_ID]).result.type, "error", request.op);
  });
});

describe("the auth scheme", () => {
  test("expands to the creator's digest ids, and only those may then write", () => {
    const f = fixture();
    const { result } = f.run(withAcl("/mine", [{ perms: Perms.ALL, id: { scheme: "auth", id: "" } }]), SESSION, [{ scheme: "ip", id: "127.0.0.1" }, ALICE]);
    assert.equal(result.type, "create");
    assert.deepEqual(f.tree.getAcl("/mine").acl, [only(ALICE)]);
    const setData: WriteRequest = { op: "setData", path: "/mine", data: bytes("x"), version: -1 };
    assert.equal(errOf(f.prepare(setData, SESSION, [BOB]).body), ZkErrorCode.NOAUTH);
    assert.equal(errOf(f.prepare(setData, SESSION, [ALICE]).body), 0);
  });
});

describe("ACLs still in flight decide later requests", () => {
  test("a setAcl in flight locks the node for the next write", () => {
    const f = fixture();
    f.run(create("/a"));
    assert.equal(f.prepare({ op: "setAcl", path: "/a", acl: [only(ALICE)], version: 0 }).body.type, "setAcl");
    assert.equal(errOf(f.prepare({ op: "setData", path: "/a", data: bytes("x"), version: -1 }).body), ZkErrorCode.NOAUTH);
    assert.equal(errOf(f.prepare({ op: "setData", path: "/a", data: bytes("x"), version: -1 }, SESSION, [ALICE]).body), 0);
  });

  test("a create in flight gives its child creates the new node's ACL", () => {
    const f = fixture();
    f.prepare(withAcl("/a", [only(ALICE)]));
    assert.equal(errOf(f.prepare(create("/a/b")).body), ZkErrorCode.NOAUTH);
    assert.equal(errOf(f.prepare(create("/a/b"), SESSION, [ALICE]).body), 0);
  });

  test("aversion advances with setAcls in flight", () => {
    const f = fixture();
    f.run(create("/a"));
    const first = f.prepare({ op: "setAcl", path: "/a", acl: [ANYONE(Perms.ALL)], version: 0 });
    const second = f.prepare({ op: "setAcl", path: "/a", acl: [ANYONE(Perms.ALL)], version: 1 });
    const stale = f.prepare({ op: "setAcl", path: "/a", acl: [ANYONE(Perms.ALL)], version: 1 });
    assert.deepEqual([first.body.type, second.body.type, errOf(stale.body)], ["setAcl", "setAcl", ZkErrorCode.BADVERSION]);
    f.apply(first);
    f.apply(second);
    assert.equal(f.tree.getNode("/a")?.stat.aversion, 2);
  });

  test("a multi refused at one op by its ACL reports NOAUTH there and applies nothing", () => {
    const f = fixture();
    f.run(withAcl("/p", [only(ALICE)]));
    const { body } = f.prepare({ op: "multi", ops: [create("/free"), create("/p/x"), create("/free2")] });
    assert.deepEqual(body.type === "multi" && body.ops.map((op) => (op.type === "error" ? op.err : 0)), [
      0,
      ZkErrorCode.NOAUTH,
      ZkErrorCode.RUNTIMEINCONSISTENCY,
    ]);
    assert.equal(f.prep.inFlightChanges(), 0);
  });
});
