/**
 * The storage ports in memory (hashicorp/raft's InmemStore, with TigerBeetle's storage faults): a
 * write becomes durable only when its simulated fsync completes, in the order it was asked for; a
 * crash loses every write not yet durable. What survives is what a restart recovers from.
 *
 * Bytes are kept as the disk keeps them — txn records in corral's checked record format
 * (src/store/disk/log-record.ts), snapshots in the snapshot file format — so that the twin can also
 * return damage: `damage` changes a down server's files (a flipped bit, a record zeroed or cut short,
 * a record written over another's key). A restart checks them as DiskStorage.open does: anything
 * damaged, the last record included, makes the server start empty and repair from its leader
 * (RecoveredState.repairing), marked as repairing until the leader's snapshot lands, across further
 * restarts. A crash tears no record: the write in flight is lost whole, as LevelDB's recovery drops
 * a batch a crash cut short (log-record.ts says why a damaged last record is never a torn write).
 */
import type { LogRecord } from "../../../src/consensus/messages.js";
import type { Done, RecoveredState, ReplicaStorage, SnapshotPort, StableStorePort, StorageDamage, TxnLogPort } from "../../../src/replica/ports.js";
import { DataTree } from "../../../src/store/data-tree.js";
import { logKey } from "../../../src/store/disk/keys.js";
import { decodeLogRecord, encodeLogRecord, LOG_RECORD_HEADER_BYTES, LogChain } from "../../../src/store/disk/log-record.js";
import { decodeSnapshotFile, encodeSnapshotFile, SNAPSHOT_HEADER_BYTES } from "../../../src/store/disk/snapshot-store.js";
import { decodeSnapshot, encodeSnapshot } from "../../../src/store/snapshot-codec.js";
import { epochOf } from "../../../src/store/zxid.js";
import type { Prng } from "../prng.js";
import type { Scheduler } from "./scheduler.js";

/** A txn record as stored: under the key of `zxid`, in log-record.ts's format. */
export interface StoredRecord {
  zxid: number;
  stored: Uint8Array;
}

/** What is on the simulated disk. */
export interface DurableState {
  acceptedEpoch: number | undefined;
  currentEpoch: number | undefined;
  log: StoredRecord[];
  /** A snapshot file (snapshot-store.ts's format) named for `zxid`. */
  snapshot: { zxid: number; file: Uint8Array } | undefined;
  /** Damage found at a start, until a leader's snapshot lands in its place (DiskStorage's repair mark). */
  repairing: StorageDamage | undefined;
}

export type DamageKind = "bitFlip" | "zeroed" | "truncated" | "misdirected";

/** Log records kept below a snapshot, so that a restarted leader can still DIFF a little. */
const LOG_RECORDS_KEPT_BELOW_SNAPSHOT = 4;

export class MemoryStorage implements ReplicaStorage {
  readonly durable: DurableState = { acceptedEpoch: undefined, currentEpoch: undefined, log: [], snapshot: undefined, repairing: undefined };
  readonly log: TxnLogPort;
  readonly stable: StableStorePort;
  readonly snapshots: SnapshotPort;
  /**
   * SIMULATION SABOTAGE: read records and snapshots back without checking them (as LevelDB's reads
   * without checksums would): the runs that prove the damage properties can fail turn it on.
   */
  uncheckedReads = false;
  /**
   * SIMULATION SABOTAGE: a server that found damage starts empty but does not say it repairs — it
   * votes and counts toward a quorum as if its empty log were all it ever held.
   */
  silentRepair = false;
  /** The log as the replica sees it: durable records plus appends still in flight. */
  private logView: LogRecord[] = [];
  /** The zxid the next record's chain link names when the log is empty: the snapshot it continues. */
  private chainBase = 0;
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
        const prevZxid = this.logView[this.logView.length - 1]?.zxid ?? this.chainBase;
        this.logView.push({ zxid, record });
        const append = { zxid, stored: Uint8Array.from(encodeLogRecord(logKey(zxid), prevZxid, record)) };
        this.write(done, () => this.durable.log.push(append));
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
        const file = encodeSnapshotFile(zxid, encodeSnapshot(tree));
        this.write(written, () => {
          if (zxid < (this.durable.snapshot?.zxid ?? 0)) return;
          this.durable.snapshot = { zxid, file };
          this.purgeBelow(zxid);
        });
      },
      install: (zxid, bytes, done) => {
        this.logView = [];
        this.chainBase = zxid;
        const file = encodeSnapshotFile(zxid, bytes);
        this.write(done, () => {
          this.durable.snapshot = { zxid, file };
          this.durable.log = [];
          this.durable.repairing = undefined;
        });
      },
    };
  }

  /** The process died: writes in flight are lost, and their callers are never answered. */
  crash(): void {
    this.incarnation += 1;
    this.lastDoneAtMs = 0;
  }

  /**
   * Damages what a down server holds, as a disk can: one txn record, or the snapshot file. Answers
   * what was done, or undefined when there was nothing of that kind to damage.
   */
  damage(kind: DamageKind, prng: Prng): string | undefined {
    const log = this.durable.log;
    const snapshot = this.durable.snapshot;
    const inSnapshot = snapshot !== undefined && (log.length === 0 || prng.chance(0.3));
    if (kind === "misdirected") {
      // A record written under the key of another: the checksum covers the key.
      if (log.length < 2) return undefined;
      const [from, to] = prng.shuffle(log.map((_, i) => i)).slice(0, 2) as [number, number];
      log[to] = { zxid: log[to]!.zxid, stored: log[from]!.stored.slice() };
      return `the record of ${hex(log[from]!.zxid)} written over ${hex(log[to].zxid)}`;
    }
    if (inSnapshot) {
      snapshot.file = damaged(snapshot.file, kind, prng);
      return `${kind} in the snapshot at ${hex(snapshot.zxid)}`;
    }
    if (log.length === 0) return undefined;
    const at = prng.int(log.length);
    log[at] = { zxid: log[at]!.zxid, stored: damaged(log[at]!.stored, kind, prng) };
    return `${kind} in the record of ${hex(log[at].zxid)}`;
  }

  /** What a restarted server starts from, checked as DiskStorage.open checks it. */
  recover(): RecoveredState {
    const d = this.durable;
    if (d.repairing === undefined && !this.uncheckedReads) {
      const damage = this.checkLog();
      if (damage !== undefined) d.repairing = damage;
    }
    if (d.repairing !== undefined) return this.startRepairing(d.repairing);
    let tree = new DataTree();
    if (d.snapshot !== undefined) {
      const file = decodeSnapshotFile(d.snapshot.file, d.snapshot.zxid);
      if (file.ok) tree = decodeSnapshot(file.bytes);
      else if (this.uncheckedReads) tree = decodeSnapshot(d.snapshot.file.subarray(SNAPSHOT_HEADER_BYTES));
      else return this.startRepairing((d.repairing = { file: `snapshot ${hex(d.snapshot.zxid)}`, reason: file.reason }));
    }
    // Checked above; what an unchecked read would hand on when the check is off.
    this.logView = d.log.map(({ zxid, stored }) => {
      const record = decodeLogRecord(logKey(zxid), stored);
      return { zxid, record: record.ok ? record.payload : stored.subarray(LOG_RECORD_HEADER_BYTES) };
    });
    const unappliedTail = this.logView.filter((r) => r.zxid > tree.lastProcessedZxid);
    this.chainBase = tree.lastProcessedZxid;
    const fallback = epochOf(Math.max(tree.lastProcessedZxid, d.log[d.log.length - 1]?.zxid ?? 0));
    return { tree, unappliedTail, acceptedEpoch: d.acceptedEpoch ?? fallback, currentEpoch: d.currentEpoch ?? fallback };
  }

  /** The durable log's txn records (unwrapped, unchecked): what a harness reads of a server's log. */
  get durableRecords(): LogRecord[] {
    return this.durable.log.map(({ zxid, stored }) => ({ zxid, record: stored.subarray(LOG_RECORD_HEADER_BYTES) }));
  }

  /** Puts `records` on the disk as if logged in this order: how a harness sets a server's log up. */
  set durableRecords(records: LogRecord[]) {
    let prevZxid = this.durable.snapshot?.zxid ?? 0;
    this.durable.log = records.map(({ zxid, record }) => {
      const stored = Uint8Array.from(encodeLogRecord(logKey(zxid), prevZxid, record));
      prevZxid = zxid;
      return { zxid, stored };
    });
  }

  /** The last zxid durable in the log or the snapshot. */
  durableEnd(): number {
    return Math.max(this.durable.log[this.durable.log.length - 1]?.zxid ?? 0, this.durable.snapshot?.zxid ?? 0);
  }

  /** Every record whole, each following the one before, the first after the snapshot following it. */
  private checkLog(): StorageDamage | undefined {
    const snapshotZxid = this.durable.snapshot?.zxid ?? 0;
    const chain = new LogChain();
    let afterSnapshot = false;
    for (const { zxid, stored } of this.durable.log) {
      const record = decodeLogRecord(logKey(zxid), stored);
      if (!record.ok) return { file: "txn log", reason: `record ${hex(zxid)}: ${record.reason}` };
      const broken = chain.next(zxid, record.prevZxid);
      if (broken !== undefined) return { file: "txn log", reason: broken };
      if (zxid > snapshotZxid && !afterSnapshot) {
        afterSnapshot = true;
        if (record.prevZxid !== undefined && record.prevZxid > snapshotZxid)
          return { file: "txn log", reason: `records missing after the snapshot at ${hex(snapshotZxid)}` };
      }
    }
    return undefined;
  }

  /** As DiskStorage.openRepairing: the damaged log set aside, an empty tree, the epochs kept. */
  private startRepairing(damage: StorageDamage): RecoveredState {
    const d = this.durable;
    d.log = [];
    this.logView = [];
    this.chainBase = 0;
    const acceptedEpoch = d.acceptedEpoch ?? 0;
    const state = { tree: new DataTree(), unappliedTail: [], acceptedEpoch, currentEpoch: Math.min(acceptedEpoch, d.currentEpoch ?? 0) };
    if (this.silentRepair) {
      d.repairing = undefined;
      return state;
    }
    return { ...state, repairing: damage };
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

/** A copy of `bytes` with one kind of damage. */
function damaged(bytes: Uint8Array, kind: Exclude<DamageKind, "misdirected">, prng: Prng): Uint8Array {
  const copy = bytes.slice();
  if (copy.length === 0) return copy;
  switch (kind) {
    case "bitFlip": {
      const at = prng.int(copy.length);
      copy[at] = copy[at]! ^ (1 << prng.int(8));
      return copy;
    }
    case "zeroed": {
      // A page of zeros (a lost write of a block), somewhere in the bytes.
      const start = prng.int(copy.length);
      copy.fill(0, start, Math.min(copy.length, start + 4096));
      return copy;
    }
    case "truncated":
      return copy.subarray(0, prng.int(copy.length));
  }
}

function hex(zxid: number): string {
  return `0x${zxid.toString(16)}`;
}
