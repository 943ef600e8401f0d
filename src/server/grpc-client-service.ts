/**
 * The gRPC front door: one bidirectional `Session` stream per client connection (DESIGN.md §5).
 * It decodes frames into the server's records and hands them to the request pipeline; nothing a
 * client sends can throw out of here — malformed frames end that stream with INVALID_ARGUMENT and
 * leave every other session alone (contract item 8).
 */
import * as grpc from "@grpc/grpc-js";
import type { Logger } from "pino";
import { ZkError, ZkErrorCode } from "../common/errors.js";
import { CLIENT_PROTOCOL_BATCHES_SINCE, CLIENT_PROTOCOL_VERSION } from "../common/constants.js";
import { FrameOutbox } from "../protocol/frame-outbox.js";
import { corralServiceDefinition } from "../protocol/client-wire.js";
import type { DataTree } from "../store/data-tree.js";
import type { Id, WatchEvent } from "../store/types.js";
import { certificateAuthIds, initialAuthInfo, remoteAddressOfPeer, type CertificateAuthOptions } from "../replica/auth.js";
import { subjectOfPeer } from "./tls.js";
import type { SessionOpener } from "../replica/session-opener.js";
import type { ClientConnection, RequestPipeline } from "../replica/pipeline.js";
import type { Reply } from "../replica/requests.js";
import {
  decodeClientFrame,
  encodeConnectResponseFrame,
  encodeEventFrame,
  encodePongFrame,
  encodeResponseFrame,
  encodeServerFrameBatch,
  MALFORMED,
  type ConnectFrame,
  type DecodedClientFrame,
  type IncomingFrame,
} from "./client-frame-codec.js";

/** How a refused connect ends the stream: FAILED_PRECONDITION tells the client it is ahead of this server. */
const REFUSAL_STATUS = {
  "not-serving": grpc.status.UNAVAILABLE,
  "not-created": grpc.status.UNAVAILABLE,
  behind: grpc.status.FAILED_PRECONDITION,
} as const;

/** Frames a client may send after connect and before its answer; beyond it the stream is cut. */
const HELD_FRAMES_MAX = 1024;
const EMPTY = new Uint8Array(0);

export interface ClientServiceDeps {
  serverId: number;
  /** Read through on every use: a learner's tree is replaced when it syncs by SNAP or TRUNC. */
  state: { readonly tree: DataTree };
  pipeline: RequestPipeline;
  sessions: SessionOpener;
  logger: Logger;
  /** Over TLS: who a verified client certificate makes the super user. */
  certificateAuth?: CertificateAuthOptions;
}

/**
 * The Corral service definition with the server's own codec (src/server/client-frame-codec.ts):
 * requests decode straight into the server's records, garbage into MALFORMED instead of an
 * exception inside grpc-js, and answers reach the stream already encoded.
 */
export function clientServiceDefinition(): grpc.ServiceDefinition {
  const base = corralServiceDefinition();
  const session = base["Session"]!;
  return {
    Session: {
      ...session,
      requestDeserialize: decodeClientFrame,
      responseSerialize: (frame: Buffer): Buffer => frame,
    },
  };
}

export function clientServiceHandlers(deps: ClientServiceDeps): grpc.UntypedServiceImplementation {
  let nextConnectionId = 1;
  return {
    Session: (call: grpc.ServerDuplexStream<IncomingFrame, Buffer>) => {
      new GrpcClientConnection(nextConnectionId++, call, deps);
    },
  };
}

type ConnectionPhase = "awaiting-connect" | "connecting" | "connected" | "ended";

class GrpcClientConnection implements ClientConnection {
  private phase: ConnectionPhase = "awaiting-connect";
  private heldFrames: DecodedClientFrame[] = [];
  private sessionId = 0n;
  private readonly logger: Logger;
  /** The version settled in the connect exchange: the lower of the client's and ours. */
  private protocolVersion = CLIENT_PROTOCOL_VERSION;
  readonly remoteAddress: string;
  readonly certificateIds: readonly Id[];
  authInfo: readonly Id[];
  /** Used once the session speaks protocol 2: answers of one event-loop turn share a message. */
  private readonly outbox = new FrameOutbox((message) => {
    if (this.phase !== "ended") this.call.write(message);
  }, encodeServerFrameBatch);

  constructor(
    readonly id: number,
    private readonly call: grpc.ServerDuplexStream<IncomingFrame, Buffer>,
    private readonly deps: ClientServiceDeps,
  ) {
    const peer = call.getPeer();
    this.logger = deps.logger.child({ connection: id, peer });
    this.remoteAddress = remoteAddressOfPeer(peer);
    // Over TLS, a client certificate the server verified is the connection's x509 identity
    // (grpc-js reports a peer certificate only once it is verified).
    const subject = subjectOfPeer(call.getAuthContext().sslPeerCertificate);
    this.certificateIds = subject === undefined ? [] : certificateAuthIds(subject, deps.certificateAuth ?? { x509SuperUser: "" });
    if (this.certificateIds.length > 0) this.logger.debug({ x509: subject }, "client authenticated by its certificate");
    this.authInfo = initialAuthInfo(this.remoteAddress, this.certificateIds);
    call.on("data", (frame: IncomingFrame) => this.onFrame(frame));
    call.on("end", () => this.end("closed"));
    call.on("error", () => this.onGone());
    call.on("cancelled", () => this.onGone());
    call.on("close", () => this.onGone());
  }

  get open(): boolean {
    return this.phase !== "ended";
  }

  sendReply(xid: number, reply: Reply): void {
    this.send(() => encodeResponseFrame(xid, reply), { xid });
  }

  sendEvent(event: WatchEvent): void {
    this.send(() => encodeEventFrame(event), { event: event.type, path: event.path });
  }

  /**
   * Encodes and sends one answer. An answer that cannot be encoded is a bug of ours: it costs this
   * stream (the client reconnects and retries), never the server.
   */
  private send(encode: () => Buffer, what: Record<string, unknown>): void {
    if (this.phase === "ended") return;
    let frame: Buffer;
    try {
      frame = encode();
    } catch (error) {
      this.logger.error({ err: error, ...what }, "an answer could not be encoded");
      return this.reject(grpc.status.INTERNAL, "an answer could not be encoded");
    }
    this.write(frame);
  }

  end(reason: "closed" | "expired" | "moved"): void {
    if (this.phase === "ended") return;
    if (reason !== "closed") this.logger.debug({ session: hex(this.sessionId), reason }, "connection ended by server");
    this.outbox.flush();
    this.onGone();
    this.call.end();
  }

  private write(frame: Buffer): void {
    if (this.phase === "ended") return;
    if (this.phase !== "connected" || this.protocolVersion < CLIENT_PROTOCOL_BATCHES_SINCE) {
      this.call.write(frame);
      return;
    }
    this.outbox.push(frame);
  }

  private onGone(): void {
    if (this.phase === "ended") return;
    const wasConnected = this.phase === "connected";
    this.phase = "ended";
    if (wasConnected) this.deps.pipeline.detach(this.sessionId, this);
  }

  private reject(code: grpc.status, details: string): void {
    if (this.phase === "ended") return;
    this.logger.info({ code: grpc.status[code], details }, "client stream rejected");
    this.onGone();
    this.call.emit("error", { code, details });
  }

  private onFrame(frame: IncomingFrame): void {
    if (this.phase === "ended") return;
    if (frame === MALFORMED) return this.reject(grpc.status.INVALID_ARGUMENT, "malformed frame");
    if (frame.frame === "batch") {
      for (const inner of frame.frames) this.onFrame(inner);
      return;
    }
    try {
      switch (this.phase) {
        case "awaiting-connect":
          if (frame.frame !== "connect") return this.reject(grpc.status.INVALID_ARGUMENT, "the first frame must be connect");
          return this.onConnect(frame);
        case "connecting":
          // A client may pipeline behind its connect, as ZooKeeper allows: hold frames until the session exists.
          if (this.heldFrames.length >= HELD_FRAMES_MAX) return this.reject(grpc.status.RESOURCE_EXHAUSTED, "too many frames before the connect answer");
          this.heldFrames.push(frame);
          return;
        case "connected":
          return this.onSessionFrame(frame);
      }
    } catch (error) {
      if (error instanceof ZkError) return this.reject(grpc.status.INVALID_ARGUMENT, error.message);
      throw error;
    }
  }

  private onSessionFrame(frame: DecodedClientFrame): void {
    const pipeline = this.deps.pipeline;
    switch (frame.frame) {
      case "ping":
        pipeline.touch(this.sessionId);
        this.write(encodePongFrame(this.deps.state.tree.lastProcessedZxid));
        return;
      case "request":
        return pipeline.submit(this.sessionId, this, frame.xid, frame.request);
      case "rejected":
        // Decoded, but not runnable (unknown mode, ACL entry without an id, no operation...):
        // answered with its error in its place in the session's order.
        return pipeline.submitRejected(this.sessionId, this, frame.xid, frame.err);
      case "connect":
        return this.reject(grpc.status.INVALID_ARGUMENT, "connect on an established session");
    }
  }

  private onConnect(connect: ConnectFrame): void {
    // A newer client is answered in our version and speaks it from then on (it knows every older one).
    this.protocolVersion = Math.min(connect.protocolVersion, CLIENT_PROTOCOL_VERSION);
    // Any 64-bit zxid is well-formed (one beyond this server means it is behind); a negative one is not.
    if (connect.lastZxidSeen < 0n) throw new ZkError("BADARGUMENTS", `bad zxid ${connect.lastZxidSeen}`);
    this.phase = "connecting";
    const request = { sessionId: connect.sessionId, password: connect.password, requestedTimeoutMs: connect.timeoutMs, lastZxidSeen: connect.lastZxidSeen };
    this.deps.sessions.open(request, (outcome) => {
      if (this.phase !== "connecting") return;
      switch (outcome.kind) {
        case "established":
          return this.establish(outcome.sessionId, outcome.timeoutMs, outcome.password);
        case "expired":
          this.logger.info({ session: hex(connect.sessionId) }, "resume refused: session expired, unknown or wrong password");
          return this.refuseExpired();
        case "refused":
          return this.reject(REFUSAL_STATUS[outcome.reason], outcome.detail);
      }
    });
  }

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
      }),
    );
    this.end("expired");
  }

  private establish(sessionId: bigint, timeoutMs: number, password: Uint8Array): void {
    this.sessionId = sessionId;
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
      }),
    );
    const held = this.heldFrames;
    this.heldFrames = [];
    for (const frame of held) this.onFrame(frame);
  }
}

function hex(id: bigint): string {
  return "0x" + BigInt.asUintN(64, id).toString(16);
}
