/**
 * A ZooKeeper data dir read as ZooKeeper 3.4–3.9 recover it (FileTxnSnapLog.restore): in
 * `<dataDir>/version-2`, the newest snapshot that reads back whole (plain, .gz or .snappy, up to
 * 100 tried, newest first; a damaged one is skipped as ZooKeeper skips it), then the txn logs in
 * `<dataLogDir>/version-2` (the data dir unless a separate one is given) from the file holding the
 * snapshot's next txn on, each record checksummed. Without any snapshot the logs are replayed on an
 * empty tree, which is what 3.4 does (3.5+ refuses such a dir unless told to trust it).
 *
 * Stricter than ZooKeeper where it would lose data silently: a txn log that skips zxids (a missing
 * file, a purge past the snapshot) stops the read, naming the gap.
 */
import { constants as bufferConstants } from "node:buffer";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { hex64 } from "../common/hex.js";
import { ZooKeeperDataError } from "./errors.js";
import { decodeSnappyJavaStream, SnappyError } from "./snappy.js";
import { decodeZooKeeperSnapshot } from "./snapshot-file.js";
import { readZooKeeperTxnLog } from "./txn-log-file.js";
import { ZooKeeperTree } from "./zookeeper-tree.js";

export const VERSION_DIR = "version-2";
/** FileSnap.deserialize's bound on the snapshots it tries. */
const SNAPSHOTS_TRIED_MAX = 100;
/** What a decompressed snapshot may grow to: the largest buffer this Node.js can hold. */
const SNAPSHOT_BYTES_MAX = bufferConstants.MAX_LENGTH;

export type SnapshotCompression = "none" | "gz" | "snappy";

export interface ZooKeeperFileName {
  name: string;
  zxid: bigint;
}

export interface RecoveredZooKeeper {
  tree: ZooKeeperTree;
  snapshot: { file: string; zxid: bigint; compression: SnapshotCompression } | undefined;
  /** Snapshots newer than the one used, and why each was passed over. */
  skippedSnapshots: { file: string; reason: string }[];
  logFiles: string[];
  txnsReplayed: number;
  /** The epochs ZooKeeper's quorum peer kept beside the data (acceptedEpoch, currentEpoch files), if any. */
  acceptedEpoch: number | undefined;
  currentEpoch: number | undefined;
  /** Sessions that owned ephemerals without being in the session table (their ephemerals are gone). */
  deadSessionsKilled: bigint[];
}

export interface ZooKeeperDataDirs {
  /** ZooKeeper's dataDir: the one holding version-2/ with the snapshots. */
  dataDir: string;
  /** ZooKeeper's dataLogDir, when the txn logs are kept apart. */
  dataLogDir?: string;
}

/** The version-2 directory under `dir`, or a ZooKeeperDataError saying why it is not a ZooKeeper dir. */
export async function versionDirOf(dir: string, what: string): Promise<string> {
  let info;
  try {
    info = await stat(dir);
  } catch {
    throw new ZooKeeperDataError(dir, `${what} does not exist`);
  }
  if (!info.isDirectory()) throw new ZooKeeperDataError(dir, `${what} is not a directory`);
  const versionDir = join(dir, VERSION_DIR);
  try {
    if ((await stat(versionDir)).isDirectory()) return versionDir;
  } catch {
    // fall through to the error below
  }
  throw new ZooKeeperDataError(dir, `${what} has no ${VERSION_DIR}/ directory: not a ZooKeeper data dir`);
}

/** Files named `<prefix>.<hex zxid>[.<anything>]` (Util.getZxidFromName), ascending by zxid. */
export async function zookeeperFiles(dir: string, prefix: "snapshot" | "log"): Promise<ZooKeeperFileName[]> {
  const found: ZooKeeperFileName[] = [];
  for (const name of await readdir(dir)) {
    const parts = name.split(".");
    if (parts.length < 2 || parts[0] !== prefix || !/^[0-9a-fA-F]{1,16}$/.test(parts[1]!)) continue;
    found.push({ name, zxid: BigInt.asIntN(64, BigInt(`0x${parts[1]}`)) });
  }
  return found.sort((a, b) => (a.zxid < b.zxid ? -1 : a.zxid > b.zxid ? 1 : 0));
}

/** SnapStream.getStreamMode: by the last extension; anything but gz or snappy is read plain. */
export function compressionOf(name: string): SnapshotCompression {
  const parts = name.split(".");
  const extension = parts.length > 2 ? parts[parts.length - 1]!.toLowerCase() : "";
  return extension === "gz" ? "gz" : extension === "snappy" ? "snappy" : "none";
}

/** A snapshot file's stream, decompressed. Throws ZooKeeperDataError. */
export function decompressSnapshot(contents: Uint8Array, file: string, compression: SnapshotCompression): Uint8Array {
  try {
    if (compression === "gz") return gunzipSync(contents, { maxOutputLength: SNAPSHOT_BYTES_MAX });
    if (compression === "snappy") return decodeSnappyJavaStream(contents, SNAPSHOT_BYTES_MAX);
    return contents;
  } catch (error) {
    if (error instanceof SnappyError || (error as NodeJS.ErrnoException).code?.startsWith("Z_")) {
      throw new ZooKeeperDataError(file, `damaged ${compression} stream: ${(error as Error).message}`);
    }
    throw error;
  }
}

/** Reads and decodes one snapshot file (any compression). */
export async function readZooKeeperSnapshotFile(path: string) {
  const contents = await readFile(path);
  return decodeZooKeeperSnapshot(decompressSnapshot(contents, path, compressionOf(path)), path);
}

/** The tree a ZooKeeper server would recover from these dirs. Throws ZooKeeperDataError. */
export async function recoverZooKeeperDataDir(dirs: ZooKeeperDataDirs): Promise<RecoveredZooKeeper> {
  const snapDir = await versionDirOf(dirs.dataDir, "the ZooKeeper data dir");
  const logDir = dirs.dataLogDir === undefined ? snapDir : await versionDirOf(dirs.dataLogDir, "the ZooKeeper data log dir");
  const snapshots = (await zookeeperFiles(snapDir, "snapshot")).reverse();
  const logs = await zookeeperFiles(logDir, "log");
  if (snapshots.length === 0 && logs.length === 0) throw new ZooKeeperDataError(snapDir, "holds neither snapshots nor txn logs");

  const skippedSnapshots: { file: string; reason: string }[] = [];
  let tree: ZooKeeperTree | undefined;
  let used: RecoveredZooKeeper["snapshot"];
  for (const candidate of snapshots.slice(0, SNAPSHOTS_TRIED_MAX)) {
    const file = join(snapDir, candidate.name);
    try {
      tree = ZooKeeperTree.fromSnapshot(await readZooKeeperSnapshotFile(file), candidate.zxid, file);
      used = { file, zxid: candidate.zxid, compression: compressionOf(candidate.name) };
      break;
    } catch (error) {
      if (!(error instanceof ZooKeeperDataError)) throw error;
      skippedSnapshots.push({ file, reason: error.message });
    }
  }
  if (tree === undefined) {
    if (snapshots.length > 0) {
      throw new ZooKeeperDataError(snapDir, `no snapshot reads back whole: ${skippedSnapshots.map((s) => s.reason).join("; ")}`);
    }
    tree = ZooKeeperTree.empty();
  }

  const from = used?.zxid ?? 0n;
  // The newest file that starts at or before the first txn wanted, and every later one (getLogFiles).
  let first = 0;
  for (let i = 0; i < logs.length; i++) if (logs[i]!.zxid <= from + 1n) first = i;
  const logFiles = logs.slice(first).map((log) => join(logDir, log.name));
  let txnsReplayed = 0;
  let previous = from;
  for (const file of logFiles) {
    for (const record of readZooKeeperTxnLog(await readFile(file), file)) {
      const zxid = record.header.zxid;
      if (txnsReplayed === 0 && zxid <= from) continue;
      if (!follows(previous, zxid)) {
        throw new ZooKeeperDataError(
          file,
          `txn ${hex64(zxid)} at offset ${record.offset} does not follow ${hex64(previous)}: ` +
            `the txns between are missing (a log file lost or purged past the snapshot used)`,
        );
      }
      tree.replay(record);
      previous = zxid;
      txnsReplayed += 1;
    }
  }
  const deadSessionsKilled = tree.killDeadSessions();
  return {
    tree,
    snapshot: used,
    skippedSnapshots,
    logFiles,
    txnsReplayed,
    acceptedEpoch: await readEpochFile(join(snapDir, "acceptedEpoch")),
    currentEpoch: await readEpochFile(join(snapDir, "currentEpoch")),
    deadSessionsKilled,
  };
}

/**
 * Whether `next` is the txn after `previous` in a ZooKeeper history: the next counter in the same
 * epoch, or the first txn (counter 1) of a later epoch. From an empty tree (0), the first txn of an epoch.
 */
function follows(previous: bigint, next: bigint): boolean {
  if (previous === 0n) return (next & 0xffffffffn) === 1n;
  if (next === previous + 1n) return true;
  return next >> 32n > previous >> 32n && (next & 0xffffffffn) === 1n;
}

async function readEpochFile(path: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return undefined;
  }
  const epoch = Number(text.trim());
  if (!Number.isSafeInteger(epoch) || epoch < 0) throw new ZooKeeperDataError(path, `holds ${JSON.stringify(text.trim())}, not an epoch`);
  return epoch;
}
