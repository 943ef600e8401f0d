/**
 * A whole corral cluster in one process, driven by one seeded PRNG (docs/architecture.md §3 and
 * practice 6). Every member is the production Replica (src/replica), built by the same
 * buildReplica as `corral server`, over in-memory twins of its ports (twins/): storage whose writes
 * become durable only after a simulated fsync (a crash loses the rest), a network that delays,
 * drops, duplicates and reorders election datagrams and breaks FIFO quorum streams, symmetric and
 * one-way partitions, a clock per server that can jump, and processes that pause. Clients — the
 * SDK's session machine, or a client with ZooKeeper's Java client's session semantics — talk to
 * each server's connection session through that door's real codec, as anonymous, owner or super
 * user against nodes with restrictive ACLs (acl-workload.ts), and every answer is checked. The
 * same seed replays the same run exactly.
 */
import { limits } from "../../src/common/constants.js";
import { zabLimits } from "../../src/consensus/constants.js";
import { ZkErrorCode } from "../../src/common/errors.js";
import type { QuorumMessage } from "../../src/consensus/messages.js";
import type { QuorumVerifier } from "../../src/consensus/quorum.js";
import { formatMembership, type MemberAddress, type MemberRole } from "../../src/common/membership.js";
import { configOfTxnData, quorumOf, type ClusterConfig } from "../../src/replica/cluster-config.js";
import type { Clock, Entropy, LogSink, PeerPort } from "../../src/replica/ports.js";
import { buildReplica, type Replica, type ReplicaConfig } from "../../src/replica/replica.js";
import type { ReconfigRequest, WriteRequest } from "../../src/replica/requests.js";
import { cleanupKind } from "../../src/store/cleanup-scan.js";
import type { DataTree } from "../../src/store/data-tree.js";
import { decodeTxn, encodeTxn } from "../../src/store/txn-codec.js";
import { ownerKind, ttlOfOwner, type Txn } from "../../src/store/types.js";
import { epochOf, formatZxid } from "../../src/store/zxid.js";
import { identityOf, SUPER_DIGEST, writeRefused } from "./acl-workload.js";
import { Checker } from "./checker.js";
import { OracleElection } from "./oracle-election.js";
import { Prng } from "./prng.js";
import { JUTE_CLIENTS } from "./jute-session.js";
import { SDK_CLIENTS } from "./sdk-session.js";
import { SimClient, type ClientStat, type ClientWorld, type ServerProcess } from "./sim-client.js";
import { MemoryStorage, type DamageKind } from "./twins/memory-storage.js";
import { EventQueue, type Scheduler } from "./twins/scheduler.js";
import { SimNetwork } from "./twins/sim-network.js";
import { TREE_DIVERGED } from "../../src/replica/tree-digest-check.js";

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
  /** The chance that a client speaks ZooKeeper's protocol (through the ZooKeeper door) rather than the SDK's. */
  juteClientShare: number;
  netDelayMsMax: number;
  fsyncMsMax: number;
  /** A member whose disk is ten times slower (its tree lags the others'), or 0 for none. */
  slowDiskServer: number;
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
  /** Servers serve read-only sessions when cut off from their quorum; half the clients accept that. */
  readOnlyMode: boolean;
  /** Reconfigurations in the fault schedule (the servers have reconfigEnabled). */
  reconfig: boolean;
  /**
   * Servers outside the starting configuration, running from the start as a server about to be
   * added does (their own view lists them as participants); reconfigurations add them.
   */
  spares: number;
  /**
   * Storage faults (twins/memory-storage.ts): a restart may find one of the server's records (the
   * last one too) or its snapshot damaged — on one server at a time, so that a quorum of good
   * copies always exists. Not in runs with reconfigurations, whose smaller configurations may have
   * no copy to spare.
   */
  storageFaults: boolean;
  /** SIMULATION SABOTAGE: every storage twin reads back without checking (MemoryStorage.uncheckedReads). */
  uncheckedReads: boolean;
  /** SIMULATION SABOTAGE: a server that found damage does not say it repairs (MemoryStorage.silentRepair). */
  silentRepair: boolean;
}

/**
 * For scripted scenarios: the real election over a network that loses, duplicates and breaks
 * nothing, so that only the faults a test applies happen.
 */
export const SCRIPTED_NETWORK = { election: "fle", electionLoss: 0, electionDuplicate: 0, streamBreak: 0 } as const satisfies Partial<SimConfig>;

export function defaultConfig(prng: Prng): SimConfig {
  return {
    voters: prng.pick([3, 3, 5]),
    observers: prng.pick([0, 0, 1]),
    tickMs: 100,
    initLimitTicks: 10,
    // Sometimes longer than a client takes to give up on a silent server (two thirds of its session
    // timeout), as with ZooKeeper's defaults: a client then moves while its old server is still a learner.
    syncLimitTicks: prng.pick([5, 5, 20, 40]),
    committedLogRecordsMax: prng.pick([4, 16, 64]),
    snapshotEveryTxns: prng.pick([10, 40, 1000]),
    clients: prng.between(1, 4),
    netDelayMsMax: prng.pick([5, 20, 60]),
    fsyncMsMax: prng.pick([2, 10, 40]),
    slowDiskServer: prng.pick([0, 0, 1, 2, 3]),
    electionLoss: prng.pick([0, 0.05, 0.2]),
    electionDuplicate: prng.pick([0, 0.05]),
    streamBreak: prng.pick([0, 0.001, 0.005]),
    clientThinkMsMax: prng.pick([40, 150, 500]),
    election: prng.chance(0.25) ? "oracle" : "fle",
    containerCheckIntervalMs: prng.pick([50, 200, 600]),
    readOnlyMode: prng.chance(0.3),
    reconfig: prng.chance(0.4),
    spares: prng.pick([0, 1, 2]),
    juteClientShare: prng.pick([1 / 3, 1 / 2]),
    storageFaults: prng.chance(0.5),
    uncheckedReads: false,
    silentRepair: false,
  };
}

/** A restart finds damage this often (storageFaults). */
const DAMAGE_AT_RESTART_CHANCE = 0.3;
const DAMAGE_KINDS: readonly DamageKind[] = ["bitFlip", "zeroed", "truncated", "misdirected"];

/** How often the convergence and digest checks look. */
const DIGEST_CHECK_INTERVAL_MS = 500;
/** Every client session's timeout (20 ticks: ZooKeeper's largest by default). */
const SESSION_TIMEOUT_MS = 2_000;
/** Cleanup deletions a minute: enough that the limit never holds back the liveness check. */
const CLEANUP_MAX_PER_MINUTE = 100_000;
/** How long the cleanup liveness check may watch, and what it allows beyond the scans it waits for. */
const CLEANUP_BUDGET_MS = 10_000;
const CLEANUP_SLACK_MS = 300;

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
  /** Its tree was changed behind its back (alterTree): no digest of it is checked until a snapshot replaces it. */
  treeAltered = false;
  /**
   * Its files were damaged at its last restart, and it has not yet got back everything it held
   * durable then (it applied up to `damagedEnd`, a repair included): not a good copy until it has.
   */
  damagedEnd: number | undefined;

  constructor(
    readonly id: number,
    /** An observer in the starting configuration (the oracle election's first view of it). */
    readonly observer: boolean,
    readonly storage: MemoryStorage,
    /** The membership it starts with: the starting configuration, and itself if it is a spare. */
    readonly view: readonly MemberAddress[],
  ) {}

  get tree(): DataTree {
    return this.replica?.tree ?? this.lastTree!;
  }

  get serving(): boolean {
    return this.up && (this.replica?.broadcast.serving ?? false);
  }

  get leading(): boolean {
    return this.up && this.replica?.status.role === "leading";
  }

  crashed(): void {
    this.lastTree = this.replica?.tree ?? this.lastTree;
    this.replica = undefined;
  }
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
  | { kind: "pauseLeader"; durationMs: number }
  /**
   * The next client write to reach a follower finds it paused (a GC pause, SIGSTOP) with the write
   * unread: its client gives up on the silent server and resumes its session elsewhere while the
   * write waits in the paused process. With `cutClients`, that server's clients also lose their
   * network for as long, so their sessions may expire first.
   */
  | { kind: "pauseOnNextWrite"; durationMs: number; cutClients: boolean }
  /**
   * A client (any: only the super user's may pass the ACL) asks for a membership change: add or
   * re-role members, remove some, or a whole new list. `fromCurrent`: it names the version in force
   * as it last saw it (else -1). The servers refuse what ZooKeeper refuses (too few voters, no
   * synced quorum of the new members, one in flight).
   */
  | { kind: "reconfig"; joining: SimMember[]; leaving: number[]; newMembers: SimMember[] | undefined; fromCurrent: boolean };

export interface SimMember {
  id: number;
  role: "participant" | "observer";
}

/**
 * Inbound bounds below the workload's three pipelined requests a client (IN_FLIGHT_MAX), so that
 * runs pause and resume client connections (the workload's requests are ~100 bytes each).
 */
export const SIM_INBOUND = {
  globalOutstandingLimit: 6,
  globalOutstandingBytesMax: 600,
  connectionOutstandingMax: 2,
  connectionOutstandingBytesMax: 250,
} as const;

export class Simulation implements Scheduler, ClientWorld {
  readonly prng: Prng;
  readonly config: SimConfig;
  readonly checker = new Checker();
  readonly servers: SimServer[] = [];
  /** Every configuration any server brought into force, by version: one chain, one membership per version. */
  private readonly configs = new Map<number, string>();
  private latestVersion = 0;
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
  /** Every learner a leader dropped, with the leader's reason (its evidence). */
  readonly learnersDropped: string[] = [];
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
    watchEvents: 0,
    /** Sessions a client resumed on another connection. */
    sessionMoves: 0,
    /** Connections a server took read-only (read-only mode). */
    readOnlyConnects: 0,
    /** Writes the leader refused because their session had moved to another server (SESSIONMOVED). */
    movedRefusals: 0,
    /** Writes the leader refused because their session was closed or closing (SESSIONEXPIRED). */
    expiredRefusals: 0,
    /** Configurations that came into force (the chain's length beyond the first). */
    reconfigs: 0,
    /** Reconfig requests sent, and those acknowledged to their client. */
    reconfigsAsked: 0,
    reconfigsAcked: 0,
    /** Writes acknowledged to, and watch events reaching, the clients speaking ZooKeeper's protocol. */
    juteAckedWrites: 0,
    juteWatchEvents: 0,
    /** Frames ZooKeeper's clients sent on a connection before its connect answer (the server holds them). */
    framesBehindConnect: 0,
    pings: 0,
    /** Times a server stopped reading a client connection at an inbound bound (SIM_INBOUND). */
    readsPaused: 0,
    /** Learners that found their tree's digest differ from their leader's. */
    treeDivergences: 0,
    /** Storage faults: servers restarted with damaged files. */
    damagedRestarts: 0,
  };
  /** Each learner that found its tree's digest differ from its leader's, and when. */
  readonly treeDivergences: { serverId: number; atMs: number }[] = [];
  /** Armed by pauseOnNextWrite: what to do to the next follower a client write reaches. */
  private writeTrap: { durationMs: number; cutClients: boolean } | undefined;
  /** Writes sent, by session and xid, until their txn is first applied and checked. */
  private readonly sentWrites = new Map<string, { write: WriteRequest; clientId: number; serverId: number }>();
  /**
   * Where the leader made each session's server its owner, each with the last zxid it had proposed by then:
   * a txn of the session proposed after that in the same epoch came from that server, or was refused.
   */
  private readonly establishments = new Map<bigint, { serverId: number; proposedZxid: number }[]>();
  /** Every reconfiguration some server applied (so committed), by zxid: the membership it installs. */
  private readonly committedReconfigs = new Map<number, string>();
  /** Versions of the reconfigurations acknowledged to their clients. */
  private readonly reconfigsAcked: number[] = [];
  /** The highest zxid whose ACL verdict was checked: each committed txn is checked once, at its first apply. */
  private aclCheckedZxid = 0;

  constructor(seed: number, config: Partial<SimConfig> = {}) {
    this.prng = new Prng(seed);
    const drawn = { ...defaultConfig(this.prng.fork()), ...config };
    // Client 3 is the super user (acl-workload.ts): a run with reconfigurations has one to send them.
    this.config = drawn.reconfig ? { ...drawn, clients: Math.max(3, drawn.clients), storageFaults: false } : drawn;
    const voters = Array.from({ length: this.config.voters }, (_, i) => i + 1);
    const observers = Array.from({ length: this.config.observers }, (_, i) => this.config.voters + i + 1);
    const spares = this.config.reconfig ? Array.from({ length: this.config.spares }, (_, i) => this.config.voters + this.config.observers + i + 1) : [];
    const initial = [...voters.map((id) => simMember(id, "participant")), ...observers.map((id) => simMember(id, "observer"))];
    this.configs.set(0, membersText(initial));
    this.checker.onViolation = (line) => this.log(line);
    this.network = new SimNetwork(this, this.prng, this.config, (line) => this.log(line), [...voters, ...observers, ...spares]);
    this.network.onQuorumSend = (from, to, message, leaderTerm) => this.checkAck(from, to, message, leaderTerm);
    this.network.termOf = (id) => this.server(id).term;
    this.replicaConfig = {
      serverId: 0,
      servers: [...voters.map((id) => ({ id, role: "participant" as const })), ...observers.map((id) => ({ id, role: "observer" as const }))],
      tickMs: this.config.tickMs,
      initLimitTicks: this.config.initLimitTicks,
      syncLimitTicks: this.config.syncLimitTicks,
      commitLogCount: this.config.committedLogRecordsMax,
      proposalBytesInFlightMax: zabLimits.proposalBytesInFlightMax,
      forwardedQueuedMax: { count: 1_000_000, bytes: 1024 * 1024 * 1024 },
      ...SIM_INBOUND,
      containerCheckIntervalMs: this.config.containerCheckIntervalMs,
      containerMaxPerMinute: CLEANUP_MAX_PER_MINUTE,
      snapshotEveryTxns: this.config.snapshotEveryTxns,
      superDigest: SUPER_DIGEST,
      ttlNodesEnabled: true,
      readOnlyModeEnabled: this.config.readOnlyMode,
      membershipText: formatMembership(initial, 0n),
      reconfigEnabled: this.config.reconfig,
      enforceQuota: false,
      spaceQuotaBytes: 1024 * 1024 * 1024,
      minSessionTimeoutMs: SESSION_TIMEOUT_MS,
      maxSessionTimeoutMs: SESSION_TIMEOUT_MS,
    };
    for (const id of [...voters, ...observers, ...spares]) {
      const fsyncMsMax = id === this.config.slowDiskServer ? 10 * this.config.fsyncMsMax : this.config.fsyncMsMax;
      const storage = new MemoryStorage(this, id, () => 1 + this.prng.int(fsyncMsMax));
      storage.uncheckedReads = this.config.uncheckedReads;
      storage.silentRepair = this.config.silentRepair;
      const view = spares.includes(id) ? [...initial, simMember(id, "participant")] : initial;
      this.servers.push(new SimServer(id, observers.includes(id), storage, view));
    }
    for (let i = 0; i < this.config.clients; i++) {
      const kind = this.prng.chance(this.config.juteClientShare) ? JUTE_CLIENTS : SDK_CLIENTS;
      const client = new SimClient(i + 1, this, kind);
      this.log(`client ${i + 1} speaks ${kind.name === "jute" ? "ZooKeeper's protocol" : "the SDK's"}`);
      client.thinkMsMax = this.config.clientThinkMsMax;
      this.clients.push(client);
    }
    for (const server of this.servers) this.boot(server);
    this.every(DIGEST_CHECK_INTERVAL_MS, () => this.checkDigests());
    for (const client of this.clients) this.at(this.prng.int(200), () => client.think());
  }

  server(id: number): SimServer {
    return this.servers[id - 1]!;
  }

  /** Changes a node's data in one server's tree as no txn did (DataTree.alterBehindItsBackForTest). */
  alterTree(serverId: number, path: string, data: Uint8Array): void {
    const server = this.server(serverId);
    server.tree.alterBehindItsBackForTest(path, data);
    server.treeAltered = true;
    this.log(`${serverId} tree altered at ${path}`);
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
      wallMs: () => this.clock(server),
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
    // Set once buildReplica returns; what the network delivers before then is dropped.
    let replica: Replica | undefined = undefined;
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
      {
        ...this.replicaConfig,
        serverId: server.id,
        servers: server.view.map((m) => ({ id: m.serverId, role: m.role })),
        membershipText: formatMembership(server.view, 0n),
      },
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
          replaced: (tree) => {
            server.treeAltered = false;
            this.checker.resetServer(server.id, tree.lastProcessedZxid, tree.digest());
          },
        },
        ...(this.config.election === "oracle"
          ? {
              election: (options) =>
                new OracleElection(
                  server.id,
                  options.role === "observer",
                  () => this.pickLeader(),
                  () => 50 + this.prng.int(400),
                  () => (this.config.reconfig ? this.servers.map((s) => s.id).filter((id) => id !== server.id) : []),
                ),
            }
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
      const text =
        typeof fields === "string" ? fields : `${message ?? ""} ${JSON.stringify(fields, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))}`;
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
          if (f["phase"] === "broadcast" && server.replica?.status.role === "leading") this.checker.established(f["epoch"] as number, server.id, server.term);
          break;
        case "zab stepped down":
          this.stats.stepDowns += 1;
          break;
        case "zab learnerDropped":
          this.learnersDropped.push(`server ${server.id} dropped ${String(f["learner"])}: ${String(f["reason"])}`);
          break;
        case "session expired":
          this.stats.sessionsExpired += 1;
          break;
        case TREE_DIVERGED:
          this.stats.treeDivergences += 1;
          this.treeDivergences.push({ serverId: server.id, atMs: this.nowMs });
          // The trees of a correct cluster never differ (checkDigests): an alarm nothing caused is a false one.
          if (!server.treeAltered)
            this.checker.fail("committed prefixes agree", `server ${server.id} raised a tree digest alarm with its tree unaltered: ${text}`);
          break;
        case "configuration in force":
          this.configInForce(server.id, Number.parseInt(String(f["version"]).slice(2), 16), String(f["members"]));
          break;
      }
    };
    const debug = (fields: object | string, message?: string): void => {
      if (message !== "session owner" || typeof fields === "string") return;
      const f = fields as { session: string; owner: number };
      // hex64 writes the id unsigned; the txns carry it signed.
      this.sessionOwnerSet(server, BigInt.asIntN(64, BigInt(f.session)), f.owner);
    };
    return { debug, info: line, warn: line, error: line, fatal: line };
  }

  /** Every txn, just before a server applies it: the checkers' view of the committed sequence. */
  private applying(server: SimServer, txn: Txn, tree: DataTree): void {
    const zxid = txn.header.zxid;
    if (txn.body.type === "reconfig") this.committedReconfigs.set(zxid, membersText(configOfTxnData(txn.body.data, zxid).members));
    const cleanup = this.checkCleanupDelete(server, txn, tree);
    if (zxid > this.aclCheckedZxid) {
      this.aclCheckedZxid = zxid;
      this.checkFirstApply(txn, tree);
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
    if (follower.replica?.status.role !== "following") return;
    const first = follower.firstAckPending;
    follower.firstAckPending = false;
    // Only a stream the leader accepted in its current term: it carries that term's traffic.
    if (!leader.leading || leader.term !== leaderTerm) return;
    const durableEnd = Math.max(follower.storage.durableEnd(), follower.tree.lastProcessedZxid);
    this.checker.ackSent(from, message.zxid, follower.replica.status.termEpoch, leader.replica!.status.termEpoch, first, durableEnd);
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
      const what =
        node === undefined
          ? "a missing node"
          : `a node with owner ${node.stat.ephemeralOwner}, ${node.stat.numChildren} children, cversion ${node.stat.cversion}, mtime ${node.stat.mtime}`;
      this.checker.fail(
        "the leader deletes only empty containers and expired TTL nodes",
        `server ${server.id} applies a cleanup delete of ${path} at ${formatZxid(txn.header.zxid)} (time ${txn.header.timeMs}): ${what}`,
      );
    }
    return kind;
  }

  /**
   * Before a newly committed txn is first applied, the tree is exactly what prep decided it against:
   * its NOAUTH, or the absence of one, must be the model's verdict; it must not come from a server
   * its session had left; an ephemeral it creates must belong to a live session.
   */
  private checkFirstApply(txn: Txn, tree: DataTree): void {
    const { sessionId, cxid, zxid } = txn.header;
    const body = txn.body;
    // ZooKeeper's checkSession: once a session is closed or expired, nothing it sent takes effect (an
    // ephemeral created after its session's closeSession would live forever).
    if (sessionId !== 0n && body.type !== "error" && body.type !== "createSession" && body.type !== "closeSession" && !tree.sessions.has(sessionId)) {
      this.checker.fail(
        "no write of a session that is gone is applied",
        `session ${sessionId}'s ${body.type}${"path" in body ? ` ${body.path}` : ""} applied at ${formatZxid(zxid)}, after the session closed`,
      );
    }
    const key = `${sessionId}:${cxid}`;
    const sent = this.sentWrites.get(key);
    if (sent === undefined) return;
    this.sentWrites.delete(key);
    const err = body.type === "error" ? body.err : 0;
    if (err === ZkErrorCode.SESSIONMOVED) this.stats.movedRefusals += 1;
    if (err === ZkErrorCode.SESSIONEXPIRED) this.stats.expiredRefusals += 1;
    if (err === 0) {
      const moved = (this.establishments.get(sessionId) ?? []).filter((e) => e.proposedZxid < zxid && epochOf(e.proposedZxid) === epochOf(zxid)).at(-1);
      if (moved !== undefined && moved.serverId !== sent.serverId) {
        this.checker.fail(
          "no write from a server the session has left is applied",
          `session ${sessionId}'s ${sent.write.op} ${"path" in sent.write ? sent.write.path : ""}, sent through server ${sent.serverId}, committed at ${formatZxid(zxid)} after the session moved to server ${moved.serverId} (by ${formatZxid(moved.proposedZxid)})`,
        );
      }
    }
    // A write of a session already gone, or sent on a connection its client left, is refused before prep looks at any ACL.
    if (err === ZkErrorCode.SESSIONEXPIRED || err === ZkErrorCode.SESSIONMOVED) return;
    const identity = identityOf(sent.clientId);
    // A reconfig's ACL check comes last: a request refused before it says nothing about the ACL.
    if (sent.write.op === "reconfig" && RECONFIG_REFUSALS_BEFORE_ACL.has(err)) return;
    const expected = sent.write.op === "reconfig" ? identity !== "super" : writeRefused(sent.write, identity, (path) => tree.getNode(path) !== undefined);
    if (err === ZkErrorCode.NOAUTH) this.stats.aclRefusals += 1;
    if (expected !== (err === ZkErrorCode.NOAUTH)) {
      this.checker.fail(
        "ACL decisions follow each node's ACL",
        `${identity} client ${sent.clientId}'s ${sent.write.op} ${"path" in sent.write ? sent.write.path : ""} committed at ${formatZxid(zxid)} with err ${err}, expected ${expected ? "NOAUTH" : "no NOAUTH"}`,
      );
    }
  }

  // ---- what clients need of the world (ClientWorld)

  get serverIds(): number[] {
    return this.servers.map((s) => s.id);
  }

  get sessionTimeoutMs(): number {
    return SESSION_TIMEOUT_MS;
  }

  get readOnlyMode(): boolean {
    return this.config.readOnlyMode;
  }

  serverProcess(id: number): ServerProcess | undefined {
    const server = this.server(id);
    const replica = server.replica;
    if (!server.up || replica === undefined) return undefined;
    return {
      incarnation: server.incarnation,
      door: { serverId: id, state: replica.database, pipeline: replica.pipeline, sessions: replica.sessions, inbound: replica.inbound },
    };
  }

  trapWrite(serverId: number): boolean {
    const trap = this.writeTrap;
    const server = this.server(serverId);
    if (trap === undefined || !server.up || server.leading || server.pausedUntilMs > this.nowMs) return false;
    this.writeTrap = undefined;
    const clients = this.clients.filter((c) => c.serverId === serverId);
    this.log(
      `a client write reaches server ${serverId} (${server.replica?.status.role}) as it pauses for ${trap.durationMs} ms${trap.cutClients ? `; clients ${clients.map((c) => c.id).join(",")} lose their network` : ""}`,
    );
    this.pause(server, trap.durationMs);
    if (trap.cutClients) for (const client of clients) client.cutOff(trap.durationMs);
    return true;
  }

  count(stat: ClientStat): void {
    this.stats[stat] += 1;
  }

  reconfigAcked(version: number): void {
    this.reconfigsAcked.push(version);
  }

  /**
   * "Configurations form one chain", at the end of a run: every configuration that came into force
   * anywhere (applied, installed by a snapshot, or adopted from a peer's notification) is one a
   * reconfiguration committed, with that membership — never one only proposed.
   */
  checkConfigChain(): void {
    for (const [version, members] of this.configs) {
      if (version === 0) continue;
      const committed = this.committedReconfigs.get(version);
      if (committed !== members) {
        this.checker.fail(
          "configurations form one chain",
          `version ${formatZxid(version)} came into force as ${members}, ${committed === undefined ? "but no reconfiguration committed at that zxid" : `but the one committed there installs ${committed}`}`,
        );
      }
    }
  }

  /**
   * "An acknowledged reconfiguration is in force after healing": once everything has converged, the
   * chain's head is at or past every acknowledged reconfiguration, and every member of it that is
   * up runs with it. Returns the failure, or undefined.
   */
  checkConfigInForce(): string | undefined {
    const latest = this.latestVersion;
    const lost = this.reconfigsAcked.filter((version) => version > latest);
    if (lost.length > 0) return `acknowledged reconfigurations ${lost.map(formatZxid).join(",")} are past the configuration in force ${formatZxid(latest)}`;
    const behind = this.configMembers().filter((s) => s.up && s.replica !== undefined && s.replica.status.configInForce.version !== latest);
    if (behind.length > 0)
      return `members ${behind.map((s) => `${s.id}@${formatZxid(s.replica!.status.configInForce.version)}`).join(",")} do not run with ${formatZxid(latest)}`;
    return undefined;
  }

  writeSent(sessionId: bigint, xid: number, write: WriteRequest, clientId: number, serverId: number): void {
    this.sentWrites.set(`${sessionId}:${xid}`, { write, clientId, serverId });
  }

  /**
   * The leader made `serverId` the session's owner (revalidated it there): from here, writes the
   * session sent through any other server are SESSIONMOVED. Told by the leader, not the server the
   * client reached, whose answer may come much later (after a pause) or to a client long gone.
   */
  private sessionOwnerSet(leader: SimServer, sessionId: bigint, serverId: number): void {
    const proposedZxid = leader.replica?.status.leaderStatus()?.lastProposedZxid;
    if (proposedZxid === undefined) return;
    const list = this.establishments.get(sessionId) ?? [];
    list.push({ serverId, proposedZxid });
    this.establishments.set(sessionId, list);
  }

  private checkDigests(): void {
    for (const server of this.servers) {
      if (server.up && server.replica && !server.treeAltered) this.checker.digestAt(server.id, server.tree.lastProcessedZxid, server.tree.digest());
    }
    this.checkInbound();
  }

  /**
   * What each server's doors have read and not answered stays within SIM_INBOUND: a connection is
   * read past the server's total only while it has nothing outstanding (ZooKeeper's rule), so each
   * client's one connection may add one request, of at most one message, beyond it. A connection
   * stops being read at its own bounds: it never holds more than connectionOutstandingMax, nor
   * more bytes than connectionOutstandingBytesMax and the one request that crossed it.
   */
  checkInbound(serverId?: number, connection?: { count: number; bytes: number }): void {
    if (
      connection !== undefined &&
      (connection.count > SIM_INBOUND.connectionOutstandingMax || connection.bytes > SIM_INBOUND.connectionOutstandingBytesMax + limits.messageBytesMax)
    )
      this.checker.fail(
        "the client doors read within their inbound bounds",
        `a connection to server ${serverId} has read ${connection.count} requests (${connection.bytes} bytes) not answered, past ${SIM_INBOUND.connectionOutstandingMax}`,
      );
    const connections = this.config.clients;
    for (const server of this.servers) {
      const inbound = server.up ? server.replica?.inbound : undefined;
      if (inbound === undefined) continue;
      const countMax = SIM_INBOUND.globalOutstandingLimit + connections;
      const bytesMax = SIM_INBOUND.globalOutstandingBytesMax + connections * limits.messageBytesMax;
      if (inbound.count > countMax || inbound.bytes > bytesMax)
        this.checker.fail(
          "the client doors read within their inbound bounds",
          `server ${server.id} has read ${inbound.count} requests (${inbound.bytes} bytes) not answered, past ${countMax} (${bytesMax} bytes)`,
        );
    }
  }

  /** The oracle's choice: the most up-to-date running voter, or (while faults run) sometimes any. */
  private pickLeader(): number | undefined {
    // Once faults stop, only a minority can still be cut off (convergeWithout): never pick one of them.
    // Voters of the configuration in force that may lead by their own log (FastLeaderElection's
    // voters vote only for whom their view counts, and a voter only through a reconfiguration it
    // heard of, not logged, never proposes itself: a leader core from its log would not count it). In force: the
    // latest committed, or the newest a running server knows — the others adopt that one, and a
    // server a committed reconfiguration removed may be the one whose log is longest: it leads,
    // commits its removal and steps down, as with FastLeaderElection.
    const latest = this.quorum;
    const newest = this.servers
      .flatMap((s) => (s.up && s.replica !== undefined ? [s.replica.status.configInForce] : []))
      .reduce<ClusterConfig | undefined>((a, b) => (a === undefined || b.version > a.version ? b : a), undefined);
    const known = newest === undefined ? undefined : quorumOf(newest);
    const candidates = this.servers.filter(
      (s) => s.up && (latest.isVoter(s.id) || known?.isVoter(s.id) === true) && s.replica?.status.mayLead === true && (!this.healing || this.reachesQuorum(s)),
    );
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
    const reachable = this.servers.filter(
      (o) => o.up && (o.id === server.id || (!this.network.isBlocked(server.id, o.id) && !this.network.isBlocked(o.id, server.id))),
    );
    return this.quorum.containsQuorum(reachable.map((o) => o.id));
  }

  /** The latest configuration any server brought into force (the chain's head). */
  get latestConfig(): ClusterConfig {
    const members = this.configs
      .get(this.latestVersion)!
      .split(",")
      .map((entry) => {
        const [id, role] = entry.split(":");
        return simMember(Number(id), role === "observer" ? "observer" : "participant");
      });
    return { version: this.latestVersion, members };
  }

  get quorum(): QuorumVerifier {
    return quorumOf(this.latestConfig);
  }

  /** Members of the latest configuration: the servers convergence is asked of (a removed one stays out of service). */
  private configMembers(): SimServer[] {
    const ids = new Set(this.latestConfig.members.map((m) => m.serverId));
    return this.servers.filter((s) => ids.has(s.id));
  }

  /**
   * "Configurations form one chain": every server that brings version v into force brings in the
   * same membership, and a server's versions only grow (the replica refuses older ones itself).
   */
  private configInForce(serverId: number, version: number, members: string): void {
    const known = this.configs.get(version);
    if (known === undefined) this.configs.set(version, members);
    else if (known !== members) {
      this.checker.fail(
        "configurations form one chain",
        `server ${serverId} brought version ${formatZxid(version)} into force as ${members}, another as ${known}`,
      );
    }
    if (version > this.latestVersion) {
      this.latestVersion = version;
      this.stats.reconfigs += 1;
    }
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
        const buddy = this.servers.find((s) => s.id !== leader.id && s.up && s.replica?.status.role === "following");
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
      case "pauseOnNextWrite":
        this.writeTrap = { durationMs: fault.durationMs, cutClients: fault.cutClients };
        break;
      case "reconfig": {
        const text = (members: readonly SimMember[]) => members.map((m) => formatMembership([simMember(m.id, m.role)], 0n).split("\n")[0]!).join(",");
        const request: ReconfigRequest = {
          op: "reconfig",
          joining: fault.newMembers === undefined && fault.joining.length > 0 ? text(fault.joining) : null,
          leaving: fault.newMembers === undefined && fault.leaving.length > 0 ? fault.leaving.join(",") : null,
          newMembers: fault.newMembers === undefined ? null : text(fault.newMembers),
          fromConfig: fault.fromCurrent ? BigInt(this.latestVersion) : -1n,
        };
        // Mostly the super user's client (the one whose reconfig may pass), sometimes any other first.
        const senders = this.prng.shuffle([...this.clients]);
        if (this.prng.chance(0.8)) senders.sort((a, b) => Number(identityOf(b.id) === "super") - Number(identityOf(a.id) === "super"));
        if (!senders.some((client) => client.reconfig(request))) this.log("no client could send the reconfig");
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
    for (const client of this.clients) client.serverCrashed(server.id);
    server.up = false;
    server.pausedUntilMs = 0;
    server.deferred = [];
    server.storage.crash();
    server.crashed();
  }

  private restart(server: SimServer): void {
    if (server.up) return;
    server.up = true;
    if (this.config.storageFaults && this.prng.chance(DAMAGE_AT_RESTART_CHANCE) && this.servers.every((s) => s === server || !this.stillDamaged(s))) {
      const end = server.storage.durableEnd();
      const done = server.storage.damage(this.prng.pick(DAMAGE_KINDS), this.prng);
      if (done !== undefined) {
        this.stats.damagedRestarts += 1;
        server.damagedEnd = end;
        this.log(`${server.id} restarts with damaged files: ${done}`);
      }
    }
    this.boot(server);
  }

  /** Whether `server`'s files were damaged and it has not got back all it held then (one such server at a time). */
  private stillDamaged(server: SimServer): boolean {
    const end = server.damagedEnd;
    if (end === undefined) return false;
    if (server.up && server.serving && server.storage.durable.repairing === undefined && server.tree.lastProcessedZxid >= end) server.damagedEnd = undefined;
    return server.damagedEnd !== undefined;
  }

  healAll(): void {
    this.applyFault({ kind: "heal" });
    for (const server of this.servers) if (!server.up) this.applyFault({ kind: "restart", server: server.id });
  }

  netDelay(): number {
    return 1 + this.prng.int(this.config.netDelayMsMax);
  }

  // ---- liveness

  /**
   * After healing: within `budgetMs` a leader serves, every server serves with the same tree, and
   * a final write reaches all of them. Returns the failure reason, or undefined.
   */
  converge(budgetMs: number): string | undefined {
    this.healAll();
    this.stopFaults();
    return this.awaitConvergence(() => this.configMembers(), budgetMs);
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
      return this.awaitConvergence(() => this.configMembers(), budgetMs, false);
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
    // With reconfigurations, a minority of the configuration in force may still hold back a
    // reconfiguration logged and not committed (both must elect): try a few, else keep nobody out.
    for (let attempt = 0; attempt < 5; attempt++) {
      const minority = this.drawMinority(prng);
      if (this.leavesQuorumsInPlay(minority)) return minority;
    }
    this.log("no minority leaves a quorum of every configuration in play: none stays out");
    return { crashed: [], isolated: [] };
  }

  /**
   * Whether the servers outside `minority` hold a quorum of every configuration in play among them:
   * the latest committed, the newest any of them knows in force (each adopts it from the others'
   * notifications; a server that missed a commit still holds an older one) and each reconfiguration
   * one of them has logged above that (whoever logged it tells its voters, and a leader that logged
   * it needs a quorum of it). One logged by servers kept out only never reaches the others' elections.
   */
  private leavesQuorumsInPlay(minority: Minority): boolean {
    const out = new Set([...minority.crashed, ...minority.isolated]);
    const peers = this.servers.filter((s) => !out.has(s.id)).flatMap((s) => (s.replica === undefined ? [] : [s.replica.status]));
    const restIds = this.servers.filter((s) => !out.has(s.id)).map((s) => s.id);
    if (!this.quorum.containsQuorum(restIds)) return false;
    const inForce = peers
      .map((p) => p.configInForce)
      .reduce<ClusterConfig | undefined>((a, b) => (a === undefined || b.version > a.version ? b : a), undefined);
    if (inForce === undefined) return true;
    const inPlay = [inForce, ...peers.flatMap((p) => p.reconfigsLogged).filter((config) => config.version > inForce.version)];
    return inPlay.every((config) => quorumOf(config).containsQuorum(restIds));
  }

  private drawMinority(prng: Prng): Minority {
    const quorum = this.quorum;
    const voters = [...quorum.voters].sort((a, b) => a - b);
    // A configuration of two voters has no minority of voters to keep out: only non-voters then.
    const largest = Math.floor((voters.length - 1) / 2);
    const size = largest === 0 ? 0 : prng.between(1, largest);
    const chosen: number[] = [];
    const leader = this.currentLeader();
    if (size > 0 && leader !== undefined && quorum.isVoter(leader.id) && prng.chance(0.5)) chosen.push(leader.id);
    while (chosen.length < size) {
      const id = prng.pick(voters.filter((v) => !chosen.includes(v)));
      chosen.push(id);
    }
    for (const s of this.servers) if (!quorum.isVoter(s.id) && prng.chance(0.3)) chosen.push(s.id);
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
    const quorum = this.quorum;
    const outVoters = [...out].filter((id) => quorum.isVoter(id));
    const inVoters = [...quorum.voters].filter((id) => !out.has(id));
    if (quorum.containsQuorum(outVoters) || !quorum.containsQuorum(inVoters)) throw new Error(`not a minority: ${JSON.stringify(minority)}`);
    this.log(`MINORITY stays out: ${JSON.stringify(minority)}`);
    this.stats.minorityPhases += 1;
    this.applyFault({ kind: "heal" });
    for (const server of this.servers) if (!server.up && !minority.crashed.includes(server.id)) this.applyFault({ kind: "restart", server: server.id });
    // A server down when the minority was drawn may come back with a reconfiguration in its log that
    // needs the minority: then nobody stays out (the property holds only with every quorum in reach).
    if (!this.leavesQuorumsInPlay(minority)) {
      this.log("a restarted server logged a reconfiguration that needs the minority: none stays out");
      minority = { crashed: [], isolated: [] };
      out.clear();
    }
    // A member whose files were damaged is no good copy until it has got back what it held: with one
    // among the rest, the rest may hold too few good copies for a quorum (the property needs them).
    if (out.size > 0 && this.servers.some((s) => !out.has(s.id) && this.stillDamaged(s))) {
      this.log("a member with damaged files is among the rest: none stays out");
      minority = { crashed: [], isolated: [] };
      out.clear();
      for (const server of this.servers) if (!server.up) this.applyFault({ kind: "restart", server: server.id });
    }
    for (const id of minority.crashed) this.applyFault({ kind: "crash", server: id });
    this.cutOff(new Set(minority.isolated));
    this.stopFaults();
    return this.awaitConvergence(() => this.configMembers().filter((s) => !out.has(s.id)), budgetMs);
  }

  /** The faults stop: no more lost, duplicated or broken messages; the oracle election picks well. */
  private stopFaults(): void {
    this.healing = true;
    Object.assign(this.network.faults, { electionLoss: 0, electionDuplicate: 0, streamBreak: 0 });
  }

  /**
   * Within `budgetMs`, a leader among the members (`membersNow`, asked again as reconfigurations commit) serves, all of them serve at one tree, and a fresh
   * write reaches them (or, without `freshWrite`, the leader's last proposal reaches them unaided).
   */
  private awaitConvergence(membersNow: () => SimServer[], budgetMs: number, freshWrite = true): string | undefined {
    const deadline = this.nowMs + budgetMs;
    let marker: number | undefined;
    // The members of the latest configuration: a reconfiguration logged earlier may commit meanwhile.
    let members = membersNow();
    while (this.nowMs < deadline) {
      this.runFor(200);
      members = membersNow();
      const leader = members.find((s) => s.leading && s.serving);
      if (leader === undefined || !members.every((s) => s.serving)) continue;
      if (!freshWrite) marker = leader.replica!.status.leaderStatus()?.lastProposedZxid;
      else if (marker === undefined) {
        // Any txn will do as the fresh write: a server-made one for no session commits as an error txn.
        leader.replica!.peer.submitWrite(
          0n,
          0,
          { op: "create", path: "/converged-", data: new Uint8Array(), acl: [], mode: "persistent-sequential", ttlMs: 0 },
          [],
        );
        marker = leader.replica!.status.leaderStatus()?.lastProposedZxid;
      }
      if (marker === undefined) continue;
      const zxid = leader.tree.lastProcessedZxid;
      if (zxid < marker) continue;
      // Quiet, every member holds exactly the leader's tree. Under load a slow member may trail by a
      // few txns at any instant: it must have applied the fresh write, and trees at equal zxids are
      // compared (checkDigests and the committed-sequence checker).
      const arrived = freshWrite ? members.every((s) => s.tree.lastProcessedZxid >= marker!) : members.every((s) => s.tree.lastProcessedZxid === zxid);
      if (arrived) {
        const digest = leader.tree.digest();
        const differing = members.filter((s) => s.tree.lastProcessedZxid === zxid && s.tree.digest() !== digest).map((s) => s.id);
        if (differing.length > 0) return `servers ${differing.join(",")} differ from leader ${leader.id} at ${formatZxid(zxid)}`;
        this.log(`converged: ${members.map((s) => `${s.id}@${formatZxid(s.tree.lastProcessedZxid)}`).join(",")}, leader ${leader.id}`);
        return undefined;
      }
    }
    const states = this.servers.map(
      (s) => `${s.id}:${s.up ? (s.replica?.status.role ?? "?") : "down"}${s.serving ? "+" : ""}@${formatZxid(s.tree.lastProcessedZxid)}`,
    );
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
    const held = (): Set<bigint> => new Set(this.clients.flatMap((c) => (c.sessionId !== undefined ? [c.sessionId] : [])));
    const heldAtStart = held();
    // Removed servers are out of service: their trees stopped where they left.
    const members = this.configMembers();
    const abandoned = new Set([...members.flatMap((s) => [...s.tree.sessions.keys()])].filter((id) => !heldAtStart.has(id)));
    const lingering = (): string[] => {
      const heldNow = held();
      return members.flatMap((server) =>
        [...abandoned]
          .filter((sessionId) => !heldNow.has(sessionId) && (server.tree.sessions.has(sessionId) || server.tree.ephemeralsOf(sessionId).size > 0))
          .map((sessionId) => `server ${server.id} still has session ${sessionId}`),
      );
    };
    while (lingering().length > 0 && this.nowMs < deadline) this.runFor(200);
    const left = lingering();
    if (left.length > 0) return `${left.slice(0, 3).join("; ")} ${budgetMs} ms after healing`;
    for (const server of members) {
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
    // The deletion is a write: its commit may wait for a proposal's round trip and a quorum's fsync,
    // and with another voter paused that quorum can need the member with the slow disk.
    // A voter paused now, or by a write trap still armed, can hold every commit back for as long
    // (with two voters, either one is needed).
    const pausesMs = Math.max(0, ...this.servers.map((s) => s.pausedUntilMs - this.nowMs)) + (this.writeTrap?.durationMs ?? 0);
    const slackMs = CLEANUP_SLACK_MS + 2 * this.config.netDelayMsMax + (this.config.slowDiskServer === 0 ? 1 : 10) * this.config.fsyncMsMax + pausesMs;
    const watched: { path: string; czxid: number; dueAtMs: number }[] = [];
    for (const path of leader.tree.containerPaths()) {
      const stat = leader.tree.getNode(path)!.stat;
      if (cleanupKind(stat, 0) === "container") watched.push({ path, czxid: stat.czxid, dueAtMs: start + 2 * intervalMs + slackMs });
    }
    for (const path of leader.tree.ttlPaths()) {
      const stat = leader.tree.getNode(path)!.stat;
      if (stat.numChildren > 0 || ownerKind(stat.ephemeralOwner) !== "ttl") continue;
      // When the leader's clock, offset by the clock jumps it took, passes the node's expiry.
      const expiresAtMs = stat.mtime + ttlOfOwner(stat.ephemeralOwner) - leader.clockOffsetMs;
      const dueAtMs = Math.max(start, expiresAtMs) + intervalMs + slackMs;
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

/** What the leader refuses a reconfig with before it looks at the ACL (ZooKeeper's order). */
const RECONFIG_REFUSALS_BEFORE_ACL = new Set<number>([
  ZkErrorCode.RECONFIGINPROGRESS,
  ZkErrorCode.BADVERSION,
  ZkErrorCode.BADARGUMENTS,
  ZkErrorCode.NEWCONFIGNOQUORUM,
  ZkErrorCode.RECONFIGDISABLED,
]);

/** A simulated member's entry: its addresses are never dialled (the network routes by id), only written into configurations. */
function simMember(id: number, role: MemberRole): MemberAddress {
  return { serverId: id, host: "127.0.0.1", quorumPort: 20_000 + id, electionPort: 30_000 + id, role, clientHost: "127.0.0.1", clientPort: 40_000 + id };
}

/** A membership as the replica logs it when it comes into force ("id:role,…", ascending ids). */
function membersText(members: readonly MemberAddress[]): string {
  return [...members]
    .sort((a, b) => a.serverId - b.serverId)
    .map((m) => `${m.serverId}:${m.role}`)
    .join(",");
}
