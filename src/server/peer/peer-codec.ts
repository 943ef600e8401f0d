/**
 * The peer codec: a hand-written protobuf codec for proto/peer.proto, byte-compatible with
 * @grpc/proto-loader (test/unit/peer-codec.test.ts checks both directions on generated frames).
 * Write throughput is CPU-bound (bench/README.md), and every proposal, ack and commit passes
 * through it on every server, so it avoids proto-loader's reflective fromObject/toObject entirely:
 * a batch is sized once, written into one exactly-sized buffer, and decoded in one pass. This
 * module is its front; the work is in codec/: QuorumBatch frames (quorum-codec.ts),
 * NotificationBatch frames (notification-codec.ts), and the wire primitives both are built from
 * (protobuf-wire.ts). None of them keeps state between calls.
 *
 * Encoding writes fields in field-number order and omits proto3 defaults (zero, empty), as
 * protobufjs does; oneof members are always written. The numbers handed in are the core's:
 * zxids, epochs, rounds and sync ids non-negative safe integers, server ids and timeouts uint32,
 * cxids int32, session ids signed 64-bit bigints. Anything else is a bug in the caller: asserted.
 *
 * Decoding is strict (peers are corral servers, and a frame that decodes to something odd is
 * better refused than half-understood): unknown fields are skipped, but a QuorumMessage with no
 * known member or with two, an unknown enum value, a 64-bit number above 2^53 - 1, a truncated
 * field or an impossible wire type all throw `PeerCodecError` — never a RangeError.
 *
 * Zero copy: decoded `record`, `request` and `snapshot` bytes are views into the frame's memory,
 * which grpc-js hands over per message and never reuses (a slice of one socket read, or a fresh
 * concatenation when a frame spans reads). Copying would cost more than decoding: V8 allocates a
 * small ArrayBuffer far more slowly than it makes a view. The price is retention: a view keeps
 * its whole read buffer alive (typically up to 64 KiB; a frame is bounded by the sender's batch
 * byte limit, peer-limits.ts), so a consumer that keeps records for long — an in-memory
 * committed log for DIFF — should copy the ones it keeps.
 */
export { PeerCodecError } from "./codec/protobuf-wire.js";
export { decodeQuorumBatch, encodeQuorumBatch, quorumBodySize, quorumEntrySize } from "./codec/quorum-codec.js";
export { decodeNotificationBatch, encodeNotificationBatch, notificationEntrySize } from "./codec/notification-codec.js";
