/**
 * The server's side of proto/client.proto by hand: ClientFrame bytes → the server's own records
 * (src/server/requests.ts), and ServerFrame bytes straight from its Reply / WatchEvent / connect
 * answer, with int64s written from numbers and bigints (no decimal-string detour through `long`).
 * The SDK's direction lives in src/client/codec.ts; the encoding primitives both use are in
 * src/protocol/proto-writer.ts.
 *
 * Decoding gives every input — well-formed or garbage — exactly the outcome the reflective path
 * gave (@grpc/proto-loader with CLIENT_PROTO_OPTIONS, i.e. protobufjs 7, followed by the
 * conversions of src/server/wire-codec.ts), which test/unit/client-frame-codec.test.ts checks on
 * generated and mutated frames. That means mirroring protobufjs where it departs from a strict
 * decoder:
 * - a known field is read as its declared type whatever wire type its tag carries;
 * - a repeated message field (a oneof member, a submessage) replaces the earlier one, no merge;
 * - of several members of one oneof, the one declared last wins;
 * - a string whose length runs past its message is cut at the message's end, not refused;
 * - varints follow protobufjs's readers: a 32-bit varint with a fifth continuation byte skips five
 *   more bytes unread, and a 64-bit varint with at most four bytes left in its message ends at
 *   the fourth byte;
 * - nested unknown groups are skipped up to protobufjs's recursion limit.
 * Anything protobufjs refused decodes to MALFORMED; nothing throws out of `decodeClientFrame`.
 *
 * Semantic checks (create mode, TTL, ACL entries without an id, zxids, addWatch modes, watcher
 * types) turn a request into a `rejected` frame carrying the ZooKeeper error code it is answered
 * with, as before.
 */
import { CREATE_MODES_BY_FLAG } from "../common/znode.js";
import { ZkErrorCode } from "../common/errors.js";
import { limits } from "../common/constants.js";
import { addWatchModeOf, watcherTypeOf, type WatcherType } from "../common/watch-modes.js";
import {
  bytesFieldSize,
  encodeFrameBatch,
  int32FieldSize,
  int32Size,
  messageFieldSize,
  sint32FieldSize,
  stringFieldSize,
  tag,
  uint32FieldSize,
  utf8Length,
  varint32Size,
  varint64Size,
  WIRE_LEN,
  WIRE_VARINT,
  writeBytesField,
  writeInt32Field,
  writeMessageHeader,
  writeSint32Field,
  writeStringField,
  writeUint32Field,
  Writer,
} from "../protocol/proto-writer.js";
import { decodeUtf8 } from "../protocol/utf8.js";
import type { Acl, OpResult, Stat, WatchEvent } from "../store/types.js";
import type { ClientInfo } from "../replica/acl.js";
import type { ClientRequest, CreateRequest, MultiOpRequest, MultiReadOpRequest, ReadOpResult, Reply } from "../replica/requests.js";

// -------------------------------------------------------------------------------------------------
// Decoded frames.

/** A frame protobufjs would not have decoded, or one that carries no frame member. */
export const MALFORMED = Symbol("malformed frame");

export interface ConnectFrame {
  frame: "connect";
  protocolVersion: number;
  /** Signed, as sent: a negative value is the caller's BADARGUMENTS to report. */
  lastZxidSeen: bigint;
  timeoutMs: number;
  sessionId: bigint;
  password: Buffer;
}
export interface RequestFrame {
  frame: "request";
  xid: number;
  request: ClientRequest;
}
/** A request that decoded but cannot be run: answered with `err` in its place in the session's order. */
export interface RejectedFrame {
  frame: "rejected";
  xid: number;
  err: number;
}
export interface PingFrame {
  frame: "ping";
}
/** Several frames a client packed into one message (protocol version 2); never nested. */
export interface BatchFrame {
  frame: "batch";
  frames: DecodedClientFrame[];
}

export type DecodedClientFrame = ConnectFrame | RequestFrame | RejectedFrame | PingFrame;
export type IncomingFrame = DecodedClientFrame | BatchFrame | typeof MALFORMED;

const PING: PingFrame = Object.freeze({ frame: "ping" });
const EMPTY_BUFFER: Buffer = Buffer.alloc(0);
const TWO_32 = 4294967296;
/** Below this high half, hi * 2^32 + lo is a safe integer. */
const SAFE_HI = 0x200000;
/** protobufjs's util.recursionLimit. */
const RECURSION_LIMIT = 100;

const { BADARGUMENTS, INVALIDACL, UNIMPLEMENTED } = ZkErrorCode;

/** Thrown inside the decoder only; `decodeClientFrame` turns it into MALFORMED. */
class Malformed extends Error {}
const MALFORMED_INPUT = new Malformed("malformed client frame");

/** A reader with protobufjs 7's exact semantics (see the file comment). */
class Reader {
  pos = 0;
  /** End of the message being read. */
  len: number;
  /** Halves of the last 64-bit varint read. */
  lo = 0;
  hi = 0;

  constructor(readonly buf: Buffer) {
    this.len = buf.length;
  }

  /** protobufjs Reader#uint32. */
  uint32(): number {
    const buf = this.buf;
    let pos = this.pos;
    if (this.len - pos < 5) {
      if (pos >= this.len) throw MALFORMED_INPUT;
      if ((buf[pos] as number) >= 128) {
        // readVarint32NearEnd: at most four bytes, all inside the message.
        let value = 0;
        for (let i = 0; i < 4; i++) {
          if (pos >= this.len) throw MALFORMED_INPUT;
          const b = buf[pos++] as number;
          value = (value | ((b & 127) << (i * 7))) >>> 0;
          if (b < 128) {
            this.pos = pos;
            return value;
          }
        }
        throw MALFORMED_INPUT;
      }
    }
    let b = buf[pos++] as number;
    let value = b & 127;
    if (b < 128) {
      this.pos = pos;
      return value;
    }
    b = buf[pos++] as number;
    value = (value | ((b & 127) << 7)) >>> 0;
    if (b < 128) {
      this.pos = pos;
      return value;
    }
    b = buf[pos++] as number;
    value = (value | ((b & 127) << 14)) >>> 0;
    if (b < 128) {
      this.pos = pos;
      return value;
    }
    b = buf[pos++] as number;
    value = (value | ((b & 127) << 21)) >>> 0;
    if (b < 128) {
      this.pos = pos;
      return value;
    }
    b = buf[pos++] as number;
    value = (value | ((b & 15) << 28)) >>> 0;
    if (b < 128) {
      this.pos = pos;
      return value;
    }
    // Five more bytes, taken unread.
    pos += 5;
    if (pos > this.len) throw MALFORMED_INPUT;
    this.pos = pos;
    return value;
  }

  int32(): number {
    return this.uint32() | 0;
  }

  sint32(): number {
    const value = this.uint32();
    return ((value >>> 1) ^ -(value & 1)) | 0;
  }

  bool(): boolean {
    return this.uint32() !== 0;
  }

  /** protobufjs's readLongVarint: the value's halves land in lo / hi. */
  varint64(): void {
    const buf = this.buf;
    let pos = this.pos;
    let lo = 0;
    let b: number;
    if (this.len - pos > 4) {
      for (let i = 0; i < 4; i++) {
        b = buf[pos++] as number;
        lo = (lo | ((b & 127) << (i * 7))) >>> 0;
        if (b < 128) return this.done64(pos, lo, 0);
      }
      b = buf[pos++] as number;
      lo = (lo | ((b & 127) << 28)) >>> 0;
      let hi = ((b & 127) >> 4) >>> 0;
      if (b < 128) return this.done64(pos, lo, hi);
      for (let i = 0; i < 5; i++) {
        if (pos >= this.len) throw MALFORMED_INPUT;
        b = buf[pos++] as number;
        hi = (hi | ((b & 127) << (i * 7 + 3))) >>> 0;
        if (b < 128) return this.done64(pos, lo, hi);
      }
      throw MALFORMED_INPUT; // "invalid varint encoding"
    }
    for (let i = 0; i < 3; i++) {
      if (pos >= this.len) throw MALFORMED_INPUT;
      b = buf[pos++] as number;
      lo = (lo | ((b & 127) << (i * 7))) >>> 0;
      if (b < 128) return this.done64(pos, lo, 0);
    }
    // protobufjs takes a fourth byte as the last whatever it says; past the message's end it
    // leaves the reader beyond the message, which its caller then refuses.
    if (pos >= this.len) throw MALFORMED_INPUT;
    b = buf[pos++] as number;
    lo = (lo | ((b & 127) << 21)) >>> 0;
    return this.done64(pos, lo, 0);
  }

  private done64(pos: number, lo: number, hi: number): void {
    this.pos = pos;
    this.lo = lo;
    this.hi = hi;
  }

  /** An int64 as protobufjs's Long would print it, as a signed bigint. */
  int64BigInt(): bigint {
    this.varint64();
    const hi = this.hi;
    if (hi < SAFE_HI) return BigInt(hi * TWO_32 + this.lo);
    return BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(this.lo));
  }

  /** An int64 that must be a non-negative safe integer (Number(decimal string) checked so); -1 otherwise. */
  int64SafeNonNegative(): number {
    this.varint64();
    return this.hi < SAFE_HI ? this.hi * TWO_32 + this.lo : -1;
  }

  /** BufferReader#string: the length is clamped to the message's end. */
  string(): string {
    const length = this.uint32();
    const start = this.pos;
    const end = Math.min(start + length, this.len);
    this.pos = end;
    return decodeUtf8(this.buf, start, end);
  }

  /** Reader#bytes: a view into the frame (as protobufjs gives), refused past the message's end. */
  bytes(): Buffer {
    const length = this.uint32();
    const start = this.pos;
    const end = start + length;
    if (end > this.len) throw MALFORMED_INPUT;
    this.pos = end;
    return start === end ? EMPTY_BUFFER : this.buf.subarray(start, end);
  }

  /** Reader#skipType. */
  skipType(wireType: number, depth: number): void {
    if (depth > RECURSION_LIMIT) throw MALFORMED_INPUT;
    switch (wireType) {
      case 0: {
        const buf = this.buf;
        let b: number;
        do {
          if (this.pos >= this.len) throw MALFORMED_INPUT;
          b = buf[this.pos++] as number;
        } while (b & 128);
        return;
      }
      case 1:
        return this.skip(8);
      case 2:
        return this.skip(this.uint32());
      case 3:
        for (;;) {
          const inner = this.uint32() & 7;
          if (inner === 4) return;
          this.skipType(inner, depth + 1);
        }
      case 5:
        return this.skip(4);
      default:
        throw MALFORMED_INPUT;
    }
  }

  private skip(length: number): void {
    if (this.pos + length > this.len) throw MALFORMED_INPUT;
    this.pos += length;
  }

  /** Enters a length-delimited submessage; returns the outer end, for `leave`. */
  enter(): number {
    const length = this.uint32();
    const end = this.pos + length;
    if (end > this.len) throw MALFORMED_INPUT;
    const outer = this.len;
    this.len = end;
    return outer;
  }

  /** Leaves a submessage, which must have been read exactly to its end. */
  leave(outer: number): void {
    if (this.pos !== this.len) throw MALFORMED_INPUT;
    this.len = outer;
  }
}

// -------------------------------------------------------------------------------------------------
// Decoding. Each message function reads one length-delimited submessage at nesting depth `depth`
// (ClientFrame is 0) and returns the record it converts to, or an error code for a request the
// server answers with an error.

/**
 * ClientFrame bytes → the frame the connection acts on. Never throws: whatever protobufjs would
 * have refused, and a frame with no member, is MALFORMED.
 */
export function decodeClientFrame(bytes: Buffer): IncomingFrame {
  try {
    return readClientFrame(new Reader(bytes));
  } catch {
    return MALFORMED;
  }
}

function readClientFrame(r: Reader, depth = 0): IncomingFrame {
  let connect: ConnectFrame | undefined;
  let request: RequestFrame | RejectedFrame | undefined;
  let ping = false;
  let batch: IncomingFrame[] | undefined;
  while (r.pos < r.len) {
    const t = r.uint32();
    switch (t >>> 3) {
      case 1:
        connect = readConnect(r);
        break;
      case 2:
        request = readRequest(r, depth + 1);
        break;
      case 3:
        readEmpty(r, depth + 1);
        ping = true;
        break;
      case 4:
        batch = readBatch(r, depth + 1);
        break;
      default:
        r.skipType(t & 7, depth);
    }
  }
  // proto-loader's oneof discriminator names the member declared last among those present.
  if (batch) {
    // Batches do not nest, and one frame that is not a frame spoils its batch.
    if (depth > 0 || batch.some((frame) => frame === MALFORMED || frame.frame === "batch")) return MALFORMED;
    return { frame: "batch", frames: batch as DecodedClientFrame[] };
  }
  if (ping) return PING;
  return request ?? connect ?? MALFORMED;
}

/** ClientFrameBatch: each `frames` entry decoded as a whole frame (judged by the caller). */
function readBatch(r: Reader, depth: number): IncomingFrame[] {
  if (depth > RECURSION_LIMIT) throw MALFORMED_INPUT;
  const outer = r.enter();
  const frames: IncomingFrame[] = [];
  while (r.pos < r.len) {
    const t = r.uint32();
    // As protobufjs: a known field is read as its declared type (a message) whatever its wire type.
    if (t >>> 3 === 1) {
      const length = r.uint32();
      const end = r.pos + length;
      if (end > r.len) throw MALFORMED_INPUT;
      frames.push(readClientFrame(new Reader(r.buf.subarray(r.pos, end)), depth + 1));
      r.pos = end;
    } else {
      r.skipType(t & 7, depth);
    }
  }
  r.leave(outer);
  return frames;
}

function readEmpty(r: Reader, depth: number): void {
  const outer = r.enter();
  while (r.pos < r.len) r.skipType(r.uint32() & 7, depth);
  r.leave(outer);
}

function readConnect(r: Reader): ConnectFrame {
  const outer = r.enter();
  const frame: ConnectFrame = { frame: "connect", protocolVersion: 0, lastZxidSeen: 0n, timeoutMs: 0, sessionId: 0n, password: EMPTY_BUFFER };
  while (r.pos < r.len) {
    const t = r.uint32();
    switch (t >>> 3) {
      case 1:
        frame.protocolVersion = r.uint32();
        break;
      case 2:
        frame.lastZxidSeen = r.int64BigInt();
        break;
      case 3:
        frame.timeoutMs = r.uint32();
        break;
      case 4:
        frame.sessionId = r.int64BigInt();
        break;
      case 5:
        frame.password = r.bytes();
        break;
      default:
        r.skipType(t & 7, 1);
    }
  }
  r.leave(outer);
  return frame;
}

function readRequest(r: Reader, depth: number): RequestFrame | RejectedFrame {
  const outer = r.enter();
  const inner = depth + 1;
  let xid = 0;
  /** Field number of the op member that wins (the last declared present; fields declared in number order). */
  let opField = 0;
  let op: ClientRequest | number = UNIMPLEMENTED;
  while (r.pos < r.len) {
    const t = r.uint32();
    const field = t >>> 3;
    let decoded: ClientRequest | number;
    switch (field) {
      case 1:
        xid = r.int32();
        continue;
      case 2:
        decoded = readCreate(r, inner);
        break;
      case 3:
        decoded = readPathVersion(r, "delete", inner);
        break;
      case 4:
        decoded = readPathWatch(r, "exists", inner);
        break;
      case 5:
        decoded = readPathWatch(r, "getData", inner);
        break;
      case 6:
        decoded = readSetData(r, inner);
        break;
      case 7:
        decoded = readPathWatch(r, "getChildren", inner);
        break;
      case 8:
        decoded = readMulti(r, inner);
        break;
      case 9:
        decoded = { op: "sync", path: readPathOnly(r, inner) };
        break;
      case 10:
        decoded = readSetWatches(r, inner);
        break;
      case 11:
        readEmpty(r, inner);
        decoded = { op: "close" };
        break;
      case 12:
        decoded = { op: "getAcl", path: readPathOnly(r, inner) };
        break;
      case 13:
        decoded = readSetAcl(r, inner);
        break;
      case 19:
        decoded = { op: "getEphemerals", prefixPath: readPathOnly(r, inner) };
        break;
      case 20:
        decoded = { op: "getAllChildrenNumber", path: readPathOnly(r, inner) };
        break;
      case 21:
        decoded = readMultiRead(r, inner);
        break;
      case 17:
        decoded = readAddAuth(r, inner);
        break;
      case 18:
        readEmpty(r, inner);
        decoded = { op: "whoAmI" };
        break;
      case 14:
        decoded = readAddWatch(r, inner);
        break;
      case 15:
        decoded = readPathType(r, "removeWatches", inner);
        break;
      case 16:
        decoded = readPathType(r, "checkWatches", inner);
        break;
      default:
        r.skipType(t & 7, depth);
        continue;
    }
    if (field >= opField) {
      opField = field;
      op = decoded;
    }
  }
  r.leave(outer);
  // No op at all: UNIMPLEMENTED, as before.
  return typeof op === "number" ? { frame: "rejected", xid, err: op } : { frame: "request", xid, request: op };
}

function readCreate(r: Reader, depth: number): CreateRequest | number {
  const outer = r.enter();
  let path = "";
  let data = EMPTY_BUFFER;
  let acl: Acl[] | undefined;
  let aclComplete = true;
  let mode = 0;
  let ttlMs = 0;
  while (r.pos < r.len) {
    const t = r.uint32();
    switch (t >>> 3) {
      case 1:
        path = r.string();
        break;
      case 2:
        data = r.bytes();
        break;
      case 3: {
        const entry = readAcl(r, depth + 1);
        if (entry.id === null) aclComplete = false;
        (acl ??= []).push(entry as Acl);
        break;
      }
      case 4:
        mode = r.uint32();
        break;
      case 5:
        ttlMs = r.int64SafeNonNegative();
        break;
      default:
        r.skipType(t & 7, depth);
    }
  }
  r.leave(outer);
  // wire-codec's order: mode, TTL, then the ACL.
  const createMode = CREATE_MODES_BY_FLAG[mode];
  if (createMode === undefined || ttlMs < 0) return BADARGUMENTS;
  if (!aclComplete) return INVALIDACL;
  return { op: "create", path, data, acl: acl ?? [], mode: createMode, ttlMs };
}

function readAcl(r: Reader, depth: number): { perms: number; id: { scheme: string; id: string } | null } {
  const outer = r.enter();
  let perms = 0;
  let id: { scheme: string; id: string } | null = null;
  while (r.pos < r.len) {
    const t = r.uint32();
    switch (t >>> 3) {
      case 1:
        perms = r.uint32();
        break;
      case 2:
        id = readId(r, depth + 1);
        break;
      default:
        r.skipType(t & 7, depth);
    }
  }
  r.leave(outer);
  return { perms, id };
}

function readId(r: Reader, depth: number): { scheme: string; id: string } {
  const outer = r.enter();
  let scheme = "";
  let id = "";
  while (r.pos < r.len) {
    const t = r.uint32();
    switch (t >>> 3) {
      case 1:
        scheme = r.string();
        break;
      case 2:
        id = r.string();
        break;
      default:
        r.skipType(t & 7, depth);
    }
  }
  r.leave(outer);
  return { scheme, id };
}

function readPathVersion<K extends "delete" | "check">(r: Reader, op: K, depth: number): { op: K; path: string; version: number } {
  const outer = r.enter();
  let path = "";
  let version = 0;
  while (r.pos < r.len) {
    const t = r.uint32();
    switch (t >>> 3) {
      case 1:
        path = r.string();
        break;
      case 2:
        version = r.sint32();
        break;
      default:
        r.skipType(t & 7, depth);
    }
  }
  r.leave(outer);
  return { op, path, version };
}

function readPathWatch<K extends "exists" | "getData" | "getChildren">(r: Reader, op: K, depth: number): { op: K; path: string; watch: boolean } {
  const outer = r.enter();
  let path = "";
  let watch = false;
  while (r.pos < r.len) {
    const t = r.uint32();
    switch (t >>> 3) {
      case 1:
        path = r.string();
        break;
      case 2:
        watch = r.bool();
        break;
      default:
        r.skipType(t & 7, depth);
    }
  }
  r.leave(outer);
  return { op, path, watch };
}

function readSetData(r: Reader, depth: number): { op: "setData"; path: string; data: Buffer; version: number } {
  const outer = r.enter();
  let path = "";
  let data = EMPTY_BUFFER;
  let version = 0;
  while (r.pos < r.len) {
    const t = r.uint32();
    switch (t >>> 3) {
      case 1:
        path = r.string();
        break;
      case 2:
        data = r.bytes();
        break;
      case 3:
        version = r.sint32();
        break;
      default:
        r.skipType(t & 7, depth);
    }
  }
  r.leave(outer);
  return { op: "setData", path, data, version };
}

function readPathOnly(r: Reader, depth: number): string {
  const outer = r.enter();
  let path = "";
  while (r.pos < r.len) {
    const t = r.uint32();
    if (t >>> 3 === 1) path = r.string();
    else r.skipType(t & 7, depth);
  }
  r.leave(outer);
  return path;
}

function readMulti(r: Reader, depth: number): ClientRequest | number {
  const outer = r.enter();
  const ops: MultiOpRequest[] = [];
  /** The first op that cannot run decides the multi's answer. */
  let err = 0;
  while (r.pos < r.len) {
    const t = r.uint32();
    if (t >>> 3 === 1) {
      const op = readMultiOp(r, depth + 1);
      if (typeof op === "number") {
        if (err === 0) err = op;
      } else ops.push(op);
    } else r.skipType(t & 7, depth);
  }
  r.leave(outer);
  return err !== 0 ? err : { op: "multi", ops };
}

function readMultiOp(r: Reader, depth: number): MultiOpRequest | number {
  const outer = r.enter();
  let opField = 0;
  let op: MultiOpRequest | number = BADARGUMENTS;
  const inner = depth + 1;
  while (r.pos < r.len) {
    const t = r.uint32();
    const field = t >>> 3;
    let decoded: MultiOpRequest | number;
    switch (field) {
      case 1:
        decoded = readCreate(r, inner);
        break;
      case 2:
        decoded = readPathVersion(r, "delete", inner);
        break;
      case 3:
        decoded = readSetData(r, inner);
        break;
      case 4:
        decoded = readPathVersion(r, "check", inner);
        break;
      default:
        r.skipType(t & 7, depth);
        continue;
    }
    if (field >= opField) {
      opField = field;
      op = decoded;
    }
  }
  r.leave(outer);
  return op;
}

function readMultiRead(r: Reader, depth: number): ClientRequest | number {
  const outer = r.enter();
  const ops: MultiReadOpRequest[] = [];
  let err = 0;
  while (r.pos < r.len) {
    const t = r.uint32();
    if (t >>> 3 === 1) {
      const op = readMultiReadOp(r, depth + 1);
      if (typeof op === "number") {
        if (err === 0) err = op;
      } else ops.push(op);
    } else r.skipType(t & 7, depth);
  }
  r.leave(outer);
  if (err === 0 && ops.length > limits.multiOpsMax) err = BADARGUMENTS;
  return err !== 0 ? err : { op: "multiRead", ops };
}

/** A multiRead op; one asking for a watch is BADARGUMENTS (multiRead sets none, as in ZooKeeper). */
function readMultiReadOp(r: Reader, depth: number): MultiReadOpRequest | number {
  const outer = r.enter();
  let op: MultiReadOpRequest | number = BADARGUMENTS;
  while (r.pos < r.len) {
    const t = r.uint32();
    const field = t >>> 3;
    if (field === 1 || field === 2) {
      const read = readPathWatch(r, field === 1 ? "getData" : "getChildren", depth + 1);
      op = read.watch ? BADARGUMENTS : { op: read.op, path: read.path };
    } else r.skipType(t & 7, depth);
  }
  r.leave(outer);
  return op;
}

function readSetWatches(r: Reader, depth: number): ClientRequest | number {
  const outer = r.enter();
  let relativeZxid = 0;
  const dataWatches: string[] = [];
  const existWatches: string[] = [];
  const childWatches: string[] = [];
  const persistentWatches: string[] = [];
  const persistentRecursiveWatches: string[] = [];
  while (r.pos < r.len) {
    const t = r.uint32();
    switch (t >>> 3) {
      case 1:
        relativeZxid = r.int64SafeNonNegative();
        break;
      case 2:
        dataWatches.push(r.string());
        break;
      case 3:
        existWatches.push(r.string());
        break;
      case 4:
        childWatches.push(r.string());
        break;
      case 5:
        persistentWatches.push(r.string());
        break;
      case 6:
        persistentRecursiveWatches.push(r.string());
        break;
      default:
        r.skipType(t & 7, depth);
    }
  }
  r.leave(outer);
  if (relativeZxid < 0) return BADARGUMENTS;
  return { op: "setWatches", relativeZxid, dataWatches, existWatches, childWatches, persistentWatches, persistentRecursiveWatches };
}

function readAddWatch(r: Reader, depth: number): ClientRequest | number {
  const outer = r.enter();
  let path = "";
  let mode = 0;
  while (r.pos < r.len) {
    const t = r.uint32();
    switch (t >>> 3) {
      case 1:
        path = r.string();
        break;
      case 2:
        mode = r.int32();
        break;
      default:
        r.skipType(t & 7, depth);
    }
  }
  r.leave(outer);
  const watchMode = addWatchModeOf(mode);
  if (watchMode === undefined) return BADARGUMENTS;
  return { op: "addWatch", path, mode: watchMode };
}

/** RemoveWatchesRequest and CheckWatchesRequest: a path and a Watcher.WatcherType number. */
function readPathType<K extends "removeWatches" | "checkWatches">(r: Reader, op: K, depth: number): { op: K; path: string; watcherType: WatcherType } | number {
  const outer = r.enter();
  let path = "";
  let type = 0;
  while (r.pos < r.len) {
    const t = r.uint32();
    switch (t >>> 3) {
      case 1:
        path = r.string();
        break;
      case 2:
        type = r.int32();
        break;
      default:
        r.skipType(t & 7, depth);
    }
  }
  r.leave(outer);
  const watcherType = watcherTypeOf(type);
  if (watcherType === undefined) return BADARGUMENTS;
  return { op, path, watcherType };
}

function readSetAcl(r: Reader, depth: number): ClientRequest | number {
  const outer = r.enter();
  let path = "";
  const acl: Acl[] = [];
  let aclComplete = true;
  let version = 0;
  while (r.pos < r.len) {
    const t = r.uint32();
    switch (t >>> 3) {
      case 1:
        path = r.string();
        break;
      case 2: {
        const entry = readAcl(r, depth + 1);
        if (entry.id === null) aclComplete = false;
        acl.push(entry as Acl);
        break;
      }
      case 3:
        version = r.sint32();
        break;
      default:
        r.skipType(t & 7, depth);
    }
  }
  r.leave(outer);
  if (!aclComplete) return INVALIDACL;
  return { op: "setAcl", path, acl, version };
}

function readAddAuth(r: Reader, depth: number): ClientRequest {
  const outer = r.enter();
  let scheme = "";
  let auth = EMPTY_BUFFER;
  while (r.pos < r.len) {
    const t = r.uint32();
    switch (t >>> 3) {
      case 1:
        scheme = r.string();
        break;
      case 2:
        auth = r.bytes();
        break;
      default:
        r.skipType(t & 7, depth);
    }
  }
  r.leave(outer);
  return { op: "addAuth", scheme, auth };
}

// -------------------------------------------------------------------------------------------------
// Encoding. Each frame is sized, then written into one exactly-sized Buffer (grpc-js copies it
// behind its 5-byte message header).

/** Size of an int64 field holding a safe integer (negative ones as 64-bit two's complement). */
function int64NumberFieldSize(field: number, v: number): number {
  if (v === 0) return 0;
  if (v > 0 && v < TWO_32) return 1 + varint32Size(v);
  return 1 + varint64Size(v >>> 0, Math.floor(v / TWO_32) >>> 0);
}
function writeInt64NumberField(w: Writer, field: number, v: number): void {
  if (v === 0) return;
  w.varint32(tag(field, WIRE_VARINT));
  if (v > 0 && v < TWO_32) w.varint32(v);
  else w.varint64(v >>> 0, Math.floor(v / TWO_32) >>> 0);
}

function int64BigIntFieldSize(field: number, v: bigint): number {
  if (v === 0n) return 0;
  const u = BigInt.asUintN(64, v);
  return 1 + varint64Size(Number(u & 0xffffffffn), Number(u >> 32n));
}
function writeInt64BigIntField(w: Writer, field: number, v: bigint): void {
  if (v === 0n) return;
  const u = BigInt.asUintN(64, v);
  w.varint32(tag(field, WIRE_VARINT));
  w.varint64(Number(u & 0xffffffffn), Number(u >> 32n));
}

function int32FieldBodySize(v: number): number {
  return v === 0 ? 0 : 1 + int32Size(v | 0);
}

/** Stat body size. Fields 1..11 all have one-byte tags. */
function statSize(s: Stat): number {
  return (
    int64NumberFieldSize(1, s.czxid) +
    int64NumberFieldSize(2, s.mzxid) +
    int64NumberFieldSize(3, s.ctime) +
    int64NumberFieldSize(4, s.mtime) +
    int32FieldBodySize(s.version) +
    int32FieldBodySize(s.cversion) +
    int32FieldBodySize(s.aversion) +
    int64BigIntFieldSize(8, s.ephemeralOwner) +
    int32FieldBodySize(s.dataLength) +
    int32FieldBodySize(s.numChildren) +
    int64NumberFieldSize(11, s.pzxid)
  );
}
function writeStat(w: Writer, s: Stat): void {
  writeInt64NumberField(w, 1, s.czxid);
  writeInt64NumberField(w, 2, s.mzxid);
  writeInt64NumberField(w, 3, s.ctime);
  writeInt64NumberField(w, 4, s.mtime);
  writeInt32Field(w, 5, s.version);
  writeInt32Field(w, 6, s.cversion);
  writeInt32Field(w, 7, s.aversion);
  writeInt64BigIntField(w, 8, s.ephemeralOwner);
  writeInt32Field(w, 9, s.dataLength);
  writeInt32Field(w, 10, s.numChildren);
  writeInt64NumberField(w, 11, s.pzxid);
}
/** A Stat as message field `field` (body size `size`): always written when the record has one. */
function writeStatField(w: Writer, field: number, s: Stat, size: number): void {
  writeMessageHeader(w, field, size);
  writeStat(w, s);
}

function idSize(acl: Acl): number {
  return stringFieldSize(1, acl.id.scheme) + stringFieldSize(2, acl.id.id);
}
function aclSize(acl: Acl): number {
  return uint32FieldSize(1, acl.perms) + messageFieldSize(2, idSize(acl));
}
function aclListSize(field: number, acl: readonly Acl[]): number {
  let n = 0;
  for (const entry of acl) n += messageFieldSize(field, aclSize(entry));
  return n;
}
function writeAclList(w: Writer, field: number, acl: readonly Acl[]): void {
  for (const entry of acl) {
    writeMessageHeader(w, field, aclSize(entry));
    writeUint32Field(w, 1, entry.perms);
    writeMessageHeader(w, 2, idSize(entry));
    writeStringField(w, 1, entry.id.scheme);
    writeStringField(w, 2, entry.id.id);
  }
}

function stringListSize(field: number, list: readonly string[]): number {
  let n = 0;
  for (const s of list) {
    const length = utf8Length(s);
    n += 1 + varint32Size(length) + length;
  }
  return n;
}
function writeStringList(w: Writer, field: number, list: readonly string[]): void {
  for (const s of list) {
    w.varint32(tag(field, WIRE_LEN));
    w.string(s, utf8Length(s));
  }
}

function clientInfoSize(info: ClientInfo): number {
  return stringFieldSize(1, info.authScheme) + stringFieldSize(2, info.user);
}

/** OpResult body: err, then path and stat for creates, stat for setData (encodeReply's mapping). */
function opResultSize(result: OpResult): number {
  switch (result.type) {
    case "create":
      return stringFieldSize(2, result.path) + messageFieldSize(3, statSize(result.stat));
    case "setData":
      return messageFieldSize(3, statSize(result.stat));
    case "error":
      return sint32FieldSize(1, result.err);
    case "delete":
    case "check":
      return 0;
  }
}
function writeOpResult(w: Writer, result: OpResult): void {
  switch (result.type) {
    case "create":
      writeStringField(w, 2, result.path);
      writeStatField(w, 3, result.stat, statSize(result.stat));
      return;
    case "setData":
      writeStatField(w, 3, result.stat, statSize(result.stat));
      return;
    case "error":
      writeSint32Field(w, 1, result.err);
      return;
    case "delete":
    case "check":
      return;
  }
}

/** multiRead OpResult body: err, or stat + data for getData, or the children. */
function readOpResultSize(result: ReadOpResult): number {
  switch (result.type) {
    case "getData":
      return messageFieldSize(3, statSize(result.stat)) + bytesFieldSize(4, result.data);
    case "getChildren":
      return stringListSize(5, result.children);
    case "error":
      return sint32FieldSize(1, result.err);
  }
}
function writeReadOpResult(w: Writer, result: ReadOpResult): void {
  switch (result.type) {
    case "getData":
      writeStatField(w, 3, result.stat, statSize(result.stat));
      writeBytesField(w, 4, result.data);
      return;
    case "getChildren":
      writeStringList(w, 5, result.children);
      return;
    case "error":
      writeSint32Field(w, 1, result.err);
      return;
  }
}

/** Response body size for `reply`, given its stat's body size (0 when it has none). */
function responseSize(xid: number, reply: Reply, statBodySize: number): number {
  let n = int32FieldSize(1, xid) + int64NumberFieldSize(2, reply.zxid) + sint32FieldSize(3, reply.err);
  const body = reply.body;
  switch (body.kind) {
    case "empty":
      return n;
    case "path":
      return n + stringFieldSize(4, body.path);
    case "create":
      return n + stringFieldSize(4, body.path) + messageFieldSize(5, statBodySize);
    case "stat":
      return n + messageFieldSize(5, statBodySize);
    case "data":
      return n + messageFieldSize(5, statBodySize) + bytesFieldSize(6, body.data);
    case "children":
      return n + messageFieldSize(5, statBodySize) + stringListSize(7, body.children);
    case "acl":
      return n + messageFieldSize(5, statBodySize) + aclListSize(9, body.acl);
    case "multi":
      for (const result of body.results) n += messageFieldSize(8, opResultSize(result));
      return n;
    case "paths":
      return n + stringListSize(7, body.paths);
    case "number":
      return n + int32FieldSize(11, body.number);
    case "multiRead":
      for (const result of body.results) n += messageFieldSize(8, readOpResultSize(result));
      return n;
    case "whoAmI":
      for (const info of body.clientInfo) n += messageFieldSize(10, clientInfoSize(info));
      return n;
  }
}

/** A ServerFrame carrying the Response to request `xid`. */
export function encodeResponseFrame(xid: number, reply: Reply): Buffer {
  const body = reply.body;
  const stat = "stat" in body ? body.stat : undefined;
  const statBodySize = stat ? statSize(stat) : 0;
  const size = responseSize(xid, reply, statBodySize);
  const w = new Writer(Buffer.allocUnsafe(messageFieldSize(2, size)));
  writeMessageHeader(w, 2, size);
  writeInt32Field(w, 1, xid);
  writeInt64NumberField(w, 2, reply.zxid);
  writeSint32Field(w, 3, reply.err);
  switch (body.kind) {
    case "empty":
      break;
    case "path":
      writeStringField(w, 4, body.path);
      break;
    case "create":
      writeStringField(w, 4, body.path);
      writeStatField(w, 5, body.stat, statBodySize);
      break;
    case "stat":
      writeStatField(w, 5, body.stat, statBodySize);
      break;
    case "data":
      writeStatField(w, 5, body.stat, statBodySize);
      writeBytesField(w, 6, body.data);
      break;
    case "children":
      writeStatField(w, 5, body.stat, statBodySize);
      writeStringList(w, 7, body.children);
      break;
    case "acl":
      writeStatField(w, 5, body.stat, statBodySize);
      writeAclList(w, 9, body.acl);
      break;
    case "multi":
      for (const result of body.results) {
        writeMessageHeader(w, 8, opResultSize(result));
        writeOpResult(w, result);
      }
      break;
    case "paths":
      writeStringList(w, 7, body.paths);
      break;
    case "number":
      writeInt32Field(w, 11, body.number);
      break;
    case "multiRead":
      for (const result of body.results) {
        writeMessageHeader(w, 8, readOpResultSize(result));
        writeReadOpResult(w, result);
      }
      break;
    case "whoAmI":
      for (const info of body.clientInfo) {
        writeMessageHeader(w, 10, clientInfoSize(info));
        writeStringField(w, 1, info.authScheme);
        writeStringField(w, 2, info.user);
      }
      break;
  }
  return w.buf;
}

/** A ServerFrame carrying a watch event. */
export function encodeEventFrame(event: WatchEvent): Buffer {
  const size = sint32FieldSize(1, event.type) + stringFieldSize(2, event.path) + int64NumberFieldSize(3, event.zxid);
  const w = new Writer(Buffer.allocUnsafe(messageFieldSize(3, size)));
  writeMessageHeader(w, 3, size);
  writeSint32Field(w, 1, event.type);
  writeStringField(w, 2, event.path);
  writeInt64NumberField(w, 3, event.zxid);
  return w.buf;
}

/** A ServerFrame carrying the Pong to a Ping: the server's last applied zxid. */
export function encodePongFrame(zxid: number): Buffer {
  const size = int64NumberFieldSize(1, zxid);
  const w = new Writer(Buffer.allocUnsafe(messageFieldSize(4, size)));
  writeMessageHeader(w, 4, size);
  writeInt64NumberField(w, 1, zxid);
  return w.buf;
}

export interface ConnectAnswer {
  protocolVersion: number;
  timeoutMs: number;
  sessionId: bigint;
  password: Uint8Array;
  err: number;
  lastZxid: number;
  serverId: number;
}

/** A ServerFrame carrying the answer to a connect. */
export function encodeConnectResponseFrame(c: ConnectAnswer): Buffer {
  const size =
    uint32FieldSize(1, c.protocolVersion) +
    uint32FieldSize(2, c.timeoutMs) +
    int64BigIntFieldSize(3, c.sessionId) +
    bytesFieldSize(4, c.password) +
    sint32FieldSize(5, c.err) +
    int64NumberFieldSize(6, c.lastZxid) +
    uint32FieldSize(7, c.serverId);
  const w = new Writer(Buffer.allocUnsafe(messageFieldSize(1, size)));
  writeMessageHeader(w, 1, size);
  writeUint32Field(w, 1, c.protocolVersion);
  writeUint32Field(w, 2, c.timeoutMs);
  writeInt64BigIntField(w, 3, c.sessionId);
  writeBytesField(w, 4, c.password);
  writeSint32Field(w, 5, c.err);
  writeInt64NumberField(w, 6, c.lastZxid);
  writeUint32Field(w, 7, c.serverId);
  return w.buf;
}

/** ServerFrame.batch (field 5) around frames already encoded by the functions above. */
export function encodeServerFrameBatch(frames: readonly Buffer[]): Buffer {
  return encodeFrameBatch(5, frames);
}
