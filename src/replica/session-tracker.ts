import { SessionTable } from "../store/session-table.js";

/**
 * Session liveness as the server that owns expiry sees it (the standalone server now, the leader
 * in a cluster): every contact pushes a session into a later expiry bucket; a tick collects the
 * sessions whose bucket has passed.
 *
 * In a cluster the leader also knows which server each session is attached to (ZooKeeper's session
 * owner): the server that created it or where its client last resumed it. A request that reaches
 * the leader from any other server was sent on a connection the client has left — held back on a
 * cut link, say — and must not take effect (SESSIONMOVED).
 */
export class SessionTracker {
  private readonly table: SessionTable;
  private readonly owners = new Map<bigint, number>();
  /** Sessions whose expiry was collected: their closeSession is on its way. */
  private readonly closing = new Set<bigint>();

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
    this.owners.delete(sessionId);
    this.closing.delete(sessionId);
  }

  /** Sessions not heard from within their timeout; each is reported once. */
  collectExpired(): bigint[] {
    const expired = this.table.expired(this.nowMs());
    for (const sessionId of expired) this.closing.add(sessionId);
    return expired;
  }

  /** When the session's expiry bucket falls due (epoch ms), if it is tracked here: the admin `dump`. */
  expiryOf(sessionId: bigint): number | undefined {
    return this.table.expiryOf(sessionId);
  }

  isClosing(sessionId: bigint): boolean {
    return this.closing.has(sessionId);
  }

  /** The client of `sessionId` is at `serverId` now (it created or resumed the session there). */
  setOwner(sessionId: bigint, serverId: number): void {
    this.owners.set(sessionId, serverId);
  }

  /**
   * Whether a request from `serverId` may act for `sessionId`. A session with no known owner (a new
   * leader knows none: every client reconnected when the term began) is claimed by the first
   * server to ask, as in ZooKeeper.
   */
  claim(sessionId: bigint, serverId: number): boolean {
    const owner = this.owners.get(sessionId);
    if (owner === undefined) this.owners.set(sessionId, serverId);
    return owner === undefined || owner === serverId;
  }

  /** A new leadership term: owners are learned afresh (every client reconnects to some server). */
  beginLeadership(): void {
    this.owners.clear();
    this.closing.clear();
  }
}
