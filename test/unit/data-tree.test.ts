import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ZkError, ZkErrorCode } from "../../src/common/errors.js";
import type { AddWatchMode } from "../../src/common/watch-modes.js";
import { DataTree, sequenceNumberOf, sequentialPath, type ApplyOutcome, type WatchLists, type ZNode } from "../../src/store/data-tree.js";
import {
  CONTAINER_OWNER,
  OPEN_ACL_UNSAFE,
  Perms,
  ttlOwner,
  WatchEventType,
  type Acl,
  type Stat,
  type TxnBody,
  type WatchDelivery,
  type WatchEventTypeValue,
} from "../../src/store/types.js";
import { decodeSnapshot, encodeSnapshot } from "../../src/store/snapshot-codec.js";
import { bytes, T, TxnScript, Z } from "../helpers/store-txns.js";

const { NodeCreated, NodeDeleted, NodeDataChanged, NodeChildrenChanged } = WatchEventType;
const S1 = 0x1_0000_0000_0001n;
const S2 = 0x1_0000_0000_0002n;
const W = 7n; // a watcher
const READ_ONLY: Acl[] = [{ perms: Perms.READ, id: { scheme: "world", id: "anyone" } }];

/** Every field, spelled out, of a node created by txn n and not touched since. */
function createdStat(n: number, extra: Partial<Stat> = {}): Stat {
  return {
    czxid: Z(n),
    mzxid: Z(n),
    ctime: T(n),
    mtime: T(n),
    version: 0,
    cversion: 0,
    aversion: 0,
    ephemeralOwner: 0n,
    dataLength: 0,
    numChildren: 0,
    pzxid: Z(n),
    ...extra,
  };
}

function rawStat(tree: DataTree, path: string): Stat {
  const node = tree.getNode(path);
  assert.ok(node, `${path} exists`);
  return { ...node.stat };
}

/** path → (data, acl, stat) for every node: what "nothing changed" compares. */
function dump(tree: DataTree): Map<string, unknown> {
  const out = new Map<string, unknown>();
  tree.walk((path, node) => out.set(path, { data: [...node.data], acl: structuredClone(node.acl), stat: { ...node.stat } }));
  return out;
}

function watchLists(lists: Partial<WatchLists>): WatchLists {
  return { dataWatches: [], existWatches: [], childWatches: [], persistentWatches: [], persistentRecursiveWatches: [], ...lists };
}

function delivery(watcher: bigint, type: WatchEventTypeValue, path: string, zxid: number): WatchDelivery {
  return { watcher, event: { type, path, zxid } };
}

describe("a fresh DataTree", () => {
  test("holds /, the reserved /zookeeper, /zookeeper/quota and /zookeeper/config, with ZooKeeper's stats", () => {
    const tree = new DataTree();
    assert.equal(tree.nodeCount(), 4);
    assert.equal(tree.lastProcessedZxid, 0);
    const zero = { czxid: 0, mzxid: 0, ctime: 0, mtime: 0, version: 0, aversion: 0, ephemeralOwner: 0n, dataLength: 0, pzxid: 0 };
    // ZooKeeper shows cversion = 2 * creates - numChildren: -1 for a parent of one built-in child.
    assert.deepEqual(rawStat(tree, "/"), { ...zero, cversion: -1, numChildren: 1 });
    assert.deepEqual(rawStat(tree, "/zookeeper"), { ...zero, cversion: -2, numChildren: 2 });
    assert.deepEqual(rawStat(tree, "/zookeeper/quota"), { ...zero, cversion: 0, numChildren: 0 });
    // ZooKeeper 3.8 reads its config node back as empty, world-readable, with aversion -1.
    assert.deepEqual(rawStat(tree, "/zookeeper/config"), { ...zero, aversion: -1, cversion: 0, numChildren: 0 });
    assert.deepEqual(tree.getAcl("/zookeeper/config").acl, [{ perms: 1, id: { scheme: "world", id: "anyone" } }]);
    assert.deepEqual(tree.getChildren("/").children, ["zookeeper"]);
    assert.deepEqual([...tree.getChildren("/zookeeper").children].sort(), ["config", "quota"]);
    assert.deepEqual(tree.getAcl("/zookeeper").acl, [...OPEN_ACL_UNSAFE]);
    assert.equal(tree.getData("/zookeeper/quota").data.length, 0);
    assert.equal(tree.sessions.size, 0);
  });

  test("a tree restored from a snapshot older than /zookeeper/config gains it, as a fresh tree has it", () => {
    const fresh = new DataTree();
    const nodes = new Map<string, ZNode>();
    fresh.walk((path, node) => {
      if (path === "/zookeeper/config") return;
      const copy: ZNode = { data: node.data, acl: [...node.acl], stat: { ...node.stat }, children: new Set(node.children) };
      if (path === "/zookeeper") {
        copy.children.delete("config");
        copy.stat.numChildren = 1;
        copy.stat.cversion = -1;
      }
      nodes.set(path, copy);
    });
    const restored = DataTree.restore(nodes, new Map(), 0);
    assert.equal(restored.nodeCount(), fresh.nodeCount());
    assert.equal(restored.digest(), fresh.digest());
    assert.deepEqual(restored.getData("/zookeeper/config").stat, fresh.getData("/zookeeper/config").stat);
  });

  test("names its first sequential child under / with 0000000000, as ZooKeeper does", () => {
    const tree = new DataTree();
    assert.equal(sequenceNumberOf(rawStat(tree, "/")), 0);
    assert.equal(sequentialPath("/job-", sequenceNumberOf(rawStat(tree, "/"))), "/job-0000000000");
  });
});

describe("apply: create", () => {
  const CASES: { mode: string; path: string; owner: bigint; shownOwner: bigint; index: "ephemeral" | "container" | "ttl" | "none" }[] = [
    { mode: "persistent", path: "/app/p", owner: 0n, shownOwner: 0n, index: "none" },
    { mode: "persistent-sequential", path: "/app/p-0000000000", owner: 0n, shownOwner: 0n, index: "none" },
    { mode: "ephemeral", path: "/app/e", owner: S1, shownOwner: S1, index: "ephemeral" },
    { mode: "ephemeral-sequential", path: "/app/lock-0000000000", owner: S1, shownOwner: S1, index: "ephemeral" },
    { mode: "container", path: "/app/c", owner: CONTAINER_OWNER, shownOwner: 0n, index: "container" },
    { mode: "persistent-with-ttl", path: "/app/t", owner: ttlOwner(60_000), shownOwner: 0n, index: "ttl" },
  ];
  for (const { mode, path, owner, shownOwner, index } of CASES) {
    test(`${mode}: node stat, parent stat, result and owner index`, () => {
      const script = new TxnScript();
      script.createSession(S1); // 1
      script.create("/app"); // 2
      const { result, deliveries } = script.create(path, { data: bytes("hello"), owner, acl: READ_ONLY }); // 3
      const tree = script.tree;

      const stored = createdStat(3, { ephemeralOwner: owner, dataLength: 5 });
      assert.deepEqual(rawStat(tree, path), stored);
      const shown = { ...stored, ephemeralOwner: shownOwner };
      assert.deepEqual(result, { type: "create", path, stat: shown });
      assert.deepEqual(tree.exists(path), shown);
      assert.deepEqual(tree.getData(path), { data: bytes("hello"), stat: shown });
      assert.deepEqual(tree.getAcl(path).acl, READ_ONLY);

      assert.deepEqual(rawStat(tree, "/app"), createdStat(2, { cversion: 1, numChildren: 1, pzxid: Z(3) }));
      assert.deepEqual(tree.getChildren("/app").children, [path.slice("/app/".length)]);
      assert.deepEqual(deliveries, []);
      assert.equal(tree.lastProcessedZxid, Z(3));
      assert.equal(tree.nodeCount(), 6);

      assert.deepEqual([...tree.ephemeralsOf(S1)], index === "ephemeral" ? [path] : []);
      assert.deepEqual([...tree.containerPaths()], index === "container" ? [path] : []);
      assert.deepEqual([...tree.ttlPaths()], index === "ttl" ? [path] : []);
    });
  }

  test("a create under / counts from the root's cversion of -1", () => {
    const script = new TxnScript();
    script.create("/a"); // 1
    assert.deepEqual(rawStat(script.tree, "/"), {
      czxid: 0,
      mzxid: 0,
      ctime: 0,
      mtime: 0,
      version: 0,
      cversion: 0,
      aversion: 0,
      ephemeralOwner: 0n,
      dataLength: 0,
      numChildren: 2,
      pzxid: Z(1),
    });
    assert.equal(sequenceNumberOf(rawStat(script.tree, "/")), 1);
  });

  test("the sequence number counts creates only: deletes leave gaps in cversion, not in names", () => {
    const script = new TxnScript();
    script.create("/q"); // 1
    script.create("/q/n-0000000000"); // 2
    script.create("/q/n-0000000001"); // 3
    script.delete("/q/n-0000000000"); // 4
    const parent = rawStat(script.tree, "/q");
    assert.equal(parent.cversion, 3);
    assert.equal(parent.numChildren, 1);
    assert.equal(sequenceNumberOf(parent), 2);
    assert.equal(sequentialPath("/q/n-", sequenceNumberOf(parent)), "/q/n-0000000002");
  });
});

describe("getChildren", () => {
  test("a listing after a child is created or deleted shows the change, though listings in between share one sorted list", () => {
    const script = new TxnScript();
    script.create("/app");
    script.create("/app/b");
    script.create("/app/a");
    const tree = script.tree;
    const first = tree.getChildren("/app").children;
    assert.deepEqual(first, ["a", "b"]);
    assert.equal(tree.getChildren("/app").children, first, "unchanged children: the same list");
    script.create("/app/c");
    assert.deepEqual(tree.getChildren("/app").children, ["a", "b", "c"]);
    script.delete("/app/a");
    script.create("/app/d");
    assert.deepEqual(tree.getChildren("/app").children, ["b", "c", "d"], "a delete and a create of the same count");
    assert.deepEqual(first, ["a", "b"], "an earlier listing is never changed");
  });
});

describe("apply: delete", () => {
  test("removes the node; the parent's cversion +1, pzxid = zxid, numChildren -1", () => {
    const script = new TxnScript();
    script.create("/app"); // 1
    script.create("/app/a"); // 2
    script.create("/app/b"); // 3
    const { result, deliveries } = script.delete("/app/a"); // 4
    const tree = script.tree;
    assert.deepEqual(result, { type: "delete" });
    assert.deepEqual(deliveries, []);
    assert.equal(tree.getNode("/app/a"), undefined);
    assert.equal(tree.exists("/app/a"), null);
    assert.deepEqual(rawStat(tree, "/app"), createdStat(1, { cversion: 3, numChildren: 1, pzxid: Z(4) }));
    assert.deepEqual(rawStat(tree, "/app/b"), createdStat(3));
    assert.deepEqual(tree.getChildren("/app").children, ["b"]);
    assert.equal(tree.nodeCount(), 6);
  });

  const OWNERS: [string, bigint, (tree: DataTree) => ReadonlySet<string>][] = [
    ["an ephemeral leaves its session's index", S1, (tree) => tree.ephemeralsOf(S1)],
    ["a container leaves the container index", CONTAINER_OWNER, (tree) => tree.containerPaths()],
    ["a TTL node leaves the TTL index", ttlOwner(1000), (tree) => tree.ttlPaths()],
  ];
  for (const [name, owner, index] of OWNERS) {
    test(name, () => {
      const script = new TxnScript();
      script.create("/x", { owner });
      assert.deepEqual([...index(script.tree)], ["/x"]);
      script.delete("/x");
      assert.deepEqual([...index(script.tree)], []);
    });
  }
});

describe("apply: setData, setAcl, check", () => {
  test("setData replaces data: version, mzxid, mtime, dataLength change; nothing else", () => {
    const script = new TxnScript();
    script.create("/app", { data: bytes("v0") }); // 1
    const rootBefore = rawStat(script.tree, "/");
    const { result } = script.setData("/app", bytes("v1-longer")); // 2
    const expected = createdStat(1, { mzxid: Z(2), mtime: T(2), version: 1, dataLength: 9 });
    assert.deepEqual(rawStat(script.tree, "/app"), expected);
    assert.deepEqual(result, { type: "setData", stat: expected });
    assert.deepEqual(script.tree.getData("/app").data, bytes("v1-longer"));
    assert.deepEqual(rawStat(script.tree, "/"), rootBefore);
  });

  test("setAcl replaces the ACL and bumps aversion only", () => {
    const script = new TxnScript();
    script.create("/app"); // 1
    const { result } = script.setAcl("/app", READ_ONLY); // 2
    const expected = createdStat(1, { aversion: 1 });
    assert.deepEqual(rawStat(script.tree, "/app"), expected);
    assert.deepEqual(result, { type: "setAcl", stat: expected });
    assert.deepEqual(script.tree.getAcl("/app"), { acl: READ_ONLY, stat: expected });
  });

  test("getAcl hands out a copy", () => {
    const script = new TxnScript();
    script.create("/app", { acl: [{ perms: Perms.ALL, id: { scheme: "digest", id: "u:h" } }] });
    const { acl } = script.tree.getAcl("/app");
    acl[0]!.id.id = "changed";
    acl.push(READ_ONLY[0]!);
    assert.deepEqual(script.tree.getAcl("/app").acl, [{ perms: Perms.ALL, id: { scheme: "digest", id: "u:h" } }]);
  });

  test("a check changes nothing but lastProcessedZxid", () => {
    const script = new TxnScript();
    script.create("/app"); // 1
    const before = dump(script.tree);
    const { result, deliveries } = script.apply({ type: "check", path: "/app", version: 0 }); // 2
    assert.deepEqual(result, { type: "check" });
    assert.deepEqual(deliveries, []);
    assert.deepEqual(dump(script.tree), before);
    assert.equal(script.tree.lastProcessedZxid, Z(2));
  });
});

describe("apply: multi", () => {
  test("a successful multi applies every op in order and answers each", () => {
    const script = new TxnScript();
    script.create("/app", { data: bytes("a") }); // 1
    const { result } = script.apply({
      type: "multi",
      ops: [
        { type: "create", path: "/app/x", data: new Uint8Array(0), acl: OPEN_ACL_UNSAFE as Acl[], ephemeralOwner: 0n, parentCversion: 1 },
        { type: "create", path: "/app/y", data: bytes("yy"), acl: OPEN_ACL_UNSAFE as Acl[], ephemeralOwner: S1, parentCversion: 2 },
        { type: "setData", path: "/app", data: bytes("bcd"), version: 1 },
        { type: "check", path: "/app/x", version: 0 },
        { type: "delete", path: "/app/x" },
      ],
    }); // 2
    assert.deepEqual(result, {
      type: "multi",
      results: [
        { type: "create", path: "/app/x", stat: createdStat(2) },
        { type: "create", path: "/app/y", stat: createdStat(2, { ephemeralOwner: S1, dataLength: 2 }) },
        {
          type: "setData",
          stat: createdStat(1, { mzxid: Z(2), mtime: T(2), version: 1, dataLength: 3, cversion: 2, numChildren: 2, pzxid: Z(2) }),
        },
        { type: "check" },
        { type: "delete" },
      ],
    });
    const tree = script.tree;
    assert.deepEqual(rawStat(tree, "/app"), createdStat(1, { mzxid: Z(2), mtime: T(2), version: 1, dataLength: 3, cversion: 3, numChildren: 1, pzxid: Z(2) }));
    assert.equal(tree.getNode("/app/x"), undefined);
    assert.deepEqual([...tree.ephemeralsOf(S1)], ["/app/y"]);
    assert.equal(tree.lastProcessedZxid, Z(2));
  });

  const create = (path: string, parentCversion: number): TxnBody & { type: "create" } => ({
    type: "create",
    path,
    data: new Uint8Array(0),
    acl: OPEN_ACL_UNSAFE as Acl[],
    ephemeralOwner: 0n,
    parentCversion,
  });
  const error = (err: number) => ({ type: "error" as const, err });
  const { OK, NODEEXISTS, NONODE, BADVERSION, RUNTIMEINCONSISTENCY } = ZkErrorCode;
  const FAILURES: [string, (TxnBody & { type: "multi" })["ops"], number[]][] = [
    [
      "ops before the failure report OK, ops after RUNTIMEINCONSISTENCY",
      [create("/app/x", 1), error(NODEEXISTS), error(RUNTIMEINCONSISTENCY)],
      [OK, NODEEXISTS, RUNTIMEINCONSISTENCY],
    ],
    [
      "a failed first op: the valid op after it reports RUNTIMEINCONSISTENCY",
      [error(NONODE), { type: "setData", path: "/app", data: bytes("b"), version: 1 }],
      [NONODE, RUNTIMEINCONSISTENCY],
    ],
    [
      "a failed last op: every op before it reports OK",
      [create("/app/x", 1), { type: "setData", path: "/app", data: bytes("b"), version: 1 }, error(BADVERSION)],
      [OK, OK, BADVERSION],
    ],
    [
      "error ops keep their own codes",
      [error(NONODE), error(RUNTIMEINCONSISTENCY), { type: "check", path: "/app", version: 0 }],
      [NONODE, RUNTIMEINCONSISTENCY, RUNTIMEINCONSISTENCY],
    ],
  ];
  for (const [name, ops, codes] of FAILURES) {
    test(`a failed multi applies nothing and fires nothing; ${name}`, () => {
      const script = new TxnScript();
      script.create("/app", { data: bytes("a") }); // 1
      const twin = new TxnScript();
      twin.create("/app", { data: bytes("a") }); // 1
      script.tree.getData("/app", W);
      script.tree.getChildren("/app", W);

      const { result, deliveries } = script.apply({ type: "multi", ops }); // 2
      twin.error(NONODE); // 2: the same zxid, changing nothing

      assert.deepEqual(result, { type: "multi", results: codes.map((err) => ({ type: "error", err })) });
      assert.deepEqual(deliveries, []);
      assert.equal(script.tree.lastProcessedZxid, Z(2));
      assert.equal(script.tree.digest(), twin.tree.digest());
      assert.equal(script.tree.watches.watchCountOf(W), 2, "the watches are still armed");
    });
  }

  test("an empty multi succeeds with no results", () => {
    const script = new TxnScript();
    assert.deepEqual(script.apply({ type: "multi", ops: [] }).result, { type: "multi", results: [] });
  });
});

describe("apply: sessions", () => {
  test("createSession records the session's timeout and password", () => {
    const script = new TxnScript();
    const { result } = script.createSession(S1, 30_000, bytes("secret"));
    assert.deepEqual(result, { type: "createSession" });
    assert.deepEqual(script.tree.sessions.get(S1), { timeoutMs: 30_000, password: bytes("secret") });
  });

  test("closeSession deletes every ephemeral of the session at its zxid, fires their watches, drops the record and the session's watches", () => {
    const script = new TxnScript();
    script.createSession(S1); // 1
    script.createSession(S2); // 2
    script.create("/app"); // 3
    script.create("/b"); // 4
    script.create("/b/z", { owner: S1 }); // 5
    script.create("/app/y", { owner: S1 }); // 6
    script.create("/app/keep"); // 7: persistent, stays
    script.create("/app/other", { owner: S2 }); // 8
    const tree = script.tree;
    tree.getData("/b/z", S2);
    tree.getChildren("/app", S2);
    tree.getData("/app/keep", S1);

    const { result, deliveries } = script.closeSession(S1); // 9
    assert.deepEqual(result, { type: "closeSession", deletedPaths: ["/app/y", "/b/z"] });
    assert.deepEqual(deliveries, [delivery(S2, NodeChildrenChanged, "/app", Z(9)), delivery(S2, NodeDeleted, "/b/z", Z(9))]);
    assert.equal(tree.getNode("/app/y"), undefined);
    assert.equal(tree.getNode("/b/z"), undefined);
    assert.deepEqual(rawStat(tree, "/app"), createdStat(3, { cversion: 4, numChildren: 2, pzxid: Z(9) }));
    assert.deepEqual(rawStat(tree, "/b"), createdStat(4, { cversion: 2, numChildren: 0, pzxid: Z(9) }));
    assert.deepEqual(tree.getChildren("/app").children, ["keep", "other"]);
    assert.deepEqual([...tree.ephemeralsOf(S1)], []);
    assert.deepEqual([...tree.ephemeralsOf(S2)], ["/app/other"]);
    assert.equal(tree.sessions.has(S1), false);
    assert.equal(tree.sessions.has(S2), true);
    assert.equal(tree.watches.watchCountOf(S1), 0);
    assert.deepEqual([...tree.sessionsWithEphemerals()], [S2]);
  });

  test("closeSession of a session without ephemerals only drops its record", () => {
    const script = new TxnScript();
    script.createSession(S1);
    script.create("/a");
    const before = dump(script.tree);
    assert.deepEqual(script.closeSession(S1).result, { type: "closeSession", deletedPaths: [] });
    assert.deepEqual(dump(script.tree), before);
    assert.equal(script.tree.sessions.size, 0);
  });
});

describe("apply: error txns and zxid order", () => {
  test("an error txn changes nothing, answers its code and advances lastProcessedZxid", () => {
    const script = new TxnScript();
    script.create("/a"); // 1
    script.tree.getData("/a", W);
    const before = dump(script.tree);
    const { result, deliveries } = script.error(ZkErrorCode.BADVERSION); // 2
    assert.deepEqual(result, { type: "error", err: ZkErrorCode.BADVERSION });
    assert.deepEqual(deliveries, []);
    assert.deepEqual(dump(script.tree), before);
    assert.equal(script.tree.lastProcessedZxid, Z(2));
  });

  test("a txn whose zxid does not increase is a bug", () => {
    const script = new TxnScript();
    const txn = script.txn({ type: "error", err: -1 });
    script.tree.apply(txn);
    assert.throws(() => script.tree.apply(txn), /invariant violated/);
  });

  const PREP_BUGS: [string, (script: TxnScript) => TxnBody][] = [
    ["create under a missing parent", () => ({ type: "create", path: "/none/x", data: new Uint8Array(0), acl: [], ephemeralOwner: 0n, parentCversion: 1 })],
    ["create of an existing node", (s) => ({ ...s.createBody("/a/b"), path: "/a/kid" })],
    ["create with a parentCversion that does not follow", (s) => ({ ...s.createBody("/a/b"), parentCversion: 5 })],
    ["create under an ephemeral", (s) => s.createBody("/e/child")],
    ["delete of a missing node", () => ({ type: "delete", path: "/none" })],
    ["delete of a node with children", () => ({ type: "delete", path: "/a" })],
    ["setData whose version does not follow", () => ({ type: "setData", path: "/a", data: new Uint8Array(0), version: 3 })],
    ["setData of a missing node", () => ({ type: "setData", path: "/none", data: new Uint8Array(0), version: 1 })],
    ["setAcl whose aversion does not follow", () => ({ type: "setAcl", path: "/a", acl: [], aversion: 0 })],
  ];
  for (const [name, body] of PREP_BUGS) {
    test(`apply asserts on a txn prep should never make: ${name}`, () => {
      const script = new TxnScript();
      script.create("/a");
      script.create("/a/kid");
      script.create("/e", { owner: S1 });
      const bad = body(script);
      assert.throws(() => script.apply(bad), /invariant violated/);
    });
  }
});

describe("watches fired by apply", () => {
  type Register = (tree: DataTree) => void;
  type Change = (script: TxnScript) => ApplyOutcome;
  const exists =
    (path: string): Register =>
    (tree) =>
      void tree.exists(path, W);
  const getData =
    (path: string): Register =>
    (tree) =>
      void tree.getData(path, W);
  const getChildren =
    (path: string): Register =>
    (tree) =>
      void tree.getChildren(path, W);
  const CHANGES: Record<string, Change> = {
    "create /missing": (s) => s.create("/missing"),
    "create /w/new": (s) => s.create("/w/new"),
    "delete /w/c": (s) => s.delete("/w/c"),
    "setData /w": (s) => s.setData("/w", bytes("x")),
    "setData /w/c": (s) => s.setData("/w/c", bytes("x")),
    "setAcl /w": (s) => s.setAcl("/w", READ_ONLY),
    "check /w": (s) => s.apply({ type: "check", path: "/w", version: 0 }),
    "error txn": (s) => s.error(ZkErrorCode.NONODE),
  };
  // Setup: txn 1 creates /w, txn 2 creates /w/c; the change is txn 3.
  const TABLE: [string, Register, keyof typeof CHANGES, [WatchEventTypeValue, string] | null][] = [
    ["exists /missing", exists("/missing"), "create /missing", [NodeCreated, "/missing"]],
    ["exists /w/new", exists("/w/new"), "create /w/new", [NodeCreated, "/w/new"]],
    ["exists /w", exists("/w"), "setData /w", [NodeDataChanged, "/w"]],
    ["exists /w/c", exists("/w/c"), "delete /w/c", [NodeDeleted, "/w/c"]],
    ["getData /w", getData("/w"), "setData /w", [NodeDataChanged, "/w"]],
    ["getData /w/c", getData("/w/c"), "delete /w/c", [NodeDeleted, "/w/c"]],
    ["getChildren /w", getChildren("/w"), "create /w/new", [NodeChildrenChanged, "/w"]],
    ["getChildren /w", getChildren("/w"), "delete /w/c", [NodeChildrenChanged, "/w"]],
    ["getChildren /w/c", getChildren("/w/c"), "delete /w/c", [NodeDeleted, "/w/c"]],
    ["getChildren /", getChildren("/"), "create /missing", [NodeChildrenChanged, "/"]],
    ["getChildren /w", getChildren("/w"), "setData /w", null],
    ["getChildren /w", getChildren("/w"), "setData /w/c", null],
    ["getChildren /", getChildren("/"), "create /w/new", null],
    ["getData /w", getData("/w"), "create /w/new", null],
    ["getData /w", getData("/w"), "delete /w/c", null],
    ["getData /w", getData("/w"), "setAcl /w", null],
    ["exists /w", exists("/w"), "setAcl /w", null],
    ["getData /w", getData("/w"), "check /w", null],
    ["getData /w", getData("/w"), "error txn", null],
    ["getData /w/c", getData("/w/c"), "setData /w", null],
    ["exists /missing", exists("/missing"), "create /w/new", null],
  ];
  for (const [registration, register, change, expected] of TABLE) {
    const outcome = expected === null ? "nothing" : `${Object.entries(WatchEventType).find(([, v]) => v === expected[0])![0]} on ${expected[1]}`;
    test(`${registration} then ${change} → ${outcome}`, () => {
      const script = new TxnScript();
      script.create("/w"); // 1
      script.create("/w/c"); // 2
      register(script.tree);
      assert.equal(script.tree.watches.watchCountOf(W), 1);
      const { deliveries } = CHANGES[change]!(script); // 3
      const mine = deliveries.filter((d) => d.watcher === W);
      if (expected === null) {
        assert.deepEqual(mine, []);
        assert.equal(script.tree.watches.watchCountOf(W), 1, "the watch stays armed");
      } else {
        assert.deepEqual(mine, [delivery(W, expected[0], expected[1], Z(3))]);
        assert.equal(script.tree.watches.watchCountOf(W), 0, "the watch was consumed");
      }
    });
  }

  test("a watch is one-time: the second change fires nothing", () => {
    const script = new TxnScript();
    script.create("/w"); // 1
    script.tree.getData("/w", W);
    assert.deepEqual(script.setData("/w", bytes("1")).deliveries, [delivery(W, NodeDataChanged, "/w", Z(2))]);
    assert.deepEqual(script.setData("/w", bytes("2")).deliveries, []);
  });

  test("exists on a missing node answers null and still arms a watch for its creation", () => {
    const script = new TxnScript();
    assert.equal(script.tree.exists("/later", W), null);
    assert.deepEqual(script.create("/later").deliveries, [delivery(W, NodeCreated, "/later", Z(1))]);
  });

  const MISSING_READS: [string, (tree: DataTree) => unknown][] = [
    ["getData", (tree) => tree.getData("/later", W)],
    ["getChildren", (tree) => tree.getChildren("/later", W)],
    ["getAcl", (tree) => tree.getAcl("/later")],
  ];
  for (const [name, read] of MISSING_READS) {
    test(`${name} of a missing node throws NONODE and arms no watch`, () => {
      const script = new TxnScript();
      assert.throws(
        () => read(script.tree),
        (error: unknown) => error instanceof ZkError && error.code === "NONODE" && error.path === "/later",
      );
      assert.equal(script.tree.watches.watchCount(), 0);
      assert.deepEqual(script.create("/later").deliveries, []);
    });
  }

  test("a multi fires each applied op's events in op order, with the multi's zxid", () => {
    const script = new TxnScript();
    script.create("/w"); // 1
    script.create("/w/c"); // 2
    script.tree.getChildren("/w", W);
    script.tree.getData("/w", W);
    script.tree.exists("/w/new", W);
    const { deliveries } = script.apply({
      type: "multi",
      ops: [
        { type: "create", path: "/w/new", data: new Uint8Array(0), acl: OPEN_ACL_UNSAFE as Acl[], ephemeralOwner: 0n, parentCversion: 2 },
        { type: "setData", path: "/w", data: bytes("x"), version: 1 },
        { type: "delete", path: "/w/c" },
      ],
    }); // 3
    assert.deepEqual(deliveries, [
      delivery(W, NodeCreated, "/w/new", Z(3)),
      delivery(W, NodeChildrenChanged, "/w", Z(3)),
      delivery(W, NodeDataChanged, "/w", Z(3)),
    ]);
  });

  test("deleting a node watched by getData and getChildren of one watcher delivers one NodeDeleted", () => {
    const script = new TxnScript();
    script.create("/w"); // 1
    script.tree.getData("/w", W);
    script.tree.getChildren("/w", W);
    assert.deepEqual(script.delete("/w").deliveries, [delivery(W, NodeDeleted, "/w", Z(2))]);
    assert.equal(script.tree.watches.watchCount(), 0);
  });

  test("every watcher of a path is notified, in registration order", () => {
    const script = new TxnScript();
    script.create("/w"); // 1
    script.tree.getData("/w", 3n);
    script.tree.exists("/w", 1n);
    script.tree.getData("/w", 3n);
    assert.deepEqual(script.setData("/w", bytes("x")).deliveries, [delivery(3n, NodeDataChanged, "/w", Z(2)), delivery(1n, NodeDataChanged, "/w", Z(2))]);
  });
});

describe("persistent and recursive watches fired by apply", () => {
  type Change = (script: TxnScript) => ApplyOutcome;
  const CHANGES: Record<string, Change> = {
    "create /missing": (s) => s.create("/missing"),
    "create /w/new": (s) => s.create("/w/new"),
    "create /w/c/deep": (s) => s.create("/w/c/deep"),
    "delete /w/c": (s) => s.delete("/w/c"),
    "setData /w": (s) => s.setData("/w", bytes("x")),
    "setData /w/c": (s) => s.setData("/w/c", bytes("x")),
    "setAcl /w": (s) => s.setAcl("/w", READ_ONLY),
    "error txn": (s) => s.error(ZkErrorCode.NONODE),
  };
  // Setup: txn 1 creates /w, txn 2 creates /w/c; the change is txn 3. ZooKeeper 3.9's
  // DataTree.addWatch: persistent in both tables, persistent-recursive in the data table only.
  const TABLE: [AddWatchMode, string, keyof typeof CHANGES, [WatchEventTypeValue, string][]][] = [
    ["persistent", "/w", "setData /w", [[NodeDataChanged, "/w"]]],
    ["persistent", "/w", "create /w/new", [[NodeChildrenChanged, "/w"]]],
    ["persistent", "/w", "delete /w/c", [[NodeChildrenChanged, "/w"]]],
    ["persistent", "/w", "setData /w/c", []],
    ["persistent", "/w", "setAcl /w", []],
    ["persistent", "/w/c", "delete /w/c", [[NodeDeleted, "/w/c"]]],
    ["persistent", "/missing", "create /missing", [[NodeCreated, "/missing"]]],
    ["persistent-recursive", "/w", "setData /w", [[NodeDataChanged, "/w"]]],
    ["persistent-recursive", "/w", "setData /w/c", [[NodeDataChanged, "/w/c"]]],
    ["persistent-recursive", "/w", "create /w/new", [[NodeCreated, "/w/new"]]],
    ["persistent-recursive", "/w", "create /w/c/deep", [[NodeCreated, "/w/c/deep"]]],
    ["persistent-recursive", "/w", "delete /w/c", [[NodeDeleted, "/w/c"]]],
    ["persistent-recursive", "/", "create /w/new", [[NodeCreated, "/w/new"]]],
    ["persistent-recursive", "/w/c", "setData /w", []],
    ["persistent-recursive", "/w", "create /missing", []],
    ["persistent-recursive", "/missing", "create /missing", [[NodeCreated, "/missing"]]],
    ["persistent-recursive", "/w", "setAcl /w", []],
    ["persistent-recursive", "/w", "error txn", []],
  ];
  for (const [mode, path, change, expected] of TABLE) {
    const names = expected.map(([type, at]) => `${Object.entries(WatchEventType).find(([, v]) => v === type)![0]} on ${at}`);
    test(`${mode} ${path} then ${change} → ${names.join(", ") || "nothing"}, and the watch stays`, () => {
      const script = new TxnScript();
      script.create("/w"); // 1
      script.create("/w/c"); // 2
      script.tree.addWatch(path, mode, W);
      const held = script.tree.watches.watchCountOf(W);
      const { deliveries } = CHANGES[change]!(script); // 3
      assert.deepEqual(
        deliveries.filter((d) => d.watcher === W),
        expected.map(([type, at]) => delivery(W, type, at, Z(3))),
      );
      assert.equal(script.tree.watches.watchCountOf(W), held);
    });
  }

  test("a recursive watch gets each op of a multi in op order, with the multi's zxid, and no NodeChildrenChanged", () => {
    const script = new TxnScript();
    script.create("/w"); // 1
    script.create("/w/c"); // 2
    script.tree.addWatch("/w", "persistent-recursive", W);
    const { deliveries } = script.apply({
      type: "multi",
      ops: [
        { type: "create", path: "/w/new", data: new Uint8Array(0), acl: OPEN_ACL_UNSAFE as Acl[], ephemeralOwner: 0n, parentCversion: 2 },
        { type: "setData", path: "/w", data: bytes("x"), version: 1 },
        { type: "delete", path: "/w/c" },
      ],
    }); // 3
    assert.deepEqual(deliveries, [delivery(W, NodeCreated, "/w/new", Z(3)), delivery(W, NodeDataChanged, "/w", Z(3)), delivery(W, NodeDeleted, "/w/c", Z(3))]);
  });

  test("an ephemeral deleted by closeSession fires the recursive watches above it, then the closed session's watches go", () => {
    const script = new TxnScript();
    script.create("/w"); // 1
    script.createSession(S1); // 2
    script.create("/w/e", { owner: S1 }); // 3
    script.tree.addWatch("/w", "persistent-recursive", W);
    script.tree.addWatch("/w", "persistent-recursive", S1);
    assert.deepEqual(script.closeSession(S1).deliveries, [delivery(W, NodeDeleted, "/w/e", Z(4)), delivery(S1, NodeDeleted, "/w/e", Z(4))]);
    assert.equal(script.tree.watches.watchCountOf(S1), 0);
    assert.equal(script.tree.watches.watchCountOf(W), 1);
  });
});

describe("setWatches: persistent and recursive watches", () => {
  test("are registered again and fire nothing now, even for changes since relativeZxid (ZooKeeper does not replay them)", () => {
    const script = new TxnScript();
    script.create("/p"); // 1
    script.create("/r"); // 2
    script.setData("/p", bytes("x")); // 3
    script.create("/r/k"); // 4
    const deliveries = script.tree.setWatches(0, watchLists({ persistentWatches: ["/p", "/gone"], persistentRecursiveWatches: ["/r"] }), W);
    assert.deepEqual(deliveries, []);
    assert.equal(script.tree.watches.containsWatch("/p", "persistent", W), true);
    assert.equal(script.tree.watches.containsWatch("/gone", "persistent", W), true);
    assert.equal(script.tree.watches.containsWatch("/r", "persistent-recursive", W), true);
    assert.deepEqual(script.setData("/r/k", bytes("y")).deliveries, [delivery(W, NodeDataChanged, "/r/k", Z(5))]);
    assert.deepEqual(script.create("/gone").deliveries, [delivery(W, NodeCreated, "/gone", Z(6))]);
    assert.deepEqual(script.setData("/p", bytes("z")).deliveries, [delivery(W, NodeDataChanged, "/p", Z(7))]);
  });
});

describe("setWatches (a reconnecting client's watches)", () => {
  // Setup: 1 create /d, 2 create /c, 3 setData /d (mzxid Z(3)), 4 create /c/k (pzxid of /c Z(4)).
  function setup(): TxnScript {
    const script = new TxnScript();
    script.create("/d");
    script.create("/c");
    script.setData("/d", bytes("x"));
    script.create("/c/k");
    return script;
  }
  const TABLE: [string, "data" | "exist" | "child", string, number, WatchEventTypeValue | "armed"][] = [
    ["a data watch on a node gone since", "data", "/gone", Z(4), NodeDeleted],
    ["a data watch on a node changed since", "data", "/d", Z(2), NodeDataChanged],
    ["a data watch on a node unchanged since", "data", "/d", Z(3), "armed"],
    ["an exist watch on a node that now exists", "exist", "/d", Z(4), NodeCreated],
    ["an exist watch on a node still missing", "exist", "/gone", Z(4), "armed"],
    ["a child watch on a node gone since", "child", "/gone", Z(4), NodeDeleted],
    ["a child watch on a node whose children changed since", "child", "/c", Z(3), NodeChildrenChanged],
    ["a child watch on a node whose children did not change since", "child", "/c", Z(4), "armed"],
  ];
  for (const [name, kind, path, relativeZxid, expected] of TABLE) {
    test(`${name} → ${expected === "armed" ? "armed, nothing now" : "fires now"}`, () => {
      const tree = setup().tree;
      const lists: [string[], string[], string[]] = [[], [], []];
      lists[kind === "data" ? 0 : kind === "exist" ? 1 : 2].push(path);
      const deliveries = tree.setWatches(relativeZxid, watchLists({ dataWatches: lists[0], existWatches: lists[1], childWatches: lists[2] }), W);
      if (expected === "armed") {
        assert.deepEqual(deliveries, []);
        assert.equal(tree.watches.hasWatch(path, kind === "child" ? "child" : "data", W), true);
      } else {
        assert.deepEqual(deliveries, [delivery(W, expected, path, Z(4))]);
        assert.equal(tree.watches.watchCount(), 0);
      }
    });
  }

  test("an armed exist watch then fires on creation", () => {
    const script = setup();
    script.tree.setWatches(Z(4), watchLists({ existWatches: ["/gone"] }), W);
    assert.deepEqual(script.create("/gone").deliveries, [delivery(W, NodeCreated, "/gone", Z(5))]);
  });

  test("events fired now come data, then exist, then child", () => {
    const tree = setup().tree;
    const deliveries = tree.setWatches(0, watchLists({ dataWatches: ["/gone"], existWatches: ["/d"], childWatches: ["/c"] }), W);
    assert.deepEqual(deliveries, [delivery(W, NodeDeleted, "/gone", Z(4)), delivery(W, NodeCreated, "/d", Z(4)), delivery(W, NodeChildrenChanged, "/c", Z(4))]);
  });
});

describe("reads", () => {
  test("stats handed out are copies", () => {
    const script = new TxnScript();
    script.create("/a");
    const stat = script.tree.exists("/a")!;
    stat.version = 99;
    script.tree.getData("/a").stat.numChildren = 99;
    assert.deepEqual(rawStat(script.tree, "/a"), createdStat(1));
  });

  test("getChildren lists child names sorted, with the node's stat", () => {
    const script = new TxnScript();
    script.create("/s"); // 1
    for (const name of ["b", "a", "c"]) script.create(`/s/${name}`); // 2..4
    assert.deepEqual(script.tree.getChildren("/s"), {
      children: ["a", "b", "c"],
      stat: createdStat(1, { cversion: 3, numChildren: 3, pzxid: Z(4) }),
    });
  });

  test("walk visits parents before children, siblings sorted", () => {
    const script = new TxnScript();
    for (const path of ["/b", "/a", "/a/z", "/a/y"]) script.create(path);
    const paths: string[] = [];
    script.tree.walk((path) => paths.push(path));
    assert.deepEqual(paths, ["/", "/a", "/a/y", "/a/z", "/b", "/zookeeper", "/zookeeper/config", "/zookeeper/quota"]);
  });
});

describe("digest", () => {
  function base(): TxnScript {
    const script = new TxnScript();
    script.createSession(S1); // 1
    script.create("/a", { data: bytes("data") }); // 2
    script.create("/a/e", { owner: S1 }); // 3
    return script;
  }

  test("a snapshot restored, or a tree rebuilt, holds the digest of the tree it was taken from", () => {
    const script = base();
    script.setData("/a", bytes("changed"));
    assert.equal(decodeSnapshot(encodeSnapshot(script.tree)).digest(), script.tree.digest());
  });

  test("a multi that creates a node and deletes it again leaves the digest of an error txn", () => {
    const script = base();
    const twin = base();
    script.apply({
      type: "multi",
      ops: [
        { type: "create", path: "/a/tmp", data: bytes("x"), acl: OPEN_ACL_UNSAFE as Acl[], ephemeralOwner: 0n, parentCversion: 2 },
        { type: "delete", path: "/a/tmp" },
      ],
    });
    twin.error(-1);
    // The parent's cversion and pzxid moved: not the twin's digest, but the one a full walk gives.
    assert.notEqual(script.tree.digest(), twin.tree.digest());
    assert.equal(script.tree.digest(), script.tree.recomputedDigest());
  });

  test("two trees built by the same txns agree", () => {
    assert.equal(base().tree.digest(), base().tree.digest());
    assert.match(base().tree.digest(), /^[0-9a-f]{16}$/);
  });

  const MUTATIONS: [string, (script: TxnScript) => void][] = [
    ["an error txn (lastProcessedZxid)", (s) => s.error(-1)],
    ["setData with equal length", (s) => s.setData("/a", bytes("DATA"))],
    ["setAcl", (s) => s.setAcl("/a", READ_ONLY)],
    ["a create", (s) => s.create("/b")],
    ["a delete", (s) => s.delete("/a/e")],
    ["a new session", (s) => s.createSession(S2)],
    ["a closed session", (s) => s.closeSession(S1)],
  ];
  const seen = new Map<string, string>();
  for (const [name, mutate] of MUTATIONS) {
    test(`changes with ${name}`, () => {
      const script = base();
      const before = script.tree.digest();
      mutate(script);
      const after = script.tree.digest();
      assert.notEqual(after, before);
      assert.equal(after, script.tree.recomputedDigest(), "kept as the tree changed, it is what a full walk gives");
      for (const [other, digest] of seen) assert.notEqual(after, digest, `same digest as after ${other}`);
      seen.set(name, after);
    });
  }
});

describe("descendantCount (getAllChildrenNumber)", () => {
  test("counts every node below a path at any depth, not the node itself", () => {
    const s = new TxnScript();
    for (const path of ["/a", "/a/b", "/a/b/c", "/a/b/d", "/a/e", "/f"]) s.create(path);
    assert.equal(s.tree.descendantCount("/a"), 4);
    assert.equal(s.tree.descendantCount("/a/b"), 2);
    assert.equal(s.tree.descendantCount("/a/b/c"), 0);
    // "/" counts everything but itself, /zookeeper, /zookeeper/quota and /zookeeper/config included (as ZooKeeper 3.8's does).
    assert.equal(s.tree.descendantCount("/"), 9);
    s.apply({ type: "delete", path: "/a/b/c" });
    assert.equal(s.tree.descendantCount("/a"), 3);
  });

  test("a missing node is NONODE", () => {
    const tree = new DataTree();
    assert.throws(
      () => tree.descendantCount("/missing"),
      (e: unknown) => e instanceof ZkError && e.code === "NONODE",
    );
  });
});
