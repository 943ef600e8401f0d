/**
 * Quota checks in prep (ZooKeeper's ZooKeeperServer.checkQuota): a create or setData under a path
 * with a quota is measured against the quota's limits. Exceeding a soft limit (count / bytes) is
 * reported through `onExceeded` and allowed; exceeding a hard limit (countHardLimit /
 * byteHardLimit) is QUOTAEXCEEDED when quotas are enforced, reported and allowed otherwise.
 *
 * Usage is the tree's stats node plus what the txns still in flight will add, so a burst of
 * pipelined creates cannot slip past a hard limit that each alone would respect. One
 * approximation: a setData's size change is measured against the committed data length.
 */
import { ZkError } from "../common/errors.js";
import type { DataTree } from "../store/data-tree.js";

export interface QuotaExceeded {
  /** The path that has the quota. */
  quota: string;
  /** The path written. */
  path: string;
  limit: "count" | "bytes";
  hard: boolean;
  /** Usage after the write, and the limit it went past. */
  value: number;
  max: number;
  /** Whether the write was refused (a hard limit, with quotas enforced). */
  refused: boolean;
}

interface Charge {
  zxid: number;
  quota: string;
  count: number;
  bytes: number;
}

export class QuotaGuard {
  /** Charges of txns prepped but not yet applied, in zxid order. */
  private inFlight: Charge[] = [];
  /** Charges of the request being prepped (a multi's ops), kept only if it succeeds. */
  private staged: Charge[] = [];

  constructor(
    private readonly tree: DataTree,
    private readonly enforce: boolean,
    private readonly onExceeded: (event: QuotaExceeded) => void,
  ) {}

  /** A write of `path` that adds `count` nodes and `bytes` data bytes (negative for deletes); throws QUOTAEXCEEDED. */
  charge(path: string, count: number, bytes: number, zxid: number): void {
    const quota = this.tree.quotaRootOf(path);
    if (quota === undefined || (count === 0 && bytes === 0)) return;
    const figures = this.tree.quotaOf(quota);
    if (figures !== undefined && (count > 0 || bytes > 0)) {
      let count_ = figures.usage.count + count;
      let bytes_ = figures.usage.bytes + bytes;
      for (const c of [...this.inFlight, ...this.staged]) {
        if (c.quota !== quota) continue;
        count_ += c.count;
        bytes_ += c.bytes;
      }
      const { limits } = figures;
      if (count > 0) this.check(quota, path, "count", count_, limits.count, limits.countHardLimit);
      if (bytes > 0) this.check(quota, path, "bytes", bytes_, limits.bytes, limits.byteHardLimit);
    }
    this.staged.push({ zxid, quota, count, bytes });
  }

  /** The request prepped successfully: its charges are in flight until applied. */
  commit(): void {
    for (const c of this.staged) this.inFlight.push(c);
    this.staged = [];
  }

  discard(): void {
    this.staged = [];
  }

  /** The tree has applied everything up to `zxid`: its stats nodes count those charges now. */
  applied(zxid: number): void {
    if (this.inFlight.length > 0 && this.inFlight[0]!.zxid <= zxid) this.inFlight = this.inFlight.filter((c) => c.zxid > zxid);
  }

  reset(): void {
    this.inFlight = [];
    this.staged = [];
  }

  /** A hard limit, when set, is the one that counts (as in ZooKeeper); otherwise the soft one. */
  private check(quota: string, path: string, limit: "count" | "bytes", value: number, soft: number, hard: number): void {
    const isHard = hard > -1;
    const max = isHard ? hard : soft;
    if (max < 0 || value <= max) return;
    const refused = isHard && this.enforce;
    this.onExceeded({ quota, path, limit, hard: isHard, value, max, refused });
    if (refused) throw new ZkError("QUOTAEXCEEDED", `${limit} ${value} over the hard limit ${max} of ${quota}`, path);
  }
}
