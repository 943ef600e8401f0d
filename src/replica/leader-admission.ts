/**
 * Leader write admission, for one term (ZooKeeper's leader-side checks ahead of its Prep →
 * Proposal stages): a client write — from this server's clients or forwarded by a learner — passes
 * the session check (alive, not being expired) and the owner check (sent from where its client is
 * now), then prep (or reconfiguration planning) turns it into a txn, which the term's core proposes.
 * The leader also makes txns of its own here: the closeSession of an expired session and the
 * deletes of the container and TTL cleanup.
 *
 * One is made per term, with that term's Prep (buildReplica passes the factory); it hands every
 * proposal to the term's Ready (the peer carries it out: log, send, commit).
 *
 * Flow control (docs/architecture.md §7b): a write is decided only when Zab's in-flight window has
 * room (`Leader.canPropose`; for a small write, `canProposeSmall`). Until then it waits in the
 * AdmissionQueue, in its session's order, and the queue hands out writes in turn across sessions
 * as commits make room (`pump`, which the peer calls after every Ready). Nothing a client sends is dropped or asserted on here: each
 * origin's share of the queue is bounded by what its server's client doors admit, and a learner
 * that forwards beyond `forwardedQueuedMax` is refused (`enqueueForwarded`), not queued.
 */
import { ZkError, ZkErrorCode } from "../common/errors.js";
import { hex64 } from "../common/hex.js";
import type { ZabReady } from "../consensus/core-io.js";
import type { Leader } from "../consensus/leader.js";
import { CleanupScanner } from "../store/cleanup-scan.js";
import type { DataTree } from "../store/data-tree.js";
import { encodeTxn } from "../store/txn-codec.js";
import type { Id, Txn, TxnBody } from "../store/types.js";
import { planReconfig, quorumOf, reconfigTxnData, type ClusterConfig } from "./cluster-config.js";
import type { Clock, HopTrace, LogSink, ReplicaMetrics } from "./ports.js";
import type { Prep } from "./prep.js";
import type { ReconfigMembership } from "./reconfig-membership.js";
import { decodeForwardedRequest } from "./request-codec.js";
import type { ReconfigRequest, WriteRequest } from "./requests.js";
import { AdmissionQueue } from "./admission-queue.js";
import { requestBytes } from "./request-bytes.js";
import type { SessionTracker } from "./session-tracker.js";

/** A write as admission takes it: a client's, or a new session's createSession. */
export type AdmittedRequest = WriteRequest | { op: "createSession"; timeoutMs: number; password: Uint8Array };

/** ZooKeeper's BufferStats of proposals: -1 until the first. */
export interface ProposalSizes {
  last: number;
  min: number;
  max: number;
}

/** A write waiting for room in the window, with what it costs its origin. */
type PendingWrite = { queuedMs: number } & (
  | { kind: "client"; origin: number; bytes: number; sessionId: bigint; cxid: number; request: AdmittedRequest; authInfo: readonly Id[] }
  | { kind: "forwarded"; origin: number; bytes: number; forwarded: ZabReady["forwarded"][number] }
  | { kind: "expire"; origin: number; bytes: number; sessionId: bigint }
);

/** Writes, and bytes of them, one learner may have waiting here at once. */
export interface ForwardedQueueBound {
  count: number;
  bytes: number;
}

export interface LeaderAdmissionDeps {
  serverId: number;
  /** What one learner may have forwarded and waiting here; beyond it the learner is refused. */
  forwardedQueuedMax: ForwardedQueueBound;
  /**
   * ZooKeeper's throttledOpWaitTime (zookeeper.throttled_op_wait_time): a client's write that
   * waited here longer than this for room in the window is not applied but answered THROTTLEDOP,
   * as ZooKeeper answers a request that waited longer in its RequestThrottler; a new session's
   * createSession and a close are never. 0 (ZooKeeper's default): off.
   */
  throttledOpWaitTimeMs: number;
  /** ZooKeeper's reconfigEnabled: whether the reconfig operation is allowed. */
  reconfigEnabled: boolean;
  containerCheckIntervalMs: number;
  containerMaxPerMinute: number;
  /** Read through on every use (the leader's tree is never replaced, but the database owns it). */
  state: { readonly tree: DataTree };
  /** The leader's session liveness and owners. */
  tracker: SessionTracker;
  membership: ReconfigMembership;
  clock: Clock;
  logger: LogSink;
  metrics?: ReplicaMetrics;
  hops?: HopTrace;
}

/** What a leader's term gives its admission: the core, and where its Readies go. */
export interface LeaderTerm {
  leader: Leader;
  /** Carry out a Ready of this term's core (the peer's host loop; ignored once the term is over). */
  carryOut(ready: ZabReady): void;
  /** Whether this term is still the peer's current one (a proposal can end it). */
  current(): boolean;
}

/** Makes a term's admission, with a fresh Prep over the tree as it stands when the term begins. */
export type LeaderAdmissionFactory = (term: LeaderTerm) => LeaderAdmission;

export class LeaderAdmission {
  private readonly cleanup: CleanupScanner;
  private sizes: ProposalSizes = { last: -1, min: -1, max: -1 };
  private servingSinceMs = 0;
  private readonly waiting = new AdmissionQueue<PendingWrite>();
  /** Set while `pump` runs: a proposal's Ready comes back here through the peer, which must not pump again. */
  private pumping = false;

  constructor(
    private readonly term: LeaderTerm,
    private readonly prep: Prep,
    private readonly deps: LeaderAdmissionDeps,
  ) {
    this.cleanup = new CleanupScanner({ intervalMs: deps.containerCheckIntervalMs, maxPerMinute: deps.containerMaxPerMinute });
  }

  /** This term's proposal sizes (stat's "Proposal sizes last/min/max"). */
  get proposalSizes(): ProposalSizes {
    return this.sizes;
  }

  /** When this term began serving (leader_uptime). */
  get servingSince(): number {
    return this.servingSinceMs;
  }

  /** Writes waiting for room in the window, and their bytes. */
  get queued(): { count: number; bytes: number } {
    return { count: this.waiting.count, bytes: this.waiting.bytes };
  }

  /**
   * Decides waiting writes, round-robin across sessions, while the window has room. Called after
   * every Ready of the term (acks and commits make room) and after each write that joins the queue.
   */
  pump(): void {
    if (this.pumping || this.waiting.count === 0) return;
    this.pumping = true;
    try {
      // A proposal can end this term (a failed write steps down): stop with it. Past a full
      // window, a small write may still go within Zab's small reserve.
      while (this.term.current()) {
        const leader = this.term.leader;
        const next = leader.canPropose ? this.waiting.shift() : leader.canProposeSmall ? this.waiting.shift(true) : undefined;
        if (next === undefined) break;
        this.decide(next);
      }
    } finally {
      this.pumping = false;
    }
  }

  /**
   * The term serves: the leader owns expiry now, and every session gets a full timeout from this
   * moment. Owners are learned afresh: every client reconnects when a term begins.
   */
  beginServing(nowMs: number): void {
    const { tracker, state } = this.deps;
    tracker.beginLeadership();
    for (const [sessionId, record] of state.tree.sessions) tracker.touch(sessionId, record.timeoutMs);
    this.servingSinceMs = nowMs;
  }

  /** A write of this server's own client (or a new session's createSession), decided in its turn. */
  admit(sessionId: bigint, cxid: number, request: AdmittedRequest, authInfo: readonly Id[]): void {
    const origin = this.deps.serverId;
    const write: PendingWrite = {
      kind: "client",
      origin,
      bytes: requestBytes(request),
      sessionId,
      cxid,
      request,
      authInfo,
      queuedMs: this.deps.clock.nowMs(),
    };
    const atOnce = this.enter(sessionId, write);
    this.deps.hops?.hop("submit", { session: hex64(sessionId), cxid, queuedBytes: atOnce ? 0 : this.waiting.bytes });
    this.decideOrPump(write, atOnce);
  }

  /**
   * Nothing waits and the window has room: a write is decided as it comes, as the queue would
   * hand it out at once anyway, without a turn through it (the common case, and the queue's
   * per-session bookkeeping cost the leader a few percent of its small-write throughput).
   */
  private decidesAtOnce(): boolean {
    return !this.pumping && this.waiting.count === 0 && this.term.current() && this.term.leader.canPropose;
  }

  /**
   * A write a learner forwarded, decided in its turn; false (and nothing queued) when that learner
   * already has `forwardedQueuedMax` waiting: a learner never forwards more than its own doors
   * admit, so one that does is broken, and the host refuses it.
   */
  enqueueForwarded(forwarded: ZabReady["forwarded"][number]): boolean {
    const share = this.waiting.queuedFrom(forwarded.from);
    const bound = this.deps.forwardedQueuedMax;
    if (share.count >= bound.count || share.bytes >= bound.bytes) return false;
    const write: PendingWrite = {
      kind: "forwarded",
      origin: forwarded.from,
      bytes: forwarded.request.byteLength,
      forwarded,
      queuedMs: this.deps.clock.nowMs(),
    };
    const atOnce = this.enter(forwarded.sessionId, write);
    this.deps.hops?.hop("arrive", {
      session: hex64(forwarded.sessionId),
      cxid: forwarded.cxid,
      from: forwarded.from,
      bytes: write.bytes,
      queuedBytes: atOnce ? 0 : this.waiting.bytes,
    });
    this.decideOrPump(write, atOnce);
    return true;
  }

  /** Whether `write` goes at once (see decidesAtOnce), counted as its turn; if not, it waits in the queue. */
  private enter(sessionId: bigint, write: PendingWrite): boolean {
    if (this.decidesAtOnce()) {
      this.waiting.wentInTurn(write.bytes);
      return true;
    }
    this.waiting.push(sessionId, write);
    return false;
  }

  /** After `enter` (and its hop): the write is decided, or the queue hands out what may go. */
  private decideOrPump(write: PendingWrite, atOnce: boolean): void {
    if (atOnce) this.decide(write);
    else this.pump();
  }

  private decide(write: PendingWrite): void {
    switch (write.kind) {
      case "client":
        if (this.waitedTooLong(write) && throttlable(write.request)) return this.answerThrottled(write.sessionId, write.cxid);
        return this.decideWrite(write.sessionId, write.cxid, write.request, write.authInfo, write.origin);
      case "forwarded":
        return this.decideForwarded(write.forwarded, this.waitedTooLong(write));
      case "expire": {
        const zxid = this.term.leader.allocateZxid();
        return this.propose(
          { sessionId: write.sessionId, cxid: 0, zxid, timeMs: this.deps.clock.wallMs() },
          this.prep.prepareCloseSession(write.sessionId, zxid),
        );
      }
    }
  }

  /** Whether a write waited here longer than throttledOpWaitTimeMs (when that is on). */
  private waitedTooLong(write: PendingWrite): boolean {
    const waitMax = this.deps.throttledOpWaitTimeMs;
    return waitMax > 0 && this.deps.clock.nowMs() - write.queuedMs > waitMax;
  }

  /** THROTTLEDOP in an error txn: it answers the client in its session's order, wherever the client is. */
  private answerThrottled(sessionId: bigint, cxid: number): void {
    this.deps.metrics?.throttledOp();
    const zxid = this.term.leader.allocateZxid();
    this.propose({ sessionId, cxid, zxid, timeMs: this.deps.clock.wallMs() }, { type: "error", err: ZkErrorCode.THROTTLEDOP });
  }

  /** `origin`: the server whose client sent the request (this one, or the learner that forwarded it). */
  private decideWrite(sessionId: bigint, cxid: number, request: AdmittedRequest, authInfo: readonly Id[], origin: number): void {
    const { tracker, membership } = this.deps;
    const leader = this.term.leader;
    const zxid = leader.allocateZxid();
    let body: TxnBody;
    let config: ClusterConfig | undefined;
    if (request.op === "createSession" && this.deps.state.tree.sessions.has(sessionId)) {
      // A second session under a live session's id (its server's clock went back across a restart,
      // and its tree had not seen the first yet): refused, or the two clients would share one session.
      body = { type: "error", err: ZkErrorCode.SESSIONEXPIRED };
    } else if (request.op === "createSession") {
      tracker.setOwner(sessionId, origin);
      body = { type: "createSession", timeoutMs: request.timeoutMs, password: request.password };
    } else if (request.op !== "close" && !this.sessionLive(sessionId)) {
      // ZooKeeper's checkSession: a request reaching the leader after it expired the session (its
      // server was slow to relay pings, or held the request) must not take effect. Proposed after
      // the closeSession, an ephemeral create would outlive its session forever. A close is
      // proposed all the same, as in ZooKeeper: closing twice is harmless.
      body = { type: "error", err: ZkErrorCode.SESSIONEXPIRED };
    } else if (!tracker.claim(sessionId, origin)) {
      // Sent on a connection its client has left: the error txn answers it, in order, where it came from.
      body = { type: "error", err: ZkErrorCode.SESSIONMOVED };
    } else if (request.op === "reconfig" && membership.reconfigurable) {
      const planned = this.planReconfig(request, zxid, authInfo);
      body = planned.body;
      config = planned.config;
    } else {
      body = this.prep.prepare(request, sessionId, zxid, authInfo);
    }
    // Stamped once decided, as ZooKeeper stamps a txn after prep.
    this.propose({ sessionId, cxid, zxid, timeMs: this.deps.clock.wallMs() }, body, config);
  }

  /**
   * A write a learner forwarded: decided as the learner's client sent it, or MARSHALLINGERROR if it
   * does not decode, or THROTTLEDOP if it `waitedTooLong` and may be throttled.
   */
  private decideForwarded(forwarded: ZabReady["forwarded"][number], waitedTooLong: boolean): void {
    let decoded;
    try {
      decoded = decodeForwardedRequest(forwarded.request);
    } catch (error) {
      if (!(error instanceof ZkError)) throw error;
      // The learner's client still needs its answer, in order: an error txn carries it.
      const zxid = this.term.leader.allocateZxid();
      this.propose(
        { sessionId: forwarded.sessionId, cxid: forwarded.cxid, zxid, timeMs: this.deps.clock.wallMs() },
        { type: "error", err: ZkErrorCode.MARSHALLINGERROR },
      );
      return;
    }
    if (waitedTooLong && throttlable(decoded.request)) return this.answerThrottled(forwarded.sessionId, forwarded.cxid);
    this.decideWrite(forwarded.sessionId, forwarded.cxid, decoded.request, decoded.authInfo, forwarded.from);
  }

  /**
   * Whether `sessionId` exists and is not being expired. Every txn the leader proposed before is
   * applied by now (a client learns its session only once its server applied the createSession,
   * after the leader committed and applied it), so the tree is the truth here.
   */
  private sessionLive(sessionId: bigint): boolean {
    return this.deps.state.tree.sessions.has(sessionId) && !this.deps.tracker.isClosing(sessionId);
  }

  /** Whether `sessionId` is alive; if so, `owner` is where its client is now (ZooKeeper's revalidateSession). */
  revalidate(sessionId: bigint, timeoutMs: number, owner: number): boolean {
    const { tracker } = this.deps;
    if (!this.sessionLive(sessionId)) return false;
    tracker.setOwner(sessionId, owner);
    tracker.touch(sessionId, timeoutMs);
    // The moment the session moves: writes from its previous server proposed after this are SESSIONMOVED.
    this.deps.logger.debug({ session: hex64(sessionId), owner }, "session owner");
    return true;
  }

  /** The closeSession of a session this leader expired (server-made, cxid 0), after the session's waiting writes. */
  expire(sessionId: bigint): void {
    this.waiting.push(sessionId, { kind: "expire", origin: this.deps.serverId, bytes: 0, sessionId, queuedMs: this.deps.clock.nowMs() });
    this.pump();
  }

  /** The tree applied `zxid`: prep retires the changes it had in flight up to it. */
  applied(zxid: number): void {
    this.prep.applied(zxid);
  }

  /**
   * When a cleanup scan is due, propose a server-made delete (session 0, as ZooKeeper's
   * deleteContainer) for each node it picked that prep still finds deletable. Clients' writes go
   * first: candidates left over while any wait, or when the window is full, wait for the next scan.
   */
  cleanUp(nowMs: number): void {
    if (this.waiting.count > 0) return;
    const leader = this.term.leader;
    const paths = this.cleanup.poll(this.deps.state.tree, nowMs);
    const deleted: string[] = [];
    for (const path of paths) {
      // A proposal can end this term (a failed write steps down): stop with it.
      if (!this.term.current() || !leader.canPropose) break;
      const prepared = this.prep.prepareDeleteContainer(path, nowMs, () => leader.allocateZxid());
      if (!prepared) continue;
      deleted.push(path);
      this.propose({ sessionId: 0n, cxid: 0, zxid: prepared.zxid, timeMs: nowMs }, prepared.body);
    }
    if (deleted.length > 0) this.deps.logger.info({ count: deleted.length, first: deleted[0] }, "deleting empty containers and expired TTL nodes");
  }

  /** The reconfig txn (or the error ZooKeeper answers) and, if it is one, the configuration it installs. */
  private planReconfig(request: ReconfigRequest, zxid: number, authInfo: readonly Id[]): { body: TxnBody; config?: ClusterConfig } {
    const leader = this.term.leader;
    // ZooKeeper's isQuorumSynced: the leader and its synced followers — participants, as those log
    // the proposal; an observer about to be promoted does not, and could not vote for it.
    const synced = [
      this.deps.serverId,
      ...leader
        .learners()
        .filter((l) => l.role === "participant" && (l.stage === "synced" || l.stage === "upToDate"))
        .map((l) => l.sid),
    ];
    let config: ClusterConfig;
    try {
      config = planReconfig(
        request,
        { enabled: this.deps.reconfigEnabled, current: this.deps.membership.configInForce, inFlight: leader.reconfigInFlight, synced },
        zxid,
      );
    } catch (error) {
      if (!(error instanceof ZkError)) throw error;
      return { body: { type: "error", err: error.errno } };
    }
    const body = this.prep.prepareReconfig(reconfigTxnData(config), authInfo);
    return body.type === "reconfig" ? { body, config } : { body };
  }

  private propose(header: Txn["header"], body: TxnBody, config?: ClusterConfig): void {
    const record = encodeTxn({ header, body });
    const sizes = this.sizes;
    const bytes = record.byteLength;
    this.sizes = { last: bytes, min: sizes.min < 0 ? bytes : Math.min(sizes.min, bytes), max: Math.max(sizes.max, bytes) };
    this.deps.metrics?.proposed();
    this.deps.hops?.hop("propose", {
      session: hex64(header.sessionId),
      cxid: header.cxid,
      zxid: header.zxid,
      bytes,
      inFlightBytes: this.term.leader.outstandingBytes,
      queuedBytes: this.waiting.bytes,
      queued: this.waiting.count,
    });
    this.term.carryOut(this.term.leader.propose(header.zxid, record, config === undefined ? undefined : quorumOf(config)));
  }
}

/** ZooKeeper's Request.isThrottlable: anything but a new session's createSession and a close. */
function throttlable(request: AdmittedRequest): boolean {
  return request.op !== "createSession" && request.op !== "close";
}
