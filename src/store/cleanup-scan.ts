/**
 * Which nodes the leader deletes on its own: empty containers and expired TTL nodes (ZooKeeper's
 * ContainerManager, without its timer thread). Pure: the time comes in as a parameter, so the
 * server runtime, the standalone server and the simulator drive it from their own clocks.
 *
 * The rules, applied to the tree as it stands at a scan:
 * - A container is a candidate once it has had a child (cversion > 0: a fresh container is never
 *   deleted before its first child arrives) and has none now, *and* it was already empty at the
 *   previous scan: its last child change (pzxid) is no later than the zxid the tree had then.
 *   That grace gives a client that just removed the last child one full interval to add the next,
 *   and it restarts with every child created or deleted in between.
 * - A TTL node is a candidate when it has no children and was last modified (mtime, stamped by the
 *   leader that prepped the create or setData and replicated with it) more than `ttl` ms ago.
 *   Every server holds that mtime, so a new leader after a failover expires the node on time.
 * The first scan of a leader only records where the tree stands: its containers have not yet been
 * seen empty by this leader. A scan names at most `perScanMax` nodes; the rest wait for the next.
 * Prep re-checks each candidate when the delete is proposed (see Prep.prepareDeleteContainer).
 */
import type { DataTree } from "./data-tree.js";
import { ownerKind, ttlOfOwner, type Stat } from "./types.js";

export interface CleanupScanOptions {
  /** Time between scans (ZooKeeper's znode.container.checkIntervalMs). */
  intervalMs: number;
  /** Deletions allowed per minute, spread evenly over the scans (ZooKeeper's znode.container.maxPerMinute). */
  maxPerMinute: number;
}

/**
 * Whether the leader may delete a node with this stat at `nowMs`, grace period aside: "container"
 * for a used, empty container, "ttl" for an expired, childless TTL node, else undefined.
 */
export function cleanupKind(stat: Readonly<Stat>, nowMs: number): "container" | "ttl" | undefined {
  if (stat.numChildren !== 0) return undefined;
  switch (ownerKind(stat.ephemeralOwner)) {
    case "container":
      return stat.cversion > 0 ? "container" : undefined;
    case "ttl": {
      const ttlMs = ttlOfOwner(stat.ephemeralOwner);
      return ttlMs > 0 && nowMs - stat.mtime > ttlMs ? "ttl" : undefined;
    }
    default:
      return undefined;
  }
}

/**
 * The nodes one scan at `nowMs` picks, at most `limit`: containers empty since before
 * `previousScanZxid` (none when there was no previous scan), then expired TTL nodes.
 */
export function cleanupCandidates(tree: DataTree, nowMs: number, previousScanZxid: number | undefined, limit: number): string[] {
  const picked: string[] = [];
  if (limit <= 0) return picked;
  if (previousScanZxid !== undefined) {
    for (const path of tree.containerPaths()) {
      const stat = tree.getNode(path)?.stat;
      if (stat === undefined || stat.pzxid > previousScanZxid || cleanupKind(stat, nowMs) !== "container") continue;
      picked.push(path);
      if (picked.length >= limit) return picked;
    }
  }
  for (const path of tree.ttlPaths()) {
    const stat = tree.getNode(path)?.stat;
    if (stat === undefined || cleanupKind(stat, nowMs) !== "ttl") continue;
    picked.push(path);
    if (picked.length >= limit) return picked;
  }
  return picked;
}

/** One leader's scan schedule and the memory the grace period needs; a new leader starts a new one. */
export class CleanupScanner {
  readonly perScanMax: number;
  private nextScanAtMs: number | undefined;
  private previousScanZxid: number | undefined;

  constructor(private readonly options: CleanupScanOptions) {
    this.perScanMax = Math.max(1, Math.floor((options.maxPerMinute * options.intervalMs) / 60_000));
  }

  /**
   * Call often (every tick). Returns the paths to delete when a scan is due, else nothing. The
   * first call starts the schedule and records the tree's zxid without picking anything.
   */
  poll(tree: DataTree, nowMs: number): string[] {
    const intervalMs = this.options.intervalMs;
    // A clock stepped back must not stall the scans for as long as it stepped.
    if (this.nextScanAtMs === undefined || this.nextScanAtMs - nowMs > intervalMs) {
      this.nextScanAtMs = nowMs + intervalMs;
      this.previousScanZxid ??= tree.lastProcessedZxid;
      return [];
    }
    if (nowMs < this.nextScanAtMs) return [];
    this.nextScanAtMs = nowMs + intervalMs;
    const picked = cleanupCandidates(tree, nowMs, this.previousScanZxid, this.perScanMax);
    this.previousScanZxid = tree.lastProcessedZxid;
    return picked;
  }
}
