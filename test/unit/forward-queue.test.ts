/**
 * A learner's forward queue: it forwards up to its bound of writes the leader has not answered,
 * small writes a little past it, in its sessions' turns, and an applied txn answers only the write
 * it belongs to.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { zabLimits } from "../../src/consensus/constants.js";
import { ForwardQueue } from "../../src/replica/forward-queue.js";

const KiB = 1024;
const bytes = (n: number) => new Uint8Array(n);

function takeAll(queue: ForwardQueue): string[] {
  const out: string[] = [];
  for (let next = queue.take(); next !== undefined; next = queue.take()) out.push(`${next.sessionId}/${next.cxid}`);
  return out;
}

test("writes are forwarded up to the bound of unanswered bytes, and more as their txns are applied", () => {
  const queue = new ForwardQueue(1_024 * KiB);
  for (let cxid = 1; cxid <= 4; cxid++) queue.push(1n, cxid, bytes(512 * KiB));
  assert.deepEqual(takeAll(queue), ["1/1", "1/2"]);
  assert.equal(queue.inFlightBytes, 1_024 * KiB);
  queue.applied(1n, 1);
  assert.deepEqual(takeAll(queue), ["1/3"]);
  queue.applied(1n, 2);
  queue.applied(1n, 3);
  assert.deepEqual(takeAll(queue), ["1/4"]);
  queue.applied(1n, 4);
  assert.equal(queue.inFlightBytes, 0);
});

test("a write larger than the bound goes when nothing else is unanswered", () => {
  const queue = new ForwardQueue(100 * KiB);
  queue.push(1n, 1, bytes(900 * KiB));
  queue.push(1n, 2, bytes(900 * KiB));
  assert.deepEqual(takeAll(queue), ["1/1"]);
  queue.applied(1n, 1);
  assert.deepEqual(takeAll(queue), ["1/2"]);
});

test("at the bound, another session's small write is still forwarded, within the small reserve", () => {
  const queue = new ForwardQueue(1_024 * KiB);
  for (let cxid = 1; cxid <= 8; cxid++) queue.push(1n, cxid, bytes(512 * KiB));
  assert.deepEqual(takeAll(queue), ["1/1", "1/2"]);
  queue.push(2n, 1, bytes(20));
  assert.deepEqual(takeAll(queue), ["2/1"], "the bystander's write goes; the storm's waits");
  const small = 16 * KiB;
  let cxid = 2;
  for (let sent = 0; sent < zabLimits.smallProposalsReserveBytes + small; sent += small) queue.push(2n, cxid++, bytes(small));
  const taken = takeAll(queue).length;
  assert.ok(taken >= 1 && taken <= Math.ceil(zabLimits.smallProposalsReserveBytes / small), `small writes stop at the reserve (${taken})`);
});

test("a txn that answers none of this server's writes (another server's client, or out of order) releases nothing", () => {
  const queue = new ForwardQueue(1_024 * KiB);
  queue.push(1n, 7, bytes(1_024 * KiB));
  queue.push(1n, 8, bytes(512 * KiB));
  assert.deepEqual(takeAll(queue), ["1/7"]);
  queue.applied(2n, 7);
  queue.applied(1n, 8);
  assert.equal(queue.inFlightBytes, 1_024 * KiB);
  queue.applied(1n, 7);
  assert.equal(queue.inFlightBytes, 0);
});

test("every session with nothing unanswered forwards its next write whatever the bound, so the leader sees all of them", () => {
  const queue = new ForwardQueue(1_024 * KiB);
  for (let session = 1n; session <= 8n; session++) for (let cxid = 1; cxid <= 3; cxid++) queue.push(session, cxid, bytes(512 * KiB));
  const first = takeAll(queue);
  assert.deepEqual(first.filter((w) => w.endsWith("/1")).length, 8, `one write of each session: ${first.join(" ")}`);
  assert.equal(first.length, 8, "and nothing more past the bound");
  queue.applied(5n, 1);
  assert.deepEqual(takeAll(queue), ["5/2"], "a session answered forwards its next write at once, out of turn");
});
