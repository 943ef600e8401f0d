/**
 * The queue workload: every item is taken at most once, nothing is taken that was not queued (or
 * whose enqueue definitively failed), no acknowledged item is lost — each is taken, possibly taken
 * by a dequeue whose answer was lost, or still queued on every server at the end — an item taken
 * is not still queued, and the servers agree on what is left.
 */
import type { DequeueOp, EnqueueOp, FinalQueueRead, Op, Verdict } from "../history.js";
import { describeOp, Findings, verdictOf } from "./format.js";

export const QUEUE_CHECKER = "queue";

export function checkQueue(ops: readonly Op[], finals: readonly FinalQueueRead[]): Verdict {
  const findings = new Findings();
  const enqueues = new Map<string, EnqueueOp>();
  for (const op of ops) if (op.f === "enqueue") enqueues.set(op.item, op);
  const dequeues = ops.filter((op): op is DequeueOp => op.f === "dequeue");
  const taken = new Map<string, DequeueOp>();
  const takenPaths = new Map<string, DequeueOp>();
  const maybeTaken = new Set<string>();

  for (const op of dequeues) {
    if (op.outcome === "unknown") maybeTaken.add(op.item);
    if (op.outcome !== "ok") continue;
    const before = taken.get(op.item);
    if (before !== undefined) findings.add(`item ${op.item} taken twice: ${describeOp(before)}; ${describeOp(op)}`);
    else taken.set(op.item, op);
    const samePath = takenPaths.get(op.path);
    if (samePath !== undefined && samePath.item !== op.item)
      findings.add(`${op.path} deleted twice with different items: ${describeOp(samePath)}; ${describeOp(op)}`);
    takenPaths.set(op.path, op);
    const enqueue = enqueues.get(op.item);
    if (enqueue === undefined) findings.add(`item ${op.item} taken but never queued: ${describeOp(op)}`);
    else if (enqueue.outcome === "fail")
      findings.add(`item ${op.item} taken although its enqueue definitively failed: ${describeOp(enqueue)}; ${describeOp(op)}`);
  }

  const acknowledged = [...enqueues.values()].filter((op) => op.outcome === "ok");
  for (const { server, items } of finals) {
    const queued = new Set(items);
    const lost = acknowledged.filter((op) => !queued.has(op.item) && !taken.has(op.item) && !maybeTaken.has(op.item));
    for (const op of lost.slice(0, 5)) findings.add(`server ${server}: acknowledged item ${op.item} is neither queued nor taken: ${describeOp(op)}`);
    if (lost.length > 5) findings.add(`server ${server}: ${lost.length} acknowledged items lost in all`);
    for (const item of items) {
      const enqueue = enqueues.get(item);
      if (enqueue === undefined) findings.add(`server ${server} has item ${item} queued, which nobody queued`);
      else if (enqueue.outcome === "fail") findings.add(`server ${server} has item ${item} queued although its enqueue definitively failed`);
      const take = taken.get(item);
      if (take !== undefined) findings.add(`server ${server} still has item ${item} queued after it was taken: ${describeOp(take)}`);
    }
    if (queued.size !== items.length) findings.add(`server ${server} has an item queued twice`);
  }
  const [reference, ...others] = finals;
  for (const other of others) {
    if (reference!.items.join("\n") !== other.items.join("\n")) {
      findings.add(`servers ${reference!.server} and ${other.server} disagree on the queue: ${reference!.items.length} items against ${other.items.length}`);
    }
  }

  const unread = finals.length === 0 && acknowledged.length > 0 ? "no final read of the queue: acknowledged items cannot be checked" : undefined;
  return verdictOf(
    QUEUE_CHECKER,
    findings,
    {
      enqueued: acknowledged.length,
      enqueueUnknown: [...enqueues.values()].filter((op) => op.outcome === "unknown").length,
      taken: taken.size,
      takeUnknown: maybeTaken.size,
      leftQueued: reference?.items.length ?? 0,
      serversRead: finals.length,
    },
    unread,
  );
}
