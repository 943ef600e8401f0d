/**
 * The durable writes of a Ready (its `persist` actions), carried out in the order the Zab core asked
 * for them through one PersistQueue: log appends (group-committed), truncations, a leader's
 * snapshot installed in place of the tree and log, and the two epochs — each answered back to the
 * core once durable. The first failure stops everything for good (fail-stop).
 */
import { assert } from "../common/assert.js";
import type { PersistAction, ZabInput } from "../consensus/core-io.js";
import { formatZxid as hex } from "../store/zxid.js";
import { configOfTree } from "./cluster-config.js";
import { PersistQueue } from "./persist-queue.js";
import type { HopTrace, LogSink, ReplicaStorage } from "./ports.js";
import type { ReconfigMembership } from "./reconfig-membership.js";
import type { RecentLog } from "./recent-log.js";
import type { RepairState } from "./repair.js";
import type { ReplicaDatabase } from "./replica-database.js";

export interface DurableWritesDeps {
  database: ReplicaDatabase;
  storage: ReplicaStorage;
  /** The epochs the storage held at start. */
  epochs: { acceptedEpoch: number; currentEpoch: number };
  recentLog: RecentLog;
  membership: ReconfigMembership;
  repair: RepairState;
  logger: LogSink;
  /** Each record's log and durable hops, when the server traces them. */
  hops?: HopTrace;
}

export class DurableWrites {
  private readonly persist: PersistQueue;
  /** The epochs as durable now. */
  readonly epochs: { acceptedEpoch: number; currentEpoch: number };

  constructor(
    private readonly deps: DurableWritesDeps,
    onFailed: (error: unknown) => void,
  ) {
    this.persist = new PersistQueue(onFailed);
    this.epochs = { ...deps.epochs };
  }

  /** `idle` once every write asked for so far has landed. */
  whenIdle(idle: () => void): void {
    this.persist.whenIdle(idle);
  }

  /** One durable write a Ready asks for; `answer` takes what the core is told once it is durable. */
  carryOut(action: PersistAction, answer: (input: ZabInput) => void): void {
    const { database, storage } = this.deps;
    const recentLog = this.deps.recentLog;
    switch (action.kind) {
      case "appendLog": {
        // A learner's records are views into received frames: keep a copy, not the whole frame.
        // Its own ArrayBuffer, not a pooledBytes view: the recent log keeps up to commitLogCount
        // records, and a pooled one would pin a whole 8 KiB pool slab for as long.
        const record = { zxid: action.zxid, record: action.record.slice() };
        recentLog.append(record);
        const hops = this.deps.hops;
        hops?.hop("log", { zxid: action.zxid, bytes: action.record.byteLength });
        this.persist.append(
          (done) => storage.log.append(action.zxid, action.record, done),
          () => {
            hops?.hop("durable", { zxid: action.zxid });
            answer({ type: "logDurable", zxid: action.zxid });
          },
        );
        return;
      }
      case "truncateLog":
        // The tree holds committed txns only, and a committed txn is never truncated.
        if (!(database.tree.lastProcessedZxid <= action.zxid))
          assert(false, `TRUNC to ${hex(action.zxid)} would cut committed txns (tree at ${hex(database.tree.lastProcessedZxid)})`);
        recentLog.truncateAfter(action.zxid);
        this.persist.exclusive(
          (done) => storage.log.truncateAfter(action.zxid, done),
          // The log's new end; records under the snapshot may be purged, so the tree's zxid counts too.
          () =>
            answer({
              type: "truncated",
              zxid: Math.min(action.zxid, Math.max(storage.log.lastAppendedZxid(), database.tree.lastProcessedZxid)),
            }),
        );
        return;
      case "installSnapshot": {
        // The tree is replaced now so that what the leader sends next applies on top of it.
        database.replaceTree(action.zxid, action.snapshot);
        const inTree = configOfTree(database.tree);
        if (inTree !== undefined) this.deps.membership.activate(inTree);
        recentLog.reset(action.zxid);
        this.persist.exclusive(
          (done) => storage.snapshots.install(action.zxid, action.snapshot, done),
          () => {
            // The leader's image is durable in place of what this member could not vouch for.
            if (this.deps.repair.active) {
              this.deps.repair.finished();
              this.deps.logger.warn({ zxid: hex(action.zxid) }, "repair finished: the leader's snapshot is installed");
            }
            answer({ type: "snapshotInstalled", zxid: action.zxid });
          },
        );
        return;
      }
      case "acceptedEpoch":
      case "currentEpoch": {
        const which = action.kind === "acceptedEpoch" ? "accepted" : "current";
        this.persist.exclusive(
          (done) => storage.stable.saveEpoch(which, action.epoch, done),
          () => {
            if (which === "accepted") this.epochs.acceptedEpoch = action.epoch;
            else this.epochs.currentEpoch = action.epoch;
            answer({ type: "epochDurable", which, epoch: action.epoch });
          },
        );
        return;
      }
    }
  }
}
