/**
 * How much the client doors may have read and not answered (docs/architecture.md §7b): the server's
 * total, in requests and bytes, and each connection's own. A connection whose next request would
 * pass a bound stops being read — the door pauses its socket or stream, and TCP or HTTP/2 flow
 * control pushes back on the client — until its own answers bring it back under; nobody is
 * dropped. The global bound is ZooKeeper's globalOutstandingLimit (with a byte twin). At it,
 * ZooKeeper stops every connection with a request outstanding; here only those holding at least
 * their fair share of the bound that is reached (the bound over the connections with something
 * outstanding), so a client with a few small requests in flight (a bystander beside a storm) is
 * still read, and every stopped connection has an answer coming that resumes it. The total stays
 * within the bound plus one request per connection.
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
  private readonly pausedSet = new Set<ConnectionInbound>();
  private pausesValue = 0;
  private activeValue = 0;

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
    return this.pausedSet.size;
  }

  /**
   * The sessions of the connections not being read now: the server holds their pings unread, so it
   * keeps them alive itself while it does (the replica touches them every half tick).
   */
  pausedSessionIds(): bigint[] {
    const ids: bigint[] = [];
    for (const connection of this.pausedSet) if (connection.sessionId !== 0n) ids.push(connection.sessionId);
    return ids;
  }

  /** Times a connection stopped being read because of a bound (a counter). */
  get pauses(): number {
    return this.pausesValue;
  }

  /** Whether the server's total is at its bound, and a connection holding `count` requests of `bytes` holds at least its fair share of it. */
  fullFor(count: number, bytes: number): boolean {
    const { globalOutstandingLimit, globalOutstandingBytesMax } = this.limits;
    const sharers = Math.max(1, this.activeValue);
    return (
      (this.countValue >= globalOutstandingLimit && count * sharers >= globalOutstandingLimit) ||
      (this.bytesValue >= globalOutstandingBytesMax && bytes * sharers >= globalOutstandingBytesMax)
    );
  }

  /** @internal ConnectionInbound's accounting. */
  add(count: number, bytes: number): void {
    this.countValue += count;
    this.bytesValue += bytes;
    assert(this.countValue >= 0 && this.bytesValue >= 0, "inbound totals never go below zero");
  }

  /** Connections with a request read and not answered (the fair share's divisor). */
  get activeConnections(): number {
    return this.activeValue;
  }

  /** @internal */
  active(delta: 1 | -1): void {
    this.activeValue += delta;
  }

  /** @internal */
  paused(connection: ConnectionInbound, paused: boolean): void {
    if (paused) {
      this.pausedSet.add(connection);
      this.pausesValue += 1;
    } else this.pausedSet.delete(connection);
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
  /** The session the connection carries, once established (0 before). */
  sessionId = 0n;

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
    if (this.count === 0) this.budget.active(1);
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
      this.budget.active(-1);
    } else if (this.head > 1024 && this.head * 2 > this.sizes.length) {
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
  }

  /** The connection is gone: what it had outstanding no longer counts (its answers have nowhere to go). */
  release(): void {
    if (this.count > 0) this.budget.active(-1);
    this.budget.add(-this.count, -this.bytesValue);
    this.sizes = [];
    this.head = 0;
    this.bytesValue = 0;
    this.settle(false);
  }

  /**
   * Whether the connection must stop being read now: it has a request outstanding, and it is at
   * its own bound, or the server is at its bound and this connection holds its share of it.
   * Records the change; true → false and false → true are the door's cues.
   */
  update(): boolean {
    const limits = this.budget.limits;
    const over =
      this.count > 0 &&
      (this.count >= limits.connectionOutstandingMax ||
        this.bytesValue >= limits.connectionOutstandingBytesMax ||
        this.budget.fullFor(this.count, this.bytesValue));
    this.settle(over);
    return over;
  }

  private settle(paused: boolean): void {
    if (paused === this.pausedValue) return;
    this.pausedValue = paused;
    this.budget.paused(this, paused);
  }
}
