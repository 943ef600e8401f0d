/**
 * A few production replicas (`buildReplica`, the chain `corral server` runs) over the simulator's
 * twins (test/sim/twins: the peer network, memory storage, one stepped scheduler), every delay
 * fixed: each message and each fsync takes 1 ms, and a stream a cut or a crash breaks breaks
 * silently (only timeouts tell). The session passwords come from a PRNG with a fixed seed, so a
 * script gives the same trace every run.
 * A script drives it step by step (replica-scenarios.test.ts): it holds and releases the quorum
 * traffic of one link, crashes and partitions servers, runs until quiet or for a while, and reads
 * what happened as a trace — quorum messages as they arrive, records as they become durable, txns
 * as they are applied, client frames in and answers out (replica-scenario-client.ts).
 *
 * Hidden from the trace, being the election and Zab goldens' subject or noise here: election
 * notifications, the Zab pings between servers, the leader's periodic tree digests (the digest
 * checks' own tests are in test/sim), and everything until `start` has every server serving.
 */
import { zabLimits } from "../../src/consensus/constants.js";
import type { QuorumMessage } from "../../src/consensus/messages.js";
import { zkErrorName } from "../../src/common/errors.js";
import { formatMembership, type MemberAddress } from "../../src/common/membership.js";
import type { ConnectionSessionDeps } from "../../src/replica/connection-session.js";
import type { Clock, LogSink, ReplicaStorage } from "../../src/replica/ports.js";
import { decodeForwardedRequest } from "../../src/replica/request-codec.js";
import { buildReplica, type Replica, type ReplicaConfig } from "../../src/replica/replica.js";
import { decodeTxn } from "../../src/store/txn-codec.js";
import type { Txn, TxnBody } from "../../src/store/types.js";
import { formatZxid } from "../../src/store/zxid.js";
import { Prng } from "../sim/prng.js";
import { MemoryStorage } from "../sim/twins/memory-storage.js";
import { SteppedScheduler } from "../sim/twins/scheduler.js";
import { SimNetwork } from "../sim/twins/sim-network.js";
import { describe as describeZabMessage } from "./consensus-harness.js";

/** Quorum messages kept out of the trace (see the file note). */
const HIDDEN: ReadonlySet<QuorumMessage["type"]> = new Set(["ping", "treeDigest"]);

/** ZooKeeper's default tick; the peer still ticks its cores every 50 ms. */
const TICK_MS = 2_000;
/** Long enough that no session expires in a scenario unless it lets the time pass. */
export const SESSION_TIMEOUT_MS = 30_000;
/** How long `start` may take to elect a leader and sync every server. */
const START_BUDGET_MS = 20_000;
/** Events `settle` may run before it calls the scenario one that never quiets down. */
const SETTLE_EVENTS_MAX = 100_000;

/** One member: its storage outlives its process; a restart builds a new replica from what is durable. */
interface ScenarioServer {
  readonly id: number;
  readonly storage: MemoryStorage;
  replica: Replica | undefined;
  /** Bumped at every start: the timers and deliveries of a crashed process never run. */
  incarnation: number;
}

/** What a scripted client reaches at a server: its door's needs, for this process of it. */
export interface ServerDoor {
  readonly incarnation: number;
  readonly deps: ConnectionSessionDeps;
}

interface HeldMessage {
  readonly from: number;
  readonly to: number;
  readonly message: QuorumMessage;
}

export class ReplicaScenario {
  private readonly timeline = new SteppedScheduler();
  private readonly prng = new Prng(1);
  private readonly network: SimNetwork;
  private readonly servers = new Map<number, ScenarioServer>();
  private readonly config: ReplicaConfig;
  private readonly lines: string[] = [];
  private tracing = false;
  /** Links whose quorum traffic waits ("from>to"), and what waits on them, in arrival order. */
  private readonly holds = new Set<string>();
  private held: HeldMessage[] = [];
  /** Session ids by the short names the trace gives them (s1, s2, … in order of appearance). */
  private readonly sessionNames = new Map<bigint, string>();
  /** Told when a server's process dies (its clients' connections break). */
  readonly crashListeners: ((serverId: number) => void)[] = [];

  constructor(readonly voters: readonly number[]) {
    // Every choice fixed, so that no trace hangs on how many draws came before (hidden messages draw too).
    const faults = { netDelayMsMax: 0, electionLoss: 0, electionDuplicate: 0, streamBreak: 0, silentBreak: 1 };
    this.network = new SimNetwork(this.timeline, this.prng, faults, (line) => this.trace(line), voters);
    const members: MemberAddress[] = voters.map((id) => ({
      serverId: id,
      host: "127.0.0.1",
      quorumPort: 2000 + id,
      electionPort: 3000 + id,
      role: "participant",
    }));
    this.config = {
      serverId: 0,
      servers: voters.map((id) => ({ id, role: "participant" as const })),
      tickMs: TICK_MS,
      initLimitTicks: 10,
      syncLimitTicks: 5,
      commitLogCount: 500,
      containerCheckIntervalMs: 60_000,
      containerMaxPerMinute: 10_000,
      snapshotEveryTxns: 100_000,
      superDigest: "",
      ttlNodesEnabled: false,
      readOnlyModeEnabled: false,
      membershipText: formatMembership(members, 0n),
      reconfigEnabled: false,
      enforceQuota: false,
      spaceQuotaBytes: 1024 * 1024 * 1024,
      minSessionTimeoutMs: 2 * TICK_MS,
      maxSessionTimeoutMs: SESSION_TIMEOUT_MS,
      // Flow control as a server's defaults: the scripts' few small requests never reach it.
      proposalBytesInFlightMax: zabLimits.proposalBytesInFlightMax,
      forwardedQueuedMax: { count: 1_000_000, bytes: 1024 * 1024 * 1024 },
      globalOutstandingLimit: 1000,
      globalOutstandingBytesMax: 8 * 1024 * 1024,
      connectionOutstandingMax: 1000,
      connectionOutstandingBytesMax: 4 * 1024 * 1024,
    };
    for (const id of voters) this.servers.set(id, { id, storage: new MemoryStorage(this.timeline, id, () => 1), replica: undefined, incarnation: 0 });
  }

  get nowMs(): number {
    return this.timeline.nowMs;
  }

  /** Schedules client traffic on the scenario's timeline (1 ms a hop, in order). */
  send(run: () => void): void {
    this.timeline.at(1, run);
  }

  trace(line: string): void {
    if (this.tracing) this.lines.push(line);
  }

  /** The trace since the last call. */
  takeTrace(): string {
    return this.lines.splice(0).join("\n");
  }

  /** The name the trace gives a session. */
  sessionName(sessionId: bigint): string {
    if (sessionId === 0n) return "none";
    let name = this.sessionNames.get(sessionId);
    if (name === undefined) {
      name = `s${this.sessionNames.size + 1}`;
      this.sessionNames.set(sessionId, name);
    }
    return name;
  }

  /** Starts every server and runs until each serves, untraced; returns who leads and who follows. */
  start(): string {
    for (const server of this.servers.values()) this.boot(server);
    const until = this.nowMs + START_BUDGET_MS;
    while (!(this.timeline.quiet && [...this.servers.values()].every((s) => s.replica?.broadcast.serving === true))) {
      if (!this.timeline.runNext(until)) throw new Error(`no leader serves a quorum after ${START_BUDGET_MS} ms`);
    }
    this.tracing = true;
    return this.roles();
  }

  /** Each server's role and leader, one line each. */
  roles(): string {
    return [...this.servers.values()]
      .map((s) => {
        const status = s.replica?.status;
        if (status === undefined) return `${s.id} down`;
        const role = status.role;
        if (role === "leading") return `${s.id} leading (epoch ${status.termEpoch})`;
        if (role === "looking") return `${s.id} looking`;
        return `${s.id} ${role} ${status.currentLeader}${status.serving ? "" : " (not serving yet)"}`;
      })
      .join("\n");
  }

  /** Runs until no message, fsync or client frame is left to deliver (held ones wait). */
  settle(): void {
    for (let events = 0; !this.timeline.quiet; events++) {
      if (events >= SETTLE_EVENTS_MAX) throw new Error(`still busy after ${SETTLE_EVENTS_MAX} events`);
      this.timeline.runNext();
    }
  }

  /** Lets `durationMs` pass: ticks run, and whatever they set off. */
  advance(durationMs: number): void {
    const until = this.nowMs + durationMs;
    while (this.timeline.runNext(until));
    this.timeline.nowMs = until;
  }

  door(serverId: number): ServerDoor | undefined {
    const server = this.server(serverId);
    const replica = server.replica;
    if (replica === undefined) return undefined;
    return {
      incarnation: server.incarnation,
      deps: { serverId, state: replica.database, pipeline: replica.pipeline, sessions: replica.sessions, inbound: replica.inbound },
    };
  }

  isRunning(serverId: number, incarnation: number): boolean {
    const server = this.server(serverId);
    return server.replica !== undefined && server.incarnation === incarnation;
  }

  /** The quorum traffic from `from` to `to` waits until released (as on a stalled TCP stream). */
  hold(from: number, to: number): void {
    this.holds.add(`${from}>${to}`);
  }

  /** What waited on the link arrives, in order, and what follows no longer waits. */
  release(from: number, to: number): void {
    this.holds.delete(`${from}>${to}`);
    const [released, kept] = partition(this.held, (h) => h.from === from && h.to === to);
    this.held = kept;
    for (const h of released) this.timeline.at(1, () => this.deliver(h.from, h.to, h.message));
  }

  crash(serverId: number): void {
    const server = this.server(serverId);
    if (server.replica === undefined) return;
    this.trace(`${serverId} crashes`);
    this.network.detach(serverId);
    server.storage.crash();
    server.replica = undefined;
    this.held = this.held.filter((h) => h.from !== serverId && h.to !== serverId);
    for (const listener of this.crashListeners) listener(serverId);
  }

  restart(serverId: number): void {
    const server = this.server(serverId);
    if (server.replica !== undefined) return;
    this.trace(`${serverId} restarts`);
    this.boot(server);
  }

  /** Cuts `serverId` off from every other server, both ways (its clients still reach it). */
  isolate(serverId: number): void {
    this.trace(`${serverId} is cut off from the other servers`);
    for (const other of this.voters) {
      if (other === serverId) continue;
      this.network.block(serverId, other);
      this.network.block(other, serverId);
    }
    this.held = this.held.filter((h) => h.from !== serverId && h.to !== serverId);
  }

  heal(): void {
    this.trace("the servers' network heals");
    this.network.healAll();
  }

  /** What each running server holds at `path`. */
  node(path: string): string {
    return [...this.servers.values()]
      .map((s) => {
        const tree = s.replica?.tree;
        if (tree === undefined) return `${s.id} down`;
        const node = tree.getNode(path);
        const at = `(applied to ${formatZxid(tree.lastProcessedZxid)})`;
        if (node === undefined) return `${s.id} ${path} absent ${at}`;
        return `${s.id} ${path} ${text(node.data)} version ${node.stat.version} mzxid ${formatZxid(node.stat.mzxid)} ${at}`;
      })
      .join("\n");
  }

  // ---- a server's process

  private server(id: number): ScenarioServer {
    const server = this.servers.get(id);
    if (server === undefined) throw new Error(`no server ${id}`);
    return server;
  }

  private boot(server: ScenarioServer): void {
    server.incarnation += 1;
    const incarnation = server.incarnation;
    const alive = (): boolean => server.incarnation === incarnation && server.replica !== undefined;
    const clock: Clock = {
      nowMs: () => this.timeline.nowMs,
      wallMs: () => this.timeline.nowMs,
      every: (intervalMs, run) => {
        let stopped = false;
        const tick = (): void => {
          if (stopped || !alive()) return;
          run();
          this.timeline.tick(intervalMs, tick);
        };
        this.timeline.tick(intervalMs, tick);
        return () => {
          stopped = true;
        };
      },
    };
    const peers = this.network.attach(server.id, {
      onNotification: (n) => server.replica?.onNotification(n),
      onQuorumMessage: (from, m) => this.arrive(from, server.id, m),
      onQuorumStreamClosed: (peer) => server.replica?.onQuorumStreamClosed(peer),
    });
    const { storage } = server;
    const traced: ReplicaStorage = {
      ...storage,
      log: {
        ...storage.log,
        append: (zxid, record, done) =>
          storage.log.append(zxid, record, (error) => {
            this.trace(`${server.id} logged ${formatZxid(zxid)}`);
            done(error);
          }),
      },
    };
    const replica = buildReplica(
      { ...this.config, serverId: server.id },
      {
        storage: traced,
        recovered: storage.recover(),
        peers,
        clock,
        entropy: { bytes: (count) => Uint8Array.from({ length: count }, () => this.prng.int(256)) },
        logger: this.logSink(server.id),
        onFatal: (error) => {
          throw new Error(`server ${server.id} stopped on a failed durable write: ${String(error)}`);
        },
        treeObserver: {
          applying: (txn) => this.trace(`${server.id} applies ${formatZxid(txn.header.zxid)} ${this.describeTxn(txn)}`),
          replaced: (tree) => this.trace(`${server.id} installs a snapshot at ${formatZxid(tree.lastProcessedZxid)}`),
        },
      },
    );
    server.replica = replica;
    replica.start();
  }

  /** The replica's log lines the trace keeps: its role changes. */
  private logSink(serverId: number): LogSink {
    const line = (fields: object | string, message?: string): void => {
      if (typeof fields === "string" || message !== "role changed") return;
      const { role, leader } = fields as { role: string; leader?: number };
      this.trace(`${serverId} is now ${role}${leader === undefined || role === "leading" ? "" : ` ${leader}`}`);
    };
    return { debug: () => {}, info: line, warn: line, error: line, fatal: line };
  }

  // ---- quorum traffic

  private arrive(from: number, to: number, message: QuorumMessage): void {
    if (this.holds.has(`${from}>${to}`)) {
      if (!HIDDEN.has(message.type)) this.trace(`${from}→${to} ${this.describeMessage(message)} [held]`);
      this.held.push({ from, to, message });
      return;
    }
    this.deliver(from, to, message);
  }

  private deliver(from: number, to: number, message: QuorumMessage): void {
    const replica = this.server(to).replica;
    if (replica === undefined) return;
    if (!HIDDEN.has(message.type)) this.trace(`${from}→${to} ${this.describeMessage(message)}`);
    replica.onQuorumMessage(from, message);
  }

  private describeMessage(m: QuorumMessage): string {
    switch (m.type) {
      case "proposal":
      case "inform":
        return `${m.type} ${formatZxid(m.zxid)} ${this.describeTxn(decodeTxn(m.record))}`;
      case "request": {
        const { request } = decodeForwardedRequest(m.request);
        const path = "path" in request ? ` ${request.path}` : "";
        return `request ${this.sessionName(m.sessionId)} cxid ${m.cxid} ${request.op}${path}`;
      }
      case "ack":
      case "commit":
        return `${m.type} ${formatZxid(m.zxid)}`;
      case "revalidate":
        return `revalidate ${this.sessionName(m.sessionId)}`;
      case "revalidated":
        return `revalidated ${this.sessionName(m.sessionId)} ${m.valid ? "valid" : "expired"}`;
      default:
        return describeZabMessage(m);
    }
  }

  private describeTxn(txn: Txn): string {
    const { sessionId, cxid } = txn.header;
    return `${describeBody(txn.body, (id) => this.sessionName(id))} (${this.sessionName(sessionId)} cxid ${cxid})`;
  }
}

function describeBody(body: TxnBody, sessionName: (sessionId: bigint) => string): string {
  switch (body.type) {
    case "create":
      return `create ${body.path} ${text(body.data)}${body.ephemeralOwner === 0n ? "" : ` owner ${sessionName(body.ephemeralOwner)}`}`;
    case "setData":
      return `setData ${body.path} ${text(body.data)} version ${body.version}`;
    case "delete":
      return `delete ${body.path}`;
    case "error":
      return `error ${zkErrorName(body.err) ?? body.err}`;
    case "createSession":
      return `createSession timeout ${body.timeoutMs}`;
    default:
      return body.type;
  }
}

/** Data as the trace shows it: quoted text. */
export function text(data: Uint8Array): string {
  return JSON.stringify(new TextDecoder().decode(data));
}

function partition<T>(items: readonly T[], test: (item: T) => boolean): [T[], T[]] {
  return [items.filter(test), items.filter((item) => !test(item))];
}
