/**
 * The request chain's session-order stage, for one server: every request a front door submits joins
 * its session's FIFO queue (client-sessions.ts), in order. Writes go to admission at once (so prep
 * and the log pipeline them) and syncs ask it for the zxid to wait for; reads wait in the queue for
 * their turn. The queues answer each request in its place.
 *
 * ACLs: a read is checked when it runs, on the serving server, against the ids its connection had
 * when the read arrived; a write carries those ids to prep on the leader. An addAuth changes the
 * connection's ids at once (later requests see them) and is answered in its place in the order.
 */
import { assert } from "../common/assert.js";
import { limits } from "../common/constants.js";
import { ZkErrorCode } from "../common/errors.js";
import type { Id, WatchEvent } from "../store/types.js";
import { authenticate, withAuthIds, type AuthOptions } from "./auth.js";
import type { WriteBroadcast } from "./broadcast.js";
import { checkReadPath, codeOf, type ClientSessions, type QueueEntry } from "./client-sessions.js";
import { EMPTY_BODY, isWriteRequest, type AddAuthRequest, type ClientRequest, type Reply, type WriteRequest } from "./requests.js";

/** A client connection as the pipeline sees it; each front door implements it. */
export interface ClientConnection {
  readonly open: boolean;
  /** The client's address as ZooKeeper shows it ("" when unknown): all that `ip` authentication proves. */
  readonly remoteAddress: string;
  /**
   * The ids this connection is authenticated as (ZooKeeper's ServerCnxn authInfo), its `ip` id
   * first. The pipeline replaces the list, never changes it in place: a queued request keeps the
   * ids it arrived with.
   */
  authInfo: readonly Id[];
  /** The ids its verified client certificate gave it (`x509`, maybe `super`); none without TLS. */
  readonly certificateIds?: readonly Id[];
  sendReply(xid: number, reply: Reply): void;
  sendEvent(event: WatchEvent): void;
  /** End the connection: the session closed, expired, or moved to another connection. */
  end(reason: "closed" | "expired" | "moved"): void;
  /**
   * An addAuth on this connection failed; called when it arrives, before its AUTHFAILED answer
   * goes out in its place. The ZooKeeper door reads nothing more (ZooKeeper stops reading a
   * connection whose auth failed, and closes it); the gRPC door's session goes on.
   */
  authFailed?(): void;
}

/** Told when a request is answered (the server's metrics): read or update, and how long it took. */
export interface RequestObserver {
  nowMs(): number;
  answered(kind: "read" | "update", latencyMs: number): void;
  /** An auth packet was answered: its scheme (as the client named it) and whether it succeeded. */
  authenticated?(scheme: string, succeeded: boolean): void;
}

export interface RequestPipelineDeps {
  /** The session queues, which answer in order. */
  sessions: ClientSessions;
  /** Where writes, new sessions, syncs and signs of life go: the quorum peer's admission. */
  admission: WriteBroadcast;
  authOptions: AuthOptions;
  /** Told how long each request took to answer (the queues report the answer). */
  observer?: RequestObserver;
}

export class RequestPipeline {
  private readonly sessions: ClientSessions;
  private readonly admission: WriteBroadcast;

  constructor(private readonly deps: RequestPipelineDeps) {
    this.sessions = deps.sessions;
    this.admission = deps.admission;
  }

  /** Open a new session; `done(true)` once its createSession txn is applied. */
  createSession(sessionId: bigint, timeoutMs: number, password: Uint8Array, done: (accepted: boolean) => void): void {
    this.sessions.awaitCreated(sessionId, done);
    this.admission.submitCreateSession(sessionId, timeoutMs, password);
  }

  /** Open a session read-only mode serves alone (no quorum is there to create it). */
  openLocalSession(sessionId: bigint, timeoutMs: number, password: Uint8Array): void {
    this.sessions.openLocalSession(sessionId, timeoutMs, password);
  }

  /**
   * Bind a known session to a connection (new or resumed). A previous connection of the session is
   * ended, and the watches it registered are dropped: the client re-registers them with setWatches.
   */
  attach(sessionId: bigint, connection: ClientConnection): void {
    this.admission.touchSession(sessionId, this.sessions.attach(sessionId, connection));
  }

  /** The connection went away. The session lives on until it expires or is resumed elsewhere. */
  detach(sessionId: bigint, connection: ClientConnection): void {
    this.sessions.detach(sessionId, connection);
  }

  /** Whether `password` opens `sessionId` here. */
  checkSession(sessionId: bigint, password: Uint8Array): boolean {
    return this.sessions.checkSession(sessionId, password);
  }

  /** The timeout of a session `checkSession` accepts. */
  sessionTimeoutMs(sessionId: bigint): number {
    return this.sessions.sessionTimeoutMs(sessionId);
  }

  touch(sessionId: bigint): void {
    const session = this.sessions.get(sessionId);
    if (session && !session.closing) this.admission.touchSession(sessionId, session.timeoutMs);
  }

  /** Requests queued over every session, not yet answered. */
  outstandingRequests(): number {
    return this.sessions.outstandingRequests();
  }

  /** Sessions attached to a live connection here. */
  connectedSessions(): number {
    return this.sessions.connectedSessions();
  }

  /** The ids of the sessions attached to a live connection here. */
  connectedSessionIds(): bigint[] {
    return this.sessions.connectedSessionIds();
  }

  queuedRequests(sessionId: bigint): number {
    return this.sessions.queuedRequests(sessionId);
  }

  submit(sessionId: bigint, connection: ClientConnection, xid: number, request: ClientRequest): void {
    const session = this.sessions.get(sessionId);
    // The message is built only on failure: this runs for every request.
    if (!session) assert(false, `request for a session that was never attached: ${sessionId}`);
    const entry: QueueEntry = {
      xid,
      request,
      kind: isWriteRequest(request) ? "write" : request.op === "sync" ? "sync" : "read",
      connection,
      authInfo: connection.authInfo,
      reply: undefined,
      syncZxid: undefined,
      receivedMs: this.deps.observer?.nowMs() ?? 0,
    };
    session.queue.push(entry);
    let closedHere = false;
    if (session.closing || session.connection !== connection) {
      entry.reply = this.sessions.errorReply(session.closing ? ZkErrorCode.SESSIONEXPIRED : ZkErrorCode.SESSIONMOVED);
    } else if (session.queued() > limits.sessionRequestsQueuedMax) {
      entry.reply = this.sessions.errorReply(ZkErrorCode.THROTTLEDOP);
    } else if (entry.kind !== "read" && this.admission.readOnly) {
      // A read-only server orders nothing: a write or a sync would need the quorum it has lost.
      // A close is answered here, since no txn will answer it.
      this.admission.touchSession(sessionId, session.timeoutMs);
      closedHere = request.op === "close";
      entry.reply = closedHere ? { err: 0, zxid: this.sessions.lastProcessedZxid, body: EMPTY_BODY } : this.sessions.errorReply(ZkErrorCode.NOTREADONLY);
    } else {
      this.admission.touchSession(sessionId, session.timeoutMs);
      if (entry.kind === "write") {
        if (request.op === "close") session.closing = true;
        this.admission.submitWrite(sessionId, xid, request as WriteRequest, entry.authInfo);
      } else if (request.op === "addAuth") {
        entry.reply = this.addAuth(connection, request);
      } else if (entry.kind === "sync") {
        const sync = request as Extract<ClientRequest, { op: "sync" }>;
        try {
          checkReadPath(sync, sync.path);
          this.admission.requestSync((zxid) => {
            entry.syncZxid = zxid;
            this.sessions.drain(session);
          });
        } catch (error) {
          entry.reply = this.sessions.errorReply(codeOf(error));
        }
      }
    }
    this.sessions.drain(session);
    if (closedHere) this.sessions.closeHere(sessionId);
  }

  /** A request that could not even be decoded: answered with `err`, in its place in the session's order. */
  submitRejected(sessionId: bigint, connection: ClientConnection, xid: number, err: number): void {
    const session = this.sessions.get(sessionId);
    if (!session) assert(false, `request for a session that was never attached: ${sessionId}`);
    session.queue.push({
      xid,
      request: { op: "sync", path: "/" },
      kind: "read",
      connection,
      authInfo: connection.authInfo,
      reply: this.sessions.errorReply(err),
      syncZxid: undefined,
      receivedMs: this.deps.observer?.nowMs() ?? 0,
    });
    this.sessions.drain(session);
  }

  /** ZooKeeper's auth packet: AUTHFAILED leaves the ids as they were; the door decides what becomes of the connection. */
  private addAuth(connection: ClientConnection, request: AddAuthRequest): Reply {
    const ids = authenticate(request.scheme, request.auth, connection.remoteAddress, this.deps.authOptions, connection.certificateIds);
    const authInfo = ids && withAuthIds(connection.authInfo, ids);
    this.deps.observer?.authenticated?.(request.scheme, authInfo !== undefined);
    if (!authInfo) {
      connection.authFailed?.();
      return this.sessions.errorReply(ZkErrorCode.AUTHFAILED);
    }
    connection.authInfo = authInfo;
    return { err: 0, zxid: this.sessions.lastProcessedZxid, body: EMPTY_BODY };
  }
}
