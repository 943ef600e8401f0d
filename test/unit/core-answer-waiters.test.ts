import assert from "node:assert/strict";
import { test } from "node:test";
import type { RevalidationOutcome } from "../../src/replica/broadcast.js";
import { CoreAnswerWaiters } from "../../src/replica/core-answer-waiters.js";

test("a sync's waiter hears the zxid its own id reached, once", () => {
  const waiters = new CoreAnswerWaiters();
  const heard: string[] = [];
  const first = waiters.addSync((zxid) => heard.push(`first ${zxid}`));
  const second = waiters.addSync((zxid) => heard.push(`second ${zxid}`));
  assert.notEqual(first, second);
  waiters.syncDone(second, 7);
  waiters.syncDone(first, 9);
  waiters.syncDone(first, 11);
  assert.deepEqual(heard, ["second 7", "first 9"]);
});

test("revalidations of one session share the core's one answer; the first asks the core", () => {
  const waiters = new CoreAnswerWaiters();
  const heard: RevalidationOutcome[] = [];
  assert.equal(
    waiters.addRevalidation(5n, (outcome) => heard.push(outcome)),
    true,
  );
  assert.equal(
    waiters.addRevalidation(5n, (outcome) => heard.push(outcome)),
    false,
  );
  waiters.revalidated(5n, false);
  assert.deepEqual(heard, ["expired", "expired"]);
  assert.equal(
    waiters.addRevalidation(5n, (outcome) => heard.push(outcome)),
    true,
    "answered: the next connect asks again",
  );
});

test("when the term ends, revalidations are answered unavailable and syncs never answered", () => {
  const waiters = new CoreAnswerWaiters();
  const heard: string[] = [];
  const syncId = waiters.addSync((zxid) => heard.push(`sync ${zxid}`));
  waiters.addRevalidation(3n, (outcome) => heard.push(outcome));
  waiters.termEnded();
  waiters.syncDone(syncId, 4);
  waiters.revalidated(3n, true);
  assert.deepEqual(heard, ["unavailable"]);
});
