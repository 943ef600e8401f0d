/**
 * ZooKeeper's txn log file (FileTxnLog), read as its FileTxnIterator reads it:
 *
 *   FileHeader { int magic "ZKLG", int version 2, long dbid }
 *   records: long Adler-32 of the txn bytes, buffer txn bytes (TxnHeader, record, TxnDigest), byte 'B'
 *   zeros: the file is preallocated, so a record of length 0 ends it
 *
 * A record cut short — no room for its length, its bytes or its closing 'B' — is where a crash
 * stopped a write: the file ends there, as ZooKeeper treats it. A whole record whose checksum does
 * not match is damage, and stops the read with an error naming the file and offset.
 */
import { JuteReader } from "../server/zk-wire/jute.js";
import { adler32 } from "./adler32.js";
import { ZooKeeperDataError } from "./errors.js";
import { decodeTxnEntry, FILE_FORMAT_VERSION, FileHeader, TXN_LOG_MAGIC, type ZooKeeperTxnEntry } from "./txn-records.js";

const END_OF_RECORD = 0x42; // 'B'
const HEADER_BYTES = 16;

export interface ZooKeeperLogRecord extends ZooKeeperTxnEntry {
  /** Where the record starts in its file. */
  offset: number;
  /** Its txn bytes' length. */
  bytes: number;
}

/** Every record of one log file, in order. Throws ZooKeeperDataError naming `file`. */
export function* readZooKeeperTxnLog(contents: Uint8Array, file: string): Generator<ZooKeeperLogRecord> {
  if (contents.length < HEADER_BYTES) throw new ZooKeeperDataError(file, `${contents.length} bytes, shorter than a txn log's header`);
  const header = FileHeader.read(new JuteReader(contents.subarray(0, HEADER_BYTES)));
  if (header.magic !== TXN_LOG_MAGIC) throw new ZooKeeperDataError(file, `not a ZooKeeper txn log (magic 0x${(header.magic >>> 0).toString(16)})`);
  if (header.version !== FILE_FORMAT_VERSION) throw new ZooKeeperDataError(file, `txn log format version ${header.version}, only 2 is known`);
  const view = new DataView(contents.buffer, contents.byteOffset, contents.byteLength);
  let offset = HEADER_BYTES;
  for (;;) {
    if (contents.length - offset < 12) return;
    const recordedCrc = view.getBigInt64(offset, false);
    const length = view.getInt32(offset + 8, false);
    // Preallocated zeros (length 0) or a null buffer end the file; a torn record does too.
    if (length === 0 || length === -1) return;
    if (length < -1) throw new ZooKeeperDataError(file, `record at offset ${offset} claims ${length} bytes: the log is damaged`);
    const start = offset + 12;
    if (contents.length - start < length + 1) return;
    if (contents[start + length] !== END_OF_RECORD) return;
    const bytes = contents.subarray(start, start + length);
    if (BigInt(adler32(bytes)) !== recordedCrc)
      throw new ZooKeeperDataError(file, `record at offset ${offset} fails its checksum (CRC check failed): the log is damaged`);
    let entry: ZooKeeperTxnEntry;
    try {
      entry = decodeTxnEntry(bytes);
    } catch (error) {
      if (error instanceof ZooKeeperDataError) throw new ZooKeeperDataError(file, `record at offset ${offset}: ${error.message}`);
      throw error;
    }
    yield { ...entry, offset, bytes: length };
    offset = start + length + 1;
  }
}
