/**
 * The binary form of a client write that a learner forwards to its leader (the payload of Zab's
 * `request` message), with the ids the client's connection is authenticated as: the leader's prep
 * checks ACLs with them. Decoding a peer's bytes never throws anything but ZkError MARSHALLINGERROR.
 */
import { CREATE_MODE_FLAGS, CREATE_MODES_BY_FLAG } from "../common/znode.js";
import { limits } from "../common/constants.js";
import { ByteReader, ByteWriter } from "../store/bytes.js";
import { readAclList, readId, writeAclList, writeId, writePathAndData } from "../store/txn-codec.js";
import type { Id } from "../store/types.js";
import type { CreateRequest, MultiOpRequest, WriteRequest } from "./requests.js";

/** What learners forward: client writes, plus the creation of a session opened at the learner. */
export type ForwardedRequest = WriteRequest | { op: "createSession"; timeoutMs: number; password: Uint8Array };

const FORMAT_VERSION = 1;
/**
 * `authInfo` is a prefix before the request's own tag, left out when there are no ids; then
 * `zooKeeperChecks`, a tag alone, only on a request that sets it (ZooKeeper-door writes).
 */
const TAG = {
  create: 1,
  delete: 2,
  setData: 3,
  setAcl: 4,
  check: 5,
  multi: 6,
  close: 7,
  createSession: 8,
  authInfo: 9,
  zooKeeperChecks: 10,
  reconfig: 11,
} as const;
const NO_IDS: readonly Id[] = Object.freeze([]);

export function encodeForwardedRequest(request: ForwardedRequest, authInfo: readonly Id[]): Uint8Array {
  const w = new ByteWriter(64);
  w.writeUint8(FORMAT_VERSION);
  if (authInfo.length > 0) {
    w.writeUint8(TAG.authInfo);
    w.writeVarUint(authInfo.length);
    for (const id of authInfo) writeId(w, id);
  }
  if ("zooKeeperChecks" in request && request.zooKeeperChecks === true) w.writeUint8(TAG.zooKeeperChecks);
  writeRequest(w, request);
  return w.finishCopy();
}

export function decodeForwardedRequest(bytes: Uint8Array): { request: ForwardedRequest; authInfo: readonly Id[] } {
  const r = new ByteReader(bytes);
  const version = r.readUint8();
  if (version !== FORMAT_VERSION) throw r.malformed(`unknown forwarded-request format ${version}`);
  let authInfo = NO_IDS;
  let tag = r.readUint8();
  if (tag === TAG.authInfo) {
    const count = r.readVarUintMax(limits.authIdsPerConnectionMax, "forwarded id count");
    const ids: Id[] = [];
    for (let i = 0; i < count; i++) ids.push(readId(r));
    authInfo = ids;
    tag = r.readUint8();
  }
  let zooKeeperChecks = false;
  if (tag === TAG.zooKeeperChecks) {
    zooKeeperChecks = true;
    tag = r.readUint8();
  }
  const request = readTaggedRequest(r, tag, true);
  if (zooKeeperChecks) {
    if (request.op !== "create" && request.op !== "delete" && request.op !== "multi") throw r.malformed(`ZooKeeper checks on a ${request.op}`);
    request.zooKeeperChecks = true;
  }
  r.expectEnd("forwarded request");
  return { request, authInfo };
}

function writeRequest(w: ByteWriter, request: ForwardedRequest | MultiOpRequest): void {
  w.writeUint8(TAG[request.op]);
  switch (request.op) {
    case "create":
      writePathAndData(w, request.path, request.data);
      writeAclList(w, request.acl);
      w.writeUint8(CREATE_MODE_FLAGS[request.mode]);
      w.writeVarUint(request.ttlMs);
      return;
    case "delete":
    case "check":
      w.writeString(request.path);
      w.writeVarInt(request.version);
      return;
    case "setData":
      writePathAndData(w, request.path, request.data);
      w.writeVarInt(request.version);
      return;
    case "setAcl":
      w.writeString(request.path);
      writeAclList(w, request.acl);
      w.writeVarInt(request.version);
      return;
    case "multi":
      w.writeVarUint(request.ops.length);
      for (const op of request.ops) writeRequest(w, op);
      return;
    case "close":
      return;
    case "reconfig":
      for (const text of [request.joining, request.leaving, request.newMembers]) writeNullableString(w, text);
      w.writeInt64(request.fromConfig);
      return;
    case "createSession":
      w.writeVarUint(request.timeoutMs);
      w.writeBytes(request.password);
      return;
  }
}

function readRequest(r: ByteReader, topLevel: boolean): ForwardedRequest {
  return readTaggedRequest(r, r.readUint8(), topLevel);
}

function readTaggedRequest(r: ByteReader, tag: number, topLevel: boolean): ForwardedRequest {
  switch (tag) {
    case TAG.create: {
      const path = r.readString();
      const data = r.readNullableBytes();
      const acl = readAclList(r);
      const mode = CREATE_MODES_BY_FLAG[r.readUint8()];
      if (mode === undefined) throw r.malformed("unknown create mode");
      const request: CreateRequest = { op: "create", path, data, acl, mode, ttlMs: r.readVarUint() };
      return request;
    }
    case TAG.delete:
      return { op: "delete", path: r.readString(), version: r.readVarInt() };
    case TAG.setData:
      return { op: "setData", path: r.readString(), data: r.readNullableBytes(), version: r.readVarInt() };
    case TAG.setAcl:
      if (!topLevel) throw r.malformed("setAcl inside a multi");
      return { op: "setAcl", path: r.readString(), acl: readAclList(r), version: r.readVarInt() };
    case TAG.check:
      if (topLevel) throw r.malformed("check outside a multi");
      return { op: "check", path: r.readString(), version: r.readVarInt() } as unknown as ForwardedRequest;
    case TAG.multi: {
      if (!topLevel) throw r.malformed("multi inside a multi");
      const count = r.readVarUintMax(1_000_000, "multi op count");
      const ops: MultiOpRequest[] = [];
      for (let i = 0; i < count; i++) {
        // readRequest refuses setAcl, multi, close and createSession below the top level.
        ops.push(readRequest(r, false) as MultiOpRequest);
      }
      return { op: "multi", ops };
    }
    case TAG.close:
      if (!topLevel) throw r.malformed("close inside a multi");
      return { op: "close" };
    case TAG.reconfig: {
      if (!topLevel) throw r.malformed("reconfig inside a multi");
      const [joining, leaving, newMembers] = [readNullableString(r), readNullableString(r), readNullableString(r)];
      return { op: "reconfig", joining, leaving, newMembers, fromConfig: r.readInt64() };
    }
    case TAG.createSession:
      if (!topLevel) throw r.malformed("createSession inside a multi");
      return { op: "createSession", timeoutMs: r.readVarUint(), password: r.readBytes() };
    default:
      throw r.malformed(`unknown request tag ${tag}`);
  }
}

function writeNullableString(w: ByteWriter, text: string | null): void {
  w.writeUint8(text === null ? 0 : 1);
  if (text !== null) w.writeString(text);
}

function readNullableString(r: ByteReader): string | null {
  const present = r.readUint8();
  if (present > 1) throw r.malformed("bad presence byte");
  return present === 1 ? r.readString() : null;
}
