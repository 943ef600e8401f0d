/**
 * The space quota (spaceQuotaBytes; etcd's --quota-backend-bytes is the model): a ceiling on the
 * tree's estimated memory (DataTree.estimatedBytes, in znodeCostBytes), so that a tree which would
 * outgrow the process's heap is refused writes instead of ending every member at the same txn.
 *
 * The leader decides, in prep, as it decides ZooKeeper's own quota checks: a write that would grow
 * the tree past the ceiling, counting what the txns still in flight will add, becomes an error txn
 * (QUOTAEXCEEDED), so every replica applies the same refusal. Writes that do not grow the tree
 * (deletes, a setData no larger than the data it replaces, closing a session) always pass, and so
 * do reads: clearing space is always possible.
 *
 * The alarm (SpaceAlarm) is raised by the first refusal and cleared once the tree has shrunk enough
 * for the write last refused to fit: one log line each way, a gauge and a count of refusals.
 */
import { ZkError } from "../common/errors.js";
import type { DataTree } from "../store/data-tree.js";

/** A write refused for space. */
export interface SpaceRefusal {
  /** The path written. */
  path: string;
  /** The tree's estimated bytes with the txns in flight, before this write. */
  usedBytes: number;
  /** What the write would have added. */
  growthBytes: number;
  quotaBytes: number;
}

/** Where the alarm reports: the server logs and counts (metrics, /readyz). */
export interface SpaceAlarmObserver {
  /** Every refusal. */
  refused(refusal: SpaceRefusal): void;
  /** The first refusal while the alarm was off. */
  raised(refusal: SpaceRefusal): void;
  cleared(usedBytes: number): void;
}

/** The space alarm of one server: kept across leader terms (each term's prep has its own SpaceGuard). */
export class SpaceAlarm {
  /** What the write last refused would have added; undefined while the alarm is off. */
  private refusedGrowthBytes: number | undefined;

  constructor(
    readonly quotaBytes: number,
    private readonly observer: SpaceAlarmObserver,
  ) {}

  get active(): boolean {
    return this.refusedGrowthBytes !== undefined;
  }

  refused(refusal: SpaceRefusal): void {
    this.observer.refused(refusal);
    if (this.refusedGrowthBytes === undefined) this.observer.raised(refusal);
    this.refusedGrowthBytes = refusal.growthBytes;
  }

  /** The tree changed to `usedBytes`: the alarm clears once the write last refused would fit. */
  settle(usedBytes: number): void {
    if (this.refusedGrowthBytes === undefined || usedBytes + this.refusedGrowthBytes > this.quotaBytes) return;
    this.refusedGrowthBytes = undefined;
    this.observer.cleared(usedBytes);
  }
}

/** What one txn in flight will change the tree's estimated bytes by. */
interface Charge {
  zxid: number;
  bytes: number;
}

/** One leader term's space check in prep: the tree's total plus the charges of the txns in flight. */
export class SpaceGuard {
  private readonly inFlight: Charge[] = [];
  private inFlightHead = 0;
  private inFlightBytes = 0;
  /** Charges of the request being prepped (a multi's ops), kept only if it succeeds. */
  private stagedBytes = 0;

  constructor(
    private readonly tree: DataTree,
    private readonly alarm: SpaceAlarm,
  ) {}

  /** A write of `path` changing the tree by `bytes` (negative when it shrinks it); throws QUOTAEXCEEDED. */
  charge(path: string, bytes: number): void {
    if (bytes > 0) {
      const usedBytes = this.tree.estimatedBytes() + this.inFlightBytes + this.stagedBytes;
      const { quotaBytes } = this.alarm;
      if (usedBytes + bytes > quotaBytes) {
        this.alarm.refused({ path, usedBytes, growthBytes: bytes, quotaBytes });
        throw new ZkError("QUOTAEXCEEDED", `space quota: the tree holds ${usedBytes} of ${quotaBytes} bytes (spaceQuotaBytes), this write adds ${bytes}`, path);
      }
    }
    this.stagedBytes += bytes;
  }

  /** The request prepped successfully as txn `zxid`: its charges are in flight until applied. */
  commit(zxid: number): void {
    if (this.stagedBytes === 0) return;
    this.inFlight.push({ zxid, bytes: this.stagedBytes });
    this.inFlightBytes += this.stagedBytes;
    this.stagedBytes = 0;
  }

  discard(): void {
    this.stagedBytes = 0;
  }

  /** The tree has applied everything up to `zxid`: its total counts those charges now. */
  applied(zxid: number): void {
    while (this.inFlightHead < this.inFlight.length && this.inFlight[this.inFlightHead]!.zxid <= zxid) {
      this.inFlightBytes -= this.inFlight[this.inFlightHead]!.bytes;
      this.inFlightHead += 1;
    }
    if (this.inFlightHead > 1024 && this.inFlightHead * 2 > this.inFlight.length) {
      this.inFlight.splice(0, this.inFlightHead);
      this.inFlightHead = 0;
    }
  }

  reset(): void {
    this.inFlight.length = 0;
    this.inFlightHead = 0;
    this.inFlightBytes = 0;
    this.stagedBytes = 0;
  }
}
