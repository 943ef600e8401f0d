/**
 * How one txn record is stored in the log, checked end to end when read back. Shared by every
 * writer of txn records (the LevelDB log, and whatever journal sits in front of it) and by the
 * simulator's storage twin, so that what the simulator proves about damaged records holds for the
 * bytes on disk.
 *
 * Format version 2 (this module writes it):
 *
 *   offset  size  field
 *        0     1  marker 0x82 (a version-1 record's first byte is the txn codec's version, 1)
 *        1     8  prevZxid (uint64 BE): the zxid of the record before this one in this log, or the
 *                 zxid of the snapshot the log continues when it held no record
 *        9     4  CRC-32 of the record's key (its zxid as stored), bytes 0..8 and the payload
 *       13     …  payload: the encoded txn (src/store/txn-codec.ts)
 *
 * The checksum finds a damaged record; `prevZxid` chains the records, so that a record missing from
 * the middle (LevelDB's recovery skips a damaged block of its write-ahead log silently) or a log
 * that does not continue its snapshot is found too.
 *
 * A damaged record is damage wherever it lies, the last one included; nothing here cuts a "torn
 * tail" back. The log acknowledges a record only once the LevelDB batch holding it is durable
 * (`sync: true`), and LevelDB writes each batch as one checksummed record of its write-ahead log,
 * whose recovery drops a record a crash cut short whole: no crash leaves one of these records torn.
 * A damaged last record was acknowledged whole, so a member may have promised it to a leader, and
 * cutting it back would drop an acknowledged write without a word; the member repairs instead. A
 * writer that can tear a record (a journal of its own) must likewise drop a write cut short whole,
 * by a framing of its own, before this layer reads it.
 *
 * Version 1 (corral before this format) stored the bare encoded txn: it is still read, with only
 * what can be checked without a checksum (records of one epoch have consecutive counters), and
 * never written.
 */
import { crc32 } from "./crc32.js";

export const LOG_RECORD_MARKER = 0x82;
export const LOG_RECORD_HEADER_BYTES = 13;
/** The first byte of a version-1 record: the txn codec's format version then. */
const LEGACY_FIRST_BYTE = 1;

const TWO_POW_32 = 2 ** 32;

/**
 * A record as stored: the header then a copy of `payload`. `key` is the record's key as the log
 * stores it (the checksum covers it, so that a record read under another zxid is refused).
 */
export function encodeLogRecord(key: Uint8Array, prevZxid: number, payload: Uint8Array): Uint8Array {
  // Node's pooled allocation for small records: the stored bytes live only until the log hands
  // them to its write (LevelDB copies them into its batch at once).
  const stored = Buffer.allocUnsafe(LOG_RECORD_HEADER_BYTES + payload.byteLength);
  const view = new DataView(stored.buffer, stored.byteOffset, stored.byteLength);
  stored[0] = LOG_RECORD_MARKER;
  view.setUint32(1, Math.floor(prevZxid / TWO_POW_32));
  view.setUint32(5, prevZxid >>> 0);
  stored.set(payload, LOG_RECORD_HEADER_BYTES);
  view.setUint32(9, recordChecksum(key, stored));
  return stored;
}

export type DecodedLogRecord =
  /** `prevZxid` is undefined for a version-1 record. `payload` is a view into the stored bytes. */
  { ok: true; payload: Uint8Array; prevZxid: number | undefined } | { ok: false; reason: string };

/** Checks and unwraps one stored record. Never throws: damage is an answer. */
export function decodeLogRecord(key: Uint8Array, stored: Uint8Array): DecodedLogRecord {
  if (stored.byteLength === 0) return { ok: false, reason: "empty record" };
  if (stored[0] === LEGACY_FIRST_BYTE) return { ok: true, payload: stored, prevZxid: undefined };
  if (stored[0] !== LOG_RECORD_MARKER) return { ok: false, reason: `unknown record format 0x${stored[0]!.toString(16)}` };
  if (stored.byteLength < LOG_RECORD_HEADER_BYTES) return { ok: false, reason: `record cut short (${stored.byteLength} bytes)` };
  const view = new DataView(stored.buffer, stored.byteOffset, stored.byteLength);
  if (view.getUint32(9) !== recordChecksum(key, stored)) return { ok: false, reason: "record checksum mismatch" };
  const prevZxid = view.getUint32(1) * TWO_POW_32 + view.getUint32(5);
  if (!Number.isSafeInteger(prevZxid)) return { ok: false, reason: `previous zxid beyond 2^53` };
  return { ok: true, payload: stored.subarray(LOG_RECORD_HEADER_BYTES), prevZxid };
}

function recordChecksum(key: Uint8Array, stored: Uint8Array): number {
  let crc = crc32(key);
  crc = crc32(stored.subarray(0, 9), crc);
  return crc32(stored.subarray(LOG_RECORD_HEADER_BYTES), crc);
}

/**
 * Follows the chain of records as they are read, oldest first, and answers the first break: a
 * record whose predecessor is not the record read before it (one went missing), a first record
 * that does not continue the snapshot it must follow, or, between version-1 records of one epoch,
 * a counter that skips.
 */
export class LogChain {
  private previous: number | undefined;

  /** @param follows what the first record must follow (the snapshot a recovery replays onto); undefined: anything */
  constructor(private readonly follows?: number) {}

  /** Undefined when the record continues the chain, else what is wrong. */
  next(zxid: number, prevZxid: number | undefined): string | undefined {
    const previous = this.previous;
    this.previous = zxid;
    if (previous === undefined) {
      const base = this.follows;
      if (base === undefined || prevZxid === base) return undefined;
      if (prevZxid === undefined) {
        // Version 1: the first record of the snapshot's own epoch must be the next counter.
        const sameEpoch = Math.floor(base / TWO_POW_32) === Math.floor(zxid / TWO_POW_32);
        return sameEpoch && zxid !== base + 1 ? `records missing between the snapshot at ${hexZxid(base)} and ${hexZxid(zxid)}` : undefined;
      }
      return `the log does not continue its snapshot at ${hexZxid(base)}: its first record after it follows ${hexZxid(prevZxid)}`;
    }
    if (prevZxid !== undefined) {
      return prevZxid === previous ? undefined : `records missing between ${hexZxid(previous)} and ${hexZxid(zxid)} (it follows ${hexZxid(prevZxid)})`;
    }
    // Version 1: only an epoch's counters can be checked.
    const sameEpoch = Math.floor(previous / TWO_POW_32) === Math.floor(zxid / TWO_POW_32);
    return sameEpoch && zxid !== previous + 1 ? `records missing between ${hexZxid(previous)} and ${hexZxid(zxid)}` : undefined;
  }
}

function hexZxid(zxid: number): string {
  return `0x${zxid.toString(16)}`;
}
