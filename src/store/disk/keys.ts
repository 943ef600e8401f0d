import { assert } from "../../common/assert.js";

/**
 * Key layout inside the one LevelDB database that holds the log and the stable numbers.
 *
 *   0x4c 'L' + zxid as 8 bytes big-endian  → one txn record (opaque bytes)
 *   0x4d 'M' + UTF-8 name                  → the log's own metadata (8-byte int64), e.g. purgedBefore
 *   0x53 'S' + UTF-8 name                  → one stable number (8 bytes, big-endian int64)
 *
 * Big-endian zxids make LevelDB's bytewise key order equal to zxid order.
 */
export const LOG_KEY_PREFIX = 0x4c;
export const META_KEY_PREFIX = 0x4d;
export const STABLE_KEY_PREFIX = 0x53;

/** Every record with a zxid below this value may have been purged (0: never purged). */
export const META_PURGED_BEFORE_KEY: Buffer = Buffer.concat([Buffer.from([META_KEY_PREFIX]), Buffer.from("purgedBefore")]);

export const LOG_KEY_BYTES = 9;

/** zxids are exact `number`s: non-negative safe integers (epoch * 2^32 + counter). */
export function assertZxid(zxid: number, what: string): void {
  // The message is built only on failure: this runs for every appended record.
  if (!(Number.isSafeInteger(zxid) && zxid >= 0)) assert(false, `${what}: zxid must be a non-negative safe integer, got ${zxid}`);
}

export function logKey(zxid: number): Buffer {
  assertZxid(zxid, "logKey");
  const key = Buffer.allocUnsafe(LOG_KEY_BYTES);
  key[0] = LOG_KEY_PREFIX;
  // Big-endian halves: the same bytes as writeBigUInt64BE, without a BigInt per key.
  key.writeUInt32BE(Math.floor(zxid / 0x100000000), 1);
  key.writeUInt32BE(zxid >>> 0, 5);
  return key;
}

export function zxidOfLogKey(key: Uint8Array): number {
  assert(key.length === LOG_KEY_BYTES && key[0] === LOG_KEY_PREFIX, "not a log key");
  const view = new DataView(key.buffer, key.byteOffset, key.byteLength);
  const zxid = view.getBigUint64(1, false);
  assert(zxid <= BigInt(Number.MAX_SAFE_INTEGER), `stored zxid ${zxid} is beyond 2^53`);
  return Number(zxid);
}

/** The first key after every log key: the exclusive upper bound of the log range. */
export const LOG_RANGE_END: Buffer = Buffer.from([LOG_KEY_PREFIX + 1]);
/** The exclusive lower bound of the log range (no log key equals it). */
export const LOG_RANGE_START: Buffer = Buffer.from([LOG_KEY_PREFIX]);

export const STABLE_NAME_BYTES_MAX = 256;

export function stableKey(name: string): Buffer {
  const nameBytes = Buffer.from(name, "utf8");
  assert(nameBytes.length > 0 && nameBytes.length <= STABLE_NAME_BYTES_MAX, `stable name length out of range: ${name}`);
  return Buffer.concat([Buffer.from([STABLE_KEY_PREFIX]), nameBytes]);
}

export function encodeStableNumber(value: number): Buffer {
  assert(Number.isSafeInteger(value), `stable numbers are safe integers, got ${value}`);
  const bytes = Buffer.allocUnsafe(8);
  bytes.writeBigInt64BE(BigInt(value), 0);
  return bytes;
}

export function decodeStableNumber(bytes: Uint8Array): number {
  assert(bytes.length === 8, `stable number must be 8 bytes, got ${bytes.length}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const value = view.getBigInt64(0, false);
  assert(value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= BigInt(Number.MIN_SAFE_INTEGER), `stored stable number ${value} is not a safe integer`);
  return Number(value);
}
