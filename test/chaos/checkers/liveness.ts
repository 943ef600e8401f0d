/**
 * Liveness after the final heal: every workload completes an operation successfully again — a
 * register op, a set add, an id taken, a lock grant. Safety checkers cannot see a lock that is never granted
 * again (the 30-minute run's ghost lock node, owned by a live session, was one); this can.
 */
import type { Op, Verdict } from "../history.js";

export const LIVENESS_CHECKER = "liveness";

export type Workload = "register" | "set" | "ids" | "lock" | "queue" | "counter" | "watches";

const PROGRESS: Record<Workload, readonly Op["f"][]> = {
  register: ["write", "cas", "read"],
  set: ["add"],
  ids: ["take-id"],
  lock: ["acquire"],
  queue: ["enqueue", "dequeue"],
  counter: ["increment"],
  watches: ["watch-write"],
};

/** When `workload` first completed an operation successfully at or after `from` (for the lock: a grant). */
export function firstProgressAfter(ops: readonly Op[], workload: Workload, from: number): number | undefined {
  let first: number | undefined;
  for (const op of ops) {
    if (op.outcome !== "ok" || op.completedAt === undefined || op.completedAt < from || !PROGRESS[workload].includes(op.f)) continue;
    if (first === undefined || op.completedAt < first) first = op.completedAt;
  }
  return first;
}

export function liveness(ops: readonly Op[], workloads: readonly Workload[], healedAt: number): Verdict {
  const violations: string[] = [];
  const stats: Record<string, number> = {};
  for (const workload of workloads) {
    const first = firstProgressAfter(ops, workload, healedAt);
    if (first === undefined)
      violations.push(`the ${workload} workload made no progress${workload === "lock" ? " (no lock grant)" : ""} after the cluster healed`);
    else stats[`${workload}ProgressMs`] = Math.round(first - healedAt);
  }
  return { checker: LIVENESS_CHECKER, valid: violations.length === 0, violations, stats };
}
