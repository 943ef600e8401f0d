/**
 * Writes waiting at the leader for room in Zab's in-flight window (docs/architecture.md §7b): one
 * FIFO per session, taken round-robin across sessions — at most one write of a session per turn —
 * so that one session's backlog delays another session's single write by at most one turn,
 * wherever each session's server is. Turns are weighed in bytes (deficit round robin, Shreedhar and
 * Varghese): each turn gives a session `quantumBytes` of credit and its next write goes once its
 * credit covers it, so a session of 512 KiB writes takes as many bytes per round as a session of
 * small ones, not 512 KiB per turn ahead of them. Every origin's share (this server's own clients,
 * and each learner that forwards) is counted in writes and bytes, so that the host can hold each to
 * a bound.
 */
import { assert } from "../common/assert.js";

interface SessionLane<T> {
  items: T[];
  head: number;
  /** Bytes its turns have given it and its writes not spent (at most one quantum beyond its next write). */
  credit: number;
}

/** The credit one turn gives a session (small writes go one a turn; a large one waits for turns enough). */
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
  /** Sessions with a waiting write, in turn order; `turnHead` is the next one's index. */
  private turns: bigint[] = [];
  private turnHead = 0;
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
    let lane = this.lanes.get(sessionId);
    if (lane === undefined) {
      lane = { items: [], head: 0, credit: 0 };
      this.lanes.set(sessionId, lane);
      this.turns.push(sessionId);
    }
    lane.items.push(item);
    this.account(item, 1);
  }

  /**
   * The next write in turn: the oldest of the first session, in turn order, whose credit covers it.
   * Each turn passed adds a quantum, so a write of b bytes goes within b / quantum rounds.
   */
  shift(): T | undefined {
    if (this.countValue === 0) return undefined;
    for (;;) {
      assert(this.turnHead < this.turns.length, "a waiting write has a session in turn");
      const sessionId = this.turns[this.turnHead]!;
      this.turnHead += 1;
      const lane = this.lanes.get(sessionId);
      assert(lane !== undefined && lane.head < lane.items.length, "a session in turn has a write waiting");
      const item = lane.items[lane.head]!;
      lane.credit += this.quantumBytes;
      if (item.bytes > lane.credit) {
        this.turns.push(sessionId);
        this.compactTurns();
        continue;
      }
      lane.credit = Math.min(lane.credit - item.bytes, this.quantumBytes);
      lane.head += 1;
      if (lane.head === lane.items.length) this.lanes.delete(sessionId);
      else {
        this.turns.push(sessionId);
        if (lane.head > 256 && lane.head * 2 > lane.items.length) {
          lane.items = lane.items.slice(lane.head);
          lane.head = 0;
        }
      }
      this.compactTurns();
      this.account(item, -1);
      return item;
    }
  }

  private compactTurns(): void {
    if (this.turnHead > 1024 && this.turnHead * 2 > this.turns.length) {
      this.turns = this.turns.slice(this.turnHead);
      this.turnHead = 0;
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
