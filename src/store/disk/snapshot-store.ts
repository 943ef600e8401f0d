import { type FileHandle, mkdir, open, readdir, readFile, rename, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";

import { assert } from "../../common/assert.js";
import { crc32 } from "./crc32.js";
import { type DiskFaults, InjectedWriteFault, injectedFaultFor } from "./faults.js";
import { assertZxid } from "./keys.js";

/**
 * Snapshot files: `snapshot.<zxid as 16 lower-case hex digits>`, each a 32-byte header then the
 * body (opaque bytes: the snapshot codec lives in src/store).
 *
 *   offset  size  field
 *        0     4  magic "CRSN"
 *        4     4  format version (uint32 BE) = 1
 *        8     8  zxid (uint64 BE), equal to the one in the file name
 *       16     8  body length in bytes (uint64 BE)
 *       24     4  CRC-32 of the body
 *       28     4  CRC-32 of header bytes 0..27
 *
 * A file is valid only if all of it checks out and its size is exactly header + body length, so a
 * torn write (short file), a flipped bit, or a file renamed to the wrong zxid is refused.
 */
export const SNAPSHOT_MAGIC = Buffer.from("CRSN", "ascii");
export const SNAPSHOT_FORMAT_VERSION = 1;
export const SNAPSHOT_HEADER_BYTES = 32;

/** How much of a snapshot is written between two syncs of its file (see saveChunks). */
const SYNC_EVERY_BYTES = 1024 * 1024;

/** How much of a snapshot `verify` reads and checksums at a time. */
const VERIFY_PIECE_BYTES = 1024 * 1024;

const FILE_NAME = /^snapshot\.([0-9a-f]{16})$/;
const TEMP_NAME = /^snapshot\.[0-9a-f]{16}\.tmp-/;

export function snapshotFileName(zxid: number): string {
  assertZxid(zxid, "snapshotFileName");
  return `snapshot.${zxid.toString(16).padStart(16, "0")}`;
}

export interface LoadedSnapshot {
  zxid: number;
  bytes: Uint8Array;
}

export interface InvalidSnapshot {
  zxid: number;
  file: string;
  reason: string;
}

export interface SnapshotStoreOptions {
  /** Told about every snapshot file that fails validation (and is skipped). */
  onInvalid?: (invalid: InvalidSnapshot) => void;
  /** Test only: asked with "snapshot" before each save (see faults.ts). */
  faults?: DiskFaults;
}

function snapshotFileHeader(zxid: number, bodyBytes: number, bodyCrc: number): Buffer {
  assertZxid(zxid, "snapshotFileHeader");
  const header = Buffer.alloc(SNAPSHOT_HEADER_BYTES);
  SNAPSHOT_MAGIC.copy(header, 0);
  header.writeUInt32BE(SNAPSHOT_FORMAT_VERSION, 4);
  header.writeBigUInt64BE(BigInt(zxid), 8);
  header.writeBigUInt64BE(BigInt(bodyBytes), 16);
  header.writeUInt32BE(bodyCrc, 24);
  header.writeUInt32BE(crc32(header.subarray(0, 28)), 28);
  return header;
}

/** A whole snapshot file in one piece (the store writes its files a slice at a time; the simulator's storage twin keeps them whole). */
export function encodeSnapshotFile(zxid: number, body: Uint8Array): Uint8Array {
  return Buffer.concat([snapshotFileHeader(zxid, body.byteLength, crc32(body)), body]);
}

/** Validates a whole snapshot file; `bytes` of the answer is a view into `file`. */
export function decodeSnapshotFile(file: Uint8Array, expectedZxid: number): { ok: true; bytes: Uint8Array } | { ok: false; reason: string } {
  const header = checkSnapshotHeader(file, file.byteLength, expectedZxid);
  if (!header.ok) return header;
  const body = file.subarray(SNAPSHOT_HEADER_BYTES);
  if (header.bodyCrc !== crc32(body)) return { ok: false, reason: "body checksum mismatch" };
  return { ok: true, bytes: body };
}

/**
 * Everything about a snapshot file but its body's checksum, from its first bytes (at least the
 * header, when the file has that many) and its size; answers the checksum the body must have.
 */
function checkSnapshotHeader(start: Uint8Array, fileBytes: number, expectedZxid: number): { ok: true; bodyCrc: number } | { ok: false; reason: string } {
  if (fileBytes < SNAPSHOT_HEADER_BYTES) return { ok: false, reason: `short file (${fileBytes} bytes)` };
  const header = Buffer.from(start.buffer, start.byteOffset, SNAPSHOT_HEADER_BYTES);
  if (!header.subarray(0, 4).equals(SNAPSHOT_MAGIC)) return { ok: false, reason: "bad magic" };
  if (header.readUInt32BE(28) !== crc32(header.subarray(0, 28))) return { ok: false, reason: "header checksum mismatch" };
  const version = header.readUInt32BE(4);
  if (version !== SNAPSHOT_FORMAT_VERSION) return { ok: false, reason: `unknown format version ${version}` };
  const zxid = header.readBigUInt64BE(8);
  if (zxid !== BigInt(expectedZxid)) return { ok: false, reason: `header zxid ${zxid} differs from file name` };
  const length = header.readBigUInt64BE(16);
  const actual = BigInt(fileBytes - SNAPSHOT_HEADER_BYTES);
  if (length !== actual) return { ok: false, reason: `body is ${actual} bytes, header says ${length}` };
  return { ok: true, bodyCrc: header.readUInt32BE(24) };
}

/** The snapshot files of one server, in `<dataDir>/snapshots`. */
export class SnapshotStore {
  readonly dir: string;
  private readonly onInvalid: ((invalid: InvalidSnapshot) => void) | undefined;
  private readonly faults: DiskFaults | undefined;
  /** Temp files of saves still running in this process; purge leaves them alone. */
  private readonly tempFilesInUse = new Set<string>();
  private tempCounter = 0;

  private constructor(dir: string, options: SnapshotStoreOptions) {
    this.dir = dir;
    this.onInvalid = options.onInvalid;
    this.faults = options.faults;
  }

  static async open(dir: string, options: SnapshotStoreOptions = {}): Promise<SnapshotStore> {
    const created = await mkdir(dir, { recursive: true });
    if (created !== undefined) await fsyncDirectory(dirname(dir));
    return new SnapshotStore(dir, options);
  }

  /** Durably writes the snapshot of the tree as of `zxid` (temp file, fsync, rename, fsync dir). */
  save(zxid: number, bytes: Uint8Array): Promise<void> {
    return this.saveChunks(zxid, [bytes]);
  }

  /**
   * `save`, for a body that arrives in pieces (an encoder working between writes): each piece is
   * written as it comes and the header, which holds the body's length and checksum, last. The
   * file is synced every `SYNC_EVERY_BYTES` on the way: a gigabyte of dirty pages flushed by one
   * fsync at the end would hold up every txn-log fsync on the disk for as long (ext4 commits its
   * journal in order).
   */
  async saveChunks(zxid: number, body: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
    assertZxid(zxid, "save");
    const name = snapshotFileName(zxid);
    this.tempCounter += 1;
    const tempName = `${name}.tmp-${process.pid}-${this.tempCounter}`;
    const tempPath = join(this.dir, tempName);
    // An injected fault strikes where a real EIO would: at the first write, or at the fsync.
    const fault = injectedFaultFor(this.faults, "snapshot");
    this.tempFilesInUse.add(tempName);
    try {
      const handle = await open(tempPath, "wx");
      try {
        if (fault === "beforeWrite") throw new InjectedWriteFault("snapshot", fault);
        let position = SNAPSHOT_HEADER_BYTES;
        let bodyCrc = 0;
        let unsynced = 0;
        for await (const chunk of body) {
          bodyCrc = crc32(chunk, bodyCrc);
          await writeFully(handle, chunk, position);
          position += chunk.byteLength;
          unsynced += chunk.byteLength;
          if (unsynced >= SYNC_EVERY_BYTES) {
            await handle.datasync();
            unsynced = 0;
          }
        }
        await writeFully(handle, snapshotFileHeader(zxid, position - SNAPSHOT_HEADER_BYTES, bodyCrc), 0);
        if (fault === "afterWrite") throw new InjectedWriteFault("snapshot", fault);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tempPath, join(this.dir, name));
      await fsyncDirectory(this.dir);
    } catch (error) {
      await unlink(tempPath).catch(() => undefined);
      throw error;
    } finally {
      this.tempFilesInUse.delete(tempName);
    }
  }

  /** zxids of every snapshot file present (valid or not), newest first. */
  async list(): Promise<number[]> {
    const zxids: number[] = [];
    for (const entry of await readdir(this.dir)) {
      const match = FILE_NAME.exec(entry);
      if (match?.[1] === undefined) continue;
      const zxid = Number.parseInt(match[1], 16);
      if (Number.isSafeInteger(zxid)) zxids.push(zxid);
    }
    return zxids.sort((a, b) => b - a);
  }

  /** Reads and validates one snapshot file. */
  async load(zxid: number): Promise<{ ok: true; bytes: Uint8Array } | { ok: false; reason: string }> {
    const file = join(this.dir, snapshotFileName(zxid));
    let contents: Buffer;
    try {
      contents = await readFile(file);
    } catch (error) {
      return { ok: false, reason: `unreadable: ${error instanceof Error ? error.message : String(error)}` };
    }
    return decodeSnapshotFile(contents, zxid);
  }

  /**
   * `load`'s checks without keeping the file: it is read a piece at a time into one small buffer.
   * Purge verifies up to `retain` snapshots after every save; read whole, a million-znode tree's
   * three files were 150 MB of buffers and 20 ms checksums on the event loop each time, and a
   * single write waiting behind them took 20–40 ms.
   */
  async verify(zxid: number): Promise<{ ok: true } | { ok: false; reason: string }> {
    let handle: FileHandle;
    try {
      handle = await open(join(this.dir, snapshotFileName(zxid)), "r");
    } catch (error) {
      return { ok: false, reason: `unreadable: ${error instanceof Error ? error.message : String(error)}` };
    }
    try {
      const { size } = await handle.stat();
      const piece = Buffer.allocUnsafe(Math.min(VERIFY_PIECE_BYTES, Math.max(size, SNAPSHOT_HEADER_BYTES)));
      const headerRead = await handle.read(piece, 0, Math.min(size, SNAPSHOT_HEADER_BYTES), 0);
      const header = checkSnapshotHeader(piece, headerRead.bytesRead < SNAPSHOT_HEADER_BYTES ? headerRead.bytesRead : size, zxid);
      if (!header.ok) return header;
      let crc = 0;
      let position = SNAPSHOT_HEADER_BYTES;
      while (position < size) {
        const { bytesRead } = await handle.read(piece, 0, Math.min(piece.byteLength, size - position), position);
        if (bytesRead === 0) return { ok: false, reason: `file shrank to ${position} bytes while being read` };
        crc = crc32(piece.subarray(0, bytesRead), crc);
        position += bytesRead;
      }
      return crc === header.bodyCrc ? { ok: true } : { ok: false, reason: "body checksum mismatch" };
    } catch (error) {
      return { ok: false, reason: `unreadable: ${error instanceof Error ? error.message : String(error)}` };
    } finally {
      await handle.close();
    }
  }

  /** The newest snapshot that validates; invalid newer ones are reported to onInvalid and skipped. */
  async loadNewestValid(): Promise<LoadedSnapshot | undefined> {
    for (const zxid of await this.list()) {
      const loaded = await this.load(zxid);
      if (loaded.ok) return { zxid, bytes: loaded.bytes };
      this.reportInvalid(zxid, loaded.reason);
    }
    return undefined;
  }

  /**
   * Keeps the newest `retain` valid snapshots and deletes every snapshot file older than the oldest
   * kept one (valid or not), plus temp files left by crashed saves. Answers the oldest kept zxid
   * (the log may be purged below it), or undefined when no snapshot is valid (purge nothing then).
   * Invalid files newer than the oldest kept one stay, for inspection.
   */
  async purge(retain: number): Promise<number | undefined> {
    assert(Number.isSafeInteger(retain) && retain >= 1, `retain at least one snapshot, got ${retain}`);
    const zxids = await this.list();
    let kept = 0;
    let oldestKept: number | undefined;
    for (const zxid of zxids) {
      if (kept === retain) break;
      const verified = await this.verify(zxid);
      if (!verified.ok) {
        this.reportInvalid(zxid, verified.reason);
        continue;
      }
      kept += 1;
      oldestKept = zxid;
    }
    for (const entry of await readdir(this.dir)) {
      if (TEMP_NAME.test(entry) && !this.tempFilesInUse.has(entry)) await unlink(join(this.dir, entry));
    }
    if (oldestKept === undefined) return undefined;
    let deleted = false;
    for (const zxid of zxids) {
      if (zxid >= oldestKept) continue;
      await unlink(join(this.dir, snapshotFileName(zxid)));
      deleted = true;
    }
    if (deleted) await fsyncDirectory(this.dir);
    return oldestKept;
  }

  /**
   * Deletes every snapshot newer than `zxid` (durably). Zab's TRUNC needs it: a snapshot may hold
   * txns of an abandoned tail that the new leader's history does not have.
   */
  async removeNewerThan(zxid: number): Promise<number> {
    assertZxid(zxid, "removeNewerThan");
    let removed = 0;
    for (const candidate of await this.list()) {
      if (candidate <= zxid) continue;
      await unlink(join(this.dir, snapshotFileName(candidate)));
      removed += 1;
    }
    if (removed > 0) await fsyncDirectory(this.dir);
    return removed;
  }

  private reportInvalid(zxid: number, reason: string): void {
    this.onInvalid?.({ zxid, file: join(this.dir, snapshotFileName(zxid)), reason });
  }
}

/** Makes a directory's entries (a rename, a new or deleted file) durable. */
async function writeFully(handle: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  let written = 0;
  while (written < bytes.byteLength) {
    const { bytesWritten } = await handle.write(bytes, written, bytes.byteLength - written, position + written);
    assert(bytesWritten > 0, "write made no progress");
    written += bytesWritten;
  }
}

export async function fsyncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
