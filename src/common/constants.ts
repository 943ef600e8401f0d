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
  /** Frames a client may send behind its connect, before the answer (held until the session exists); beyond it the connection is refused. */
  framesHeldBeforeConnectMax: 1024,
  /** Requests one session may have queued in the server before it stops reading from the stream. */
  sessionRequestsQueuedMax: 10_000,
  /** Session timeout bounds, in ticks, as ZooKeeper negotiates them (minSessionTimeout/maxSessionTimeout). */
  sessionTimeoutTicksMin: 2,
  sessionTimeoutTicksMax: 20,
  /** Watches one session may hold; the server answers BADARGUMENTS beyond it. */
  watchesPerSessionMax: 1_000_000,
  /** Txns per LevelDB batch; larger bursts split across several group commits. */
  logBatchTxnsMax: 10_000,
  /** Bytes of frames packed into one client-stream batch; a larger frame travels alone. */
  frameBatchBytesMax: 256 * 1024,
  /**
   * Bytes of answers the client doors may queue in one turn of the event loop before reads wait
   * for the next (a listing of a million children is ~15 MB and a few hundred milliseconds to
   * make): the loop gets back to the quorum's messages and its ticks between big answers.
   */
  answerBytesPerTurnMax: 4 * 1024 * 1024,
  /** Ids one connection may be authenticated as (its ip id included); beyond it addAuthInfo is AUTHFAILED. */
  authIdsPerConnectionMax: 16,
  /** Bytes of one addAuthInfo's credentials; more is AUTHFAILED. Every forwarded write carries the ids. */
  authBytesMax: 1024,
} as const;

assert(limits.messageBytesMax > limits.dataBytesMax, "a message must fit the largest znode");
assert(limits.sessionTimeoutTicksMin < limits.sessionTimeoutTicksMax, "timeout bounds ordered");
assert(limits.frameBatchBytesMax * 2 < limits.messageBytesMax, "a full batch plus its framing fits one message");
assert(limits.authIdsPerConnectionMax * limits.authBytesMax * 2 < limits.messageBytesMax - limits.dataBytesMax, "a forwarded write's ids fit beside its data");

/** Protocol version spoken on the client stream; the connect exchange settles on the lower of both sides'. */
export const CLIENT_PROTOCOL_VERSION = 2;
/** The first client protocol version in which either side may send batch frames. */
export const CLIENT_PROTOCOL_BATCHES_SINCE = 2;
