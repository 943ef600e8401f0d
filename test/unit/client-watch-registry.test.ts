import assert from "node:assert/strict";
import { test } from "node:test";

import type { NodeEventType, Watcher, WatcherType } from "../../src/client/types.js";
import { chunkWatchPaths, emptyWatchPaths, type WatchKind, WatchRegistry } from "../../src/client/watch-registry.js";

function named(name: string): Watcher & { label: string } {
  return Object.assign(() => {}, { label: name });
}

const labels = (set: Set<Watcher>): string[] => [...set].map((w) => (w as Watcher & { label: string }).label).sort();

/** ZooKeeper's ZKWatchManager.materialize table: event type → watch kinds it fires. */
const TABLE: [NodeEventType, WatchKind[]][] = [
  ["NodeCreated", ["data", "exist"]],
  ["NodeDataChanged", ["data", "exist"]],
  ["NodeDeleted", ["data", "exist", "child"]],
  ["NodeChildrenChanged", ["child"]],
];

for (const [type, kinds] of TABLE) {
  test(`${type} fires the ${kinds.join(" + ")} watchers of its path and no others`, () => {
    const registry = new WatchRegistry();
    for (const kind of ["data", "exist", "child"] as const) {
      registry.add(kind, "/p", named(kind));
      registry.add(kind, "/other", named(`other-${kind}`));
    }
    assert.deepEqual(labels(registry.materialize(type, "/p")), [...kinds].sort());
    // The fired ones are gone, the rest remain.
    const left = registry.paths();
    for (const kind of ["data", "exist", "child"] as const) {
      const key = `${kind}Watches` as const;
      assert.deepEqual(left[key].includes("/p"), !kinds.includes(kind), `${kind} watch on /p after ${type}`);
      assert.ok(left[key].includes("/other"));
    }
  });
}

test("a watcher fires once: a second event on the path finds nothing", () => {
  const registry = new WatchRegistry();
  registry.add("data", "/a", named("w"));
  assert.deepEqual(labels(registry.materialize("NodeDataChanged", "/a")), ["w"]);
  assert.equal(registry.materialize("NodeDataChanged", "/a").size, 0);
  assert.equal(registry.size, 0);
});

test("the same function set twice on one path and kind fires once", () => {
  const registry = new WatchRegistry();
  const w = named("w");
  registry.add("data", "/a", w);
  registry.add("data", "/a", w);
  assert.equal(registry.materialize("NodeDataChanged", "/a").size, 1);
});

test("the same function set as data, exist and child watch on one path fires once for NodeDeleted", () => {
  const registry = new WatchRegistry();
  const w = named("w");
  registry.add("data", "/a", w);
  registry.add("exist", "/a", w);
  registry.add("child", "/a", w);
  assert.equal(registry.materialize("NodeDeleted", "/a").size, 1);
  assert.equal(registry.size, 0);
});

test("different functions on one path all fire", () => {
  const registry = new WatchRegistry();
  registry.add("child", "/a", named("one"));
  registry.add("child", "/a", named("two"));
  assert.deepEqual(labels(registry.materialize("NodeChildrenChanged", "/a")), ["one", "two"]);
});

test("events are matched on the exact path, not on prefixes", () => {
  const registry = new WatchRegistry();
  registry.add("child", "/a", named("parent"));
  registry.add("data", "/a/b", named("child"));
  assert.equal(registry.materialize("NodeDeleted", "/a/b").size, 1);
  assert.deepEqual(registry.paths().childWatches, ["/a"]);
});

test("paths() lists every watched path per kind, for setWatches; clear() drops everything", () => {
  const registry = new WatchRegistry();
  registry.add("data", "/d1", named("x"));
  registry.add("data", "/d2", named("x"));
  registry.add("exist", "/e", named("x"));
  registry.add("child", "/c", named("x"));
  registry.add("persistent", "/p", named("x"));
  registry.add("persistent-recursive", "/r", named("x"));
  assert.deepEqual(registry.paths(), {
    dataWatches: ["/d1", "/d2"],
    existWatches: ["/e"],
    childWatches: ["/c"],
    persistentWatches: ["/p"],
    persistentRecursiveWatches: ["/r"],
  });
  registry.clear();
  assert.deepEqual(registry.paths(), emptyWatchPaths());
  assert.equal(registry.size, 0);
});

test("setWatches lists are split by size without losing, repeating or reordering a path", () => {
  const all = {
    dataWatches: Array.from({ length: 50 }, (_, i) => `/data/${"x".repeat(i)}`),
    existWatches: ["/e1", "/e2"],
    childWatches: Array.from({ length: 30 }, (_, i) => `/child/${i}`),
    persistentWatches: ["/p1", "/p2", "/p3"],
    persistentRecursiveWatches: Array.from({ length: 20 }, (_, i) => `/recursive/${i}`),
  };
  const chunks = chunkWatchPaths(all, 300);
  assert.ok(chunks.length > 3, `expected several chunks, got ${chunks.length}`);
  for (const chunk of chunks) {
    const paths = [...chunk.dataWatches, ...chunk.existWatches, ...chunk.childWatches, ...chunk.persistentWatches, ...chunk.persistentRecursiveWatches];
    assert.ok(paths.length > 0);
    const bytes = paths.reduce((n, p) => n + p.length * 3 + 4, 0);
    assert.ok(paths.length === 1 || bytes <= 300, `chunk of ${bytes} bytes`);
  }
  assert.deepEqual(
    chunks.flatMap((c) => c.dataWatches),
    all.dataWatches,
  );
  assert.deepEqual(
    chunks.flatMap((c) => c.existWatches),
    all.existWatches,
  );
  assert.deepEqual(
    chunks.flatMap((c) => c.childWatches),
    all.childWatches,
  );
  assert.deepEqual(
    chunks.flatMap((c) => c.persistentWatches),
    all.persistentWatches,
  );
  assert.deepEqual(
    chunks.flatMap((c) => c.persistentRecursiveWatches),
    all.persistentRecursiveWatches,
  );
  assert.deepEqual(chunkWatchPaths(all, 1_000_000), [all]);
  assert.deepEqual(chunkWatchPaths(emptyWatchPaths(), 100), []);
});

// ---------------------------------------------------------------------------------------------
// Persistent and recursive watches (ZooKeeper's ZKWatchManager.addPersistentWatches).

const NODE_EVENTS: NodeEventType[] = ["NodeCreated", "NodeDataChanged", "NodeDeleted", "NodeChildrenChanged"];

for (const type of NODE_EVENTS) {
  test(`${type} reaches the persistent watchers of its path and stays armed`, () => {
    const registry = new WatchRegistry();
    registry.add("persistent", "/p", named("p"));
    registry.add("persistent", "/p/below", named("below"));
    registry.add("persistent", "/", named("above"));
    assert.deepEqual(labels(registry.materialize(type, "/p")), ["p"]);
    assert.deepEqual(labels(registry.materialize(type, "/p")), ["p"]);
    assert.deepEqual(registry.paths().persistentWatches, ["/p", "/p/below", "/"]);
  });
}

for (const type of ["NodeCreated", "NodeDataChanged", "NodeDeleted"] as const) {
  test(`${type} reaches the recursive watchers of its path and of every path above it, and they stay armed`, () => {
    const registry = new WatchRegistry();
    registry.add("persistent-recursive", "/", named("root"));
    registry.add("persistent-recursive", "/a", named("a"));
    registry.add("persistent-recursive", "/a/b", named("b"));
    registry.add("persistent-recursive", "/a/b/c", named("below"));
    registry.add("persistent-recursive", "/ab", named("sibling"));
    assert.deepEqual(labels(registry.materialize(type, "/a/b")), ["a", "b", "root"]);
    assert.deepEqual(labels(registry.materialize(type, "/a/b")), ["a", "b", "root"]);
    assert.equal(registry.size, 5);
  });
}

test("NodeChildrenChanged reaches no recursive watcher, not even one on its own path", () => {
  const registry = new WatchRegistry();
  registry.add("persistent-recursive", "/a", named("self"));
  registry.add("persistent-recursive", "/", named("root"));
  registry.add("child", "/a", named("child"));
  assert.deepEqual(labels(registry.materialize("NodeChildrenChanged", "/a")), ["child"]);
});

test("one function reached as a one-time, a persistent and a recursive watcher fires once, and only its one-time watch is spent", () => {
  const registry = new WatchRegistry();
  const w = named("w");
  registry.add("data", "/a/b", w);
  registry.add("persistent", "/a/b", w);
  registry.add("persistent-recursive", "/a", w);
  registry.add("persistent-recursive", "/", w);
  assert.equal(registry.materialize("NodeDataChanged", "/a/b").size, 1);
  assert.deepEqual(registry.paths().dataWatches, []);
  assert.equal(registry.size, 3);
});

// What each watcher type finds and removes (ZooKeeper's ZKWatchManager.removeWatcher): kinds,
// and the removal event group their watchers are told.
const REMOVAL: [WatcherType, WatchKind[], ("child" | "data" | "persistent")[]][] = [
  ["children", ["child"], ["child"]],
  ["data", ["data", "exist"], ["data"]],
  ["persistent", ["persistent"], ["persistent"]],
  ["persistent-recursive", ["persistent-recursive"], ["persistent"]],
  ["any", ["data", "exist", "child", "persistent", "persistent-recursive"], ["child", "data", "persistent"]],
];
const KINDS: WatchKind[] = ["data", "exist", "child", "persistent", "persistent-recursive"];

for (const [type, kinds, groups] of REMOVAL) {
  test(`removing ${type} watches of one function takes its ${kinds.join(" + ")} watches and nothing else`, () => {
    const registry = new WatchRegistry();
    const w = named("w");
    const other = named("other");
    for (const kind of KINDS) {
      registry.add(kind, "/p", w);
      registry.add(kind, "/p", other);
    }
    assert.equal(registry.contains("/p", w, type), true);
    const removed = registry.remove("/p", w, type);
    assert.ok(removed);
    for (const group of ["child", "data", "persistent"] as const) {
      assert.deepEqual(labels(removed[group]), groups.includes(group) ? ["w"] : [], `${group} removal events`);
    }
    assert.equal(registry.contains("/p", w, type), false);
    assert.equal(registry.remove("/p", w, type), undefined, "a second removal finds nothing");
    for (const kind of KINDS) {
      const left = kind === "persistent-recursive" ? "persistentRecursiveWatches" : (`${kind}Watches` as const);
      assert.ok(registry.paths()[left].includes("/p"), `other's ${kind} watch stays`);
    }
    // Only the kinds not named still reach w.
    const reaching: WatchKind[] = ["data", "exist", "persistent", "persistent-recursive"];
    assert.equal(
      registry.materialize("NodeDataChanged", "/p").has(w),
      reaching.some((k) => !kinds.includes(k)),
    );
  });

  test(`removing every ${type} watcher of a path leaves the other paths and kinds`, () => {
    const registry = new WatchRegistry();
    for (const kind of KINDS) {
      registry.add(kind, "/p", named(`one-${kind}`));
      registry.add(kind, "/p", named(`two-${kind}`));
      registry.add(kind, "/q", named(`q-${kind}`));
    }
    const removed = registry.remove("/p", undefined, type);
    assert.ok(removed);
    const all = [...removed.child, ...removed.data, ...removed.persistent];
    assert.equal(all.length, kinds.length * 2);
    assert.equal(registry.contains("/p", undefined, type), false);
    assert.equal(registry.contains("/q", undefined, type), true);
    assert.equal(registry.size, 2 * KINDS.length - kinds.length, "watched paths left, per kind");
  });
}

test("contains and remove match the exact path and function only", () => {
  const registry = new WatchRegistry();
  const w = named("w");
  registry.add("persistent-recursive", "/a", w);
  assert.equal(registry.contains("/a/b", w, "any"), false, "a recursive watch above is not a watch on /a/b");
  assert.equal(registry.contains("/a", named("w"), "any"), false, "another function");
  assert.equal(registry.contains("/a", w, "persistent"), false);
  assert.equal(registry.remove("/a", w, "persistent"), undefined);
  assert.equal(registry.contains("/a", undefined, "persistent-recursive"), true);
});
