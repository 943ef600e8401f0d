/**
 * Protobuf encoding primitives shared by the hand-written codecs of proto/client.proto (the SDK's
 * src/client/codec.ts and the server's src/server/client-frame-codec.ts). Every message is sized
 * first and then written into one exactly-sized buffer; size and write functions skip proto3
 * defaults, as the canonical encoding does.
 */

import { varint32Size } from "../common/varint.js";

export const WIRE_VARINT = 0;
export const WIRE_LEN = 2;

export function tag(field: number, wire: number): number {
  return (field << 3) | wire;
}

export { varint32Size };

/** Size of an int32 field's varint: negative values are sign-extended to 10 bytes. */
export function int32Size(value: number): number {
  return value < 0 ? 10 : varint32Size(value);
}

export function zigzag32(value: number): number {
  return ((value << 1) ^ (value >> 31)) >>> 0;
}

/** UTF-8 length of a JS string (lone surrogates count as U+FFFD, 3 bytes, as Buffer writes them). */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** Bytes of the varint of a 64-bit value given as unsigned 32-bit halves. */
export function varint64Size(lo: number, hi: number): number {
  if (hi === 0) return varint32Size(lo);
  // 7 bits per byte over the significant bits.
  const bits = 32 + (32 - Math.clz32(hi));
  return Math.ceil(bits / 7);
}

export class Writer {
  pos = 0;
  constructor(readonly buf: Buffer) {}

  varint32(value: number): void {
    const buf = this.buf;
    while (value > 0x7f) {
      buf[this.pos++] = (value & 0x7f) | 0x80;
      value >>>= 7;
    }
    buf[this.pos++] = value;
  }

  int32(value: number): void {
    if (value >= 0) this.varint32(value);
    else this.varint64(value >>> 0, 0xffffffff);
  }

  varint64(lo: number, hi: number): void {
    const buf = this.buf;
    while (hi !== 0 || lo > 0x7f) {
      buf[this.pos++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    buf[this.pos++] = lo;
  }

  string(s: string, byteLength: number): void {
    this.varint32(byteLength);
    if (byteLength === s.length) {
      // ASCII: one byte per char.
      const buf = this.buf;
      for (let i = 0; i < s.length; i++) buf[this.pos++] = s.charCodeAt(i);
    } else {
      this.pos += this.buf.write(s, this.pos, byteLength, "utf8");
    }
  }

  bytes(b: Uint8Array): void {
    this.varint32(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }
}

// Field helpers: size and write of one field, skipping proto3 defaults.

export function stringFieldSize(field: number, s: string | undefined): number {
  if (!s) return 0;
  const n = utf8Length(s);
  return varint32Size(tag(field, WIRE_LEN)) + varint32Size(n) + n;
}
export function writeStringField(w: Writer, field: number, s: string | undefined): void {
  if (!s) return;
  w.varint32(tag(field, WIRE_LEN));
  w.string(s, utf8Length(s));
}

export function bytesFieldSize(field: number, b: Uint8Array | undefined): number {
  if (!b || b.length === 0) return 0;
  return varint32Size(tag(field, WIRE_LEN)) + varint32Size(b.length) + b.length;
}
export function writeBytesField(w: Writer, field: number, b: Uint8Array | undefined): void {
  if (!b || b.length === 0) return;
  w.varint32(tag(field, WIRE_LEN));
  w.bytes(b);
}

export function uint32FieldSize(field: number, v: number | undefined): number {
  if (!v) return 0;
  return varint32Size(tag(field, WIRE_VARINT)) + varint32Size(v >>> 0);
}
export function writeUint32Field(w: Writer, field: number, v: number | undefined): void {
  if (!v) return;
  w.varint32(tag(field, WIRE_VARINT));
  w.varint32(v >>> 0);
}

export function int32FieldSize(field: number, v: number | undefined): number {
  if (!v) return 0;
  return varint32Size(tag(field, WIRE_VARINT)) + int32Size(v | 0);
}
export function writeInt32Field(w: Writer, field: number, v: number | undefined): void {
  if (!v) return;
  w.varint32(tag(field, WIRE_VARINT));
  w.int32(v | 0);
}

export function sint32FieldSize(field: number, v: number | undefined): number {
  if (!v) return 0;
  return varint32Size(tag(field, WIRE_VARINT)) + varint32Size(zigzag32(v));
}
export function writeSint32Field(w: Writer, field: number, v: number | undefined): void {
  if (!v) return;
  w.varint32(tag(field, WIRE_VARINT));
  w.varint32(zigzag32(v));
}

export function boolFieldSize(field: number, v: boolean | undefined): number {
  return v ? varint32Size(tag(field, WIRE_VARINT)) + 1 : 0;
}
export function writeBoolField(w: Writer, field: number, v: boolean | undefined): void {
  if (!v) return;
  w.varint32(tag(field, WIRE_VARINT));
  w.varint32(1);
}

/** A length-delimited submessage field of body size `size` (always written: used for oneof members, list entries and set message fields). */
export function messageFieldSize(field: number, size: number): number {
  return varint32Size(tag(field, WIRE_LEN)) + varint32Size(size) + size;
}
export function writeMessageHeader(w: Writer, field: number, size: number): void {
  w.varint32(tag(field, WIRE_LEN));
  w.varint32(size);
}

/**
 * A batch frame (ClientFrame.batch or ServerFrame.batch, field `batchField`) around frames that are
 * already encoded: `repeated <Frame> frames = 1` written from the encoded bytes, no re-encoding.
 */
export function encodeFrameBatch(batchField: number, frames: readonly Uint8Array[]): Buffer {
  let inner = 0;
  for (const frame of frames) inner += messageFieldSize(1, frame.length);
  const w = new Writer(Buffer.allocUnsafe(messageFieldSize(batchField, inner)));
  writeMessageHeader(w, batchField, inner);
  for (const frame of frames) {
    writeMessageHeader(w, 1, frame.length);
    w.buf.set(frame, w.pos);
    w.pos += frame.length;
  }
  return w.buf;
}
