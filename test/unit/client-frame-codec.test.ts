/**
 * The server's client-protocol codec (src/server/client-frame-codec.ts over the generated
 * gen/client.ts): strict decoding (what the generated decoder refuses, and frames that are not
 * frames, are MALFORMED; unknown fields are skipped), the semantic checks that turn a request into
 * a rejection, and cross-checks in both directions with proto-loader's reflective codec of the same
 * .proto: frames it encodes decode to the records they carry, and frames we encode decode in it to
 * the values we encoded.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as fc from "fast-check";

import { limits } from "../../src/common/constants.js";
import { ZkErrorCode } from "../../src/common/errors.js";
import { ADD_WATCH_MODE_NUMBERS, WATCHER_TYPE_NUMBERS, type AddWatchMode, type WatcherType } from "../../src/common/watch-modes.js";
import { CREATE_MODE_FLAGS, type CreateMode } from "../../src/common/znode.js";
import { corralServiceDefinition } from "../../src/protocol/client-wire.js";
import {
  decodeClientFrame,
  encodeConnectResponseFrame,
  encodeEventFrame,
  encodePongFrame,
  encodeResponseFrame,
  encodeServerFrameBatch,
  MALFORMED,
  type ConnectAnswer,
  type DecodedClientFrame,
  type IncomingFrame,
} from "../../src/server/client-frame-codec.js";
import type { ClientRequest, CreateRequest, MultiOpRequest, ReadOpResult, Reply, ReplyBody } from "../../src/replica/requests.js";
import type { Acl, OpResult, Stat, WatchEvent } from "../../src/store/types.js";

/** proto-loader's codec of the Session stream (CLIENT_PROTO_OPTIONS): objects in, objects out. */
const loader = corralServiceDefinition()["Session"] as unknown as {
  requestSerialize: (frame: object) => Buffer;
  responseSerialize: (frame: object) => Buffer;
  responseDeserialize: (bytes: Buffer) => object;
};
const encode = (frame: object): Buffer => loader.requestSerialize(frame);
const request = (xid: number, op: object): Buffer => encode({ request: { xid, ...op } });

/** Bytes compared by content, whatever their class (Buffer, Uint8Array). */
function plain(value: unknown): unknown {
  if (value instanceof Uint8Array) return `bytes:${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("hex")}`;
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([key, v]) => [key, plain(v)]));
  return value;
}

function decodesTo(bytes: Uint8Array, expected: IncomingFrame): void {
  assert.deepStrictEqual(plain(decodeClientFrame(bytes)), plain(expected), `input ${Buffer.from(bytes).toString("hex")}`);
}

const rejected = (xid: number, err: number): IncomingFrame => ({ frame: "rejected", xid, err });
const accepted = (xid: number, request: ClientRequest): IncomingFrame => ({ frame: "request", xid, request });

function varint(n: bigint): number[] {
  const out: number[] = [];
  let v = BigInt.asUintN(64, n);
  while (v > 0x7fn) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}
/** A length-delimited field. */
const field = (number: number, body: readonly number[]): number[] => [...varint(BigInt((number << 3) | 2)), ...varint(BigInt(body.length)), ...body];
const bytesOf = (parts: readonly number[]) => Uint8Array.from(parts);
const ascii = (s: string): number[] => [...Buffer.from(s)];

const INT64_EDGES = [0n, 1n, 2n ** 53n - 1n, 2n ** 53n, -1n, 2n ** 63n - 1n, -(2n ** 63n)];
const SAFE_MAX = Number.MAX_SAFE_INTEGER;

// ---------------------------------------------------------------------------------------------
// Semantic checks after decoding.

test("a request with no operation is rejected with UNIMPLEMENTED", () => {
  decodesTo(request(5, {}), rejected(5, ZkErrorCode.UNIMPLEMENTED));
});

test("a create mode ZooKeeper does not define is BADARGUMENTS", () => {
  for (const mode of [7, 42, 2 ** 32 - 1]) decodesTo(request(6, { create: { path: "/a", mode } }), rejected(6, ZkErrorCode.BADARGUMENTS));
  decodesTo(request(6, { create: { path: "/a", mode: 6, ttlMs: "10" } }), accepted(6, create({ mode: "persistent-sequential-with-ttl", ttlMs: 10 })));
});

test("a TTL is taken from 0 to 2^53-1; outside it (negative, 2^53, 2^63-1) it is BADARGUMENTS", () => {
  for (const ttl of INT64_EDGES) {
    const expected =
      ttl >= 0n && ttl <= BigInt(SAFE_MAX) ? accepted(1, create({ mode: "persistent-with-ttl", ttlMs: Number(ttl) })) : rejected(1, ZkErrorCode.BADARGUMENTS);
    decodesTo(request(1, { create: { path: "/a", mode: 5, ttlMs: ttl.toString() } }), expected);
  }
});

test("an ACL entry without an id is INVALIDACL, in a create and in a setAcl", () => {
  const acl = [{ perms: 31, id: { scheme: "world", id: "anyone" } }, { perms: 31 }];
  decodesTo(request(7, { create: { path: "/a", acl } }), rejected(7, ZkErrorCode.INVALIDACL));
  decodesTo(request(8, { setAcl: { path: "/a", acl, version: 2 } }), rejected(8, ZkErrorCode.INVALIDACL));
  decodesTo(
    request(9, { setAcl: { path: "/a", acl: acl.slice(0, 1), version: 2 } }),
    accepted(9, { op: "setAcl", path: "/a", acl: [acl[0] as Acl], version: 2 }),
  );
});

test("a create checks its mode, then its TTL, then its ACL", () => {
  const noId = [{ perms: 31 }];
  decodesTo(request(1, { create: { path: "/a", mode: 9, ttlMs: "-1", acl: noId } }), rejected(1, ZkErrorCode.BADARGUMENTS));
  decodesTo(request(2, { create: { path: "/a", mode: 5, ttlMs: "-1", acl: noId } }), rejected(2, ZkErrorCode.BADARGUMENTS));
  decodesTo(request(3, { create: { path: "/a", mode: 5, ttlMs: "1", acl: noId } }), rejected(3, ZkErrorCode.INVALIDACL));
});

test("a multi is answered with the error of its first op that cannot run; an op with no member is BADARGUMENTS", () => {
  const good = { delete: { path: "/a", version: -1 } };
  const noId = { create: { path: "/b", acl: [{ perms: 1 }] } };
  decodesTo(request(1, { multi: { ops: [good, noId, {}] } }), rejected(1, ZkErrorCode.INVALIDACL));
  decodesTo(request(2, { multi: { ops: [good, {}, noId] } }), rejected(2, ZkErrorCode.BADARGUMENTS));
  decodesTo(
    request(3, { multi: { ops: [good, { check: { path: "/a", version: 4 } }] } }),
    accepted(3, {
      op: "multi",
      ops: [
        { op: "delete", path: "/a", version: -1 },
        { op: "check", path: "/a", version: 4 },
      ],
    }),
  );
});

test("a multiRead op asking for a watch, or with no member, is BADARGUMENTS", () => {
  decodesTo(
    request(1, { multiRead: { ops: [{ getData: { path: "/a" } }, { getChildren: { path: "/b", watch: true } }] } }),
    rejected(1, ZkErrorCode.BADARGUMENTS),
  );
  decodesTo(request(2, { multiRead: { ops: [{ getData: { path: "/a" } }, {}] } }), rejected(2, ZkErrorCode.BADARGUMENTS));
  decodesTo(
    request(3, { multiRead: { ops: [{ getData: { path: "/a" } }, { getChildren: { path: "/b" } }] } }),
    accepted(3, {
      op: "multiRead",
      ops: [
        { op: "getData", path: "/a" },
        { op: "getChildren", path: "/b" },
      ],
    }),
  );
});

test("a multiRead of more than limits.multiOpsMax ops is BADARGUMENTS", () => {
  const ops = (n: number) => Array.from({ length: n }, () => ({ getData: { path: "/a" } }));
  const decoded = decodeClientFrame(request(1, { multiRead: { ops: ops(limits.multiOpsMax) } }));
  assert.ok(decoded !== MALFORMED && decoded.frame === "request" && decoded.request.op === "multiRead");
  assert.equal(decoded.request.ops.length, limits.multiOpsMax);
  decodesTo(request(2, { multiRead: { ops: ops(limits.multiOpsMax + 1) } }), rejected(2, ZkErrorCode.BADARGUMENTS));
});

test("addWatch modes and watcher types ZooKeeper does not define are BADARGUMENTS", () => {
  const modes = new Map(Object.entries(ADD_WATCH_MODE_NUMBERS).map(([mode, n]) => [n, mode as AddWatchMode]));
  const types = new Map(Object.entries(WATCHER_TYPE_NUMBERS).map(([type, n]) => [n, type as WatcherType]));
  for (const n of [-1, 0, 1, 2, 3, 4, 5, 6, 2 ** 31 - 1]) {
    const mode = modes.get(n);
    decodesTo(
      request(n, { addWatch: { path: "/a", mode: n } }),
      mode ? accepted(n, { op: "addWatch", path: "/a", mode }) : rejected(n, ZkErrorCode.BADARGUMENTS),
    );
    const watcherType = types.get(n);
    for (const op of ["removeWatches", "checkWatches"] as const) {
      const expected = watcherType ? accepted(n, { op, path: "/a", watcherType }) : rejected(n, ZkErrorCode.BADARGUMENTS);
      decodesTo(request(n, { [op]: { path: "/a", type: n } }), expected);
    }
  }
});

test("setWatches takes a relative zxid from 0 to 2^53-1; outside it it is BADARGUMENTS", () => {
  for (const zxid of INT64_EDGES) {
    const expected =
      zxid >= 0n && zxid <= BigInt(SAFE_MAX)
        ? accepted(4, {
            op: "setWatches",
            relativeZxid: Number(zxid),
            dataWatches: ["/d"],
            existWatches: [],
            childWatches: [],
            persistentWatches: [],
            persistentRecursiveWatches: ["/r"],
          })
        : rejected(4, ZkErrorCode.BADARGUMENTS);
    decodesTo(request(4, { setWatches: { relativeZxid: zxid.toString(), dataWatches: ["/d"], persistentRecursiveWatches: ["/r"] } }), expected);
  }
});

test("a connect keeps its 64-bit values exact and signed (the session judges them)", () => {
  for (const value of INT64_EDGES) {
    const password = Buffer.from("secret");
    decodesTo(encode({ connect: { protocolVersion: 2, lastZxidSeen: value.toString(), timeoutMs: 4000, sessionId: value.toString(), password } }), {
      frame: "connect",
      protocolVersion: 2,
      lastZxidSeen: value,
      timeoutMs: 4000,
      sessionId: value,
      password,
      readOnlyAllowed: false,
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Cross-check, client to server: proto-loader's frames decode to the records they carry.

function create(fields: Partial<CreateRequest>): CreateRequest {
  return { op: "create", path: "/a", data: new Uint8Array(0), acl: [], mode: "persistent", ttlMs: 0, ...fields };
}

const int32 = fc.oneof(fc.constantFrom(0, -1, 1, 2 ** 31 - 1, -(2 ** 31)), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }));
const uint32 = fc.oneof(fc.constantFrom(0, 1, 127, 128, 2 ** 32 - 1), fc.integer({ min: 0, max: 2 ** 32 - 1 }));
const int64 = fc.oneof(fc.constantFrom(...INT64_EDGES), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }));
const safeNat = fc.oneof(fc.constantFrom(0, 1, 2 ** 32 - 1, 2 ** 32, SAFE_MAX), fc.integer({ min: 0, max: SAFE_MAX }));
const str = fc.oneof(
  fc.constantFrom("", "/", "/a/b", "/app/queue/q-0000000001", "world", "anyone"),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: "grapheme", maxLength: 12 }),
  fc.string({ unit: "binary", maxLength: 12 }),
  fc.string({ minLength: 130, maxLength: 300 }),
);
const strs = fc.array(str, { maxLength: 3 });
const bytes = fc.oneof(fc.constant(new Uint8Array(0)), fc.uint8Array({ maxLength: 64 }));
const acl: fc.Arbitrary<Acl> = fc.record({ perms: uint32, id: fc.record({ scheme: str, id: str }) });
const acls = fc.array(acl, { maxLength: 3 });

const createRequest: fc.Arbitrary<CreateRequest> = fc.record({
  op: fc.constant("create" as const),
  path: str,
  data: bytes,
  acl: acls,
  mode: fc.constantFrom(...(Object.keys(CREATE_MODE_FLAGS) as CreateMode[])),
  ttlMs: safeNat,
});
const pathVersion = <K extends string>(op: K) => fc.record({ op: fc.constant(op), path: str, version: int32 });
const pathWatch = <K extends string>(op: K) => fc.record({ op: fc.constant(op), path: str, watch: fc.boolean() });
const pathOnly = <K extends string>(op: K) => fc.record({ op: fc.constant(op), path: str });
const setData = fc.record({ op: fc.constant("setData" as const), path: str, data: bytes, version: int32 });
const watcherType = fc.constantFrom(...(Object.keys(WATCHER_TYPE_NUMBERS) as WatcherType[]));

const clientRequest: fc.Arbitrary<ClientRequest> = fc.oneof(
  createRequest,
  pathVersion("delete"),
  pathWatch("exists"),
  pathWatch("getData"),
  setData,
  pathWatch("getChildren"),
  fc.record({
    op: fc.constant("multi" as const),
    ops: fc.array(fc.oneof(createRequest, pathVersion("delete"), setData, pathVersion("check")), { maxLength: 4 }),
  }),
  pathOnly("sync"),
  fc.record({
    op: fc.constant("setWatches" as const),
    relativeZxid: safeNat,
    dataWatches: strs,
    existWatches: strs,
    childWatches: strs,
    persistentWatches: strs,
    persistentRecursiveWatches: strs,
  }),
  fc.constant({ op: "close" as const }),
  pathOnly("getAcl"),
  fc.record({ op: fc.constant("setAcl" as const), path: str, acl: acls, version: int32 }),
  fc.record({ op: fc.constant("addWatch" as const), path: str, mode: fc.constantFrom(...(Object.keys(ADD_WATCH_MODE_NUMBERS) as AddWatchMode[])) }),
  fc.record({ op: fc.constant("removeWatches" as const), path: str, watcherType }),
  fc.record({ op: fc.constant("checkWatches" as const), path: str, watcherType }),
  fc.record({ op: fc.constant("addAuth" as const), scheme: str, auth: bytes }),
  fc.constant({ op: "whoAmI" as const }),
  fc.record({ op: fc.constant("getEphemerals" as const), prefixPath: str }),
  pathOnly("getAllChildrenNumber"),
  fc.record({ op: fc.constant("multiRead" as const), ops: fc.array(fc.oneof(pathOnly("getData"), pathOnly("getChildren")), { maxLength: 4 }) }),
);

/** A request record as proto-loader's object: `{ <op>: <its fields> }`, numbers where the wire has them. */
function loaderOp(r: ClientRequest | MultiOpRequest): object {
  switch (r.op) {
    case "create":
      return { create: { path: r.path, data: r.data, acl: r.acl, mode: CREATE_MODE_FLAGS[r.mode], ttlMs: String(r.ttlMs) } };
    case "multi":
      return { multi: { ops: r.ops.map(loaderOp) } };
    case "setWatches": {
      const { op: _, relativeZxid, ...watches } = r;
      return { setWatches: { ...watches, relativeZxid: String(relativeZxid) } };
    }
    case "addWatch":
      return { addWatch: { path: r.path, mode: ADD_WATCH_MODE_NUMBERS[r.mode] } };
    case "removeWatches":
    case "checkWatches":
      return { [r.op]: { path: r.path, type: WATCHER_TYPE_NUMBERS[r.watcherType] } };
    case "multiRead":
      return { multiRead: { ops: r.ops.map((op) => ({ [op.op]: { path: op.path } })) } };
    default: {
      const { op, ...fields } = r;
      return { [op]: fields };
    }
  }
}

/** A single frame as [the record it decodes to, proto-loader's object]. */
const singleFrame: fc.Arbitrary<[DecodedClientFrame, object]> = fc.oneof(
  fc.tuple(int32, clientRequest).map(([xid, r]): [DecodedClientFrame, object] => [{ frame: "request", xid, request: r }, { request: { xid, ...loaderOp(r) } }]),
  fc
    .record({ protocolVersion: uint32, lastZxidSeen: int64, timeoutMs: uint32, sessionId: int64, password: bytes, readOnlyAllowed: fc.boolean() })
    .map((c): [DecodedClientFrame, object] => [
      { frame: "connect", ...c },
      { connect: { ...c, lastZxidSeen: c.lastZxidSeen.toString(), sessionId: c.sessionId.toString() } },
    ]),
  fc.constant<[DecodedClientFrame, object]>([{ frame: "ping" }, { ping: {} }]),
);
const clientFrame: fc.Arbitrary<[IncomingFrame, object]> = fc.oneof(
  { weight: 4, arbitrary: singleFrame },
  {
    weight: 1,
    arbitrary: fc
      .array(singleFrame, { maxLength: 5 })
      .map((frames): [IncomingFrame, object] => [{ frame: "batch", frames: frames.map(([f]) => f) }, { batch: { frames: frames.map(([, o]) => o) } }]),
  },
);

test("frames proto-loader encodes decode to the records they carry", () => {
  fc.assert(
    fc.property(clientFrame, ([expected, frame]) => decodesTo(encode(frame), expected)),
    { numRuns: 5000 },
  );
});

// ---------------------------------------------------------------------------------------------
// Strict decoding.

const PING_FRAME = [0x1a, 0x00];
/** ClientFrame{request{xid 1, getData{path "/a"}}}. */
const GET_DATA_FRAME = field(2, [0x08, 0x01, ...field(5, field(1, ascii("/a")))]);
const GET_DATA = accepted(1, { op: "getData", path: "/a", watch: false });

test("the hand-built frames of these tests are what proto-loader writes", () => {
  assert.deepStrictEqual([...encode({ ping: {} })], PING_FRAME);
  assert.deepStrictEqual([...request(1, { getData: { path: "/a" } })], GET_DATA_FRAME);
  decodesTo(bytesOf(GET_DATA_FRAME), GET_DATA);
});

test("a frame with no member — empty, or holding only unknown fields — is MALFORMED", () => {
  decodesTo(bytesOf([]), MALFORMED);
  decodesTo(bytesOf([0x28, 0x01, ...field(9, [1, 2, 3])]), MALFORMED);
});

test("a field number 0 is MALFORMED, in a frame and inside a message, whatever its wire type", () => {
  decodesTo(bytesOf([0x00, ...PING_FRAME]), MALFORMED);
  decodesTo(bytesOf(field(2, [0x08, 0x01, 0x00, 0x00])), MALFORMED);
  decodesTo(bytesOf([0x02, 0x00, ...PING_FRAME]), MALFORMED);
});

test("a stray end-group tag is MALFORMED", () => {
  decodesTo(bytesOf([...PING_FRAME, 0x2c]), MALFORMED);
  decodesTo(bytesOf(field(2, [0x08, 0x01, 0x0c])), MALFORMED);
});

test("a group is MALFORMED, a known field's or an unknown one's", () => {
  decodesTo(bytesOf([0x1b, 0x1c]), MALFORMED);
  decodesTo(bytesOf([0x2b, 0x2c, ...PING_FRAME]), MALFORMED);
  decodesTo(bytesOf(field(2, [0x08, 0x01, 0xab, 0x06, 0xac, 0x06, ...field(5, field(1, ascii("/a")))])), MALFORMED);
});

test("a known field with another wire type is skipped, as an unknown field is", () => {
  // ClientFrame.connect as a varint: no member left.
  decodesTo(bytesOf([0x08, 0x01]), MALFORMED);
  // Request.xid length-delimited; GetDataRequest.path as a varint; CreateRequest.ttl_ms as fixed64; Acl.id as fixed32.
  decodesTo(bytesOf(field(2, [...field(1, [0x01]), ...field(5, field(1, ascii("/a")))])), accepted(0, { op: "getData", path: "/a", watch: false }));
  decodesTo(bytesOf(field(2, [0x08, 0x03, ...field(5, [0x08, 0x01])])), accepted(3, { op: "getData", path: "", watch: false }));
  decodesTo(bytesOf(field(2, [0x08, 0x04, ...field(2, [...field(1, ascii("/t")), 0x29, 0, 0, 0, 0, 0, 0, 0, 0])])), accepted(4, create({ path: "/t" })));
  decodesTo(
    bytesOf(field(2, [0x08, 0x05, ...field(2, [...field(1, ascii("/t")), ...field(3, [0x08, 0x1f, 0x15, 0, 0, 0, 0])])])),
    rejected(5, ZkErrorCode.INVALIDACL),
  );
});

test("a field running past the end of its nested message is MALFORMED", () => {
  // CreateRequest of 2 bytes whose path (3 bytes) runs on into the Request around it.
  decodesTo(bytesOf(field(2, [...field(2, [0x0a, 0x03]), ...ascii("/ab")])), MALFORMED);
  // GetDataRequest of 1 byte whose `watch` varint lies beyond it.
  decodesTo(bytesOf(field(2, [...field(5, [0x10]), 0x01])), MALFORMED);
  // A Request whose length runs past the frame.
  decodesTo(bytesOf([0x12, 0x09, 0x08, 0x01]), MALFORMED);
});

test("every proper prefix of a frame (a truncated frame) is MALFORMED", () => {
  fc.assert(
    fc.property(clientFrame, ([, frame]) => {
      const bytes = encode(frame);
      for (let length = 0; length < bytes.length; length++) assert.equal(decodeClientFrame(bytes.subarray(0, length)), MALFORMED, `prefix ${length}`);
    }),
    { numRuns: 300 },
  );
});

test("trailing garbage after a frame is MALFORMED", () => {
  const garbage = fc.constantFrom([0x00], [0x80], [0xff, 0xff], [0x07], [0x0c], [0x0a, 0x05, 0x01], [0x2d, 0x01]);
  fc.assert(
    fc.property(clientFrame, garbage, ([, frame], tail) => assert.equal(decodeClientFrame(Buffer.concat([encode(frame), Buffer.from(tail)])), MALFORMED)),
    { numRuns: 500 },
  );
});

/** An unknown field of ClientFrame (numbers above 4) of any wire type but a group. */
const unknownField = fc
  .tuple(fc.integer({ min: 5, max: 2 ** 29 - 2 }), fc.constantFrom(0, 1, 2, 5), fc.uint8Array({ maxLength: 10 }))
  .map(([number, wireType, body]) => {
    const tag = (n: number, w: number) => varint(BigInt(n * 8 + w));
    switch (wireType) {
      case 0:
        return [...tag(number, 0), ...varint(BigInt(body.length) * 123456789n)];
      case 1:
        return [...tag(number, 1), 1, 2, 3, 4, 5, 6, 7, 8];
      case 5:
        return [...tag(number, 5), 1, 2, 3, 4];
      default:
        return [...tag(number, 2), ...varint(BigInt(body.length)), ...body];
    }
  });

test("unknown fields around a frame's member are skipped", () => {
  fc.assert(
    fc.property(clientFrame, unknownField, unknownField, ([expected, frame], before, after) => {
      decodesTo(Buffer.concat([Buffer.from(before), encode(frame), Buffer.from(after)]), expected);
    }),
    { numRuns: 1000 },
  );
});

test("unknown fields inside a request's messages are skipped", () => {
  const unknown = [0xa8, 0x06, 0x01, ...field(101, [9, 9])]; // field 101 varint, field 101 bytes
  const frame = field(2, [
    ...unknown,
    0x08,
    0x07,
    ...field(2, [...field(1, ascii("/n")), ...unknown, ...field(3, [...unknown, 0x08, 0x1f, ...field(2, [...unknown, ...field(1, ascii("ip"))])])]),
  ]);
  decodesTo(bytesOf(frame), accepted(7, create({ path: "/n", acl: [{ perms: 31, id: { scheme: "ip", id: "" } }] })));
});

test("a oneof given two members is MALFORMED, the same member twice included; a scalar sent twice keeps the last", () => {
  decodesTo(bytesOf([...field(1, []), ...PING_FRAME]), MALFORMED);
  decodesTo(bytesOf([...PING_FRAME, ...PING_FRAME]), MALFORMED);
  decodesTo(bytesOf([...PING_FRAME, ...GET_DATA_FRAME]), MALFORMED);
  // Two op members in one Request.
  decodesTo(bytesOf(field(2, [0x08, 0x01, ...field(9, field(1, ascii("/s"))), ...field(12, field(1, ascii("/g")))])), MALFORMED);
  // Two xids: the later one.
  decodesTo(bytesOf(field(2, [0x08, 0x01, 0x08, 0x02, ...field(12, field(1, ascii("/g")))])), accepted(2, { op: "getAcl", path: "/g" }));
});

test("a batch holds its frames in order; an empty one holds none", () => {
  decodesTo(bytesOf(field(4, [...field(1, PING_FRAME), ...field(1, GET_DATA_FRAME)])), {
    frame: "batch",
    frames: [{ frame: "ping" }, GET_DATA as DecodedClientFrame],
  });
  decodesTo(bytesOf(field(4, [])), { frame: "batch", frames: [] });
});

test("a batch inside a batch, or one holding an empty or malformed frame, is MALFORMED", () => {
  decodesTo(encode({ batch: { frames: [{ ping: {} }, { batch: { frames: [{ ping: {} }] } }] } }), MALFORMED);
  decodesTo(encode({ batch: { frames: [{ ping: {} }, {}] } }), MALFORMED);
  decodesTo(bytesOf(field(4, [...field(1, PING_FRAME), ...field(1, [0x08, 0x01])])), MALFORMED);
  decodesTo(bytesOf(field(4, [...field(1, PING_FRAME), ...field(1, [0x12, 0x05, 0x08])])), MALFORMED);
});

// ---------------------------------------------------------------------------------------------
// Cross-check, server to client: our frames decode in proto-loader to the values we encoded. The
// expected side is proto-loader's decoding of its own encoding of the same values.

function sameInLoader(ours: Buffer, values: object): void {
  assert.deepStrictEqual(plain(loader.responseDeserialize(ours)), plain(loader.responseDeserialize(loader.responseSerialize(values))));
}

const int64Number = fc.oneof(fc.constantFrom(0, 1, 2 ** 32, SAFE_MAX, -1, -SAFE_MAX), fc.integer({ min: -SAFE_MAX, max: SAFE_MAX }));
const stat: fc.Arbitrary<Stat> = fc.record({
  czxid: safeNat,
  mzxid: safeNat,
  ctime: int64Number,
  mtime: int64Number,
  version: int32,
  cversion: int32,
  aversion: int32,
  ephemeralOwner: int64,
  dataLength: int32,
  numChildren: int32,
  pzxid: safeNat,
});
const opResult: fc.Arbitrary<OpResult> = fc.oneof(
  fc.record({ type: fc.constant("create" as const), path: str, stat }),
  fc.constant({ type: "delete" as const }),
  fc.record({ type: fc.constant("setData" as const), stat }),
  fc.constant({ type: "check" as const }),
  fc.record({ type: fc.constant("error" as const), err: int32 }),
);
const readOpResult: fc.Arbitrary<ReadOpResult> = fc.oneof(
  fc.record({ type: fc.constant("getData" as const), data: bytes, stat }),
  fc.record({ type: fc.constant("getChildren" as const), children: strs }),
  fc.record({ type: fc.constant("error" as const), err: int32 }),
);
const replyBody: fc.Arbitrary<ReplyBody> = fc.oneof(
  fc.constant({ kind: "empty" as const }),
  str.map((path) => ({ kind: "path" as const, path })),
  fc.record({ kind: fc.constant("create" as const), path: str, stat }),
  fc.record({ kind: fc.constant("stat" as const), stat }),
  fc.record({ kind: fc.constant("data" as const), data: bytes, stat }),
  fc.record({ kind: fc.constant("children" as const), children: strs, stat }),
  fc.record({ kind: fc.constant("acl" as const), acl: acls, stat }),
  fc.record({ kind: fc.constant("multi" as const), results: fc.array(opResult, { maxLength: 4 }) }),
  fc.record({ kind: fc.constant("paths" as const), paths: strs }),
  fc.record({ kind: fc.constant("number" as const), number: int32 }),
  fc.record({ kind: fc.constant("multiRead" as const), results: fc.array(readOpResult, { maxLength: 4 }) }),
  fc.record({ kind: fc.constant("whoAmI" as const), clientInfo: fc.array(fc.record({ authScheme: str, user: str }), { maxLength: 3 }) }),
  fc.record({
    kind: fc.constant("members" as const),
    version: safeNat,
    members: fc.array(
      fc.record(
        {
          serverId: fc.integer({ min: 1, max: 254 }),
          role: fc.constantFrom("participant" as const, "observer" as const),
          clientAddress: fc.record({ host: fc.string({ minLength: 1 }), port: fc.integer({ min: 1, max: 65_535 }) }),
        },
        { requiredKeys: ["serverId", "role"] },
      ),
      { maxLength: 4 },
    ),
  }),
);
const reply: fc.Arbitrary<Reply> = fc.record({ err: int32, zxid: safeNat, body: replyBody });
const event = fc.record({ type: int32, path: str, zxid: safeNat }) as fc.Arbitrary<WatchEvent>;
const connectAnswer: fc.Arbitrary<ConnectAnswer> = fc.record({
  protocolVersion: uint32,
  timeoutMs: uint32,
  sessionId: int64,
  password: bytes,
  err: int32,
  lastZxid: safeNat,
  serverId: uint32,
  readOnly: fc.boolean(),
});

/** proto-loader's object for a Stat: int64s as decimal strings. */
function loaderStat(s: Stat): object {
  const { czxid, mzxid, ctime, mtime, ephemeralOwner, pzxid, ...int32s } = s;
  return {
    ...int32s,
    czxid: String(czxid),
    mzxid: String(mzxid),
    ctime: String(ctime),
    mtime: String(mtime),
    ephemeralOwner: String(ephemeralOwner),
    pzxid: String(pzxid),
  };
}

function loaderResult(result: OpResult | ReadOpResult): object {
  switch (result.type) {
    case "create":
      return { path: result.path, stat: loaderStat(result.stat) };
    case "setData":
      return { stat: loaderStat(result.stat) };
    case "getData":
      return { stat: loaderStat(result.stat), data: result.data };
    case "getChildren":
      return { children: result.children };
    case "error":
      return { err: result.err };
    default:
      return {};
  }
}

/** proto-loader's object for the Response answering `xid` with `r`. */
function loaderResponse(xid: number, r: Reply): object {
  const base = { xid, zxid: String(r.zxid), err: r.err };
  const body = r.body;
  switch (body.kind) {
    case "empty":
      return base;
    case "path":
      return { ...base, path: body.path };
    case "create":
      return { ...base, path: body.path, stat: loaderStat(body.stat) };
    case "stat":
      return { ...base, stat: loaderStat(body.stat) };
    case "data":
      return { ...base, stat: loaderStat(body.stat), data: body.data };
    case "children":
      return { ...base, stat: loaderStat(body.stat), children: body.children };
    case "acl":
      return { ...base, stat: loaderStat(body.stat), acl: body.acl };
    case "multi":
    case "multiRead":
      return { ...base, results: body.results.map(loaderResult) };
    case "paths":
      return { ...base, children: body.paths };
    case "number":
      return { ...base, number: body.number };
    case "whoAmI":
      return { ...base, clientInfo: body.clientInfo };
    case "members":
      return {
        ...base,
        members: {
          configVersion: String(body.version),
          members: body.members.map((m) => ({
            serverId: m.serverId,
            observer: m.role === "observer",
            clientHost: m.clientAddress?.host ?? "",
            clientPort: m.clientAddress?.port ?? 0,
          })),
        },
      };
  }
}

test("responses we encode decode in proto-loader to the values of the reply", () => {
  fc.assert(
    fc.property(int32, reply, (xid, r) => sameInLoader(encodeResponseFrame(xid, r), { response: loaderResponse(xid, r) })),
    { numRuns: 3000 },
  );
});

test("watch events, pongs and connect answers we encode decode in proto-loader to their values", () => {
  fc.assert(fc.property(event, (e) => sameInLoader(encodeEventFrame(e), { event: { ...e, zxid: String(e.zxid) } })));
  fc.assert(fc.property(safeNat, (zxid) => sameInLoader(encodePongFrame(zxid), { pong: { zxid: String(zxid) } })));
  fc.assert(
    fc.property(connectAnswer, (c) =>
      sameInLoader(encodeConnectResponseFrame(c), { connect: { ...c, sessionId: c.sessionId.toString(), lastZxid: String(c.lastZxid) } }),
    ),
    { numRuns: 1000 },
  );
});

test("a batch of frames we encode decodes in proto-loader to those frames in order", () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(int32, reply), { maxLength: 4 }), safeNat, (replies, zxid) => {
      const ours = [encodePongFrame(zxid), ...replies.map(([xid, r]) => encodeResponseFrame(xid, r))];
      const values = [{ pong: { zxid: String(zxid) } }, ...replies.map(([xid, r]) => ({ response: loaderResponse(xid, r) }))];
      sameInLoader(encodeServerFrameBatch(ours), { batch: { frames: values } });
    }),
    { numRuns: 500 },
  );
});

test("encoding leaves out proto3 defaults", () => {
  assert.deepStrictEqual([...encodePongFrame(0)], [0x22, 0x00]);
  assert.deepStrictEqual([...encodePongFrame(1)], [0x22, 0x02, 0x08, 0x01]);
  assert.deepStrictEqual([...encodeResponseFrame(1, { err: 0, zxid: 0, body: { kind: "empty" } })], [0x12, 0x02, 0x08, 0x01]);
  // A stat of zeros is still sent (the record has one), as an empty message.
  const zeros: Stat = {
    czxid: 0,
    mzxid: 0,
    ctime: 0,
    mtime: 0,
    version: 0,
    cversion: 0,
    aversion: 0,
    ephemeralOwner: 0n,
    dataLength: 0,
    numChildren: 0,
    pzxid: 0,
  };
  assert.deepStrictEqual([...encodeResponseFrame(0, { err: 0, zxid: 0, body: { kind: "stat", stat: zeros } })], [0x12, 0x02, 0x2a, 0x00]);
});

test("an answer that cannot be encoded throws, and the frame encoded after it is whole", () => {
  const stat: Stat = {
    czxid: 1,
    mzxid: 2,
    ctime: 3,
    mtime: 4,
    version: 2 ** 31,
    cversion: 0,
    aversion: 0,
    ephemeralOwner: 0n,
    dataLength: 0,
    numChildren: 0,
    pzxid: 1,
  };
  assert.throws(() => encodeResponseFrame(7, { err: 0, zxid: 9, body: { kind: "children", children: ["a", "b"], stat } }));
  assert.deepStrictEqual([...encodePongFrame(1)], [0x22, 0x02, 0x08, 0x01]);
});
