/**
 * A learner's client writes on their way to the leader (docs/architecture.md §7b). The quorum
 * stream to the leader is one FIFO, shared by every session of this server and by its acks: a
 * write forwarded behind many MiB of another session's writes waits for all of them to cross it.
 * So a learner forwards at most `bytesMax` of writes the leader has not yet answered — answered
 * meaning its txn was applied here, as every forwarded write's is while the term lasts (an error
 * txn carries a refusal) — and holds the rest in an AdmissionQueue, taken in its sessions' turns:
 * a session's one small write goes ahead of another's backlog, here as at the leader.
 *
 * One write per session goes whatever the bound: a session with nothing unanswered forwards its
 * next write at once. The leader takes writes round-robin over the sessions it has writes of, so a
 * learner that held some of its sessions back would starve them there (measured: a follower's
 * storm sessions got a fifth of the leader's own sessions' writes, and lost their connections for
 * hearing nothing). Each such write was read within its connection's inbound bounds, which admit
 * one request per connection whatever the server's total, so this holds no more than the doors.
 *
 * One per learning term: a term that ends ends every client connection, and its writes with it.
 * Deterministic: counts only.
 */
import { assert } from "../common/assert.js";
import { zabLimits } from "../consensus/constants.js";
import { AdmissionQueue } from "./admission-queue.js";

/** A client write waiting to be forwarded. */
export interface Forward {
  /** The AdmissionQueue's origin: always this server. */
  origin: 0;
  bytes: number;
  sessionId: bigint;
  cxid: number;
  request: Uint8Array;
}

export class ForwardQueue {
  private readonly waiting = new AdmissionQueue<Forward>();
  /** Per session, the cxids and bytes of its writes forwarded and not yet applied here, oldest first. */
  private readonly unanswered = new Map<bigint, { cxid: number; bytes: number }[]>();
  private unansweredBytes = 0;
  /** Sessions that may have nothing unanswered and a write waiting (checked again when taken). */
  private idle: bigint[] = [];

  constructor(private readonly bytesMax: number) {
    assert(bytesMax >= 1, "a learner forwards something");
  }

  /** Writes waiting to be forwarded, and their bytes. */
  get queued(): { count: number; bytes: number } {
    return { count: this.waiting.count, bytes: this.waiting.bytes };
  }

  /** Bytes forwarded and not yet answered. */
  get inFlightBytes(): number {
    return this.unansweredBytes;
  }

  push(sessionId: bigint, cxid: number, request: Uint8Array): void {
    this.waiting.push(sessionId, { origin: 0, bytes: request.byteLength, sessionId, cxid, request });
    if (!this.unanswered.has(sessionId)) this.idle.push(sessionId);
  }

  /**
   * The next write to forward now, in turn, or undefined while `bytesMax` is forwarded and not
   * answered (a write larger than the bound still goes when nothing else is in flight); past it, a
   * small write may still go within the leader's small reserve (zabLimits.smallProposalsReserveBytes),
   * as the leader proposes one past its window.
   */
  take(): Forward | undefined {
    const unanswered = this.unansweredBytes;
    let next = this.takeIdle();
    if (next === undefined && (unanswered === 0 || unanswered < this.bytesMax)) next = this.waiting.shift();
    else if (next === undefined && unanswered < this.bytesMax + zabLimits.smallProposalsReserveBytes) next = this.waiting.shift(true);
    if (next === undefined) return undefined;
    const ofSession = this.unanswered.get(next.sessionId);
    const entry = { cxid: next.cxid, bytes: next.bytes };
    if (ofSession === undefined) this.unanswered.set(next.sessionId, [entry]);
    else ofSession.push(entry);
    this.unansweredBytes += next.bytes;
    return next;
  }

  /**
   * A txn of `sessionId` with `cxid` was applied: if it answers the session's oldest write
   * forwarded from here (the leader decides a session's writes in order, one txn each), that write
   * no longer counts. Txns of other servers' clients and the leader's own match nothing.
   */
  applied(sessionId: bigint, cxid: number): void {
    const ofSession = this.unanswered.get(sessionId);
    if (ofSession === undefined || ofSession[0]!.cxid !== cxid) return;
    this.unansweredBytes -= ofSession.shift()!.bytes;
    if (ofSession.length > 0) return;
    this.unanswered.delete(sessionId);
    if (this.waiting.has(sessionId)) this.idle.push(sessionId);
  }

  /** The next write of a session with nothing unanswered, out of its turn. */
  private takeIdle(): Forward | undefined {
    while (this.idle.length > 0) {
      const sessionId = this.idle.pop()!;
      if (!this.unanswered.has(sessionId) && this.waiting.has(sessionId)) return this.waiting.shiftSession(sessionId);
    }
    return undefined;
  }
}
