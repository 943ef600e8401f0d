/**
 * Restoring a backup into a member's data dir, two ways:
 *
 * - into a new data dir (`corral restore`, every member of a new cluster from the same file, as
 *   etcd restores): the tree as the backup holds it, except /zookeeper/config, which goes back to its
 *   fresh form so that the new cluster runs with its own membership, not the one a reconfiguration
 *   wrote into the old cluster's tree;
 * - in place of a standalone server's data dir (ZooKeeper 3.9's `restore` admin command, the
 *   server stopped for it): /zookeeper/config stays as the server had it, the old data dir is kept
 *   beside the new one, and the epochs stay those the server reached, so that its next zxids go on
 *   past every zxid it gave out before. (A member of a running quorum cannot be restored this way:
 *   the backup is a prefix of the others' history, and the first sync with them brings the member
 *   back to theirs. A cluster is restored into new data dirs, every member from the same file.)
 */
import { rename, rm } from "node:fs/promises";
import { DataTree } from "../../store/data-tree.js";
import { imageOfTree, treeFromImage } from "../../store/tree-image.js";
import { epochOf } from "../../store/zxid.js";
import { readBackupFile, treeOfBackup, type VerifiedBackup } from "./backup-file.js";
import { checkDataDirFree, layDownDataDir, readDataDir } from "./data-dir.js";

const CONFIG = "/zookeeper/config";

/** `tree` with /zookeeper/config replaced by `config` (that node of another tree); `tree` itself when they agree. */
export function withConfigNode(tree: DataTree, config: DataTree): DataTree {
  const wanted = config.getNode(CONFIG)!;
  const current = tree.getNode(CONFIG)!;
  // mzxid 0: each server's own text, written again as it starts; only a reconfiguration's is replicated.
  if (current.stat.mzxid === 0 && wanted.stat.mzxid === 0) return tree;
  if (current.stat.mzxid === wanted.stat.mzxid && sameBytes(current.data, wanted.data)) return tree;
  const nodes = imageOfTree(tree).map((node) => (node.path === CONFIG ? { path: CONFIG, data: wanted.data, acl: wanted.acl, stat: { ...wanted.stat } } : node));
  return treeFromImage(nodes, tree.sessions, tree.lastProcessedZxid);
}

export interface RestoreSummary {
  zxid: number;
  nodes: number;
  sessions: number;
  sha256: string;
}

/** `corral restore`: a new member's data dir from `file`. Throws BackupError or DataDirError, writing nothing. */
export async function restoreIntoNewDataDir(file: string, dataDir: string): Promise<RestoreSummary> {
  await checkDataDirFree(dataDir);
  const backup = await readBackupFile(file);
  const tree = withConfigNode(treeOfBackup(backup), new DataTree());
  await layDownDataDir(dataDir, tree);
  return summaryOf(backup, tree);
}

/**
 * The admin command's restore, with the server stopped: the old data dir moves to
 * `<dataDir>.before-restore-<ms>` and a new one takes its place (file note). Answers the summary and
 * where the old data went.
 */
export async function restoreInPlace(dataDir: string, backup: VerifiedBackup, nowMs: number): Promise<RestoreSummary & { previousDataDir: string }> {
  const previous = await readDataDir(dataDir);
  const tree = withConfigNode(treeOfBackup(backup), previous.tree);
  const epoch = Math.max(
    previous.epochs.accepted ?? 0,
    previous.epochs.current ?? 0,
    epochOf(previous.tree.lastProcessedZxid),
    epochOf(tree.lastProcessedZxid),
  );
  const staged = `${dataDir}.restoring-${process.pid}`;
  await rm(staged, { recursive: true, force: true });
  await layDownDataDir(staged, tree, { accepted: epoch, current: epoch });
  const previousDataDir = `${dataDir}.before-restore-${nowMs}`;
  await rename(dataDir, previousDataDir);
  try {
    await rename(staged, dataDir);
  } catch (error) {
    await rename(previousDataDir, dataDir);
    await rm(staged, { recursive: true, force: true });
    throw error;
  }
  return { ...summaryOf(backup, tree), previousDataDir };
}

function summaryOf(backup: VerifiedBackup, tree: DataTree): RestoreSummary {
  return { zxid: backup.zxid, nodes: tree.nodeCount(), sessions: tree.sessions.size, sha256: backup.sha256 };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}
