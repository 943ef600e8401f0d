/**
 * The storage ports in memory (hashicorp/raft's InmemStore, with TigerBeetle's storage faults): a
 * write becomes durable only when its simulated fsync completes, in the order it was asked for; a
 * crash loses every write not yet durable. What survives is what a restart recovers from.
 */
import type { LogRecord } from "../../../src/consensus/messages.js";
import type { Done, RecoveredState, ReplicaStorage, SnapshotPort, StableStorePort, TxnLogPort } from "../../../src/replica/ports.js";
import { DataTree } from "../../../src/store/data-tree.js";
import { decodeSnapshot, encodeSnapshot } from "../../../src/store/snapshot-codec.js";
import { epochOf } from "../../../src/store/zxid.js";
import type { Scheduler } from "./scheduler.js";

/** What is on the simulated disk. */
export interface DurableState {
  acceptedEpoch: number | undefined;
  currentEpoch: number | undefined;
  log: LogRecord[];
  snapshot: { zxid: number; bytes: Uint8Array } | undefined;
}

/** Log records kept below a snapshot, so that a restarted leader can still DIFF a little. */
const LOG_RECORDS_KEPT_BELOW_SNAPSHOT = 4;

export class MemoryStorage implements ReplicaStorage {
  readonly durable: DurableState = { acceptedEpoch: undefined, currentEpoch: undefined, log: [], snapshot: undefined };
  readonly log: TxnLogPort;
  readonly stable: StableStorePort;
  readonly snapshots: SnapshotPort;
  /** The log as the replica sees it: durable records plus appends still in flight. */
  private logView: LogRecord[] = [];
  /** Bumped by a crash: completions of an earlier incarnation's writes never land. */
  private incarnation = 0;
  /** When the last queued write completes: the disk writes in order. */
  private lastDoneAtMs = 0;

  constructor(
    private readonly scheduler: Scheduler,
    private readonly server: number,
    /** How long one write takes (drawn per write from the run's PRNG). */
    private readonly fsyncMs: () => number,
  ) {
    this.log = {
      append: (zxid, record, done) => {
        this.logView.push({ zxid, record });
        this.write(done, () => this.durable.log.push({ zxid, record }));
      },
      truncateAfter: (zxid, done) => {
        this.logView = this.logView.filter((r) => r.zxid <= zxid);
        this.write(done, () => {
          this.durable.log = this.durable.log.filter((r) => r.zxid <= zxid);
        });
      },
      lastAppendedZxid: () => this.logView[this.logView.length - 1]?.zxid ?? 0,
    };
    this.stable = {
      saveEpoch: (which, epoch, done) =>
        this.write(done, () => {
          if (which === "accepted") this.durable.acceptedEpoch = epoch;
          else this.durable.currentEpoch = epoch;
        }),
    };
    this.snapshots = {
      save: (tree, written) => {
        const zxid = tree.lastProcessedZxid;
        const bytes = encodeSnapshot(tree);
        this.write(written, () => {
          if (zxid < (this.durable.snapshot?.zxid ?? 0)) return;
          this.durable.snapshot = { zxid, bytes };
          this.purgeBelow(zxid);
        });
      },
      install: (zxid, bytes, done) => {
        this.logView = [];
        this.write(done, () => {
          this.durable.snapshot = { zxid, bytes };
          this.durable.log = [];
        });
      },
    };
  }

  /** The process died: writes in flight are lost, and their callers are never answered. */
  crash(): void {
    this.incarnation += 1;
    this.lastDoneAtMs = 0;
  }

  /** What a restarted server starts from, as DiskStorage.open reads it. */
  recover(): RecoveredState {
    const d = this.durable;
    this.logView = d.log.slice();
    const tree = d.snapshot === undefined ? new DataTree() : decodeSnapshot(d.snapshot.bytes);
    const unappliedTail = d.log.filter((r) => r.zxid > tree.lastProcessedZxid);
    const fallback = epochOf(Math.max(tree.lastProcessedZxid, d.log[d.log.length - 1]?.zxid ?? 0));
    return { tree, unappliedTail, acceptedEpoch: d.acceptedEpoch ?? fallback, currentEpoch: d.currentEpoch ?? fallback };
  }

  /** The last zxid durable in the log or the snapshot. */
  durableEnd(): number {
    return Math.max(this.durable.log[this.durable.log.length - 1]?.zxid ?? 0, this.durable.snapshot?.zxid ?? 0);
  }

  private write(done: Done | (() => void), land: () => void): void {
    const incarnation = this.incarnation;
    const doneAtMs = Math.max(this.lastDoneAtMs, this.scheduler.nowMs + this.fsyncMs());
    this.lastDoneAtMs = doneAtMs;
    this.scheduler.at(
      doneAtMs - this.scheduler.nowMs,
      () => {
        if (incarnation !== this.incarnation) return;
        land();
        done();
      },
      this.server,
    );
  }

  /** As the disk storage's retention: records under a snapshot go, but for a few kept to DIFF from. */
  private purgeBelow(zxid: number): void {
    const at = this.durable.log.findIndex((r) => r.zxid >= zxid);
    if (at <= LOG_RECORDS_KEPT_BELOW_SNAPSHOT) return;
    const cut = this.durable.log[at - LOG_RECORDS_KEPT_BELOW_SNAPSHOT]!.zxid;
    this.durable.log = this.durable.log.filter((r) => r.zxid >= cut);
    this.logView = this.logView.filter((r) => r.zxid >= cut);
  }
}
