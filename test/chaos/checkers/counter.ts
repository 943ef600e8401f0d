/**
 * The counter workload (versioned increments of one znode, so its value is its version): no two
 * acknowledged increments answered with the same count (a lost update); the final count, the same
 * on every server, is the acknowledged increments plus at most the indeterminate ones; no read
 * counts more increments than had been invoked by its answer; and no read goes backwards in
 * real time — a read (sync, then getData) invoked after another read's or an increment's answer
 * arrived returns at least that count.
 */
import type { CounterReadOp, FinalCounterRead, IncrementOp, Op, Verdict } from "../history.js";
import { describeOp, Findings, verdictOf } from "./format.js";

export const COUNTER_CHECKER = "counter";

type Answered = (IncrementOp | CounterReadOp) & { result: { value: number }; completedAt: number };

export function checkCounter(ops: readonly Op[], finals: readonly FinalCounterRead[]): Verdict {
  const findings = new Findings();
  const increments = ops.filter((op): op is IncrementOp => op.f === "increment");
  const reads = ops.filter((op): op is CounterReadOp => op.f === "counter-read");
  const acked = increments.filter((op) => op.outcome === "ok");
  const unknown = increments.filter((op) => op.outcome === "unknown").length;

  const byValue = new Map<number, IncrementOp>();
  for (const op of acked) {
    const value = op.result?.value;
    if (value !== op.expectedVersion + 1) {
      findings.add(`an increment from ${op.expectedVersion} answered with count ${value}: ${describeOp(op)}`);
      continue;
    }
    const other = byValue.get(value);
    if (other !== undefined) findings.add(`two increments both answered with count ${value}: ${describeOp(other)}; ${describeOp(op)}`);
    else byValue.set(value, op);
  }

  for (const { server, value } of finals) {
    if (value < acked.length) findings.add(`server ${server} ends at ${value}, fewer than the ${acked.length} acknowledged increments`);
    if (value > acked.length + unknown)
      findings.add(`server ${server} ends at ${value}, more than ${acked.length} acknowledged plus ${unknown} indeterminate increments`);
  }
  const counts = new Set(finals.map((f) => f.value));
  if (counts.size > 1) findings.add(`the servers end at different counts: ${finals.map((f) => `${f.server}: ${f.value}`).join(", ")}`);

  checkReadsCounted(reads, increments, findings);
  const answered = [...acked, ...reads.filter((op) => op.outcome === "ok")] as Answered[];
  checkRealTimeOrder(answered, findings);

  const unread = finals.length === 0 && acked.length > 0 ? "no final read of the counter: acknowledged increments cannot be checked" : undefined;
  return verdictOf(
    COUNTER_CHECKER,
    findings,
    {
      acknowledged: acked.length,
      unknown,
      refused: increments.filter((op) => op.outcome === "fail").length,
      reads: reads.filter((op) => op.outcome === "ok").length,
      final: finals[0]?.value ?? -1,
      serversRead: finals.length,
    },
    unread,
  );
}

/** A read cannot count an increment that had not been invoked (and not definitively refused) by its answer. */
function checkReadsCounted(reads: readonly CounterReadOp[], increments: readonly IncrementOp[], findings: Findings): void {
  const possible = increments.filter((op) => op.outcome !== "fail").map((op) => op.invokedAt);
  possible.sort((a, b) => a - b);
  for (const read of reads) {
    if (read.outcome !== "ok" || read.result === undefined) continue;
    const invokedBefore = upperBound(possible, read.completedAt!);
    if (read.result.value > invokedBefore)
      findings.add(`a read counts ${read.result.value} with only ${invokedBefore} increments invoked by its answer: ${describeOp(read)}`);
  }
}

/** How many of the sorted `times` are ≤ `t`. */
function upperBound(times: readonly number[], t: number): number {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** One sweep in invocation order against the largest count answered before each invocation. */
function checkRealTimeOrder(answered: readonly Answered[], findings: Findings): void {
  const byInvocation = [...answered].sort((a, b) => a.invokedAt - b.invokedAt);
  const byCompletion = [...answered].sort((a, b) => a.completedAt - b.completedAt);
  let next = 0;
  let largest: Answered | undefined;
  for (const op of byInvocation) {
    while (next < byCompletion.length && byCompletion[next]!.completedAt < op.invokedAt) {
      const done = byCompletion[next++]!;
      if (largest === undefined || done.result.value > largest.result.value) largest = done;
    }
    if (largest !== undefined && op.result.value < largest.result.value) {
      findings.add(`count ${op.result.value} after ${largest.result.value} was answered: ${describeOp(largest)}; then ${describeOp(op)}`);
    }
  }
}
