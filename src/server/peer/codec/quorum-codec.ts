/**
 * QuorumBatch frames (proto/peer.proto) to and from the Zab messages of src/consensus/messages.ts.
 * Every proposal, ack and commit passes through here on every server, and write throughput is
 * CPU-bound (bench/README.md, bench/peer-codec.ts), so those three have paths of their own: written
 * inline with the buffer and position in locals, and read by a fast path that expects the shape
 * this encoder writes. The rarer messages go through the general field loops.
 *
 * A QuorumMessage is a oneof: encoding always writes exactly one member; decoding refuses a
 * message with no known member or with two, as well as an unknown enum value.
 */
import type { MemberRole } from "../../../common/membership.js";
import { assert, AssertionError } from "../../../common/assert.js";
import { putVarint32, varint32Size } from "../../../common/varint.js";
import type { LogRecord, QuorumMessage, SessionTouch } from "../../../consensus/messages.js";
import {
  bytesField,
  EMPTY,
  int32Field,
  nested,
  PeerCodecError,
  ProtoReader,
  putBytesField,
  putHeader,
  putInt32Field,
  putSfixed64Field,
  putUint32Field,
  putUint53,
  putUint53Field,
  sfixed64Field,
  uint32Field,
  uint53Field,
} from "./protobuf-wire.js";

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
  treeDigest: 25,
} as const satisfies Record<QuorumMessage["type"], number>;

// -------------------------------------------------------------------------------------------------
// Sizes.

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
      return (
        uint32Field(m.sid) +
        (m.role === "observer" ? 2 : 0) +
        uint53Field(m.acceptedEpoch) +
        uint53Field(m.lastZxid) +
        uint32Field(m.protocolVersion) +
        (m.repairing === true ? 2 : 0)
      );
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
    case "treeDigest":
      return uint53Field(m.zxid) + bytesField(digestBytes(m.digest));
    default:
      throw new AssertionError(`unknown quorum message ${JSON.stringify((m as { type?: unknown }).type)}`);
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

/** Bytes `m` adds to a QuorumBatch frame, given its body size: the batch entry with all headers. */
export function quorumEntrySize(m: QuorumMessage, bodySize: number): number {
  const wrapper = memberTagBytes(m.type) + varint32Size(bodySize) + bodySize;
  return 1 + varint32Size(wrapper) + wrapper;
}

// -------------------------------------------------------------------------------------------------
// Writing.

/** The body of `m`'s oneof member at `p` of `o`, for every message but the three written inline. */
function putQuorumBody(o: Uint8Array, p: number, m: QuorumMessage): number {
  switch (m.type) {
    case "proposal":
    case "inform":
      p = putUint53Field(o, p, 0x08, m.zxid);
      return putBytesField(o, p, 0x12, m.record);
    case "ack":
    case "commit":
    case "trunc":
    case "newLeader":
      return putUint53Field(o, p, 0x08, m.zxid);
    case "request":
      p = putSfixed64Field(o, p, 0x09, m.sessionId);
      p = putInt32Field(o, p, 0x10, m.cxid);
      return putBytesField(o, p, 0x1a, m.request);
    case "ping":
      for (const t of m.touches) {
        p = putHeader(o, p, 0x0a, touchSize(t));
        p = putSfixed64Field(o, p, 0x09, t.sessionId);
        p = putUint32Field(o, p, 0x10, t.timeoutMs);
      }
      return p;
    case "sync":
      return putUint53Field(o, p, 0x08, m.syncId);
    case "syncDone":
      p = putUint53Field(o, p, 0x08, m.syncId);
      return putUint53Field(o, p, 0x10, m.zxid);
    case "revalidate":
      p = putSfixed64Field(o, p, 0x09, m.sessionId);
      return putUint32Field(o, p, 0x10, m.timeoutMs);
    case "revalidated":
      p = putSfixed64Field(o, p, 0x09, m.sessionId);
      return m.valid ? putUint32Field(o, p, 0x10, 1) : p;
    case "learnerInfo":
      p = putUint32Field(o, p, 0x08, m.sid);
      if (m.role === "observer") p = putUint32Field(o, p, 0x10, 1);
      p = putUint53Field(o, p, 0x18, m.acceptedEpoch);
      p = putUint53Field(o, p, 0x20, m.lastZxid);
      p = putUint32Field(o, p, 0x28, m.protocolVersion);
      return m.repairing === true ? putUint32Field(o, p, 0x30, 1) : p;
    case "leaderInfo":
      p = putUint53Field(o, p, 0x08, m.newEpoch);
      return putUint32Field(o, p, 0x10, m.protocolVersion);
    case "ackEpoch":
      p = putUint53Field(o, p, 0x08, m.currentEpoch);
      return putUint53Field(o, p, 0x10, m.lastZxid);
    case "diff":
      return putUint53Field(o, p, 0x08, m.lastZxid);
    case "snap":
      p = putUint53Field(o, p, 0x08, m.zxid);
      return putBytesField(o, p, 0x12, m.snapshot);
    case "syncTxns":
      for (const r of m.txns) {
        p = putHeader(o, p, 0x0a, logRecordSize(r));
        p = putUint53Field(o, p, 0x08, r.zxid);
        p = putBytesField(o, p, 0x12, r.record);
      }
      return m.committed ? putUint32Field(o, p, 0x10, 1) : p;
    case "upToDate":
      return p;
    case "treeDigest":
      p = putUint53Field(o, p, 0x08, m.zxid);
      return putBytesField(o, p, 0x12, digestBytes(m.digest));
  }
}

/** A tree digest's 16 hex digits as its 8 bytes on the wire (asserted well-formed: our own). */
function digestBytes(digest: string): Uint8Array {
  if (!/^[0-9a-f]{16}$/.test(digest)) assert(false, `tree digest ${JSON.stringify(digest)}`);
  return Buffer.from(digest, "hex");
}

/**
 * messages[start, end) → one QuorumBatch frame. `bodySizes[i]`, when given, must be
 * `quorumBodySize(messages[i])` (the transport computes it once, when a message is queued). A
 * batch is sized once and written into one exactly-sized buffer.
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
        p = putBytesField(o, p, 0x12, m.record);
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
        p = putQuorumBody(o, p, m);
    }
  }
  if (p !== total) assert(false, `quorum batch sized ${total} but wrote ${p}`);
  return o;
}

// -------------------------------------------------------------------------------------------------
// Reading.

/** The body of a message carrying only `zxid = 1` (Ack, Commit, Trunc, NewLeader, Diff). */
function readZxidOnly(r: ProtoReader, end: number): number {
  let zxid = 0;
  while (r.pos < end) {
    const tag = r.tag(end);
    if (tag === 0x08) zxid = r.uint53(end);
    else r.skip(tag, end);
  }
  return zxid;
}

/**
 * A Proposal or Inform body: zxid = 1, record = 2. The same fields as a LogRecord, but written out
 * rather than built on readLogRecord: every proposal comes through here, and the message made
 * directly saves an object per proposal (bench/peer-codec.ts).
 */
function readProposal(r: ProtoReader, end: number, type: "proposal" | "inform"): QuorumMessage {
  let zxid = 0;
  let record: Uint8Array = EMPTY;
  while (r.pos < end) {
    const tag = r.tag(end);
    if (tag === 0x08) zxid = r.uint53(end);
    else if (tag === 0x12) record = r.bytesView(end);
    else r.skip(tag, end);
  }
  return type === "proposal" ? { type: "proposal", zxid, record } : { type: "inform", zxid, record };
}

/** A LogRecord, or a Snap body (zxid = 1, snapshot = 2): zxid = 1, record = 2. */
function readLogRecord(r: ProtoReader, end: number): LogRecord {
  let zxid = 0;
  let record: Uint8Array = EMPTY;
  while (r.pos < end) {
    const tag = r.tag(end);
    if (tag === 0x08) zxid = r.uint53(end);
    else if (tag === 0x12) record = r.bytesView(end);
    else r.skip(tag, end);
  }
  return { zxid, record };
}

function readTouch(r: ProtoReader, end: number): SessionTouch {
  let sessionId = 0n;
  let timeoutMs = 0;
  while (r.pos < end) {
    const tag = r.tag(end);
    if (tag === 0x09) sessionId = r.sfixed64(end);
    else if (tag === 0x10) timeoutMs = r.varint32(end);
    else r.skip(tag, end);
  }
  return { sessionId, timeoutMs };
}

/** Decodes the member body in [r.pos, end) of the oneof member numbered `field`. */
function readQuorumBody(r: ProtoReader, field: number, end: number): QuorumMessage {
  switch (field) {
    case 1:
      return readProposal(r, end, "proposal");
    case 4:
      return readProposal(r, end, "inform");
    case 2:
      return { type: "ack", zxid: readZxidOnly(r, end) };
    case 3:
      return { type: "commit", zxid: readZxidOnly(r, end) };
    case 5: {
      let sessionId = 0n;
      let cxid = 0;
      let request: Uint8Array = EMPTY;
      while (r.pos < end) {
        const tag = r.tag(end);
        if (tag === 0x09) sessionId = r.sfixed64(end);
        else if (tag === 0x10) cxid = r.varint32(end) | 0;
        else if (tag === 0x1a) request = r.bytesView(end);
        else r.skip(tag, end);
      }
      return { type: "request", sessionId, cxid, request };
    }
    case 6: {
      const touches: SessionTouch[] = [];
      while (r.pos < end) {
        const tag = r.tag(end);
        if (tag === 0x0a) touches.push(readTouch(r, r.delimited(end)));
        else r.skip(tag, end);
      }
      return { type: "ping", touches };
    }
    case 7: {
      let syncId = 0;
      while (r.pos < end) {
        const tag = r.tag(end);
        if (tag === 0x08) syncId = r.uint53(end);
        else r.skip(tag, end);
      }
      return { type: "sync", syncId };
    }
    case 8: {
      let syncId = 0;
      let zxid = 0;
      while (r.pos < end) {
        const tag = r.tag(end);
        if (tag === 0x08) syncId = r.uint53(end);
        else if (tag === 0x10) zxid = r.uint53(end);
        else r.skip(tag, end);
      }
      return { type: "syncDone", syncId, zxid };
    }
    case 9:
    case 10: {
      let sessionId = 0n;
      let second = 0;
      while (r.pos < end) {
        const tag = r.tag(end);
        if (tag === 0x09) sessionId = r.sfixed64(end);
        else if (tag === 0x10) second = r.varint32(end);
        else r.skip(tag, end);
      }
      return field === 9 ? { type: "revalidate", sessionId, timeoutMs: second } : { type: "revalidated", sessionId, valid: second !== 0 };
    }
    case 16:
      return readLearnerInfo(r, end);
    case 17: {
      let newEpoch = 0;
      let protocolVersion = 0;
      while (r.pos < end) {
        const tag = r.tag(end);
        if (tag === 0x08) newEpoch = r.uint53(end);
        else if (tag === 0x10) protocolVersion = r.varint32(end);
        else r.skip(tag, end);
      }
      return { type: "leaderInfo", newEpoch, protocolVersion };
    }
    case 18: {
      let currentEpoch = 0;
      let lastZxid = 0;
      while (r.pos < end) {
        const tag = r.tag(end);
        if (tag === 0x08) currentEpoch = r.uint53(end);
        else if (tag === 0x10) lastZxid = r.uint53(end);
        else r.skip(tag, end);
      }
      return { type: "ackEpoch", currentEpoch, lastZxid };
    }
    case 19:
      return { type: "diff", lastZxid: readZxidOnly(r, end) };
    case 20:
      return { type: "trunc", zxid: readZxidOnly(r, end) };
    case 21: {
      const { zxid, record } = readLogRecord(r, end);
      return { type: "snap", zxid, snapshot: record };
    }
    case 22: {
      const txns: LogRecord[] = [];
      let committed = false;
      while (r.pos < end) {
        const tag = r.tag(end);
        if (tag === 0x0a) txns.push(readLogRecord(r, r.delimited(end)));
        else if (tag === 0x10) committed = r.bool(end);
        else r.skip(tag, end);
      }
      return { type: "syncTxns", txns, committed };
    }
    case 23:
      return { type: "newLeader", zxid: readZxidOnly(r, end) };
    case 24:
      while (r.pos < end) r.skip(r.tag(end), end);
      return { type: "upToDate" };
    case 25: {
      let zxid = 0;
      let digest: string | undefined;
      while (r.pos < end) {
        const tag = r.tag(end);
        if (tag === 0x08) zxid = r.uint53(end);
        else if (tag === 0x12) {
          const bytes = r.bytesView(end);
          if (bytes.length !== 8) throw new PeerCodecError(`tree digest of ${bytes.length} bytes`);
          digest = Buffer.from(bytes.buffer, bytes.byteOffset, 8).toString("hex");
        } else r.skip(tag, end);
      }
      if (digest === undefined) throw new PeerCodecError("tree digest without its digest");
      return { type: "treeDigest", zxid, digest };
    }
    default:
      throw new PeerCodecError(`quorum message member ${field}`);
  }
}

function readLearnerInfo(r: ProtoReader, end: number): QuorumMessage {
  let sid = 0;
  let role: MemberRole = "participant";
  let acceptedEpoch = 0;
  let lastZxid = 0;
  let protocolVersion = 0;
  let repairing = false;
  while (r.pos < end) {
    const tag = r.tag(end);
    switch (tag) {
      case 0x08:
        sid = r.varint32(end);
        break;
      case 0x30:
        repairing = r.bool(end);
        break;
      case 0x10: {
        const value = r.varint32(end);
        if (value > 1) throw new PeerCodecError(`learner role ${value}`);
        role = value === 1 ? "observer" : "participant";
        break;
      }
      case 0x18:
        acceptedEpoch = r.uint53(end);
        break;
      case 0x20:
        lastZxid = r.uint53(end);
        break;
      case 0x28:
        protocolVersion = r.varint32(end);
        break;
      default:
        r.skip(tag, end);
    }
  }
  return repairing
    ? { type: "learnerInfo", sid, role, acceptedEpoch, lastZxid, protocolVersion, repairing }
    : { type: "learnerInfo", sid, role, acceptedEpoch, lastZxid, protocolVersion };
}

function readQuorumMessage(r: ProtoReader, end: number): QuorumMessage {
  // Fast path: a proposal, ack or commit whose body fills the entry (how the codec writes them).
  const start = r.pos;
  if (start < end) {
    const tag = r.bytes[start]!;
    if (tag === 0x0a || tag === 0x12 || tag === 0x1a) {
      r.pos = start + 1;
      const length = r.varint32(end);
      if (r.pos + length === end) {
        if (tag === 0x0a) return readProposal(r, end, "proposal");
        const zxid = readZxidOnly(r, end);
        return tag === 0x12 ? { type: "ack", zxid } : { type: "commit", zxid };
      }
      r.pos = start;
    }
  }
  let message: QuorumMessage | undefined;
  while (r.pos < end) {
    const tag = r.tag(end);
    const field = tag >>> 3;
    if ((tag & 7) === 2 && ((field >= 1 && field <= 10) || (field >= 16 && field <= 25))) {
      if (message !== undefined) throw new PeerCodecError("a quorum message with two members");
      const to = r.delimited(end);
      message = readQuorumBody(r, field, to);
      r.pos = to;
    } else r.skip(tag, end);
  }
  if (message === undefined) throw new PeerCodecError("a quorum message with no known member");
  return message;
}

/** One QuorumBatch frame → its messages, in order. Throws PeerCodecError on anything malformed. */
export function decodeQuorumBatch(frame: Uint8Array): QuorumMessage[] {
  const r = new ProtoReader(frame);
  const end = frame.length;
  const messages: QuorumMessage[] = [];
  while (r.pos < end) {
    const tag = r.tag(end);
    if (tag === 0x0a) {
      const to = r.delimited(end);
      messages.push(readQuorumMessage(r, to));
      r.pos = to;
    } else r.skip(tag, end);
  }
  return messages;
}
