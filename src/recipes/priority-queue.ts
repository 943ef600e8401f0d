/**
 * DistributedPriorityQueue: ZooKeeper's priority queue recipe. The priority is part of the node
 * name (`pq-<priority, 10 digits>-<sequence>`), so name order is priority order, then FIFO.
 */
import type { Client } from "../client/client.js";
import type { Data } from "../client/types.js";
import { ZkError } from "../common/errors.js";
import { type Deadline, withDeadline, withoutProtectedPrefix, type WaitOptions } from "./common.js";
import { QueueNodes } from "./queue.js";

/** Priorities are integers from 0 (served first) to this, written with 10 digits. */
export const PRIORITY_MAX = 9_999_999_999;

const PRIORITY_ELEMENT = /^pq-(\d{10})-(\d{10})$/;

/** The name prefix of an element with `priority`, before the protected prefix and the sequence. */
export function priorityElementName(priority: number): string {
  if (!Number.isSafeInteger(priority) || priority < 0 || priority > PRIORITY_MAX) {
    throw new ZkError("BADARGUMENTS", `priority must be an integer from 0 to ${PRIORITY_MAX}, not ${priority}`);
  }
  return `pq-${String(priority).padStart(10, "0")}-`;
}

/** Priority and sequence of an element name, or undefined for a child that is not an element. */
export function parsePriorityElement(name: string): { priority: number; sequence: number } | undefined {
  const match = PRIORITY_ELEMENT.exec(withoutProtectedPrefix(name));
  if (!match) return undefined;
  return { priority: Number(match[1]), sequence: Number(match[2]) };
}

/** The elements among `children` in delivery order: lowest priority value first, then FIFO. */
export function priorityElementOrder(children: readonly string[]): string[] {
  return children
    .map((name) => ({ name, key: parsePriorityElement(name) }))
    .filter((entry): entry is { name: string; key: { priority: number; sequence: number } } => entry.key !== undefined)
    .sort((a, b) => a.key.priority - b.key.priority || a.key.sequence - b.key.sequence)
    .map((entry) => entry.name);
}

/**
 * A distributed priority queue. `offer(data, priority)` enqueues with a priority (0 is served
 * first; equal priorities are FIFO). Consumers race on delete like the FIFO queue's, and after a
 * claim lost to another consumer they re-read the children list before trying again, so a
 * higher-priority element that arrived meanwhile is served first.
 *
 * Exactly-once offers and claims across lost connections, and session loss, behave as in
 * DistributedQueue: blocking calls reject with SESSIONEXPIRED, elements stay queued for others.
 */
export class DistributedPriorityQueue {
  private readonly nodes: QueueNodes;

  constructor(
    readonly client: Client,
    readonly path: string,
  ) {
    this.nodes = new QueueNodes(client, path, priorityElementOrder);
  }

  /** Enqueues `data` with `priority` (an integer, 0 first); resolves once durably enqueued. */
  offer(data: Data, priority: number, options: WaitOptions = {}): Promise<void> {
    let name: string;
    try {
      name = priorityElementName(priority);
    } catch (error) {
      // A ZkError BADARGUMENTS (or the TypeError of a priority that is not even a number).
      const refusal = error as Error;
      return Promise.reject(refusal);
    }
    return this.nodes.offer(name, data, options);
  }

  /** Takes the most urgent element, or null if the queue is empty. */
  poll(): Promise<Uint8Array | null> {
    return this.head("poll", (name) => this.nodes.claim(name));
  }

  /**
   * Takes the most urgent element, waiting on a children watch while the queue is empty.
   * OPERATIONTIMEOUT when abandoned (nothing to clean up), SESSIONEXPIRED on session loss.
   */
  async take(options: WaitOptions = {}): Promise<Uint8Array> {
    return withDeadline(`priority queue take ${this.path}`, options, this.client, async (deadline) => {
      await this.nodes.prepare(deadline);
      for (;;) {
        let changed!: () => void;
        const childrenChanged = new Promise<void>((resolve) => (changed = resolve));
        const head = (await this.nodes.elements(deadline, () => changed()))[0];
        if (head === undefined) {
          await deadline.race(childrenChanged);
          continue;
        }
        deadline.check();
        const data = await this.nodes.claim(head);
        if (data !== null) return data;
        // Lost the race: the freshest list may now hold a more urgent element, so read it again.
      }
    });
  }

  /** The most urgent element's data without taking it, or null if the queue is empty. */
  peek(): Promise<Uint8Array | null> {
    return this.head("peek", (name, deadline) => this.nodes.read(name, deadline));
  }

  /** The head's data as `fetch` gets it (claimed or only read), or null if the queue is empty. */
  private async head(what: string, fetch: (name: string, deadline: Deadline) => Promise<Uint8Array | null>): Promise<Uint8Array | null> {
    return withDeadline(`priority queue ${what} ${this.path}`, {}, this.client, async (deadline) => {
      await this.nodes.prepare(deadline);
      for (;;) {
        const head = (await this.nodes.elements(deadline))[0];
        if (head === undefined) return null;
        const data = await fetch(head, deadline);
        if (data !== null) return data;
        // Gone before we got it: a more urgent element may have come meanwhile, so read the list again.
      }
    });
  }

  /** How many elements are queued now. */
  async size(): Promise<number> {
    return withDeadline(`priority queue size ${this.path}`, {}, this.client, async (deadline) => {
      await this.nodes.prepare(deadline);
      return (await this.nodes.elements(deadline)).length;
    });
  }
}
