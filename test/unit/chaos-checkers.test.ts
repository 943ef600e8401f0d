/**
 * The chaos checkers over hand-written histories, each rule with a history that breaks it (a
 * checker that cannot fail proves nothing), plus generated histories that are linearizable by
 * construction: valid as generated, invalid after one provably impossible corruption.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { performance } from "node:perf_hooks";
import fc from "fast-check";
import {
  checkAll,
  checkFencedLock,
  checkReadConsistency,
  checkRegisterLinearizable,
  checkSet,
  checkUniqueIds,
  COUNTER_CHECKER,
  FENCED_LOCK_CHECKER,
  idNodePath,
  liveness,
  QUEUE_CHECKER,
  READ_CONSISTENCY_CHECKER,
  REGISTER_CHECKER,
  SET_CHECKER,
  UNIQUE_IDS_CHECKER,
  WATCHES_CHECKER,
} from "../chaos/checkers/index.js";
import {
  INITIAL_VALUE,
  type AcquireOp,
  type AddOp,
  type CasOp,
  type Op,
  type Outcome,
  type ReadOp,
  type ReleaseOp,
  type TakeIdOp,
  type UseOp,
  type Verdict,
  type WriteOp,
} from "../chaos/history.js";
import { history } from "../helpers/chaos-history.js";

// ---------------------------------------------------------------------------------------------
// Builders. Ops get their ids from `history`, in invocation order as the format promises.

/** [invokedAt, completedAt]; completedAt left out for an op still pending when the run ended. */
type Span = readonly [number, number?];
/** Who issued the op and on what; process 1, its session and key "x" unless said. */
interface Who {
  p?: number;
  session?: string;
  key?: string;
}
/** How a write or cas ended: ok with its answer, unknown, or failed with an error code. */
type Answer = { v: number; z?: number | string } | "unknown" | { fail: string };

function base(span: Span, who: Who, outcome: Outcome, error?: string) {
  const process = who.p ?? 1;
  return {
    id: 0,
    process,
    session: who.session ?? `0x${process.toString(16)}`,
    invokedAt: span[0],
    ...(span[1] === undefined ? {} : { completedAt: span[1] }),
    outcome,
    ...(error === undefined ? {} : { error }),
  };
}

function settle(answer: Answer): { outcome: Outcome; error?: string; result?: { version: number; mzxid: string } } {
  if (answer === "unknown") return { outcome: "unknown", error: "CONNECTIONLOSS" };
  if ("fail" in answer) return { outcome: "fail", error: answer.fail };
  // Without an explicit zxid, one that grows with the version keeps the answer plausible.
  return { outcome: "ok", result: { version: answer.v, mzxid: String(answer.z ?? 1000 + answer.v) } };
}

function write(span: Span, value: string, answer: Answer, who: Who = {}): WriteOp {
  const { outcome, error, result } = settle(answer);
  return { ...base(span, who, outcome, error), f: "write", key: who.key ?? "x", value, ...(result ? { result } : {}) };
}

function cas(span: Span, expectedVersion: number, value: string, answer: Answer, who: Who = {}): CasOp {
  const { outcome, error, result } = settle(answer);
  return { ...base(span, who, outcome, error), f: "cas", key: who.key ?? "x", expectedVersion, value, ...(result ? { result } : {}) };
}

function read(span: Span, value: string, version: number, zxid: number | string, who: Who = {}): ReadOp {
  return { ...base(span, who, "ok"), f: "read", key: who.key ?? "x", result: { value, version, mzxid: String(zxid) } };
}

function add(span: Span, element: string, outcome: Outcome, who: Who = {}): AddOp {
  return { ...base(span, who, outcome, outcome === "ok" ? undefined : outcome === "fail" ? "NODEEXISTS" : "CONNECTIONLOSS"), f: "add", element };
}

/** A sequential create under `parent` ("/ids/a" unless said), tagged `tag`; `id` when it was acknowledged. */
function takeId(span: Span, tag: string, id: number | "unknown" | "fail", parent = "/ids/a", who: Who = {}): TakeIdOp {
  const outcome: Outcome = typeof id === "number" ? "ok" : id;
  const error = outcome === "ok" ? undefined : outcome === "fail" ? "NONODE" : "CONNECTIONLOSS";
  return { ...base(span, who, outcome, error), f: "take-id", parent, tag, ...(typeof id === "number" ? { result: { id } } : {}) };
}

function acquire(span: Span, token: string | undefined, who: Who = {}): AcquireOp {
  return { ...base(span, who, token === undefined ? "unknown" : "ok"), f: "acquire", ...(token === undefined ? {} : { token }) };
}

function use(span: Span, token: string, outcome: Outcome, who: Who = {}): UseOp {
  return { ...base(span, who, outcome, outcome === "fail" ? "FENCED" : undefined), f: "use", token };
}

function release(span: Span, token: string, who: Who = {}): ReleaseOp {
  return { ...base(span, who, "ok"), f: "release", token };
}

function assertValid(verdict: Verdict): void {
  assert.equal(verdict.valid, true, `expected valid, got ${String(verdict.valid)}:\n${verdict.violations.join("\n")}`);
  assert.deepEqual(verdict.violations, []);
}

/** Asserts a violation and that some violation message matches `pattern`; returns the messages. */
function assertInvalid(verdict: Verdict, pattern: RegExp): string {
  assert.equal(verdict.valid, false, `expected a violation matching ${pattern}, got ${String(verdict.valid)}`);
  const text = verdict.violations.join("\n");
  assert.match(text, pattern);
  return text;
}

// ---------------------------------------------------------------------------------------------

describe("linearizable register", () => {
  test("sequential writes answered with versions 1, 2, 3 are linearizable", () => {
    const verdict = checkRegisterLinearizable(history(write([0, 1], "a", { v: 1 }), write([2, 3], "b", { v: 2 }), write([4, 5], "c", { v: 3 })));
    assertValid(verdict);
    assert.equal(verdict.checker, REGISTER_CHECKER);
    assert.equal(verdict.stats.opsChecked, 3);
    assert.equal(verdict.stats.keys, 1);
    assert.equal(verdict.stats.unknownOps, 0);
    assert.ok(verdict.stats.exploredConfigurations! >= 3);
  });

  test("two concurrent writes both answered with version 1 are not", () => {
    assertInvalid(checkRegisterLinearizable(history(write([0, 10], "a", { v: 1 }), write([1, 9], "b", { v: 1 }, { p: 2 }))), /key "x": not linearizable/);
  });

  test("a write answered with a version that skips one is not", () => {
    assertInvalid(checkRegisterLinearizable(history(write([0, 1], "a", { v: 2 }))), /needs version 1 just before it, but the version could only be 0/);
    assertInvalid(checkRegisterLinearizable(history(write([0, 1], "a", { v: 1 }), write([2, 3], "b", { v: 3 }))), /version could only be 1 when it completed/);
  });

  test("an acknowledged write lost (a later write reuses its version) is not", () => {
    const text = assertInvalid(checkRegisterLinearizable(history(write([0, 1], "a", { v: 1 }), write([5, 6], "b", { v: 1 }, { p: 2 }))), /not linearizable/);
    assert.match(text, /#1 p2 write x="b" ok v1/, "names the op whose completion cannot be reached");
  });

  test("writes that only work in one order, all concurrent and invoked in the opposite order, are linearizable", () => {
    const ops = history(
      write([0, 10], "d", { v: 4 }, { p: 1 }),
      write([1, 10], "c", { v: 3 }, { p: 2 }),
      write([2, 10], "b", { v: 2 }, { p: 3 }),
      write([3, 10], "a", { v: 1 }, { p: 4 }),
    );
    assertValid(checkRegisterLinearizable(ops));
  });

  test("intervals that touch count as concurrent; a gap of one millisecond orders them", () => {
    assertValid(checkRegisterLinearizable(history(write([0, 10], "a", { v: 2 }), write([10, 20], "b", { v: 1 }, { p: 2 }))));
    assertInvalid(checkRegisterLinearizable(history(write([0, 9], "a", { v: 2 }), write([10, 20], "b", { v: 1 }, { p: 2 }))), /not linearizable/);
  });

  test("keys are independent registers", () => {
    const ops = history(
      write([0, 10], "a", { v: 1 }, { key: "x" }),
      write([1, 9], "b", { v: 1 }, { p: 2, key: "y" }),
      write([11, 12], "c", { v: 2 }, { key: "y" }),
    );
    const verdict = checkRegisterLinearizable(ops);
    assertValid(verdict);
    assert.equal(verdict.stats.keys, 2);
    // The violation names the key it is on and only that key.
    const bad = [...ops, write([20, 21], "d", { v: 1 }, { key: "y" })];
    const text = assertInvalid(checkRegisterLinearizable(history(...bad)), /key "y": not linearizable/);
    assert.doesNotMatch(text, /key "x"/);
  });

  test("a cas answered ok on a version the register never had is not", () => {
    assertInvalid(
      checkRegisterLinearizable(history(write([0, 1], "a", { v: 1 }), cas([2, 3], 3, "b", { v: 4 }))),
      /needs version 3 just before it, but the version could only be 1/,
    );
  });

  test("a cas answered ok with a version other than expectedVersion+1 contradicts itself", () => {
    assertInvalid(checkRegisterLinearizable(history(cas([0, 1], 0, "a", { v: 2 }))), /its own answer is impossible/);
  });

  test("a cas whose expected version matches is linearizable", () => {
    assertValid(checkRegisterLinearizable(history(write([0, 1], "a", { v: 1 }), cas([2, 3], 1, "b", { v: 2 }), cas([4, 5], 1, "c", { fail: "BADVERSION" }))));
  });

  test("a BADVERSION refusal at a time the version could only have matched is not linearizable", () => {
    const refusedWhileMatching = history(write([0, 1], "a", { v: 1 }), cas([2, 3], 1, "b", { fail: "BADVERSION" }), write([4, 5], "c", { v: 2 }));
    assertInvalid(checkRegisterLinearizable(refusedWhileMatching), /needs a version other than 1 at some point in its interval/);
    // Concurrent with the next write it may have come after it, so it is fine.
    assertValid(
      checkRegisterLinearizable(history(write([0, 1], "a", { v: 1 }), cas([2, 6], 1, "b", { fail: "BADVERSION" }), write([4, 5], "c", { v: 2 }, { p: 2 }))),
    );
  });

  test("a cas that failed for a reason other than the version, and a failed write, constrain nothing", () => {
    const ops = history(
      write([0, 1], "a", { v: 1 }),
      cas([2, 3], 1, "b", { fail: "NONODE" }),
      write([4, 5], "c", { fail: "NONODE" }),
      write([6, 7], "d", { v: 2 }),
    );
    const verdict = checkRegisterLinearizable(ops);
    assertValid(verdict);
    assert.equal(verdict.stats.opsChecked, 2);
    assert.equal(verdict.stats.ignoredOps, 2);
  });

  test("an unknown write that must have happened for a later version to make sense is linearizable", () => {
    const verdict = checkRegisterLinearizable(history(write([0, 1], "a", { v: 1 }), write([2, 3], "b", "unknown"), write([10, 11], "c", { v: 3 })));
    assertValid(verdict);
    assert.equal(verdict.stats.unknownOps, 1);
  });

  test("an unknown write that did not happen is linearizable too, pending or timed out", () => {
    assertValid(checkRegisterLinearizable(history(write([0, 1], "a", { v: 1 }), write([2, 3], "b", "unknown"), write([10, 11], "c", { v: 2 }))));
    assertValid(checkRegisterLinearizable(history(write([0, 1], "a", { v: 1 }), write([2], "b", "unknown", { p: 2 }), write([10, 11], "c", { v: 2 }))));
  });

  test("an unknown write may take effect long after its recorded timeout", () => {
    assertValid(checkRegisterLinearizable(history(write([0, 1], "a", "unknown"), write([2, 3], "b", { v: 1 }), write([10, 11], "c", { v: 3 }))));
  });

  test("an unknown write cannot take effect before it was invoked", () => {
    assertInvalid(
      checkRegisterLinearizable(history(write([0, 1], "a", { v: 1 }), write([10, 11], "c", { v: 3 }), write([12, 13], "b", "unknown"))),
      /needs version 2/,
    );
  });

  test("a history that is linearizable only with the unknown write in the middle", () => {
    // The refusal of cas-on-1 needs the version off 1 within [4, 5]; only the unknown write can move it.
    const middle = history(
      write([0, 1], "a", { v: 1 }),
      write([2, 3], "b", "unknown", { p: 2 }),
      cas([4, 5], 1, "c", { fail: "BADVERSION" }),
      write([10, 11], "d", { v: 3 }),
    );
    assertValid(checkRegisterLinearizable(middle));
    const tooLate = history(
      write([0, 1], "a", { v: 1 }),
      cas([4, 5], 1, "c", { fail: "BADVERSION" }),
      write([6, 7], "b", "unknown", { p: 2 }),
      write([10, 11], "d", { v: 3 }),
    );
    assertInvalid(checkRegisterLinearizable(tooLate), /needs a version other than 1/);
  });

  test("an unknown cas takes effect only where the version equals its expected version", () => {
    assertValid(checkRegisterLinearizable(history(write([0, 1], "a", { v: 1 }), cas([2, 3], 1, "b", "unknown"), write([10, 11], "c", { v: 3 }))));
    assertInvalid(
      checkRegisterLinearizable(history(write([0, 1], "a", { v: 1 }), cas([2, 3], 5, "b", "unknown"), write([10, 11], "c", { v: 3 }))),
      /needs version 2/,
    );
  });

  test("several unknown writes: exactly as many take effect as the versions need", () => {
    const ops = history(
      write([0, 1], "u1", "unknown", { p: 1 }),
      write([0, 1], "u2", "unknown", { p: 2 }),
      write([0, 1], "u3", "unknown", { p: 3 }),
      write([5, 6], "a", { v: 3 }, { p: 4 }),
      write([7, 8], "b", { v: 4 }, { p: 4 }),
    );
    assertValid(checkRegisterLinearizable(ops));
    // Two took effect before "a"; the third can still explain version 6 …
    assertValid(checkRegisterLinearizable(history(...ops, write([9, 10], "c", { v: 6 }, { p: 4 }))));
    // … but nothing is left for version 7.
    assertInvalid(
      checkRegisterLinearizable(history(...ops, write([9, 10], "c", { v: 7 }, { p: 4 }))),
      /needs version 6 just before it, but the version could only be 4 or 5/,
    );
  });

  test("the search backtracks out of a greedy choice that cannot complete", () => {
    // Taking the unknown cas-on-0 first (it is invoked first) blocks both later ops; the only
    // linearization is refusal, write, and the unknown cas never.
    const ops = history(
      cas([0, 1], 0, "u", "unknown", { p: 1 }),
      write([1, 10], "a", { v: 1 }, { p: 2 }),
      cas([2, 10], 1, "b", { fail: "BADVERSION" }, { p: 3 }),
    );
    assertValid(checkRegisterLinearizable(ops));
  });

  test("read ops play no part in register linearizability", () => {
    assertValid(checkRegisterLinearizable(history(write([0, 1], "a", { v: 1 }), read([2, 3], INITIAL_VALUE, 0, 5))));
  });

  test("a violation lists at most 20 ops, the blocked one first", () => {
    const crowd = Array.from({ length: 40 }, (_, i) => write([i, 100], `w${i}`, { v: 40 - i }, { p: i + 10 }));
    const text = assertInvalid(checkRegisterLinearizable(history(...crowd, write([0, 50], "dup", { v: 1 }, { p: 2 }))), /not linearizable/);
    const opLines = text.split("\n").filter((line) => /^\s+#\d+ /.test(line));
    assert.ok(opLines.length <= 19, `lists ${opLines.length} ops besides the blocked one`);
    assert.match(text, /and \d+ more concurrent ops/);
  });

  test("an ok op without its answer is a malformed history, not a pass", () => {
    const noResult: WriteOp = { ...write([0, 1], "a", { v: 1 }), result: undefined };
    assertInvalid(checkRegisterLinearizable(history(noResult)), /history malformed: ok op without result/);
  });

  test("past the state budget the verdict for that key is unknown, not a hang", () => {
    const ops = history(
      write([0, 1], "a", { v: 1 }),
      write([2, 3], "b", { v: 2 }),
      write([4, 5], "c", { v: 3 }),
      write([6, 7], "c2", { v: 4 }),
      write([0, 1], "d", { v: 1 }, { key: "y" }),
    );
    const verdict = checkRegisterLinearizable(
      ops.filter((op) => op.f === "write" && op.key === "x"),
      { budgetStates: 2 },
    );
    assert.equal(verdict.valid, "unknown");
    assert.match(verdict.violations.join("\n"), /key "x": undecided, the search gave up after exploring 3 configurations \(budget 2\)/);
    // One undecided key makes the whole verdict undecided; a violation elsewhere still decides it.
    assert.equal(checkRegisterLinearizable(ops, { budgetStates: 2 }).valid, "unknown");
    assert.equal(checkRegisterLinearizable([...ops, ...history(write([9, 10], "e", { v: 5 }, { key: "y" }))], { budgetStates: 2 }).valid, false);
    // A search that finishes within its budget has its answer, whatever the budget.
    assertValid(checkRegisterLinearizable(ops, { budgetStates: 4 }));
  });
});

// ---------------------------------------------------------------------------------------------

describe("read consistency", () => {
  test("reads of the initial value and of acknowledged writes, never going back, are consistent", () => {
    const ops = history(
      read([0, 1], INITIAL_VALUE, 0, 50, { p: 2 }),
      write([2, 3], "a", { v: 1, z: 100 }),
      read([4, 5], "a", 1, 100),
      read([6, 7], "a", 1, 100, { p: 2 }),
      cas([8, 9], 1, "b", { v: 2, z: 110 }, { p: 2 }),
      read([10, 11], "b", 2, 110, { p: 2 }),
    );
    const verdict = checkReadConsistency(ops);
    assertValid(verdict);
    assert.equal(verdict.checker, READ_CONSISTENCY_CHECKER);
    assert.equal(verdict.stats.readsChecked, 4);
    assert.equal(verdict.stats.sessions, 2);
  });

  test("a read of a value nothing wrote is a violation", () => {
    assertInvalid(checkReadConsistency(history(write([0, 1], "a", { v: 1, z: 100 }), read([2, 3], "zz", 1, 100))), /read of a value no op wrote/);
  });

  test("a read of the value of a cas that definitively failed is a violation", () => {
    const ops = history(cas([0, 1], 3, "a", { fail: "BADVERSION" }), read([2, 3], "a", 4, 100, { p: 2 }));
    assertInvalid(checkReadConsistency(ops), /whose write definitively failed/);
  });

  test("a read must carry the version and mzxid its acknowledged write was answered with", () => {
    assertInvalid(checkReadConsistency(history(write([0, 1], "a", { v: 1, z: 100 }), read([2, 3], "a", 2, 100, { p: 2 }))), /differs from the write's answer/);
    assertInvalid(checkReadConsistency(history(write([0, 1], "a", { v: 1, z: 100 }), read([2, 3], "a", 1, 101, { p: 2 }))), /differs from the write's answer/);
  });

  test("the initial value is at version 0", () => {
    assertInvalid(checkReadConsistency(history(read([0, 1], INITIAL_VALUE, 1, 5))), /initial value at version 1/);
  });

  test("a read of an unknown write's value is held to what that write can have produced", () => {
    assertValid(checkReadConsistency(history(cas([0, 1], 0, "a", "unknown"), read([2, 3], "a", 1, 100, { p: 2 }), read([4, 5], "a", 1, 100, { p: 3 }))));
    assertInvalid(checkReadConsistency(history(cas([0, 1], 0, "a", "unknown"), read([2, 3], "a", 3, 100, { p: 2 }))), /cannot be the one this write made/);
    assertInvalid(checkReadConsistency(history(write([0, 1], "a", "unknown"), read([2, 3], "a", 0, 100, { p: 2 }))), /cannot be the one this write made/);
    // One write makes one (version, mzxid); two reads of it cannot disagree.
    assertInvalid(
      checkReadConsistency(history(write([0, 1], "a", "unknown"), read([2, 3], "a", 2, 100, { p: 2 }), read([2, 3], "a", 3, 120, { p: 3 }))),
      /two reads of the same write disagree/,
    );
  });

  test("a read cannot see a write invoked after the read was answered", () => {
    assertInvalid(checkReadConsistency(history(read([0, 1], "a", 1, 100, { p: 2 }), write([2, 3], "a", { v: 1, z: 100 }))), /before its write was invoked/);
  });

  test("a session reading an older version after a newer one is a violation", () => {
    const ops = history(
      write([0, 1], "a", { v: 1, z: 100 }),
      write([2, 3], "b", { v: 2, z: 110 }),
      read([4, 5], "b", 2, 110, { p: 2 }),
      read([6, 7], "a", 1, 100, { p: 2 }),
    );
    assertInvalid(checkReadConsistency(ops), /session 0x2 went back in time on key "x"/);
  });

  test("different sessions, even of one worker after an expiry, may see older versions", () => {
    const ops = history(
      write([0, 1], "a", { v: 1, z: 100 }),
      write([2, 3], "b", { v: 2, z: 110 }),
      read([4, 5], "b", 2, 110, { p: 2 }),
      read([6, 7], "a", 1, 100, { p: 3 }),
      read([8, 9], "a", 1, 100, { p: 2, session: "0x2b" }),
    );
    assertValid(checkReadConsistency(ops));
  });

  test("read-your-writes: a session reading an older version than it wrote is a violation", () => {
    const ops = history(write([0, 1], "a", { v: 1, z: 100 }, { p: 2 }), write([2, 3], "b", { v: 2, z: 110 }), read([4, 5], "a", 1, 100));
    assertInvalid(checkReadConsistency(ops), /session 0x1 went back in time on key "x": after #1 p1 write x="b" ok v2/);
  });

  test("a session's own write makes a version newer than any it has seen", () => {
    const ops = history(
      write([0, 1], "a", { v: 1, z: 100 }, { p: 2 }),
      write([2, 3], "b", { v: 2, z: 110 }, { p: 2 }),
      read([4, 5], "b", 2, 110),
      write([6, 7], "c", { v: 2, z: 120 }),
    );
    assertInvalid(checkReadConsistency(ops), /went back in time/);
  });

  test("cross-key prefix: having seen zxid z, a session sees every write with zxid ≤ z on other keys", () => {
    const setup = [
      write([0, 1], "a1", { v: 1, z: 100 }, { p: 9, key: "a" }),
      write([2, 3], "a2", { v: 2, z: 150 }, { p: 9, key: "a" }),
      write([4, 5], "b1", { v: 1, z: 200 }, { p: 9, key: "b" }),
    ];
    const stale = history(...setup, read([6, 7], "b1", 1, 200, { key: "b" }), read([8, 9], "a1", 1, 100, { key: "a" }));
    assertInvalid(checkReadConsistency(stale), /session 0x1 missed a write its view already includes/);
    // Before it saw zxid 200 the same stale read is allowed (its server may lag).
    assertValid(checkReadConsistency(history(...setup, read([6, 7], "a1", 1, 100, { key: "a" }), read([8, 9], "b1", 1, 200, { key: "b" }))));
  });

  test("zxids compare as numbers, not as text", () => {
    // As strings "9" > "10", which would hide this violation.
    const ops = history(
      write([0, 1], "a1", { v: 1, z: "5" }, { p: 9, key: "a" }),
      write([2, 3], "a2", { v: 2, z: "9" }, { p: 9, key: "a" }),
      write([4, 5], "b1", { v: 1, z: "10" }, { p: 9, key: "b" }),
      read([6, 7], "b1", 1, "10", { key: "b" }),
      read([8, 9], "a1", 1, "5", { key: "a" }),
    );
    assertInvalid(checkReadConsistency(ops), /missed a write/);
  });

  test("a value written twice on one key is a malformed history (reads could not be matched to a write)", () => {
    assertInvalid(
      checkReadConsistency(history(write([0, 1], "a", { v: 1, z: 100 }), write([2, 3], "a", { v: 2, z: 110 }))),
      /value "a" is not unique on key "x"/,
    );
    assertInvalid(checkReadConsistency(history(write([0, 1], INITIAL_VALUE, { v: 1, z: 100 }))), /is not unique/);
  });

  test("an mzxid that is not a decimal zxid is a malformed history", () => {
    assertInvalid(checkReadConsistency(history(read([0, 1], INITIAL_VALUE, 0, "0x1f"))), /history malformed/);
  });
});

// ---------------------------------------------------------------------------------------------

describe("set", () => {
  const adds = [
    add([0, 1], "a", "ok"),
    add([0, 1], "b", "ok", { p: 2 }),
    add([2, 3], "c", "unknown"),
    add([2, 3], "d", "unknown", { p: 2 }),
    add([4, 5], "e", "fail"),
  ];

  test("acknowledged adds everywhere, an unknown add that appeared, servers agreeing: valid", () => {
    const verdict = checkSet(history(...adds), [
      { server: 1, elements: ["a", "b", "c"] },
      { server: 2, elements: ["c", "b", "a"] },
    ]);
    assertValid(verdict);
    assert.equal(verdict.checker, SET_CHECKER);
    assert.deepEqual(verdict.stats, { attempted: 5, acknowledged: 2, unknown: 2, unknownAppeared: 1, lost: 0, serversRead: 2 });
  });

  test("an acknowledged add missing from a server is lost", () => {
    const verdict = checkSet(history(...adds), [
      { server: 1, elements: ["a", "b"] },
      { server: 2, elements: ["a"] },
    ]);
    assertInvalid(verdict, /server 2 lacks 1 acknowledged elements: "b"/);
    assert.equal(verdict.stats.lost, 1);
  });

  test("an element nobody added is a phantom", () => {
    assertInvalid(checkSet(history(...adds), [{ server: 1, elements: ["a", "b", "zz"] }]), /no add attempted: "zz"/);
  });

  test("an element whose add definitively failed must not be present", () => {
    assertInvalid(checkSet(history(...adds), [{ server: 1, elements: ["a", "b", "e"] }]), /although its add definitively failed/);
  });

  test("servers whose final reads differ diverge", () => {
    const verdict = checkSet(history(...adds), [
      { server: 1, elements: ["a", "b", "c"] },
      { server: 3, elements: ["a", "b", "d"] },
    ]);
    assertInvalid(verdict, /servers 1 and 3 diverge: only on 1: \["c"\]; only on 3: \["d"\]/);
  });

  test("adds without any final read cannot be judged", () => {
    const verdict = checkSet(history(...adds), []);
    assert.equal(verdict.valid, "unknown");
    assert.match(verdict.violations.join("\n"), /no final read/);
  });
});

// ---------------------------------------------------------------------------------------------

describe("fenced lock", () => {
  test("tokens growing in grant order, uses in token order and fenced stale uses: valid", () => {
    const ops = history(
      acquire([0, 1], "100", { p: 1 }),
      use([2, 3], "100", "ok", { p: 1 }),
      acquire([2, 20], "200", { p: 2 }), // granted after p1's session expired
      use([21, 22], "200", "ok", { p: 2 }),
      use([23, 24], "100", "fail", { p: 1 }), // p1 has not noticed; the resource refuses it
      release([25, 26], "200", { p: 2 }),
      acquire([27], undefined, { p: 3 }),
    );
    const verdict = checkFencedLock(ops);
    assertValid(verdict);
    assert.equal(verdict.checker, FENCED_LOCK_CHECKER);
    assert.deepEqual(verdict.stats, { grants: 2, usesAccepted: 2, staleUsesFenced: 1, processes: 3 });
  });

  test("V1: two grants of the same token, even concurrent ones", () => {
    assertInvalid(checkFencedLock(history(acquire([0, 10], "100", { p: 1 }), acquire([1, 9], "100", { p: 2 }))), /V1 two grants of token 100/);
  });

  test("V2: a token smaller than one granted before the request was made", () => {
    assertInvalid(checkFencedLock(history(acquire([0, 1], "200", { p: 1 }), acquire([2, 3], "100", { p: 2 }))), /V2 tokens went backwards in real time/);
    // Concurrent requests may be granted in either order.
    assertValid(checkFencedLock(history(acquire([0, 5], "200", { p: 1 }), acquire([1, 3], "100", { p: 2 }))));
    assertValid(checkFencedLock(history(acquire([0, 2], "200", { p: 1 }), acquire([2, 3], "100", { p: 2 }))));
  });

  test("tokens compare as numbers, not as text", () => {
    assertValid(
      checkFencedLock(
        history(acquire([0, 1], "9", { p: 1 }), acquire([2, 3], "10", { p: 2 }), use([4, 5], "9", "ok", { p: 1 }), use([6, 7], "10", "ok", { p: 2 })),
      ),
    );
    assertInvalid(checkFencedLock(history(acquire([0, 1], "10", { p: 1 }), acquire([2, 3], "9", { p: 2 }))), /V2/);
  });

  test("V3: a stale token accepted after a newer one is a violation", () => {
    const ops = history(
      acquire([0, 1], "100", { p: 1 }),
      acquire([2, 3], "200", { p: 2 }),
      use([4, 5], "200", "ok", { p: 2 }),
      use([4, 6], "100", "ok", { p: 1 }),
    );
    assertInvalid(checkFencedLock(ops), /V3 stale token accepted: #3 p1 use token 100 ok/);
  });

  test("V3: uses completing at the same instant are taken in the order that accuses none", () => {
    assertValid(
      checkFencedLock(
        history(acquire([0, 1], "100", { p: 1 }), acquire([2, 3], "200", { p: 2 }), use([4, 6], "200", "ok", { p: 2 }), use([4, 6], "100", "ok", { p: 1 })),
      ),
    );
  });

  test("V3: a use or release naming a token never granted is a violation", () => {
    assertInvalid(checkFencedLock(history(acquire([0, 1], "100"), use([2, 3], "150", "ok"))), /V3 use of a token no acquire was granted/);
    assertInvalid(checkFencedLock(history(acquire([0, 1], "100"), release([2, 3], "150"))), /V3 release of a token no acquire was granted/);
  });

  test("an ok acquire without a token is a malformed history", () => {
    const tokenless: AcquireOp = { ...acquire([0, 1], "100"), token: undefined };
    assertInvalid(checkFencedLock([tokenless]), /history malformed/);
  });
});

// ---------------------------------------------------------------------------------------------

describe("liveness after the final heal", () => {
  test("every workload that completed an op successfully after the heal made progress; a lock needs a grant", () => {
    const ops = history(
      write([100, 110], "a", { v: 1 }),
      add([105, 120], "e1", "ok", { p: 2 }),
      acquire([90, 130], "7", { p: 3 }),
      use([131, 140], "7", "ok", { p: 3 }),
    );
    const verdict = liveness(ops, ["register", "set", "lock"], 100);
    assert.equal(verdict.valid, true, verdict.violations.join("; "));
    assert.deepEqual(verdict.stats, { registerProgressMs: 10, setProgressMs: 20, lockProgressMs: 30 });
  });

  test("a lock never granted after the heal fails it, however busy the holder's uses and the other workloads were", () => {
    const ops = history(
      acquire([10, 20], "5", { p: 3 }),
      use([150, 160], "5", "ok", { p: 3 }),
      release([170, 180], "5", { p: 3 }),
      acquire([190], undefined, { p: 4 }),
      write([100, 200], "a", { v: 1 }),
      add([101, 201], "e1", "ok", { p: 2 }),
    );
    const verdict = liveness(ops, ["register", "set", "lock"], 100);
    assert.equal(verdict.valid, false);
    assert.deepEqual(verdict.violations, ["the lock workload made no progress (no lock grant) after the cluster healed"]);
  });

  test("ops that failed, stayed unknown or completed before the heal are not progress", () => {
    const ops = history(
      write([10, 50], "a", { v: 1 }),
      write([100, 120], "b", "unknown"),
      cas([110, 130], 1, "c", { fail: "BADVERSION" }),
      add([100, 140], "e1", "unknown", { p: 2 }),
    );
    const verdict = liveness(ops, ["register", "set"], 100);
    assert.deepEqual(verdict.violations, [
      "the register workload made no progress after the cluster healed",
      "the set workload made no progress after the cluster healed",
    ]);
  });
});

describe("unique ids", () => {
  const node = (tag: string, id: number, parent = "/ids/a") => idNodePath(parent, tag, id);

  test("ids unique and increasing in real time, every acknowledged one on every server: valid", () => {
    const ops = history(takeId([0, 2], "a", 0), takeId([1, 3], "b", 2), takeId([1, 4], "c", 1), takeId([5, 6], "d", 3), takeId([5, 9], "e", "unknown"));
    const nodes = [node("a", 0), node("b", 2), node("c", 1), node("d", 3), node("e", 4)];
    const verdict = checkUniqueIds(ops, [
      { server: 1, nodes },
      { server: 2, nodes },
    ]);
    assert.deepEqual(verdict.violations, []);
    assert.equal(verdict.valid, true);
  });

  test("one id handed out twice under a parent is a violation; the same id under another parent is not", () => {
    const ops = history(takeId([0, 2], "a", 5), takeId([1, 3], "b", 5), takeId([1, 3], "c", 5, "/ids/b"));
    const nodes = [node("a", 5), node("b", 5), node("c", 5, "/ids/b")];
    const verdict = checkUniqueIds(ops, [{ server: 1, nodes }]);
    assert.deepEqual(verdict.violations.length, 2, verdict.violations.join("\n"));
    assert.match(verdict.violations[0]!, /id 5 under \/ids\/a handed out twice/);
    assert.match(verdict.violations[1]!, /server 1 holds two nodes with id 5 under \/ids\/a$/);
  });

  test("an id taken after a larger one was answered is a violation (concurrent creates may come in either order)", () => {
    const ops = history(takeId([0, 1], "a", 7), takeId([2, 3], "b", 6), takeId([0, 5], "c", 3));
    const verdict = checkUniqueIds(ops, [{ server: 1, nodes: [node("a", 7), node("b", 6), node("c", 3)] }]);
    assert.deepEqual(verdict.violations.length, 1, verdict.violations.join("\n"));
    assert.match(verdict.violations[0]!, /id 6 taken after id 7 was answered/);
  });

  test("a lost acknowledged id, a node no create attempted, one whose create failed, two nodes of one create, and diverging servers are each found", () => {
    const ops = history(takeId([0, 1], "a", 0), takeId([0, 1], "b", "fail"), takeId([2, 3], "c", "unknown"));
    const verdict = checkUniqueIds(ops, [
      { server: 1, nodes: [node("a", 0), node("b", 1), node("x", 2), node("c", 3), node("c", 4)] },
      { server: 2, nodes: [] },
    ]);
    const text = verdict.violations.join("\n");
    assert.match(text, /server 2 lacks the node of an acknowledged id/);
    assert.match(text, /holds \/ids\/a\/x-0000000002, which no create attempted/);
    assert.match(text, /holds \/ids\/a\/b-0000000001 although its create definitively failed/);
    assert.match(text, /server 1 holds two nodes of one create \(tag c\)/);
    assert.match(text, /servers 1 and 2 diverge/);
    assert.equal(verdict.valid, false);
  });

  test("acknowledged ids with no final read cannot be judged: unknown, not valid", () => {
    assert.equal(checkUniqueIds(history(takeId([0, 1], "a", 0)), []).valid, "unknown");
  });
});

const NO_FINALS = { sets: [], ids: [], queues: [], counters: [], watched: [] };

describe("checkAll", () => {
  test("a history with none of a checker's ops gets a trivially valid verdict over 0 ops", () => {
    const verdicts = checkAll([], NO_FINALS);
    assert.deepEqual(
      verdicts.map((v) => [v.checker, v.valid, v.stats.ops]),
      [
        [REGISTER_CHECKER, true, 0],
        [READ_CONSISTENCY_CHECKER, true, 0],
        [SET_CHECKER, true, 0],
        [UNIQUE_IDS_CHECKER, true, 0],
        [FENCED_LOCK_CHECKER, true, 0],
        [QUEUE_CHECKER, true, 0],
        [COUNTER_CHECKER, true, 0],
        [WATCHES_CHECKER, true, 0],
      ],
    );
  });

  test("runs every checker whose ops are present and passes the register budget through", () => {
    const ops = history(
      write([0, 1], "a", { v: 1, z: 100 }),
      write([2, 3], "b", { v: 2, z: 110 }),
      write([4, 5], "c", { v: 3, z: 120 }),
      read([6, 7], "a", 1, 100, { p: 2 }),
      add([0, 1], "e", "ok"),
      takeId([0, 1], "t", 0),
      acquire([0, 1], "7"),
    );
    const finals = { ...NO_FINALS, sets: [{ server: 1, elements: ["e"] }], ids: [{ server: 1, nodes: [idNodePath("/ids/a", "t", 0)] }] };
    const verdicts = checkAll(ops, finals);
    assert.deepEqual(
      verdicts.map((v) => v.valid),
      [true, true, true, true, true, true, true, true],
    );
    assert.equal(verdicts[0]!.stats.opsChecked, 3);
    assert.equal(verdicts[3]!.stats.acknowledged, 1);
    assert.equal(checkAll(ops, finals, { register: { budgetStates: 1 } })[0]!.valid, "unknown");
  });
});

// ---------------------------------------------------------------------------------------------
// Generated histories: a real register applied at chosen linearization points, with intervals
// widened around them, so every history is linearizable (and read-consistent) by construction.

type Fate = "ok" | "lost" | "applied-unknown" | "late-unknown";

interface SimStep {
  key: number;
  process: number;
  kind: "write" | "cas" | "read";
  /** A cas expects the version at its linearization point plus this (0: it succeeds). */
  casOffset: number;
  /** How far the invocation and completion reach before and after the linearization point. */
  lead: number;
  lag: number;
  fate: Fate;
  /** For "late-unknown": how long after its recorded timeout the op takes effect. */
  lateBy: number;
}

interface Register {
  value: string;
  version: number;
  mzxid: bigint;
}

/**
 * Turns steps into a history. Each step's linearization point is 10 ms after the previous one; its
 * worker must be idle by then (another is picked, or time moves on, if not).
 */
function simulate(steps: readonly SimStep[], processCount: number, options: { processOffset?: number; keyPrefix?: string } = {}): Op[] {
  const processOffset = options.processOffset ?? 0;
  const keyPrefix = options.keyPrefix ?? "k";
  const registers = new Map<string, Register>();
  const busyUntil: number[] = Array.from({ length: processCount }, () => -1);
  const lastOfProcess = new Map<number, Op>();
  const pendingEffects: { at: number; apply: () => void }[] = [];
  // An epoch above 2^21 puts zxids past 2^53, where only BigInt comparison stays exact.
  let zxid = 0x300000n << 32n;
  let clock = 0;
  const ops: Op[] = [];

  const registerOf = (key: string): Register => {
    let register = registers.get(key);
    if (register === undefined) registers.set(key, (register = { value: INITIAL_VALUE, version: 0, mzxid: 1n }));
    return register;
  };
  const setData = (key: string, value: string, expectedVersion: number): { version: number; mzxid: string } | undefined => {
    const register = registerOf(key);
    if (expectedVersion !== -1 && expectedVersion !== register.version) return undefined;
    zxid++;
    Object.assign(register, { value, version: register.version + 1, mzxid: zxid });
    return { version: register.version, mzxid: String(zxid) };
  };

  steps.forEach((step, index) => {
    clock += 10;
    let process = step.process % processCount;
    if (busyUntil[process]! >= clock) process = busyUntil.indexOf(Math.min(...busyUntil));
    if (busyUntil[process]! >= clock) clock = busyUntil[process]! + 1;
    pendingEffects.sort((a, b) => a.at - b.at);
    while (pendingEffects.length > 0 && pendingEffects[0]!.at < clock) pendingEffects.shift()!.apply();

    const key = `${keyPrefix}${step.key}`;
    const register = registerOf(key);
    const invokedAt = Math.max(busyUntil[process]! + 1, clock - step.lead);
    const completedAt = clock + step.lag;
    busyUntil[process] = completedAt;
    const common = { id: 0, process: process + processOffset, session: `0x${(process + processOffset).toString(16)}`, invokedAt, completedAt };
    const value = `${key}-${index}`;
    const expectedVersion = step.kind === "cas" ? Math.max(0, register.version + step.casOffset) : -1;

    let op: Op;
    if (step.kind === "read") {
      op =
        step.fate === "ok"
          ? { ...common, f: "read", key, outcome: "ok", result: { value: register.value, version: register.version, mzxid: String(register.mzxid) } }
          : { ...common, f: "read", key, outcome: "unknown", error: "CONNECTIONLOSS" };
    } else {
      const shape = step.kind === "write" ? { f: "write" as const, key, value } : { f: "cas" as const, key, value, expectedVersion };
      if (step.fate === "ok") {
        const result = setData(key, value, expectedVersion);
        op = result === undefined ? { ...common, ...shape, outcome: "fail", error: "BADVERSION" } : { ...common, ...shape, outcome: "ok", result };
      } else {
        if (step.fate === "applied-unknown") setData(key, value, expectedVersion);
        if (step.fate === "late-unknown") pendingEffects.push({ at: completedAt + step.lateBy, apply: () => void setData(key, value, expectedVersion) });
        op = { ...common, ...shape, outcome: "unknown", error: "OPERATIONTIMEOUT" };
      }
    }
    ops.push(op);
    lastOfProcess.set(process, op);
  });
  // A worker whose last op never settled was still waiting when the run ended.
  for (const op of lastOfProcess.values()) if (op.outcome === "unknown" && op.invokedAt % 2 === 0) delete op.completedAt;
  return ops;
}

function numbered(ops: Op[]): Op[] {
  return [...ops].sort((a, b) => a.invokedAt - b.invokedAt || a.process - b.process).map((op, id) => ({ ...op, id }));
}

const fateArb = fc.oneof(
  { weight: 17, arbitrary: fc.constant<Fate>("ok") },
  { weight: 1, arbitrary: fc.constantFrom<Fate>("lost", "applied-unknown", "late-unknown") },
);
const stepArb: fc.Arbitrary<SimStep> = fc.record({
  key: fc.integer({ min: 0, max: 2 }),
  process: fc.integer({ min: 0, max: 3 }),
  kind: fc.constantFrom<SimStep["kind"]>("write", "write", "cas", "cas", "read"),
  casOffset: fc.constantFrom(0, 0, -1, 1),
  lead: fc.integer({ min: 0, max: 40 }),
  lag: fc.integer({ min: 0, max: 40 }),
  fate: fateArb,
  lateBy: fc.integer({ min: 1, max: 60 }),
});

/** Two ok writes of one key, the first completed before the second was invoked. */
function orderedOkPair(ops: readonly Op[]): [WriteOp | CasOp, WriteOp | CasOp] | undefined {
  const okWrites = ops.filter((op): op is WriteOp | CasOp => (op.f === "write" || op.f === "cas") && op.outcome === "ok");
  for (const first of okWrites) {
    const second = okWrites.find((op) => op.key === first.key && op.invokedAt > first.completedAt!);
    if (second !== undefined) return [first, second];
  }
  return undefined;
}

/**
 * Linearizability straight from its definition, for tiny histories: try every order of the ops
 * that respects real time (an op may go next only if no unplaced definite op returned before it was
 * invoked), leaving out any unknown op. Shares nothing with the checker but the step rules.
 */
function linearizableByExhaustion(ops: readonly Op[]): boolean {
  const byKey = new Map<string, (WriteOp | CasOp)[]>();
  for (const op of ops) {
    if (op.f !== "write" && op.f !== "cas") continue;
    if (op.outcome === "fail" && !(op.f === "cas" && op.error === "BADVERSION")) continue;
    byKey.set(op.key, [...(byKey.get(op.key) ?? []), op]);
  }
  const apply = (op: WriteOp | CasOp, version: number): number | undefined => {
    if (op.outcome === "fail") return op.f === "cas" && version !== op.expectedVersion ? version : undefined;
    const expected = op.f === "cas" ? op.expectedVersion : version;
    if (version !== expected) return undefined;
    return op.outcome === "unknown" || op.result!.version === version + 1 ? version + 1 : undefined;
  };
  const search = (remaining: (WriteOp | CasOp)[], version: number): boolean => {
    if (remaining.every((op) => op.outcome === "unknown")) return true;
    return remaining.some((candidate) => {
      const blocked = remaining.some((other) => other !== candidate && other.outcome !== "unknown" && other.completedAt! < candidate.invokedAt);
      const after = blocked ? undefined : apply(candidate, version);
      return (
        after !== undefined &&
        search(
          remaining.filter((op) => op !== candidate),
          after,
        )
      );
    });
  };
  return [...byKey.values()].every((keyOps) => search(keyOps, 0));
}

const tinyRegisterOpArb: fc.Arbitrary<Op> = fc
  .record({
    kind: fc.constantFrom("write", "cas"),
    key: fc.constantFrom("x", "x", "y"),
    invokedAt: fc.integer({ min: 0, max: 12 }),
    duration: fc.integer({ min: 0, max: 8 }),
    answer: fc.oneof(
      { weight: 5, arbitrary: fc.integer({ min: 1, max: 4 }).map((v): Answer => ({ v })) },
      { weight: 2, arbitrary: fc.constant<Answer>("unknown") },
      { weight: 2, arbitrary: fc.constantFrom<Answer>({ fail: "BADVERSION" }, { fail: "NONODE" }) },
    ),
    expectedVersion: fc.integer({ min: 0, max: 3 }),
    process: fc.integer({ min: 1, max: 6 }),
  })
  .map(({ kind, key, invokedAt, duration, answer, expectedVersion, process }) => {
    const span: Span = [invokedAt, invokedAt + duration];
    // Mostly self-consistent cas answers, so that valid histories are common enough to matter.
    const casAnswer = typeof answer === "object" && "v" in answer && answer.v % 4 !== 0 ? { v: expectedVersion + 1 } : answer;
    return kind === "write" ? write(span, "w", answer, { p: process, key }) : cas(span, expectedVersion, "c", casAnswer, { p: process, key });
  });

describe("generated histories", () => {
  test("on tiny random histories, valid or not, the register checker agrees with an exhaustive search", () => {
    const seen = { valid: 0, invalid: 0 };
    fc.assert(
      fc.property(fc.array(tinyRegisterOpArb, { minLength: 1, maxLength: 7 }), (drafts) => {
        const ops = history(...drafts);
        const expected = linearizableByExhaustion(ops);
        seen[expected ? "valid" : "invalid"]++;
        const verdict = checkRegisterLinearizable(ops);
        assert.equal(
          verdict.valid,
          expected,
          `${expected ? "valid" : "invalid"} by exhaustion:\n${ops.map((op) => JSON.stringify(op)).join("\n")}\n${verdict.violations.join("\n")}`,
        );
      }),
      { numRuns: 3000 },
    );
    // Both answers must be common, or the agreement says little.
    assert.ok(seen.valid > 300 && seen.invalid > 300, JSON.stringify(seen));
  });

  test("histories linearizable by construction are judged valid by the register and read checkers", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 80 }), (steps) => {
        const ops = numbered(simulate(steps, 4));
        const register = checkRegisterLinearizable(ops);
        assert.equal(register.valid, true, register.violations.join("\n"));
        const reads = checkReadConsistency(ops);
        assert.equal(reads.valid, true, reads.violations.join("\n"));
      }),
      { numRuns: 300 },
    );
  });

  test("giving an ok write the version of an earlier, non-overlapping ok write makes it invalid", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 2, maxLength: 80 }), (steps) => {
        const ops = numbered(simulate(steps, 4));
        const pair = orderedOkPair(ops);
        fc.pre(pair !== undefined);
        const [first, second] = pair;
        // The second is linearized after the first, when the version is at least the first's, so
        // it cannot have moved the version to the first's again.
        const corrupted = ops.map((op) => (op === second ? { ...second, result: { ...second.result!, version: first.result!.version } } : op));
        assert.equal(checkRegisterLinearizable(corrupted).valid, false);
      }),
      { numRuns: 300 },
    );
  });

  test("20 keys × 300 ops, 5 workers per key, ~10% unknown outcomes: valid", (t) => {
    const random = mulberry32(20240611);
    const pick = <T>(choices: readonly T[]): T => choices[Math.floor(random() * choices.length)]!;
    const perKey: Op[] = [];
    for (let key = 0; key < 20; key++) {
      const steps: SimStep[] = Array.from({ length: 300 }, () => {
        const roll = random();
        return {
          key,
          process: Math.floor(random() * 5),
          kind: pick(["write", "write", "cas", "cas", "cas"] as const),
          casOffset: pick([0, 0, 0, -1, 1]),
          lead: Math.floor(random() * 25),
          lag: Math.floor(random() * 25),
          fate: roll < 0.9 ? "ok" : roll < 0.935 ? "lost" : roll < 0.97 ? "applied-unknown" : "late-unknown",
          lateBy: 1 + Math.floor(random() * 80),
        };
      });
      perKey.push(...simulate(steps, 5, { processOffset: key * 5 }));
    }
    const ops = numbered(perKey);
    const unknown = ops.filter((op) => op.outcome === "unknown").length;
    const started = performance.now();
    const verdict = checkRegisterLinearizable(ops);
    const elapsed = performance.now() - started;
    t.diagnostic(
      `${ops.length} ops, ${unknown} unknown (${((100 * unknown) / ops.length).toFixed(1)}%), ` +
        `${verdict.stats.exploredConfigurations} configurations explored in ${elapsed.toFixed(0)} ms`,
    );
    assert.equal(verdict.valid, true, verdict.violations.join("\n"));
    assert.equal(verdict.stats.keys, 20);
    assert.equal(verdict.stats.opsChecked, 6000);
  });
});

/** A small seeded generator, so the performance history is the same on every run. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = Math.imul(state ^ (state >>> 15), 1 | state);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
