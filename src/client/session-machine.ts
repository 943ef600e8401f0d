/**
 * One client session as a deterministic state machine (docs/architecture.md §3, §5 and practice 17):
 * everything the SDK decides about its connections, and nothing it does. Inputs come from the
 * user side (start, submit, close) and from a host (frames, ended streams, fired timers — see
 * session-io.ts); effects go out through one callback. It reads no clock, sets no timer, draws no
 * random number of its own (updateServerList's come from the caller) and touches no socket, so
 * test/sim can run the SDK's real session logic.
 *
 * Connection life: connect frame → connect answer → the SASL login, if any (each token answered
 * before the next, nothing else sent meanwhile) → requests/events/pings; on loss every in-flight
 * request fails CONNECTIONLOSS, hosts are retried round-robin with a capped back-off, resuming the
 * session (id + password + last zxid seen); the first requests on the new stream authenticate it
 * again with every credential an addAuth succeeded with (a server keeps them per connection, as
 * ZooKeeper's client re-sends them), then re-register the watches the caller still holds
 * (setWatches). Requests are written in submit order and answered in that order, so in-flight
 * requests wait in a FIFO and each response must match its head (session-requests.ts). The server
 * alone decides expiry.
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
 * which server to try next, and whether to move when the list changes, is the host provider's
 * choice (host-provider.ts). Its draws come from the caller's `random`, as the hosts' order does,
 * so that the decisions replay exactly in test/sim and in tests.
 */
import { hex64 } from "../common/hex.js";
import { CLIENT_PROTOCOL_BATCHES_SINCE, CLIENT_PROTOCOL_VERSION } from "../common/constants.js";
import { assert } from "../common/assert.js";
import { ZkError, ZkErrorCode, zkErrorName, type ZkErrorName } from "../common/errors.js";
import type { DecodedConnectResponse, DecodedResponse, DecodedServerFrame, RequestOp } from "./codec.js";
import { hostAddress, type HostPort } from "./connect-string.js";
import { HostProvider } from "./host-provider.js";
import { newConnection, type Connection } from "./session-connection.js";
import type { ConnectionLoss, SaslStepOutcome, SessionEffect, SessionInputs, SessionLifecycle, SessionTimer } from "./session-io.js";
import { SessionRequests } from "./session-requests.js";
import type { WatchPaths } from "./watch-registry.js";

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
  /** Log in with SASL on every connection before anything else is sent on it (the host evaluates each `saslStep`). */
  sasl?: boolean;
  /**
   * Uniform draws in [0, 1) for updateServerList's load balancing (Math.random in Client, the
   * simulator's PRNG in test/sim). Only updateServerList needs it; a host that never changes the
   * server list may leave it out.
   */
  random?: () => number;
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
  private connectionCount = 0;
  /** Which server to try, or probe, next. */
  private readonly hosts: HostProvider;
  private attempt = 0;
  private sessionIdValue: bigint;
  private passwordValue: Uint8Array;
  private timeoutMs: number;
  /** What travels on the connections: requests, answers, priming. */
  private readonly requests: SessionRequests<T>;
  private readonly armed = new Set<SessionTimer>();

  constructor(
    private readonly options: SessionOptions,
    private readonly emit: (effect: SessionEffect<T>) => void,
  ) {
    this.hosts = new HostProvider(options.hosts);
    this.sessionIdValue = options.sessionId;
    this.passwordValue = options.password;
    this.timeoutMs = options.sessionTimeoutMs;
    // ZooKeeper's client does the same for a session given to its constructor: the caller had it from a quorum.
    this.seenReadWrite = options.sessionId !== 0n;
    this.requests = new SessionRequests<T>({
      emit,
      watchedPaths: () => options.watchedPaths(),
      protocolError: (conn, what) => this.protocolError(conn, what),
      closeAnswered: () => this.finishClose(),
      saslAnswered: (conn, response) => this.onSaslAnswer(conn, response),
    });
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
    return this.hosts.servers;
  }

  get password(): Uint8Array {
    return this.passwordValue;
  }

  get negotiatedTimeoutMs(): number {
    return this.timeoutMs;
  }

  /** The highest zxid of any response or watch event received. */
  get lastZxidSeen(): bigint {
    return this.requests.lastZxidSeen;
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
    return this.requests.submit(conn, request, token);
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
      this.requests.close(conn);
      this.arm("close", this.timeoutMs);
    } else {
      this.finishClose();
    }
  }

  /**
   * Replaces the server list (ZooKeeper's updateServerList, with StaticHostProvider's load
   * balancing): `hosts` is the new list in the order to try them, shuffled by the caller. Returns
   * whether the session moves, as HostProvider.update decides. Moving ends the connection as a lost
   * one does (its requests fail CONNECTIONLOSS, "disconnected") and the session is resumed on the
   * server that the host provider's reconfig mode picks.
   */
  updateServerList(hosts: readonly HostPort[]): boolean {
    assert(this.lifecycleValue === "active", "only an active session changes its servers");
    assert(hosts.length > 0, "a session needs a host");
    const random = this.options.random;
    assert(random !== undefined, "updateServerList draws from SessionOptions.random");
    const { probNew, fields } = this.hosts.update(hosts, this.conn?.host, random);
    if (probNew === undefined) {
      this.log("info", fields, "server list updated; staying on our server");
      // A probe of a server that left would take the session out of the list.
      const probe = this.probe;
      if (probe !== null && !this.hosts.includes(probe.host)) this.probeFailed(probe, "it left the server list");
      return false;
    }
    this.log("info", { ...fields, probNew }, "server list updated; moving to rebalance the servers' load");
    const conn = this.conn;
    // Without a connection the back-off already armed leads to the next attempt, which the host provider picks.
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

  /** The host's mechanism evaluated the step asked of it for `connection` (a step of a connection gone is ignored). */
  saslEvaluated(connection: number, outcome: SaslStepOutcome): void {
    const conn = this.conn;
    if (conn === null || conn.id !== connection || conn.phase !== "authenticating") return;
    if ("failed" in outcome) return this.loginFailed(conn, outcome.failed);
    conn.saslComplete = outcome.complete;
    if (outcome.token !== null) return this.requests.sendSasl(conn, outcome.token);
    if (outcome.complete) return this.loggedIn(conn);
    this.loginFailed(conn, "the mechanism has nothing to send and is not complete");
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
    const host = this.hosts.next();
    this.conn = this.openConnection(host, this.options.canBeReadOnly === true, "attempt", this.attemptTimeoutMs());
  }

  /**
   * Opens a connection to `host` and sends its connect frame, the timer `timer` armed for its
   * answer. It resumes the session only if a quorum has held it (see seenReadWrite).
   */
  private openConnection(host: HostPort, readOnlyAllowed: boolean, timer: "attempt" | "probe", timeoutMs: number): Connection<T> {
    const resume = this.seenReadWrite ? this.sessionIdValue : 0n;
    const conn = newConnection<T>(++this.connectionCount, host, resume);
    this.emit({ type: "open", connection: conn.id, host });
    const lastZxidSeen = this.requests.lastZxidSeen;
    const fields = { address: hostAddress(host), sessionId: hex64(resume), lastZxidSeen: lastZxidSeen.toString(), readOnlyAllowed };
    this.log("debug", fields, timer === "probe" ? "probing for a read-write server" : "connecting");
    this.arm(timer, timeoutMs);
    this.requests.send(conn, {
      frame: {
        $case: "connect",
        connect: {
          protocolVersion: CLIENT_PROTOCOL_VERSION,
          lastZxidSeen,
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
    const perHost = Math.floor(this.timeoutMs / this.hosts.servers.length);
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
    this.log("warn", { hosts: this.hosts.servers }, "no server accepted the session in time");
    this.abandon(new ZkError("CONNECTIONLOSS", `CONNECTIONLOSS: could not connect within ${this.options.connectTimeoutMs} ms`));
  }

  private onFrame(conn: Connection<T>, frame: DecodedServerFrame): void {
    if (conn !== this.conn || conn.phase === "dead") return;
    conn.receivedSinceTick = true;
    switch (frame.frame) {
      case "response":
        this.requests.onResponse(conn, frame.response);
        return;
      case "event":
        this.requests.onEvent(conn, frame.event);
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
    if (answer.err === ZkErrorCode.SESSIONEXPIRED || (answer.err === 0 && answer.timeoutMs <= 0)) {
      this.log("info", { sessionId: hex64(this.sessionIdValue) }, "session expired");
      this.expire(conn);
      return;
    }
    if (answer.err !== 0) {
      this.log("warn", { err: answer.err, host: conn.host }, "server refused the connection");
      this.dropConnection(conn, "CONNECTIONLOSS");
      return;
    }
    if (conn.askedSessionId !== 0n && answer.sessionId !== conn.askedSessionId) {
      this.log("error", { asked: hex64(conn.askedSessionId), got: hex64(answer.sessionId) }, "server answered another session; treating ours as expired");
      this.expire(conn);
      return;
    }
    this.established(conn, answer);
  }

  /** The server holds the session on `conn`. With SASL the login runs first, within the attempt's time; then it opens. */
  private established(conn: Connection<T>, answer: DecodedConnectResponse): void {
    this.sessionIdValue = answer.sessionId;
    this.passwordValue = answer.password;
    this.timeoutMs = answer.timeoutMs;
    this.attempt = 0;
    this.hosts.connected();
    conn.batching = answer.protocolVersion >= CLIENT_PROTOCOL_BATCHES_SINCE;
    conn.serverId = answer.serverId;
    this.readOnlyValue = answer.readOnly;
    if (!answer.readOnly) this.seenReadWrite = true;
    else if (this.options.canBeReadOnly !== true) this.log("error", { host: conn.host }, "a server served us read-only though we did not allow it");
    if (this.options.sasl !== true) return this.opened(conn);
    conn.phase = "authenticating";
    this.arm("attempt", this.attemptTimeoutMs());
    this.emit({ type: "saslStep", connection: conn.id, host: conn.host, challenge: null });
  }

  /** `conn` now carries the session: announce it, and probe if read-only. */
  private opened(conn: Connection<T>): void {
    this.cancel("attempt");
    conn.phase = "open";
    this.arm("tick", this.tickMs());
    const readOnly = this.readOnlyValue;
    const fields = { host: conn.host, sessionId: hex64(this.sessionIdValue), timeoutMs: this.timeoutMs, serverId: conn.serverId, readOnly };
    this.log("debug", fields, "connected");
    if (readOnly) {
      // Armed before the state is announced: a listener may close the session, which cancels it.
      this.probeCount = 0;
      this.hosts.startProbing();
      this.scheduleProbe();
    }
    if (!this.everConnected) {
      this.everConnected = true;
      this.cancel("connect");
      this.emit({ type: "state", state: "connected" });
    } else {
      // Authenticate and re-register watches before anything a "reconnected" listener may send.
      this.requests.prime(conn);
      this.emit({ type: "state", state: "reconnected" });
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The SASL login of a connection

  /** The server answered the last token: OK goes on (or ends the login), anything else fails it. */
  private onSaslAnswer(conn: Connection<T>, response: DecodedResponse): void {
    if (conn.phase !== "authenticating") return this.protocolError(conn, "a sasl answer outside the login");
    if (response.err !== 0) return this.loginFailed(conn, `the server answered ${zkErrorName(response.err) ?? response.err}`);
    if (conn.saslComplete) return this.loggedIn(conn);
    this.emit({ type: "saslStep", connection: conn.id, host: conn.host, challenge: response.saslToken });
  }

  private loggedIn(conn: Connection<T>): void {
    this.log("debug", { host: conn.host, sessionId: hex64(this.sessionIdValue) }, "SASL login succeeded");
    this.opened(conn);
  }

  /** The login failed (ZooKeeper's AuthFailed): no reconnect, every call fails AUTHFAILED; the server's session expires in time. */
  private loginFailed(conn: Connection<T>, reason: string): void {
    this.log("warn", { host: conn.host, sessionId: hex64(this.sessionIdValue), reason }, "SASL login failed");
    this.over(conn, "authFailed", new ZkError("AUTHFAILED", `AUTHFAILED: SASL login failed: ${reason}`));
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
    const host = this.hosts.nextProbe(conn.host);
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
      this.log("info", { sessionId: hex64(this.sessionIdValue), host: probe.host }, "session expired");
      this.endProbe(probe);
      if (this.conn !== null) this.expire(this.conn);
      return;
    }
    if (answer.err !== 0 || answer.readOnly || (probe.askedSessionId !== 0n && answer.sessionId !== probe.askedSessionId)) {
      this.probeFailed(probe, `answered err ${answer.err}, read-only ${answer.readOnly}, session ${hex64(answer.sessionId)}`);
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
    this.hosts.movedTo(probe.host);
    this.established(probe, answer);
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
      this.requests.send(conn, { frame: { $case: "ping", ping: {} } });
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
    this.requests.failInFlight(conn, code);
  }

  private expire(conn: Connection<T>): void {
    this.over(conn, "expired", new ZkError("SESSIONEXPIRED", "SESSIONEXPIRED: the session to resume is gone"));
  }

  /** The session is over for this client (`error` fails the connect call if it never connected; its code fails what is in flight). */
  private over(conn: Connection<T>, end: "expired" | "authFailed", error: ZkError): void {
    const closing = this.lifecycleValue === "closing";
    this.lifecycleValue = end;
    this.teardown(conn, error.code);
    this.cancel("reconnect");
    this.cancel("connect");
    if (!this.everConnected) {
      this.emit({ type: "connectFailed", state: end, error });
      return;
    }
    this.emit({ type: "state", state: end });
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
