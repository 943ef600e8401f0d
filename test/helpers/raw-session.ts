/**
 * The client protocol spoken by hand, bypassing the SDK's own validation: for bad-input tests
 * that must reach the server (invalid paths, garbage frames, requests before connect).
 */
import * as grpc from "@grpc/grpc-js";
import { CLIENT_PROTOCOL_VERSION } from "../../src/common/constants.js";
import { corralClientConstructor, corralServiceDefinition, GRPC_CLIENT_CHANNEL_OPTIONS } from "../../src/protocol/client-wire.js";
import type { ClientFrame, Encodable, Request, Response, ServerFrame } from "./proto-loader-wire.js";

type Call = grpc.ClientDuplexStream<unknown, unknown>;

/** One stream; frames received are queued for `next()`; `status` resolves when the server ends it. */
export class RawStream {
  private readonly received: ServerFrame[] = [];
  private waiter: ((frame: ServerFrame | undefined) => void) | undefined;
  private ended = false;
  readonly status: Promise<grpc.StatusObject>;

  constructor(
    private readonly call: Call,
    private readonly client: grpc.Client,
  ) {
    call.on("data", (frame: ServerFrame) => this.deliver(frame));
    this.status = new Promise((resolve) => {
      call.on("status", (status: grpc.StatusObject) => {
        this.ended = true;
        this.waiter?.(undefined);
        resolve(status);
      });
    });
    call.on("error", () => {});
  }

  /** A batch (protocol 2) is its frames, in order: tests see frames, however they travelled. */
  private deliver(frame: ServerFrame): void {
    if (frame.frame === "batch") {
      for (const inner of frame.batch.frames) this.deliver(inner);
      return;
    }
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w(frame);
    } else this.received.push(frame);
  }

  static open(address: string): RawStream {
    const Ctor = corralClientConstructor();
    const client = new Ctor(address, grpc.credentials.createInsecure(), GRPC_CLIENT_CHANNEL_OPTIONS);
    return new RawStream((client as unknown as { Session(): Call }).Session(), client);
  }

  /** A stream whose frames are raw bytes, to send what no encoder would produce. */
  static openBytes(address: string): RawStream {
    const definition = corralServiceDefinition();
    const session = definition["Session"]!;
    const Ctor = grpc.makeGenericClientConstructor({ Session: { ...session, requestSerialize: (bytes: Buffer) => bytes } }, "corral.client.v1.Corral");
    const client = new Ctor(address, grpc.credentials.createInsecure(), GRPC_CLIENT_CHANNEL_OPTIONS);
    return new RawStream((client as unknown as { Session(): Call }).Session(), client);
  }

  send(frame: Encodable<ClientFrame> | Buffer): void {
    this.call.write(frame);
  }

  /** The next frame, or undefined once the stream has ended. */
  next(): Promise<ServerFrame | undefined> {
    const frame = this.received.shift();
    if (frame) return Promise.resolve(frame);
    if (this.ended) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  /** Connect (new session unless `sessionId` given) and return the connect answer. */
  async connect(options: { sessionId?: string; password?: Uint8Array; timeoutMs?: number; lastZxidSeen?: string } = {}) {
    this.send({
      connect: {
        protocolVersion: CLIENT_PROTOCOL_VERSION,
        timeoutMs: options.timeoutMs ?? 2_000,
        sessionId: options.sessionId ?? "0",
        password: options.password ?? new Uint8Array(0),
        lastZxidSeen: options.lastZxidSeen ?? "0",
      },
    });
    const frame = await this.next();
    if (frame?.frame !== "connect") throw new Error(`expected a connect answer, got ${JSON.stringify(frame)}`);
    return frame.connect;
  }

  /** Send one request and return its response (skipping events). */
  async request(request: Encodable<Request>): Promise<Response> {
    this.send({ request });
    for (;;) {
      const frame = await this.next();
      if (!frame) throw new Error("stream ended before the response");
      if (frame.frame === "response") return frame.response;
    }
  }

  /** Stops reading the stream: HTTP/2 flow control pushes back on the server's writes (a client that does not read). */
  pauseReading(): void {
    this.call.pause();
  }

  resumeReading(): void {
    this.call.resume();
  }

  /** Drop the connection without a close request: the session lives on until it expires. */
  abandon(): void {
    this.call.cancel();
    this.client.close();
  }

  end(): void {
    this.call.end();
    this.client.close();
  }
}
