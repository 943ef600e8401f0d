/**
 * The host that runs a session machine for real (session-io.ts): one gRPC channel and one
 * bidirectional stream per connection (docs/architecture.md §5), frames encoded here and, once the server
 * speaks protocol 2, the frames of one event-loop turn sent as one batch; and the machine's
 * timers as Node timers. It decides nothing: it carries out the machine's transport effects and
 * reports every frame that arrives, every stream that ends and every timer that fires.
 */
import * as grpc from "@grpc/grpc-js";
import { ZkError } from "../common/errors.js";
import { GRPC_CLIENT_CHANNEL_OPTIONS, corralServiceDefinition } from "../protocol/client-wire.js";
import type { ClientFrame } from "../../gen/client.js";
import { FrameOutbox } from "../protocol/frame-outbox.js";
import { decodeServerFrame, encodeClientFrame, encodeClientFrameBatch } from "./codec.js";
import type { DecodedServerFrame } from "./codec.js";
import { hostAddress, type HostPort } from "./connect-string.js";
import type { SessionInputs, SessionTimer, TransportEffect } from "./session-io.js";
import type { ClientTlsOptions, Pem } from "./types.js";

/** How the channels reach the servers: plain text, TLS, or credentials the caller built. */
export interface GrpcChannelSettings {
  credentials: grpc.ChannelCredentials;
  /** TLS's servername, as the channel options that make grpc-js check and send it. */
  channelOptions: grpc.ChannelOptions;
}

/** Checks the TLS options (BADARGUMENTS) and builds the channel settings from them. */
export function grpcChannelSettings(tls: ClientTlsOptions | undefined, credentials: grpc.ChannelCredentials | undefined): GrpcChannelSettings {
  return {
    credentials: credentials ?? (tls === undefined ? grpc.credentials.createInsecure() : tlsCredentials(tls)),
    channelOptions: tls?.servername === undefined ? {} : { "grpc.ssl_target_name_override": tls.servername, "grpc.default_authority": tls.servername },
  };
}

function pemBuffer(value: Pem | undefined, name: string): Buffer | null {
  if (value === undefined) return null;
  if (typeof value === "string") return Buffer.from(value, "utf8");
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new ZkError("BADARGUMENTS", `tls.${name} must be PEM text or bytes`);
}

function tlsCredentials(tls: ClientTlsOptions): grpc.ChannelCredentials {
  if ((tls.cert === undefined) !== (tls.key === undefined)) throw new ZkError("BADARGUMENTS", "tls.cert and tls.key go together");
  if (tls.servername !== undefined && (typeof tls.servername !== "string" || tls.servername === ""))
    throw new ZkError("BADARGUMENTS", "tls.servername must be a host name");
  try {
    return grpc.credentials.createSsl(pemBuffer(tls.ca, "ca"), pemBuffer(tls.key, "key"), pemBuffer(tls.cert, "cert"));
  } catch (error) {
    if (error instanceof ZkError) throw error;
    throw new ZkError("BADARGUMENTS", `tls: ${(error as Error).message}`);
  }
}

interface GrpcConnection {
  readonly channel: grpc.Client;
  readonly call: grpc.ClientDuplexStream<Buffer, DecodedServerFrame>;
  readonly outbox: FrameOutbox<ClientFrame>;
}

export class GrpcTransport {
  private readonly methodPath = (corralServiceDefinition()["Session"] as grpc.MethodDefinition<unknown, unknown>).path;
  /** Open connections by the session's number for them; a closed one is gone from here at once. */
  private readonly connections = new Map<number, GrpcConnection>();
  private readonly timers = new Map<SessionTimer, NodeJS.Timeout>();

  constructor(
    private readonly settings: GrpcChannelSettings,
    private readonly session: SessionInputs,
  ) {}

  execute(effect: TransportEffect): void {
    switch (effect.type) {
      case "open":
        this.open(effect.connection, effect.host);
        return;
      case "send":
        this.send(effect.connection, effect.frame, effect.batchable);
        return;
      case "close":
        this.close(effect.connection);
        return;
      case "armTimer":
        this.arm(effect.timer, effect.delayMs);
        return;
      case "cancelTimer":
        this.cancel(effect.timer);
        return;
    }
  }

  private open(id: number, host: HostPort): void {
    const channel = new grpc.Client(hostAddress(host), this.settings.credentials, {
      ...GRPC_CLIENT_CHANNEL_OPTIONS,
      ...this.settings.channelOptions,
      // One TCP connection per session, as ZooKeeper: a dead connection is discarded with its channel.
      "grpc.use_local_subchannel_pool": 1,
    });
    // Frames reach grpc-js already encoded (send), so that several can share one message.
    const call = channel.makeBidiStreamRequest<Buffer, DecodedServerFrame>(this.methodPath, (bytes: Buffer) => bytes, decodeServerFrame);
    const connection: GrpcConnection = {
      channel,
      call,
      outbox: new FrameOutbox(
        (message, done) => {
          // A batch still queued when its connection closed is dropped with it.
          if (this.connections.get(id) === connection) call.write(message, done);
          else done();
        },
        encodeClientFrameBatch,
        encodeClientFrame,
      ),
    };
    this.connections.set(id, connection);
    call.on("data", (frame: DecodedServerFrame) => this.session.receive(id, frame));
    call.on("error", (err: grpc.ServiceError) => this.session.lost(id, { serverBehind: err.code === grpc.status.FAILED_PRECONDITION, message: err.message }));
    call.on("end", () => this.session.lost(id, { serverBehind: false, message: undefined }));
  }

  /**
   * Every frame leaves through here, in order. A `batchable` frame waits in the outbox, unencoded,
   * for the end of this run of microtasks or for the write before it, so that a burst of requests
   * shares one message and the stream takes no more than HTTP/2 flow control lets through.
   */
  private send(id: number, frame: ClientFrame, batchable: boolean): void {
    const connection = this.connections.get(id);
    if (connection === undefined) return;
    if (batchable) {
      connection.outbox.push(frame);
      return;
    }
    // Whatever is queued went first.
    connection.outbox.flushAll();
    connection.call.write(encodeClientFrame(frame));
  }

  private close(id: number): void {
    const connection = this.connections.get(id);
    if (connection === undefined) return;
    this.connections.delete(id);
    connection.outbox.discard();
    try {
      connection.call.cancel();
    } catch {
      // already finished
    }
    connection.channel.close();
  }

  private arm(timer: SessionTimer, delayMs: number): void {
    this.cancel(timer);
    const handle = setTimeout(() => {
      this.timers.delete(timer);
      this.session.timerFired(timer);
    }, delayMs);
    // The liveness tick and the read-write probes never keep the process alive; a connect or close in progress does.
    if (timer === "tick" || timer === "probe") handle.unref();
    this.timers.set(timer, handle);
  }

  private cancel(timer: SessionTimer): void {
    const handle = this.timers.get(timer);
    if (handle === undefined) return;
    clearTimeout(handle);
    this.timers.delete(timer);
  }
}
