/**
 * One-time watches, as ZooKeeper's WatchManager keeps them: two tables (data watches, which also
 * hold exist watches, and child watches) mapping a path to the watchers on it, plus the reverse
 * index watcher → paths so that dropping a closed or disconnected session's watches is cheap.
 *
 * A watcher is a `bigint` (the session id inside the server). A watcher registered twice for the
 * same path and kind holds one watch and gets one event. Firing a watch removes it.
 * Deliveries come out in registration order, so the same inputs always give the same output.
 */
import { assert } from "../common/assert.js";
import type { WatchDelivery, WatchEvent, WatchEventTypeValue } from "./types.js";
import { WatchEventType } from "./types.js";

export type WatchKind = "data" | "child";

interface WatcherPaths {
  data: Set<string>;
  child: Set<string>;
}

export class WatchManager {
  private readonly dataByPath = new Map<string, Set<bigint>>();
  private readonly childByPath = new Map<string, Set<bigint>>();
  private readonly byWatcher = new Map<bigint, WatcherPaths>();
  private total = 0;

  /** A data watch (getData) or exist watch (exists): fires NodeCreated, NodeDataChanged, NodeDeleted. */
  addDataWatch(path: string, watcher: bigint): void {
    this.add(this.dataByPath, "data", path, watcher);
  }

  /** A child watch (getChildren): fires NodeChildrenChanged, NodeDeleted. */
  addChildWatch(path: string, watcher: bigint): void {
    this.add(this.childByPath, "child", path, watcher);
  }

  /** Fires and removes every data watch on `path`. Appends to `out` when given, and returns it. */
  triggerData(path: string, type: WatchEventTypeValue, zxid: number, out: WatchDelivery[] = []): WatchDelivery[] {
    this.fire(this.dataByPath, "data", path, type, zxid, out, undefined);
    return out;
  }

  /** Fires and removes every child watch on `path`. Appends to `out` when given, and returns it. */
  triggerChild(path: string, type: WatchEventTypeValue, zxid: number, out: WatchDelivery[] = []): WatchDelivery[] {
    this.fire(this.childByPath, "child", path, type, zxid, out, undefined);
    return out;
  }

  /**
   * A node was deleted: NodeDeleted to its data watchers, then to its child watchers that did not
   * just get one (ZooKeeper's `processed` set: a watcher holding both watches gets one event).
   */
  triggerDeleted(path: string, zxid: number, out: WatchDelivery[] = []): WatchDelivery[] {
    const notified = this.fire(this.dataByPath, "data", path, WatchEventType.NodeDeleted, zxid, out, undefined);
    this.fire(this.childByPath, "child", path, WatchEventType.NodeDeleted, zxid, out, notified);
    return out;
  }

  /** Removes one watch without firing it (ZooKeeper's removeWatches). Returns whether it existed. */
  removeWatch(path: string, kind: WatchKind, watcher: bigint): boolean {
    const table = kind === "data" ? this.dataByPath : this.childByPath;
    const watchers = table.get(path);
    if (watchers === undefined || !watchers.delete(watcher)) return false;
    if (watchers.size === 0) table.delete(path);
    const paths = this.byWatcher.get(watcher);
    assert(paths !== undefined && paths[kind].delete(path), "watch reverse index out of step");
    this.total--;
    if (paths.data.size === 0 && paths.child.size === 0) this.byWatcher.delete(watcher);
    return true;
  }

  /** Drops every watch of `watcher` (its session closed or its connection went away). Returns how many. */
  removeWatcher(watcher: bigint): number {
    const paths = this.byWatcher.get(watcher);
    if (paths === undefined) return 0;
    this.byWatcher.delete(watcher);
    for (const path of paths.data) removeFromTable(this.dataByPath, path, watcher);
    for (const path of paths.child) removeFromTable(this.childByPath, path, watcher);
    const removed = paths.data.size + paths.child.size;
    this.total -= removed;
    return removed;
  }

  hasWatch(path: string, kind: WatchKind, watcher: bigint): boolean {
    const table = kind === "data" ? this.dataByPath : this.childByPath;
    return table.get(path)?.has(watcher) ?? false;
  }

  /** Watches held by one watcher (data and child together), to enforce `limits.watchesPerSessionMax`. */
  watchCountOf(watcher: bigint): number {
    const paths = this.byWatcher.get(watcher);
    return paths === undefined ? 0 : paths.data.size + paths.child.size;
  }

  /** The paths one watcher watches, sorted (for diagnostics and tests). */
  watchedPathsOf(watcher: bigint): { data: string[]; child: string[] } {
    const paths = this.byWatcher.get(watcher);
    if (paths === undefined) return { data: [], child: [] };
    return { data: [...paths.data].sort(), child: [...paths.child].sort() };
  }

  /** All watches held, data and child. */
  watchCount(): number {
    return this.total;
  }

  /** Watchers holding at least one watch. */
  watcherCount(): number {
    return this.byWatcher.size;
  }

  private add(table: Map<string, Set<bigint>>, kind: WatchKind, path: string, watcher: bigint): void {
    let watchers = table.get(path);
    if (watchers === undefined) {
      watchers = new Set();
      table.set(path, watchers);
    } else if (watchers.has(watcher)) {
      return;
    }
    watchers.add(watcher);
    let paths = this.byWatcher.get(watcher);
    if (paths === undefined) {
      paths = { data: new Set(), child: new Set() };
      this.byWatcher.set(watcher, paths);
    }
    paths[kind].add(path);
    this.total++;
  }

  /** Removes the watches on `path` from `table`, appends their deliveries, returns who was notified. */
  private fire(
    table: Map<string, Set<bigint>>,
    kind: WatchKind,
    path: string,
    type: WatchEventTypeValue,
    zxid: number,
    out: WatchDelivery[],
    skip: ReadonlySet<bigint> | undefined,
  ): Set<bigint> | undefined {
    const watchers = table.get(path);
    if (watchers === undefined) return undefined;
    table.delete(path);
    // One event object shared by every delivery of this trigger: treat events as immutable.
    const event: WatchEvent = { type, path, zxid };
    for (const watcher of watchers) {
      const paths = this.byWatcher.get(watcher);
      assert(paths !== undefined && paths[kind].delete(path), "watch reverse index out of step");
      if (paths.data.size === 0 && paths.child.size === 0) this.byWatcher.delete(watcher);
      if (skip === undefined || !skip.has(watcher)) out.push({ watcher, event });
    }
    this.total -= watchers.size;
    return watchers;
  }
}

function removeFromTable(table: Map<string, Set<bigint>>, path: string, watcher: bigint): void {
  const watchers = table.get(path);
  assert(watchers !== undefined && watchers.delete(watcher), "watch table out of step");
  if (watchers.size === 0) table.delete(path);
}
