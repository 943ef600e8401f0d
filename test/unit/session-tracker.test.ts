import assert from "node:assert/strict";
import { test } from "node:test";
import { SessionTracker } from "../../src/replica/session-tracker.js";

test("a session's owner refuses every other server; a session with no owner is claimed by the first to ask", () => {
  const tracker = new SessionTracker(100, () => 0);
  tracker.setOwner(1n, 2);
  assert.equal(tracker.claim(1n, 2), true);
  assert.equal(tracker.claim(1n, 3), false, "a request from the server the client left");
  tracker.setOwner(1n, 3);
  assert.equal(tracker.claim(1n, 2), false, "moved again: the old owner is refused now");
  assert.equal(tracker.claim(1n, 3), true);
  assert.equal(tracker.claim(5n, 1), true, "unknown owner: the first server claims it");
  assert.equal(tracker.claim(5n, 2), false);
  tracker.beginLeadership();
  assert.equal(tracker.claim(5n, 2), true, "a new term learns owners afresh");
  tracker.forget(5n);
  assert.equal(tracker.claim(5n, 3), true, "a closed session's owner is forgotten");
});

test("an expired session is closing until forgotten", () => {
  let now = 0;
  const tracker = new SessionTracker(100, () => now);
  tracker.touch(1n, 1_000);
  tracker.touch(2n, 5_000);
  now = 2_000;
  assert.deepEqual(tracker.collectExpired(), [1n]);
  assert.equal(tracker.isClosing(1n), true);
  assert.equal(tracker.isClosing(2n), false);
  tracker.forget(1n);
  assert.equal(tracker.isClosing(1n), false);
});
