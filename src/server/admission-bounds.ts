/**
 * The bounds of the request chain that follow from the configuration (docs/architecture.md §7b).
 */
import { limits } from "../common/constants.js";
import { zabLimits } from "../consensus/constants.js";
import type { ForwardedQueueBound } from "../replica/leader-admission.js";
import type { ServerConfig } from "./config.js";
import { DEFAULT_PEER_LIMITS } from "./peer/peer-limits.js";

const MiB = 1024 * 1024;

/**
 * What one learner may have forwarded and waiting at this server while it leads: past it the
 * learner is refused as broken. A learner forwards only what its client doors read, which its
 * inbound bounds hold to globalOutstandingLimit (and bytes) plus one request per connection, so a
 * correct learner stays far below this last line.
 */
export const FORWARDED_QUEUED_MAX: ForwardedQueueBound = { count: 100 * limits.sessionRequestsQueuedMax, bytes: 8 * 1024 * MiB };

/**
 * The quorum streams' queue bound: twice the most the leader's core queues on one — its window
 * to a follower with a whole DIFF ahead of it — and never below the transport's default.
 */
export function quorumQueueBytesMaxOf(config: Pick<ServerConfig, "proposalBytesInFlightMax">): number {
  const leaderSide = config.proposalBytesInFlightMax + zabLimits.committedLogBytesMax + zabLimits.syncTxnsBytesMax;
  return Math.max(DEFAULT_PEER_LIMITS.quorumQueueBytesMax, 2 * leaderSide);
}
