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

/** A record's value; exported under the record's own name only where other code names that type. */
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

/** Shared, so that a bodiless record or multi result costs no allocation of its own. */
const NO_FIELDS: Record<never, never> = Object.freeze({});

/** A record with no fields on the wire (ping, closeSession, whoAmI requests; delete's reply). */
export const empty: JuteCodec<Record<never, never>> = { write: () => {}, read: () => NO_FIELDS, minBytes: 0 };

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

/** The xids ZooKeeper reserves (ClientCnxn). */
export const Xid = {
  notification: -1,
  ping: -2,
  auth: -4,
  setWatches: -8,
} as const;

// ---- org.apache.zookeeper.data --------------------------------------------------------------

export const Id = struct({ scheme: ustring, id: ustring });

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

const ustrings = vector(ustring);
const acls = vector(ACL);

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

// ZooKeeper made SetWatches2 and CreateTTLRequest by appending fields to SetWatches and
// CreateRequest; spreading the older field list keeps the wire order.
const SET_WATCHES_FIELDS = { relativeZxid: long, dataWatches: ustrings, existWatches: ustrings, childWatches: ustrings };
const CREATE_FIELDS = { path: ustring, data: buffer, acl: acls, flags: int };

export const SetWatches = struct(SET_WATCHES_FIELDS);
export type SetWatches = ValueOf<typeof SetWatches>;
export const SetWatches2 = struct({ ...SET_WATCHES_FIELDS, persistentWatches: ustrings, persistentRecursiveWatches: ustrings });
export type SetWatches2 = ValueOf<typeof SetWatches2>;

export const GetDataRequest = struct({ path: ustring, watch: bool });
export type GetDataRequest = ValueOf<typeof GetDataRequest>;
export const SetDataRequest = struct({ path: ustring, data: buffer, version: int });
export type SetDataRequest = ValueOf<typeof SetDataRequest>;
export const ReconfigRequest = struct({ joiningServers: ustring, leavingServers: ustring, newMembers: ustring, curConfigId: long });
export type ReconfigRequest = ValueOf<typeof ReconfigRequest>;
export const SetDataResponse = struct({ stat: Stat });
export const CreateRequest = struct(CREATE_FIELDS);
export type CreateRequest = ValueOf<typeof CreateRequest>;
export const CreateTTLRequest = struct({ ...CREATE_FIELDS, ttl: long });
export type CreateTTLRequest = ValueOf<typeof CreateTTLRequest>;
export const DeleteRequest = struct({ path: ustring, version: int });
export type DeleteRequest = ValueOf<typeof DeleteRequest>;
export const GetChildrenRequest = struct({ path: ustring, watch: bool });
export type GetChildrenRequest = ValueOf<typeof GetChildrenRequest>;
export const GetAllChildrenNumberRequest = struct({ path: ustring });
export type GetAllChildrenNumberRequest = ValueOf<typeof GetAllChildrenNumberRequest>;
export const GetChildren2Request = struct({ path: ustring, watch: bool });
export const CheckVersionRequest = struct({ path: ustring, version: int });
export const SyncRequest = struct({ path: ustring });
export type SyncRequest = ValueOf<typeof SyncRequest>;
export const SyncResponse = struct({ path: ustring });
export const GetACLRequest = struct({ path: ustring });
export type GetACLRequest = ValueOf<typeof GetACLRequest>;
export const SetACLRequest = struct({ path: ustring, acl: acls, version: int });
export type SetACLRequest = ValueOf<typeof SetACLRequest>;
export const SetACLResponse = struct({ stat: Stat });
export const AddWatchRequest = struct({ path: ustring, mode: int });
export type AddWatchRequest = ValueOf<typeof AddWatchRequest>;
export const WatcherEvent = struct({ type: int, state: int, path: ustring });
export type WatcherEvent = ValueOf<typeof WatcherEvent>;
export const ErrorResponse = struct({ err: int });
export const CreateResponse = struct({ path: ustring });
export const Create2Response = struct({ path: ustring, stat: Stat });
export const ExistsRequest = struct({ path: ustring, watch: bool });
export const ExistsResponse = struct({ stat: Stat });
export const GetDataResponse = struct({ data: buffer, stat: Stat });
export const GetChildrenResponse = struct({ children: ustrings });
export const GetAllChildrenNumberResponse = struct({ totalNumber: int });
export const GetChildren2Response = struct({ children: ustrings, stat: Stat });
export const GetACLResponse = struct({ acl: acls, stat: Stat });
export const CheckWatchesRequest = struct({ path: ustring, type: int });
export type CheckWatchesRequest = ValueOf<typeof CheckWatchesRequest>;
export const RemoveWatchesRequest = struct({ path: ustring, type: int });
export const GetEphemeralsRequest = struct({ prefixPath: ustring });
export type GetEphemeralsRequest = ValueOf<typeof GetEphemeralsRequest>;
export const GetEphemeralsResponse = struct({ ephemerals: ustrings });
export const WhoAmIResponse = struct({ clientInfo: vector(ClientInfo) });
/** SASL (opcode sasl = 102), sent by clients configured for SASL; not in issue 7's list. */
export const GetSASLRequest = struct({ token: buffer });
export type GetSASLRequest = ValueOf<typeof GetSASLRequest>;
export const SetSASLResponse = struct({ token: buffer });

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

// ---- multi ----------------------------------------------------------------------------------

/** So that a MultiResult shows as one object type, not as an intersection. */
type Flat<T> = { [K in keyof T]: T[K] };

/** Codecs by opcode: built once, so a lookup on the request path allocates nothing. */
function byOpCode<C>(table: Readonly<Record<number, C>>): ReadonlyMap<number, C> {
  return new Map(Object.entries(table).map(([type, codec]) => [Number(type), codec]));
}

/** The body codec for a header's type; an unknown type is a JuteError("unknown-type"). */
function codecOf<C>(table: ReadonlyMap<number, C>, type: number, what: string): C {
  const codec = table.get(type);
  if (codec === undefined) throw new JuteError("unknown-type", `${what} type ${type}`);
  return codec;
}

const MULTI_END: MultiHeader = { type: -1, done: true, err: -1 };

/**
 * The items of MultiOperationRecord and MultiResponse: each writes its own MultiHeader(type,
 * done=false, err) and body; then MultiHeader(-1, done=true, -1). Reading stops at the first
 * header with done set, whatever its type and err (as ZooKeeper does).
 */
function multiItems<T>(writeItem: (writer: JuteWriter, item: T) => void, readItem: (reader: JuteReader, type: number) => T): JuteCodec<T[]> {
  return {
    write(writer, items) {
      for (const item of items) writeItem(writer, item);
      MultiHeader.write(writer, MULTI_END);
    },
    read(reader) {
      const items: T[] = [];
      for (let header = MultiHeader.read(reader); !header.done; header = MultiHeader.read(reader)) items.push(readItem(reader, header.type));
      return items;
    },
    minBytes: MultiHeader.minBytes,
  };
}

/**
 * The ops MultiOperationRecord accepts in 3.8, by type, each carrying the same record as its
 * standalone request (requestBodyCodec starts from this table).
 */
const MULTI_OP_REQUESTS = {
  [OpCode.create]: CreateRequest,
  [OpCode.create2]: CreateRequest,
  [OpCode.createContainer]: CreateRequest,
  [OpCode.createTTL]: CreateTTLRequest,
  [OpCode.delete]: DeleteRequest,
  [OpCode.setData]: SetDataRequest,
  [OpCode.check]: CheckVersionRequest,
  [OpCode.getChildren]: GetChildrenRequest,
  [OpCode.getData]: GetDataRequest,
};
type MultiOpRequests = typeof MULTI_OP_REQUESTS;
const MULTI_OP_CODECS = byOpCode<JuteCodec<MultiOp["request"]>>(MULTI_OP_REQUESTS);

/** One op of a multi or multiRead. */
export type MultiOp = { [K in keyof MultiOpRequests]: { type: K; request: ValueOf<MultiOpRequests[K]> } }[keyof MultiOpRequests];

/** MultiOperationRecord: per op a MultiHeader(type, done=false, err=-1) and the op's request record. */
export const MultiRequest = struct({
  ops: multiItems<MultiOp>(
    (writer, op) => {
      MultiHeader.write(writer, { type: op.type, done: false, err: -1 });
      codecOf(MULTI_OP_CODECS, op.type, "multi op").write(writer, op.request);
    },
    (reader, type) => ({ type, request: codecOf(MULTI_OP_CODECS, type, "multi op").read(reader) }) as MultiOp,
  ),
});
export type MultiRequest = ValueOf<typeof MultiRequest>;

/** The body after a MultiResponse header, by result type: none for delete and check. */
const MULTI_RESULT_BODIES = {
  [OpCode.create]: CreateResponse,
  [OpCode.create2]: Create2Response,
  [OpCode.delete]: empty,
  [OpCode.setData]: SetDataResponse,
  [OpCode.check]: empty,
  [OpCode.getChildren]: GetChildrenResponse,
  [OpCode.getData]: GetDataResponse,
  [OpCode.error]: ErrorResponse,
};
type MultiResultBodies = typeof MULTI_RESULT_BODIES;
const MULTI_RESULT_CODECS = byOpCode<JuteCodec<object>>(MULTI_RESULT_BODIES);

/** One result of a multi or multiRead: its type and its body's fields, side by side. */
export type MultiResult = { [K in keyof MultiResultBodies]: Flat<{ type: K } & ValueOf<MultiResultBodies[K]>> }[keyof MultiResultBodies];

/**
 * MultiResponse: per result a MultiHeader(type, done=false, err) — err is the error code for an
 * ErrorResult and 0 otherwise — then the result's body. A failed 3.8 multi answers with one
 * ErrorResult per op: 0 for the ops before the failing one, its code, then RUNTIMEINCONSISTENCY
 * (-2) for the rest; that list is the server's to build.
 */
export const MultiResponse = struct({
  results: multiItems<MultiResult>(
    (writer, result) => {
      MultiHeader.write(writer, { type: result.type, done: false, err: result.type === OpCode.error ? result.err : 0 });
      // The body codec writes only its own fields, so the result goes as it is, without a copy.
      codecOf(MULTI_RESULT_CODECS, result.type, "multi result").write(writer, result);
    },
    (reader, type) => ({ type, ...codecOf(MULTI_RESULT_CODECS, type, "multi result").read(reader) }) as MultiResult,
  ),
});

// ---- which record follows which header ------------------------------------------------------

/**
 * The request body after a RequestHeader, by type; ZooKeeper 3.8 clients send no other types
 * (createSession, error, notification). `empty` = no body.
 */
const REQUEST_BODIES = byOpCode<JuteCodec<unknown>>({
  ...MULTI_OP_REQUESTS,
  [OpCode.deleteContainer]: DeleteContainerRequest,
  [OpCode.exists]: ExistsRequest,
  [OpCode.getACL]: GetACLRequest,
  [OpCode.setACL]: SetACLRequest,
  [OpCode.getChildren2]: GetChildren2Request,
  [OpCode.sync]: SyncRequest,
  [OpCode.multi]: MultiRequest,
  [OpCode.multiRead]: MultiRequest,
  [OpCode.reconfig]: ReconfigRequest,
  [OpCode.checkWatches]: CheckWatchesRequest,
  [OpCode.removeWatches]: RemoveWatchesRequest,
  [OpCode.addWatch]: AddWatchRequest,
  [OpCode.auth]: AuthPacket,
  [OpCode.setWatches]: SetWatches,
  [OpCode.setWatches2]: SetWatches2,
  [OpCode.getEphemerals]: GetEphemeralsRequest,
  [OpCode.getAllChildrenNumber]: GetAllChildrenNumberRequest,
  [OpCode.sasl]: GetSASLRequest,
  [OpCode.ping]: empty,
  [OpCode.whoAmI]: empty,
  [OpCode.closeSession]: empty,
});

/** The request body after a RequestHeader of this type, or undefined for a type 3.8 clients do not send. */
export function requestBodyCodec(type: number): JuteCodec<unknown> | undefined {
  return REQUEST_BODIES.get(type);
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
  const body = codecOf(REQUEST_BODIES, header.type, "request").read(reader);
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
