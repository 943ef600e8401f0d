import { assert } from "../../common/assert.js";
import { crc32 } from "./crc32.js";

/**
 * Key layout inside the one LevelDB database that holds the log and the stable numbers.
 *
 *   0x4c 'L' + zxid as 8 bytes big-endian  → one txn record (opaque bytes)
 *   0x4d 'M' + UTF-8 name                  → the log's own metadata (a stored number), e.g. purgedBefore
 *   0x53 'S' + UTF-8 name                  → one stable number (a stored number)
 *
 * A stored number is 12 bytes: the value as a big-endian int64, then the CRC-32 of the key and
 * those 8 bytes. Builds before the checksum stored the 8 bytes alone; those are still read.
 * Log records have their own format (log-record.ts).
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

/** The zxid of a key read from the log range, or undefined when the key is not one this log writes (damage). */
export function zxidOfLogKey(key: Uint8Array): number | undefined {
  if (key.length !== LOG_KEY_BYTES || key[0] !== LOG_KEY_PREFIX) return undefined;
  const view = new DataView(key.buffer, key.byteOffset, key.byteLength);
  const zxid = view.getUint32(1) * 0x100000000 + view.getUint32(5);
  return Number.isSafeInteger(zxid) ? zxid : undefined;
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

const STORED_NUMBER_BYTES = 12;
const LEGACY_NUMBER_BYTES = 8;

export function encodeStableNumber(key: Uint8Array, value: number): Buffer {
  assert(Number.isSafeInteger(value), `stable numbers are safe integers, got ${value}`);
  const bytes = Buffer.allocUnsafe(STORED_NUMBER_BYTES);
  bytes.writeBigInt64BE(BigInt(value), 0);
  bytes.writeUInt32BE(crc32(bytes.subarray(0, 8), crc32(key)), 8);
  return bytes;
}

/** The stored number, or why it cannot be read back (damage: never thrown, answered). */
export function decodeStableNumber(key: Uint8Array, bytes: Uint8Array): { ok: true; value: number } | { ok: false; reason: string } {
  if (bytes.length !== STORED_NUMBER_BYTES && bytes.length !== LEGACY_NUMBER_BYTES) return { ok: false, reason: `a stored number of ${bytes.length} bytes` };
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length === STORED_NUMBER_BYTES && view.getUint32(8) !== crc32(bytes.subarray(0, 8), crc32(key))) return { ok: false, reason: "checksum mismatch" };
  const value = view.getBigInt64(0, false);
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) return { ok: false, reason: `${value} is not a safe integer` };
  return { ok: true, value: Number(value) };
}
