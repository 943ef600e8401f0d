/**
 * ZooKeeper's client records ⇄ the server's own requests and replies (src/server/requests.ts).
 *
 * A decoded jute request becomes a ClientRequest for the same pipeline the gRPC door feeds, or an
 * error code to answer it with in its place (what ZooKeeper 3.8 refuses before it looks at the
 * tree: unknown create flags, a TTL on a non-TTL mode, an opcode it does not run). Requests whose
 * checks ZooKeeper makes in its own order carry `zooKeeperChecks`. A Reply becomes the exact
 * response record ZooKeeper 3.8's FinalRequestProcessor writes for that opcode.
 *
 * Pure: no sockets, no server state.
 */
import { ZkErrorCode } from "../../common/errors.js";
import { addWatchModeOf, watcherTypeOf } from "../../common/watch-modes.js";
import { CREATE_MODES_BY_FLAG, isTtlMode, NULL_DATA } from "../../common/znode.js";
import type { Acl, OpResult, Stat } from "../../store/types.js";
import type { ClientRequest, CreateRequest, MultiOpRequest, MultiReadOpRequest, ReadOpResult, Reply } from "../../replica/requests.js";
import * as jute from "./records.js";
import { OpCode } from "./records.js";

const EMPTY = new Uint8Array(0);

/**
 * What a request frame asks for; or the code ZooKeeper answers it with without running it (in its
 * place in the session's order); or, for a frame ZooKeeper fails on outside any request's answer,
 * the end of the connection, unanswered. (A sasl packet never comes here: the door answers it,
 * src/server/sasl/connection-sasl.ts.)
 */
export type ZkRequestMapping = { request: ClientRequest; shape: ReplyShape } | { reject: number; shape: ReplyShape } | { close: string };

/** What the reply to a request must look like: its opcode, and for a multi each op's opcode. */
export interface ReplyShape {
  type: number;
  opTypes?: readonly number[];
  /** A sync of a null path, which ZooKeeper echoes as null. */
  nullPath?: true;
  /**
   * getAllChildrenNumber of "": ZooKeeper counts the keys of its node table that start with "/",
   * the root's own included, one more than for "/".
   */
  rootKeyCounted?: true;
  /** The connection reads nothing more and is closed once this is answered (an opcode ZooKeeper does not know). */
  closeAfter?: true;
}

/**
 * A request ZooKeeper would refuse with `code`, thrown out of the mapping below and caught at its
 * end. An Error so that only errors are thrown; it is made only for malformed client input.
 */
class Refusal extends Error {
  constructor(readonly code: number) {
    super("request refused");
  }
}

/**
 * Maps a request record decoded by records.ts (`body` is what requestBodyCodec(type) read;
 * undefined for an opcode it has no record for).
 */
export function toClientRequest(type: number, body: unknown): ZkRequestMapping {
  const shape: ReplyShape = { type };
  try {
    switch (type) {
      case OpCode.create:
      case OpCode.create2:
      case OpCode.createContainer:
      case OpCode.createTTL: {
        return { request: { ...createRequest(body as jute.CreateTTLRequest), zooKeeperChecks: true }, shape };
      }
      case OpCode.delete: {
        const r = body as jute.DeleteRequest;
        return { request: { op: "delete", path: nonNull(r.path), version: r.version, zooKeeperChecks: true }, shape };
      }
      case OpCode.setData: {
        const r = body as jute.SetDataRequest;
        return { request: { op: "setData", path: str(r.path), data: r.data ?? NULL_DATA, version: r.version }, shape };
      }
      case OpCode.setACL: {
        const r = body as jute.SetACLRequest;
        return { request: { op: "setAcl", path: str(r.path), acl: acls(r.acl), version: r.version }, shape };
      }
      case OpCode.exists:
      case OpCode.getData:
      case OpCode.getChildren:
      case OpCode.getChildren2: {
        const r = body as jute.GetDataRequest;
        const op = type === OpCode.exists ? "exists" : type === OpCode.getData ? "getData" : "getChildren";
        const path = readPath(r.path);
        // ZooKeeper's watch on "" never fires: none is set on the root in its place.
        return { request: { op, path, watch: r.watch && r.path !== "", zooKeeperChecks: true }, shape };
      }
      case OpCode.getACL:
        return { request: { op: "getAcl", path: readPath((body as jute.GetACLRequest).path), zooKeeperChecks: true }, shape };
      case OpCode.sync: {
        // ZooKeeper answers any sync, echoing its path, null included.
        const path = (body as jute.SyncRequest).path;
        return { request: { op: "sync", path: str(path), zooKeeperChecks: true }, shape: path === null ? { type, nullPath: true } : shape };
      }
      case OpCode.multi: {
        const ops = (body as jute.MultiRequest).ops.map(multiOp);
        return { request: { op: "multi", ops: ops.map((op) => op.request), zooKeeperChecks: true }, shape: { type, opTypes: ops.map((op) => op.type) } };
      }
      case OpCode.multiRead: {
        const ops = (body as jute.MultiRequest).ops;
        return { request: { op: "multiRead", ops: ops.map(multiReadOp), zooKeeperChecks: true }, shape: { type, opTypes: ops.map((op) => op.type) } };
      }
      case OpCode.checkWatches:
      case OpCode.removeWatches: {
        const r = body as jute.CheckWatchesRequest;
        // ZooKeeper's WatcherType.fromInt throws a RuntimeException on a number it does not know.
        const watcherType = watcherTypeOf(r.type);
        if (watcherType === undefined) throw new Refusal(ZkErrorCode.MARSHALLINGERROR);
        // Its watch lookup dereferences a checkWatches path; removeWatches finds no watch on null.
        if (r.path === null && type === OpCode.checkWatches) throw new Refusal(ZkErrorCode.MARSHALLINGERROR);
        return {
          request: { op: type === OpCode.checkWatches ? "checkWatches" : "removeWatches", path: str(r.path), watcherType, zooKeeperChecks: true },
          shape,
        };
      }
      case OpCode.addWatch: {
        const r = body as jute.AddWatchRequest;
        // WatcherMode.fromZooDef throws an IllegalArgumentException on a mode it does not know.
        const mode = addWatchModeOf(r.mode);
        if (mode === undefined) throw new Refusal(ZkErrorCode.MARSHALLINGERROR);
        return { request: { op: "addWatch", path: str(r.path), mode, zooKeeperChecks: true }, shape };
      }
      case OpCode.auth: {
        const r = body as jute.AuthPacket;
        // ZooKeeper's digest provider makes a String of the credentials: null throws, which its
        // packet handling answers AUTHFAILED (the ip provider never reads them).
        if (r.auth === null && r.scheme === "digest") return { reject: ZkErrorCode.AUTHFAILED, shape: { type, closeAfter: true } };
        return { request: { op: "addAuth", scheme: str(r.scheme), auth: r.auth ?? EMPTY }, shape };
      }
      case OpCode.setWatches:
      case OpCode.setWatches2: {
        const r = body as jute.SetWatches2;
        return {
          request: {
            op: "setWatches",
            relativeZxid: Number(r.relativeZxid),
            dataWatches: strings(r.dataWatches),
            existWatches: strings(r.existWatches),
            childWatches: strings(r.childWatches),
            persistentWatches: strings(r.persistentWatches),
            persistentRecursiveWatches: strings(r.persistentRecursiveWatches),
            zooKeeperChecks: true,
          },
          shape,
        };
      }
      case OpCode.getEphemerals:
        return { request: { op: "getEphemerals", prefixPath: str((body as jute.GetEphemeralsRequest).prefixPath) }, shape };
      case OpCode.getAllChildrenNumber: {
        const path = (body as jute.GetAllChildrenNumberRequest).path;
        return {
          request: { op: "getAllChildrenNumber", path: readPath(path), zooKeeperChecks: true },
          shape: path === "" ? { type, rootKeyCounted: true } : shape,
        };
      }
      case OpCode.whoAmI:
        return { request: { op: "whoAmI" }, shape };
      case OpCode.closeSession:
        return { request: { op: "close" }, shape };
      case OpCode.reconfig: {
        // The leader checks it (reconfigEnabled first, as ZooKeeper's prep does); nulls stay nulls.
        const r = body as jute.ReconfigRequest;
        return {
          request: { op: "reconfig", joining: r.joiningServers, leaving: r.leavingServers, newMembers: r.newMembers, fromConfig: r.curConfigId },
          shape,
        };
      }
      case OpCode.deleteContainer:
        // Sent by ZooKeeper's own ContainerManager, never a client: its prep reads the whole frame,
        // header included, as the path, whose NUL bytes getParentPathAndValidate refuses.
        return { reject: ZkErrorCode.BADARGUMENTS, shape };
      case OpCode.check:
      case OpCode.createSession:
        // Opcodes ZooKeeper's Request.isValid accepts that no client sends alone: a lone check
        // (3.8 runs it and never answers success) and createSession (part of the connect).
        return { reject: ZkErrorCode.UNIMPLEMENTED, shape };
      default:
        // ZooKeeper's UnimplementedRequestProcessor: UNIMPLEMENTED, then it closes the connection.
        return { reject: ZkErrorCode.UNIMPLEMENTED, shape: { type, closeAfter: true } };
    }
  } catch (error) {
    if (error instanceof Refusal) return { reject: error.code, shape };
    throw error;
  }
}

function createRequest(r: jute.CreateTTLRequest | jute.CreateRequest): CreateRequest {
  const mode = CREATE_MODES_BY_FLAG[r.flags];
  if (mode === undefined) throw new Refusal(ZkErrorCode.BADARGUMENTS);
  // Only createTTL carries a ttl; everywhere else ZooKeeper uses -1, which a TTL mode refuses.
  const ttl = "ttl" in r ? r.ttl : -1n;
  if (!isTtlMode(mode) && ttl >= 0n) throw new Refusal(ZkErrorCode.BADARGUMENTS);
  // 0 is "no ttl" inside corral (prep refuses it for a TTL mode, as ZooKeeper refuses -1 or 0); a
  // TTL beyond a JS safe integer is out of range all the same.
  const ttlMs = ttl <= 0n ? 0 : ttl > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(ttl);
  return { op: "create", path: nonNull(r.path), data: r.data ?? NULL_DATA, acl: acls(r.acl), mode, ttlMs };
}

/**
 * One op of a multi, and the opcode ZooKeeper runs it as (which picks its result record). Its
 * MultiOperationRecord makes every create an Op.create, whose opcode follows the flags, not the op
 * header: a container is createContainer, a TTL mode createTTL, anything else a plain create (so a
 * create2 op answers without a stat), and only a createTTL op record keeps its ttl.
 */
function multiOp(op: jute.MultiOp): { request: MultiOpRequest; type: number } {
  switch (op.type) {
    case OpCode.create:
    case OpCode.create2:
    case OpCode.createContainer:
    case OpCode.createTTL:
      return multiCreate(op.request);
    case OpCode.delete:
      return { request: { op: "delete", path: nonNull(op.request.path), version: op.request.version }, type: op.type };
    case OpCode.setData:
      return { request: { op: "setData", path: nonNull(op.request.path), data: op.request.data ?? NULL_DATA, version: op.request.version }, type: op.type };
    case OpCode.check:
      return { request: { op: "check", path: nonNull(op.request.path), version: op.request.version }, type: op.type };
    default:
      // A read in a write multi: ZooKeeper's MultiOperationRecord refuses mixed kinds.
      throw new Refusal(ZkErrorCode.MARSHALLINGERROR);
  }
}

function multiCreate(r: jute.CreateTTLRequest | jute.CreateRequest): { request: CreateRequest; type: number } {
  const mode = CREATE_MODES_BY_FLAG[r.flags];
  const path = nonNull(r.path);
  if (mode === undefined) {
    // Unknown flags run as a plain create whose prep refuses them first (CreateMode.fromFlag),
    // BADARGUMENTS in that op's place: sent as a persistent create with a ttl, which prep's first
    // check refuses the same way.
    return { request: { op: "create", path, data: r.data ?? NULL_DATA, acl: acls(r.acl), mode: "persistent", ttlMs: 1 }, type: OpCode.create };
  }
  if (isTtlMode(mode)) {
    // A TTL op under a create, create2 or createContainer header has no ttl field: ZooKeeper's prep
    // casts its record to CreateTTLRequest and fails the whole multi (ClassCastException).
    if (!("ttl" in r)) throw new Refusal(ZkErrorCode.MARSHALLINGERROR);
    return { request: createRequest(r), type: OpCode.createTTL };
  }
  const request = createRequest({ path: r.path, data: r.data, acl: r.acl, flags: r.flags });
  return { request, type: mode === "container" ? OpCode.createContainer : OpCode.create };
}

function multiReadOp(op: jute.MultiOp): MultiReadOpRequest {
  switch (op.type) {
    case OpCode.getData:
      return { op: "getData", path: readPath(op.request.path) };
    case OpCode.getChildren:
      return { op: "getChildren", path: readPath(op.request.path) };
    default:
      throw new Refusal(ZkErrorCode.MARSHALLINGERROR);
  }
}

/**
 * A jute ACL list as prep's fixupAcl takes it. A null list is an empty one, which prep refuses
 * INVALIDACL where ZooKeeper's fixupACL does (after the path checks it makes first). Null strings
 * follow ZooKeeper's fixupACL: the id of an `auth` entry is never read (kazoo writes "" as null), a
 * null scheme names no provider (INVALIDACL), and a null id under world, digest or ip throws a
 * NullPointerException in ZooKeeper's provider, which its prep answers MARSHALLINGERROR.
 */
function acls(list: jute.ACL[] | null): Acl[] {
  return (list ?? []).map(({ perms, id: { scheme, id } }) => {
    if (scheme === null) return { perms, id: { scheme: "", id: id ?? "" } };
    if (id === null && NULL_ID_THROWS_SCHEMES.has(scheme)) throw new Refusal(ZkErrorCode.MARSHALLINGERROR);
    return { perms, id: { scheme, id: id ?? "" } };
  });
}

/** The schemes whose ZooKeeper provider dereferences an ACL's id (world compares it to "anyone"). */
const NULL_ID_THROWS_SCHEMES: ReadonlySet<string> = new Set(["world", "digest", "ip"]);

/** A null path reaches prep as "" and is refused there as a bad path, as ZooKeeper's PathUtils refuses null. */
function str(value: string | null): string {
  return value ?? "";
}

/**
 * The path of a read ZooKeeper looks up in its node table without validating it: null is its
 * NullPointerException (MARSHALLINGERROR; in a multiRead, for the whole request), and "" is a key
 * of that table, the root's.
 */
function readPath(path: string | null): string {
  if (path === null) throw new Refusal(ZkErrorCode.MARSHALLINGERROR);
  return path === "" ? "/" : path;
}

/**
 * A path ZooKeeper dereferences before it validates it (a create's, a delete's, any op's of a multi):
 * null is its NullPointerException, which it answers MARSHALLINGERROR.
 */
function nonNull(path: string | null): string {
  if (path === null) throw new Refusal(ZkErrorCode.MARSHALLINGERROR);
  return path;
}

function strings(list: (string | null)[] | null | undefined): string[] {
  return (list ?? []).map(str);
}

// ---- replies --------------------------------------------------------------------------------

/**
 * The reply frame's record for `reply` to a request of `shape`, answered as `xid`: the one place
 * that picks the response record for an opcode, as 3.8's FinalRequestProcessor does. An error is the
 * header alone; a multi's per-op failures travel in its results with err 0 in the header, as
 * ZooKeeper 3.8 sends them.
 */
export function encodeZkReply(xid: number, shape: ReplyShape, reply: Reply): Uint8Array {
  const zxid = BigInt(reply.zxid);
  const body = reply.body;
  if (body.kind === "multi") {
    const results = body.results.map((result, i) => multiResult(result, shape.opTypes?.[i] ?? OpCode.error));
    return jute.encodeReply({ xid, zxid, err: 0 }, { codec: jute.MultiResponse, value: { results } });
  }
  if (body.kind === "multiRead") {
    return jute.encodeReply({ xid, zxid, err: 0 }, { codec: jute.MultiResponse, value: { results: body.results.map(readResult) } });
  }
  if (reply.err !== 0) return jute.encodeReply({ xid, zxid, err: reply.err });
  const header = { xid, zxid, err: 0 };
  switch (shape.type) {
    case OpCode.create:
      return jute.encodeReply(header, { codec: jute.CreateResponse, value: { path: pathOf(body) } });
    case OpCode.create2:
    case OpCode.createTTL:
    case OpCode.createContainer:
      return jute.encodeReply(header, { codec: jute.Create2Response, value: { path: pathOf(body), stat: statOf(body) } });
    case OpCode.exists:
      return jute.encodeReply(header, { codec: jute.ExistsResponse, value: { stat: statOf(body) } });
    case OpCode.setData:
      return jute.encodeReply(header, { codec: jute.SetDataResponse, value: { stat: statOf(body) } });
    case OpCode.setACL:
      return jute.encodeReply(header, { codec: jute.SetACLResponse, value: { stat: statOf(body) } });
    case OpCode.getData:
    case OpCode.reconfig:
      // ZooKeeper answers a reconfig with the new configuration, as a getData of /zookeeper/config.
      if (body.kind !== "data") break;
      return jute.encodeReply(header, { codec: jute.GetDataResponse, value: { data: nullable(body.data), stat: juteStat(body.stat) } });
    case OpCode.getChildren:
      if (body.kind !== "children") break;
      return jute.encodeReply(header, { codec: jute.GetChildrenResponse, value: { children: body.children } });
    case OpCode.getChildren2:
      if (body.kind !== "children") break;
      return jute.encodeReply(header, { codec: jute.GetChildren2Response, value: { children: body.children, stat: juteStat(body.stat) } });
    case OpCode.getACL:
      if (body.kind !== "acl") break;
      return jute.encodeReply(header, { codec: jute.GetACLResponse, value: { acl: body.acl, stat: juteStat(body.stat) } });
    case OpCode.sync:
      return jute.encodeReply(header, { codec: jute.SyncResponse, value: { path: shape.nullPath ? null : pathOf(body) } });
    case OpCode.getEphemerals:
      if (body.kind !== "paths") break;
      return jute.encodeReply(header, { codec: jute.GetEphemeralsResponse, value: { ephemerals: body.paths } });
    case OpCode.getAllChildrenNumber:
      if (body.kind !== "number") break;
      return jute.encodeReply(header, { codec: jute.GetAllChildrenNumberResponse, value: { totalNumber: body.number + (shape.rootKeyCounted ? 1 : 0) } });
    case OpCode.addWatch:
      return jute.encodeReply(header, { codec: jute.ErrorResponse, value: { err: 0 } });
    case OpCode.whoAmI:
      if (body.kind !== "whoAmI") break;
      return jute.encodeReply(header, { codec: jute.WhoAmIResponse, value: { clientInfo: body.clientInfo } });
    default:
      // delete, auth, setWatches, checkWatches, removeWatches, closeSession: the header says it all.
      return jute.encodeReply(header);
  }
  throw new Error(`a ${body.kind} reply to opcode ${shape.type}`);
}

function pathOf(body: Reply["body"]): string {
  if (body.kind === "create" || body.kind === "path") return body.path;
  throw new Error(`no path in a ${body.kind} reply`);
}

function statOf(body: Reply["body"]): jute.Stat {
  if (body.kind === "create" || body.kind === "stat" || body.kind === "data" || body.kind === "children" || body.kind === "acl") return juteStat(body.stat);
  throw new Error(`no stat in a ${body.kind} reply`);
}

/** A successful op answers as its own opcode does; TTL and container creates answer as create2 (OpResult.CreateResult with a stat). */
function multiResult(result: OpResult, opType: number): jute.MultiResult {
  switch (result.type) {
    case "create":
      return opType === OpCode.create ? { type: OpCode.create, path: result.path } : { type: OpCode.create2, path: result.path, stat: juteStat(result.stat) };
    case "delete":
      return { type: OpCode.delete };
    case "setData":
      return { type: OpCode.setData, stat: juteStat(result.stat) };
    case "check":
      return { type: OpCode.check };
    case "error":
      return { type: OpCode.error, err: result.err };
  }
}

function readResult(result: ReadOpResult): jute.MultiResult {
  switch (result.type) {
    case "getData":
      return { type: OpCode.getData, data: nullable(result.data), stat: juteStat(result.stat) };
    case "getChildren":
      return { type: OpCode.getChildren, children: result.children };
    case "error":
      return { type: OpCode.error, err: result.err };
  }
}

/** Data written as null reads back as null, as ZooKeeper's does. */
function nullable(data: Uint8Array): Uint8Array | null {
  return data === NULL_DATA ? null : data;
}

export function juteStat(stat: Stat): jute.Stat {
  return {
    czxid: BigInt(stat.czxid),
    mzxid: BigInt(stat.mzxid),
    ctime: BigInt(stat.ctime),
    mtime: BigInt(stat.mtime),
    version: stat.version,
    cversion: stat.cversion,
    aversion: stat.aversion,
    ephemeralOwner: stat.ephemeralOwner,
    dataLength: stat.dataLength,
    numChildren: stat.numChildren,
    pzxid: BigInt(stat.pzxid),
  };
}
