/**
 * Prep for container and TTL nodes: what a create in those modes becomes, which TTLs are refused
 * with which ZooKeeper error, and the leader's own deletes (ZooKeeper's deleteContainer), which
 * prep proposes only while the node still qualifies with every change in flight counted.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ZkErrorCode } from "../../src/common/errors.js";
import { Prep } from "../../src/replica/prep.js";
import type { CreateRequest, WriteRequest } from "../../src/replica/requests.js";
import { DataTree } from "../../src/store/data-tree.js";
import { CONTAINER_OWNER, TTL_MS_MAX, ttlOwner, type TxnBody } from "../../src/store/types.js";

const SESSION = 0x0100000000000001n;
const bytes = (s: string) => new TextEncoder().encode(s);

/**
 * A tree and a prep with TTL nodes enabled (unless said otherwise). Txns are applied with the time
 * `clock.nowMs`, which tests move; `deleteContainer` preps a leader-made delete at that time.
 */
function fixture(ttlNodesEnabled = true) {
  const tree = new DataTree();
  const prep = new Prep(tree, { ttlNodesEnabled });
  const clock = { nowMs: 10_000 };
  let zxid = 0;
  const prepare = (request: WriteRequest): { zxid: number; body: TxnBody } => {
    zxid += 1;
    return { zxid, body: prep.prepare(request, SESSION, zxid, []) };
  };
  const apply = ({ zxid: z, body }: { zxid: number; body: TxnBody }, sessionId = SESSION) => {
    const outcome = tree.apply({ header: { sessionId, cxid: 1, zxid: z, timeMs: clock.nowMs }, body });
    prep.applied(z);
    return outcome;
  };
  const run = (request: WriteRequest) => {
    const prepared = prepare(request);
    if (prepared.body.type === "error") assert.fail(`setup ${request.op} failed with error ${prepared.body.err}`);
    return apply(prepared);
  };
  let allocations = 0;
  const deleteContainer = (path: string) =>
    prep.prepareDeleteContainer(path, clock.nowMs, () => {
      allocations += 1;
      return ++zxid;
    });
  tree.apply({
    header: { sessionId: SESSION, cxid: 0, zxid: ++zxid, timeMs: 1 },
    body: { type: "createSession", timeoutMs: 4000, password: new Uint8Array(16) },
  });
  return { tree, prep, clock, prepare, apply, run, deleteContainer, allocations: () => allocations };
}

const create = (path: string, mode: CreateRequest["mode"] = "persistent", ttlMs = 0): CreateRequest => ({
  op: "create",
  path,
  data: bytes("d"),
  acl: [],
  mode,
  ttlMs,
});
const del = (path: string): WriteRequest => ({ op: "delete", path, version: -1 });

describe("creating containers and TTL nodes", () => {
  test("a container carries ZooKeeper's container owner", () => {
    const f = fixture();
    const { body } = f.prepare(create("/c", "container"));
    assert.equal(body.type === "create" && body.ephemeralOwner, CONTAINER_OWNER);
  });

  test("a TTL node carries its TTL in its owner; a sequential one is named like every sequential node", () => {
    const f = fixture();
    f.run(create("/q"));
    f.run(create("/q/x"));
    const plain = f.prepare(create("/t", "persistent-with-ttl", 5_000));
    const sequential = f.prepare(create("/q/t-", "persistent-sequential-with-ttl", TTL_MS_MAX));
    assert.equal(plain.body.type === "create" && plain.body.ephemeralOwner, ttlOwner(5_000));
    assert.equal(sequential.body.type === "create" && sequential.body.path, "/q/t-0000000001");
    assert.equal(sequential.body.type === "create" && sequential.body.ephemeralOwner, ttlOwner(TTL_MS_MAX));
  });

  test("containers and TTL nodes may have children, in flight and applied", () => {
    const f = fixture();
    f.prepare(create("/c", "container"));
    f.prepare(create("/t", "persistent-with-ttl", 1_000));
    assert.equal(f.prepare(create("/c/in-flight")).body.type, "create");
    assert.equal(f.prepare(create("/t/in-flight", "ephemeral")).body.type, "create");
  });

  test("containers and TTL nodes can be created inside a multi", () => {
    const f = fixture();
    const { result } = f.run({ op: "multi", ops: [create("/c", "container"), create("/c/t", "persistent-with-ttl", 100)] });
    assert.equal(result.type, "multi");
    assert.equal(f.tree.getNode("/c")?.stat.ephemeralOwner, CONTAINER_OWNER);
    assert.equal(f.tree.getNode("/c/t")?.stat.ephemeralOwner, ttlOwner(100));
  });
});

describe("refused TTLs, with ZooKeeper's codes (validateCreateRequest runs before any path check)", () => {
  const cases: { name: string; request: CreateRequest; enabled: boolean; err: keyof typeof ZkErrorCode }[] = [
    { name: "a TTL node while TTL nodes are disabled", request: create("/t", "persistent-with-ttl", 1_000), enabled: false, err: "UNIMPLEMENTED" },
    {
      name: "a sequential TTL node while disabled, even with a bad TTL",
      request: create("/t", "persistent-sequential-with-ttl", 0),
      enabled: false,
      err: "UNIMPLEMENTED",
    },
    { name: "a TTL of 0", request: create("/t", "persistent-with-ttl", 0), enabled: true, err: "BADARGUMENTS" },
    { name: "a negative TTL", request: create("/t", "persistent-with-ttl", -5), enabled: true, err: "BADARGUMENTS" },
    {
      name: "a TTL above ZooKeeper's maximum (2^40 - 1 ms)",
      request: create("/t", "persistent-sequential-with-ttl", TTL_MS_MAX + 1),
      enabled: true,
      err: "BADARGUMENTS",
    },
    { name: "a fractional TTL", request: create("/t", "persistent-with-ttl", 1.5), enabled: true, err: "BADARGUMENTS" },
    { name: "a TTL on a persistent node", request: create("/p", "persistent", 1_000), enabled: true, err: "BADARGUMENTS" },
    { name: "a TTL on a container", request: create("/c", "container", 1_000), enabled: true, err: "BADARGUMENTS" },
    { name: "a TTL on an ephemeral node, TTL nodes disabled", request: create("/e", "ephemeral", 1_000), enabled: false, err: "BADARGUMENTS" },
    { name: "a disabled mode reported before the path", request: create("bad//path", "persistent-with-ttl", 10), enabled: false, err: "UNIMPLEMENTED" },
    { name: "a container under an ephemeral", request: create("/e/c", "container"), enabled: true, err: "NOCHILDRENFOREPHEMERALS" },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const f = fixture(c.enabled);
      f.run(create("/e", "ephemeral"));
      const before = f.tree.digest();
      assert.deepEqual(f.prepare(c.request).body, { type: "error", err: ZkErrorCode[c.err] });
      assert.equal(f.prep.inFlightChanges(), 0, "a refused create leaves nothing in flight");
      assert.equal(f.tree.digest(), before);
    });
  }
});

describe("the leader's deletes of empty containers and expired TTL nodes", () => {
  test("an empty container that has had a child is deleted like a client delete, with the parent counted", () => {
    const f = fixture();
    f.run(create("/c", "container"));
    f.run(create("/c/child"));
    f.run(del("/c/child"));
    const prepared = f.deleteContainer("/c");
    assert.ok(prepared);
    assert.deepEqual(prepared.body, { type: "delete", path: "/c" });
    // The delete is in flight: prep sees /c gone and the root's cversion moved on.
    assert.deepEqual(f.prepare(create("/c/again")).body, { type: "error", err: ZkErrorCode.NONODE });
    f.apply(prepared, 0n);
    assert.equal(f.tree.getNode("/c"), undefined);
  });

  const refusals: { name: string; setup: (f: ReturnType<typeof fixture>) => void; path: string }[] = [
    { name: "a container that never had a child", setup: (f) => f.run(create("/c", "container")), path: "/c" },
    {
      name: "a container with a child",
      setup: (f) => {
        f.run(create("/c", "container"));
        f.run(create("/c/a"));
        f.run(create("/c/b"));
        f.run(del("/c/a"));
      },
      path: "/c",
    },
    {
      name: "an emptied container gaining a child in flight",
      setup: (f) => {
        f.run(create("/c", "container"));
        f.run(create("/c/a"));
        f.run(del("/c/a"));
        f.prepare(create("/c/b"));
      },
      path: "/c",
    },
    {
      name: "an emptied container whose next child is created and deleted in flight",
      setup: (f) => {
        f.run(create("/c", "container"));
        f.run(create("/c/a"));
        f.run(del("/c/a"));
        f.prepare(create("/c/b"));
        f.prepare(del("/c/b"));
      },
      path: "/c",
    },
    {
      name: "an emptied container a client is deleting and recreating as a persistent node in flight",
      setup: (f) => {
        f.run(create("/c", "container"));
        f.run(create("/c/a"));
        f.run(del("/c/a"));
        f.prepare(del("/c"));
        f.prepare(create("/c"));
      },
      path: "/c",
    },
    {
      name: "a node recreated as a persistent node (applied)",
      setup: (f) => {
        f.run(create("/c", "container"));
        f.run(create("/c/a"));
        f.run(del("/c/a"));
        f.run(del("/c"));
        f.run(create("/c"));
        f.run(create("/c/a"));
        f.run(del("/c/a"));
      },
      path: "/c",
    },
    {
      name: "a TTL node not yet expired (exactly ttl ms old)",
      setup: (f) => {
        f.run(create("/t", "persistent-with-ttl", 500));
        f.clock.nowMs += 500;
      },
      path: "/t",
    },
    {
      name: "an expired TTL node with a child",
      setup: (f) => {
        f.run(create("/t", "persistent-with-ttl", 500));
        f.run(create("/t/child"));
        f.clock.nowMs += 10_000;
      },
      path: "/t",
    },
    {
      name: "an expired TTL node whose data is being set in flight",
      setup: (f) => {
        f.run(create("/t", "persistent-with-ttl", 500));
        f.clock.nowMs += 10_000;
        f.prepare({ op: "setData", path: "/t", data: bytes("fresh"), version: -1 });
      },
      path: "/t",
    },
    {
      name: "a TTL node refreshed by a setData (its mtime moved)",
      setup: (f) => {
        f.run(create("/t", "persistent-with-ttl", 500));
        f.clock.nowMs += 400;
        f.run({ op: "setData", path: "/t", data: bytes("fresh"), version: -1 });
        f.clock.nowMs += 400;
      },
      path: "/t",
    },
    { name: "a persistent node", setup: (f) => f.run(create("/p")), path: "/p" },
    { name: "an ephemeral node", setup: (f) => f.run(create("/e", "ephemeral")), path: "/e" },
    { name: "a node that does not exist", setup: () => {}, path: "/nothing" },
    {
      name: "a container already being deleted",
      setup: (f) => {
        f.run(create("/c", "container"));
        f.run(create("/c/a"));
        f.run(del("/c/a"));
        assert.ok(f.deleteContainer("/c"));
      },
      path: "/c",
    },
  ];
  for (const r of refusals) {
    test(`is not proposed for ${r.name}`, () => {
      const f = fixture();
      r.setup(f);
      const inFlight = f.prep.inFlightChanges();
      const allocated = f.allocations();
      assert.equal(f.deleteContainer(r.path), undefined);
      assert.equal(f.allocations(), allocated, "no zxid is taken for a delete that is dropped");
      assert.equal(f.prep.inFlightChanges(), inFlight, "and nothing is put in flight");
    });
  }

  test("an expired childless TTL node is deleted one ms after its TTL", () => {
    const f = fixture();
    f.run(create("/t", "persistent-with-ttl", 500));
    f.clock.nowMs += 501;
    const prepared = f.deleteContainer("/t");
    assert.deepEqual(prepared?.body, { type: "delete", path: "/t" });
  });

  test("a TTL node whose last child went is deleted once expired (ZooKeeper counts from mtime, not from the child)", () => {
    const f = fixture();
    f.run(create("/t", "persistent-with-ttl", 500));
    f.run(create("/t/child"));
    f.clock.nowMs += 1_000;
    f.run(del("/t/child"));
    assert.ok(f.deleteContainer("/t"));
  });

  test("the delete, once applied, lets a sibling sequential create count on (the parent's cversion is tracked)", () => {
    const f = fixture();
    f.run(create("/q"));
    f.run(create("/q/c", "container"));
    f.run(create("/q/c/x"));
    f.run(del("/q/c/x"));
    const prepared = f.deleteContainer("/q/c");
    assert.ok(prepared);
    const next = f.prepare(create("/q/s-", "persistent-sequential"));
    f.apply(prepared, 0n);
    const { result } = f.apply(next);
    assert.equal(result.type === "create" && result.path, "/q/s-0000000001");
  });
});
