/**
 * What both client doors hold encoded and not yet written out (docs/architecture.md §7b): answers
 * and watch events a connection has queued and its socket or HTTP/2 stream has not taken, over every
 * connection of the server. connectionUnsentBytesMax bounds one connection, but it cannot help when
 * many clients each ask for one big answer at once (a hundred listings of a parent with a million
 * children are 2 GB of answers): here the server's total is bounded too. At the bound a read waits
 * for its turn before it runs — its session's queue holds it, and the sessions waiting resume in the
 * order they came as the doors write out — so the total passes the bound by at most the one answer
 * that crossed it. Nothing is refused; writes, syncs, pings and events do not wait.
 *
 * The same count paces answers by turns of the event loop, where the host gives the replica its
 * turns: once the answers queued in one turn pass answerBytesPerTurnMax, reads wait for the next
 * turn. Encoding a listing of a million children takes a few hundred milliseconds; a hundred of
 * them in one turn would hold the loop for tens of seconds, and with it the quorum's messages and
 * the ticks that tell a live follower from a dead one (the leader stepped down under that storm).
 *
 * A client that stops reading holds its bytes until the door ends its connection (at
 * connectionUnsentBytesMax, or when its session expires for want of pings), so the bound is kept well
 * above one connection's.
 *
 * Deterministic: counts only; the doors own the sockets.
 */
import { assert } from "../common/assert.js";

export interface OutboundLimits {
  /** globalUnsentBytesMax: bytes queued and not yet written, over every connection. */
  bytesMax: number;
  /** Bytes queued in one turn of the event loop past which reads wait for the next. */
  turnBytesMax: number;
}

export class OutboundBudget {
  private bytesValue = 0;
  private turnBytes = 0;
  private turnScheduled = false;
  private peakBytesValue = 0;
  private readsWaitedValue = 0;
  private listener: (() => void) | undefined;

  constructor(
    readonly limits: OutboundLimits,
    /** Runs `run` at the event loop's next turn; absent: answers are not paced by turns. */
    private readonly nextTurn?: (run: () => void) => void,
  ) {
    assert(limits.bytesMax >= 1 && limits.turnBytesMax >= 1, "the outbound bounds let one answer out");
  }

  /** Bytes queued and not yet written, over every connection. */
  get bytes(): number {
    return this.bytesValue;
  }

  /** The most ever queued at once since start. */
  get peakBytes(): number {
    return this.peakBytesValue;
  }

  /** Reads that waited for their turn at the bound (a counter). */
  get readsWaited(): number {
    return this.readsWaitedValue;
  }

  /** Whether a read may run now. */
  get open(): boolean {
    return this.bytesValue < this.limits.bytesMax && this.turnBytes < this.limits.turnBytesMax;
  }

  /** A read waits for the bound (counted once per wait). */
  waited(): void {
    this.readsWaitedValue += 1;
  }

  /** Told each time the total falls back under the bound: the reads waiting may run (one listener, the session queues). */
  onOpen(listener: () => void): void {
    this.listener = listener;
  }

  /** A connection's account of what it queued. */
  connection(): ConnectionOutbound {
    return new ConnectionOutbound(this);
  }

  /** @internal ConnectionOutbound's accounting. */
  add(delta: number): void {
    const wasOpen = this.open;
    this.bytesValue += delta;
    assert(this.bytesValue >= 0, "outbound total never goes below zero");
    if (this.bytesValue > this.peakBytesValue) this.peakBytesValue = this.bytesValue;
    if (delta > 0 && this.nextTurn !== undefined) {
      this.turnBytes += delta;
      // The count starts again at every turn that queued answers, not only at one that reached the
      // bound: counted across turns, steady small answers closed the gate every turnBytesMax and
      // made reads wait a turn for no reason (getData throughput fell by a quarter).
      if (!this.turnScheduled) {
        this.turnScheduled = true;
        this.nextTurn(() => this.turnEnded());
      }
    }
    if (!wasOpen && this.open) this.listener?.();
  }

  private turnEnded(): void {
    const wasOpen = this.open;
    this.turnScheduled = false;
    this.turnBytes = 0;
    if (!wasOpen && this.open) this.listener?.();
  }
}

/** One connection's bytes queued and not yet written; once released (the connection is gone) it counts nothing more. */
export class ConnectionOutbound {
  private bytesValue = 0;
  private released = false;

  constructor(private readonly budget: OutboundBudget) {}

  get bytes(): number {
    return this.bytesValue;
  }

  /** `bytes` were queued (positive) or written out (negative). */
  add(bytes: number): void {
    if (this.released) return;
    this.bytesValue += bytes;
    this.budget.add(bytes);
  }

  /** The connection is gone: what it still held no longer counts. */
  release(): void {
    if (this.released) return;
    this.released = true;
    const held = this.bytesValue;
    this.bytesValue = 0;
    this.budget.add(-held);
  }
}
