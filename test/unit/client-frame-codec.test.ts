/**
 * The server's hand-written client-protocol codec (src/server/client-frame-codec.ts) must behave
 * exactly like the reflective path it replaced: @grpc/proto-loader decoding followed by the
 * conversions of src/server/wire-codec.ts, and wire-codec's objects encoded by proto-loader.
 *
 * Decoding is checked on well-formed frames and on garbage (random bytes, mutated and truncated
 * frames, random field soups with wrong wire types, duplicated oneof members, nested groups):
 * every input must give the same outcome — the same records, the same rejection code, or
 * MALFORMED where proto-loader threw or found no frame. Encoding is checked by decoding both
 * encodings with proto-loader.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as fc from "fast-check";
import type * as grpc from "@grpc/grpc-js";

import { ZkError, ZkErrorCode } from "../../src/common/errors.js";
import { corralServiceDefinition, type ClientFrame, type ServerFrame } from "../../src/protocol/client-wire.js";
import {
  decodeClientFrame,
  encodeConnectResponseFrame,
  encodeEventFrame,
  encodePongFrame,
  encodeResponseFrame,
  MALFORMED,
  type ConnectAnswer,
  type IncomingFrame,
} from "../../src/server/client-frame-codec.js";
import type { ReadOpResult, Reply, ReplyBody } from "../../src/replica/requests.js";
import { decodeRequest, decodeSessionId, encodeEvent, encodeReply } from "../../src/server/wire-codec.js";
import type { Acl, OpResult, Stat, WatchEvent } from "../../src/store/types.js";

const session = corralServiceDefinition()["Session"] as grpc.MethodDefinition<ClientFrame, ServerFrame> & {
  requestDeserialize: (b: Buffer) => ClientFrame;
  requestSerialize: (f: unknown) => Buffer;
  responseSerialize: (f: unknown) => Buffer;
  responseDeserialize: (b: Buffer) => ServerFrame;
};

/**
 * What the server did with a frame before: proto-loader's decoding, then wire-codec's conversions.
 * A batch (protocol 2) means its frames, each as if sent alone; batches do not nest, and one bad
 * frame spoils its batch.
 */
function oracle(bytes: Buffer): IncomingFrame {
  let frame: ClientFrame;
  try {
    frame = session.requestDeserialize(bytes);
  } catch {
    return MALFORMED;
  }
  return oracleOf(frame, false);
}

function oracleOf(frame: ClientFrame, inBatch: boolean): IncomingFrame {
  switch (frame.frame) {
    case undefined:
      return MALFORMED;
    case "batch": {
      if (inBatch) return MALFORMED;
      const frames = (frame.batch.frames ?? []).map((inner) => oracleOf(inner, true));
      if (frames.some((inner) => inner === MALFORMED)) return MALFORMED;
      return { frame: "batch", frames: frames as Exclude<IncomingFrame, typeof MALFORMED | { frame: "batch" }>[] };
    }
    case "ping":
      return { frame: "ping" };
    case "connect": {
      const c = frame.connect;
      return {
        frame: "connect",
        protocolVersion: c.protocolVersion,
        lastZxidSeen: BigInt(c.lastZxidSeen),
        timeoutMs: c.timeoutMs,
        sessionId: decodeSessionId(c.sessionId),
        password: c.password as Buffer,
      };
    }
    case "request": {
      const xid = frame.request.xid;
      try {
        return { frame: "request", xid, request: decodeRequest(frame.request) };
      } catch (error) {
        if (!(error instanceof ZkError)) throw error;
        return { frame: "rejected", xid, err: error.errno };
      }
    }
  }
}

function sameAsOracle(bytes: Buffer): void {
  const ours = decodeClientFrame(bytes);
  const theirs = oracle(bytes);
  assert.deepStrictEqual(ours, theirs, `input ${bytes.toString("hex")}`);
}

// ---------------------------------------------------------------------------------------------
// Well-formed client frames (as proto-loader objects).

const int64 = fc.oneof(
  fc.constantFrom("0", "1", "-1", "4294967295", "4294967296", "9007199254740991", "9007199254740992", "-9223372036854775808", "9223372036854775807"),
  fc.nat().map(String),
  fc.bigInt({ min: 0n, max: 2n ** 53n }).map(String),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
);
const int32 = fc.oneof(fc.constantFrom(0, -1, 1, 2 ** 31 - 1, -(2 ** 31)), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }));
const uint32 = fc.oneof(fc.constantFrom(0, 1, 6, 7, 127, 128, 2 ** 32 - 1), fc.integer({ min: 0, max: 2 ** 32 - 1 }));
const mode = fc.oneof(fc.integer({ min: 0, max: 7 }), uint32);
/** addWatch modes and watcher types: the defined ones, their neighbours, and any int32. */
const watchNumber = fc.oneof(fc.integer({ min: -1, max: 6 }), int32);
const str = fc.oneof(
  fc.constantFrom("", "/", "/a/b", "/app/queue/q-0000000001", "world", "anyone", "digest"),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: "grapheme", maxLength: 12 }),
  fc.string({ minLength: 60, maxLength: 200 }),
  fc.string({ unit: "binary", maxLength: 12 }),
);
const bytes = fc.oneof(fc.constant(new Uint8Array(0)), fc.uint8Array({ maxLength: 64 }));
const id = fc.record({ scheme: str, id: str });
const acl = fc.record({ perms: uint32, id: fc.oneof(id, id, id, fc.constant(null)) });
const acls = fc.array(acl, { maxLength: 3 });

const create = fc.record({ path: str, data: bytes, acl: acls, mode, ttlMs: int64 });
const pathVersion = fc.record({ path: str, version: int32 });
const pathWatch = fc.record({ path: str, watch: fc.boolean() });
const setData = fc.record({ path: str, data: bytes, version: int32 });
const multiOp = fc.oneof(
  create.map((c) => ({ create: c })),
  pathVersion.map((d) => ({ delete: d })),
  setData.map((s) => ({ setData: s })),
  pathVersion.map((c) => ({ check: c })),
  fc.constant({}),
);
const requestOp = fc.oneof(
  create.map((create) => ({ create })),
  pathVersion.map((d) => ({ delete: d })),
  pathWatch.map((exists) => ({ exists })),
  pathWatch.map((getData) => ({ getData })),
  setData.map((setData) => ({ setData })),
  pathWatch.map((getChildren) => ({ getChildren })),
  fc.array(multiOp, { maxLength: 4 }).map((ops) => ({ multi: { ops } })),
  str.map((path) => ({ sync: { path } })),
  fc
    .record({
      relativeZxid: int64,
      dataWatches: fc.array(str, { maxLength: 3 }),
      existWatches: fc.array(str, { maxLength: 3 }),
      childWatches: fc.array(str, { maxLength: 3 }),
      persistentWatches: fc.array(str, { maxLength: 3 }),
      persistentRecursiveWatches: fc.array(str, { maxLength: 3 }),
    })
    .map((setWatches) => ({ setWatches })),
  fc.constant({ close: {} }),
  str.map((path) => ({ getAcl: { path } })),
  fc.record({ path: str, acl: acls, version: int32 }).map((setAcl) => ({ setAcl })),
  str.map((prefixPath) => ({ getEphemerals: { prefixPath } })),
  str.map((path) => ({ getAllChildrenNumber: { path } })),
  fc
    .array(
      fc.oneof(
        pathWatch.map((getData) => ({ getData })),
        pathWatch.map((getChildren) => ({ getChildren })),
        fc.constant({}),
      ),
      { maxLength: 4 },
    )
    .map((ops) => ({ multiRead: { ops } })),
  fc.record({ scheme: str, auth: bytes }).map((addAuth) => ({ addAuth })),
  fc.constant({ whoAmI: {} }),
  fc.record({ path: str, mode: watchNumber }).map((addWatch) => ({ addWatch })),
  fc.record({ path: str, type: watchNumber }).map((removeWatches) => ({ removeWatches })),
  fc.record({ path: str, type: watchNumber }).map((checkWatches) => ({ checkWatches })),
  fc.constant({}),
);
const singleFrame = fc.oneof(
  fc.record({ protocolVersion: uint32, lastZxidSeen: int64, timeoutMs: uint32, sessionId: int64, password: bytes }).map((connect) => ({ connect })),
  fc.tuple(int32, requestOp).map(([xid, op]) => ({ request: { xid, ...op } })),
  fc.constant({ ping: {} }),
);
const clientFrame = fc.oneof(
  { weight: 4, arbitrary: singleFrame },
  { weight: 1, arbitrary: fc.array(singleFrame, { maxLength: 6 }).map((frames) => ({ batch: { frames } })) },
  // A batch inside a batch, and an empty frame inside one: both malformed.
  { weight: 1, arbitrary: fc.array(singleFrame, { maxLength: 2 }).map((frames) => ({ batch: { frames: [...frames, { batch: { frames } }] } })) },
  { weight: 1, arbitrary: fc.array(singleFrame, { maxLength: 2 }).map((frames) => ({ batch: { frames: [{}, ...frames] } })) },
);
const encodedFrame = clientFrame.map((frame) => session.requestSerialize(frame));

test("well-formed client frames decode to what proto-loader plus wire-codec gave", () => {
  fc.assert(fc.property(encodedFrame, sameAsOracle), { numRuns: 5000 });
});

test("typical frames decode to the server's records", () => {
  const data = Buffer.from([1, 2, 3]);
  const setDataFrame = session.requestSerialize({ request: { xid: 300, setData: { path: "/bench/k1", data, version: -1 } } });
  assert.deepStrictEqual(decodeClientFrame(setDataFrame), {
    frame: "request",
    xid: 300,
    request: { op: "setData", path: "/bench/k1", data, version: -1 },
  });
  const noOp = session.requestSerialize({ request: { xid: 5 } });
  assert.deepStrictEqual(decodeClientFrame(noOp), { frame: "rejected", xid: 5, err: ZkErrorCode.UNIMPLEMENTED });
  const badMode = session.requestSerialize({ request: { xid: 6, create: { path: "/a", mode: 42 } } });
  assert.deepStrictEqual(decodeClientFrame(badMode), { frame: "rejected", xid: 6, err: ZkErrorCode.BADARGUMENTS });
  const noId = session.requestSerialize({ request: { xid: 7, create: { path: "/a", acl: [{ perms: 31 }] } } });
  assert.deepStrictEqual(decodeClientFrame(noId), { frame: "rejected", xid: 7, err: ZkErrorCode.INVALIDACL });
  const addAuth = session.requestSerialize({ request: { xid: 8, addAuth: { scheme: "digest", auth: Buffer.from("bob:secret") } } });
  assert.deepStrictEqual(decodeClientFrame(addAuth), {
    frame: "request",
    xid: 8,
    request: { op: "addAuth", scheme: "digest", auth: Buffer.from("bob:secret") },
  });
  assert.deepStrictEqual(decodeClientFrame(session.requestSerialize({ request: { xid: 9, whoAmI: {} } })), {
    frame: "request",
    xid: 9,
    request: { op: "whoAmI" },
  });
  const addWatch = session.requestSerialize({ request: { xid: 8, addWatch: { path: "/a", mode: 1 } } });
  assert.deepStrictEqual(decodeClientFrame(addWatch), { frame: "request", xid: 8, request: { op: "addWatch", path: "/a", mode: "persistent-recursive" } });
  const badWatchMode = session.requestSerialize({ request: { xid: 9, addWatch: { path: "/a", mode: 2 } } });
  assert.deepStrictEqual(decodeClientFrame(badWatchMode), { frame: "rejected", xid: 9, err: ZkErrorCode.BADARGUMENTS });
  const removeWatches = session.requestSerialize({ request: { xid: 10, removeWatches: { path: "/a", type: 5 } } });
  assert.deepStrictEqual(decodeClientFrame(removeWatches), {
    frame: "request",
    xid: 10,
    request: { op: "removeWatches", path: "/a", watcherType: "persistent-recursive" },
  });
  const checkWatches = session.requestSerialize({ request: { xid: 11, checkWatches: { path: "/a", type: 3 } } });
  assert.deepStrictEqual(decodeClientFrame(checkWatches), { frame: "request", xid: 11, request: { op: "checkWatches", path: "/a", watcherType: "any" } });
  const badType = session.requestSerialize({ request: { xid: 12, checkWatches: { path: "/a", type: 0 } } });
  assert.deepStrictEqual(decodeClientFrame(badType), { frame: "rejected", xid: 12, err: ZkErrorCode.BADARGUMENTS });
  assert.equal(decodeClientFrame(Buffer.alloc(0)), MALFORMED);
  assert.equal(decodeClientFrame(Buffer.from([0x0f, 0x01])), MALFORMED);
  assert.deepStrictEqual(decodeClientFrame(session.requestSerialize({ ping: {} })), { frame: "ping" });
  const batch = session.requestSerialize({ batch: { frames: [{ ping: {} }, { request: { xid: 300, setData: { path: "/bench/k1", data, version: -1 } } }] } });
  assert.deepStrictEqual(decodeClientFrame(batch), {
    frame: "batch",
    frames: [{ frame: "ping" }, { frame: "request", xid: 300, request: { op: "setData", path: "/bench/k1", data, version: -1 } }],
  });
  assert.equal(decodeClientFrame(session.requestSerialize({ batch: { frames: [{ batch: { frames: [{ ping: {} }] } }] } })), MALFORMED);
});

// ---------------------------------------------------------------------------------------------
// Garbage.

/** A protobuf-ish field soup: known and unknown field numbers, any wire type, sometimes wrong lengths. */
type Soup = { field: number; wire: number; payload: Uint8Array }[];

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

const varintPayload = fc.oneof(
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((v) => Uint8Array.from(varint(v))),
  // Overlong, unterminated and padded varints.
  fc.array(fc.integer({ min: 0x80, max: 0xff }), { minLength: 1, maxLength: 12 }).chain((cont) =>
    fc.oneof(
      fc.constant(Uint8Array.from(cont)),
      fc.integer({ min: 0, max: 0x7f }).map((last) => Uint8Array.from([...cont, last])),
    ),
  ),
);

function soupBytes(soup: Soup): Uint8Array {
  const out: number[] = [];
  for (const { field, wire, payload } of soup) {
    out.push(...varint(BigInt((field << 3) | wire) & 0xffffffffn));
    out.push(...payload);
  }
  return Uint8Array.from(out);
}

/** Length-delimited payload: a well-formed or lying length followed by content. */
function delimited(content: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  return fc.tuple(content, fc.integer({ min: -3, max: 3 }), fc.boolean()).map(([body, skew, honest]) => {
    const length = honest ? body.length : Math.max(0, body.length + skew);
    return Uint8Array.from([...varint(BigInt(length)), ...body]);
  });
}

const leafContent = fc.oneof(
  fc.uint8Array({ maxLength: 12 }),
  fc.string({ maxLength: 8 }).map((s) => new Uint8Array(Buffer.from(s))),
  encodedFrame.map((b) => new Uint8Array(b)),
);

const soup: fc.Memo<Uint8Array> = fc.memo((depth) => {
  const content: fc.Arbitrary<Uint8Array> =
    depth <= 1 ? leafContent : fc.oneof({ weight: 1, arbitrary: leafContent }, { weight: 3, arbitrary: soup(depth - 1) });
  const entry = fc.record({
    field: fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 1, max: 21 }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 40 }) }),
    wire: fc.oneof({ weight: 8, arbitrary: fc.constantFrom(0, 2) }, { weight: 2, arbitrary: fc.integer({ min: 0, max: 7 }) }),
  });
  return fc
    .array(
      entry.chain(({ field, wire }) => {
        const payload: fc.Arbitrary<Uint8Array> =
          wire === 0
            ? varintPayload
            : wire === 2
              ? delimited(content)
              : wire === 1
                ? fc.uint8Array({ minLength: 6, maxLength: 9 })
                : wire === 5
                  ? fc.uint8Array({ minLength: 3, maxLength: 5 })
                  : wire === 3
                    ? fc.oneof(
                        fc.constant(Uint8Array.from([(1 << 3) | 4])),
                        soup(depth - 1).map((inner) => Uint8Array.from([...inner, (2 << 3) | 4])),
                      )
                    : fc.uint8Array({ maxLength: 3 });
        return payload.map((p) => ({ field, wire, payload: p }));
      }),
      { maxLength: 4 },
    )
    .map(soupBytes);
});

test("field soups (wrong wire types, lying lengths, repeated oneof members, groups) get the old outcome", () => {
  fc.assert(
    fc.property(soup(5), (b) => sameAsOracle(Buffer.from(b))),
    { numRuns: 20000 },
  );
});

test("mutated and truncated frames get the old outcome", () => {
  const mutation = fc.oneof(
    fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
    fc.record({ kind: fc.constant("cut" as const), at: fc.nat(), value: fc.constant(0) }),
    fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
    fc.record({ kind: fc.constant("drop" as const), at: fc.nat(), value: fc.constant(0) }),
  );
  fc.assert(
    fc.property(encodedFrame, fc.array(mutation, { minLength: 1, maxLength: 3 }), (frame, mutations) => {
      let b = [...frame];
      for (const m of mutations) {
        const at = b.length === 0 ? 0 : m.at % (b.length + 1);
        if (m.kind === "flip" && at < b.length) b[at] = m.value;
        else if (m.kind === "cut") b = b.slice(0, at);
        else if (m.kind === "insert") b.splice(at, 0, m.value);
        else if (m.kind === "drop") b.splice(at, 1);
      }
      sameAsOracle(Buffer.from(b));
    }),
    { numRuns: 20000 },
  );
});

test("random bytes get the old outcome", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 40 }), (b) => sameAsOracle(Buffer.from(b))),
    { numRuns: 20000 },
  );
});

test("frames concatenated or with several oneof members get the old outcome", () => {
  fc.assert(
    fc.property(fc.array(encodedFrame, { minLength: 2, maxLength: 3 }), (frames) => sameAsOracle(Buffer.concat(frames))),
    { numRuns: 3000 },
  );
});

/** The body of a length-delimited field: skips the tag and the length. */
function unwrap(b: Uint8Array): Uint8Array {
  let pos = 0;
  while ((b[pos++] as number) & 0x80);
  let length = 0;
  for (let shift = 0; ; shift += 7) {
    const byte = b[pos++] as number;
    length += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) break;
  }
  assert.equal(b.length - pos, length);
  return b.subarray(pos);
}

function field(number: number, body: Uint8Array): Uint8Array {
  return Uint8Array.from([...varint(BigInt((number << 3) | 2)), ...varint(BigInt(body.length)), ...body]);
}

const concat = (parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));

/** Request bodies (xid + one op member) as proto-loader writes them. */
const requestBody = fc.tuple(int32, requestOp).map(([xid, op]) => unwrap(session.requestSerialize({ request: { xid, ...op } })));
/** MultiOp bodies (one member each). */
const multiOpBody = multiOp.map((op) => unwrap(unwrap(unwrap(session.requestSerialize({ request: { multi: { ops: [op] } } })))));

test("requests and multi ops with several op members, and repeated connect fields, get the old outcome", () => {
  const severalOps = fc.array(requestBody, { minLength: 2, maxLength: 4 }).map((bodies) => field(2, concat(bodies)));
  const severalMultiOps = fc
    .array(fc.array(multiOpBody, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 3 })
    .map((ops) => field(2, field(8, concat(ops.map((members) => field(1, concat(members)))))));
  const severalConnects = fc
    .array(
      clientFrame.filter((f) => "connect" in f),
      { minLength: 2, maxLength: 3 },
    )
    .map((frames) => field(1, concat(frames.map((f) => unwrap(session.requestSerialize(f))))));
  fc.assert(
    fc.property(fc.oneof(severalOps, severalMultiOps, severalConnects), (b) => sameAsOracle(Buffer.from(b))),
    { numRuns: 5000 },
  );
});

test("edge cases of protobufjs's varint readers and group nesting get the old outcome", () => {
  const cases: number[][] = [
    // ConnectRequest whose int64 runs to the message's end with four bytes left, continuation set.
    [0x0a, 0x05, 0x10, 0x80, 0x80, 0x80, 0x80],
    [0x0a, 0x05, 0x10, 0xff, 0xff, 0xff, 0xff],
    [0x0a, 0x04, 0x10, 0x80, 0x80, 0x80],
    [0x0a, 0x04, 0x10, 0x80, 0x80, 0x01],
    // A 32-bit varint with a fifth continuation byte: five more bytes taken unread.
    [0x12, 0x0b, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80, 0x80, 0x80, 0x80, 0x80],
    [0x12, 0x0b, 0x08, 0xff, 0xff, 0xff, 0xff, 0x8f, 0x01, 0x2a, 0x00, 0x00, 0x00],
    // A string whose length runs past its message: cut, not refused.
    [0x12, 0x05, 0x22, 0x03, 0x0a, 0x09, 0x2f],
    // Unterminated tag varints near the end.
    [0x80],
    [0x80, 0x80, 0x80, 0x80],
    [0x80, 0x80, 0x80, 0x80, 0x80],
    // Field 1 with a group's wire type: read as the connect it is declared as.
    [0x0b, 0x0c, 0x1a, 0x00],
    // An end-group with no start, and an empty unknown group (field 15).
    [0x7c],
    [0x7b, 0x7c, 0x1a, 0x00],
    // Nested unknown groups at and beyond protobufjs's recursion limit.
    [...Array<number>(100).fill(0x7b), ...Array<number>(100).fill(0x7c), 0x1a, 0x00],
    [...Array<number>(101).fill(0x7b), ...Array<number>(101).fill(0x7c), 0x1a, 0x00],
    [...Array<number>(102).fill(0x7b), ...Array<number>(102).fill(0x7c), 0x1a, 0x00],
    // The same inside a ping, one level deeper.
    [0x1a, ...varint(200n), ...Array<number>(100).fill(0x7b), ...Array<number>(100).fill(0x7c)],
    [0x1a, ...varint(198n), ...Array<number>(99).fill(0x7b), ...Array<number>(99).fill(0x7c)],
  ];
  for (const c of cases) sameAsOracle(Buffer.from(c));
});

// ---------------------------------------------------------------------------------------------
// Encoding.

const safeNat = fc.oneof(fc.constantFrom(0, 1, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1), fc.nat(), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }));
const time = fc.oneof(safeNat, fc.constantFrom(-1, -(2 ** 40)), fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }));
const owner = fc.oneof(fc.constant(0n), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }));
const stat: fc.Arbitrary<Stat> = fc.record({
  czxid: safeNat,
  mzxid: safeNat,
  ctime: time,
  mtime: time,
  version: int32,
  cversion: int32,
  aversion: int32,
  ephemeralOwner: owner,
  dataLength: int32,
  numChildren: int32,
  pzxid: safeNat,
});
const serverAcl: fc.Arbitrary<Acl> = fc.record({ perms: uint32, id: id });
const opResult: fc.Arbitrary<OpResult> = fc.oneof(
  fc.record({ type: fc.constant("create" as const), path: str, stat }),
  fc.constant({ type: "delete" as const }),
  fc.record({ type: fc.constant("setData" as const), stat }),
  fc.constant({ type: "check" as const }),
  fc.record({ type: fc.constant("error" as const), err: int32 }),
);
const readOpResult: fc.Arbitrary<ReadOpResult> = fc.oneof(
  fc.record({ type: fc.constant("getData" as const), data: bytes, stat }),
  fc.record({ type: fc.constant("getChildren" as const), children: fc.array(str, { maxLength: 3 }) }),
  fc.record({ type: fc.constant("error" as const), err: int32 }),
);
const replyBody: fc.Arbitrary<ReplyBody> = fc.oneof(
  fc.constant({ kind: "empty" as const }),
  str.map((path) => ({ kind: "path" as const, path })),
  fc.record({ kind: fc.constant("create" as const), path: str, stat }),
  fc.record({ kind: fc.constant("stat" as const), stat }),
  fc.record({ kind: fc.constant("data" as const), data: bytes, stat }),
  fc.record({ kind: fc.constant("children" as const), children: fc.array(str, { maxLength: 4 }), stat }),
  fc.record({ kind: fc.constant("acl" as const), acl: fc.array(serverAcl, { maxLength: 3 }), stat }),
  fc.record({ kind: fc.constant("multi" as const), results: fc.array(opResult, { maxLength: 4 }) }),
  fc.record({ kind: fc.constant("paths" as const), paths: fc.array(str, { maxLength: 4 }) }),
  fc.record({ kind: fc.constant("number" as const), number: int32 }),
  fc.record({ kind: fc.constant("multiRead" as const), results: fc.array(readOpResult, { maxLength: 4 }) }),
  fc.record({ kind: fc.constant("whoAmI" as const), clientInfo: fc.array(fc.record({ authScheme: str, user: str }), { maxLength: 3 }) }),
);
const reply: fc.Arbitrary<Reply> = fc.record({ err: int32, zxid: safeNat, body: replyBody });

function decodedBoth(ours: Buffer, theirs: unknown): void {
  assert.deepStrictEqual(session.responseDeserialize(ours), session.responseDeserialize(session.responseSerialize(theirs)));
}

test("responses encode to what proto-loader decodes from wire-codec's objects", () => {
  fc.assert(
    fc.property(int32, reply, (xid, r) => decodedBoth(encodeResponseFrame(xid, r), { response: encodeReply(xid, r) })),
    { numRuns: 3000 },
  );
});

test("watch events, pongs and connect answers encode to what proto-loader decodes from the old objects", () => {
  const event = fc.record({ type: int32, path: str, zxid: safeNat }) as fc.Arbitrary<WatchEvent>;
  fc.assert(
    fc.property(event, (e) => decodedBoth(encodeEventFrame(e), { event: encodeEvent(e) })),
    { numRuns: 1000 },
  );
  fc.assert(
    fc.property(safeNat, (zxid) => decodedBoth(encodePongFrame(zxid), { pong: { zxid: String(zxid) } })),
    { numRuns: 500 },
  );
  const connect: fc.Arbitrary<ConnectAnswer> = fc.record({
    protocolVersion: uint32,
    timeoutMs: uint32,
    sessionId: owner,
    password: bytes,
    err: int32,
    lastZxid: safeNat,
    serverId: uint32,
  });
  fc.assert(
    fc.property(connect, (c) =>
      decodedBoth(encodeConnectResponseFrame(c), { connect: { ...c, sessionId: c.sessionId.toString(), lastZxid: String(c.lastZxid) } }),
    ),
    { numRuns: 1000 },
  );
});

test("a setData answer is as small as its canonical encoding", () => {
  const s: Stat = {
    czxid: 5,
    mzxid: 9,
    ctime: 1_700_000_000_000,
    mtime: 1_700_000_000_123,
    version: 3,
    cversion: 0,
    aversion: 0,
    ephemeralOwner: 0n,
    dataLength: 100,
    numChildren: 0,
    pzxid: 5,
  };
  const encoded = encodeResponseFrame(300, { err: 0, zxid: 9, body: { kind: "stat", stat: s } });
  const decoded = session.responseDeserialize(encoded);
  assert.equal(decoded.frame, "response");
  // proto-loader also writes the zero err explicitly; ours omits proto3 defaults.
  assert.ok(encoded.length < session.responseSerialize({ response: encodeReply(300, { err: 0, zxid: 9, body: { kind: "stat", stat: s } }) }).length);
});
