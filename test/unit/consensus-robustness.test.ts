/**
 * A peer's malformed or out-of-protocol message is the peer's fault, never an invariant violation
 * of ours: whatever a learner sends a leader, and whatever a leader sends a learner, the core
 * drops the peer or steps down, and never throws.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import type { QuorumMessage } from "../../src/consensus/messages.js";
import { Harness } from "./consensus-harness.js";
import { makeZxid } from "../../src/store/zxid.js";

const number = fc.oneof(
  fc.integer({ min: -3, max: 10 }),
  fc.constantFrom(makeZxid(1, 1), makeZxid(1, 2), makeZxid(2, 1), makeZxid(7, 0), Number.NaN, 2 ** 60, -0.5),
);
const bytes = fc.uint8Array({ maxLength: 4 });
const record = fc.record({ zxid: number, record: bytes });
const message: fc.Arbitrary<QuorumMessage> = fc.oneof(
  fc.record({
    type: fc.constant("learnerInfo"),
    sid: fc.integer({ min: 0, max: 5 }),
    role: fc.constantFrom("participant", "observer"),
    acceptedEpoch: number,
    lastZxid: number,
    protocolVersion: fc.constant(1),
  }),
  fc.record({ type: fc.constant("leaderInfo"), newEpoch: number, protocolVersion: fc.constant(1) }),
  fc.record({ type: fc.constant("ackEpoch"), currentEpoch: number, lastZxid: number }),
  fc.record({ type: fc.constant("diff"), lastZxid: number }),
  fc.record({ type: fc.constant("trunc"), zxid: number }),
  fc.record({ type: fc.constant("snap"), zxid: number, snapshot: bytes }),
  fc.record({ type: fc.constant("syncTxns"), txns: fc.array(record, { maxLength: 3 }), committed: fc.boolean() }),
  fc.record({ type: fc.constant("newLeader"), zxid: number }),
  fc.constant({ type: "upToDate" as const }),
  fc.record({ type: fc.constant("proposal"), zxid: number, record: bytes }),
  fc.record({ type: fc.constant("ack"), zxid: number }),
  fc.record({ type: fc.constant("commit"), zxid: number }),
  fc.record({ type: fc.constant("inform"), zxid: number, record: bytes }),
  fc.record({ type: fc.constant("ping"), touches: fc.constant([]) }),
  fc.record({ type: fc.constant("request"), sessionId: fc.constant(1n), cxid: number, request: bytes }),
  fc.record({ type: fc.constant("sync"), syncId: number }),
  fc.record({ type: fc.constant("syncDone"), syncId: number, zxid: number }),
  fc.record({ type: fc.constant("revalidate"), sessionId: fc.constant(1n), timeoutMs: number }),
  fc.record({ type: fc.constant("revalidated"), sessionId: fc.constant(1n), valid: fc.boolean() }),
  fc.constant({ type: "bogus" } as unknown as QuorumMessage),
) as fc.Arbitrary<QuorumMessage>;

test("no message sequence from a learner makes a leader throw", () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.constantFrom(2, 3), message), { maxLength: 12 }), fc.boolean(), (inputs, established) => {
      const h = new Harness([1, 2, 3]);
      h.start(1);
      if (established) {
        h.start(2, 1);
        h.start(3, 1);
        h.deliver();
        h.propose("x");
      }
      for (const [from, m] of inputs) h.input(1, { type: "message", from, message: m });
      h.deliver();
    }),
    { numRuns: 500, seed: 7 },
  );
});

test("no message sequence from its leader makes a learner throw", () => {
  fc.assert(
    fc.property(fc.array(message, { maxLength: 12 }), fc.constantFrom(2, 4), fc.boolean(), (inputs, learner, greeted) => {
      const h = new Harness([1, 2, 3], [4]);
      h.start(learner, 1);
      if (greeted) h.input(learner, { type: "message", from: 1, message: { type: "leaderInfo", newEpoch: 1, protocolVersion: 1 } });
      for (const m of inputs) h.input(learner, { type: "message", from: 1, message: m });
      assert.ok(true);
    }),
    { numRuns: 500, seed: 11 },
  );
});
