/**
 * A server's watches, as ZooKeeper's WatchManager keeps them: two tables, each mapping a path to
 * the watchers on it and the modes each holds there, plus the reverse index watcher → paths so
 * that dropping a closed or disconnected session's watches is cheap.
 * - The data table holds one-time data and exist watches (getData, exists) and the watches of
 *   addWatch: persistent and persistent-recursive.
 * - The child table holds one-time child watches (getChildren) and persistent watches.
 *
 * A one-time watch is removed when it fires; a persistent one stays; a persistent-recursive one
 * stays and also fires for every node below its path. Recursive watches live in the data table
 * only, so they never see NodeChildrenChanged (ZooKeeper: it would only repeat the NodeCreated or
 * NodeDeleted of the child). One watcher may hold several modes on one path (ZooKeeper 3.9's
 * WatchStats; 3.8 let a later mode overwrite an earlier one): a getData watch and a persistent
 * watch on one node both stay armed until their own end.
 *
 * The ancestors of a changed path are looked at only while some recursive watch exists (a count,
 * as ZooKeeper's recursiveWatchQty): without one, a trigger costs one lookup per table.
 *
 * A watcher is a `bigint` (the session id inside the server). Registering a mode a watcher already
 * holds on a path changes nothing. One trigger notifies a watcher at most once, however many of
 * its watches match. Deliveries come out in a fixed order — the watchers of the path itself in
 * registration order, then those of recursive watches on its ancestors, nearest first — so the
 * same inputs always give the same output.
 */
import { assert } from "../common/assert.js";
import type { AddWatchMode, WatcherType } from "../common/watch-modes.js";
import type { WatchDelivery, WatchEvent, WatchEventTypeValue } from "./types.js";
import { WatchEventType } from "./types.js";

export type WatchKind = "data" | "child";

/** Watch modes as bits: one watcher may hold several on one path. */
const STANDARD = 1;
const PERSISTENT = 2;
const RECURSIVE = 4;
const ALL_MODES = STANDARD | PERSISTENT | RECURSIVE;

/** path → watcher → the modes it holds there (insertion order = registration order). */
type Table = Map<string, Map<bigint, number>>;

interface WatcherPaths {
  data: Set<string>;
  child: Set<string>;
}

export class WatchManager {
  private readonly dataByPath: Table = new Map();
  private readonly childByPath: Table = new Map();
  private readonly byWatcher = new Map<bigint, WatcherPaths>();
  /** Entries (path, table, watcher), whatever their modes. */
  private total = 0;
  /** Watchers holding a recursive watch, summed over paths: while 0, no trigger looks at ancestors. */
  private recursive = 0;

  /** A one-time data watch (getData) or exist watch (exists): fires NodeCreated, NodeDataChanged, NodeDeleted. */
  addDataWatch(path: string, watcher: bigint): void {
    this.add(this.dataByPath, "data", path, watcher, STANDARD);
  }

  /** A one-time child watch (getChildren): fires NodeChildrenChanged, NodeDeleted. */
  addChildWatch(path: string, watcher: bigint): void {
    this.add(this.childByPath, "child", path, watcher, STANDARD);
  }

  /**
   * addWatch. "persistent": every event of the node itself, NodeChildrenChanged included (held in
   * both tables). "persistent-recursive": NodeCreated, NodeDataChanged and NodeDeleted of the node
   * and of every node below it (held in the data table only).
   */
  addPersistentWatch(path: string, watcher: bigint, mode: AddWatchMode): void {
    if (mode === "persistent") {
      this.add(this.dataByPath, "data", path, watcher, PERSISTENT);
      this.add(this.childByPath, "child", path, watcher, PERSISTENT);
    } else {
      this.add(this.dataByPath, "data", path, watcher, RECURSIVE);
    }
  }

  /** Fires the data-table watches `path` triggers. Appends to `out` when given, and returns it. */
  triggerData(path: string, type: WatchEventTypeValue, zxid: number, out: WatchDelivery[] = []): WatchDelivery[] {
    this.fire(this.dataByPath, "data", path, type, zxid, out, undefined);
    return out;
  }

  /** Fires the child-table watches on `path`. Appends to `out` when given, and returns it. */
  triggerChild(path: string, type: WatchEventTypeValue, zxid: number, out: WatchDelivery[] = []): WatchDelivery[] {
    this.fire(this.childByPath, "child", path, type, zxid, out, undefined);
    return out;
  }

  /**
   * A node was deleted: NodeDeleted to its data-table watchers, then to its child watchers that did
   * not just get one (ZooKeeper's `processed` set: a watcher holding both gets one event).
   */
  triggerDeleted(path: string, zxid: number, out: WatchDelivery[] = []): WatchDelivery[] {
    const notified = this.fire(this.dataByPath, "data", path, WatchEventType.NodeDeleted, zxid, out, undefined);
    this.fire(this.childByPath, "child", path, WatchEventType.NodeDeleted, zxid, out, notified);
    return out;
  }

  /**
   * Removes, without firing, the watches of `watcher` on `path` that `type` names (ZooKeeper's
   * DataTree.removeWatch): "children" / "data" the one-time ones of that table, "persistent" and
   * "persistent-recursive" those modes, "any" every mode in both tables. Returns whether one existed.
   */
  removeWatch(path: string, type: WatcherType, watcher: bigint): boolean {
    switch (type) {
      case "children":
        return this.removeModes(this.childByPath, "child", path, watcher, STANDARD);
      case "data":
        return this.removeModes(this.dataByPath, "data", path, watcher, STANDARD);
      case "persistent":
        return this.removeModesFromBoth(path, watcher, PERSISTENT);
      case "persistent-recursive":
        return this.removeModes(this.dataByPath, "data", path, watcher, RECURSIVE);
      case "any":
        return this.removeModesFromBoth(path, watcher, ALL_MODES);
    }
  }

  /** Whether `watcher` holds on `path` a watch that `type` names (ZooKeeper's DataTree.containsWatcher). */
  containsWatch(path: string, type: WatcherType, watcher: bigint): boolean {
    switch (type) {
      case "children":
        return (modesOf(this.childByPath, path, watcher) & STANDARD) !== 0;
      case "data":
        return (modesOf(this.dataByPath, path, watcher) & STANDARD) !== 0;
      case "persistent":
        return (modesOf(this.dataByPath, path, watcher) & PERSISTENT) !== 0;
      case "persistent-recursive":
        return (modesOf(this.dataByPath, path, watcher) & RECURSIVE) !== 0;
      case "any":
        return modesOf(this.childByPath, path, watcher) !== 0 || modesOf(this.dataByPath, path, watcher) !== 0;
    }
  }

  /** Drops every watch of `watcher` (its session closed or its connection went away). Returns how many entries. */
  removeWatcher(watcher: bigint): number {
    const paths = this.byWatcher.get(watcher);
    if (paths === undefined) return 0;
    this.byWatcher.delete(watcher);
    for (const path of paths.data) this.drop(this.dataByPath, path, watcher);
    for (const path of paths.child) this.drop(this.childByPath, path, watcher);
    const removed = paths.data.size + paths.child.size;
    this.total -= removed;
    return removed;
  }

  /** Whether `watcher` holds any watch on `path` in that table. */
  hasWatch(path: string, kind: WatchKind, watcher: bigint): boolean {
    return modesOf(kind === "data" ? this.dataByPath : this.childByPath, path, watcher) !== 0;
  }

  /** Entries held by one watcher (one per path and table), to enforce `limits.watchesPerSessionMax`. */
  watchCountOf(watcher: bigint): number {
    const paths = this.byWatcher.get(watcher);
    return paths === undefined ? 0 : paths.data.size + paths.child.size;
  }

  /** The paths one watcher watches, per table, sorted (for diagnostics and tests). */
  watchedPathsOf(watcher: bigint): { data: string[]; child: string[] } {
    const paths = this.byWatcher.get(watcher);
    if (paths === undefined) return { data: [], child: [] };
    return { data: [...paths.data].sort(), child: [...paths.child].sort() };
  }

  /** Every watcher holding at least one watch (for diagnostics: the admin `watches` command). */
  watchers(): IterableIterator<bigint> {
    return this.byWatcher.keys();
  }

  /** Every watched path with the watchers on it, data and child tables merged (the admin `watches_by_path` command). */
  watchersByPath(): Map<string, Set<bigint>> {
    const byPath = new Map<string, Set<bigint>>();
    for (const table of [this.dataByPath, this.childByPath]) {
      for (const [path, watchers] of table) {
        let set = byPath.get(path);
        if (set === undefined) byPath.set(path, (set = new Set()));
        for (const watcher of watchers.keys()) set.add(watcher);
      }
    }
    return byPath;
  }

  /** All entries held, data and child. */
  watchCount(): number {
    return this.total;
  }

  /** Paths with at least one watch (ZooKeeper's wchs counts data and child tables apart, and so do we). */
  watchedPathCount(): number {
    return this.dataByPath.size + this.childByPath.size;
  }

  /** Watchers holding at least one watch. */
  watcherCount(): number {
    return this.byWatcher.size;
  }

  /** Recursive watches held (each watcher on each path counts once). */
  recursiveWatchCount(): number {
    return this.recursive;
  }

  private add(table: Table, kind: WatchKind, path: string, watcher: bigint, mode: number): void {
    let watchers = table.get(path);
    if (watchers === undefined) {
      watchers = new Map();
      table.set(path, watchers);
    }
    const held = watchers.get(watcher);
    if (held === undefined) {
      watchers.set(watcher, mode);
      let paths = this.byWatcher.get(watcher);
      if (paths === undefined) {
        paths = { data: new Set(), child: new Set() };
        this.byWatcher.set(watcher, paths);
      }
      paths[kind].add(path);
      this.total++;
    } else if ((held & mode) !== 0) {
      return;
    } else {
      watchers.set(watcher, held | mode);
    }
    if (mode === RECURSIVE) this.recursive++;
  }

  /** Both tables are cleared before answering: a short-circuit `||` would leave the data table's watch armed. */
  private removeModesFromBoth(path: string, watcher: bigint, modes: number): boolean {
    const child = this.removeModes(this.childByPath, "child", path, watcher, modes);
    const data = this.removeModes(this.dataByPath, "data", path, watcher, modes);
    return child || data;
  }

  /** Takes `modes` from the watcher's entry on `path`; returns whether it held any of them. */
  private removeModes(table: Table, kind: WatchKind, path: string, watcher: bigint, modes: number): boolean {
    const watchers = table.get(path);
    const held = watchers?.get(watcher);
    if (watchers === undefined || held === undefined || (held & modes) === 0) return false;
    if ((held & modes & RECURSIVE) !== 0) this.recursive--;
    const rest = held & ~modes;
    if (rest === 0) this.unwatch(table, kind, path, watcher, watchers);
    else watchers.set(watcher, rest);
    return true;
  }

  /** Removes the watcher's entry on `path` (`watchers` is that path's map) from the table and the reverse index. */
  private unwatch(table: Table, kind: WatchKind, path: string, watcher: bigint, watchers: Map<bigint, number>): void {
    watchers.delete(watcher);
    if (watchers.size === 0) table.delete(path);
    const paths = this.byWatcher.get(watcher);
    assert(paths !== undefined && paths[kind].delete(path), "watch reverse index out of step");
    if (paths.data.size === 0 && paths.child.size === 0) this.byWatcher.delete(watcher);
    this.total--;
  }

  /** Removes an entry from a table only (removeWatcher has already dropped the reverse index). */
  private drop(table: Table, path: string, watcher: bigint): void {
    const watchers = table.get(path);
    const held = watchers?.get(watcher);
    assert(watchers !== undefined && held !== undefined, "watch table out of step");
    if ((held & RECURSIVE) !== 0) this.recursive--;
    watchers.delete(watcher);
    if (watchers.size === 0) table.delete(path);
  }

  /**
   * Notifies the watchers on `path` (spending their one-time watches) and, in the data table while
   * recursive watches exist, those of recursive watches on its ancestors. Appends a delivery for
   * each notified watcher not in `skip`; returns every notified watcher (skipped ones included).
   */
  private fire(
    table: Table,
    kind: WatchKind,
    path: string,
    type: WatchEventTypeValue,
    zxid: number,
    out: WatchDelivery[],
    skip: ReadonlySet<bigint> | undefined,
  ): Set<bigint> | undefined {
    let notified: Set<bigint> | undefined;
    const watchers = table.get(path);
    if (watchers !== undefined) {
      notified = new Set();
      // Deleting the entry being visited is safe while iterating a Map.
      for (const [watcher, held] of watchers) {
        notified.add(watcher);
        if ((held & STANDARD) === 0) continue;
        if (held === STANDARD) this.unwatch(table, kind, path, watcher, watchers);
        else watchers.set(watcher, held & ~STANDARD);
      }
    }
    if (kind === "data" && this.recursive > 0) {
      for (let at = parentOf(path); at !== undefined; at = parentOf(at)) {
        const above = table.get(at);
        if (above === undefined) continue;
        for (const [watcher, held] of above) {
          if ((held & RECURSIVE) !== 0) (notified ??= new Set()).add(watcher);
        }
      }
    }
    if (notified === undefined) return undefined;
    // One event object shared by every delivery of this trigger: treat events as immutable.
    const event: WatchEvent = { type, path, zxid };
    for (const watcher of notified) {
      if (skip === undefined || !skip.has(watcher)) out.push({ watcher, event });
    }
    return notified;
  }
}

function modesOf(table: Table, path: string, watcher: bigint): number {
  return table.get(path)?.get(watcher) ?? 0;
}

/** "/a/b" → "/a", "/a" → "/", "/" → undefined. */
function parentOf(path: string): string | undefined {
  if (path.length <= 1) return undefined;
  const slash = path.lastIndexOf("/");
  return slash <= 0 ? "/" : path.slice(0, slash);
}
