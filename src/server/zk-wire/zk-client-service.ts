/**
 * The ZooKeeper front door: a TCP port speaking Apache ZooKeeper 3.8's own client protocol, so
 * that zkCli.sh, the C client, Curator, kazoo and node-zookeeper-client use corral unchanged.
 *
 * Each connection runs the same connection session as the gRPC door's streams
 * (src/replica/connection-session.ts) under the jute codec (zk-session-codec.ts): a session opened
 * through either door is the same session, ordered, answered and expired the same way. This file is
 * the listener and the socket edge. A connection's first four bytes may be a four-letter word
 * instead of a frame length; it is answered as text and closed. A malformed frame, an oversized
 * length or a record that does not decode closes that connection with one log line; nothing a
 * client sends can throw out of here or touch another connection.
 *
 * The same door serves ZooKeeper's secureClientPort: the connection handling is the same, over
 * node:tls. A client certificate the server verified gives the connection its x509 id (and the
 * super id for the configured x509 super user) before its first byte is read, as ZooKeeper's
 * Netty secure port does once the handshake is done.
 */
import { createServer, type Server, type Socket } from "node:net";
import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import type { Logger } from "pino";
import { hex64 } from "../../common/hex.js";
import type { Id } from "../../store/types.js";
import { certificateAuthIds, initialAuthInfo, remoteAddressOfPeer, type CertificateAuthOptions } from "../../replica/auth.js";
import {
  ConnectionSession,
  type ConnectionSessionDeps,
  type ConnectionEnd,
  type ConnectionRefusal,
  type SaslOutcome,
  type SessionStream,
} from "../../replica/connection-session.js";
import type { ConnectionsPerAddress } from "../connections-per-address.js";
import type { ConnectionOutbound, OutboundBudget } from "../../replica/outbound-budget.js";
import { DoorSasl, NO_SASL, type ClientDoorAuth } from "../sasl/door-auth.js";
import type { TlsClientAuth } from "../config.js";
import { subjectOfPeer, tlsServerOptions, type PemFiles } from "../tls.js";
import { ConnectionStatsRecorder, PortStats, type ZkConnectionStats } from "./connection-stats.js";
import { answerFourLetterWord, recognizeFourLetterWord, type FourLetterWordContext } from "./four-letter-words.js";
import { FrameSplitter } from "./frames.js";
import { JuteError } from "./jute.js";
import { JuteSessionCodec } from "./zk-session-codec.js";

export interface ZkClientServiceDeps extends Omit<ConnectionSessionDeps, "enforcedSchemes"> {
  /** The words enabled on this port (parseFourLetterWordWhitelist). */
  fourLetterWords: ReadonlySet<string>;
  /** A fresh snapshot of the server for a four-letter word's answer. */
  fourLetterWordContext(): FourLetterWordContext;
  nowMs(): number;
  logger: Logger;
  /** Shared by the plain and secure ports: srvr and mntr report the server's totals, as ZooKeeper's ServerStats. */
  totals?: PortStats;
  /** SASL and the schemes a client must authenticate with; none when absent. */
  auth?: ClientDoorAuth;
  /** maxClientCnxns, counted over every client port; no limit when absent. */
  connectionsPerAddress?: ConnectionsPerAddress;
  /** connectionUnsentBytesMax: a client that does not read its answers is cut off rather than buffered without bound. */
  unsentBytesMax: number;
  /** globalUnsentBytesMax: what every connection holds unwritten, shared with the gRPC door. */
  outbound: OutboundBudget;
}

/** The secure port's TLS: the certificate files (watched) and ZooKeeper's ssl.clientAuth. */
export interface ZkTlsOptions {
  files: PemFiles;
  clientAuth: TlsClientAuth;
  certificateAuth: CertificateAuthOptions;
}

/**
 * maxClientCnxns at accept: a connection past it is closed before anything is read (ZooKeeper
 * closes the channel without an answer); one let in counts until its socket closes.
 */
function admitAddress(socket: Socket, deps: ZkClientServiceDeps): boolean {
  const limit = deps.connectionsPerAddress;
  if (limit === undefined) return true;
  const address = remoteAddressOfPeer(`${socket.remoteAddress ?? ""}:${socket.remotePort ?? 0}`);
  if (!limit.admit(address)) {
    socket.destroy();
    return false;
  }
  socket.once("close", () => limit.release(address));
  return true;
}

/** The listening port and its live connections. */
export class ZkClientService {
  private readonly connections = new Set<ZkSocketConnection>();
  /** Every open socket, ended connections' included: a stop must not wait for a client to hang up. */
  private readonly sockets = new Set<Socket>();
  private nextConnectionId = 1;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    readonly totals: PortStats,
  ) {}

  /** Listens on host:port; with `tls`, every connection is a TLS one (ZooKeeper's secureClientPort). */
  static async listen(host: string, port: number, deps: ZkClientServiceDeps, tls?: ZkTlsOptions): Promise<ZkClientService> {
    let service: ZkClientService | undefined;
    let server: Server;
    if (tls === undefined) {
      server = createServer({ noDelay: true });
      server.on("connection", (socket: Socket) => {
        if (!admitAddress(socket, deps)) return;
        service?.track(socket);
        service?.accept(socket, deps, []);
      });
    } else {
      const tlsServer = createTlsServer({ ...tlsServerOptions(tls.files.current, tls.clientAuth), noDelay: true });
      tls.files.onChange((material) => tlsServer.setSecureContext(tlsServerOptions(material, tls.clientAuth)));
      // Tracked from the TCP accept: a stop must not wait for a handshake that never ends.
      tlsServer.on("connection", (socket: Socket) => {
        // Counted before the handshake, as ZooKeeper does: a refused client costs no TLS work.
        if (admitAddress(socket, deps)) service?.track(socket);
      });
      tlsServer.on("secureConnection", (socket: TLSSocket) => service?.acceptTls(socket, deps, tls));
      tlsServer.on("tlsClientError", (error: Error, socket: TLSSocket) => {
        deps.logger.info(
          { peer: `${socket.remoteAddress ?? ""}:${socket.remotePort ?? 0}`, reason: error.message },
          "TLS handshake on the secure ZooKeeper port failed",
        );
      });
      server = tlsServer;
    }
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host, port, exclusive: true }, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const address = server.address();
    service = new ZkClientService(server, typeof address === "object" && address !== null ? address.port : port, deps.totals ?? new PortStats());
    server.on("error", (error) => deps.logger.error({ err: error }, "ZooKeeper client port error"));
    return service;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  stats(): ZkConnectionStats[] {
    return [...this.connections].map((connection) => connection.connectionStats());
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
  }

  private accept(socket: Socket, deps: ZkClientServiceDeps, certificateIds: readonly Id[]): void {
    const connection = new ZkSocketConnection(this.nextConnectionId++, socket, deps, this.totals, certificateIds, () => this.connections.delete(connection));
    this.connections.add(connection);
  }

  /** A connection whose handshake is done: its verified certificate, if any, is its x509 identity. */
  private acceptTls(socket: TLSSocket, deps: ZkClientServiceDeps, tls: ZkTlsOptions): void {
    // With clientAuth "want", an unverified certificate is let in without an identity.
    const subject = socket.authorized ? subjectOfPeer(socket.getPeerCertificate()) : undefined;
    const certificateIds = subject === undefined ? [] : certificateAuthIds(subject, tls.certificateAuth);
    this.track(socket);
    if (certificateIds.length > 0)
      deps.logger.debug({ peer: `${socket.remoteAddress ?? ""}:${socket.remotePort ?? 0}`, x509: subject }, "client authenticated by its certificate");
    this.accept(socket, deps, certificateIds);
  }

  /** Stops listening and drops every connection (their sessions live on, as on any server stop). */
  close(): Promise<void> {
    for (const connection of [...this.connections]) connection.session.end("closed");
    for (const socket of this.sockets) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * One TCP connection: the socket edge of a client session read and written by the jute codec. What
 * stays here is the socket's: a four-letter word on the first bytes, frame splitting, corked writes,
 * the bound on answers the client leaves unread, the connection's statistics, its SASL exchange
 * (evaluated off the event loop's thread, with the socket paused meanwhile), and pausing the socket
 * while the session is at an inbound bound.
 */
class ZkSocketConnection implements SessionStream<Uint8Array> {
  readonly session: ConnectionSession<Uint8Array, Uint8Array>;
  private readonly codec: JuteSessionCodec;
  private readonly stats: ConnectionStatsRecorder;
  private readonly splitter = new FrameSplitter();
  /** The first bytes, until four have arrived and told a frame length from a four-letter word; then undefined. */
  private prefix: Uint8Array | undefined = new Uint8Array(0);
  /** Answers written in this turn of the event loop are corked into one write (see write). */
  private corked = false;
  private closed = false;
  private readonly logger: Logger;
  private readonly auth: ClientDoorAuth;
  private readonly sasl: DoorSasl;
  /** Bytes written and not yet taken by the kernel, in the server's total. */
  private readonly outbound: ConnectionOutbound;

  constructor(
    readonly id: number,
    private readonly socket: Socket,
    private readonly deps: ZkClientServiceDeps,
    totals: PortStats,
    certificateIds: readonly Id[],
    private readonly onClosed: () => void,
  ) {
    const address = socket.remoteAddress ?? "";
    const remoteAddress = remoteAddressOfPeer(`${address}:${socket.remotePort ?? 0}`);
    this.logger = deps.logger.child({ zkConnection: id, peer: `${remoteAddress}:${socket.remotePort ?? 0}` });
    this.stats = new ConnectionStatsRecorder(totals, () => deps.nowMs());
    this.codec = new JuteSessionCodec(this.stats);
    this.auth = deps.auth ?? NO_SASL;
    this.sasl = new DoorSasl(this.auth, this.logger, socket);
    this.outbound = deps.outbound.connection();
    const sessionDeps = { ...deps, enforcedSchemes: this.auth.enforcedSchemes };
    this.session = new ConnectionSession(sessionDeps, this.codec, this, remoteAddress, certificateIds, initialAuthInfo(remoteAddress, certificateIds));
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("end", () => this.gone());
    socket.on("close", () => this.gone());
    socket.on("error", () => this.gone());
  }

  connectionStats(): ZkConnectionStats {
    const { stats, session } = this;
    const base = {
      remoteHost: session.remoteAddress,
      remotePort: this.socket.remotePort ?? 0,
      packetsReceived: stats.packetsReceived,
      packetsSent: stats.packetsSent,
      outstandingRequests: this.codec.outstandingRequests,
    };
    if (!session.connected) return base;
    return {
      ...base,
      session: {
        sessionId: session.sessionId,
        establishedMs: stats.establishedMs,
        sessionTimeoutMs: session.timeoutMs,
        lastOperation: stats.lastOperation,
        lastCxid: stats.lastCxid,
        lastZxid: stats.lastZxid,
        lastResponseMs: stats.lastResponseMs,
        latency: stats.latency,
      },
    };
  }

  /**
   * Sends one framed record, of any size (ZooKeeper bounds what it reads, not what it sends). A
   * client that leaves more than unsentBytesMax of earlier answers unread is cut off before more
   * are queued (its session stays; ZooKeeper queues them without bound).
   */
  write(frame: Uint8Array): void {
    if (this.closed) return;
    if (this.socket.writableLength > this.deps.unsentBytesMax) return this.session.refuse("exhausted", "the client does not read its answers");
    this.stats.sent();
    // A commit answers a connection's pipelined writes in one synchronous run: gathered, they
    // cost one writev instead of a syscall each, and the client reads them in one event.
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(() => {
        this.corked = false;
        this.socket.uncork();
      });
    }
    const bytes = frame.byteLength;
    this.outbound.add(bytes);
    this.socket.write(frame, () => this.outbound.add(-bytes));
  }

  /** The connection ends after what was written. */
  finish(reason: ConnectionEnd): void {
    if (this.closed) return;
    const sessionId = this.session.sessionId;
    if (reason === "expired" && sessionId === 0n) this.logger.info("resume refused: session expired, unknown or wrong password");
    else if (reason === "unauthenticated")
      this.logger.warn({ session: hex64(sessionId), schemes: [...this.auth.enforcedSchemes] }, "request from a client that has not authenticated as required");
    else if (reason !== "closed") this.logger.debug({ session: hex64(sessionId), reason }, "connection ended by server");
    this.gone();
    this.socket.end();
  }

  /** ZooKeeper closes a connection it refuses without an answer; the client tries its next server. */
  refuse(reason: ConnectionRefusal, detail: string): void {
    if (this.closed) return;
    const sessionId = this.session.sessionId;
    if (reason === "internal") this.logger.error({ session: sessionId === 0n ? undefined : hex64(sessionId), detail }, "an answer could not be encoded");
    this.logger.info({ session: sessionId === 0n ? undefined : hex64(sessionId), reason: detail }, "ZooKeeper client connection closed");
    this.gone();
    // Answers corked this turn still go out before the connection does.
    this.socket.uncork();
    this.socket.destroy();
  }

  /** A sasl packet's token: the frames of the chunk being read aside (which the session holds), what the client sends meanwhile waits in the kernel. */
  authenticate(token: Uint8Array, done: (outcome: SaslOutcome) => void): void {
    this.sasl.authenticate(this.session, token, done);
  }

  /** An inbound bound is reached: the kernel's buffers fill and TCP pushes back on the client. */
  pauseReading(): void {
    this.socket.pause();
  }

  resumeReading(): void {
    if (!this.closed && !this.session.authenticating) this.socket.resume();
  }

  private gone(): void {
    if (this.closed) return;
    this.closed = true;
    this.outbound.release();
    this.sasl.dispose();
    this.session.gone();
    this.onClosed();
  }

  private onData(chunk: Buffer): void {
    if (!this.session.reading) return;
    let bytes: Uint8Array = chunk;
    if (this.prefix !== undefined) {
      const joined = new Uint8Array(this.prefix.byteLength + bytes.byteLength);
      joined.set(this.prefix);
      joined.set(bytes, this.prefix.byteLength);
      if (joined.byteLength < 4) {
        this.prefix = joined;
        return;
      }
      const word = recognizeFourLetterWord(joined);
      if (word !== undefined) return this.answerFourLetterWord(word);
      this.prefix = undefined;
      bytes = joined;
    }
    let frames: Uint8Array[];
    try {
      frames = this.splitter.push(bytes);
    } catch (error) {
      if (error instanceof JuteError) return this.session.refuse("invalid", `bad frame: ${error.message}`);
      throw error;
    }
    for (const frame of frames) {
      if (!this.session.reading) return;
      this.stats.received();
      this.session.receive(frame);
    }
  }

  private answerFourLetterWord(word: Parameters<typeof answerFourLetterWord>[0]): void {
    const answer = answerFourLetterWord(word, this.deps.fourLetterWords, this.deps.fourLetterWordContext());
    this.logger.debug({ word, executed: answer.executed }, "four-letter word");
    this.gone();
    this.socket.end(answer.text);
  }
}
