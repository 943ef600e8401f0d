/**
 * Semaphore: at most N leases held at once across all sessions (Curator's
 * InterProcessSemaphoreV2).
 */
import { EventEmitter } from "node:events";
import type { Client } from "../client/client.js";
import { ZkError } from "../common/errors.js";
import { type Deadline, removeOwnedNode, retryOnConnectionLoss, withDeadline, withoutProtectedPrefix, type WaitOptions } from "./common.js";
import { Lock } from "./lock.js";
import { createOwnedNode, HeldNode, removeAbandonedNode } from "./lock-nodes.js";

const LEASE_NAME = "lease-";
const isLease = (name: string): boolean => /^lease-\d{10}$/.test(withoutProtectedPrefix(name));

/** The events of a Lease and their listeners' arguments. */
export interface LeaseEvents {
  /** The lease was lost while held: its session expired or closed (SESSIONEXPIRED), or its node was deleted (NONODE). */
  lost: [error: ZkError];
}

/**
 * One lease of a Semaphore: an ephemeral node under `<semaphore>/leases`. `isHeld` turns false
 * and "lost" is emitted if the session ends or the node is deleted by someone else; release()
 * deletes the node and is a no-op once the lease is released or lost.
 */
export class Lease extends EventEmitter<LeaseEvents> {
  private held: HeldNode | undefined;

  private constructor(readonly client: Client) {
    super();
  }

  /** Starts holding the lease node `node` (used by Semaphore). @internal */
  static async hold(client: Client, node: string, deadline: Deadline): Promise<Lease> {
    const lease = new Lease(client);
    lease.held = await HeldNode.hold(client, node, deadline, {
      lost: (error) => {
        lease.held = undefined;
        lease.emit("lost", error);
      },
    });
    return lease;
  }

  /** True while this lease holds its slot: false once released, or lost with its session or node. */
  get isHeld(): boolean {
    return this.held?.isActive === true;
  }

  /** The lease node's path while held. */
  get node(): string | undefined {
    return this.isHeld ? this.held?.node : undefined;
  }

  /** Gives the slot back (deletes the lease node); nothing to do if it is no longer held. */
  async release(): Promise<void> {
    const held = this.held;
    if (held === undefined || !held.isActive) return;
    this.held = undefined;
    held.stop();
    await removeOwnedNode(this.client, held.node);
  }
}

/**
 * A counting semaphore on the directory `path`: at most `maxLeases` leases are held at once,
 * across all sessions (every user of one path must pass the same `maxLeases`).
 *
 * Protocol (Curator's InterProcessSemaphoreV2): an acquirer first takes the exclusive Lock
 * `<path>/locks`, so acquirers queue herd-free, each watching only its predecessor. Holding that
 * lock, it creates its ephemeral-sequential lease node under `<path>/leases` (protected name) and
 * counts the lease nodes; with at most `maxLeases` (its own included) it has a lease and releases
 * the lock, otherwise it watches the children of `<path>/leases` and counts again on each change.
 *
 * The herd trade-off: a children watch fires on any lease change, not only on the one that
 * decides a waiter's turn — but only the internal lock's holder ever sets it, so a lease released
 * wakes that one acquirer and nobody else, however many are queued. And every wake-up is useful:
 * only the lock holder creates lease nodes, so any other change is a deletion that frees a slot.
 * (Counting cannot over-grant: of any set of holders, the one that counted last saw all their
 * nodes, since each created its node before it counted.)
 *
 * Session loss: an acquire under way rejects with SESSIONEXPIRED (its nodes go with the session);
 * a held Lease reports "lost". Abort and timeout remove the lease node and the lock node.
 *
 * ```ts
 * const slots = new Semaphore(zk, "/semaphores/db", 3);
 * const lease = await slots.acquire({ timeoutMs: 10_000 });
 * try { await query(); } finally { await lease.release(); }
 * ```
 */
export class Semaphore {
  private readonly locksPath: string;
  private readonly leasesPath: string;

  constructor(
    readonly client: Client,
    readonly path: string,
    readonly maxLeases: number,
  ) {
    if (!Number.isInteger(maxLeases) || maxLeases < 1) throw new ZkError("BADARGUMENTS", `maxLeases must be a positive integer, not ${maxLeases}`);
    if (!path.startsWith("/") || path.endsWith("/")) throw new ZkError("BADARGUMENTS", `not a semaphore path: ${path}`, path);
    this.locksPath = `${path}/locks`;
    this.leasesPath = `${path}/leases`;
  }

  /** Waits for a lease. OPERATIONTIMEOUT on abort or timeout, SESSIONEXPIRED on session loss. */
  async acquire(options: WaitOptions = {}): Promise<Lease> {
    return withDeadline(`acquire a lease of ${this.path}`, options, this.client, async (deadline) => {
      // A Lock per call, so that concurrent acquires of one Semaphore queue like separate sessions
      // (one shared instance would let them in together by reentrancy).
      const lock = new Lock(this.client, this.locksPath);
      await this.acquireLock(lock, deadline);
      try {
        const node = await createOwnedNode(this.client, this.leasesPath, LEASE_NAME, deadline);
        try {
          await this.waitForRoom(node, deadline);
          return await Lease.hold(this.client, node, deadline);
        } catch (error) {
          await removeAbandonedNode(this.client, node);
          throw error;
        }
      } finally {
        await lock.release().catch(() => undefined);
      }
    });
  }

  /** Takes the internal lock within this call's deadline (its own error, if it is the cause). */
  private async acquireLock(lock: Lock, deadline: Deadline): Promise<void> {
    const forward = new AbortController();
    deadline.race(new Promise<never>(() => undefined)).catch(() => forward.abort());
    try {
      await lock.acquire({ signal: forward.signal });
    } catch (error) {
      deadline.check();
      throw error;
    } finally {
      forward.abort();
    }
  }

  /** Resolves once there are at most maxLeases lease nodes, `node` among them. */
  private async waitForRoom(node: string, deadline: Deadline): Promise<void> {
    const name = node.slice(this.leasesPath.length + 1);
    for (;;) {
      // A read without a watch first: an acquirer that finds room leaves no watch behind.
      if (this.hasRoom(await this.leases(deadline), name, node)) return;
      let changed!: () => void;
      const change = new Promise<void>((resolve) => (changed = resolve));
      const watched = await this.leases(deadline, () => changed());
      if (this.hasRoom(watched, name, node)) return;
      await deadline.race(change);
    }
  }

  private leases(deadline: Deadline, watch?: () => void): Promise<string[]> {
    return retryOnConnectionLoss(this.client, deadline, () => this.client.getChildren(this.leasesPath, watch ? { watch } : {}));
  }

  private hasRoom(children: readonly string[], name: string, node: string): boolean {
    if (!children.includes(name)) throw new ZkError("NONODE", `lease node ${node} was deleted while waiting`, node);
    return children.filter(isLease).length <= this.maxLeases;
  }
}
