/**
 * NodeCache: a local mirror of one znode (Curator's NodeCache) — its data and Stat, or null while
 * it does not exist.
 */
import { EventEmitter } from "node:events";
import type { Client } from "../client/client.js";
import type { ZkError } from "../common/errors.js";
import type { WaitOptions } from "./common.js";
import { type CachedNode, TreeCache } from "./tree-cache.js";

/** The events of a NodeCache and their listeners' arguments. */
export interface NodeCacheEvents {
  /** The node was created, its data changed, or it was deleted (null). */
  changed: [node: CachedNode | null];
  /** The session is gone: `current` is null from now on and the cache has stopped. */
  lost: [error: ZkError];
}

/**
 * A mirror of the node at `path`. Guarantees: a data watch (or, while the node is missing, an
 * exists watch) is always armed, re-armed by the read that answers each event and re-read after
 * every reconnect, so once writes stop `current` equals a fresh read. Intermediate versions may be
 * coalesced; `changed` never goes back to an older version of the same node.
 *
 * Session loss: on expiry (or close of the client) the cache emits `lost`, forgets the node and
 * stops; create a new cache on a new session.
 */
export class NodeCache extends EventEmitter<NodeCacheEvents> {
  private readonly tree: TreeCache;

  constructor(
    client: Client,
    readonly path: string,
  ) {
    super();
    this.tree = new TreeCache(client, path, { maxDepth: 0 });
    this.tree.on("added", (_, node) => this.emit("changed", node));
    this.tree.on("updated", (_, node) => this.emit("changed", node));
    this.tree.on("removed", () => this.emit("changed", null));
    this.tree.on("lost", (error) => this.emit("lost", error));
  }

  /** Starts mirroring; resolves with the node as first read (null if missing). */
  async start(options: WaitOptions = {}): Promise<CachedNode | null> {
    await this.tree.start(options);
    return this.current;
  }

  /** The node's data and Stat as last read, or null (missing, not started, closed or lost). */
  get current(): CachedNode | null {
    return this.tree.get(this.path) ?? null;
  }

  /** True from `start` until `close` or the loss of the session. */
  get running(): boolean {
    return this.tree.running;
  }

  /** Stops the cache for good: what it mirrors is dropped, it emits nothing more, and a start still in progress rejects. */
  close(): void {
    this.tree.close();
  }
}
