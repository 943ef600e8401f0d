/**
 * Lock: an exclusive, reentrant lock across sessions (ZooKeeper's lock recipe, Curator's
 * InterProcessMutex).
 */
import type { Client } from "../client/client.js";
import { SequentialLock } from "./lock-core.js";
import { EXCLUSIVE_POLICY } from "./lock-policy.js";

/**
 * An exclusive lock on the directory `path`: at most one Lock instance, across all sessions,
 * holds it at a time. Each acquire creates a sequential-ephemeral `lock-` node (protected name)
 * under `path`; the lowest node holds, and every other contender watches only the node just below
 * its own, so a release wakes exactly one waiter. Reentrant per instance (acquire counts up,
 * release counts down).
 *
 * Session loss: an acquire under way rejects with SESSIONEXPIRED; a holder sees `isHeld` turn
 * false and a "lost" event. `fencingToken` is the czxid of the holder's node: strictly larger
 * for every later grant, so a resource can refuse a stale holder.
 *
 * ```ts
 * const lock = new Lock(zk, "/locks/report");
 * await lock.acquire({ timeoutMs: 5_000 });
 * try { await writeReport(lock.fencingToken); } finally { await lock.release(); }
 * ```
 */
export class Lock extends SequentialLock {
  constructor(client: Client, path: string) {
    super(client, path, EXCLUSIVE_POLICY);
  }
}
