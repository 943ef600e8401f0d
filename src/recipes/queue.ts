/**
 * DistributedQueue: ZooKeeper's FIFO queue recipe (persistent-sequential `queue-` nodes, consumers
 * racing on delete), made exactly-once across lost connections. Also the building blocks the
 * priority queue shares: QueueNodes (elements plus write receipts) and commitOnce.
 */
import { randomUUID } from "node:crypto";
import type { Client } from "../client/client.js";
import { op, ZkMultiError } from "../client/ops.js";
import type { Data, Op, OpResult } from "../client/types.js";
import {
  type Deadline,
  deleteIfExists,
  ensurePath,
  isZkError,
  orIfNoNode,
  protectedPrefix,
  retryOnConnectionLoss,
  sequenceOf,
  type WaitOptions,
  withDeadline,
  withoutProtectedPrefix,
} from "./common.js";

/** The child of a queue node that holds the receipts of in-flight writes (not an element). */
export const RECEIPTS_NODE = "receipts";

/** FIFO element names, protected prefix stripped: `queue-0000000042`. */
const FIFO_ELEMENT = /^queue-\d{10}$/;

/** The queue elements among `children`, in delivery (sequence) order; other children are ignored. */
export function fifoElementOrder(children: readonly string[]): string[] {
  return children.filter((name) => FIFO_ELEMENT.test(withoutProtectedPrefix(name))).sort((a, b) => sequenceOf(a) - sequenceOf(b));
}

/** Whether the multi that created `receipt` was applied, asked after a reconnect and a sync. */
async function wasApplied(client: Client, receipt: string, syncPath: string, deadline: Deadline): Promise<boolean> {
  await retryOnConnectionLoss(client, deadline, () => client.sync(syncPath));
  return (await retryOnConnectionLoss(client, deadline, () => client.exists(receipt))) !== null;
}

/** Deletes a receipt: one attempt now, and if the connection is down, again once it is back. */
async function removeReceipt(client: Client, receipt: string): Promise<void> {
  try {
    await client.delete(receipt);
  } catch (error) {
    if (isZkError(error, "CONNECTIONLOSS")) void deleteIfExists(client, receipt).catch(() => undefined);
    // NONODE: already gone; SESSIONEXPIRED: the ephemeral went with the session.
  }
}

/**
 * Applies `ops` exactly once although the connection may be lost mid-write. createProtected finds
 * a lost create by its name, but a queue element may be consumed before the producer looks, and a
 * counter's setData leaves no name at all; so the ops travel in one multi with the creation of an
 * ephemeral receipt node unique to this write, and after CONNECTIONLOSS the receipt's presence (read
 * after a sync) says whether the multi was applied. The receipt is deleted afterwards. A resend
 * reuses the receipt's name, so should the first attempt still be applied after it was judged lost
 * (an in-flight write overtaking the sync), the resend fails on the receipt and counts as applied.
 *
 * The in-flight multi is never abandoned: `deadline` bounds only the waits for a reconnect. If it
 * passes while the outcome is unknown, the call rejects (OPERATIONTIMEOUT) and `onAppliedLate` runs
 * in the background once the session is back and the write turns out to have been applied.
 * Resolves with the multi's results, or undefined when it was applied but its answer was lost.
 * Fails with the multi's own error (ZkMultiError) when an op fails: nothing was applied then.
 */
export async function commitOnce(
  client: Client,
  ops: readonly Op[],
  receiptsPath: string,
  deadline: Deadline,
  onAppliedLate?: () => Promise<void>,
): Promise<OpResult[] | undefined> {
  const receipt = `${receiptsPath}/receipt-${randomUUID()}`;
  const all = [...ops, op.create(receipt, "", { mode: "ephemeral" })];
  for (let attempt = 0; ; attempt++) {
    deadline.check();
    let results: OpResult[] | undefined;
    try {
      results = await client.multi(all);
    } catch (error) {
      if (attempt > 0 && isZkError(error, "NODEEXISTS") && (await retryOnConnectionLoss(client, deadline, () => client.exists(receipt))) !== null) {
        // This attempt failed as a whole, so the receipt is an earlier attempt's: that one was applied.
        await removeReceipt(client, receipt);
        return undefined;
      }
      // NONODE from one of `ops` is the caller's business; from the receipt, its parent is missing.
      const opFailed = error instanceof ZkMultiError && error.failedIndex < ops.length;
      if (isZkError(error, "NONODE") && !opFailed && (await retryOnConnectionLoss(client, deadline, () => client.exists(receiptsPath))) === null) {
        await retryOnConnectionLoss(client, deadline, () => ensurePath(client, receiptsPath));
        continue;
      }
      if (!isZkError(error, "CONNECTIONLOSS")) throw error;
      let applied: boolean;
      try {
        applied = await wasApplied(client, receipt, receiptsPath, deadline);
      } catch (abandoned) {
        if (isZkError(abandoned, "OPERATIONTIMEOUT")) settleInBackground(client, receipt, receiptsPath, onAppliedLate);
        throw abandoned;
      }
      if (!applied) continue;
    }
    await removeReceipt(client, receipt);
    return results;
  }
}

/** After an abandoned commitOnce: once the session is back, learn the outcome and clean up. */
function settleInBackground(client: Client, receipt: string, syncPath: string, onAppliedLate?: () => Promise<void>): void {
  void withDeadline("settling an abandoned write", {}, client, async (session) => {
    if (!(await wasApplied(client, receipt, syncPath, session))) return;
    await onAppliedLate?.();
    await removeReceipt(client, receipt);
  }).catch(() => undefined);
}

/**
 * The znodes behind a queue, FIFO or priority: elements are persistent-sequential children of
 * `path` (name order given by `order`), receipts of in-flight writes live under `path/receipts`.
 * Shared by DistributedQueue and DistributedPriorityQueue; not a recipe on its own.
 */
export class QueueNodes {
  readonly receiptsPath: string;
  private prepared: Promise<void> | undefined;

  constructor(
    readonly client: Client,
    readonly path: string,
    private readonly order: (children: readonly string[]) => string[],
  ) {
    this.receiptsPath = `${path}/${RECEIPTS_NODE}`;
  }

  /** Creates the queue and receipts nodes once per instance (again after a failure). */
  prepare(deadline: Deadline): Promise<void> {
    if (this.prepared === undefined) {
      // Shared by concurrent calls, so bounded by the session only, not by one caller's deadline.
      this.prepared = withDeadline(`queue prepare ${this.path}`, {}, this.client, (session) =>
        retryOnConnectionLoss(this.client, session, () => ensurePath(this.client, this.receiptsPath)).catch((error: unknown) => {
          this.prepared = undefined;
          throw error;
        }),
      );
    }
    return deadline.race(this.prepared);
  }

  /**
   * Enqueues `data` as `<protected prefix><name>` + sequence, exactly once (commitOnce). If the
   * call is abandoned while the outcome is unknown and the element turns out to exist, it is
   * withdrawn again once the session is back (unless a consumer took it first).
   */
  async offer(name: string, data: Data, options: WaitOptions): Promise<void> {
    await withDeadline(`queue offer ${this.path}`, options, this.client, async (deadline) => {
      await this.prepare(deadline);
      const prefix = protectedPrefix();
      const create = op.create(`${this.path}/${prefix}${name}`, data, { mode: "persistent-sequential" });
      await commitOnce(this.client, [create], this.receiptsPath, deadline, () => this.withdraw(prefix));
    });
  }

  /** Element names in delivery order. */
  async elements(deadline: Deadline, watch?: () => void): Promise<string[]> {
    const children = await retryOnConnectionLoss(this.client, deadline, () => this.client.getChildren(this.path, watch ? { watch: () => watch() } : {}));
    return this.order(children);
  }

  /** The element's data, or null if it is gone. */
  async read(name: string, deadline: Deadline): Promise<Uint8Array | null> {
    const node = await retryOnConnectionLoss(this.client, deadline, () => orIfNoNode(this.client.getData(`${this.path}/${name}`), null));
    return node === null ? null : node.data;
  }

  /**
   * Takes the element: whoever's delete succeeds owns it; null if another consumer was first. A
   * claim once sent runs to its end whatever the caller's deadline (an element is never deleted
   * without being handed to someone); only the session's loss interrupts it (SESSIONEXPIRED).
   */
  async claim(name: string): Promise<Uint8Array | null> {
    return withDeadline(`queue claim ${this.path}/${name}`, {}, this.client, async (session) => {
      const data = await this.read(name, session);
      if (data === null) return null;
      const claimed = commitOnce(this.client, [op.delete(`${this.path}/${name}`)], this.receiptsPath, session).then(() => data);
      // NONODE: another consumer took it first.
      return orIfNoNode(claimed, null);
    });
  }

  /** Deletes the element made with `prefix`, if it is still queued (the cleanup of an abandoned offer). */
  private async withdraw(prefix: string): Promise<void> {
    await withDeadline(`queue withdraw ${this.path}`, {}, this.client, async (session) => {
      const children = await retryOnConnectionLoss(this.client, session, () => this.client.getChildren(this.path));
      const mine = children.find((child) => child.startsWith(prefix));
      if (mine !== undefined) await this.claim(mine);
    });
  }
}

/**
 * A distributed FIFO queue (ZooKeeper's queue recipe). Elements are persistent-sequential
 * `queue-` nodes under `path`, delivered in sequence order; consumers race on delete and the one
 * whose delete succeeds owns the element, so each element is taken exactly once however many
 * consumers compete.
 *
 * Lost connections: an offer or a claim whose answer is lost is resolved through a receipt node
 * written in the same multi, so a retry never enqueues twice and a consumer never loses an element
 * it deleted. Session loss: blocking calls reject with SESSIONEXPIRED; elements are persistent and
 * stay queued for other consumers (only an element whose claim was in flight when the session
 * expired is unaccounted for: its outcome is unknown). Queue nodes hold no ephemeral state of a
 * waiting consumer, so an abandoned take leaves nothing behind.
 */
export class DistributedQueue {
  private readonly nodes: QueueNodes;

  constructor(
    readonly client: Client,
    readonly path: string,
  ) {
    this.nodes = new QueueNodes(client, path, fifoElementOrder);
  }

  /** Appends `data` at the tail; resolves once it is durably enqueued (exactly once). */
  offer(data: Data, options: WaitOptions = {}): Promise<void> {
    return this.nodes.offer("queue-", data, options);
  }

  /** Takes the head, or null if the queue is empty. */
  poll(): Promise<Uint8Array | null> {
    return this.head("poll", (name) => this.nodes.claim(name));
  }

  /**
   * Takes the head, waiting for one if the queue is empty: a watch on the children list wakes the
   * consumer on the next change (no polling). Rejects with OPERATIONTIMEOUT when abandoned (nothing
   * to clean up: a waiting consumer owns no node) and SESSIONEXPIRED on session loss. An abort that
   * arrives while a claim is in flight is honoured only if the claim fails, so no element is lost.
   */
  async take(options: WaitOptions = {}): Promise<Uint8Array> {
    return withDeadline(`queue take ${this.path}`, options, this.client, async (deadline) => {
      await this.nodes.prepare(deadline);
      for (;;) {
        let changed!: () => void;
        const childrenChanged = new Promise<void>((resolve) => (changed = resolve));
        for (const name of await this.nodes.elements(deadline, () => changed())) {
          deadline.check();
          const data = await this.nodes.claim(name);
          if (data !== null) return data;
        }
        await deadline.race(childrenChanged);
      }
    });
  }

  /** The head's data without taking it, or null if the queue is empty. */
  peek(): Promise<Uint8Array | null> {
    return this.head("peek", (name, deadline) => this.nodes.read(name, deadline));
  }

  /** The head's data as `fetch` gets it (claimed or only read), or null if the queue is empty. */
  private async head(what: string, fetch: (name: string, deadline: Deadline) => Promise<Uint8Array | null>): Promise<Uint8Array | null> {
    return withDeadline(`queue ${what} ${this.path}`, {}, this.client, async (deadline) => {
      await this.nodes.prepare(deadline);
      for (const name of await this.nodes.elements(deadline)) {
        const data = await fetch(name, deadline);
        if (data !== null) return data;
        // Gone before we got it: the next element in line is the head now.
      }
      return null;
    });
  }

  /** How many elements are queued now. */
  async size(): Promise<number> {
    return withDeadline(`queue size ${this.path}`, {}, this.client, async (deadline) => {
      await this.nodes.prepare(deadline);
      return (await this.nodes.elements(deadline)).length;
    });
  }
}
