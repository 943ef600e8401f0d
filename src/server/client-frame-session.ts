/**
 * One client stream of corral's own protocol, without the stream: the connect exchange (new or
 * resumed session, through the replica's SessionOpener), frames a client pipelines behind its
 * connect, pings, and requests into the pipeline, answered with encoded frames. The gRPC door binds
 * it to a bidi stream (grpc-client-service.ts); the simulator binds it to its network, so the
 * server side of every simulated client is this code.
 */
import { ZkError, ZkErrorCode } from "../common/errors.js";
import { CLIENT_PROTOCOL_BATCHES_SINCE, CLIENT_PROTOCOL_VERSION } from "../common/constants.js";
import type { DataTree } from "../store/data-tree.js";
import type { Id, WatchEvent } from "../store/types.js";
import type { SessionOpener } from "../replica/session-opener.js";
import type { ClientConnection, RequestPipeline } from "../replica/pipeline.js";
import { EMPTY_BODY, type Reply } from "../replica/requests.js";
import { authenticationMissing } from "../replica/auth.js";
import {
  encodeConnectResponseFrame,
  encodeEventFrame,
  encodePongFrame,
  encodeResponseFrame,
  MALFORMED,
  type ConnectFrame,
  type DecodedClientFrame,
  type IncomingFrame,
} from "./client-frame-codec.js";

/** Frames a client may send after connect and before its answer; beyond it the stream is cut. */
const HELD_FRAMES_MAX = 1024;
const EMPTY = new Uint8Array(0);

/** Why a stream is refused; each door says it in its own terms (gRPC: a status code). */
export type FrameRefusal = "unavailable" | "behind" | "invalid" | "exhausted" | "internal";

const REFUSAL_OF_OUTCOME = { "not-serving": "unavailable", "not-created": "unavailable", behind: "behind" } as const;

/** What a frame session needs of the stream under it. */
export interface FrameStream {
  /**
   * Send one encoded frame. `batchable` once the session speaks a protocol that batches answers
   * (the door may hold it for the end of the event-loop turn); false for the connect exchange.
   */
  write(frame: Buffer, batchable: boolean): void;
  /** Refuse the stream: the session is over for this stream and nothing more is written. */
  refuse(reason: FrameRefusal, details: string): void;
  /** End the stream after what was written (the server ended the session's connection). */
  finish(reason: "closed" | "expired" | "moved"): void;
}

export interface FrameSessionDeps {
  serverId: number;
  /** Read through on every use: a learner's tree is replaced when it syncs by SNAP or TRUNC. */
  state: { readonly tree: DataTree };
  pipeline: RequestPipeline;
  sessions: SessionOpener;
  /**
   * enforce.auth's schemes (src/server/sasl/sasl-config.ts): a client holding no id of one is
   * answered SESSIONCLOSEDREQUIRESASLAUTH for any request but addAuth, and its stream ends, as on
   * the ZooKeeper port. This door has no SASL, so a `sasl`-only policy turns every client away.
   */
  enforcedSchemes?: ReadonlySet<string>;
}

type Phase = "awaiting-connect" | "connecting" | "connected" | "ended";

export class ClientFrameSession implements ClientConnection {
  private phase: Phase = "awaiting-connect";
  private heldFrames: DecodedClientFrame[] = [];
  private sessionIdValue = 0n;
  /** The version settled in the connect exchange: the lower of the client's and ours. */
  private protocolVersion = CLIENT_PROTOCOL_VERSION;
  authInfo: readonly Id[];

  constructor(
    private readonly deps: FrameSessionDeps,
    private readonly stream: FrameStream,
    readonly remoteAddress: string,
    readonly certificateIds: readonly Id[],
    initialAuthInfo: readonly Id[],
  ) {
    this.authInfo = initialAuthInfo;
  }

  get open(): boolean {
    return this.phase !== "ended";
  }

  /** The session this stream carries (0 until the connect is answered). */
  get sessionId(): bigint {
    return this.sessionIdValue;
  }

  sendReply(xid: number, reply: Reply): void {
    this.send(() => encodeResponseFrame(xid, reply));
  }

  sendEvent(event: WatchEvent): void {
    this.send(() => encodeEventFrame(event));
  }

  end(reason: "closed" | "expired" | "moved"): void {
    if (this.phase === "ended") return;
    this.gone();
    this.stream.finish(reason);
  }

  /** The stream under the session went away (the client closed it, or it broke). */
  gone(): void {
    if (this.phase === "ended") return;
    const wasConnected = this.phase === "connected";
    this.phase = "ended";
    if (wasConnected) this.deps.pipeline.detach(this.sessionIdValue, this);
  }

  receive(frame: IncomingFrame): void {
    if (this.phase === "ended") return;
    if (frame === MALFORMED) return this.refuse("invalid", "malformed frame");
    if (frame.frame === "batch") {
      for (const inner of frame.frames) this.receive(inner);
      return;
    }
    try {
      switch (this.phase) {
        case "awaiting-connect":
          if (frame.frame !== "connect") return this.refuse("invalid", "the first frame must be connect");
          return this.onConnect(frame);
        case "connecting":
          // A client may pipeline behind its connect, as ZooKeeper allows: hold frames until the session exists.
          if (this.heldFrames.length >= HELD_FRAMES_MAX) return this.refuse("exhausted", "too many frames before the connect answer");
          this.heldFrames.push(frame);
          return;
        case "connected":
          return this.onSessionFrame(frame);
      }
    } catch (error) {
      if (error instanceof ZkError) return this.refuse("invalid", error.message);
      throw error;
    }
  }

  /**
   * Encodes and sends one answer. An answer that cannot be encoded is a bug of ours: it costs this
   * stream (the client reconnects and retries), never the server.
   */
  private send(encode: () => Buffer): void {
    if (this.phase === "ended") return;
    let frame: Buffer;
    try {
      frame = encode();
    } catch (error) {
      return this.refuse("internal", `an answer could not be encoded: ${error instanceof Error ? error.message : String(error)}`);
    }
    this.write(frame);
  }

  private write(frame: Buffer): void {
    if (this.phase === "ended") return;
    this.stream.write(frame, this.phase === "connected" && this.protocolVersion >= CLIENT_PROTOCOL_BATCHES_SINCE);
  }

  private refuse(reason: FrameRefusal, details: string): void {
    if (this.phase === "ended") return;
    this.gone();
    this.stream.refuse(reason, details);
  }

  private onSessionFrame(frame: DecodedClientFrame): void {
    const pipeline = this.deps.pipeline;
    const enforced = this.deps.enforcedSchemes;
    if (enforced !== undefined && frame.frame !== "connect" && authenticationMissing(this.authInfo, enforced)) {
      if (frame.frame !== "request" || frame.request.op !== "addAuth") {
        if (frame.frame !== "ping") this.sendReply(frame.xid, { err: ZkErrorCode.SESSIONCLOSEDREQUIRESASLAUTH, zxid: 0, body: EMPTY_BODY });
        return this.end("closed");
      }
    }
    switch (frame.frame) {
      case "ping":
        pipeline.touch(this.sessionIdValue);
        this.write(encodePongFrame(this.deps.state.tree.lastProcessedZxid));
        return;
      case "request":
        return pipeline.submit(this.sessionIdValue, this, frame.xid, frame.request);
      case "rejected":
        // Decoded, but not runnable (unknown mode, ACL entry without an id, no operation...):
        // answered with its error in its place in the session's order.
        return pipeline.submitRejected(this.sessionIdValue, this, frame.xid, frame.err);
      case "connect":
        return this.refuse("invalid", "connect on an established session");
    }
  }

  private onConnect(connect: ConnectFrame): void {
    // A newer client is answered in our version and speaks it from then on (it knows every older one).
    this.protocolVersion = Math.min(connect.protocolVersion, CLIENT_PROTOCOL_VERSION);
    // Any 64-bit zxid is well-formed (one beyond this server means it is behind); a negative one is not.
    if (connect.lastZxidSeen < 0n) throw new ZkError("BADARGUMENTS", `bad zxid ${connect.lastZxidSeen}`);
    this.phase = "connecting";
    const request = {
      sessionId: connect.sessionId,
      password: connect.password,
      requestedTimeoutMs: connect.timeoutMs,
      lastZxidSeen: connect.lastZxidSeen,
      // An old client never sends the field: it reads false, and such a client is never served read-only.
      readOnlyAllowed: connect.readOnlyAllowed,
    };
    this.deps.sessions.open(request, {
      waiting: () => this.phase === "connecting",
      established: (sessionId, timeoutMs, password, readOnly) => this.establish(sessionId, timeoutMs, password, readOnly),
      expired: () => this.refuseExpired(),
      refused: (reason, detail) => this.refuse(REFUSAL_OF_OUTCOME[reason], detail),
    });
  }

  /** ZooKeeper's answer to a resume of a session that is gone: timeout 0, then the stream ends. */
  private refuseExpired(): void {
    this.write(
      encodeConnectResponseFrame({
        protocolVersion: this.protocolVersion,
        timeoutMs: 0,
        sessionId: 0n,
        password: EMPTY,
        err: ZkErrorCode.SESSIONEXPIRED,
        lastZxid: 0,
        serverId: this.deps.serverId,
        readOnly: false,
      }),
    );
    this.end("expired");
  }

  private establish(sessionId: bigint, timeoutMs: number, password: Uint8Array, readOnly: boolean): void {
    this.sessionIdValue = sessionId;
    this.phase = "connected";
    this.deps.pipeline.attach(sessionId, this);
    this.write(
      encodeConnectResponseFrame({
        protocolVersion: this.protocolVersion,
        timeoutMs,
        sessionId,
        password,
        err: 0,
        lastZxid: this.deps.state.tree.lastProcessedZxid,
        serverId: this.deps.serverId,
        readOnly,
      }),
    );
    const held = this.heldFrames;
    this.heldFrames = [];
    for (const frame of held) this.receive(frame);
  }
}
