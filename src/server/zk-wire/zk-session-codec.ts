/**
 * The ZooKeeper door's records and policy for the connection session both doors share
 * (src/replica/connection-session.ts): jute frames in (the record after the length prefix), framed
 * jute records out, as ZooKeeper 3.8's server reads and writes them.
 *
 * What is ZooKeeper's own here: a negative last zxid is taken as "seen nothing"; the connect
 * answer carries the readOnly byte only when the client's connect had one; a resume of a session
 * that is gone is answered with timeout 0 (the client reports expiry) before the connection ends;
 * each reply's record follows its request's opcode (the xid → ReplyShape bookkeeping: a reply
 * finds its request by xid, as requests with the same reserved xid are answered in order); an auth
 * packet is answered with zxid 0, and a failed one is the last frame read; a sasl packet's token
 * goes to the door's SASL (a null one closes the connection) and its answer has zxid 0; an opcode
 * ZooKeeper does not know is answered UNIMPLEMENTED and is the last frame read; a client that has
 * not authenticated as enforce.auth requires is answered SESSIONCLOSEDREQUIRESASLAUTH (zxid 0)
 * for its request or ping, its body unread. A record that does not decode refuses the connection
 * (ZooKeeper closes it without an answer).
 *
 * Pure: no sockets, no clocks (what the connection statistics need is told to an observer).
 */
import { ZkErrorCode } from "../../common/errors.js";
import type { WatchEvent } from "../../store/types.js";
import type { ConnectFrameRead, EstablishedSession, ReplyFrame, SessionCodec, SessionFrame } from "../../replica/connection-session.js";
import type { Reply } from "../../replica/requests.js";
import { SESSION_PASSWORD_BYTES } from "../../replica/session-opener.js";
import { encodeFrame } from "./frames.js";
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

/** Told what the codec reads and answers, for the connection's statistics (cons, mntr). */
export interface JuteRequestObserver {
  /** A request header was read (a ping's too); returns a mark handed back with its answer. */
  read(xid: number, type: number): number;
  /** A request read with `mark` was answered at `zxid`. */
  answered(mark: number, zxid: number): void;
  /** The connect was answered: the session is established. */
  established(): void;
}

interface AwaitedReply {
  xid: number;
  shape: ReplyShape;
  mark: number;
}

export class JuteSessionCodec implements SessionCodec<Uint8Array, Uint8Array> {
  readonly answersBatch = false;
  /** ZooKeeper stops reading a connection whose auth failed: its AUTHFAILED answer is the last. */
  readonly authFailureEndsReading = true;
  /** Requests read and not answered, in the order their answers come. */
  private readonly awaiting: AwaitedReply[] = [];
  /** Whether the client's ConnectRequest had the readOnly byte: then the answers have it too. */
  private answerReadOnly = false;

  constructor(private readonly observer?: JuteRequestObserver) {}

  /** Requests read and not yet answered. */
  get outstandingRequests(): number {
    return this.awaiting.length;
  }

  readConnect(frame: Uint8Array): ConnectFrameRead {
    let connect: ConnectRequest;
    try {
      connect = decodeRecord(ConnectRequest, frame);
    } catch (error) {
      if (error instanceof JuteError) return { frame: "invalid", detail: `malformed ConnectRequest: ${error.message}` };
      throw error;
    }
    this.answerReadOnly = connect.readOnly !== undefined;
    const request = {
      sessionId: connect.sessionId,
      password: connect.passwd ?? new Uint8Array(0),
      requestedTimeoutMs: connect.timeOut,
      // A negative zxid is not one; ZooKeeper takes it as "seen nothing", and so do we.
      lastZxidSeen: connect.lastZxidSeen < 0n ? 0n : connect.lastZxidSeen,
      readOnlyAllowed: connect.readOnly === true,
    };
    return { frame: "connect", request };
  }

  readFrame(frame: Uint8Array): SessionFrame {
    const reader = new JuteReader(frame);
    let header: { xid: number; type: number };
    try {
      header = RequestHeader.read(reader);
    } catch (error) {
      if (error instanceof JuteError) return { frame: "invalid", detail: `malformed request: ${error.message}` };
      throw error;
    }
    const { xid, type } = header;
    const mark = this.observer?.read(xid, type) ?? 0;
    try {
      if (type === OpCode.sasl) {
        const token = GetSASLRequest.read(reader).token;
        // A null token throws out of ZooKeeper's packet handling, which drops the connection.
        return token === null ? { frame: "invalid", detail: "a sasl packet without a token" } : { frame: "sasl", xid, token };
      }
    } catch (error) {
      if (error instanceof JuteError) return { frame: "invalid", detail: `malformed request: ${error.message}` };
      throw error;
    }
    if (type === OpCode.ping) return { frame: "ping", xid };
    try {
      return this.readRequest(reader, xid, type, mark);
    } catch (error) {
      // The header was read: enforce.auth answers before the body is looked at, as ZooKeeper does.
      if (error instanceof JuteError) return { frame: "invalid", detail: `malformed request: ${error.message}`, xid };
      throw error;
    }
  }

  established(session: EstablishedSession): Uint8Array {
    this.observer?.established();
    return this.connectResponse(session.timeoutMs, session.sessionId, session.password, session.readOnly);
  }

  /** ZooKeeper's answer to a dead session: timeout 0, which the client reports as expiry. */
  expired(): Uint8Array {
    return this.connectResponse(0, 0n, new Uint8Array(SESSION_PASSWORD_BYTES), false);
  }

  pong(zxid: number): Uint8Array {
    return encodeFrame(encodeReply({ xid: Xid.ping, zxid: BigInt(zxid), err: 0 }));
  }

  reply(xid: number, reply: Reply): ReplyFrame<Uint8Array> | undefined {
    const at = this.awaiting.findIndex((sent) => sent.xid === xid);
    if (at < 0) return undefined; // not one of ours (a request of the session's earlier connection)
    const [sent] = this.awaiting.splice(at, 1) as [AwaitedReply];
    this.observer?.answered(sent.mark, reply.zxid);
    const { shape } = sent;
    if (shape.type === OpCode.auth) {
      // ZooKeeper answers an auth packet with zxid 0, and a failed one closes the connection.
      return { frame: encodeFrame(encodeReply({ xid, zxid: 0n, err: reply.err })), last: reply.err === ZkErrorCode.AUTHFAILED };
    }
    return { frame: encodeFrame(encodeZkReply(xid, shape, reply)), last: shape.closeAfter === true };
  }

  event(event: WatchEvent): Uint8Array {
    return encodeFrame(encodeNotification({ type: event.type, state: SYNC_CONNECTED, path: event.path }));
  }

  /** ZooKeeper's AuthenticationHelper.enforceAuthentication: the request's xid, zxid 0, SESSIONCLOSEDREQUIRESASLAUTH. */
  authenticationRequired(frame: SessionFrame): Uint8Array | undefined {
    if (!("xid" in frame) || frame.xid === undefined) return undefined;
    return encodeFrame(encodeReply({ xid: frame.xid, zxid: 0n, err: ZkErrorCode.SESSIONCLOSEDREQUIRESASLAUTH }));
  }

  /** ZooKeeper answers a sasl packet when it is evaluated, with zxid 0. */
  saslAnswer(xid: number, err: number, token: Uint8Array | null): Uint8Array {
    return encodeFrame(encodeReply({ xid, zxid: 0n, err }, { codec: SetSASLResponse, value: { token } }));
  }

  private readRequest(reader: JuteReader, xid: number, type: number, mark: number): SessionFrame {
    const mapping = toClientRequest(type, requestBodyCodec(type)?.read(reader));
    // A frame ZooKeeper fails on outside any request's answer: the connection ends, unanswered.
    if ("close" in mapping) return { frame: "invalid", detail: mapping.close, xid };
    this.awaiting.push({ xid, shape: mapping.shape, mark });
    // Nothing after a request that ends the connection is read, as ZooKeeper stops reading it.
    const last = mapping.shape.closeAfter === true;
    if ("reject" in mapping) return { frame: "rejected", xid, err: mapping.reject, last, addAuth: type === OpCode.auth };
    return { frame: "request", xid, request: mapping.request, last };
  }

  /** `readOnly`: the server serves this session read-only (told only to a client that sent the flag: only it can be). */
  private connectResponse(timeoutMs: number, sessionId: bigint, password: Uint8Array, readOnly: boolean): Uint8Array {
    const response: ConnectResponse = {
      protocolVersion: 0,
      timeOut: timeoutMs,
      sessionId,
      passwd: password,
      readOnly: this.answerReadOnly ? readOnly : undefined,
    };
    return encodeFrame(encodeRecord(ConnectResponse, response));
  }
}
