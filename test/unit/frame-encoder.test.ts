import assert from "node:assert/strict";
import { test } from "node:test";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import fc from "fast-check";

import { ClientFrame, ServerFrame } from "../../gen/client.js";
import { encodeFrame } from "../../src/protocol/frame-encoder.js";

const pong = (zxid: bigint): ServerFrame => ({ frame: { $case: "pong", pong: { zxid } } });
const event = (path: string, zxid: bigint): ServerFrame => ({ frame: { $case: "event", event: { type: 3, path, zxid } } });
const setData = (xid: number, path: string, data: Uint8Array): ClientFrame => ({
  frame: { $case: "request", request: { xid, op: { $case: "setData", setData: { path, data, version: -1 } } } },
});
/** One frame encoded by encodeFrame, and by the generated encoder into a fresh writer. */
type Step = [ours: Buffer, reference: Uint8Array];
const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });

test("encodeFrame gives the bytes the generated encoder's finish() gives, frame after frame", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          int64.map((zxid) => (): Step => [encodeFrame(ServerFrame, pong(zxid)), ServerFrame.encode(pong(zxid)).finish()]),
          fc
            .tuple(fc.string({ unit: "grapheme", maxLength: 40 }), int64)
            .map(([path, zxid]) => (): Step => [encodeFrame(ServerFrame, event(path, zxid)), ServerFrame.encode(event(path, zxid)).finish()]),
          fc
            .tuple(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.string(), fc.uint8Array({ maxLength: 3000 }))
            .map(([xid, path, data]) => (): Step => [
              encodeFrame(ClientFrame, setData(xid, path, data)),
              ClientFrame.encode(setData(xid, path, data), new BinaryWriter()).finish(),
            ]),
        ),
        { minLength: 1, maxLength: 8 },
      ),
      (steps) => {
        for (const step of steps) {
          const [ours, reference] = step();
          assert.ok(Buffer.isBuffer(ours));
          assert.deepStrictEqual([...ours], [...reference]);
        }
      },
    ),
    { numRuns: 300 },
  );
});

test("each frame is a buffer of its own: the next frame does not overwrite the last", () => {
  const first = encodeFrame(ServerFrame, pong(1n));
  const copy = Buffer.from(first);
  encodeFrame(ServerFrame, pong(2n ** 40n));
  assert.deepStrictEqual(first, copy);
});

test("a frame larger than the writer keeps, and one whose encoding throws, leave the next frame whole", () => {
  const big = setData(1, "/big", new Uint8Array(200_000).fill(9));
  assert.deepStrictEqual([...encodeFrame(ClientFrame, big)], [...ClientFrame.encode(big).finish()]);
  // An int32 field out of range: the generated encoder throws half-way through the frame.
  assert.throws(() => encodeFrame(ClientFrame, setData(2 ** 40, "/x", new Uint8Array(1))));
  assert.deepStrictEqual([...encodeFrame(ServerFrame, pong(7n))], [...ServerFrame.encode(pong(7n)).finish()]);
});
