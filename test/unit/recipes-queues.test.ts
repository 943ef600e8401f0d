/**
 * The pure parts of the queue, barrier and counter recipes: element naming and delivery order,
 * the double barrier's leave step, the counter's value encoding.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { leaveStep, memberOrder } from "../../src/recipes/double-barrier.js";
import { parsePriorityElement, priorityElementName, priorityElementOrder } from "../../src/recipes/priority-queue.js";
import { fifoElementOrder } from "../../src/recipes/queue.js";
import { formatCounterValue, parseCounterValue } from "../../src/recipes/shared-counter.js";
import { ZkError } from "../../src/index.js";

const P1 = "_c_0b6c2a1e-3f4d-4c5e-8f9a-0123456789ab-";
const P2 = "_c_ffffffff-0000-4000-8000-000000000000-";
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const isZkError = (code: string) => (error: unknown) => error instanceof ZkError && error.code === code;

describe("FIFO queue order", () => {
  test("elements are delivered in sequence order whatever their protected prefixes", () => {
    const children = [`${P2}queue-0000000003`, `${P1}queue-0000000010`, "queue-0000000001", `${P1}queue-0000000002`];
    assert.deepEqual(fifoElementOrder(children), ["queue-0000000001", `${P1}queue-0000000002`, `${P2}queue-0000000003`, `${P1}queue-0000000010`]);
  });

  test("children that are not elements (receipts, strangers) are ignored", () => {
    assert.deepEqual(fifoElementOrder(["receipts", "queue-", "queue-12", `${P1}lock-0000000001`, "queue-0000000004"]), ["queue-0000000004"]);
  });
});

describe("priority queue names", () => {
  test("the priority is written with ten digits so name order is priority order", () => {
    assert.equal(priorityElementName(0), "pq-0000000000-");
    assert.equal(priorityElementName(42), "pq-0000000042-");
    assert.equal(priorityElementName(9_999_999_999), "pq-9999999999-");
  });

  test("negative, fractional and too large priorities are refused with BADARGUMENTS", () => {
    for (const bad of [-1, 1.5, 10_000_000_000, Number.NaN]) assert.throws(() => priorityElementName(bad), isZkError("BADARGUMENTS"));
  });

  test("a name parses back to its priority and sequence, protected prefix or not", () => {
    assert.deepEqual(parsePriorityElement(`${P1}pq-0000000007-0000000123`), { priority: 7, sequence: 123 });
    assert.deepEqual(parsePriorityElement("pq-0000000000-0000000000"), { priority: 0, sequence: 0 });
    assert.equal(parsePriorityElement("receipts"), undefined);
    assert.equal(parsePriorityElement("pq-7-0000000001"), undefined);
  });

  test("delivery order is the lowest priority value first, then FIFO within a priority", () => {
    const children = [
      `${P1}pq-0000000005-0000000001`,
      `${P2}pq-0000000001-0000000004`,
      `${P1}pq-0000000005-0000000000`,
      "receipts",
      `${P2}pq-0000000001-0000000002`,
      `${P1}pq-0000000000-0000000009`,
    ];
    assert.deepEqual(priorityElementOrder(children), [
      `${P1}pq-0000000000-0000000009`,
      `${P2}pq-0000000001-0000000002`,
      `${P2}pq-0000000001-0000000004`,
      `${P1}pq-0000000005-0000000000`,
      `${P1}pq-0000000005-0000000001`,
    ]);
  });
});

describe("double barrier leave", () => {
  const a = `${P1}member-0000000001`;
  const b = `${P2}member-0000000002`;
  const c = `${P1}member-0000000003`;

  test("members are the protected member- nodes in sequence order, without ready", () => {
    assert.deepEqual(memberOrder(["ready", c, a, b, "other"]), [a, b, c]);
  });

  test("with nobody left, everyone has left", () => {
    assert.deepEqual(leaveStep([], a), { kind: "done" });
    assert.deepEqual(leaveStep([], undefined), { kind: "done" });
  });

  test("the only member left deletes itself and is done", () => {
    assert.deepEqual(leaveStep([a], a), { kind: "delete-and-done" });
  });

  test("the lowest member waits for the highest", () => {
    assert.deepEqual(leaveStep([a, b, c], a), { kind: "await-highest", node: c });
  });

  test("every other member deletes itself and waits for the lowest", () => {
    assert.deepEqual(leaveStep([a, b, c], b), { kind: "delete-and-await-lowest", node: a });
    assert.deepEqual(leaveStep([a, b, c], c), { kind: "delete-and-await-lowest", node: a });
  });

  test("a member whose node is already gone waits for the lowest of those still there", () => {
    assert.deepEqual(leaveStep([a, c], undefined), { kind: "delete-and-await-lowest", node: a });
    assert.deepEqual(leaveStep([a], undefined), { kind: "delete-and-await-lowest", node: a });
  });
});

describe("shared counter values", () => {
  test("a counter is a decimal string, negative values included", () => {
    assert.equal(formatCounterValue(250), "250");
    assert.equal(formatCounterValue(-3), "-3");
    assert.equal(parseCounterValue(bytes("250"), 0), 250);
    assert.equal(parseCounterValue(bytes("-3"), 0), -3);
  });

  test("empty data reads as the initial value", () => {
    assert.equal(parseCounterValue(bytes(""), 7), 7);
  });

  test("data that is not a safe decimal integer is refused with BADARGUMENTS", () => {
    for (const bad of ["1.5", "abc", "0x10", "99999999999999999999"]) assert.throws(() => parseCounterValue(bytes(bad), 0), isZkError("BADARGUMENTS"));
    assert.throws(() => formatCounterValue(0.5), isZkError("BADARGUMENTS"));
  });
});
