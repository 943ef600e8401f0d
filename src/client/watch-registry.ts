/**
 * The client side of watches, as ZooKeeper's ZKWatchManager: three tables (data, exist, child) of
 * one-time watchers keyed by server path. A watch is added only once the server's answer says it
 * was set; an event removes and returns every watcher it triggers, each function once.
 */
import type { WatchedEventType, Watcher } from "./types.js";

export type WatchKind = "data" | "exist" | "child";

export interface WatchPaths {
  dataWatches: string[];
  existWatches: string[];
  childWatches: string[];
}

export class WatchRegistry {
  private readonly data = new Map<string, Set<Watcher>>();
  private readonly exist = new Map<string, Set<Watcher>>();
  private readonly child = new Map<string, Set<Watcher>>();

  add(kind: WatchKind, path: string, watcher: Watcher): void {
    const table = this.table(kind);
    const set = table.get(path);
    if (set) set.add(watcher);
    else table.set(path, new Set([watcher]));
  }

  /**
   * Removes and returns the watchers an event triggers (ZooKeeper's materialize):
   * NodeCreated and NodeDataChanged → data + exist; NodeDeleted → data + exist + child;
   * NodeChildrenChanged → child. A function registered under several kinds fires once.
   */
  materialize(type: WatchedEventType, path: string): Set<Watcher> {
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
    return out;
  }

  /** Paths still watched, for setWatches after a reconnect. */
  paths(): WatchPaths {
    return {
      dataWatches: [...this.data.keys()],
      existWatches: [...this.exist.keys()],
      childWatches: [...this.child.keys()],
    };
  }

  get size(): number {
    return this.data.size + this.exist.size + this.child.size;
  }

  clear(): void {
    this.data.clear();
    this.exist.clear();
    this.child.clear();
  }

  private table(kind: WatchKind): Map<string, Set<Watcher>> {
    return kind === "data" ? this.data : kind === "exist" ? this.exist : this.child;
  }
}

function take(table: Map<string, Set<Watcher>>, path: string, out: Set<Watcher>): void {
  const set = table.get(path);
  if (!set) return;
  table.delete(path);
  for (const watcher of set) out.add(watcher);
}

/**
 * Splits the watched paths into setWatches lists of at most about `bytesMax` bytes of paths each
 * (ZooKeeper splits them likewise, so that a client with many watches never builds a message the
 * server refuses). Order within each kind is kept; no path is lost or repeated.
 */
export function chunkWatchPaths(all: WatchPaths, bytesMax: number): WatchPaths[] {
  const chunks: WatchPaths[] = [];
  let chunk: WatchPaths = { dataWatches: [], existWatches: [], childWatches: [] };
  let bytes = 0;
  const kinds: (keyof WatchPaths)[] = ["dataWatches", "existWatches", "childWatches"];
  for (const kind of kinds) {
    for (const path of all[kind]) {
      // UTF-8 is at most 3 bytes per UTF-16 unit, plus the field's tag and length.
      const size = path.length * 3 + 4;
      if (bytes > 0 && bytes + size > bytesMax) {
        chunks.push(chunk);
        chunk = { dataWatches: [], existWatches: [], childWatches: [] };
        bytes = 0;
      }
      chunk[kind].push(path);
      bytes += size;
    }
  }
  if (bytes > 0) chunks.push(chunk);
  return chunks;
}
