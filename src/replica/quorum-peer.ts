/**
 * One cluster member's host loop (ZooKeeper's QuorumPeer without its threads; etcd raft's node
 * `run` loop): it runs FastLeaderElection until a leader is decided, then one Zab core for that
 * term, and carries out each Ready the cores return, in the order the cores require — sends (none
 * waits on a pending write), durable writes (persist before what depends on them), committed txns
 * into the database, then the rest. Inputs are the transport's messages, the clock's tick and the
 * answers of durable writes; a core that steps down is dropped, every client connection is ended,
 * and the election starts again.
 *
 * What it decides with lives beside it: the role (peer-role.ts), leader write admission
 * (leader-admission.ts), reconfiguration membership (reconfig-membership.ts), read-only mode
 * (read-only-mode.ts), repair (repair.ts) and the tree digest checks (tree-digest-check.ts); durable
 * writes are carried out by durable-writes.ts; what it tells of itself is read through peer-status.ts.
 */
import { hex64 } from "../common/hex.js";
import { assert } from "../common/assert.js";
import type { MemberRole } from "../common/membership.js";
import { zabLimits } from "../consensus/constants.js";
import type { ZabInput, ZabReady } from "../consensus/core-io.js";
import type { QuorumMessage } from "../consensus/messages.js";
import type { JointQuorum } from "../consensus/quorum.js";
import { FastLeaderElection, type Decision, type ElectionOutput, type FastLeaderElectionOptions } from "../election/fast-leader-election.js";
import type { Notification } from "../election/types.js";
import { encodeSnapshot } from "../store/snapshot-codec.js";
import { decodeTxn } from "../store/txn-codec.js";
import type { Id } from "../store/types.js";
import { formatZxid as hex } from "../store/zxid.js";
import type { RevalidationOutcome, WriteBroadcast } from "./broadcast.js";
import { CoreAnswerWaiters } from "./core-answer-waiters.js";
import { configOfTxnData, quorumOf } from "./cluster-config.js";
import type { AdmittedRequest, LeaderAdmissionFactory } from "./leader-admission.js";
import { beginTerm, LOOKING, termStateOf, type InTerm, type Learning, type PeerRole } from "./peer-role.js";
import { ElectionHistory, type StatusSource } from "./peer-status.js";
import { DurableWrites } from "./durable-writes.js";
import type { Clock, HopTrace, LogSink, PeerPort, ReplicaMetrics, ReplicaStorage, StorageDamage } from "./ports.js";
import type { ReadOnlyMode } from "./read-only-mode.js";
import type { RecentLog } from "./recent-log.js";
import { learnerPlaceChange, mayLead, notificationViews, outsideEveryConfig, type ReconfigMembership } from "./reconfig-membership.js";
import type { RepairState } from "./repair.js";
import type { AnswerStage, ReplicaDatabase } from "./replica-database.js";
import { encodeForwardedRequest } from "./request-codec.js";
import type { SessionTracker } from "./session-tracker.js";
import { TREE_DIVERGED, type TreeDigestCheck, type TreeDigestMessage, type TreeDivergence } from "./tree-digest-check.js";

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
  /** Bytes of proposals in flight the leader allows (proposed and not committed; sent to a follower and not acked). */
  proposalBytesInFlightMax: number;
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
  /** How often a leader sends its learners its tree digest (TREE_DIGEST_INTERVAL_MS unless set). */
  treeDigestIntervalMs?: number;
}

/**
 * The client sessions, as the peer reaches them: the answer stage its applies hand to, and the
 * calls back to an earlier stage of the chain — a step-down (or read-only mode ending) ends every
 * client connection, the leader's expiry closes a session's queue before its closeSession is
 * proposed, and read-only mode ends the read-only sessions that timed out.
 */
export interface ClientSessionControl extends AnswerStage {
  reset(): void;
  /** Marks an expiring session closing; true if its closeSession must be proposed. */
  expire(sessionId: bigint): boolean;
  endLocally(sessionId: bigint): void;
}

export interface QuorumPeerDeps {
  config: QuorumPeerConfig;
  database: ReplicaDatabase;
  storage: ReplicaStorage;
  /** The epochs the storage held at start. */
  epochs: { acceptedEpoch: number; currentEpoch: number };
  /** The log records a new core is built from (kept in memory: the unapplied tail and the DIFF window). */
  recentLog: RecentLog;
  membership: ReconfigMembership;
  readOnly: ReadOnlyMode;
  /** Whether this member repairs state it cannot vouch for (repair.ts). */
  repair: RepairState;
  /** The tree digests the leader sends and its learners compare (tree-digest-check.ts). */
  digests: TreeDigestCheck;
  /** Makes each leading term's write admission (with that term's Prep). */
  admitLeaderWrites: LeaderAdmissionFactory;
  transport: PeerPort;
  /** The answer stage, and the way back to the sessions (see ClientSessionControl). */
  sessions: ClientSessionControl;
  /** The leader's session liveness (it owns expiry while it serves). */
  tracker: SessionTracker;
  logger: LogSink;
  clock: Clock;
  onFatal: (error: unknown) => void;
  /** TEST ONLY (CORRAL_TEST_UNSAFE_SOLO_COMMIT=1): a leader that commits on its own ack alone. */
  unsafeCommitOnOwnAck?: boolean;
  /** Where elections, syncs, proposals and commits are counted (ZooKeeper's ServerMetrics). */
  metrics?: ReplicaMetrics;
  hops?: HopTrace;
  /**
   * SIMULATION ONLY: another election in FastLeaderElection's place (the simulator's oracle, which
   * sometimes picks a leader that is not the most up to date: Zab must stay safe whoever leads).
   */
  election?: (options: FastLeaderElectionOptions) => LeaderElection;
}

export class QuorumPeer implements WriteBroadcast, StatusSource {
  /** Undefined until this server is a member of some configuration it knows (and elects). */
  private election: LeaderElection | undefined;
  private readonly writes: DurableWrites;
  private current: PeerRole = LOOKING;
  /** Bumped whenever a core is dropped: answers to a dropped core's writes are ignored. */
  private generation = 0;
  private stopTicking: (() => void) | undefined;
  private stopped = false;
  /** Mirrors the current core's `serving` as of its last Ready; clients are accepted only while it is true. */
  private acceptingClients = false;
  private readonly waiters = new CoreAnswerWaiters();
  private readonly heldLearnerMessages = new Map<number, QuorumMessage[]>();
  /** When this server last left service (entered LOOKING) while serving or at start; cleared when it serves again. */
  private unavailableSinceMs: number | undefined;
  /** When the current election began, and when the current term's core was built. */
  private lookingSinceMs = 0;
  private termStartedMs = 0;
  /** Called the next time this server begins serving clients (or stops for good). */
  private servingWaiters: (() => void)[] = [];
  readonly elections = new ElectionHistory();

  constructor(private readonly deps: QuorumPeerDeps) {
    const { config } = deps;
    assert(
      config.servers.some((s) => s.id === config.serverId),
      `server ${config.serverId} is in its own config`,
    );
    this.writes = new DurableWrites(deps, (error) => this.fatal(error));
  }

  /** The role this server plays now (its status is read through PeerStatus). */
  get role(): PeerRole {
    return this.current;
  }

  get currentEpoch(): number {
    return this.writes.epochs.currentEpoch;
  }

  /** Whether clients may open sessions here now (as of the current core's last Ready). */
  get serving(): boolean {
    return this.acceptingClients;
  }

  /** Serving read-only sessions instead: cut off from a quorum, with read-only mode on. */
  get readOnly(): boolean {
    return this.deps.readOnly.active;
  }

  /** What this member repairs from its leader (damaged files, a diverged tree); undefined when it holds a good copy. */
  get repairing(): StorageDamage | undefined {
    return this.deps.repair.damage;
  }

  start(): void {
    const intervalMs = Math.max(5, Math.min(TICK_INTERVAL_MS_MAX, Math.floor(this.deps.config.tickMs / 4)));
    this.stopTicking = this.deps.clock.every(intervalMs, () => this.onTick());
    this.unavailableSinceMs = this.deps.clock.nowMs();
    this.startLooking("start");
  }

  /** `ready` once this server serves clients (at once if it does); also when it stops without serving. */
  whenServing(ready: () => void): void {
    if (this.coreServing() || this.stopped) ready();
    else this.servingWaiters.push(ready);
  }

  /** Stops at once; `stopped` once every durable write already asked for has landed. */
  stop(stopped: () => void): void {
    this.leaveReadOnly("stopping");
    this.stopped = true;
    this.stopTicking?.();
    this.releaseServingWaiters();
    this.generation += 1;
    this.current = LOOKING;
    this.writes.whenIdle(stopped);
  }

  // ---- inputs: the transport

  onNotification(notification: Notification): void {
    if (this.stopped) return;
    const { membership, logger, clock } = this.deps;
    logger.debug({ notification: { ...notification, vote: { ...notification.vote } } }, "notification received");
    const inForce = membership.configInForce.version;
    if (notification.config !== undefined && notification.config.version > inForce && membership.adopt(notification.from, notification.config)) {
      this.afterAdopting();
    }
    const pending = notification.pending;
    if (pending !== undefined && pending.version > membership.configInForce.version && membership.hearPending(notification.from, pending)) {
      // Only an election under way changes: a term in progress goes on (it may be the one that commits it).
      if (this.current.state === "looking") this.startLooking("heard of a pending reconfiguration");
    }
    if (notification.config !== undefined && notification.applied !== undefined) {
      const peer = { inForce: notification.config.version, applied: notification.applied };
      if (membership.hearApplied(notification.from, peer) && this.current.state === "looking") {
        this.startLooking("a pending reconfiguration never commits");
      }
    }
    const { repair } = this.deps;
    repair.heardFrom(notification.from, notification.repairing);
    if (repair.active && this.refuseIfUnrepairable()) return;
    if (this.election) this.handleElection(this.election.receive(notification, clock.nowMs()));
  }

  /**
   * A repairing member with too few good copies left for a quorum stops for good (repair.ts) — after
   * lingering for two notification intervals, still telling the others it repairs, so that another
   * damaged member that has not heard it yet learns why nobody can repair it either, and once each
   * voter it counts as repairing has said so again since.
   */
  private refuseIfUnrepairable(): boolean {
    const { repair, membership, clock, logger } = this.deps;
    const refusal = repair.refusal(quorumOf(membership.configInForce), clock.nowMs(), 2 * this.notificationIntervalMaxMs());
    if (refusal?.first === true) logger.error({ damage: refusal.error.damage }, refusal.error.message);
    if (refusal?.due !== true) return false;
    this.fatal(refusal.error);
    return true;
  }

  private notificationIntervalMaxMs(): number {
    return 4 * this.deps.config.tickMs + 1_000;
  }

  /** A newer configuration is in force: whoever leads here may not lead there; a learner whose place changed re-elects. */
  private afterAdopting(): void {
    const role = this.current;
    if (role.state === "looking") this.startLooking("a newer configuration is in force");
    else if (role.state === "leading") this.startLooking("a newer configuration is in force elsewhere");
    else {
      const changed = this.placeChanged(role);
      if (changed !== undefined) this.startLooking(changed);
    }
  }

  onQuorumMessage(from: number, message: QuorumMessage): void {
    const role = this.current;
    // The hosts' own check: the Zab cores never see it.
    if (message.type === "treeDigest") {
      const divergence =
        role.state !== "looking" && role.state !== "leading" && from === role.leaderId ? this.deps.digests.heard(message.zxid, message.digest) : undefined;
      if (divergence !== undefined) this.divergedFromLeader(divergence);
      return;
    }
    if (role.state === "leading" || (role.state !== "looking" && from === role.leaderId)) return this.step({ type: "message", from, message });
    if (role.state !== "looking") return;
    // A learner that decided before we did is already talking to us: hold its messages until our
    // own decision — a Leader core gets them, any other outcome closes the stream.
    const held = this.heldLearnerMessages.get(from) ?? [];
    if (held.length >= HELD_LEARNER_MESSAGES_MAX) return;
    held.push(message);
    this.heldLearnerMessages.set(from, held);
  }

  onQuorumStreamClosed(peer: number): void {
    this.heldLearnerMessages.delete(peer);
    if (this.current.state !== "looking") this.step({ type: "disconnected", peer });
  }

  // ---- inputs: the clock

  private onTick(): void {
    if (this.stopped) return;
    const { clock, tracker, logger, sessions, config } = this.deps;
    const nowMs = clock.nowMs();
    if (this.deps.repair.lingering && this.refuseIfUnrepairable()) return;
    if (this.current.state !== "looking") {
      this.step({ type: "tick", nowMs });
      // Read afresh after anything that may carry out a Ready: a Ready can end the term.
      let role = this.role;
      if (role.state !== "looking" && role.zab.phase === "discovery") this.tickReadOnly(nowMs);
      role = this.role;
      if (role.state === "leading" && role.zab.serving) {
        for (const sessionId of tracker.collectExpired()) {
          logger.info({ session: hex64(sessionId) }, "session expired");
          if (sessions.expire(sessionId)) this.expireSession(sessionId);
        }
        // An expiry proposal may have ended the term: look again.
        role = this.role;
        if (role.state === "leading" && role.zab.serving) role.admission.cleanUp(clock.wallMs());
        const digest = this.deps.digests.due(nowMs);
        if (digest !== undefined && role === this.role) this.sendDigest(digest, (learner) => learner.stage === "upToDate");
      }
      return;
    }
    if (this.election) this.handleElection(this.election.tick(nowMs));
    if (this.isLooking()) this.tickReadOnly(nowMs);
    // A server outside the configuration settles on whoever leads and then hears nothing more:
    // it asks again now and then, so that a reconfiguration adding it back reaches it.
    const asking = this.isLooking() && this.election?.decision !== undefined && nowMs - this.lookingSinceMs >= 4 * config.tickMs + 1_000;
    if (asking && outsideEveryConfig(this.deps.membership.state)) {
      this.startLooking("outside the configuration: asking the others again");
    }
  }

  private tickReadOnly(nowMs: number): void {
    if (this.stopped) return;
    const outage = {
      config: this.deps.membership.configInForce,
      outOfServiceMs: nowMs - (this.unavailableSinceMs ?? this.lookingSinceMs),
      role: this.current.state,
    };
    for (const sessionId of this.deps.readOnly.tick(outage)) this.deps.sessions.endLocally(sessionId);
  }

  /** Ends every read-only session's connection: their clients go and find the quorum. */
  private leaveReadOnly(reason: string): void {
    if (this.deps.readOnly.leave(reason)) this.deps.sessions.reset();
  }

  // ---- inputs: the client side (WriteBroadcast: the request chain's admission stage)

  /** `authInfo`: the ids of the client's connection, with which the leader's prep checks ACLs. */
  submitWrite(sessionId: bigint, cxid: number, request: AdmittedRequest, authInfo: readonly Id[]): void {
    const role = this.current;
    if (role.state === "looking" || !role.zab.serving) return; // the connection is being ended; its client retries elsewhere
    if (role.state === "leading") return role.admission.admit(sessionId, cxid, request, authInfo);
    const forwarded = encodeForwardedRequest(request, authInfo);
    this.deps.hops?.hop("submit", { session: hex64(sessionId), cxid, bytes: forwarded.byteLength, queuedBytes: role.forwards.queued.bytes });
    role.forwards.push(sessionId, cxid, forwarded);
    this.forwardWaiting(role);
  }

  /** Forwards a learner's waiting writes, in their sessions' turns, while its bound has room. */
  private forwardWaiting(role: Learning): void {
    for (let next = role.forwards.take(); next !== undefined; next = role.forwards.take()) {
      this.deps.hops?.hop("forward", { session: hex64(next.sessionId), cxid: next.cxid, bytes: next.bytes });
      this.handle(role.zab.forward(next.sessionId, next.cxid, next.request), this.generation);
      // A forward can end the term (the core steps down): its writes end with it.
      if (this.current !== role || !role.zab.serving) return;
    }
  }

  /**
   * A client resumes `sessionId` here. The leader decides whether the session is alive and makes
   * this server its owner, so that a request still coming from the server the client left is
   * refused; the connect completes only after that (ZooKeeper's revalidateSession).
   */
  revalidateSession(sessionId: bigint, timeoutMs: number, done: (outcome: RevalidationOutcome) => void): void {
    const role = this.current;
    if (role.state === "looking" || !role.zab.serving) return done("unavailable");
    if (role.state === "leading") return done(role.admission.revalidate(sessionId, timeoutMs, this.deps.config.serverId) ? "valid" : "expired");
    if (this.waiters.addRevalidation(sessionId, done)) this.handle(role.zab.revalidate(sessionId, timeoutMs), this.generation);
  }

  submitCreateSession(sessionId: bigint, timeoutMs: number, password: Uint8Array): void {
    this.submitWrite(sessionId, 0, { op: "createSession", timeoutMs, password }, []);
  }

  /** The closeSession of a session the leader's tracker expired. */
  private expireSession(sessionId: bigint): void {
    const role = this.current;
    if (role.state === "leading" && role.zab.serving) role.admission.expire(sessionId);
  }

  requestSync(ready: (zxid: number) => void): void {
    const role = this.current;
    if (role.state === "looking" || !role.zab.serving) return;
    // Even on the leader a sync waits for a quorum to confirm it still leads: a paused leader
    // that resumes must not answer from stale state.
    this.handle(role.zab.requestSync(this.waiters.addSync(ready)), this.generation);
  }

  /** A session was heard from: read-only mode tracks it, the leader's tracker, or a learner's next ping. */
  touchSession(sessionId: bigint, timeoutMs: number): void {
    if (this.deps.readOnly.touch(sessionId, timeoutMs)) return;
    const role = this.current;
    if (role.state === "leading") this.deps.tracker.touch(sessionId, timeoutMs);
    else if (role.state !== "looking") role.zab.touch(sessionId, timeoutMs);
  }

  // ---- election

  private startLooking(reason: string): void {
    if (this.stopped) return;
    const { transport, sessions, clock, membership, metrics, logger, database } = this.deps;
    this.generation += 1;
    this.current = LOOKING;
    this.waiters.termEnded();
    this.acceptingClients = false;
    transport.stopFollowing();
    sessions.reset();
    this.lookingSinceMs = clock.nowMs();
    this.unavailableSinceMs ??= this.lookingSinceMs;
    membership.activateProvedCommitted();
    membership.updateTransport();
    metrics?.lookingStarted();
    logger.info({ role: "looking", reason }, "role changed");
    const view = membership.electionViewToLook();
    const election = this.electionFor(view.role, view.quorum);
    // A repairing member proposes nobody either: what it holds is not a leader's history.
    const self = {
      lastZxid: database.lastLoggedZxid(),
      currentEpoch: this.writes.epochs.currentEpoch,
      mayLead: mayLead(membership.state) && !this.deps.repair.active,
    };
    this.handleElection(election.startLooking(self, clock.nowMs()));
    if (this.deps.repair.active) this.refuseIfUnrepairable();
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
      maxNotificationIntervalMs: this.notificationIntervalMaxMs(),
      ...(alone ? { finalizeWaitMs: 0 } : {}),
    };
    this.election = this.deps.election?.(options) ?? new FastLeaderElection(options);
    return this.election;
  }

  private handleElection(output: ElectionOutput): void {
    const { membership, transport, logger } = this.deps;
    // Every notification carries our configuration in force and the latest reconfiguration we logged
    // and have not seen committed (a standalone server, which cannot be reconfigured, sends none).
    const views = membership.reconfigurable && output.send.length > 0 ? notificationViews(membership.state) : {};
    for (const { to, notification } of output.send) {
      logger.debug({ to, notification: { ...notification, vote: { ...notification.vote } } }, "notification sent");
      const repairing = this.deps.repair.nextNotificationNumber();
      transport.sendNotification(to, { ...notification, ...views, ...(repairing === undefined ? {} : { repairing }) });
    }
    // A server outside every configuration in play never takes part in a term.
    if (output.decided && !outsideEveryConfig(membership.state)) this.startTerm(output.decided);
  }

  private startTerm(decision: Decision): void {
    const generation = ++this.generation;
    // A new core is built from what is durable: let the previous term's writes land first. (If one
    // of them failed, the queue has reported it and no term may start on top of it: never called.)
    this.writes.whenIdle(() => {
      if (generation === this.generation && !this.stopped) this.buildCore(decision, generation);
    });
  }

  private buildCore(decision: Decision, generation: number): void {
    const { config, database, transport, membership, clock, metrics, repair } = this.deps;
    const state = termStateOf(decision);
    // Elected on votes for a place this server's own log does not give it (the election never
    // proposes such a server, but a stale vote may name it): a leader core would not count it a voter.
    if (state === "leading" && !mayLead(membership.state)) return this.startLooking("elected, but a voter only through a reconfiguration not logged here");
    // Likewise a member without a good copy, which never leads.
    if (state === "leading" && repair.active) return this.startLooking("repairing: this server cannot lead");
    this.termStartedMs = clock.nowMs();
    this.deps.digests.newTerm();
    // ZooKeeper times an election for its voters (Leader.lead, Follower.followLeader), not observers.
    if (state !== "observing") metrics?.electionDecided(this.termStartedMs - this.lookingSinceMs);
    this.deps.logger.info({ role: state, leader: decision.leader, round: decision.round }, "role changed");
    this.elections.record({
      decidedAtMs: this.termStartedMs,
      tookMs: this.termStartedMs - this.lookingSinceMs,
      leader: decision.leader,
      state,
      round: decision.round,
    });
    const options = {
      myId: config.serverId,
      ...membership.termQuorums(),
      tickMs: config.tickMs,
      initLimitTicks: config.initLimitTicks,
      syncLimitTicks: config.syncLimitTicks,
      committedLogRecordsMax: config.commitLogCount,
      proposalBytesInFlightMax: config.proposalBytesInFlightMax,
      durable: { ...this.writes.epochs, log: this.deps.recentLog.snapshot() },
      state: {
        snapshot: () => ({ zxid: database.tree.lastProcessedZxid, bytes: encodeSnapshot(database.tree) }),
        lastZxid: () => database.tree.lastProcessedZxid,
      },
      nowMs: clock.nowMs(),
      ...(this.deps.unsafeCommitOnOwnAck === true ? { unsafeCommitOnOwnAck: true } : {}),
      ...(repair.active ? { repairing: true } : {}),
    };
    if (state !== "leading") transport.followLeader(decision.leader);
    const term = { carryOut: (ready: ZabReady) => this.handle(ready, generation), current: () => generation === this.generation };
    const role = beginTerm(decision, options, term, this.deps.admitLeaderWrites);
    this.current = role;
    this.handle(role.zab.start(), generation);
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

  // ---- the Ready loop

  private step(input: ZabInput): void {
    const role = this.current;
    if (role.state === "looking") return;
    this.handle(role.zab.step(input), this.generation);
  }

  /** Feed an answer to a persist back, unless the core that asked is gone. */
  private answer(generation: number, input: ZabInput): void {
    if (generation !== this.generation || this.stopped) return;
    this.step(input);
  }

  /** Carries out one Ready of the current term's core, in the order the core requires. */
  private handle(ready: ZabReady, generation: number): void {
    if (generation !== this.generation) return;
    const role = this.current;
    assert(role.state !== "looking", "a Ready without a core");
    const { transport, database, tracker, logger, metrics, membership } = this.deps;
    const leading = role.state === "leading";
    // Before any of this Ready's persists: synchronization may replace or truncate the tree.
    if (role.zab.phase !== "discovery") this.leaveReadOnly("a quorum is syncing");
    const wasServing = this.acceptingClients;
    if (metrics && ready.apply.length > 0) {
      if (leading) metrics.committed(ready.apply.length);
      else if (wasServing) metrics.learnerCommitsReceived(ready.apply.length);
    }
    // Sends first: none waits for this Ready's persists (the core holds back what does), and a
    // leader's proposal should be on its way before its own log write starts — the two overlap.
    for (const { to, message } of ready.send) {
      if (leading) transport.sendToLearner(to, message);
      else transport.sendToLeader(message);
    }
    for (const action of ready.persist) {
      if (metrics && wasServing && action.kind === "appendLog" && !leading) metrics.learnerProposalsReceived(1);
      this.writes.carryOut(action, (input) => this.answer(generation, input));
    }
    let divergence: TreeDivergence | undefined;
    for (const record of ready.apply) {
      const txn = decodeTxn(record.record);
      if (!(txn.header.zxid === record.zxid)) assert(false, `record ${hex(record.zxid)} holds txn ${hex(txn.header.zxid)}`);
      database.apply(txn, this.deps.sessions);
      this.deps.hops?.hop("apply", { session: hex64(txn.header.sessionId), cxid: txn.header.cxid, zxid: record.zxid });
      // Read afresh: an apply answers clients, whose next writes may end this term.
      const now = this.current;
      if (now.state === "leading") now.admission.applied(record.zxid);
      else if (now.state !== "looking") now.forwards.applied(txn.header.sessionId, txn.header.cxid);
      this.deps.recentLog.applied(record.zxid);
      if (txn.body.type === "reconfig") membership.activate(configOfTxnData(txn.body.data, record.zxid));
      // The leader owns expiry: a session is tracked from the moment it exists, wherever it was opened.
      if (leading && txn.body.type === "createSession") tracker.touch(txn.header.sessionId, txn.body.timeoutMs);
      if (!leading) divergence ??= this.deps.digests.applied();
    }
    for (const event of ready.events) {
      logger.info(event, `zab ${event.event}`);
      if (event.event === "syncMode") metrics?.learnerSyncSent(event.mode);
      // After its sync data, so that the learner checks its tree before it serves.
      if (event.event === "syncMode") this.sendDigest(this.deps.digests.current(), (learner) => learner.sid === event.learner);
      // Latecomers learn the leader from our answers: they should carry the epoch it established.
      const decision = this.election?.decision;
      // Every member must answer with the same vote, or a joiner never sees a quorum agree on one.
      const established = event.event === "newEpoch" || (event.event === "phase" && event.phase === "broadcast");
      if (established && decision) this.election!.settle({ ...decision, vote: { ...decision.vote, peerEpoch: event.epoch } });
    }
    for (const id of ready.disconnect) transport.closeLearner(id);
    for (const touch of ready.touches) tracker.touch(touch.sessionId, touch.timeoutMs);
    for (const done of ready.syncsDone) this.waiters.syncDone(done.syncId, done.zxid);
    for (const { sessionId, valid } of ready.revalidated) this.waiters.revalidated(sessionId, valid);
    // A repairing member serves only once its snapshot from the leader is installed; a diverged one not at all.
    this.acceptingClients = ready.serving && !this.deps.repair.active && divergence === undefined;
    if (this.acceptingClients && !wasServing) this.beginServing(role);
    if (role.state === "leading") {
      for (const { from, sessionId, timeoutMs } of ready.revalidations) {
        if (generation !== this.generation) break;
        this.handle(role.zab.answerRevalidation(from, sessionId, role.admission.revalidate(sessionId, timeoutMs, from)), generation);
      }
      for (const forwarded of ready.forwarded) {
        // A learner forwards only once it serves, which needs this leader to be established.
        if (generation !== this.generation) break;
        if (role.admission.enqueueForwarded(forwarded)) continue;
        logger.warn({ learner: forwarded.from, queued: role.admission.queued }, "learner forwarded more writes than any server admits: closing its stream");
        transport.closeLearner(forwarded.from);
      }
      // Acks and commits make room in the window: writes waiting for it go now.
      if (generation === this.generation) role.admission.pump();
    } else if (ready.apply.length > 0 && generation === this.generation && ready.serving) {
      // Applied writes were answered: room for more of this learner's waiting writes.
      this.forwardWaiting(role);
    }
    if (ready.stepDown && generation === this.generation) {
      logger.warn({ reason: ready.stepDown.reason, role: role.state }, "zab stepped down");
      this.startLooking(ready.stepDown.reason);
      return;
    }
    if (divergence !== undefined && generation === this.generation) return this.divergedFromLeader(divergence);
    if (generation === this.generation && membership.takeChanged() && role.state !== "leading") {
      const changed = this.placeChanged(role);
      if (changed !== undefined) this.startLooking(changed);
    }
  }

  /** Leader: `message` to each learner `to` picks that takes tree digests. */
  private sendDigest(message: TreeDigestMessage, to: (learner: { sid: number; stage: string }) => boolean): void {
    const role = this.current;
    if (role.state !== "leading") return;
    for (const learner of role.zab.learners()) {
      if (to(learner) && learner.protocolVersion >= zabLimits.treeDigestProtocolVersion) this.deps.transport.sendToLearner(learner.sid, message);
    }
  }

  /**
   * This learner's tree is not the one its leader's txns make (a txn lost or applied twice, a bug
   * in apply, memory gone bad): the alarm, then a repair from the leader's snapshot, as for damaged files.
   */
  private divergedFromLeader(divergence: TreeDivergence): void {
    const { repair, logger, metrics } = this.deps;
    const { zxid, ownDigest, leaderDigest } = divergence;
    metrics?.treeDigestMismatch();
    const reason = `the tree's digest ${ownDigest} differs from the leader's ${leaderDigest} at zxid ${hex(zxid)}`;
    logger.fatal({ zxid: hex(zxid), ownDigest, leaderDigest, reason }, TREE_DIVERGED);
    repair.begin({ file: "the tree in memory", reason });
    this.startLooking("tree diverged from the leader's");
  }

  /** A learner whose role or leader the configuration in force changed re-elects (see learnerPlaceChange). */
  private placeChanged(role: Learning): string | undefined {
    const termRole = role.zab.kind === "observer" ? "observer" : "participant";
    return learnerPlaceChange(this.deps.membership.configInForce, this.deps.config.serverId, termRole, role.leaderId);
  }

  private beginServing(role: InTerm): void {
    const { database, logger, clock, metrics, membership } = this.deps;
    const now = clock.nowMs();
    if (role.state === "leading") role.admission.beginServing(now);
    if (metrics) {
      if (role.state !== "leading") metrics.learnerSynced(role.state === "observing" ? "observer" : "follower", now - this.termStartedMs);
      if (this.unavailableSinceMs !== undefined) metrics.servingAgain(now - this.unavailableSinceMs, role.state === "leading");
    }
    this.unavailableSinceMs = undefined;
    membership.serving();
    logger.info({ role: role.state, epoch: role.zab.epoch, lastZxid: hex(database.tree.lastProcessedZxid) }, "serving clients");
    this.releaseServingWaiters();
  }

  private isLooking(): boolean {
    return this.current.state === "looking";
  }

  private coreServing(): boolean {
    return this.current.state !== "looking" && this.current.zab.serving;
  }

  private releaseServingWaiters(): void {
    const waiters = this.servingWaiters;
    this.servingWaiters = [];
    for (const ready of waiters) ready();
  }

  private fatal(error: unknown): void {
    if (this.stopped) return;
    this.stopped = true;
    this.stopTicking?.();
    this.deps.onFatal(error);
    this.releaseServingWaiters();
  }
}
