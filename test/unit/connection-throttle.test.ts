/**
 * ZooKeeper's connection token bucket, on a clock the test moves.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConnectionThrottle } from "../../src/server/connection-throttle.js";

function throttle(tokens: number, fillTimeMs: number, fillCount: number) {
  const clock = { nowMs: 1_000 };
  let rejected = 0;
  const bucket = new ConnectionThrottle(
    { tokens, fillTimeMs, fillCount },
    () => clock.nowMs,
    () => (rejected += 1),
  );
  const admitted = (attempts: number) => Array.from({ length: attempts }, () => bucket.admit()).filter(Boolean).length;
  return { clock, admitted, rejected: () => rejected };
}

test("a full bucket lets its tokens' worth of connects through, then refuses and counts each refusal", () => {
  const { admitted, rejected } = throttle(5, 10, 1);
  assert.equal(admitted(8), 5);
  assert.equal(rejected(), 3);
});

test("the bucket gains fillCount tokens per fillTime elapsed, never more than it holds", () => {
  const { clock, admitted } = throttle(5, 10, 2);
  assert.equal(admitted(5), 5);
  clock.nowMs += 25; // two and a half fill times: 5 tokens
  assert.equal(admitted(10), 5);
  clock.nowMs += 1_000_000;
  assert.equal(admitted(10), 5);
});

test("no time passing, no tokens gained: a steady storm gets only the refill rate", () => {
  const { clock, admitted } = throttle(2, 100, 1);
  assert.equal(admitted(2), 2);
  let through = 0;
  for (let step = 0; step < 100; step++) {
    clock.nowMs += 50;
    through += admitted(10);
  }
  // 5,000 ms at one token per 100 ms (a fill happens once more than fillTime has passed).
  assert.ok(through <= 50 && through >= 25, `${through} connects through`);
});

test("0 tokens turns the throttle off", () => {
  const { admitted, rejected } = throttle(0, 1, 1);
  assert.equal(admitted(10_000), 10_000);
  assert.equal(rejected(), 0);
});
