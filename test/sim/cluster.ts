/**
 * A whole corral cluster in one process, driven by one seeded PRNG (DESIGN.md §3, STYLE.md
 * practice 6). Every member is the production Replica (src/replica), built by the same
 * buildReplica as `corral server`, over in-memory twins of its ports (twins/): storage whose writes
 * become durable only after a simulated fsync (a crash loses the rest), a network that delays,
 * drops, duplicates and reorders election datagrams and breaks FIFO quorum streams, symmetric and
 * one-way partitions, a clock per server that can jump, and processes that pause. Clients open
 * sessions through the replica's session opener and send requests into its pipeline, as anonymous,
 * owner or super user against nodes with restrictive ACLs (acl-workload.ts), and every answer is
 * checked. The same seed replays the same run exactly.
 */
import { ZkErrorCode } from "../../src/common/errors.js";
import type { QuorumMessage } from "../../src/consensus/messages.js";
import { QuorumVerifier } from "../../src/consensus/quorum.js";
import type { ClientConnection } from "../../src/replica/pipeline.js";
import type { Clock, Entropy, LogSink, PeerPort } from "../../src/replica/ports.js";
import { buildReplica, type Replica, type ReplicaConfig } from "../../src/replica/replica.js";
import type { ClientRequest, CreateRequest, Reply, WriteRequest } from "../../src/replica/requests.js";
import { CleanupScanner, cleanupKind } from "../../src/store/cleanup-scan.js";
import type { DataTree } from "../../src/store/data-tree.js";
import { decodeTxn, encodeTxn } from "../../src/store/txn-codec.js";
import { ownerKind, Perms, ttlOfOwner, type Txn, type WatchEvent } from "../../src/store/types.js";
import { formatZxid } from "../../src/store/zxid.js";
import { authInfoOf, GUARDED_ACL, identityOf, readRefused, SECRET_ACL, SUPER_DIGEST, writeRefused } from "./acl-workload.js";
import { Checker } from "./checker.js";
import { OracleElection } from "./oracle-election.js";
import { Prng } from "./prng.js";
import { MemoryStorage } from "./twins/memory-storage.js";
import { EventQueue, type Scheduler } from "./twins/scheduler.js";
import { SimNetwork } from "./twins/sim-network.js";

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

/** How often the convergence and digest checks look. */
const DIGEST_CHECK_INTERVAL_MS = 500;
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
const NO_PASSWORD = new Uint8Array(0);

// ------------------------------------------------------------------------------------------------
// Servers

/** One member: its durable storage outlives its process; the Replica is rebuilt at every start. */
export class SimServer {
  up = true;
  /** Bumped at every crash and start: timers and callbacks of an earlier process never run. */
  incarnation = 0;
  replica: Replica | undefined;
  /** The tree a crashed server had (what the final checks read of a server that stays down). */
  private lastTree: DataTree | undefined;
  clockOffsetMs = 0;
  pausedUntilMs = 0;
  /** Events that arrived while paused, in order. */
  deferred: (() => void)[] = [];
  /** Counts terms (role changes): an epoch established twice by one server in one term is one establishment. */
  term = 0;
  /** The next ack this follower sends is its NEWLEADER ack (the only one that may name an older epoch). */
  firstAckPending = false;

  constructor(
    readonly id: number,
    readonly observer: boolean,
    readonly storage: MemoryStorage,
  ) {}

  get tree(): DataTree {
    return this.replica?.tree ?? this.lastTree!;
  }

  get serving(): boolean {
    return this.up && (this.replica?.broadcast.serving ?? false);
  }

  get leading(): boolean {
    return this.up && this.replica?.peer.role === "leading";
  }

  crashed(): void {
    this.lastTree = this.replica?.tree ?? this.lastTree;
    this.replica = undefined;
  }
}

// ------------------------------------------------------------------------------------------------
// Clients

/** A client connection as the server's pipeline sees it, and as its client tracks it. */
class SimConnection implements ClientConnection {
  /** The server's view: false once it ended the connection or saw it go. */
  open = true;
  readonly remoteAddress: string;
  authInfo;
  sessionId = 0n;
  established = false;
  readonly openedAtMs: number;
  /** The last scheduled arrival per direction, to keep each direction FIFO. */
  lastArrivalToServer = 0;
  lastArrivalToClient = 0;

  constructor(
    private readonly sim: Simulation,
    readonly client: SimClient,
    readonly server: SimServer,
    readonly serverIncarnation: number,
  ) {
    this.remoteAddress = `10.0.0.${client.id}`;
    // As if the client had authenticated with its credentials (acl-workload.ts).
    this.authInfo = authInfoOf(client.id);
    this.openedAtMs = sim.nowMs;
  }

  sendReply(xid: number, reply: Reply): void {
    this.sim.toClient(this, () => this.sim.clientReceivesReply(this.client, this, xid, reply));
  }

  sendEvent(_event: WatchEvent): void {
    this.sim.toClient(this, () => {
      if (this.client.connection === this) this.client.events += 1;
    });
  }

  end(reason: "closed" | "expired" | "moved"): void {
    if (!this.open) return;
    this.open = false;
    this.sim.toClient(this, () => this.sim.clientLost(this.client, this, `server ended the connection: ${reason}`, reason === "expired"));
  }
}

interface InFlight {
  xid: number;
  request: ClientRequest;
  sentAtMs: number;
  ackedZxidMaxAtSend: number;
}

interface SimClient {
  id: number;
  alive: boolean;
  /** The session, once a server established it. */
  sessionId: bigint | undefined;
  password: Uint8Array;
  connection: SimConnection | undefined;
  xid: number;
  inFlight: InFlight[];
  lastZxidSeen: number;
  lastWriteZxid: number;
  /** The write-ack high-water mark when the last completed sync was sent: reads after it must reach it. */
  syncFloor: number;
  events: number;
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

export class Simulation implements Scheduler {
  readonly prng: Prng;
  readonly config: SimConfig;
  readonly checker = new Checker();
  readonly quorum: QuorumVerifier;
  readonly servers: SimServer[] = [];
  readonly clients: SimClient[] = [];
  readonly network: SimNetwork;
  private readonly queue = new EventQueue();
  private readonly replicaConfig: ReplicaConfig;
  nowMs = 0;
  /** The last lines of what happened, printed with a failure. */
  readonly trace: string[] = [];
  clientsActive = true;
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
  /** Writes sent, by session and xid, until their txn is first applied and its ACL verdict checked. */
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
    this.network = new SimNetwork(this, this.prng, this.config, (line) => this.log(line), [...voters, ...observers]);
    this.network.onQuorumSend = (from, to, message, leaderTerm) => this.checkAck(from, to, message, leaderTerm);
    this.network.termOf = (id) => this.server(id).term;
    this.replicaConfig = {
      serverId: 0,
      servers: [...voters.map((id) => ({ id, role: "participant" as const })), ...observers.map((id) => ({ id, role: "observer" as const }))],
      tickMs: this.config.tickMs,
      initLimitTicks: this.config.initLimitTicks,
      syncLimitTicks: this.config.syncLimitTicks,
      commitLogCount: this.config.committedLogRecordsMax,
      containerCheckIntervalMs: this.config.containerCheckIntervalMs,
      containerMaxPerMinute: CLEANUP_MAX_PER_MINUTE,
      snapshotEveryTxns: this.config.snapshotEveryTxns,
      superDigest: SUPER_DIGEST,
      ttlNodesEnabled: true,
      enforceQuota: false,
      minSessionTimeoutMs: SESSION_TIMEOUT_MS,
      maxSessionTimeoutMs: SESSION_TIMEOUT_MS,
    };
    for (const id of [...voters, ...observers]) {
      const storage = new MemoryStorage(this, id, () => 1 + this.prng.int(this.config.fsyncMsMax));
      this.servers.push(new SimServer(id, id > this.config.voters, storage));
    }
    for (let i = 0; i < this.config.clients; i++) {
      this.clients.push({ id: i + 1, alive: true, sessionId: undefined, password: NO_PASSWORD, connection: undefined, xid: 0, inFlight: [], lastZxidSeen: 0, lastWriteZxid: 0, syncFloor: 0, events: 0 });
    }
    for (const server of this.servers) this.boot(server);
    this.every(DIGEST_CHECK_INTERVAL_MS, () => this.checkDigests());
    for (const client of this.clients) this.at(this.prng.int(200), () => this.clientThink(client));
  }

  server(id: number): SimServer {
    return this.servers[id - 1]!;
  }

  log(line: string): void {
    this.trace.push(`${String(this.nowMs).padStart(7)} ${line}`);
    if (this.trace.length > 4000) this.trace.splice(0, 1000);
  }

  // ---- the timeline

  at(delayMs: number, run: () => void, server?: number): void {
    this.queue.push(this.nowMs + delayMs, run, server);
  }

  private every(intervalMs: number, run: () => void): void {
    this.at(intervalMs, () => {
      run();
      this.every(intervalMs, run);
    });
  }

  runFor(durationMs: number): void {
    const until = this.nowMs + durationMs;
    for (;;) {
      const at = this.queue.peekTime();
      if (at === undefined || at > until) break;
      const event = this.queue.pop()!;
      this.nowMs = event.atMs;
      this.stats.events += 1;
      const target = event.server === undefined ? undefined : this.server(event.server);
      // A paused process handles what reaches it when it resumes, in arrival order.
      if (target?.up && target.pausedUntilMs > this.nowMs) target.deferred.push(event.run);
      else event.run();
    }
    this.nowMs = until;
  }

  // ---- a server's process

  /** Starts `server`'s process: a Replica built from what its storage holds, over its twins. */
  private boot(server: SimServer): void {
    server.incarnation += 1;
    const incarnation = server.incarnation;
    const recovered = server.storage.recover();
    this.checker.resetServer(server.id, recovered.tree.lastProcessedZxid, recovered.tree.digest());
    const alive = () => server.up && server.incarnation === incarnation;
    const clock: Clock = {
      nowMs: () => this.clock(server),
      every: (intervalMs, run) => {
        let stopped = false;
        const tick = (): void => {
          if (stopped || !alive()) return;
          // A paused process does not tick; it catches up on its clock when it resumes.
          if (server.pausedUntilMs <= this.nowMs) run();
          this.at(intervalMs, tick);
        };
        this.at(intervalMs, tick);
        return () => {
          stopped = true;
        };
      },
    };
    const entropy: Entropy = { bytes: (count) => Uint8Array.from({ length: count }, () => this.prng.int(256)) };
    let replica: Replica | undefined;
    const network = this.network.attach(server.id, {
      onNotification: (n) => replica?.onNotification(n),
      onQuorumMessage: (from, m) => replica?.onQuorumMessage(from, m),
      onQuorumStreamClosed: (peer) => replica?.onQuorumStreamClosed(peer),
    });
    const peers: PeerPort = {
      ...network,
      followLeader: (leaderId) => {
        server.firstAckPending = true;
        network.followLeader(leaderId);
      },
    };
    replica = buildReplica(
      { ...this.replicaConfig, serverId: server.id },
      {
        storage: server.storage,
        recovered,
        peers,
        clock,
        entropy,
        logger: this.logSink(server),
        onFatal: (error) => this.checker.fail("committed prefixes agree", `server ${server.id} stopped on a failed durable write: ${String(error)}`),
        treeObserver: {
          applying: (txn, tree) => this.applying(server, txn, tree),
          replaced: (tree) => this.checker.resetServer(server.id, tree.lastProcessedZxid, tree.digest()),
        },
        ...(this.config.election === "oracle"
          ? { election: () => new OracleElection(server.id, server.observer, () => this.pickLeader(), () => 50 + this.prng.int(400)) }
          : {}),
      },
    );
    server.replica = replica;
    replica.start();
  }

  private clock(server: SimServer): number {
    return Math.max(0, this.nowMs + server.clockOffsetMs);
  }

  /** What the replica logs, read for the trace, the run's statistics and the leadership check. */
  private logSink(server: SimServer): LogSink {
    const line = (fields: object | string, message?: string): void => {
      const text = typeof fields === "string" ? fields : `${message ?? ""} ${JSON.stringify(fields, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))}`;
      this.log(`${server.id} ${text}`);
      if (typeof fields === "string") return;
      const f = fields as Record<string, unknown>;
      switch (message) {
        case "role changed":
          server.term += 1;
          if (f["role"] === "looking") this.stats.elections += 1;
          break;
        case "zab syncMode":
          if (f["mode"] === "SNAP") this.stats.snaps += 1;
          else if (f["mode"] === "TRUNC") this.stats.truncs += 1;
          else this.stats.diffs += 1;
          break;
        case "zab phase":
          if (f["phase"] === "broadcast" && server.replica?.peer.role === "leading") this.checker.established(f["epoch"] as number, server.id, server.term);
          break;
        case "zab stepped down":
          this.stats.stepDowns += 1;
          break;
        case "session expired":
          this.stats.sessionsExpired += 1;
          break;
      }
    };
    return { debug: () => {}, info: line, warn: line, error: line };
  }

  /** Every txn, just before a server applies it: the checkers' view of the committed sequence. */
  private applying(server: SimServer, txn: Txn, tree: DataTree): void {
    const zxid = txn.header.zxid;
    const cleanup = this.checkCleanupDelete(server, txn, tree);
    if (zxid > this.aclCheckedZxid) {
      this.aclCheckedZxid = zxid;
      this.checkWriteVerdict(txn, tree);
    }
    if (server.leading) {
      this.stats.commits += 1;
      if (cleanup === "container") this.stats.containersDeleted += 1;
      if (cleanup === "ttl") this.stats.ttlNodesDeleted += 1;
    }
    this.checker.applied(server.id, zxid, encodeTxn(txn));
  }

  /** A follower acks a proposal: never one of an older epoch, never before it is durable. */
  private checkAck(from: number, to: number, message: QuorumMessage, leaderTerm: number): void {
    if (message.type !== "ack") return;
    const follower = this.server(from);
    const leader = this.server(to);
    if (follower.replica?.peer.role !== "following") return;
    const first = follower.firstAckPending;
    follower.firstAckPending = false;
    // Only a stream the leader accepted in its current term: it carries that term's traffic.
    if (!leader.leading || leader.term !== leaderTerm) return;
    const durableEnd = Math.max(follower.storage.durableEnd(), follower.tree.lastProcessedZxid);
    this.checker.ackSent(from, message.zxid, follower.replica.peer.termEpoch, leader.replica!.peer.termEpoch, first, durableEnd);
  }

  /**
   * A delete no session asked for (session 0) is the leader's cleanup: whoever applies it must find
   * an empty container that has had a child, or a childless TTL node expired at the txn's time.
   */
  private checkCleanupDelete(server: SimServer, txn: Txn, tree: DataTree): "container" | "ttl" | undefined {
    if (txn.header.sessionId !== 0n || txn.body.type !== "delete") return undefined;
    const path = txn.body.path;
    const node = tree.getNode(path);
    const kind = node === undefined ? undefined : cleanupKind(node.stat, txn.header.timeMs);
    if (kind === undefined) {
      const what = node === undefined ? "a missing node" : `a node with owner ${node.stat.ephemeralOwner}, ${node.stat.numChildren} children, cversion ${node.stat.cversion}, mtime ${node.stat.mtime}`;
      this.checker.fail("the leader deletes only empty containers and expired TTL nodes", `server ${server.id} applies a cleanup delete of ${path} at ${formatZxid(txn.header.zxid)} (time ${txn.header.timeMs}): ${what}`);
    }
    return kind;
  }

  /**
   * Before a newly committed txn is first applied, the tree is exactly what prep decided it against:
   * its NOAUTH, or the absence of one, must be the model's verdict.
   */
  private checkWriteVerdict(txn: Txn, tree: DataTree): void {
    const key = `${txn.header.sessionId}:${txn.header.cxid}`;
    const intent = this.writeIntents.get(key);
    if (intent === undefined) return;
    this.writeIntents.delete(key);
    const err = txn.body.type === "error" ? txn.body.err : 0;
    // A write of a session already gone, or sent on a connection its client left, is refused before prep looks at any ACL.
    if (err === ZkErrorCode.SESSIONEXPIRED || err === ZkErrorCode.SESSIONMOVED) return;
    const identity = identityOf(intent.clientId);
    const expected = writeRefused(intent.write, identity, (path) => tree.getNode(path) !== undefined);
    if (err === ZkErrorCode.NOAUTH) this.stats.aclRefusals += 1;
    if (expected !== (err === ZkErrorCode.NOAUTH)) {
      this.checker.fail("ACL decisions follow each node's ACL", `${identity} client ${intent.clientId}'s ${intent.write.op} ${"path" in intent.write ? intent.write.path : ""} committed at ${formatZxid(txn.header.zxid)} with err ${err}, expected ${expected ? "NOAUTH" : "no NOAUTH"}`);
    }
  }

  private checkDigests(): void {
    for (const server of this.servers) {
      if (server.up && server.replica) this.checker.digestAt(server.id, server.tree.lastProcessedZxid, server.tree.digest());
    }
  }

  /** The oracle's choice: the most up-to-date running voter, or (while faults run) sometimes any. */
  private pickLeader(): number | undefined {
    // Once faults stop, only a minority can still be cut off (convergeWithout): never pick one of them.
    const candidates = this.servers.filter((s) => s.up && !s.observer && (!this.healing || this.reachesQuorum(s)));
    if (candidates.length === 0) return undefined;
    // An established leader is joined, as FastLeaderElection's out-of-election path does.
    const established = candidates.find((s) => s.leading && s.serving);
    if (established !== undefined && (this.healing || this.prng.chance(0.8))) return established.id;
    if (!this.healing && this.prng.chance(0.3)) return this.prng.pick(candidates).id;
    const rank = (s: SimServer) => [s.storage.durable.currentEpoch ?? 0, s.replica?.database.lastLoggedZxid() ?? 0, s.id];
    candidates.sort((a, b) => {
      const [x, y] = [rank(a), rank(b)];
      for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return y[i]! - x[i]!;
      return 0;
    });
    return candidates[0]!.id;
  }

  /** Whether the running voters `server` can reach both ways (itself included) form a quorum. */
  private reachesQuorum(server: SimServer): boolean {
    const reachable = this.servers.filter((o) => o.up && (o.id === server.id || (!this.network.isBlocked(server.id, o.id) && !this.network.isBlocked(o.id, server.id))));
    return this.quorum.containsQuorum(reachable.map((o) => o.id));
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
        this.network.block(fault.a, fault.b);
        if (!fault.oneWay) this.network.block(fault.b, fault.a);
        break;
      case "isolate":
        for (const other of this.servers) {
          if (other.id === fault.server) continue;
          this.network.block(fault.server, other.id);
          this.network.block(other.id, fault.server);
        }
        break;
      case "heal":
        this.network.healAll();
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
        const buddy = this.servers.find((s) => s.id !== leader.id && s.up && s.replica?.peer.role === "following");
        const inside = new Set([leader.id, buddy?.id ?? leader.id]);
        this.cutOff(inside);
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

  /** Blocks every link between `inside` and the rest. */
  private cutOff(inside: Set<number>): void {
    for (const a of this.servers) {
      for (const b of this.servers) {
        if (inside.has(a.id) !== inside.has(b.id)) this.network.block(a.id, b.id);
      }
    }
  }

  private currentLeader(): SimServer | undefined {
    return this.servers.find((s) => s.leading && s.serving) ?? this.servers.find((s) => s.leading);
  }

  private pause(server: SimServer, durationMs: number): void {
    if (!server.up) return;
    server.pausedUntilMs = Math.max(server.pausedUntilMs, this.nowMs + durationMs);
    const incarnation = server.incarnation;
    this.at(server.pausedUntilMs - this.nowMs, () => {
      if (server.pausedUntilMs > this.nowMs || server.incarnation !== incarnation) return; // extended, or crashed
      const deferred = server.deferred;
      server.deferred = [];
      for (const run of deferred) run();
    });
  }

  private crash(server: SimServer): void {
    if (!server.up) return;
    this.network.detach(server.id);
    for (const client of this.clients) {
      const connection = client.connection;
      if (connection?.server === server && connection.open) {
        connection.open = false;
        this.toClient(connection, () => this.clientLost(client, connection, "server crashed", false));
      }
    }
    server.up = false;
    server.pausedUntilMs = 0;
    server.deferred = [];
    server.storage.crash();
    server.crashed();
  }

  private restart(server: SimServer): void {
    if (server.up) return;
    server.up = true;
    this.boot(server);
  }

  healAll(): void {
    this.applyFault({ kind: "heal" });
    for (const server of this.servers) if (!server.up) this.applyFault({ kind: "restart", server: server.id });
  }

  // ---- clients

  private clientThink(client: SimClient): void {
    this.at(1 + this.prng.int(this.config.clientThinkMsMax), () => this.clientThink(client));
    if (!this.clientsActive) {
      // Quiet: no requests, but a connected client keeps its session alive, as the SDK's pings do.
      if (client.alive && client.connection?.established) this.ping(client.connection);
      return;
    }
    const connection = client.connection;
    // A connect or a request unanswered too long: the client gives up on the connection.
    const oldest = client.inFlight[0];
    if (connection !== undefined && ((oldest !== undefined && this.nowMs - oldest.sentAtMs > CLIENT_REQUEST_TIMEOUT_MS) || (!connection.established && this.nowMs - connection.openedAtMs > CLIENT_REQUEST_TIMEOUT_MS))) {
      this.clientDisconnect(client, "timed out");
    }
    if (!client.alive) return;
    if (this.prng.chance(CLIENT_DEATH_CHANCE)) {
      this.clientDies(client);
      return;
    }
    if (client.connection === undefined) {
      this.clientConnect(client);
      return;
    }
    if (!client.connection.established) return;
    if (client.inFlight.length >= 3) {
      this.ping(client.connection);
      return;
    }
    const roll = this.prng.float();
    let request: ClientRequest;
    if (roll < 0.6) {
      const write = this.randomWrite(client);
      request = write;
      this.writeIntents.set(`${client.sessionId}:${client.xid + 1}`, { write, clientId: client.id });
    } else if (roll < 0.85) request = { op: "getData", path: `/${this.prng.pick(["k", "k", "k", "r", "q"])}${this.prng.int(3)}`, watch: false };
    else request = { op: "sync", path: "/" };
    this.send(client, client.connection, request);
  }

  private send(client: SimClient, connection: SimConnection, request: ClientRequest): void {
    client.xid += 1;
    const xid = client.xid;
    client.inFlight.push({ xid, request, sentAtMs: this.nowMs, ackedZxidMaxAtSend: this.checker.ackedZxidMax });
    this.toServer(connection, (replica) => replica.pipeline.submit(connection.sessionId, connection, xid, request));
  }

  /** Keeps the session alive while requests wait (the SDK pings every third of the timeout). */
  private ping(connection: SimConnection): void {
    this.toServer(connection, (replica) => replica.pipeline.touch(connection.sessionId));
  }

  private randomWrite(client: SimClient): WriteRequest {
    const data = new TextEncoder().encode(`${client.id}:${client.xid}`);
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

  /** The client process dies: it never talks again with this session; it comes back later with a new one. */
  private clientDies(client: SimClient): void {
    this.log(`client ${client.id} dies (session ${client.sessionId})`);
    this.stats.clientDeaths += 1;
    this.clientDisconnect(client, "died");
    client.alive = false;
    client.sessionId = undefined;
    client.password = NO_PASSWORD;
    this.at(3_000 + this.prng.int(3_000), () => {
      client.alive = true;
    });
  }

  private clientConnect(client: SimClient): void {
    const candidates = this.servers.filter((s) => s.serving);
    if (candidates.length === 0) return;
    const server = this.prng.pick(candidates);
    const connection = new SimConnection(this, client, server, server.incarnation);
    client.connection = connection;
    this.log(`client ${client.id} connects to ${server.id} (session ${client.sessionId ?? "new"}, seen ${formatZxid(client.lastZxidSeen)})`);
    const request = { sessionId: client.sessionId ?? 0n, password: client.password, requestedTimeoutMs: SESSION_TIMEOUT_MS, lastZxidSeen: BigInt(client.lastZxidSeen) };
    this.toServer(connection, (replica) =>
      replica.sessions.open(request, (outcome) => {
        if (!connection.open || server.incarnation !== connection.serverIncarnation) return;
        if (outcome.kind === "established") {
          connection.sessionId = outcome.sessionId;
          replica.pipeline.attach(outcome.sessionId, connection);
          this.toClient(connection, () => this.clientConnected(client, connection, outcome.sessionId, outcome.password));
          return;
        }
        connection.open = false;
        const why = outcome.kind === "expired" ? "session expired" : `refused: ${outcome.detail}`;
        this.toClient(connection, () => this.clientLost(client, connection, why, outcome.kind === "expired"));
      }),
    );
  }

  private clientConnected(client: SimClient, connection: SimConnection, sessionId: bigint, password: Uint8Array): void {
    if (client.connection !== connection) return;
    connection.established = true;
    client.sessionId = sessionId;
    client.password = password;
    this.log(`client ${client.id} connected to ${connection.server.id} with session ${sessionId}`);
  }

  /** The client drops its connection; the server notices after a while (its end of the stream closes). */
  private clientDisconnect(client: SimClient, why: string): void {
    const connection = client.connection;
    if (connection === undefined) return;
    this.log(`client ${client.id} leaves ${connection.server.id}: ${why}`);
    client.connection = undefined;
    client.inFlight = [];
    this.toServer(connection, (replica) => {
      connection.open = false;
      if (connection.established) replica.pipeline.detach(connection.sessionId, connection);
    });
  }

  /** The server ended or lost the connection. */
  clientLost(client: SimClient, connection: SimConnection, why: string, expired: boolean): void {
    if (client.connection !== connection) return;
    this.log(`client ${client.id} lost ${connection.server.id}: ${why}`);
    client.connection = undefined;
    client.inFlight = [];
    if (expired) {
      client.sessionId = undefined;
      client.password = NO_PASSWORD;
    }
  }

  /** Client → server, in order on the connection, to the process that accepted it. */
  private toServer(connection: SimConnection, run: (replica: Replica) => void): void {
    const arrival = Math.max(this.nowMs + this.netDelay(), connection.lastArrivalToServer);
    connection.lastArrivalToServer = arrival;
    const server = connection.server;
    this.at(
      arrival - this.nowMs,
      () => {
        if (!connection.open || !server.up || server.incarnation !== connection.serverIncarnation || !server.replica) return;
        run(server.replica);
      },
      server.id,
    );
  }

  /** Server → client, in order on the connection. */
  toClient(connection: SimConnection, run: () => void): void {
    const arrival = Math.max(this.nowMs + this.netDelay(), connection.lastArrivalToClient);
    connection.lastArrivalToClient = arrival;
    this.at(arrival - this.nowMs, run);
  }

  private netDelay(): number {
    return 1 + this.prng.int(this.config.netDelayMsMax);
  }

  clientReceivesReply(client: SimClient, connection: SimConnection, xid: number, reply: Reply): void {
    if (client.connection !== connection) return;
    const expected = client.inFlight.shift();
    const property = "client order and single system image";
    if (expected === undefined || expected.xid !== xid) {
      this.checker.fail(property, `client ${client.id} got the answer to ${xid}, expected ${expected?.xid}`);
      return;
    }
    const request = expected.request;
    const write = request.op === "create" || request.op === "setData" || request.op === "delete";
    if (write && reply.err === 0) {
      // A write answers with its own txn's zxid, which may precede what an earlier read or sync on
      // the same session reflected; reads and syncs reflect the whole tree and never go back.
      if (reply.zxid <= client.lastWriteZxid) {
        this.checker.fail(property, `client ${client.id}'s write ${xid} committed at ${formatZxid(reply.zxid)}, not after its earlier write at ${formatZxid(client.lastWriteZxid)}`);
      }
      client.lastWriteZxid = reply.zxid;
      this.checker.writeAcked({ zxid: reply.zxid, sessionId: connection.sessionId, cxid: xid });
      this.stats.ackedWrites += 1;
    }
    if (!write && reply.zxid < client.lastZxidSeen) {
      this.checker.fail(property, `client ${client.id} saw ${formatZxid(reply.zxid)} after ${formatZxid(client.lastZxidSeen)}`);
    }
    if (request.op === "sync" && reply.err === 0) {
      // sync then read sees every write answered before the sync began.
      client.syncFloor = expected.ackedZxidMaxAtSend;
      if (reply.zxid < expected.ackedZxidMaxAtSend) {
        this.checker.fail(property, `client ${client.id}'s sync answered at ${formatZxid(reply.zxid)}, before ${formatZxid(expected.ackedZxidMaxAtSend)} acked earlier`);
      }
    }
    if (request.op === "getData") {
      if (reply.zxid < client.syncFloor) this.checker.fail(property, `client ${client.id} read at ${formatZxid(reply.zxid)} after a sync that covered ${formatZxid(client.syncFloor)}`);
      this.checkReadVerdict(client.id, connection.server.id, request.path, reply);
    }
    client.lastZxidSeen = Math.max(client.lastZxidSeen, reply.zxid);
    if (reply.err === ZkErrorCode.SESSIONEXPIRED) {
      this.log(`client ${client.id}'s session ${connection.sessionId} expired`);
      client.sessionId = undefined;
      client.password = NO_PASSWORD;
      this.clientDisconnect(client, "session expired");
    }
  }

  /** A read's NOAUTH, or its absence, is the model's verdict for a node that exists (NONODE comes first). */
  private checkReadVerdict(clientId: number, serverId: number, path: string, reply: Reply): void {
    if (reply.err !== 0 && reply.err !== ZkErrorCode.NOAUTH) return;
    if (reply.err === ZkErrorCode.NOAUTH) this.stats.aclRefusals += 1;
    const identity = identityOf(clientId);
    if (readRefused(path, identity) !== (reply.err === ZkErrorCode.NOAUTH)) {
      this.checker.fail("ACL decisions follow each node's ACL", `${identity} client ${clientId}'s read of ${path} at server ${serverId} (${formatZxid(reply.zxid)}) answered ${reply.err}`);
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
   * After healing, with clients sending nothing but pings: within `budgetMs` every server serves and
   * applies everything the leader committed, with no later write to carry the commit point along
   * (a learner must not wait for the next commit to apply what it logged before its sync).
   * Returns the failure, or undefined; clients are active again afterwards.
   */
  convergeQuietly(budgetMs: number): string | undefined {
    this.healAll();
    this.stopFaults();
    this.clientsActive = false;
    try {
      return this.awaitConvergence(this.servers, budgetMs, false);
    } finally {
      this.clientsActive = true;
    }
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
    this.cutOff(new Set(minority.isolated));
    this.stopFaults();
    return this.awaitConvergence(
      this.servers.filter((s) => !out.has(s.id)),
      budgetMs,
    );
  }

  /** The faults stop: no more lost, duplicated or broken messages; the oracle election picks well. */
  private stopFaults(): void {
    this.healing = true;
    Object.assign(this.network.faults, { electionLoss: 0, electionDuplicate: 0, streamBreak: 0 });
  }

  /**
   * Within `budgetMs`, a leader among `members` serves, all of them serve at one tree, and a fresh
   * write reaches them (or, without `freshWrite`, the leader's last proposal reaches them unaided).
   */
  private awaitConvergence(members: SimServer[], budgetMs: number, freshWrite = true): string | undefined {
    const deadline = this.nowMs + budgetMs;
    let marker: number | undefined;
    while (this.nowMs < deadline) {
      this.runFor(200);
      const leader = members.find((s) => s.leading && s.serving);
      if (leader === undefined || !members.every((s) => s.serving)) continue;
      if (!freshWrite) marker = leader.replica!.peer.leaderStatus()?.lastProposedZxid;
      else if (marker === undefined) {
        // Any txn will do as the fresh write: a server-made one for no session commits as an error txn.
        leader.replica!.peer.submitWrite(0n, 0, { op: "create", path: "/converged-", data: new Uint8Array(), acl: [], mode: "persistent-sequential", ttlMs: 0 }, []);
        marker = leader.replica!.peer.leaderStatus()?.lastProposedZxid;
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
    const states = this.servers.map((s) => `${s.id}:${s.up ? (s.replica?.peer.role ?? "?") : "down"}${s.serving ? "+" : ""}@${formatZxid(s.tree.lastProcessedZxid)}`);
    return `no convergence of ${members.map((s) => s.id).join(",")} within ${budgetMs} ms: ${states.join(" ")}`;
  }

  /**
   * After convergence: every session that no live client holds (its client died, or lost it while
   * the session was being created) expires within `budgetMs`, and no server keeps an ephemeral
   * whose session is gone. Returns the failure, or undefined. Clients go on living and dying
   * meanwhile; a session opened or abandoned during the check has not had its budget yet.
   */
  checkSessionExpiry(budgetMs: number): string | undefined {
    const deadline = this.nowMs + budgetMs;
    const held = (): Set<bigint> => new Set(this.clients.flatMap((c) => (c.alive && c.sessionId !== undefined ? [c.sessionId] : [])));
    const heldAtStart = held();
    const abandoned = new Set([...this.servers.flatMap((s) => [...s.tree.sessions.keys()])].filter((id) => !heldAtStart.has(id)));
    const lingering = (): string[] => {
      const heldNow = held();
      return this.servers.flatMap((server) =>
        [...abandoned]
          .filter((sessionId) => !heldNow.has(sessionId) && (server.tree.sessions.has(sessionId) || server.tree.ephemeralsOf(sessionId).size > 0))
          .map((sessionId) => `server ${server.id} still has session ${sessionId}`),
      );
    };
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
    const startZxid = leader.tree!.lastProcessedZxid;
    const intervalMs = this.config.containerCheckIntervalMs;
    const deadline = start + CLEANUP_BUDGET_MS;
    const watched: { path: string; czxid: number; dueAtMs: number }[] = [];
    for (const path of leader.tree!.containerPaths()) {
      const stat = leader.tree!.getNode(path)!.stat;
      if (cleanupKind(stat, 0) === "container") watched.push({ path, czxid: stat.czxid, dueAtMs: start + 2 * intervalMs + CLEANUP_SLACK_MS });
    }
    for (const path of leader.tree!.ttlPaths()) {
      const stat = leader.tree!.getNode(path)!.stat;
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
          const stat = current.tree!.getNode(path)?.stat;
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
