/**
 * Barrier: ZooKeeper's simple barrier recipe. While the barrier node exists, waiters are held;
 * removing it releases them all.
 */
import type { Client } from "../client/client.js";
import { Deadline, deleteIfExists, ensurePath, retryOnConnectionLoss, waitUntilGone, type WaitOptions } from "./common.js";

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
    const deadline = new Deadline(`barrier set ${this.path}`, options, this.client);
    try {
      // ensurePath treats NODEEXISTS as success, so a create retried after CONNECTIONLOSS is harmless.
      await retryOnConnectionLoss(this.client, deadline, () => ensurePath(this.client, this.path));
    } finally {
      deadline.dispose();
    }
  }

  /** Lowers the barrier, releasing every waiter; a barrier already down is fine. */
  async remove(options: WaitOptions = {}): Promise<void> {
    const deadline = new Deadline(`barrier remove ${this.path}`, options, this.client);
    try {
      await deadline.race(deleteIfExists(this.client, this.path));
    } finally {
      deadline.dispose();
    }
  }

  /** Whether the barrier is up now. */
  async isSet(): Promise<boolean> {
    const deadline = new Deadline(`barrier isSet ${this.path}`, {}, this.client);
    try {
      return (await retryOnConnectionLoss(this.client, deadline, () => this.client.exists(this.path))) !== null;
    } finally {
      deadline.dispose();
    }
  }

  /** Resolves once the barrier is down (at once if it is not up). */
  async wait(options: WaitOptions = {}): Promise<void> {
    const deadline = new Deadline(`barrier wait ${this.path}`, options, this.client);
    try {
      await waitUntilGone(this.client, this.path, deadline);
    } finally {
      deadline.dispose();
    }
  }
}
