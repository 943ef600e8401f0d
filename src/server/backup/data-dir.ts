/**
 * corral data dirs made and read from outside a running server: laid down whole from a tree (a
 * restored backup, an imported ZooKeeper tree), and read without disturbing the server that may own
 * them (inspection, export). Both go through the store's own snapshot writer, snapshot files and
 * txn log, so whatever format those take is what is written and read here.
 *
 * Laying down is all or nothing: everything is written into a temp dir beside the target, synced,
 * and renamed into place; any failure removes the temp dir, so the target never holds half a tree.
 * The target must be new or empty, and never a running server's.
 *
 * Reading a member's files while its server runs: snapshot files are only ever renamed into place,
 * so they are read as they are. The txn log's LevelDB is locked by the server, so it is read from a
 * copy of its directory (immutable tables, append-only logs and manifest; a copy that a compaction
 * raced is refused by LevelDB and made again), opened in a temp dir and removed after.
 */
import { cp, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { DataTree } from "../../store/data-tree.js";
import { encodeSnapshot, decodeSnapshot } from "../../store/snapshot-codec.js";
import { decodeTxn } from "../../store/txn-codec.js";
import { formatZxid } from "../../store/zxid.js";
import { dataDirLayout, recover } from "../../store/disk/recovery.js";
import { fsyncDirectory, SnapshotStore } from "../../store/disk/snapshot-store.js";
import { LevelTxnLog, type LogEntry } from "../../store/disk/txn-log.js";
import { EPOCH_NAMES } from "../disk-storage.js";

/** A data dir that cannot be used for what was asked, and why. */
export class DataDirError extends Error {
  readonly code = "DATA_DIR_UNUSABLE";
  constructor(message: string) {
    super(message);
    this.name = "DataDirError";
  }
}

/** Whether a running process holds the lock of the LevelDB in `logDir` (Linux's /proc/locks; false elsewhere). */
export async function levelDbInUse(logDir: string): Promise<boolean> {
  let lock;
  try {
    lock = await stat(join(logDir, "LOCK"));
  } catch {
    return false;
  }
  let locks: string;
  try {
    locks = await readFile("/proc/locks", "utf8");
  } catch {
    return false;
  }
  // "1: POSIX  ADVISORY  WRITE 4242 08:01:1234567 0 EOF": major and minor in hex, the inode in decimal.
  const major = Math.floor(lock.dev / 256) & 0xfff;
  const minor = (lock.dev & 0xff) | (Math.floor(lock.dev / 4096) & ~0xff);
  for (const line of locks.split("\n")) {
    const device = /\s([0-9a-f]+):([0-9a-f]+):(\d+)\s/.exec(line);
    if (device === null) continue;
    if (Number(device[3]) === lock.ino && Number.parseInt(device[1]!, 16) === major && Number.parseInt(device[2]!, 16) === minor) return true;
  }
  return false;
}

/** Refuses a target that is a running server's, holds anything, or is not a directory. */
export async function checkDataDirFree(dir: string): Promise<void> {
  let entries: string[];
  try {
    const info = await stat(dir);
    if (!info.isDirectory()) throw new DataDirError(`${dir} is not a directory`);
    entries = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  if (entries.length === 0) return;
  if (await levelDbInUse(dataDirLayout(dir).logDir)) throw new DataDirError(`${dir} is in use by a running corral server: stop it first`);
  throw new DataDirError(`${dir} already holds data: this writes only a new or empty directory, so move ${dir} away first`);
}

export interface Epochs {
  accepted: number;
  current: number;
}

/**
 * Lays down a member's data dir holding `tree` (one snapshot, an empty txn log, and `epochs` when
 * given: without them the member starts from the snapshot's epoch). All or nothing (file note).
 */
export async function layDownDataDir(dir: string, tree: DataTree, epochs?: Epochs): Promise<{ snapshotBytes: number }> {
  await checkDataDirFree(dir);
  const target = resolve(dir);
  await mkdir(dirname(target), { recursive: true });
  const staging = await mkdtemp(join(dirname(target), `.${basename(target)}.staging-`));
  try {
    const layout = dataDirLayout(staging);
    const bytes = encodeSnapshot(tree);
    const snapshots = await SnapshotStore.open(layout.snapshotDir);
    await snapshots.save(tree.lastProcessedZxid, bytes);
    const log = await LevelTxnLog.open(layout.logDir);
    try {
      if (epochs !== undefined) {
        await log.stable.putNumber(EPOCH_NAMES.accepted, epochs.accepted);
        await log.stable.putNumber(EPOCH_NAMES.current, epochs.current);
      }
    } finally {
      await log.close();
    }
    await fsyncDirectory(staging);
    // An empty target is replaced by the rename (rename(2) onto an empty directory).
    await rename(staging, target);
    await fsyncDirectory(dirname(target));
    return { snapshotBytes: bytes.length };
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

export interface DataDirContents {
  /** The tree as this member would recover it: the newest valid snapshot, then its log after it. */
  tree: DataTree;
  snapshotZxid: number | undefined;
  /** Every record the log holds (the tail after the snapshot may not be committed yet). */
  log: LogEntry[];
  epochs: { accepted: number | undefined; current: number | undefined };
  /** Whether a running server held the log (it was read from a copy either way). */
  inUse: boolean;
}

/** How often a copy of the log is made again when a compaction raced it. */
const COPY_ATTEMPTS = 5;

/** Reads a data dir without changing it, safe while its server runs (file note). Throws DataDirError. */
export async function readDataDir(dir: string): Promise<DataDirContents> {
  const layout = dataDirLayout(dir);
  try {
    if (!(await stat(dir)).isDirectory()) throw new DataDirError(`${dir} is not a directory`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new DataDirError(`${dir} does not exist`);
    throw error;
  }
  const hasLog = await exists(join(layout.logDir, "CURRENT"));
  const hasSnapshots = await exists(layout.snapshotDir);
  if (!hasLog && !hasSnapshots) throw new DataDirError(`${dir} is not a corral data dir (no log/ or snapshots/ in it)`);
  const inUse = await levelDbInUse(layout.logDir);
  const scratch = await mkdtemp(join(tmpdir(), "corral-read-"));
  try {
    // recover() as a server runs it, over a scratch dir: the log a copy, the snapshots the real ones.
    const scratchLayout = dataDirLayout(scratch);
    if (hasSnapshots) await symlink(resolve(layout.snapshotDir), scratchLayout.snapshotDir);
    let lastError: unknown;
    for (let attempt = 0; attempt < COPY_ATTEMPTS; attempt++) {
      await rm(scratchLayout.logDir, { recursive: true, force: true });
      if (hasLog) {
        try {
          await cp(layout.logDir, scratchLayout.logDir, { recursive: true, filter: (source) => basename(source) !== "LOCK" });
        } catch (error) {
          lastError = error;
          continue;
        }
      }
      let recovered;
      try {
        recovered = await recover(scratch);
      } catch (error) {
        if ((error as { code?: string }).code === "RECOVERY_INCOMPLETE") throw new DataDirError(`${dir}: ${(error as Error).message}`);
        lastError = error;
        continue;
      }
      try {
        const log: LogEntry[] = [];
        for await (const entry of recovered.log.readFrom(0)) log.push(entry);
        const accepted = await recovered.log.stable.getNumber(EPOCH_NAMES.accepted);
        const current = await recovered.log.stable.getNumber(EPOCH_NAMES.current);
        const tree = treeOf(dir, recovered.snapshot?.bytes, log);
        return { tree, snapshotZxid: recovered.snapshot?.zxid, log, epochs: { accepted, current }, inUse };
      } finally {
        await recovered.log.close();
      }
    }
    throw new DataDirError(`${dir}: could not read a consistent copy of its txn log: ${(lastError as Error).message}`);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** The snapshot's tree with every later log record applied. Throws DataDirError. */
function treeOf(dir: string, snapshot: Uint8Array | undefined, log: readonly LogEntry[]): DataTree {
  let tree: DataTree;
  try {
    tree = snapshot === undefined ? new DataTree() : decodeSnapshot(snapshot);
  } catch (error) {
    throw new DataDirError(`${dir}: its newest valid snapshot does not decode: ${(error as Error).message}`);
  }
  for (const entry of log) {
    if (entry.zxid <= tree.lastProcessedZxid) continue;
    try {
      tree.apply(decodeTxn(entry.record));
    } catch (error) {
      throw new DataDirError(`${dir}: log record ${formatZxid(entry.zxid)} does not apply to the tree: ${(error as Error).message}`);
    }
  }
  return tree;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
