/**
 * SharedCounter: a counter in one znode (a decimal string), changed by versioned setData and
 * retried on BADVERSION — Curator's SharedCount / DistributedAtomicLong — applied exactly once
 * even when the answer to a write is lost.
 */
import type { Client } from "../client/client.js";
import { op } from "../client/ops.js";
import { ZkError } from "../common/errors.js";
import { type Deadline, ensurePath, isZkError, orIfNoNode, parentOf, retryOnConnectionLoss, withDeadline, type WaitOptions } from "./common.js";
import { commitOnce } from "./queue.js";

/** The counter's value from its node's data: a decimal integer; empty data is `emptyValue`. */
export function parseCounterValue(data: Uint8Array, emptyValue: number): number {
  const text = Buffer.from(data).toString("utf8").trim();
  if (text === "") return emptyValue;
  if (!/^-?\d+$/.test(text)) throw new ZkError("BADARGUMENTS", `a counter holds a decimal integer, not ${JSON.stringify(text.slice(0, 40))}`);
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new ZkError("BADARGUMENTS", `counter value ${text} is not a safe integer`);
  return value;
}

/** The node data for `value`. */
export function formatCounterValue(value: number): string {
  checkSafeInteger(value, "counter value");
  return String(value);
}

function checkSafeInteger(value: number, what: string): void {
  if (!Number.isSafeInteger(value)) throw new ZkError("BADARGUMENTS", `${what} must be a safe integer, not ${value}`);
}

/**
 * A counter shared by every session that names `path`. `add` reads the value and its version,
 * writes the sum with setData at that version, and on BADVERSION (someone else wrote first) reads
 * again and retries, so concurrent adds never lose an update. Each write travels with an ephemeral
 * receipt (commitOnce), so one whose answer is lost to CONNECTIONLOSS is neither lost nor applied
 * twice. The node is created with `initialValue` on first write; a missing node reads as it.
 *
 * Session loss: a call in progress rejects with SESSIONEXPIRED; if a write was in flight its
 * outcome is unknown (the counter holds no state of the session, so nothing else is lost). An
 * abandoned call (timeout, abort: OPERATIONTIMEOUT) likewise leaves a write in flight unknown.
 */
export class SharedCounter {
  constructor(
    readonly client: Client,
    readonly path: string,
    readonly initialValue = 0,
  ) {
    checkSafeInteger(initialValue, "initial value");
  }

  /** The current value (as of this session's server; `initialValue` if never written). */
  async get(options: WaitOptions = {}): Promise<number> {
    return withDeadline(`counter get ${this.path}`, options, this.client, async (deadline) => {
      const node = await retryOnConnectionLoss(this.client, deadline, () => orIfNoNode(this.client.getData(this.path), null));
      return node === null ? this.initialValue : parseCounterValue(node.data, this.initialValue);
    });
  }

  /** Adds `delta` (may be negative) and resolves with the new value. */
  async add(delta: number, options: WaitOptions = {}): Promise<number> {
    checkSafeInteger(delta, "delta");
    const outcome = await this.update(`counter add ${this.path}`, options, (value) => value + delta);
    return outcome.value;
  }

  /** Adds one and resolves with the new value. */
  increment(options: WaitOptions = {}): Promise<number> {
    return this.add(1, options);
  }

  /** Sets `next` if the value is `expected`; resolves with whether it did. */
  async compareAndSet(expected: number, next: number, options: WaitOptions = {}): Promise<boolean> {
    checkSafeInteger(expected, "expected value");
    checkSafeInteger(next, "next value");
    const outcome = await this.update(`counter compareAndSet ${this.path}`, options, (value) => (value === expected ? next : undefined));
    return outcome.written;
  }

  /**
   * The read–decide–write loop: `decide` maps the current value to the next one (undefined: write
   * nothing). A write rejected with BADVERSION, or NONODE (the node was deleted), is retried on a
   * fresh read.
   */
  private async update(what: string, options: WaitOptions, decide: (value: number) => number | undefined): Promise<{ value: number; written: boolean }> {
    return withDeadline(what, options, this.client, async (deadline) => {
      for (;;) {
        const { value, version } = await this.readForUpdate(deadline);
        const next = decide(value);
        if (next === undefined) return { value, written: false };
        const data = formatCounterValue(next);
        try {
          // Receipts are the counter node's own children: they exist exactly as long as the node.
          await commitOnce(this.client, [op.setData(this.path, data, { version })], this.path, deadline);
          return { value: next, written: true };
        } catch (error) {
          if (!isZkError(error, "BADVERSION") && !isZkError(error, "NONODE")) throw error;
        }
      }
    });
  }

  /** The value and version, creating the node (and its parents) with `initialValue` if missing. */
  private async readForUpdate(deadline: Deadline): Promise<{ value: number; version: number }> {
    for (;;) {
      const node = await retryOnConnectionLoss(this.client, deadline, () => orIfNoNode(this.client.getData(this.path), null));
      if (node !== null) return { value: parseCounterValue(node.data, this.initialValue), version: node.stat.version };
      await retryOnConnectionLoss(this.client, deadline, async () => {
        await ensurePath(this.client, parentOf(this.path));
        try {
          await this.client.create(this.path, formatCounterValue(this.initialValue));
        } catch (error) {
          // Created meanwhile by another session, or by this create before a lost answer.
          if (!isZkError(error, "NODEEXISTS")) throw error;
        }
      });
    }
  }
}
