/**
 * TypeScript shapes of proto/client.proto as @grpc/proto-loader decodes them with CLIENT_PROTO_OPTIONS
 * (camelCase fields, int64 as decimal strings, oneof members plus a discriminator field, defaults
 * filled for non-oneof fields). Both the SDK and the server's gRPC front door use these.
 */
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { limits } from "../common/constants.js";

export const CLIENT_PROTO_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: Number,
  defaults: true,
  oneofs: true,
  arrays: true,
};

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
}
export interface ConnectResponse {
  protocolVersion: number;
  timeoutMs: number;
  sessionId: Int64;
  password: Uint8Array;
  err: number;
  lastZxid: Int64;
  serverId: number;
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
  | { op: "checkWatches"; checkWatches: CheckWatchesRequest };

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

let cachedService: grpc.ServiceDefinition | undefined;

/** The Corral service definition, loaded once from proto/client.proto beside the package root. */
export function corralServiceDefinition(): grpc.ServiceDefinition {
  if (cachedService) return cachedService;
  // dist/src/protocol/ -> package root, and src/protocol/ when run from sources.
  const protoPath = fileURLToPath(new URL("../../../proto/client.proto", import.meta.url));
  const fallback = fileURLToPath(new URL("../../proto/client.proto", import.meta.url));
  const definition = protoLoader.loadSync([protoPath, fallback].find(existsSync) ?? protoPath, CLIENT_PROTO_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    corral: { client: { v1: { Corral: grpc.ServiceClientConstructor } } };
  };
  cachedService = pkg.corral.client.v1.Corral.service;
  return cachedService;
}

/** A grpc-js client constructor for the Corral service. */
export function corralClientConstructor(): grpc.ServiceClientConstructor {
  return grpc.makeClientConstructor(corralServiceDefinition(), "corral.client.v1.Corral");
}

/**
 * Message bounds of the client stream, per direction. What a client sends is bounded (one znode's
 * data plus its envelope); what a server answers is not, as ZooKeeper puts no limit on its replies:
 * a read returns whatever the tree holds (getChildren of 10,000 children with long names is
 * 20 MB), and a bound here would fail that read with a CONNECTIONLOSS on every retry.
 */
const UNBOUNDED = -1;

/** The server side of the client stream. */
export const GRPC_SERVER_CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.max_receive_message_length": limits.messageBytesMax,
  "grpc.max_send_message_length": UNBOUNDED,
};

/** The client side of the client stream (the SDK and tests' raw sessions). */
export const GRPC_CLIENT_CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.max_receive_message_length": UNBOUNDED,
  "grpc.max_send_message_length": limits.messageBytesMax,
};
