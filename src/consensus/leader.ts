/**
 * The Zab leader as a pure state machine (ZooKeeper's Leader + LearnerHandler, one class, no
 * threads). One instance lives for one term: from the election's "leading" decision until it steps
 * down. Phases, in order:
 *
 * - discovery: collect learnerInfo from a quorum (ourselves included), propose
 *   newEpoch = max(acceptedEpoch) + 1, persist it as our accepted epoch, send leaderInfo; collect a
 *   quorum of ackEpoch, abdicating if a quorum member's (currentEpoch, lastZxid) is ahead of ours.
 * - synchronization: persist currentEpoch = newEpoch; bring every acked learner to our history
 *   (DIFF / TRUNC / SNAP, see sync-plan.ts) followed by newLeader; on a quorum of newLeader acks
 *   (ours counts once currentEpoch is durable) our whole history is committed: apply it, send
 *   upToDate, serve.
 * - broadcast: the host allocates a zxid, preps the txn, proposes it; the proposal goes to our
 *   own log and to every synced follower at once (pipelined); it commits, in zxid order, once a
 *   quorum has it durable; commits go to followers, informs (record + commit) to observers.
 *
 * Flow control (docs/architecture.md §7b). What the leader has proposed and not committed is
 * bounded in count and bytes (`canPropose`: the host admits a write only while it is true). What
 * each follower has been sent and not acked is bounded the same way: a follower slower than the
 * quorum gets its next proposals once its acks make room, from the history (etcd raft's
 * per-follower inflight window), so no queue to it grows with load. A follower is dropped as not
 * keeping up only on evidence that it stopped: proposals in flight to it and no ack progress for
 * syncLimit (ZooKeeper's SyncLimitCheck), or its next txn already gone from the history.
 *
 * Learners joining later go through the same discovery handshake (leaderInfo / ackEpoch, no vote
 * on the epoch) and sync, while proposals keep flowing: the sync carries every record up to the
 * last proposal, later proposals follow on the same stream, so there is no gap and no duplicate.
 *
 * A learner that misbehaves (an out-of-protocol or malformed message) is dropped, never trusted
 * and never a reason to crash: only our own invariants are asserted.
 */
import type { MemberRole } from "../common/membership.js";
import { assert } from "../common/assert.js";
import { formatZxid, isZxid } from "../store/zxid.js";
import { zabLimits } from "./constants.js";
import { nextZxidInEpoch, ZabCoreBase } from "./core-base.js";
import type { ZabReady } from "./core-io.js";
import { History } from "./history.js";
import { InFlight } from "./in-flight.js";
import type { LogRecord, QuorumMessage } from "./messages.js";
import { chunkRecords, lastLoggedZxidOf, type ZabOptions } from "./options.js";
import { JointQuorum, type PendingConfig, type QuorumVerifier } from "./quorum.js";
import { planLearnerSync, type HistoryIndex, type LearnerSyncPlan } from "./sync-plan.js";

/**
 * Where one learner stands with us:
 * connected (learnerInfo in, epoch not decided yet) → epochProposed (leaderInfo sent) →
 * epochAcked (waiting for the discovery quorum) → syncing (sync + newLeader sent) →
 * synced (newLeader acked; waiting for the epoch to be established) → upToDate.
 */
export type LearnerStage = "connected" | "epochProposed" | "epochAcked" | "syncing" | "synced" | "upToDate";

interface LearnerPeer {
  sid: number;
  role: MemberRole;
  /** Its learnerInfo said it repairs damaged state: no discovery vote, and a SNAP (see QuorumMessage). */
  repairing: boolean;
  /** The Zab protocol version its learnerInfo carried. */
  protocolVersion: number;
  stage: LearnerStage;
  acceptedEpoch: number;
  /** The learner's last logged zxid, from learnerInfo / ackEpoch. */
  lastZxid: number;
  /** From ackEpoch: the learner's current epoch. */
  currentEpoch: number;
  /** The lastZxid our newLeader carried: the learner's log ends there once synced. */
  newLeaderZxid: number;
  /** Highest zxid the learner acked (cumulative), participants only. */
  ackedZxid: number;
  /** The last zxid sent to it (in its sync, or as a proposal), and the last commit point it was told. */
  sentZxid: number;
  /** Proposals sent to it after its sync and not acked yet. */
  inFlight: InFlight;
  commitSentZxid: number;
  /** Since when proposals have been in flight to it with no ack progress (undefined: none in flight). */
  waitingSinceMs: number | undefined;
  lastHeardMs: number;
  /** Pings sent on this stream, and answers received: the n-th answer answers the n-th ping (FIFO). */
  pingsSent: number;
  pingsAnswered: number;
}

/**
 * A sync waiting for proof that we still lead: it is answered once a quorum has answered a ping
 * sent after it arrived (a leader paused or partitioned away would otherwise answer from a
 * state a newer leader has moved past).
 */
interface PendingSync {
  /** The learner to answer, or undefined for the host's own (answered in `syncsDone`). */
  learner: number | undefined;
  syncId: number;
  /** Our last proposed zxid when the sync arrived. */
  zxid: number;
  /** Per follower: how many of its ping answers prove it followed us after the sync arrived. */
  pingsNeeded: Map<number, number>;
}

export class Leader extends ZabCoreBase {
  readonly kind = "leader" as const;
  private readonly history: History;
  private readonly peers = new Map<number, LearnerPeer>();
  private readonly ackedScratch: number[] = [];

  /** Decided once a quorum's learnerInfo is in. */
  private newEpoch: number | undefined;
  private acceptedEpochDurable = false;
  private currentEpochDurable = false;
  /** Our own (currentEpoch, lastZxid) at the start of the term: what ackEpochs are compared with. */
  private readonly startCurrentEpoch: number;
  private readonly startLastZxid: number;
  protected durableZxid: number;
  private lastAllocatedZxid: number;
  private readonly startMs: number;
  private lastPingMs: number;
  private readonly pendingSyncs: PendingSync[] = [];
  /** Set when this input already sent a ping round that later syncs of the same input can share. */
  private syncPingSent = false;
  /** The configuration in force: the last reconfiguration this term knows committed. */
  private committedConfig: QuorumVerifier;
  /** Reconfigurations in our history not committed yet, ascending zxid (at most one once we serve). */
  private pendingConfigs: PendingConfig[];
  /** Every decision's quorum: of the committed configuration and of each pending one. */
  private quorum: JointQuorum;

  constructor(options: ZabOptions) {
    super(options);
    this.committedConfig = options.quorum;
    this.pendingConfigs = [...(options.pendingConfigs ?? [])];
    this.quorum = this.jointQuorum();
    assert(this.quorum.isVoter(this.myId), `leader ${this.myId} is a voter`);
    const treeZxid = options.state.lastZxid();
    this.history = new History(treeZxid, options.durable.log, { count: this.options.committedLogRecordsMax, bytes: this.options.committedLogBytesMax });
    this.startCurrentEpoch = this.currentEpoch;
    this.startLastZxid = lastLoggedZxidOf(options.durable, treeZxid);
    assert(this.startLastZxid === this.history.lastZxid, "the history ends at the last logged zxid");
    this.durableZxid = this.startLastZxid;
    this.lastAllocatedZxid = this.startLastZxid;
    this.startMs = options.nowMs;
    this.lastPingMs = options.nowMs;
  }

  // ---- views for the host

  /** The epoch this term establishes (undefined until a quorum's learnerInfo is in). */
  get epoch(): number | undefined {
    return this.newEpoch;
  }

  protected get lastLoggedZxid(): number {
    return this.history.lastZxid;
  }

  get lastProposedZxid(): number {
    return this.history.lastZxid;
  }

  get lastCommittedZxid(): number {
    return this.history.committedZxid;
  }

  /** Proposals sent and not yet committed (for status pages and metrics). */
  get outstandingProposals(): number {
    return this.history.outstandingCount;
  }

  /** A reconfiguration is proposed and not committed: another must wait (ZooKeeper's RECONFIGINPROGRESS). */
  get reconfigInFlight(): boolean {
    return this.pendingConfigs.length > 0;
  }

  /** Bytes of the proposals sent and not yet committed (for metrics). */
  get outstandingBytes(): number {
    return this.history.span(this.history.committedZxid, this.history.lastZxid).bytes;
  }

  /**
   * Whether `allocateZxid` may be called now: serving, and what is proposed and not committed is
   * under both in-flight bounds (count and bytes; the proposal that crosses the byte bound goes).
   */
  get canPropose(): boolean {
    return this.roomInFlight(0);
  }

  /** Whether `allocateZxid` may be called for a small proposal (zabLimits.smallProposalBytesMax): past the byte bound by the small reserve. */
  get canProposeSmall(): boolean {
    return this.roomInFlight(zabLimits.smallProposalsReserveBytes);
  }

  /**
   * Room for one more proposal: what is proposed and not committed is under both bounds, and no
   * follower that is up to date and making progress is more than two windows behind. The quorum alone
   * would let the leader run ahead of a slower follower without end, and that follower's clients
   * would wait for everything in between before their own writes are applied there. A follower
   * with no ack progress for half a tick is not waited for (it is dropped at syncLimit if it
   * never moves again; see onTick).
   */
  private roomInFlight(reserveBytes: number): boolean {
    if (!this.serving) return false;
    const { count, bytes } = this.history.span(this.history.committedZxid, this.history.lastZxid);
    const allocated = this.lastAllocatedZxid - this.history.lastZxid;
    const windowBytes = this.options.proposalBytesInFlightMax;
    if (count + allocated >= this.options.proposalsInFlightMax || bytes >= windowBytes + reserveBytes) return false;
    for (const peer of this.peers.values()) {
      const pacing = peer.role === "participant" && peer.stage === "upToDate";
      if (!pacing || (peer.waitingSinceMs !== undefined && this.nowMs - peer.waitingSinceMs > this.options.tickMs / 2)) continue;
      if (this.history.span(peer.ackedZxid, this.history.lastZxid).bytes >= 2 * windowBytes + reserveBytes) return false;
    }
    return true;
  }

  /** The learners and where each stands (for status pages, tests, and the host's digest checks). */
  learners(): { sid: number; role: MemberRole; stage: LearnerStage; ackedZxid: number; sentZxid: number; protocolVersion: number }[] {
    return [...this.peers.values()]
      .sort((a, b) => a.sid - b.sid)
      .map((p) => ({ sid: p.sid, role: p.role, stage: p.stage, ackedZxid: p.ackedZxid, sentZxid: p.sentZxid, protocolVersion: p.protocolVersion }));
  }

  // ---- inputs

  /** First call after construction: a one-voter cluster establishes on its own from here. */
  start(): ZabReady {
    this.begin();
    this.maybeDecideEpoch();
    return this.finish();
  }

  /** Reserves the next zxid of this epoch; the host preps the txn with it and then proposes it. */
  allocateZxid(): number {
    assert(this.canProposeSmall, "allocateZxid while not able to propose");
    this.lastAllocatedZxid = nextZxidInEpoch(this.newEpoch!, this.lastAllocatedZxid);
    return this.lastAllocatedZxid;
  }

  /**
   * Proposes the txn prepped for `zxid` (allocated zxids are proposed in order, none skipped).
   * `config`: the txn is a reconfiguration installing it. From here until it commits, every
   * commit needs a quorum of it as well as of the configuration in force (only one at a time).
   */
  propose(zxid: number, record: Uint8Array, config?: QuorumVerifier): ZabReady {
    this.begin();
    assert(this.serving, "propose while not serving");
    const expected = nextZxidInEpoch(this.newEpoch!, this.history.lastZxid);
    if (!(zxid === expected && zxid <= this.lastAllocatedZxid)) assert(false, `proposed ${zxid}, expected the allocated ${expected}`);
    if (config !== undefined) {
      assert(!this.reconfigInFlight, "one reconfiguration in flight at a time");
      this.pendingConfigs.push({ zxid, quorum: config });
      this.quorum = this.jointQuorum();
    }
    const logRecord: LogRecord = { zxid, record };
    this.history.append(logRecord);
    this.out.persist.push({ kind: "appendLog", zxid, record });
    for (const peer of this.peers.values()) this.replicate(peer);
    return this.finish();
  }

  /**
   * The host's own sync (a client of this server asked): answered in `syncsDone` with our last
   * proposed zxid, once a quorum confirms we still lead.
   */
  requestSync(syncId: number): ZabReady {
    this.begin();
    assert(this.serving, "requestSync while not serving");
    assert(this.pendingSyncs.length < zabLimits.syncsPendingMax, "pending syncs within bounds");
    this.addPendingSync(undefined, syncId);
    return this.finish();
  }

  /**
   * The host's answer to a learner's `revalidate` (which it got in `revalidations`). A learner
   * dropped in the meantime gets nothing: its clients reconnect elsewhere.
   */
  answerRevalidation(to: number, sessionId: bigint, valid: boolean): ZabReady {
    this.begin();
    if (this.peers.get(to)?.stage === "upToDate") this.send(to, { type: "revalidated", sessionId, valid });
    return this.finish();
  }

  // ---- inputs that are not messages (step, in ZabCoreBase, hands them here)

  protected afterDurable(): void {
    this.tryCommit();
  }

  protected onTruncated(): void {
    assert(false, "a leader never asks for truncated");
  }

  protected onSnapshotInstalled(): void {
    assert(false, "a leader never asks for snapshotInstalled");
  }

  protected onDisconnected(peer: number): void {
    if (this.peers.has(peer)) this.dropLearner(peer, "stream closed", false);
  }

  // ---- messages

  protected onMessage(from: number, message: QuorumMessage): void {
    if (message.type === "learnerInfo") {
      this.onLearnerInfo(from, message);
      return;
    }
    const peer = this.peers.get(from);
    if (peer === undefined) return; // a stale stream's leftovers; the host closed it
    peer.lastHeardMs = this.nowMs;
    switch (message.type) {
      case "ackEpoch":
        this.onAckEpoch(peer, message.currentEpoch, message.lastZxid);
        break;
      case "ack":
        this.onAck(peer, message.zxid);
        break;
      case "ping":
        if (!Array.isArray(message.touches) || message.touches.length > zabLimits.touchesPerPingMax) {
          this.dropLearner(peer.sid, "malformed ping", true);
          break;
        }
        if (peer.pingsAnswered >= peer.pingsSent) {
          this.dropLearner(peer.sid, "answered a ping we did not send", true);
          break;
        }
        peer.pingsAnswered += 1;
        for (const touch of message.touches) this.out.touches.push(touch);
        this.answerConfirmedSyncs();
        break;
      case "request":
        if (!this.upToDateOrDropped(peer, "forwarded a request before it was up to date")) break;
        this.out.forwarded.push({ from: peer.sid, sessionId: message.sessionId, cxid: message.cxid, request: message.request });
        break;
      case "sync":
        if (!this.upToDateOrDropped(peer, "sent sync before it was up to date")) break;
        if (this.pendingSyncs.length >= zabLimits.syncsPendingMax) {
          this.dropLearner(peer.sid, "too many syncs pending", true);
          break;
        }
        this.addPendingSync(peer.sid, message.syncId);
        break;
      case "revalidate":
        if (!this.upToDateOrDropped(peer, "revalidated a session before it was up to date")) break;
        this.out.revalidations.push({ from: peer.sid, sessionId: message.sessionId, timeoutMs: message.timeoutMs });
        break;
      default:
        this.dropLearner(peer.sid, `sent a leader's message (${message.type})`, true);
    }
  }

  /** Client traffic may only come from a learner that serves clients, i.e. one we made up to date. */
  private upToDateOrDropped(peer: LearnerPeer, reason: string): boolean {
    if (peer.stage === "upToDate") return true;
    this.dropLearner(peer.sid, reason, true);
    return false;
  }

  private onLearnerInfo(from: number, message: Extract<QuorumMessage, { type: "learnerInfo" }>): void {
    const { sid, role, acceptedEpoch, lastZxid } = message;
    const repairing = message.repairing === true;
    // Any server may learn from us (ZooKeeper's non-voting followers: a server about to be added
    // syncs first): only a voter's acks count, and each count asks its configuration who votes.
    const roleFits = role === "participant" || role === "observer";
    const wellFormed = sid === from && sid !== this.myId && roleFits && Number.isSafeInteger(acceptedEpoch) && acceptedEpoch >= 0 && isZxid(lastZxid);
    if (this.peers.has(from)) this.dropLearner(from, "reconnected", false); // its old stream is gone
    // Not among our peers by now, so dropping it only reports it and closes its stream.
    if (!wellFormed) {
      this.dropLearner(from, "malformed learnerInfo", true);
      return;
    }
    if (this.peers.size >= zabLimits.learnersMax) {
      this.dropLearner(from, "too many learners", true);
      return;
    }
    const peer: LearnerPeer = {
      sid,
      role,
      repairing,
      protocolVersion: message.protocolVersion,
      stage: "connected",
      acceptedEpoch,
      lastZxid,
      currentEpoch: -1,
      newLeaderZxid: -1,
      ackedZxid: -1,
      sentZxid: -1,
      inFlight: new InFlight(),
      commitSentZxid: -1,
      waitingSinceMs: undefined,
      lastHeardMs: this.nowMs,
      pingsSent: 0,
      pingsAnswered: 0,
    };
    this.peers.set(sid, peer);
    this.out.events.push({ event: "learnerJoined", learner: sid, role });
    if (this.newEpoch === undefined) this.maybeDecideEpoch();
    else this.proposeEpoch(peer);
  }

  private onAckEpoch(peer: LearnerPeer, currentEpoch: number, lastZxid: number): void {
    if (peer.stage !== "epochProposed" || !Number.isSafeInteger(currentEpoch) || currentEpoch < 0 || !isZxid(lastZxid)) {
      this.dropLearner(peer.sid, "unexpected or malformed ackEpoch", true);
      return;
    }
    peer.currentEpoch = currentEpoch;
    peer.lastZxid = lastZxid;
    peer.stage = "epochAcked";
    if (this.phaseNow === "discovery") {
      // Our history must be the most recent of the quorum we establish with (Zab's discovery step).
      const ahead =
        peer.role === "participant" &&
        !peer.repairing &&
        this.quorum.isVoter(peer.sid) &&
        (currentEpoch > this.startCurrentEpoch || (currentEpoch === this.startCurrentEpoch && lastZxid > this.startLastZxid));
      if (ahead) {
        this.stepDown(`learner ${peer.sid} is ahead of us: epoch ${currentEpoch}, zxid ${lastZxid}`);
        return;
      }
      this.maybeFinishDiscovery();
    } else {
      this.syncLearner(peer);
    }
  }

  private onAck(peer: LearnerPeer, zxid: number): void {
    if (!isZxid(zxid)) {
      this.dropLearner(peer.sid, "malformed ack", true);
      return;
    }
    if (peer.stage === "syncing") {
      if (zxid !== peer.newLeaderZxid) {
        this.dropLearner(peer.sid, `acked newLeader with ${zxid}, expected ${peer.newLeaderZxid}`, true);
        return;
      }
      peer.stage = "synced";
      if (peer.role === "participant") this.acked(peer, zxid);
      if (this.phaseNow === "broadcast") {
        this.send(peer.sid, { type: "upToDate" });
        peer.stage = "upToDate";
        this.tryCommit();
        // Proposals made while it synced wait for room in its window: send what fits now.
        this.replicate(peer);
      } else {
        this.maybeEstablish();
      }
      return;
    }
    const valid =
      peer.role === "participant" && (peer.stage === "synced" || peer.stage === "upToDate") && zxid >= peer.ackedZxid && zxid <= this.history.lastZxid;
    if (!valid) {
      this.dropLearner(peer.sid, `unexpected ack of ${zxid}`, true);
      return;
    }
    if (zxid > peer.ackedZxid) {
      this.acked(peer, zxid);
      this.tryCommit();
      this.replicate(peer);
    }
  }

  /** `peer` acked up to `zxid`: progress, and room in its window. */
  private acked(peer: LearnerPeer, zxid: number): void {
    peer.ackedZxid = zxid;
    peer.inFlight.ackedThrough(zxid);
    peer.waitingSinceMs = peer.inFlight.count > 0 ? this.nowMs : undefined;
  }

  protected onEpochDurable(which: "accepted" | "current", epoch: number): void {
    if (which === "accepted") {
      assert(epoch === this.newEpoch && !this.acceptedEpochDurable, "acceptedEpoch durable answers our persist");
      this.acceptedEpochDurable = true;
      this.maybeFinishDiscovery();
    } else {
      assert(epoch === this.newEpoch && !this.currentEpochDurable && this.phaseNow === "synchronization", "currentEpoch durable answers our persist");
      this.currentEpochDurable = true;
      this.currentEpoch = epoch;
      this.maybeEstablish();
    }
  }

  protected onTick(): void {
    if (this.nowMs - this.lastPingMs >= this.options.tickMs / 2) {
      this.lastPingMs = this.nowMs;
      for (const peer of this.peers.values()) this.ping(peer);
    }
    for (const peer of [...this.peers.values()]) {
      const limitMs = peer.stage === "upToDate" ? this.options.syncLimitMs : this.options.initLimitMs;
      if (this.nowMs - peer.lastHeardMs > limitMs) this.dropLearner(peer.sid, `silent for more than ${limitMs} ms`, true);
      else if (isVotingFollower(peer) && peer.waitingSinceMs !== undefined && this.nowMs - peer.waitingSinceMs > this.options.syncLimitMs) {
        const waitedMs = this.nowMs - peer.waitingSinceMs;
        this.dropLearner(
          peer.sid,
          `not keeping up: no ack progress for ${waitedMs} ms (syncLimit ${this.options.syncLimitMs} ms); ${this.progressOf(peer)}`,
          true,
        );
      }
    }
    if (this.phaseNow !== "broadcast") {
      if (this.nowMs - this.startMs > this.options.initLimitMs) {
        this.stepDown(`no quorum synced within initLimit (${this.options.initLimitMs} ms) in ${this.phaseNow}`);
      }
      return;
    }
    const alive = [this.myId];
    for (const peer of this.peers.values()) {
      if (peer.role === "participant" && (peer.stage === "synced" || peer.stage === "upToDate")) alive.push(peer.sid);
    }
    if (!this.quorum.containsQuorum(alive)) this.stepDown("lost the quorum of synced followers");
  }

  // ---- discovery

  private maybeDecideEpoch(): void {
    if (this.newEpoch !== undefined) return;
    const participants = [...this.peers.values()].filter((p) => p.role === "participant");
    // A repairing learner's promises may have been lost with its files: it is no part of the
    // quorum that decides the epoch (its accepted epoch only raises the one proposed).
    const vouching = participants.filter((p) => !p.repairing);
    if (!this.quorum.containsQuorum([this.myId, ...vouching.map((p) => p.sid)])) return;
    const newEpoch = Math.max(this.acceptedEpoch, ...participants.map((p) => p.acceptedEpoch)) + 1;
    this.newEpoch = newEpoch;
    this.acceptEpoch(newEpoch);
    this.out.events.push({ event: "newEpoch", epoch: newEpoch });
    for (const peer of [...this.peers.values()]) if (peer.stage === "connected") this.proposeEpoch(peer);
  }

  private proposeEpoch(peer: LearnerPeer): void {
    const epoch = this.newEpoch!;
    if (peer.acceptedEpoch > epoch) {
      // It promised a newer would-be leader never to follow an older epoch, and rightly refuses
      // ours: it could never rejoin. Adopt its epoch as our accepted one (a stronger promise of
      // ours, so always safe) and start over: our next discovery proposes above it.
      this.acceptEpoch(peer.acceptedEpoch);
      this.stepDown(`learner ${peer.sid} accepted epoch ${peer.acceptedEpoch}, above our epoch ${epoch}`);
      return;
    }
    // A learner that accepted this epoch already may have accepted it from another would-be
    // leader: counting it before we are established could let two leaders establish one epoch.
    if (peer.acceptedEpoch === epoch && this.phaseNow !== "broadcast") {
      this.dropLearner(peer.sid, `learner accepted epoch ${peer.acceptedEpoch}, we propose ${epoch}`, true);
      return;
    }
    peer.stage = "epochProposed";
    this.send(peer.sid, { type: "leaderInfo", newEpoch: epoch, protocolVersion: zabLimits.protocolVersion });
  }

  private maybeFinishDiscovery(): void {
    // Discovery needs a quorum of good copies: every committed txn is then in one of them, and
    // so in the history we establish (a repairing learner may have lost its own).
    if (this.phaseNow !== "discovery" || !this.acceptedEpochDurable || !this.quorumAtStage("epochAcked", true)) return;
    this.enterPhase("synchronization");
    this.out.persist.push({ kind: "currentEpoch", epoch: this.newEpoch! });
    for (const peer of [...this.peers.values()]) if (peer.stage === "epochAcked") this.syncLearner(peer);
  }

  // ---- synchronization

  private syncLearner(peer: LearnerPeer): void {
    const establishing = this.phaseNow !== "broadcast";
    // Until established, our whole history is what the quorum will commit; after, only committed
    // records are (observers get nothing else: in-flight ones reach them as informs).
    const committedForSync = establishing ? this.history.lastZxid : this.history.committedZxid;
    const lastForPeer = peer.role === "observer" ? committedForSync : this.history.lastZxid;
    const plan: LearnerSyncPlan = peer.repairing
      ? { mode: "SNAP", snapshotZxid: this.history.snapshotZxid, reason: "learner is repairing damaged state" }
      : planLearnerSync(peer.lastZxid, this.historyUpTo(lastForPeer));
    let fromZxid: number;
    switch (plan.mode) {
      case "DIFF":
        fromZxid = plan.fromZxid;
        this.send(peer.sid, { type: "diff", lastZxid: fromZxid });
        break;
      case "TRUNC":
        fromZxid = plan.truncZxid;
        this.send(peer.sid, { type: "trunc", zxid: fromZxid });
        break;
      case "SNAP": {
        const snapshot = this.options.state.snapshot();
        assert(snapshot.zxid === this.history.snapshotZxid, `the host's snapshot is at ${snapshot.zxid}, our tree at ${this.history.snapshotZxid}`);
        fromZxid = snapshot.zxid;
        this.send(peer.sid, { type: "snap", zxid: fromZxid, snapshot: snapshot.bytes });
        break;
      }
    }
    this.out.events.push({ event: "syncMode", learner: peer.sid, mode: plan.mode, reason: plan.reason, fromZxid, toZxid: lastForPeer });
    const committedEnd = Math.min(committedForSync, lastForPeer);
    if (committedEnd > fromZxid) this.sendSyncTxns(peer.sid, this.history.between(fromZxid, committedEnd), true);
    if (lastForPeer > committedEnd) this.sendSyncTxns(peer.sid, this.history.between(Math.max(fromZxid, committedEnd), lastForPeer), false);
    peer.stage = "syncing";
    peer.newLeaderZxid = lastForPeer;
    peer.sentZxid = lastForPeer;
    peer.commitSentZxid = committedEnd;
    this.send(peer.sid, { type: "newLeader", zxid: lastForPeer });
    // Committed syncTxns tell the learner that what they carry is committed, but not the records it
    // had logged before (up to fromZxid) and has perhaps not applied: a follower that lost its leader
    // between logging a proposal and hearing its commit. Say it, or they wait for the next commit —
    // forever in a quiet cluster, with every sync at that learner waiting for them. (Observers need
    // no word: everything up to their newLeader zxid is committed by upToDate.)
    if (peer.role === "participant" && plan.mode !== "SNAP" && committedEnd > 0 && committedEnd <= fromZxid) {
      this.send(peer.sid, { type: "commit", zxid: committedEnd });
    }
  }

  private sendSyncTxns(to: number, records: LogRecord[], committed: boolean): void {
    for (const txns of chunkRecords(records, this.options.syncTxnsPerMessageMax, zabLimits.syncTxnsBytesMax)) {
      this.send(to, { type: "syncTxns", txns, committed });
    }
  }

  /** The history as seen by a learner that gets nothing beyond `lastZxid`. */
  private historyUpTo(lastZxid: number): HistoryIndex {
    const history = this.history;
    if (lastZxid === history.lastZxid) return history;
    return {
      baseZxid: history.baseZxid,
      lastZxid,
      snapshotZxid: history.snapshotZxid,
      contains: (zxid) => zxid <= lastZxid && history.contains(zxid),
      largestBelow: (zxid) => history.largestBelow(Math.min(zxid, lastZxid + 1)),
    };
  }

  private maybeEstablish(): void {
    if (this.phaseNow !== "synchronization" || !this.currentEpochDurable || !this.quorumAtStage("synced")) return;
    // A quorum holds our history under the new epoch: all of it is committed.
    this.enterPhase("broadcast");
    for (const record of this.history.commitThrough(this.history.lastZxid)) this.out.apply.push(record);
    for (const peer of this.peers.values()) {
      if (peer.stage === "synced") {
        peer.stage = "upToDate";
        this.send(peer.sid, { type: "upToDate" });
      }
    }
    this.activateCommittedConfigs();
  }

  // ---- broadcast

  /** Commits, in zxid order, every outstanding proposal a quorum has durable. */
  private tryCommit(): void {
    if (this.phaseNow !== "broadcast" || this.history.committedZxid === this.history.lastZxid) return;
    // Up to a reconfiguration a quorum of the configuration in force commits; from it on, until it
    // commits, a quorum of the configuration it installs must hold the record too.
    let point = this.durablePointOf(this.committedConfig);
    for (const pending of this.pendingConfigs) {
      if (point < pending.zxid) break;
      const ofPending = this.durablePointOf(pending.quorum);
      point = ofPending >= pending.zxid ? Math.min(point, ofPending) : pending.zxid - 1;
    }
    const commitZxid = Math.max(this.history.committedZxid, point);
    if (commitZxid === this.history.committedZxid) return;
    const newly = this.history.commitThrough(commitZxid);
    for (const record of newly) this.out.apply.push(record);
    for (const peer of this.peers.values()) {
      if (!isForwarding(peer)) continue;
      if (peer.role === "participant") this.replicate(peer);
      else for (const record of newly) this.send(peer.sid, { type: "inform", zxid: record.zxid, record: record.record });
    }
    this.activateCommittedConfigs();
  }

  /**
   * Sends a follower (synced, or syncing: after its sync) the proposals it lacks while its window
   * has room — at least one, however large — then the commit point as far as it has the records.
   * One whose next txn is no longer in the history cannot be caught up from it: it is dropped and
   * syncs again (by SNAP).
   */
  private replicate(peer: LearnerPeer): void {
    if (peer.role !== "participant" || !isForwarding(peer)) return;
    const history = this.history;
    const inFlight = peer.inFlight;
    // The commit point first: behind a window of new proposals, it would wait for all of them to
    // cross the stream before the follower could apply (and answer its clients' writes).
    this.sendCommitPoint(peer);
    while (peer.sentZxid < history.lastZxid) {
      const next = history.recordAfter(peer.sentZxid);
      if (next === "trimmed") {
        this.dropLearner(peer.sid, `not keeping up: fell behind the history, its next txn is no longer kept; ${this.progressOf(peer)}`, true);
        return;
      }
      if (next === undefined) break;
      const reserve = next.record.byteLength <= zabLimits.smallProposalBytesMax ? zabLimits.smallProposalsReserveBytes : 0;
      if (inFlight.count > 0 && (inFlight.count >= this.options.proposalsInFlightMax || inFlight.bytes >= this.options.proposalBytesInFlightMax + reserve))
        break;
      if (inFlight.count === 0) peer.waitingSinceMs = this.nowMs;
      this.send(peer.sid, { type: "proposal", zxid: next.zxid, record: next.record });
      peer.sentZxid = next.zxid;
      inFlight.sent(next.zxid, next.record.byteLength);
    }
    // A follower far behind may have been sent committed records just now.
    this.sendCommitPoint(peer);
  }

  /** Tells `peer` the commit point, as far as it has been sent the records. */
  private sendCommitPoint(peer: LearnerPeer): void {
    const commitZxid = Math.min(this.history.committedZxid, peer.sentZxid);
    if (commitZxid > peer.commitSentZxid) {
      peer.commitSentZxid = commitZxid;
      this.send(peer.sid, { type: "commit", zxid: commitZxid });
    }
  }

  /** Where a follower stands, as evidence in the line that drops it for not keeping up. */
  private progressOf(peer: LearnerPeer): string {
    const inFlight = peer.inFlight;
    return (
      `${inFlight.count} proposals (${inFlight.bytes} bytes) in flight to it, acked ${formatZxid(peer.ackedZxid)}, ` +
      `sent ${formatZxid(peer.sentZxid)}, last proposed ${formatZxid(this.history.lastZxid)}, committed ${formatZxid(this.history.committedZxid)}`
    );
  }

  /**
   * The highest zxid a quorum of `config`'s voters has durably logged (-1 if no quorum is synced):
   * the quorumSize-th largest of their acked zxids, ours included if we vote in it. Runs on every
   * ack, so it sorts one small reused array rather than building sets.
   */
  private durablePointOf(config: QuorumVerifier): number {
    const acked = this.ackedScratch;
    acked.length = 0;
    if (config.isVoter(this.myId)) acked.push(this.durableZxid);
    for (const peer of this.peers.values()) {
      if (peer.role === "participant" && config.isVoter(peer.sid) && (peer.stage === "synced" || peer.stage === "upToDate")) acked.push(peer.ackedZxid);
    }
    const quorumSize = this.options.unsafeCommitOnOwnAck === true ? 1 : config.quorumSize;
    if (acked.length < quorumSize) return -1;
    acked.sort((a, b) => b - a);
    return acked[quorumSize - 1]!;
  }

  /**
   * Every pending reconfiguration at or below the commit point is in force now. A leader that is
   * no voter of the configuration in force steps down (ZooKeeper's removed leader does too): the
   * commits it just sent go first, and the configuration's own voters elect the next leader.
   */
  private activateCommittedConfigs(): void {
    let activated = false;
    while (this.pendingConfigs.length > 0 && this.pendingConfigs[0]!.zxid <= this.history.committedZxid) {
      const { zxid, quorum } = this.pendingConfigs.shift()!;
      this.committedConfig = quorum;
      this.out.events.push({ event: "configActivated", zxid });
      activated = true;
    }
    if (!activated) return;
    this.quorum = this.jointQuorum();
    if (!this.committedConfig.isVoter(this.myId)) this.stepDown("not a voter of the configuration in force");
  }

  private jointQuorum(): JointQuorum {
    return new JointQuorum([this.committedConfig, ...this.pendingConfigs.map((p) => p.quorum)]);
  }

  // ---- syncs

  private addPendingSync(learner: number | undefined, syncId: number): void {
    // One fresh ping round per input serves every sync that arrived in it.
    if (!this.syncPingSent) {
      this.syncPingSent = true;
      for (const peer of this.peers.values()) if (isVotingFollower(peer)) this.ping(peer);
    }
    const pingsNeeded = new Map<number, number>();
    for (const peer of this.peers.values()) if (isVotingFollower(peer)) pingsNeeded.set(peer.sid, peer.pingsSent);
    this.pendingSyncs.push({ learner, syncId, zxid: this.history.lastZxid, pingsNeeded });
    this.answerConfirmedSyncs();
  }

  /** Answers, in arrival order, every sync a quorum has confirmed. */
  private answerConfirmedSyncs(): void {
    while (this.pendingSyncs.length > 0) {
      const sync = this.pendingSyncs[0]!;
      const confirmed = [this.myId];
      for (const [sid, needed] of sync.pingsNeeded) {
        const peer = this.peers.get(sid);
        if (peer !== undefined && peer.pingsAnswered >= needed) confirmed.push(sid);
      }
      if (!this.quorum.containsQuorum(confirmed)) return;
      this.pendingSyncs.shift();
      if (sync.learner === undefined) this.out.syncsDone.push({ syncId: sync.syncId, zxid: sync.zxid });
      // Everything we proposed up to sync.zxid precedes this answer on the learner's stream.
      else if (this.peers.has(sync.learner)) this.send(sync.learner, { type: "syncDone", syncId: sync.syncId, zxid: sync.zxid });
    }
  }

  private ping(peer: LearnerPeer): void {
    peer.pingsSent += 1;
    this.send(peer.sid, { type: "ping", touches: [] });
  }

  // ---- plumbing

  /** Whether we, with the followers at `stage` (but repairing ones when `vouching`), make a quorum: each phase ends on one. */
  private quorumAtStage(stage: LearnerStage, vouching = false): boolean {
    const sids = [this.myId];
    for (const peer of this.peers.values()) {
      if (peer.role === "participant" && peer.stage === stage && !(vouching && peer.repairing)) sids.push(peer.sid);
    }
    return this.quorum.containsQuorum(sids);
  }

  private dropLearner(sid: number, reason: string, disconnect: boolean): void {
    this.peers.delete(sid);
    this.out.events.push({ event: "learnerDropped", learner: sid, reason });
    if (disconnect) this.out.disconnect.push(sid);
  }

  protected override stepDown(reason: string): void {
    super.stepDown(reason);
    for (const sid of this.peers.keys()) this.out.disconnect.push(sid);
    this.peers.clear();
    this.pendingSyncs.length = 0;
  }

  private send(to: number, message: QuorumMessage): void {
    this.out.send.push({ to, message });
  }

  protected override begin(): void {
    super.begin();
    this.syncPingSent = false;
  }
}

/** A follower whose answers count toward our quorum (synced to this epoch). */
function isVotingFollower(peer: LearnerPeer): boolean {
  return peer.role === "participant" && (peer.stage === "synced" || peer.stage === "upToDate");
}

/** Whether proposals and commits already flow to this learner (its sync has been sent). */
function isForwarding(peer: LearnerPeer): boolean {
  return peer.stage === "syncing" || peer.stage === "synced" || peer.stage === "upToDate";
}
