/**
 * Drives a Prep over its tree as the leader does, one session's writes at a time: `prepare` only
 * preps (the txn stays in flight), `apply` applies a prepped txn and retires it from prep, `run`
 * does both.
 */
import type { Prep } from "../../src/replica/prep.js";
import type { WriteRequest } from "../../src/replica/requests.js";
import type { DataTree } from "../../src/store/data-tree.js";
import type { TxnBody } from "../../src/store/types.js";

export const PREP_SESSION = 0x0100000000000001n;

export interface Prepared {
  zxid: number;
  body: TxnBody;
}

/** `afterApply` runs after each applied txn (what the replica does next, e.g. the space alarm's look at the tree). */
export function prepRunner(tree: DataTree, prep: Prep, afterApply: () => void = () => undefined) {
  let zxid = 0;
  const prepare = (request: WriteRequest): Prepared => {
    zxid += 1;
    return { zxid, body: prep.prepare(request, PREP_SESSION, zxid, []) };
  };
  const apply = ({ zxid: z, body }: Prepared): TxnBody => {
    tree.apply({ header: { sessionId: PREP_SESSION, cxid: 1, zxid: z, timeMs: 1000 + z }, body });
    prep.applied(z);
    afterApply();
    return body;
  };
  const run = (request: WriteRequest): TxnBody => apply(prepare(request));
  return { prepare, apply, run };
}
