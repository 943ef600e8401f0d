/**
 * Requests and replies inside the server, shaped like ZooKeeper's own records rather than like
 * gRPC messages: every front door (the gRPC stream today, ZooKeeper's jute protocol later) decodes
 * into these and encodes from them.
 */
import type { AddWatchMode, WatcherType } from "../common/watch-modes.js";
import type { Acl, CreateMode, OpResult, Stat } from "../store/types.js";

export interface CreateRequest {
  op: "create";
  path: string;
  data: Uint8Array;
  /** Empty = world:anyone with every permission. */
  acl: Acl[];
  mode: CreateMode;
  ttlMs: number;
}
export interface DeleteRequest { op: "delete"; path: string; version: number }
export interface SetDataRequest { op: "setData"; path: string; data: Uint8Array; version: number }
export interface SetAclRequest { op: "setAcl"; path: string; acl: Acl[]; version: number }
export interface CheckRequest { op: "check"; path: string; version: number }
export type MultiOpRequest = CreateRequest | DeleteRequest | SetDataRequest | CheckRequest;
export interface MultiRequest { op: "multi"; ops: MultiOpRequest[] }
export interface CloseRequest { op: "close" }

/** Requests that become a txn (through prep on the leader). */
export type WriteRequest = CreateRequest | DeleteRequest | SetDataRequest | SetAclRequest | MultiRequest | CloseRequest;

export interface ExistsRequest { op: "exists"; path: string; watch: boolean }
export interface GetDataRequest { op: "getData"; path: string; watch: boolean }
export interface GetChildrenRequest { op: "getChildren"; path: string; watch: boolean }
export interface GetAclRequest { op: "getAcl"; path: string }
export interface SetWatchesRequest {
  op: "setWatches";
  relativeZxid: number;
  dataWatches: string[];
  existWatches: string[];
  childWatches: string[];
  persistentWatches: string[];
  persistentRecursiveWatches: string[];
}
export interface AddWatchRequest { op: "addWatch"; path: string; mode: AddWatchMode }
/** Removes this session's watches of `watcherType` on `path` (ZooKeeper's removeWatches opcode). */
export interface RemoveWatchesRequest { op: "removeWatches"; path: string; watcherType: WatcherType }
/** Answers NOWATCHER unless this session holds such a watch (ZooKeeper's checkWatches opcode). */
export interface CheckWatchesRequest { op: "checkWatches"; path: string; watcherType: WatcherType }

/** Requests answered from the local tree and this server's watches. */
export type ReadRequest =
  | ExistsRequest
  | GetDataRequest
  | GetChildrenRequest
  | GetAclRequest
  | SetWatchesRequest
  | AddWatchRequest
  | RemoveWatchesRequest
  | CheckWatchesRequest;

export interface SyncRequest { op: "sync"; path: string }

export type ClientRequest = WriteRequest | ReadRequest | SyncRequest;

export function isWriteRequest(request: ClientRequest): request is WriteRequest {
  switch (request.op) {
    case "create":
    case "delete":
    case "setData":
    case "setAcl":
    case "multi":
    case "close":
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
  | { kind: "multi"; results: OpResult[] };

export interface Reply {
  err: number;
  /** The zxid the answer reflects. */
  zxid: number;
  body: ReplyBody;
}

export const EMPTY_BODY: ReplyBody = Object.freeze({ kind: "empty" }) as ReplyBody;
