/**
 * Every bound the peer transport enforces, in one place, with the relations between them checked
 * at load (docs/architecture.md practice 9). Tests and operators may override any of them per PeerTransport
 * (`limits`), and the overrides are checked the same way.
 */
import { assert } from "../../common/assert.js";
import { MEMBERSHIP_TEXT_BYTES_MAX } from "../../common/membership.js";

const MiB = 1024 * 1024;

export interface PeerLimits {
  /** Largest gRPC message on the quorum service, either way: a SNAP of a big tree must fit. */
  quorumMessageBytesMax: number;
  /**
   * Largest gRPC message on the election service: a notification is a few dozen bytes, plus the
   * sender's configuration text (a few hundred bytes, at most NOTIFICATION_CONFIG_BYTES_MAX).
   */
  electionMessageBytesMax: number;
  /** A quorum frame is closed once it holds this many bytes (a larger single message goes alone). */
  quorumBatchBytesMax: number;
  /** The same for notification frames. */
  electionBatchBytesMax: number;
  /**
   * Messages queued for one quorum stream while gRPC pushes back (write() returned false); beyond
   * this many, or beyond `quorumQueueBytesMax`, the stream is closed and the core resyncs the peer.
   * A last line: the cores bound what they send (the server sets the byte bound above the leader's
   * window plus a DIFF, and above what its doors let a learner forward: quorumQueueBytesMaxOf).
   */
  quorumQueueMessagesMax: number;
  quorumQueueBytesMax: number;
  /** Notifications queued for one peer while its stream connects or pushes back; beyond it they are dropped. */
  electionQueueMessagesMax: number;
  /** Reconnection back-off, doubled per failure between these bounds (election links and the leader link). */
  reconnectBackoffMsMin: number;
  reconnectBackoffMsMax: number;
  /** HTTP/2 keepalive on every peer connection: a ping after this much silence… */
  keepaliveTimeMs: number;
  /** …and the connection is dead if the ping is not answered within this. */
  keepaliveTimeoutMs: number;
  /** stop(): how long open calls get to finish before the servers are shut down by force. */
  stopGraceMs: number;
  /**
   * Servers outside the member list (about to be added, or just removed) with an election or
   * quorum stream to this server at once; a call from one more is refused with RESOURCE_EXHAUSTED.
   */
  unlistedCallersMax: number;
}

/**
 * Bytes of configuration text (UTF-8) one notification may carry. ZooKeeper's dynamic
 * configuration is a line of well under a hundred bytes per server, so even the largest cluster
 * fits; the decoder refuses anything longer, so that a peer cannot make this server allocate at
 * will, and the encoder asserts it (the host must not put a larger configuration in force).
 */
export const NOTIFICATION_CONFIG_BYTES_MAX = MEMBERSHIP_TEXT_BYTES_MAX;

/**
 * Upper bound on one notification's bytes in a NotificationBatch with the largest configuration
 * texts (the one in force and a pending one): the fixed fields take under 64 bytes, each text's
 * version, tag and length under 16.
 */
export const NOTIFICATION_BYTES_MAX = 2 * NOTIFICATION_CONFIG_BYTES_MAX + 128;

export const DEFAULT_PEER_LIMITS: Readonly<PeerLimits> = Object.freeze({
  quorumMessageBytesMax: 512 * MiB,
  electionMessageBytesMax: 192 * 1024,
  quorumBatchBytesMax: 256 * 1024,
  electionBatchBytesMax: 16 * 1024,
  quorumQueueMessagesMax: 250_000,
  quorumQueueBytesMax: 64 * MiB,
  electionQueueMessagesMax: 256,
  reconnectBackoffMsMin: 50,
  reconnectBackoffMsMax: 2_000,
  keepaliveTimeMs: 5_000,
  keepaliveTimeoutMs: 5_000,
  stopGraceMs: 1_000,
  unlistedCallersMax: 64,
});

/** `overrides` applied over the defaults, with every relation between the bounds asserted. */
export function peerLimits(overrides: Partial<PeerLimits> = {}): PeerLimits {
  const limits: PeerLimits = { ...DEFAULT_PEER_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    assert(Number.isSafeInteger(value) && value > 0, `peer limit ${name} must be a positive integer, got ${value}`);
  }
  assert(limits.quorumBatchBytesMax <= limits.quorumMessageBytesMax, "a quorum batch fits one gRPC message");
  assert(limits.electionBatchBytesMax <= limits.electionMessageBytesMax, "a notification batch fits one gRPC message");
  // A notification without configuration text is < 64 bytes; the election service must take a full batch of them.
  assert(limits.electionBatchBytesMax >= 64, "a notification fits a batch");
  // A larger notification goes alone in its frame, which must still fit one gRPC message.
  assert(limits.electionMessageBytesMax >= NOTIFICATION_BYTES_MAX, "a notification with the largest configuration fits one gRPC message");
  assert(limits.quorumMessageBytesMax <= 2 ** 31 - 1, "gRPC message lengths are 31-bit");
  assert(limits.reconnectBackoffMsMin <= limits.reconnectBackoffMsMax, "back-off bounds ordered");
  return limits;
}

assert(peerLimits() !== undefined, "default peer limits are consistent");
