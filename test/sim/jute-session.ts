/**
 * The ZooKeeper kind of simulated client: a client session with the semantics of ZooKeeper's own
 * Java client (3.8's ClientCnxn over ClientCnxnSocketNetty and StaticHostProvider), speaking jute
 * through the real records and framing (src/server/zk-wire/records.ts, frames.ts), whose
 * connections reach the server's connection session under the ZooKeeper door's codec
 * (src/server/zk-wire/zk-session-codec.ts).
 *
 * What it keeps of ClientCnxn:
 * - An outgoing queue and a pending queue. A request goes out at once on the open connection (the
 *   Netty socket writes without waiting for the connect answer), taking its xid as it leaves, and
 *   waits in the pending queue; without a connection it waits in the outgoing queue. A reply must
 *   be for the pending queue's head: any other is "xid out of order" (one with nothing pending,
 *   "nothing in the queue"), which the Java client takes as a lost connection and the simulator as
 *   a broken promise of the server. Pings, auth packets and notifications are never pending.
 * - A new connection is primed with the ConnectRequest (the last zxid seen; the session id once a
 *   read-write server has been seen, else 0; the password; the readOnly byte), then every auth
 *   packet, then setWatches (setWatches2 when persistent watches are held) with the last zxid, then
 *   whatever the outgoing queue holds — all of it before the connect answer, so the server holds it.
 * - A ping when nothing was sent for half the read timeout (two thirds of the negotiated session
 *   timeout); nothing heard for the read timeout (the connect timeout, timeout / hosts, before the
 *   connect answer) loses the connection.
 * - A connect answered with timeout 0: the session has expired, and every request fails. AUTHFAILED
 *   on an auth packet ends the session the same way.
 * - A lost connection fails every pending and queued request (CONNECTIONLOSS). The next server is
 *   the next in the list, after a pause under a second (none before the first connection), and a
 *   second more each time the list comes round to the server last connected to.
 *
 * Where it differs, on purpose: the last zxid seen keeps the highest zxid a reply carried
 * (ClientCnxn takes each reply's, which steps back when a pipelined write commits below a read
 * answered before it; the checks judge the server by what the client saw). A read-only session
 * does not probe for a read-write server (ZooKeeper does that with the isro four-letter word on a
 * side socket, outside the session); it moves when its connection ends. No SASL, no close.
 */
import { ZkErrorCode } from "../../src/common/errors.js";
import { hex64 } from "../../src/common/hex.js";
import { ADD_WATCH_MODE_NUMBERS } from "../../src/common/watch-modes.js";
import { initialAuthInfo } from "../../src/replica/auth.js";
import { ConnectionSession } from "../../src/replica/connection-session.js";
import type { ClientRequest } from "../../src/replica/requests.js";
import { encodeFrame, FrameSplitter } from "../../src/server/zk-wire/frames.js";
import { JuteError, JuteReader, JuteWriter } from "../../src/server/zk-wire/jute.js";
import * as jute from "../../src/server/zk-wire/records.js";
import { OpCode, Xid } from "../../src/server/zk-wire/records.js";
import { JuteSessionCodec } from "../../src/server/zk-wire/zk-session-codec.js";
import { CREATE_MODE_FLAGS, OPEN_ACL_UNSAFE, type WatchEvent } from "../../src/store/types.js";
import { isTtlMode } from "../../src/common/znode.js";
import { PingOrder, type SimClientKind, type SimConnectionLoss, type SimSession, type SimSessionHost, type SimSessionOptions } from "./sim-session.js";

/** ClientCnxn's pause before a connection attempt, and StaticHostProvider's once round the list. */
const RECONNECT_PAUSE_MS_MAX = 1_000;
const HOST_LIST_ROUND_PAUSE_MS = 1_000;
/** ClientCnxn pings at least this often, however long the session timeout. */
const PING_INTERVAL_MS_MAX = 10_000;
/** The opcodes the workload's writes go as. */
const WRITE_OPCODES: ReadonlySet<number> = new Set([OpCode.create2, OpCode.createTTL, OpCode.createContainer, OpCode.setData, OpCode.delete]);
/** A new client's password: ZooKeeper's `new byte[16]`. */
const NO_PASSWORD = new Uint8Array(16);

/** One packet: a request with its token, or one of the session's own (ping, auth, setWatches). */
interface Packet<T> {
  type: number;
  /** Fixed for the session's own packets; a request's is given as it leaves. */
  xid: number;
  write(writer: JuteWriter): void;
  token: T | undefined;
}

interface Connection {
  readonly id: number;
  readonly serverId: number;
  /** The session its ConnectRequest asked to resume (0 for a new one). */
  readonly askedSessionId: bigint;
  /** Set by the connect answer. */
  initialized: boolean;
  readonly splitter: FrameSplitter;
  readonly pingOrder: PingOrder;
}

type State = "connecting" | "connected" | "connected-read-only" | "closed" | "auth-failed";

export class JuteSession<T> implements SimSession<T> {
  readonly authAnswered = false;
  private state: State = "connecting";
  private expiredValue = false;
  private readonly outgoing: Packet<T>[] = [];
  private readonly pending: Packet<T>[] = [];
  private readonly authInfo: { scheme: string; auth: Uint8Array }[] = [];
  private nextXid = 1;
  private sessionIdValue = 0n;
  private password: Uint8Array = NO_PASSWORD;
  private lastZxid = 0n;
  private seenRwServerBefore = false;
  private everConnected = false;
  private conn: Connection | undefined;
  private connectionCount = 0;
  /** StaticHostProvider's currentIndex and lastIndex. */
  private hostIndex = -1;
  private lastHostIndex = -1;
  private isFirstConnect = true;
  private nextServerId = 0;
  private lastSendMs = 0;
  private lastHeardMs = 0;
  private readTimeoutMs: number;
  private connectTimeoutMs: number;

  constructor(
    private readonly options: SimSessionOptions,
    private readonly host: SimSessionHost<T>,
  ) {
    this.readTimeoutMs = Math.trunc((options.sessionTimeoutMs * 2) / 3);
    this.connectTimeoutMs = Math.trunc(options.sessionTimeoutMs / options.serverIds.length);
  }

  get lifecycle(): SimSession<T>["lifecycle"] {
    if (this.state === "closed" || this.state === "auth-failed") return this.expiredValue ? "expired" : "closed";
    return "active";
  }

  get connected(): boolean {
    return this.state === "connected" || this.state === "connected-read-only";
  }

  get acceptsRequests(): boolean {
    return this.alive && this.everConnected;
  }

  get readOnly(): boolean {
    return this.state === "connected-read-only";
  }

  get sessionId(): bigint {
    return this.sessionIdValue;
  }

  private get alive(): boolean {
    return this.lifecycle === "active";
  }

  start(): void {
    this.connectNext();
  }

  submit(request: ClientRequest, token: T): void {
    if (!this.alive) return this.host.failed(token);
    if (request.op === "addAuth") {
      // ZooKeeper.addAuthInfo: remembered for every later connection, sent now, never answered to the caller.
      this.authInfo.push({ scheme: request.scheme, auth: request.auth });
      this.queue(authPacket(request.scheme, request.auth));
      return;
    }
    const { type, body } = requestRecord(request);
    this.queue({ type, xid: 0, write: (writer) => body(writer), token });
  }

  receive(connection: number, bytes: Uint8Array, eventZxid: number | undefined): void {
    const conn = this.conn;
    if (conn?.id !== connection) return;
    let frames: Uint8Array[];
    try {
      frames = conn.splitter.push(bytes);
    } catch (error) {
      if (!(error instanceof JuteError)) throw error;
      this.host.violation("client order and single system image", `a frame that does not split: ${error.message}`);
      return this.connectionLost(`bad frame: ${error.message}`);
    }
    for (const frame of frames) {
      if (this.conn !== conn) return;
      this.lastHeardMs = this.host.nowMs;
      try {
        if (conn.initialized) this.readResponse(conn, frame, eventZxid);
        else this.readConnectResult(conn, frame);
      } catch (error) {
        if (!(error instanceof JuteError)) throw error;
        this.host.violation("client order and single system image", `server ${conn.serverId} sent a record that does not decode: ${error.message}`);
        return this.connectionLost(error.message);
      }
    }
    this.schedule();
  }

  lost(connection: number, cause: SimConnectionLoss): void {
    if (this.conn?.id === connection) this.connectionLost(cause.message);
  }

  timerFired(timer: string): void {
    if (!this.alive) return;
    if (timer === "reconnect") this.openConnection(this.nextServerId);
    else this.schedule();
  }

  // ---- connections

  /** StaticHostProvider.next, then ClientCnxn.startConnect's pause. */
  private connectNext(): void {
    const servers = this.options.serverIds;
    this.hostIndex = (this.hostIndex + 1) % servers.length;
    const roundTheList = this.hostIndex === this.lastHostIndex;
    if (this.lastHostIndex === -1) this.lastHostIndex = 0;
    this.nextServerId = servers[this.hostIndex]!;
    const pauseMs = (roundTheList ? HOST_LIST_ROUND_PAUSE_MS : 0) + (this.isFirstConnect ? 0 : this.host.random(RECONNECT_PAUSE_MS_MAX));
    if (pauseMs === 0) this.openConnection(this.nextServerId);
    else this.host.armTimer("reconnect", pauseMs);
  }

  private openConnection(serverId: number): void {
    const askedSessionId = this.seenRwServerBefore ? this.sessionIdValue : 0n;
    const conn: Connection = {
      id: ++this.connectionCount,
      serverId,
      askedSessionId,
      initialized: false,
      splitter: new FrameSplitter(0x7fffffff),
      pingOrder: new PingOrder((property, message) => this.host.violation(property, message)),
    };
    this.conn = conn;
    this.state = "connecting";
    this.host.open(conn.id, serverId);
    this.lastSendMs = this.lastHeardMs = this.host.nowMs;
    this.prime(conn);
    this.schedule();
  }

  /** ClientCnxn.primeConnection: connect, auth packets, setWatches, then what waited. */
  private prime(conn: Connection): void {
    this.isFirstConnect = false;
    const connect: jute.ConnectRequest = {
      protocolVersion: 0,
      lastZxidSeen: this.lastZxid,
      timeOut: this.options.sessionTimeoutMs,
      sessionId: conn.askedSessionId,
      passwd: this.password,
      readOnly: this.options.canBeReadOnly,
    };
    this.host.send(conn.id, encodeFrame(jute.encodeRecord(jute.ConnectRequest, connect)), false);
    // primeConnection pushes each onto the front of the queue: the last auth goes first.
    for (const { scheme, auth } of [...this.authInfo].reverse()) this.send(conn, authPacket(scheme, auth));
    const watches = this.options.watchedPaths();
    const persistent = watches.persistentWatches.length + watches.persistentRecursiveWatches.length > 0;
    if (persistent || watches.dataWatches.length + watches.existWatches.length + watches.childWatches.length > 0) {
      const relativeZxid = this.lastZxid;
      const record = { relativeZxid, dataWatches: watches.dataWatches, existWatches: watches.existWatches, childWatches: watches.childWatches };
      this.send(conn, {
        type: persistent ? OpCode.setWatches2 : OpCode.setWatches,
        xid: Xid.setWatches,
        write: (writer) =>
          persistent
            ? jute.SetWatches2.write(writer, {
                ...record,
                persistentWatches: watches.persistentWatches,
                persistentRecursiveWatches: watches.persistentRecursiveWatches,
              })
            : jute.SetWatches.write(writer, record),
        token: undefined,
      });
    }
    this.flush();
  }

  private queue(packet: Packet<T>): void {
    this.outgoing.push(packet);
    this.flush();
  }

  private flush(): void {
    const conn = this.conn;
    if (conn === undefined) return;
    for (let packet = this.outgoing.shift(); packet !== undefined; packet = this.outgoing.shift()) this.send(conn, packet);
  }

  private send(conn: Connection, packet: Packet<T>): void {
    const own = packet.type === OpCode.ping || packet.type === OpCode.auth;
    if (packet.token !== undefined) packet.xid = this.takeXid();
    const writer = new JuteWriter();
    jute.RequestHeader.write(writer, { xid: packet.xid, type: packet.type });
    packet.write(writer);
    this.host.send(conn.id, encodeFrame(writer.toBytes()), WRITE_OPCODES.has(packet.type));
    this.lastSendMs = this.host.nowMs;
    if (!conn.initialized) this.host.count("framesBehindConnect");
    if (packet.type === OpCode.ping) {
      this.host.count("pings");
      conn.pingOrder.pingSent();
    }
    if (own) return;
    this.pending.push(packet);
    conn.pingOrder.requestSent();
    if (packet.token !== undefined) this.host.sent(packet.token, packet.xid, conn.initialized ? this.sessionIdValue : conn.askedSessionId);
  }

  private takeXid(): number {
    const xid = this.nextXid;
    this.nextXid = xid === 0x7fffffff ? 1 : xid + 1;
    return xid;
  }

  /** The SendThread loop's clock: the connection's read (or connect) timeout, and when to ping. */
  private schedule(): void {
    const conn = this.conn;
    if (conn === undefined || !this.alive) return this.host.cancelTimer("tick");
    const now = this.host.nowMs;
    let timeoutMs = (conn.initialized ? this.readTimeoutMs : this.connectTimeoutMs) - (now - this.lastHeardMs);
    if (timeoutMs <= 0) return this.connectionLost(`client session timed out, have not heard from server in ${now - this.lastHeardMs} ms`);
    if (conn.initialized) {
      const idleSendMs = now - this.lastSendMs;
      let untilPingMs = this.readTimeoutMs / 2 - idleSendMs - (idleSendMs > 1_000 ? 1_000 : 0);
      if (untilPingMs <= 0 || idleSendMs > PING_INTERVAL_MS_MAX) {
        this.send(conn, { type: OpCode.ping, xid: Xid.ping, write: () => {}, token: undefined });
        untilPingMs = this.readTimeoutMs / 2;
      }
      timeoutMs = Math.min(timeoutMs, untilPingMs);
    }
    this.host.armTimer("tick", Math.ceil(timeoutMs));
  }

  private connectionLost(why: string): void {
    const conn = this.conn;
    if (conn === undefined) return;
    this.conn = undefined;
    this.host.close(conn.id);
    this.host.cancelTimer("tick");
    this.host.log(`connection ${conn.id} to server ${conn.serverId} lost: ${why}`);
    const wasConnected = conn.initialized;
    this.cleanup();
    if (!this.alive) return;
    this.state = "connecting";
    if (wasConnected) this.host.state("disconnected");
    this.connectNext();
  }

  /** ClientCnxn.cleanup: every pending and queued request fails. */
  private cleanup(): void {
    const failed = [...this.pending, ...this.outgoing.splice(0)];
    this.pending.length = 0;
    for (const packet of failed) if (packet.token !== undefined) this.host.failed(packet.token);
  }

  /** The session is over (expired, or its auth failed): nothing more is sent or retried. */
  private die(state: "closed" | "auth-failed", expired: boolean): void {
    this.state = state;
    this.expiredValue = expired;
    const conn = this.conn;
    this.conn = undefined;
    if (conn !== undefined) this.host.close(conn.id);
    this.host.cancelTimer("tick");
    this.cleanup();
    this.host.state(expired ? "expired" : "closed");
  }

  // ---- what arrives

  /** ClientCnxn.onConnected. */
  private readConnectResult(conn: Connection, frame: Uint8Array): void {
    const answer = jute.decodeRecord(jute.ConnectResponse, frame);
    if (answer.timeOut <= 0) {
      this.host.log(`session ${hex64(this.sessionIdValue)} has expired`);
      return this.die("closed", true);
    }
    this.readTimeoutMs = Math.trunc((answer.timeOut * 2) / 3);
    this.connectTimeoutMs = Math.trunc(answer.timeOut / this.options.serverIds.length);
    this.lastHostIndex = this.hostIndex;
    this.sessionIdValue = answer.sessionId;
    this.password = answer.passwd ?? NO_PASSWORD;
    const readOnly = answer.readOnly === true;
    this.state = readOnly ? "connected-read-only" : "connected";
    this.seenRwServerBefore ||= !readOnly;
    conn.initialized = true;
    this.host.state(this.everConnected ? "reconnected" : "connected");
    this.everConnected = true;
  }

  /** ClientCnxn.SendThread.readResponse. */
  private readResponse(conn: Connection, frame: Uint8Array, eventZxid: number | undefined): void {
    const reader = new JuteReader(frame);
    const header = jute.ReplyHeader.read(reader);
    switch (header.xid) {
      case Xid.ping:
        return conn.pingOrder.pongReceived();
      case Xid.auth:
        if (header.err === ZkErrorCode.AUTHFAILED) this.die("auth-failed", false);
        return;
      case Xid.notification: {
        const event = jute.WatcherEvent.read(reader);
        if (eventZxid === undefined) throw new Error("the simulator sent a notification without its zxid");
        return this.host.event({ type: event.type, path: event.path ?? "", zxid: BigInt(eventZxid) });
      }
    }
    const packet = this.pending.shift();
    if (packet === undefined || packet.xid !== header.xid) {
      const why =
        packet === undefined ? `nothing in the queue, but got xid ${header.xid}` : `xid out of order: got xid ${header.xid}, expected xid ${packet.xid}`;
      this.host.violation("client order and single system image", `server ${conn.serverId} answered ${why}`);
      if (packet?.token !== undefined) this.host.failed(packet.token);
      return this.connectionLost(why);
    }
    conn.pingOrder.requestAnswered();
    if (header.zxid > this.lastZxid) this.lastZxid = header.zxid;
    if (packet.token === undefined) return;
    const stat = header.err === 0 ? statOf(packet.type, reader) : undefined;
    this.host.answered(packet.token, { err: header.err, zxid: header.zxid, stat: stat && { mzxid: stat.mzxid, pzxid: stat.pzxid } });
  }
}

function authPacket<T>(scheme: string, auth: Uint8Array): Packet<T> {
  return { type: OpCode.auth, xid: Xid.auth, write: (writer) => jute.AuthPacket.write(writer, { type: 0, scheme, auth }), token: undefined };
}

/** The workload's request as ZooKeeper's Java client sends it (an empty ACL is its OPEN_ACL_UNSAFE). */
export function requestRecord(request: ClientRequest): { type: number; body: (writer: JuteWriter) => void } {
  switch (request.op) {
    case "create": {
      const record = {
        path: request.path,
        data: request.data,
        acl: [...(request.acl.length === 0 ? OPEN_ACL_UNSAFE : request.acl)],
        flags: CREATE_MODE_FLAGS[request.mode],
      };
      if (isTtlMode(request.mode)) return { type: OpCode.createTTL, body: (w) => jute.CreateTTLRequest.write(w, { ...record, ttl: BigInt(request.ttlMs) }) };
      const type = request.mode === "container" ? OpCode.createContainer : OpCode.create2;
      return { type, body: (w) => jute.CreateRequest.write(w, record) };
    }
    case "setData":
      return { type: OpCode.setData, body: (w) => jute.SetDataRequest.write(w, { path: request.path, data: request.data, version: request.version }) };
    case "delete":
      return { type: OpCode.delete, body: (w) => jute.DeleteRequest.write(w, { path: request.path, version: request.version }) };
    case "getData":
      return { type: OpCode.getData, body: (w) => jute.GetDataRequest.write(w, { path: request.path, watch: request.watch }) };
    case "exists":
      return { type: OpCode.exists, body: (w) => jute.ExistsRequest.write(w, { path: request.path, watch: request.watch }) };
    case "getChildren":
      // ZooKeeper.getChildren(path, watch, stat): the opcode whose answer has the node's Stat.
      return { type: OpCode.getChildren2, body: (w) => jute.GetChildren2Request.write(w, { path: request.path, watch: request.watch }) };
    case "sync":
      return { type: OpCode.sync, body: (w) => jute.SyncRequest.write(w, { path: request.path }) };
    case "addWatch":
      return { type: OpCode.addWatch, body: (w) => jute.AddWatchRequest.write(w, { path: request.path, mode: ADD_WATCH_MODE_NUMBERS[request.mode] }) };
    case "reconfig": {
      const { joining, leaving, newMembers, fromConfig } = request;
      return {
        type: OpCode.reconfig,
        body: (w) => jute.ReconfigRequest.write(w, { joiningServers: joining, leavingServers: leaving, newMembers, curConfigId: fromConfig }),
      };
    }
    default:
      throw new Error(`the workload sends no ${request.op}`);
  }
}

/** The Stat in a successful reply to `type`, if its record has one. */
function statOf(type: number, reader: JuteReader): jute.Stat | undefined {
  switch (type) {
    case OpCode.create2:
    case OpCode.createTTL:
    case OpCode.createContainer:
      return jute.Create2Response.read(reader).stat;
    case OpCode.setData:
      return jute.SetDataResponse.read(reader).stat;
    case OpCode.exists:
      return jute.ExistsResponse.read(reader).stat;
    case OpCode.getData:
    case OpCode.reconfig:
      return jute.GetDataResponse.read(reader).stat;
    case OpCode.getChildren2:
      return jute.GetChildren2Response.read(reader).stat;
    default:
      return undefined;
  }
}

/** ZooKeeper's kind: its connections reach the server's connection session under the ZooKeeper door's codec, through the same framing as its socket. */
export const JUTE_CLIENTS: SimClientKind = {
  name: "jute",
  session: (options, host) => new JuteSession(options, host),
  serverEnd(deps, stream, remoteAddress) {
    // ZooKeeper's notification header carries no zxid: the simulator tells it beside the bytes, for the checks.
    const eventZxids = new WeakMap<Uint8Array, number>();
    const codec = new (class extends JuteSessionCodec {
      override event(event: WatchEvent): Uint8Array {
        const frame = super.event(event);
        eventZxids.set(frame, event.zxid);
        return frame;
      }
    })();
    const session = new ConnectionSession(
      deps,
      codec,
      {
        write: (frame) => stream.write(frame, eventZxids.get(frame)),
        refuse: (reason, detail) => stream.refuse(reason, detail),
        finish: () => stream.finish(),
        pauseReading: () => stream.pauseReading(),
        resumeReading: () => stream.resumeReading(),
      },
      remoteAddress,
      [],
      initialAuthInfo(remoteAddress),
    );
    const splitter = new FrameSplitter();
    return {
      receive(bytes) {
        let frames: Uint8Array[];
        try {
          frames = splitter.push(bytes);
        } catch (error) {
          if (error instanceof JuteError) return session.refuse("invalid", `bad frame: ${error.message}`);
          throw error;
        }
        for (const frame of frames) {
          if (!session.reading) return;
          session.receive(frame);
        }
      },
      gone: () => session.gone(),
      get outstanding() {
        return session.outstanding;
      },
    };
  },
};
