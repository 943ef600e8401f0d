/**
 * What a Replica needs from the world, and nothing more (hashicorp/raft's LogStore, StableStore,
 * SnapshotStore and Transport; TigerBeetle's injected Storage, Time and MessageBus). Production
 * implements each port as a thin adapter over LevelDB, snapshot files, gRPC and Node's timers
 * (src/server); the simulator implements them in memory under one seeded PRNG (test/sim).
 *
 * Durable writes answer through callbacks rather than promises: a simulator that runs the replica
 * synchronously, event by event, decides exactly when each write completes. A `Done` called with an
 * error means the write failed: the replica then stops for good (fail-stop).
 */
import type { MemberAddress } from "../common/membership.js";
import type { LogRecord, QuorumMessage } from "../consensus/messages.js";
import type { Notification } from "../election/types.js";
import type { DataTree } from "../store/data-tree.js";

export type Done = (error?: unknown) => void;

/** The txn log (ZooKeeper's TxnLog): records in zxid order, group-committed by the port. */
export interface TxnLogPort {
  /** `done` once this record, and so every record appended before it, is durable. */
  append(zxid: number, record: Uint8Array, done: Done): void;
  /** Zab's TRUNC: forget every record after `zxid`. */
  truncateAfter(zxid: number, done: Done): void;
  /** The last record appended (durable or not), 0 for an empty log. */
  lastAppendedZxid(): number;
}

/** Small numbers that must survive a crash: the accepted and current epochs. */
export interface StableStorePort {
  saveEpoch(which: "accepted" | "current", epoch: number, done: Done): void;
}

/** Snapshots of the tree. */
export interface SnapshotPort {
  /**
   * Take an image of `tree` now (synchronously: later applies must not leak into it) and write it in
   * the background. A snapshot is a redundant copy of what the log holds, so a failed write is the
   * port's to report and the replica carries on; `written` is called either way.
   */
  save(tree: DataTree, written: () => void): void;
  /** Zab's SNAP: the leader's image at `zxid` becomes the durable state (snapshot first, then an empty log). */
  install(zxid: number, bytes: Uint8Array, done: Done): void;
}

export interface ReplicaStorage {
  log: TxnLogPort;
  stable: StableStorePort;
  snapshots: SnapshotPort;
}

/** Durable state that does not read back as written: the file (or LevelDB directory) and what is wrong. */
export interface StorageDamage {
  file: string;
  reason: string;
}

/** What the storage held when the replica was built (read before, by whoever opened it). */
export interface RecoveredState {
  /** The newest snapshot's tree (committed txns only). */
  tree: DataTree;
  /** Logged records after the tree's zxid, not known to be committed: Zab applies them once it knows. */
  unappliedTail: LogRecord[];
  acceptedEpoch: number;
  currentEpoch: number;
  /**
   * Set when the storage found its files damaged (or an earlier repair unfinished): the tree and
   * log above are empty, and the replica must not serve nor count toward a quorum's discovery
   * until the leader's full snapshot is durable in their place (the storage's `install`).
   */
  repairing?: StorageDamage;
}

/** The election and quorum links to the other members. Inbound traffic calls the Replica's `on*` methods. */
export interface PeerPort {
  sendNotification(to: number, notification: Notification): void;
  /**
   * A reconfiguration came into force: these are the members now (with their quorum and election
   * addresses). Links to servers that left may close; new members become reachable.
   */
  updateMembers?(members: readonly MemberAddress[]): void;
  /** Open (and keep open) the quorum stream to `leaderId`. */
  followLeader(leaderId: number): void;
  stopFollowing(): void;
  sendToLeader(message: QuorumMessage): void;
  sendToLearner(learnerId: number, message: QuorumMessage): void;
  closeLearner(learnerId: number): void;
}

/**
 * The replica's two clocks and its one periodic tick. Every deadline and duration (session expiry,
 * election and sync timeouts, digest intervals) is measured on `nowMs`, which never jumps; only
 * what ZooKeeper stamps with wall time (txn times, hence ctime and mtime, TTL expiry against
 * them, session id seeds) reads `wallMs`, so setting the system clock moves no deadline.
 */
export interface Clock {
  /** Monotonic milliseconds: never goes back, unmoved by changes to the system clock. */
  nowMs(): number;
  /** Wall-clock milliseconds since the epoch: may jump either way. */
  wallMs(): number;
  /** Call `run` every `intervalMs` until the returned function is called. */
  every(intervalMs: number, run: () => void): () => void;
}

/** Unpredictable bytes (session passwords). */
export interface Entropy {
  bytes(count: number): Uint8Array;
}

/** Structured log lines (pino's shape). */
export interface LogSink {
  debug(fields: object, message?: string): void;
  info(fields: object | string, message?: string): void;
  warn(fields: object | string, message?: string): void;
  error(fields: object, message?: string): void;
  /** What a person must see at once (the server goes on, or stops, by its own decision). */
  fatal(fields: object, message?: string): void;
}

/**
 * Where a client write is on its way (door → forward → leader's queue → proposal → log → apply), one
 * call per hop, for finding where a write waits under load. Investigation only: a server passes one
 * when its log level is trace, never otherwise, so the hot path pays one undefined check.
 */
export interface HopTrace {
  hop(name: "submit" | "forward" | "arrive" | "propose" | "log" | "durable" | "apply", fields: Record<string, number | string>): void;
}

/** What the replica counts (ZooKeeper's ServerMetrics); production exports them to Prometheus. */
export interface ReplicaMetrics {
  lookingStarted(): void;
  electionDecided(durationMs: number): void;
  learnerSynced(kind: "follower" | "observer", durationMs: number): void;
  servingAgain(unavailableMs: number, leading: boolean): void;
  learnerSyncSent(mode: "DIFF" | "TRUNC" | "SNAP"): void;
  proposed(): void;
  committed(count: number): void;
  learnerProposalsReceived(count: number): void;
  learnerCommitsReceived(count: number): void;
  /** The leader answered a write THROTTLEDOP: it waited for the window past throttledOpWaitTimeMs (ZooKeeper's throttled_ops). */
  throttledOp(): void;
  /** A learner's tree digest differed from its leader's (ZooKeeper's digest_mismatches_count). */
  treeDigestMismatch(): void;
}
