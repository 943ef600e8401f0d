/**
 * The client stream's outbox: one message written at a time, frames encoded only when their
 * message is made, so a caller pipelining far past what the stream takes holds no encoded copies.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { limits } from "../../src/common/constants.js";
import { FrameOutbox } from "../../src/protocol/frame-outbox.js";

/** Frames are numbers; a frame's encoding is `size` bytes filled with its number; a batch concatenates. */
function outboxOf(size: number) {
  const messages: Buffer[] = [];
  const pending: (() => void)[] = [];
  let encoded = 0;
  const outbox = new FrameOutbox<number>(
    (message, done) => {
      messages.push(message);
      pending.push(done);
    },
    (frames) => Buffer.concat(frames),
    (frame) => {
      encoded += 1;
      return Buffer.alloc(size, frame);
    },
  );
  return {
    outbox,
    messages,
    encodedCount: () => encoded,
    /** The stream takes the oldest message still being written. */
    complete: () => pending.shift()?.(),
  };
}

const framesIn = (messages: Buffer[], size: number): number[] => messages.flatMap((m) => Array.from({ length: m.length / size }, (_, i) => m[i * size]!));

test("a burst pushed while a message is being written is encoded only as the stream takes each message", async () => {
  const size = 64 * 1024;
  const perMessage = limits.frameBatchBytesMax / size;
  const { outbox, messages, encodedCount, complete } = outboxOf(size);
  outbox.push(0);
  await Promise.resolve();
  assert.equal(messages.length, 1);
  for (let i = 1; i <= 200; i++) outbox.push(i % 256);
  await Promise.resolve();
  // Nothing more is encoded while the first message is still being written.
  assert.equal(encodedCount(), 1);
  assert.equal(outbox.queued, 200);
  complete();
  assert.equal(messages.length, 2);
  assert.equal(messages[1]!.length, limits.frameBatchBytesMax);
  // One message's frames, and the one that did not fit in it, encoded: no more.
  assert.equal(encodedCount(), 1 + perMessage + 1);
  while (outbox.queued > 0) complete();
  assert.deepEqual(
    framesIn(messages, size),
    Array.from({ length: 201 }, (_, i) => i % 256),
  );
});

test("a frame larger than a batch travels alone, and order is kept around it", async () => {
  const messages: Buffer[] = [];
  const big = new FrameOutbox<Buffer>(
    (message, done) => {
      messages.push(message);
      done();
    },
    (frames) => Buffer.concat(frames),
    (frame) => frame,
  );
  big.push(Buffer.alloc(10, 1));
  big.push(Buffer.alloc(limits.frameBatchBytesMax + 1, 2));
  big.push(Buffer.alloc(10, 3));
  await Promise.resolve();
  assert.deepEqual(
    messages.map((m) => [m[0], m.length]),
    [
      [1, 10],
      [2, limits.frameBatchBytesMax + 1],
      [3, 10],
    ],
  );
  assert.equal(big.queued, 0);
});

test("flushAll writes everything waiting at once, in order, and discard drops it unencoded", async () => {
  const size = 100 * 1024;
  const { outbox, messages, encodedCount } = outboxOf(size);
  outbox.push(1);
  await Promise.resolve();
  for (let i = 2; i <= 9; i++) outbox.push(i);
  outbox.flushAll();
  assert.deepEqual(framesIn(messages, size), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const before = encodedCount();
  for (let i = 10; i < 20; i++) outbox.push(i);
  outbox.discard();
  await Promise.resolve();
  assert.equal(outbox.queued, 0);
  assert.equal(encodedCount(), before);
});

test("a stream that takes each message at once (a dropped stream) empties the outbox without recursing", async () => {
  let written = 0;
  const outbox = new FrameOutbox<number>(
    (_message, done) => {
      written += 1;
      done();
    },
    (frames) => Buffer.concat(frames),
    () => Buffer.alloc(limits.frameBatchBytesMax),
  );
  for (let i = 0; i < 50_000; i++) outbox.push(i);
  await Promise.resolve();
  assert.equal(written, 50_000);
  assert.equal(outbox.queued, 0);
});
