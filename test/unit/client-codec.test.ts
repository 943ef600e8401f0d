/**
 * The SDK's codec (src/client/codec.ts over gen/client.ts) against @grpc/proto-loader's reflective
 * codec of the same .proto, an independent implementation: every ClientFrame the SDK encodes,
 * proto-loader reads back exactly as sent; every ServerFrame proto-loader encodes, the SDK decodes
 * to what proto-loader decodes, with int64s as bigint, Stats in the SDK's shape and bytes as
 * Buffers. Then the strict policy on what servers send: a frame the generated decoder refuses is
 * a malformed frame; unknown fields are skipped.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as fc from "fast-check";
import type * as grpc from "@grpc/grpc-js";

import type { Acl, ClientFrame, MultiOp, MultiReadOp } from "../../gen/client.js";
import { decodeServerFrame, encodeClientFrame, encodeClientFrameBatch, type DecodedServerFrame, type RequestOp } from "../../src/client/codec.js";
import type { Stat } from "../../src/client/types.js";
import { corralServiceDefinition } from "../../src/protocol/client-wire.js";
import type * as loader from "../helpers/proto-loader-wire.js";

const session = corralServiceDefinition()["Session"] as grpc.MethodDefinition<loader.ClientFrame, loader.ServerFrame> & {
  requestSerialize: (f: loader.ClientFrame) => Buffer;
  requestDeserialize: (b: Buffer) => loader.ClientFrame;
  responseSerialize: (f: loader.Encodable<loader.ServerFrame>) => Buffer;
  responseDeserialize: (b: Buffer) => loader.ServerFrame;
};

// -------------------------------------------------------------------------------------------------
// Arbitraries

/** int64 edges: sign, 32-bit halves, the last exact double and past it, the extremes. */
const INT64_EDGES = [0n, 1n, -1n, 2n ** 31n - 1n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, -(2n ** 63n), 2n ** 63n - 1n];
const int64 = fc.oneof(fc.constantFrom(...INT64_EDGES), fc.bigInt({ min: 0n, max: 2n ** 53n }), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }));
const int32 = fc.oneof(fc.constantFrom(0, -1, 1, 2 ** 31 - 1, -(2 ** 31)), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }));
const uint32 = fc.oneof(fc.constantFrom(0, 1, 127, 128, 2 ** 32 - 1), fc.integer({ min: 0, max: 2 ** 32 - 1 }));
const str = fc.oneof(
  fc.constantFrom("", "/", "/a/b", "/app/queue/q-0000000001", "\uFEFFbom"),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: "grapheme", maxLength: 12 }),
  fc.string({ minLength: 60, maxLength: 200 }),
  fc.string({ unit: "binary", maxLength: 12 }),
);
const bytes = fc.oneof(fc.constant(new Uint8Array(0)), fc.uint8Array({ maxLength: 64 }), fc.uint8Array({ minLength: 128, maxLength: 300 }));
const paths = fc.array(str, { maxLength: 3 });
const id = fc.record({ scheme: str, id: str });

// The SDK's side: generated messages, complete, int64 as bigint.
const acls: fc.Arbitrary<Acl[]> = fc.array(fc.record({ perms: uint32, id: fc.option(id, { nil: undefined }) }), { maxLength: 3 });
const create = fc.record({ path: str, data: bytes, acl: acls, mode: uint32, ttlMs: int64 });
const pathVersion = fc.record({ path: str, version: int32 });
const pathWatch = fc.record({ path: str, watch: fc.boolean() });
const setData = fc.record({ path: str, data: bytes, version: int32 });
const multiOp: fc.Arbitrary<MultiOp> = fc.oneof(
  create.map((c) => ({ op: { $case: "create" as const, create: c } })),
  pathVersion.map((d) => ({ op: { $case: "delete" as const, delete: d } })),
  setData.map((s) => ({ op: { $case: "setData" as const, setData: s } })),
  pathVersion.map((c) => ({ op: { $case: "check" as const, check: c } })),
);
const multiReadOp: fc.Arbitrary<MultiReadOp> = fc.oneof(
  pathWatch.map((getData) => ({ op: { $case: "getData" as const, getData } })),
  pathWatch.map((getChildren) => ({ op: { $case: "getChildren" as const, getChildren } })),
);
const requestOp: fc.Arbitrary<RequestOp> = fc.oneof(
  create.map((create) => ({ $case: "create" as const, create })),
  pathVersion.map((d) => ({ $case: "delete" as const, delete: d })),
  pathWatch.map((exists) => ({ $case: "exists" as const, exists })),
  pathWatch.map((getData) => ({ $case: "getData" as const, getData })),
  setData.map((setData) => ({ $case: "setData" as const, setData })),
  pathWatch.map((getChildren) => ({ $case: "getChildren" as const, getChildren })),
  fc.array(multiOp, { maxLength: 4 }).map((ops) => ({ $case: "multi" as const, multi: { ops } })),
  str.map((path) => ({ $case: "sync" as const, sync: { path } })),
  fc
    .record({
      relativeZxid: int64,
      dataWatches: paths,
      existWatches: paths,
      childWatches: paths,
      persistentWatches: paths,
      persistentRecursiveWatches: paths,
    })
    .map((setWatches) => ({ $case: "setWatches" as const, setWatches })),
  fc.constant({ $case: "close" as const, close: {} }),
  str.map((path) => ({ $case: "getAcl" as const, getAcl: { path } })),
  fc.record({ path: str, acl: acls, version: int32 }).map((setAcl) => ({ $case: "setAcl" as const, setAcl })),
  fc.record({ path: str, mode: int32 }).map((addWatch) => ({ $case: "addWatch" as const, addWatch })),
  fc.record({ path: str, type: int32 }).map((removeWatches) => ({ $case: "removeWatches" as const, removeWatches })),
  fc.record({ path: str, type: int32 }).map((checkWatches) => ({ $case: "checkWatches" as const, checkWatches })),
  fc.record({ scheme: str, auth: bytes }).map((addAuth) => ({ $case: "addAuth" as const, addAuth })),
  fc.constant({ $case: "whoAmI" as const, whoAmI: {} }),
  str.map((prefixPath) => ({ $case: "getEphemerals" as const, getEphemerals: { prefixPath } })),
  str.map((path) => ({ $case: "getAllChildrenNumber" as const, getAllChildrenNumber: { path } })),
  fc.array(multiReadOp, { maxLength: 4 }).map((ops) => ({ $case: "multiRead" as const, multiRead: { ops } })),
  fc.constant({ $case: "getMembers" as const, getMembers: {} }),
  bytes.map((token) => ({ $case: "sasl" as const, sasl: { token } })),
);
const singleClientFrame: fc.Arbitrary<ClientFrame> = fc.oneof(
  fc
    .record({ protocolVersion: uint32, lastZxidSeen: int64, timeoutMs: uint32, sessionId: int64, password: bytes, readOnlyAllowed: fc.boolean() })
    .map((connect) => ({ frame: { $case: "connect" as const, connect } })),
  fc.tuple(int32, requestOp).map(([xid, op]) => ({ frame: { $case: "request" as const, request: { xid, op } } })),
  fc.constant({ frame: { $case: "ping" as const, ping: {} } }),
);
const clientFrames = fc.array(singleClientFrame, { maxLength: 5 });
const clientFrame: fc.Arbitrary<ClientFrame> = fc.oneof(
  { weight: 4, arbitrary: singleClientFrame },
  { weight: 1, arbitrary: clientFrames.map((frames) => ({ frame: { $case: "batch" as const, batch: { frames } } })) },
);

// The server's side, as proto-loader takes it: int64 as decimal strings, any field left out.
const int64String = int64.map(String);
const some = { requiredKeys: [] as [] };
const loaderAcls = fc.array(fc.record({ perms: uint32, id: fc.option(id, { nil: null }) }, some), { maxLength: 3 });
const loaderStat = fc.option(
  fc.record(
    {
      czxid: int64String,
      mzxid: int64String,
      ctime: int64String,
      mtime: int64String,
      version: int32,
      cversion: int32,
      aversion: int32,
      ephemeralOwner: int64String,
      dataLength: int32,
      numChildren: int32,
      pzxid: int64String,
    },
    some,
  ),
  { nil: null },
);
type SentServerFrame = loader.Encodable<loader.ServerFrame>;
const singleServerFrame: fc.Arbitrary<SentServerFrame> = fc.oneof(
  fc
    .record(
      {
        protocolVersion: uint32,
        timeoutMs: uint32,
        sessionId: int64String,
        password: bytes,
        err: int32,
        lastZxid: int64String,
        serverId: uint32,
        readOnly: fc.boolean(),
      },
      some,
    )
    .map((connect) => ({ frame: "connect" as const, connect })),
  fc
    .record(
      {
        xid: int32,
        zxid: int64String,
        err: int32,
        path: str,
        stat: loaderStat,
        data: bytes,
        children: paths,
        results: fc.array(fc.record({ err: int32, path: str, stat: loaderStat, data: bytes, children: paths }, some), { maxLength: 3 }),
        acl: loaderAcls,
        number: int32,
        clientInfo: fc.array(fc.record({ authScheme: str, user: str }, some), { maxLength: 3 }),
        members: fc.option(
          fc.record(
            {
              configVersion: int64String,
              members: fc.array(fc.record({ serverId: uint32, observer: fc.boolean(), clientHost: str, clientPort: uint32 }, some), { maxLength: 3 }),
            },
            some,
          ),
          { nil: null },
        ),
        saslToken: bytes,
      },
      some,
    )
    .map((response) => ({ frame: "response" as const, response })),
  fc.record({ type: int32, path: str, zxid: int64String }, some).map((event) => ({ frame: "event" as const, event })),
  fc.record({ zxid: int64String }, some).map((pong) => ({ frame: "pong" as const, pong })),
);
const serverFrame: fc.Arbitrary<SentServerFrame> = fc.oneof(
  { weight: 4, arbitrary: singleServerFrame },
  { weight: 1, arbitrary: fc.array(singleServerFrame, { maxLength: 5 }).map((frames) => ({ frame: "batch" as const, batch: { frames } })) },
);

// -------------------------------------------------------------------------------------------------
// The two shapes side by side

/**
 * A generated message in the shape proto-loader decodes it to: a oneof as its discriminator plus
 * the member's field, int64 as a decimal string, bytes as a Buffer, an unset submessage as null.
 */
function toLoader(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value === undefined) return null;
  if (value instanceof Uint8Array) return Buffer.from(value);
  if (Array.isArray(value)) return value.map(toLoader);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    if (typeof field === "object" && field !== null && "$case" in field) {
      const member = (field as { $case: string }).$case;
      out[key] = member;
      out[member] = toLoader((field as Record<string, unknown>)[member]);
    } else {
      out[key] = toLoader(field);
    }
  }
  return out;
}

function statOf(s: loader.WireStat | null): Stat | null {
  if (s === null) return null;
  return {
    czxid: BigInt(s.czxid),
    mzxid: BigInt(s.mzxid),
    pzxid: BigInt(s.pzxid),
    ctime: Number(s.ctime),
    mtime: Number(s.mtime),
    version: s.version,
    cversion: s.cversion,
    aversion: s.aversion,
    ephemeralOwner: BigInt(s.ephemeralOwner),
    dataLength: s.dataLength,
    numChildren: s.numChildren,
  };
}

/** What the SDK should decode from bytes proto-loader decodes to `frame`. */
function expectedDecoding(frame: loader.ServerFrame): DecodedServerFrame {
  switch (frame.frame) {
    case "connect": {
      const c = frame.connect;
      return { frame: "connect", connect: { ...c, sessionId: BigInt(c.sessionId), lastZxid: BigInt(c.lastZxid), password: Buffer.from(c.password) } };
    }
    case "response": {
      const r = frame.response;
      return {
        frame: "response",
        response: {
          ...r,
          zxid: BigInt(r.zxid),
          stat: statOf(r.stat),
          data: Buffer.from(r.data),
          results: r.results.map((x) => ({ ...x, stat: statOf(x.stat), data: Buffer.from(x.data) })),
          acl: r.acl.map((a) => ({ perms: a.perms, id: a.id ?? undefined })),
          members: r.members === null ? undefined : { configVersion: BigInt(r.members.configVersion), members: r.members.members },
          saslToken: Buffer.from(r.saslToken),
        },
      };
    }
    case "event":
      return { frame: "event", event: { ...frame.event, zxid: BigInt(frame.event.zxid) } };
    case "pong":
      return { frame: "pong", pong: { zxid: BigInt(frame.pong.zxid) } };
    case "batch":
      return { frame: "batch", frames: frame.batch.frames.map(expectedDecoding) };
  }
}

// -------------------------------------------------------------------------------------------------
// Client → server

test("every ClientFrame the SDK encodes, proto-loader decodes to exactly what was sent", () => {
  fc.assert(
    fc.property(clientFrame, (frame) => {
      assert.deepStrictEqual(session.requestDeserialize(encodeClientFrame(frame)), toLoader(frame));
    }),
    { numRuns: 3000 },
  );
});

test("the SDK's encoding of a typical request is byte for byte proto-loader's", () => {
  const frame: ClientFrame = {
    frame: { $case: "request", request: { xid: 300, op: { $case: "setData", setData: { path: "/bench/k1", data: new Uint8Array([1, 2, 3]), version: -1 } } } },
  };
  assert.deepStrictEqual(encodeClientFrame(frame), session.requestSerialize(toLoader(frame) as loader.ClientFrame));
});

test("a batch built from frames already encoded is the batch frame encoded whole", () => {
  fc.assert(
    fc.property(clientFrames, (frames) => {
      assert.deepStrictEqual(encodeClientFrameBatch(frames.map(encodeClientFrame)), encodeClientFrame({ frame: { $case: "batch", batch: { frames } } }));
    }),
    { numRuns: 500 },
  );
});

test("int64 fields the SDK sends keep every edge value exactly", () => {
  for (const value of INT64_EDGES) {
    const negated = BigInt.asIntN(64, -value);
    const frame: ClientFrame = {
      frame: {
        $case: "connect",
        connect: { protocolVersion: 2, lastZxidSeen: value, timeoutMs: 1, sessionId: negated, password: new Uint8Array(0), readOnlyAllowed: false },
      },
    };
    const decoded = session.requestDeserialize(encodeClientFrame(frame));
    assert.ok(decoded.frame === "connect");
    assert.equal(decoded.connect.lastZxidSeen, String(value));
    assert.equal(decoded.connect.sessionId, String(negated));
  }
});

test("a value its field cannot hold is refused, and the frame after it encodes whole", () => {
  const create = (ttlMs: bigint): ClientFrame => ({
    frame: { $case: "request", request: { xid: 1, op: { $case: "create", create: { path: "/t", data: new Uint8Array([7]), acl: [], mode: 5, ttlMs } } } },
  });
  assert.throws(() => encodeClientFrame(create(2n ** 63n)), /too large/);
  assert.deepStrictEqual(session.requestDeserialize(encodeClientFrame(create(60_000n))), toLoader(create(60_000n)));
});

// -------------------------------------------------------------------------------------------------
// Server → client

test("every ServerFrame proto-loader encodes decodes, with the SDK, to what proto-loader decodes", () => {
  fc.assert(
    fc.property(serverFrame, (frame) => {
      const encoded = session.responseSerialize(frame);
      assert.deepStrictEqual(decodeServerFrame(encoded), expectedDecoding(session.responseDeserialize(encoded)));
    }),
    { numRuns: 3000 },
  );
});

test("int64 fields a server sends decode to exact bigints at every edge, times to the nearest number", () => {
  for (const value of INT64_EDGES) {
    const zxid = String(value);
    const stat = {
      czxid: zxid,
      mzxid: "0",
      ctime: zxid,
      mtime: "0",
      version: 0,
      cversion: 0,
      aversion: 0,
      ephemeralOwner: zxid,
      dataLength: 0,
      numChildren: 0,
      pzxid: "0",
    };
    const decoded = decodeServerFrame(session.responseSerialize({ frame: "response", response: { xid: 1, zxid, stat } }));
    assert.ok(decoded.frame === "response");
    assert.equal(decoded.response.zxid, value);
    assert.equal(decoded.response.stat?.czxid, value);
    assert.equal(decoded.response.stat?.ephemeralOwner, value);
    assert.equal(decoded.response.stat?.ctime, Number(value));
  }
});

const PONG_42 = session.responseSerialize({ frame: "pong", pong: { zxid: "42" } });
const RESPONSE = session.responseSerialize({
  frame: "response",
  response: {
    xid: 7,
    zxid: "99",
    err: 0,
    path: "/a",
    stat: {
      czxid: "1",
      mzxid: "2",
      ctime: "3",
      mtime: "4",
      version: 5,
      cversion: 6,
      aversion: 7,
      ephemeralOwner: "8",
      dataLength: 9,
      numChildren: 10,
      pzxid: "11",
    },
    data: Buffer.from("hello"),
    children: ["x", "y"],
    results: [{ err: -101, path: "/b", stat: null, data: Buffer.from([1]), children: ["z"] }],
    acl: [{ perms: 31, id: { scheme: "world", id: "anyone" } }],
    number: 3,
    clientInfo: [{ authScheme: "ip", user: "127.0.0.1" }],
  },
});

function malformed(bytes: Uint8Array | number[], why: string, pattern = /malformed server frame/): void {
  assert.throws(() => decodeServerFrame(Buffer.from(bytes)), pattern, why);
}

test("a truncated server frame is malformed, wherever it is cut", () => {
  for (let cut = 1; cut < RESPONSE.length; cut++) malformed(RESPONSE.subarray(0, cut), `cut at ${cut} of ${RESPONSE.length}`);
});

test("a field number 0 is malformed, at the top and inside a message, whatever its wire type", () => {
  malformed([0x00], "a lone zero tag");
  malformed([0x22, 0x01, 0x00], "a zero tag inside a pong");
  malformed([0x02, 0x00], "field 0, length-delimited");
});

test("a group is malformed, a known field's or an unknown one's", () => {
  malformed([0x13, 0x14], "ServerFrame.response (2) as a group");
  malformed([0x22, 0x04, 0x9b, 0x01, 0x9c, 0x01], "an empty group, field 19, inside a pong");
});

test("a oneof given two members is malformed, the same one twice included", () => {
  malformed([...PONG_42, ...PONG_42], "two pongs");
  malformed([0x22, 0x00, 0x12, 0x00], "a pong and a response");
});

test("a known field with another wire type is skipped, as an unknown field is", () => {
  assert.deepStrictEqual(decodeServerFrame(Buffer.from([0x10, 0x01])), { frame: undefined }, "ServerFrame.response (2) as a varint");
  assert.deepStrictEqual(
    decodeServerFrame(Buffer.from([0x22, 0x03, 0x0a, 0x01, 0x07])),
    { frame: "pong", pong: { zxid: 0n } },
    "Pong.zxid (1) length-delimited",
  );
  const decoded = decodeServerFrame(Buffer.from([0x12, 0x09, 0x08, 0x07, 0x20, 0x01, 0x2d, 0x01, 0x02, 0x03, 0x04]));
  assert.ok(decoded.frame === "response", "Response.path (4) as a varint, Response.stat (5) as fixed32");
  assert.deepStrictEqual([decoded.response.xid, decoded.response.path, decoded.response.stat], [7, "", null]);
});

test("a field running past its message's end is malformed, though the frame holds its bytes", () => {
  malformed([0x22, 0x02, 0x08, 0x96, 0x01], "a pong of 2 bytes holding a tag and a 2-byte zxid");
  malformed([0x12, 0x04, 0x22, 0x05, 0x61, 0x62, 0x63, 0x64, 0x65], "a response of 4 bytes holding a path of 5");
});

test("garbage after a well-formed frame is malformed", () => {
  const garbage: [number[], string][] = [
    [[0x00], "a zero tag"],
    [[0xff], "a tag cut short"],
    [[0x08], "a tag without its value"],
    [[0x08, 0x80], "a varint cut short"],
    [[0x1a, 0x05, 0x01], "a length beyond the end"],
    [[0x7c], "a stray end-group tag"],
    [[0x7b, 0x10, 0x01, 0x7c], "a group"],
    [[0x22, 0x00], "a second member"],
  ];
  for (const [tail, why] of garbage) malformed(Buffer.concat([PONG_42, Buffer.from(tail)]), why);
});

test("a batch inside a batch is malformed", () => {
  const inner = session.responseSerialize({ frame: "batch", batch: { frames: [{ frame: "pong", pong: { zxid: "1" } }] } });
  malformed([0x2a, inner.length + 2, 0x0a, inner.length, ...inner], "a nested batch", /malformed server frame: a batch inside a batch/);
});

test("unknown fields of every wire type but groups are skipped, at the top and inside messages", () => {
  // Field 15 varint, 16 length-delimited, 17 fixed64, 18 fixed32.
  const unknown = [15 << 3, 7, 0x82, 0x01, 3, 0x78, 0x79, 0x7a, 0x89, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 0x95, 0x01, 1, 2, 3, 4];
  assert.deepStrictEqual(decodeServerFrame(Buffer.concat([PONG_42, Buffer.from(unknown)])), { frame: "pong", pong: { zxid: 42n } });
  // Inside the pong: before and after its zxid.
  const pong = [...unknown, 0x08, 42, ...unknown];
  assert.deepStrictEqual(decodeServerFrame(Buffer.from([0x22, pong.length, ...pong])), { frame: "pong", pong: { zxid: 42n } });
  // Inside a Stat inside a response.
  const stat = [0x08, 0x05, ...unknown, 0x18, 0x02];
  const response = [0x08, 0x01, 0x2a, stat.length, ...stat];
  const decoded = decodeServerFrame(Buffer.from([0x12, response.length, ...response]));
  assert.ok(decoded.frame === "response");
  assert.equal(decoded.response.xid, 1);
  assert.deepStrictEqual([decoded.response.stat?.czxid, decoded.response.stat?.ctime], [5n, 2]);
});

test("a frame with no member this client knows decodes as such, for the session to refuse", () => {
  assert.deepStrictEqual(decodeServerFrame(Buffer.alloc(0)), { frame: undefined });
  assert.deepStrictEqual(decodeServerFrame(Buffer.from([0x32, 0x00])), { frame: undefined }, "member 6, unknown here");
});
