/**
 * The ZooKeeper wire codec (src/server/zk-wire): jute primitives, framing and ZooKeeper 3.8's
 * client records. Golden bytes are computed by hand from zookeeper.jute's field order.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";

import { JUTE_FIELD_LENGTH_MAX_BYTES, JUTE_MAX_BUFFER_BYTES, JuteError, JuteReader, JuteWriter } from "../../src/server/zk-wire/jute.js";
import { encodeFrame, FrameSplitter } from "../../src/server/zk-wire/frames.js";
import * as R from "../../src/server/zk-wire/records.js";
import { OpCode, Xid, type JuteCodec, type MultiOp, type MultiResult } from "../../src/server/zk-wire/records.js";

// ---- arbitraries ----------------------------------------------------------------------------

/** fc.record with plain objects (decoded records have Object.prototype; deepStrictEqual checks it). */
function rec<T>(shape: { [K in keyof T]: fc.Arbitrary<T[K]> }): fc.Arbitrary<T> {
  return fc.record(shape, { noNullPrototype: true });
}

const i32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const i64 = fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n });
const bool = fc.boolean();
const str = fc.option(fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: "grapheme", maxLength: 6 })), { nil: null });
const buf = fc.option(fc.uint8Array({ maxLength: 16 }), { nil: null });
const vec = <T>(item: fc.Arbitrary<T>) => fc.option(fc.array(item, { maxLength: 4 }), { nil: null });
const id = rec({ scheme: str, id: str });
const acl = rec({ perms: i32, id });
const stat = rec({
  czxid: i64,
  mzxid: i64,
  ctime: i64,
  mtime: i64,
  version: i32,
  cversion: i32,
  aversion: i32,
  ephemeralOwner: i64,
  dataLength: i32,
  numChildren: i32,
  pzxid: i64,
});
const createRequest = rec({ path: str, data: buf, acl: vec(acl), flags: i32 });
const createTTLRequest = rec({ path: str, data: buf, acl: vec(acl), flags: i32, ttl: i64 });
const pathVersion = rec({ path: str, version: i32 });
const pathWatch = rec({ path: str, watch: bool });
const setDataRequest = rec({ path: str, data: buf, version: i32 });

const multiOp: fc.Arbitrary<MultiOp> = fc.oneof(
  rec({ type: fc.constantFrom(OpCode.create, OpCode.create2, OpCode.createContainer), request: createRequest }),
  rec({ type: fc.constant(OpCode.createTTL), request: createTTLRequest }),
  rec({ type: fc.constant(OpCode.delete), request: pathVersion }),
  rec({ type: fc.constant(OpCode.setData), request: setDataRequest }),
  rec({ type: fc.constant(OpCode.check), request: pathVersion }),
  rec({ type: fc.constant(OpCode.getChildren), request: pathWatch }),
  rec({ type: fc.constant(OpCode.getData), request: pathWatch }),
);
const multiResult: fc.Arbitrary<MultiResult> = fc.oneof(
  rec({ type: fc.constant(OpCode.create), path: str }),
  rec({ type: fc.constant(OpCode.create2), path: str, stat }),
  rec({ type: fc.constant(OpCode.delete) }),
  rec({ type: fc.constant(OpCode.setData), stat }),
  rec({ type: fc.constant(OpCode.check) }),
  rec({ type: fc.constant(OpCode.getChildren), children: vec(str) }),
  rec({ type: fc.constant(OpCode.getData), data: buf, stat }),
  rec({ type: fc.constant(OpCode.error), err: i32 }),
);
const strings = vec(str);

interface Case {
  name: string;
  codec: JuteCodec<unknown>;
  value: fc.Arbitrary<unknown>;
}

const CASES: Case[] = [
  { name: "Id", codec: R.Id, value: id },
  { name: "ACL", codec: R.ACL, value: acl },
  { name: "Stat", codec: R.Stat, value: stat },
  { name: "ClientInfo", codec: R.ClientInfo, value: rec({ authScheme: str, user: str }) },
  {
    name: "ConnectRequest",
    codec: R.ConnectRequest,
    value: rec({ protocolVersion: i32, lastZxidSeen: i64, timeOut: i32, sessionId: i64, passwd: buf, readOnly: fc.option(bool, { nil: undefined }) }),
  },
  {
    name: "ConnectResponse",
    codec: R.ConnectResponse,
    value: rec({ protocolVersion: i32, timeOut: i32, sessionId: i64, passwd: buf, readOnly: fc.option(bool, { nil: undefined }) }),
  },
  { name: "RequestHeader", codec: R.RequestHeader, value: rec({ xid: i32, type: i32 }) },
  { name: "ReplyHeader", codec: R.ReplyHeader, value: rec({ xid: i32, zxid: i64, err: i32 }) },
  { name: "MultiHeader", codec: R.MultiHeader, value: rec({ type: i32, done: bool, err: i32 }) },
  { name: "AuthPacket", codec: R.AuthPacket, value: rec({ type: i32, scheme: str, auth: buf }) },
  {
    name: "SetWatches",
    codec: R.SetWatches,
    value: rec({ relativeZxid: i64, dataWatches: strings, existWatches: strings, childWatches: strings }),
  },
  {
    name: "SetWatches2",
    codec: R.SetWatches2,
    value: rec({
      relativeZxid: i64,
      dataWatches: strings,
      existWatches: strings,
      childWatches: strings,
      persistentWatches: strings,
      persistentRecursiveWatches: strings,
    }),
  },
  { name: "GetDataRequest", codec: R.GetDataRequest, value: pathWatch },
  { name: "SetDataRequest", codec: R.SetDataRequest, value: setDataRequest },
  {
    name: "ReconfigRequest",
    codec: R.ReconfigRequest,
    value: rec({ joiningServers: str, leavingServers: str, newMembers: str, curConfigId: i64 }),
  },
  { name: "SetDataResponse", codec: R.SetDataResponse, value: rec({ stat }) },
  { name: "CreateRequest", codec: R.CreateRequest, value: createRequest },
  { name: "CreateTTLRequest", codec: R.CreateTTLRequest, value: createTTLRequest },
  { name: "DeleteRequest", codec: R.DeleteRequest, value: pathVersion },
  { name: "DeleteContainerRequest", codec: R.DeleteContainerRequest, value: rec({ path: fc.string({ maxLength: 12 }) }) },
  { name: "GetChildrenRequest", codec: R.GetChildrenRequest, value: pathWatch },
  { name: "GetAllChildrenNumberRequest", codec: R.GetAllChildrenNumberRequest, value: rec({ path: str }) },
  { name: "GetChildren2Request", codec: R.GetChildren2Request, value: pathWatch },
  { name: "CheckVersionRequest", codec: R.CheckVersionRequest, value: pathVersion },
  { name: "SyncRequest", codec: R.SyncRequest, value: rec({ path: str }) },
  { name: "SyncResponse", codec: R.SyncResponse, value: rec({ path: str }) },
  { name: "GetACLRequest", codec: R.GetACLRequest, value: rec({ path: str }) },
  { name: "SetACLRequest", codec: R.SetACLRequest, value: rec({ path: str, acl: vec(acl), version: i32 }) },
  { name: "SetACLResponse", codec: R.SetACLResponse, value: rec({ stat }) },
  { name: "AddWatchRequest", codec: R.AddWatchRequest, value: rec({ path: str, mode: i32 }) },
  { name: "WatcherEvent", codec: R.WatcherEvent, value: rec({ type: i32, state: i32, path: str }) },
  { name: "ErrorResponse", codec: R.ErrorResponse, value: rec({ err: i32 }) },
  { name: "CreateResponse", codec: R.CreateResponse, value: rec({ path: str }) },
  { name: "Create2Response", codec: R.Create2Response, value: rec({ path: str, stat }) },
  { name: "ExistsRequest", codec: R.ExistsRequest, value: pathWatch },
  { name: "ExistsResponse", codec: R.ExistsResponse, value: rec({ stat }) },
  { name: "GetDataResponse", codec: R.GetDataResponse, value: rec({ data: buf, stat }) },
  { name: "GetChildrenResponse", codec: R.GetChildrenResponse, value: rec({ children: strings }) },
  { name: "GetAllChildrenNumberResponse", codec: R.GetAllChildrenNumberResponse, value: rec({ totalNumber: i32 }) },
  { name: "GetChildren2Response", codec: R.GetChildren2Response, value: rec({ children: strings, stat }) },
  { name: "GetACLResponse", codec: R.GetACLResponse, value: rec({ acl: vec(acl), stat }) },
  { name: "CheckWatchesRequest", codec: R.CheckWatchesRequest, value: rec({ path: str, type: i32 }) },
  { name: "RemoveWatchesRequest", codec: R.RemoveWatchesRequest, value: rec({ path: str, type: i32 }) },
  { name: "GetEphemeralsRequest", codec: R.GetEphemeralsRequest, value: rec({ prefixPath: str }) },
  { name: "GetEphemeralsResponse", codec: R.GetEphemeralsResponse, value: rec({ ephemerals: strings }) },
  { name: "WhoAmIResponse", codec: R.WhoAmIResponse, value: rec({ clientInfo: vec(rec({ authScheme: str, user: str })) }) },
  { name: "GetSASLRequest", codec: R.GetSASLRequest, value: rec({ token: buf }) },
  { name: "SetSASLResponse", codec: R.SetSASLResponse, value: rec({ token: buf }) },
  { name: "MultiRequest", codec: R.MultiRequest, value: rec({ ops: fc.array(multiOp, { maxLength: 5 }) }) },
  { name: "MultiResponse", codec: R.MultiResponse, value: rec({ results: fc.array(multiResult, { maxLength: 5 }) }) },
];

function hex(text: string): Uint8Array {
  return Uint8Array.from(Buffer.from(text.replace(/\s+/g, ""), "hex"));
}

function isJuteError(reason?: string) {
  return (error: unknown) => error instanceof JuteError && (reason === undefined || error.reason === reason);
}

// ---- round trips ----------------------------------------------------------------------------

for (const { name, codec, value } of CASES) {
  test(`${name} survives encode then decode`, () => {
    fc.assert(
      fc.property(value, (v) => {
        assert.deepStrictEqual(R.decodeRecord(codec, R.encodeRecord(codec, v), { trailing: "reject" }), v);
      }),
      { numRuns: 200 },
    );
  });
}

test("every request type a 3.8 client sends survives encode then decodeRequest", () => {
  const typed = CASES.filter((c) => c.name.endsWith("Request") || c.name === "AuthPacket" || c.name.startsWith("SetWatches"));
  const byCodec = new Map(typed.map((c) => [c.codec, c.value]));
  const types = Object.values(OpCode).filter((t) => R.requestBodyCodec(t) !== undefined);
  for (const type of types) {
    const codec = R.requestBodyCodec(type)!;
    const body = codec === R.empty ? fc.constant({}) : byCodec.get(codec);
    assert.ok(body !== undefined, `no arbitrary for request type ${type}`);
    fc.assert(
      fc.property(i32, body, (xid, v) => {
        const writer = new JuteWriter();
        R.RequestHeader.write(writer, { xid, type });
        codec.write(writer, v);
        assert.deepStrictEqual(R.decodeRequest(writer.toBytes(), { trailing: "reject" }), { header: { xid, type }, body: v });
      }),
      { numRuns: 30 },
    );
  }
});

// ---- golden bytes ---------------------------------------------------------------------------

test("a ConnectRequest encodes field by field as zookeeper.jute orders it", () => {
  const request: R.ConnectRequest = {
    protocolVersion: 0,
    lastZxidSeen: 0x1_0000_0005n,
    timeOut: 30000,
    sessionId: 0x0123_4567_89ab_cdefn,
    passwd: new Uint8Array(16).fill(0xaa),
    readOnly: true,
  };
  const golden = hex(`
    00000000
    0000000100000005
    00007530
    0123456789abcdef
    00000010 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
    01`);
  assert.deepStrictEqual(R.encodeRecord(R.ConnectRequest, request), golden);
  assert.deepStrictEqual(encodeFrame(golden), Uint8Array.from([0, 0, 0, 45, ...golden]));
  assert.deepStrictEqual(R.decodeRecord(R.ConnectRequest, golden), request);
});

test("a ConnectRequest without the trailing readOnly byte (an old client) decodes", () => {
  const old = hex(`00000000 0000000000000000 00001388 0000000000000000 00000000`);
  assert.deepStrictEqual(R.decodeRecord(R.ConnectRequest, old, { trailing: "reject" }), {
    protocolVersion: 0,
    lastZxidSeen: 0n,
    timeOut: 5000,
    sessionId: 0n,
    passwd: new Uint8Array(0),
    readOnly: undefined,
  });
});

test("a create request is RequestHeader then CreateRequest(path, data, acl, flags)", () => {
  const writer = new JuteWriter();
  R.RequestHeader.write(writer, { xid: 1, type: OpCode.create });
  R.CreateRequest.write(writer, { path: "/a", data: Uint8Array.of(0x78), acl: [{ perms: 31, id: { scheme: "world", id: "anyone" } }], flags: 2 });
  const golden = hex(`
    00000001 00000001
    00000002 2f61
    00000001 78
    00000001 0000001f 00000005 776f726c64 00000006 616e796f6e65
    00000002`);
  assert.deepStrictEqual(writer.toBytes(), golden);
  assert.deepStrictEqual(R.decodeRequest(golden, { trailing: "reject" }).body, {
    path: "/a",
    data: Uint8Array.of(0x78),
    acl: [{ perms: 31, id: { scheme: "world", id: "anyone" } }],
    flags: 2,
  });
});

test("a ReplyHeader is xid, zxid as a 64-bit long, err", () => {
  assert.deepStrictEqual(R.encodeRecord(R.ReplyHeader, { xid: 5, zxid: 0x1_0000_0002n, err: -101 }), hex(`00000005 0000000100000002 ffffff9b`));
});

test("a notification is ReplyHeader(-1, -1, 0) then WatcherEvent(type, state, path)", () => {
  assert.deepStrictEqual(R.encodeNotification({ type: 3, state: 3, path: "/a" }), hex(`ffffffff ffffffffffffffff 00000000 00000003 00000003 00000002 2f61`));
});

test("a failed multi's results are MultiHeader(-1, false, err) + ErrorResponse(err) each, then the done header", () => {
  const results: MultiResult[] = [
    { type: OpCode.error, err: 0 },
    { type: OpCode.error, err: -101 },
    { type: OpCode.error, err: -2 },
  ];
  const golden = hex(`
    ffffffff 00 00000000 00000000
    ffffffff 00 ffffff9b ffffff9b
    ffffffff 00 fffffffe fffffffe
    ffffffff 01 ffffffff`);
  assert.deepStrictEqual(R.encodeRecord(R.MultiResponse, { results }), golden);
  assert.deepStrictEqual(R.decodeRecord(R.MultiResponse, golden, { trailing: "reject" }), { results });
});

test("a successful multi's results carry their bodies: create path, delete none, setData stat", () => {
  const stat: R.Stat = {
    czxid: 1n,
    mzxid: 2n,
    ctime: 3n,
    mtime: 4n,
    version: 5,
    cversion: 6,
    aversion: 7,
    ephemeralOwner: 8n,
    dataLength: 9,
    numChildren: 10,
    pzxid: 11n,
  };
  const golden = hex(`
    00000001 00 00000000 00000002 2f61
    00000002 00 00000000
    00000005 00 00000000
      0000000000000001 0000000000000002 0000000000000003 0000000000000004
      00000005 00000006 00000007 0000000000000008 00000009 0000000a 000000000000000b
    ffffffff 01 ffffffff`);
  assert.deepStrictEqual(
    R.encodeRecord(R.MultiResponse, { results: [{ type: OpCode.create, path: "/a" }, { type: OpCode.delete }, { type: OpCode.setData, stat }] }),
    golden,
  );
});

test("a multi request is MultiHeader(type, false, -1) + request per op, then MultiHeader(-1, true, -1)", () => {
  const golden = hex(`
    0000000d 00 ffffffff 00000002 2f61 00000003
    00000002 00 ffffffff 00000002 2f62 ffffffff
    ffffffff 01 ffffffff`);
  const ops: MultiOp[] = [
    { type: OpCode.check, request: { path: "/a", version: 3 } },
    { type: OpCode.delete, request: { path: "/b", version: -1 } },
  ];
  assert.deepStrictEqual(R.encodeRecord(R.MultiRequest, { ops }), golden);
  assert.deepStrictEqual(R.decodeRecord(R.MultiRequest, golden, { trailing: "reject" }), { ops });
});

test("a ping is RequestHeader(-2, 11) with no body; an auth is RequestHeader(-4, 100) then AuthPacket", () => {
  const ping = new JuteWriter();
  R.RequestHeader.write(ping, { xid: Xid.ping, type: OpCode.ping });
  assert.deepStrictEqual(ping.toBytes(), hex(`fffffffe 0000000b`));
  assert.deepStrictEqual(R.decodeRequest(ping.toBytes(), { trailing: "reject" }), { header: { xid: -2, type: 11 }, body: {} });
  const auth = hex(`fffffffc 00000064 00000000 00000006 646967657374 00000003 613a62`);
  assert.deepStrictEqual(R.decodeRequest(auth, { trailing: "reject" }), {
    header: { xid: Xid.auth, type: OpCode.auth },
    body: { type: 0, scheme: "digest", auth: Uint8Array.from(Buffer.from("a:b")) },
  });
});

test("a ConnectResponse is protocolVersion, timeOut, sessionId, passwd, readOnly", () => {
  const golden = hex(`00000000 00002710 0000000000000abc 00000002 0102 00`);
  const response: R.ConnectResponse = { protocolVersion: 0, timeOut: 10000, sessionId: 0xabcn, passwd: Uint8Array.of(1, 2), readOnly: false };
  assert.deepStrictEqual(R.encodeRecord(R.ConnectResponse, response), golden);
});

test("the special xids and a few opcodes have ZooKeeper's numbers", () => {
  assert.deepStrictEqual(Xid, { notification: -1, ping: -2, auth: -4, setWatches: -8 });
  assert.equal(OpCode.ping, 11);
  assert.equal(OpCode.multiRead, 22);
  assert.equal(OpCode.whoAmI, 107);
  assert.equal(OpCode.closeSession, -11);
});

// ---- hostile input --------------------------------------------------------------------------

test("every record cut short at every point is a JuteError, never another exception", () => {
  for (const { name, codec, value } of CASES) {
    if (codec === R.DeleteContainerRequest) continue; // raw rest-of-frame: any prefix is a path
    fc.assert(
      fc.property(value, (v) => {
        const bytes = R.encodeRecord(codec, v);
        for (let cut = 0; cut < bytes.byteLength; cut++) {
          // ConnectRequest and ConnectResponse end in an optional readOnly byte.
          const connect = name === "ConnectRequest" || name === "ConnectResponse" ? (v as { readOnly?: boolean }) : undefined;
          const optionalTail = connect !== undefined && cut === bytes.byteLength - 1 && connect.readOnly !== undefined;
          if (optionalTail) {
            assert.deepStrictEqual(R.decodeRecord(codec, bytes.subarray(0, cut)), { ...connect, readOnly: undefined });
            continue;
          }
          assert.throws(() => R.decodeRecord(codec, bytes.subarray(0, cut)), isJuteError("truncated"), `${name} cut at ${cut}`);
        }
      }),
      { numRuns: 25 },
    );
  }
});

test("random bytes after any request header decode or fail with a JuteError only", () => {
  const types = fc.constantFrom(...Object.values(OpCode), 99, 1000);
  fc.assert(
    fc.property(i32, types, fc.uint8Array({ maxLength: 64 }), (xid, type, tail) => {
      const frame = new JuteWriter().writeInt(xid).writeInt(type).writeRaw(tail).toBytes();
      try {
        R.decodeRequest(frame);
      } catch (error) {
        assert.ok(error instanceof JuteError, `not a JuteError: ${String(error)}`);
      }
    }),
    { numRuns: 3000 },
  );
});

test("random bytes given to any record decoder decode or fail with a JuteError only", () => {
  fc.assert(
    fc.property(fc.constantFrom(...CASES), fc.uint8Array({ maxLength: 96 }), ({ codec }, bytes) => {
      try {
        R.decodeRecord(codec, bytes);
      } catch (error) {
        assert.ok(error instanceof JuteError, `not a JuteError: ${String(error)}`);
      }
    }),
    { numRuns: 5000 },
  );
});

test("a length above the field limit is refused before any allocation", () => {
  const before = process.memoryUsage().arrayBuffers;
  for (const length of [0x7fffffff, JUTE_FIELD_LENGTH_MAX_BYTES + 1]) {
    const bytes = new JuteWriter().writeInt(length).writeRaw(new Uint8Array(8)).toBytes();
    assert.throws(() => new JuteReader(bytes).readBuffer(), isJuteError("length-over-limit"));
    assert.throws(() => new JuteReader(bytes).readUstring(), isJuteError("length-over-limit"));
  }
  assert.ok(process.memoryUsage().arrayBuffers - before < 1 << 20, "no large buffer was allocated");
});

test("a length within the limit but beyond the bytes present is truncated, not allocated", () => {
  const bytes = new JuteWriter().writeInt(JUTE_FIELD_LENGTH_MAX_BYTES).writeRaw(new Uint8Array(8)).toBytes();
  assert.throws(() => new JuteReader(bytes).readBuffer(), isJuteError("truncated"));
});

test("a vector count larger than the bytes could hold is refused without looping", () => {
  const bytes = new JuteWriter().writeInt(0x7fffffff).writeInt(0).toBytes();
  assert.throws(() => R.decodeRecord(R.GetChildrenResponse, bytes), isJuteError("truncated"));
  assert.throws(() => R.decodeRecord(R.GetChildrenResponse, new JuteWriter().writeInt(-2).toBytes()), isJuteError("negative-length"));
});

test("a configured field limit below ZooKeeper's is honoured", () => {
  const bytes = R.encodeRecord(R.SyncRequest, { path: "/abcdef" });
  assert.throws(() => R.decodeRecord(R.SyncRequest, bytes, { fieldLengthMaxBytes: 4 }), isJuteError("length-over-limit"));
});

test("an unknown multi op or result type is a JuteError", () => {
  const op = hex(`00000007 00 ffffffff 00000002 2f61`);
  assert.throws(() => R.decodeRecord(R.MultiRequest, op), isJuteError("unknown-type"));
  const result = hex(`00000009 00 00000000`);
  assert.throws(() => R.decodeRecord(R.MultiResponse, result), isJuteError("unknown-type"));
});

test("trailing bytes are ignored by default, as ZooKeeper does, and refused on request", () => {
  const bytes = hex(`00000002 2f61 ff`);
  assert.deepStrictEqual(R.decodeRecord(R.SyncRequest, bytes), { path: "/a" });
  assert.throws(() => R.decodeRecord(R.SyncRequest, bytes, { trailing: "reject" }), isJuteError("trailing-bytes"));
});

// ---- framing --------------------------------------------------------------------------------

test("frames come out whole however the stream is cut", () => {
  fc.assert(
    fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 6 }), fc.array(fc.nat(), { maxLength: 8 }), (records, cuts) => {
      const stream = Buffer.concat(records.map((r) => encodeFrame(r)));
      const points = [...new Set(cuts.map((c) => c % (stream.byteLength + 1)))].sort((a, b) => a - b);
      const splitter = new FrameSplitter();
      const out: Uint8Array[] = [];
      let from = 0;
      for (const point of [...points, stream.byteLength]) {
        out.push(...splitter.push(stream.subarray(from, point)));
        from = point;
      }
      assert.deepStrictEqual(
        out,
        records.map((r) => Uint8Array.from(r)),
      );
      assert.equal(splitter.pendingBytes, 0);
    }),
  );
});

test("a frame length above jute.maxbuffer is refused from its 4-byte prefix, and the splitter stays failed", () => {
  const splitter = new FrameSplitter();
  const prefix = new JuteWriter().writeInt(JUTE_MAX_BUFFER_BYTES + 1).toBytes();
  assert.throws(() => splitter.push(prefix), isJuteError("length-over-limit"));
  assert.throws(() => splitter.push(Uint8Array.of(0)), isJuteError("length-over-limit"));
});

test("a forged 2 GiB frame length is refused with only its 4-byte prefix held", () => {
  const splitter = new FrameSplitter();
  assert.throws(() => splitter.push(Uint8Array.of(0x7f, 0xff, 0xff, 0xff, 1, 2, 3)), isJuteError("length-over-limit"));
  assert.equal(splitter.pendingBytes, 4);
});

test("a negative frame length is refused", () => {
  assert.throws(() => new FrameSplitter().push(Uint8Array.of(0xff, 0xff, 0xff, 0xfe, 1, 2)), isJuteError("negative-length"));
});

test("a frame of exactly jute.maxbuffer bytes is accepted", () => {
  const record = new Uint8Array(JUTE_MAX_BUFFER_BYTES).fill(7);
  const frames = new FrameSplitter().push(encodeFrame(record));
  assert.equal(frames.length, 1);
  assert.equal(frames[0]!.byteLength, JUTE_MAX_BUFFER_BYTES);
});

test("a partial frame is held until the rest arrives", () => {
  const splitter = new FrameSplitter();
  const frame = encodeFrame(Uint8Array.of(1, 2, 3));
  assert.deepStrictEqual(splitter.push(frame.subarray(0, 2)), []);
  assert.deepStrictEqual(splitter.push(frame.subarray(2, 5)), []);
  assert.equal(splitter.pendingBytes, 5);
  assert.deepStrictEqual(splitter.push(frame.subarray(5)), [Uint8Array.of(1, 2, 3)]);
});

test("a ustring is its length then the UTF-8 TextEncoder makes, lone surrogates and all, however the writer grows", () => {
  const strings = ["", "a", "é", "日本語", "😀", "\ud800", "a\udc00b", "x".repeat(5000), "ж".repeat(3000)];
  const writer = new JuteWriter(16);
  for (const s of strings) writer.writeUstring(s);
  const expected = strings.flatMap((s) => {
    const bytes = new TextEncoder().encode(s);
    const length = new Uint8Array(4);
    new DataView(length.buffer).setInt32(0, bytes.byteLength, false);
    return [...length, ...bytes];
  });
  assert.deepEqual([...writer.toBytes()], expected);
});
