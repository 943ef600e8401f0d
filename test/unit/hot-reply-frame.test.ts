import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";

import type { Reply, ReplyBody } from "../../src/replica/requests.js";
import { encodeGeneratedResponseFrame, encodeResponseFrame } from "../../src/server/client-frame-codec.js";
import { encodeHotReplyFrame } from "../../src/server/hot-reply-frame.js";
import type { Stat } from "../../src/store/types.js";

const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const natural = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2 ** 32 + 5 }), fc.maxSafeNat());
const stat: fc.Arbitrary<Stat> = fc.record({
  czxid: natural,
  mzxid: natural,
  ctime: natural,
  mtime: natural,
  version: int32,
  cversion: int32,
  aversion: int32,
  ephemeralOwner: fc.oneof(fc.constant(0n), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })),
  dataLength: int32,
  numChildren: int32,
  pzxid: natural,
});
// Paths and names as clients may send them: any text, lone surrogates included.
const text = fc.oneof(fc.string({ unit: "grapheme", maxLength: 30 }), fc.string({ unit: "binary", maxLength: 30 }), fc.string({ maxLength: 300 }));
const hotBody: fc.Arbitrary<ReplyBody> = fc.oneof(
  fc.constant<ReplyBody>({ kind: "empty" }),
  text.map((path): ReplyBody => ({ kind: "path", path })),
  fc.tuple(text, stat).map(([path, s]): ReplyBody => ({ kind: "create", path, stat: s })),
  stat.map((s): ReplyBody => ({ kind: "stat", stat: s })),
  fc.tuple(fc.uint8Array({ maxLength: 400 }), stat).map(([data, s]): ReplyBody => ({ kind: "data", data, stat: s })),
  fc.tuple(fc.array(text, { maxLength: 20 }), stat).map(([children, s]): ReplyBody => ({ kind: "children", children, stat: s })),
);
const hotReply: fc.Arbitrary<[number, Reply]> = fc.tuple(int32, int32, natural, hotBody).map(([xid, err, zxid, body]) => [xid, { err, zxid, body }]);

test("the hand-written replies are byte for byte what the generated encoder writes", () => {
  fc.assert(
    fc.property(hotReply, ([xid, reply]) => {
      const hand = encodeHotReplyFrame(xid, reply);
      assert.ok(hand !== undefined, "every reply of these kinds with in-range values takes the hand path");
      assert.deepStrictEqual([...hand], [...encodeGeneratedResponseFrame(xid, reply)]);
      assert.deepStrictEqual([...encodeResponseFrame(xid, reply)], [...hand]);
    }),
    { numRuns: 3000 },
  );
});

test("values the hand path does not write, and the other kinds of reply, go to the generated encoder", () => {
  const s: Stat = { czxid: 1, mzxid: 2, ctime: 3, mtime: 4, version: 0, cversion: 0, aversion: 0, ephemeralOwner: 0n, dataLength: 0, numChildren: 0, pzxid: 1 };
  for (const reply of [
    { err: 0, zxid: -1, body: { kind: "empty" } },
    { err: 0, zxid: 2 ** 53, body: { kind: "empty" } },
    { err: 0, zxid: 1.5, body: { kind: "empty" } },
    { err: 0, zxid: 1, body: { kind: "stat", stat: { ...s, version: 2 ** 31 } } },
    { err: 0, zxid: 1, body: { kind: "stat", stat: { ...s, ctime: -5 } } },
    { err: 0, zxid: 1, body: { kind: "number", number: 3 } },
    { err: 0, zxid: 1, body: { kind: "paths", paths: ["/a"] } },
    { err: 0, zxid: 1, body: { kind: "acl", acl: [], stat: s } },
  ] as Reply[]) {
    assert.equal(
      encodeHotReplyFrame(1, reply),
      undefined,
      JSON.stringify(reply, (_, v: unknown) => (typeof v === "bigint" ? String(v) : v)),
    );
  }
  assert.equal(encodeHotReplyFrame(2 ** 31, { err: 0, zxid: 1, body: { kind: "empty" } }), undefined);
  // The generated encoder writes what it can (a negative ctime) and refuses the rest, as before.
  assert.deepStrictEqual(
    [...encodeResponseFrame(1, { err: 0, zxid: 1, body: { kind: "stat", stat: { ...s, ctime: -5 } } })],
    [...encodeGeneratedResponseFrame(1, { err: 0, zxid: 1, body: { kind: "stat", stat: { ...s, ctime: -5 } } })],
  );
  assert.throws(() => encodeResponseFrame(1, { err: 0, zxid: 1, body: { kind: "stat", stat: { ...s, version: 2 ** 31 } } }));
});
