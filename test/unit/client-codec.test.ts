/**
 * The SDK's hand-written protobuf codec must be interchangeable with @grpc/proto-loader (which the
 * server uses): whatever the SDK encodes, proto-loader decodes to the same object as its own
 * encoding; whatever proto-loader encodes, the SDK decodes to the object proto-loader would, with
 * int64s as bigint and Stats in the SDK's shape.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as fc from "fast-check";
import type * as grpc from "@grpc/grpc-js";

import { decodeServerFrame, encodeClientFrame, type DecodedServerFrame } from "../../src/client/codec.js";
import { statFromWire } from "../../src/client/convert.js";
import { corralServiceDefinition, type ClientFrame, type ServerFrame } from "../../src/protocol/client-wire.js";

const session = corralServiceDefinition()["Session"] as grpc.MethodDefinition<ClientFrame, ServerFrame> & {
  requestDeserialize: (b: Buffer) => ClientFrame;
  responseSerialize: (f: ServerFrame) => Buffer;
};

const int64 = fc.oneof(
  fc.constantFrom("0", "1", "-1", "4294967295", "4294967296", "9007199254740993", "-9223372036854775808", "9223372036854775807"),
  fc.nat().map(String),
  fc.bigInt({ min: 0n, max: 2n ** 53n }).map(String),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
);
const int32 = fc.oneof(fc.constantFrom(0, -1, 1, 2 ** 31 - 1, -(2 ** 31)), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }));
const uint32 = fc.oneof(fc.constantFrom(0, 1, 127, 128, 2 ** 32 - 1), fc.integer({ min: 0, max: 2 ** 32 - 1 }));
const str = fc.oneof(
  fc.constantFrom("", "/", "/a/b", "/app/queue/q-0000000001"),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: "grapheme", maxLength: 12 }),
  fc.string({ minLength: 60, maxLength: 200 }),
  fc.string({ unit: "binary", maxLength: 12 }),
);
const bytes = fc.oneof(fc.constant(new Uint8Array(0)), fc.uint8Array({ maxLength: 64 }));
const bool = fc.boolean();
const id = fc.record({ scheme: str, id: str });
const acl = fc.record({ perms: uint32, id: fc.option(id, { nil: null }) });
const acls = fc.array(acl, { maxLength: 3 });

const create = fc.record({ path: str, data: bytes, acl: acls, mode: uint32, ttlMs: int64 });
const pathVersion = fc.record({ path: str, version: int32 });
const pathWatch = fc.record({ path: str, watch: bool });
const setData = fc.record({ path: str, data: bytes, version: int32 });
const multiOp = fc.oneof(
  create.map((c) => ({ op: "create" as const, create: c })),
  pathVersion.map((d) => ({ op: "delete" as const, delete: d })),
  setData.map((s) => ({ op: "setData" as const, setData: s })),
  pathVersion.map((c) => ({ op: "check" as const, check: c })),
);
const requestOp = fc.oneof(
  create.map((create) => ({ op: "create" as const, create })),
  pathVersion.map((d) => ({ op: "delete" as const, delete: d })),
  pathWatch.map((exists) => ({ op: "exists" as const, exists })),
  pathWatch.map((getData) => ({ op: "getData" as const, getData })),
  setData.map((setData) => ({ op: "setData" as const, setData })),
  pathWatch.map((getChildren) => ({ op: "getChildren" as const, getChildren })),
  fc.array(multiOp, { maxLength: 4 }).map((ops) => ({ op: "multi" as const, multi: { ops } })),
  str.map((path) => ({ op: "sync" as const, sync: { path } })),
  fc
    .record({
      relativeZxid: int64,
      dataWatches: fc.array(str, { maxLength: 3 }),
      existWatches: fc.array(str, { maxLength: 3 }),
      childWatches: fc.array(str, { maxLength: 3 }),
      persistentWatches: fc.array(str, { maxLength: 3 }),
      persistentRecursiveWatches: fc.array(str, { maxLength: 3 }),
    })
    .map((setWatches) => ({ op: "setWatches" as const, setWatches })),
  fc.constant({ op: "close" as const, close: {} }),
  str.map((path) => ({ op: "getAcl" as const, getAcl: { path } })),
  str.map((prefixPath) => ({ op: "getEphemerals" as const, getEphemerals: { prefixPath } })),
  str.map((path) => ({ op: "getAllChildrenNumber" as const, getAllChildrenNumber: { path } })),
  fc
    .array(
      fc.oneof(
        pathWatch.map((getData) => ({ op: "getData" as const, getData })),
        pathWatch.map((getChildren) => ({ op: "getChildren" as const, getChildren })),
      ),
      { maxLength: 4 },
    )
    .map((ops) => ({ op: "multiRead" as const, multiRead: { ops } })),
  fc.record({ path: str, acl: acls, version: int32 }).map((setAcl) => ({ op: "setAcl" as const, setAcl })),
  fc.record({ scheme: str, auth: bytes }).map((addAuth) => ({ op: "addAuth" as const, addAuth })),
  fc.constant({ op: "whoAmI" as const, whoAmI: {} }),
  fc.record({ path: str, mode: int32 }).map((addWatch) => ({ op: "addWatch" as const, addWatch })),
  fc.record({ path: str, type: int32 }).map((removeWatches) => ({ op: "removeWatches" as const, removeWatches })),
  fc.record({ path: str, type: int32 }).map((checkWatches) => ({ op: "checkWatches" as const, checkWatches })),
);
const singleClientFrame: fc.Arbitrary<ClientFrame> = fc.oneof(
  fc
    .record({ protocolVersion: uint32, lastZxidSeen: int64, timeoutMs: uint32, sessionId: int64, password: bytes })
    .map((connect) => ({ frame: "connect" as const, connect })),
  fc.tuple(int32, requestOp).map(([xid, op]) => ({ frame: "request" as const, request: { xid, ...op } })),
  fc.constant({ frame: "ping" as const, ping: {} }),
);
const clientFrame: fc.Arbitrary<ClientFrame> = fc.oneof(
  { weight: 4, arbitrary: singleClientFrame },
  { weight: 1, arbitrary: fc.array(singleClientFrame, { maxLength: 5 }).map((frames) => ({ frame: "batch" as const, batch: { frames } })) },
);

const stat = fc.record({
  czxid: int64,
  mzxid: int64,
  ctime: int64,
  mtime: int64,
  version: int32,
  cversion: int32,
  aversion: int32,
  ephemeralOwner: int64,
  dataLength: int32,
  numChildren: int32,
  pzxid: int64,
});
const singleServerFrame: fc.Arbitrary<ServerFrame> = fc.oneof(
  fc
    .record({ protocolVersion: uint32, timeoutMs: uint32, sessionId: int64, password: bytes, err: int32, lastZxid: int64, serverId: uint32 })
    .map((connect) => ({ frame: "connect" as const, connect })),
  fc
    .record({
      xid: int32,
      zxid: int64,
      err: int32,
      path: str,
      stat: fc.option(stat, { nil: null }),
      data: bytes,
      children: fc.array(str, { maxLength: 4 }),
      results: fc.array(fc.record({ err: int32, path: str, stat: fc.option(stat, { nil: null }), data: bytes, children: fc.array(str, { maxLength: 3 }) }), {
        maxLength: 3,
      }),
      acl: acls,
      number: int32,
      clientInfo: fc.array(fc.record({ authScheme: str, user: str }), { maxLength: 3 }),
    })
    .map((response) => ({ frame: "response" as const, response })),
  fc.record({ type: int32, path: str, zxid: int64 }).map((event) => ({ frame: "event" as const, event })),
  int64.map((zxid) => ({ frame: "pong" as const, pong: { zxid } })),
);
const serverFrame: fc.Arbitrary<ServerFrame> = fc.oneof(
  { weight: 4, arbitrary: singleServerFrame },
  { weight: 1, arbitrary: fc.array(singleServerFrame, { maxLength: 5 }).map((frames) => ({ frame: "batch" as const, batch: { frames } })) },
);

/** What the SDK's decoder should give for what proto-loader decodes. */
function expectedDecoding(frame: ServerFrame): DecodedServerFrame {
  const stat = (s: Parameters<typeof statFromWire>[0]) => (s ? statFromWire(s) : null);
  switch (frame.frame) {
    case "connect":
      return {
        frame: "connect",
        connect: {
          ...frame.connect,
          sessionId: BigInt(frame.connect.sessionId),
          lastZxid: BigInt(frame.connect.lastZxid),
          password: Buffer.from(frame.connect.password),
        },
      };
    case "response": {
      const r = frame.response;
      return {
        frame: "response",
        response: {
          ...r,
          zxid: BigInt(r.zxid),
          stat: stat(r.stat),
          data: Buffer.from(r.data),
          results: r.results.map((x) => ({ ...x, stat: stat(x.stat), data: Buffer.from(x.data) })),
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

test("every ClientFrame the SDK encodes decodes, with proto-loader, to what proto-loader's own encoding gives", () => {
  fc.assert(
    fc.property(clientFrame, (frame) => {
      const ours = session.requestDeserialize(encodeClientFrame(frame));
      const theirs = session.requestDeserialize(session.requestSerialize(frame));
      assert.deepStrictEqual(ours, theirs);
    }),
    { numRuns: 3000 },
  );
});

test("every ServerFrame proto-loader encodes decodes, with the SDK, to what proto-loader decodes", () => {
  fc.assert(
    fc.property(serverFrame, (frame) => {
      const encoded = session.responseSerialize(frame);
      assert.deepStrictEqual(decodeServerFrame(encoded), expectedDecoding(session.responseDeserialize(encoded)));
    }),
    { numRuns: 3000 },
  );
});

test("the SDK's encoding of a typical request is byte-identical to proto-loader's", () => {
  const frame: ClientFrame = {
    frame: "request",
    request: { xid: 300, op: "setData", setData: { path: "/bench/k1", data: new Uint8Array([1, 2, 3]), version: -1 } },
  };
  assert.deepStrictEqual(encodeClientFrame(frame), session.requestSerialize(frame));
});

test("unknown fields in a server frame are skipped", () => {
  const known = session.responseSerialize({ frame: "pong", pong: { zxid: "42" } });
  // Append field 15 (varint 7), field 16 (length-delimited "xyz"), field 17 (fixed64), field 18 (fixed32).
  const extra = Buffer.from([15 << 3, 7, 0x82, 0x01, 3, 0x78, 0x79, 0x7a, 0x89, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 0x95, 0x01, 1, 2, 3, 4]);
  assert.deepStrictEqual(decodeServerFrame(Buffer.concat([known, extra])), { frame: "pong", pong: { zxid: 42n } });
});

test("a truncated server frame is rejected, not misread", () => {
  const encoded = session.responseSerialize({
    frame: "response",
    response: { xid: 7, zxid: "99", err: 0, path: "/a", stat: null, data: Buffer.from("hello"), children: [], results: [], acl: [], number: 0, clientInfo: [] },
  });
  for (let cut = 1; cut < encoded.length; cut++) {
    assert.throws(() => decodeServerFrame(encoded.subarray(0, cut)), /malformed server frame/, `cut at ${cut}`);
  }
});
