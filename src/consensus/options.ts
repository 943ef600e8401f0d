/**
 * What a host hands a Zab core when it creates one after an election decision (one core per
 * term: on step-down the host drops it and starts a new election; the next core is built from
 * what is durable).
 */
import { assert } from "../common/assert.js";
import { isZxid } from "../store/zxid.js";
import { zabLimits } from "./constants.js";
import type { LogRecord } from "./messages.js";
import type { PendingConfig, QuorumVerifier } from "./quorum.js";

/** The host's tree, as the core sees it (an injected port: the real DataTree or the simulator's). */
export interface ZabStatePort {
  /** The tree encoded for a SNAP sync (src/store/snapshot-codec.ts), with the zxid it is at. */
  snapshot(): { zxid: number; bytes: Uint8Array };
  /** The zxid of the last txn applied to the tree (0 for a fresh tree). */
  lastZxid(): number;
}

/** What survived on disk. */
export interface ZabDurableState {
  acceptedEpoch: number;
  currentEpoch: number;
  /**
   * The tail of the txn log, oldest first, contiguous: every record after the tree's zxid
   * (`state.lastZxid()`; the tree only ever holds committed txns, so on restart it is the latest
   * snapshot and the log is not replayed into it), optionally preceded by the records up to and
   * including the tree's zxid, which seed the leader's DIFF window. A host whose log lacks the
   * tree's zxid (e.g. it was purged) passes only the records after it.
   */
  log: readonly LogRecord[];
}

export interface ZabOptions {
  myId: number;
  /** The last configuration known committed here. */
  quorum: QuorumVerifier;
  /**
   * Reconfigurations in the durable log after the tree, ascending zxid: not known committed, so
   * until this term commits them every quorum is a quorum of each of them too (a leader's).
   */
  pendingConfigs?: readonly PendingConfig[];
  /** ZooKeeper's tickTime. */
  tickMs: number;
  /** Ticks allowed for discovery and synchronisation (ZooKeeper's initLimit). */
  initLimitTicks: number;
  /** Ticks a peer may stay silent once synced (ZooKeeper's syncLimit). */
  syncLimitTicks: number;
  durable: ZabDurableState;
  state: ZabStatePort;
  /** The host's clock when the core is created. */
  nowMs: number;
  /** Lower limits than zabLimits (tests and the simulator shrink the window to force SNAP syncs). */
  committedLogRecordsMax?: number;
  /** Bytes of committed txns the DIFF window keeps (the newest one is kept whatever its size). */
  committedLogBytesMax?: number;
  /** Proposals, and bytes of proposals, in flight: proposed and not committed, and sent to one follower and not acked. */
  proposalsInFlightMax?: number;
  proposalBytesInFlightMax?: number;
  syncTxnsPerMessageMax?: number;
  /**
   * Learner only: the host's state is not to be trusted (damaged files, a diverged tree). Its
   * learnerInfo says so, the leader syncs it with a SNAP, and it takes any snapshot as its state.
   */
  repairing?: boolean;
  /**
   * TEST ONLY, deliberately broken: the leader commits on its own durable ack alone. The chaos
   * tests switch it on to prove their checkers catch a server that loses acknowledged writes.
   */
  unsafeCommitOnOwnAck?: boolean;
}

export interface ResolvedZabOptions extends ZabOptions {
  committedLogRecordsMax: number;
  committedLogBytesMax: number;
  proposalsInFlightMax: number;
  proposalBytesInFlightMax: number;
  syncTxnsPerMessageMax: number;
  initLimitMs: number;
  syncLimitMs: number;
}

export function resolveOptions(options: ZabOptions): ResolvedZabOptions {
  const { tickMs, initLimitTicks, syncLimitTicks, durable } = options;
  assert(Number.isSafeInteger(tickMs) && tickMs >= 2, `tickMs is an integer ≥ 2: ${tickMs}`);
  assert(Number.isSafeInteger(initLimitTicks) && initLimitTicks >= 1, "initLimitTicks ≥ 1");
  assert(Number.isSafeInteger(syncLimitTicks) && syncLimitTicks >= 1, "syncLimitTicks ≥ 1");
  assert(Number.isSafeInteger(durable.acceptedEpoch) && durable.acceptedEpoch >= 0, "acceptedEpoch ≥ 0");
  assert(Number.isSafeInteger(durable.currentEpoch) && durable.currentEpoch >= 0, "currentEpoch ≥ 0");
  assert(durable.currentEpoch <= durable.acceptedEpoch, "currentEpoch ≤ acceptedEpoch");
  for (const record of durable.log) assert(isZxid(record.zxid), "log records carry zxids");
  const resolved: ResolvedZabOptions = {
    ...options,
    committedLogRecordsMax: options.committedLogRecordsMax ?? zabLimits.committedLogRecordsMax,
    committedLogBytesMax: options.committedLogBytesMax ?? zabLimits.committedLogBytesMax,
    proposalsInFlightMax: options.proposalsInFlightMax ?? zabLimits.proposalsInFlightMax,
    proposalBytesInFlightMax: options.proposalBytesInFlightMax ?? zabLimits.proposalBytesInFlightMax,
    syncTxnsPerMessageMax: options.syncTxnsPerMessageMax ?? zabLimits.syncTxnsPerMessageMax,
    initLimitMs: tickMs * initLimitTicks,
    syncLimitMs: tickMs * syncLimitTicks,
  };
  assert(resolved.committedLogRecordsMax >= 1 && resolved.committedLogRecordsMax <= zabLimits.committedLogRecordsMax, "committedLogRecordsMax within limits");
  assert(resolved.proposalsInFlightMax >= 1 && resolved.proposalsInFlightMax <= zabLimits.proposalsInFlightMax, "proposalsInFlightMax within limits");
  assert(resolved.committedLogBytesMax >= 1 && resolved.committedLogBytesMax <= zabLimits.committedLogBytesMax, "committedLogBytesMax within limits");
  assert(
    resolved.proposalBytesInFlightMax >= 1 && resolved.proposalBytesInFlightMax <= zabLimits.proposalBytesInFlightMax,
    "proposalBytesInFlightMax within limits",
  );
  assert(resolved.syncTxnsPerMessageMax >= 1 && resolved.syncTxnsPerMessageMax <= zabLimits.syncTxnsPerMessageMax, "syncTxnsPerMessageMax within limits");
  return resolved;
}

/** The last zxid in the durable log (or the tree's, when the log holds nothing after it). */
export function lastLoggedZxidOf(durable: ZabDurableState, treeZxid: number): number {
  const last = durable.log[durable.log.length - 1];
  return last === undefined ? treeZxid : Math.max(last.zxid, treeZxid);
}

/** Splits records into syncTxns-sized chunks (by count and bytes; a lone oversized record travels alone). */
export function chunkRecords(records: readonly LogRecord[], perMessageMax: number, bytesMax: number): LogRecord[][] {
  const chunks: LogRecord[][] = [];
  let current: LogRecord[] = [];
  let bytes = 0;
  for (const record of records) {
    if (current.length > 0 && (current.length >= perMessageMax || bytes + record.record.byteLength > bytesMax)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(record);
    bytes += record.record.byteLength;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
