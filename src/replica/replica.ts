/**
 * One corral server minus its I/O: the quorum member (election, Zab), the request pipeline, prep,
 * the session tracker with its owner checks, watch delivery, the cleanup scan, and the session
 * opening both client doors share. It reads no clock, draws no random number and touches no
 * socket or file: everything it needs from the world comes through the ports (ports.ts). Production
 * builds it over LevelDB, snapshot files, gRPC and timers (src/server/server.ts); the simulator
 * builds the same Replica over in-memory twins (test/sim). A standalone server is a cluster of one
 * voter, so there is one write path.
 */
import { limits } from "../common/constants.js";
import { zabLimits } from "../consensus/constants.js";
import type { QuorumMessage } from "../consensus/messages.js";
import type { Notification } from "../election/types.js";
import type { DataTree } from "../store/data-tree.js";
import type { AuditPort } from "./audit.js";
import type { WriteBroadcast } from "./broadcast.js";
import { ClientSessions } from "./client-sessions.js";
import { configOfTree, membersReply } from "./cluster-config.js";
import { InboundBudget, type InboundLimits } from "./inbound-budget.js";
import { LeaderAdmission, type ForwardedQueueBound, type LeaderTerm } from "./leader-admission.js";
import { PeerStatus } from "./peer-status.js";
import { RequestPipeline, type RequestObserver } from "./pipeline.js";
import type { Clock, Entropy, HopTrace, LogSink, PeerPort, RecoveredState, ReplicaMetrics, ReplicaStorage } from "./ports.js";
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
import { OutboundBudget } from "./outbound-budget.js";
import { SpaceAlarm, type SpaceRefusal } from "./space-quota.js";

/** The part of a server's configuration the replica runs with. */
export interface ReplicaConfig extends QuorumPeerConfig, InboundLimits {
  snapshotEveryTxns: number;
  /** Writes (and bytes) one learner may have forwarded and waiting at this server while it leads. */
  forwardedQueuedMax: ForwardedQueueBound;
  /** ZooKeeper's throttledOpWaitTime: see LeaderAdmissionDeps; absent or 0, off. */
  throttledOpWaitTimeMs?: number;
  /** ZooKeeper's superDigest ("" for none). */
  superDigest: string;
  ttlNodesEnabled: boolean;
  enforceQuota: boolean;
  /** The space quota: the tree's estimated bytes past which the leader refuses writes that grow it. */
  spaceQuotaBytes: number;
  minSessionTimeoutMs: number;
  maxSessionTimeoutMs: number;
  /** Answers both client doors may hold encoded and not written out, over every connection; absent: no bound (reads never wait). */
  globalUnsentBytesMax?: number;
}

export interface ReplicaPorts {
  storage: ReplicaStorage;
  recovered: RecoveredState;
  peers: PeerPort;
  clock: Clock;
  entropy: Entropy;
  logger: LogSink;
  metrics?: ReplicaMetrics & { quotaLimitExceeded(event: QuotaExceeded): void; spaceQuotaRefused(refusal: SpaceRefusal): void };
  /** Each hop of a client write (investigation only: see HopTrace). */
  hops?: HopTrace;
  /** Told how long each client request took to answer (the server's latency metrics). */
  requestObserver?: RequestObserver;
  /** Where audit events go (audit.enable); absent: nothing is audited. */
  audit?: AuditPort;
  /** Where clients dial a member's corral client port, if known (getMembers); absent: getMembers names no addresses. */
  clientAddressOf?: (serverId: number) => { host: string; port: number } | undefined;
  /** A durable write failed: the replica has stopped and the process must not go on (fail-stop). */
  onFatal: (error: unknown) => void;
  /** Runs `run` at the event loop's next turn (setImmediate): the client doors' answers are paced by turns; absent, they are not. */
  nextTurn?: (run: () => void) => void;
  /** TEST ONLY: a leader that commits on its own ack alone (the chaos checkers' broken build). */
  unsafeCommitOnOwnAck?: boolean;
  /** TEST ONLY: every n-th watch event a txn fires is lost (the watch checker's broken build). */
  unsafeDropEveryNthWatchEvent?: number;
  /** SIMULATION ONLY: see TreeObserver and QuorumPeerDeps.election. */
  treeObserver?: TreeObserver;
  election?: QuorumPeerDeps["election"];
}

export class Replica {
  private stopTouching: (() => void) | undefined;

  constructor(
    readonly database: ReplicaDatabase,
    readonly pipeline: RequestPipeline,
    readonly clientSessions: ClientSessions,
    readonly sessions: SessionOpener,
    readonly tracker: SessionTracker,
    readonly peer: QuorumPeer,
    readonly broadcast: WriteBroadcast,
    readonly status: PeerStatus,
    /** What both client doors have read and not answered, against the configured bounds. */
    readonly inbound: InboundBudget,
    /** What both client doors hold encoded and not written out, against globalUnsentBytesMax. */
    readonly outbound: OutboundBudget,
    /** Raised while the leader here refuses writes for space (spaceQuotaBytes). */
    readonly spaceAlarm: SpaceAlarm,
    private readonly keepPausedAlive: { clock: Clock; intervalMs: number },
  ) {}

  /** The tree as of the last applied txn (a learner's is replaced when it installs a SNAP). */
  get tree(): DataTree {
    return this.database.tree;
  }

  start(): void {
    this.peer.start();
    // A connection the doors stopped reading has its pings waiting unread: the server, not the
    // client, went quiet, so its session is kept alive for as long as that lasts.
    const { clock, intervalMs } = this.keepPausedAlive;
    this.stopTouching = clock.every(intervalMs, () => {
      for (const sessionId of this.inbound.pausedSessionIds()) this.pipeline.touch(sessionId);
    });
  }

  /** Stops serving at once; `stopped` once every durable write already asked for has landed. */
  stop(stopped: () => void): void {
    this.stopTouching?.();
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
  const spaceAlarm = new SpaceAlarm(config.spaceQuotaBytes, {
    refused: (refusal) => metrics?.spaceQuotaRefused(refusal),
    raised: (refusal) => logger.warn(refusal, "space quota alarm: writes that grow the tree are refused (QUOTAEXCEEDED) until space is cleared"),
    cleared: (usedBytes) => logger.info({ usedBytes, quotaBytes: config.spaceQuotaBytes }, "space quota alarm cleared"),
  });
  const database = new ReplicaDatabase(
    ports.recovered.tree,
    ports.storage,
    config.snapshotEveryTxns,
    ports.entropy,
    logger,
    config.membershipText,
    spaceAlarm,
    ports.treeObserver,
  );
  // What the peer decides with: the leader's session liveness, read-only mode's, the membership.
  const tracker = new SessionTracker(config.tickMs, () => clock.nowMs());
  const readOnly = new ReadOnlyMode({ enabled: config.readOnlyModeEnabled, serverId: config.serverId, tickMs: config.tickMs, clock, logger });
  const recentLog = new RecentLog(database.tree.lastProcessedZxid, ports.recovered.unappliedTail, {
    count: config.commitLogCount,
    bytes: zabLimits.committedLogBytesMax,
  });
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

  const outbound = new OutboundBudget(
    { bytesMax: config.globalUnsentBytesMax ?? Number.MAX_SAFE_INTEGER, turnBytesMax: limits.answerBytesPerTurnMax },
    ports.nextTurn,
  );
  // answer: each session's queue answers in order; reads run when they reach its head (and the outbound bound lets them).
  const clientSessions = new ClientSessions({
    outbound,
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
    spaceAlarm,
    onQuotaExceeded: (event) => {
      metrics?.quotaLimitExceeded(event);
      logger.warn(event, "quota exceeded");
    },
  };
  const admitLeaderWrites = (term: LeaderTerm): LeaderAdmission =>
    new LeaderAdmission(term, new Prep(database.tree, prepOptions), {
      serverId: config.serverId,
      forwardedQueuedMax: config.forwardedQueuedMax,
      throttledOpWaitTimeMs: config.throttledOpWaitTimeMs ?? 0,
      reconfigEnabled: config.reconfigEnabled,
      containerCheckIntervalMs: config.containerCheckIntervalMs,
      containerMaxPerMinute: config.containerMaxPerMinute,
      state: database,
      tracker,
      membership,
      clock,
      logger,
      ...(metrics === undefined ? {} : { metrics }),
      ...(ports.hops === undefined ? {} : { hops: ports.hops }),
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
    ...(ports.hops === undefined ? {} : { hops: ports.hops }),
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
  const inbound = new InboundBudget({
    globalOutstandingLimit: config.globalOutstandingLimit,
    globalOutstandingBytesMax: config.globalOutstandingBytesMax,
    connectionOutstandingMax: config.connectionOutstandingMax,
    connectionOutstandingBytesMax: config.connectionOutstandingBytesMax,
  });
  return new Replica(
    database,
    pipeline,
    clientSessions,
    sessions,
    tracker,
    peer,
    peer,
    new PeerStatus(peer, membership, readOnly, clock),
    inbound,
    outbound,
    spaceAlarm,
    {
      clock,
      intervalMs: Math.max(1, Math.floor(config.tickMs / 2)),
    },
  );
}
