/**
 * Conversions between proto/client.proto messages as @grpc/proto-loader shapes them and the
 * server's ZooKeeper-shaped records. Decoding a client's request never throws anything but a
 * ZkError (BADARGUMENTS / INVALIDACL).
 *
 * The server no longer runs these: its gRPC front door uses the hand-written codec in
 * client-frame-codec.ts. They stay as the reference model that codec is checked against
 * (proto-loader + these conversions, in test/unit/client-frame-codec.test.ts).
 */
import { CREATE_MODES_BY_FLAG } from "../common/znode.js";
import { limits } from "../common/constants.js";
import { ZkError } from "../common/errors.js";
import { addWatchModeOf, watcherTypeOf, type WatcherType } from "../common/watch-modes.js";
import type * as wire from "../protocol/client-wire.js";
import type { Acl, OpResult, Stat, WatchEvent } from "../store/types.js";
import type { ClientRequest, MultiOpRequest, MultiReadOpRequest, ReadOpResult, Reply } from "../replica/requests.js";

const EMPTY = new Uint8Array(0);

export function decodeRequest(request: wire.Request): ClientRequest {
  switch (request.op) {
    case "create":
      return decodeCreate(request.create);
    case "delete":
      return { op: "delete", path: request.delete.path, version: request.delete.version };
    case "exists":
      return { op: "exists", path: request.exists.path, watch: request.exists.watch };
    case "getData":
      return { op: "getData", path: request.getData.path, watch: request.getData.watch };
    case "setData":
      return { op: "setData", path: request.setData.path, data: request.setData.data ?? EMPTY, version: request.setData.version };
    case "getChildren":
      return { op: "getChildren", path: request.getChildren.path, watch: request.getChildren.watch };
    case "multi":
      return { op: "multi", ops: request.multi.ops.map(decodeMultiOp) };
    case "sync":
      return { op: "sync", path: request.sync.path };
    case "setWatches":
      return {
        op: "setWatches",
        relativeZxid: decodeZxid(request.setWatches.relativeZxid),
        dataWatches: request.setWatches.dataWatches,
        existWatches: request.setWatches.existWatches,
        childWatches: request.setWatches.childWatches,
        persistentWatches: request.setWatches.persistentWatches,
        persistentRecursiveWatches: request.setWatches.persistentRecursiveWatches,
      };
    case "close":
      return { op: "close" };
    case "getAcl":
      return { op: "getAcl", path: request.getAcl.path };
    case "setAcl":
      return { op: "setAcl", path: request.setAcl.path, acl: decodeAcl(request.setAcl.acl), version: request.setAcl.version };
    case "getEphemerals":
      return { op: "getEphemerals", prefixPath: request.getEphemerals.prefixPath };
    case "getAllChildrenNumber":
      return { op: "getAllChildrenNumber", path: request.getAllChildrenNumber.path };
    case "multiRead":
      if (request.multiRead.ops.length > limits.multiOpsMax) throw new ZkError("BADARGUMENTS", "too many multiRead ops");
      return { op: "multiRead", ops: request.multiRead.ops.map(decodeMultiReadOp) };
    case "addAuth":
      return { op: "addAuth", scheme: request.addAuth.scheme, auth: request.addAuth.auth ?? EMPTY };
    case "whoAmI":
      return { op: "whoAmI" };
    case "addWatch": {
      const mode = addWatchModeOf(request.addWatch.mode);
      if (mode === undefined) throw new ZkError("BADARGUMENTS", `unknown addWatch mode ${request.addWatch.mode}`, request.addWatch.path);
      return { op: "addWatch", path: request.addWatch.path, mode };
    }
    case "removeWatches":
      return { op: "removeWatches", path: request.removeWatches.path, watcherType: decodeWatcherType(request.removeWatches) };
    case "checkWatches":
      return { op: "checkWatches", path: request.checkWatches.path, watcherType: decodeWatcherType(request.checkWatches) };
    default:
      throw new ZkError("UNIMPLEMENTED", "request carries no known operation");
  }
}

function decodeCreate(create: wire.CreateRequest): ClientRequest & { op: "create" } {
  const mode = CREATE_MODES_BY_FLAG[create.mode];
  if (mode === undefined) throw new ZkError("BADARGUMENTS", `unknown create mode ${create.mode}`, create.path);
  const ttlMs = Number(create.ttlMs);
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 0) throw new ZkError("BADARGUMENTS", "bad ttl", create.path);
  return { op: "create", path: create.path, data: create.data ?? EMPTY, acl: decodeAcl(create.acl), mode, ttlMs };
}

function decodeWatcherType(request: { path: string; type: number }): WatcherType {
  const type = watcherTypeOf(request.type);
  if (type === undefined) throw new ZkError("BADARGUMENTS", `unknown watcher type ${request.type}`, request.path);
  return type;
}

function decodeMultiOp(op: wire.MultiOp): MultiOpRequest {
  switch (op.op) {
    case "create":
      return decodeCreate(op.create);
    case "delete":
      return { op: "delete", path: op.delete.path, version: op.delete.version };
    case "setData":
      return { op: "setData", path: op.setData.path, data: op.setData.data ?? EMPTY, version: op.setData.version };
    case "check":
      return { op: "check", path: op.check.path, version: op.check.version };
    default:
      throw new ZkError("BADARGUMENTS", "multi op carries no known operation");
  }
}

function decodeMultiReadOp(op: wire.MultiReadOp): MultiReadOpRequest {
  const read = op.op === "getData" ? op.getData : op.op === "getChildren" ? op.getChildren : undefined;
  if (read === undefined) throw new ZkError("BADARGUMENTS", "multiRead op carries no known operation");
  if (read.watch) throw new ZkError("BADARGUMENTS", "multiRead sets no watches", read.path);
  return { op: op.op, path: read.path };
}

function decodeAcl(acl: wire.WireAcl[]): Acl[] {
  return acl.map((entry) => {
    if (!entry.id) throw new ZkError("INVALIDACL", "ACL entry without an id");
    return { perms: entry.perms, id: { scheme: entry.id.scheme, id: entry.id.id } };
  });
}

/** A zxid from the wire; garbage is BADARGUMENTS. */
export function decodeZxid(value: wire.Int64): number {
  const zxid = Number(value);
  if (!Number.isSafeInteger(zxid) || zxid < 0) throw new ZkError("BADARGUMENTS", `bad zxid ${value}`);
  return zxid;
}

/**
 * A client's last seen zxid, kept exact at any 64-bit size: a zxid beyond what this server has is
 * not garbage but a sign that the server is behind, which the caller answers as such.
 */
export function decodeLastZxidSeen(value: wire.Int64): bigint {
  let zxid: bigint;
  try {
    zxid = BigInt(value);
  } catch {
    throw new ZkError("BADARGUMENTS", `bad zxid ${value}`);
  }
  if (zxid < 0n) throw new ZkError("BADARGUMENTS", `bad zxid ${value}`);
  return zxid;
}

/** A session id from the wire (signed 64-bit); garbage is BADARGUMENTS. */
export function decodeSessionId(value: wire.Int64): bigint {
  try {
    return BigInt.asIntN(64, BigInt(value));
  } catch {
    throw new ZkError("BADARGUMENTS", `bad session id ${value}`);
  }
}

export function encodeStat(stat: Stat): wire.Encodable<wire.WireStat> {
  return {
    czxid: String(stat.czxid),
    mzxid: String(stat.mzxid),
    ctime: String(stat.ctime),
    mtime: String(stat.mtime),
    version: stat.version,
    cversion: stat.cversion,
    aversion: stat.aversion,
    ephemeralOwner: stat.ephemeralOwner.toString(),
    dataLength: stat.dataLength,
    numChildren: stat.numChildren,
    pzxid: String(stat.pzxid),
  };
}

function encodeReadOpResult(result: ReadOpResult): wire.Encodable<wire.OpResult> {
  switch (result.type) {
    case "getData":
      return { err: 0, stat: encodeStat(result.stat), data: result.data };
    case "getChildren":
      return { err: 0, children: result.children };
    case "error":
      return { err: result.err };
  }
}

function encodeOpResult(result: OpResult): wire.Encodable<wire.OpResult> {
  switch (result.type) {
    case "create":
      return { err: 0, path: result.path, stat: encodeStat(result.stat) };
    case "setData":
      return { err: 0, stat: encodeStat(result.stat) };
    case "error":
      return { err: result.err };
    case "delete":
    case "check":
      return { err: 0 };
  }
}

export function encodeReply(xid: number, reply: Reply): wire.Encodable<wire.Response> {
  const response: wire.Encodable<wire.Response> = { xid, zxid: String(reply.zxid), err: reply.err };
  const body = reply.body;
  switch (body.kind) {
    case "empty":
      break;
    case "path":
      response.path = body.path;
      break;
    case "create":
      response.path = body.path;
      response.stat = encodeStat(body.stat);
      break;
    case "stat":
      response.stat = encodeStat(body.stat);
      break;
    case "data":
      response.data = body.data;
      response.stat = encodeStat(body.stat);
      break;
    case "children":
      response.children = body.children;
      response.stat = encodeStat(body.stat);
      break;
    case "acl":
      response.acl = body.acl.map((entry) => ({ perms: entry.perms, id: { scheme: entry.id.scheme, id: entry.id.id } }));
      response.stat = encodeStat(body.stat);
      break;
    case "multi":
      response.results = body.results.map(encodeOpResult);
      break;
    case "paths":
      response.children = body.paths;
      break;
    case "number":
      response.number = body.number;
      break;
    case "multiRead":
      response.results = body.results.map(encodeReadOpResult);
      break;
    case "whoAmI":
      response.clientInfo = body.clientInfo.map((info) => ({ authScheme: info.authScheme, user: info.user }));
      break;
  }
  return response;
}

export function encodeEvent(event: WatchEvent): wire.Encodable<wire.WireWatchEvent> {
  return { type: event.type, path: event.path, zxid: String(event.zxid) };
}
