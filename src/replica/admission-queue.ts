/**
 * Writes waiting for their turn (docs/architecture.md §7b): one FIFO per session, sessions taken in
 * turn, so that one session's backlog never holds another session's writes behind all of it. The
 * leader holds its writes here until Zab's in-flight window has room; a learner holds what it
 * has not forwarded yet.
 *
 * Two rings of turns, by the size of each session's next write. A session whose next write is
 * small (at most `quantumBytes`) waits in the small ring, taken one write a turn; one whose next
 * write is large waits in the large ring, whose turns are weighed in bytes (deficit round robin,
 * Shreedhar and Varghese: each turn gives `quantumBytes` of credit, and the write goes once the
 * credit covers it). Between the rings, bytes alternate: after a large write, small ones may take
 * as many bytes before the next large one. So a session with one small write (a lock, a heartbeat
 * znode) waits behind at most one large write and one small write of each session ahead of it,
 * however many MiB the large sessions have waiting, and neither ring starves the other. A session
 * keeps its own order whichever ring it is in.
 *
 * Every origin's share (this server's own clients, and each learner that forwards) is counted in
 * writes and bytes, so that the host can hold each to a bound.
 */
import { assert } from "../common/assert.js";

interface SessionLane<T> {
  items: T[];
  head: number;
  /** Large-ring credit its turns have given it and its writes not spent (at most one quantum beyond its next write). */
  credit: number;
  /** Which turn in a ring is its live one; any other of its turns is stale (its head left out of turn). */
  turn: number;
  ring: Ring;
}

/** A turn ring: sessions in turn order (with the turn each was given), `head` the next one's index; `live` turns not stale. */
interface Ring {
  ids: bigint[];
  turns: number[];
  head: number;
  live: number;
}

/** A write this large or smaller is small: it goes one a turn. Larger ones take turns enough of this much credit. */
export const ADMISSION_QUANTUM_BYTES = 16 * 1024;

/** What one waiting write costs its origin. */
export interface Queued {
  origin: number;
  bytes: number;
}

export class AdmissionQueue<T extends Queued> {
  constructor(private readonly quantumBytes = ADMISSION_QUANTUM_BYTES) {
    assert(quantumBytes >= 1, "a turn gives some credit");
  }

  private readonly lanes = new Map<bigint, SessionLane<T>>();
  private readonly small: Ring = { ids: [], turns: [], head: 0, live: 0 };
  private readonly large: Ring = { ids: [], turns: [], head: 0, live: 0 };
  private turnsGiven = 0;
  /** Bytes of small writes that may go before the next large one (what the last large one took). */
  private smallAllowance = 0;
  private readonly perOrigin = new Map<number, { count: number; bytes: number }>();
  private countValue = 0;
  private bytesValue = 0;

  /** Writes waiting, over every session. */
  get count(): number {
    return this.countValue;
  }

  /** Their bytes. */
  get bytes(): number {
    return this.bytesValue;
  }

  /** What `origin` has waiting here. */
  queuedFrom(origin: number): { count: number; bytes: number } {
    return this.perOrigin.get(origin) ?? { count: 0, bytes: 0 };
  }

  push(sessionId: bigint, item: T): void {
    const lane = this.lanes.get(sessionId);
    if (lane === undefined) {
      const created: SessionLane<T> = { items: [item], head: 0, credit: 0, turn: 0, ring: this.small };
      this.lanes.set(sessionId, created);
      this.enter(sessionId, created);
    } else lane.items.push(item);
    this.account(item, 1);
  }

  /**
   * The next write in turn (see the module comment). `onlySmall`: only if that is a small one —
   * what a host whose bound has room for small writes alone may take (a small reserve past it).
   */
  shift(onlySmall = false): T | undefined {
    if (this.countValue === 0) return undefined;
    const largeWaiting = this.large.live > 0;
    if (this.small.live > 0 && (this.smallAllowance > 0 || !largeWaiting)) {
      const item = this.take(this.next(this.small));
      if (largeWaiting) this.smallAllowance -= Math.max(1, item.bytes);
      return item;
    }
    if (onlySmall || !largeWaiting) return undefined;
    // Only sessions whose next write is large are in this ring, and each pass adds credit: one goes.
    for (;;) {
      const sessionId = this.next(this.large);
      const lane = this.lanes.get(sessionId)!;
      const bytes = lane.items[lane.head]!.bytes;
      lane.credit += this.quantumBytes;
      if (bytes > lane.credit) {
        this.enter(sessionId, lane);
        continue;
      }
      lane.credit = Math.min(lane.credit - bytes, this.quantumBytes);
      this.smallAllowance = bytes;
      return this.take(sessionId);
    }
  }

  /**
   * A write of `bytes` found nothing waiting and went without entering the queue: the bookkeeping
   * its push and shift would have done (after a large one, as many bytes of small ones go before
   * the next large one).
   */
  wentInTurn(bytes: number): void {
    assert(this.countValue === 0, "a write goes without a turn only when nothing waits");
    if (bytes > this.quantumBytes) this.smallAllowance = bytes;
  }

  /** `sessionId`'s next write, out of turn (its place in the turns goes to the write after it). */
  shiftSession(sessionId: bigint): T | undefined {
    const lane = this.lanes.get(sessionId);
    if (lane === undefined) return undefined;
    lane.ring.live -= 1;
    lane.turn = -1;
    return this.take(sessionId);
  }

  /** Whether `sessionId` has a write waiting. */
  has(sessionId: bigint): boolean {
    return this.lanes.has(sessionId);
  }

  /** The session's next write leaves; the session waits in the ring its next one belongs to, if any. */
  private take(sessionId: bigint): T {
    const lane = this.lanes.get(sessionId);
    assert(lane !== undefined && lane.head < lane.items.length, "a session in turn has a write waiting");
    const item = lane.items[lane.head]!;
    lane.head += 1;
    if (lane.head === lane.items.length) this.lanes.delete(sessionId);
    else {
      if (lane.head > 256 && lane.head * 2 > lane.items.length) {
        lane.items = lane.items.slice(lane.head);
        lane.head = 0;
      }
      this.enter(sessionId, lane);
    }
    this.account(item, -1);
    return item;
  }

  /** A session takes its place at the end of the ring its next write belongs to, with a new turn. */
  private enter(sessionId: bigint, lane: SessionLane<T>): void {
    const ring = lane.items[lane.head]!.bytes <= this.quantumBytes ? this.small : this.large;
    lane.ring = ring;
    lane.turn = ++this.turnsGiven;
    ring.ids.push(sessionId);
    ring.turns.push(lane.turn);
    ring.live += 1;
    if (ring.head > 1024 && ring.head * 2 > ring.ids.length) {
      ring.ids = ring.ids.slice(ring.head);
      ring.turns = ring.turns.slice(ring.head);
      ring.head = 0;
    }
  }

  /** The next live turn of `ring` (stale ones, left by writes taken out of turn, are skipped). */
  private next(ring: Ring): bigint {
    for (;;) {
      assert(ring.head < ring.ids.length, "a ring with a live turn has a session in turn");
      const sessionId = ring.ids[ring.head]!;
      const turn = ring.turns[ring.head]!;
      ring.head += 1;
      if (this.lanes.get(sessionId)?.turn !== turn) continue;
      ring.live -= 1;
      return sessionId;
    }
  }

  private account(item: T, sign: 1 | -1): void {
    const share = this.perOrigin.get(item.origin) ?? { count: 0, bytes: 0 };
    share.count += sign;
    share.bytes += sign * item.bytes;
    if (share.count === 0) this.perOrigin.delete(item.origin);
    else this.perOrigin.set(item.origin, share);
    this.countValue += sign;
    this.bytesValue += sign * item.bytes;
  }
}
