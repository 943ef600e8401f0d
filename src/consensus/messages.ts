/**
 * Zab's quorum messages (ZooKeeper's QuorumPacket types), exchanged on one stream per learner to
 * the leader. Txn payloads are opaque encoded txns (src/store/txn-codec.ts); forwarded client
 * writes are opaque encoded requests — the core never looks inside either.
 */

import type { MemberRole } from "../common/membership.js";

/** A logged txn: its zxid and its encoded bytes. */
export interface LogRecord {
  zxid: number;
  record: Uint8Array;
}

export type QuorumMessage =
  // ---- discovery
  /**
   * Learner → leader, first message (FOLLOWERINFO / OBSERVERINFO). `repairing`: the learner's
   * durable state was found damaged (or its tree diverged); it holds nothing it can vouch for, so
   * it never counts toward discovery, and its sync is a SNAP whatever its zxid.
   */
  | { type: "learnerInfo"; sid: number; role: MemberRole; acceptedEpoch: number; lastZxid: number; protocolVersion: number; repairing?: boolean }
  /** Leader → learner: the epoch it proposes (max accepted epoch of a quorum + 1). */
  | { type: "leaderInfo"; newEpoch: number; protocolVersion: number }
  /** Learner → leader, after persisting acceptedEpoch = newEpoch. */
  | { type: "ackEpoch"; currentEpoch: number; lastZxid: number }
  // ---- synchronisation
  /**
   * Leader → learner: DIFF — `lastZxid` is the learner's own last zxid (as its learnerInfo said);
   * the leader's txns after it follow as `syncTxns`.
   */
  | { type: "diff"; lastZxid: number }
  /** Leader → learner: TRUNC — drop every logged txn after `zxid`, then DIFF-like txns may follow. */
  | { type: "trunc"; zxid: number }
  /** Leader → learner: SNAP — replace the whole state with this snapshot (src/store/snapshot-codec.ts). */
  | { type: "snap"; zxid: number; snapshot: Uint8Array }
  /**
   * Leader → learner during sync: txns to log. `committed` ones are part of the leader's
   * committed history (applied once upToDate arrives); uncommitted ones are proposals in flight,
   * whose commit follows as a `commit` (never sent to observers).
   */
  | { type: "syncTxns"; txns: LogRecord[]; committed: boolean }
  /**
   * Leader → learner: sync data done; the learner's log now ends at `zxid` (the last synced txn).
   * The learner persists currentEpoch = the epoch its leaderInfo carried, makes every synced txn
   * durable, and answers `ack{zxid}`.
   */
  | { type: "newLeader"; zxid: number }
  /** Leader → learner: the quorum is synced; start serving clients. */
  | { type: "upToDate" }
  // ---- broadcast
  | { type: "proposal"; zxid: number; record: Uint8Array }
  /**
   * Learner → leader: every txn up to `zxid` is durable in the learner's log (cumulative; also
   * answers newLeader, with newLeader's `zxid`).
   */
  | { type: "ack"; zxid: number }
  /** Leader → follower: every proposal up to `zxid` is committed (cumulative). */
  | { type: "commit"; zxid: number }
  /** Leader → observer: a committed txn (proposal + commit in one). */
  | { type: "inform"; zxid: number; record: Uint8Array }
  // ---- liveness and sessions
  /** Leader → learner every half tick; learner → leader in answer, carrying session touches. */
  | { type: "ping"; touches: SessionTouch[] }
  // ---- requests learners forward to the leader
  /** A client write (or createSession / closeSession) the learner's client asked for. */
  | { type: "request"; sessionId: bigint; cxid: number; request: Uint8Array }
  /** A client's sync: the leader answers `syncDone` with its last proposed zxid at that point. */
  | { type: "sync"; syncId: number }
  | { type: "syncDone"; syncId: number; zxid: number }
  /**
   * A client resumed `sessionId` at the learner: the leader checks that the session is alive,
   * makes the learner its owner (requests from any other server are refused with SESSIONMOVED
   * from then on) and answers `revalidated`. The learner completes the client's connect only then.
   */
  | { type: "revalidate"; sessionId: bigint; timeoutMs: number }
  | { type: "revalidated"; sessionId: bigint; valid: boolean }
  // ---- replica checks (the hosts exchange these; the Zab cores never see them)
  /**
   * Leader → learner: its tree's digest (DataTree.digest, 16 hex digits) as of `zxid`, for the
   * learner to compare with its own tree's at that zxid (src/replica/tree-digest-check.ts): once
   * per interval, and after every sync, so that the learner is checked before it serves.
   */
  | { type: "treeDigest"; zxid: number; digest: string };

/** "This session was heard from, with this timeout": how learners keep the leader's expiry table fresh. */
export interface SessionTouch {
  sessionId: bigint;
  timeoutMs: number;
}

export type QuorumMessageType = QuorumMessage["type"];
