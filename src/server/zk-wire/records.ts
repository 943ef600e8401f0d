/**
 * ZooKeeper 3.8's client-protocol records, field for field in the order and types of
 * apache/zookeeper's zookeeper-jute/src/main/resources/zookeeper.jute, plus the hand-written
 * ones: MultiOperationRecord / MultiResponse (MultiHeader-delimited), and ConnectRequest /
 * ConnectResponse's trailing readOnly byte (in 3.8 written and read outside the .jute class; old
 * clients omit it).
 *
 * Each record is a `JuteCodec`: `write` and `read` on the jute archive. Longs are bigint
 * throughout (session ids, zxids, times, ttl). ustring and buffer fields may be null, as on the
 * wire; deciding what null means is the server's business, not the codec's.
 *
 * Pure: no I/O, no server state.
 */
import { JuteError, JuteReader, JuteWriter, type JuteReaderOptions } from "./jute.js";

export interface JuteCodec<T> {
  write(writer: JuteWriter, value: T): void;
  read(reader: JuteReader): T;
  /** The fewest bytes one value takes on the wire (bounds vector counts). */
  readonly minBytes: number;
}

// ---- primitives as codecs -------------------------------------------------------------------

export const int: JuteCodec<number> = { write: (w, v) => void w.writeInt(v), read: (r) => r.readInt(), minBytes: 4 };
export const long: JuteCodec<bigint> = { write: (w, v) => void w.writeLong(v), read: (r) => r.readLong(), minBytes: 8 };
export const bool: JuteCodec<boolean> = { write: (w, v) => void w.writeBool(v), read: (r) => r.readBool(), minBytes: 1 };
export const buffer: JuteCodec<Uint8Array | null> = {
  write: (w, v) => void w.writeBuffer(v),
  read: (r) => r.readBuffer(),
  minBytes: 4,
};
export const ustring: JuteCodec<string | null> = {
  write: (w, v) => void w.writeUstring(v),
  read: (r) => r.readUstring(),
  minBytes: 4,
};

export function vector<T>(item: JuteCodec<T>): JuteCodec<T[] | null> {
  return {
    write: (w, v) => void w.writeVector(v, (iw, i) => item.write(iw, i)),
    read: (r) => r.readVector((ir) => item.read(ir), item.minBytes),
    minBytes: 4,
  };
}

type ValueOf<C> = C extends JuteCodec<infer T> ? T : never;
type Shape = Record<string, JuteCodec<unknown>>;
export type RecordOf<S extends Shape> = { [K in keyof S]: ValueOf<S[K]> };

/** A jute class: its fields in declaration order (object key order is insertion order). */
export function struct<S extends Shape>(shape: S): JuteCodec<RecordOf<S>> {
  const fields = Object.entries(shape);
  return {
    write(writer, value) {
      for (const [name, codec] of fields) codec.write(writer, (value as Record<string, unknown>)[name]);
    },
    read(reader) {
      const value: Record<string, unknown> = {};
      for (const [name, codec] of fields) value[name] = codec.read(reader);
      return value as RecordOf<S>;
    },
    minBytes: fields.reduce((sum, [, codec]) => sum + codec.minBytes, 0),
  };
}

/** A record with no fields on the wire (ping, closeSession, whoAmI requests; delete's reply). */
export const empty: JuteCodec<Record<string, never>> = { write: () => {}, read: () => ({}), minBytes: 0 };

// ---- encode / decode ------------------------------------------------------------------------

export function encodeRecord<T>(codec: JuteCodec<T>, value: T): Uint8Array {
  const writer = new JuteWriter();
  codec.write(writer, value);
  return writer.toBytes();
}

export interface DecodeOptions extends JuteReaderOptions {
  /**
   * What to do with bytes after the record. ZooKeeper ignores them (it deserializes from the
   * front of the frame and never checks the end), so "ignore" is the default.
   */
  readonly trailing?: "ignore" | "reject";
}

/** Decodes one record; throws only JuteError. */
export function decodeRecord<T>(codec: JuteCodec<T>, bytes: Uint8Array, options: DecodeOptions = {}): T {
  const reader = new JuteReader(bytes, options);
  const value = codec.read(reader);
  if (options.trailing === "reject") reader.expectEnd("record");
  return value;
}

// ---- numbers --------------------------------------------------------------------------------

/** ZooDefs.OpCode in ZooKeeper 3.8. */
export const OpCode = {
  notification: 0,
  create: 1,
  delete: 2,
  exists: 3,
  getData: 4,
  setData: 5,
  getACL: 6,
  setACL: 7,
  getChildren: 8,
  sync: 9,
  ping: 11,
  getChildren2: 12,
  check: 13,
  multi: 14,
  create2: 15,
  reconfig: 16,
  checkWatches: 17,
  removeWatches: 18,
  createContainer: 19,
  deleteContainer: 20,
  createTTL: 21,
  multiRead: 22,
  auth: 100,
  setWatches: 101,
  sasl: 102,
  getEphemerals: 103,
  getAllChildrenNumber: 104,
  setWatches2: 105,
  addWatch: 106,
  whoAmI: 107,
  createSession: -10,
  closeSession: -11,
  error: -1,
} as const;
export type OpCodeName = keyof typeof OpCode;
export type OpCodeNumber = (typeof OpCode)[OpCodeName];

/** The xids ZooKeeper reserves (ClientCnxn). */
export const Xid = {
  notification: -1,
  ping: -2,
  auth: -4,
  setWatches: -8,
} as const;

// ---- org.apache.zookeeper.data --------------------------------------------------------------

export const Id = struct({ scheme: ustring, id: ustring });
export type Id = ValueOf<typeof Id>;

export const ACL = struct({ perms: int, id: Id });
export type ACL = ValueOf<typeof ACL>;

export const Stat = struct({
  czxid: long,
  mzxid: long,
  ctime: long,
  mtime: long,
  version: int,
  cversion: int,
  aversion: int,
  ephemeralOwner: long,
  dataLength: int,
  numChildren: int,
  pzxid: long,
});
export type Stat = ValueOf<typeof Stat>;

export const ClientInfo = struct({ authScheme: ustring, user: ustring });
export type ClientInfo = ValueOf<typeof ClientInfo>;

// ---- connect --------------------------------------------------------------------------------

/** A trailing boolean that old clients leave out: undefined when absent, and then not written. */
const optionalTrailingBool: JuteCodec<boolean | undefined> = {
  write: (w, v) => void (v === undefined ? w : w.writeBool(v)),
  read: (r) => (r.remainingBytes === 0 ? undefined : r.readBool()),
  minBytes: 0,
};

export const ConnectRequest = struct({
  protocolVersion: int,
  lastZxidSeen: long,
  timeOut: int,
  sessionId: long,
  passwd: buffer,
  /** Absent (undefined) from clients older than 3.3; ZooKeeper then treats the client as old. */
  readOnly: optionalTrailingBool,
});
export type ConnectRequest = ValueOf<typeof ConnectRequest>;

export const ConnectResponse = struct({
  protocolVersion: int,
  timeOut: int,
  sessionId: long,
  passwd: buffer,
  readOnly: optionalTrailingBool,
});
export type ConnectResponse = ValueOf<typeof ConnectResponse>;

// ---- headers --------------------------------------------------------------------------------

export const RequestHeader = struct({ xid: int, type: int });
export type RequestHeader = ValueOf<typeof RequestHeader>;

export const ReplyHeader = struct({ xid: int, zxid: long, err: int });
export type ReplyHeader = ValueOf<typeof ReplyHeader>;

export const MultiHeader = struct({ type: int, done: bool, err: int });
export type MultiHeader = ValueOf<typeof MultiHeader>;

// ---- org.apache.zookeeper.proto requests and responses --------------------------------------

export const AuthPacket = struct({ type: int, scheme: ustring, auth: buffer });
export type AuthPacket = ValueOf<typeof AuthPacket>;

export const SetWatches = struct({
  relativeZxid: long,
  dataWatches: vector(ustring),
  existWatches: vector(ustring),
  childWatches: vector(ustring),
});
export type SetWatches = ValueOf<typeof SetWatches>;

export const SetWatches2 = struct({
  relativeZxid: long,
  dataWatches: vector(ustring),
  existWatches: vector(ustring),
  childWatches: vector(ustring),
  persistentWatches: vector(ustring),
  persistentRecursiveWatches: vector(ustring),
});
export type SetWatches2 = ValueOf<typeof SetWatches2>;

export const GetDataRequest = struct({ path: ustring, watch: bool });
export type GetDataRequest = ValueOf<typeof GetDataRequest>;
export const SetDataRequest = struct({ path: ustring, data: buffer, version: int });
export type SetDataRequest = ValueOf<typeof SetDataRequest>;
export const ReconfigRequest = struct({ joiningServers: ustring, leavingServers: ustring, newMembers: ustring, curConfigId: long });
export type ReconfigRequest = ValueOf<typeof ReconfigRequest>;
export const SetDataResponse = struct({ stat: Stat });
export type SetDataResponse = ValueOf<typeof SetDataResponse>;
export const CreateRequest = struct({ path: ustring, data: buffer, acl: vector(ACL), flags: int });
export type CreateRequest = ValueOf<typeof CreateRequest>;
export const CreateTTLRequest = struct({ path: ustring, data: buffer, acl: vector(ACL), flags: int, ttl: long });
export type CreateTTLRequest = ValueOf<typeof CreateTTLRequest>;
export const DeleteRequest = struct({ path: ustring, version: int });
export type DeleteRequest = ValueOf<typeof DeleteRequest>;
export const GetChildrenRequest = struct({ path: ustring, watch: bool });
export type GetChildrenRequest = ValueOf<typeof GetChildrenRequest>;
export const GetAllChildrenNumberRequest = struct({ path: ustring });
export type GetAllChildrenNumberRequest = ValueOf<typeof GetAllChildrenNumberRequest>;
export const GetChildren2Request = struct({ path: ustring, watch: bool });
export type GetChildren2Request = ValueOf<typeof GetChildren2Request>;
export const CheckVersionRequest = struct({ path: ustring, version: int });
export type CheckVersionRequest = ValueOf<typeof CheckVersionRequest>;
export const SyncRequest = struct({ path: ustring });
export type SyncRequest = ValueOf<typeof SyncRequest>;
export const SyncResponse = struct({ path: ustring });
export type SyncResponse = ValueOf<typeof SyncResponse>;
export const GetACLRequest = struct({ path: ustring });
export type GetACLRequest = ValueOf<typeof GetACLRequest>;
export const SetACLRequest = struct({ path: ustring, acl: vector(ACL), version: int });
export type SetACLRequest = ValueOf<typeof SetACLRequest>;
export const SetACLResponse = struct({ stat: Stat });
export type SetACLResponse = ValueOf<typeof SetACLResponse>;
export const AddWatchRequest = struct({ path: ustring, mode: int });
export type AddWatchRequest = ValueOf<typeof AddWatchRequest>;
export const WatcherEvent = struct({ type: int, state: int, path: ustring });
export type WatcherEvent = ValueOf<typeof WatcherEvent>;
export const ErrorResponse = struct({ err: int });
export type ErrorResponse = ValueOf<typeof ErrorResponse>;
export const CreateResponse = struct({ path: ustring });
export type CreateResponse = ValueOf<typeof CreateResponse>;
export const Create2Response = struct({ path: ustring, stat: Stat });
export type Create2Response = ValueOf<typeof Create2Response>;
export const ExistsRequest = struct({ path: ustring, watch: bool });
export type ExistsRequest = ValueOf<typeof ExistsRequest>;
export const ExistsResponse = struct({ stat: Stat });
export type ExistsResponse = ValueOf<typeof ExistsResponse>;
export const GetDataResponse = struct({ data: buffer, stat: Stat });
export type GetDataResponse = ValueOf<typeof GetDataResponse>;
export const GetChildrenResponse = struct({ children: vector(ustring) });
export type GetChildrenResponse = ValueOf<typeof GetChildrenResponse>;
export const GetAllChildrenNumberResponse = struct({ totalNumber: int });
export type GetAllChildrenNumberResponse = ValueOf<typeof GetAllChildrenNumberResponse>;
export const GetChildren2Response = struct({ children: vector(ustring), stat: Stat });
export type GetChildren2Response = ValueOf<typeof GetChildren2Response>;
export const GetACLResponse = struct({ acl: vector(ACL), stat: Stat });
export type GetACLResponse = ValueOf<typeof GetACLResponse>;
export const CheckWatchesRequest = struct({ path: ustring, type: int });
export type CheckWatchesRequest = ValueOf<typeof CheckWatchesRequest>;
export const RemoveWatchesRequest = struct({ path: ustring, type: int });
export type RemoveWatchesRequest = ValueOf<typeof RemoveWatchesRequest>;
export const GetEphemeralsRequest = struct({ prefixPath: ustring });
export type GetEphemeralsRequest = ValueOf<typeof GetEphemeralsRequest>;
export const GetEphemeralsResponse = struct({ ephemerals: vector(ustring) });
export type GetEphemeralsResponse = ValueOf<typeof GetEphemeralsResponse>;
export const WhoAmIResponse = struct({ clientInfo: vector(ClientInfo) });
export type WhoAmIResponse = ValueOf<typeof WhoAmIResponse>;
/** SASL (opcode sasl = 102), sent by clients configured for SASL; not in issue 7's list. */
export const GetSASLRequest = struct({ token: buffer });
export type GetSASLRequest = ValueOf<typeof GetSASLRequest>;
export const SetSASLResponse = struct({ token: buffer });
export type SetSASLResponse = ValueOf<typeof SetSASLResponse>;

/**
 * deleteContainer has no jute record: ZooKeeper 3.8's PrepRequestProcessor reads the whole body
 * as the path's UTF-8 bytes (the request normally comes from its own ContainerManager).
 */
const UTF8_ENCODER = new TextEncoder();
const UTF8_DECODER = new TextDecoder("utf-8", { fatal: false });
export const DeleteContainerRequest: JuteCodec<{ path: string }> = {
  write: (w, v) => void w.writeRaw(UTF8_ENCODER.encode(v.path)),
  read: (r) => ({ path: UTF8_DECODER.decode(r.readRest()) }),
  minBytes: 0,
};
export type DeleteContainerRequest = ValueOf<typeof DeleteContainerRequest>;

// ---- multi ----------------------------------------------------------------------------------

/** One op of a multi or multiRead, as MultiOperationRecord accepts them in 3.8. */
export type MultiOp =
  | { type: typeof OpCode.create | typeof OpCode.create2 | typeof OpCode.createContainer; request: CreateRequest }
  | { type: typeof OpCode.createTTL; request: CreateTTLRequest }
  | { type: typeof OpCode.delete; request: DeleteRequest }
  | { type: typeof OpCode.setData; request: SetDataRequest }
  | { type: typeof OpCode.check; request: CheckVersionRequest }
  | { type: typeof OpCode.getChildren; request: GetChildrenRequest }
  | { type: typeof OpCode.getData; request: GetDataRequest };

function multiOpCodec(type: number): JuteCodec<MultiOp["request"]> {
  switch (type) {
    case OpCode.create:
    case OpCode.create2:
    case OpCode.createContainer:
      return CreateRequest;
    case OpCode.createTTL:
      return CreateTTLRequest;
    case OpCode.delete:
      return DeleteRequest;
    case OpCode.setData:
      return SetDataRequest;
    case OpCode.check:
      return CheckVersionRequest;
    case OpCode.getChildren:
      return GetChildrenRequest;
    case OpCode.getData:
      return GetDataRequest;
    default:
      throw new JuteError("unknown-type", `multi op type ${type}`);
  }
}

const MULTI_END: MultiHeader = { type: -1, done: true, err: -1 };

/**
 * MultiOperationRecord: per op a MultiHeader(type, done=false, err=-1) and the op's request
 * record, then MultiHeader(-1, done=true, -1). Decoding stops at the first header with done set,
 * whatever its type and err (as ZooKeeper does).
 */
export const MultiRequest: JuteCodec<{ ops: MultiOp[] }> = {
  write(writer, value) {
    for (const op of value.ops) {
      MultiHeader.write(writer, { type: op.type, done: false, err: -1 });
      multiOpCodec(op.type).write(writer, op.request);
    }
    MultiHeader.write(writer, MULTI_END);
  },
  read(reader) {
    const ops: MultiOp[] = [];
    for (let header = MultiHeader.read(reader); !header.done; header = MultiHeader.read(reader)) {
      ops.push({ type: header.type, request: multiOpCodec(header.type).read(reader) } as MultiOp);
    }
    return { ops };
  },
  minBytes: MultiHeader.minBytes,
};
export type MultiRequest = ValueOf<typeof MultiRequest>;

/** One result of a multi or multiRead, as MultiResponse carries them in 3.8. */
export type MultiResult =
  | { type: typeof OpCode.create; path: string | null }
  | { type: typeof OpCode.create2; path: string | null; stat: Stat }
  | { type: typeof OpCode.delete }
  | { type: typeof OpCode.setData; stat: Stat }
  | { type: typeof OpCode.check }
  | { type: typeof OpCode.getChildren; children: (string | null)[] | null }
  | { type: typeof OpCode.getData; data: Uint8Array | null; stat: Stat }
  | { type: typeof OpCode.error; err: number };

/**
 * MultiResponse: per result a MultiHeader(type, done=false, err) — err is the error code for an
 * ErrorResult and 0 otherwise — then the result's body (none for delete and check; ErrorResponse
 * for an error), then MultiHeader(-1, done=true, -1). A failed 3.8 multi answers with one
 * ErrorResult per op: 0 for the ops before the failing one, its code, then
 * RUNTIMEINCONSISTENCY (-2) for the rest; that list is the server's to build.
 */
export const MultiResponse: JuteCodec<{ results: MultiResult[] }> = {
  write(writer, value) {
    for (const result of value.results) {
      MultiHeader.write(writer, { type: result.type, done: false, err: result.type === OpCode.error ? result.err : 0 });
      switch (result.type) {
        case OpCode.create:
          CreateResponse.write(writer, { path: result.path });
          break;
        case OpCode.create2:
          Create2Response.write(writer, { path: result.path, stat: result.stat });
          break;
        case OpCode.delete:
        case OpCode.check:
          break;
        case OpCode.setData:
          SetDataResponse.write(writer, { stat: result.stat });
          break;
        case OpCode.getChildren:
          GetChildrenResponse.write(writer, { children: result.children });
          break;
        case OpCode.getData:
          GetDataResponse.write(writer, { data: result.data, stat: result.stat });
          break;
        case OpCode.error:
          ErrorResponse.write(writer, { err: result.err });
          break;
      }
    }
    MultiHeader.write(writer, MULTI_END);
  },
  read(reader) {
    const results: MultiResult[] = [];
    for (let header = MultiHeader.read(reader); !header.done; header = MultiHeader.read(reader)) {
      switch (header.type) {
        case OpCode.create:
          results.push({ type: OpCode.create, ...CreateResponse.read(reader) });
          break;
        case OpCode.create2:
          results.push({ type: OpCode.create2, ...Create2Response.read(reader) });
          break;
        case OpCode.delete:
          results.push({ type: OpCode.delete });
          break;
        case OpCode.check:
          results.push({ type: OpCode.check });
          break;
        case OpCode.setData:
          results.push({ type: OpCode.setData, ...SetDataResponse.read(reader) });
          break;
        case OpCode.getChildren:
          results.push({ type: OpCode.getChildren, ...GetChildrenResponse.read(reader) });
          break;
        case OpCode.getData:
          results.push({ type: OpCode.getData, ...GetDataResponse.read(reader) });
          break;
        case OpCode.error:
          results.push({ type: OpCode.error, ...ErrorResponse.read(reader) });
          break;
        default:
          throw new JuteError("unknown-type", `multi result type ${header.type}`);
      }
    }
    return { results };
  },
  minBytes: MultiHeader.minBytes,
};
export type MultiResponse = ValueOf<typeof MultiResponse>;

// ---- which record follows which header ------------------------------------------------------

/**
 * The request body after a RequestHeader of this type, or undefined for a type ZooKeeper 3.8
 * clients do not send (createSession, error, notification). `empty` = no body.
 */
export function requestBodyCodec(type: number): JuteCodec<unknown> | undefined {
  switch (type) {
    case OpCode.create:
    case OpCode.create2:
    case OpCode.createContainer:
      return CreateRequest;
    case OpCode.createTTL:
      return CreateTTLRequest;
    case OpCode.delete:
      return DeleteRequest;
    case OpCode.deleteContainer:
      return DeleteContainerRequest;
    case OpCode.exists:
      return ExistsRequest;
    case OpCode.getData:
      return GetDataRequest;
    case OpCode.setData:
      return SetDataRequest;
    case OpCode.getACL:
      return GetACLRequest;
    case OpCode.setACL:
      return SetACLRequest;
    case OpCode.getChildren:
      return GetChildrenRequest;
    case OpCode.getChildren2:
      return GetChildren2Request;
    case OpCode.sync:
      return SyncRequest;
    case OpCode.check:
      return CheckVersionRequest;
    case OpCode.multi:
    case OpCode.multiRead:
      return MultiRequest;
    case OpCode.reconfig:
      return ReconfigRequest;
    case OpCode.checkWatches:
      return CheckWatchesRequest;
    case OpCode.removeWatches:
      return RemoveWatchesRequest;
    case OpCode.addWatch:
      return AddWatchRequest;
    case OpCode.auth:
      return AuthPacket;
    case OpCode.setWatches:
      return SetWatches;
    case OpCode.setWatches2:
      return SetWatches2;
    case OpCode.getEphemerals:
      return GetEphemeralsRequest;
    case OpCode.getAllChildrenNumber:
      return GetAllChildrenNumberRequest;
    case OpCode.sasl:
      return GetSASLRequest;
    case OpCode.ping:
    case OpCode.whoAmI:
    case OpCode.closeSession:
      return empty;
    default:
      return undefined;
  }
}

/** A client request frame: RequestHeader then the body its type calls for. */
export interface DecodedRequest {
  header: RequestHeader;
  body: unknown;
}

/** Decodes one request frame's record; an unknown type is a JuteError("unknown-type"). */
export function decodeRequest(bytes: Uint8Array, options: DecodeOptions = {}): DecodedRequest {
  const reader = new JuteReader(bytes, options);
  const header = RequestHeader.read(reader);
  const codec = requestBodyCodec(header.type);
  if (codec === undefined) throw new JuteError("unknown-type", `request type ${header.type}`);
  const body = codec.read(reader);
  if (options.trailing === "reject") reader.expectEnd("request");
  return { header, body };
}

/** Encodes a ReplyHeader and, when given, the body after it. */
export function encodeReply<T>(header: ReplyHeader, body?: { codec: JuteCodec<T>; value: T }): Uint8Array {
  const writer = new JuteWriter();
  ReplyHeader.write(writer, header);
  if (body !== undefined) body.codec.write(writer, body.value);
  return writer.toBytes();
}

/** A watch notification: ReplyHeader(xid -1, zxid -1, err 0) then the WatcherEvent. */
export function encodeNotification(event: WatcherEvent): Uint8Array {
  return encodeReply({ xid: Xid.notification, zxid: -1n, err: 0 }, { codec: WatcherEvent, value: event });
}
