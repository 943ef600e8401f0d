/**
 * The admission queue: each session's writes in its order, sessions taken in turn, a small write
 * never behind more than one large one, and every origin's share counted.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { AdmissionQueue } from "../../src/replica/admission-queue.js";

interface Write {
  origin: number;
  bytes: number;
  name: string;
}

const write = (name: string, origin = 1, bytes = 10): Write => ({ origin, bytes, name });

function drain(queue: AdmissionQueue<Write>): string[] {
  const out: string[] = [];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) out.push(next.name);
  return out;
}

test("one session's backlog delays another session's single write by at most one turn", () => {
  const queue = new AdmissionQueue<Write>();
  for (let i = 0; i < 100; i++) queue.push(1n, write(`storm${i}`));
  assert.equal(queue.shift()?.name, "storm0");
  queue.push(2n, write("bystander"));
  assert.deepEqual(drain(queue).slice(0, 3), ["storm1", "bystander", "storm2"]);
});

test("sessions take turns and each session's writes keep their order", () => {
  const queue = new AdmissionQueue<Write>();
  for (const [session, names] of [
    [1n, ["a1", "a2", "a3"]],
    [2n, ["b1"]],
    [3n, ["c1", "c2"]],
  ] as const) {
    for (const name of names) queue.push(session, write(name));
  }
  assert.deepEqual(drain(queue), ["a1", "b1", "c1", "a2", "c2", "a3"]);
  assert.equal(queue.count, 0);
});

test("a session that comes back after its lane emptied joins the end of the turns", () => {
  const queue = new AdmissionQueue<Write>();
  queue.push(1n, write("a1"));
  queue.push(2n, write("b1"));
  assert.equal(queue.shift()?.name, "a1");
  queue.push(1n, write("a2"));
  assert.deepEqual(drain(queue), ["b1", "a2"]);
});

test("each origin's waiting writes and bytes are counted, and released as they leave", () => {
  const queue = new AdmissionQueue<Write>();
  queue.push(1n, write("local", 1, 100));
  queue.push(2n, write("from2", 2, 1_000));
  queue.push(3n, write("from2 again", 2, 24));
  assert.deepEqual(queue.queuedFrom(2), { count: 2, bytes: 1_024 });
  assert.deepEqual(queue.queuedFrom(1), { count: 1, bytes: 100 });
  assert.deepEqual([queue.count, queue.bytes], [3, 1_124]);
  queue.shift();
  queue.shift();
  assert.deepEqual(queue.queuedFrom(2), { count: 1, bytes: 24 });
  assert.deepEqual(queue.queuedFrom(1), { count: 0, bytes: 0 });
  queue.shift();
  assert.deepEqual([queue.count, queue.bytes], [0, 0]);
});

test("a long run of one busy session and many one-off sessions stays in turn order and compacts", () => {
  const queue = new AdmissionQueue<Write>();
  let expectedBusy = 0;
  for (let round = 0; round < 5_000; round++) {
    queue.push(1n, write(`busy${round}`));
    queue.push(BigInt(100 + round), write(`once${round}`));
    const first = queue.shift()!;
    const second = queue.shift()!;
    assert.ok(first.name === `busy${expectedBusy}` || second.name === `busy${expectedBusy}`, `round ${round}: ${first.name}, ${second.name}`);
    expectedBusy += 1;
  }
  assert.equal(queue.count, 0);
  const small = (queue as unknown as { small: { ids: unknown[] } }).small;
  assert.ok(small.ids.length < 3_000, `dead turns are compacted away (${small.ids.length})`);
});

test("a small write waits behind at most one large write, however many large sessions have a backlog", () => {
  const queue = new AdmissionQueue<Write>(1_000);
  for (let session = 1n; session <= 16n; session++) for (let i = 0; i < 4; i++) queue.push(session, write(`big${session}.${i}`, 1, 500_000));
  assert.equal(queue.shift()?.name, "big1.0");
  queue.push(99n, write("bystander", 2, 2));
  const next = drain(queue);
  assert.ok(next.indexOf("bystander") <= 1, `the bystander went ${next.indexOf("bystander") + 1}th: ${next.slice(0, 4).join(", ")}`);
});

test("large writes are not starved by a stream of small ones: small ones take as many bytes as the last large one, then a large one goes", () => {
  const queue = new AdmissionQueue<Write>(1_000);
  for (let i = 0; i < 3; i++) queue.push(1n, write(`big${i}`, 1, 4_000));
  for (let session = 10n; session < 200n; session++) queue.push(session, write(`small${session}`, 1, 1_000));
  const order = drain(queue).slice(0, 11);
  assert.deepEqual(order, ["big0", "small10", "small11", "small12", "small13", "big1", "small14", "small15", "small16", "small17", "big2"]);
});

test("turns of large writes are weighed in bytes: a session of larger writes goes less often", () => {
  const queue = new AdmissionQueue<Write>(1_000);
  for (let i = 0; i < 4; i++) queue.push(1n, write(`huge${i}`, 1, 8_000));
  for (let i = 0; i < 8; i++) queue.push(2n, write(`big${i}`, 1, 2_000));
  // A huge write needs eight turns of credit, a big one two: the big session's bytes keep pace.
  assert.deepEqual(drain(queue).slice(0, 6), ["big0", "big1", "big2", "huge0", "big3", "big4"]);
});

test("a session keeps its order when its writes change rings", () => {
  const queue = new AdmissionQueue<Write>(1_000);
  queue.push(1n, write("a-big", 1, 5_000));
  queue.push(1n, write("a-small", 1, 10));
  queue.push(2n, write("b-small", 1, 10));
  assert.deepEqual(drain(queue), ["a-big", "b-small", "a-small"]);
});

test("a write larger than many quanta still goes, after turns enough", () => {
  const queue = new AdmissionQueue<Write>(10);
  queue.push(1n, write("huge", 1, 1_000_000));
  assert.equal(queue.shift()?.name, "huge");
  assert.equal(queue.count, 0);
});

test("a session's next write taken out of turn leaves the others' turns as they were", () => {
  const queue = new AdmissionQueue<Write>();
  for (const session of [1n, 2n, 3n]) for (const i of [1, 2]) queue.push(session, write(`s${session}.${i}`));
  assert.equal(queue.shiftSession(2n)?.name, "s2.1");
  assert.equal(queue.shiftSession(4n), undefined);
  assert.deepEqual(drain(queue), ["s1.1", "s3.1", "s2.2", "s1.2", "s3.2"]);
});

test("a large write that went at once, with nothing waiting, counts as its turn, as if it had gone through the queue", () => {
  const asQueued = new AdmissionQueue<Write>(1_000);
  asQueued.push(1n, write("big0", 1, 2_000));
  assert.equal(asQueued.shift()?.name, "big0");
  const atOnce = new AdmissionQueue<Write>(1_000);
  atOnce.wentInTurn(2_000);
  const orders = [asQueued, atOnce].map((queue) => {
    queue.push(1n, write("big1", 1, 2_000));
    for (let session = 2n; session < 5n; session++) queue.push(session, write(`small${session}`, 1, 1_000));
    return drain(queue);
  });
  // Small ones take as many bytes as the large one that went, then the next large one goes.
  assert.deepEqual(orders[0], ["small2", "small3", "big1", "small4"]);
  assert.deepEqual(orders[1], orders[0]);
});
