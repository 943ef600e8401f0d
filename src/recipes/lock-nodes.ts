/**
 * The nodes a lock-family recipe owns (contender nodes, semaphore leases): made under a protected
 * name, removed again when the call that made them is abandoned — even when it was abandoned
 * while the create itself was still in flight — and, while held, watched so that their owner
 * learns of their loss (HeldNode).
 */
import type { Client } from "../client/client.js";
import type { ClientState, WatchedEvent, Watcher } from "../client/types.js";
import { ZkError } from "../common/errors.js";
import {
  createProtectedOrCleanUp,
  type Deadline,
  isZkError,
  removeOwnedNode,
  retryOnConnectionLoss,
  withDeadline,
  isSessionEnd,
  sessionEndError,
  isSessionEndError,
} from "./common.js";

/**
 * Creates the ephemeral-sequential node `<parent>/<protected prefix><name><sequence>` for a call
 * bounded by `deadline`, and returns its path. If `deadline` gives up first, the node (if the
 * create made one) is removed before this rejects, unless the connection is down: then the removal
 * finishes in the background on reconnect, or the session's end removes the ephemeral.
 */
export async function createOwnedNode(client: Client, parent: string, name: string, deadline: Deadline): Promise<string> {
  // A call already abandoned must not make a node only to remove it again.
  deadline.check();
  return createProtectedOrCleanUp(client, parent, name, "", "ephemeral-sequential", deadline, (cleaning) => settledUnlessDisconnected(client, cleaning));
}

/**
 * Removes a node left by an abandoned call. The caller waits for the removal while the connection
 * is up (one round trip), so that a rejected acquire leaves nothing behind; while it is down the
 * removal continues in the background rather than holding the rejection until a reconnect.
 */
export function removeAbandonedNode(client: Client, node: string): Promise<void> {
  return settledUnlessDisconnected(
    client,
    removeOwnedNode(client, node).catch(() => undefined),
  );
}

/** Resolves when `work` settles, or as soon as the client is not (or no longer) connected. */
function settledUnlessDisconnected(client: Client, work: Promise<void>): Promise<void> {
  if (!client.connected) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      client.off("state", onState);
      resolve();
    };
    const onState = (state: string): void => {
      if (state !== "connected" && state !== "reconnected") done();
    };
    client.on("state", onState);
    work.then(done, done);
  });
}

/** What a HeldNode reports. */
export interface HeldNodeHandlers {
  /**
   * Once, when the node is deleted by someone else (NONODE) or the session ends (SESSIONEXPIRED)
   * while it is held. `isActive` is already false by then.
   */
  lost(error: ZkError): void;
  /** The node's data after each change while held (the data at the start is `HeldNode.initialData`). */
  dataChanged?(data: Uint8Array): void;
  /** Every watch event the node's watch delivers, relevant or not (for counting). */
  watchEvent?(event: WatchedEvent): void;
}

/**
 * An owned ephemeral node while its owner holds something by it (a lock, a lease): one data watch
 * on the node itself and a listener on the session, so that the owner learns — and stops
 * believing it holds anything — when the node is deleted (a forced revoke, an operator) or the
 * session expires or closes. No other node is watched, so holding costs no one else a wake-up.
 */
export class HeldNode {
  private active = true;
  /** The zxid that created the node: grows with every node made, so it serves as a fencing token. */
  czxid = 0n;
  initialData: Uint8Array = new Uint8Array();
  private readonly watcher: Watcher = (event) => this.onEvent(event);
  private readonly onState = (state: ClientState): void => {
    if (isSessionEnd(state)) this.lose(sessionEndError(state, `${this.node}: session ${state} while held`, this.node));
  };

  private constructor(
    private readonly client: Client,
    readonly node: string,
    private readonly handlers: HeldNodeHandlers,
  ) {}

  /** Starts holding `node`; rejects with NONODE if it is already gone. */
  static async hold(client: Client, node: string, deadline: Deadline, handlers: HeldNodeHandlers): Promise<HeldNode> {
    const held = new HeldNode(client, node, handlers);
    try {
      const { data, stat } = await retryOnConnectionLoss(client, deadline, () => client.getData(node, { watch: held.watcher }));
      held.czxid = stat.czxid;
      held.initialData = data;
    } catch (error) {
      held.active = false;
      throw error;
    }
    client.on("state", held.onState);
    // The session may have ended in the same turn as the answer arrived.
    if (isSessionEnd(client.state)) {
      held.stop();
      throw sessionEndError(client.state, `${node}: session ${client.state}`, node);
    }
    return held;
  }

  get isActive(): boolean {
    return this.active;
  }

  /** Stops reporting (the owner is releasing the node itself). */
  stop(): void {
    this.active = false;
    this.client.off("state", this.onState);
  }

  private onEvent(event: WatchedEvent): void {
    this.handlers.watchEvent?.(event);
    if (!this.active) return;
    if (event.type === "NodeDeleted") {
      this.stop();
      void this.reportDeletion();
    } else {
      void this.rewatch();
    }
  }

  /**
   * The node is gone and the owner no longer holds anything by it. Why matters to the owner: a
   * session closed by the server (expiry noticed while connected, a twin's close) deletes the
   * ephemeral and sends this event before the session's end reaches the client. One round trip
   * tells the two apart, since only a live session gets an answer.
   */
  private async reportDeletion(): Promise<void> {
    let error = new ZkError("NONODE", `${this.node} was deleted while held`, this.node);
    await withDeadline(`check ${this.node}`, {}, this.client, async (deadline) => {
      try {
        await retryOnConnectionLoss(this.client, deadline, () => this.client.exists(this.node));
      } catch (failure) {
        if (isSessionEndError(failure)) error = failure as ZkError;
      }
    });
    try {
      this.handlers.lost(error);
    } catch {
      // A "lost" listener that throws must not become an unhandled rejection here.
    }
  }

  /** After a data change: read the new data and set the watch again. */
  private async rewatch(): Promise<void> {
    await withDeadline(`watch ${this.node}`, {}, this.client, async (deadline) => {
      try {
        const { data } = await retryOnConnectionLoss(this.client, deadline, () => this.client.getData(this.node, { watch: this.watcher }));
        if (this.active) this.handlers.dataChanged?.(data);
      } catch (error) {
        // Deleted between the event and this read: no watch is left to report it, so report it here.
        if (isZkError(error, "NONODE") && this.active) {
          this.stop();
          await this.reportDeletion();
        }
        // SESSIONEXPIRED is reported by the session listener.
      }
    });
  }

  private lose(error: ZkError): void {
    if (!this.active) return;
    this.stop();
    this.handlers.lost(error);
  }
}
