/**
 * A bare ZooKeeper-protocol client for tests of corral's ZooKeeper port: raw frames over a socket,
 * encoded with the server's own jute records (the independent clients — zkCli.sh, cli_mt,
 * node-zookeeper-client — are exercised by their own tests). It exists to send what real clients
 * never would: pipelined requests, chosen xids, garbage, a resumed session id.
 */
import { connect, type Socket } from "node:net";
import { connect as connectTls, type ConnectionOptions } from "node:tls";
import { encodeFrame, FrameSplitter } from "../../src/server/zk-wire/frames.js";
import { JuteReader } from "../../src/server/zk-wire/jute.js";
import {
  ConnectRequest,
  ConnectResponse,
  decodeRecord,
  encodeRecord,
  ReplyHeader,
  RequestHeader,
  WatcherEvent,
  Xid,
  type JuteCodec,
} from "../../src/server/zk-wire/records.js";
import { JuteWriter } from "../../src/server/zk-wire/jute.js";

export interface HandshakeOptions {
  timeoutMs?: number;
  resume?: { sessionId: bigint; password: Uint8Array };
  lastZxidSeen?: bigint;
  /** The ConnectRequest's readOnly flag: the client accepts a read-only server (ZooKeeper's canBeReadOnly). */
  readOnly?: boolean;
}

export interface JuteReply {
  header: ReplyHeader;
  /** The bytes after the header. */
  body: Uint8Array;
}

/** The client takes replies of any size: the server's jute.maxbuffer bounds what it reads, not what it sends. */
const REPLY_FRAME_MAX_BYTES = 0x7fffffff;

export class JuteClient {
  private readonly splitter = new FrameSplitter(REPLY_FRAME_MAX_BYTES);
  private readonly waiting = new Map<number, (reply: JuteReply) => void>();
  private connectAnswer: ((response: ConnectResponse) => void) | undefined;
  private nextXid = 1;
  readonly events: WatcherEvent[] = [];
  /** Settles when the server closes the connection. */
  readonly closed: Promise<void>;
  response: ConnectResponse | undefined;

  private constructor(private readonly socket: Socket) {
    this.closed = new Promise((resolve) => socket.once("close", () => resolve()));
    socket.on("error", () => undefined);
    socket.on("data", (chunk: Buffer) => {
      for (const frame of this.splitter.push(chunk)) this.onFrame(frame);
    });
  }

  /** Opens a TCP connection without sending anything. */
  static async open(address: string): Promise<JuteClient> {
    const [host, port] = address.split(":") as [string, string];
    const socket = connect({ host, port: Number(port) });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", () => resolve());
      socket.once("error", reject);
    });
    socket.setNoDelay(true);
    return new JuteClient(socket);
  }

  /** Opens a TLS connection (a secure ZooKeeper port) without sending anything; rejects if the handshake fails. */
  static async openTls(address: string, tls: ConnectionOptions): Promise<JuteClient> {
    const [host, port] = address.split(":") as [string, string];
    const socket = connectTls({ host, port: Number(port), ...tls });
    await new Promise<void>((resolve, reject) => {
      socket.once("secureConnect", () => resolve());
      socket.once("error", reject);
    });
    socket.setNoDelay(true);
    return new JuteClient(socket);
  }

  /** Opens a session (new, or `resume`d) and waits for the ConnectResponse; over TLS with `tls`. */
  static async connect(address: string, options: HandshakeOptions & { tls?: ConnectionOptions } = {}): Promise<JuteClient> {
    const client = options.tls === undefined ? await JuteClient.open(address) : await JuteClient.openTls(address, options.tls);
    await client.handshake(options);
    return client;
  }

  async handshake(options: HandshakeOptions = {}): Promise<ConnectResponse> {
    const answered = new Promise<ConnectResponse>((resolve) => (this.connectAnswer = resolve));
    this.sendRaw(
      encodeFrame(
        encodeRecord(ConnectRequest, {
          protocolVersion: 0,
          lastZxidSeen: options.lastZxidSeen ?? 0n,
          timeOut: options.timeoutMs ?? 10_000,
          sessionId: options.resume?.sessionId ?? 0n,
          passwd: options.resume?.password ?? new Uint8Array(16),
          readOnly: options.readOnly ?? false,
        }),
      ),
    );
    this.response = await Promise.race([answered, this.closed.then(() => Promise.reject(new Error("closed before the connect answer")))]);
    return this.response;
  }

  /** Sends a request with a fresh xid (or `xid`) and waits for its reply. */
  request<T>(type: number, codec: JuteCodec<T> | undefined, body: T, xid = this.nextXid++): Promise<JuteReply> {
    const writer = new JuteWriter();
    RequestHeader.write(writer, { xid, type });
    if (codec !== undefined) codec.write(writer, body);
    const answered = new Promise<JuteReply>((resolve) => this.waiting.set(xid, resolve));
    this.sendRaw(encodeFrame(writer.toBytes()));
    return Promise.race([answered, this.closed.then(() => Promise.reject(new Error(`closed before the reply to xid ${xid}`)))]);
  }

  sendRaw(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  /** Stops reading from the socket: TCP pushes back on the server's writes (a client that does not read). */
  pauseReading(): void {
    this.socket.pause();
  }

  resumeReading(): void {
    this.socket.resume();
  }

  close(): Promise<void> {
    this.socket.destroy();
    return this.closed;
  }

  private onFrame(frame: Uint8Array): void {
    if (this.connectAnswer !== undefined) {
      const answer = this.connectAnswer;
      this.connectAnswer = undefined;
      answer(decodeRecord(ConnectResponse, frame));
      return;
    }
    const reader = new JuteReader(frame);
    const header = ReplyHeader.read(reader);
    const body = frame.subarray(frame.byteLength - reader.remainingBytes);
    if (header.xid === Xid.notification) {
      this.events.push(decodeRecord(WatcherEvent, body));
      return;
    }
    const resolve = this.waiting.get(header.xid);
    this.waiting.delete(header.xid);
    resolve?.({ header, body });
  }
}
