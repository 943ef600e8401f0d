/**
 * The seam between the request pipeline and replication: the admission stage of the request chain.
 * The pipeline hands writes to a `WriteBroadcast` and learns their outcome only when the txn is
 * applied to the local tree (the quorum peer hands each applied txn to the session queues). The
 * quorum peer implements it: on the leader, the term's LeaderAdmission (session and owner checks,
 * prep) and a Zab proposal; on a learner, a forward to the leader. A standalone server is a leader
 * of one voter, so there is no other implementation.
 */
import type { Id } from "../store/types.js";
import type { WriteRequest } from "./requests.js";

export interface WriteBroadcast {
  /**
   * Order a client's write, sent on a connection authenticated as `authInfo` (prep checks ACLs
   * with them). Its txn comes back through the database's apply, with (sessionId, cxid).
   */
  submitWrite(sessionId: bigint, cxid: number, request: WriteRequest, authInfo: readonly Id[]): void;
  /** Order a new session's createSession txn. */
  submitCreateSession(sessionId: bigint, timeoutMs: number, password: Uint8Array): void;
  /** The session was heard from (any request or ping): whoever tracks its liveness now learns it. */
  touchSession(sessionId: bigint, timeoutMs: number): void;
  /**
   * Call `ready(zxid)` once every write ordered before this call is known: the pipeline answers
   * the sync when the local tree has applied `zxid`.
   */
  requestSync(ready: (zxid: number) => void): void;
  /**
   * A client resumes `sessionId` at this server (its password checked here): `done` says whether
   * the session may be attached. In a cluster the leader answers, and from then on refuses requests
   * for the session that come from any other server (SESSIONMOVED).
   */
  revalidateSession(sessionId: bigint, timeoutMs: number, done: (outcome: RevalidationOutcome) => void): void;
  /** Whether this server may accept client sessions now (a cluster member that lost its leader may not). */
  readonly serving: boolean;
  /**
   * Whether it serves read-only sessions instead (read-only mode, cut off from a quorum): reads from
   * its tree as it stands; writes and syncs are NOTREADONLY, and nothing reaches the broadcast.
   */
  readonly readOnly: boolean;
}

/** The verdict on a resumed session; "unavailable" when there is no leader to ask. */
export type RevalidationOutcome = "valid" | "expired" | "unavailable";
