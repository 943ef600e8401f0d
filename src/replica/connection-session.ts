/**
 * One client connection's session on the server, written once for both client doors (corral's
 * gRPC stream and ZooKeeper's jute protocol): the connect exchange (a new or resumed session,
 * through the SessionOpener), the frames a client pipelines behind its connect (held, bounded, and
 * run once the session exists), pings, requests into the pipeline in the session's order, answers
 * and watch events, and the end of the connection. It lives in the replica because it decides:
 * who is connected, what is read, what is answered, and when a connection is over. (The server's
 * table of sessions and their request queues is ClientSessions, client-sessions.ts; this is the
 * session as one connection carries it, ZooKeeper's ServerCnxn.)
 *
 * What differs between the doors sits behind two small interfaces. A `SessionCodec` reads and
 * writes one door's records and carries that door's policy: what a connect asks for, how an
 * expired session is told, what each answer looks like (ZooKeeper's reply record follows the
 * request's opcode), which frame is the last one read (ZooKeeper stops reading after an opcode it
 * does not know, or a failed auth), whether answers may share a message (gRPC protocol 2), how a
 * client that has not authenticated as enforce.auth requires is answered. A `SessionStream` is the
 * connection under the session: it writes frames, ends the connection in the door's own way —
 * refused (gRPC: a status code; ZooKeeper: closed without an answer) or finished after what was
 * written — and evaluates SASL tokens (off the event loop's thread: the session holds what the
 * client sends meanwhile and goes on when the answer comes).
 *
 * Flow control (docs/architecture.md §7b): every request read counts against the connection's and
 * the server's inbound bounds (inbound-budget.ts) until it is answered. When a bound is reached the
 * session tells its stream to stop reading (`pauseReading`), holds the few frames the door had
 * already read, and tells it to read again once its own answers bring it back under the bound.
 *
 * Deterministic: no clocks, sockets or timers. The gRPC door binds it to a bidi stream
 * (src/server/grpc-client-service.ts), the ZooKeeper door to a TCP socket
 * (src/server/zk-wire/zk-client-service.ts), and the simulator to its network, for both codecs.
 */
import { limits } from "../common/constants.js";
import { ZkError, ZkErrorCode } from "../common/errors.js";
import type { DataTree } from "../store/data-tree.js";
import { ConnectionInbound, type InboundBudget } from "./inbound-budget.js";
import { REQUEST_OVERHEAD_BYTES, requestBytes } from "./request-bytes.js";
import type { Id, WatchEvent } from "../store/types.js";
import { authenticationMissing, withAuthIds } from "./auth.js";
import type { ClientConnection, RequestPipeline } from "./pipeline.js";
import type { ClientRequest, Reply } from "./requests.js";
import type { SessionOpener, SessionRequest } from "./session-opener.js";

/** Why a connection is refused; each door says it in its own terms. */
export type ConnectionRefusal = "unavailable" | "behind" | "invalid" | "exhausted" | "internal";

const REFUSAL_OF_OUTCOME = { "not-serving": "unavailable", "not-created": "unavailable", behind: "behind" } as const;

/**
 * A frame that cannot be read: the connection is refused as invalid. `xid`: the request's, when its
 * header could be read (ZooKeeper reads the header first, so enforce.auth answers such a request
 * before its body is looked at).
 */
export interface InvalidFrame {
  frame: "invalid";
  detail: string;
  xid?: number;
}

/** The first frame of a connection, as a door's codec reads it. */
export type ConnectFrameRead = { frame: "connect"; request: SessionRequest } | InvalidFrame;

/**
 * A frame of an established session, as a door's codec reads it. `last`: nothing after it is read,
 * and the connection ends once its answer is out.
 */
export type SessionFrame =
  /** `xid`: as the client sent it, where the door's protocol has one. */
  | { frame: "ping"; xid?: number }
  | { frame: "request"; xid: number; request: ClientRequest; last?: boolean }
  /** Decoded, but not runnable: answered with `err` in its place in the session's order. `addAuth`: an auth packet's. */
  | { frame: "rejected"; xid: number; err: number; last?: boolean; addAuth?: boolean }
  /** A SASL token (ZooKeeper's sasl packet): answered once evaluated, outside the session's order. */
  | { frame: "sasl"; xid: number; token: Uint8Array }
  | InvalidFrame;

/** A SASL step's outcome, as the door's mechanism decides it. */
export interface SaslOutcome {
  /** The answer's error code. */
  err: number;
  /** The token to answer with (null: none). */
  token: Uint8Array | null;
  /** Ids the connection gains, before any later frame of it is read. */
  ids: readonly Id[];
  /** The connection ends once the answer is out. */
  close: boolean;
}

/** What the connect answer of an established session tells the client. */
export interface EstablishedSession {
  sessionId: bigint;
  timeoutMs: number;
  password: Uint8Array;
  /** Served read-only here (read-only mode). */
  readOnly: boolean;
  /** The server's last applied zxid. */
  lastZxid: number;
  serverId: number;
}

/** An answer to a request; `last`: the connection ends once it is written. */
export interface ReplyFrame<Out> {
  frame: Out;
  last: boolean;
}

/**
 * One door's records and policy, for one connection (it may keep what the connect settled, and
 * what each pending request's answer must look like). Encoding may throw: that costs the
 * connection, never the server.
 */
export interface SessionCodec<In, Out> {
  readConnect(frame: In): ConnectFrameRead;
  readFrame(frame: In): SessionFrame;
  established(session: EstablishedSession): Out;
  /** The answer to a resume of a session that is gone; the connection then ends. */
  expired(serverId: number): Out;
  pong(zxid: number): Out;
  /** Undefined for a request this connection never read (nothing is written). */
  reply(xid: number, reply: Reply): ReplyFrame<Out> | undefined;
  event(event: WatchEvent): Out;
  /** The answer to `frame` from a client that has not authenticated as enforce.auth requires (undefined: none); the connection then ends. */
  authenticationRequired(frame: SessionFrame): Out | undefined;
  /** The answer to a sasl frame (a codec without it never reads one). */
  saslAnswer?(xid: number, err: number, token: Uint8Array | null): Out;
  /** Once connected, answers may share one message: the stream may hold them to the end of the turn. */
  readonly answersBatch: boolean;
  /** A failed addAuth ends reading at once (ZooKeeper); otherwise the session goes on. */
  readonly authFailureEndsReading: boolean;
}

/** The connection under a session. */
export interface SessionStream<Out> {
  /** Write one frame; `batchable`: it may wait for the end of the turn to share a message. */
  write(frame: Out, batchable: boolean): void;
  /** End the connection without an answer: the session is over for it and nothing more is written. */
  refuse(reason: ConnectionRefusal, detail: string): void;
  /** End the connection after what was written. */
  finish(reason: ConnectionEnd): void;
  /** Evaluate a SASL token and call `done` once (a stream without it refuses a sasl frame). */
  authenticate?(token: Uint8Array, done: (outcome: SaslOutcome) => void): void;
  /** Stop reading from the client (an inbound bound is reached); frames already read still arrive. */
  pauseReading(): void;
  /** Read from the client again. */
  resumeReading(): void;
}

/** Why the server ends a connection after what it wrote: the session closed, expired or moved, or the client had not authenticated as required. */
export type ConnectionEnd = "closed" | "expired" | "moved" | "unauthenticated";

export interface ConnectionSessionDeps {
  serverId: number;
  /** Read through on every use: a learner's tree is replaced when it syncs by SNAP or TRUNC. */
  state: { readonly tree: DataTree };
  pipeline: RequestPipeline;
  sessions: SessionOpener;
  /** The server's inbound bounds, shared by every connection of both doors. */
  inbound: InboundBudget;
  /** ZooKeeper's connection token bucket: whether a ConnectRequest may go on (it takes a token); absent: every one may. */
  connectThrottle?: { admit(): boolean };
  /**
   * enforce.auth's schemes: a connection holding no id of one gets its door's answer to any frame
   * but an auth or sasl packet, and ends (ZooKeeper's AuthenticationHelper). Absent or empty:
   * nothing enforced.
   */
  enforcedSchemes?: ReadonlySet<string>;
}

type Phase = "awaiting-connect" | "connecting" | "connected" | "ended";

export class ConnectionSession<In, Out> implements ClientConnection {
  private phase: Phase = "awaiting-connect";
  private held: In[] = [];
  /** Cleared after a frame that is the last one read: later frames are dropped unread. */
  private readingFrames = true;
  /** A sasl frame is being evaluated: what arrives meanwhile is held until it is answered. */
  private authenticatingValue = false;
  private sessionIdValue = 0n;
  private timeoutMsValue = 0;
  /** Requests read and not answered, against the inbound bounds. */
  private readonly inbound: ConnectionInbound;
  authInfo: readonly Id[];

  constructor(
    private readonly deps: ConnectionSessionDeps,
    private readonly codec: SessionCodec<In, Out>,
    private readonly stream: SessionStream<Out>,
    readonly remoteAddress: string,
    readonly certificateIds: readonly Id[],
    initialAuthInfo: readonly Id[],
  ) {
    this.authInfo = initialAuthInfo;
    this.inbound = new ConnectionInbound(deps.inbound);
  }

  get open(): boolean {
    return this.phase !== "ended";
  }

  /** The session's connect has been answered and the connection is live. */
  get connected(): boolean {
    return this.phase === "connected";
  }

  /** Whether a frame that arrives now is read (false once ended, or after a last frame). */
  get reading(): boolean {
    return this.phase !== "ended" && this.readingFrames;
  }

  /** A SASL token of this connection is being evaluated (the door may stop reading its socket meanwhile). */
  get authenticating(): boolean {
    return this.authenticatingValue;
  }

  /** Reading is stopped because an inbound bound is reached (see pauseReading). */
  get throttled(): boolean {
    return this.inbound.paused;
  }

  /** Requests this connection has read and not answered, and their bytes. */
  get outstanding(): { count: number; bytes: number } {
    return { count: this.inbound.count, bytes: this.inbound.bytes };
  }

  /** The session this connection carries (0 until the connect is answered). */
  get sessionId(): bigint {
    return this.sessionIdValue;
  }

  /** The negotiated session timeout (0 until the connect is answered). */
  get timeoutMs(): number {
    return this.timeoutMsValue;
  }

  receive(frame: In): void {
    if (!this.reading) return;
    switch (this.phase) {
      case "awaiting-connect":
        return this.onConnect(this.codec.readConnect(frame));
      case "connecting":
        // A client may pipeline behind its connect, as ZooKeeper allows: hold frames until the session exists.
        return this.hold(frame, "the connect answer");
      case "connected":
        // The door stopped reading: what arrives now is the rest of its last read, held until resumed.
        if (this.inbound.paused) {
          this.held.push(frame);
          return;
        }
        return this.authenticatingValue ? this.hold(frame, "a sasl answer") : this.run(frame);
    }
  }

  sendReply(xid: number, reply: Reply): void {
    if (this.phase === "ended") return;
    this.inbound.answered();
    let answer: ReplyFrame<Out> | undefined;
    try {
      answer = this.codec.reply(xid, reply);
    } catch (error) {
      return this.encodingFailed(error);
    }
    if (answer !== undefined) {
      this.write(answer.frame);
      if (answer.last) return this.end("closed");
    }
    if (this.inbound.paused && !this.inbound.update()) this.resume();
  }

  sendEvent(event: WatchEvent): void {
    if (this.phase === "ended") return;
    let frame: Out;
    try {
      frame = this.codec.event(event);
    } catch (error) {
      return this.encodingFailed(error);
    }
    this.write(frame);
  }

  /** An addAuth on this connection failed (told when it arrives, before its answer goes out in its place). */
  authFailed(): void {
    if (this.codec.authFailureEndsReading) this.readingFrames = false;
  }

  end(reason: ConnectionEnd): void {
    if (this.phase === "ended") return;
    this.gone();
    this.stream.finish(reason);
  }

  /** Refuse the connection: the session's own decision, or the door's (a frame it could not even split). */
  refuse(reason: ConnectionRefusal, detail: string): void {
    if (this.phase === "ended") return;
    this.gone();
    this.stream.refuse(reason, detail);
  }

  /** The connection under the session went away (the client closed it, or it broke). */
  gone(): void {
    if (this.phase === "ended") return;
    const wasConnected = this.phase === "connected";
    this.phase = "ended";
    this.held = [];
    this.inbound.release();
    if (wasConnected) this.deps.pipeline.detach(this.sessionIdValue, this);
  }

  /** An answer that cannot be encoded is a bug of ours: it costs this connection (the client reconnects and retries), never the server. */
  private encodingFailed(error: unknown): void {
    this.refuse("internal", `an answer could not be encoded: ${error instanceof Error ? error.message : String(error)}`);
  }

  /** Keeps a frame until the answer it must wait for is out; beyond the bound the connection is refused. */
  private hold(frame: In, waitingFor: string): void {
    if (this.held.length >= limits.framesHeldBeforeConnectMax) return this.refuse("exhausted", `too many frames before ${waitingFor}`);
    this.held.push(frame);
  }

  /** Runs the held frames in order, until one makes the connection wait again (or ends it). */
  private runHeld(): void {
    while (this.held.length > 0 && this.phase === "connected" && this.readingFrames && !this.authenticatingValue && !this.inbound.paused)
      this.run(this.held.shift()!);
  }

  /** Back under the bounds: read again, starting with what was held. */
  private resume(): void {
    this.stream.resumeReading();
    this.runHeld();
  }

  /** A request was read: it counts until answered, and it may bring the connection to a bound. */
  private submitted(bytes: number, submit: () => void): void {
    this.inbound.read(bytes);
    submit();
    if (this.phase !== "ended" && !this.inbound.paused && this.inbound.update()) this.stream.pauseReading();
  }

  private write(frame: Out): void {
    if (this.phase === "ended") return;
    this.stream.write(frame, this.phase === "connected" && this.codec.answersBatch);
  }

  /** Reads and runs one frame of the established session; a ZkError out of it refuses the connection, never reaches the server. */
  private run(frame: In): void {
    try {
      this.onFrame(this.codec.readFrame(frame));
    } catch (error) {
      if (error instanceof ZkError) return this.refuse("invalid", error.message);
      throw error;
    }
  }

  private onFrame(frame: SessionFrame): void {
    if (this.unauthenticated(frame)) return;
    const pipeline = this.deps.pipeline;
    switch (frame.frame) {
      case "ping":
        // Answered at once: no request sent after it can be answered before it.
        pipeline.touch(this.sessionIdValue);
        this.write(this.codec.pong(this.deps.state.tree.lastProcessedZxid));
        return;
      case "request": {
        if (frame.last === true) this.readingFrames = false;
        const request = frame.request;
        return this.submitted(requestBytes(request), () => pipeline.submit(this.sessionIdValue, this, frame.xid, request));
      }
      case "rejected":
        if (frame.last === true) this.readingFrames = false;
        return this.submitted(REQUEST_OVERHEAD_BYTES, () => pipeline.submitRejected(this.sessionIdValue, this, frame.xid, frame.err));
      case "sasl":
        return this.authenticate(frame.xid, frame.token);
      case "invalid":
        return this.refuse("invalid", frame.detail);
    }
  }

  /**
   * enforce.auth: a frame from a connection holding no id of the enforced schemes gets the door's
   * answer, and the connection ends. Auth and sasl packets pass, and so does a frame that is no
   * request at all (refused as invalid).
   */
  private unauthenticated(frame: SessionFrame): boolean {
    const enforced = this.deps.enforcedSchemes;
    if (enforced === undefined || !authenticationMissing(this.authInfo, enforced) || exemptFromAuthentication(frame)) return false;
    let answer: Out | undefined;
    try {
      answer = this.codec.authenticationRequired(frame);
    } catch (error) {
      this.encodingFailed(error);
      return true;
    }
    if (answer !== undefined) this.write(answer);
    this.readingFrames = false;
    this.end("unauthenticated");
    return true;
  }

  /** A sasl packet: evaluated by the door, answered as soon as it is, with nothing after it read until then. */
  private authenticate(xid: number, token: Uint8Array): void {
    if (this.stream.authenticate === undefined) return this.refuse("invalid", "a sasl packet on a door without SASL");
    this.authenticatingValue = true;
    this.stream.authenticate(token, (outcome) => this.authenticated(xid, outcome));
  }

  private authenticated(xid: number, outcome: SaslOutcome): void {
    this.authenticatingValue = false;
    if (this.phase === "ended") return;
    let { err, close } = outcome;
    if (outcome.ids.length > 0) {
      const authInfo = withAuthIds(this.authInfo, outcome.ids);
      if (authInfo === undefined) [err, close] = [ZkErrorCode.AUTHFAILED, true];
      else this.authInfo = authInfo;
    }
    let answer: Out;
    try {
      if (this.codec.saslAnswer === undefined) throw new Error("this door's codec has no sasl answer");
      answer = this.codec.saslAnswer(xid, err, err === ZkErrorCode.OK ? outcome.token : null);
    } catch (error) {
      return this.encodingFailed(error);
    }
    this.write(answer);
    if (close) {
      this.readingFrames = false;
      return this.end("closed");
    }
    this.runHeld();
  }

  private onConnect(connect: ConnectFrameRead): void {
    if (connect.frame === "invalid") return this.refuse("invalid", connect.detail);
    // ZooKeeper closes the connection (ClientCnxnLimitException) and its client retries.
    if (this.deps.connectThrottle?.admit() === false) return this.refuse("exhausted", "connection throttled: too many connection requests");
    this.phase = "connecting";
    this.deps.sessions.open(connect.request, {
      waiting: () => this.phase === "connecting",
      established: (sessionId, timeoutMs, password, readOnly) => this.establish(sessionId, timeoutMs, password, readOnly),
      expired: () => {
        this.write(this.codec.expired(this.deps.serverId));
        this.end("expired");
      },
      refused: (reason, detail) => this.refuse(REFUSAL_OF_OUTCOME[reason], detail),
    });
  }

  private establish(sessionId: bigint, timeoutMs: number, password: Uint8Array, readOnly: boolean): void {
    this.sessionIdValue = sessionId;
    this.inbound.sessionId = sessionId;
    this.timeoutMsValue = timeoutMs;
    this.phase = "connected";
    this.deps.pipeline.attach(sessionId, this);
    const lastZxid = this.deps.state.tree.lastProcessedZxid;
    this.write(this.codec.established({ sessionId, timeoutMs, password, readOnly, lastZxid, serverId: this.deps.serverId }));
    this.runHeld();
  }
}

/** Frames enforce.auth lets through: auth and sasl packets, and a frame that is no request at all. */
function exemptFromAuthentication(frame: SessionFrame): boolean {
  switch (frame.frame) {
    case "sasl":
      return true;
    case "invalid":
      return frame.xid === undefined;
    case "request":
      return frame.request.op === "addAuth";
    case "rejected":
      return frame.addAuth === true;
    case "ping":
      return false;
  }
}
