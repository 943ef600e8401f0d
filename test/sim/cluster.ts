/**
 * A whole corral cluster in one process, driven by one seeded PRNG (DESIGN.md §3, STYLE.md
 * practice 6): per server the real FastLeaderElection, the real Zab core, a real DataTree and an
 * in-memory txn log, epochs store and snapshot whose writes become durable only after a simulated
 * fsync delay (a crash discards the rest); a network that delays, drops, duplicates and reorders
 * election datagrams, carries Zab over FIFO streams that can break (noisily or silently), and
 * honours symmetric and one-way partitions; clock jumps; and clients issuing writes, reads and
 * syncs through sessions, as anonymous, owner or super user against nodes with restrictive ACLs
 * (acl-workload.ts): every ACL decision is checked against that model. The same seed replays the
 * same run exactly.
 */
import { FastLeaderElection, type Decision, type ElectionOutput, type ElectionSelf } from "../../src/election/fast-leader-election.js";
import type { Notification } from "../../src/election/types.js";
import type { PersistAction, ZabReady } from "../../src/consensus/core-io.js";
import type { LogRecord, QuorumMessage } from "../../src/consensus/messages.js";
import { QuorumVerifier } from "../../src/consensus/quorum.js";
import { createZab, type ZabCore } from "../../src/consensus/zab.js";
import { ZkErrorCode } from "../../src/common/errors.js";
import { DataTree } from "../../src/store/data-tree.js";
import { SessionTable } from "../../src/store/session-table.js";
import { decodeSnapshot, encodeSnapshot } from "../../src/store/snapshot-codec.js";
import { decodeTxn, encodeTxn } from "../../src/store/txn-codec.js";
import { formatZxid } from "../../src/store/zxid.js";
import { permits } from "../../src/replica/acl.js";
import { Prep } from "../../src/replica/prep.js";
import type { CreateRequest, WriteRequest } from "../../src/replica/requests.js";
import { CleanupScanner, cleanupKind } from "../../src/store/cleanup-scan.js";
import { ownerKind, Perms, ttlOfOwner, type Id, type Txn, type TxnBody } from "../../src/store/types.js";
import { authInfoOf, GUARDED_ACL, identityOf, readRefused, SECRET_ACL, writeRefused } from "./acl-workload.js";
import { Checker } from "./checker.js";
import { Prng } from "./prng.js";

export interface SimConfig {
  voters: number;
  observers: number;
  tickMs: number;
  initLimitTicks: number;
  syncLimitTicks: number;
  /** Small, to force SNAP syncs. */
  committedLogRecordsMax: number;
  snapshotEveryTxns: number;
  clients: number;
  netDelayMsMax: number;
  fsyncMsMax: number;
  /** Election datagrams: loss and duplication probabilities. */
  electionLoss: number;
  electionDuplicate: number;
  /** Zab streams: chance that a message breaks its stream. */
  streamBreak: number;
  /** Mean time between client requests, per client. */
  clientThinkMsMax: number;
  /**
   * "fle": the real FastLeaderElection. "oracle": a stand-in that decides from the simulator's
   * global view and, while faults run, sometimes picks a leader that is not the most up to date
   * (Zab's safety must not depend on the election choosing well).
   */
  election: "fle" | "oracle";
  /** The leader's container and TTL cleanup scan interval. */
  containerCheckIntervalMs: number;
}

export function defaultConfig(prng: Prng): SimConfig {
  return {
    voters: prng.pick([3, 3, 5]),
    observers: prng.pick([0, 0, 1]),
    tickMs: 100,
    initLimitTicks: 10,
    syncLimitTicks: 5,
    committedLogRecordsMax: prng.pick([4, 16, 64]),
    snapshotEveryTxns: prng.pick([10, 40, 1000]),
    clients: prng.between(1, 4),
    netDelayMsMax: prng.pick([5, 20, 60]),
    fsyncMsMax: prng.pick([2, 10, 40]),
    electionLoss: prng.pick([0, 0.05, 0.2]),
    electionDuplicate: prng.pick([0, 0.05]),
    streamBreak: prng.pick([0, 0.001, 0.005]),
    clientThinkMsMax: prng.pick([40, 150, 500]),
    election: prng.chance(0.25) ? "oracle" : "fle",
    containerCheckIntervalMs: prng.pick([50, 200, 600]),
  };
}

const SIM_TICK_MS = 10;
const CLIENT_REQUEST_TIMEOUT_MS = 3_000;
/** Every client session's timeout (20 ticks: ZooKeeper's largest by default). */
const SESSION_TIMEOUT_MS = 2_000;
/** A client dies (stops talking, its session must expire) with this chance per think. */
const CLIENT_DEATH_CHANCE = 0.003;
/** TTLs the workload gives its TTL nodes. */
const TTLS_MS = [50, 300, 1_500] as const;
/** Cleanup deletions a minute: enough that the limit never holds back the liveness check. */
const CLEANUP_MAX_PER_MINUTE = 100_000;
/** How long the cleanup liveness check may watch, and what it allows beyond the scans it waits for. */
const CLEANUP_BUDGET_MS = 10_000;
const CLEANUP_SLACK_MS = 300;

// ------------------------------------------------------------------------------------------------
// Events

type SimEvent =
  | { kind: "tick" }
  | { kind: "election"; from: number; to: number; notification: Notification }
  /** The election link from → to reconnected: it resends its last notification (QuorumCnxManager does). */
  | { kind: "electionReconnect"; from: number; to: number }
  | { kind: "zab"; conn: Conn; toLeader: boolean; message: QuorumMessage }
  | { kind: "disconnected"; server: number; term: number; peer: number }
  | { kind: "disk"; server: number; incarnation: number }
  | { kind: "clientRequest"; server: number; clientId: number; connection: number; request: ClientRequest }
  | { kind: "clientReply"; clientId: number; connection: number; reply: ClientReply }
  | { kind: "clientThink"; clientId: number }
  | { kind: "clientLost"; clientId: number; connection: number }
  | { kind: "resume"; server: number; incarnation: number }
  | { kind: "clientReborn"; clientId: number };

interface QueuedEvent {
  atMs: number;
  seq: number;
  event: SimEvent;
}

class EventQueue {
  private heap: QueuedEvent[] = [];
  private seq = 0;

  push(atMs: number, event: SimEvent): void {
    const item = { atMs, seq: this.seq++, event };
    const heap = this.heap;
    heap.push(item);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  peekTime(): number | undefined {
    return this.heap[0]?.atMs;
  }

  pop(): QueuedEvent | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined) return undefined;
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    }
    return top;
  }

  get size(): number {
    return this.heap.length;
  }
}

function before(a: QueuedEvent, b: QueuedEvent): boolean {
  return a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq);
}

// ------------------------------------------------------------------------------------------------
// Servers

/** One Zab stream, learner ⇄ leader. */
interface Conn {
  id: number;
  learner: number;
  leader: number;
  learnerTerm: number;
  /** Set when the leader's host accepts the learnerInfo. */
  leaderTerm: number | undefined;
  open: boolean;
  /** Last scheduled arrival per direction, to keep each direction FIFO. */
  lastArrivalToLeader: number;
  lastArrivalToLearner: number;
}

interface DiskOp {
  action: PersistAction;
  term: number;
  doneAtMs: number;
}

interface Durable {
  acceptedEpoch: number;
  currentEpoch: number;
  log: LogRecord[];
  snapshot: { zxid: number; bytes: Uint8Array } | undefined;
}

interface PendingRequest {
  clientId: number;
  connection: number;
  request: ClientRequest;
  done: boolean;
  reply: ClientReply | undefined;
  /** Syncs: the zxid the tree must reach (once known). */
  syncZxid: number | undefined;
}

class SimServer {
  up = true;
  incarnation = 0;
  durable: Durable = { acceptedEpoch: 0, currentEpoch: 0, log: [], snapshot: undefined };
  /** The log as the host sees it: durable records plus queued writes. */
  logView: LogRecord[] = [];
  tree = new DataTree();
  election: SimElection;
  zab: ZabCore | undefined;
  /** Increments with every Zab core: messages and disk answers for an older core are dropped. */
  term = 0;
  prep: Prep | undefined;
  serving = false;
  pendingDecision: Decision | undefined;
  disk: DiskOp[] = [];
  clockOffsetMs = 0;
  /** Leader side: the stream of each learner. Learner side: the stream to the leader. */
  learnerConns = new Map<number, Conn>();
  leaderConn: Conn | undefined;
  /** Client requests in arrival order per client (FIFO). */
  sessions = new Map<number, PendingRequest[]>();
  writesInFlight = new Map<string, PendingRequest>();
  syncsInFlight = new Map<number, PendingRequest>();
  nextSyncId = 1;
  /** Leader only: when each session was last heard of, through any server. */
  sessionTable: SessionTable | undefined;
  /** Leader only: sessions whose closeSession is proposed. */
  closingSessions = new Set<bigint>();
  /** Leader only: its container and TTL cleanup schedule. */
  cleanup: CleanupScanner | undefined;
  /** The first ack of the current follower core (its newLeader ack) is sent. */
  firstAckSent = false;
  appliedSinceSnapshot = 0;
  pausedUntilMs = 0;
  /** Events that arrived while paused, in order. */
  deferred: SimEvent[] = [];

  constructor(
    readonly id: number,
    readonly observer: boolean,
    readonly newElection: () => SimElection,
  ) {
    this.election = newElection();
  }

  get lastLoggedZxid(): number {
    const last = this.logView[this.logView.length - 1]?.zxid ?? 0;
    return Math.max(last, this.tree.lastProcessedZxid);
  }
}

/** What the host needs of an election: FastLeaderElection, or the oracle stand-in below. */
interface SimElection {
  startLooking(self: ElectionSelf, nowMs: number): ElectionOutput;
  receive(n: Notification, nowMs: number): ElectionOutput;
  tick(nowMs: number): ElectionOutput;
  settle(decision: Decision): void;
  readonly decision: Decision | undefined;
}

/**
 * A stand-in election that exchanges no messages: a looking server decides after a random pause,
 * on a leader the simulator picks from its global view (see Simulation.pickLeader). Servers may
 * decide differently; Zab must stay safe whatever they decide.
 */
class OracleElection implements SimElection {
  private decideAtMs: number | undefined;
  private decided: Decision | undefined;
  private round = 0;

  constructor(
    private readonly myId: number,
    private readonly observer: boolean,
    private readonly pick: () => number | undefined,
    private readonly pauseMs: () => number,
  ) {}

  get decision(): Decision | undefined {
    return this.decided;
  }

  startLooking(_self: ElectionSelf, nowMs: number): ElectionOutput {
    this.round += 1;
    this.decided = undefined;
    this.decideAtMs = nowMs + this.pauseMs();
    return { send: [], decided: undefined };
  }

  receive(): ElectionOutput {
    return { send: [], decided: undefined };
  }

  tick(nowMs: number): ElectionOutput {
    if (this.decideAtMs === undefined || nowMs < this.decideAtMs) return { send: [], decided: undefined };
    const leader = this.pick();
    if (leader === undefined || (this.observer && leader === this.myId)) {
      this.decideAtMs = nowMs + this.pauseMs();
      return { send: [], decided: undefined };
    }
    this.decideAtMs = undefined;
    const state = leader === this.myId ? "leading" : this.observer ? "observing" : "following";
    this.decided = { leader, state, vote: { leader, zxid: 0, peerEpoch: 0 }, round: this.round };
    return { send: [], decided: this.decided };
  }

  settle(decision: Decision): void {
    this.decided = decision;
  }
}

// ------------------------------------------------------------------------------------------------
// Clients

/** What a session asks to have ordered: a client write, or its own creation. */
type SimWrite = WriteRequest | { op: "createSession"; timeoutMs: number };

/** Requests carry the ids of the client's connection, as a real connection holds them. */
export type ClientRequest =
  | { op: "write"; cxid: number; sessionId: bigint; write: SimWrite; authInfo: readonly Id[] }
  | { op: "read"; cxid: number; path: string; authInfo: readonly Id[] }
  | { op: "sync"; cxid: number };

interface ClientReply {
  cxid: number;
  zxid: number;
  /** 0, or the error the txn carried (SESSIONEXPIRED when the session was gone). */
  err: number;
}

interface SimClient {
  id: number;
  /** Undefined until a createSession for this client commits. */
  sessionId: bigint | undefined;
  /** The session id being created (its createSession is in flight). */
  creatingSessionId: bigint | undefined;
  sessionGeneration: number;
  alive: boolean;
  server: number | undefined;
  connection: number;
  nextCxid: number;
  inFlight: { request: ClientRequest; sentAtMs: number; ackedZxidMaxAtSend: number }[];
  lastZxidSeen: number;
  lastWriteZxid: number;
  /** The write-ack high-water mark when the last completed sync was sent: reads after it must reach it. */
  syncFloor: number;
}

// ------------------------------------------------------------------------------------------------

/** Servers kept out of a convergence: crashed ones stay down, isolated ones are cut off from the rest. */
export interface Minority {
  crashed: number[];
  isolated: number[];
}

export type Fault =
  | { kind: "crash"; server: number }
  | { kind: "restart"; server: number }
  | { kind: "partition"; a: number; b: number; oneWay: boolean }
  | { kind: "isolate"; server: number }
  | { kind: "heal" }
  | { kind: "clockJump"; server: number; deltaMs: number }
  | { kind: "restartAll" }
  /** Crash whoever leads right now (nothing if nobody does). */
  | { kind: "crashLeader" }
  /** Cut the current leader and one follower off from everyone else. */
  | { kind: "isolateLeaderWithOne" }
  /** Stop a server's process for a while (SIGSTOP): it resumes believing what it believed. */
  | { kind: "pause"; server: number; durationMs: number }
  | { kind: "pauseLeader"; durationMs: number };

export class Simulation {
  readonly prng: Prng;
  readonly config: SimConfig;
  readonly checker = new Checker();
  readonly quorum: QuorumVerifier;
  readonly servers: SimServer[] = [];
  readonly clients: SimClient[] = [];
  private readonly queue = new EventQueue();
  private readonly blocked = new Set<string>();
  private readonly lastNotification = new Map<string, Notification>();
  private nextConnId = 1;
  private nextClientConnection = 1;
  private readonly clientLinkArrival = new Map<string, number>();
  nowMs = 0;
  /** The last lines of what happened, printed with a failure. */
  readonly trace: string[] = [];
  clientsActive = true;
  /** Sessions no client will use again (each must expire, its ephemerals vanish everywhere), with when they were abandoned. */
  readonly deadSessions = new Map<bigint, number>();
  /** Set once the faults stop: the oracle election then always picks well. */
  healing = false;
  stats = {
    events: 0,
    commits: 0,
    elections: 0,
    snaps: 0,
    truncs: 0,
    diffs: 0,
    stepDowns: 0,
    ackedWrites: 0,
    sessionsExpired: 0,
    clientDeaths: 0,
    containersDeleted: 0,
    ttlNodesDeleted: 0,
    aclRefusals: 0,
    /** Runs whose first convergence kept a minority out (convergeWithout). */
    minorityPhases: 0,
  };
  /** Writes sent, by session and cxid, until their txn is first applied and its ACL verdict checked. */
  private readonly writeIntents = new Map<string, { write: WriteRequest; clientId: number }>();
  /** The highest zxid whose ACL verdict was checked: each committed txn is checked once, at its first apply. */
  private aclCheckedZxid = 0;

  constructor(seed: number, config: Partial<SimConfig> = {}) {
    this.prng = new Prng(seed);
    this.config = { ...defaultConfig(this.prng.fork()), ...config };
    const voters = Array.from({ length: this.config.voters }, (_, i) => i + 1);
    const observers = Array.from({ length: this.config.observers }, (_, i) => this.config.voters + i + 1);
    this.quorum = new QuorumVerifier(voters, observers);
    this.checker.onViolation = (line) => this.log(line);
    for (const id of voters) this.servers.push(new SimServer(id, false, () => this.newElection(id, false)));
    for (const id of observers) this.servers.push(new SimServer(id, true, () => this.newElection(id, true)));
    for (let i = 0; i < this.config.clients; i++) {
      this.clients.push({
        id: i + 1,
        sessionId: undefined,
        creatingSessionId: undefined,
        sessionGeneration: 0,
        alive: true,
        server: undefined,
        connection: 0,
        nextCxid: 1,
        inFlight: [],
        lastZxidSeen: 0,
        lastWriteZxid: 0,
        syncFloor: 0,
      });
    }
    this.queue.push(SIM_TICK_MS, { kind: "tick" });
    for (const server of this.servers) this.startLooking(server);
    for (const client of this.clients) this.queue.push(this.prng.int(200), { kind: "clientThink", clientId: client.id });
  }

  server(id: number): SimServer {
    return this.servers[id - 1]!;
  }

  private newElection(id: number, observer: boolean): SimElection {
    if (this.config.election === "oracle") return new OracleElection(id, observer, () => this.pickLeader(), () => 50 + this.prng.int(400));
    return new FastLeaderElection({ myId: id, role: observer ? "observer" : "participant", quorum: this.quorum, maxNotificationIntervalMs: 1_600 });
  }

  /** The oracle's choice: the most up-to-date running voter, or (while faults run) sometimes any. */
  private pickLeader(): number | undefined {
    // Once faults stop, only a minority can still be cut off (convergeWithout): never pick one of them.
    const candidates = this.servers.filter((s) => s.up && !s.observer && (!this.healing || this.reachesQuorum(s)));
    if (candidates.length === 0) return undefined;
    // An established leader is joined, as FastLeaderElection's out-of-election path does.
    const established = candidates.find((s) => s.zab?.kind === "leader" && s.serving);
    if (established !== undefined && (this.healing || this.prng.chance(0.8))) return established.id;
    if (!this.healing && this.prng.chance(0.3)) return this.prng.pick(candidates).id;
    const rank = (s: SimServer) => [s.durable.currentEpoch, s.lastLoggedZxid, s.id];
    candidates.sort((a, b) => {
      const [x, y] = [rank(a), rank(b)];
      for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return y[i]! - x[i]!;
      return 0;
    });
    return candidates[0]!.id;
  }

  /** Whether the running voters `server` can reach both ways (itself included) form a quorum. */
  private reachesQuorum(server: SimServer): boolean {
    const reachable = this.servers.filter((o) => o.up && (o.id === server.id || (!this.isBlocked(server.id, o.id) && !this.isBlocked(o.id, server.id))));
    return this.quorum.containsQuorum(reachable.map((o) => o.id));
  }

  log(line: string): void {
    this.trace.push(`${String(this.nowMs).padStart(7)} ${line}`);
    if (this.trace.length > 4000) this.trace.splice(0, 1000);
  }

  // ---- running

  runFor(durationMs: number): void {
    const until = this.nowMs + durationMs;
    for (;;) {
      const at = this.queue.peekTime();
      if (at === undefined || at > until) break;
      const item = this.queue.pop()!;
      this.nowMs = item.atMs;
      this.stats.events += 1;
      this.handleEvent(item.event);
    }
    this.nowMs = until;
  }

  private at(delayMs: number, event: SimEvent): void {
    this.queue.push(this.nowMs + delayMs, event);
  }

  private netDelay(): number {
    return 1 + this.prng.int(this.config.netDelayMsMax);
  }

  private clock(server: SimServer): number {
    return Math.max(0, this.nowMs + server.clockOffsetMs);
  }

  private handleEvent(event: SimEvent): void {
    const target = this.targetOf(event);
    if (target !== undefined) {
      const server = this.server(target);
      if (server.up && server.pausedUntilMs > this.nowMs) {
        server.deferred.push(event); // handled in arrival order when the process resumes
        return;
      }
    }
    switch (event.kind) {
      case "resume": {
        const server = this.server(event.server);
        if (server.pausedUntilMs > this.nowMs || server.incarnation !== event.incarnation) break; // extended, or crashed
        const deferred = server.deferred;
        server.deferred = [];
        for (const e of deferred) this.handleEvent(e);
        break;
      }
      case "tick":
        for (const server of this.servers) if (server.up && server.pausedUntilMs <= this.nowMs) this.tickServer(server);
        this.at(SIM_TICK_MS, { kind: "tick" });
        if (this.nowMs % 500 === 0) this.checkDigests();
        break;
      case "election": {
        const server = this.server(event.to);
        if (!server.up) break;
        this.handleElection(server, server.election.receive(event.notification, this.clock(server)));
        break;
      }
      case "electionReconnect":
        this.reconnectElection(event.from, event.to);
        break;
      case "zab":
        this.deliverZab(event.conn, event.toLeader, event.message);
        break;
      case "disconnected": {
        const server = this.server(event.server);
        if (server.up && server.zab !== undefined && server.term === event.term) this.handleReady(server, server.zab.step({ type: "disconnected", peer: event.peer }));
        break;
      }
      case "disk":
        this.completeDisk(this.server(event.server), event.incarnation);
        break;
      case "clientRequest":
        this.serverReceivesRequest(this.server(event.server), event.clientId, event.connection, event.request);
        break;
      case "clientReply":
        this.clientReceivesReply(this.clients[event.clientId - 1]!, event.connection, event.reply);
        break;
      case "clientThink":
        this.clientThink(this.clients[event.clientId - 1]!);
        break;
      case "clientReborn":
        this.clients[event.clientId - 1]!.alive = true;
        break;
      case "clientLost": {
        const client = this.clients[event.clientId - 1]!;
        if (client.connection === event.connection) this.clientDisconnect(client, "server dropped the session");
        break;
      }
    }
  }

  private tickServer(server: SimServer): void {
    const now = this.clock(server);
    this.handleElection(server, server.election.tick(now));
    if (server.zab !== undefined) this.handleReady(server, server.zab.step({ type: "tick", nowMs: now }));
    this.expireSessions(server, now);
    this.cleanUp(server, now);
  }

  /** The leader deletes empty containers and expired TTL nodes, as QuorumPeer.cleanUp does. */
  private cleanUp(server: SimServer, nowMs: number): void {
    const zab = server.zab;
    if (zab?.kind !== "leader" || !zab.serving || server.cleanup === undefined || server.prep === undefined) return;
    for (const path of server.cleanup.poll(server.tree, nowMs)) {
      if (server.zab !== zab || server.prep === undefined || !zab.canPropose) break;
      const prepared = server.prep.prepareDeleteContainer(path, nowMs, () => zab.allocateZxid());
      if (prepared === undefined) continue;
      this.log(`${server.id} deletes ${path}`);
      this.handleReady(server, zab.propose(prepared.zxid, encodeTxn({ header: { sessionId: 0n, cxid: 0, zxid: prepared.zxid, timeMs: nowMs }, body: prepared.body })));
    }
  }

  /** The leader expires sessions not heard of within their timeout: a replicated closeSession each. */
  private expireSessions(server: SimServer, nowMs: number): void {
    const zab = server.zab;
    if (zab?.kind !== "leader" || !zab.serving || server.sessionTable === undefined || server.prep === undefined) return;
    for (const sessionId of server.sessionTable.expired(nowMs)) {
      if (!server.tree.sessions.has(sessionId) || server.closingSessions.has(sessionId) || !zab.canPropose) continue;
      server.closingSessions.add(sessionId);
      this.log(`${server.id} expires session ${sessionId}`);
      this.stats.sessionsExpired += 1;
      const zxid = zab.allocateZxid();
      const body = server.prep.prepareCloseSession(sessionId, zxid);
      this.handleReady(server, zab.propose(zxid, encodeTxn({ header: { sessionId, cxid: 0, zxid, timeMs: nowMs }, body })));
    }
  }

  /** Contact from a live session, at its server or relayed by a learner's ping. */
  private touchSession(server: SimServer, sessionId: bigint, timeoutMs: number): void {
    if (server.sessionTable === undefined || !server.tree.sessions.has(sessionId) || server.closingSessions.has(sessionId)) return;
    server.sessionTable.touch(sessionId, timeoutMs, this.clock(server));
  }

  // ---- election

  private startLooking(server: SimServer): void {
    this.stats.elections += 1;
    server.pendingDecision = undefined;
    this.handleElection(server, server.election.startLooking({ lastZxid: server.lastLoggedZxid, currentEpoch: server.durable.currentEpoch }, this.clock(server)));
  }

  private handleElection(server: SimServer, output: ElectionOutput): void {
    for (const { to, notification } of output.send) this.sendNotification(server.id, to, notification);
    if (output.decided !== undefined) {
      this.log(`${server.id} decided ${output.decided.state} ${output.decided.leader}`);
      server.pendingDecision = output.decided;
      this.maybeStartZab(server);
    }
  }

  /**
   * Election traffic: datagram-like delay, loss and duplication, but a lost message breaks the
   * link, and a link that comes back resends its last notification (ZooKeeper's QuorumCnxManager
   * keeps lastMessageSent per peer for this): the election relies on it to make progress.
   */
  private sendNotification(from: number, to: number, notification: Notification): void {
    this.lastNotification.set(`${from}>${to}`, notification);
    if (this.isBlocked(from, to)) return;
    if (this.prng.chance(this.config.electionLoss)) {
      this.at(100 + this.prng.int(400), { kind: "electionReconnect", from, to });
      return;
    }
    this.at(this.netDelay(), { kind: "election", from, to, notification });
    if (this.prng.chance(this.config.electionDuplicate)) this.at(this.netDelay(), { kind: "election", from, to, notification });
  }

  private reconnectElection(from: number, to: number): void {
    const notification = this.lastNotification.get(`${from}>${to}`);
    if (notification === undefined || !this.server(from).up || !this.server(to).up) return;
    this.sendNotification(from, to, notification);
  }

  /** A new core starts only once every write of the previous one is durable. */
  private maybeStartZab(server: SimServer): void {
    const decision = server.pendingDecision;
    if (decision === undefined || server.disk.length > 0 || server.zab !== undefined) return;
    server.pendingDecision = undefined;
    server.term += 1;
    server.firstAckSent = false;
    const treeZxid = server.tree.lastProcessedZxid;
    const options = {
      myId: server.id,
      quorum: this.quorum,
      tickMs: this.config.tickMs,
      initLimitTicks: this.config.initLimitTicks,
      syncLimitTicks: this.config.syncLimitTicks,
      durable: { acceptedEpoch: server.durable.acceptedEpoch, currentEpoch: server.durable.currentEpoch, log: this.logTail(server, treeZxid) },
      state: {
        snapshot: () => ({ zxid: server.tree.lastProcessedZxid, bytes: encodeSnapshot(server.tree) }),
        lastZxid: () => server.tree.lastProcessedZxid,
      },
      nowMs: this.clock(server),
      committedLogRecordsMax: this.config.committedLogRecordsMax,
    };
    if (decision.state === "leading") {
      server.zab = createZab({ kind: "leader" }, options);
      server.prep = new Prep(server.tree, { ttlNodesEnabled: true });
      server.cleanup = new CleanupScanner({ intervalMs: this.config.containerCheckIntervalMs, maxPerMinute: CLEANUP_MAX_PER_MINUTE });
      // A new leader gives every session a fresh timeout (ZooKeeper does the same).
      server.sessionTable = new SessionTable(this.config.tickMs);
      server.closingSessions = new Set();
      for (const [sessionId, record] of server.tree.sessions) server.sessionTable.touch(sessionId, record.timeoutMs, this.clock(server));
    } else {
      server.zab = createZab({ kind: decision.state === "following" ? "follower" : "observer", leaderId: decision.leader }, options);
      server.prep = undefined;
      server.cleanup = undefined;
      server.sessionTable = undefined;
      const conn: Conn = {
        id: this.nextConnId++,
        learner: server.id,
        leader: decision.leader,
        learnerTerm: server.term,
        leaderTerm: undefined,
        open: true,
        lastArrivalToLeader: 0,
        lastArrivalToLearner: 0,
      };
      server.leaderConn = conn;
    }
    this.log(`${server.id} term ${server.term}: ${server.zab.kind} (tree ${formatZxid(treeZxid)}, log ${formatZxid(server.lastLoggedZxid)})`);
    this.handleReady(server, server.zab.start());
  }

  /** The durable log tail a new core gets: every record after the tree, plus earlier ones when contiguous. */
  private logTail(server: SimServer, treeZxid: number): LogRecord[] {
    const log = server.logView;
    const after = log.filter((r) => r.zxid > treeZxid);
    const treeIndex = log.findIndex((r) => r.zxid === treeZxid);
    if (treeIndex < 0) return after;
    const start = Math.max(0, treeIndex - this.config.committedLogRecordsMax);
    return log.slice(start);
  }

  // ---- Zab effects

  private handleReady(server: SimServer, ready: ZabReady): void {
    const zab = server.zab;
    if (zab === undefined) return;
    for (const e of ready.events) {
      this.log(`${server.id} ${JSON.stringify(e)}`);
      if (e.event === "phase" && e.phase === "broadcast" && zab.kind === "leader") {
        this.checker.established(e.epoch, server.id, server.term);
        this.settleElection(server, e.epoch);
      }
      if (e.event === "phase" && e.phase === "broadcast" && zab.kind !== "leader") this.settleElection(server, e.epoch);
      if (e.event === "syncMode") {
        if (e.mode === "SNAP") this.stats.snaps += 1;
        else if (e.mode === "TRUNC") this.stats.truncs += 1;
        else this.stats.diffs += 1;
      }
    }
    for (const action of ready.persist) this.persist(server, action);
    for (const { to, message } of ready.send) this.sendZab(server, to, message);
    for (const record of ready.apply) this.applyRecord(server, record);
    for (const peer of ready.disconnect) {
      const conn = server.learnerConns.get(peer);
      if (conn !== undefined) this.closeConn(conn, "leader dropped learner", true);
    }
    if (ready.forwarded.length > 0 && zab.kind === "leader") {
      for (const f of ready.forwarded) {
        const { write, authInfo } = decodeRequest(f.request);
        if (zab.serving && zab.canPropose) this.proposeWrite(server, f.sessionId, f.cxid, write, authInfo);
      }
    }
    for (const touch of ready.touches) this.touchSession(server, touch.sessionId, touch.timeoutMs);
    for (const done of ready.syncsDone) {
      const pending = server.syncsInFlight.get(done.syncId);
      server.syncsInFlight.delete(done.syncId);
      if (pending !== undefined) pending.syncZxid = done.zxid;
    }
    const wasServing = server.serving;
    server.serving = ready.serving && ready.stepDown === undefined;
    if (ready.stepDown !== undefined) {
      this.stats.stepDowns += 1;
      this.log(`${server.id} term ${server.term} steps down: ${ready.stepDown.reason}`);
      this.teardownZab(server);
      this.startLooking(server);
    } else if (wasServing && !server.serving) {
      this.dropClients(server);
    }
    this.drainSessions(server);
  }

  private settleElection(server: SimServer, epoch: number): void {
    const decision = server.election.decision;
    if (decision === undefined) return;
    server.election.settle({ ...decision, vote: { ...decision.vote, peerEpoch: epoch } });
  }

  private teardownZab(server: SimServer): void {
    server.sessionTable = undefined;
    for (const conn of [...server.learnerConns.values()]) this.closeConn(conn, "leader stopped", true);
    if (server.leaderConn !== undefined) this.closeConn(server.leaderConn, "learner stopped", true);
    server.zab = undefined;
    server.prep = undefined;
    server.cleanup = undefined;
    server.serving = false;
    this.dropClients(server);
  }

  private persist(server: SimServer, action: PersistAction): void {
    switch (action.kind) {
      case "appendLog":
        server.logView.push({ zxid: action.zxid, record: action.record });
        break;
      case "truncateLog":
        if (action.zxid < server.tree.lastProcessedZxid) {
          this.checker.fail("committed prefixes agree", `server ${server.id} asked to truncate to ${formatZxid(action.zxid)} below its tree ${formatZxid(server.tree.lastProcessedZxid)}`);
        }
        server.logView = server.logView.filter((r) => r.zxid <= action.zxid);
        break;
      case "installSnapshot": {
        server.tree = decodeSnapshot(action.snapshot);
        server.logView = [];
        this.checker.resetServer(server.id, action.zxid, server.tree.digest());
        break;
      }
      case "acceptedEpoch":
      case "currentEpoch":
        break;
    }
    const last = server.disk[server.disk.length - 1]?.doneAtMs ?? this.nowMs;
    const doneAtMs = Math.max(last, this.nowMs + 1 + this.prng.int(this.config.fsyncMsMax));
    server.disk.push({ action, term: server.term, doneAtMs });
    this.queue.push(doneAtMs, { kind: "disk", server: server.id, incarnation: server.incarnation });
  }

  private completeDisk(server: SimServer, incarnation: number): void {
    if (!server.up || server.incarnation !== incarnation) return;
    const op = server.disk[0];
    if (op === undefined || op.doneAtMs > this.nowMs) return;
    server.disk.shift();
    const d = server.durable;
    const action = op.action;
    let input: Parameters<ZabCore["step"]>[0];
    switch (action.kind) {
      case "appendLog":
        d.log.push({ zxid: action.zxid, record: action.record });
        input = { type: "logDurable", zxid: action.zxid };
        break;
      case "truncateLog": {
        d.log = d.log.filter((r) => r.zxid <= action.zxid);
        const end = Math.max(d.log[d.log.length - 1]?.zxid ?? 0, d.snapshot?.zxid ?? 0);
        input = { type: "truncated", zxid: end };
        break;
      }
      case "installSnapshot":
        d.snapshot = { zxid: action.zxid, bytes: action.snapshot };
        d.log = [];
        input = { type: "snapshotInstalled", zxid: action.zxid };
        break;
      case "acceptedEpoch":
        d.acceptedEpoch = action.epoch;
        input = { type: "epochDurable", which: "accepted", epoch: action.epoch };
        break;
      case "currentEpoch":
        d.currentEpoch = action.epoch;
        input = { type: "epochDurable", which: "current", epoch: action.epoch };
        break;
    }
    if (server.zab !== undefined && op.term === server.term) this.handleReady(server, server.zab.step(input));
    if (server.disk.length === 0) this.maybeStartZab(server);
  }

  private applyRecord(server: SimServer, record: LogRecord): void {
    const txn = decodeTxn(record.record);
    if (txn.header.zxid !== record.zxid) this.checker.fail("committed prefixes agree", `record ${formatZxid(record.zxid)} carries zxid ${formatZxid(txn.header.zxid)}`);
    const cleanupKind = this.checkCleanupDelete(server, txn);
    if (record.zxid > this.aclCheckedZxid) {
      this.aclCheckedZxid = record.zxid;
      this.checkWriteVerdict(server, txn);
    }
    server.tree.apply(txn);
    if (server.zab?.kind === "leader" && cleanupKind === "container") this.stats.containersDeleted += 1;
    if (server.zab?.kind === "leader" && cleanupKind === "ttl") this.stats.ttlNodesDeleted += 1;
    server.prep?.applied(record.zxid);
    if (server.sessionTable !== undefined) {
      if (txn.body.type === "createSession") server.sessionTable.touch(txn.header.sessionId, txn.body.timeoutMs, this.clock(server));
      if (txn.body.type === "closeSession") {
        server.sessionTable.remove(txn.header.sessionId);
        server.closingSessions.delete(txn.header.sessionId);
      }
    }
    this.checker.applied(server.id, record.zxid, record.record);
    if (server.zab?.kind === "leader") this.stats.commits += 1;
    const key = `${txn.header.sessionId}:${txn.header.cxid}`;
    const pending = server.writesInFlight.get(key);
    if (pending !== undefined) {
      server.writesInFlight.delete(key);
      pending.done = true;
      pending.reply = { cxid: pending.request.cxid, zxid: record.zxid, err: txn.body.type === "error" ? txn.body.err : 0 };
    }
    this.maybeSnapshot(server);
  }

  /**
   * A delete no session asked for (session 0) is the leader's cleanup: whoever applies it must find
   * an empty container that has had a child, or a childless TTL node expired at the txn's time.
   */
  private checkCleanupDelete(server: SimServer, txn: Txn): "container" | "ttl" | undefined {
    if (txn.header.sessionId !== 0n || txn.body.type !== "delete") return undefined;
    const path = txn.body.path;
    const node = server.tree.getNode(path);
    const kind = node === undefined ? undefined : cleanupKind(node.stat, txn.header.timeMs);
    if (kind === undefined) {
      const what = node === undefined ? "a missing node" : `a node with owner ${node.stat.ephemeralOwner}, ${node.stat.numChildren} children, cversion ${node.stat.cversion}, mtime ${node.stat.mtime}`;
      this.checker.fail("the leader deletes only empty containers and expired TTL nodes", `server ${server.id} applies a cleanup delete of ${path} at ${formatZxid(txn.header.zxid)} (time ${txn.header.timeMs}): ${what}`);
    }
    return kind;
  }

  private maybeSnapshot(server: SimServer): void {
    const zxid = server.tree.lastProcessedZxid;
    server.appliedSinceSnapshot += 1;
    if (server.appliedSinceSnapshot < this.config.snapshotEveryTxns) return;
    server.appliedSinceSnapshot = 0;
    server.durable.snapshot = { zxid, bytes: encodeSnapshot(server.tree) };
    // Keep a few records before the snapshot to seed the DIFF window.
    const keepFrom = server.logView.findIndex((r) => r.zxid === zxid);
    if (keepFrom > 4) {
      const cut = server.logView[keepFrom - 4]!.zxid;
      server.logView = server.logView.filter((r) => r.zxid >= cut);
      server.durable.log = server.durable.log.filter((r) => r.zxid >= cut);
    }
  }

  // ---- network: Zab streams

  private sendZab(server: SimServer, to: number, message: QuorumMessage): void {
    let conn: Conn | undefined;
    let toLeader: boolean;
    if (server.zab?.kind === "leader") {
      conn = server.learnerConns.get(to);
      toLeader = false;
    } else {
      conn = server.leaderConn;
      toLeader = true;
      if (message.type === "ack" && server.zab !== undefined) {
        const leaderServer = this.server(to);
        const leaderEpoch = leaderServer.zab?.kind === "leader" && conn?.leaderTerm === leaderServer.term ? leaderServer.zab.epoch : undefined;
        const durableEnd = Math.max(server.durable.log[server.durable.log.length - 1]?.zxid ?? 0, server.durable.snapshot?.zxid ?? 0, server.tree.lastProcessedZxid);
        if (leaderEpoch !== undefined) this.checker.ackSent(server.id, message.zxid, server.zab.epoch, leaderEpoch, !server.firstAckSent, durableEnd);
        server.firstAckSent = true;
      }
    }
    if (conn === undefined || !conn.open) return;
    if (this.isBlocked(server.id, to)) {
      // A partition stalls the stream: half the time both ends learn at once, else only timeouts tell.
      this.closeConn(conn, "partitioned", this.prng.chance(0.5));
      return;
    }
    if (this.prng.chance(this.config.streamBreak)) {
      this.closeConn(conn, "stream broke", true);
      return;
    }
    const arrival = Math.max(this.nowMs + this.netDelay(), toLeader ? conn.lastArrivalToLeader : conn.lastArrivalToLearner);
    if (toLeader) conn.lastArrivalToLeader = arrival;
    else conn.lastArrivalToLearner = arrival;
    this.queue.push(arrival, { kind: "zab", conn, toLeader, message });
  }

  private deliverZab(conn: Conn, toLeader: boolean, message: QuorumMessage): void {
    if (!conn.open) return;
    if (toLeader) {
      const leader = this.server(conn.leader);
      if (conn.leaderTerm === undefined) {
        if (message.type !== "learnerInfo") {
          this.closeConn(conn, "stream opened without learnerInfo", true);
          return;
        }
        if (!leader.up || leader.zab?.kind !== "leader") {
          // Not leading (yet): like ZooKeeper's connectToLeader, try again shortly; the learner's
          // initLimit decides when to give up.
          const learner = this.server(conn.learner);
          if (learner.up && learner.term === conn.learnerTerm && learner.leaderConn === conn) {
            this.queue.push(this.nowMs + 100, { kind: "zab", conn, toLeader, message });
          }
          return;
        }
        const old = leader.learnerConns.get(conn.learner);
        if (old !== undefined) this.closeConn(old, "replaced", false);
        conn.leaderTerm = leader.term;
        leader.learnerConns.set(conn.learner, conn);
      }
      if (!leader.up || leader.term !== conn.leaderTerm || leader.zab === undefined) return;
      this.handleReady(leader, leader.zab.step({ type: "message", from: conn.learner, message }));
    } else {
      const learner = this.server(conn.learner);
      if (!learner.up || learner.term !== conn.learnerTerm || learner.zab === undefined) return;
      this.handleReady(learner, learner.zab.step({ type: "message", from: conn.leader, message }));
    }
  }

  /** Closes a stream; `notify` tells both ends (after a delay), otherwise only their timeouts will. */
  private closeConn(conn: Conn, why: string, notify: boolean): void {
    if (!conn.open) return;
    conn.open = false;
    this.log(`stream ${conn.learner}→${conn.leader} closed: ${why}${notify ? "" : " (silently)"}`);
    const leader = this.server(conn.leader);
    if (leader.learnerConns.get(conn.learner) === conn) leader.learnerConns.delete(conn.learner);
    const learner = this.server(conn.learner);
    if (learner.leaderConn === conn) learner.leaderConn = undefined;
    if (!notify) return;
    if (conn.leaderTerm !== undefined) this.at(this.netDelay(), { kind: "disconnected", server: conn.leader, term: conn.leaderTerm, peer: conn.learner });
    this.at(this.netDelay(), { kind: "disconnected", server: conn.learner, term: conn.learnerTerm, peer: conn.leader });
  }

  /** Client connections are streams too: each direction delivers in order. */
  private fifoArrival(direction: string): number {
    const arrival = Math.max(this.nowMs + this.netDelay(), this.clientLinkArrival.get(direction) ?? 0);
    this.clientLinkArrival.set(direction, arrival);
    return arrival;
  }

  private isBlocked(from: number, to: number): boolean {
    return this.blocked.has(`${from}>${to}`);
  }

  // ---- faults

  applyFault(fault: Fault): void {
    this.log(`FAULT ${JSON.stringify(fault)}`);
    switch (fault.kind) {
      case "crash":
        this.crash(this.server(fault.server));
        break;
      case "restart":
        this.restart(this.server(fault.server));
        break;
      case "partition":
        this.blocked.add(`${fault.a}>${fault.b}`);
        if (!fault.oneWay) this.blocked.add(`${fault.b}>${fault.a}`);
        break;
      case "isolate":
        for (const other of this.servers) {
          if (other.id === fault.server) continue;
          this.blocked.add(`${fault.server}>${other.id}`);
          this.blocked.add(`${other.id}>${fault.server}`);
        }
        break;
      case "heal":
        for (const link of this.blocked) {
          const [from, to] = link.split(">").map(Number) as [number, number];
          this.at(this.netDelay(), { kind: "electionReconnect", from, to });
        }
        this.blocked.clear();
        break;
      case "clockJump":
        this.server(fault.server).clockOffsetMs += fault.deltaMs;
        break;
      case "restartAll":
        for (const server of this.servers) this.crash(server);
        for (const server of this.servers) this.restart(server);
        break;
      case "crashLeader": {
        const leader = this.currentLeader();
        if (leader !== undefined) this.crash(leader);
        break;
      }
      case "isolateLeaderWithOne": {
        const leader = this.currentLeader();
        if (leader === undefined) break;
        const buddy = this.servers.find((s) => s.id !== leader.id && s.zab?.kind === "follower" && s.up);
        const inside = new Set([leader.id, buddy?.id ?? leader.id]);
        for (const a of this.servers) {
          for (const b of this.servers) {
            if (inside.has(a.id) !== inside.has(b.id)) this.blocked.add(`${a.id}>${b.id}`);
          }
        }
        break;
      }
      case "pause":
        this.pause(this.server(fault.server), fault.durationMs);
        break;
      case "pauseLeader": {
        const leader = this.currentLeader();
        if (leader !== undefined) this.pause(leader, fault.durationMs);
        break;
      }
    }
  }

  private currentLeader(): SimServer | undefined {
    return this.servers.find((s) => s.up && s.zab?.kind === "leader" && s.serving) ?? this.servers.find((s) => s.up && s.zab?.kind === "leader");
  }

  private pause(server: SimServer, durationMs: number): void {
    if (!server.up) return;
    server.pausedUntilMs = Math.max(server.pausedUntilMs, this.nowMs + durationMs);
    this.queue.push(server.pausedUntilMs, { kind: "resume", server: server.id, incarnation: server.incarnation });
  }

  /** The server an event is processed by, if the event must wait while that server is paused. */
  private targetOf(event: SimEvent): number | undefined {
    switch (event.kind) {
      case "election":
      case "electionReconnect":
        return event.to;
      case "zab":
        return event.toLeader ? event.conn.leader : event.conn.learner;
      case "disconnected":
      case "disk":
      case "clientRequest":
        return event.server;
      default:
        return undefined;
    }
  }

  private crash(server: SimServer): void {
    if (!server.up) return;
    const silent = this.prng.chance(0.5);
    for (const conn of [...server.learnerConns.values()]) this.closeConn(conn, "crash", !silent);
    if (server.leaderConn !== undefined) this.closeConn(server.leaderConn, "crash", !silent);
    this.dropClients(server);
    server.up = false;
    server.pausedUntilMs = 0;
    server.deferred = [];
    server.incarnation += 1;
    server.zab = undefined;
    server.prep = undefined;
    server.cleanup = undefined;
    server.sessionTable = undefined;
    server.serving = false;
    server.disk = [];
    server.pendingDecision = undefined;
  }

  private restart(server: SimServer): void {
    if (server.up) return;
    server.up = true;
    server.incarnation += 1;
    const d = server.durable;
    server.tree = d.snapshot !== undefined ? decodeSnapshot(d.snapshot.bytes) : new DataTree();
    server.appliedSinceSnapshot = 0;
    server.logView = d.log.slice();
    server.election = server.newElection();
    for (const peer of this.servers) {
      this.lastNotification.delete(`${server.id}>${peer.id}`);
      if (peer.id !== server.id) this.at(this.netDelay(), { kind: "electionReconnect", from: peer.id, to: server.id });
    }
    this.checker.resetServer(server.id, server.tree.lastProcessedZxid, server.tree.digest());
    this.startLooking(server);
  }

  healAll(): void {
    this.applyFault({ kind: "heal" });
    for (const server of this.servers) if (!server.up) this.applyFault({ kind: "restart", server: server.id });
  }

  private checkDigests(): void {
    for (const server of this.servers) {
      if (server.up) this.checker.digestAt(server.id, server.tree.lastProcessedZxid, server.tree.digest());
    }
  }

  // ---- clients

  private clientThink(client: SimClient): void {
    this.at(1 + this.prng.int(this.config.clientThinkMsMax), { kind: "clientThink", clientId: client.id });
    if (!this.clientsActive) return;
    // Requests that went unanswered too long: the client gives up on the connection.
    const oldest = client.inFlight[0];
    if (oldest !== undefined && this.nowMs - oldest.sentAtMs > CLIENT_REQUEST_TIMEOUT_MS) {
      this.clientDisconnect(client, "request timed out");
    }
    if (!client.alive) return;
    if (this.prng.chance(CLIENT_DEATH_CHANCE)) {
      this.clientDies(client);
      return;
    }
    if (client.server === undefined) {
      this.clientConnect(client);
      return;
    }
    if (client.inFlight.length >= 3) return;
    const cxid = client.nextCxid++;
    if (client.sessionId === undefined) {
      // A session first: nothing else goes out until its createSession is answered.
      if (client.creatingSessionId !== undefined) {
        client.nextCxid -= 1;
        return;
      }
      client.sessionGeneration += 1;
      const sessionId = (BigInt(client.id) << 32n) | BigInt(client.sessionGeneration);
      client.creatingSessionId = sessionId;
      const request: ClientRequest = { op: "write", cxid, sessionId, write: { op: "createSession", timeoutMs: SESSION_TIMEOUT_MS }, authInfo: authInfoOf(client.id) };
      client.inFlight.push({ request, sentAtMs: this.nowMs, ackedZxidMaxAtSend: this.checker.ackedZxidMax });
      this.queue.push(this.fifoArrival(`${client.connection}>`), { kind: "clientRequest", server: client.server, clientId: client.id, connection: client.connection, request });
      return;
    }
    const roll = this.prng.float();
    let request: ClientRequest;
    const authInfo = authInfoOf(client.id);
    if (roll < 0.6) {
      const write = this.randomWrite(client, cxid);
      request = { op: "write", cxid, sessionId: client.sessionId, write, authInfo };
      this.writeIntents.set(`${client.sessionId}:${cxid}`, { write, clientId: client.id });
    } else if (roll < 0.85) request = { op: "read", cxid, path: `/${this.prng.pick(["k", "k", "k", "r", "q"])}${this.prng.int(3)}`, authInfo };
    else request = { op: "sync", cxid };
    client.inFlight.push({ request, sentAtMs: this.nowMs, ackedZxidMaxAtSend: this.checker.ackedZxidMax });
    this.queue.push(this.fifoArrival(`${client.connection}>`), { kind: "clientRequest", server: client.server, clientId: client.id, connection: client.connection, request });
  }

  private randomWrite(client: SimClient, cxid: number): WriteRequest {
    const data = new TextEncoder().encode(`${client.id}:${cxid}`);
    if (this.prng.chance(0.3)) return this.randomContainerOrTtlWrite(client, data);
    if (this.prng.chance(0.25)) return this.randomGuardedWrite(data);
    const path = `/k${this.prng.int(5)}`;
    const roll = this.prng.float();
    if (roll < 0.15) return { op: "create", path: `/e${client.id}-${this.prng.int(4)}`, data, acl: [], mode: "ephemeral", ttlMs: 0 };
    if (roll < 0.3) return { op: "create", path, data, acl: [], mode: "persistent", ttlMs: 0 };
    if (roll < 0.5) return { op: "create", path: `/s-`, data, acl: [], mode: "persistent-sequential", ttlMs: 0 };
    if (roll < 0.85) return { op: "setData", path, data, version: -1 };
    return { op: "delete", path, version: -1 };
  }

  /**
   * Containers holding the clients' ephemeral members (emptied by deletes and by session expiry),
   * sometimes deleted and recreated as persistent nodes by a client, and TTL nodes (plain and
   * sequential) whose children and data changes hold back their expiry.
   */
  private randomContainerOrTtlWrite(client: SimClient, data: Uint8Array): WriteRequest {
    const container = `/c${this.prng.int(3)}`;
    const ttlNode = `/t${this.prng.int(3)}`;
    const ttlMs = this.prng.pick(TTLS_MS);
    const create = (path: string, mode: CreateRequest["mode"], ttl = 0): WriteRequest => ({ op: "create", path, data, acl: [], mode, ttlMs: ttl });
    const roll = this.prng.float();
    if (roll < 0.15) return create(container, "container");
    if (roll < 0.35) return create(`${container}/m${client.id}`, "ephemeral");
    if (roll < 0.5) return { op: "delete", path: `${container}/m${client.id}`, version: -1 };
    if (roll < 0.54) return create(container, "persistent");
    if (roll < 0.6) return { op: "delete", path: container, version: -1 };
    if (roll < 0.72) return create(ttlNode, "persistent-with-ttl", ttlMs);
    if (roll < 0.8) return create("/ts-", "persistent-sequential-with-ttl", ttlMs);
    if (roll < 0.87) return create(`${ttlNode}/x`, "persistent");
    if (roll < 0.94) return { op: "delete", path: `${ttlNode}/x`, version: -1 };
    return { op: "setData", path: ttlNode, data, version: -1 };
  }

  /** A write to or under the nodes acl-workload.ts protects, by whoever this client is. */
  private randomGuardedWrite(data: Uint8Array): WriteRequest {
    const n = this.prng.int(3);
    const roll = this.prng.float();
    if (roll < 0.2) return { op: "create", path: `/r${n}`, data, acl: GUARDED_ACL, mode: "persistent", ttlMs: 0 };
    if (roll < 0.3) return { op: "create", path: `/q${n}`, data, acl: SECRET_ACL, mode: "persistent", ttlMs: 0 };
    if (roll < 0.55) return { op: "setData", path: this.prng.chance(0.7) ? `/r${n}` : `/q${n}`, data, version: -1 };
    if (roll < 0.75) return { op: "create", path: `/r${n}/c${this.prng.int(3)}`, data, acl: [], mode: "persistent", ttlMs: 0 };
    if (roll < 0.92) return { op: "delete", path: `/r${n}/c${this.prng.int(3)}`, version: -1 };
    return { op: "delete", path: this.prng.chance(0.7) ? `/r${n}` : `/q${n}`, version: -1 };
  }

  /**
   * Before a newly committed txn is first applied, the tree is exactly what prep decided it against:
   * its NOAUTH, or the absence of one, must be the model's verdict.
   */
  private checkWriteVerdict(server: SimServer, txn: Txn): void {
    const key = `${txn.header.sessionId}:${txn.header.cxid}`;
    const intent = this.writeIntents.get(key);
    if (intent === undefined) return;
    this.writeIntents.delete(key);
    const err = txn.body.type === "error" ? txn.body.err : 0;
    // A write of a session already gone is refused before prep looks at any ACL.
    if (err === ZkErrorCode.SESSIONEXPIRED) return;
    const identity = identityOf(intent.clientId);
    const expected = writeRefused(intent.write, identity, (path) => server.tree.getNode(path) !== undefined);
    if (err === ZkErrorCode.NOAUTH) this.stats.aclRefusals += 1;
    if (expected !== (err === ZkErrorCode.NOAUTH)) {
      this.checker.fail("ACL decisions follow each node's ACL", `${identity} client ${intent.clientId}'s ${intent.write.op} ${"path" in intent.write ? intent.write.path : ""} committed at ${formatZxid(txn.header.zxid)} with err ${err}, expected ${expected ? "NOAUTH" : "no NOAUTH"}`);
    }
  }

  /** A read at `server`, checked there as the pipeline checks it: NONODE, then READ on the node. */
  private readVerdict(server: SimServer, clientId: number, path: string, authInfo: readonly Id[]): number {
    const node = server.tree.getNode(path);
    if (node === undefined) return ZkErrorCode.NONODE;
    const err = permits(node.acl, Perms.READ, authInfo) ? 0 : ZkErrorCode.NOAUTH;
    if (err === ZkErrorCode.NOAUTH) this.stats.aclRefusals += 1;
    const identity = identityOf(clientId);
    if (readRefused(path, identity) !== (err === ZkErrorCode.NOAUTH)) {
      this.checker.fail("ACL decisions follow each node's ACL", `${identity} client ${clientId}'s read of ${path} at server ${server.id} (${formatZxid(server.tree.lastProcessedZxid)}) answered ${err}`);
    }
    return err;
  }

  /** The client process dies: it never talks again with this session; it comes back later with a new one. */
  private clientDies(client: SimClient): void {
    this.log(`client ${client.id} dies (session ${client.sessionId ?? client.creatingSessionId})`);
    this.stats.clientDeaths += 1;
    for (const sessionId of [client.sessionId, client.creatingSessionId]) if (sessionId !== undefined) this.deadSessions.set(sessionId, this.nowMs);
    this.clientDisconnect(client, "died");
    client.alive = false;
    client.sessionId = undefined;
    client.creatingSessionId = undefined;
    this.at(3_000 + this.prng.int(3_000), { kind: "clientReborn", clientId: client.id });
  }

  private clientConnect(client: SimClient): void {
    const candidates = this.servers.filter((s) => s.up && s.serving && !this.isBlocked(s.id, 0));
    if (candidates.length === 0) return;
    const server = this.prng.pick(candidates);
    // Single system image: a server behind what the client has seen refuses the session.
    if (server.tree.lastProcessedZxid < client.lastZxidSeen) return;
    client.server = server.id;
    client.connection = this.nextClientConnection++;
    server.sessions.set(client.id, []);
    this.log(`client ${client.id} connected to ${server.id} (seen ${formatZxid(client.lastZxidSeen)})`);
  }

  private clientDisconnect(client: SimClient, why: string): void {
    if (client.server === undefined) return;
    this.log(`client ${client.id} lost ${client.server}: ${why}`);
    if (client.creatingSessionId !== undefined) {
      // Its createSession may still commit: then nobody will use that session, and it must expire.
      this.deadSessions.set(client.creatingSessionId, this.nowMs);
      client.creatingSessionId = undefined;
    }
    const server = this.server(client.server);
    const queue = server.sessions.get(client.id);
    if (queue !== undefined) server.sessions.delete(client.id);
    client.server = undefined;
    client.inFlight = [];
    client.connection = this.nextClientConnection++;
  }

  private serverReceivesRequest(server: SimServer, clientId: number, connection: number, request: ClientRequest): void {
    const client = this.clients[clientId - 1]!;
    const queue = server.sessions.get(clientId);
    if (!server.up || !server.serving || queue === undefined || client.connection !== connection || client.server !== server.id) return;
    const pending: PendingRequest = { clientId, connection, request, done: false, reply: undefined, syncZxid: undefined };
    queue.push(pending);
    const zab = server.zab!;
    const sessionId = client.sessionId;
    if (sessionId !== undefined) {
      if (zab.kind === "leader") this.touchSession(server, sessionId, SESSION_TIMEOUT_MS);
      else zab.touch(sessionId, SESSION_TIMEOUT_MS);
    }
    switch (request.op) {
      case "write":
        server.writesInFlight.set(`${request.sessionId}:${request.cxid}`, pending);
        if (zab.kind === "leader") {
          if (zab.canPropose) this.proposeWrite(server, request.sessionId, request.cxid, request.write, request.authInfo);
        } else {
          this.handleReady(server, zab.forward(request.sessionId, request.cxid, encodeRequest(request.write, request.authInfo)));
        }
        break;
      case "sync": {
        const syncId = server.nextSyncId++;
        server.syncsInFlight.set(syncId, pending);
        this.handleReady(server, zab.requestSync(syncId));
        break;
      }
      case "read":
        break;
    }
    this.drainSessions(server);
  }

  private proposeWrite(server: SimServer, sessionId: bigint, cxid: number, write: SimWrite, authInfo: readonly Id[]): void {
    const zab = server.zab;
    if (zab?.kind !== "leader" || server.prep === undefined) return;
    const zxid = zab.allocateZxid();
    let body: TxnBody;
    if (write.op === "createSession") {
      body = server.tree.sessions.has(sessionId) ? { type: "error", err: ZkErrorCode.NODEEXISTS } : { type: "createSession", timeoutMs: write.timeoutMs, password: new Uint8Array(8) };
    } else if (sessionId !== 0n && (!server.tree.sessions.has(sessionId) || server.closingSessions.has(sessionId))) {
      // ZooKeeper's checkSession: a write of a session that is gone (or going) is an error txn.
      body = { type: "error", err: ZkErrorCode.SESSIONEXPIRED };
    } else {
      body = server.prep.prepare(write, sessionId, zxid, authInfo);
    }
    const record = encodeTxn({ header: { sessionId, cxid, zxid, timeMs: this.clock(server) }, body });
    this.handleReady(server, zab.propose(zxid, record));
  }

  /** Answers, per session in arrival order, every request that is complete. */
  private drainSessions(server: SimServer): void {
    if (!server.serving) return;
    for (const [clientId, queue] of server.sessions) {
      while (queue.length > 0) {
        const head = queue[0]!;
        if (head.request.op === "read") {
          const err = this.readVerdict(server, clientId, head.request.path, head.request.authInfo);
          head.reply = { cxid: head.request.cxid, zxid: server.tree.lastProcessedZxid, err };
        }
        else if (head.request.op === "sync") {
          if (head.syncZxid === undefined || server.tree.lastProcessedZxid < head.syncZxid) break;
          head.reply = { cxid: head.request.cxid, zxid: server.tree.lastProcessedZxid, err: 0 };
        } else if (!head.done) break;
        queue.shift();
        this.queue.push(this.fifoArrival(`${head.connection}<`), { kind: "clientReply", clientId, connection: head.connection, reply: head.reply! });
      }
    }
  }

  private dropClients(server: SimServer): void {
    for (const [clientId, queue] of server.sessions) {
      const connection = queue[0]?.connection ?? this.clients[clientId - 1]!.connection;
      this.at(this.netDelay(), { kind: "clientLost", clientId, connection });
    }
    server.sessions.clear();
    server.writesInFlight.clear();
    server.syncsInFlight.clear();
  }

  private clientReceivesReply(client: SimClient, connection: number, reply: ClientReply): void {
    if (client.connection !== connection) return;
    const expected = client.inFlight.shift();
    const property = "client order and single system image";
    if (expected === undefined || expected.request.cxid !== reply.cxid) {
      this.checker.fail(property, `client ${client.id} got the answer to ${reply.cxid}, expected ${expected?.request.cxid}`);
      return;
    }
    const request = expected.request;
    // A write answers with its own txn's zxid, which may precede what an earlier read or sync on
    // the same session reflected; reads and syncs reflect the whole tree and never go back.
    if (request.op === "write" && reply.zxid <= client.lastWriteZxid) {
      this.checker.fail(property, `client ${client.id}'s write ${request.cxid} committed at ${formatZxid(reply.zxid)}, not after its earlier write at ${formatZxid(client.lastWriteZxid)}`);
    }
    if (request.op !== "write" && reply.zxid < client.lastZxidSeen) {
      this.checker.fail(property, `client ${client.id} saw ${formatZxid(reply.zxid)} after ${formatZxid(client.lastZxidSeen)}`);
    }
    client.lastZxidSeen = Math.max(client.lastZxidSeen, reply.zxid);
    if (request.op === "write" && request.write.op === "createSession" && request.sessionId === client.creatingSessionId) {
      client.creatingSessionId = undefined;
      if (reply.err === 0) client.sessionId = request.sessionId;
    } else if (request.op === "write" && reply.err === ZkErrorCode.SESSIONEXPIRED && request.sessionId === client.sessionId) {
      this.log(`client ${client.id}'s session ${request.sessionId} expired`);
      client.sessionId = undefined;
    }
    if (request.op === "write") {
      client.lastWriteZxid = reply.zxid;
      this.checker.writeAcked({ zxid: reply.zxid, sessionId: request.sessionId, cxid: request.cxid });
      this.stats.ackedWrites += 1;
    } else if (request.op === "sync") {
      // sync then read sees every write answered before the sync began.
      client.syncFloor = expected.ackedZxidMaxAtSend;
      if (reply.zxid < expected.ackedZxidMaxAtSend) {
        this.checker.fail(property, `client ${client.id}'s sync answered at ${formatZxid(reply.zxid)}, before ${formatZxid(expected.ackedZxidMaxAtSend)} acked earlier`);
      }
    } else if (reply.zxid < client.syncFloor) {
      this.checker.fail(property, `client ${client.id} read at ${formatZxid(reply.zxid)} after a sync that covered ${formatZxid(client.syncFloor)}`);
    }
  }

  // ---- liveness

  /**
   * After healing: within `budgetMs` a leader serves, every server serves with the same tree, and
   * a final write reaches all of them. Returns the failure reason, or undefined.
   */
  converge(budgetMs: number): string | undefined {
    this.healAll();
    this.stopFaults();
    return this.awaitConvergence(this.servers, budgetMs);
  }

  /**
   * A minority to keep out of a first convergence, drawn from `prng`: between one and
   * ⌊(voters − 1) / 2⌋ voters (half the time starting with whoever leads now), sometimes an
   * observer too, each either crashed or cut off with the others of the minority.
   */
  randomMinority(prng: Prng): Minority {
    const voters = this.servers.filter((s) => !s.observer).map((s) => s.id);
    const size = prng.between(1, Math.floor((voters.length - 1) / 2));
    const chosen: number[] = [];
    const leader = this.currentLeader();
    if (leader !== undefined && !leader.observer && prng.chance(0.5)) chosen.push(leader.id);
    while (chosen.length < size) {
      const id = prng.pick(voters.filter((v) => !chosen.includes(v)));
      chosen.push(id);
    }
    for (const s of this.servers) if (s.observer && prng.chance(0.3)) chosen.push(s.id);
    const minority: Minority = { crashed: [], isolated: [] };
    for (const id of chosen) (prng.chance(0.5) ? minority.crashed : minority.isolated).push(id);
    return minority;
  }

  /**
   * Issue 3's "a leader is elected whenever a quorum is connected": the faults stop and the network
   * heals except for `minority`, whose servers are crashed (and stay down) or cut off from everyone
   * else (they still reach each other). Within `budgetMs` a leader among the others must serve,
   * every one of them serve with the same tree, and a fresh write reach all of them. Returns the
   * failure reason, or undefined. A later converge() brings the minority back.
   */
  convergeWithout(minority: Minority, budgetMs: number): string | undefined {
    const out = new Set([...minority.crashed, ...minority.isolated]);
    const outVoters = [...out].filter((id) => !this.server(id).observer);
    const inVoters = this.servers.filter((s) => !s.observer && !out.has(s.id)).map((s) => s.id);
    if (this.quorum.containsQuorum(outVoters) || !this.quorum.containsQuorum(inVoters)) throw new Error(`not a minority: ${JSON.stringify(minority)}`);
    this.log(`MINORITY stays out: ${JSON.stringify(minority)}`);
    this.stats.minorityPhases += 1;
    this.applyFault({ kind: "heal" });
    for (const server of this.servers) if (!server.up && !minority.crashed.includes(server.id)) this.applyFault({ kind: "restart", server: server.id });
    for (const id of minority.crashed) this.applyFault({ kind: "crash", server: id });
    for (const a of this.servers) {
      for (const b of this.servers) {
        if (minority.isolated.includes(a.id) !== minority.isolated.includes(b.id)) this.blocked.add(`${a.id}>${b.id}`);
      }
    }
    this.stopFaults();
    return this.awaitConvergence(
      this.servers.filter((s) => !out.has(s.id)),
      budgetMs,
    );
  }

  /** The faults stop: no more lost, duplicated or broken messages; the oracle election picks well. */
  private stopFaults(): void {
    this.healing = true;
    Object.assign(this.config, { electionLoss: 0, electionDuplicate: 0, streamBreak: 0 });
  }

  /** Within `budgetMs`, a leader among `members` serves, all of them serve at one tree, and a fresh write reaches them. */
  private awaitConvergence(members: SimServer[], budgetMs: number): string | undefined {
    const deadline = this.nowMs + budgetMs;
    let marker: number | undefined;
    while (this.nowMs < deadline) {
      this.runFor(200);
      const leader = members.find((s) => s.zab?.kind === "leader" && s.serving);
      if (leader === undefined || !members.every((s) => s.up && s.serving)) continue;
      if (marker === undefined && leader.zab?.kind === "leader" && leader.zab.canPropose) {
        this.proposeWrite(leader, 0n, 0, { op: "create", path: "/converged-", data: new Uint8Array(), acl: [], mode: "persistent-sequential", ttlMs: 0 }, []);
        marker = leader.zab.lastProposedZxid;
      }
      if (marker === undefined) continue;
      const zxid = leader.tree.lastProcessedZxid;
      if (zxid < marker) continue;
      if (members.every((s) => s.tree.lastProcessedZxid === zxid)) {
        const digest = leader.tree.digest();
        const differing = members.filter((s) => s.tree.digest() !== digest).map((s) => s.id);
        if (differing.length > 0) return `servers ${differing.join(",")} differ from leader ${leader.id} at ${formatZxid(zxid)}`;
        this.log(`converged: ${members.map((s) => s.id).join(",")} at ${formatZxid(zxid)}, leader ${leader.id}`);
        return undefined;
      }
    }
    const states = this.servers.map((s) => `${s.id}:${s.up ? (s.zab?.kind ?? "looking") : "down"}${s.serving ? "+" : ""}@${formatZxid(s.tree.lastProcessedZxid)}`);
    return `no convergence of ${members.map((s) => s.id).join(",")} within ${budgetMs} ms: ${states.join(" ")}`;
  }

  /**
   * After convergence: every session dead or abandoned by now expires within `budgetMs`, and no
   * server keeps an ephemeral whose session is gone. Returns the failure, or undefined. Clients go
   * on living and dying meanwhile; a session that dies during the check has not had its budget yet.
   */
  checkSessionExpiry(budgetMs: number): string | undefined {
    const start = this.nowMs;
    const deadline = start + budgetMs;
    const lingering = (): string[] =>
      this.servers.flatMap((server) =>
        [...this.deadSessions]
          .filter(([, abandonedAt]) => abandonedAt <= start)
          .map(([sessionId]) => sessionId)
          .filter((sessionId) => server.tree.sessions.has(sessionId) || server.tree.ephemeralsOf(sessionId).size > 0)
          .map((sessionId) => `server ${server.id} still has session ${sessionId}`),
      );
    while (lingering().length > 0 && this.nowMs < deadline) this.runFor(200);
    const left = lingering();
    if (left.length > 0) return `${left.slice(0, 3).join("; ")} ${budgetMs} ms after healing`;
    for (const server of this.servers) {
      for (const owner of server.tree.sessionsWithEphemerals()) {
        if (!server.tree.sessions.has(owner)) return `server ${server.id} keeps ephemerals of closed session ${owner}`;
      }
    }
    return undefined;
  }

  /**
   * After convergence: every used, empty container and every childless TTL node past its TTL (by
   * the leader's clock) is gone from the leader's tree within two scans of when it qualified,
   * unless a client touched it meanwhile (a child came or went, its data was set, it was
   * recreated). Returns the failure, or undefined. Clients go on working during the check.
   */
  checkCleanup(): string | undefined {
    const leader = this.currentLeader();
    if (leader === undefined) return "no leader to check the cleanup with";
    const start = this.nowMs;
    const startZxid = leader.tree.lastProcessedZxid;
    const intervalMs = this.config.containerCheckIntervalMs;
    const deadline = start + CLEANUP_BUDGET_MS;
    const watched: { path: string; czxid: number; dueAtMs: number }[] = [];
    for (const path of leader.tree.containerPaths()) {
      const stat = leader.tree.getNode(path)!.stat;
      if (cleanupKind(stat, 0) === "container") watched.push({ path, czxid: stat.czxid, dueAtMs: start + 2 * intervalMs + CLEANUP_SLACK_MS });
    }
    for (const path of leader.tree.ttlPaths()) {
      const stat = leader.tree.getNode(path)!.stat;
      if (stat.numChildren > 0 || ownerKind(stat.ephemeralOwner) !== "ttl") continue;
      // When the leader's clock, offset by the clock jumps it took, passes the node's expiry.
      const expiresAtMs = stat.mtime + ttlOfOwner(stat.ephemeralOwner) - leader.clockOffsetMs;
      const dueAtMs = Math.max(start, expiresAtMs) + intervalMs + CLEANUP_SLACK_MS;
      if (dueAtMs <= deadline) watched.push({ path, czxid: stat.czxid, dueAtMs });
    }
    const lingering = (): string[] => {
      const current = this.currentLeader();
      if (current === undefined) return [];
      return watched
        .filter(({ path, czxid }) => {
          const stat = current.tree.getNode(path)?.stat;
          return stat !== undefined && stat.czxid === czxid && stat.numChildren === 0 && stat.pzxid <= startZxid && stat.mzxid <= startZxid;
        })
        .map(({ path, dueAtMs }) => `${path} (due by ${dueAtMs})`);
    };
    const lastDue = Math.max(start, ...watched.map((w) => w.dueAtMs));
    while (this.nowMs < lastDue && lingering().length > 0) this.runFor(Math.min(100, lastDue - this.nowMs));
    const left = lingering();
    if (left.length > 0) return `the leader still has ${left.slice(0, 3).join(", ")} at ${this.nowMs}, check started at ${start}`;
    return undefined;
  }

  /** The header of the committed txn at `zxid`, as recorded by the checker. */
  headerAt(zxid: number): { sessionId: bigint; cxid: number } | undefined {
    const record = this.checker.recordOf(zxid);
    if (record === undefined) return undefined;
    const { sessionId, cxid } = decodeTxn(record).header;
    return { sessionId, cxid };
  }
}

// ------------------------------------------------------------------------------------------------
// The forwarded-request codec of the simulator (opaque bytes to the core).

function encodeRequest(write: SimWrite, authInfo: readonly Id[]): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ write, authInfo }, (_key, value: unknown) => (value instanceof Uint8Array ? { bytes: [...value] } : value)));
}

function decodeRequest(bytes: Uint8Array): { write: SimWrite; authInfo: Id[] } {
  return JSON.parse(new TextDecoder().decode(bytes), (_key, value: unknown) => {
    if (value !== null && typeof value === "object" && "bytes" in value && Array.isArray((value as { bytes: unknown }).bytes)) {
      return new Uint8Array((value as { bytes: number[] }).bytes);
    }
    return value;
  }) as { write: SimWrite; authInfo: Id[] };
}
