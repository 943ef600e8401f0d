/**
 * RevocableLock: a Lock whose holder can be asked to let go (ZooKeeper's revocable shared lock,
 * Curator's Revoker / RevocationListener), with an optional forced revoke after a grace period.
 */
import type { Client } from "../client/client.js";
import { ZkError } from "../common/errors.js";
import { Deadline, deleteIfExists, isZkError, orIfNoNode, reportError, retryOnConnectionLoss, textOf, waitUntilGone, withDeadline } from "./common.js";
import { SequentialLock } from "./lock-core.js";
import { contendersOf, EXCLUSIVE_POLICY } from "./lock-policy.js";

/** The data a revocation request writes into the holder's node. */
export const REVOKE_REQUEST = "unlock";

/**
 * Called on the holder when someone asks it to release; it should call `lock.release()` (once
 * for each acquire it holds, if it acquired reentrantly).
 */
export type RevocationHandler = (lock: RevocableLock) => void | Promise<void>;

/** How `RevocableLock.revoke` asks a holder to let go. */
export interface RevokeOptions {
  /** How long the holder has to release cooperatively before its node is deleted. */
  graceMs: number;
  /** The node to revoke (a child name of the lock path, or a full path); default the current holder. */
  holderNode?: string;
  /** Abandons the wait (ZkError OPERATIONTIMEOUT); nothing is deleted then. */
  signal?: AbortSignal;
}

/** How a revoke ended: nobody held the lock, the holder released in time, or its node was deleted. */
export type RevokeOutcome = "none" | "released" | "forced";

// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- typed events only (EventEmitter methods, no new members); a subclass of SequentialLock cannot retype its events through EventEmitter<EventMap>
export interface RevocableLock {
  /** The lock was lost while held (session expired or closed, or its node deleted). */
  on(event: "lost", listener: (error: ZkError) => void): this;
  /** A forced revoke deleted the holder's node; emitted just before "lost". */
  on(event: "revoked", listener: () => void): this;
  /** Someone wrote "unlock" into the holder's node; emitted before the handler is called. */
  on(event: "revocationRequested", listener: () => void): this;
  /** The revocation handler threw or rejected. */
  on(event: "error", listener: (error: unknown) => void): this;
  /** As `on`, for the next event only. */
  once(event: "lost", listener: (error: ZkError) => void): this;
  /** As `on`, for the next event only. */
  once(event: "revoked" | "revocationRequested", listener: () => void): this;
  /** As `on`, for the next event only. */
  once(event: "error", listener: (error: unknown) => void): this;
  /** Removes a listener added with `on` or `once`. */
  off(event: "lost", listener: (error: ZkError) => void): this;
  /** Removes a listener added with `on` or `once`. */
  off(event: "revoked" | "revocationRequested", listener: () => void): this;
  /** Removes a listener added with `on` or `once`. */
  off(event: "error", listener: (error: unknown) => void): this;
}

/**
 * An exclusive Lock (same protocol, API and guarantees) whose holder listens for revocation
 * requests: `RevocableLock.requestRevoke(client, lockPath)` writes "unlock" into the holder's
 * node; the holder's data watch fires and its revocation handler runs (it should release). A
 * request that reaches a node before it holds is acted on as soon as that node is granted.
 *
 * `RevocableLock.revoke(client, lockPath, { graceMs })` asks, waits up to `graceMs` for the node
 * to go, then deletes it. A forced revoke only removes the node: the old holder is not
 * interrupted, it learns through its node's deletion watch (`isHeld` turns false, "revoked" then
 * "lost" are emitted) — possibly after the next holder was granted, so work that must not overlap
 * should carry `fencingToken`. Session loss while held: "lost" (SESSIONEXPIRED), no "revoked".
 *
 * ```ts
 * const lock = new RevocableLock(zk, "/locks/printer", { revocationHandler: (l) => l.release() });
 * await lock.acquire();
 * // elsewhere: await RevocableLock.revoke(other, "/locks/printer", { graceMs: 2_000 });
 * ```
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- see the interface RevocableLock above
export class RevocableLock extends SequentialLock {
  private handler: RevocationHandler | undefined;

  constructor(client: Client, path: string, options: { revocationHandler?: RevocationHandler } = {}) {
    super(client, path, EXCLUSIVE_POLICY);
    this.handler = options.revocationHandler;
  }

  /** Sets (or with undefined, removes) the handler called when revocation is requested. */
  setRevocationHandler(handler: RevocationHandler | undefined): void {
    this.handler = handler;
  }

  /**
   * Asks the holder of `lockPath` (or the contender `holderNode`) to release by writing "unlock"
   * into its node. Resolves with the node's path, or undefined if there was no such node.
   */
  static async requestRevoke(client: Client, lockPath: string, holderNode?: string): Promise<string | undefined> {
    return withDeadline(`requestRevoke ${lockPath}`, {}, client, async (deadline) => {
      const node = holderNode !== undefined ? nodePath(lockPath, holderNode) : await currentHolder(client, lockPath, deadline);
      if (node === undefined) return undefined;
      const written = await retryOnConnectionLoss(client, deadline, () => orIfNoNode(client.setData(node, REVOKE_REQUEST), null));
      return written === null ? undefined : node;
    });
  }

  /**
   * Requests revocation, waits up to `graceMs` for the holder's node to go, and deletes it if it
   * is still there. Resolves with how it ended.
   */
  static async revoke(client: Client, lockPath: string, options: RevokeOptions): Promise<RevokeOutcome> {
    const node = await RevocableLock.requestRevoke(client, lockPath, options.holderNode);
    if (node === undefined) return "none";
    const grace = { timeoutMs: options.graceMs, ...(options.signal ? { signal: options.signal } : {}) };
    try {
      await withDeadline(`revoke ${node}`, grace, client, (deadline) => waitUntilGone(client, node, deadline));
      return "released";
    } catch (error) {
      if (!isZkError(error, "OPERATIONTIMEOUT") || options.signal?.aborted) throw error;
    }
    await deleteIfExists(client, node, new Deadline(`force revoke ${node}`, {}, client));
    return "forced";
  }

  protected override holderData(data: Uint8Array): void {
    if (textOf(data) !== REVOKE_REQUEST) return;
    this.emit("revocationRequested");
    const handler = this.handler;
    if (handler === undefined) return;
    // The handler runs after this watch callback returns, and its failure never escapes.
    queueMicrotask(() => {
      Promise.resolve()
        .then(() => handler(this))
        .catch((error: unknown) => reportError(this, error));
    });
  }

  protected override lost(error: ZkError): void {
    if (error.code === "NONODE") this.emit("revoked");
    super.lost(error);
  }
}

function nodePath(lockPath: string, node: string): string {
  return node.startsWith("/") ? node : `${lockPath}/${node}`;
}

/** The node that holds the lock now: the lowest `lock-` contender. */
async function currentHolder(client: Client, lockPath: string, deadline: Deadline): Promise<string | undefined> {
  const children = await retryOnConnectionLoss(client, deadline, () => orIfNoNode(client.getChildren(lockPath), []));
  const first = contendersOf(EXCLUSIVE_POLICY, children)[0];
  return first === undefined ? undefined : `${lockPath}/${first}`;
}
