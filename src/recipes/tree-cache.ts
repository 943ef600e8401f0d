/**
 * TreeCache: a local mirror of a subtree (Curator's TreeCache), kept current by one-time watches
 * that are re-armed by the very read that answers each event.
 */
import { EventEmitter } from "node:events";
import type { Client } from "../client/client.js";
import type { ClientState, Stat, WatchedEvent } from "../client/types.js";
import { ZkError } from "../common/errors.js";
import { childPath, isZkError, nameOf, parentOf, withDeadline, type WaitOptions, isSessionEnd, sessionEndError } from "./common.js";

/** One mirrored znode: its data and the Stat that came with that data. */
export interface CachedNode {
  /** Its data. */
  data: Uint8Array;
  /** The Stat read with that data. */
  stat: Stat;
}

/** What a `TreeCache` takes. */
export interface TreeCacheOptions {
  /** Levels mirrored below the root: 0 mirrors the root alone, 1 its children too. Default: all. */
  maxDepth?: number;
}

/** The events of a TreeCache and their listeners' arguments. */
export interface TreeCacheEvents {
  /** A node entered the mirror (during the initial build too). */
  added: [path: string, node: CachedNode];
  /** A mirrored node's data changed (a change of its children alone is not reported). */
  updated: [path: string, node: CachedNode, previous: CachedNode];
  /** A node left the mirror (its descendants are reported first). */
  removed: [path: string, previous: CachedNode];
  /** The first complete read of the subtree is in the mirror. */
  initialized: [];
  /** The session is gone (expired or closed: SESSIONEXPIRED; its SASL login refused: AUTHFAILED): the mirror is cleared and stops for good. */
  lost: [error: ZkError];
}

type Phase = "idle" | "running" | "stopped";

/**
 * A mirror of the subtree at `root`: `get(path)` / `snapshot()` give `{ data, stat }` for every node
 * of the subtree (the root included) that the cache has read.
 *
 * Guarantees: every node carries a data watch and (above maxDepth) a child watch, re-armed by the
 * read that answers each event, so after the writes stop the mirror equals a fresh read of the
 * subtree. Reads are applied in the order the session answers them (each result is applied in the
 * first continuation of its request), and a result older than what the mirror holds (lower czxid,
 * or same czxid and lower mzxid) is ignored. Intermediate versions may be coalesced: a watcher sees
 * the latest data, not necessarily every write. After a reconnect the whole subtree is read again,
 * so changes the watches may have missed are picked up. No polling, no timers.
 *
 * Session loss: when the client's session expires (or the client is closed) the cache clears
 * itself, emits `lost` and stops; it never reports contents it can no longer keep current. Make a
 * new cache on a new session.
 */
export class TreeCache extends EventEmitter<TreeCacheEvents> {
  private readonly nodes = new Map<string, CachedNode>();
  private readonly maxDepth: number;
  private phase: Phase = "idle";
  /** Reads sent and not yet answered. */
  private outstanding = 0;
  /** A read failed with CONNECTIONLOSS since the last full build: the next "reconnected" rebuilds. */
  private incomplete = false;
  private initialized = false;
  private settleStart: { resolve: () => void; reject: (error: ZkError) => void } | undefined;
  /** One function for every watch this cache sets: the SDK then fires it once per path and kind. */
  private readonly watcher = (event: WatchedEvent): void => this.onWatch(event);
  private readonly onState = (state: ClientState): void => {
    if (state === "reconnected") this.rebuild();
    else if (isSessionEnd(state)) this.lose(sessionEndError(state, `tree cache ${this.root}: session ${state}`));
  };

  constructor(
    private readonly client: Client,
    readonly root: string,
    options: TreeCacheOptions = {},
  ) {
    super();
    const maxDepth = options.maxDepth ?? Number.POSITIVE_INFINITY;
    if (!(maxDepth >= 0)) throw new ZkError("BADARGUMENTS", `maxDepth must be >= 0, got ${maxDepth}`);
    this.maxDepth = maxDepth;
  }

  /**
   * Starts mirroring; resolves once the first complete read is in (the root may be missing: the
   * mirror is then empty and waits for it). Rejects with SESSIONEXPIRED if the session is gone,
   * OPERATIONTIMEOUT on timeout/abort — the cache is then closed.
   */
  async start(options: WaitOptions = {}): Promise<void> {
    if (this.phase !== "idle") throw new ZkError("BADARGUMENTS", `tree cache ${this.root} already started`);
    this.phase = "running";
    const started = new Promise<void>((resolve, reject) => (this.settleStart = { resolve, reject }));
    started.catch(() => undefined);
    await withDeadline(`tree cache ${this.root}`, options, this.client, async (deadline) => {
      this.client.on("state", this.onState);
      const state = this.client.state;
      if (isSessionEnd(state)) this.onState(state);
      else this.rebuild();
      try {
        await deadline.race(started);
      } catch (error) {
        this.close();
        throw error;
      }
    });
  }

  /** Stops mirroring and clears the mirror. Watches already set fire once more into nothing. */
  close(): void {
    if (this.phase === "stopped") return;
    this.phase = "stopped";
    this.client.off("state", this.onState);
    this.nodes.clear();
    this.settleStart?.reject(new ZkError("OPERATIONTIMEOUT", `tree cache ${this.root}: closed`));
    this.settleStart = undefined;
  }

  /** Whether the cache is mirroring (started, not closed, session alive). */
  get running(): boolean {
    return this.phase === "running";
  }

  /** How many nodes the mirror holds. */
  get size(): number {
    return this.nodes.size;
  }

  /** The mirrored node at `path`, or undefined when the mirror has none. */
  get(path: string): CachedNode | undefined {
    return this.nodes.get(path);
  }

  /** Names of the mirrored children of `path`, sorted. */
  children(path: string): string[] {
    const names: string[] = [];
    for (const key of this.nodes.keys()) if (key !== path && parentOf(key) === path) names.push(nameOf(key));
    return names.sort();
  }

  /** A copy of the mirror: path → { data, stat }. */
  snapshot(): Map<string, CachedNode> {
    return new Map(this.nodes);
  }

  // ---------------------------------------------------------------------------------------------

  /** Reads the whole subtree again (start, and every reconnect: watches may have missed changes). */
  private rebuild(): void {
    if (this.phase !== "running") return;
    this.incomplete = false;
    this.readTree(this.root, true);
  }

  /** Data (and, above maxDepth, children) of `path`; with `full`, of every descendant too. */
  private readTree(path: string, full: boolean): void {
    this.readData(path);
    if (this.depthOf(path) < this.maxDepth) this.readChildren(path, full);
  }

  private readData(path: string): void {
    this.request(
      this.client.getData(path, { watch: this.watcher }),
      ({ data, stat }) => this.applyData(path, data, stat),
      () => this.applyMissing(path),
    );
  }

  private readChildren(path: string, full: boolean): void {
    this.request(
      this.client.getChildrenWithStat(path, { watch: this.watcher }),
      ({ children, stat }) => this.applyChildren(path, children, stat, full),
      // The node is gone: its data read or its deletion event removes it.
      () => undefined,
    );
  }

  /** Watches the root's creation (exists sets the watch whether or not it is there). */
  private watchRootCreation(): void {
    this.request(
      this.client.exists(this.root, { watch: this.watcher }),
      (stat) => {
        if (stat !== null) this.readTree(this.root, true);
      },
      () => undefined,
    );
  }

  /**
   * Sends one read and applies its answer in the promise's first continuation, so answers are
   * applied in the order the session returns them (the SDK resolves them in that order).
   */
  private request<T>(sent: Promise<T>, apply: (value: T) => void, missing: () => void): void {
    if (this.phase !== "running") {
      sent.catch(() => undefined);
      return;
    }
    this.outstanding += 1;
    sent.then(
      (value) => {
        this.outstanding -= 1;
        if (this.phase === "running") apply(value);
        this.maybeInitialized();
      },
      (error: unknown) => {
        this.outstanding -= 1;
        if (this.phase === "running") {
          if (isZkError(error, "NONODE")) missing();
          else if (isZkError(error, "CONNECTIONLOSS")) this.incomplete = true;
          else this.lose(error instanceof ZkError ? error : new ZkError("SYSTEMERROR", String(error)));
        }
        this.maybeInitialized();
      },
    );
  }

  private maybeInitialized(): void {
    if (this.phase !== "running" || this.initialized || this.outstanding > 0 || this.incomplete) return;
    this.initialized = true;
    this.settleStart?.resolve();
    this.settleStart = undefined;
    this.emitSafely("initialized");
  }

  private applyData(path: string, data: Uint8Array, stat: Stat): void {
    // A child whose parent has left the mirror meanwhile is not mirrored (no orphans).
    if (path !== this.root && !this.nodes.has(parentOf(path))) return;
    const previous = this.nodes.get(path);
    if (previous && isOlder(stat, previous.stat)) return;
    const node = { data, stat };
    this.nodes.set(path, node);
    if (previous === undefined) this.emitSafely("added", path, node);
    else if (previous.stat.czxid !== stat.czxid || previous.stat.mzxid !== stat.mzxid) this.emitSafely("updated", path, node, previous);
  }

  private applyMissing(path: string): void {
    this.removeSubtree(path);
    if (path === this.root) this.watchRootCreation();
  }

  private applyChildren(path: string, children: readonly string[], stat: Stat, full: boolean): void {
    const cached = this.nodes.get(path);
    if (cached === undefined) return;
    // The children-read Stat is fresher for the child counters; keep it only if it describes the
    // same data the mirror holds (otherwise a data read is on its way and brings its own Stat).
    if (cached.stat.czxid === stat.czxid && cached.stat.mzxid === stat.mzxid) this.nodes.set(path, { data: cached.data, stat });
    const names = new Set(children.map((child) => childPath(path, child)));
    for (const key of [...this.nodes.keys()]) {
      if (key !== path && parentOf(key) === path && !names.has(key)) this.removeSubtree(key);
    }
    for (const child of names) {
      if (full || !this.nodes.has(child)) this.readTree(child, full);
    }
  }

  private onWatch(event: WatchedEvent): void {
    if (this.phase !== "running") return;
    switch (event.type) {
      case "NodeDataChanged":
        this.readData(event.path);
        return;
      case "NodeChildrenChanged":
        this.readChildren(event.path, false);
        return;
      case "NodeCreated":
        this.readTree(event.path, true);
        return;
      case "NodeDeleted":
        this.removeSubtree(event.path);
        if (event.path === this.root) this.readData(this.root);
        return;
    }
  }

  /** Removes `path` and everything below it, deepest first, each with a `removed` event. */
  private removeSubtree(path: string): void {
    const doomed = [...this.nodes.keys()].filter((key) => key === path || isUnder(key, path));
    doomed.sort((a, b) => b.length - a.length);
    for (const key of doomed) {
      const previous = this.nodes.get(key)!;
      this.nodes.delete(key);
      this.emitSafely("removed", key, previous);
    }
  }

  private lose(error: ZkError): void {
    if (this.phase !== "running") return;
    const settle = this.settleStart;
    this.settleStart = undefined;
    this.close();
    settle?.reject(error);
    this.emitSafely("lost", error);
  }

  private depthOf(path: string): number {
    if (path === this.root) return 0;
    const rest = this.root === "/" ? path.slice(1) : path.slice(this.root.length + 1);
    return rest.split("/").length;
  }

  /** A listener that throws must not leave the mirror half-updated: it is rethrown on its own. */
  private emitSafely<K extends keyof TreeCacheEvents>(event: K, ...args: TreeCacheEvents[K]): void {
    try {
      // EventEmitter<TreeCacheEvents>.emit cannot match arguments to a generic event name; the
      // signature above checks them, so this goes through the untyped view of the same emitter.
      (this as EventEmitter).emit(event, ...args);
    } catch (error) {
      queueMicrotask(() => {
        throw error;
      });
    }
  }
}

/** Whether `stat` describes an older state of the node than `than`. */
function isOlder(stat: Stat, than: Stat): boolean {
  return stat.czxid < than.czxid || (stat.czxid === than.czxid && stat.mzxid < than.mzxid);
}

function isUnder(path: string, ancestor: string): boolean {
  return ancestor === "/" ? path !== "/" : path.startsWith(`${ancestor}/`);
}
