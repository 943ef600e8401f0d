/**
 * Barrier: ZooKeeper's simple barrier recipe. While the barrier node exists, waiters are held;
 * removing it releases them all.
 */
import type { Client } from "../client/client.js";
import { deleteIfExists, ensurePath, retryOnConnectionLoss, waitUntilGone, withDeadline, type WaitOptions } from "./common.js";

/**
 * A barrier at `path`: `set()` raises it (creates the node, idempotent), `remove()` lowers it,
 * `wait()` resolves once it is down. Waiting is one exists-watch on the node, no polling.
 *
 * The node is persistent, so the barrier stays up if the session that set it ends; whoever
 * removes it need not be whoever set it. A waiter whose session is lost is told so: `wait`
 * rejects with SESSIONEXPIRED (and OPERATIONTIMEOUT when abandoned; a waiter owns no node).
 */
export class Barrier {
  constructor(
    readonly client: Client,
    readonly path: string,
  ) {}

  /** Raises the barrier (and any missing parents); a barrier already up is fine. */
  async set(options: WaitOptions = {}): Promise<void> {
    // ensurePath treats NODEEXISTS as success, so a create retried after CONNECTIONLOSS is harmless.
    await withDeadline(`barrier set ${this.path}`, options, this.client, (deadline) =>
      retryOnConnectionLoss(this.client, deadline, () => ensurePath(this.client, this.path)),
    );
  }

  /** Lowers the barrier, releasing every waiter; a barrier already down is fine. */
  async remove(options: WaitOptions = {}): Promise<void> {
    await withDeadline(`barrier remove ${this.path}`, options, this.client, (deadline) => deadline.race(deleteIfExists(this.client, this.path)));
  }

  /** Whether the barrier is up now. */
  async isSet(): Promise<boolean> {
    const stat = await withDeadline(`barrier isSet ${this.path}`, {}, this.client, (deadline) =>
      retryOnConnectionLoss(this.client, deadline, () => this.client.exists(this.path)),
    );
    return stat !== null;
  }

  /** Resolves once the barrier is down (at once if it is not up). */
  async wait(options: WaitOptions = {}): Promise<void> {
    await withDeadline(`barrier wait ${this.path}`, options, this.client, (deadline) => waitUntilGone(this.client, this.path, deadline));
  }
}
