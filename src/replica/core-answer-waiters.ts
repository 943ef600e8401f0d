/**
 * Callers waiting for the consensus core to answer: syncs (by sync id) and learners' session
 * revalidations (by session). A term's answers come back in its Readys; when the term ends
 * (the peer starts looking), nothing of it will answer, so the waiters are let go.
 */
import type { RevalidationOutcome } from "./broadcast.js";

export class CoreAnswerWaiters {
  private nextSyncId = 1;
  private readonly syncs = new Map<number, (zxid: number) => void>();
  private readonly revalidations = new Map<bigint, ((outcome: RevalidationOutcome) => void)[]>();

  /** The id to hand the core for a sync that calls `ready` with the zxid it reached. */
  addSync(ready: (zxid: number) => void): number {
    const syncId = this.nextSyncId++;
    this.syncs.set(syncId, ready);
    return syncId;
  }

  syncDone(syncId: number, zxid: number): void {
    const waiting = this.syncs.get(syncId);
    this.syncs.delete(syncId);
    waiting?.(zxid);
  }

  /** True when this is the session's first waiter, so the core must be asked; later ones share its answer. */
  addRevalidation(sessionId: bigint, done: (outcome: RevalidationOutcome) => void): boolean {
    const waiting = this.revalidations.get(sessionId);
    if (waiting) {
      waiting.push(done);
      return false;
    }
    this.revalidations.set(sessionId, [done]);
    return true;
  }

  revalidated(sessionId: bigint, valid: boolean): void {
    const waiting = this.revalidations.get(sessionId) ?? [];
    this.revalidations.delete(sessionId);
    for (const done of waiting) done(valid ? "valid" : "expired");
  }

  /** The term ended: its syncs are dropped unanswered (as a lost connection would), revalidations answered unavailable. */
  termEnded(): void {
    this.syncs.clear();
    const revalidations = [...this.revalidations.values()].flat();
    this.revalidations.clear();
    for (const done of revalidations) done("unavailable");
  }
}
