/**
 * The gRPC door's records and policy for the connection session both doors share (src/replica/connection-session.ts):
 * frames decoded by client-frame-codec.ts in, ServerFrame bytes out. The connect settles the
 * protocol version (the lower of the client's and ours; from version 2 answers may share a
 * message), a negative last zxid refuses the stream, and an expired session is told in a
 * ConnectResponse carrying SESSIONEXPIRED. A SaslRequest is answered, as ZooKeeper answers a sasl
 * packet, once evaluated, with zxid 0 and the server's token in `sasl_token`.
 */
import { CLIENT_PROTOCOL_BATCHES_SINCE, CLIENT_PROTOCOL_VERSION } from "../common/constants.js";
import { ZkErrorCode } from "../common/errors.js";
import type { WatchEvent } from "../store/types.js";
import type { ConnectionSession, ConnectFrameRead, EstablishedSession, ReplyFrame, SessionCodec, SessionFrame } from "../replica/connection-session.js";
import { EMPTY_BODY, type Reply } from "../replica/requests.js";
import {
  encodeConnectResponseFrame,
  encodeEventFrame,
  encodePongFrame,
  encodeResponseFrame,
  encodeSaslResponseFrame,
  MALFORMED,
  type DecodedClientFrame,
  type IncomingFrame,
} from "./client-frame-codec.js";

const EMPTY = new Uint8Array(0);

export type GrpcConnectionSession = ConnectionSession<DecodedClientFrame, Buffer>;

export class GrpcSessionCodec implements SessionCodec<DecodedClientFrame, Buffer> {
  readonly authFailureEndsReading = false;
  /** The version settled in the connect exchange: the lower of the client's and ours. */
  private protocolVersion = CLIENT_PROTOCOL_VERSION;

  get answersBatch(): boolean {
    return this.protocolVersion >= CLIENT_PROTOCOL_BATCHES_SINCE;
  }

  readConnect(frame: DecodedClientFrame): ConnectFrameRead {
    if (frame.frame !== "connect") return { frame: "invalid", detail: "the first frame must be connect" };
    // A newer client is answered in our version and speaks it from then on (it knows every older one).
    this.protocolVersion = Math.min(frame.protocolVersion, CLIENT_PROTOCOL_VERSION);
    // Any 64-bit zxid is well-formed (one beyond this server means it is behind); a negative one is not.
    if (frame.lastZxidSeen < 0n) return { frame: "invalid", detail: `bad zxid ${frame.lastZxidSeen}` };
    const request = {
      sessionId: frame.sessionId,
      password: frame.password,
      requestedTimeoutMs: frame.timeoutMs,
      lastZxidSeen: frame.lastZxidSeen,
      // An old client never sends the field: it reads false, and such a client is never served read-only.
      readOnlyAllowed: frame.readOnlyAllowed,
    };
    return { frame: "connect", request };
  }

  readFrame(frame: DecodedClientFrame): SessionFrame {
    return frame.frame === "connect" ? { frame: "invalid", detail: "connect on an established session" } : frame;
  }

  established(session: EstablishedSession): Buffer {
    return encodeConnectResponseFrame({ protocolVersion: this.protocolVersion, err: 0, ...session });
  }

  expired(serverId: number): Buffer {
    return encodeConnectResponseFrame({
      protocolVersion: this.protocolVersion,
      timeoutMs: 0,
      sessionId: 0n,
      password: EMPTY,
      err: ZkErrorCode.SESSIONEXPIRED,
      lastZxid: 0,
      serverId,
      readOnly: false,
    });
  }

  pong(zxid: number): Buffer {
    return encodePongFrame(zxid);
  }

  reply(xid: number, reply: Reply): ReplyFrame<Buffer> {
    return { frame: encodeResponseFrame(xid, reply), last: false };
  }

  event(event: WatchEvent): Buffer {
    return encodeEventFrame(event);
  }

  saslAnswer(xid: number, err: number, token: Uint8Array | null): Buffer {
    return encodeSaslResponseFrame(xid, err, token);
  }

  /** A request is answered SESSIONCLOSEDREQUIRESASLAUTH (zxid 0), as on the ZooKeeper port; a ping is not answered. */
  authenticationRequired(frame: SessionFrame): Buffer | undefined {
    if (frame.frame !== "request" && frame.frame !== "rejected") return undefined;
    return encodeResponseFrame(frame.xid, { err: ZkErrorCode.SESSIONCLOSEDREQUIRESASLAUTH, zxid: 0, body: EMPTY_BODY });
  }
}

/**
 * Hands a decoded message to the session: a message that did not decode refuses the stream, and a
 * batch (protocol 2) is its frames in order.
 */
export function receiveClientFrame(session: GrpcConnectionSession, frame: IncomingFrame): void {
  if (frame === MALFORMED) return session.refuse("invalid", "malformed frame");
  if (frame.frame !== "batch") return session.receive(frame);
  for (const inner of frame.frames) session.receive(inner);
}
