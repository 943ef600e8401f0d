/**
 * A simulated client: the SDK's own session machine (src/client/session-machine.ts: connect and
 * resume, the xid table, ordering, watch re-registration, auth replay, pings, back-off, host
 * rotation) over simulated connections whose server end is the server's own client session (src/replica/client-session.ts),
 * with frames encoded and decoded by the real codecs. Around it, the workload (writes, reads with
 * watches, syncs, as anonymous, owner or super user) and the checks of what the client sees:
 * session order and single system image, sync-then-read, ACL verdicts on reads, and the watch
 * contract (an event before its change can be read, events in zxid order, one-time watches fire
 * once).
 */
import { ZkErrorCode } from "../../src/common/errors.js";
import type { Acl as WireAcl } from "../../gen/client.js";
import { decodeServerFrame, encodeClientFrame, type DecodedResponse, type DecodedWatchEvent, type RequestOp } from "../../src/client/codec.js";
import type { HostPort } from "../../src/client/connect-string.js";
import { SessionMachine } from "../../src/client/session-machine.js";
import type { SessionEffect, SessionTimer } from "../../src/client/session-io.js";
import type { WatchPaths } from "../../src/client/watch-registry.js";
import { initialAuthInfo } from "../../src/replica/auth.js";
import type { CreateRequest, ReconfigRequest, WriteRequest } from "../../src/replica/requests.js";
import { ClientSession, type ClientSessionDeps, type ConnectionRefusal } from "../../src/replica/client-session.js";
import { decodeClientFrame } from "../../src/server/client-frame-codec.js";
import { GrpcSessionCodec, receiveClientFrame, type GrpcClientSession } from "../../src/server/grpc-session-codec.js";
import { CREATE_MODE_FLAGS, WatchEventType } from "../../src/store/types.js";
import { ADD_WATCH_MODE_NUMBERS } from "../../src/common/watch-modes.js";
import { formatZxid } from "../../src/store/zxid.js";
import { credentialsOf, GUARDED_ACL, identityOf, readRefused, SECRET_ACL } from "./acl-workload.js";
import type { Checker } from "./checker.js";
import type { Prng } from "./prng.js";
import type { Scheduler } from "./twins/scheduler.js";

/** TTLs the workload gives its TTL nodes. */
const TTLS_MS = [50, 300, 1_500] as const;
/** A client dies (stops talking, its session must expire) with this chance per think. */
const CLIENT_DEATH_CHANCE = 0.003;
/** Requests a client keeps in flight at most. */
const IN_FLIGHT_MAX = 3;

/** What a client needs of the simulated world around it. */
export interface ClientWorld extends Scheduler {
  readonly prng: Prng;
  readonly checker: Checker;
  readonly clientsActive: boolean;
  readonly serverIds: readonly number[];
  readonly sessionTimeoutMs: number;
  /** Servers run read-only mode: a client may accept read-only sessions. */
  readonly readOnlyMode: boolean;
  /** The running process of server `id`, if it is up: its identity for this connection and its door's needs. */
  serverProcess(id: number): ServerProcess | undefined;
  log(line: string): void;
  netDelay(): number;
  count(stat: ClientStat): void;
  /** A write is leaving on a connection to `serverId`: the checks at its first apply need to know who sent it, and from where. */
  writeSent(sessionId: bigint, xid: number, write: WriteRequest, clientId: number, serverId: number): void;
  /** A reconfig was acknowledged: the configuration of `version` must be in force once everything heals. */
  reconfigAcked(version: number): void;
  /** A client write is about to be read by server `serverId`: true if the server just paused instead (pauseOnNextWrite). */
  trapWrite(serverId: number): boolean;
  /** `sessionId` was (re)established at `serverId`. */
  sessionEstablished(sessionId: bigint, serverId: number): void;
}

export type ClientStat =
  "ackedWrites" | "aclRefusals" | "clientDeaths" | "watchEvents" | "sessionMoves" | "readOnlyConnects" | "reconfigsAsked" | "reconfigsAcked";

export interface ServerProcess {
  incarnation: number;
  door: ClientSessionDeps;
}

interface Token {
  kind: "write" | "read" | "sync" | "auth" | "watch" | "reconfig";
  request: RequestOp;
  xid: number;
  sentAtMs: number;
  /** The write-ack high-water mark when it was sent (a sync must reach it). */
  ackedZxidMaxAtSend: number;
}

/** One simulated connection: the client's end is a number the machine gave it; the server's end is the server's own client session. */
interface Link {
  connection: number;
  serverId: number;
  incarnation: number | undefined;
  door: GrpcClientSession | undefined;
  /** Set once either end is done with it: nothing more is delivered. */
  closed: boolean;
  lastArrivalToServer: number;
  lastArrivalToClient: number;
}

/** A watch the client holds, with what it had read when it set it. */
interface HeldWatch {
  kind: "data" | "exist" | "child";
  path: string;
  /** data: the node's mzxid; child: its pzxid; exist: 0 (the node was absent). */
  seenZxid: bigint;
}

export class SimClient {
  alive = true;
  private machine: SessionMachine<Token> | undefined;
  private link: Link | undefined;
  private readonly timers = new Map<SessionTimer, number>();
  private timerGeneration = 0;
  private pending: Token[] = [];
  private readonly watches = new Map<string, HeldWatch>();
  /**
   * Persistent watches (addWatch), by path: whether recursive, and what this client knows of the
   * node — its mzxid, "absent", or undefined when unknown (after a reconnect: ZooKeeper does not
   * replay changes missed by a persistent watch).
   */
  private readonly persistent = new Map<string, { recursive: boolean; seen: bigint | "absent" | undefined }>();
  private lastEventZxid = 0n;
  /** What this client has seen, across connections and sessions: reads never go back (single system image; see the read-only exception). */
  private lastZxidSeen = 0n;
  private lastWriteZxid = 0n;
  /** The write-ack high-water mark when the last completed sync was sent: reads after it must reach it. */
  private syncFloor = 0;
  /** The client's credentials: none sent yet, sent, or accepted (the machine replays them on every new connection). */
  private auth: "none" | "sent" | "accepted" = "none";

  constructor(
    readonly id: number,
    private readonly world: ClientWorld,
  ) {}

  /** The session this client holds now (established at least once and not expired). */
  get sessionId(): bigint | undefined {
    const machine = this.machine;
    if (!this.alive || machine === undefined || machine.lifecycle !== "active" || machine.sessionId === 0n) return undefined;
    return machine.sessionId;
  }

  /** Until then the client's network is down: nothing it sends arrives, nothing reaches it. */
  private cutUntilMs = 0;

  /** Cuts the client off from every server for `durationMs` (its host lost its network). */
  cutOff(durationMs: number): void {
    this.cutUntilMs = Math.max(this.cutUntilMs, this.world.nowMs + durationMs);
    this.world.log(`client ${this.id} cut off until ${this.cutUntilMs}`);
  }

  private get cut(): boolean {
    return this.world.nowMs < this.cutUntilMs;
  }

  /** The server this client's connection goes to, if it has one. */
  get serverId(): number | undefined {
    return this.link?.closed === false ? this.link.serverId : undefined;
  }

  think(): void {
    const world = this.world;
    world.at(1 + world.prng.int(this.thinkMsMax), () => this.think());
    if (!this.alive) return;
    if (world.clientsActive && world.prng.chance(CLIENT_DEATH_CHANCE)) return this.die();
    const machine = this.machine;
    if (machine === undefined || machine.lifecycle === "expired" || machine.lifecycle === "closed") {
      if (world.clientsActive) this.startSession();
      return;
    }
    if (!world.clientsActive || !machine.connected) return;
    if (this.auth !== "accepted") {
      // Nothing else goes out before the credentials are accepted: the ACL model knows the client by them.
      const credentials = credentialsOf(this.id);
      if (credentials === undefined) this.auth = "accepted";
      else if (this.auth === "none") {
        this.auth = "sent";
        this.submit("auth", { $case: "addAuth", addAuth: { scheme: "digest", auth: new TextEncoder().encode(credentials) } });
      }
      if (this.auth !== "accepted") return;
    }
    if (this.pending.length >= IN_FLIGHT_MAX) return;
    const roll = world.prng.float();
    if (roll < 0.6) {
      const write = this.randomWrite();
      const xid = this.submit("write", toRequestOp(write));
      world.writeSent(machine.sessionId, xid, write, this.id, this.link!.serverId);
    } else if (roll < 0.85) {
      const path = `/${world.prng.pick(["k", "k", "k", "r", "q"])}${world.prng.int(3)}`;
      const watch = world.prng.chance(0.4);
      this.submit("read", world.prng.chance(0.7) ? { $case: "getData", getData: { path, watch } } : { $case: "exists", exists: { path, watch } });
    } else if (roll < 0.88) {
      this.submit("read", { $case: "getChildren", getChildren: { path: `/c${world.prng.int(3)}`, watch: world.prng.chance(0.5) } });
    } else if (roll < 0.9) {
      // A persistent watch on a plain node, or a recursive one over a container and its members.
      const recursive = world.prng.chance(0.4);
      const path = recursive ? `/c${world.prng.int(3)}` : `/k${world.prng.int(5)}`;
      if (!this.persistent.has(path))
        this.submit("watch", { $case: "addWatch", addWatch: { path, mode: ADD_WATCH_MODE_NUMBERS[recursive ? "persistent-recursive" : "persistent"] } });
    } else this.submit("sync", { $case: "sync", sync: { path: "/" } });
  }

  /** Set by the simulation from its configuration. */
  thinkMsMax = 150;

  /**
   * Sends a reconfig on this client's session, if it has one ready (connected, authenticated,
   * room for a request): whether it went out. Every client may try; only the super user's passes
   * the ACL, the others' must be refused NOAUTH (if nothing is refused before the ACL check).
   */
  reconfig(request: ReconfigRequest): boolean {
    const machine = this.machine;
    if (!this.alive || machine === undefined || !machine.connected || this.auth !== "accepted" || this.pending.length >= IN_FLIGHT_MAX) return false;
    const { joining, leaving, newMembers, fromConfig } = request;
    const op: RequestOp = {
      $case: "reconfig",
      reconfig: { joining: joining ?? undefined, leaving: leaving ?? undefined, newMembers: newMembers ?? undefined, fromConfig },
    };
    const xid = this.submit("reconfig", op);
    this.world.writeSent(machine.sessionId, xid, request, this.id, this.link!.serverId);
    this.world.count("reconfigsAsked");
    this.world.log(`client ${this.id} asks reconfig ${JSON.stringify({ joining, leaving, newMembers, fromConfig: String(fromConfig) })}`);
    return true;
  }

  /** The server of `serverId` crashed: a connection to it breaks. */
  serverCrashed(serverId: number): void {
    const link = this.link;
    if (link === undefined || link.serverId !== serverId || link.closed) return;
    link.closed = true;
    this.world.at(this.world.netDelay(), () => this.machine?.lost(link.connection, { serverBehind: false, message: "server crashed" }));
  }

  private submit(kind: Token["kind"], request: RequestOp): number {
    const token: Token = { kind, request, xid: 0, sentAtMs: this.world.nowMs, ackedZxidMaxAtSend: this.world.checker.ackedZxidMax };
    this.pending.push(token);
    token.xid = this.machine!.submit(request, token);
    return token.xid;
  }

  private startSession(): void {
    const world = this.world;
    const hosts: HostPort[] = world.prng.shuffle([...world.serverIds]).map((id) => ({ host: `server${id}`, port: id }));
    this.pending = [];
    this.watches.clear();
    this.persistent.clear();
    this.auth = "none";
    this.lastEventZxid = 0n;
    const machine = new SessionMachine<Token>(
      {
        hosts,
        sessionTimeoutMs: world.sessionTimeoutMs,
        connectTimeoutMs: 2 * world.sessionTimeoutMs,
        sessionId: 0n,
        password: new Uint8Array(0),
        canBeReadOnly: world.readOnlyMode && world.prng.chance(0.5),
        watchedPaths: () => this.watchedPaths(),
      },
      (effect) => this.carryOut(machine, effect),
    );
    this.machine = machine;
    machine.start();
  }

  /** The client process dies: it never talks again with this session; it comes back later with a new one. */
  private die(): void {
    this.world.log(`client ${this.id} dies (session ${this.sessionId})`);
    this.world.count("clientDeaths");
    this.alive = false;
    this.machine = undefined;
    this.timerGeneration += 1;
    this.timers.clear();
    const link = this.link;
    if (link) this.closeLink(link);
    this.link = undefined;
    this.world.at(3_000 + this.world.prng.int(3_000), () => {
      this.alive = true;
    });
  }

  private watchedPaths(): WatchPaths {
    const of = (kind: HeldWatch["kind"]) => [...this.watches.values()].filter((w) => w.kind === kind).map((w) => w.path);
    const persistent = (recursive: boolean) => [...this.persistent].filter(([, w]) => w.recursive === recursive).map(([path]) => path);
    return {
      dataWatches: of("data"),
      existWatches: of("exist"),
      childWatches: of("child"),
      persistentWatches: persistent(false),
      persistentRecursiveWatches: persistent(true),
    };
  }

  // ---- the machine's effects

  private carryOut(machine: SessionMachine<Token>, effect: SessionEffect<Token>): void {
    if (machine !== this.machine) return;
    const world = this.world;
    switch (effect.type) {
      case "open":
        return this.open(effect.connection, effect.host.port);
      case "send": {
        const link = this.link;
        if (link === undefined || link.connection !== effect.connection) return;
        const bytes = encodeClientFrame(effect.frame);
        const frame = effect.frame.frame;
        const op = frame?.$case === "request" ? frame.request.op?.$case : undefined;
        const write = op === "create" || op === "setData" || op === "delete";
        return this.toServer(link, (door) => receiveClientFrame(door, decodeClientFrame(bytes)), write);
      }
      case "close": {
        const link = this.link;
        if (link !== undefined && link.connection === effect.connection) this.closeLink(link);
        return;
      }
      case "armTimer": {
        const generation = ++this.timerGeneration;
        this.timers.set(effect.timer, generation);
        world.at(effect.delayMs, () => {
          if (this.timers.get(effect.timer) !== generation || this.machine !== machine) return;
          this.timers.delete(effect.timer);
          machine.timerFired(effect.timer);
        });
        return;
      }
      case "cancelTimer":
        this.timers.delete(effect.timer);
        return;
      case "answered":
        return this.answered(machine, effect.token, effect.response);
      case "failed": {
        const at = this.pending.indexOf(effect.token);
        if (at >= 0) this.pending.splice(at, 1);
        // Lost with its connection before it was answered: the machine does not replay it, so send it again.
        if (effect.token.kind === "auth") this.auth = "none";
        return;
      }
      case "event":
        return this.onEvent(effect.event);
      case "state":
        if (effect.state === "connected" || effect.state === "reconnected") {
          const link = this.link;
          world.log(`client ${this.id} ${effect.state} to ${link?.serverId} with session ${machine.sessionId}${machine.readOnly ? " read-only" : ""}`);
          if (machine.readOnly) world.count("readOnlyConnects");
          // A new session taken read-only may be served by a member cut off for any length of time:
          // from here the order it sees is its own (ZooKeeper promises it per session; across a
          // client's sessions the checks hold corral to it only where a quorum serves).
          if (effect.state === "connected" && machine.readOnly) {
            this.lastZxidSeen = 0n;
            this.syncFloor = 0;
          }
          if (link) world.sessionEstablished(machine.sessionId, link.serverId);
          if (effect.state === "reconnected") {
            world.count("sessionMoves");
            // Changes a persistent watch missed while disconnected are not replayed (as in ZooKeeper).
            for (const watch of this.persistent.values()) watch.seen = undefined;
          }
        } else world.log(`client ${this.id} ${effect.state} (session ${machine.sessionId})`);
        return;
      case "connectFailed":
      case "closed":
        world.log(`client ${this.id}: session ${effect.type}`);
        return;
      case "log":
        if (effect.level !== "debug")
          world.log(`client ${this.id} ${effect.message} ${JSON.stringify(effect.fields, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))}`);
        return;
    }
  }

  private open(connection: number, serverId: number): void {
    const previous = this.link;
    if (previous) this.closeLink(previous);
    const link: Link = { connection, serverId, incarnation: undefined, door: undefined, closed: false, lastArrivalToServer: 0, lastArrivalToClient: 0 };
    this.link = link;
    const machine = this.machine!;
    const arrival = this.arrivalToServer(link);
    this.world.at(
      arrival - this.world.nowMs,
      () => {
        if (link.closed) return;
        const server = this.cut ? undefined : this.world.serverProcess(serverId);
        if (server === undefined) return this.toClient(link, () => machine.lost(connection, { serverBehind: false, message: "connection refused" }));
        link.incarnation = server.incarnation;
        const remoteAddress = `10.0.0.${this.id}`;
        link.door = new ClientSession(
          server.door,
          new GrpcSessionCodec(),
          {
            write: (frame: Buffer) => this.toClient(link, () => machine.receive(connection, decodeServerFrame(frame))),
            refuse: (reason: ConnectionRefusal, details: string) => {
              link.closed = true;
              this.toClient(link, () => machine.lost(connection, { serverBehind: reason === "behind", message: details }), true);
            },
            finish: () => {
              link.closed = true;
              this.toClient(link, () => machine.lost(connection, { serverBehind: false, message: "the server ended the stream" }), true);
            },
          },
          remoteAddress,
          [],
          initialAuthInfo(remoteAddress),
        );
      },
      serverId,
    );
  }

  /** The client closes its end; the server notices after a delay. */
  private closeLink(link: Link): void {
    if (link.closed) return;
    link.closed = true;
    const arrival = this.arrivalToServer(link);
    this.world.at(arrival - this.world.nowMs, () => this.serverSide(link)?.gone(), link.serverId);
  }

  private toServer(link: Link, run: (door: GrpcClientSession) => void, write = false): void {
    if (link.closed || this.cut) return;
    const arrival = this.arrivalToServer(link);
    // What was sent before the client closed its end still arrives, as on a TCP stream.
    const deliver = (): void => {
      const door = this.serverSide(link);
      if (door !== undefined) run(door);
    };
    this.world.at(
      arrival - this.world.nowMs,
      () => {
        // The server may pause just as the write reaches it: then it reads it when it resumes.
        if (write && this.world.trapWrite(link.serverId)) this.world.at(0, deliver, link.serverId);
        else deliver();
      },
      link.serverId,
    );
  }

  /** The server end of `link`, if the process that accepted it still runs. */
  private serverSide(link: Link): GrpcClientSession | undefined {
    const server = this.world.serverProcess(link.serverId);
    return server !== undefined && server.incarnation === link.incarnation ? link.door : undefined;
  }

  private arrivalToServer(link: Link): number {
    link.lastArrivalToServer = Math.max(this.world.nowMs + this.world.netDelay(), link.lastArrivalToServer);
    return link.lastArrivalToServer;
  }

  /** Server → client, in order on the connection; `last` for the stream's end (delivered even once closed). */
  private toClient(link: Link, run: () => void, last = false): void {
    if (link.closed && !last) return;
    link.lastArrivalToClient = Math.max(this.world.nowMs + this.world.netDelay(), link.lastArrivalToClient);
    this.world.at(link.lastArrivalToClient - this.world.nowMs, () => {
      if (this.link === link && !this.cut) run();
    });
  }

  // ---- what the client sees, checked

  private answered(machine: SessionMachine<Token>, token: Token, response: DecodedResponse): void {
    const world = this.world;
    const checker = world.checker;
    const order = "client order and single system image";
    const expected = this.pending.shift();
    if (expected !== token) {
      checker.fail(order, `client ${this.id} got the answer to ${token.xid} before ${expected?.xid}`);
      return;
    }
    const zxid = response.zxid;
    if (token.kind === "reconfig")
      world.log(`client ${this.id}'s reconfig answered ${response.err}${response.err === 0 ? ` at ${formatZxid(Number(zxid))}` : ""}`);
    if (token.kind === "reconfig" && response.err === 0) {
      // The answer is the new configuration, written by the reconfig's own txn.
      const version = Number(response.stat?.mzxid ?? -1n);
      if (version !== Number(zxid))
        checker.fail(order, `client ${this.id}'s reconfig answered at ${formatZxid(Number(zxid))} with a configuration of version ${formatZxid(version)}`);
      world.reconfigAcked(version);
      world.count("reconfigsAcked");
    }
    if ((token.kind === "write" || token.kind === "reconfig") && response.err === 0) {
      // A write answers with its own txn's zxid, which may precede what an earlier read or sync on
      // the same session reflected; reads and syncs reflect the whole tree and never go back.
      if (zxid <= this.lastWriteZxid)
        checker.fail(
          order,
          `client ${this.id}'s write ${token.xid} committed at ${formatZxid(Number(zxid))}, not after its earlier write at ${formatZxid(Number(this.lastWriteZxid))}`,
        );
      this.lastWriteZxid = zxid;
      checker.writeAcked({ zxid: Number(zxid), sessionId: machine.sessionId, cxid: token.xid });
      world.count("ackedWrites");
    }
    if (token.kind === "read" || token.kind === "sync") {
      if (zxid < this.lastZxidSeen) checker.fail(order, `client ${this.id} saw ${formatZxid(Number(zxid))} after ${formatZxid(Number(this.lastZxidSeen))}`);
      if (token.kind === "sync" && response.err === 0) {
        // sync then read sees every write answered before the sync began.
        this.syncFloor = token.ackedZxidMaxAtSend;
        if (Number(zxid) < token.ackedZxidMaxAtSend)
          checker.fail(order, `client ${this.id}'s sync answered at ${formatZxid(Number(zxid))}, before ${formatZxid(token.ackedZxidMaxAtSend)} acked earlier`);
      }
      if (token.kind === "read") {
        if (Number(zxid) < this.syncFloor)
          checker.fail(order, `client ${this.id} read at ${formatZxid(Number(zxid))} after a sync that covered ${formatZxid(this.syncFloor)}`);
        this.readSeen(token.request, response);
      }
    }
    if (token.kind === "auth") this.auth = response.err === 0 ? "accepted" : "none";
    if (token.kind === "watch" && response.err === 0 && token.request.$case === "addWatch") {
      const { path, mode } = token.request.addWatch;
      this.persistent.set(path, { recursive: mode === ADD_WATCH_MODE_NUMBERS["persistent-recursive"], seen: undefined });
      world.log(`client ${this.id} set a ${mode === ADD_WATCH_MODE_NUMBERS["persistent-recursive"] ? "recursive" : "persistent"} watch on ${path}`);
    }
    if (zxid > this.lastZxidSeen) this.lastZxidSeen = zxid;
  }

  /** A read's answer: its ACL verdict, the watches it shows must have fired, the watch it sets. */
  private readSeen(request: RequestOp, response: DecodedResponse): void {
    const checker = this.world.checker;
    const path =
      request.$case === "getData"
        ? request.getData.path
        : request.$case === "exists"
          ? request.exists.path
          : request.$case === "getChildren"
            ? request.getChildren.path
            : undefined;
    if (path === undefined) return;
    if (request.$case === "getData" && (response.err === 0 || response.err === ZkErrorCode.NOAUTH)) {
      if (response.err === ZkErrorCode.NOAUTH) this.world.count("aclRefusals");
      const identity = identityOf(this.id);
      if (readRefused(path, identity) !== (response.err === ZkErrorCode.NOAUTH)) {
        checker.fail(
          "ACL decisions follow each node's ACL",
          `${identity} client ${this.id}'s read of ${path} at server ${this.link?.serverId} (${formatZxid(Number(response.zxid))}) answered ${response.err}`,
        );
      }
    }
    const gone = response.err === ZkErrorCode.NONODE;
    if (!gone && response.err !== 0) return;
    const stat = response.stat;
    // A change this session holds a watch for must have been told before it can be read (contract item 6).
    const before = "watch events arrive before the change can be read";
    if (request.$case === "getChildren") {
      const held = this.watches.get(`child:${path}`);
      if (held && (gone || (stat !== null && stat.pzxid > held.seenZxid)))
        checker.fail(
          before,
          `client ${this.id} reads ${path}'s children changed (${gone ? "node gone" : `pzxid ${formatZxid(Number(stat!.pzxid))}`}) with its child watch set at ${formatZxid(Number(held.seenZxid))} not fired`,
        );
      if (!gone && request.getChildren.watch && stat !== null) this.watches.set(`child:${path}`, { kind: "child", path, seenZxid: stat.pzxid });
      return;
    }
    const persistent = this.persistent.get(path);
    if (persistent !== undefined && !persistent.recursive) {
      const seen = persistent.seen;
      const changed = seen === "absent" ? !gone : seen !== undefined && (gone || (stat !== null && stat.mzxid > seen));
      if (changed)
        checker.fail(
          before,
          `client ${this.id} reads ${path} ${gone ? "gone" : `at mzxid ${formatZxid(Number(stat!.mzxid))}`} with its persistent watch last told ${seen === "absent" ? "it was absent" : formatZxid(Number(seen))}`,
        );
      persistent.seen = gone ? "absent" : (stat?.mzxid ?? undefined);
    }
    const data = this.watches.get(`data:${path}`);
    if (data && (gone || (stat !== null && stat.mzxid > data.seenZxid)))
      checker.fail(
        before,
        `client ${this.id} reads ${path} changed (${gone ? "node gone" : `mzxid ${formatZxid(Number(stat!.mzxid))}`}) with its data watch set at ${formatZxid(Number(data.seenZxid))} not fired`,
      );
    const exist = this.watches.get(`exist:${path}`);
    if (exist && !gone) checker.fail(before, `client ${this.id} reads ${path} created with its exists watch not fired`);
    const watch = request.$case === "getData" ? request.getData.watch : request.$case === "exists" ? request.exists.watch : false;
    if (!watch) return;
    // getData on a missing node sets no watch; exists sets an exists watch there.
    if (!gone && stat !== null) this.watches.set(`data:${path}`, { kind: "data", path, seenZxid: stat.mzxid });
    else if (request.$case === "exists") this.watches.set(`exist:${path}`, { kind: "exist", path, seenZxid: 0n });
    else return;
    this.world.log(`client ${this.id} set a ${gone ? "exist" : "data"} watch on ${path} (answer at ${formatZxid(Number(response.zxid))})`);
  }

  private onEvent(event: DecodedWatchEvent): void {
    const checker = this.world.checker;
    this.world.count("watchEvents");
    this.world.log(`client ${this.id} got ${eventName(event.type)} ${event.path} at ${formatZxid(Number(event.zxid))}`);
    if (event.zxid < this.lastEventZxid) {
      checker.fail(
        "a session's watch events arrive in zxid order",
        `client ${this.id} got ${eventName(event.type)} ${event.path} at ${formatZxid(Number(event.zxid))} after an event at ${formatZxid(Number(this.lastEventZxid))}`,
      );
    }
    this.lastEventZxid = event.zxid;
    // The watches an event fires, as ZooKeeper's client materializes them; each fires once.
    const kinds: HeldWatch["kind"][] =
      event.type === WatchEventType.NodeChildrenChanged
        ? ["child"]
        : event.type === WatchEventType.NodeDeleted
          ? ["data", "exist", "child"]
          : ["data", "exist"];
    const fired: string[] = kinds.filter((kind) => this.watches.delete(`${kind}:${event.path}`));
    const own = this.persistent.get(event.path);
    if (own !== undefined && (!own.recursive || event.type !== WatchEventType.NodeChildrenChanged)) {
      fired.push("persistent");
      if (!own.recursive && event.type !== WatchEventType.NodeChildrenChanged) own.seen = event.type === WatchEventType.NodeDeleted ? "absent" : event.zxid;
    }
    if (event.type !== WatchEventType.NodeChildrenChanged && [...this.persistent].some(([path, w]) => w.recursive && event.path.startsWith(`${path}/`)))
      fired.push("recursive");
    if (fired.length === 0)
      checker.fail(
        "a one-time watch fires at most once",
        `client ${this.id} got ${eventName(event.type)} ${event.path} at ${formatZxid(Number(event.zxid))} with no watch set there`,
      );
  }

  // ---- the workload

  private randomWrite(): WriteRequest {
    const prng = this.world.prng;
    const data = new TextEncoder().encode(`${this.id}:${this.world.nowMs}`);
    if (prng.chance(0.3)) return this.randomContainerOrTtlWrite(data);
    if (prng.chance(0.25)) return randomGuardedWrite(prng, data);
    const path = `/k${prng.int(5)}`;
    const roll = prng.float();
    if (roll < 0.15) return { op: "create", path: `/e${this.id}-${prng.int(4)}`, data, acl: [], mode: "ephemeral", ttlMs: 0 };
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
  private randomContainerOrTtlWrite(data: Uint8Array): WriteRequest {
    const prng = this.world.prng;
    const container = `/c${prng.int(3)}`;
    const ttlNode = `/t${prng.int(3)}`;
    const ttlMs = prng.pick(TTLS_MS);
    const create = (path: string, mode: CreateRequest["mode"], ttl = 0): WriteRequest => ({ op: "create", path, data, acl: [], mode, ttlMs: ttl });
    const roll = prng.float();
    if (roll < 0.15) return create(container, "container");
    if (roll < 0.35) return create(`${container}/m${this.id}`, "ephemeral");
    if (roll < 0.5) return { op: "delete", path: `${container}/m${this.id}`, version: -1 };
    if (roll < 0.54) return create(container, "persistent");
    if (roll < 0.6) return { op: "delete", path: container, version: -1 };
    if (roll < 0.72) return create(ttlNode, "persistent-with-ttl", ttlMs);
    if (roll < 0.8) return create("/ts-", "persistent-sequential-with-ttl", ttlMs);
    if (roll < 0.87) return create(`${ttlNode}/x`, "persistent");
    if (roll < 0.94) return { op: "delete", path: `${ttlNode}/x`, version: -1 };
    return { op: "setData", path: ttlNode, data, version: -1 };
  }
}

/** A write to or under the nodes acl-workload.ts protects, by whoever this client is. */
function randomGuardedWrite(prng: Prng, data: Uint8Array): WriteRequest {
  const n = prng.int(3);
  const roll = prng.float();
  if (roll < 0.2) return { op: "create", path: `/r${n}`, data, acl: GUARDED_ACL, mode: "persistent", ttlMs: 0 };
  if (roll < 0.3) return { op: "create", path: `/q${n}`, data, acl: SECRET_ACL, mode: "persistent", ttlMs: 0 };
  if (roll < 0.55) return { op: "setData", path: prng.chance(0.7) ? `/r${n}` : `/q${n}`, data, version: -1 };
  if (roll < 0.75) return { op: "create", path: `/r${n}/c${prng.int(3)}`, data, acl: [], mode: "persistent", ttlMs: 0 };
  if (roll < 0.92) return { op: "delete", path: `/r${n}/c${prng.int(3)}`, version: -1 };
  return { op: "delete", path: prng.chance(0.7) ? `/r${n}` : `/q${n}`, version: -1 };
}

/** The workload's write as the SDK puts it on the wire (an empty ACL asks for the default one). */
function toRequestOp(write: WriteRequest): RequestOp {
  const acl = (list: readonly { perms: number; id: { scheme: string; id: string } }[]): WireAcl[] =>
    list.map((a) => ({ perms: a.perms, id: { scheme: a.id.scheme, id: a.id.id } }));
  switch (write.op) {
    case "create":
      return {
        $case: "create",
        create: { path: write.path, data: write.data, acl: acl(write.acl), mode: CREATE_MODE_FLAGS[write.mode], ttlMs: BigInt(write.ttlMs) },
      };
    case "setData":
      return { $case: "setData", setData: { path: write.path, data: write.data, version: write.version } };
    case "delete":
      return { $case: "delete", delete: { path: write.path, version: write.version } };
    default:
      throw new Error(`the workload sends no ${write.op}`);
  }
}

function eventName(type: number): string {
  return Object.entries(WatchEventType).find(([, value]) => value === type)?.[0] ?? String(type);
}
