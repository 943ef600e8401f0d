/**
 * ByteWriter / ByteReader: the binary primitives under corral's codecs (txns, snapshots, and a
 * ZooKeeper jute codec later). The writer grows one buffer; the reader walks one without copying
 * until a value has to leave it. Both speak:
 * - varints (LEB128) for non-negative safe integers, zigzag varints for signed ones,
 * - zigzag varints and fixed big-endian int64 for `bigint`s,
 * - fixed big-endian int32/uint32 and int64 (jute's int and long),
 * - length-prefixed byte strings and UTF-8 strings.
 *
 * Malformed input is never a crash: every reader failure is `ZkError("MARSHALLINGERROR")`.
 * Writing a value outside a method's range is a bug: asserted.
 */
import { assert } from "../common/assert.js";
import { ZkError } from "../common/errors.js";
import { NULL_DATA } from "../common/znode.js";
import { pooledBytes } from "../common/pooled-bytes.js";
import { varUintSize } from "../common/varint.js";

/** The length that stands for NULL_DATA: beyond any real length (data is at most a few MiB). */
const NULL_BYTES_LENGTH = 0xffffffff;

const TWO_POW_32 = 2 ** 32;
/** Up to this many UTF-16 units a string is encoded by hand; longer ones by TextEncoder.encodeInto. */
const MANUAL_UTF8_UNITS_MAX = 256;
/** Up to this many bytes a UTF-8 string is decoded by hand when it is pure ASCII. */
const MANUAL_ASCII_BYTES_MAX = 64;

/** 8 bytes through which int64s pass, instead of a DataView per reader or buffer. */
const int64Scratch = new Uint8Array(8);
const int64View = new DataView(int64Scratch.buffer);

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

export class ByteWriter {
  private buf: Uint8Array;
  private pos = 0;

  constructor(initialCapacity = 256) {
    if (!(Number.isInteger(initialCapacity) && initialCapacity > 0)) assert(false, `initial capacity ${initialCapacity}`);
    this.buf = pooledBytes(initialCapacity);
  }

  /** Bytes written so far. */
  get length(): number {
    return this.pos;
  }

  get capacity(): number {
    return this.buf.length;
  }

  /** Forgets what was written (keeps the buffer). Views from `finish()` become garbage. */
  reset(): void {
    this.pos = 0;
  }

  /** Drops a large buffer kept from an earlier big write (for long-lived shared writers). */
  shrinkTo(capacity: number): void {
    if (this.buf.length > capacity && this.pos <= capacity) {
      this.buf = this.buf.slice(0, capacity);
    }
  }

  /** A view of the bytes written: valid until the next write or reset. */
  finish(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }

  /** A copy of the bytes written, independent of this writer. */
  finishCopy(): Uint8Array {
    return this.buf.slice(0, this.pos);
  }

  /** Makes room for `bytes` more bytes. */
  ensure(bytes: number): void {
    if (this.pos + bytes > this.buf.length) this.grow(bytes);
  }

  writeUint8(value: number): void {
    if (this.pos + 1 > this.buf.length) this.grow(1);
    this.buf[this.pos++] = value;
  }

  writeBool(value: boolean): void {
    this.writeUint8(value ? 1 : 0);
  }

  /** Big-endian 32-bit, two's complement (jute's int). */
  writeInt32(value: number): void {
    if ((value | 0) !== value) assert(false, `int32 out of range: ${value}`);
    this.writeUint32Bits(value);
  }

  /** Big-endian unsigned 32-bit. */
  writeUint32(value: number): void {
    if (value >>> 0 !== value) assert(false, `uint32 out of range: ${value}`);
    this.writeUint32Bits(value);
  }

  /** Big-endian 64-bit two's complement (jute's long). */
  writeInt64(value: bigint): void {
    if (this.pos + 8 > this.buf.length) this.grow(8);
    int64View.setBigInt64(0, value);
    const buf = this.buf;
    const pos = this.pos;
    for (let i = 0; i < 8; i++) buf[pos + i] = int64Scratch[i]!;
    this.pos = pos + 8;
  }

  /** A safe integer as a big-endian 64-bit two's complement (jute's long, e.g. a zxid or a time). */
  writeInt64Number(value: number): void {
    if (!Number.isSafeInteger(value)) assert(false, `not a safe integer: ${value}`);
    const high = Math.floor(value / TWO_POW_32);
    this.writeUint32Bits(high | 0);
    this.writeUint32Bits(value - high * TWO_POW_32);
  }

  /** LEB128 varint of a non-negative safe integer (1 byte below 128, at most 8). */
  writeVarUint(value: number): void {
    if (this.pos + 8 > this.buf.length) this.grow(8);
    if (value >>> 0 !== value) {
      if (!(Number.isSafeInteger(value) && value >= 0)) assert(false, `varuint out of range: ${value}`);
      // Above 2^32 (zxids, times): bitwise operators stop at 32 bits, so the halves are shifted instead.
      const low = value >>> 0;
      this.writeVarUintHalves(low, (value - low) / TWO_POW_32);
      return;
    }
    const buf = this.buf;
    let pos = this.pos;
    while (value > 0x7f) {
      buf[pos++] = (value & 0x7f) | 0x80;
      value >>>= 7;
    }
    buf[pos++] = value;
    this.pos = pos;
  }

  /** Zigzag varint of a signed integer in [-2^52, 2^52 - 1] (its zigzag form stays a safe integer). */
  writeVarInt(value: number): void {
    if ((value | 0) === value) {
      this.writeVarUint(((value << 1) ^ (value >> 31)) >>> 0);
    } else {
      if (!(Number.isInteger(value) && value >= -(2 ** 52) && value < 2 ** 52)) assert(false, `varint out of range: ${value}`);
      this.writeVarUint(value >= 0 ? value * 2 : -value * 2 - 1);
    }
  }

  /** Zigzag varint of a signed 32-bit integer (the reader's `readVarInt32`). */
  writeVarInt32(value: number): void {
    if ((value | 0) !== value) assert(false, `int32 out of range: ${value}`);
    this.writeVarUint(((value << 1) ^ (value >> 31)) >>> 0);
  }

  /** Zigzag varint of a signed 64-bit integer (at most 10 bytes). */
  writeVarBigInt(value: bigint): void {
    if (value !== BigInt.asIntN(64, value)) assert(false, `int64 out of range: ${value}`);
    const zigzag = value >= 0n ? value << 1n : (-value << 1n) - 1n;
    if (zigzag <= 0xffffffffn) {
      this.writeVarUint(Number(zigzag));
      return;
    }
    this.ensure(10);
    this.writeVarUintHalves(Number(zigzag & 0xffffffffn), Number(zigzag >> 32n));
  }

  /** Bytes as they are, no length. */
  writeRaw(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /** Varint length, then the bytes. */
  writeBytes(bytes: Uint8Array): void {
    this.writeVarUint(bytes.length);
    this.writeRaw(bytes);
  }

  /** As writeBytes, but NULL_DATA is written as a length no real data has (znode data fields). */
  writeNullableBytes(bytes: Uint8Array): void {
    if (bytes === NULL_DATA) this.writeVarUint(NULL_BYTES_LENGTH);
    else this.writeBytes(bytes);
  }

  /** Varint byte length, then UTF-8 (lone surrogates become U+FFFD, as TextEncoder does). */
  writeString(value: string): void {
    const units = value.length;
    const bytesMax = units * 3;
    const prefix = varUintSize(bytesMax);
    // Room for the widest prefix too: the varint is written after the text, and must not grow the buffer then.
    this.ensure(bytesMax + 8);
    const start = this.pos + prefix;
    const written = this.encodeUtf8At(value, start);
    const actualPrefix = varUintSize(written);
    if (actualPrefix < prefix) this.buf.copyWithin(this.pos + actualPrefix, start, start + written);
    this.writeVarUint(written);
    this.pos += written;
  }

  /** UTF-8 bytes with no length (for formats that prefix differently, e.g. jute's int32). Returns the byte count. */
  writeUtf8(value: string): number {
    this.ensure(value.length * 3);
    const written = this.encodeUtf8At(value, this.pos);
    this.pos += written;
    return written;
  }

  /** Overwrites 4 bytes already written at `offset` with a big-endian int32 (back-patching a length). */
  setInt32At(offset: number, value: number): void {
    if (!((value | 0) === value && offset >= 0 && offset + 4 <= this.pos)) assert(false, `setInt32At(${offset}, ${value})`);
    const buf = this.buf;
    buf[offset] = value >>> 24;
    buf[offset + 1] = value >>> 16;
    buf[offset + 2] = value >>> 8;
    buf[offset + 3] = value;
  }

  /** LEB128 of `high` * 2^32 + `low` (both uint32), for callers that ensured room for it. */
  private writeVarUintHalves(low: number, high: number): void {
    const buf = this.buf;
    let pos = this.pos;
    while (high > 0) {
      buf[pos++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    while (low > 0x7f) {
      buf[pos++] = (low & 0x7f) | 0x80;
      low >>>= 7;
    }
    buf[pos++] = low;
    this.pos = pos;
  }

  private writeUint32Bits(value: number): void {
    if (this.pos + 4 > this.buf.length) this.grow(4);
    const buf = this.buf;
    const pos = this.pos;
    buf[pos] = value >>> 24;
    buf[pos + 1] = value >>> 16;
    buf[pos + 2] = value >>> 8;
    buf[pos + 3] = value;
    this.pos = pos + 4;
  }

  /** Encodes at `at` (room for 3 bytes per unit already ensured); returns bytes written. */
  private encodeUtf8At(value: string, at: number): number {
    if (value.length > MANUAL_UTF8_UNITS_MAX) {
      return textEncoder.encodeInto(value, this.buf.subarray(at)).written;
    }
    const buf = this.buf;
    let pos = at;
    for (let i = 0; i < value.length; i++) {
      let c = value.charCodeAt(i);
      if (c < 0x80) {
        buf[pos++] = c;
      } else if (c < 0x800) {
        buf[pos++] = 0xc0 | (c >> 6);
        buf[pos++] = 0x80 | (c & 0x3f);
      } else {
        if (c >= 0xd800 && c <= 0xdfff) {
          const next = i + 1 < value.length ? value.charCodeAt(i + 1) : 0;
          if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
            const codePoint = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
            buf[pos++] = 0xf0 | (codePoint >> 18);
            buf[pos++] = 0x80 | ((codePoint >> 12) & 0x3f);
            buf[pos++] = 0x80 | ((codePoint >> 6) & 0x3f);
            buf[pos++] = 0x80 | (codePoint & 0x3f);
            i++;
            continue;
          }
          c = 0xfffd;
        }
        buf[pos++] = 0xe0 | (c >> 12);
        buf[pos++] = 0x80 | ((c >> 6) & 0x3f);
        buf[pos++] = 0x80 | (c & 0x3f);
      }
    }
    return pos - at;
  }

  private grow(bytes: number): void {
    const needed = this.pos + bytes;
    let capacity = this.buf.length * 2;
    while (capacity < needed) capacity *= 2;
    const next = pooledBytes(capacity);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }
}

export class ByteReader {
  private readonly buf: Uint8Array;
  private pos: number;
  private readonly end: number;

  constructor(bytes: Uint8Array) {
    this.buf = bytes;
    this.pos = 0;
    this.end = bytes.length;
  }

  get position(): number {
    return this.pos;
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  get atEnd(): boolean {
    return this.pos === this.end;
  }

  /** Throws unless every byte was consumed (trailing garbage is malformed input too). */
  expectEnd(what = "record"): void {
    if (this.pos !== this.end) throw this.malformed(`${this.end - this.pos} trailing bytes after ${what}`);
  }

  /** Throws unless `bytes` more bytes are there. */
  need(bytes: number): void {
    if (bytes > this.end - this.pos) throw this.malformed(`truncated: ${bytes} bytes needed, ${this.end - this.pos} left`);
  }

  /** A MARSHALLINGERROR naming the reader's position, for codecs' own checks. */
  malformed(reason: string): ZkError {
    return new ZkError("MARSHALLINGERROR", `malformed input at byte ${this.pos}: ${reason}`);
  }

  readUint8(): number {
    if (this.pos >= this.end) throw this.malformed("truncated: 1 byte needed, 0 left");
    return this.buf[this.pos++]!;
  }

  readInt8(): number {
    return (this.readUint8() << 24) >> 24;
  }

  readBool(): boolean {
    const value = this.readUint8();
    if (value > 1) throw this.malformed(`boolean byte ${value}`);
    return value === 1;
  }

  readInt32(): number {
    this.need(4);
    const buf = this.buf;
    const pos = this.pos;
    this.pos = pos + 4;
    return (buf[pos]! << 24) | (buf[pos + 1]! << 16) | (buf[pos + 2]! << 8) | buf[pos + 3]!;
  }

  readUint32(): number {
    return this.readInt32() >>> 0;
  }

  readInt64(): bigint {
    this.need(8);
    const buf = this.buf;
    const pos = this.pos;
    for (let i = 0; i < 8; i++) int64Scratch[i] = buf[pos + i]!;
    this.pos = pos + 8;
    return int64View.getBigInt64(0);
  }

  /** A big-endian int64 that must be a safe integer (a zxid, a time). */
  readInt64Number(): number {
    const high = this.readInt32();
    const low = this.readUint32();
    if (high >= 2 ** 21 || high < -(2 ** 21)) throw this.malformed("int64 beyond a safe integer");
    return high * TWO_POW_32 + low;
  }

  readVarUint(): number {
    const buf = this.buf;
    const end = this.end;
    let pos = this.pos;
    if (pos >= end) throw this.malformed("truncated varint");
    let byte = buf[pos++]!;
    if (byte < 0x80) {
      this.pos = pos;
      return byte;
    }
    let value = byte & 0x7f;
    let scale = 128;
    for (let i = 1; i < 8; i++) {
      if (pos >= end) throw this.malformed("truncated varint");
      byte = buf[pos++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        if (value > Number.MAX_SAFE_INTEGER) throw this.malformed("varint beyond a safe integer");
        this.pos = pos;
        return value;
      }
      scale *= 128;
    }
    throw this.malformed("varint longer than 8 bytes");
  }

  readVarInt(): number {
    const zigzag = this.readVarUint();
    if (zigzag <= 0xffffffff) return (zigzag >>> 1) ^ -(zigzag & 1);
    return zigzag % 2 === 0 ? zigzag / 2 : -(zigzag + 1) / 2;
  }

  /** A zigzag varint that must fit a signed 32-bit integer. */
  readVarInt32(): number {
    const zigzag = this.readVarUint();
    if (zigzag > 0xffffffff) throw this.malformed("varint beyond int32");
    return (zigzag >>> 1) ^ -(zigzag & 1);
  }

  /** A varint that must be at most `max` (counts, lengths, enums). */
  readVarUintMax(max: number, what: string): number {
    const value = this.readVarUint();
    if (value > max) throw this.malformed(`${what} ${value} exceeds ${max}`);
    return value;
  }

  readVarBigInt(): bigint {
    const buf = this.buf;
    let low = 0;
    let high = 0;
    let pos = this.pos;
    for (let i = 0; i < 10; i++) {
      if (pos >= this.end) throw this.malformed("truncated varint");
      const byte = buf[pos++]!;
      const bits = byte & 0x7f;
      if (i < 4) low |= bits << (7 * i);
      else if (i === 4) {
        low |= bits << 28;
        high |= bits >>> 4;
      } else high |= bits << (7 * i - 32);
      if (byte < 0x80) {
        if (i === 9 && bits > 1) throw this.malformed("varint beyond 64 bits");
        this.pos = pos;
        const zigzag = (BigInt(high >>> 0) << 32n) | BigInt(low >>> 0);
        return zigzag & 1n ? -(zigzag >> 1n) - 1n : zigzag >> 1n;
      }
    }
    throw this.malformed("varint longer than 10 bytes");
  }

  /** `length` bytes, copied out of the input. */
  readRaw(length: number): Uint8Array {
    this.need(length);
    const start = this.pos;
    this.pos = start + length;
    return this.buf.slice(start, start + length);
  }

  /** `length` bytes as a view into the input (no copy: the caller must not outlive or mutate the input). */
  readRawView(length: number): Uint8Array {
    this.need(length);
    const start = this.pos;
    this.pos = start + length;
    return this.buf.subarray(start, start + length);
  }

  /** Varint length, then bytes: copied out. */
  readBytes(): Uint8Array {
    return this.readRaw(this.readVarUint());
  }

  /** Varint length, then bytes: a view into the input. */
  readBytesView(): Uint8Array {
    return this.readRawView(this.readVarUint());
  }

  /** What writeNullableBytes wrote: NULL_DATA, or the bytes (a view into the input when `view`). */
  readNullableBytes(view = false): Uint8Array {
    const length = this.readVarUint();
    if (length === NULL_BYTES_LENGTH) return NULL_DATA;
    return view ? this.readRawView(length) : this.readRaw(length);
  }

  /** Varint byte length, then UTF-8 (invalid UTF-8 is malformed input). */
  readString(): string {
    return this.readUtf8(this.readVarUint());
  }

  /** `length` bytes of UTF-8. */
  readUtf8(length: number): string {
    this.need(length);
    const buf = this.buf;
    const start = this.pos;
    const end = start + length;
    if (length <= MANUAL_ASCII_BYTES_MAX) {
      let text = "";
      let i = start;
      for (; i < end; i++) {
        const c = buf[i]!;
        if (c >= 0x80) break;
        text += String.fromCharCode(c);
      }
      if (i === end) {
        this.pos = end;
        return text;
      }
    }
    let text: string;
    try {
      text = textDecoder.decode(buf.subarray(start, end));
    } catch {
      throw this.malformed("invalid UTF-8");
    }
    this.pos = end;
    return text;
  }
}
