import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { WatchEventType } from "../../src/store/types.js";
import { WatchManager } from "../../src/store/watch-manager.js";

const { NodeCreated, NodeDeleted, NodeDataChanged, NodeChildrenChanged } = WatchEventType;

describe("WatchManager", () => {
  test("a data watch fires once, with the path, type and zxid given", () => {
    const watches = new WatchManager();
    watches.addDataWatch("/a", 1n);
    assert.deepEqual(watches.triggerData("/a", NodeDataChanged, 42), [
      { watcher: 1n, event: { type: NodeDataChanged, path: "/a", zxid: 42 } },
    ]);
    assert.deepEqual(watches.triggerData("/a", NodeDataChanged, 43), []);
    assert.equal(watches.watchCount(), 0);
    assert.equal(watches.watchCountOf(1n), 0);
  });

  test("registering the same watch twice yields one event", () => {
    const watches = new WatchManager();
    watches.addDataWatch("/a", 1n);
    watches.addDataWatch("/a", 1n);
    assert.equal(watches.watchCountOf(1n), 1);
    assert.equal(watches.triggerData("/a", NodeCreated, 1).length, 1);
  });

  test("data and child watches are separate tables", () => {
    const watches = new WatchManager();
    watches.addDataWatch("/a", 1n);
    watches.addChildWatch("/a", 1n);
    assert.equal(watches.watchCountOf(1n), 2);
    assert.deepEqual(watches.triggerChild("/a", NodeChildrenChanged, 5), [
      { watcher: 1n, event: { type: NodeChildrenChanged, path: "/a", zxid: 5 } },
    ]);
    assert.equal(watches.hasWatch("/a", "data", 1n), true);
    assert.equal(watches.hasWatch("/a", "child", 1n), false);
  });

  test("every watcher on a path is notified, in registration order", () => {
    const watches = new WatchManager();
    watches.addDataWatch("/a", 3n);
    watches.addDataWatch("/a", 1n);
    watches.addDataWatch("/b", 2n);
    assert.deepEqual(
      watches.triggerData("/a", NodeDeleted, 9).map((d) => d.watcher),
      [3n, 1n],
    );
    assert.equal(watches.watchCountOf(2n), 1);
  });

  test("a deletion notifies a watcher holding both a data and a child watch once", () => {
    const watches = new WatchManager();
    watches.addDataWatch("/a", 1n);
    watches.addChildWatch("/a", 1n);
    watches.addChildWatch("/a", 2n);
    assert.deepEqual(watches.triggerDeleted("/a", 7), [
      { watcher: 1n, event: { type: NodeDeleted, path: "/a", zxid: 7 } },
      { watcher: 2n, event: { type: NodeDeleted, path: "/a", zxid: 7 } },
    ]);
    assert.equal(watches.watchCount(), 0, "both of watcher 1's watches were consumed");
  });

  test("removeWatcher drops every watch of one watcher and nobody else's", () => {
    const watches = new WatchManager();
    watches.addDataWatch("/a", 1n);
    watches.addChildWatch("/b", 1n);
    watches.addDataWatch("/a", 2n);
    assert.equal(watches.removeWatcher(1n), 2);
    assert.equal(watches.watchCountOf(1n), 0);
    assert.equal(watches.watchCount(), 1);
    assert.equal(watches.watcherCount(), 1);
    assert.deepEqual(watches.triggerChild("/b", NodeChildrenChanged, 1), []);
    assert.deepEqual(
      watches.triggerData("/a", NodeDataChanged, 1).map((d) => d.watcher),
      [2n],
    );
    assert.equal(watches.removeWatcher(1n), 0);
  });

  test("removeWatch removes one watch without firing it", () => {
    const watches = new WatchManager();
    watches.addDataWatch("/a", 1n);
    watches.addChildWatch("/a", 1n);
    assert.equal(watches.removeWatch("/a", "data", 1n), true);
    assert.equal(watches.removeWatch("/a", "data", 1n), false);
    assert.deepEqual(watches.triggerData("/a", NodeDataChanged, 1), []);
    assert.deepEqual(watches.watchedPathsOf(1n), { data: [], child: ["/a"] });
  });

  test("counts follow registrations and firings", () => {
    const watches = new WatchManager();
    for (const path of ["/c", "/a", "/b"]) watches.addDataWatch(path, 1n);
    watches.addChildWatch("/a", 1n);
    watches.addChildWatch("/a", 2n);
    assert.equal(watches.watchCount(), 5);
    assert.equal(watches.watchCountOf(1n), 4);
    assert.deepEqual(watches.watchedPathsOf(1n), { data: ["/a", "/b", "/c"], child: ["/a"] });
    watches.triggerChild("/a", NodeChildrenChanged, 1);
    assert.equal(watches.watchCount(), 3);
    assert.equal(watches.watchCountOf(2n), 0);
    assert.equal(watches.watcherCount(), 1);
  });

  test("deliveries are appended to a given array", () => {
    const watches = new WatchManager();
    watches.addDataWatch("/a", 1n);
    watches.addChildWatch("/", 1n);
    const out = watches.triggerData("/a", NodeCreated, 1);
    const same = watches.triggerChild("/", NodeChildrenChanged, 1, out);
    assert.equal(same, out);
    assert.deepEqual(
      out.map((d) => d.event.type),
      [NodeCreated, NodeChildrenChanged],
    );
  });
});
