/**
 * TypeScript shapes of proto/client.proto as @grpc/proto-loader decodes them with
 * CLIENT_PROTO_OPTIONS (camelCase fields, int64 as decimal strings, oneof members plus a
 * discriminator field, defaults filled for non-oneof fields). The product speaks the protocol
 * through the generated codec (gen/client.ts); tests use proto-loader as an independent client,
 * server and codec of the same .proto, and these types describe what it takes and gives.
 */

/** int64 on the wire: decoded as a decimal string; encoders also accept number and bigint-as-string. */
export type Int64 = string;

export interface WireId {
  scheme: string;
  id: string;
}
export interface WireAcl {
  perms: number;
  id: WireId | null;
}
export interface WireStat {
  czxid: Int64;
  mzxid: Int64;
  ctime: Int64;
  mtime: Int64;
  version: number;
  cversion: number;
  aversion: number;
  ephemeralOwner: Int64;
  dataLength: number;
  numChildren: number;
  pzxid: Int64;
}

export interface ConnectRequest {
  protocolVersion: number;
  lastZxidSeen: Int64;
  timeoutMs: number;
  sessionId: Int64;
  password: Uint8Array;
  readOnlyAllowed: boolean;
}
export interface ConnectResponse {
  protocolVersion: number;
  timeoutMs: number;
  sessionId: Int64;
  password: Uint8Array;
  err: number;
  lastZxid: Int64;
  serverId: number;
  readOnly: boolean;
}

export interface CreateRequest {
  path: string;
  data: Uint8Array;
  acl: WireAcl[];
  mode: number;
  ttlMs: Int64;
}
export interface DeleteRequest {
  path: string;
  version: number;
}
export interface ExistsRequest {
  path: string;
  watch: boolean;
}
export interface GetDataRequest {
  path: string;
  watch: boolean;
}
export interface SetDataRequest {
  path: string;
  data: Uint8Array;
  version: number;
}
export interface GetChildrenRequest {
  path: string;
  watch: boolean;
}
export interface CheckRequest {
  path: string;
  version: number;
}
export type MultiOp =
  | { op: "create"; create: CreateRequest }
  | { op: "delete"; delete: DeleteRequest }
  | { op: "setData"; setData: SetDataRequest }
  | { op: "check"; check: CheckRequest };
export interface MultiRequest {
  ops: MultiOp[];
}
export interface SyncRequest {
  path: string;
}
export interface SetWatchesRequest {
  relativeZxid: Int64;
  dataWatches: string[];
  existWatches: string[];
  childWatches: string[];
  persistentWatches: string[];
  persistentRecursiveWatches: string[];
}
export interface AddWatchRequest {
  path: string;
  mode: number;
}
export interface RemoveWatchesRequest {
  path: string;
  type: number;
}
export interface CheckWatchesRequest {
  path: string;
  type: number;
}
export type CloseRequest = Record<string, never>;
export interface GetAclRequest {
  path: string;
}
export interface SetAclRequest {
  path: string;
  acl: WireAcl[];
  version: number;
}
export interface GetEphemeralsRequest {
  prefixPath: string;
}
export interface GetAllChildrenNumberRequest {
  path: string;
}
export type MultiReadOp = { op: "getData"; getData: GetDataRequest } | { op: "getChildren"; getChildren: GetChildrenRequest };
export interface MultiReadRequest {
  ops: MultiReadOp[];
}
export interface AddAuthRequest {
  scheme: string;
  auth: Uint8Array;
}
export type WhoAmIRequest = Record<string, never>;
export interface WireClientInfo {
  authScheme: string;
  user: string;
}

export type RequestOp =
  | { op: "create"; create: CreateRequest }
  | { op: "delete"; delete: DeleteRequest }
  | { op: "exists"; exists: ExistsRequest }
  | { op: "getData"; getData: GetDataRequest }
  | { op: "setData"; setData: SetDataRequest }
  | { op: "getChildren"; getChildren: GetChildrenRequest }
  | { op: "multi"; multi: MultiRequest }
  | { op: "sync"; sync: SyncRequest }
  | { op: "setWatches"; setWatches: SetWatchesRequest }
  | { op: "close"; close: CloseRequest }
  | { op: "getAcl"; getAcl: GetAclRequest }
  | { op: "setAcl"; setAcl: SetAclRequest }
  | { op: "getEphemerals"; getEphemerals: GetEphemeralsRequest }
  | { op: "getAllChildrenNumber"; getAllChildrenNumber: GetAllChildrenNumberRequest }
  | { op: "multiRead"; multiRead: MultiReadRequest }
  | { op: "addAuth"; addAuth: AddAuthRequest }
  | { op: "whoAmI"; whoAmI: WhoAmIRequest }
  | { op: "addWatch"; addWatch: AddWatchRequest }
  | { op: "removeWatches"; removeWatches: RemoveWatchesRequest }
  | { op: "checkWatches"; checkWatches: CheckWatchesRequest }
  | { op: "getMembers"; getMembers: Record<string, never> }
  | { op: "sasl"; sasl: { token: Uint8Array } };

export type Request = { xid: number } & RequestOp;

export interface OpResult {
  err: number;
  path: string;
  stat: WireStat | null;
  data: Uint8Array;
  children: string[];
}

export interface Response {
  xid: number;
  zxid: Int64;
  err: number;
  path: string;
  stat: WireStat | null;
  data: Uint8Array;
  children: string[];
  results: OpResult[];
  acl: WireAcl[];
  number: number;
  clientInfo: WireClientInfo[];
  members: WireMembers | null;
  saslToken: Uint8Array;
}

export interface WireMember {
  serverId: number;
  observer: boolean;
  clientHost: string;
  clientPort: number;
}
export interface WireMembers {
  configVersion: Int64;
  members: WireMember[];
}

export interface WireWatchEvent {
  type: number;
  path: string;
  zxid: Int64;
}
export type Ping = Record<string, never>;
export interface Pong {
  zxid: Int64;
}

/** What the client writes. When encoding, omitted non-oneof fields take their proto3 defaults. */
export type ClientFrame =
  | { frame: "connect"; connect: ConnectRequest }
  | { frame: "request"; request: Request }
  | { frame: "ping"; ping: Ping }
  | { frame: "batch"; batch: { frames: ClientFrame[] } };

export type ServerFrame =
  | { frame: "connect"; connect: ConnectResponse }
  | { frame: "response"; response: Response }
  | { frame: "event"; event: WireWatchEvent }
  | { frame: "pong"; pong: Pong }
  | { frame: "batch"; batch: { frames: ServerFrame[] } };

/** Encoders accept partial messages (proto3 defaults fill the rest). */
export type Encodable<T> = T extends object ? { [K in keyof T]?: Encodable<T[K]> | undefined } : T;
