import { SessionTable } from "../store/session-table.js";
import type { SessionActivity } from "./pipeline.js";

/**
 * Session liveness as the server that owns expiry sees it (the standalone server now, the leader
 * in a cluster): every contact pushes a session into a later expiry bucket; a tick collects the
 * sessions whose bucket has passed.
 */
export class SessionTracker implements SessionActivity {
  private readonly table: SessionTable;

  constructor(
    expirationIntervalMs: number,
    private readonly nowMs: () => number,
  ) {
    this.table = new SessionTable(expirationIntervalMs);
  }

  touch(sessionId: bigint, timeoutMs: number): void {
    this.table.touch(sessionId, timeoutMs, this.nowMs());
  }

  forget(sessionId: bigint): void {
    this.table.remove(sessionId);
  }

  /** Sessions not heard from within their timeout; each is reported once. */
  collectExpired(): bigint[] {
    return this.table.expired(this.nowMs());
  }
}
