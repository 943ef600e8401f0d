/**
 * What the simulator's two kinds of client have in common. A simulated client runs one client
 * session implementation over the simulated network: the SDK's own SessionMachine speaking corral's
 * gRPC frames (sdk-session.ts), or a client with the session semantics of ZooKeeper's Java client
 * speaking jute (jute-session.ts). Both talk to the server's own connection session
 * (src/replica/connection-session.ts) through that door's real codec, and report what they see in the
 * same terms, so that one workload and one set of history checks (client-history.ts) serve both.
 */
import type { WatchPaths } from "../../src/client/watch-registry.js";
import type { ConnectionSessionDeps, ConnectionRefusal } from "../../src/replica/connection-session.js";
import type { ClientRequest } from "../../src/replica/requests.js";
import type { Property } from "./checker.js";

/** An answer as the history checks read it: the reply header, and the Stat if the reply has one. */
export interface SimAnswer {
  err: number;
  zxid: bigint;
  stat: { mzxid: bigint; pzxid: bigint } | undefined;
}

/** A watch event, with the zxid of the txn that fired it (for a jute client, told by the simulator: ZooKeeper's notification says -1). */
export interface SimEvent {
  type: number;
  path: string;
  zxid: bigint;
}

/** The client's view of its session, as both kinds announce it. */
export type SimSessionState = "connected" | "reconnected" | "disconnected" | "expired" | "closed";

/** Why a connection ended, as the client learns it. */
export interface SimConnectionLoss {
  /** The server refused the client for being ahead of it (the gRPC door says so; ZooKeeper's just closes). */
  serverBehind: boolean;
  message: string;
}

/** What a client session needs of the simulated client around it. */
export interface SimSessionHost<T> {
  readonly nowMs: number;
  /** A number in [0, n) from the simulation's PRNG. */
  random(n: number): number;
  /** Open connection number `connection` to server `serverId`; what is sent on it arrives in order. */
  open(connection: number, serverId: number): void;
  /** `write`: a create, setData or delete (the simulation may pause the server it reaches). */
  send(connection: number, bytes: Uint8Array, write: boolean): void;
  close(connection: number): void;
  /** Call `timerFired(timer)` once after `delayMs`, replacing that timer if it is armed. */
  armTimer(timer: string, delayMs: number): void;
  cancelTimer(timer: string): void;
  /** A request left on the connection open now, as `xid` of the session it asked for there (0 for a new one). */
  sent(token: T, xid: number, sessionId: bigint): void;
  answered(token: T, answer: SimAnswer): void;
  /** The request will never be answered (its connection was lost, or the session is over). */
  failed(token: T): void;
  event(event: SimEvent): void;
  state(state: SimSessionState): void;
  /** The server broke the protocol's promises (an answer out of order, one never asked for). */
  violation(property: Property, message: string): void;
  count(stat: "framesBehindConnect" | "pings"): void;
  log(line: string): void;
}

/** A client session of either kind, driven by its host. */
export interface SimSession<T> {
  /** authFailed: only the SDK's, after a refused SASL login (the simulator's sessions use none). */
  readonly lifecycle: "active" | "closing" | "closed" | "expired" | "authFailed";
  readonly connected: boolean;
  /**
   * Whether a request submitted now will be sent: on the connection (the SDK's, once connected), or
   * on the next one if there is none now (ZooKeeper's, once its session exists).
   */
  readonly acceptsRequests: boolean;
  readonly readOnly: boolean;
  /** 0 until a server established the session. */
  readonly sessionId: bigint;
  /**
   * Whether an addAuth is a request with an answer (the SDK), or a packet the session replays first
   * on every connection and that applies to every later request (ZooKeeper's clients).
   */
  readonly authAnswered: boolean;
  start(): void;
  submit(request: ClientRequest, token: T): void;
  /** Bytes that arrived on `connection`; `eventZxid`: for a frame carrying a watch event, its txn's zxid (the simulator's knowledge, not the wire's). */
  receive(connection: number, bytes: Uint8Array, eventZxid: number | undefined): void;
  lost(connection: number, cause: SimConnectionLoss): void;
  timerFired(timer: string): void;
}

export interface SimSessionOptions {
  /** In the order to try them (the caller shuffles). */
  serverIds: readonly number[];
  sessionTimeoutMs: number;
  /** Accept being served read-only by a server cut off from its quorum (ZooKeeper's canBeReadOnly). */
  canBeReadOnly: boolean;
  /** The watches the client holds, read when a new connection must set them again. */
  watchedPaths: () => WatchPaths;
}

/** The server end of a simulated connection as the server's session writes to it. */
export interface SimServerStream {
  /** `eventZxid`: the frame tells of a watch event fired by the txn at that zxid. */
  write(frame: Uint8Array, eventZxid?: number): void;
  refuse(reason: ConnectionRefusal, detail: string): void;
  finish(): void;
  pauseReading(): void;
  resumeReading(): void;
}

/** The server end of a simulated connection: the server's own connection session under one door's codec. */
export interface SimServerEnd {
  receive(bytes: Uint8Array): void;
  gone(): void;
  /** Requests the server's session has read on this connection and not answered, and their bytes. */
  readonly outstanding: { count: number; bytes: number };
}

/** One kind of simulated client: its session, and the door its connections reach. */
export interface SimClientKind {
  readonly name: "sdk" | "jute";
  session<T>(options: SimSessionOptions, host: SimSessionHost<T>): SimSession<T>;
  serverEnd(deps: ConnectionSessionDeps, stream: SimServerStream, remoteAddress: string): SimServerEnd;
}

const PING_ORDER: Property = "a ping's answer never follows the answer to a request sent after it";

/**
 * One connection's pings against its requests: a ping's answer must not arrive after the answer to
 * a request sent after the ping (ZooKeeper orders a session's pings with its requests; corral
 * answers a ping at once). Requests are answered in the order sent, so the highest sequence number
 * answered tells whether a later request overtook an outstanding ping.
 */
export class PingOrder {
  private sentCount = 0;
  private readonly pings: number[] = [];
  private readonly requests: number[] = [];
  private answeredMax = -1;

  constructor(private readonly fail: (property: Property, message: string) => void) {}

  pingSent(): void {
    this.pings.push(this.sentCount++);
  }

  requestSent(): void {
    this.requests.push(this.sentCount++);
  }

  requestAnswered(): void {
    const sent = this.requests.shift();
    if (sent !== undefined) this.answeredMax = Math.max(this.answeredMax, sent);
  }

  pongReceived(): void {
    const ping = this.pings.shift();
    if (ping === undefined) return this.fail(PING_ORDER, "a ping answer arrived with no ping outstanding");
    if (this.answeredMax > ping)
      this.fail(PING_ORDER, `the answer to ping #${ping} arrived after the answer to request #${this.answeredMax}, sent after it on the same connection`);
  }
}
