/**
 * Jute primitives as Apache ZooKeeper's BinaryInputArchive / BinaryOutputArchive encode them:
 * big-endian int (4 bytes) and long (8 bytes), boolean (1 byte), buffer and ustring (int length,
 * -1 = null, then the bytes; ustring is UTF-8), vector (int count, -1 = null, then the items).
 *
 * The reader is for untrusted bytes: every failure is a JuteError with a reason, every length is
 * checked against the bytes actually remaining and against the configured limit before anything
 * is allocated, and nothing else is ever thrown.
 *
 * Pure: no I/O, no server state.
 */
import { assert } from "../../common/assert.js";
import { pooledBytes } from "../../common/pooled-bytes.js";

/**
 * ZooKeeper 3.8's `jute.maxbuffer` default (BinaryInputArchive.maxBuffer = 0xfffff, 1 MiB - 1).
 * The server refuses a client frame longer than this (NIOServerCnxn / NettyServerCnxn).
 */
export const JUTE_MAX_BUFFER_BYTES = 0xfffff;

/**
 * ZooKeeper 3.8's `zookeeper.jute.maxbuffer.extrasize` default: it equals jute.maxbuffer (it was a
 * fixed 1024 before 3.6 and may not be set below 1024). BinaryInputArchive refuses a single
 * buffer/ustring length above maxBuffer + extraMaxBuffer.
 */
export const JUTE_EXTRA_MAX_BUFFER_BYTES = JUTE_MAX_BUFFER_BYTES;

/** The longest buffer or ustring one field may claim: ZooKeeper's checkLength bound. */
export const JUTE_FIELD_LENGTH_MAX_BYTES = JUTE_MAX_BUFFER_BYTES + JUTE_EXTRA_MAX_BUFFER_BYTES;

export type JuteErrorReason =
  /** The record ends before a field does. */
  | "truncated"
  /** A length or count below -1. */
  | "negative-length"
  /** A length, count or frame size above the configured limit. */
  | "length-over-limit"
  /** A multi header or opcode the codec does not know. */
  | "unknown-type"
  /** Bytes left over where the record must end. */
  | "trailing-bytes";

/** The one error the jute reader, frame splitter and record decoders throw. */
export class JuteError extends Error {
  override readonly name = "JuteError";
  constructor(
    readonly reason: JuteErrorReason,
    detail: string,
  ) {
    super(`jute ${reason}: ${detail}`);
  }
}

export interface JuteReaderOptions {
  /** Largest buffer/ustring length accepted (ZooKeeper's checkLength); default JUTE_FIELD_LENGTH_MAX_BYTES. */
  readonly fieldLengthMaxBytes?: number;
}

const UTF8_DECODER = new TextDecoder("utf-8", { fatal: false });

/** Reads jute primitives from one record's bytes. */
export class JuteReader {
  private offset = 0;
  private readonly view: DataView;
  private readonly fieldLengthMaxBytes: number;

  constructor(
    private readonly bytes: Uint8Array,
    options: JuteReaderOptions = {},
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.fieldLengthMaxBytes = options.fieldLengthMaxBytes ?? JUTE_FIELD_LENGTH_MAX_BYTES;
    assert(Number.isInteger(this.fieldLengthMaxBytes) && this.fieldLengthMaxBytes >= 0, "fieldLengthMaxBytes must be a non-negative integer");
  }

  get remainingBytes(): number {
    return this.bytes.byteLength - this.offset;
  }

  get offsetBytes(): number {
    return this.offset;
  }

  private need(count: number, what: string): void {
    if (this.remainingBytes < count) {
      throw new JuteError("truncated", `${what} needs ${count} bytes at offset ${this.offset}, ${this.remainingBytes} left`);
    }
  }

  readInt(): number {
    this.need(4, "int");
    const value = this.view.getInt32(this.offset, false);
    this.offset += 4;
    return value;
  }

  readLong(): bigint {
    this.need(8, "long");
    const value = this.view.getBigInt64(this.offset, false);
    this.offset += 8;
    return value;
  }

  /** Java's DataInput.readBoolean: any non-zero byte is true. */
  readBool(): boolean {
    this.need(1, "boolean");
    const value = this.bytes[this.offset]! !== 0;
    this.offset += 1;
    return value;
  }

  /** Checks a length prefix before anything is allocated for it; -1 (null) is handled by callers. */
  private checkedLength(length: number, what: string): number {
    if (length < 0) throw new JuteError("negative-length", `${what} length ${length}`);
    if (length > this.fieldLengthMaxBytes) {
      throw new JuteError("length-over-limit", `${what} length ${length} above ${this.fieldLengthMaxBytes}`);
    }
    this.need(length, what);
    return length;
  }

  /** A buffer: a copy, so the record does not pin the frame it came from. */
  readBuffer(): Uint8Array | null {
    const length = this.readInt();
    if (length === -1) return null;
    this.checkedLength(length, "buffer");
    const value = this.bytes.slice(this.offset, this.offset + length);
    this.offset += length;
    return value;
  }

  /** A ustring; malformed UTF-8 becomes U+FFFD, as Java's `new String(bytes, UTF_8)` does. */
  readUstring(): string | null {
    const length = this.readInt();
    if (length === -1) return null;
    this.checkedLength(length, "ustring");
    const value = UTF8_DECODER.decode(this.bytes.subarray(this.offset, this.offset + length));
    this.offset += length;
    return value;
  }

  /**
   * A vector. The count is bounded by the bytes remaining divided by the smallest encoding of
   * one item, so a forged count can neither allocate nor loop beyond the input.
   */
  readVector<T>(readItem: (reader: JuteReader) => T, itemMinBytes: number): T[] | null {
    assert(Number.isInteger(itemMinBytes) && itemMinBytes >= 1, "itemMinBytes must be a positive integer");
    const count = this.readInt();
    if (count === -1) return null;
    if (count < 0) throw new JuteError("negative-length", `vector count ${count}`);
    if (count > Math.floor(this.remainingBytes / itemMinBytes)) {
      throw new JuteError("truncated", `vector count ${count} cannot fit in ${this.remainingBytes} bytes`);
    }
    const items: T[] = [];
    for (let i = 0; i < count; i++) items.push(readItem(this));
    return items;
  }

  /** All bytes left, copied (for records ZooKeeper reads raw, like deleteContainer's path). */
  readRest(): Uint8Array {
    const value = this.bytes.slice(this.offset);
    this.offset = this.bytes.byteLength;
    return value;
  }

  /** Requires the record to end here. */
  expectEnd(what: string): void {
    if (this.remainingBytes !== 0) {
      throw new JuteError("trailing-bytes", `${this.remainingBytes} bytes after ${what}`);
    }
  }
}

const INT32_MIN = -0x80000000;
const INT32_MAX = 0x7fffffff;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

/** Writes jute primitives into a growing buffer. Values out of range are caller bugs (assert). */
export class JuteWriter {
  private bytes: Uint8Array;
  private view: DataView;
  /** The same bytes as a Buffer: strings are encoded into it in place (a listing writes a million). */
  private text: Buffer;
  private length = 0;

  constructor(initialCapacityBytes = 256) {
    this.bytes = pooledBytes(Math.max(16, initialCapacityBytes));
    this.view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
    this.text = Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
  }

  private reserve(count: number): void {
    if (this.length + count <= this.bytes.byteLength) return;
    let capacity = this.bytes.byteLength * 2;
    while (capacity < this.length + count) capacity *= 2;
    const grown = pooledBytes(capacity);
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
    this.view = new DataView(grown.buffer, grown.byteOffset, grown.byteLength);
    this.text = Buffer.from(grown.buffer, grown.byteOffset, grown.byteLength);
  }

  writeInt(value: number): this {
    assert(Number.isInteger(value) && value >= INT32_MIN && value <= INT32_MAX, `jute int out of range: ${value}`);
    this.reserve(4);
    this.view.setInt32(this.length, value, false);
    this.length += 4;
    return this;
  }

  writeLong(value: bigint): this {
    assert(value >= INT64_MIN && value <= INT64_MAX, `jute long out of range: ${value}`);
    this.reserve(8);
    this.view.setBigInt64(this.length, value, false);
    this.length += 8;
    return this;
  }

  writeBool(value: boolean): this {
    this.reserve(1);
    this.bytes[this.length] = value ? 1 : 0;
    this.length += 1;
    return this;
  }

  writeBuffer(value: Uint8Array | null): this {
    if (value === null) return this.writeInt(-1);
    this.writeInt(value.byteLength);
    this.writeRaw(value);
    return this;
  }

  writeUstring(value: string | null): this {
    if (value === null) return this.writeInt(-1);
    // UTF-8 takes at most three bytes per UTF-16 unit (a lone surrogate becomes U+FFFD, as TextEncoder makes it).
    this.reserve(4 + 3 * value.length);
    const written = this.text.write(value, this.length + 4, "utf8");
    this.view.setInt32(this.length, written, false);
    this.length += 4 + written;
    return this;
  }

  writeVector<T>(items: readonly T[] | null, writeItem: (writer: JuteWriter, item: T) => void): this {
    if (items === null) return this.writeInt(-1);
    this.writeInt(items.length);
    for (const item of items) writeItem(this, item);
    return this;
  }

  writeRaw(value: Uint8Array): this {
    this.reserve(value.byteLength);
    this.bytes.set(value, this.length);
    this.length += value.byteLength;
    return this;
  }

  get lengthBytes(): number {
    return this.length;
  }

  /** The bytes written so far (a copy). */
  toBytes(): Uint8Array {
    const copy = pooledBytes(this.length);
    copy.set(this.bytes.subarray(0, this.length));
    return copy;
  }
}
