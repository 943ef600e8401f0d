/**
 * The Zab core a host runs for one term, as a discriminated union on `kind` (docs/architecture.md
 * practice 3): a Leader, or a Learner that is a follower or an observer. The host builds one with
 * `createZab` when the election decides, and drops it when a Ready carries `stepDown`.
 *
 * How a host drives it (src/server for real, test/sim in memory):
 *   1. `const zab = createZab(...)`, then `handle(zab.start())`.
 *   2. Feed every input with `handle(zab.step(input))`: quorum messages from the peer stream,
 *      `tick` every few ms (at least every tickMs / 2), and the answers to persist actions.
 *   3. `handle(ready)`, in this order:
 *      - `persist`: carry out in order (a later action never overtakes an earlier one); answer
 *        each when durable: appendLog → `logDurable{zxid}` (cumulative, group commit welcome),
 *        truncateLog → `truncated{zxid of the log's new end}`, installSnapshot → replace the tree
 *        now, `snapshotInstalled` once durable, acceptedEpoch / currentEpoch → `epochDurable`.
 *      - `send`: hand to the peer streams (FIFO per peer); nothing in it waits on a pending persist.
 *      - `apply`: decode and apply to the tree, in order, before the next input.
 *      - leader: `forwarded` → prep and propose each (allocateZxid, prep, propose) before the next
 *        input; `touches` → the session tracker.
 *      - learner: `syncsDone` → answer the waiting syncs once the tree reaches each zxid.
 *      - `disconnect`: close those streams (no `disconnected` input for them afterwards).
 *      - `serving`: accept clients only while true.
 *      - `stepDown`: drop this core, close its streams, go back to election. The persist actions
 *        of that last Ready are still carried out, and the next core is built only once every
 *        write of this one is durable.
 */
import { Leader } from "./leader.js";
import { Learner, type LearnerOptions } from "./learner.js";
import type { ZabOptions } from "./options.js";

export type ZabCore = Leader | Learner;

export type ZabRole = { kind: "leader" } | { kind: "follower"; leaderId: number } | { kind: "observer"; leaderId: number };

export function createZab(role: ZabRole, options: ZabOptions): ZabCore {
  switch (role.kind) {
    case "leader":
      return new Leader(options);
    case "follower":
    case "observer": {
      const learnerOptions: LearnerOptions = {
        ...options,
        role: role.kind === "follower" ? "participant" : "observer",
        leaderId: role.leaderId,
      };
      return new Learner(learnerOptions);
    }
  }
}

export { Leader } from "./leader.js";
export { Learner } from "./learner.js";
export type { ZabDurableState, ZabOptions, ZabStatePort } from "./options.js";
