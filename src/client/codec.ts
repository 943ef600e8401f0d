/**
 * The SDK's side of proto/client.proto over the code ts-proto generated from it (gen/client.ts):
 * ClientFrame out with the generated encoder, ServerFrame in with the generated strict decoder.
 *
 * The SDK builds the generated messages itself (`RequestOp` is a Request's op, int64s are bigint).
 * What comes in is handed on in the shapes the session machine and the client read: a batch's
 * frames in a flat list (never nested), Stats as the SDK's `Stat` (times as numbers), bytes as
 * Buffers. Whatever the generated decoder refuses under corral's decoding policy (proto/generate.mjs:
 * a truncated frame, a field number 0, a group or stray end-group tag, a field past its message's
 * end, a oneof with two members) and a batch inside a batch throw here; grpc-js then fails the
 * call, which the session handles as a lost connection. Fields it does not read are skipped.
 * test/unit/client-codec.test.ts checks both directions against proto-loader's reflective codec.
 */
import { ClientFrame, ServerFrame } from "../../gen/client.js";
import type { ConnectResponse, OpResult, Pong, Request, Response, WatchEvent } from "../../gen/client.js";
import { encodeFrameBatch } from "../protocol/frame-batch.js";
import { encodeFrame } from "../protocol/frame-encoder.js";
import { statFromWire } from "./convert.js";
import type { Stat } from "./types.js";

/** A request's op, without its xid: what the client builds and the session machine numbers. */
export type RequestOp = NonNullable<Request["op"]>;

/** ClientFrame → protobuf bytes. */
export function encodeClientFrame(frame: ClientFrame): Buffer {
  return encodeFrame(ClientFrame, frame);
}

/** ClientFrame.batch (field 4) around frames already encoded by encodeClientFrame. */
export function encodeClientFrameBatch(frames: readonly Buffer[]): Buffer {
  return encodeFrameBatch(4, frames);
}

export interface DecodedConnectResponse extends Omit<ConnectResponse, "password"> {
  password: Buffer;
}
export interface DecodedOpResult extends Omit<OpResult, "stat" | "data"> {
  stat: Stat | null;
  data: Buffer;
}
export interface DecodedResponse extends Omit<Response, "stat" | "data" | "results" | "saslToken"> {
  stat: Stat | null;
  data: Buffer;
  results: DecodedOpResult[];
  /** A sasl answer's token; empty for none. */
  saslToken: Buffer;
}
export type DecodedWatchEvent = WatchEvent;
export type DecodedServerFrame =
  | { frame: "connect"; connect: DecodedConnectResponse }
  | { frame: "response"; response: DecodedResponse }
  | { frame: "event"; event: DecodedWatchEvent }
  | { frame: "pong"; pong: Pong }
  /** Several frames in one message (protocol version 2), in order; never nested. */
  | { frame: "batch"; frames: DecodedServerFrame[] }
  /** No member this client knows: a protocol violation to the session. */
  | { frame: undefined };

class DecodeError extends Error {
  constructor(message: string) {
    super(`malformed server frame: ${message}`);
    this.name = "DecodeError";
  }
}

/** Protobuf bytes → a server frame. Throws a DecodeError on a malformed frame. */
export function decodeServerFrame(bytes: Buffer): DecodedServerFrame {
  let frame: ServerFrame;
  try {
    frame = ServerFrame.decode(bytes);
  } catch (error) {
    throw new DecodeError((error as Error).message);
  }
  return fromWire(frame, false);
}

function fromWire({ frame }: ServerFrame, inBatch: boolean): DecodedServerFrame {
  switch (frame?.$case) {
    case "response":
      return { frame: "response", response: responseFromWire(frame.response) };
    case "event":
      return { frame: "event", event: frame.event };
    case "pong":
      return { frame: "pong", pong: frame.pong };
    case "connect":
      return { frame: "connect", connect: { ...frame.connect, password: asBuffer(frame.connect.password) } };
    case "batch":
      if (inBatch) throw new DecodeError("a batch inside a batch");
      return { frame: "batch", frames: frame.batch.frames.map((inner) => fromWire(inner, true)) };
    case undefined:
      return { frame: undefined };
  }
}

function responseFromWire(response: Response): DecodedResponse {
  return {
    ...response,
    stat: response.stat === undefined ? null : statFromWire(response.stat),
    data: asBuffer(response.data),
    results: response.results.map(opResultFromWire),
    saslToken: asBuffer(response.saslToken),
  };
}

function opResultFromWire(result: OpResult): DecodedOpResult {
  return { ...result, stat: result.stat === undefined ? null : statFromWire(result.stat), data: asBuffer(result.data) };
}

const EMPTY_BUFFER = Buffer.alloc(0);

/** Bytes decoded from a Buffer are Buffers already; the empty default and the encoder's output are not. */
function asBuffer(bytes: Uint8Array): Buffer {
  if (Buffer.isBuffer(bytes)) return bytes;
  return bytes.byteLength === 0 ? EMPTY_BUFFER : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
