/**
 * A scripted client for the replica scenarios (replica-scenario-cluster.ts): it does only what the
 * script says — connect, resume elsewhere, send one request, ping, hang up — through one door's real
 * codecs at both ends: ZooKeeper's jute records (as ZooKeeper's Java client frames them) or the
 * SDK's protobuf frames, reaching the server's own connection session under that door's codec (the
 * simulator's JUTE_CLIENTS and SDK_CLIENTS server ends). It keeps what a client keeps across
 * connections (session id, password, the last zxid seen) and, as ZooKeeper's clients do, fails
 * every request still pending when its connection goes (CONNECTIONLOSS); it never resends one.
 *
 * Both doors' answers are traced in one form, so the two setData goldens can be read side by side:
 *   c1→2 xid 1 setData /a "v1" version -1 (28 bytes)      a request leaves the client
 *   c1←2 xid 1 zxid 0x100000003 ok version 1 (88 bytes)    its answer arrives
 * with each frame's size on the wire, the one place where the doors differ.
 */
import { decodeServerFrame, encodeClientFrame, type DecodedServerFrame } from "../../src/client/codec.js";
import { CLIENT_PROTOCOL_VERSION } from "../../src/common/constants.js";
import { zkErrorName, ZkErrorCode } from "../../src/common/errors.js";
import type { ClientRequest } from "../../src/replica/requests.js";
import { encodeFrame, FrameSplitter } from "../../src/server/zk-wire/frames.js";
import { JuteReader, JuteWriter } from "../../src/server/zk-wire/jute.js";
import * as jute from "../../src/server/zk-wire/records.js";
import { OpCode, Xid } from "../../src/server/zk-wire/records.js";
import { WatchEventType } from "../../src/store/types.js";
import { formatZxid } from "../../src/store/zxid.js";
import { JUTE_CLIENTS, requestRecord } from "../sim/jute-session.js";
import { requestOp, SDK_CLIENTS } from "../sim/sdk-session.js";
import type { SimServerEnd } from "../sim/sim-session.js";
import { SESSION_TIMEOUT_MS, text, type ReplicaScenario } from "./replica-scenario-cluster.js";

export type Door = "zk" | "sdk";

/** A server frame as the client reads it, the same for both doors. */
type Incoming =
  | { kind: "connected"; sessionId: bigint; password: Uint8Array; timeoutMs: number }
  | { kind: "expired" }
  | { kind: "reply"; xid: number; zxid: bigint; err: number; result: string }
  | { kind: "pong"; zxid: bigint }
  | { kind: "event"; type: number; path: string };

interface ConnectFields {
  sessionId: bigint;
  password: Uint8Array;
  lastZxidSeen: bigint;
}

/** One connection's client-side codec: what the client writes, and what it makes of what arrives. */
interface ClientCodec {
  connect(fields: ConnectFields): Uint8Array;
  request(xid: number, request: ClientRequest): Uint8Array;
  ping(): Uint8Array;
  read(bytes: Uint8Array): Incoming[];
}

/** ZooKeeper's Java client: length-prefixed jute records; a reply's record follows its request's opcode. */
class JuteClientCodec implements ClientCodec {
  private readonly splitter = new FrameSplitter();
  private connected = false;
  private readonly opcodes = new Map<number, number>();

  connect(fields: ConnectFields): Uint8Array {
    const { sessionId, password, lastZxidSeen } = fields;
    return encodeFrame(
      jute.encodeRecord(jute.ConnectRequest, { protocolVersion: 0, lastZxidSeen, timeOut: SESSION_TIMEOUT_MS, sessionId, passwd: password, readOnly: false }),
    );
  }

  request(xid: number, request: ClientRequest): Uint8Array {
    const { type, body } = requestRecord(request);
    this.opcodes.set(xid, type);
    const writer = new JuteWriter();
    jute.RequestHeader.write(writer, { xid, type });
    body(writer);
    return encodeFrame(writer.toBytes());
  }

  ping(): Uint8Array {
    const writer = new JuteWriter();
    jute.RequestHeader.write(writer, { xid: Xid.ping, type: OpCode.ping });
    return encodeFrame(writer.toBytes());
  }

  read(bytes: Uint8Array): Incoming[] {
    return this.splitter.push(bytes).map((frame) => {
      if (!this.connected) {
        this.connected = true;
        const answer = jute.decodeRecord(jute.ConnectResponse, frame);
        if (answer.timeOut <= 0) return { kind: "expired" };
        return { kind: "connected", sessionId: answer.sessionId, password: answer.passwd ?? new Uint8Array(0), timeoutMs: answer.timeOut };
      }
      const reader = new JuteReader(frame);
      const { xid, zxid, err } = jute.ReplyHeader.read(reader);
      if (xid === Xid.ping) return { kind: "pong", zxid };
      if (xid === Xid.notification) {
        const event = jute.WatcherEvent.read(reader);
        return { kind: "event", type: event.type, path: event.path ?? "" };
      }
      const type = this.opcodes.get(xid);
      this.opcodes.delete(xid);
      return { kind: "reply", xid, zxid, err, result: err === ZkErrorCode.OK && type !== undefined ? juteResult(type, reader) : "" };
    });
  }
}

function juteResult(type: number, reader: JuteReader): string {
  switch (type) {
    case OpCode.create2:
      return jute.Create2Response.read(reader).path ?? "";
    case OpCode.setData:
      return `version ${jute.SetDataResponse.read(reader).stat.version}`;
    case OpCode.exists:
      return `version ${jute.ExistsResponse.read(reader).stat.version}`;
    case OpCode.getData: {
      const { data, stat } = jute.GetDataResponse.read(reader);
      return `${text(data ?? new Uint8Array(0))} version ${stat.version}`;
    }
    default:
      return "";
  }
}

/** The SDK: protobuf ClientFrames out, ServerFrames (perhaps batched) in. */
class SdkClientCodec implements ClientCodec {
  connect(fields: ConnectFields): Uint8Array {
    const { sessionId, password, lastZxidSeen } = fields;
    return encodeClientFrame({
      frame: {
        $case: "connect",
        connect: { protocolVersion: CLIENT_PROTOCOL_VERSION, lastZxidSeen, timeoutMs: SESSION_TIMEOUT_MS, sessionId, password, readOnlyAllowed: false },
      },
    });
  }

  request(xid: number, request: ClientRequest): Uint8Array {
    return encodeClientFrame({ frame: { $case: "request", request: { xid, op: requestOp(request) } } });
  }

  ping(): Uint8Array {
    return encodeClientFrame({ frame: { $case: "ping", ping: {} } });
  }

  read(bytes: Uint8Array): Incoming[] {
    return sdkIncoming(decodeServerFrame(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)));
  }
}

function sdkIncoming(frame: DecodedServerFrame): Incoming[] {
  switch (frame.frame) {
    case "connect": {
      const { err, sessionId, password, timeoutMs } = frame.connect;
      return [err === ZkErrorCode.OK ? { kind: "connected", sessionId, password, timeoutMs } : { kind: "expired" }];
    }
    case "response": {
      const { xid, zxid, err, path, stat, data } = frame.response;
      const result =
        err !== ZkErrorCode.OK
          ? ""
          : path !== ""
            ? path
            : stat === null
              ? ""
              : data.byteLength > 0
                ? `${text(data)} version ${stat.version}`
                : `version ${stat.version}`;
      return [{ kind: "reply", xid, zxid, err, result }];
    }
    case "pong":
      return [{ kind: "pong", zxid: frame.pong.zxid }];
    case "event":
      return [{ kind: "event", type: frame.event.type, path: frame.event.path }];
    case "batch":
      return frame.frames.flatMap(sdkIncoming);
    case undefined:
      throw new Error("a server frame the SDK does not know");
  }
}

interface Connection {
  readonly serverId: number;
  readonly codec: ClientCodec;
  /** The server's end, once the connection reached a running server. */
  end: SimServerEnd | undefined;
  incarnation: number;
  closed: boolean;
}

export class ScriptedClient {
  private sessionId = 0n;
  private password: Uint8Array = new Uint8Array(16);
  private lastZxidSeen = 0n;
  private nextXid = 1;
  private conn: Connection | undefined;
  /** Requests sent on the open connection and not answered, in order. */
  private pending: { xid: number; request: ClientRequest }[] = [];

  constructor(
    readonly name: string,
    readonly door: Door,
    private readonly scenario: ReplicaScenario,
  ) {
    scenario.crashListeners.push((serverId) => {
      const conn = this.conn;
      if (conn?.serverId === serverId) this.scenario.send(() => this.lost(conn, "the server crashed"));
    });
  }

  /** Opens a connection to `serverId`: a new session, or (once it has one) the same session resumed there. */
  connect(serverId: number): void {
    if (this.conn !== undefined) this.hangUp();
    const conn: Connection = {
      serverId,
      codec: this.door === "zk" ? new JuteClientCodec() : new SdkClientCodec(),
      end: undefined,
      incarnation: 0,
      closed: false,
    };
    this.conn = conn;
    const what = this.sessionId === 0n ? "a new session" : `session ${this.scenario.sessionName(this.sessionId)}`;
    const door = this.door === "zk" ? "ZooKeeper" : "gRPC";
    this.scenario.send(() => this.accept(conn));
    this.write(
      conn,
      `connect: ${what}, last zxid seen ${formatZxid(Number(this.lastZxidSeen))} (${door} door)`,
      conn.codec.connect({ sessionId: this.sessionId, password: this.password, lastZxidSeen: this.lastZxidSeen }),
    );
  }

  submit(request: ClientRequest): void {
    const conn = this.conn;
    if (conn === undefined) throw new Error(`${this.name} has no connection`);
    const xid = this.nextXid++;
    this.pending.push({ xid, request });
    this.write(conn, `xid ${xid} ${describeRequest(request)}`, conn.codec.request(xid, request));
  }

  ping(): void {
    const conn = this.conn;
    if (conn === undefined) throw new Error(`${this.name} has no connection`);
    this.write(conn, "ping", conn.codec.ping());
  }

  /** The client gives up on its server (ZooKeeper's does after two thirds of the session timeout without a word) and closes its end. */
  hangUp(): void {
    const conn = this.conn;
    if (conn === undefined) return;
    this.lost(conn, "the client hung up");
    this.scenario.send(() => {
      if (conn.end !== undefined && this.scenario.isRunning(conn.serverId, conn.incarnation)) conn.end.gone();
    });
  }

  // ---- the connection

  private accept(conn: Connection): void {
    if (conn.closed) return;
    const door = this.scenario.door(conn.serverId);
    if (door === undefined) return this.lost(conn, "connection refused");
    conn.incarnation = door.incarnation;
    const stream = {
      write: (frame: Uint8Array) => this.scenario.send(() => this.receive(conn, frame)),
      refuse: (reason: string, detail: string) => this.scenario.send(() => this.lost(conn, `refused (${reason}): ${detail}`)),
      finish: () => this.scenario.send(() => this.lost(conn, "the server ended the connection")),
      // The scripts' few small requests never reach an inbound bound.
      pauseReading: () => {},
      resumeReading: () => {},
    };
    const kind = this.door === "zk" ? JUTE_CLIENTS : SDK_CLIENTS;
    conn.end = kind.serverEnd(door.deps, stream, `10.0.0.${this.name.slice(1)}`);
  }

  /** Sends one frame, traced with its size on the wire. */
  private write(conn: Connection, what: string, bytes: Uint8Array): void {
    this.scenario.trace(`${this.name}→${conn.serverId} ${what} (${bytes.byteLength} bytes)`);
    this.scenario.send(() => {
      if (!conn.closed && conn.end !== undefined && this.scenario.isRunning(conn.serverId, conn.incarnation)) conn.end.receive(bytes);
    });
  }

  private receive(conn: Connection, bytes: Uint8Array): void {
    if (conn.closed) return;
    const frames = conn.codec.read(bytes);
    const size = frames.length === 1 ? `${bytes.byteLength} bytes` : `one of ${frames.length} in ${bytes.byteLength} bytes`;
    for (const incoming of frames) this.scenario.trace(`${this.name}←${conn.serverId} ${this.read(incoming)} (${size})`);
  }

  /** Takes in one server frame; what the trace says of it. */
  private read(incoming: Incoming): string {
    switch (incoming.kind) {
      case "connected":
        this.sessionId = incoming.sessionId;
        this.password = incoming.password;
        return `connected: session ${this.scenario.sessionName(incoming.sessionId)}, timeout ${incoming.timeoutMs} ms`;
      case "expired":
        return "session expired";
      case "pong":
        return `pong zxid ${formatZxid(Number(incoming.zxid))}`;
      case "event":
        return `event ${eventName(incoming.type)} ${incoming.path}`;
      case "reply": {
        const head = this.pending.shift();
        const order = head?.xid === incoming.xid ? "" : ` OUT OF ORDER (expected xid ${head?.xid ?? "none"})`;
        if (incoming.zxid > this.lastZxidSeen) this.lastZxidSeen = incoming.zxid;
        const result = incoming.err === ZkErrorCode.OK ? `ok${incoming.result === "" ? "" : ` ${incoming.result}`}` : errorName(incoming.err);
        return `xid ${incoming.xid} zxid ${formatZxid(Number(incoming.zxid))} ${result}${order}`;
      }
    }
  }

  /** The connection is over: every request still pending on it fails, as ZooKeeper's clients fail them. */
  private lost(conn: Connection, why: string): void {
    if (conn.closed) return;
    conn.closed = true;
    if (this.conn === conn) this.conn = undefined;
    const failed = this.pending.splice(0).map((p) => `; xid ${p.xid} fails CONNECTIONLOSS`);
    this.scenario.trace(`${this.name}✗${conn.serverId} connection lost: ${why}${failed.join("")}`);
  }
}

function describeRequest(request: ClientRequest): string {
  switch (request.op) {
    case "create":
      return `create ${request.path} ${text(request.data)}`;
    case "setData":
      return `setData ${request.path} ${text(request.data)} version ${request.version}`;
    case "delete":
      return `delete ${request.path} version ${request.version}`;
    case "getData":
    case "exists":
      return `${request.op} ${request.path}${request.watch ? " watch" : ""}`;
    case "sync":
      return `sync ${request.path}`;
    default:
      return request.op;
  }
}

function errorName(err: number): string {
  return zkErrorName(err) ?? `error ${err}`;
}

function eventName(type: number): string {
  return Object.entries(WatchEventType).find(([, value]) => value === type)?.[0] ?? `event type ${type}`;
}
