/**
 * Protobuf's wire format as the peer codec writes and reads it: what each field kind costs, how it
 * is written, and a reader over one frame. Kept apart from the two message codecs (quorum-codec.ts,
 * notification-codec.ts) because both are built from the same few field kinds, and because the
 * varint arithmetic here is what decides the codec's speed.
 *
 * Nothing here outlives a call: the `put*` writers take the buffer and a position and return the
 * next position (the encoders keep both in locals), and a `ProtoReader` is made per frame, its
 * cursor a field of its own. So encoding and decoding may be re-entered or interleaved freely.
 *
 * Sizes: every "field size" includes the one-byte tag (all field numbers used inside messages are
 * below 16) and skips proto3 defaults (zero, empty), as protobufjs does. The numbers handed in are
 * the core's; one that does not fit its wire type is a bug in the caller, asserted here.
 */
import { assert } from "../../../common/assert.js";
import { putVarint32, varint32Size, varUintSize } from "../../../common/varint.js";

/** A frame this server cannot read; the transport closes the stream it came on. */
export class PeerCodecError extends Error {
  readonly code = "MALFORMED_PEER_FRAME";
  constructor(message: string) {
    super(`malformed peer frame: ${message}`);
    this.name = "PeerCodecError";
  }
}

const TWO_32 = 4294967296;
/** hi * 2^32 + lo is a safe integer exactly when hi is below this. */
const SAFE_HI = 0x200000;
export const EMPTY: Uint8Array = new Uint8Array(0);

// -------------------------------------------------------------------------------------------------
// Sizes.

export function uint53Field(value: number): number {
  if (!(value >= 0 && value <= Number.MAX_SAFE_INTEGER && Math.floor(value) === value)) assert(false, `not a uint53: ${value}`);
  return value === 0 ? 0 : 1 + varUintSize(value);
}

export function uint32Field(value: number): number {
  if (value >>> 0 !== value) assert(false, `not a uint32: ${value}`);
  return value === 0 ? 0 : 1 + varint32Size(value);
}

export function int32Field(value: number): number {
  if ((value | 0) !== value) assert(false, `not an int32: ${value}`);
  if (value === 0) return 0;
  return value < 0 ? 11 : 1 + varint32Size(value);
}

export function bytesField(bytes: Uint8Array): number {
  const n = bytes.length;
  return n === 0 ? 0 : 1 + varint32Size(n) + n;
}

export function sfixed64Field(value: bigint): number {
  if (BigInt.asIntN(64, value) !== value) assert(false, `not an int64: ${value}`);
  return value === 0n ? 0 : 9;
}

/** Size of a length-delimited submessage entry whose body is `size` bytes (tag below 16). */
export function nested(size: number): number {
  return 1 + varint32Size(size) + size;
}

// -------------------------------------------------------------------------------------------------
// Writing: each `put*` writes at `p` of `o` and returns the position after what it wrote. The
// `*Field` writers skip proto3 defaults, as the sizes above do.

export function putUint53(o: Uint8Array, p: number, value: number): number {
  if (value < 0x10000000) {
    // Below 2^28: small-integer arithmetic all the way.
    while (value > 0x7f) {
      o[p++] = (value & 0x7f) | 0x80;
      value >>>= 7;
    }
    o[p++] = value;
    return p;
  }
  // 2^28 and up (every zxid past epoch 0): four full groups from the low word, then the rest,
  // bits 28..52, which fit one int32.
  const lo = value >>> 0;
  let rest = (lo >>> 28) | (((value / TWO_32) >>> 0) << 4);
  o[p] = (lo & 0x7f) | 0x80;
  o[p + 1] = ((lo >>> 7) & 0x7f) | 0x80;
  o[p + 2] = ((lo >>> 14) & 0x7f) | 0x80;
  o[p + 3] = ((lo >>> 21) & 0x7f) | 0x80;
  p += 4;
  while (rest > 0x7f) {
    o[p++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  o[p++] = rest;
  return p;
}

/** Bytes up to this length are copied by a loop; longer ones by TypedArray.set. */
const COPY_LOOP_BYTES_MAX = 8;

/** A bytes field (tag, length, bytes); nothing when `bytes` is empty. */
export function putBytesField(o: Uint8Array, p: number, tag: number, bytes: Uint8Array): number {
  const n = bytes.length;
  if (n === 0) return p;
  o[p++] = tag;
  p = putVarint32(o, p, n);
  if (n <= COPY_LOOP_BYTES_MAX) {
    for (let i = 0; i < n; i++) o[p + i] = bytes[i]!;
  } else {
    o.set(bytes, p);
  }
  return p + n;
}

export function putUint53Field(o: Uint8Array, p: number, tag: number, value: number): number {
  if (value === 0) return p;
  o[p++] = tag;
  return putUint53(o, p, value);
}

export function putUint32Field(o: Uint8Array, p: number, tag: number, value: number): number {
  if (value === 0) return p;
  o[p++] = tag;
  return putVarint32(o, p, value);
}

export function putInt32Field(o: Uint8Array, p: number, tag: number, value: number): number {
  if (value === 0) return p;
  o[p++] = tag;
  if (value > 0) return putVarint32(o, p, value);
  // Negative int32: sign-extended to 64 bits, always 10 bytes.
  let lo = value >>> 0;
  for (let i = 0; i < 4; i++) {
    o[p++] = (lo & 0x7f) | 0x80;
    lo >>>= 7;
  }
  o[p++] = lo | 0x70 | 0x80; // bits 28..31 of lo, then ones
  for (let i = 0; i < 4; i++) o[p++] = 0xff;
  o[p++] = 0x01;
  return p;
}

export function putSfixed64Field(o: Uint8Array, p: number, tag: number, value: bigint): number {
  if (value === 0n) return p;
  o[p++] = tag;
  const u = BigInt.asUintN(64, value);
  p = putFixed32(o, p, Number(u & 0xffffffffn));
  return putFixed32(o, p, Number(u >> 32n));
}

function putFixed32(o: Uint8Array, p: number, value: number): number {
  o[p] = value & 0xff;
  o[p + 1] = (value >>> 8) & 0xff;
  o[p + 2] = (value >>> 16) & 0xff;
  o[p + 3] = value >>> 24;
  return p + 4;
}

/** The tag and length of a length-delimited field whose body of `size` bytes follows. */
export function putHeader(o: Uint8Array, p: number, tag: number, size: number): number {
  o[p++] = tag;
  return putVarint32(o, p, size);
}

// -------------------------------------------------------------------------------------------------
// Reading.

function truncated(): never {
  throw new PeerCodecError("truncated field");
}

/**
 * A cursor over one frame. Every read takes the end of the enclosing message and throws
 * PeerCodecError rather than read past it.
 */
export class ProtoReader {
  /** The frame through a plain Uint8Array view (Buffer's subarray goes through a slower species lookup). */
  readonly bytes: Uint8Array;
  /** Where the next read starts. */
  pos = 0;

  constructor(frame: Uint8Array) {
    this.bytes = Object.getPrototypeOf(frame) === Uint8Array.prototype ? frame : new Uint8Array(frame.buffer, frame.byteOffset, frame.byteLength);
  }

  /** A varint's low 32 bits, unsigned (longer varints are read and their high bits dropped). */
  varint32(end: number): number {
    const b = this.bytes;
    let p = this.pos;
    if (p < end) {
      const x = b[p]!;
      if (x < 0x80) {
        this.pos = p + 1;
        return x;
      }
    }
    let result = 0;
    for (let shift = 0; ; shift += 7) {
      if (p >= end) truncated();
      if (shift >= 70) throw new PeerCodecError("varint longer than 10 bytes");
      const x = b[p++]!;
      if (shift < 32) result |= (x & 0x7f) << shift;
      if (x < 0x80) {
        this.pos = p;
        return result >>> 0;
      }
    }
  }

  /** A uint64 varint that must be a safe integer. */
  uint53(end: number): number {
    const b = this.bytes;
    let p = this.pos;
    // Up to four bytes (values below 2^28): small-integer arithmetic.
    let lo = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      if (p >= end) truncated();
      const x = b[p++]!;
      lo |= (x & 0x7f) << shift;
      if (x < 0x80) {
        this.pos = p;
        return lo;
      }
    }
    // Fifth byte: bits 28..34, split between the words.
    if (p >= end) truncated();
    let x = b[p++]!;
    lo = (lo | (x << 28)) >>> 0;
    let hi = (x & 0x7f) >>> 4;
    for (let shift = 3; x >= 0x80; shift += 7) {
      if (p >= end) truncated();
      if (shift > 31) throw new PeerCodecError("varint longer than 10 bytes");
      x = b[p++]!;
      if (shift < 32) hi |= (x & 0x7f) << shift;
    }
    hi >>>= 0;
    if (hi >= SAFE_HI) throw new PeerCodecError("a 64-bit number beyond 2^53 - 1");
    this.pos = p;
    return hi * TWO_32 + lo;
  }

  sfixed64(end: number): bigint {
    const p = this.pos;
    if (p + 8 > end) truncated();
    const b = this.bytes;
    const lo = (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;
    const hi = b[p + 4]! | (b[p + 5]! << 8) | (b[p + 6]! << 16) | (b[p + 7]! << 24);
    this.pos = p + 8;
    if (hi >= -SAFE_HI && hi < SAFE_HI) return BigInt(hi * TWO_32 + lo);
    return (BigInt(hi) << 32n) + BigInt(lo);
  }

  /** A bool: any non-zero varint is true (read as 64 bits so a 10-byte encoding is fine). */
  bool(end: number): boolean {
    const start = this.pos;
    const low = this.varint32(end);
    if (low !== 0) return true;
    // A zero low word may still have high bits set.
    for (let i = start; i < this.pos; i++) if ((this.bytes[i]! & 0x7f) !== 0) return true;
    return false;
  }

  /** A length prefix; returns the end of the delimited region. */
  delimited(end: number): number {
    const length = this.varint32(end);
    const to = this.pos + length;
    if (to > end) throw new PeerCodecError("length beyond the enclosing message");
    return to;
  }

  /** A view of a bytes field's bytes (a plain Uint8Array's subarray is the cheapest view V8 makes). */
  bytesView(end: number): Uint8Array {
    const to = this.delimited(end);
    const from = this.pos;
    this.pos = to;
    return from === to ? EMPTY : this.bytes.subarray(from, to);
  }

  tag(end: number): number {
    const tag = this.varint32(end);
    if (tag >>> 3 === 0) throw new PeerCodecError("field number 0");
    return tag;
  }

  skip(tag: number, end: number): void {
    switch (tag & 7) {
      case 0:
        this.varint32(end);
        return;
      case 1:
        this.pos += 8;
        break;
      case 2:
        this.pos = this.delimited(end);
        return;
      case 5:
        this.pos += 4;
        break;
      default:
        throw new PeerCodecError(`wire type ${tag & 7}`);
    }
    if (this.pos > end) truncated();
  }
}
