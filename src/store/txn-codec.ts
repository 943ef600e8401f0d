/**
 * Binary codec for txns (the log record and the proposal payload).
 *
 * Layout, format version 1 (varint = LEB128, zvarint = zigzag varint):
 *   u8 version | header: int64 sessionId (fixed, big-endian), zvarint cxid, varint zxid, zvarint timeMs
 *   | body: i8 type (ZooKeeper's OpCode) then its fields:
 *     create (1)          string path, bytes data, acl list, owner, zvarint parentCversion
 *     delete (2)          string path
 *     setData (5)         string path, bytes data, zvarint version
 *     setAcl (7)          string path, acl list, zvarint aversion
 *     check (13)          string path, zvarint version
 *     multi (14)          varint count, then per op: i8 type + fields (create/delete/setData/check/error)
 *     createSession (-10) varint timeoutMs, bytes password
 *     closeSession (-11)  nothing
 *     error (-1)          zvarint err
 *     reconfig (16)       bytes data (the new configuration's text)
 *   string/bytes = varint length + bytes; acl list = varint 0 for OPEN_ACL_UNSAFE (the common case,
 *   decoded as that shared frozen array), else varint (count + 1) then per entry zvarint perms,
 *   string scheme, string id; owner = u8 0 for persistent, or u8 1 + int64 (fixed).
 *
 * Decoding malformed bytes throws ZkError("MARSHALLINGERROR"), never anything else.
 */
import { assert } from "../common/assert.js";
import { ZkError } from "../common/errors.js";
import { ByteReader, ByteWriter } from "./bytes.js";
import type { Acl, CheckTxn, CreateTxn, DeleteTxn, ErrorTxn, Id, MultiTxn, SetDataTxn, Txn, TxnBody, TxnHeader } from "./types.js";
import { OPEN_ACL_UNSAFE, Perms, PERSISTENT_OWNER } from "./types.js";

export const TXN_FORMAT_VERSION = 1;
const INT32_MAX = 0x7fffffff;

/** ZooKeeper's OpCode numbers, used as the body tag. */
export const TxnOpCode = {
  create: 1,
  delete: 2,
  setData: 5,
  setAcl: 7,
  check: 13,
  multi: 14,
  createSession: -10,
  closeSession: -11,
  error: -1,
  reconfig: 16,
} as const satisfies Record<TxnBody["type"], number>;

type MultiOp = MultiTxn["ops"][number];

/** Reused between calls; encodeTxn copies out of it, so callers never share it. */
const scratch = new ByteWriter(4096);
const SCRATCH_KEEP_BYTES = 4 * 1024 * 1024;

/**
 * Encoded txns are short-lived (a log write, a proposal message): small ones are carved out of a
 * shared slab, as Node's Buffer pool does, instead of each paying for its own ArrayBuffer (an
 * off-heap allocation costs several times the encoding). A slab is freed once no encoding in it is
 * referenced, so keeping many small encodings for long keeps their slabs too.
 */
const SLAB_BYTES = 64 * 1024;
const SLAB_ITEM_BYTES_MAX = 4 * 1024;
let slab = new Uint8Array(SLAB_BYTES);
let slabUsed = 0;

/**
 * The txn's bytes. Small encodings are views into a shared slab: read them through
 * byteOffset/byteLength (as any Uint8Array), never through `.buffer` alone. Never shared between calls.
 */
export function encodeTxn(txn: Txn): Uint8Array {
  scratch.reset();
  writeTxn(scratch, txn);
  const length = scratch.length;
  let bytes: Uint8Array;
  if (length > SLAB_ITEM_BYTES_MAX) {
    bytes = scratch.finishCopy();
    if (scratch.capacity > SCRATCH_KEEP_BYTES) scratch.shrinkTo(4096);
  } else {
    if (slabUsed + length > SLAB_BYTES) {
      slab = new Uint8Array(SLAB_BYTES);
      slabUsed = 0;
    }
    bytes = slab.subarray(slabUsed, slabUsed + length);
    bytes.set(scratch.finish());
    slabUsed = (slabUsed + length + 7) & ~7;
  }
  scratch.reset();
  return bytes;
}

/**
 * Decodes one txn that fills `bytes` exactly. With `shareInput`, data and password fields are views
 * into `bytes` (no copy): only for inputs nobody will reuse or mutate.
 */
export function decodeTxn(bytes: Uint8Array, shareInput = false): Txn {
  const reader = new ByteReader(bytes);
  const txn = readTxn(reader, shareInput);
  reader.expectEnd("txn");
  return txn;
}

/** Appends one txn to a writer (for batches; the reader side is `readTxn`). */
export function writeTxn(w: ByteWriter, txn: Txn): void {
  const header = txn.header;
  w.writeUint8(TXN_FORMAT_VERSION);
  w.writeInt64(header.sessionId);
  w.writeVarInt32(header.cxid);
  w.writeVarUint(header.zxid);
  w.writeVarInt(header.timeMs);
  writeBody(w, txn.body);
}

/** Reads one txn from the reader's position (leaves the reader after it). */
export function readTxn(r: ByteReader, shareInput = false): Txn {
  const version = r.readUint8();
  if (version !== TXN_FORMAT_VERSION) throw r.malformed(`unknown txn format version ${version}`);
  const sessionId = r.readInt64();
  const cxid = r.readVarInt32();
  const zxid = r.readVarUint();
  const timeMs = r.readVarInt();
  const header: TxnHeader = { sessionId, cxid, zxid, timeMs };
  const type = r.readInt8();
  let body: TxnBody;
  switch (type) {
    case TxnOpCode.multi: {
      // Every op takes at least two bytes: a count beyond that is garbage, caught before allocating.
      const count = r.readVarUintMax(r.remaining / 2, "multi op count");
      const ops: MultiOp[] = [];
      for (let i = 0; i < count; i++) ops.push(readOp(r, r.readInt8(), shareInput));
      body = { type: "multi", ops };
      break;
    }
    case TxnOpCode.setAcl: {
      const path = r.readString();
      const acl = readAclList(r);
      body = { type: "setAcl", path, acl, aversion: r.readVarInt32() };
      break;
    }
    case TxnOpCode.createSession: {
      const timeoutMs = r.readVarUintMax(INT32_MAX, "session timeout");
      body = { type: "createSession", timeoutMs, password: shareInput ? r.readBytesView() : r.readBytes() };
      break;
    }
    case TxnOpCode.closeSession:
      body = { type: "closeSession" };
      break;
    case TxnOpCode.reconfig:
      body = { type: "reconfig", data: shareInput ? r.readBytesView() : r.readBytes() };
      break;
    default:
      body = readOp(r, type, shareInput);
  }
  return { header, body };
}

/** A body, or one op of a multi's: its type as an i8 (the negative codes through `& 0xff`), then its fields. */
function writeBody(w: ByteWriter, body: TxnBody): void {
  w.writeUint8(TxnOpCode[body.type] & 0xff);
  switch (body.type) {
    case "create":
      writePathAndData(w, body.path, body.data);
      writeAclList(w, body.acl);
      if (body.ephemeralOwner === PERSISTENT_OWNER) {
        w.writeUint8(0);
      } else {
        w.writeUint8(1);
        w.writeInt64(body.ephemeralOwner);
      }
      w.writeVarInt32(body.parentCversion);
      return;
    case "delete":
      w.writeString(body.path);
      return;
    case "setData":
      writePathAndData(w, body.path, body.data);
      w.writeVarInt32(body.version);
      return;
    case "setAcl":
      w.writeString(body.path);
      writeAclList(w, body.acl);
      w.writeVarInt32(body.aversion);
      return;
    case "check":
      w.writeString(body.path);
      w.writeVarInt32(body.version);
      return;
    case "multi":
      w.writeVarUint(body.ops.length);
      for (const op of body.ops) writeBody(w, op);
      return;
    case "createSession":
      if (!(body.timeoutMs >= 0 && body.timeoutMs <= INT32_MAX)) assert(false, `session timeout ${body.timeoutMs}`);
      w.writeVarUint(body.timeoutMs);
      w.writeBytes(body.password);
      return;
    case "closeSession":
      return;
    case "reconfig":
      w.writeBytes(body.data);
      return;
    case "error":
      w.writeVarInt32(body.err);
      return;
  }
}

function readOp(r: ByteReader, type: number, shareInput: boolean): MultiOp {
  switch (type) {
    case TxnOpCode.create: {
      const path = r.readString();
      const data = r.readNullableBytes(shareInput);
      const acl = readAclList(r);
      const ownerTag = r.readUint8();
      let ephemeralOwner: bigint;
      if (ownerTag === 0) ephemeralOwner = PERSISTENT_OWNER;
      else if (ownerTag === 1) ephemeralOwner = r.readInt64();
      else throw r.malformed(`owner tag ${ownerTag}`);
      const create: CreateTxn = { type: "create", path, data, acl, ephemeralOwner, parentCversion: r.readVarInt32() };
      return create;
    }
    case TxnOpCode.delete: {
      const del: DeleteTxn = { type: "delete", path: r.readString() };
      return del;
    }
    case TxnOpCode.setData: {
      const path = r.readString();
      const data = r.readNullableBytes(shareInput);
      const setData: SetDataTxn = { type: "setData", path, data, version: r.readVarInt32() };
      return setData;
    }
    case TxnOpCode.check: {
      const path = r.readString();
      const check: CheckTxn = { type: "check", path, version: r.readVarInt32() };
      return check;
    }
    case TxnOpCode.error: {
      const error: ErrorTxn = { type: "error", err: r.readVarInt32() };
      return error;
    }
    default:
      throw r.malformed(`unknown or misplaced txn type ${type}`);
  }
}

export function isOpenAclUnsafe(acl: readonly Acl[]): boolean {
  if (acl === OPEN_ACL_UNSAFE) return true;
  if (acl.length !== 1) return false;
  const only = acl[0]!;
  return only.perms === Perms.ALL && only.id.scheme === "world" && only.id.id === "anyone";
}

/** An ACL list: varint 0 for OPEN_ACL_UNSAFE, else varint count + 1 and the entries. */
export function writeAclList(w: ByteWriter, acl: readonly Acl[]): void {
  if (isOpenAclUnsafe(acl)) {
    w.writeUint8(0);
    return;
  }
  w.writeVarUint(acl.length + 1);
  for (const entry of acl) {
    w.writeVarInt32(entry.perms);
    writeId(w, entry.id);
  }
}

export function readAclList(r: ByteReader): Acl[] {
  const tag = r.readVarUint();
  if (tag === 0) return OPEN_ACL_UNSAFE as Acl[];
  // Each entry takes at least three bytes.
  if (tag - 1 > r.remaining / 3) throw r.malformed(`ACL count ${tag - 1} beyond the input`);
  const acl: Acl[] = [];
  for (let i = 1; i < tag; i++) {
    const perms = r.readVarInt32();
    acl.push({ perms, id: readId(r) });
  }
  return acl;
}

/** An id (an ACL entry's, or one a connection is authenticated as): string scheme, string id. */
export function writeId(w: ByteWriter, id: Id): void {
  w.writeString(id.scheme);
  w.writeString(id.id);
}

export function readId(r: ByteReader): Id {
  const scheme = r.readString();
  return { scheme, id: r.readString() };
}

/**
 * An op's path then its data, in every op that carries data (txns and forwarded requests alike).
 * Readers read the two inline: returning both would allocate per op.
 */
export function writePathAndData(w: ByteWriter, path: string, data: Uint8Array): void {
  w.writeString(path);
  w.writeNullableBytes(data);
}

/** For callers that catch codec failures among others. */
export function isMarshallingError(error: unknown): error is ZkError {
  return error instanceof ZkError && error.code === "MARSHALLINGERROR";
}
