/**
 * The ZooKeeper front door: a TCP port speaking Apache ZooKeeper 3.8's own client protocol, so
 * that zkCli.sh, the C client, Curator, kazoo and node-zookeeper-client use corral unchanged.
 *
 * It feeds the same RequestPipeline and sessions as the gRPC door: a session opened through either
 * door is the same session, ordered, answered and expired the same way. A connection's first four
 * bytes may be a four-letter word instead of a frame length; it is answered as text and closed.
 * A malformed frame, an oversized length or a record that does not decode closes that connection
 * with one log line; nothing a client sends can throw out of here or touch another connection.
 *
 * The same door serves ZooKeeper's secureClientPort: the connection handling is the same, over
 * node:tls. A client certificate the server verified gives the connection its x509 id (and the
 * super id for the configured x509 super user) before its first byte is read, as ZooKeeper's
 * Netty secure port does once the handshake is done.
 */
import { createServer, type Server, type Socket } from "node:net";
import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import type { Logger } from "pino";
import { ZkErrorCode } from "../../common/errors.js";
import type { DataTree } from "../../store/data-tree.js";
import type { Id, WatchEvent } from "../../store/types.js";
import {
  authenticationMissing,
  certificateAuthIds,
  initialAuthInfo,
  remoteAddressOfPeer,
  withAuthIds,
  type CertificateAuthOptions,
} from "../../replica/auth.js";
import { ConnectionSasl, type SaslAnswer } from "../sasl/connection-sasl.js";
import { NO_SASL, type ZkDoorAuth } from "../sasl/door-auth.js";
import type { TlsClientAuth } from "../config.js";
import { subjectOfPeer, tlsServerOptions, type PemFiles } from "../tls.js";
import type { ClientConnection, RequestPipeline } from "../../replica/pipeline.js";
import type { Reply } from "../../replica/requests.js";
import { SESSION_PASSWORD_BYTES, type SessionOpener } from "../../replica/session-opener.js";
import { answerFourLetterWord, recognizeFourLetterWord, type FourLetterWordContext } from "./four-letter-words.js";
import { encodeFrame, FrameSplitter } from "./frames.js";
import { JuteError, JuteReader } from "./jute.js";
import {
  ConnectRequest,
  ConnectResponse,
  decodeRecord,
  encodeNotification,
  encodeRecord,
  encodeReply,
  GetSASLRequest,
  OpCode,
  RequestHeader,
  requestBodyCodec,
  SetSASLResponse,
  Xid,
} from "./records.js";
import { encodeZkReply, toClientRequest, type ReplyShape } from "./zk-requests.js";

/** ZooKeeper's Watcher.Event.KeeperState.SyncConnected: every notification a live session gets. */
const SYNC_CONNECTED = 3;
/** Requests a client may send behind its ConnectRequest before the answer; beyond it the connection is cut. */
const HELD_FRAMES_MAX = 1024;
/** A client that does not read its answers is cut off rather than buffered without bound. */
const UNREAD_BYTES_MAX = 64 * 1024 * 1024;

export interface ZkClientServiceDeps {
  serverId: number;
  /** Read through on every use: a learner's tree is replaced when it syncs by SNAP or TRUNC. */
  state: { readonly tree: DataTree };
  pipeline: RequestPipeline;
  sessions: SessionOpener;
  /** The words enabled on this port (parseFourLetterWordWhitelist). */
  fourLetterWords: ReadonlySet<string>;
  /** A fresh snapshot of the server for a four-letter word's answer. */
  fourLetterWordContext(): FourLetterWordContext;
  nowMs(): number;
  logger: Logger;
  /** Shared by the plain and secure ports: srvr and mntr report the server's totals, as ZooKeeper's ServerStats. */
  totals?: PortStats;
  /** SASL and the schemes a client must authenticate with; none when absent. */
  auth?: ZkDoorAuth;
}

/** The secure port's TLS: the certificate files (watched) and ZooKeeper's ssl.clientAuth. */
export interface ZkTlsOptions {
  files: PemFiles;
  clientAuth: TlsClientAuth;
  certificateAuth: CertificateAuthOptions;
}

/** What `cons` and `mntr` report of one connection (ZooKeeper's ServerCnxn stats). */
export interface ZkConnectionStats {
  remoteHost: string;
  remotePort: number;
  packetsReceived: number;
  packetsSent: number;
  outstandingRequests: number;
  session?: {
    sessionId: bigint;
    establishedMs: number;
    sessionTimeoutMs: number;
    lastOperation: string;
    lastCxid: number;
    lastZxid: bigint;
    lastResponseMs: number;
    latency: LatencyStats;
  };
}

export class LatencyStats {
  count = 0;
  totalMs = 0;
  minMs = 0;
  maxMs = 0;
  lastMs = 0;
  record(ms: number): void {
    this.minMs = this.count === 0 ? ms : Math.min(this.minMs, ms);
    this.maxMs = Math.max(this.maxMs, ms);
    this.count += 1;
    this.totalMs += ms;
    this.lastMs = ms;
  }
  get avgMs(): number {
    return this.count === 0 ? 0 : this.totalMs / this.count;
  }
}

/** Over every connection a port ever had: what srvr and mntr report as the server's. */
export class PortStats {
  readonly latency = new LatencyStats();
  packetsReceived = 0;
  packetsSent = 0;
}

/** The listening port and its live connections. */
export class ZkClientService {
  private readonly connections = new Set<ZkWireConnection>();
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
        service?.track(socket);
        service?.accept(socket, deps, []);
      });
    } else {
      const tlsServer = createTlsServer({ ...tlsServerOptions(tls.files.current, tls.clientAuth), noDelay: true });
      tls.files.onChange((material) => tlsServer.setSecureContext(tlsServerOptions(material, tls.clientAuth)));
      // Tracked from the TCP accept: a stop must not wait for a handshake that never ends.
      tlsServer.on("connection", (socket: Socket) => service?.track(socket));
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
    return [...this.connections].map((connection) => connection.stats());
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
  }

  private accept(socket: Socket, deps: ZkClientServiceDeps, certificateIds: readonly Id[]): void {
    const connection = new ZkWireConnection(this.nextConnectionId++, socket, deps, this.totals, certificateIds, () => this.connections.delete(connection));
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
    for (const connection of [...this.connections]) connection.end("closed");
    for (const socket of this.sockets) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

type Phase = "first-bytes" | "awaiting-connect" | "connecting" | "connected" | "ended";

interface SentRequest {
  xid: number;
  shape: ReplyShape;
  receivedMs: number;
}

class ZkWireConnection implements ClientConnection {
  private phase: Phase = "first-bytes";
  private readonly splitter = new FrameSplitter();
  /** The first bytes, until four have arrived and told a frame length from a four-letter word. */
  private prefix = new Uint8Array(0);
  private held: Uint8Array[] = [];
  /** Answers written in this turn of the event loop are corked into one write (see send). */
  private corked = false;
  /** Cleared once a request that ends the connection arrived: later frames are not read. */
  private reading = true;
  /** Requests handed to the pipeline, in the order their replies come back. */
  private readonly awaiting: SentRequest[] = [];
  private sessionId = 0n;
  private timeoutMs = 0;
  /** Whether the client's ConnectRequest had the readOnly flag: then the response has it too. */
  private answerReadOnly = false;
  private readonly logger: Logger;
  readonly remoteAddress: string;
  authInfo: readonly Id[];
  private packetsReceived = 0;
  private packetsSent = 0;
  private establishedMs = 0;
  private lastOperation = "NA";
  private lastCxid = -1;
  private lastZxid = -1n;
  private lastResponseMs = 0;
  private readonly latency = new LatencyStats();
  /** Made at the connection's first sasl packet. */
  private sasl: ConnectionSasl | undefined;
  /** A sasl packet is being evaluated: later frames wait in `held` until it is answered. */
  private saslInFlight = false;

  constructor(
    readonly id: number,
    private readonly socket: Socket,
    private readonly deps: ZkClientServiceDeps,
    private readonly totals: PortStats,
    readonly certificateIds: readonly Id[],
    private readonly onClosed: () => void,
  ) {
    const address = socket.remoteAddress ?? "";
    this.remoteAddress = remoteAddressOfPeer(`${address}:${socket.remotePort ?? 0}`);
    this.authInfo = initialAuthInfo(this.remoteAddress, certificateIds);
    this.logger = deps.logger.child({ zkConnection: id, peer: `${this.remoteAddress}:${socket.remotePort ?? 0}` });
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("end", () => this.gone());
    socket.on("close", () => this.gone());
    socket.on("error", () => this.gone());
  }

  get open(): boolean {
    return this.phase !== "ended";
  }

  stats(): ZkConnectionStats {
    const base = {
      remoteHost: this.remoteAddress,
      remotePort: this.socket.remotePort ?? 0,
      packetsReceived: this.packetsReceived,
      packetsSent: this.packetsSent,
      outstandingRequests: this.awaiting.length,
    };
    if (this.phase !== "connected") return base;
    return {
      ...base,
      session: {
        sessionId: this.sessionId,
        establishedMs: this.establishedMs,
        sessionTimeoutMs: this.timeoutMs,
        lastOperation: this.lastOperation,
        lastCxid: this.lastCxid,
        lastZxid: this.lastZxid,
        lastResponseMs: this.lastResponseMs,
        latency: this.latency,
      },
    };
  }

  sendReply(xid: number, reply: Reply): void {
    const at = this.awaiting.findIndex((sent) => sent.xid === xid);
    if (at < 0) return; // not one of ours (a request of the session's earlier connection)
    const [sent] = this.awaiting.splice(at, 1) as [SentRequest];
    const now = this.deps.nowMs();
    this.latency.record(now - sent.receivedMs);
    this.totals.latency.record(now - sent.receivedMs);
    this.lastZxid = BigInt(reply.zxid);
    this.lastResponseMs = now;
    if (sent.shape.type === OpCode.auth) {
      // ZooKeeper answers an auth packet with zxid 0, and a failed one closes the connection.
      this.send(() => encodeReply({ xid, zxid: 0n, err: reply.err }), { xid, opcode: OpCode.auth });
      if (reply.err === ZkErrorCode.AUTHFAILED) this.end("closed");
      return;
    }
    this.send(() => encodeZkReply(xid, sent.shape, reply), { xid, opcode: sent.shape.type });
    if (sent.shape.closeAfter) this.end("closed");
  }

  /** ZooKeeper stops reading a connection whose auth failed: its AUTHFAILED answer is the last. */
  authFailed(): void {
    this.stopReading();
  }

  sendEvent(event: WatchEvent): void {
    this.send(() => encodeNotification({ type: event.type, state: SYNC_CONNECTED, path: event.path }), { event: event.type, path: event.path });
  }

  end(reason: "closed" | "expired" | "moved"): void {
    if (this.phase === "ended") return;
    if (reason !== "closed") this.logger.debug({ session: hex(this.sessionId), reason }, "connection ended by server");
    this.gone();
    this.socket.end();
  }

  /**
   * Encodes and sends one record, of any size (ZooKeeper bounds what it reads, not what it sends).
   * A record that cannot be encoded is a bug of ours: it costs this connection, with an error
   * line (the client reconnects and retries elsewhere), never the server. A client that leaves
   * more than UNREAD_BYTES_MAX of earlier answers unread is cut off before more are queued.
   */
  private send(encode: () => Uint8Array, what: Record<string, unknown>): void {
    if (this.phase === "ended") return;
    if (this.socket.writableLength > UNREAD_BYTES_MAX) return this.close("the client does not read its answers");
    let frame: Uint8Array;
    try {
      frame = encodeFrame(encode());
    } catch (error) {
      this.logger.error({ err: error, ...what }, "an answer could not be encoded");
      return this.close("an answer could not be encoded");
    }
    this.countSent();
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
    this.socket.write(frame);
  }

  private gone(): void {
    if (this.phase === "ended") return;
    const wasConnected = this.phase === "connected";
    this.phase = "ended";
    this.held = [];
    this.sasl?.dispose();
    if (wasConnected) this.deps.pipeline.detach(this.sessionId, this);
    this.onClosed();
  }

  private countSent(): void {
    this.packetsSent += 1;
    this.totals.packetsSent += 1;
  }

  /** Closes the connection for something the client did wrong. */
  private close(why: string): void {
    if (this.phase === "ended") return;
    this.logger.info({ session: this.sessionId === 0n ? undefined : hex(this.sessionId), reason: why }, "ZooKeeper client connection closed");
    this.gone();
    // Answers corked this turn still go out before the connection does.
    this.socket.uncork();
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    if (this.phase === "ended" || !this.reading) return;
    let bytes: Uint8Array = chunk;
    if (this.phase === "first-bytes") {
      const joined = new Uint8Array(this.prefix.byteLength + bytes.byteLength);
      joined.set(this.prefix);
      joined.set(bytes, this.prefix.byteLength);
      if (joined.byteLength < 4) {
        this.prefix = joined;
        return;
      }
      const word = recognizeFourLetterWord(joined);
      if (word !== undefined) return this.answerFourLetterWord(word);
      this.phase = "awaiting-connect";
      bytes = joined;
    }
    let frames: Uint8Array[];
    try {
      frames = this.splitter.push(bytes);
    } catch (error) {
      if (error instanceof JuteError) return this.close(`bad frame: ${error.message}`);
      throw error;
    }
    for (const frame of frames) {
      if ((this.phase as Phase) === "ended" || !this.reading) return;
      this.packetsReceived += 1;
      this.totals.packetsReceived += 1;
      if (!this.decoded(() => this.onFrame(frame))) return;
    }
  }

  private answerFourLetterWord(word: Parameters<typeof answerFourLetterWord>[0]): void {
    const answer = answerFourLetterWord(word, this.deps.fourLetterWords, this.deps.fourLetterWordContext());
    this.logger.debug({ word, executed: answer.executed }, "four-letter word");
    this.gone();
    this.socket.end(answer.text);
  }

  private onFrame(frame: Uint8Array): void {
    switch (this.phase) {
      case "awaiting-connect":
        return this.onConnect(decodeRecord(ConnectRequest, frame));
      case "connecting":
        return this.hold(frame);
      case "connected":
        return this.saslInFlight ? this.hold(frame) : this.onRequest(frame);
    }
  }

  /** Keeps a frame for later: before the connect answer, or while a sasl packet is evaluated. */
  private hold(frame: Uint8Array): void {
    if (this.held.length >= HELD_FRAMES_MAX) return this.close("too many requests before an answer they must wait for");
    this.held.push(frame);
  }

  /** Runs the held frames in order, until one makes the connection wait again. */
  private runHeld(): void {
    while (this.held.length > 0 && this.phase === "connected" && this.reading && !this.saslInFlight) {
      const frame = this.held.shift()!;
      if (!this.decoded(() => this.onRequest(frame))) return;
    }
  }

  private onRequest(frame: Uint8Array): void {
    const reader = new JuteReader(frame);
    const header = RequestHeader.read(reader);
    const { xid, type } = header;
    this.lastCxid = xid;
    this.lastOperation = OPERATION_NAMES.get(type) ?? "UNKN";
    const pipeline = this.deps.pipeline;
    if (type === OpCode.sasl) return this.onSasl(xid, GetSASLRequest.read(reader).token);
    if (type !== OpCode.auth && authenticationMissing(this.authInfo, this.auth.enforcedSchemes)) {
      // ZooKeeper's AuthenticationHelper.enforceAuthentication: the answer, then the connection closes.
      this.logger.warn(
        { session: hex(this.sessionId), schemes: [...this.auth.enforcedSchemes] },
        "request from a client that has not authenticated as required",
      );
      this.send(() => encodeReply({ xid, zxid: 0n, err: ZkErrorCode.SESSIONCLOSEDREQUIRESASLAUTH }), { xid, opcode: type });
      this.stopReading();
      return this.end("closed");
    }
    if (type === OpCode.ping) {
      // Answered at once, like the gRPC door's pong: the client matches it by its xid, not its place.
      pipeline.touch(this.sessionId);
      this.send(() => encodeReply({ xid: Xid.ping, zxid: BigInt(this.deps.state.tree.lastProcessedZxid), err: 0 }), { xid: Xid.ping });
      return;
    }
    const codec = requestBodyCodec(type);
    const mapping = toClientRequest(type, codec?.read(reader));
    if ("close" in mapping) return this.close(mapping.close);
    this.awaiting.push({ xid, shape: mapping.shape, receivedMs: this.deps.nowMs() });
    // Nothing after a request that ends the connection is read, as ZooKeeper stops reading it.
    if (mapping.shape.closeAfter) this.stopReading();
    if ("reject" in mapping) return pipeline.submitRejected(this.sessionId, this, xid, mapping.reject);
    pipeline.submit(this.sessionId, this, xid, mapping.request);
  }

  private onConnect(connect: ConnectRequest): void {
    this.answerReadOnly = connect.readOnly !== undefined;
    // A negative zxid is not one; ZooKeeper takes it as "seen nothing", and so do we.
    const lastZxidSeen = connect.lastZxidSeen < 0n ? 0n : connect.lastZxidSeen;
    this.phase = "connecting";
    const request = {
      sessionId: connect.sessionId,
      password: connect.passwd ?? new Uint8Array(0),
      requestedTimeoutMs: connect.timeOut,
      lastZxidSeen,
      readOnlyAllowed: connect.readOnly === true,
    };
    this.deps.sessions.open(request, {
      waiting: () => this.phase === "connecting",
      established: (sessionId, timeoutMs, password, readOnly) => this.establish(sessionId, timeoutMs, password, readOnly),
      expired: () => {
        // ZooKeeper's answer to a dead session: timeout 0, which the client reports as expiry.
        this.logger.info({ session: hex(connect.sessionId) }, "resume refused: session expired, unknown or wrong password");
        this.writeConnectResponse(0, 0n, new Uint8Array(SESSION_PASSWORD_BYTES), false);
        this.end("expired");
      },
      // ZooKeeper closes without an answer; the client tries its next server.
      refused: (_reason, detail) => this.close(`connect refused: ${detail}`),
    });
  }

  private establish(sessionId: bigint, timeoutMs: number, password: Uint8Array, readOnly: boolean): void {
    this.sessionId = sessionId;
    this.timeoutMs = timeoutMs;
    this.phase = "connected";
    this.establishedMs = this.deps.nowMs();
    this.deps.pipeline.attach(sessionId, this);
    this.writeConnectResponse(timeoutMs, sessionId, password, readOnly);
    this.runHeld();
  }

  private get auth(): ZkDoorAuth {
    return this.deps.auth ?? NO_SASL;
  }

  /**
   * A sasl packet, answered as soon as its token is evaluated (ZooKeeper's processSasl), outside
   * the session's order; nothing after it is read until then. A null token is the end of the
   * connection, unanswered (it throws out of ZooKeeper's packet handling).
   */
  private onSasl(xid: number, token: Uint8Array | null): void {
    if (token === null) return this.close("a sasl packet without a token");
    this.sasl ??= new ConnectionSasl(this.auth.sasl, this.auth.outcomes, this.logger);
    this.saslInFlight = true;
    // What the client sends meanwhile waits in the kernel, not here (frames of this chunk aside).
    this.socket.pause();
    void this.sasl.answer(token, hex(this.sessionId)).then((answer) => this.saslAnswered(xid, answer));
  }

  private saslAnswered(xid: number, answer: SaslAnswer): void {
    this.saslInFlight = false;
    if (this.phase === "ended") return;
    let { err, close } = answer;
    if (answer.ids.length > 0) {
      const authInfo = withAuthIds(this.authInfo, answer.ids);
      if (authInfo === undefined) [err, close] = [ZkErrorCode.AUTHFAILED, true];
      else this.authInfo = authInfo;
    }
    const token = err === ZkErrorCode.OK ? answer.token : null;
    this.send(() => encodeReply({ xid, zxid: 0n, err }, { codec: SetSASLResponse, value: { token } }), { xid, opcode: OpCode.sasl });
    if (close) {
      this.stopReading();
      return this.end("closed");
    }
    this.runHeld();
    if (!this.saslInFlight && (this.phase as Phase) !== "ended") this.socket.resume();
  }

  /**
   * Runs nothing more that arrives (it is read and dropped, so the socket still sees the client's
   * end): the connection ends once what was read before is answered.
   */
  private stopReading(): void {
    this.reading = false;
  }

  /** Runs `handle` on a frame; a record that does not decode closes the connection (false). */
  private decoded(handle: () => void): boolean {
    const what = this.phase === "awaiting-connect" ? "ConnectRequest" : "request";
    try {
      handle();
      return true;
    } catch (error) {
      if (!(error instanceof JuteError)) throw error;
      this.close(`malformed ${what}: ${error.message}`);
      return false;
    }
  }

  /** `readOnly`: the server serves this session read-only (told only to a client that sent the flag: only it can be). */
  private writeConnectResponse(timeoutMs: number, sessionId: bigint, password: Uint8Array, readOnly: boolean): void {
    const response: ConnectResponse = {
      protocolVersion: 0,
      timeOut: timeoutMs,
      sessionId,
      passwd: password,
      readOnly: this.answerReadOnly ? readOnly : undefined,
    };
    this.send(() => encodeRecord(ConnectResponse, response), { record: "ConnectResponse" });
  }
}

/** ZooKeeper's short names for the last operation of a connection (cons's lop). */
const OPERATION_NAMES: ReadonlyMap<number, string> = new Map([
  [OpCode.create, "CREA"],
  [OpCode.create2, "CREA"],
  [OpCode.createContainer, "CREA"],
  [OpCode.createTTL, "CREA"],
  [OpCode.delete, "DELE"],
  [OpCode.deleteContainer, "DELE"],
  [OpCode.exists, "EXIS"],
  [OpCode.getData, "GETD"],
  [OpCode.setData, "SETD"],
  [OpCode.getACL, "GETA"],
  [OpCode.setACL, "SETA"],
  [OpCode.getChildren, "GETC"],
  [OpCode.getChildren2, "GETC"],
  [OpCode.sync, "SYNC"],
  [OpCode.ping, "PING"],
  [OpCode.check, "CHEC"],
  [OpCode.multi, "MULT"],
  [OpCode.multiRead, "MLTR"],
  [OpCode.reconfig, "RECO"],
  [OpCode.checkWatches, "CHKW"],
  [OpCode.removeWatches, "REMW"],
  [OpCode.auth, "AUTH"],
  [OpCode.setWatches, "SETW"],
  [OpCode.setWatches2, "STW2"],
  [OpCode.getEphemerals, "GETE"],
  [OpCode.getAllChildrenNumber, "GETACN"],
  [OpCode.addWatch, "ADDW"],
  [OpCode.whoAmI, "HOMI"],
  [OpCode.closeSession, "CLOSE"],
  [OpCode.sasl, "SASL"],
]);

function hex(id: bigint): string {
  return "0x" + BigInt.asUintN(64, id).toString(16);
}
