import { assert } from "./assert.js";

/** Every limit corral enforces, in one place, with the relations between them checked at load. */
export const limits = {
  /** ZooKeeper's jute.maxbuffer default: the largest znode payload accepted. */
  dataBytesMax: 1024 * 1024,
  /** Largest path accepted, in UTF-16 code units. */
  pathLengthMax: 4096,
  /** Largest gRPC message either side accepts: one full znode plus headroom for the envelope. */
  messageBytesMax: 1024 * 1024 + 64 * 1024,
  /** Operations in one multi. */
  multiOpsMax: 1000,
  /** Requests one session may have queued in the server before it stops reading from the stream. */
  sessionRequestsQueuedMax: 10_000,
  /** Session timeout bounds, in ticks, as ZooKeeper negotiates them (minSessionTimeout/maxSessionTimeout). */
  sessionTimeoutTicksMin: 2,
  sessionTimeoutTicksMax: 20,
  /** Watches one session may hold; the server answers BADARGUMENTS beyond it. */
  watchesPerSessionMax: 1_000_000,
  /** Txns per LevelDB batch; larger bursts split across several group commits. */
  logBatchTxnsMax: 10_000,
} as const;

assert(limits.messageBytesMax > limits.dataBytesMax, "a message must fit the largest znode");
assert(limits.sessionTimeoutTicksMin < limits.sessionTimeoutTicksMax, "timeout bounds ordered");

/** Protocol version spoken on the client stream. */
export const CLIENT_PROTOCOL_VERSION = 1;
