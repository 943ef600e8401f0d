/**
 * How much the client doors may have read and not answered (docs/architecture.md §7b): the server's
 * total, in requests and bytes, and each connection's own. A connection whose next request would
 * pass a bound stops being read — the door pauses its socket or stream, and TCP or HTTP/2 flow
 * control pushes back on the client — until its own answers bring it back under; nobody is
 * dropped. The global bound is ZooKeeper's globalOutstandingLimit, with its rule: it stops only
 * connections that have a request outstanding, so a client with one request at a time (a bystander
 * beside a storm) is always read, and every stopped connection has an answer coming that resumes it.
 *
 * Deterministic: counts only; the doors own the sockets.
 */
import { assert } from "../common/assert.js";

export interface InboundLimits {
  /** ZooKeeper's globalOutstandingLimit: requests read and not answered, over every connection. */
  globalOutstandingLimit: number;
  /** Their bytes (as requestBytes counts them). */
  globalOutstandingBytesMax: number;
  /** Requests one connection may have read and not answered. */
  connectionOutstandingMax: number;
  /** Their bytes. */
  connectionOutstandingBytesMax: number;
}

/** The server's total, shared by every connection of both doors. */
export class InboundBudget {
  private countValue = 0;
  private bytesValue = 0;
  private pausedValue = 0;
  private pausesValue = 0;

  constructor(readonly limits: InboundLimits) {
    assert(limits.globalOutstandingLimit >= 1 && limits.connectionOutstandingMax >= 1, "inbound bounds let one request in");
    assert(limits.globalOutstandingBytesMax >= 1 && limits.connectionOutstandingBytesMax >= 1, "inbound byte bounds let one request in");
  }

  /** Requests read and not answered, over every connection. */
  get count(): number {
    return this.countValue;
  }

  get bytes(): number {
    return this.bytesValue;
  }

  /** Connections not being read now because of a bound. */
  get pausedConnections(): number {
    return this.pausedValue;
  }

  /** Times a connection stopped being read because of a bound (a counter). */
  get pauses(): number {
    return this.pausesValue;
  }

  /** Whether the server's total is at its bound (ZooKeeper's shouldThrottle, before the connection's own share). */
  get full(): boolean {
    return this.countValue >= this.limits.globalOutstandingLimit || this.bytesValue >= this.limits.globalOutstandingBytesMax;
  }

  /** @internal ConnectionInbound's accounting. */
  add(count: number, bytes: number): void {
    this.countValue += count;
    this.bytesValue += bytes;
    assert(this.countValue >= 0 && this.bytesValue >= 0, "inbound totals never go below zero");
  }

  /** @internal */
  paused(delta: 1 | -1): void {
    this.pausedValue += delta;
    if (delta === 1) this.pausesValue += 1;
  }
}

/**
 * One connection's requests read and not answered, oldest first (a session answers in order, so
 * each answer settles the oldest), and whether the connection must stop being read.
 */
export class ConnectionInbound {
  private sizes: number[] = [];
  private head = 0;
  private bytesValue = 0;
  private pausedValue = false;

  constructor(private readonly budget: InboundBudget) {}

  get count(): number {
    return this.sizes.length - this.head;
  }

  get bytes(): number {
    return this.bytesValue;
  }

  /** The connection is not being read because of a bound. */
  get paused(): boolean {
    return this.pausedValue;
  }

  /** A request of `bytes` was read. */
  read(bytes: number): void {
    this.sizes.push(bytes);
    this.bytesValue += bytes;
    this.budget.add(1, bytes);
  }

  /** The oldest request read was answered. */
  answered(): void {
    if (this.count === 0) return;
    const bytes = this.sizes[this.head]!;
    this.head += 1;
    this.bytesValue -= bytes;
    this.budget.add(-1, -bytes);
    if (this.head === this.sizes.length) {
      this.sizes = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.sizes.length) {
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
  }

  /** The connection is gone: what it had outstanding no longer counts (its answers have nowhere to go). */
  release(): void {
    this.budget.add(-this.count, -this.bytesValue);
    this.sizes = [];
    this.head = 0;
    this.bytesValue = 0;
    this.settle(false);
  }

  /**
   * Whether the connection must stop being read now: it has a request outstanding, and it or the
   * server is at a bound. Records the change; true → false and false → true are the door's cues.
   */
  update(): boolean {
    const limits = this.budget.limits;
    const over = this.count > 0 && (this.budget.full || this.count >= limits.connectionOutstandingMax || this.bytesValue >= limits.connectionOutstandingBytesMax);
    this.settle(over);
    return over;
  }

  private settle(paused: boolean): void {
    if (paused === this.pausedValue) return;
    this.pausedValue = paused;
    this.budget.paused(paused ? 1 : -1);
  }
}
