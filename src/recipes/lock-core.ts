/**
 * The engine of every lock recipe (Curator's LockInternals): one sequential-ephemeral contender
 * node per acquire in the lock's directory, a LockPolicy deciding whose turn it is, and a waiter
 * that watches only the one node its policy names — so a release wakes exactly one waiter.
 */
import { EventEmitter } from "node:events";
import type { Client } from "../client/client.js";
import type { Watcher } from "../client/types.js";
import { ZkError } from "../common/errors.js";
import { type Deadline, orIfNoNode, removeOwnedNode, retryOnConnectionLoss, type WaitOptions, withDeadline } from "./common.js";
import { createOwnedNode, HeldNode, removeAbandonedNode } from "./lock-nodes.js";
import { contendersOf, type LockPolicy } from "./lock-policy.js";

interface Holding {
  held: HeldNode;
  /** Reentrant acquires not yet released. */
  count: number;
}

// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- typed events only (EventEmitter methods, no new members); not EventEmitter<EventMap>: RevocableLock subclasses it with more events, which that generic cannot express
export interface SequentialLock {
  /** The lock was lost while held: its session expired or closed (SESSIONEXPIRED) or its SASL login was refused (AUTHFAILED), or its node was deleted (NONODE). */
  on(event: "lost", listener: (error: ZkError) => void): this;
  /** As `on("lost")`, for the next loss only. */
  once(event: "lost", listener: (error: ZkError) => void): this;
  /** Removes a listener added with `on` or `once`. */
  off(event: "lost", listener: (error: ZkError) => void): this;
}

/**
 * A lock on a directory of contender nodes, reentrant per instance: a second acquire by the
 * holding instance counts up, and the node is deleted when releases have counted back to zero.
 *
 * Guarantees: a grant happens only when the policy says so for a live node of this session;
 * `fencingToken` (the node's czxid) grows strictly from one grant to the next. An abandoned
 * acquire (abort, timeout, session loss) deletes its node. On session loss while held — expiry
 * or close — and when the node is deleted by someone else, `isHeld` turns false and "lost" is
 * emitted (release() is then a no-op). While merely disconnected the lock is still
 * considered held (the session, and so the node, may yet survive); a holder that acts on shared
 * resources during a disconnect should pass `fencingToken` along so that a stale holder's writes
 * can be refused.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- see the interface SequentialLock above
export class SequentialLock extends EventEmitter {
  private holding: Holding | undefined;
  private acquiring: Promise<void> | undefined;
  private watchEvents = 0;
  private waitingOn: string | undefined;

  /** The recipes built on it (Lock, the read and write locks, RevocableLock) pass their policy. @internal */
  constructor(
    readonly client: Client,
    /** The lock's directory; contender nodes are its children. */
    readonly path: string,
    private readonly policy: LockPolicy,
  ) {
    super();
    if (!path.startsWith("/") || path.endsWith("/")) throw new ZkError("BADARGUMENTS", `not a lock directory path: ${path}`, path);
  }

  /** Whether this instance holds the lock now. */
  get isHeld(): boolean {
    return this.holding?.held.isActive === true;
  }

  /** The czxid of the holder's node while held (larger for every later grant); undefined otherwise. */
  get fencingToken(): bigint | undefined {
    return this.isHeld ? this.holding?.held.czxid : undefined;
  }

  /** The full path of the holder's node while held. */
  get node(): string | undefined {
    return this.isHeld ? this.holding?.held.node : undefined;
  }

  /** The node an acquire of this instance is waiting to see go (the only node it watches), if any. */
  get waitingFor(): string | undefined {
    return this.waitingOn;
  }

  /** Watch events delivered to this instance so far: while waiting its turn and while holding. */
  get watchEventsReceived(): number {
    return this.watchEvents;
  }

  /**
   * Waits until this instance holds the lock. Rejects with OPERATIONTIMEOUT on abort or timeout,
   * SESSIONEXPIRED if the session ends (AUTHFAILED if its SASL login is refused), NONODE if its node was deleted while waiting; the node is
   * removed in each case. Resolves with the grant's fencing token (see `fencingToken`).
   */
  async acquire(options: WaitOptions = {}): Promise<bigint> {
    await withDeadline(`acquire ${this.path}`, options, this.client, (deadline) => this.enter(deadline, true));
    const held = this.holding?.held;
    // enter() resolves only once the node is held; a loss reported since then rejects like one during the wait.
    if (held === undefined || !held.isActive) throw new ZkError("SESSIONEXPIRED", `acquire ${this.path}: the lock was lost as it was granted`);
    return held.czxid;
  }

  /** Takes the lock if it is free right now; never waits for another holder. */
  async tryAcquire(): Promise<boolean> {
    return withDeadline(`tryAcquire ${this.path}`, {}, this.client, (deadline) => this.enter(deadline, false));
  }

  /**
   * Counts one acquire down, and at zero deletes the node (retrying across a lost connection).
   * Does nothing if this instance does not hold the lock — after a loss, or a release made by a
   * revocation handler — so that a `finally { await lock.release() }` is always safe.
   */
  async release(): Promise<void> {
    const holding = this.holding;
    if (holding === undefined || !holding.held.isActive) return;
    holding.count -= 1;
    if (holding.count > 0) return;
    this.holding = undefined;
    holding.held.stop();
    await removeOwnedNode(this.client, holding.held.node);
  }

  /** The data of the holder's node, at the grant and after each change while held. */
  protected holderData(_data: Uint8Array): void {}

  /** Reports a loss; subclasses may report some losses differently. */
  protected lost(error: ZkError): void {
    this.emit("lost", error);
  }

  private async enter(deadline: Deadline, wait: boolean): Promise<boolean> {
    for (;;) {
      if (this.holding?.held.isActive) {
        this.holding.count += 1;
        return true;
      }
      if (this.acquiring === undefined) break;
      // Another acquire of this instance is under way: its outcome decides ours.
      if (!wait) return false;
      await deadline.race(this.acquiring);
    }
    const attempt = this.contend(deadline, wait);
    const settled = attempt.then(
      () => undefined,
      () => undefined,
    );
    this.acquiring = settled;
    try {
      return await attempt;
    } finally {
      if (this.acquiring === settled) this.acquiring = undefined;
    }
  }

  private async contend(deadline: Deadline, wait: boolean): Promise<boolean> {
    const node = await createOwnedNode(this.client, this.path, this.policy.nodeName, deadline);
    const name = node.slice(this.path.length + 1);
    try {
      for (;;) {
        const children = await retryOnConnectionLoss(this.client, deadline, () => this.client.getChildren(this.path));
        const turn = this.policy.decide(contendersOf(this.policy, children), name);
        if (turn.kind === "gone") throw new ZkError("NONODE", `lock ${this.path}: node ${name} was deleted while waiting`, node);
        if (turn.kind === "granted") {
          await this.startHolding(node, deadline);
          return true;
        }
        if (!wait) {
          await removeAbandonedNode(this.client, node);
          return false;
        }
        await this.waitForChange(`${this.path}/${turn.on}`, deadline);
      }
    } catch (error) {
      await removeAbandonedNode(this.client, node);
      throw error;
    }
  }

  /**
   * Waits for the one node that decides this contender's turn to change. getData rather than
   * exists, so that a node already gone leaves no watch behind. Any event — deletion, or a data
   * change such as a revocation request — sends the contender back to look at the children.
   */
  private async waitForChange(path: string, deadline: Deadline): Promise<void> {
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    const watcher: Watcher = () => {
      this.watchEvents += 1;
      wake();
    };
    const node = await retryOnConnectionLoss(this.client, deadline, () => orIfNoNode(this.client.getData(path, { watch: watcher }), null));
    if (node === null) return; // gone already: nothing to wait for
    this.waitingOn = path;
    try {
      await deadline.race(woken);
    } finally {
      this.waitingOn = undefined;
    }
  }

  private async startHolding(node: string, deadline: Deadline): Promise<void> {
    const held = await HeldNode.hold(this.client, node, deadline, {
      watchEvent: () => (this.watchEvents += 1),
      dataChanged: (data) => {
        if (this.holding?.held === held) this.holderData(data);
      },
      lost: (error) => {
        if (this.holding?.held === held) this.holding = undefined;
        this.lost(error);
      },
    });
    this.holding = { held, count: 1 };
    this.holderData(held.initialData);
  }
}
