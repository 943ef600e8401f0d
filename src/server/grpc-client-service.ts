/**
 * The gRPC front door: one bidirectional `Session` stream per client connection (docs/architecture.md §5).
 * Each stream runs the connection session both doors share (src/replica/connection-session.ts)
 * under the gRPC codec (grpc-session-codec.ts); a refusal ends the stream with a gRPC status. Its
 * SaslRequests run the ZooKeeper port's SASL exchange (sasl/door-auth.ts). Nothing
 * a client sends can throw out of here — malformed frames end that stream with INVALID_ARGUMENT and
 * leave every other session alone (contract item 8).
 */
import * as grpc from "@grpc/grpc-js";
import type { Logger } from "pino";
import { hex64 } from "../common/hex.js";
import { FrameOutbox } from "../protocol/frame-outbox.js";
import type { ConnectionOutbound, OutboundBudget } from "../replica/outbound-budget.js";
import type { ConnectionsPerAddress } from "./connections-per-address.js";
import { corralServiceDefinition } from "../protocol/client-wire.js";
import { certificateAuthIds, initialAuthInfo, remoteAddressOfPeer, type CertificateAuthOptions } from "../replica/auth.js";
import { subjectOfPeer } from "./tls.js";
import {
  ConnectionSession,
  type ConnectionEnd,
  type ConnectionRefusal,
  type ConnectionSessionDeps,
  type SaslOutcome,
  type SessionStream,
} from "../replica/connection-session.js";
import { DoorSasl, NO_SASL, type ClientDoorAuth } from "./sasl/door-auth.js";
import { decodeClientFrame, encodeServerFrameBatch, type IncomingFrame } from "./client-frame-codec.js";
import { GrpcSessionCodec, receiveClientFrame, type GrpcConnectionSession } from "./grpc-session-codec.js";

/** How a refused stream ends: FAILED_PRECONDITION tells the client it is ahead of this server. */
const REFUSAL_STATUS: Record<ConnectionRefusal, grpc.status> = {
  unavailable: grpc.status.UNAVAILABLE,
  behind: grpc.status.FAILED_PRECONDITION,
  invalid: grpc.status.INVALID_ARGUMENT,
  exhausted: grpc.status.RESOURCE_EXHAUSTED,
  internal: grpc.status.INTERNAL,
};

export interface ClientServiceDeps extends Omit<ConnectionSessionDeps, "enforcedSchemes"> {
  logger: Logger;
  /** Over TLS: who a verified client certificate makes the super user. */
  certificateAuth?: CertificateAuthOptions;
  /** SASL and the schemes a client must authenticate with; none when absent. */
  auth?: ClientDoorAuth;
  /** maxClientCnxns, counted over every client port (a session stream is a connection here); no limit when absent. */
  connectionsPerAddress?: ConnectionsPerAddress;
  /** connectionUnsentBytesMax: past it a stream whose client does not read is ended (its session stays). */
  unsentBytesMax: number;
  /** globalUnsentBytesMax: what every connection holds unwritten, shared with the ZooKeeper door. */
  outbound: OutboundBudget;
}

/**
 * The Corral service definition with the server's codec (src/server/client-frame-codec.ts, over the
 * generated gen/client.ts): requests decode into the server's records, garbage into MALFORMED
 * instead of an exception inside grpc-js, and answers reach the stream already encoded.
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
      if (!admitAddress(call, deps.connectionsPerAddress)) return;
      new GrpcClientConnection(nextConnectionId++, call, deps);
    },
  };
}

/** maxClientCnxns for a new session stream: past it the stream is refused before anything is read. */
function admitAddress(call: grpc.ServerDuplexStream<IncomingFrame, Buffer>, limit: ConnectionsPerAddress | undefined): boolean {
  if (limit === undefined) return true;
  const address = remoteAddressOfPeer(call.getPeer());
  if (!limit.admit(address)) {
    call.emit("error", { code: grpc.status.RESOURCE_EXHAUSTED, details: `too many connections from ${address} - max is ${limit.maxClientCnxns}` });
    return false;
  }
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    limit.release(address);
  };
  for (const event of ["close", "cancelled", "error"]) call.once(event, release);
  return true;
}

/** One gRPC stream: the stream edge of a connection session read and written by the gRPC codec. */
class GrpcClientConnection implements SessionStream<Buffer> {
  private readonly session: GrpcConnectionSession;
  private readonly logger: Logger;
  private readonly sasl: DoorSasl;
  private ended = false;
  /**
   * Bytes written and not yet taken by HTTP/2 (which stops taking them when the client stops
   * reading), plus those waiting in the outbox: what a client that does not read makes the server
   * hold, bounded by unsentBytesMax.
   */
  private unsentBytes = 0;
  /** The same bytes, in the server's total. */
  private readonly outbound: ConnectionOutbound;
  /** Used once the session speaks protocol 2: answers ready together share a message. */
  private readonly outbox = new FrameOutbox(
    (message, done, frameBytes) => {
      if (this.ended) return done();
      // Its frames counted from when they were queued: only a batch's framing is new. (Counted
      // without a dip, so that the server's total never seems to fall under its bound meanwhile.)
      this.unsent(message.length - frameBytes);
      this.call.write(message, () => {
        this.unsent(-message.length);
        done();
      });
    },
    encodeServerFrameBatch,
    (frame: Buffer) => frame,
  );
  private readonly unsentBytesMax: number;

  constructor(
    readonly id: number,
    private readonly call: grpc.ServerDuplexStream<IncomingFrame, Buffer>,
    deps: ClientServiceDeps,
  ) {
    const peer = call.getPeer();
    this.unsentBytesMax = deps.unsentBytesMax;
    this.outbound = deps.outbound.connection();
    this.logger = deps.logger.child({ connection: id, peer });
    const remoteAddress = remoteAddressOfPeer(peer);
    // Over TLS, a client certificate the server verified is the connection's x509 identity
    // (grpc-js reports a peer certificate only once it is verified).
    const subject = subjectOfPeer(call.getAuthContext().sslPeerCertificate);
    const certificateIds = subject === undefined ? [] : certificateAuthIds(subject, deps.certificateAuth ?? { x509SuperUser: "" });
    if (certificateIds.length > 0) this.logger.debug({ x509: subject }, "client authenticated by its certificate");
    const auth = deps.auth ?? NO_SASL;
    // While a SaslRequest is evaluated the stream is not read: HTTP/2 flow control holds the client back.
    this.sasl = new DoorSasl(auth, this.logger, call);
    const sessionDeps = { ...deps, enforcedSchemes: auth.enforcedSchemes };
    this.session = new ConnectionSession(
      sessionDeps,
      new GrpcSessionCodec(),
      this,
      remoteAddress,
      certificateIds,
      initialAuthInfo(remoteAddress, certificateIds),
    );
    // grpc-js pulls a message from the HTTP/2 stream each time the call's readable side asks for
    // one, and that side reads ahead up to its high-water mark even while paused: one message
    // ahead, not sixteen, is what a paused session then holds.
    setReadAhead(call, 1);
    call.on("data", (frame: IncomingFrame) => receiveClientFrame(this.session, frame));
    call.on("end", () => this.session.end("closed"));
    call.on("error", () => this.onGone());
    call.on("cancelled", () => this.onGone());
    call.on("close", () => this.onGone());
  }

  /** As the ZooKeeper port's: a client that leaves more than unsentBytesMax unread is cut off before more is queued. */
  write(frame: Buffer, batchable: boolean): void {
    if (this.ended) return;
    if (this.unsentBytes > this.unsentBytesMax) return this.session.refuse("exhausted", "the client does not read its answers");
    this.unsent(frame.length);
    if (batchable) this.outbox.push(frame);
    else this.call.write(frame, () => this.unsent(-frame.length));
  }

  /** `bytes` were queued (positive) or taken by HTTP/2 (negative). */
  private unsent(bytes: number): void {
    this.unsentBytes += bytes;
    this.outbound.add(bytes);
  }

  finish(reason: ConnectionEnd): void {
    if (this.ended) return;
    if (reason === "expired" && this.session.sessionId === 0n) this.logger.info("resume refused: session expired, unknown or wrong password");
    else if (reason !== "closed") this.logger.debug({ session: hex64(this.session.sessionId), reason }, "connection ended by server");
    this.outbox.flushAll();
    this.ended = true;
    this.call.end();
  }

  refuse(reason: ConnectionRefusal, details: string): void {
    if (this.ended) return;
    const code = REFUSAL_STATUS[reason];
    if (reason === "internal") this.logger.error({ details }, "an answer could not be encoded");
    this.logger.info({ code: grpc.status[code], details }, "client stream rejected");
    this.ended = true;
    this.call.emit("error", { code, details });
  }

  /** A SaslRequest's token, evaluated by the same exchange as the ZooKeeper port's sasl packets. */
  authenticate(token: Uint8Array, done: (outcome: SaslOutcome) => void): void {
    this.sasl.authenticate(this.session, token, done);
  }

  /** An inbound bound is reached: grpc-js stops pulling from the stream, and HTTP/2 flow control pushes back on the client. */
  pauseReading(): void {
    this.call.pause();
  }

  resumeReading(): void {
    if (!this.ended) this.call.resume();
  }

  private onGone(): void {
    this.ended = true;
    this.outbox.discard();
    this.outbound.release();
    this.sasl.dispose();
    this.session.gone();
  }
}

/**
 * Node's Readable has no public setter for its high-water mark, and grpc-js makes the call's
 * stream with the object-mode default (16 messages, each up to the message size bound).
 */
function setReadAhead(call: grpc.ServerDuplexStream<IncomingFrame, Buffer>, messages: number): void {
  const state = (call as unknown as { _readableState?: { highWaterMark?: number } })._readableState;
  if (state !== undefined && typeof state.highWaterMark === "number") state.highWaterMark = messages;
}
