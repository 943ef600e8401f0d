/**
 * The server's side of proto/client.proto: ClientFrame bytes → the server's own records
 * (src/replica/requests.ts), and its Reply / WatchEvent / Pong / connect answer → ServerFrame
 * bytes. The protobuf work is done by the code ts-proto generates from the .proto (gen/client.ts);
 * this module only converts between its messages and the server's records — but for the common
 * replies, which hot-reply-frame.ts writes by hand because a profile said they matter.
 *
 * Decoding follows corral's one policy, the peer codec's too (proto/generate.mjs): whatever the
 * generated decoder throws on — a truncated frame, a field number 0, a group or stray end-group tag,
 * a field running past its message, a oneof given two members — is MALFORMED, and so is a frame
 * with no member, a batch inside a batch, and a batch holding any frame that is MALFORMED. Fields
 * it does not read are skipped: unknown numbers (proto3 forward compatibility) and a known number
 * with another wire type, as protobuf's own generated code does. Nothing a client sends throws out
 * of `decodeClientFrame`.
 *
 * A frame that decodes is then checked as a request (the checks every front door makes): a create
 * mode ZooKeeper does not define, a TTL or relative zxid outside 0 ≤ n < 2^53, an unknown addWatch
 * mode or watcher type, a multi or multiRead op with no member, a multiRead op asking for a watch or
 * more than `limits.multiOpsMax` multiRead ops are BADARGUMENTS; an ACL entry without an id is
 * INVALIDACL (a create checks mode, then TTL, then ACL; a multi answers with its first op that fails);
 * a request with no operation is UNIMPLEMENTED. A SaslRequest becomes a `sasl` frame, its token for
 * the door's mechanism. Such a request becomes a `rejected` frame, answered
 * with that code in its place in the session's order. A connect keeps its 64-bit values exact and
 * signed: the session judges them.
 */
import * as wire from "../../gen/client.js";
import { CREATE_MODES_BY_FLAG } from "../common/znode.js";
import { ZkError } from "../common/errors.js";
import { limits } from "../common/constants.js";
import { addWatchModeOf, watcherTypeOf, type WatcherType } from "../common/watch-modes.js";
import { encodeFrameBatch } from "../protocol/frame-batch.js";
import { encodeFrame } from "../protocol/frame-encoder.js";
import { encodeHotReplyFrame } from "./hot-reply-frame.js";
import type { Acl, OpResult, Stat, WatchEvent } from "../store/types.js";
import type { ClientRequest, CreateRequest, MultiOpRequest, MultiReadOpRequest, ReadOpResult, Reply } from "../replica/requests.js";

// -------------------------------------------------------------------------------------------------
// Decoded frames.

/** A frame the generated decoder refused, or one that is not a frame (no member, nested batches). */
export const MALFORMED = Symbol("malformed frame");

/**
 * A ConnectRequest as sent: `lastZxidSeen` and `sessionId` signed, a negative zxid the session's
 * BADARGUMENTS; `readOnlyAllowed` false from a client that predates it, as proto3 defaults it.
 */
export interface ConnectFrame extends wire.ConnectRequest {
  frame: "connect";
}
export interface RequestFrame {
  frame: "request";
  xid: number;
  request: ClientRequest;
}
/** A request that decoded but cannot be run: answered with `err` in its place in the session's order. */
export interface RejectedFrame {
  frame: "rejected";
  xid: number;
  err: number;
}
export interface PingFrame {
  frame: "ping";
}
/** A SASL token (SaslRequest): the session answers it once the door's mechanism has evaluated it. */
export interface SaslFrame {
  frame: "sasl";
  xid: number;
  token: Uint8Array;
}
/** Several frames a client packed into one message (protocol version 2); never nested. */
export interface BatchFrame {
  frame: "batch";
  frames: DecodedClientFrame[];
}

export type DecodedClientFrame = ConnectFrame | RequestFrame | RejectedFrame | PingFrame | SaslFrame;
export type IncomingFrame = DecodedClientFrame | BatchFrame | typeof MALFORMED;

const PING: PingFrame = Object.freeze({ frame: "ping" });
const SAFE_INTEGER_MAX = BigInt(Number.MAX_SAFE_INTEGER);

// -------------------------------------------------------------------------------------------------
// Decoding.

/** ClientFrame bytes → the frame the connection acts on. Never throws. */
export function decodeClientFrame(bytes: Uint8Array): IncomingFrame {
  let decoded: wire.ClientFrame;
  try {
    decoded = wire.ClientFrame.decode(bytes);
  } catch {
    return MALFORMED;
  }
  const member = decoded.frame;
  if (member?.$case !== "batch") return frameOf(member);
  const frames: DecodedClientFrame[] = [];
  for (const inner of member.batch.frames) {
    // Batches do not nest, and one frame that is not a frame spoils its batch.
    const frame = inner.frame?.$case === "batch" ? MALFORMED : frameOf(inner.frame);
    if (frame === MALFORMED) return MALFORMED;
    frames.push(frame);
  }
  return { frame: "batch", frames };
}

function frameOf(member: Exclude<wire.ClientFrame["frame"], { $case: "batch" }>): DecodedClientFrame | typeof MALFORMED {
  switch (member?.$case) {
    case undefined:
      return MALFORMED;
    case "connect":
      return { frame: "connect", ...member.connect };
    case "ping":
      return PING;
    case "request": {
      const { xid, op } = member.request;
      if (op?.$case === "sasl") return { frame: "sasl", xid, token: op.sasl.token };
      try {
        return { frame: "request", xid, request: requestOf(op) };
      } catch (error) {
        if (error instanceof ZkError) return { frame: "rejected", xid, err: error.errno };
        throw error;
      }
    }
  }
}

/** The server's record of a request's op; a ZkError for one that cannot run. */
function requestOf(op: wire.Request["op"]): ClientRequest {
  switch (op?.$case) {
    case undefined:
      throw new ZkError("UNIMPLEMENTED", "request carries no known operation");
    case "create":
      return createOf(op.create);
    case "delete":
      return { op: "delete", path: op.delete.path, version: op.delete.version };
    case "exists":
      return { op: "exists", path: op.exists.path, watch: op.exists.watch };
    case "getData":
      return { op: "getData", path: op.getData.path, watch: op.getData.watch };
    case "setData":
      return { op: "setData", path: op.setData.path, data: op.setData.data, version: op.setData.version };
    case "getChildren":
      return { op: "getChildren", path: op.getChildren.path, watch: op.getChildren.watch };
    case "multi":
      return { op: "multi", ops: op.multi.ops.map(multiOpOf) };
    case "sync":
      return { op: "sync", path: op.sync.path };
    case "setWatches": {
      const w = op.setWatches;
      return {
        op: "setWatches",
        relativeZxid: safeNatural(w.relativeZxid, "relative zxid"),
        dataWatches: w.dataWatches,
        existWatches: w.existWatches,
        childWatches: w.childWatches,
        persistentWatches: w.persistentWatches,
        persistentRecursiveWatches: w.persistentRecursiveWatches,
      };
    }
    case "close":
      return { op: "close" };
    case "getAcl":
      return { op: "getAcl", path: op.getAcl.path };
    case "setAcl":
      return { op: "setAcl", path: op.setAcl.path, acl: aclOf(op.setAcl.acl), version: op.setAcl.version };
    case "addWatch": {
      const mode = addWatchModeOf(op.addWatch.mode);
      if (mode === undefined) throw new ZkError("BADARGUMENTS", `unknown addWatch mode ${op.addWatch.mode}`, op.addWatch.path);
      return { op: "addWatch", path: op.addWatch.path, mode };
    }
    case "removeWatches":
      return { op: "removeWatches", path: op.removeWatches.path, watcherType: watcherTypeFrom(op.removeWatches) };
    case "checkWatches":
      return { op: "checkWatches", path: op.checkWatches.path, watcherType: watcherTypeFrom(op.checkWatches) };
    case "addAuth":
      return { op: "addAuth", scheme: op.addAuth.scheme, auth: op.addAuth.auth };
    case "whoAmI":
      return { op: "whoAmI" };
    case "getEphemerals":
      return { op: "getEphemerals", prefixPath: op.getEphemerals.prefixPath };
    case "getAllChildrenNumber":
      return { op: "getAllChildrenNumber", path: op.getAllChildrenNumber.path };
    case "multiRead":
      if (op.multiRead.ops.length > limits.multiOpsMax) throw new ZkError("BADARGUMENTS", "too many multiRead ops");
      return { op: "multiRead", ops: op.multiRead.ops.map(multiReadOpOf) };
    case "reconfig": {
      const { joining, leaving, newMembers, fromConfig } = op.reconfig;
      return { op: "reconfig", joining: joining ?? null, leaving: leaving ?? null, newMembers: newMembers ?? null, fromConfig };
    }
    case "getMembers":
      return { op: "getMembers" };
    case "sasl":
      // decodeClientFrame makes a sasl frame of it: it is no request of the session's order.
      throw new ZkError("UNIMPLEMENTED", "a sasl token is not a request");
  }
}

function createOf(create: wire.CreateRequest): CreateRequest {
  const mode = CREATE_MODES_BY_FLAG[create.mode];
  if (mode === undefined) throw new ZkError("BADARGUMENTS", `unknown create mode ${create.mode}`, create.path);
  const ttlMs = safeNatural(create.ttlMs, "ttl");
  return { op: "create", path: create.path, data: create.data, acl: aclOf(create.acl), mode, ttlMs };
}

function multiOpOf({ op }: wire.MultiOp): MultiOpRequest {
  switch (op?.$case) {
    case undefined:
      throw new ZkError("BADARGUMENTS", "multi op carries no known operation");
    case "create":
      return createOf(op.create);
    case "delete":
      return { op: "delete", path: op.delete.path, version: op.delete.version };
    case "setData":
      return { op: "setData", path: op.setData.path, data: op.setData.data, version: op.setData.version };
    case "check":
      return { op: "check", path: op.check.path, version: op.check.version };
  }
}

/** A multiRead op; one asking for a watch is BADARGUMENTS (multiRead sets none, as in ZooKeeper). */
function multiReadOpOf({ op }: wire.MultiReadOp): MultiReadOpRequest {
  if (op === undefined) throw new ZkError("BADARGUMENTS", "multiRead op carries no known operation");
  const read = op.$case === "getData" ? op.getData : op.getChildren;
  if (read.watch) throw new ZkError("BADARGUMENTS", "multiRead sets no watches", read.path);
  return { op: op.$case, path: read.path };
}

function aclOf(acl: wire.Acl[]): Acl[] {
  return acl.map(({ perms, id }) => {
    if (id === undefined) throw new ZkError("INVALIDACL", "ACL entry without an id");
    return { perms, id };
  });
}

function watcherTypeFrom(request: { path: string; type: number }): WatcherType {
  const type = watcherTypeOf(request.type);
  if (type === undefined) throw new ZkError("BADARGUMENTS", `unknown watcher type ${request.type}`, request.path);
  return type;
}

/** An int64 that must be a safe non-negative integer (a TTL, a zxid); BADARGUMENTS otherwise. */
function safeNatural(value: bigint, what: string): number {
  if (value < 0n || value > SAFE_INTEGER_MAX) throw new ZkError("BADARGUMENTS", `bad ${what} ${value}`);
  return Number(value);
}

// -------------------------------------------------------------------------------------------------
// Encoding: the server's records as the generated messages, encoded by the generated code (the
// common replies by hand, in hot-reply-frame.ts).

/** A ServerFrame's encoding as a Buffer, as grpc-js writes it. */
function encodeServerFrame(frame: wire.ServerFrame["frame"]): Buffer {
  return encodeFrame(wire.ServerFrame, { frame });
}

const NO_BYTES = new Uint8Array(0);
/** The default of every repeated field a reply leaves empty: one array, never written to (the encoder only reads it). */
const NONE = Object.freeze([]) as never[];

/** An OpResult: proto3 defaults but for `fields`. */
function opResult(fields: Partial<wire.OpResult>): wire.OpResult {
  return { err: 0, path: "", stat: undefined, data: NO_BYTES, children: NONE, ...fields };
}

function statOf(s: Stat): wire.Stat {
  return {
    czxid: BigInt(s.czxid),
    mzxid: BigInt(s.mzxid),
    ctime: BigInt(s.ctime),
    mtime: BigInt(s.mtime),
    version: s.version,
    cversion: s.cversion,
    aversion: s.aversion,
    ephemeralOwner: s.ephemeralOwner,
    dataLength: s.dataLength,
    numChildren: s.numChildren,
    pzxid: BigInt(s.pzxid),
  };
}

/** A multi's OpResult: the path and stat of a create, the stat of a setData, or the error. */
function opResultOf(result: OpResult): wire.OpResult {
  switch (result.type) {
    case "create":
      return opResult({ path: result.path, stat: statOf(result.stat) });
    case "setData":
      return opResult({ stat: statOf(result.stat) });
    case "error":
      return opResult({ err: result.err });
    case "delete":
    case "check":
      return opResult({});
  }
}

/** A multiRead's OpResult: stat and data of a getData, the children of a getChildren, or the error. */
function readOpResultOf(result: ReadOpResult): wire.OpResult {
  switch (result.type) {
    case "getData":
      return opResult({ stat: statOf(result.stat), data: result.data });
    case "getChildren":
      return opResult({ children: result.children });
    case "error":
      return opResult({ err: result.err });
  }
}

/** A Response with proto3 defaults but for its header. */
function emptyResponse(xid: number, zxid: bigint, err: number): wire.Response {
  return {
    xid,
    zxid,
    err,
    path: "",
    stat: undefined,
    data: NO_BYTES,
    children: NONE,
    results: NONE,
    acl: NONE,
    clientInfo: NONE,
    number: 0,
    members: undefined,
    saslToken: NO_BYTES,
  };
}

/** A ServerFrame carrying the Response to request `xid`: the common replies by hand (hot-reply-frame.ts), the rest generated. */
export function encodeResponseFrame(xid: number, reply: Reply): Buffer {
  return encodeHotReplyFrame(xid, reply) ?? encodeGeneratedResponseFrame(xid, reply);
}

/** The same frame by the generated encoder: every reply the hand path leaves, and its test's reference. */
export function encodeGeneratedResponseFrame(xid: number, reply: Reply): Buffer {
  const response = emptyResponse(xid, BigInt(reply.zxid), reply.err);
  const body = reply.body;
  switch (body.kind) {
    case "empty":
      break;
    case "path":
      response.path = body.path;
      break;
    case "create":
      response.path = body.path;
      response.stat = statOf(body.stat);
      break;
    case "stat":
      response.stat = statOf(body.stat);
      break;
    case "data":
      response.stat = statOf(body.stat);
      response.data = body.data;
      break;
    case "children":
      response.stat = statOf(body.stat);
      response.children = body.children;
      break;
    case "acl":
      response.stat = statOf(body.stat);
      response.acl = body.acl;
      break;
    case "multi":
      response.results = body.results.map(opResultOf);
      break;
    case "paths":
      response.children = body.paths;
      break;
    case "number":
      response.number = body.number;
      break;
    case "members":
      response.members = {
        configVersion: BigInt(body.version),
        members: body.members.map((m) => ({
          serverId: m.serverId,
          observer: m.role === "observer",
          clientHost: m.clientAddress?.host ?? "",
          clientPort: m.clientAddress?.port ?? 0,
        })),
      };
      break;
    case "multiRead":
      response.results = body.results.map(readOpResultOf);
      break;
    case "whoAmI":
      response.clientInfo = body.clientInfo;
      break;
  }
  return encodeServerFrame({ $case: "response", response });
}

/** A ServerFrame answering the sasl token of request `xid`: zxid 0, as ZooKeeper answers a sasl packet. */
export function encodeSaslResponseFrame(xid: number, err: number, token: Uint8Array | null): Buffer {
  const response = emptyResponse(xid, 0n, err);
  if (token !== null) response.saslToken = token;
  return encodeServerFrame({ $case: "response", response });
}

/** A ServerFrame carrying a watch event. */
export function encodeEventFrame(event: WatchEvent): Buffer {
  return encodeServerFrame({ $case: "event", event: { type: event.type, path: event.path, zxid: BigInt(event.zxid) } });
}

/** A ServerFrame carrying the Pong to a Ping: the server's last applied zxid. */
export function encodePongFrame(zxid: number): Buffer {
  return encodeServerFrame({ $case: "pong", pong: { zxid: BigInt(zxid) } });
}

/** The answer to a connect: a ConnectResponse with the server's last applied zxid as a number. */
export interface ConnectAnswer extends Omit<wire.ConnectResponse, "lastZxid"> {
  lastZxid: number;
}

/** A ServerFrame carrying the answer to a connect. */
export function encodeConnectResponseFrame(answer: ConnectAnswer): Buffer {
  return encodeServerFrame({ $case: "connect", connect: { ...answer, lastZxid: BigInt(answer.lastZxid) } });
}

/** ServerFrame.batch (field 5) around frames already encoded by the functions above. */
export function encodeServerFrameBatch(frames: readonly Buffer[]): Buffer {
  return encodeFrameBatch(5, frames);
}
