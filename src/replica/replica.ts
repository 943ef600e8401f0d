/**
 * One corral server minus its I/O: the quorum member (election, Zab), the request pipeline, prep,
 * the session tracker with its owner checks, watch delivery, the cleanup scan, and the session
 * opening both client doors share. It reads no clock, draws no random number and touches no
 * socket or file: everything it needs from the world comes through the ports (ports.ts). Production
 * builds it over LevelDB, snapshot files, gRPC and timers (src/server/server.ts); the simulator
 * builds the same Replica over in-memory twins (test/sim). A standalone server is a cluster of one
 * voter, so there is one write path.
 */
import type { QuorumMessage } from "../consensus/messages.js";
import type { Notification } from "../election/types.js";
import type { DataTree } from "../store/data-tree.js";
import type { AuditPort } from "./audit.js";
import type { WriteBroadcast } from "./broadcast.js";
import { ClientSessions } from "./client-sessions.js";
import { configOfTree, membersReply } from "./cluster-config.js";
import { LeaderAdmission, type LeaderTerm } from "./leader-admission.js";
import { PeerStatus } from "./peer-status.js";
import { RequestPipeline, type RequestObserver } from "./pipeline.js";
import type { Clock, Entropy, LogSink, PeerPort, RecoveredState, ReplicaMetrics, ReplicaStorage } from "./ports.js";
import { Prep, type PrepOptions } from "./prep.js";
import { QuorumPeer, type QuorumPeerConfig, type QuorumPeerDeps } from "./quorum-peer.js";
import type { QuotaExceeded } from "./quota-guard.js";
import { ReadOnlyMode } from "./read-only-mode.js";
import { RecentLog } from "./recent-log.js";
import { RepairState } from "./repair.js";
import { TREE_DIGEST_INTERVAL_MS, TreeDigestCheck } from "./tree-digest-check.js";
import { ReconfigMembership, staticConfig } from "./reconfig-membership.js";
import { ReplicaDatabase, type TreeObserver } from "./replica-database.js";
import { SessionIdGenerator, SessionOpener } from "./session-opener.js";
import { SessionTracker } from "./session-tracker.js";

/** The part of a server's configuration the replica runs with. */
export interface ReplicaConfig extends QuorumPeerConfig {
  snapshotEveryTxns: number;
  /** ZooKeeper's superDigest ("" for none). */
  superDigest: string;
  ttlNodesEnabled: boolean;
  enforceQuota: boolean;
  minSessionTimeoutMs: number;
  maxSessionTimeoutMs: number;
}

export interface ReplicaPorts {
  storage: ReplicaStorage;
  recovered: RecoveredState;
  peers: PeerPort;
  clock: Clock;
  entropy: Entropy;
  logger: LogSink;
  metrics?: ReplicaMetrics & { quotaLimitExceeded(event: QuotaExceeded): void };
  /** Told how long each client request took to answer (the server's latency metrics). */
  requestObserver?: RequestObserver;
  /** Where audit events go (audit.enable); absent: nothing is audited. */
  audit?: AuditPort;
  /** Where clients dial a member's corral client port, if known (getMembers); absent: getMembers names no addresses. */
  clientAddressOf?: (serverId: number) => { host: string; port: number } | undefined;
  /** A durable write failed: the replica has stopped and the process must not go on (fail-stop). */
  onFatal: (error: unknown) => void;
  /** TEST ONLY: a leader that commits on its own ack alone (the chaos checkers' broken build). */
  unsafeCommitOnOwnAck?: boolean;
  /** TEST ONLY: every n-th watch event a txn fires is lost (the watch checker's broken build). */
  unsafeDropEveryNthWatchEvent?: number;
  /** SIMULATION ONLY: see TreeObserver and QuorumPeerDeps.election. */
  treeObserver?: TreeObserver;
  election?: QuorumPeerDeps["election"];
}

export class Replica {
  constructor(
    readonly database: ReplicaDatabase,
    readonly pipeline: RequestPipeline,
    readonly clientSessions: ClientSessions,
    readonly sessions: SessionOpener,
    readonly tracker: SessionTracker,
    readonly peer: QuorumPeer,
    readonly broadcast: WriteBroadcast,
    readonly status: PeerStatus,
  ) {}

  /** The tree as of the last applied txn (a learner's is replaced when it installs a SNAP). */
  get tree(): DataTree {
    return this.database.tree;
  }

  start(): void {
    this.peer.start();
  }

  /** Stops serving at once; `stopped` once every durable write already asked for has landed. */
  stop(stopped: () => void): void {
    this.peer.stop(stopped);
    this.clientSessions.reset();
  }

  takeSnapshot(written: () => void): void {
    this.database.takeSnapshot(written);
  }

  // Inbound peer traffic, from whatever carries it.
  onNotification(notification: Notification): void {
    this.peer.onNotification(notification);
  }

  onQuorumMessage(from: number, message: QuorumMessage): void {
    this.peer.onQuorumMessage(from, message);
  }

  onQuorumStreamClosed(peer: number): void {
    this.peer.onQuorumStreamClosed(peer);
  }
}

/**
 * The request chain, wired in one place (ZooKeeper's setupRequestProcessors) and built from its end
 * back to its start, so that each stage is built with the stage it hands to:
 *
 *   RequestPipeline (session order) → QuorumPeer as WriteBroadcast (admission: the leader's
 *   LeaderAdmission, made per term with its own Prep; a learner's forward) → QuorumPeer's Ready loop
 *   (propose and log) → ReplicaDatabase.apply (apply) → ClientSessions (answer)
 *
 * The peer's calls back to the client side go to ClientSessions, built before it, as a declared
 * dependency (ClientSessionControl): a term that ends resets every session, the leader's expiry
 * closes a session's queue before it proposes the closeSession, read-only mode ends the sessions it
 * gives up.
 */
export function buildReplica(config: ReplicaConfig, ports: ReplicaPorts): Replica {
  const { clock, logger, metrics } = ports;
  const database = new ReplicaDatabase(
    ports.recovered.tree,
    ports.storage,
    config.snapshotEveryTxns,
    ports.entropy,
    logger,
    config.membershipText,
    ports.treeObserver,
  );
  // What the peer decides with: the leader's session liveness, read-only mode's, the membership.
  const tracker = new SessionTracker(config.tickMs, () => clock.nowMs());
  const readOnly = new ReadOnlyMode({ enabled: config.readOnlyModeEnabled, serverId: config.serverId, tickMs: config.tickMs, clock, logger });
  const recentLog = new RecentLog(database.tree.lastProcessedZxid, ports.recovered.unappliedTail, config.commitLogCount);
  const membership = new ReconfigMembership({
    serverId: config.serverId,
    initial: configOfTree(database.tree) ?? staticConfig(config.membershipText, config.servers),
    reconfigurable: config.membershipText !== "",
    unapplied: () => recentLog.unapplied(),
    lastLoggedZxid: () => database.lastLoggedZxid(),
    lastAppliedZxid: () => database.tree.lastProcessedZxid,
    transport: ports.peers,
    logger,
  });

  // answer: each session's queue answers in order; reads run when they reach its head.
  const clientSessions = new ClientSessions({
    state: database,
    forget: (sessionId) => {
      tracker.forget(sessionId);
      readOnly.forget(sessionId);
    },
    ...(ports.requestObserver === undefined ? {} : { observer: ports.requestObserver }),
    members: () => membersReply(membership.configInForce, ports.clientAddressOf),
    ...(ports.audit === undefined ? {} : { audit: ports.audit }),
    ...(ports.unsafeDropEveryNthWatchEvent === undefined ? {} : { unsafeDropEveryNthWatchEvent: ports.unsafeDropEveryNthWatchEvent }),
  });
  // admission on the leader, one per term: session and owner checks, then prep (fresh each term).
  const prepOptions: PrepOptions = {
    reconfigEnabled: config.reconfigEnabled,
    ttlNodesEnabled: config.ttlNodesEnabled,
    enforceQuota: config.enforceQuota,
    onQuotaExceeded: (event) => {
      metrics?.quotaLimitExceeded(event);
      logger.warn(event, "quota exceeded");
    },
  };
  const admitLeaderWrites = (term: LeaderTerm): LeaderAdmission =>
    new LeaderAdmission(term, new Prep(database.tree, prepOptions), {
      serverId: config.serverId,
      reconfigEnabled: config.reconfigEnabled,
      containerCheckIntervalMs: config.containerCheckIntervalMs,
      containerMaxPerMinute: config.containerMaxPerMinute,
      state: database,
      tracker,
      membership,
      clock,
      logger,
      ...(metrics === undefined ? {} : { metrics }),
    });
  // admission, propose and log: the quorum peer; committed txns go to apply (the database), whose
  // results go to answer (the client sessions).
  const peer = new QuorumPeer({
    config,
    database,
    storage: ports.storage,
    epochs: { acceptedEpoch: ports.recovered.acceptedEpoch, currentEpoch: ports.recovered.currentEpoch },
    recentLog,
    membership,
    readOnly,
    repair: new RepairState(config.serverId, ports.recovered.repairing),
    digests: new TreeDigestCheck(config.treeDigestIntervalMs ?? TREE_DIGEST_INTERVAL_MS, () => database.tree),
    admitLeaderWrites,
    transport: ports.peers,
    sessions: clientSessions,
    tracker,
    logger,
    clock,
    onFatal: ports.onFatal,
    ...(ports.unsafeCommitOnOwnAck === true ? { unsafeCommitOnOwnAck: true } : {}),
    ...(metrics === undefined ? {} : { metrics }),
    ...(ports.election === undefined ? {} : { election: ports.election }),
  });
  // session order: a door's requests join their session's queue; writes and syncs go to admission.
  const pipeline = new RequestPipeline({
    sessions: clientSessions,
    admission: peer,
    authOptions: { superDigest: config.superDigest },
    ...(ports.requestObserver === undefined ? {} : { observer: ports.requestObserver }),
  });
  // One opener for both doors: one session id sequence, one way to open and resume a session.
  const sessions = new SessionOpener({
    state: database,
    pipeline,
    broadcast: peer,
    sessionIds: new SessionIdGenerator(config.serverId, clock.wallMs()),
    entropy: ports.entropy,
    negotiateTimeoutMs: (requested) => Math.min(config.maxSessionTimeoutMs, Math.max(config.minSessionTimeoutMs, requested)),
  });
  return new Replica(database, pipeline, clientSessions, sessions, tracker, peer, peer, new PeerStatus(peer, membership, readOnly, clock));
}
