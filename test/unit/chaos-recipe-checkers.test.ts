/**
 * The queue, counter and watch checkers over hand-written histories: a valid history of each, and
 * for each rule a history that breaks it (a checker that cannot fail proves nothing).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CATCH_UP_MS, checkCounter, checkQueue, checkWatches } from "../chaos/checkers/index.js";
import type {
  CounterReadOp,
  DequeueOp,
  EnqueueOp,
  FinalQueueRead,
  IncrementOp,
  Op,
  Outcome,
  Verdict,
  WatchEventOp,
  WatchLostOp,
  WatchMode,
  WatchReadOp,
  WatchWriteOp,
} from "../chaos/history.js";
import { history } from "../helpers/chaos-history.js";

type Span = readonly [number, number?];

const ERRORS: Record<Outcome, string | undefined> = { ok: undefined, fail: "NONODE", unknown: "CONNECTIONLOSS" };

function base(span: Span, outcome: Outcome, p = 1, session = `s${p}`) {
  const error = ERRORS[outcome];
  return {
    id: 0,
    process: p,
    session,
    invokedAt: span[0],
    ...(span[1] === undefined ? {} : { completedAt: span[1] }),
    outcome,
    ...(error === undefined ? {} : { error }),
  };
}

function assertValid(verdict: Verdict): void {
  assert.equal(verdict.valid, true, verdict.violations.join("\n"));
}

function assertViolation(verdict: Verdict, pattern: RegExp): void {
  assert.equal(verdict.valid, false, `expected a violation matching ${pattern}`);
  assert.ok(
    verdict.violations.some((v) => pattern.test(v)),
    `no violation matches ${pattern}:\n${verdict.violations.join("\n")}`,
  );
}

// ---------------------------------------------------------------------------------------------

describe("queue", () => {
  const enqueue = (span: Span, item: string, outcome: Outcome = "ok", p = 1): EnqueueOp => ({ ...base(span, outcome, p), f: "enqueue", item });
  const dequeue = (span: Span, path: string, item: string, outcome: Outcome = "ok", p = 2): DequeueOp => ({
    ...base(span, outcome, p),
    f: "dequeue",
    path,
    item,
  });
  const left = (...items: string[]): FinalQueueRead[] => [
    { server: 1, items },
    { server: 2, items },
  ];

  test("items taken once, a lost take's item gone, the rest still queued on every server: valid", () => {
    const ops = history(
      enqueue([0, 1], "a"),
      enqueue([2, 3], "b"),
      enqueue([4, 5], "c"),
      enqueue([6, 7], "d", "unknown"),
      dequeue([8, 9], "/q/q-0", "a"),
      dequeue([8, 9], "/q/q-0", "a", "fail", 3),
      dequeue([10], "/q/q-1", "b", "unknown"),
    );
    const verdict = checkQueue(ops, left("c"));
    assertValid(verdict);
    assert.deepEqual([verdict.stats.enqueued, verdict.stats.taken, verdict.stats.takeUnknown, verdict.stats.leftQueued], [3, 1, 1, 1]);
  });

  test("an item taken twice is a violation", () => {
    const ops = history(enqueue([0, 1], "a"), dequeue([2, 3], "/q/q-0", "a"), dequeue([2, 4], "/q/q-0", "a", "ok", 3));
    assertViolation(checkQueue(ops, left()), /item a taken twice/);
  });

  test("an acknowledged item neither taken nor queued is lost", () => {
    assertViolation(checkQueue(history(enqueue([0, 1], "a")), left()), /acknowledged item a is neither queued nor taken/);
  });

  test("an item taken that nobody queued, or whose enqueue failed, is a violation", () => {
    assertViolation(checkQueue(history(dequeue([2, 3], "/q/q-0", "x")), left()), /taken but never queued/);
    assertViolation(checkQueue(history(enqueue([0, 1], "a", "fail"), dequeue([2, 3], "/q/q-0", "a")), left()), /enqueue definitively failed/);
  });

  test("an item still queued after it was taken, or queued by nobody, is a violation", () => {
    assertViolation(checkQueue(history(enqueue([0, 1], "a"), dequeue([2, 3], "/q/q-0", "a")), left("a")), /still has item a queued after it was taken/);
    assertViolation(checkQueue(history(), left("z")), /item z queued, which nobody queued/);
  });

  test("servers that disagree on what is left diverge", () => {
    const ops = history(enqueue([0, 1], "a"), enqueue([0, 1], "b", "unknown", 2));
    assertViolation(
      checkQueue(ops, [
        { server: 1, items: ["a", "b"] },
        { server: 2, items: ["a"] },
      ]),
      /servers 1 and 2 disagree/,
    );
  });

  test("acknowledged items with no final read cannot be judged", () => {
    assert.equal(checkQueue(history(enqueue([0, 1], "a")), []).valid, "unknown");
  });
});

// ---------------------------------------------------------------------------------------------

describe("counter", () => {
  const increment = (span: Span, from: number, outcome: Outcome = "ok", p = 1): IncrementOp => ({
    ...base(span, outcome, p),
    ...(outcome === "fail" ? { error: "BADVERSION" } : {}),
    f: "increment",
    expectedVersion: from,
    ...(outcome === "ok" ? { result: { value: from + 1 } } : {}),
  });
  const read = (span: Span, value: number, p = 9): CounterReadOp => ({ ...base(span, "ok", p), f: "counter-read", result: { value } });
  const at = (value: number) => [
    { server: 1, value },
    { server: 2, value },
  ];

  test("acknowledged increments, one indeterminate that happened, reads that never go back: valid", () => {
    const ops = history(
      increment([0, 1], 0),
      increment([2, 3], 1),
      increment([2, 3], 1, "fail", 2),
      increment([4], 2, "unknown"),
      read([5, 6], 2),
      read([7, 8], 3),
    );
    const verdict = checkCounter(ops, at(3));
    assertValid(verdict);
    assert.deepEqual([verdict.stats.acknowledged, verdict.stats.unknown, verdict.stats.refused], [2, 1, 1]);
    assertValid(checkCounter(ops, at(2)));
  });

  test("two increments answered with the same count lost an update", () => {
    assertViolation(checkCounter(history(increment([0, 1], 0), increment([0, 2], 0, "ok", 2)), at(1)), /two increments both answered with count 1/);
  });

  test("a final count below the acknowledged increments, or above them plus the indeterminate, is a violation", () => {
    const ops = history(increment([0, 1], 0), increment([2, 3], 1), increment([4], 2, "unknown"));
    assertViolation(checkCounter(ops, at(1)), /fewer than the 2 acknowledged increments/);
    assertViolation(checkCounter(ops, at(4)), /more than 2 acknowledged plus 1 indeterminate/);
  });

  test("servers ending at different counts diverge", () => {
    assertViolation(
      checkCounter(history(increment([0, 1], 0), increment([2], 1, "unknown")), [
        { server: 1, value: 1 },
        { server: 2, value: 2 },
      ]),
      /different counts/,
    );
  });

  test("a read that goes backwards in real time is a violation, after a read or an increment", () => {
    assertViolation(checkCounter(history(increment([0, 1], 0), increment([2, 3], 1), read([4, 5], 2), read([6, 7], 1)), at(2)), /count 1 after 2 was answered/);
    assertViolation(checkCounter(history(increment([0, 1], 0), increment([2, 3], 1), read([4, 5], 1)), at(2)), /count 1 after 2 was answered/);
  });

  test("concurrent reads may return either count", () => {
    assertValid(checkCounter(history(increment([0, 1], 0), increment([2, 10], 1), read([3, 9], 2), read([4, 8], 1, 8)), at(2)));
  });

  test("a read counting increments not yet invoked is a violation", () => {
    assertViolation(checkCounter(history(increment([0, 1], 0), read([2, 3], 2), increment([4, 5], 1)), at(2)), /counts 2 with only 1 increments invoked/);
  });
});

// ---------------------------------------------------------------------------------------------

describe("watches", () => {
  const INITIAL = "w-init";
  const written = (span: Span, value: string, version: number | "unknown" | "fail", p = 1): WatchWriteOp => ({
    ...base(span, typeof version === "number" ? "ok" : version, p),
    f: "watch-write",
    value,
    ...(typeof version === "number" ? { result: { version, mzxid: String(100 + version) } } : {}),
  });
  const seen = (at: number, mode: WatchMode, value: string, version: number, p: number, session = `s${p}`, mzxid = String(100 + version)): WatchReadOp => ({
    ...base([at, at + 1], "ok", p, session),
    f: "watch-read",
    mode,
    result: { value, version, mzxid },
  });
  const event = (at: number, mode: WatchMode, zxid: number, p: number, session = `s${p}`): WatchEventOp => ({
    ...base([at, at], "ok", p, session),
    f: "watch-event",
    mode,
    zxid: String(zxid),
  });
  const lost = (at: number, mode: WatchMode, p: number, session = `s${p}`): WatchLostOp => ({
    ...base([at, at], "ok", p, session),
    f: "watch-lost",
    mode,
    state: "disconnected",
  });
  const END = 10 * CATCH_UP_MS;
  /** Three writes early on, and a one-shot (p2) and a persistent (p3) watcher that saw all of them. */
  const good = (): Op[] => [
    written([10, 20], "a", 1),
    written([30, 40], "b", 2),
    written([50, 60], "c", 3),
    seen(0, "one-shot", INITIAL, 0, 2),
    event(15, "one-shot", 101, 2),
    seen(21, "one-shot", "a", 1, 2),
    event(35, "one-shot", 102, 2),
    seen(45, "one-shot", "c", 3, 2),
    seen(0, "persistent", INITIAL, 0, 3),
    event(15, "persistent", 101, 3),
    event(35, "persistent", 102, 3),
    event(55, "persistent", 103, 3),
    seen(END, "persistent", "c", 3, 3),
  ];

  test("watchers that saw every transition in order, one-shot ones a subsequence: valid", () => {
    const verdict = checkWatches(history(...good()), INITIAL);
    assertValid(verdict);
    assert.deepEqual([verdict.stats.writes, verdict.stats.oneShotEvents, verdict.stats.persistentEvents], [3, 2, 3]);
  });

  test("one version read with two values is a violation", () => {
    assertViolation(checkWatches(history(...good(), seen(70, "one-shot", "b", 1, 4)), INITIAL), /version 1 seen as "a" at zxid 101 .* and as "b"/);
  });

  test("a value nobody wrote, or whose write failed, is a violation", () => {
    assertViolation(checkWatches(history(...good(), seen(70, "one-shot", "zz", 9, 4)), INITIAL), /which nobody wrote/);
    assertViolation(checkWatches(history(...good(), written([60, 61], "f", "fail"), seen(70, "one-shot", "f", 9, 4)), INITIAL), /definitively failed/);
  });

  test("a read going back within a session is a violation; in a new session it is not", () => {
    assertViolation(checkWatches(history(...good(), seen(70, "one-shot", "a", 1, 2)), INITIAL), /went back within its session/);
    assertValid(checkWatches(history(...good(), lost(65, "one-shot", 2), seen(70, "one-shot", "a", 1, 2, "s2b")), INITIAL));
  });

  test("a one-shot watcher reading data older than the change it was told of is a violation", () => {
    const ops = good().filter((op) => !(op.f === "watch-read" && op.process === 2 && op.invokedAt === 45));
    assertViolation(
      checkWatches(history(...ops, seen(45, "one-shot", "a", 1, 2), event(65, "one-shot", 103, 2), seen(66, "one-shot", "c", 3, 2)), INITIAL),
      /older than the change it was told of \(zxid 102\)/,
    );
  });

  test("an event fired on reconnection names the server's latest zxid, not the change's: a read after it may be older", () => {
    const ops = good().filter((op) => !(op.f === "watch-event" && op.process === 2 && op.invokedAt === 35));
    assertValid(checkWatches(history(...ops, lost(30, "one-shot", 2), event(44, "one-shot", 150, 2)), INITIAL));
  });

  test("events out of order in one session are a violation", () => {
    const ops = good().filter((op) => !(op.f === "watch-event" && op.process === 3 && op.invokedAt === 35));
    assertViolation(checkWatches(history(...ops, event(57, "persistent", 102, 3)), INITIAL), /told of zxid 102 after zxid 103/);
  });

  test("a persistent watcher connected throughout that skips a write missed it; across a disconnection it may fold changes", () => {
    const ops = good().filter((op) => !(op.f === "watch-event" && op.process === 3 && op.invokedAt === 35));
    assertViolation(checkWatches(history(...ops), INITIAL), /told of zxid 101, then 103, missing #\d+ p1 watch-write "b"/);
    assertValid(checkWatches(history(...ops, lost(45, "persistent", 3)), INITIAL));
  });

  test("a watcher connected to the end that never learns of the last write long before the end is a violation", () => {
    const ops = good().filter((op) => !(op.f === "watch-event" && op.process === 3 && op.invokedAt === 55));
    assertViolation(checkWatches(history(...ops), INITIAL), /watcher p3 \(persistent\), connected throughout, never learned of #\d+ p1 watch-write "c"/);
    assertValid(checkWatches(history(...ops, lost(58, "persistent", 3)), INITIAL));
  });
});
