/** Hand-written chaos histories for the checkers' unit tests. */
import type { Op } from "../chaos/history.js";

/** `ops` in invocation order (ties in the order written), numbered as the harness numbers them. */
export function history(...ops: Op[]): Op[] {
  return ops
    .map((op, written) => ({ op, written }))
    .sort((a, b) => a.op.invokedAt - b.op.invokedAt || a.written - b.written)
    .map(({ op }, id) => ({ ...op, id }));
}
