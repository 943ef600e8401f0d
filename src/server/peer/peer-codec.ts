/**
 * A hand-written protobuf codec for proto/peer.proto: QuorumBatch and NotificationBatch frames to
 * and from the records of src/consensus/messages.ts and src/election/types.ts, byte-compatible with
 * @grpc/proto-loader (test/unit/peer-codec.test.ts checks both directions on generated frames).
 * Write throughput is CPU-bound (bench/README.md), and every proposal, ack and commit passes through
 * here on every server, so this avoids proto-loader's reflective fromObject/toObject entirely:
 * a batch is sized once, written into one exactly-sized buffer, and decoded in one pass.
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
 * A notification's configuration texts (proto fields `config` and `pending_config`) are the only
 * strings on these wires. Each is bounded on both sides (NOTIFICATION_CONFIG_BYTES_MAX: refused when decoding, asserted when
 * encoding) because any server that reaches the election port may send one, and its UTF-8 is
 * decoded leniently (bad bytes become U+FFFD): the host parses the text and refuses what is not a
 * configuration, so a stricter decoder here would only turn a bad text into a dropped stream.
 * Proto3 again: an empty text is not sent, and a notification decodes with `config` only when it
 * carried a non-empty text (its version defaulting to 0).
 *
 * Zero copy: decoded `record`, `request` and `snapshot` bytes are views into the frame's memory,
 * which grpc-js hands over per message and never reuses (a slice of one socket read, or a fresh
 * concatenation when a frame spans reads). Copying would cost more than decoding: V8 allocates a
 * small ArrayBuffer far more slowly than it makes a view. The price is retention: a view keeps
 * its whole read buffer alive (typically up to 64 KiB; a frame is bounded by the sender's batch
 * byte limit, peer-limits.ts), so a consumer that keeps records for long — an in-memory
 * committed log for DIFF — should copy the ones it keeps.
 */
import { assert, AssertionError } from "../../common/assert.js";
import { putVarint32, varint32Size, varUintSize } from "../../common/varint.js";
import type { LearnerRole, LogRecord, QuorumMessage, SessionTouch } from "../../consensus/messages.js";
import type { Notification, PeerState } from "../../election/types.js";
import { NOTIFICATION_CONFIG_BYTES_MAX } from "./peer-limits.js";

export class PeerCodecError extends Error {
  readonly code = "MALFORMED_PEER_FRAME";
  constructor(message: string) {
    super(`malformed peer frame: ${message}`);
    this.name = "PeerCodecError";
  }
}

const TWO_32 = 4294967296;
/** hi * 2^32 + lo is a safe integer exactly when hi is below this. */
const SAFE_HI = 0x200000;
const EMPTY: Uint8Array = new Uint8Array(0);
/** Non-fatal (malformed bytes become U+FFFD, never an exception) and keeps a leading U+FEFF. */
const UTF8 = new TextDecoder("utf-8", { ignoreBOM: true });

// Field numbers of QuorumMessage's oneof members (proto/peer.proto).
const FIELD = {
  proposal: 1,
  ack: 2,
  commit: 3,
  inform: 4,
  request: 5,
  ping: 6,
  sync: 7,
  syncDone: 8,
  revalidate: 9,
  revalidated: 10,
  learnerInfo: 16,
  leaderInfo: 17,
  ackEpoch: 18,
  diff: 19,
  trunc: 20,
  snap: 21,
  syncTxns: 22,
  newLeader: 23,
  upToDate: 24,
} as const satisfies Record<QuorumMessage["type"], number>;

const PEER_STATES: readonly PeerState[] = ["looking", "following", "leading", "observing"];
const PEER_STATE_NUMBER: Record<PeerState, number> = { looking: 0, following: 1, leading: 2, observing: 3 };

// -------------------------------------------------------------------------------------------------
// Sizes. Every "field size" includes the one-byte tag (all field numbers used inside messages are
// below 16) and skips proto3 defaults.

function uint53Field(value: number): number {
  if (!(value >= 0 && value <= Number.MAX_SAFE_INTEGER && Math.floor(value) === value)) assert(false, `not a uint53: ${value}`);
  return value === 0 ? 0 : 1 + varUintSize(value);
}

function uint32Field(value: number): number {
  if (value >>> 0 !== value) assert(false, `not a uint32: ${value}`);
  return value === 0 ? 0 : 1 + varint32Size(value);
}

function int32Field(value: number): number {
  if ((value | 0) !== value) assert(false, `not an int32: ${value}`);
  if (value === 0) return 0;
  return value < 0 ? 11 : 1 + varint32Size(value);
}

function bytesField(bytes: Uint8Array): number {
  const n = bytes.length;
  return n === 0 ? 0 : 1 + varint32Size(n) + n;
}

function sfixed64Field(value: bigint): number {
  if (BigInt.asIntN(64, value) !== value) assert(false, `not an int64: ${value}`);
  return value === 0n ? 0 : 9;
}

/** Size of a length-delimited submessage entry whose body is `size` bytes (tag below 16). */
function nested(size: number): number {
  return 1 + varint32Size(size) + size;
}

function logRecordSize(r: LogRecord): number {
  return uint53Field(r.zxid) + bytesField(r.record);
}

function touchSize(t: SessionTouch): number {
  return sfixed64Field(t.sessionId) + uint32Field(t.timeoutMs);
}

/**
 * Size of the body of `m`'s oneof member (the Proposal, Ack, … message itself). Asserts that every
 * number in `m` fits its wire type, so call it when a message is handed over, not later.
 */
export function quorumBodySize(m: QuorumMessage): number {
  switch (m.type) {
    case "proposal":
    case "inform":
      return uint53Field(m.zxid) + bytesField(m.record);
    case "ack":
    case "commit":
    case "trunc":
    case "newLeader":
      return uint53Field(m.zxid);
    case "request":
      return sfixed64Field(m.sessionId) + int32Field(m.cxid) + bytesField(m.request);
    case "ping": {
      let n = 0;
      for (const t of m.touches) n += nested(touchSize(t));
      return n;
    }
    case "sync":
      return uint53Field(m.syncId);
    case "syncDone":
      return uint53Field(m.syncId) + uint53Field(m.zxid);
    case "revalidate":
      return sfixed64Field(m.sessionId) + uint32Field(m.timeoutMs);
    case "revalidated":
      return sfixed64Field(m.sessionId) + (m.valid ? 2 : 0);
    case "learnerInfo":
      if (!(m.role === "participant" || m.role === "observer")) assert(false, `learner role ${String(m.role)}`);
      return uint32Field(m.sid) + (m.role === "observer" ? 2 : 0) + uint53Field(m.acceptedEpoch) + uint53Field(m.lastZxid) + uint32Field(m.protocolVersion);
    case "leaderInfo":
      return uint53Field(m.newEpoch) + uint32Field(m.protocolVersion);
    case "ackEpoch":
      return uint53Field(m.currentEpoch) + uint53Field(m.lastZxid);
    case "diff":
      return uint53Field(m.lastZxid);
    case "snap":
      return uint53Field(m.zxid) + bytesField(m.snapshot);
    case "syncTxns": {
      let n = m.committed ? 2 : 0;
      for (const r of m.txns) n += nested(logRecordSize(r));
      return n;
    }
    case "upToDate":
      return 0;
    default:
      throw new AssertionError(`unknown quorum message ${JSON.stringify((m as { type?: unknown }).type)}`);
  }
}

/** Bytes `m` adds to a QuorumBatch frame, given its body size: the batch entry with all headers. */
export function quorumEntrySize(m: QuorumMessage, bodySize: number): number {
  const wrapper = memberTagBytes(m.type) + varint32Size(bodySize) + bodySize;
  return 1 + varint32Size(wrapper) + wrapper;
}

function voteSize(n: Notification): number {
  return uint32Field(n.vote.leader) + uint53Field(n.vote.zxid) + uint53Field(n.vote.peerEpoch);
}

/** A notification's configuration texts: the one in force (fields 4, 5) and the pending one (6, 7). */
type CarriedConfig = { version: number; text: string } | undefined;

/** UTF-8 bytes of a configuration's text, 0 when there is none (asserts the text's bound and the version). */
function configTextBytes(config: CarriedConfig): number {
  if (config === undefined) return 0;
  uint53Field(config.version);
  if (config.text.length === 0) return 0;
  const bytes = Buffer.byteLength(config.text, "utf8");
  if (bytes > NOTIFICATION_CONFIG_BYTES_MAX) assert(false, `configuration text of ${bytes} bytes, over ${NOTIFICATION_CONFIG_BYTES_MAX}`);
  return bytes;
}

/** Bytes of a configuration's version and text fields, its text taking `textBytes` (0: not sent). */
function configFieldsSize(config: CarriedConfig, textBytes: number): number {
  return textBytes === 0 ? 0 : uint53Field(config!.version) + 1 + varint32Size(textBytes) + textBytes;
}

/** Size of `n`'s Notification body, its configuration texts taking `configBytes` and `pendingBytes`. */
function notificationBodySize(n: Notification, state: number, configBytes: number, pendingBytes: number): number {
  return (
    (state === 0 ? 0 : 2) + nested(voteSize(n)) + uint53Field(n.round) + configFieldsSize(n.config, configBytes) + configFieldsSize(n.pending, pendingBytes)
  );
}

/** Bytes `n` adds to a NotificationBatch frame (asserts its numbers fit, and its configuration texts' bound). */
export function notificationEntrySize(n: Notification): number {
  const state = PEER_STATE_NUMBER[n.state];
  if (state === undefined) assert(false, `peer state ${String(n.state)}`);
  return nested(notificationBodySize(n, state, configTextBytes(n.config), configTextBytes(n.pending)));
}

// -------------------------------------------------------------------------------------------------
// Writing. The `put*` primitives take the buffer and position and return the new position, so the
// hot loops keep both in locals; the rarer messages go through the `write*` wrappers around one
// module-level cursor (encoding is synchronous and never re-entered).

function putUint53(o: Uint8Array, p: number, value: number): number {
  if (value < 0x10000000) {
    // Below 2^28: small-integer arithmetic all the way.
    while (value > 0x7f) {
      o[p++] = (value & 0x7f) | 0x80;
      value >>>= 7;
    }
    o[p++] = value;
    return p;
  }
  // 2^28 and up (every zxid past epoch 0): four full groups from the low word, then the rest,
  // bits 28..52, which fit one int32.
  const lo = value >>> 0;
  let rest = (lo >>> 28) | (((value / TWO_32) >>> 0) << 4);
  o[p] = (lo & 0x7f) | 0x80;
  o[p + 1] = ((lo >>> 7) & 0x7f) | 0x80;
  o[p + 2] = ((lo >>> 14) & 0x7f) | 0x80;
  o[p + 3] = ((lo >>> 21) & 0x7f) | 0x80;
  p += 4;
  while (rest > 0x7f) {
    o[p++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  o[p++] = rest;
  return p;
}

/** Bytes up to this length are copied by a loop; longer ones by TypedArray.set. */
const COPY_LOOP_BYTES_MAX = 8;

/** A non-empty bytes field: tag, length, bytes. */
function putBytesField(o: Uint8Array, p: number, tag: number, bytes: Uint8Array): number {
  const n = bytes.length;
  o[p++] = tag;
  p = putVarint32(o, p, n);
  if (n <= COPY_LOOP_BYTES_MAX) {
    for (let i = 0; i < n; i++) o[p + i] = bytes[i]!;
  } else {
    o.set(bytes, p);
  }
  return p + n;
}

let out: Uint8Array = EMPTY;
let pos = 0;

function writeVarint32(value: number): void {
  pos = putVarint32(out, pos, value);
}

function writeUint53Field(tag: number, value: number): void {
  if (value === 0) return;
  out[pos++] = tag;
  pos = putUint53(out, pos, value);
}

function writeUint32Field(tag: number, value: number): void {
  if (value === 0) return;
  out[pos++] = tag;
  writeVarint32(value);
}

function writeInt32Field(tag: number, value: number): void {
  if (value === 0) return;
  out[pos++] = tag;
  if (value > 0) return writeVarint32(value);
  // Negative int32: sign-extended to 64 bits, always 10 bytes.
  let lo = value >>> 0;
  for (let i = 0; i < 4; i++) {
    out[pos++] = (lo & 0x7f) | 0x80;
    lo >>>= 7;
  }
  out[pos++] = lo | 0x70 | 0x80; // bits 28..31 of lo, then ones
  for (let i = 0; i < 4; i++) out[pos++] = 0xff;
  out[pos++] = 0x01;
}

function writeBytesField(tag: number, bytes: Uint8Array): void {
  if (bytes.length === 0) return;
  pos = putBytesField(out, pos, tag, bytes);
}

function writeSfixed64Field(tag: number, value: bigint): void {
  if (value === 0n) return;
  out[pos++] = tag;
  const u = BigInt.asUintN(64, value);
  writeFixed32(Number(u & 0xffffffffn));
  writeFixed32(Number(u >> 32n));
}

function writeFixed32(value: number): void {
  out[pos++] = value & 0xff;
  out[pos++] = (value >>> 8) & 0xff;
  out[pos++] = (value >>> 16) & 0xff;
  out[pos++] = value >>> 24;
}

function writeHeader(tag: number, size: number): void {
  out[pos++] = tag;
  writeVarint32(size);
}

function writeQuorumBody(m: QuorumMessage): void {
  switch (m.type) {
    case "proposal":
    case "inform":
      writeUint53Field(0x08, m.zxid);
      writeBytesField(0x12, m.record);
      return;
    case "ack":
    case "commit":
    case "trunc":
    case "newLeader":
      writeUint53Field(0x08, m.zxid);
      return;
    case "request":
      writeSfixed64Field(0x09, m.sessionId);
      writeInt32Field(0x10, m.cxid);
      writeBytesField(0x1a, m.request);
      return;
    case "ping":
      for (const t of m.touches) {
        writeHeader(0x0a, touchSize(t));
        writeSfixed64Field(0x09, t.sessionId);
        writeUint32Field(0x10, t.timeoutMs);
      }
      return;
    case "sync":
      writeUint53Field(0x08, m.syncId);
      return;
    case "syncDone":
      writeUint53Field(0x08, m.syncId);
      writeUint53Field(0x10, m.zxid);
      return;
    case "revalidate":
      writeSfixed64Field(0x09, m.sessionId);
      writeUint32Field(0x10, m.timeoutMs);
      return;
    case "revalidated":
      writeSfixed64Field(0x09, m.sessionId);
      if (m.valid) writeUint32Field(0x10, 1);
      return;
    case "learnerInfo":
      writeUint32Field(0x08, m.sid);
      if (m.role === "observer") writeUint32Field(0x10, 1);
      writeUint53Field(0x18, m.acceptedEpoch);
      writeUint53Field(0x20, m.lastZxid);
      writeUint32Field(0x28, m.protocolVersion);
      return;
    case "leaderInfo":
      writeUint53Field(0x08, m.newEpoch);
      writeUint32Field(0x10, m.protocolVersion);
      return;
    case "ackEpoch":
      writeUint53Field(0x08, m.currentEpoch);
      writeUint53Field(0x10, m.lastZxid);
      return;
    case "diff":
      writeUint53Field(0x08, m.lastZxid);
      return;
    case "snap":
      writeUint53Field(0x08, m.zxid);
      writeBytesField(0x12, m.snapshot);
      return;
    case "syncTxns":
      for (const r of m.txns) {
        writeHeader(0x0a, logRecordSize(r));
        writeUint53Field(0x08, r.zxid);
        writeBytesField(0x12, r.record);
      }
      if (m.committed) writeUint32Field(0x10, 1);
      return;
    case "upToDate":
      return;
  }
}

/** Bytes of the tag of `type`'s member in QuorumMessage (fields 1–15 take one byte). */
function memberTagBytes(type: QuorumMessage["type"]): number {
  switch (type) {
    case "proposal":
    case "ack":
    case "commit":
    case "inform":
    case "request":
    case "ping":
    case "sync":
    case "syncDone":
    case "revalidate":
    case "revalidated":
      return 1;
    default:
      return 2;
  }
}

/**
 * messages[start, end) → one QuorumBatch frame. `bodySizes[i]`, when given, must be
 * `quorumBodySize(messages[i])` (the transport computes it once, when a message is queued).
 */
export function encodeQuorumBatch(messages: readonly QuorumMessage[], bodySizes?: readonly number[], start = 0, end = messages.length): Buffer {
  let total = 0;
  for (let i = start; i < end; i++) {
    const m = messages[i]!;
    total += quorumEntrySize(m, bodySizes ? bodySizes[i]! : quorumBodySize(m));
  }
  const o = Buffer.allocUnsafe(total);
  let p = 0;
  for (let i = start; i < end; i++) {
    const m = messages[i]!;
    // Sizes are recomputed rather than kept from the first pass: cheaper than filling an array.
    const body = bodySizes ? bodySizes[i]! : quorumBodySize(m);
    o[p++] = 0x0a; // QuorumBatch.messages = 1
    p = putVarint32(o, p, memberTagBytes(m.type) + varint32Size(body) + body);
    // The broadcast messages inline; everything else through the general path.
    switch (m.type) {
      case "proposal":
        o[p++] = 0x0a;
        p = putVarint32(o, p, body);
        if (m.zxid !== 0) {
          o[p++] = 0x08;
          p = putUint53(o, p, m.zxid);
        }
        if (m.record.length !== 0) p = putBytesField(o, p, 0x12, m.record);
        break;
      case "ack":
      case "commit":
        o[p++] = m.type === "ack" ? 0x12 : 0x1a;
        p = putVarint32(o, p, body);
        if (m.zxid !== 0) {
          o[p++] = 0x08;
          p = putUint53(o, p, m.zxid);
        }
        break;
      default:
        p = putVarint32(o, p, (FIELD[m.type] << 3) | 2);
        p = putVarint32(o, p, body);
        out = o;
        pos = p;
        writeQuorumBody(m);
        p = pos;
        out = EMPTY;
    }
  }
  if (p !== total) assert(false, `quorum batch sized ${total} but wrote ${p}`);
  return o;
}

/** A configuration's version and text fields into `frame` at `pos`, when its text takes `textBytes` > 0. */
function writeConfigFields(frame: Buffer, versionTag: number, textTag: number, config: CarriedConfig, textBytes: number): void {
  if (textBytes === 0) return;
  writeUint53Field(versionTag, config!.version);
  writeHeader(textTag, textBytes);
  const written = frame.write(config!.text, pos, textBytes, "utf8");
  if (written !== textBytes) assert(false, `configuration text sized ${textBytes} but wrote ${written}`);
  pos += written;
}

/** notifications[start, end) → one NotificationBatch frame. The sender is not on the wire. */
export function encodeNotificationBatch(notifications: readonly Notification[], start = 0, end = notifications.length): Buffer {
  let total = 0;
  for (let i = start; i < end; i++) total += notificationEntrySize(notifications[i]!);
  const frame = Buffer.allocUnsafe(total);
  out = frame;
  pos = 0;
  for (let i = start; i < end; i++) {
    const n = notifications[i]!;
    const state = PEER_STATE_NUMBER[n.state];
    const configBytes = configTextBytes(n.config);
    const pendingBytes = configTextBytes(n.pending);
    writeHeader(0x0a, notificationBodySize(n, state, configBytes, pendingBytes)); // NotificationBatch.notifications = 1
    writeUint32Field(0x08, state);
    writeHeader(0x12, voteSize(n));
    writeUint32Field(0x08, n.vote.leader);
    writeUint53Field(0x10, n.vote.zxid);
    writeUint53Field(0x18, n.vote.peerEpoch);
    writeUint53Field(0x18, n.round);
    writeConfigFields(frame, 0x20, 0x2a, n.config, configBytes);
    writeConfigFields(frame, 0x30, 0x3a, n.pending, pendingBytes);
  }
  if (pos !== total) assert(false, `notification batch sized ${total} but wrote ${pos}`);
  out = EMPTY;
  return frame;
}

// -------------------------------------------------------------------------------------------------
// Reading: one module-level cursor over the frame (decoding is synchronous and never re-entered).

let inp: Uint8Array = EMPTY;
let rp = 0;

function truncated(): never {
  throw new PeerCodecError("truncated field");
}

/** A varint's low 32 bits, unsigned (longer varints are read and their high bits dropped). */
function readVarint32(end: number): number {
  const b = inp;
  let p = rp;
  if (p < end) {
    const x = b[p]!;
    if (x < 0x80) {
      rp = p + 1;
      return x;
    }
  }
  let result = 0;
  for (let shift = 0; ; shift += 7) {
    if (p >= end) truncated();
    if (shift >= 70) throw new PeerCodecError("varint longer than 10 bytes");
    const x = b[p++]!;
    if (shift < 32) result |= (x & 0x7f) << shift;
    if (x < 0x80) {
      rp = p;
      return result >>> 0;
    }
  }
}

/** A uint64 varint that must be a safe integer. */
function readUint53(end: number): number {
  const b = inp;
  let p = rp;
  // Up to four bytes (values below 2^28): small-integer arithmetic.
  let lo = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (p >= end) truncated();
    const x = b[p++]!;
    lo |= (x & 0x7f) << shift;
    if (x < 0x80) {
      rp = p;
      return lo;
    }
  }
  // Fifth byte: bits 28..34, split between the words.
  if (p >= end) truncated();
  let x = b[p++]!;
  lo = (lo | (x << 28)) >>> 0;
  let hi = (x & 0x7f) >>> 4;
  for (let shift = 3; x >= 0x80; shift += 7) {
    if (p >= end) truncated();
    if (shift > 31) throw new PeerCodecError("varint longer than 10 bytes");
    x = b[p++]!;
    if (shift < 32) hi |= (x & 0x7f) << shift;
  }
  hi >>>= 0;
  if (hi >= SAFE_HI) throw new PeerCodecError("a 64-bit number beyond 2^53 - 1");
  rp = p;
  return hi * TWO_32 + lo;
}

function readSfixed64(end: number): bigint {
  if (rp + 8 > end) truncated();
  const b = inp;
  const p = rp;
  const lo = (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;
  const hi = b[p + 4]! | (b[p + 5]! << 8) | (b[p + 6]! << 16) | (b[p + 7]! << 24);
  rp = p + 8;
  if (hi >= -SAFE_HI && hi < SAFE_HI) return BigInt(hi * TWO_32 + lo);
  return (BigInt(hi) << 32n) + BigInt(lo);
}

/** A length prefix; returns the end of the delimited region. */
function readDelimited(end: number): number {
  const length = readVarint32(end);
  const to = rp + length;
  if (to > end) throw new PeerCodecError("length beyond the enclosing message");
  return to;
}

/** A view of the field's bytes (`inp` is a plain Uint8Array, whose subarray is the cheapest view V8 makes). */
function readBytes(end: number): Uint8Array {
  const to = readDelimited(end);
  const from = rp;
  rp = to;
  return from === to ? EMPTY : inp.subarray(from, to);
}

/** Starts reading `frame` through a plain Uint8Array view (Buffer's subarray goes through a slower species lookup). */
function beginRead(frame: Uint8Array): void {
  inp = Object.getPrototypeOf(frame) === Uint8Array.prototype ? frame : new Uint8Array(frame.buffer, frame.byteOffset, frame.byteLength);
  rp = 0;
}

function skipField(tag: number, end: number): void {
  switch (tag & 7) {
    case 0:
      readVarint32(end);
      return;
    case 1:
      rp += 8;
      break;
    case 2:
      rp = readDelimited(end);
      return;
    case 5:
      rp += 4;
      break;
    default:
      throw new PeerCodecError(`wire type ${tag & 7}`);
  }
  if (rp > end) truncated();
}

function readTag(end: number): number {
  const tag = readVarint32(end);
  if (tag >>> 3 === 0) throw new PeerCodecError("field number 0");
  return tag;
}

/** The body of a message carrying only `zxid = 1` (Ack, Commit, Trunc, NewLeader, Diff). */
function readZxidOnly(end: number): number {
  let zxid = 0;
  while (rp < end) {
    const tag = readTag(end);
    if (tag === 0x08) zxid = readUint53(end);
    else skipField(tag, end);
  }
  return zxid;
}

/** zxid = 1 and record/snapshot = 2 of the body in [rp, end), left in `readZxid` / `readRecord`. */
let readZxid = 0;
let readRecord: Uint8Array = EMPTY;
function readZxidAndBytes(end: number): void {
  let zxid = 0;
  let record: Uint8Array = EMPTY;
  while (rp < end) {
    const tag = readTag(end);
    if (tag === 0x08) zxid = readUint53(end);
    else if (tag === 0x12) record = readBytes(end);
    else skipField(tag, end);
  }
  readZxid = zxid;
  readRecord = record;
}

function readLogRecord(end: number): LogRecord {
  readZxidAndBytes(end);
  return { zxid: readZxid, record: readRecord };
}

function readTouch(end: number): SessionTouch {
  let sessionId = 0n;
  let timeoutMs = 0;
  while (rp < end) {
    const tag = readTag(end);
    if (tag === 0x09) sessionId = readSfixed64(end);
    else if (tag === 0x10) timeoutMs = readVarint32(end);
    else skipField(tag, end);
  }
  return { sessionId, timeoutMs };
}

/** Decodes the member body in [rp, end) of the oneof member numbered `field`. */
function readQuorumBody(field: number, end: number): QuorumMessage {
  switch (field) {
    case 1:
      readZxidAndBytes(end);
      return { type: "proposal", zxid: readZxid, record: readRecord };
    case 4:
      readZxidAndBytes(end);
      return { type: "inform", zxid: readZxid, record: readRecord };
    case 2:
      return { type: "ack", zxid: readZxidOnly(end) };
    case 3:
      return { type: "commit", zxid: readZxidOnly(end) };
    case 5: {
      let sessionId = 0n;
      let cxid = 0;
      let request: Uint8Array = EMPTY;
      while (rp < end) {
        const tag = readTag(end);
        if (tag === 0x09) sessionId = readSfixed64(end);
        else if (tag === 0x10) cxid = readVarint32(end) | 0;
        else if (tag === 0x1a) request = readBytes(end);
        else skipField(tag, end);
      }
      return { type: "request", sessionId, cxid, request };
    }
    case 6: {
      const touches: SessionTouch[] = [];
      while (rp < end) {
        const tag = readTag(end);
        if (tag === 0x0a) {
          const to = readDelimited(end);
          touches.push(readTouch(to));
        } else skipField(tag, end);
      }
      return { type: "ping", touches };
    }
    case 7: {
      let syncId = 0;
      while (rp < end) {
        const tag = readTag(end);
        if (tag === 0x08) syncId = readUint53(end);
        else skipField(tag, end);
      }
      return { type: "sync", syncId };
    }
    case 8: {
      let syncId = 0;
      let zxid = 0;
      while (rp < end) {
        const tag = readTag(end);
        if (tag === 0x08) syncId = readUint53(end);
        else if (tag === 0x10) zxid = readUint53(end);
        else skipField(tag, end);
      }
      return { type: "syncDone", syncId, zxid };
    }
    case 9:
    case 10: {
      let sessionId = 0n;
      let second = 0;
      while (rp < end) {
        const tag = readTag(end);
        if (tag === 0x09) sessionId = readSfixed64(end);
        else if (tag === 0x10) second = readVarint32(end);
        else skipField(tag, end);
      }
      return field === 9 ? { type: "revalidate", sessionId, timeoutMs: second } : { type: "revalidated", sessionId, valid: second !== 0 };
    }
    case 16: {
      let sid = 0;
      let role: LearnerRole = "participant";
      let acceptedEpoch = 0;
      let lastZxid = 0;
      let protocolVersion = 0;
      while (rp < end) {
        const tag = readTag(end);
        switch (tag) {
          case 0x08:
            sid = readVarint32(end);
            break;
          case 0x10: {
            const value = readVarint32(end);
            if (value > 1) throw new PeerCodecError(`learner role ${value}`);
            role = value === 1 ? "observer" : "participant";
            break;
          }
          case 0x18:
            acceptedEpoch = readUint53(end);
            break;
          case 0x20:
            lastZxid = readUint53(end);
            break;
          case 0x28:
            protocolVersion = readVarint32(end);
            break;
          default:
            skipField(tag, end);
        }
      }
      return { type: "learnerInfo", sid, role, acceptedEpoch, lastZxid, protocolVersion };
    }
    case 17: {
      let newEpoch = 0;
      let protocolVersion = 0;
      while (rp < end) {
        const tag = readTag(end);
        if (tag === 0x08) newEpoch = readUint53(end);
        else if (tag === 0x10) protocolVersion = readVarint32(end);
        else skipField(tag, end);
      }
      return { type: "leaderInfo", newEpoch, protocolVersion };
    }
    case 18: {
      let currentEpoch = 0;
      let lastZxid = 0;
      while (rp < end) {
        const tag = readTag(end);
        if (tag === 0x08) currentEpoch = readUint53(end);
        else if (tag === 0x10) lastZxid = readUint53(end);
        else skipField(tag, end);
      }
      return { type: "ackEpoch", currentEpoch, lastZxid };
    }
    case 19:
      return { type: "diff", lastZxid: readZxidOnly(end) };
    case 20:
      return { type: "trunc", zxid: readZxidOnly(end) };
    case 21:
      readZxidAndBytes(end);
      return { type: "snap", zxid: readZxid, snapshot: readRecord };
    case 22: {
      const txns: LogRecord[] = [];
      let committed = false;
      while (rp < end) {
        const tag = readTag(end);
        if (tag === 0x0a) {
          const to = readDelimited(end);
          txns.push(readLogRecord(to));
        } else if (tag === 0x10) committed = readBool(end);
        else skipField(tag, end);
      }
      return { type: "syncTxns", txns, committed };
    }
    case 23:
      return { type: "newLeader", zxid: readZxidOnly(end) };
    case 24:
      while (rp < end) skipField(readTag(end), end);
      return { type: "upToDate" };
    default:
      throw new PeerCodecError(`quorum message member ${field}`);
  }
}

/** A bool: any non-zero varint is true (read as 64 bits so a 10-byte encoding is fine). */
function readBool(end: number): boolean {
  const start = rp;
  const low = readVarint32(end);
  if (low !== 0) return true;
  // A zero low word may still have high bits set.
  for (let i = start; i < rp; i++) if ((inp[i]! & 0x7f) !== 0) return true;
  return false;
}

function readQuorumMessage(end: number): QuorumMessage {
  // Fast path: a proposal, ack or commit whose body fills the entry (how the codec writes them).
  const start = rp;
  if (start < end) {
    const tag = inp[start]!;
    if (tag === 0x0a || tag === 0x12 || tag === 0x1a) {
      rp = start + 1;
      const length = readVarint32(end);
      if (rp + length === end) {
        if (tag === 0x0a) {
          readZxidAndBytes(end);
          return { type: "proposal", zxid: readZxid, record: readRecord };
        }
        const zxid = readZxidOnly(end);
        return tag === 0x12 ? { type: "ack", zxid } : { type: "commit", zxid };
      }
      rp = start;
    }
  }
  let message: QuorumMessage | undefined;
  while (rp < end) {
    const tag = readTag(end);
    const field = tag >>> 3;
    if ((tag & 7) === 2 && ((field >= 1 && field <= 10) || (field >= 16 && field <= 24))) {
      if (message !== undefined) throw new PeerCodecError("a quorum message with two members");
      const to = readDelimited(end);
      message = readQuorumBody(field, to);
      rp = to;
    } else skipField(tag, end);
  }
  if (message === undefined) throw new PeerCodecError("a quorum message with no known member");
  return message;
}

/** One QuorumBatch frame → its messages, in order. Throws PeerCodecError on anything malformed. */
export function decodeQuorumBatch(frame: Uint8Array): QuorumMessage[] {
  beginRead(frame);
  const end = frame.length;
  const messages: QuorumMessage[] = [];
  try {
    while (rp < end) {
      const tag = readTag(end);
      if (tag === 0x0a) {
        const to = readDelimited(end);
        messages.push(readQuorumMessage(to));
        rp = to;
      } else skipField(tag, end);
    }
  } finally {
    inp = EMPTY;
    readRecord = EMPTY;
  }
  return messages;
}

function readNotification(from: number, end: number): Notification {
  let state: PeerState = "looking";
  let leader = 0;
  let zxid = 0;
  let peerEpoch = 0;
  let round = 0;
  let configVersion = 0;
  let configText = "";
  let pendingVersion = 0;
  let pendingText = "";
  while (rp < end) {
    const tag = readTag(end);
    if (tag === 0x08) {
      const value = readVarint32(end);
      const s = PEER_STATES[value];
      if (s === undefined) throw new PeerCodecError(`peer state ${value}`);
      state = s;
    } else if (tag === 0x12) {
      const to = readDelimited(end);
      while (rp < to) {
        const t = readTag(to);
        if (t === 0x08) leader = readVarint32(to);
        else if (t === 0x10) zxid = readUint53(to);
        else if (t === 0x18) peerEpoch = readUint53(to);
        else skipField(t, to);
      }
    } else if (tag === 0x18) round = readUint53(end);
    else if (tag === 0x20) configVersion = readUint53(end);
    else if (tag === 0x2a) configText = readConfigText(end);
    else if (tag === 0x30) pendingVersion = readUint53(end);
    else if (tag === 0x3a) pendingText = readConfigText(end);
    else skipField(tag, end);
  }
  const n: Notification = { from, state, vote: { leader, zxid, peerEpoch }, round };
  if (configText !== "") n.config = { version: configVersion, text: configText };
  if (pendingText !== "") n.pending = { version: pendingVersion, text: pendingText };
  return n;
}

/** A configuration text field, refused when over NOTIFICATION_CONFIG_BYTES_MAX. */
function readConfigText(end: number): string {
  const to = readDelimited(end);
  // Checked before anything is allocated for it.
  if (to - rp > NOTIFICATION_CONFIG_BYTES_MAX) throw new PeerCodecError(`configuration text of ${to - rp} bytes, over ${NOTIFICATION_CONFIG_BYTES_MAX}`);
  const text = to === rp ? "" : UTF8.decode(inp.subarray(rp, to));
  rp = to;
  return text;
}

/**
 * One NotificationBatch frame → its notifications, each tagged `from` = the stream's sender (the
 * wire does not carry it). Throws PeerCodecError on anything malformed.
 */
export function decodeNotificationBatch(frame: Uint8Array, from: number): Notification[] {
  beginRead(frame);
  const end = frame.length;
  const notifications: Notification[] = [];
  try {
    while (rp < end) {
      const tag = readTag(end);
      if (tag === 0x0a) {
        const to = readDelimited(end);
        notifications.push(readNotification(from, to));
        rp = to;
      } else skipField(tag, end);
    }
  } finally {
    inp = EMPTY;
  }
  return notifications;
}
