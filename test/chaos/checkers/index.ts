/**
 * The chaos harness's checkers, all pure functions of a recorded history. `checkAll` runs each one
 * whose workload appears in the history and reports the others as trivially valid over 0 ops, so a
 * report always lists every checker and says which had nothing to judge.
 */
import type { FinalReads, Op, Verdict } from "../history.js";
import { checkFencedLock, FENCED_LOCK_CHECKER } from "./fenced-lock.js";
import { checkRegisterLinearizable, REGISTER_CHECKER, type RegisterCheckOptions } from "./linearizable-register.js";
import { checkReadConsistency, READ_CONSISTENCY_CHECKER } from "./read-consistency.js";
import { checkSet, SET_CHECKER } from "./set.js";
import { checkUniqueIds, UNIQUE_IDS_CHECKER } from "./unique-ids.js";
import { checkQueue, QUEUE_CHECKER } from "./queue.js";
import { checkCounter, COUNTER_CHECKER } from "./counter.js";
import { checkWatches, WATCHES_CHECKER } from "./watches.js";

export { checkFencedLock, FENCED_LOCK_CHECKER } from "./fenced-lock.js";
export { checkRegisterLinearizable, DEFAULT_BUDGET_STATES, REGISTER_CHECKER, type RegisterCheckOptions } from "./linearizable-register.js";
export { checkReadConsistency, READ_CONSISTENCY_CHECKER } from "./read-consistency.js";
export { checkSet, SET_CHECKER } from "./set.js";
export { checkUniqueIds, idNodePath, UNIQUE_IDS_CHECKER } from "./unique-ids.js";
export { checkQueue, QUEUE_CHECKER } from "./queue.js";
export { checkCounter, COUNTER_CHECKER } from "./counter.js";
export { CATCH_UP_MS, checkWatches, WATCHES_CHECKER } from "./watches.js";
export { firstProgressAfter, liveness, LIVENESS_CHECKER, type Workload } from "./liveness.js";

export interface CheckAllOptions {
  register?: RegisterCheckOptions;
  /** The watched key's value at version 0. */
  watchedInitial?: string;
}

function nothingToJudge(checker: string): Verdict {
  return { checker, valid: true, violations: [], stats: { ops: 0 } };
}

export function checkAll(ops: readonly Op[], finals: FinalReads, options: CheckAllOptions = {}): Verdict[] {
  const has = (...fs: Op["f"][]): boolean => ops.some((op) => fs.includes(op.f));
  return [
    has("write", "cas") ? checkRegisterLinearizable(ops, options.register) : nothingToJudge(REGISTER_CHECKER),
    has("read") ? checkReadConsistency(ops) : nothingToJudge(READ_CONSISTENCY_CHECKER),
    has("add") || finals.sets.length > 0 ? checkSet(ops, finals.sets) : nothingToJudge(SET_CHECKER),
    has("take-id") || finals.ids.length > 0 ? checkUniqueIds(ops, finals.ids) : nothingToJudge(UNIQUE_IDS_CHECKER),
    has("acquire", "use", "release") ? checkFencedLock(ops) : nothingToJudge(FENCED_LOCK_CHECKER),
    has("enqueue", "dequeue") || finals.queues.length > 0 ? checkQueue(ops, finals.queues) : nothingToJudge(QUEUE_CHECKER),
    has("increment", "counter-read") || finals.counters.length > 0 ? checkCounter(ops, finals.counters) : nothingToJudge(COUNTER_CHECKER),
    has("watch-write", "watch-read", "watch-event") ? checkWatches(ops, options.watchedInitial ?? "") : nothingToJudge(WATCHES_CHECKER),
  ];
}
