/**
 * A corral backup: one consistent snapshot of a tree in one file, with the zxid it is exact at and
 * an integrity hash over all of it (etcd's `snapshot save` file, in corral's terms).
 *
 *   offset  size  field
 *        0     4  magic "CRBK"
 *        4     4  format version (uint32 BE) = 1
 *        8     8  zxid the snapshot is exact at (uint64 BE)
 *       16     …  body: the snapshot codec's bytes (src/store/snapshot-codec.ts, with its own version)
 *   trailer, the last 44 bytes:
 *        0     8  body length (uint64 BE)
 *        8    32  SHA-256 of every byte before the trailer
 *       40     4  magic "CRBK"
 *
 * The header goes first and the trailer last, so a backup is written as it is encoded and streamed
 * as it is written. Reading checks, in order, what a person needs told: another kind of file, a
 * file cut short, a byte changed — and refuses it before anything is done with it.
 */
import { createHash, type Hash } from "node:crypto";
import { open, readFile, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { hex64 } from "../../common/hex.js";
import { isMarshallingError } from "../../store/txn-codec.js";
import { decodeSnapshot } from "../../store/snapshot-codec.js";
import type { DataTree } from "../../store/data-tree.js";
import { formatZxid } from "../../store/zxid.js";
import { fsyncDirectory } from "../../store/disk/snapshot-store.js";

const MAGIC = Buffer.from("CRBK", "ascii");
export const BACKUP_FORMAT_VERSION = 1;
export const BACKUP_HEADER_BYTES = 16;
export const BACKUP_TRAILER_BYTES = 44;

/** A backup that cannot be used, and why (for a person: another kind of file, cut short, damaged). */
export class BackupError extends Error {
  readonly code = "BACKUP_INVALID";
  constructor(message: string) {
    super(message);
    this.name = "BackupError";
  }
}

/** Frames a backup as its body is produced: `header()`, `body(chunk)` for each chunk, `trailer()`. */
export class BackupFramer {
  private readonly hash: Hash = createHash("sha256");
  private bodyBytes = 0;
  private digestHex: string | undefined;

  constructor(readonly zxid: number) {}

  header(): Uint8Array {
    const header = Buffer.alloc(BACKUP_HEADER_BYTES);
    MAGIC.copy(header, 0);
    header.writeUInt32BE(BACKUP_FORMAT_VERSION, 4);
    header.writeBigUInt64BE(BigInt(this.zxid), 8);
    this.hash.update(header);
    return header;
  }

  body(chunk: Uint8Array): Uint8Array {
    this.hash.update(chunk);
    this.bodyBytes += chunk.byteLength;
    return chunk;
  }

  trailer(): Uint8Array {
    const trailer = Buffer.alloc(BACKUP_TRAILER_BYTES);
    trailer.writeBigUInt64BE(BigInt(this.bodyBytes), 0);
    const digest = this.hash.digest();
    digest.copy(trailer, 8);
    MAGIC.copy(trailer, 40);
    this.digestHex = digest.toString("hex");
    return trailer;
  }

  /** The SHA-256 (hex) the trailer holds, once written. */
  get sha256(): string | undefined {
    return this.digestHex;
  }

  get totalBytes(): number {
    return BACKUP_HEADER_BYTES + this.bodyBytes + BACKUP_TRAILER_BYTES;
  }
}

export interface VerifiedBackup {
  zxid: number;
  /** The snapshot codec's bytes. */
  body: Uint8Array;
  sha256: string;
  bytes: number;
}

/** Checks a whole backup held in memory. Throws BackupError saying what is wrong. */
export function verifyBackup(file: Uint8Array): VerifiedBackup {
  const bytes = Buffer.from(file.buffer, file.byteOffset, file.byteLength);
  if (bytes.length >= 4 && !bytes.subarray(0, 4).equals(MAGIC)) {
    const start = bytes.subarray(0, 4).toString("latin1");
    const what =
      start === "ZKSN" ? "a ZooKeeper snapshot (use corral import)" : start === "CRSN" ? "a corral snapshot file, not a backup" : "not a corral backup";
    throw new BackupError(`${what}: it does not begin with CRBK`);
  }
  if (bytes.length < BACKUP_HEADER_BYTES + BACKUP_TRAILER_BYTES)
    throw new BackupError(`truncated: ${bytes.length} bytes, less than a backup's header and trailer`);
  const version = bytes.readUInt32BE(4);
  if (version !== BACKUP_FORMAT_VERSION) throw new BackupError(`backup format version ${version}; this corral reads version ${BACKUP_FORMAT_VERSION}`);
  const zxid = bytes.readBigUInt64BE(8);
  const trailer = bytes.subarray(bytes.length - BACKUP_TRAILER_BYTES);
  if (!trailer.subarray(40).equals(MAGIC))
    throw new BackupError(`truncated or damaged: no trailer at the end of its ${bytes.length} bytes (was the file cut short?)`);
  const bodyBytes = bytes.length - BACKUP_HEADER_BYTES - BACKUP_TRAILER_BYTES;
  const recordedBodyBytes = trailer.readBigUInt64BE(0);
  if (recordedBodyBytes !== BigInt(bodyBytes)) {
    throw new BackupError(`truncated or damaged: the body is ${bodyBytes} bytes, the trailer says ${recordedBodyBytes}`);
  }
  const digest = createHash("sha256")
    .update(bytes.subarray(0, bytes.length - BACKUP_TRAILER_BYTES))
    .digest();
  if (!digest.equals(trailer.subarray(8, 40))) throw new BackupError("damaged: its SHA-256 does not match the one it was written with (a byte changed)");
  if (zxid > BigInt(Number.MAX_SAFE_INTEGER)) throw new BackupError(`damaged: zxid ${hex64(zxid)} is beyond any corral zxid`);
  return {
    zxid: Number(zxid),
    body: bytes.subarray(BACKUP_HEADER_BYTES, BACKUP_HEADER_BYTES + bodyBytes),
    sha256: digest.toString("hex"),
    bytes: bytes.length,
  };
}

/** Reads and checks a backup file. Throws BackupError (a missing file too). */
export async function readBackupFile(path: string): Promise<VerifiedBackup> {
  let contents: Buffer;
  try {
    contents = await readFile(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new BackupError(
      code === "ENOENT" ? `${path} does not exist` : code === "EISDIR" ? `${path} is a directory, not a backup file` : (error as Error).message,
    );
  }
  try {
    return verifyBackup(contents);
  } catch (error) {
    if (error instanceof BackupError) throw new BackupError(`${path}: ${error.message}`);
    throw error;
  }
}

/** The tree a verified backup holds. Throws BackupError when its snapshot does not decode. */
export function treeOfBackup(backup: VerifiedBackup): DataTree {
  let tree: DataTree;
  try {
    tree = decodeSnapshot(backup.body);
  } catch (error) {
    if (isMarshallingError(error)) throw new BackupError(`its snapshot does not decode: ${error.message}`);
    throw error;
  }
  if (tree.lastProcessedZxid !== backup.zxid) {
    throw new BackupError(`its snapshot is at zxid ${formatZxid(tree.lastProcessedZxid)}, its header says ${formatZxid(backup.zxid)}`);
  }
  return tree;
}

/**
 * Writes a backup to `path` from the body's chunks (each written before the next is asked for),
 * durably: a temp file beside it, fsynced, renamed into place. Answers the framer (size, hash).
 */
export async function writeBackupFile(path: string, zxid: number, body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<BackupFramer> {
  const framer = new BackupFramer(zxid);
  const temp = join(dirname(path), `.${basename(path)}.tmp-${process.pid}`);
  const handle = await open(temp, "wx");
  try {
    await handle.write(framer.header());
    for await (const chunk of body) await handle.write(framer.body(chunk));
    await handle.write(framer.trailer());
    await handle.sync();
    await handle.close();
    await rename(temp, path);
    await fsyncDirectory(dirname(path));
    return framer;
  } catch (error) {
    await handle.close().catch(() => undefined);
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}
