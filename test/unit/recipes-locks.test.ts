/**
 * The pure part of the lock recipes: contender names and whose turn it is (lock-policy.ts).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { contendersOf, EXCLUSIVE_POLICY, parseContender, READ_POLICY, WRITE_POLICY } from "../../src/recipes/lock-policy.js";

const P1 = "_c_0f8e2a4c-1111-4222-8333-944455556666-";
const P2 = "_c_a1b2c3d4-e5f6-4789-8abc-def012345678-";

describe("contender names", () => {
  test("a protected lock, read or write node is parsed into its kind and sequence", () => {
    assert.deepEqual(parseContender(`${P1}lock-0000000007`), { kind: "lock", sequence: 7 });
    assert.deepEqual(parseContender(`${P1}read-0000000010`), { kind: "read", sequence: 10 });
    assert.deepEqual(parseContender("write-2147483647"), { kind: "write", sequence: 2147483647 });
  });

  test("any other child is not a contender", () => {
    for (const name of ["lock-", "lock-12", "lease-0000000001", `${P1}lock-00000000011`, "xlock-0000000001", "leases", "locks"]) {
      assert.equal(parseContender(name), undefined, name);
    }
  });

  test("contenders are filtered by the policy and ordered by sequence, not by protected prefix", () => {
    const children = [`${P2}lock-0000000003`, `${P1}lock-0000000001`, "leases", `${P1}write-0000000002`, `${P2}lock-0000000002`];
    assert.deepEqual(contendersOf(EXCLUSIVE_POLICY, children), [`${P1}lock-0000000001`, `${P2}lock-0000000002`, `${P2}lock-0000000003`]);
    const mixed = [`${P1}write-0000000004`, `${P2}read-0000000001`, `${P1}lock-0000000002`, `${P2}read-0000000003`];
    assert.deepEqual(contendersOf(READ_POLICY, mixed), [`${P2}read-0000000001`, `${P2}read-0000000003`, `${P1}write-0000000004`]);
  });
});

describe("whose turn it is", () => {
  const locks = ["lock-0000000001", "lock-0000000002", "lock-0000000005"];

  test("exclusive: the lowest node holds and every other one watches the node just below it", () => {
    assert.deepEqual(EXCLUSIVE_POLICY.decide(locks, "lock-0000000001"), { kind: "granted" });
    assert.deepEqual(EXCLUSIVE_POLICY.decide(locks, "lock-0000000002"), { kind: "wait", on: "lock-0000000001" });
    assert.deepEqual(EXCLUSIVE_POLICY.decide(locks, "lock-0000000005"), { kind: "wait", on: "lock-0000000002" });
  });

  test("a contender whose node is not among the children is gone", () => {
    assert.deepEqual(EXCLUSIVE_POLICY.decide(locks, "lock-0000000003"), { kind: "gone" });
    assert.deepEqual(READ_POLICY.decide([], "read-0000000001"), { kind: "gone" });
  });

  const queue = ["read-0000000001", "read-0000000002", "write-0000000003", "read-0000000004", "write-0000000005", "read-0000000006", "read-0000000007"];

  test("readers ahead of every writer hold together", () => {
    assert.deepEqual(READ_POLICY.decide(queue, "read-0000000001"), { kind: "granted" });
    assert.deepEqual(READ_POLICY.decide(queue, "read-0000000002"), { kind: "granted" });
  });

  test("a reader behind writers watches only the nearest lower write node", () => {
    assert.deepEqual(READ_POLICY.decide(queue, "read-0000000004"), { kind: "wait", on: "write-0000000003" });
    assert.deepEqual(READ_POLICY.decide(queue, "read-0000000006"), { kind: "wait", on: "write-0000000005" });
    assert.deepEqual(READ_POLICY.decide(queue, "read-0000000007"), { kind: "wait", on: "write-0000000005" });
  });

  test("a writer watches the node just below it, read or write, and holds only when first", () => {
    assert.deepEqual(WRITE_POLICY.decide(queue, "write-0000000003"), { kind: "wait", on: "read-0000000002" });
    assert.deepEqual(WRITE_POLICY.decide(queue, "write-0000000005"), { kind: "wait", on: "read-0000000004" });
    assert.deepEqual(WRITE_POLICY.decide(["write-0000000005", "read-0000000006"], "write-0000000005"), { kind: "granted" });
  });

  test("each policy names its own node kind", () => {
    assert.equal(EXCLUSIVE_POLICY.nodeName, "lock-");
    assert.equal(READ_POLICY.nodeName, "read-");
    assert.equal(WRITE_POLICY.nodeName, "write-");
  });
});
