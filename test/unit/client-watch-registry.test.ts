import assert from "node:assert/strict";
import { test } from "node:test";

import type { WatchedEventType, Watcher } from "../../src/client/types.js";
import { chunkWatchPaths, type WatchKind, WatchRegistry } from "../../src/client/watch-registry.js";

function named(name: string): Watcher & { label: string } {
  return Object.assign(() => {}, { label: name });
}

const labels = (set: Set<Watcher>): string[] => [...set].map((w) => (w as Watcher & { label: string }).label).sort();

/** ZooKeeper's ZKWatchManager.materialize table: event type → watch kinds it fires. */
const TABLE: [WatchedEventType, WatchKind[]][] = [
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
  assert.deepEqual(registry.paths(), { dataWatches: ["/d1", "/d2"], existWatches: ["/e"], childWatches: ["/c"] });
  registry.clear();
  assert.deepEqual(registry.paths(), { dataWatches: [], existWatches: [], childWatches: [] });
});

test("setWatches lists are split by size without losing, repeating or reordering a path", () => {
  const all = {
    dataWatches: Array.from({ length: 50 }, (_, i) => `/data/${"x".repeat(i)}`),
    existWatches: ["/e1", "/e2"],
    childWatches: Array.from({ length: 30 }, (_, i) => `/child/${i}`),
  };
  const chunks = chunkWatchPaths(all, 300);
  assert.ok(chunks.length > 3, `expected several chunks, got ${chunks.length}`);
  for (const chunk of chunks) {
    const paths = [...chunk.dataWatches, ...chunk.existWatches, ...chunk.childWatches];
    assert.ok(paths.length > 0);
    const bytes = paths.reduce((n, p) => n + p.length * 3 + 4, 0);
    assert.ok(paths.length === 1 || bytes <= 300, `chunk of ${bytes} bytes`);
  }
  assert.deepEqual(chunks.flatMap((c) => c.dataWatches), all.dataWatches);
  assert.deepEqual(chunks.flatMap((c) => c.existWatches), all.existWatches);
  assert.deepEqual(chunks.flatMap((c) => c.childWatches), all.childWatches);
  assert.deepEqual(chunkWatchPaths(all, 1_000_000), [all]);
  assert.deepEqual(chunkWatchPaths({ dataWatches: [], existWatches: [], childWatches: [] }, 100), []);
});
