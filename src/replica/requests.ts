/**
 * Requests and replies inside the server, shaped like ZooKeeper's own records rather than like
 * gRPC messages: every front door (the gRPC stream today, ZooKeeper's jute protocol later) decodes
 * into these and encodes from them.
 */
import type { AddWatchMode, WatcherType } from "../common/watch-modes.js";
import type { Acl, CreateMode, OpResult, Stat } from "../store/types.js";
import type { ClientInfo } from "./acl.js";

/**
 * Set by the ZooKeeper door on the requests whose checks ZooKeeper 3.8's server makes in its own
 * way (unset, the gRPC door's rules apply: every path is validated first, BADARGUMENTS). On a write
 * it travels to the leader's prep with the request; on a multi it covers every op.
 */
export interface ZooKeeperChecks {
  /**
   * Writes: a create's or delete's path is checked for a slash and NUL only before the tree, and
   * whole once the parent is found and allows it (so a malformed path can be NONODE or NOAUTH
   * first); a create's empty ACL list is INVALIDACL where fixupACL finds it (through the gRPC door
   * an empty list asks for the default ACL). Reads, sync and watch requests validate no path: one
   * that cannot exist is NONODE or NOWATCHER, sync echoes it, a watch on it never fires (exists
   * still refuses NUL, BADARGUMENTS; checkWatches fails a non-empty path without a slash,
   * MARSHALLINGERROR, as ZooKeeper's watch lookup throws).
   */
  zooKeeperChecks?: true;
}

export interface CreateRequest extends ZooKeeperChecks {
  op: "create";
  path: string;
  data: Uint8Array;
  /** Empty = world:anyone with every permission, unless `zooKeeperChecks` (then INVALIDACL). */
  acl: Acl[];
  mode: CreateMode;
  ttlMs: number;
}
export interface DeleteRequest extends ZooKeeperChecks {
  op: "delete";
  path: string;
  version: number;
}
export interface SetDataRequest {
  op: "setData";
  path: string;
  data: Uint8Array;
  version: number;
}
export interface SetAclRequest {
  op: "setAcl";
  path: string;
  acl: Acl[];
  version: number;
}
export interface CheckRequest {
  op: "check";
  path: string;
  version: number;
}
export type MultiOpRequest = CreateRequest | DeleteRequest | SetDataRequest | CheckRequest;
export interface MultiRequest extends ZooKeeperChecks {
  op: "multi";
  ops: MultiOpRequest[];
}
export interface CloseRequest {
  op: "close";
}
/** ZooKeeper's reconfig (ReconfigRequest): incremental (joining / leaving) or a whole new member list. */
export interface ReconfigRequest {
  op: "reconfig";
  /** "server.N=host:quorum:election[:role];[clientHost:]clientPort", comma-separated. */
  joining: string | null;
  /** Server ids, comma-separated. */
  leaving: string | null;
  /** Every member, as "server.N=…" separated by commas or newlines. */
  newMembers: string | null;
  /** The configuration version the change is meant for; -1 for whatever is in force. */
  fromConfig: bigint;
}

/** Requests that become a txn (through prep on the leader). */
export type WriteRequest = CreateRequest | DeleteRequest | SetDataRequest | SetAclRequest | MultiRequest | CloseRequest | ReconfigRequest;

export interface ExistsRequest extends ZooKeeperChecks {
  op: "exists";
  path: string;
  watch: boolean;
}
export interface GetDataRequest extends ZooKeeperChecks {
  op: "getData";
  path: string;
  watch: boolean;
}
export interface GetChildrenRequest extends ZooKeeperChecks {
  op: "getChildren";
  path: string;
  watch: boolean;
}
export interface GetAclRequest extends ZooKeeperChecks {
  op: "getAcl";
  path: string;
}
/** The session's ephemerals whose path starts with `prefixPath` (a string prefix, as ZooKeeper's). */
export interface GetEphemeralsRequest {
  op: "getEphemerals";
  prefixPath: string;
}
export interface GetAllChildrenNumberRequest extends ZooKeeperChecks {
  op: "getAllChildrenNumber";
  path: string;
}
export type MultiReadOpRequest = { op: "getData"; path: string } | { op: "getChildren"; path: string };
export interface MultiReadRequest extends ZooKeeperChecks {
  op: "multiRead";
  ops: MultiReadOpRequest[];
}
export interface SetWatchesRequest extends ZooKeeperChecks {
  op: "setWatches";
  relativeZxid: number;
  dataWatches: string[];
  existWatches: string[];
  childWatches: string[];
  persistentWatches: string[];
  persistentRecursiveWatches: string[];
}
export interface AddWatchRequest extends ZooKeeperChecks {
  op: "addWatch";
  path: string;
  mode: AddWatchMode;
}
/** Removes this session's watches of `watcherType` on `path` (ZooKeeper's removeWatches opcode). */
export interface RemoveWatchesRequest extends ZooKeeperChecks {
  op: "removeWatches";
  path: string;
  watcherType: WatcherType;
}
/** Answers NOWATCHER unless this session holds such a watch (ZooKeeper's checkWatches opcode). */
export interface CheckWatchesRequest extends ZooKeeperChecks {
  op: "checkWatches";
  path: string;
  watcherType: WatcherType;
}

/** ZooKeeper's whoAmI: the ids the connection is authenticated as. */
export interface WhoAmIRequest {
  op: "whoAmI";
}

/**
 * corral's getMembers (ZooKeeper has none): the configuration in force here with the members'
 * corral client addresses, which /zookeeper/config does not name. The SDK follows membership with it.
 */
export interface GetMembersRequest {
  op: "getMembers";
}

/** Requests answered from the local tree (or the connection's own state) when their turn comes. */
export type ReadRequest =
  | ExistsRequest
  | GetDataRequest
  | GetChildrenRequest
  | GetAclRequest
  | SetWatchesRequest
  | GetEphemeralsRequest
  | GetAllChildrenNumberRequest
  | MultiReadRequest
  | WhoAmIRequest
  | GetMembersRequest
  | AddWatchRequest
  | RemoveWatchesRequest
  | CheckWatchesRequest;

export interface SyncRequest extends ZooKeeperChecks {
  op: "sync";
  path: string;
}

/** ZooKeeper's auth packet: authenticate this connection (its effect is immediate, its answer in order). */
export interface AddAuthRequest {
  op: "addAuth";
  scheme: string;
  auth: Uint8Array;
}

export type ClientRequest = WriteRequest | ReadRequest | SyncRequest | AddAuthRequest;

export function isWriteRequest(request: ClientRequest): request is WriteRequest {
  switch (request.op) {
    case "create":
    case "delete":
    case "setData":
    case "setAcl":
    case "multi":
    case "close":
    case "reconfig":
      return true;
    default:
      return false;
  }
}

/** What a request is answered with; `err` 0 = success. */
export type ReplyBody =
  | { kind: "empty" }
  | { kind: "path"; path: string }
  | { kind: "create"; path: string; stat: Stat }
  | { kind: "stat"; stat: Stat }
  | { kind: "data"; data: Uint8Array; stat: Stat }
  | { kind: "children"; children: string[]; stat: Stat }
  | { kind: "acl"; acl: Acl[]; stat: Stat }
  | { kind: "multi"; results: OpResult[] }
  /** getEphemerals: full paths. */
  | { kind: "paths"; paths: string[] }
  | { kind: "number"; number: number }
  | { kind: "multiRead"; results: ReadOpResult[] }
  | { kind: "whoAmI"; clientInfo: ClientInfo[] }
  | ({ kind: "members" } & ClusterMembersReply);

/** getMembers' answer: the configuration in force, its members in id order. */
export interface ClusterMembersReply {
  /** The zxid of the reconfiguration that made it; 0 for the static one. */
  version: number;
  members: MemberReply[];
}

export interface MemberReply {
  serverId: number;
  role: "participant" | "observer";
  /** Where clients dial its corral client port; absent when this server has not learned it. */
  clientAddress?: { host: string; port: number };
}

/** One multiRead op's own answer. */
export type ReadOpResult = { type: "getData"; data: Uint8Array; stat: Stat } | { type: "getChildren"; children: string[] } | { type: "error"; err: number };

export interface Reply {
  err: number;
  /** The zxid the answer reflects. */
  zxid: number;
  body: ReplyBody;
}

export const EMPTY_BODY: ReplyBody = Object.freeze({ kind: "empty" });
