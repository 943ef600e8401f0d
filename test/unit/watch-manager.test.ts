import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { WatcherType } from "../../src/common/watch-modes.js";
import { WatchEventType } from "../../src/store/types.js";
import { WatchManager } from "../../src/store/watch-manager.js";

const { NodeCreated, NodeDeleted, NodeDataChanged, NodeChildrenChanged } = WatchEventType;

describe("WatchManager", () => {
  test("a data watch fires once, with the path, type and zxid given", () => {
    const watches = new WatchManager();
    watches.addDataWatch("/a", 1n);
    assert.deepEqual(watches.triggerData("/a", NodeDataChanged, 42), [{ watcher: 1n, event: { type: NodeDataChanged, path: "/a", zxid: 42 } }]);
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
    assert.deepEqual(watches.triggerChild("/a", NodeChildrenChanged, 5), [{ watcher: 1n, event: { type: NodeChildrenChanged, path: "/a", zxid: 5 } }]);
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

describe("WatchManager: persistent and recursive watches", () => {
  const ev = (watcher: bigint, type: number, path: string, zxid: number) => ({ watcher, event: { type, path, zxid } });

  test("a persistent watch fires on every change of its node and stays", () => {
    const watches = new WatchManager();
    watches.addPersistentWatch("/a", 1n, "persistent");
    assert.deepEqual(watches.triggerData("/a", NodeDataChanged, 1), [ev(1n, NodeDataChanged, "/a", 1)]);
    assert.deepEqual(watches.triggerData("/a", NodeDataChanged, 2), [ev(1n, NodeDataChanged, "/a", 2)]);
    assert.deepEqual(watches.triggerChild("/a", NodeChildrenChanged, 3), [ev(1n, NodeChildrenChanged, "/a", 3)]);
    assert.deepEqual(watches.triggerData("/a/b", NodeCreated, 4), [], "not below its node");
    assert.equal(watches.watchCountOf(1n), 2, "one entry in each table, still armed");
  });

  test("a persistent watch on a deleted node gets one NodeDeleted and stays", () => {
    const watches = new WatchManager();
    watches.addPersistentWatch("/a", 1n, "persistent");
    assert.deepEqual(watches.triggerDeleted("/a", 5), [ev(1n, NodeDeleted, "/a", 5)]);
    assert.deepEqual(watches.triggerData("/a", NodeCreated, 6), [ev(1n, NodeCreated, "/a", 6)]);
  });

  test("a recursive watch fires for its node and every node below it, and stays", () => {
    const watches = new WatchManager();
    watches.addPersistentWatch("/a", 1n, "persistent-recursive");
    assert.deepEqual(watches.triggerData("/a", NodeDataChanged, 1), [ev(1n, NodeDataChanged, "/a", 1)]);
    assert.deepEqual(watches.triggerData("/a/b/c", NodeCreated, 2), [ev(1n, NodeCreated, "/a/b/c", 2)]);
    assert.deepEqual(watches.triggerDeleted("/a/b/c", 3), [ev(1n, NodeDeleted, "/a/b/c", 3)]);
    assert.deepEqual(watches.triggerData("/ab", NodeCreated, 4), [], "a sibling sharing a prefix is not below /a");
    assert.deepEqual(watches.triggerData("/", NodeDataChanged, 5), [], "the parent is not below /a");
    assert.equal(watches.watchCountOf(1n), 1);
  });

  test("a recursive watch never gets NodeChildrenChanged, not even for its own node", () => {
    const watches = new WatchManager();
    watches.addPersistentWatch("/a", 1n, "persistent-recursive");
    assert.deepEqual(watches.triggerChild("/a", NodeChildrenChanged, 1), []);
    assert.deepEqual(watches.triggerChild("/a/b", NodeChildrenChanged, 2), []);
  });

  test("a recursive watch on / sees the whole tree", () => {
    const watches = new WatchManager();
    watches.addPersistentWatch("/", 1n, "persistent-recursive");
    assert.deepEqual(watches.triggerData("/x/y", NodeDataChanged, 1), [ev(1n, NodeDataChanged, "/x/y", 1)]);
    assert.deepEqual(watches.triggerData("/", NodeDataChanged, 2), [ev(1n, NodeDataChanged, "/", 2)]);
  });

  test("one trigger notifies a watcher once, however many of its watches match; the one-time ones are spent", () => {
    const watches = new WatchManager();
    watches.addPersistentWatch("/", 1n, "persistent-recursive");
    watches.addPersistentWatch("/a", 1n, "persistent-recursive");
    watches.addPersistentWatch("/a/b", 1n, "persistent");
    watches.addDataWatch("/a/b", 1n);
    assert.deepEqual(watches.triggerData("/a/b", NodeDataChanged, 1), [ev(1n, NodeDataChanged, "/a/b", 1)]);
    assert.equal(watches.containsWatch("/a/b", "data", 1n), false, "the getData watch was spent");
    assert.equal(watches.containsWatch("/a/b", "persistent", 1n), true, "the persistent watch stays");
    assert.deepEqual(watches.triggerData("/a/b", NodeDataChanged, 2), [ev(1n, NodeDataChanged, "/a/b", 2)]);
  });

  test("a deletion notifies a watcher with a recursive watch above and a child watch on the node once", () => {
    const watches = new WatchManager();
    watches.addPersistentWatch("/a", 1n, "persistent-recursive");
    watches.addChildWatch("/a/b", 1n);
    watches.addChildWatch("/a/b", 2n);
    assert.deepEqual(watches.triggerDeleted("/a/b", 7), [ev(1n, NodeDeleted, "/a/b", 7), ev(2n, NodeDeleted, "/a/b", 7)]);
    assert.equal(watches.hasWatch("/a/b", "child", 1n), false, "the child watch was spent, silently");
  });

  test("deliveries: the node's watchers in registration order, then recursive watchers above it, nearest first", () => {
    const watches = new WatchManager();
    watches.addPersistentWatch("/", 5n, "persistent-recursive");
    watches.addPersistentWatch("/a", 4n, "persistent-recursive");
    watches.addPersistentWatch("/a/b", 3n, "persistent");
    watches.addDataWatch("/a/b", 2n);
    watches.addDataWatch("/a", 9n);
    assert.deepEqual(
      watches.triggerData("/a/b", NodeDataChanged, 1).map((d) => d.watcher),
      [3n, 2n, 4n, 5n],
    );
  });

  test("holding a one-time and a persistent watch on one path: a removal of one leaves the other", () => {
    const watches = new WatchManager();
    watches.addDataWatch("/a", 1n);
    watches.addPersistentWatch("/a", 1n, "persistent");
    assert.equal(watches.watchCountOf(1n), 2, "one entry per table, whatever the modes");
    assert.equal(watches.removeWatch("/a", "persistent", 1n), true);
    assert.equal(watches.containsWatch("/a", "data", 1n), true);
    assert.deepEqual(watches.triggerChild("/a", NodeChildrenChanged, 1), []);
    assert.deepEqual(watches.triggerData("/a", NodeDataChanged, 2), [ev(1n, NodeDataChanged, "/a", 2)]);
    assert.equal(watches.watchCount(), 0);
  });

  // Watcher 1 holds every kind on /p; each row removes one type and lists what is left (ZooKeeper's
  // DataTree.removeWatch / containsWatcher with WatcherType).
  const TYPES: WatcherType[] = ["children", "data", "persistent", "persistent-recursive", "any"];
  const REMOVAL: [WatcherType, WatcherType[]][] = [
    ["children", ["data", "persistent", "persistent-recursive", "any"]],
    ["data", ["children", "persistent", "persistent-recursive", "any"]],
    ["persistent", ["children", "data", "persistent-recursive", "any"]],
    ["persistent-recursive", ["children", "data", "persistent", "any"]],
    ["any", []],
  ];
  for (const [removed, left] of REMOVAL) {
    test(`removeWatch ${removed} takes exactly those watches and leaves ${left.join(", ") || "nothing"}`, () => {
      const watches = new WatchManager();
      watches.addChildWatch("/p", 1n);
      watches.addDataWatch("/p", 1n);
      watches.addPersistentWatch("/p", 1n, "persistent");
      watches.addPersistentWatch("/p", 1n, "persistent-recursive");
      watches.addDataWatch("/p", 2n);
      assert.equal(watches.removeWatch("/p", removed, 1n), true);
      assert.equal(watches.removeWatch("/p", removed, 1n), false, "nothing of that type is left to remove");
      for (const type of TYPES) assert.equal(watches.containsWatch("/p", type, 1n), left.includes(type), `${type} after removing ${removed}`);
      assert.equal(watches.containsWatch("/p", "data", 2n), true, "another watcher's watch is untouched");
    });
  }

  test("containsWatch and removeWatch find nothing on other paths or of other watchers", () => {
    const watches = new WatchManager();
    watches.addPersistentWatch("/a", 1n, "persistent-recursive");
    for (const type of TYPES) {
      assert.equal(watches.containsWatch("/a/b", type, 1n), false, `${type} on a path below`);
      assert.equal(watches.containsWatch("/a", type, 2n), false, `${type} of another watcher`);
      assert.equal(watches.removeWatch("/a/b", type, 1n), false);
    }
    assert.equal(watches.containsWatch("/a", "persistent", 1n), false, "recursive is not persistent");
    assert.equal(watches.containsWatch("/a", "persistent-recursive", 1n), true);
  });

  test("the recursive count follows registrations and removals of every kind", () => {
    const watches = new WatchManager();
    watches.addPersistentWatch("/a", 1n, "persistent-recursive");
    watches.addPersistentWatch("/a", 1n, "persistent-recursive");
    watches.addPersistentWatch("/b", 1n, "persistent-recursive");
    watches.addPersistentWatch("/a", 2n, "persistent-recursive");
    watches.addPersistentWatch("/c", 2n, "persistent");
    assert.equal(watches.recursiveWatchCount(), 3);
    watches.triggerData("/a", NodeDataChanged, 1);
    watches.triggerDeleted("/a", 2);
    assert.equal(watches.recursiveWatchCount(), 3, "firing keeps them");
    assert.equal(watches.removeWatch("/a", "persistent", 1n), false);
    assert.equal(watches.removeWatch("/a", "any", 1n), true);
    assert.equal(watches.recursiveWatchCount(), 2);
    assert.equal(watches.removeWatch("/a", "persistent-recursive", 2n), true);
    assert.equal(watches.recursiveWatchCount(), 1);
    assert.equal(watches.removeWatcher(1n), 1);
    assert.equal(watches.recursiveWatchCount(), 0);
    assert.equal(watches.removeWatcher(2n), 2);
    assert.equal(watches.watchCount(), 0);
  });

  test("without recursive watches a trigger looks at its own path only; with one, at every ancestor", () => {
    const watches = new WatchManager();
    const looked: string[] = [];
    class CountingMap<K, V> extends Map<K, V> {
      override get(key: K): V | undefined {
        looked.push(String(key));
        return super.get(key);
      }
    }
    // The data table, swapped for one that records every lookup.
    Reflect.set(watches, "dataByPath", new CountingMap());
    watches.addPersistentWatch("/x", 1n, "persistent");
    looked.length = 0;
    watches.triggerData("/a/b/c/d", NodeDataChanged, 1);
    assert.deepEqual(looked, ["/a/b/c/d"]);
    watches.addPersistentWatch("/x", 1n, "persistent-recursive");
    looked.length = 0;
    watches.triggerData("/a/b/c/d", NodeDataChanged, 2);
    assert.deepEqual(looked, ["/a/b/c/d", "/a/b/c", "/a/b", "/a", "/"]);
    watches.removeWatch("/x", "persistent-recursive", 1n);
    looked.length = 0;
    watches.triggerData("/a/b/c/d", NodeDataChanged, 3);
    assert.deepEqual(looked, ["/a/b/c/d"]);
  });

  test("removeWatcher drops persistent and recursive watches with the rest", () => {
    const watches = new WatchManager();
    watches.addPersistentWatch("/a", 1n, "persistent");
    watches.addPersistentWatch("/", 1n, "persistent-recursive");
    watches.addPersistentWatch("/a", 2n, "persistent");
    assert.equal(watches.removeWatcher(1n), 3);
    assert.deepEqual(
      watches.triggerData("/a", NodeDataChanged, 1).map((d) => d.watcher),
      [2n],
    );
  });
});
