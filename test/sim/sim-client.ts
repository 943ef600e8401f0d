/**
 * A simulated client: one client session (sim-session.ts) — the SDK's own SessionMachine over
 * corral's gRPC frames, or a session with the semantics of ZooKeeper's Java client over jute — on
 * simulated connections whose server end is the server's own connection session under that door's
 * real codec. Around it, the workload (writes, reads with watches, syncs, as anonymous, owner or
 * super user) and the checks of what the client sees (client-history.ts), the same for both kinds.
 */
import type { ReconfigRequest, WriteRequest, CreateRequest, ClientRequest } from "../../src/replica/requests.js";
import type { ConnectionSessionDeps } from "../../src/replica/connection-session.js";
import { credentialsOf, GUARDED_ACL, SECRET_ACL } from "./acl-workload.js";
import type { Checker, Property } from "./checker.js";
import { ClientHistory, type Token } from "./client-history.js";
import type { Prng } from "./prng.js";
import type { SimClientKind, SimServerEnd, SimSession, SimSessionHost, SimSessionState } from "./sim-session.js";
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
  /** Check the servers' inbound bounds, and `connection`'s own (after a read, or the moment one stops reading). */
  checkInbound(serverId?: number, connection?: { count: number; bytes: number }): void;
  /** A write is leaving on a connection to `serverId`: the checks at its first apply need to know who sent it, and from where. */
  writeSent(sessionId: bigint, xid: number, write: WriteRequest, clientId: number, serverId: number): void;
  /** A reconfig was acknowledged: the configuration of `version` must be in force once everything heals. */
  reconfigAcked(version: number): void;
  /** A client write is about to be read by server `serverId`: true if the server just paused instead (pauseOnNextWrite). */
  trapWrite(serverId: number): boolean;
}

export type ClientStat =
  | "ackedWrites"
  | "aclRefusals"
  | "clientDeaths"
  | "watchEvents"
  | "sessionMoves"
  | "readOnlyConnects"
  | "reconfigsAsked"
  | "reconfigsAcked"
  | "juteAckedWrites"
  | "juteWatchEvents"
  | "framesBehindConnect"
  | "pings"
  | "readsPaused";

export interface ServerProcess {
  incarnation: number;
  door: ConnectionSessionDeps;
}

/** One simulated connection: the client's end is a number its session gave it; the server's end is the server's own connection session. */
interface Link {
  connection: number;
  serverId: number;
  incarnation: number | undefined;
  server: SimServerEnd | undefined;
  /** Set once either end is done with it: nothing more is delivered. */
  closed: boolean;
  lastArrivalToServer: number;
  lastArrivalToClient: number;
  /** The server stopped reading (an inbound bound): what arrives waits here, as in a socket's buffers, until it reads again. */
  paused: boolean;
  unread: Uint8Array[];
}

export class SimClient {
  alive = true;
  private session: SimSession<Token> | undefined;
  private readonly history: ClientHistory;
  private link: Link | undefined;
  private readonly timers = new Map<string, number>();
  private timerGeneration = 0;
  /** The client's credentials: none sent yet, sent, or accepted (the session replays them on every new connection). */
  private auth: "none" | "sent" | "accepted" = "none";
  /** Until then the client's network is down: nothing it sends arrives, nothing reaches it. */
  private cutUntilMs = 0;
  /** Set by the simulation from its configuration. */
  thinkMsMax = 150;

  constructor(
    readonly id: number,
    private readonly world: ClientWorld,
    readonly kind: SimClientKind,
  ) {
    this.history = this.newHistory();
  }

  /** The session this client holds now (established at least once and not expired). */
  get sessionId(): bigint | undefined {
    const session = this.session;
    if (!this.alive || session === undefined || session.lifecycle !== "active" || session.sessionId === 0n) return undefined;
    return session.sessionId;
  }

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

  /** A session ready for the workload's next request: it will send it (see acceptsRequests), and has room. */
  private get ready(): boolean {
    const session = this.session;
    return this.alive && session !== undefined && session.acceptsRequests && this.history.inFlight < IN_FLIGHT_MAX;
  }

  think(): void {
    const world = this.world;
    world.at(1 + world.prng.int(this.thinkMsMax), () => this.think());
    if (!this.alive) return;
    if (world.clientsActive && world.prng.chance(CLIENT_DEATH_CHANCE)) return this.die();
    const session = this.session;
    if (session === undefined || session.lifecycle === "expired" || session.lifecycle === "closed") {
      if (world.clientsActive) this.startSession();
      return;
    }
    if (!world.clientsActive || !session.acceptsRequests) return;
    if (this.auth !== "accepted") {
      // Nothing else goes out before the credentials are accepted: the ACL model knows the client by them.
      const credentials = credentialsOf(this.id);
      if (credentials === undefined) this.auth = "accepted";
      else if (this.auth === "none") {
        // ZooKeeper's clients never hear of an auth that works: it applies to every request sent after it.
        this.auth = session.authAnswered ? "sent" : "accepted";
        this.submit("auth", { op: "addAuth", scheme: "digest", auth: new TextEncoder().encode(credentials) });
      }
      if (this.auth !== "accepted") return;
    }
    if (!this.ready) return;
    const roll = world.prng.float();
    if (roll < 0.6) this.submit("write", this.randomWrite());
    else if (roll < 0.85) {
      const path = `/${world.prng.pick(["k", "k", "k", "r", "q"])}${world.prng.int(3)}`;
      const watch = world.prng.chance(0.4);
      this.submit("read", { op: world.prng.chance(0.7) ? "getData" : "exists", path, watch });
    } else if (roll < 0.88) {
      this.submit("read", { op: "getChildren", path: `/c${world.prng.int(3)}`, watch: world.prng.chance(0.5) });
    } else if (roll < 0.9) {
      // A persistent watch on a plain node, or a recursive one over a container and its members.
      const recursive = world.prng.chance(0.4);
      const path = recursive ? `/c${world.prng.int(3)}` : `/k${world.prng.int(5)}`;
      if (!this.history.hasPersistentWatch(path)) this.submit("watch", { op: "addWatch", path, mode: recursive ? "persistent-recursive" : "persistent" });
    } else this.submit("sync", { op: "sync", path: "/" });
  }

  /**
   * Sends a reconfig on this client's session, if it has one ready (connected, authenticated,
   * room for a request): whether it went out. Every client may try; only the super user's passes
   * the ACL, the others' must be refused NOAUTH (if nothing is refused before the ACL check).
   */
  reconfig(request: ReconfigRequest): boolean {
    if (!this.ready || this.auth !== "accepted") return false;
    this.submit("reconfig", request);
    this.world.count("reconfigsAsked");
    const { joining, leaving, newMembers, fromConfig } = request;
    this.world.log(`client ${this.id} asks reconfig ${JSON.stringify({ joining, leaving, newMembers, fromConfig: String(fromConfig) })}`);
    return true;
  }

  /** The server of `serverId` crashed: a connection to it breaks. */
  serverCrashed(serverId: number): void {
    const link = this.link;
    const session = this.session;
    if (link === undefined || link.serverId !== serverId || link.closed) return;
    link.closed = true;
    this.world.at(this.world.netDelay(), () => session?.lost(link.connection, { serverBehind: false, message: "server crashed" }));
  }

  private submit(kind: Token["kind"], request: ClientRequest): void {
    const session = this.session!;
    const token: Token = { kind, request, xid: 0, ackedZxidMaxAtSend: this.world.checker.ackedZxidMax };
    // An auth a ZooKeeper client sends is never answered to it: nothing waits for it in the history.
    if (kind !== "auth" || session.authAnswered) this.history.sent(token);
    session.submit(request, token);
  }

  private newHistory(): ClientHistory {
    const world = this.world;
    const jute = this.kind.name === "jute";
    return new ClientHistory(this.id, {
      checker: world.checker,
      reconfigAcked: (version) => world.reconfigAcked(version),
      log: (line) => world.log(line),
      count: (stat) => {
        world.count(stat);
        if (jute && stat === "ackedWrites") world.count("juteAckedWrites");
        if (jute && stat === "watchEvents") world.count("juteWatchEvents");
      },
    });
  }

  private startSession(): void {
    const world = this.world;
    this.history.sessionStarted();
    this.auth = "none";
    const options = {
      serverIds: world.prng.shuffle([...world.serverIds]),
      sessionTimeoutMs: world.sessionTimeoutMs,
      canBeReadOnly: world.readOnlyMode && world.prng.chance(0.5),
      watchedPaths: () => this.history.watchedPaths(),
    };
    let session: SimSession<Token> | undefined = undefined;
    const current = (): boolean => session !== undefined && this.session === session;
    const host: SimSessionHost<Token> = {
      get nowMs() {
        return world.nowMs;
      },
      random: (n) => world.prng.int(n),
      open: (connection, serverId) => current() && this.open(session!, connection, serverId),
      send: (connection, bytes, write) => current() && this.send(connection, bytes, write),
      close: (connection) => {
        const link = this.link;
        if (current() && link !== undefined && link.connection === connection) this.closeLink(link);
      },
      armTimer: (timer, delayMs) => current() && this.armTimer(session!, timer, delayMs),
      cancelTimer: (timer) => current() && this.timers.delete(timer),
      sent: (token, xid, sessionId) => current() && this.sent(token, xid, sessionId),
      answered: (token, answer) => {
        if (!current()) return;
        this.history.answered(token, answer, session!.sessionId, this.link?.serverId);
        if (token.kind === "auth") this.auth = answer.err === 0 ? "accepted" : "none";
      },
      failed: (token) => {
        if (!current()) return;
        this.history.failed(token);
        // Lost with its connection before it was answered: the session does not replay it, so send it again.
        if (token.kind === "auth") this.auth = "none";
      },
      event: (event) => current() && this.history.event(event),
      state: (state) => current() && this.stateChanged(session!, state),
      violation: (property: Property, message) => current() && world.checker.fail(property, `client ${this.id} (${this.kind.name}): ${message}`),
      count: (stat) => current() && world.count(stat),
      log: (line) => current() && world.log(`client ${this.id} ${line}`),
    };
    session = this.kind.session(options, host);
    this.session = session;
    session.start();
  }

  private stateChanged(session: SimSession<Token>, state: SimSessionState): void {
    const world = this.world;
    if (state === "connected" || state === "reconnected") {
      world.log(`client ${this.id} ${state} to ${this.link?.serverId} with session ${session.sessionId}${session.readOnly ? " read-only" : ""}`);
      if (session.readOnly) world.count("readOnlyConnects");
      if (state === "reconnected") world.count("sessionMoves");
    } else world.log(`client ${this.id} ${state} (session ${session.sessionId})`);
    this.history.stateChanged(state, session.readOnly);
  }

  /** A request left on the connection: a write's checks at its first apply need its sender and the server it went through. */
  private sent(token: Token, xid: number, sessionId: bigint): void {
    token.xid = xid;
    const request = token.request;
    const write = token.kind === "write" || token.kind === "reconfig";
    if (write && sessionId !== 0n && this.link !== undefined) this.world.writeSent(sessionId, xid, request as WriteRequest, this.id, this.link.serverId);
  }

  private armTimer(session: SimSession<Token>, timer: string, delayMs: number): void {
    const generation = ++this.timerGeneration;
    this.timers.set(timer, generation);
    this.world.at(delayMs, () => {
      if (this.timers.get(timer) !== generation || this.session !== session) return;
      this.timers.delete(timer);
      session.timerFired(timer);
    });
  }

  /** The client process dies: it never talks again with this session; it comes back later with a new one. */
  private die(): void {
    this.world.log(`client ${this.id} dies (session ${this.sessionId})`);
    this.world.count("clientDeaths");
    this.alive = false;
    this.session = undefined;
    this.timerGeneration += 1;
    this.timers.clear();
    const link = this.link;
    if (link) this.closeLink(link);
    this.link = undefined;
    this.world.at(3_000 + this.world.prng.int(3_000), () => {
      this.alive = true;
    });
  }

  // ---- the simulated connection

  private open(session: SimSession<Token>, connection: number, serverId: number): void {
    const previous = this.link;
    if (previous) this.closeLink(previous);
    const link: Link = {
      connection,
      serverId,
      incarnation: undefined,
      server: undefined,
      closed: false,
      lastArrivalToServer: 0,
      lastArrivalToClient: 0,
      paused: false,
      unread: [],
    };
    this.link = link;
    const arrival = this.arrivalToServer(link);
    this.world.at(
      arrival - this.world.nowMs,
      () => {
        if (link.closed) return;
        const server = this.cut ? undefined : this.world.serverProcess(serverId);
        if (server === undefined) return this.toClient(link, () => session.lost(connection, { serverBehind: false, message: "connection refused" }));
        link.incarnation = server.incarnation;
        const remoteAddress = `10.0.0.${this.id}`;
        const stream = {
          write: (frame: Uint8Array, eventZxid?: number) => this.toClient(link, () => session.receive(connection, frame, eventZxid)),
          refuse: (reason: string, detail: string) => {
            link.closed = true;
            this.toClient(link, () => session.lost(connection, { serverBehind: reason === "behind", message: detail }), true);
          },
          finish: () => {
            link.closed = true;
            this.toClient(link, () => session.lost(connection, { serverBehind: false, message: "the server ended the connection" }), true);
          },
          pauseReading: () => {
            link.paused = true;
            this.world.count("readsPaused");
            this.world.checkInbound();
          },
          // The server reads again on a later turn, as a resumed socket does.
          resumeReading: () => {
            link.paused = false;
            this.world.at(0, () => this.readUnread(link), serverId);
          },
        };
        link.server = this.kind.serverEnd(server.door, stream, remoteAddress);
      },
      serverId,
    );
  }

  private send(connection: number, bytes: Uint8Array, write: boolean): void {
    const link = this.link;
    if (link === undefined || link.connection !== connection) return;
    this.toServer(link, (server) => this.arrive(link, server, bytes), write);
  }

  /** Bytes reach the server: read, or left unread while it has stopped reading this connection. */
  private arrive(link: Link, server: SimServerEnd, bytes: Uint8Array): void {
    if (link.paused || link.unread.length > 0) link.unread.push(bytes);
    else server.receive(bytes);
    this.world.checkInbound(link.serverId, server.outstanding);
  }

  private readUnread(link: Link): void {
    const server = this.serverSide(link);
    while (server !== undefined && !link.paused && link.unread.length > 0) {
      server.receive(link.unread.shift()!);
      this.world.checkInbound(link.serverId, server.outstanding);
    }
  }

  /** The client closes its end; the server notices after a delay. */
  private closeLink(link: Link): void {
    if (link.closed) return;
    link.closed = true;
    const arrival = this.arrivalToServer(link);
    this.world.at(arrival - this.world.nowMs, () => this.serverSide(link)?.gone(), link.serverId);
  }

  private toServer(link: Link, run: (server: SimServerEnd) => void, write = false): void {
    if (link.closed || this.cut) return;
    const arrival = this.arrivalToServer(link);
    // What was sent before the client closed its end still arrives, as on a TCP stream.
    const deliver = (): void => {
      const server = this.serverSide(link);
      if (server !== undefined) run(server);
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
  private serverSide(link: Link): SimServerEnd | undefined {
    const server = this.world.serverProcess(link.serverId);
    return server !== undefined && server.incarnation === link.incarnation ? link.server : undefined;
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
