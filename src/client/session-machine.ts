/**
 * One client session as a deterministic state machine (docs/architecture.md §3, §5 and practice 17):
 * everything the SDK decides about its connections, and nothing it does. Inputs come from the
 * user side (start, submit, close) and from a host (frames, ended streams, fired timers — see
 * session-io.ts); effects go out through one callback. It reads no clock, sets no timer, draws no
 * random number of its own (updateServerList's come from the caller) and touches no socket, so
 * test/sim can run the SDK's real session logic.
 *
 * Connection life: connect frame → connect answer → requests/events/pings; on loss every in-flight
 * request fails CONNECTIONLOSS, hosts are retried round-robin with a capped back-off, resuming the
 * session (id + password + last zxid seen); the first requests on the new stream authenticate it
 * again with every credential an addAuth succeeded with (a server keeps them per connection, as
 * ZooKeeper's client re-sends them), then re-register the watches the caller still holds
 * (setWatches). Requests are written in submit order and answered in that order, so in-flight
 * requests wait in a FIFO and each response must match its head. The server alone decides expiry.
 *
 * Read-only sessions (ZooKeeper's canBeReadOnly): a client that allows it may be served read-only
 * by a server cut off from its quorum. A session that has only ever been served read-only is known
 * to that server alone, so a new connection asks for a new session rather than resuming it (no
 * expiry: nothing was lost that a quorum knew of); once a server with a quorum has held the
 * session it is resumed as always. While read-only, the machine probes the other hosts, one at a
 * time and backing off, with a connect that does not accept read-only (ZooKeeper's pingRwServer):
 * the first that answers carries the session from then on, and the read-only connection is let go
 * — "disconnected" then "reconnected", as for any move to another server.
 *
 * The server list can change under a running session (ZooKeeper's updateServerList, ZOOKEEPER-1355):
 * when servers join or leave, each client decides on its own whether to move, with probabilities
 * chosen so that the clients end up spread evenly over the new list without any of them talking to
 * another. The draws come from the caller's `random`, as the hosts' order does, so that the
 * decisions replay exactly in test/sim and in tests.
 */
import { CLIENT_PROTOCOL_BATCHES_SINCE, CLIENT_PROTOCOL_VERSION } from "../common/constants.js";
import { assert } from "../common/assert.js";
import { ZkError, ZkErrorCode } from "../common/errors.js";
import type { ZkErrorName } from "../common/errors.js";
import type { ClientFrame } from "../../gen/client.js";
import type { DecodedConnectResponse, DecodedResponse, DecodedServerFrame, DecodedWatchEvent, RequestOp } from "./codec.js";
import { hostAddress, type HostPort } from "./connect-string.js";
import { Fifo } from "./fifo.js";
import type { ConnectionLoss, SessionEffect, SessionInputs, SessionLifecycle, SessionTimer } from "./session-io.js";
import { chunkWatchPaths, type WatchPaths } from "./watch-registry.js";

/** Back-off between connection attempts: first retry at once, then 50 ms doubling up to 1 s. */
export const RECONNECT_BACKOFF_MS_MIN = 50;
export const RECONNECT_BACKOFF_MS_MAX = 1_000;
/**
 * While read-only, the pause before each probe for a read-write server: ZooKeeper's
 * minPingRwTimeout and maxPingRwTimeout, doubling from one to the other. A partition that heals at
 * once is noticed at once; a long one costs a probe a minute.
 */
export const RW_PROBE_DELAY_MS_MIN = 100;
export const RW_PROBE_DELAY_MS_MAX = 60_000;
/**
 * A probe waits this long at most for its answer (or the attempt timeout, if shorter): it looks
 * for a server that can take the session now, and one too slow to say so is asked again later.
 */
const RW_PROBE_TIMEOUT_MS_MAX = 4_000;
/** The liveness timer ticks 12 times per negotiated timeout. */
const TICKS_PER_TIMEOUT = 12;
/** Idle sending for 4 ticks (≈ timeout/3) → ping. */
const PING_AFTER_IDLE_TICKS = 4;
/** Nothing received for 8 ticks (≈ 2/3 of the timeout) → the connection is dead. */
const DEAD_AFTER_IDLE_TICKS = 8;
/** setWatches requests are split so that each stays well inside the message limit. */
const SET_WATCHES_BYTES_MAX = 256 * 1024;
const XID_MAX = 0x7fffffff;

/** The next client xid: increasing int32 from 1, wrapping to 1 (never 0 or negative, as ZooKeeper reserves those). */
export function nextXid(xid: number): number {
  return xid >= XID_MAX ? 1 : xid + 1;
}

/** Delay before connection attempt number `attempt` (0-based, counted since the last success). */
export function reconnectDelayMs(attempt: number): number {
  if (attempt <= 0) return 0;
  return Math.min(RECONNECT_BACKOFF_MS_MAX, RECONNECT_BACKOFF_MS_MIN * 2 ** Math.min(attempt - 1, 20));
}

/** Delay before read-write probe number `probe` (0-based, counted since the read-only connection opened). */
export function rwProbeDelayMs(probe: number): number {
  return Math.min(RW_PROBE_DELAY_MS_MAX, RW_PROBE_DELAY_MS_MIN * 2 ** Math.min(Math.max(probe, 0), 20));
}

export interface SessionOptions {
  /** In the order to try them: the caller shuffles, so that the machine stays deterministic. */
  hosts: readonly HostPort[];
  sessionTimeoutMs: number;
  connectTimeoutMs: number;
  /** 0n (and an empty password) for a new session. A session given here counts as one a quorum holds. */
  sessionId: bigint;
  password: Uint8Array;
  /** Accept being served read-only by a server cut off from its quorum (ZooKeeper's canBeReadOnly). Default false. */
  canBeReadOnly?: boolean;
  /** The watches the caller still holds, read when a new connection must set them again. */
  watchedPaths: () => WatchPaths;
  /**
   * Uniform draws in [0, 1) for updateServerList's load balancing (Math.random in Client, the
   * simulator's PRNG in test/sim). Only updateServerList needs it; a host that never changes the
   * server list may leave it out.
   */
  random?: () => number;
}

interface Credential {
  scheme: string;
  auth: Uint8Array;
}

/** A request on the wire, waiting for its answer: the caller's, or one the machine sent itself. */
type InFlight<T> =
  | { xid: number; purpose: "request"; token: T; credential: Credential | undefined }
  | { xid: number; purpose: "close" }
  | { xid: number; purpose: "setWatches" }
  | { xid: number; purpose: "authReplay"; credential: Credential };

type ConnectionPhase = "connecting" | "open" | "dead";

/**
 * After updateServerList decided to move (ZooKeeper's reconfigMode): the next attempts take a
 * server of the new list that was not in the previous one with probability `probNew`, else one
 * that was, each set in the new list's order and each server once; then round robin as always.
 */
interface Reconfig {
  readonly newHosts: readonly HostPort[];
  readonly oldHosts: readonly HostPort[];
  readonly probNew: number;
  readonly random: () => number;
  nextNew: number;
  nextOld: number;
}

interface Connection<T> {
  readonly id: number;
  readonly host: HostPort;
  /** The session its connect frame asked to resume; 0n asked for a new one. */
  readonly askedSessionId: bigint;
  phase: ConnectionPhase;
  /** Set by the connect answer (protocol 2): frames of one event-loop turn may share a message. */
  batching: boolean;
  /** The id the server named in its connect answer; 0 until then. */
  serverId: number;
  readonly inFlight: Fifo<InFlight<T>>;
  sentSinceTick: boolean;
  receivedSinceTick: boolean;
  sendIdleTicks: number;
  receiveIdleTicks: number;
  /** setWatches chunks sent on this connection and not answered yet. */
  setWatchesUnanswered: number;
  /** The highest zxid seen on this connection while setWatches was unanswered (see seen()). */
  zxidHeldBack: bigint;
}

export class SessionMachine<T> implements SessionInputs {
  private lifecycleValue: SessionLifecycle = "active";
  private everConnected = false;
  private conn: Connection<T> | null = null;
  /** The open connection serves the session read-only. */
  private readOnlyValue = false;
  /**
   * A server with a quorum has held this session (ZooKeeper's seenRwServerBefore): only then does
   * a new connection resume it. One opened read-only lives on its server alone.
   */
  private seenReadWrite: boolean;
  /** While read-only: a connection asking a host to take the session read-write. */
  private probe: Connection<T> | null = null;
  /** The probes made since the read-only connection opened (their back-off). */
  private probeCount = 0;
  /** Where the next probe looks: hosts are probed round-robin from the one after the read-only server. */
  private probeHostIndex = 0;
  private connectionCount = 0;
  private xid = 0;
  /** The servers, in the order to try them: the options' hosts until updateServerList replaces them. */
  private hosts: readonly HostPort[];
  /** Where the next attempt looks when not in reconfig mode: hosts are tried round-robin. */
  private hostIndex = 0;
  /** The server of the last connection the session had or tried (before any, the first to try): "its server" while it has none. */
  private lastHost: HostPort;
  /** Set while moving after updateServerList, until a connection opens or every server was tried. */
  private reconfig: Reconfig | null = null;
  private attempt = 0;
  private sessionIdValue: bigint;
  private passwordValue: Uint8Array;
  private timeoutMs: number;
  private lastZxid = 0n;
  /** Credentials the server accepted, in order: sent again on every new connection. */
  private readonly credentials: Credential[] = [];
  private readonly armed = new Set<SessionTimer>();

  constructor(
    private readonly options: SessionOptions,
    private readonly emit: (effect: SessionEffect<T>) => void,
  ) {
    assert(options.hosts.length > 0, "a session needs a host");
    this.hosts = options.hosts.slice();
    this.lastHost = this.hosts[0] as HostPort;
    this.sessionIdValue = options.sessionId;
    this.passwordValue = options.password;
    this.timeoutMs = options.sessionTimeoutMs;
    // ZooKeeper's client does the same for a session given to its constructor: the caller had it from a quorum.
    this.seenReadWrite = options.sessionId !== 0n;
  }

  get lifecycle(): SessionLifecycle {
    return this.lifecycleValue;
  }

  /** True while a server holds this session on an open stream: only then does `submit` take requests. */
  get connected(): boolean {
    return this.conn !== null && this.conn.phase === "open";
  }

  /** True while connected to a server that serves the session read-only (its writes and syncs fail NOTREADONLY). */
  get readOnly(): boolean {
    return this.connected && this.readOnlyValue;
  }

  get sessionId(): bigint {
    return this.sessionIdValue;
  }

  /** The server of the open connection; undefined while not connected. */
  get connectedHost(): HostPort | undefined {
    return this.connected ? this.conn?.host : undefined;
  }

  /** The id the server of the open connection gave in its connect answer; undefined while not connected. */
  get connectedServerId(): number | undefined {
    return this.connected ? this.conn?.serverId : undefined;
  }

  /** The servers, in the order they are tried: the options' hosts until updateServerList replaces them. */
  get servers(): readonly HostPort[] {
    return this.hosts;
  }

  get password(): Uint8Array {
    return this.passwordValue;
  }

  get negotiatedTimeoutMs(): number {
    return this.timeoutMs;
  }

  /** The highest zxid of any response or watch event received. */
  get lastZxidSeen(): bigint {
    return this.lastZxid;
  }

  // ---------------------------------------------------------------------------------------------
  // Inputs from the user side

  /** Starts the first connection attempt and the connect timeout. */
  start(): void {
    assert(this.connectionCount === 0, "a session starts once");
    this.arm("connect", this.options.connectTimeoutMs);
    this.startAttempt();
  }

  /** Writes a request on the open connection; its answer or failure comes back with `token`. Returns its xid. */
  submit(request: RequestOp, token: T): number {
    const conn = this.conn;
    assert(this.lifecycleValue === "active" && conn !== null && conn.phase === "open", "submit only while connected");
    const credential = request.$case === "addAuth" ? { scheme: request.addAuth.scheme, auth: request.addAuth.auth } : undefined;
    const xid = this.nextRequestXid();
    this.write(conn, { xid, purpose: "request", token, credential }, request);
    return xid;
  }

  /**
   * Ends the session: requests already sent are answered first, then the close request; the
   * `closed` effect comes once it is answered, the connection ends, or the session timeout passes.
   */
  close(): void {
    if (this.lifecycleValue !== "active") {
      this.finishClose();
      return;
    }
    this.lifecycleValue = "closing";
    this.cancel("reconnect");
    // A session on its way out goes nowhere else.
    if (this.probe !== null) this.endProbe(this.probe);
    const conn = this.conn;
    if (conn && conn.phase === "open") {
      this.write(conn, { xid: this.nextRequestXid(), purpose: "close" }, { $case: "close", close: {} });
      this.arm("close", this.timeoutMs);
    } else {
      this.finishClose();
    }
  }

  /**
   * Replaces the server list (ZooKeeper's updateServerList, with StaticHostProvider's load
   * balancing): `hosts` is the new list in the order to try them, shuffled by the caller. Returns
   * whether the session moves. A session whose server stays in the list keeps its connection unless
   * the list grew, when it moves with probability 1 − old size / new size, so that each server keeps
   * its share; one whose server left always moves. Moving ends the connection as a lost one does
   * (its requests fail CONNECTIONLOSS, "disconnected") and the session is resumed on the server
   * that reconfig mode picks (see Reconfig and nextHost).
   */
  updateServerList(hosts: readonly HostPort[]): boolean {
    assert(this.lifecycleValue === "active", "only an active session changes its servers");
    assert(hosts.length > 0, "a session needs a host");
    const random = this.options.random;
    assert(random !== undefined, "updateServerList draws from SessionOptions.random");
    const previous = this.hosts;
    // ZooKeeper's client asks its socket; between attempts, the server tried last is the one round robin goes on from.
    const current = this.conn?.host ?? this.lastHost;
    const kept = indexOfHost(hosts, current) >= 0;
    const oldHosts = hosts.filter((host) => indexOfHost(previous, host) >= 0);
    const newHosts = hosts.filter((host) => indexOfHost(previous, host) < 0);
    const sizeBefore = previous.length;
    const size = hosts.length;
    let probNew: number | undefined;
    if (size > sizeBefore) {
      // Each server should end with size⁻¹ of the clients, and each held sizeBefore⁻¹ of them: the
      // share that leaves every old server goes to the new ones.
      if (!kept || random() < 1 - sizeBefore / size) probNew = 1;
    } else if (!kept) {
      probNew = 1 - oldServerProbability(sizeBefore, oldHosts.length, size);
    }
    this.hosts = hosts.slice();
    const fields = { from: current, servers: size, before: sizeBefore, newServers: newHosts.length, kept };
    if (probNew === undefined) {
      this.log("info", fields, "server list updated; staying on our server");
      // A move still under way from an earlier update is called off, as ZooKeeper's is.
      this.reconfig = null;
      this.hostIndex = (indexOfHost(this.hosts, current) + 1) % size;
      this.probeHostIndex = this.hostIndex;
      // A probe of a server that left would take the session out of the list.
      const probe = this.probe;
      if (probe !== null && indexOfHost(this.hosts, probe.host) < 0) this.probeFailed(probe, "it left the server list");
      return false;
    }
    this.log("info", { ...fields, probNew }, "server list updated; moving to rebalance the servers' load");
    this.reconfig = { newHosts, oldHosts, probNew, random, nextNew: 0, nextOld: 0 };
    this.hostIndex = 0;
    const conn = this.conn;
    // Without a connection the back-off already armed leads to the next attempt, which nextHost picks.
    if (conn !== null) this.dropConnection(conn, "CONNECTIONLOSS");
    return true;
  }

  // ---------------------------------------------------------------------------------------------
  // Inputs from the host

  receive(connection: number, frame: DecodedServerFrame): void {
    const conn = this.conn;
    if (conn !== null && conn.id === connection) this.onFrame(conn, frame);
    else if (this.probe !== null && this.probe.id === connection) this.onProbeFrame(this.probe, frame);
  }

  lost(connection: number, cause: ConnectionLoss): void {
    const conn = this.conn;
    if (conn !== null && conn.id === connection) this.onStreamGone(conn, cause);
    else if (this.probe !== null && this.probe.id === connection) this.probeFailed(this.probe, `stream ended: ${cause.message ?? "closed"}`);
  }

  timerFired(timer: SessionTimer): void {
    // A timer cancelled while its firing was already on its way is stale.
    if (!this.armed.delete(timer)) return;
    switch (timer) {
      case "connect":
        this.onConnectTimeout();
        return;
      case "attempt":
        if (this.conn !== null) this.onStreamGone(this.conn, { serverBehind: false, message: "connect attempt timed out" });
        return;
      case "reconnect":
        this.startAttempt();
        return;
      case "tick":
        if (this.conn !== null) this.tick(this.conn);
        return;
      case "close":
        this.finishClose();
        return;
      case "probe":
        if (this.probe !== null) this.probeFailed(this.probe, "no answer in time");
        else this.startProbe();
        return;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Connections

  private startAttempt(): void {
    if (this.lifecycleValue !== "active") return;
    assert(this.conn === null, "one connection at a time");
    const host = this.nextHost();
    this.lastHost = host;
    this.conn = this.openConnection(host, this.options.canBeReadOnly === true, "attempt", this.attemptTimeoutMs());
  }

  /** The server of the next attempt: reconfig mode's pick while it lasts, else the next in round robin. */
  private nextHost(): HostPort {
    const hosts = this.hosts;
    const reconfig = this.reconfig;
    if (reconfig !== null) {
      const host = this.nextReconfigHost(reconfig);
      if (host !== undefined) {
        // Round robin goes on from there once reconfig mode ends.
        this.hostIndex = (indexOfHost(hosts, host) + 1) % hosts.length;
        return host;
      }
      // Every server of the new list was tried once and none took the session.
      this.reconfig = null;
    }
    const host = hosts[this.hostIndex] as HostPort;
    this.hostIndex = (this.hostIndex + 1) % hosts.length;
    return host;
  }

  /**
   * A new server with probability probNew, else an old one; the other set once one is used up.
   * It draws only when both sets have a server left and the odds are not certain, so that a
   * scripted random source says exactly which choices were left to chance.
   */
  private nextReconfigHost(reconfig: Reconfig): HostPort | undefined {
    const newLeft = reconfig.nextNew < reconfig.newHosts.length;
    const oldLeft = reconfig.nextOld < reconfig.oldHosts.length;
    if (!newLeft && !oldLeft) return undefined;
    let takeNew = newLeft;
    if (newLeft && oldLeft && reconfig.probNew < 1) takeNew = reconfig.probNew > 0 && reconfig.random() < reconfig.probNew;
    return takeNew ? reconfig.newHosts[reconfig.nextNew++] : reconfig.oldHosts[reconfig.nextOld++];
  }

  /**
   * Opens a connection to `host` and sends its connect frame, the timer `timer` armed for its
   * answer. It resumes the session only if a quorum has held it (see seenReadWrite).
   */
  private openConnection(host: HostPort, readOnlyAllowed: boolean, timer: "attempt" | "probe", timeoutMs: number): Connection<T> {
    const resume = this.seenReadWrite ? this.sessionIdValue : 0n;
    const conn: Connection<T> = {
      id: ++this.connectionCount,
      host,
      askedSessionId: resume,
      phase: "connecting",
      batching: false,
      serverId: 0,
      inFlight: new Fifo<InFlight<T>>(),
      sentSinceTick: true,
      receivedSinceTick: true,
      sendIdleTicks: 0,
      receiveIdleTicks: 0,
      setWatchesUnanswered: 0,
      zxidHeldBack: 0n,
    };
    this.emit({ type: "open", connection: conn.id, host });
    const fields = { address: hostAddress(host), sessionId: hex(resume), lastZxidSeen: this.lastZxid.toString(), readOnlyAllowed };
    this.log("debug", fields, timer === "probe" ? "probing for a read-write server" : "connecting");
    this.arm(timer, timeoutMs);
    this.send(conn, {
      frame: {
        $case: "connect",
        connect: {
          protocolVersion: CLIENT_PROTOCOL_VERSION,
          lastZxidSeen: this.lastZxid,
          timeoutMs: this.options.sessionTimeoutMs,
          sessionId: resume,
          password: resume === 0n ? EMPTY_BYTES : this.passwordValue,
          readOnlyAllowed,
        },
      },
    });
    return conn;
  }

  /** The per-attempt connect timeout: ZooKeeper's sessionTimeout / hosts, but not absurdly small. */
  private attemptTimeoutMs(): number {
    const perHost = Math.floor(this.timeoutMs / this.hosts.length);
    return Math.max(perHost, Math.min(this.timeoutMs, 1_000));
  }

  private scheduleReconnect(): void {
    if (this.lifecycleValue !== "active" || this.armed.has("reconnect")) return;
    const delay = reconnectDelayMs(this.attempt);
    this.attempt++;
    this.arm("reconnect", delay);
  }

  private onConnectTimeout(): void {
    if (this.everConnected || this.lifecycleValue !== "active") return;
    this.log("warn", { hosts: this.hosts }, "no server accepted the session in time");
    this.abandon(new ZkError("CONNECTIONLOSS", `CONNECTIONLOSS: could not connect within ${this.options.connectTimeoutMs} ms`));
  }

  private onFrame(conn: Connection<T>, frame: DecodedServerFrame): void {
    if (conn !== this.conn || conn.phase === "dead") return;
    conn.receivedSinceTick = true;
    switch (frame.frame) {
      case "response":
        this.onResponse(conn, frame.response);
        return;
      case "event":
        this.onEvent(conn, frame.event);
        return;
      case "pong":
        return;
      case "connect":
        this.onConnectAnswer(conn, frame.connect);
        return;
      case "batch":
        // Each frame as if it had come alone; onFrame stops at once if one of them ends the connection.
        for (const inner of frame.frames) this.onFrame(conn, inner);
        return;
      case undefined:
        this.protocolError(conn, "a frame of no kind this client knows");
    }
  }

  private onConnectAnswer(conn: Connection<T>, answer: DecodedConnectResponse): void {
    if (conn.phase !== "connecting") {
      this.protocolError(conn, "a second connect answer on one stream");
      return;
    }
    this.cancel("attempt");
    if (answer.err === ZkErrorCode.SESSIONEXPIRED || (answer.err === 0 && answer.timeoutMs <= 0)) {
      this.log("info", { sessionId: hex(this.sessionIdValue) }, "session expired");
      this.expire(conn);
      return;
    }
    if (answer.err !== 0) {
      this.log("warn", { err: answer.err, host: conn.host }, "server refused the connection");
      this.dropConnection(conn, "CONNECTIONLOSS");
      return;
    }
    if (conn.askedSessionId !== 0n && answer.sessionId !== conn.askedSessionId) {
      this.log("error", { asked: hex(conn.askedSessionId), got: hex(answer.sessionId) }, "server answered another session; treating ours as expired");
      this.expire(conn);
      return;
    }
    this.opened(conn, answer);
  }

  /** `conn` now carries the session the server answered with: announce it, and probe if read-only. */
  private opened(conn: Connection<T>, answer: DecodedConnectResponse): void {
    this.sessionIdValue = answer.sessionId;
    this.passwordValue = answer.password;
    this.timeoutMs = answer.timeoutMs;
    this.attempt = 0;
    // ZooKeeper's onConnected: a move after updateServerList is over once a server holds the session.
    this.reconfig = null;
    conn.phase = "open";
    conn.batching = answer.protocolVersion >= CLIENT_PROTOCOL_BATCHES_SINCE;
    conn.serverId = answer.serverId;
    this.readOnlyValue = answer.readOnly;
    if (!answer.readOnly) this.seenReadWrite = true;
    else if (this.options.canBeReadOnly !== true) this.log("error", { host: conn.host }, "a server served us read-only though we did not allow it");
    this.arm("tick", this.tickMs());
    const fields = { host: conn.host, sessionId: hex(this.sessionIdValue), timeoutMs: this.timeoutMs, serverId: answer.serverId, readOnly: answer.readOnly };
    this.log("debug", fields, "connected");
    if (answer.readOnly) {
      // Armed before the state is announced: a listener may close the session, which cancels it.
      this.probeCount = 0;
      this.probeHostIndex = this.hostIndex;
      this.scheduleProbe();
    }
    if (!this.everConnected) {
      this.everConnected = true;
      this.cancel("connect");
      this.emit({ type: "state", state: "connected" });
    } else {
      // Authenticate and re-register watches before anything a "reconnected" listener may send.
      this.sendCredentials(conn);
      this.sendSetWatches(conn);
      this.emit({ type: "state", state: "reconnected" });
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Looking for a read-write server while read-only

  private scheduleProbe(): void {
    const conn = this.conn;
    if (this.lifecycleValue !== "active" || conn === null || conn.phase !== "open" || !this.readOnlyValue) return;
    if (this.probe !== null || this.armed.has("probe")) return;
    this.arm("probe", rwProbeDelayMs(this.probeCount));
    this.probeCount++;
  }

  /** Asks the next host to take the session read-write. */
  private startProbe(): void {
    const conn = this.conn;
    if (this.lifecycleValue !== "active" || conn === null || conn.phase !== "open" || !this.readOnlyValue || this.probe !== null) return;
    const hosts = this.hosts;
    // A list that updateServerList shrank may end before the index.
    this.probeHostIndex %= hosts.length;
    let host = hosts[this.probeHostIndex] as HostPort;
    this.probeHostIndex = (this.probeHostIndex + 1) % hosts.length;
    // Our read-only server ends our connection itself once it has a quorum again; a lone host is
    // still asked (a name behind which other servers may answer), as ZooKeeper's client does.
    if (sameHost(host, conn.host) && hosts.length > 1) {
      host = hosts[this.probeHostIndex] as HostPort;
      this.probeHostIndex = (this.probeHostIndex + 1) % hosts.length;
    }
    this.probe = this.openConnection(host, false, "probe", Math.min(this.attemptTimeoutMs(), RW_PROBE_TIMEOUT_MS_MAX));
  }

  private onProbeFrame(probe: Connection<T>, frame: DecodedServerFrame): void {
    switch (frame.frame) {
      case "connect":
        this.onProbeAnswer(probe, frame.connect);
        return;
      case "batch":
        // Once the connect answer has made the probe the session's connection, the rest of its batch is the session's.
        for (const inner of frame.frames) this.receive(probe.id, inner);
        return;
      default:
        this.probeFailed(probe, "a frame before the connect answer");
    }
  }

  private onProbeAnswer(probe: Connection<T>, answer: DecodedConnectResponse): void {
    if (answer.err === ZkErrorCode.SESSIONEXPIRED || (answer.err === 0 && answer.timeoutMs <= 0)) {
      // A server that may resume sessions has found ours gone: the quorum expired it while we were read-only.
      this.log("info", { sessionId: hex(this.sessionIdValue), host: probe.host }, "session expired");
      this.endProbe(probe);
      if (this.conn !== null) this.expire(this.conn);
      return;
    }
    if (answer.err !== 0 || answer.readOnly || (probe.askedSessionId !== 0n && answer.sessionId !== probe.askedSessionId)) {
      this.probeFailed(probe, `answered err ${answer.err}, read-only ${answer.readOnly}, session ${hex(answer.sessionId)}`);
      return;
    }
    this.moveTo(probe, answer);
  }

  /**
   * The probed server holds the session read-write: the read-only connection goes (its requests in
   * flight fail CONNECTIONLOSS, "disconnected"), the probe becomes the session's connection
   * ("reconnected", credentials and watches sent again first).
   */
  private moveTo(probe: Connection<T>, answer: DecodedConnectResponse): void {
    this.cancel("probe");
    this.probe = null;
    const old = this.conn;
    assert(old !== null && old.phase === "open", "a probe runs only beside an open read-only connection");
    this.log("info", { from: old.host, to: probe.host }, "a read-write server took the session; leaving the read-only server");
    this.teardown(old, "CONNECTIONLOSS");
    this.emit({ type: "state", state: "disconnected" });
    // A "disconnected" listener may have closed the session.
    if (this.lifecycleValue !== "active") {
      probe.phase = "dead";
      this.emit({ type: "close", connection: probe.id });
      return;
    }
    this.conn = probe;
    this.lastHost = probe.host;
    this.hostIndex = (indexOfHost(this.hosts, probe.host) + 1) % this.hosts.length;
    this.opened(probe, answer);
  }

  /** The probe found no read-write server: close it and look again later. */
  private probeFailed(probe: Connection<T>, why: string): void {
    this.log("debug", { host: probe.host, why }, "no read-write server there");
    this.endProbe(probe);
    this.scheduleProbe();
  }

  private endProbe(probe: Connection<T>): void {
    if (this.probe !== probe) return;
    this.probe = null;
    probe.phase = "dead";
    this.cancel("probe");
    this.emit({ type: "close", connection: probe.id });
  }

  /** Sends every credential accepted before, in order, ahead of any other request on a new stream. */
  private sendCredentials(conn: Connection<T>): void {
    for (const credential of this.credentials) {
      const request: RequestOp = { $case: "addAuth", addAuth: { scheme: credential.scheme, auth: credential.auth } };
      this.write(conn, { xid: this.nextRequestXid(), purpose: "authReplay", credential }, request);
    }
  }

  /** Re-registers every watch the caller holds, before any other request on a new stream. */
  private sendSetWatches(conn: Connection<T>): void {
    const relativeZxid = this.lastZxid;
    for (const chunk of chunkWatchPaths(this.options.watchedPaths(), SET_WATCHES_BYTES_MAX)) {
      conn.setWatchesUnanswered += 1;
      this.write(conn, { xid: this.nextRequestXid(), purpose: "setWatches" }, { $case: "setWatches", setWatches: { relativeZxid, ...chunk } });
    }
  }

  /**
   * Raises the last zxid seen. Until every setWatches of the connection is answered, what it
   * brings (the replayed credentials' answers, the events the setWatches fires) is held back: the
   * events fired for the watches re-registered are complete only with the answer, and were the
   * stream to break before it, a last zxid raised by one of them would make the next setWatches ask
   * only for later changes, and the others would never fire. What was held back counts once the
   * answer comes; it is forgotten with the connection.
   */
  private seen(conn: Connection<T>, zxid: bigint): void {
    if (conn.setWatchesUnanswered > 0) {
      if (zxid > conn.zxidHeldBack) conn.zxidHeldBack = zxid;
    } else if (zxid > this.lastZxid) {
      this.lastZxid = zxid;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Requests and answers

  private nextRequestXid(): number {
    this.xid = nextXid(this.xid);
    return this.xid;
  }

  private write(conn: Connection<T>, request: InFlight<T>, op: RequestOp): void {
    conn.inFlight.push(request);
    conn.sentSinceTick = true;
    this.send(conn, { frame: { $case: "request", request: { xid: request.xid, op } } });
  }

  private send(conn: Connection<T>, frame: ClientFrame): void {
    this.emit({ type: "send", connection: conn.id, frame, batchable: conn.batching });
  }

  private onResponse(conn: Connection<T>, response: DecodedResponse): void {
    if (conn.phase !== "open") {
      this.protocolError(conn, "a response before the connect answer");
      return;
    }
    const request = conn.inFlight.shift();
    if (request === undefined || request.xid !== response.xid) {
      if (request !== undefined) this.fail(request, "CONNECTIONLOSS", "CONNECTIONLOSS: xid out of order");
      this.protocolError(conn, `response xid ${response.xid} but expected ${request === undefined ? "none" : request.xid}`);
      return;
    }
    this.seen(conn, response.zxid);
    if (request.purpose === "setWatches") {
      conn.setWatchesUnanswered -= 1;
      if (conn.setWatchesUnanswered === 0) this.seen(conn, conn.zxidHeldBack);
    }
    switch (request.purpose) {
      case "request":
        if (response.err === 0 && request.credential !== undefined) this.remember(request.credential);
        this.emit({ type: "answered", token: request.token, response });
        return;
      case "close":
        this.finishClose();
        return;
      case "setWatches":
        if (response.err !== 0) this.log("warn", { err: response.err }, "setWatches failed");
        return;
      case "authReplay":
        // Only a server configured unlike the one that accepted it refuses it: stop sending it.
        if (response.err === ZkErrorCode.AUTHFAILED) this.forget(request.credential, conn.host);
        return;
    }
  }

  /** A request that will never be answered; only the caller's own are reported. */
  private fail(request: InFlight<T>, code: ZkErrorName, message: string): void {
    if (request.purpose === "request") this.emit({ type: "failed", token: request.token, code, message });
  }

  private remember(credential: Credential): void {
    const known = this.credentials.some((c) => c.scheme === credential.scheme && equalBytes(c.auth, credential.auth));
    if (!known) this.credentials.push({ scheme: credential.scheme, auth: credential.auth.slice() });
  }

  private forget(credential: Credential, host: HostPort): void {
    this.log("warn", { scheme: credential.scheme, host }, "the server refused credentials another server had accepted");
    const index = this.credentials.indexOf(credential);
    if (index >= 0) this.credentials.splice(index, 1);
  }

  private onEvent(conn: Connection<T>, event: DecodedWatchEvent): void {
    if (conn.phase !== "open") {
      this.protocolError(conn, "a watch event before the connect answer");
      return;
    }
    this.seen(conn, event.zxid);
    this.emit({ type: "event", event });
  }

  // ---------------------------------------------------------------------------------------------
  // Liveness and endings

  private tickMs(): number {
    return Math.max(1, Math.floor(this.timeoutMs / TICKS_PER_TIMEOUT));
  }

  /** One liveness tick: ping when idle, declare the connection dead when the server went quiet. */
  private tick(conn: Connection<T>): void {
    if (conn.phase !== "open") return;
    if (conn.receivedSinceTick) {
      conn.receivedSinceTick = false;
      conn.receiveIdleTicks = 0;
    } else if (++conn.receiveIdleTicks >= DEAD_AFTER_IDLE_TICKS) {
      this.log("warn", { host: conn.host }, "nothing received for 2/3 of the session timeout; reconnecting");
      this.dropConnection(conn, "CONNECTIONLOSS");
      return;
    }
    if (conn.sentSinceTick) {
      conn.sentSinceTick = false;
      conn.sendIdleTicks = 0;
    } else if (++conn.sendIdleTicks >= PING_AFTER_IDLE_TICKS) {
      conn.sendIdleTicks = 0;
      this.send(conn, { frame: { $case: "ping", ping: {} } });
    }
    this.arm("tick", this.tickMs());
  }

  private onStreamGone(conn: Connection<T>, cause: ConnectionLoss): void {
    if (conn.phase === "dead") return;
    if (cause.serverBehind) {
      this.log("info", { host: conn.host, details: cause.message }, "server is behind our last seen zxid; trying the next host");
    } else {
      this.log("debug", { host: conn.host, err: cause.message }, "stream ended");
    }
    this.dropConnection(conn, "CONNECTIONLOSS");
  }

  private protocolError(conn: Connection<T>, what: string): void {
    this.log("error", { host: conn.host }, `protocol violation: ${what}`);
    this.dropConnection(conn, "CONNECTIONLOSS");
  }

  /** Ends a connection: fails its in-flight requests, then reconnects, or finishes a close. */
  private dropConnection(conn: Connection<T>, code: ZkErrorName): void {
    const wasOpen = conn.phase === "open";
    this.teardown(conn, code);
    if (this.lifecycleValue === "closing") {
      this.finishClose();
      return;
    }
    if (this.lifecycleValue !== "active") return;
    if (wasOpen) this.emit({ type: "state", state: "disconnected" });
    // A "disconnected" listener may have closed the session.
    if (this.lifecycleValue === "active") this.scheduleReconnect();
  }

  private teardown(conn: Connection<T>, code: ZkErrorName): void {
    if (conn.phase === "dead") return;
    assert(conn === this.conn, "only the current connection is open");
    conn.phase = "dead";
    this.conn = null;
    this.cancel("attempt");
    this.cancel("tick");
    // A probe only looks for a better home for the connection that is going.
    if (this.probe !== null) this.endProbe(this.probe);
    this.cancel("probe");
    this.emit({ type: "close", connection: conn.id });
    const message = `${code}: ${code === "CONNECTIONLOSS" ? "connection lost" : "session expired"}`;
    for (const request of conn.inFlight.drain()) this.fail(request, code, message);
  }

  private expire(conn: Connection<T>): void {
    const closing = this.lifecycleValue === "closing";
    this.lifecycleValue = "expired";
    this.teardown(conn, "SESSIONEXPIRED");
    this.cancel("reconnect");
    this.cancel("connect");
    if (!this.everConnected) {
      this.emit({ type: "connectFailed", state: "expired", error: new ZkError("SESSIONEXPIRED", "SESSIONEXPIRED: the session to resume is gone") });
      return;
    }
    this.emit({ type: "state", state: "expired" });
    if (closing) this.finishClose();
  }

  /** Gives up before ever connecting (connect timeout): no state is announced, the connect call fails. */
  private abandon(error: ZkError): void {
    this.lifecycleValue = "closed";
    this.cancel("reconnect");
    this.cancel("connect");
    if (this.conn) this.teardown(this.conn, "CONNECTIONLOSS");
    this.emit({ type: "connectFailed", state: "closed", error });
  }

  private finishClose(): void {
    this.cancel("close");
    const alreadyClosed = this.lifecycleValue === "closed";
    this.lifecycleValue = "closed";
    this.cancel("reconnect");
    this.cancel("connect");
    if (this.conn) this.teardown(this.conn, "CONNECTIONLOSS");
    this.emit({ type: "closed", announce: !alreadyClosed });
  }

  // ---------------------------------------------------------------------------------------------
  // Effects

  private arm(timer: SessionTimer, delayMs: number): void {
    this.armed.add(timer);
    this.emit({ type: "armTimer", timer, delayMs });
  }

  private cancel(timer: SessionTimer): void {
    if (this.armed.delete(timer)) this.emit({ type: "cancelTimer", timer });
  }

  private log(level: "debug" | "info" | "warn" | "error", fields: object, message: string): void {
    this.emit({ type: "log", level, fields, message });
  }
}

const EMPTY_BYTES = new Uint8Array(0);

/**
 * When the list did not grow and our server left it: the chance of moving to a server that was in
 * the previous list (StaticHostProvider's pOld). The old servers that stay must each end with
 * 1/size of the clients; they hold 1/sizeBefore each already, so the clients that must move give
 * them only the difference, and the new servers the rest.
 */
function oldServerProbability(sizeBefore: number, oldCount: number, size: number): number {
  const denominator = size * (sizeBefore - oldCount);
  // Every previous server is in the list (so ours was not one of them): there is only the old set.
  if (denominator <= 0) return 1;
  return Math.min(1, Math.max(0, (oldCount * (sizeBefore - size)) / denominator));
}

/** Hosts are the same server when their names and ports are (the list holds fresh objects after an update). */
function sameHost(a: HostPort, b: HostPort): boolean {
  return a.host === b.host && a.port === b.port;
}

function indexOfHost(hosts: readonly HostPort[], host: HostPort): number {
  return hosts.findIndex((candidate) => sameHost(candidate, host));
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && a.every((byte, i) => byte === b[i]);
}

/** Session ids are shown in hex, as ZooKeeper logs them. */
function hex(id: bigint): string {
  return "0x" + BigInt.asUintN(64, id).toString(16);
}
