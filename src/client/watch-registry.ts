/**
 * The client side of watches, as ZooKeeper's ZKWatchManager: five tables of watch callbacks keyed
 * by server path — one-time data, exist and child watches, and addWatch's persistent and
 * persistent-recursive ones. A watch is added only once the server's answer says it was set. An
 * event removes the one-time watchers it triggers and returns them together with the persistent
 * ones it reaches, each function once.
 */
import type { AddWatchMode, WatcherType } from "../common/watch-modes.js";
import type { NodeEventType, Watcher } from "./types.js";

export type WatchKind = "data" | "exist" | "child" | AddWatchMode;

export interface WatchPaths {
  dataWatches: string[];
  existWatches: string[];
  childWatches: string[];
  persistentWatches: string[];
  persistentRecursiveWatches: string[];
}

/** What a removal took, by the event its watchers are told (ZooKeeper's WatchRemoved types). */
export interface RemovedWatchers {
  /** child watches → ChildWatchRemoved */
  child: Set<Watcher>;
  /** data and exist watches → DataWatchRemoved */
  data: Set<Watcher>;
  /** persistent and persistent-recursive watches → PersistentWatchRemoved */
  persistent: Set<Watcher>;
}

type Table = Map<string, Set<Watcher>>;

/** The watcher types that name their own tables; "any" is all of them. */
const SINGLE_WATCHER_TYPES: readonly Exclude<WatcherType, "any">[] = ["children", "data", "persistent", "persistent-recursive"];

export class WatchRegistry {
  private readonly data: Table = new Map();
  private readonly exist: Table = new Map();
  private readonly child: Table = new Map();
  private readonly persistent: Table = new Map();
  private readonly recursive: Table = new Map();

  add(kind: WatchKind, path: string, watcher: Watcher): void {
    const table = this.table(kind);
    const set = table.get(path);
    if (set) set.add(watcher);
    else table.set(path, new Set([watcher]));
  }

  /**
   * The watchers an event triggers (ZooKeeper's materialize); the one-time ones are removed.
   * NodeCreated and NodeDataChanged → data + exist; NodeDeleted → data + exist + child;
   * NodeChildrenChanged → child. Then the persistent watchers of the path, and the recursive
   * watchers of the path and of every path above it — except for NodeChildrenChanged, which a
   * recursive watch never gets (the server sends one for a one-time child watch of this session on
   * a node below a recursive watch). A function reached several ways fires once.
   */
  materialize(type: NodeEventType, path: string): Set<Watcher> {
    const out = new Set<Watcher>();
    switch (type) {
      case "NodeCreated":
      case "NodeDataChanged":
        take(this.data, path, out);
        take(this.exist, path, out);
        break;
      case "NodeDeleted":
        take(this.data, path, out);
        take(this.exist, path, out);
        take(this.child, path, out);
        break;
      case "NodeChildrenChanged":
        take(this.child, path, out);
        break;
    }
    addAll(this.persistent.get(path), out);
    if (type !== "NodeChildrenChanged" && this.recursive.size > 0) {
      for (let at: string | undefined = path; at !== undefined; at = parentOf(at)) addAll(this.recursive.get(at), out);
    }
    return out;
  }

  /**
   * Whether `watcher` (any watcher when undefined) is held on `path` under a kind `type` names:
   * "children" child, "data" data or exist, "persistent" / "persistent-recursive" that table,
   * "any" all five (ZooKeeper's ZKWatchManager.containsWatcher).
   */
  contains(path: string, watcher: Watcher | undefined, type: WatcherType): boolean {
    return this.tablesOf(type).some(([, table]) => {
      const set = table.get(path);
      return set !== undefined && (watcher === undefined || set.has(watcher));
    });
  }

  /**
   * Removes `watcher` (every watcher when undefined) from `path` in the kinds `type` names (as
   * `contains`). Returns what went, by removal event, or undefined when nothing did.
   */
  remove(path: string, watcher: Watcher | undefined, type: WatcherType): RemovedWatchers | undefined {
    const removed: RemovedWatchers = { child: new Set(), data: new Set(), persistent: new Set() };
    let any = false;
    for (const [group, table] of this.tablesOf(type)) {
      const set = table.get(path);
      if (set === undefined) continue;
      if (watcher === undefined) {
        table.delete(path);
        addAll(set, removed[group]);
        any = true;
      } else if (set.delete(watcher)) {
        if (set.size === 0) table.delete(path);
        removed[group].add(watcher);
        any = true;
      }
    }
    return any ? removed : undefined;
  }

  /** Paths still watched, for setWatches after a reconnect. */
  paths(): WatchPaths {
    return {
      dataWatches: [...this.data.keys()],
      existWatches: [...this.exist.keys()],
      childWatches: [...this.child.keys()],
      persistentWatches: [...this.persistent.keys()],
      persistentRecursiveWatches: [...this.recursive.keys()],
    };
  }

  get size(): number {
    return this.data.size + this.exist.size + this.child.size + this.persistent.size + this.recursive.size;
  }

  clear(): void {
    this.data.clear();
    this.exist.clear();
    this.child.clear();
    this.persistent.clear();
    this.recursive.clear();
  }

  private table(kind: WatchKind): Table {
    switch (kind) {
      case "data":
        return this.data;
      case "exist":
        return this.exist;
      case "child":
        return this.child;
      case "persistent":
        return this.persistent;
      case "persistent-recursive":
        return this.recursive;
    }
  }

  /** The tables a watcher type names, each with the removal event its watchers get. */
  private tablesOf(type: WatcherType): [keyof RemovedWatchers, Table][] {
    switch (type) {
      case "children":
        return [["child", this.child]];
      case "data":
        return [
          ["data", this.data],
          ["data", this.exist],
        ];
      case "persistent":
        return [["persistent", this.persistent]];
      case "persistent-recursive":
        return [["persistent", this.recursive]];
      case "any":
        return SINGLE_WATCHER_TYPES.flatMap((single) => this.tablesOf(single));
    }
  }
}

function take(table: Table, path: string, out: Set<Watcher>): void {
  const set = table.get(path);
  if (!set) return;
  table.delete(path);
  addAll(set, out);
}

function addAll(from: ReadonlySet<Watcher> | undefined, to: Set<Watcher>): void {
  if (from) for (const watcher of from) to.add(watcher);
}

/** "/a/b" → "/a", "/a" → "/", "/" → undefined. */
function parentOf(path: string): string | undefined {
  if (path.length <= 1) return undefined;
  const slash = path.lastIndexOf("/");
  return slash <= 0 ? "/" : path.slice(0, slash);
}

/**
 * Splits the watched paths into setWatches lists of at most about `bytesMax` bytes of paths each
 * (ZooKeeper splits them likewise, so that a client with many watches never builds a message the
 * server refuses). Order within each kind is kept; no path is lost or repeated.
 */
export function chunkWatchPaths(all: WatchPaths, bytesMax: number): WatchPaths[] {
  const chunks: WatchPaths[] = [];
  let chunk = emptyWatchPaths();
  let bytes = 0;
  const kinds: (keyof WatchPaths)[] = ["dataWatches", "existWatches", "childWatches", "persistentWatches", "persistentRecursiveWatches"];
  for (const kind of kinds) {
    for (const path of all[kind]) {
      // UTF-8 is at most 3 bytes per UTF-16 unit, plus the field's tag and length.
      const size = path.length * 3 + 4;
      if (bytes > 0 && bytes + size > bytesMax) {
        chunks.push(chunk);
        chunk = emptyWatchPaths();
        bytes = 0;
      }
      chunk[kind].push(path);
      bytes += size;
    }
  }
  if (bytes > 0) chunks.push(chunk);
  return chunks;
}

export function emptyWatchPaths(): WatchPaths {
  return { dataWatches: [], existWatches: [], childWatches: [], persistentWatches: [], persistentRecursiveWatches: [] };
}
