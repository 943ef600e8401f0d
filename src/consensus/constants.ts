/**
 * Zab's limits, in one place, with the relations between them asserted at load
 * (docs/architecture.md practice 9). A host may lower the window and batch sizes (the simulator does, to force SNAP
 * syncs); it may never raise them past these maxima.
 */
import { assert } from "../common/assert.js";
import { limits } from "../common/constants.js";

const MiB = 1024 * 1024;

export const zabLimits = {
  /**
   * Protocol version carried in learnerInfo / leaderInfo. 2: learners take treeDigest messages (a
   * leader sends them only to learners that said 2 or more, so that older ones keep their streams).
   */
  protocolVersion: 2,
  /** The first version whose learners take treeDigest messages. */
  treeDigestProtocolVersion: 2,
  /** Committed txns the leader keeps in memory to DIFF learners (ZooKeeper's committedLog, 500 there). */
  committedLogRecordsMax: 10_000,
  /** …and their bytes: with large txns the byte bound is the one that holds (ZooKeeper has none). */
  committedLogBytesMax: 64 * MiB,
  /**
   * Proposals the leader may have outstanding (proposed, not yet committed), and proposals one
   * follower may have been sent and not have acked: the leader's flow-control window, in count…
   */
  proposalsInFlightMax: 10_000,
  /** …and in bytes (the largest window a host may configure; the server's default is smaller). */
  proposalBytesInFlightMax: 256 * MiB,
  /**
   * A proposal of at most this many bytes is small: it may pass a full window in bytes (the
   * leader's, and a follower's) by up to `smallProposalsReserveBytes`, so that one session's small
   * write (a lock, a heartbeat znode) is proposed and sent without waiting for room behind other
   * sessions' large ones. The host's admission alternates small and large writes by bytes, so
   * small ones cannot keep large ones out of the window.
   */
  smallProposalBytesMax: 20 * 1024,
  smallProposalsReserveBytes: 1 * MiB,
  /** Txns in one syncTxns message. */
  syncTxnsPerMessageMax: 1_000,
  /** Bytes of txns in one syncTxns message (one oversized txn still travels alone). */
  syncTxnsBytesMax: 4 * 1024 * 1024,
  /** Sessions a learner gathers touches for between two pings. */
  touchesPerPingMax: 1_000_000,
  /** Syncs the leader holds while a ping round confirms it still leads. */
  syncsPendingMax: 100_000,
  /** Learners (followers + observers) one leader serves. */
  learnersMax: 1_000,
  /** Un-applied txns a learner holds in memory (synced + in flight). */
  learnerPendingRecordsMax: 10_000 + 10_000 + 100_000,
} as const;

assert(zabLimits.syncTxnsBytesMax >= limits.dataBytesMax, "a syncTxns message holds the largest txn");
assert(zabLimits.committedLogRecordsMax >= 1 && zabLimits.committedLogBytesMax >= 1, "the DIFF window holds at least one txn");
assert(zabLimits.proposalBytesInFlightMax >= limits.messageBytesMax, "the in-flight window holds the largest txn");
assert(zabLimits.proposalsInFlightMax >= 1, "the leader can propose");
assert(
  zabLimits.learnerPendingRecordsMax >= zabLimits.committedLogRecordsMax + zabLimits.proposalsInFlightMax,
  "a learner can hold a whole DIFF plus the proposals in flight",
);
