/**
 * One cluster member (ZooKeeper's QuorumPeer, without its threads): it runs FastLeaderElection
 * until a leader is decided, then one Zab core for that term, and carries out what the pure cores
 * ask through the replica's ports — notifications and quorum messages through the PeerPort, durable
 * writes through the storage ports (persist before the messages that depend on them), committed txns into
 * the database (and from there to the client pipeline). A core that steps down is dropped, every
 * client connection is ended, and the election starts again.
 */
import { assert } from "../common/assert.js";
import { ZkError, ZkErrorCode } from "../common/errors.js";
import type { PersistAction, ZabInput, ZabReady } from "../consensus/core-io.js";
import type { QuorumMessage } from "../consensus/messages.js";
import { JointQuorum, QuorumVerifier, type PendingConfig } from "../consensus/quorum.js";
import { parseMembership, type MemberAddress } from "../common/membership.js";
import { createZab, Leader, type ZabCore } from "../consensus/zab.js";
import type { LearnerStage } from "../consensus/leader.js";
import type { ZabPhase } from "../consensus/core-io.js";
import { FastLeaderElection, type Decision, type ElectionOutput, type FastLeaderElectionOptions } from "../election/fast-leader-election.js";
import type { Notification } from "../election/types.js";
import { CleanupScanner } from "../store/cleanup-scan.js";
import { encodeSnapshot } from "../store/snapshot-codec.js";
import { decodeTxn, encodeTxn } from "../store/txn-codec.js";
import type { Id, Txn, TxnBody } from "../store/types.js";
import { epochOf, formatZxid as hex } from "../store/zxid.js";
import type { RevalidationOutcome, WriteBroadcast } from "./broadcast.js";
import { PersistQueue } from "./persist-queue.js";
import type { Clock, LogSink, PeerPort, RecoveredState, ReplicaMetrics, ReplicaStorage } from "./ports.js";
import type { ReplicaDatabase } from "./replica-database.js";
import type { RequestPipeline, SessionActivity } from "./pipeline.js";
import { Prep, type PrepOptions } from "./prep.js";
import { RecentLog } from "./recent-log.js";
import { decodeForwardedRequest, encodeForwardedRequest } from "./request-codec.js";
import type { ReconfigRequest, WriteRequest } from "./requests.js";
import { SessionTracker } from "./session-tracker.js";
import {
  configOfTree,
  configOfTxnData,
  configText,
  planReconfig,
  quorumOf,
  reconfigsIn,
  reconfigTxnData,
  roleOf,
  type ClusterConfig,
  type MemberRole,
} from "./cluster-config.js";

export type PeerRoleState = "looking" | "leading" | "following" | "observing";

/** Messages kept from one learner that connected before this server decided to lead. */
const HELD_LEARNER_MESSAGES_MAX = 64;

/** How often the cores are ticked: often enough for the election's 200 ms finalize window. */
const TICK_INTERVAL_MS_MAX = 50;

/** What the peer asks of its election: FastLeaderElection's surface. */
export type LeaderElection = Pick<FastLeaderElection, "startLooking" | "receive" | "tick" | "settle" | "decision" | "reconfigure">;

/** The membership and timing a member runs with (a subset of the server's configuration). */
export interface QuorumPeerConfig {
  serverId: number;
  /** Every member, this one included: a standalone server is a cluster of one voter. */
  servers: readonly { id: number; role: "participant" | "observer" }[];
  tickMs: number;
  initLimitTicks: number;
  syncLimitTicks: number;
  commitLogCount: number;
  containerCheckIntervalMs: number;
  containerMaxPerMinute: number;
  /** ZooKeeper's readonlymode.enabled: see READ_ONLY_AFTER_MS_MIN. */
  readOnlyModeEnabled: boolean;
  /**
   * The membership this server starts with, in ZooKeeper's dynamic-configuration text (what
   * /zookeeper/config shows until a reconfiguration); "" for a standalone server, which cannot
   * be reconfigured. `servers` must list the same members.
   */
  membershipText: string;
  /** ZooKeeper's reconfigEnabled: whether the reconfig operation is allowed. */
  reconfigEnabled: boolean;
}

/**
 * A member out of service this long (or a tick, if longer), still looking for a leader or waiting
 * in discovery for its quorum, starts serving read-only sessions when read-only mode is on, as
 * ZooKeeper's QuorumPeer starts its ReadOnlyZooKeeperServer after looking this long: long
 * enough that an ordinary re-election does not drop every client into read-only mode and back.
 */
export const READ_ONLY_AFTER_MS_MIN = 2_000;

export interface QuorumPeerDeps {
  config: QuorumPeerConfig;
  /** What the leader's prep is built with. */
  prepOptions: PrepOptions;
  database: ReplicaDatabase;
  storage: ReplicaStorage;
  /** What the storage held at start: the epochs and the log tail not yet known to be committed. */
  recovered: RecoveredState;
  transport: PeerPort;
  pipeline: RequestPipeline;
  tracker: SessionTracker;
  broadcast: ClusterBroadcast;
  activity: ClusterSessionActivity;
  logger: LogSink;
  clock: Clock;
  onFatal: (error: unknown) => void;
  /** TEST ONLY (CORRAL_TEST_UNSAFE_SOLO_COMMIT=1): a leader that commits on its own ack alone. */
  unsafeCommitOnOwnAck?: boolean;
  /** Where elections, syncs, proposals and commits are counted (ZooKeeper's ServerMetrics). */
  metrics?: ReplicaMetrics;
  /**
   * SIMULATION ONLY: another election in FastLeaderElection's place (the simulator's oracle, which
   * sometimes picks a leader that is not the most up to date: Zab must stay safe whoever leads).
   */
  election?: (options: FastLeaderElectionOptions) => LeaderElection;
}

/** A leader's view of one learner, for status pages and metrics. */
export interface LearnerStatus {
  sid: number;
  role: "participant" | "observer";
  stage: LearnerStage;
  ackedZxid: number;
  /** Txns behind our last proposal by its acks; undefined for observers (they do not ack) and before its first ack. */
  lagZxids: number | undefined;
}

/** What a serving leader reports of itself. */
export interface LeaderStatus {
  uptimeMs: number;
  lastProposedZxid: number;
  proposalsInFlight: number;
  learners: LearnerStatus[];
}

/** ZooKeeper's BufferStats of proposals: -1 until the first. */
export interface ProposalSizes {
  last: number;
  min: number;
  max: number;
}

/** One election this server saw decided: when, how long it looked, whom it chose, as what. */
export interface ElectionSeen {
  decidedAtMs: number;
  tookMs: number;
  leader: number;
  state: "leading" | "following" | "observing";
  round: number;
}

/** Elections kept for the console; older ones drop off. */
const ELECTIONS_SEEN_MAX = 20;

/**
 * Reconfigurations heard of from peers' notifications and not logged here, kept for elections (a
 * handful at most: one is normally in flight; older ones drop first).
 */
const HEARD_RECONFIGS_MAX = 4;

/** A reconfiguration logged here and not known committed, with the configuration it installs. */
interface PendingReconfig {
  zxid: number;
  config: ClusterConfig;
}

export class QuorumPeer {
  /** Undefined until this server is a member of some configuration it knows (and elects). */
  private election: LeaderElection | undefined;
  /** The configuration in force here: the last reconfiguration applied, or the one it started with. */
  private committedConfig: ClusterConfig;
  /** Set when a configuration came into force while handling a Ready: a learner whose place changed re-elects. */
  private configChanged = false;
  /**
   * Reconfigurations a peer has logged and not seen committed, by version, that this server has
   * not logged: elections count them as in play (see hearPending). Forgotten once this server
   * serves (its log is then its leader's) or a configuration at least as new comes into force.
   */
  private readonly heardReconfigs = new Map<number, ClusterConfig>();
  /** The version of the configuration that left this server out, once said (logged once per version). */
  private outsideSince: number | undefined;
  private readonly persist: PersistQueue;
  private readonly recentLog: RecentLog;
  private zab: ZabCore | undefined;
  private prep: Prep | undefined;
  /** Leader only, from the moment it serves: its container and TTL cleanup schedule. */
  private cleanup: CleanupScanner | undefined;
  /** Bumped whenever a core is dropped: answers to a dropped core's writes are ignored. */
  private generation = 0;
  private roleState: PeerRoleState = "looking";
  private leaderId: number | undefined;
  private epochs = { acceptedEpoch: 0, currentEpoch: 0 };
  private stopTicking: (() => void) | undefined;
  private stopped = false;
  private nextSyncId = 1;
  private readonly pendingSyncs = new Map<number, (zxid: number) => void>();
  /** Learner only: connects waiting for the leader's answer to their session's revalidation. */
  private readonly pendingRevalidations = new Map<bigint, ((outcome: RevalidationOutcome) => void)[]>();
  private readonly heldLearnerMessages = new Map<number, QuorumMessage[]>();
  /** When this server last left service (entered LOOKING) while serving or at start; cleared when it serves again. */
  private unavailableSinceMs: number | undefined;
  /** When the current election began, and when the current term's core was built. */
  private lookingSinceMs = 0;
  private termStartedMs = 0;
  /** When the current term began serving (leader_uptime). */
  private servingSinceMs = 0;
  private proposalSizeBytes: ProposalSizes = { last: -1, min: -1, max: -1 };
  /** Called the next time this server begins serving clients (or stops for good). */
  private servingWaiters: (() => void)[] = [];
  /** The last ELECTIONS_SEEN_MAX elections this server took part in, oldest first. */
  private readonly elections: ElectionSeen[] = [];
  /**
   * While read-only: the liveness of the sessions served here, which no leader tracks now. A session
   * silent for its timeout is ended here (ZooKeeper's read-only server runs its own tracker too).
   */
  private readOnlySessions: SessionTracker | undefined;

  constructor(private readonly deps: QuorumPeerDeps) {
    const { config } = deps;
    assert(
      config.servers.some((s) => s.id === config.serverId),
      `server ${config.serverId} is in its own config`,
    );
    this.committedConfig = configOfTree(deps.database.tree) ?? staticConfig(config);
    this.persist = new PersistQueue((error) => this.fatal(error));
    this.recentLog = new RecentLog(deps.database.tree.lastProcessedZxid, deps.recovered.unappliedTail, config.commitLogCount);
    this.epochs = { acceptedEpoch: deps.recovered.acceptedEpoch, currentEpoch: deps.recovered.currentEpoch };
    deps.broadcast.bind(this);
    deps.activity.bind(this);
    // Restarted: a reconfiguration logged before another is in force, though not applied yet; and
    // the transport must dial the members of what is in play, not only those of the static file.
    this.activateLoggedCommitted();
    this.configChanged = false;
    this.updateTransportMembers();
  }

  get role(): PeerRoleState {
    return this.roleState;
  }

  /** Leader only: its learners and where each stands (mntr); undefined on any other role. */
  learners(): ReturnType<Leader["learners"]> | undefined {
    const zab = this.zab;
    return zab instanceof Leader ? zab.learners() : undefined;
  }

  get serving(): boolean {
    return this.zab?.serving ?? false;
  }

  /** Serving read-only sessions: cut off from a quorum, with read-only mode on. */
  get readOnly(): boolean {
    return this.readOnlySessions !== undefined;
  }

  /** The leader of the current term, once decided (undefined while looking). */
  get currentLeader(): number | undefined {
    return this.zab ? this.leaderId : undefined;
  }

  /** The epoch of the current term's core (undefined while looking, or before a learner hears its leader's). */
  get termEpoch(): number | undefined {
    return this.zab?.epoch;
  }

  /** The epoch this server last persisted as current (ZooKeeper's currentEpoch file). */
  get currentEpoch(): number {
    return this.epochs.currentEpoch;
  }

  /** The configuration in force here (ZooKeeper's getQuorumVerifier, with the members' addresses). */
  get configInForce(): ClusterConfig {
    return this.committedConfig;
  }

  /** /zookeeper/config's text for the configuration in force ("" for a standalone server). */
  get configTextInForce(): string {
    return this.deps.config.membershipText === "" ? "" : configText(this.committedConfig);
  }

  /**
   * The configuration in force and every reconfiguration not known committed, logged here or heard
   * of from a peer that logged it: a quorum of each elects.
   */
  get configsInPlay(): ClusterConfig[] {
    return [this.committedConfig, ...this.reconfigsInPlay()];
  }

  /** The reconfigurations logged here and not known committed, oldest first (heard ones left out). */
  get reconfigsLogged(): ClusterConfig[] {
    return this.pendingReconfigs().map((p) => p.config);
  }

  /** Whether this server votes in some configuration it knows of (the one in force, or one logged and pending). */
  get votesInOwnView(): boolean {
    return this.electionView()?.role === "participant";
  }

  /** The elections this server saw decided, oldest first (the console's cluster view). */
  get electionsSeen(): readonly ElectionSeen[] {
    return this.elections;
  }

  /** ZooKeeper's ZabState: "election" while looking, then the current core's phase. */
  get zabState(): "election" | ZabPhase {
    return this.zab?.phase ?? "election";
  }

  /** This term's proposal sizes, while leading (stat's "Proposal sizes last/min/max"). */
  get proposalSizes(): ProposalSizes {
    return this.proposalSizeBytes;
  }

  /** Leader only, while serving: its learners with their lag, its proposals in flight. */
  leaderStatus(): LeaderStatus | undefined {
    const zab = this.zab;
    if (!(zab instanceof Leader) || !zab.serving) return undefined;
    const last = zab.lastProposedZxid;
    return {
      uptimeMs: this.deps.clock.nowMs() - this.servingSinceMs,
      lastProposedZxid: last,
      proposalsInFlight: zab.outstandingProposals,
      learners: zab.learners().map((learner) => ({ ...learner, lagZxids: learner.role === "participant" ? lagOf(last, learner.ackedZxid) : undefined })),
    };
  }

  start(): void {
    const intervalMs = Math.max(5, Math.min(TICK_INTERVAL_MS_MAX, Math.floor(this.deps.config.tickMs / 4)));
    this.stopTicking = this.deps.clock.every(intervalMs, () => this.onTick());
    this.unavailableSinceMs = this.deps.clock.nowMs();
    this.startLooking("start");
  }

  /** `ready` once this server serves clients (at once if it does); also when it stops without serving. */
  whenServing(ready: () => void): void {
    if (this.serving || this.stopped) ready();
    else this.servingWaiters.push(ready);
  }

  private releaseServingWaiters(): void {
    const waiters = this.servingWaiters;
    this.servingWaiters = [];
    for (const ready of waiters) ready();
  }

  /** Stops at once; `stopped` once every durable write already asked for has landed. */
  stop(stopped: () => void): void {
    this.leaveReadOnly("stopping");
    this.stopped = true;
    this.stopTicking?.();
    this.releaseServingWaiters();
    this.generation += 1;
    this.zab = undefined;
    this.persist.whenIdle(stopped);
  }

  // ---- transport handlers

  onNotification(notification: Notification): void {
    if (this.stopped) return;
    this.deps.logger.debug({ notification: { ...notification, vote: { ...notification.vote } } }, "notification received");
    const offered = notification.config;
    if (offered !== undefined && offered.version > this.committedConfig.version) this.adopt(notification.from, offered);
    const pending = notification.pending;
    if (pending !== undefined && pending.version > this.committedConfig.version) this.hearPending(notification.from, pending);
    if (this.election) this.handleElection(this.election.receive(notification, this.deps.clock.nowMs()));
  }

  /**
   * A peer has logged a reconfiguration and not seen it committed. The next leader may be one that
   * logged it, and its term needs a quorum of that configuration too (it may have committed): a
   * server it makes a voter must vote, even one that never logged it — an observer it promotes
   * never saw the proposal, a server it adds may have been cut off, one it brings back was
   * removed. Elections here count it as in play until this server serves (its log is then its
   * leader's, the reconfiguration in it or truncated away) or a newer configuration is in force.
   * Voting grants nothing by itself: the leader's establishment still needs every quorum, and
   * the logs of whoever backs it are what Zab syncs from.
   */
  private hearPending(from: number, offered: { version: number; text: string }): void {
    if (this.heardReconfigs.has(offered.version) || this.pendingReconfigs().some((p) => p.zxid === offered.version)) return;
    const config = this.parseOffered(from, offered);
    if (config === undefined) return;
    const before = this.electionView();
    this.heardReconfigs.set(config.version, config);
    while (this.heardReconfigs.size > HEARD_RECONFIGS_MAX) this.heardReconfigs.delete(Math.min(...this.heardReconfigs.keys()));
    this.deps.logger.info({ from, version: hex(config.version) }, "heard of a pending reconfiguration");
    // Only an election under way changes: a term in progress goes on (it may be the one that commits it).
    if (this.zab === undefined && !sameView(before, this.electionView())) this.startLooking("heard of a pending reconfiguration");
  }

  /**
   * A peer says a newer configuration than ours is in force (ZooKeeper adopts it from a
   * notification too): only a committed configuration is ever in force, so it is safe to run with.
   * Peers are trusted here as everywhere in the quorum protocol (mutual TLS keeps strangers out).
   * A server that was down, or cut off, while the membership changed learns it here — that it was
   * removed, or whom to vote with now.
   */
  private adopt(from: number, offered: { version: number; text: string }): void {
    const config = this.parseOffered(from, offered);
    if (config === undefined) return;
    this.deps.logger.info({ from, version: hex(config.version) }, "adopting a newer configuration from a peer");
    this.activate(config);
    this.configChanged = false;
    const zab = this.zab;
    if (zab === undefined) this.startLooking("a newer configuration is in force");
    else if (zab instanceof Leader) this.startLooking("a newer configuration is in force elsewhere");
    else {
      const changed = this.placeChangedFor(zab);
      if (changed !== undefined) this.startLooking(changed);
    }
  }

  /** A configuration a peer's notification carries, or undefined (and a warning) if malformed. */
  private parseOffered(from: number, offered: { version: number; text: string }): ClusterConfig | undefined {
    if (!Number.isSafeInteger(offered.version)) return undefined;
    try {
      return { version: offered.version, members: parseMembership(offered.text).members };
    } catch (error) {
      if (!(error instanceof ZkError)) throw error;
      this.deps.logger.warn({ from, version: hex(offered.version) }, "a peer sent a malformed configuration: ignored");
      return undefined;
    }
  }

  onQuorumMessage(from: number, message: QuorumMessage): void {
    if (this.zab instanceof Leader || (this.zab && from === this.leaderId)) return this.step({ type: "message", from, message });
    if (this.zab) return;
    // A learner that decided before we did is already talking to us: hold its messages until our
    // own decision — a Leader core gets them, any other outcome closes the stream.
    const held = this.heldLearnerMessages.get(from) ?? [];
    if (held.length >= HELD_LEARNER_MESSAGES_MAX) return;
    held.push(message);
    this.heldLearnerMessages.set(from, held);
  }

  onQuorumStreamClosed(peer: number): void {
    this.heldLearnerMessages.delete(peer);
    if (this.zab) this.step({ type: "disconnected", peer });
  }

  // ---- what the client side asks of the cluster (through ClusterBroadcast / ClusterSessionActivity)

  /** `authInfo`: the ids of the client's connection, with which the leader's prep checks ACLs. */
  submitWrite(
    sessionId: bigint,
    cxid: number,
    request: WriteRequest | { op: "createSession"; timeoutMs: number; password: Uint8Array },
    authInfo: readonly Id[],
  ): void {
    const zab = this.zab;
    if (!zab?.serving) return; // the connection is being ended; its client retries elsewhere
    if (zab instanceof Leader) this.proposeRequest(zab, sessionId, cxid, request, authInfo, this.deps.config.serverId);
    else this.handle(zab.forward(sessionId, cxid, encodeForwardedRequest(request, authInfo)), this.generation);
  }

  /**
   * A client resumes `sessionId` here. The leader decides whether the session is alive and makes
   * this server its owner, so that a request still coming from the server the client left is
   * refused; the connect completes only after that (ZooKeeper's revalidateSession).
   */
  revalidateSession(sessionId: bigint, timeoutMs: number, done: (outcome: RevalidationOutcome) => void): void {
    const zab = this.zab;
    if (!zab?.serving) return done("unavailable");
    if (zab instanceof Leader) return done(this.revalidate(sessionId, timeoutMs, this.deps.config.serverId) ? "valid" : "expired");
    const waiting = this.pendingRevalidations.get(sessionId);
    if (waiting) return void waiting.push(done);
    this.pendingRevalidations.set(sessionId, [done]);
    this.handle(zab.revalidate(sessionId, timeoutMs), this.generation);
  }

  expireSession(sessionId: bigint): void {
    const zab = this.zab;
    if (!(zab instanceof Leader) || !zab.serving) return;
    const zxid = zab.allocateZxid();
    this.proposeTxn(zab, { sessionId, cxid: 0, zxid, timeMs: this.deps.clock.nowMs() }, this.prep!.prepareCloseSession(sessionId, zxid));
  }

  requestSync(ready: (zxid: number) => void): void {
    const zab = this.zab;
    if (!zab?.serving) return;
    // Even on the leader a sync waits for a quorum to confirm it still leads: a paused leader
    // that resumes must not answer from stale state.
    const syncId = this.nextSyncId++;
    this.pendingSyncs.set(syncId, ready);
    this.handle(zab.requestSync(syncId), this.generation);
  }

  touchSession(sessionId: bigint, timeoutMs: number): void {
    const zab = this.zab;
    if (this.readOnlySessions) this.readOnlySessions.touch(sessionId, timeoutMs);
    else if (zab instanceof Leader) this.deps.tracker.touch(sessionId, timeoutMs);
    else if (zab) zab.touch(sessionId, timeoutMs);
  }

  forgetSession(sessionId: bigint): void {
    this.deps.tracker.forget(sessionId);
    this.readOnlySessions?.forget(sessionId);
  }

  // ---- election

  private startLooking(reason: string): void {
    if (this.stopped) return;
    this.generation += 1;
    this.zab = undefined;
    this.prep = undefined;
    this.cleanup = undefined;
    this.leaderId = undefined;
    this.pendingSyncs.clear();
    const revalidations = [...this.pendingRevalidations.values()].flat();
    this.pendingRevalidations.clear();
    for (const done of revalidations) done("unavailable");
    this.deps.broadcast.servingFlag = false;
    this.deps.transport.stopFollowing();
    this.deps.pipeline.reset();
    this.lookingSinceMs = this.deps.clock.nowMs();
    this.unavailableSinceMs ??= this.lookingSinceMs;
    this.activateLoggedCommitted();
    this.updateTransportMembers();
    this.deps.metrics?.lookingStarted();
    this.setRole("looking", { reason });
    let view = this.electionView();
    if (view === undefined) {
      // Removed by a reconfiguration (or never added): no vote, no term, no clients. It still
      // talks as an observer would, never following anyone: the others hear the configuration it
      // knows, and it hears theirs (it learns if it is added again).
      if (this.outsideSince !== this.committedConfig.version) {
        this.outsideSince = this.committedConfig.version;
        this.deps.logger.warn({ version: hex(this.committedConfig.version) }, "not a member of the configuration in force: not serving");
      }
      const inForce = quorumOf(this.committedConfig);
      view = {
        role: "observer",
        quorum: new JointQuorum([new QuorumVerifier(inForce.voters, [...inForce.observers, this.deps.config.serverId])]),
      };
    }
    const election = this.electionFor(view.role, view.quorum);
    const self = { lastZxid: this.deps.database.lastLoggedZxid(), currentEpoch: this.epochs.currentEpoch };
    this.handleElection(election.startLooking(self, this.deps.clock.nowMs()));
  }

  /**
   * Our place in every configuration in play: the one in force and each logged reconfiguration
   * not known committed (either may be the next leader's); undefined when we are in none of them.
   */
  private electionView(): { role: MemberRole; quorum: JointQuorum } | undefined {
    const quorum = new JointQuorum(this.configsInPlay.map(quorumOf));
    const me = this.deps.config.serverId;
    const role = quorum.isVoter(me) ? "participant" : quorum.observers.has(me) ? "observer" : undefined;
    return role === undefined ? undefined : { role, quorum };
  }

  /** Neither in the configuration in force nor in one logged and pending (which may yet come into force). */
  private outsideEveryConfig(): boolean {
    return roleOf(this.committedConfig, this.deps.config.serverId) === undefined && this.electionView() === undefined;
  }

  /**
   * The reconfiguration logged here that may not be committed: the last one logged, if it is not in
   * force. Only the last can be: a leader proposes one only once the one before it has committed,
   * and commits its whole history before it serves (see activateLoggedCommitted).
   */
  private pendingReconfigs(): PendingReconfig[] {
    return reconfigsIn(this.recentLog.unapplied(), this.committedConfig.version)
      .slice(-1)
      .map((config) => ({ zxid: config.version, config }));
  }

  /**
   * Brings into force a logged reconfiguration that another logged after it proves committed (the
   * leader that proposed the later one had the earlier one committed). Without this a server
   * restarted before it applied them — say after 3 → 5 → 3 voters and no snapshot since — would
   * count every one of them as pending and need a quorum of each to elect, which may no longer
   * exist.
   */
  private activateLoggedCommitted(): void {
    const logged = reconfigsIn(this.recentLog.unapplied(), this.committedConfig.version);
    if (logged.length >= 2) this.activate(logged[logged.length - 2]!);
  }

  /**
   * The transport dials the members of every configuration in play: the one in force and those
   * pending (a voter of a pending one must hear this server's notifications), each id once — as a
   * participant if any of them makes it one, else as the configuration in force lists it. This
   * server's own entry is left out: the transport keeps the one it bound.
   */
  private updateTransportMembers(): void {
    const members = new Map<number, MemberAddress>();
    for (const config of this.configsInPlay) {
      for (const member of config.members) {
        if (member.serverId === this.deps.config.serverId) continue;
        const known = members.get(member.serverId);
        if (known === undefined || (known.type === "observer" && member.type === "participant")) members.set(member.serverId, member);
      }
    }
    this.deps.transport.updateMembers?.([...members.values()]);
  }

  /** Logged pending reconfigurations and those heard of, by version, each once. */
  private reconfigsInPlay(): ClusterConfig[] {
    const byVersion = new Map<number, ClusterConfig>();
    for (const [version, config] of this.heardReconfigs) if (version > this.committedConfig.version) byVersion.set(version, config);
    for (const { config } of this.pendingReconfigs()) byVersion.set(config.version, config);
    return [...byVersion.values()].sort((a, b) => a.version - b.version);
  }

  private electionFor(role: MemberRole, quorum: JointQuorum): LeaderElection {
    if (this.election) {
      this.election.reconfigure(role, quorum);
      return this.election;
    }
    const { config } = this.deps;
    // A lost notification is re-sent by the transport when its link comes back (as ZooKeeper does), so
    // a short cap on the resend interval only bounds how long a partitioned voter stays unheard.
    // A lone voter has nobody whose better vote it could wait for: it decides at once.
    const alone = quorum.voters.size === 1 && quorum.observers.size === 0;
    const options: FastLeaderElectionOptions = {
      myId: config.serverId,
      role,
      quorum,
      maxNotificationIntervalMs: 4 * config.tickMs + 1_000,
      ...(alone ? { finalizeWaitMs: 0 } : {}),
    };
    this.election = this.deps.election?.(options) ?? new FastLeaderElection(options);
    return this.election;
  }

  private handleElection(output: ElectionOutput): void {
    // Every notification carries our configuration in force, for a server that missed it, and the
    // latest reconfiguration we logged and have not seen committed, for a server it makes a voter.
    let views: Pick<Notification, "config" | "pending"> = {};
    if (this.deps.config.membershipText !== "" && output.send.length > 0) {
      const latestLogged = this.pendingReconfigs().at(-1)?.config;
      views = {
        config: { version: this.committedConfig.version, text: configText(this.committedConfig) },
        ...(latestLogged === undefined ? {} : { pending: { version: latestLogged.version, text: configText(latestLogged) } }),
      };
    }
    for (const { to, notification } of output.send) {
      this.deps.logger.debug({ to, notification: { ...notification, vote: { ...notification.vote } } }, "notification sent");
      this.deps.transport.sendNotification(to, { ...notification, ...views });
    }
    // A server outside every configuration in play never takes part in a term.
    if (output.decided && !this.outsideEveryConfig()) this.startTerm(output.decided);
  }

  private startTerm(decision: Decision): void {
    const generation = ++this.generation;
    // A new core is built from what is durable: let the previous term's writes land first. (If one
    // of them failed, the queue has reported it and no term may start on top of it: never called.)
    this.persist.whenIdle(() => {
      if (generation === this.generation && !this.stopped) this.buildCore(decision, generation);
    });
  }

  private buildCore(decision: Decision, generation: number): void {
    const { config, database, transport } = this.deps;
    const state = decision.state === "leading" ? "leading" : decision.state === "following" ? "following" : "observing";
    this.leaderId = decision.leader;
    this.termStartedMs = this.deps.clock.nowMs();
    // ZooKeeper times an election for its voters (Leader.lead, Follower.followLeader), not observers.
    if (state !== "observing") this.deps.metrics?.electionDecided(this.termStartedMs - this.lookingSinceMs);
    this.proposalSizeBytes = { last: -1, min: -1, max: -1 };
    this.setRole(state, { leader: decision.leader, round: decision.round });
    this.elections.push({
      decidedAtMs: this.termStartedMs,
      tookMs: this.termStartedMs - this.lookingSinceMs,
      leader: decision.leader,
      state,
      round: decision.round,
    });
    if (this.elections.length > ELECTIONS_SEEN_MAX) this.elections.shift();
    const options = {
      myId: config.serverId,
      quorum: quorumOf(this.committedConfig),
      pendingConfigs: this.pendingReconfigs().map((p): PendingConfig => ({ zxid: p.zxid, quorum: quorumOf(p.config) })),
      tickMs: config.tickMs,
      initLimitTicks: config.initLimitTicks,
      syncLimitTicks: config.syncLimitTicks,
      committedLogRecordsMax: config.commitLogCount,
      durable: { ...this.epochs, log: this.recentLog.snapshot() },
      state: {
        snapshot: () => ({ zxid: database.tree.lastProcessedZxid, bytes: encodeSnapshot(database.tree) }),
        lastZxid: () => database.tree.lastProcessedZxid,
      },
      nowMs: this.deps.clock.nowMs(),
      ...(this.deps.unsafeCommitOnOwnAck === true ? { unsafeCommitOnOwnAck: true } : {}),
    };
    if (state === "leading") {
      this.prep = new Prep(database.tree, this.deps.prepOptions);
      this.zab = createZab({ kind: "leader" }, options);
    } else {
      transport.followLeader(decision.leader);
      this.zab = createZab({ kind: state === "following" ? "follower" : "observer", leaderId: decision.leader }, options);
    }
    this.handle(this.zab.start(), generation);
    const held = [...this.heldLearnerMessages];
    this.heldLearnerMessages.clear();
    for (const [from, messages] of held) {
      if (state !== "leading") {
        transport.closeLearner(from);
        continue;
      }
      for (const message of messages) if (generation === this.generation) this.step({ type: "message", from, message });
    }
  }

  private setRole(role: PeerRoleState, details: Record<string, unknown>): void {
    this.roleState = role;
    this.deps.logger.info({ role, ...details }, "role changed");
  }

  // ---- Zab

  private onTick(): void {
    if (this.stopped) return;
    const nowMs = this.deps.clock.nowMs();
    if (this.zab) {
      this.step({ type: "tick", nowMs });
      if (this.zab?.phase === "discovery") this.tickReadOnly(nowMs);
      if (this.zab instanceof Leader && this.zab.serving) {
        for (const sessionId of this.deps.tracker.collectExpired()) {
          this.deps.logger.info({ session: "0x" + BigInt.asUintN(64, sessionId).toString(16) }, "session expired");
          this.deps.pipeline.expire(sessionId);
        }
        // An expiry proposal may have ended the term: look again.
        const zab = this.zab;
        if (zab instanceof Leader && zab.serving) this.cleanUp(zab, nowMs);
      }
    } else if (this.roleState === "looking") {
      if (this.election) this.handleElection(this.election.tick(nowMs));
      if (this.zab === undefined) this.tickReadOnly(nowMs);
      // A server outside the configuration settles on whoever leads and then hears nothing more:
      // it asks again now and then, so that a reconfiguration adding it back reaches it.
      const asking = this.zab === undefined && this.election?.decision !== undefined && nowMs - this.lookingSinceMs >= 4 * this.deps.config.tickMs + 1_000;
      if (asking && this.outsideEveryConfig()) {
        this.startLooking("outside the configuration: asking the others again");
      }
    }
  }

  // ---- read-only mode (ZooKeeper's ReadOnlyZooKeeperServer)

  /**
   * Called while looking, and while a decided term is still in discovery: a would-be leader whose
   * voters went away after voting for it waits there up to initLimit, as cut off as a looking
   * member (ZooKeeper serves read-only only while looking, and leaves such clients without service
   * for initLimit). Discovery leaves the tree alone; read-only mode ends when synchronization begins.
   * It starts once the member has been out of service max(2 s, a tick).
   */
  private tickReadOnly(nowMs: number): void {
    const { config, pipeline, logger } = this.deps;
    if (!config.readOnlyModeEnabled || this.stopped) return;
    if (this.readOnlySessions === undefined) {
      // A lone voter is its own quorum: it has nothing to be cut off from.
      const inForce = quorumOf(this.committedConfig);
      // Not a member (removed): nothing of ours to serve, read-only or not.
      if (roleOf(this.committedConfig, config.serverId) === undefined) return;
      const alone = inForce.voters.size === 1 && inForce.isVoter(config.serverId);
      // Since it last served, not since this election: a term that failed in discovery (its voters
      // gone) and the election after it are one outage to the clients.
      const outOfServiceMs = nowMs - (this.unavailableSinceMs ?? this.lookingSinceMs);
      if (alone || outOfServiceMs < Math.max(READ_ONLY_AFTER_MS_MIN, config.tickMs)) return;
      this.readOnlySessions = new SessionTracker(config.tickMs, () => this.deps.clock.nowMs());
      logger.info({ outOfServiceMs, role: this.roleState }, "serving read-only sessions");
      return;
    }
    for (const sessionId of this.readOnlySessions.collectExpired()) {
      logger.info({ session: "0x" + BigInt.asUintN(64, sessionId).toString(16) }, "read-only session expired");
      pipeline.endLocally(sessionId);
    }
  }

  /** Ends every read-only session's connection: their clients go and find the quorum. */
  private leaveReadOnly(reason: string): void {
    if (this.readOnlySessions === undefined) return;
    this.readOnlySessions = undefined;
    this.deps.pipeline.reset();
    this.deps.logger.info({ reason }, "read-only mode ended");
  }

  private step(input: ZabInput): void {
    const zab = this.zab;
    if (!zab) return;
    this.handle(zab.step(input), this.generation);
  }

  /** Feed an answer to a persist back, unless the core that asked is gone. */
  private answer(generation: number, input: ZabInput): void {
    if (generation !== this.generation || this.stopped) return;
    this.step(input);
  }

  private handle(ready: ZabReady, generation: number): void {
    if (generation !== this.generation) return;
    const zab = this.zab;
    assert(zab, "a Ready without a core");
    // Before any of this Ready's persists: synchronization may replace or truncate the tree.
    if (zab.phase !== "discovery") this.leaveReadOnly("a quorum is syncing");
    const wasServing = this.deps.broadcast.servingFlag;
    const metrics = this.deps.metrics;
    if (metrics && ready.apply.length > 0) {
      if (zab instanceof Leader) metrics.committed(ready.apply.length);
      else if (wasServing) metrics.learnerCommitsReceived(ready.apply.length);
    }
    // Sends first: none waits for this Ready's persists (the core holds back what does), and a
    // leader's proposal should be on its way before its own log write starts — the two overlap.
    for (const { to, message } of ready.send) {
      if (zab instanceof Leader) this.deps.transport.sendToLearner(to, message);
      else this.deps.transport.sendToLeader(message);
    }
    for (const action of ready.persist) {
      if (metrics && wasServing && action.kind === "appendLog" && !(zab instanceof Leader)) metrics.learnerProposalsReceived(1);
      this.carryOut(action, generation);
    }
    for (const record of ready.apply) {
      const txn = decodeTxn(record.record);
      if (!(txn.header.zxid === record.zxid)) assert(false, `record ${hex(record.zxid)} holds txn ${hex(txn.header.zxid)}`);
      this.deps.database.apply(txn);
      this.prep?.applied(record.zxid);
      this.recentLog.applied(record.zxid);
      if (txn.body.type === "reconfig") this.activate(configOfTxnData(txn.body.data, record.zxid));
      // The leader owns expiry: a session is tracked from the moment it exists, wherever it was opened.
      if (zab instanceof Leader && txn.body.type === "createSession") this.deps.tracker.touch(txn.header.sessionId, txn.body.timeoutMs);
    }
    for (const event of ready.events) {
      this.deps.logger.info(event, `zab ${event.event}`);
      if (event.event === "syncMode") this.deps.metrics?.learnerSyncSent(event.mode);
      // Latecomers learn the leader from our answers: they should carry the epoch it established.
      const decision = this.election?.decision;
      // Every member must answer with the same vote, or a joiner never sees a quorum agree on one.
      const established = event.event === "newEpoch" || (event.event === "phase" && event.phase === "broadcast");
      if (established && decision) this.election!.settle({ ...decision, vote: { ...decision.vote, peerEpoch: event.epoch } });
    }
    for (const id of ready.disconnect) this.deps.transport.closeLearner(id);
    for (const touch of ready.touches) this.deps.tracker.touch(touch.sessionId, touch.timeoutMs);
    for (const done of ready.syncsDone) {
      const ready_ = this.pendingSyncs.get(done.syncId);
      this.pendingSyncs.delete(done.syncId);
      ready_?.(done.zxid);
    }
    for (const { sessionId, valid } of ready.revalidated) {
      const waiting = this.pendingRevalidations.get(sessionId) ?? [];
      this.pendingRevalidations.delete(sessionId);
      for (const done of waiting) done(valid ? "valid" : "expired");
    }
    this.deps.broadcast.servingFlag = ready.serving;
    if (ready.serving && !wasServing) this.beginServing(zab);
    if (zab instanceof Leader) {
      for (const { from, sessionId, timeoutMs } of ready.revalidations) {
        if (generation !== this.generation) break;
        this.handle(zab.answerRevalidation(from, sessionId, this.revalidate(sessionId, timeoutMs, from)), generation);
      }
      for (const forwarded of ready.forwarded) {
        // A learner forwards only once it serves, which needs this leader to be established.
        if (generation !== this.generation || !zab.canPropose) break;
        let decoded;
        try {
          decoded = decodeForwardedRequest(forwarded.request);
        } catch (error) {
          if (!(error instanceof ZkError)) throw error;
          // The learner's client still needs its answer, in order: an error txn carries it.
          const zxid = zab.allocateZxid();
          this.proposeTxn(
            zab,
            { sessionId: forwarded.sessionId, cxid: forwarded.cxid, zxid, timeMs: this.deps.clock.nowMs() },
            { type: "error", err: ZkErrorCode.MARSHALLINGERROR },
          );
          continue;
        }
        this.proposeRequest(zab, forwarded.sessionId, forwarded.cxid, decoded.request, decoded.authInfo, forwarded.from);
      }
    }
    if (ready.stepDown && generation === this.generation) {
      this.deps.logger.warn({ reason: ready.stepDown.reason, role: this.roleState }, "zab stepped down");
      this.startLooking(ready.stepDown.reason);
      return;
    }
    if (this.configChanged && generation === this.generation) {
      this.configChanged = false;
      const changed = this.placeChangedFor(zab);
      if (changed !== undefined) this.startLooking(changed);
    }
  }

  /** A configuration came into force: the new one is in force here from now on (each server keeps it in its tree). */
  private activate(config: ClusterConfig): void {
    if (config.version <= this.committedConfig.version) return;
    this.committedConfig = config;
    for (const version of this.heardReconfigs.keys()) if (version <= config.version) this.heardReconfigs.delete(version);
    this.configChanged = true;
    this.updateTransportMembers();
    const members = config.members.map((m) => `${m.serverId}:${m.type}`).join(",");
    this.deps.logger.info({ version: hex(config.version), members }, "configuration in force");
  }

  /**
   * A learner whose role the configuration in force changed, or whose leader no longer votes in
   * it, re-elects (ZooKeeper's learner restarts when a reconfiguration changes its role). A leader
   * that no longer votes steps down inside its core.
   */
  private placeChangedFor(zab: ZabCore): string | undefined {
    if (zab instanceof Leader) return undefined;
    const me = roleOf(this.committedConfig, this.deps.config.serverId);
    const termRole = zab.kind === "observer" ? "observer" : "participant";
    if (me !== termRole) return me === undefined ? "removed from the configuration" : `now ${me === "participant" ? "a participant" : "an observer"}`;
    if (this.leaderId !== undefined && !quorumOf(this.committedConfig).isVoter(this.leaderId)) return "the leader is no voter of the configuration in force";
    return undefined;
  }

  private beginServing(zab: ZabCore): void {
    const { database, tracker, logger } = this.deps;
    if (zab instanceof Leader) {
      // The leader owns expiry now: every session gets a full timeout from this moment. Owners
      // are learned afresh: every client reconnects when a term begins.
      tracker.beginLeadership();
      for (const [sessionId, record] of database.tree.sessions) tracker.touch(sessionId, record.timeoutMs);
      this.cleanup = new CleanupScanner({ intervalMs: this.deps.config.containerCheckIntervalMs, maxPerMinute: this.deps.config.containerMaxPerMinute });
    }
    const now = this.deps.clock.nowMs();
    this.servingSinceMs = now;
    const metrics = this.deps.metrics;
    if (metrics) {
      if (!(zab instanceof Leader)) metrics.learnerSynced(this.roleState === "observing" ? "observer" : "follower", now - this.termStartedMs);
      if (this.unavailableSinceMs !== undefined) metrics.servingAgain(now - this.unavailableSinceMs, zab instanceof Leader);
    }
    this.unavailableSinceMs = undefined;
    this.heardReconfigs.clear();
    logger.info({ role: this.roleState, epoch: zab.epoch, lastZxid: hex(database.tree.lastProcessedZxid) }, "serving clients");
    this.releaseServingWaiters();
  }

  private carryOut(action: PersistAction, generation: number): void {
    const { database, storage } = this.deps;
    switch (action.kind) {
      case "appendLog": {
        // A learner's records are views into received frames: keep a copy, not the whole frame.
        // Its own ArrayBuffer, not a pooledBytes view: the recent log keeps up to commitLogCount
        // records, and a pooled one would pin a whole 8 KiB pool slab for as long.
        const record = { zxid: action.zxid, record: action.record.slice() };
        this.recentLog.append(record);
        this.persist.append(
          (done) => storage.log.append(action.zxid, action.record, done),
          () => this.answer(generation, { type: "logDurable", zxid: action.zxid }),
        );
        return;
      }
      case "truncateLog":
        // The tree holds committed txns only, and a committed txn is never truncated.
        if (!(database.tree.lastProcessedZxid <= action.zxid))
          assert(false, `TRUNC to ${hex(action.zxid)} would cut committed txns (tree at ${hex(database.tree.lastProcessedZxid)})`);
        this.recentLog.truncateAfter(action.zxid);
        this.persist.exclusive(
          (done) => storage.log.truncateAfter(action.zxid, done),
          // The log's new end; records under the snapshot may be purged, so the tree's zxid counts too.
          () =>
            this.answer(generation, {
              type: "truncated",
              zxid: Math.min(action.zxid, Math.max(storage.log.lastAppendedZxid(), database.tree.lastProcessedZxid)),
            }),
        );
        return;
      case "installSnapshot":
        // The tree is replaced now so that what the leader sends next applies on top of it.
        database.replaceTree(action.zxid, action.snapshot);
        {
          const inTree = configOfTree(database.tree);
          if (inTree !== undefined) this.activate(inTree);
        }
        this.recentLog.reset(action.zxid);
        this.persist.exclusive(
          (done) => storage.snapshots.install(action.zxid, action.snapshot, done),
          () => this.answer(generation, { type: "snapshotInstalled", zxid: action.zxid }),
        );
        return;
      case "acceptedEpoch":
      case "currentEpoch": {
        const which = action.kind === "acceptedEpoch" ? "accepted" : "current";
        this.persist.exclusive(
          (done) => storage.stable.saveEpoch(which, action.epoch, done),
          () => {
            if (which === "accepted") this.epochs.acceptedEpoch = action.epoch;
            else this.epochs.currentEpoch = action.epoch;
            this.answer(generation, { type: "epochDurable", which, epoch: action.epoch });
          },
        );
        return;
      }
    }
  }

  /**
   * Leader: whether `sessionId` exists and is not being expired. Every txn the leader proposed
   * before is applied by now (a client learns its session only once its server applied the
   * createSession, after the leader committed and applied it), so the tree is the truth here.
   */
  private sessionLive(sessionId: bigint): boolean {
    return this.deps.database.tree.sessions.has(sessionId) && !this.deps.tracker.isClosing(sessionId);
  }

  /** Leader: whether `sessionId` is alive; if so, `owner` is where its client is now. */
  private revalidate(sessionId: bigint, timeoutMs: number, owner: number): boolean {
    const { tracker } = this.deps;
    if (!this.sessionLive(sessionId)) return false;
    tracker.setOwner(sessionId, owner);
    tracker.touch(sessionId, timeoutMs);
    return true;
  }

  /** `origin`: the server whose client sent the request (this one, or the learner that forwarded it). */
  private proposeRequest(
    leader: Leader,
    sessionId: bigint,
    cxid: number,
    request: WriteRequest | { op: "createSession"; timeoutMs: number; password: Uint8Array },
    authInfo: readonly Id[],
    origin: number,
  ): void {
    const zxid = leader.allocateZxid();
    let body: TxnBody;
    if (request.op === "createSession") {
      this.deps.tracker.setOwner(sessionId, origin);
      body = { type: "createSession", timeoutMs: request.timeoutMs, password: request.password };
    } else if (request.op !== "close" && !this.sessionLive(sessionId)) {
      // ZooKeeper's checkSession: a request reaching the leader after it expired the session (its
      // server was slow to relay pings, or held the request) must not take effect. Proposed after
      // the closeSession, an ephemeral create would outlive its session forever. A close is
      // proposed all the same, as in ZooKeeper: closing twice is harmless.
      body = { type: "error", err: ZkErrorCode.SESSIONEXPIRED };
    } else if (!this.deps.tracker.claim(sessionId, origin)) {
      // Sent on a connection its client has left: the error txn answers it, in order, where it came from.
      body = { type: "error", err: ZkErrorCode.SESSIONMOVED };
    } else if (request.op === "reconfig" && this.deps.config.membershipText !== "") {
      const planned = this.planReconfig(leader, request, zxid, authInfo);
      body = planned.body;
      if (planned.config !== undefined) {
        this.proposeTxn(leader, { sessionId, cxid, zxid, timeMs: this.deps.clock.nowMs() }, body, planned.config);
        return;
      }
    } else {
      body = this.prep!.prepare(request, sessionId, zxid, authInfo);
    }
    this.proposeTxn(leader, { sessionId, cxid, zxid, timeMs: this.deps.clock.nowMs() }, body);
  }

  /** The reconfig txn (or the error ZooKeeper answers) and, if it is one, the configuration it installs. */
  private planReconfig(leader: Leader, request: ReconfigRequest, zxid: number, authInfo: readonly Id[]): { body: TxnBody; config?: ClusterConfig } {
    // ZooKeeper's isQuorumSynced: the leader and its synced followers — participants, as those log
    // the proposal; an observer about to be promoted does not, and could not vote for it.
    const synced = [
      this.deps.config.serverId,
      ...leader
        .learners()
        .filter((l) => l.role === "participant" && (l.stage === "synced" || l.stage === "upToDate"))
        .map((l) => l.sid),
    ];
    let config: ClusterConfig;
    try {
      config = planReconfig(
        request,
        { enabled: this.deps.config.reconfigEnabled, current: this.committedConfig, inFlight: leader.reconfigInFlight, synced },
        zxid,
      );
    } catch (error) {
      if (!(error instanceof ZkError)) throw error;
      return { body: { type: "error", err: error.errno } };
    }
    const body = this.prep!.prepareReconfig(reconfigTxnData(config), authInfo);
    return body.type === "reconfig" ? { body, config } : { body };
  }

  /**
   * Leader: when a cleanup scan is due, propose a server-made delete (session 0, as ZooKeeper's
   * deleteContainer) for each node it picked that prep still finds deletable. Candidates left over
   * when the proposal window is full wait for the next scan.
   */
  private cleanUp(leader: Leader, nowMs: number): void {
    const scanner = this.cleanup;
    const prep = this.prep;
    if (!scanner || !prep) return;
    const paths = scanner.poll(this.deps.database.tree, nowMs);
    const deleted: string[] = [];
    for (const path of paths) {
      // A proposal can end this term (a failed write steps down): stop with it.
      if (this.zab !== leader || !leader.canPropose) break;
      const prepared = prep.prepareDeleteContainer(path, nowMs, () => leader.allocateZxid());
      if (!prepared) continue;
      deleted.push(path);
      this.proposeTxn(leader, { sessionId: 0n, cxid: 0, zxid: prepared.zxid, timeMs: nowMs }, prepared.body);
    }
    if (deleted.length > 0) this.deps.logger.info({ count: deleted.length, first: deleted[0] }, "deleting empty containers and expired TTL nodes");
  }

  private proposeTxn(leader: Leader, header: Txn["header"], body: TxnBody, config?: ClusterConfig): void {
    const record = encodeTxn({ header, body });
    const sizes = this.proposalSizeBytes;
    const bytes = record.byteLength;
    this.proposalSizeBytes = { last: bytes, min: sizes.min < 0 ? bytes : Math.min(sizes.min, bytes), max: Math.max(sizes.max, bytes) };
    this.deps.metrics?.proposed();
    this.handle(leader.propose(header.zxid, record, config === undefined ? undefined : quorumOf(config)), this.generation);
  }

  private fatal(error: unknown): void {
    if (this.stopped) return;
    this.stopped = true;
    this.stopTicking?.();
    this.deps.onFatal(error);
    this.releaseServingWaiters();
  }
}

/** Txns between a learner's last ack and our last proposal (a different epoch's ack: all of this epoch's). */
function lagOf(lastProposedZxid: number, ackedZxid: number): number | undefined {
  if (ackedZxid < 0) return undefined;
  if (epochOf(ackedZxid) !== epochOf(lastProposedZxid)) return lastProposedZxid % 2 ** 32;
  return Math.max(0, lastProposedZxid - ackedZxid);
}

/** The pipeline's WriteBroadcast in a cluster: whatever the current term's role does with writes. */
export class ClusterBroadcast implements WriteBroadcast {
  private peer: QuorumPeer | undefined;
  /** Mirrors the current core's `serving`; clients are accepted only while it is true. */
  servingFlag = false;

  bind(peer: QuorumPeer): void {
    this.peer = peer;
  }

  get serving(): boolean {
    return this.servingFlag;
  }

  get readOnly(): boolean {
    return this.peer?.readOnly ?? false;
  }

  submitWrite(sessionId: bigint, cxid: number, request: WriteRequest, authInfo: readonly Id[]): void {
    this.peer?.submitWrite(sessionId, cxid, request, authInfo);
  }

  submitCreateSession(sessionId: bigint, timeoutMs: number, password: Uint8Array): void {
    this.peer?.submitWrite(sessionId, 0, { op: "createSession", timeoutMs, password }, []);
  }

  submitExpireSession(sessionId: bigint): void {
    this.peer?.expireSession(sessionId);
  }

  requestSync(ready: (zxid: number) => void): void {
    this.peer?.requestSync(ready);
  }

  revalidateSession(sessionId: bigint, timeoutMs: number, done: (outcome: RevalidationOutcome) => void): void {
    if (this.peer) this.peer.revalidateSession(sessionId, timeoutMs, done);
    else done("unavailable");
  }
}

/** Session liveness in a cluster: the leader's tracker directly, or forwarded in learners' pings. */
export class ClusterSessionActivity implements SessionActivity {
  private peer: QuorumPeer | undefined;

  bind(peer: QuorumPeer): void {
    this.peer = peer;
  }

  touch(sessionId: bigint, timeoutMs: number): void {
    this.peer?.touchSession(sessionId, timeoutMs);
  }

  forget(sessionId: bigint): void {
    this.peer?.forgetSession(sessionId);
  }
}

/**
 * The configuration a server starts with: its membership text (version 0 unless the text names one),
 * or, for a standalone server (no text), its one member with no addresses.
 */
function staticConfig(config: QuorumPeerConfig): ClusterConfig {
  if (config.membershipText === "") {
    return { version: 0, members: config.servers.map((s) => ({ serverId: s.id, host: "", quorumPort: 0, electionPort: 0, type: s.role })) };
  }
  const { members, version } = parseMembership(config.membershipText);
  return { version: Number(version ?? 0n), members };
}

/** Whether two election views give this server the same role among the same voters and observers. */
function sameView(a: { role: MemberRole; quorum: JointQuorum } | undefined, b: { role: MemberRole; quorum: JointQuorum } | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.role === b.role && a.quorum.sameMembership(b.quorum);
}
