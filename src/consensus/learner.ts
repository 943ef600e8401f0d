/**
 * A Zab learner — follower or observer — as a pure state machine (ZooKeeper's Learner,
 * Follower and Observer). One instance lives for one term: from the election's decision until it
 * steps down. Phases, in order:
 *
 * - discovery: send learnerInfo(acceptedEpoch, lastZxid); on leaderInfo(newEpoch) refuse an epoch
 *   below our accepted one (step down), persist a higher one, and only once it is durable send
 *   ackEpoch(currentEpoch, lastZxid).
 * - synchronization: DIFF, TRUNC or SNAP, then syncTxns, then newLeader; we persist currentEpoch,
 *   make every synced txn durable and only then ack newLeader. Proposals may follow newLeader
 *   before upToDate; they are logged, and acked after the newLeader ack.
 * - broadcast (from upToDate on): serve. A follower logs proposals and acks them once durable; an
 *   observer logs informs and never acks. Both apply a txn once it is committed and durable here,
 *   in zxid order.
 *
 * Nothing is applied before upToDate: the leader sends upToDate only once its epoch is
 * established, so every synced txn is committed by then, and the tree only ever holds committed
 * txns (a TRUNC never reaches below it). A leader message out of protocol makes us step down (back
 * to election), never crash.
 */
import type { MemberRole } from "../common/membership.js";
import { assert } from "../common/assert.js";
import { isZxid } from "../store/zxid.js";
import { zabLimits } from "./constants.js";
import { nextZxidInEpoch, ZabCoreBase } from "./core-base.js";
import type { ZabReady } from "./core-io.js";
import type { LogRecord, QuorumMessage, SessionTouch } from "./messages.js";
import { lastLoggedZxidOf, type ZabOptions } from "./options.js";
import { RELEASED_RECORD } from "./record-window.js";

export interface LearnerOptions extends ZabOptions {
  role: MemberRole;
  /** The leader the election chose; the host's stream to it carries every message. */
  leaderId: number;
}

type SyncMode = "DIFF" | "TRUNC" | "SNAP";

export class Learner extends ZabCoreBase {
  readonly kind: "follower" | "observer";
  readonly leaderId: number;
  readonly role: MemberRole;
  private readonly repairing: boolean;

  /** The epoch of the leader we follow, once its leaderInfo is accepted. */
  private leaderEpoch: number | undefined;
  private ackEpochSent = false;
  private awaitingAcceptedEpoch: number | undefined;
  private awaitingCurrentEpoch: number | undefined;
  private awaitingTruncate: number | undefined;
  private awaitingSnapshot: number | undefined;
  private syncMode: SyncMode | undefined;
  private uncommittedSyncSeen = false;
  /** newLeader's lastZxid once received; the newLeader ack goes out when it is durable. */
  private newLeaderZxid: number | undefined;
  private newLeaderAcked = false;

  /** Logged (or being logged) but not applied, ascending zxid. */
  private pending: LogRecord[] = [];
  private pendingHead = 0;
  protected lastLoggedZxid: number;
  protected durableZxid: number;
  private commitZxid: number;
  private appliedZxid: number;
  private lastAckedZxid = -1;
  private readonly touches = new Map<bigint, number>();

  private lastHeardMs: number;

  constructor(options: LearnerOptions) {
    super(options);
    this.leaderId = options.leaderId;
    this.role = options.role;
    this.repairing = options.repairing === true;
    this.kind = options.role === "participant" ? "follower" : "observer";
    // Whom to follow and as what is the host's choice: a server about to be added follows as a
    // participant the leader does not count yet, and a leader's configuration may be newer than ours.
    assert(options.leaderId !== options.myId, "a learner follows another server");
    const treeZxid = options.state.lastZxid();
    this.appliedZxid = treeZxid;
    this.commitZxid = treeZxid;
    this.lastLoggedZxid = lastLoggedZxidOf(options.durable, treeZxid);
    this.durableZxid = this.lastLoggedZxid;
    this.pending = options.durable.log.filter((r) => r.zxid > treeZxid);
    this.lastHeardMs = options.nowMs;
  }

  // ---- views for the host

  get epoch(): number | undefined {
    return this.leaderEpoch;
  }

  get lastLogged(): number {
    return this.lastLoggedZxid;
  }

  get lastApplied(): number {
    return this.appliedZxid;
  }

  // ---- inputs

  /** First call after construction: introduces us to the leader. */
  start(): ZabReady {
    this.begin();
    this.send({
      type: "learnerInfo",
      sid: this.myId,
      role: this.role,
      acceptedEpoch: this.acceptedEpoch,
      lastZxid: this.lastLoggedZxid,
      protocolVersion: zabLimits.protocolVersion,
      ...(this.repairing ? { repairing: true } : {}),
    });
    return this.finish();
  }

  /** Sends a client's write to the leader (only while serving). */
  forward(sessionId: bigint, cxid: number, request: Uint8Array): ZabReady {
    return this.relayForClient({ type: "request", sessionId, cxid, request }, "forward while not serving");
  }

  /** Asks the leader for the zxid a sync must wait for; the answer comes back in `syncsDone`. */
  requestSync(syncId: number): ZabReady {
    return this.relayForClient({ type: "sync", syncId }, "requestSync while not serving");
  }

  /** A client resumed `sessionId` here: the leader's answer comes back in `revalidated`. */
  revalidate(sessionId: bigint, timeoutMs: number): ZabReady {
    return this.relayForClient({ type: "revalidate", sessionId, timeoutMs }, "revalidate while not serving");
  }

  /** A local session was heard from; the leader learns it with our next ping answer. */
  touch(sessionId: bigint, timeoutMs: number): void {
    assert(this.touches.size < zabLimits.touchesPerPingMax || this.touches.has(sessionId), "touches between pings within bounds");
    this.touches.set(sessionId, timeoutMs);
  }

  /** The leader answers client traffic only from a learner it made up to date, i.e. one serving. */
  private relayForClient(message: QuorumMessage, notServing: string): ZabReady {
    this.begin();
    assert(this.serving, notServing);
    this.send(message);
    return this.finish();
  }

  // ---- inputs that are not messages (step, in ZabCoreBase, hands them here)

  protected onTruncated(zxid: number): void {
    assert(this.awaitingTruncate !== undefined, "truncated answers our truncateLog");
    if (zxid !== this.awaitingTruncate) {
      this.stepDown(`truncating to ${this.awaitingTruncate} left our log at ${zxid}: it lacked the leader's zxid`);
      return;
    }
    this.awaitingTruncate = undefined;
    this.durableZxid = Math.min(this.durableZxid, zxid);
    this.afterDurable();
  }

  protected onSnapshotInstalled(zxid: number): void {
    assert(zxid === this.awaitingSnapshot, "snapshotInstalled answers our installSnapshot");
    this.awaitingSnapshot = undefined;
    this.afterDurable();
  }

  protected onDisconnected(peer: number): void {
    if (peer === this.leaderId) this.stepDown("the stream to the leader closed");
  }

  // ---- messages

  protected onMessage(from: number, message: QuorumMessage): void {
    if (from !== this.leaderId) return; // a stale stream's leftovers: only our leader speaks to us
    this.lastHeardMs = this.nowMs;
    switch (message.type) {
      case "leaderInfo":
        this.onLeaderInfo(message.newEpoch);
        break;
      case "diff":
        if (!this.expectSyncStart()) break;
        if (message.lastZxid !== this.lastLoggedZxid) {
          this.stepDown(`DIFF from ${message.lastZxid}, but our log ends at ${this.lastLoggedZxid}`);
          break;
        }
        this.syncMode = "DIFF";
        break;
      case "trunc":
        if (!this.expectSyncStart()) break;
        this.onTrunc(message.zxid);
        break;
      case "snap":
        if (!this.expectSyncStart()) break;
        this.onSnap(message.zxid, message.snapshot);
        break;
      case "syncTxns":
        this.onSyncTxns(message.txns, message.committed);
        break;
      case "newLeader":
        this.onNewLeader(message.zxid);
        break;
      case "upToDate":
        if (!this.newLeaderAcked || this.phaseNow === "broadcast") {
          this.stepDown("upToDate before our newLeader ack");
          break;
        }
        this.enterPhase("broadcast");
        // An observer is synced to committed records only (its newLeader zxid is committed by now),
        // including any it had logged before and not applied; a follower hears its commit point.
        if (this.role === "observer" && this.newLeaderZxid! > this.commitZxid) this.commitZxid = this.newLeaderZxid!;
        this.applyCommitted();
        break;
      case "proposal":
      case "inform": {
        // A follower gets proposals (the commit follows); an observer informs, committed already.
        const committed = message.type === "inform";
        if (committed !== (this.role === "observer")) {
          this.stepDown(committed ? "a follower got an inform" : "an observer got a proposal");
          break;
        }
        this.onLeaderTxn(message.zxid, message.record, committed);
        break;
      }
      case "commit":
        if (this.role !== "participant" || this.newLeaderZxid === undefined || !isZxid(message.zxid) || message.zxid > this.lastLoggedZxid) {
          this.stepDown(`unexpected commit of ${message.zxid}`);
          break;
        }
        if (message.zxid > this.commitZxid) {
          this.commitZxid = message.zxid;
          this.applyCommitted();
        }
        break;
      case "ping":
        this.send({ type: "ping", touches: this.takeTouches() });
        break;
      case "syncDone":
      case "revalidated":
        // Answers to what we only ask while serving.
        if (this.phaseNow !== "broadcast") {
          this.stepDown(`${message.type} before upToDate`);
          break;
        }
        if (message.type === "syncDone") this.out.syncsDone.push({ syncId: message.syncId, zxid: message.zxid });
        else this.out.revalidated.push({ sessionId: message.sessionId, valid: message.valid });
        break;
      default:
        this.stepDown(`the leader sent a learner's message (${message.type})`);
    }
  }

  private onLeaderInfo(newEpoch: number): void {
    if (this.leaderEpoch !== undefined || !Number.isSafeInteger(newEpoch) || newEpoch < 0) {
      this.stepDown("unexpected or malformed leaderInfo");
      return;
    }
    if (newEpoch < this.acceptedEpoch) {
      this.stepDown(`leader proposes epoch ${newEpoch}, below our accepted epoch ${this.acceptedEpoch}`);
      return;
    }
    this.leaderEpoch = newEpoch;
    if (newEpoch > this.acceptedEpoch) {
      this.awaitingAcceptedEpoch = newEpoch;
      this.acceptEpoch(newEpoch);
      return;
    }
    this.sendAckEpoch();
  }

  private sendAckEpoch(): void {
    this.ackEpochSent = true;
    this.enterPhase("synchronization");
    this.send({ type: "ackEpoch", currentEpoch: this.currentEpoch, lastZxid: this.lastLoggedZxid });
  }

  /** The first sync message may only come once, after our ackEpoch. */
  private expectSyncStart(): boolean {
    if (!this.ackEpochSent || this.syncMode !== undefined) {
      this.stepDown("sync message out of order");
      return false;
    }
    return true;
  }

  private onTrunc(zxid: number): void {
    if (!isZxid(zxid) || zxid < this.appliedZxid || zxid >= this.lastLoggedZxid) {
      this.stepDown(`TRUNC to ${zxid} outside [${this.appliedZxid}, ${this.lastLoggedZxid})`);
      return;
    }
    this.syncMode = "TRUNC";
    while (this.pendingCount > 0 && this.pending[this.pending.length - 1]!.zxid > zxid) this.pending.pop();
    this.lastLoggedZxid = zxid;
    this.durableZxid = Math.min(this.durableZxid, zxid);
    this.awaitingTruncate = zxid;
    this.out.persist.push({ kind: "truncateLog", zxid });
  }

  private onSnap(zxid: number, snapshot: Uint8Array): void {
    // A repairing learner's applied state is what it is repairing: any snapshot replaces it.
    if (!isZxid(zxid) || (zxid < this.appliedZxid && !this.repairing) || !(snapshot instanceof Uint8Array)) {
      this.stepDown(`SNAP at ${zxid} below our applied ${this.appliedZxid}`);
      return;
    }
    this.syncMode = "SNAP";
    this.pending = [];
    this.pendingHead = 0;
    this.lastLoggedZxid = zxid;
    this.durableZxid = zxid;
    this.commitZxid = zxid;
    this.appliedZxid = zxid;
    this.awaitingSnapshot = zxid;
    this.out.persist.push({ kind: "installSnapshot", zxid, snapshot });
  }

  private onSyncTxns(txns: readonly LogRecord[], committed: boolean): void {
    if (this.syncMode === undefined || this.newLeaderZxid !== undefined || !Array.isArray(txns)) {
      this.stepDown("syncTxns out of order");
      return;
    }
    if (committed && this.uncommittedSyncSeen) {
      this.stepDown("committed syncTxns after uncommitted ones");
      return;
    }
    if (!committed) this.uncommittedSyncSeen = true;
    // Array.isArray above narrows to any[]; the entries are LogRecords (appendRecord checks each).
    const records: readonly LogRecord[] = txns;
    for (const txn of records) {
      if (!this.appendRecord(txn.zxid, txn.record, `synced txn ${txn.zxid}`)) return;
      if (committed) this.commitZxid = txn.zxid;
    }
  }

  private onNewLeader(lastZxid: number): void {
    if (this.syncMode === undefined || this.newLeaderZxid !== undefined) {
      this.stepDown("newLeader out of order");
      return;
    }
    if (lastZxid !== this.lastLoggedZxid) {
      this.stepDown(`newLeader at ${lastZxid}, but our log ends at ${this.lastLoggedZxid}`);
      return;
    }
    const epoch = this.leaderEpoch!;
    this.newLeaderZxid = lastZxid;
    if (epoch > this.currentEpoch) {
      this.awaitingCurrentEpoch = epoch;
      this.out.persist.push({ kind: "currentEpoch", epoch });
    }
    this.afterDurable();
  }

  /** A proposal (follower) or inform (observer) from the leader, after newLeader. */
  private onLeaderTxn(zxid: number, record: Uint8Array, committed: boolean): void {
    if (this.newLeaderZxid === undefined) {
      this.stepDown(`txn ${zxid} before newLeader`);
      return;
    }
    const expected = nextZxidInEpoch(this.leaderEpoch!, this.lastLoggedZxid);
    if (zxid !== expected) {
      this.stepDown(`txn ${zxid} from the leader, expected ${expected}`);
      return;
    }
    if (!this.appendRecord(zxid, record, `txn ${zxid}`)) return;
    if (committed) {
      this.commitZxid = zxid;
      this.applyCommitted();
    }
  }

  private appendRecord(zxid: number, record: Uint8Array, what: string): boolean {
    if (!isZxid(zxid) || zxid <= this.lastLoggedZxid || !(record instanceof Uint8Array)) {
      this.stepDown(`${what} does not follow our log end ${this.lastLoggedZxid}`);
      return false;
    }
    if (this.pendingCount >= zabLimits.learnerPendingRecordsMax) {
      this.stepDown("too many txns waiting to be applied");
      return false;
    }
    this.pending.push({ zxid, record });
    this.lastLoggedZxid = zxid;
    this.out.persist.push({ kind: "appendLog", zxid, record });
    return true;
  }

  protected onEpochDurable(which: "accepted" | "current", epoch: number): void {
    if (which === "accepted") {
      assert(epoch === this.awaitingAcceptedEpoch, "acceptedEpoch durable answers our persist");
      this.awaitingAcceptedEpoch = undefined;
      this.sendAckEpoch();
    } else {
      assert(epoch === this.awaitingCurrentEpoch, "currentEpoch durable answers our persist");
      this.awaitingCurrentEpoch = undefined;
      this.currentEpoch = epoch;
      this.afterDurable();
    }
  }

  protected onTick(): void {
    const limitMs = this.phaseNow === "broadcast" ? this.options.syncLimitMs : this.options.initLimitMs;
    if (this.nowMs - this.lastHeardMs > limitMs) this.stepDown(`nothing from leader ${this.leaderId} for more than ${limitMs} ms`);
  }

  // ---- durability-gated effects

  /** Something became durable: the newLeader ack, proposal acks and applies may now go out. */
  protected afterDurable(): void {
    if (this.newLeaderZxid === undefined) return;
    if (!this.newLeaderAcked) {
      const ready =
        this.awaitingTruncate === undefined &&
        this.awaitingSnapshot === undefined &&
        this.awaitingCurrentEpoch === undefined &&
        this.durableZxid >= this.newLeaderZxid;
      if (!ready) return;
      this.newLeaderAcked = true;
      this.lastAckedZxid = this.newLeaderZxid;
      this.send({ type: "ack", zxid: this.newLeaderZxid });
    }
    // Everything past the newLeader zxid is a proposal of the leader's epoch.
    if (this.role === "participant" && this.durableZxid > this.lastAckedZxid) {
      this.lastAckedZxid = this.durableZxid;
      this.send({ type: "ack", zxid: this.durableZxid });
    }
    this.applyCommitted();
  }

  /** Applies, in zxid order, every txn both committed and durable here (only once serving). */
  private applyCommitted(): void {
    if (this.phaseNow !== "broadcast") return;
    const upTo = Math.min(this.commitZxid, this.durableZxid);
    while (this.pendingCount > 0) {
      const record = this.pending[this.pendingHead]!;
      if (record.zxid > upTo) break;
      // Its slot lets the record go now, not when the array is next compacted.
      this.pending[this.pendingHead] = RELEASED_RECORD;
      this.pendingHead += 1;
      this.appliedZxid = record.zxid;
      this.out.apply.push(record);
    }
    if (this.pendingHead > 1024 && this.pendingHead * 2 > this.pending.length) {
      this.pending = this.pending.slice(this.pendingHead);
      this.pendingHead = 0;
    }
  }

  private get pendingCount(): number {
    return this.pending.length - this.pendingHead;
  }

  private takeTouches(): SessionTouch[] {
    const touches = [...this.touches].map(([sessionId, timeoutMs]) => ({ sessionId, timeoutMs }));
    this.touches.clear();
    return touches;
  }

  // ---- plumbing

  private send(message: QuorumMessage): void {
    this.out.send.push({ to: this.leaderId, message });
  }
}
