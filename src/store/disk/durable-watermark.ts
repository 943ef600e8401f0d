/**
 * The txn log's durable watermark: the highest zxid LevelDB has reported durable, kept in a small
 * file of its own beside the database (`<dataDir>/LOG-WATERMARK`). LevelDB's recovery drops a
 * damaged or cut-short tail of its own write-ahead file without a word, and the records' chain
 * cannot see a loss at the end; the watermark can: a log that opens ending below it has lost
 * records it once reported durable, which is damage (recovery.ts).
 *
 * It is raised after each batch is durable and before the batch's appends are answered, and
 * lowered before a truncation deletes anything, so it never exceeds what the log durably held
 * unless the log lost it. 16 bytes written in place (one sector): "CWM1", the zxid as a 64-bit
 * big-endian number, and a CRC32 of those 12 bytes.
 */
import { type FileHandle, open } from "node:fs/promises";
import { dirname } from "node:path";

import { crc32 } from "./crc32.js";
import { StorageDamagedError } from "./damage.js";
import { fsyncDirectory } from "./snapshot-store.js";

export const WATERMARK_FILE = "LOG-WATERMARK";
const MAGIC = 0x43574d31; // "CWM1"
const SIZE = 16;

export class DurableWatermark {
  private constructor(
    private readonly handle: FileHandle,
    readonly file: string,
    /** What the file held when opened; undefined when it was made anew (missing: a data dir from before it existed). */
    readonly atOpen: number | undefined,
  ) {}

  /** Opens `file`, creating it (at 0) when missing. Throws StorageDamagedError when it does not read back. */
  static async open(file: string): Promise<DurableWatermark> {
    let handle: FileHandle;
    let atOpen: number | undefined;
    try {
      handle = await open(file, "r+");
      const bytes = Buffer.alloc(SIZE);
      const { bytesRead } = await handle.read(bytes, 0, SIZE, 0);
      atOpen = decode(bytes.subarray(0, bytesRead));
      if (atOpen === undefined) {
        await handle.close();
        throw new StorageDamagedError(file, `the log's durable watermark does not read back (${bytesRead} of ${SIZE} bytes, or a checksum that fails)`);
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      return DurableWatermark.fresh(file);
    }
    return new DurableWatermark(handle, file, atOpen);
  }

  /** `file` made anew at 0, whatever it held: for a log that starts over (a repair's fresh log). */
  static async fresh(file: string): Promise<DurableWatermark> {
    const handle = await open(file, "w+");
    try {
      await handle.write(encode(0), 0, SIZE, 0);
      await handle.sync();
      await fsyncDirectory(dirname(file));
    } catch (error) {
      await handle.close();
      throw error;
    }
    return new DurableWatermark(handle, file, undefined);
  }

  /** Durably records `zxid` (raised after a durable batch, lowered before a truncation). */
  async set(zxid: number): Promise<void> {
    await this.handle.write(encode(zxid), 0, SIZE, 0);
    await this.handle.datasync();
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

function encode(zxid: number): Buffer {
  const bytes = Buffer.alloc(SIZE);
  bytes.writeUInt32BE(MAGIC, 0);
  bytes.writeBigUInt64BE(BigInt(zxid), 4);
  bytes.writeUInt32BE(crc32(bytes.subarray(0, 12)), 12);
  return bytes;
}

function decode(bytes: Buffer): number | undefined {
  if (bytes.length !== SIZE || bytes.readUInt32BE(0) !== MAGIC || bytes.readUInt32BE(12) !== crc32(bytes.subarray(0, 12))) return undefined;
  const zxid = bytes.readBigUInt64BE(4);
  return zxid <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(zxid) : undefined;
}
