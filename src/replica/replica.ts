/**
 * One corral server minus its I/O: the quorum member (election, Zab), the request pipeline, prep,
 * the session tracker with its owner checks, watch delivery, the cleanup scan, and the session
 * opening both client doors share. It reads no clock, draws no random number and touches no
 * socket or file: everything it needs from the world comes through the ports (ports.ts). Production
 * builds it over LevelDB, snapshot files, gRPC and timers (src/server/server.ts); the simulator
 * builds the same Replica over in-memory twins (test/sim). A standalone server is a cluster of one
 * voter, so there is one write path.
 */
import type { DataTree } from "../store/data-tree.js";
import type { WriteBroadcast } from "./broadcast.js";
import { RequestPipeline, type RequestObserver } from "./pipeline.js";
import type { Clock, Entropy, LogSink, PeerPort, RecoveredState, ReplicaMetrics, ReplicaStorage } from "./ports.js";
import type { PrepOptions } from "./prep.js";
import type { ClusterMembersReply } from "./requests.js";
import type { QuotaExceeded } from "./quota-guard.js";
import { ClusterBroadcast, ClusterSessionActivity, QuorumPeer, type QuorumPeerConfig, type QuorumPeerDeps } from "./quorum-peer.js";
import { ReplicaDatabase, type TreeObserver } from "./replica-database.js";
import { SessionIdGenerator, SessionOpener } from "./session-opener.js";
import { SessionTracker } from "./session-tracker.js";
import { membersReply } from "./cluster-config.js";
import type { Notification } from "../election/types.js";
import type { QuorumMessage } from "../consensus/messages.js";

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
  /** Where clients dial a member's corral client port, if known (getMembers); absent: getMembers names no addresses. */
  clientAddressOf?: (serverId: number) => { host: string; port: number } | undefined;
  /** A durable write failed: the replica has stopped and the process must not go on (fail-stop). */
  onFatal: (error: unknown) => void;
  /** TEST ONLY: a leader that commits on its own ack alone (the chaos checkers' broken build). */
  unsafeCommitOnOwnAck?: boolean;
  /** SIMULATION ONLY: see TreeObserver and QuorumPeerDeps.election. */
  treeObserver?: TreeObserver;
  election?: QuorumPeerDeps["election"];
}

export class Replica {
  constructor(
    readonly database: ReplicaDatabase,
    readonly pipeline: RequestPipeline,
    readonly sessions: SessionOpener,
    readonly tracker: SessionTracker,
    readonly peer: QuorumPeer,
    readonly broadcast: WriteBroadcast,
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
    this.pipeline.reset();
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
 * The request chain, wired in one place (ZooKeeper's setupRequestProcessors). A client request
 * enters the pipeline through a door; reads are answered from the tree in session order; a write
 * goes to the broadcast, which the quorum peer serves: on the leader, the session and owner checks
 * and prep turn it into a txn that Zab proposes, logs and commits; a learner forwards it to the
 * leader. Every member applies committed txns to the database, whose apply answers the waiting
 * request and fires its watches through the pipeline.
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
  const tracker = new SessionTracker(config.tickMs, () => clock.nowMs());
  const broadcast = new ClusterBroadcast();
  const activity = new ClusterSessionActivity();
  const pipeline: RequestPipeline = new RequestPipeline(
    database,
    broadcast,
    activity,
    { superDigest: config.superDigest },
    ports.requestObserver,
    (): ClusterMembersReply => membersReply(peer.configInForce, ports.clientAddressOf),
  );
  const prepOptions: PrepOptions = {
    reconfigEnabled: config.reconfigEnabled,
    ttlNodesEnabled: config.ttlNodesEnabled,
    enforceQuota: config.enforceQuota,
    onQuotaExceeded: (event) => {
      metrics?.quotaLimitExceeded(event);
      logger.warn(event, "quota exceeded");
    },
  };
  const peer = new QuorumPeer({
    config,
    prepOptions,
    database,
    storage: ports.storage,
    recovered: ports.recovered,
    transport: ports.peers,
    pipeline,
    tracker,
    broadcast,
    activity,
    logger,
    clock,
    onFatal: ports.onFatal,
    ...(ports.unsafeCommitOnOwnAck === true ? { unsafeCommitOnOwnAck: true } : {}),
    ...(metrics === undefined ? {} : { metrics }),
    ...(ports.election === undefined ? {} : { election: ports.election }),
  });
  database.onApply((txn, result, deliveries) => pipeline.applied(txn, result, deliveries));
  // One opener for both doors: one session id sequence, one way to open and resume a session.
  const sessions = new SessionOpener({
    state: database,
    pipeline,
    broadcast,
    sessionIds: new SessionIdGenerator(config.serverId, clock.nowMs()),
    entropy: ports.entropy,
    negotiateTimeoutMs: (requested) => Math.min(config.maxSessionTimeoutMs, Math.max(config.minSessionTimeoutMs, requested)),
  });
  return new Replica(database, pipeline, sessions, tracker, peer, broadcast);
}
