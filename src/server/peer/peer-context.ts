/**
 * What the election links and the quorum links share with the PeerTransport that owns them: its
 * bounds, its running totals, its member table and call gate, and the microtasks that batch their
 * output and deliver their input. One object, made once per transport, so that every link reads
 * the same totals and sees the transport stop at the same moment.
 */
import type { Logger } from "pino";
import type { HandlerDispatch } from "./handler-dispatch.js";
import type { MemberTable } from "./member-table.js";
import type { FlushScheduler } from "./microtasks.js";
import type { PeerCalls } from "./peer-calls.js";
import type { PeerLimits } from "./peer-limits.js";

/** Running totals, for logs, metrics and tests. */
export interface PeerTransportCounters {
  quorumFramesSent: number;
  quorumFramesReceived: number;
  quorumMessagesSent: number;
  quorumMessagesReceived: number;
  /** Quorum messages given to a stream that was not there (no leader link, unknown learner, closed). */
  quorumMessagesDropped: number;
  /** Quorum streams closed because their queue passed its bound. */
  quorumStreamsOverflowed: number;
  notificationFramesSent: number;
  notificationFramesReceived: number;
  notificationsSent: number;
  notificationsReceived: number;
  /**
   * Notifications dropped: superseded by a newer one for the same server while it was unreachable,
   * over a stream's queue bound, or handed over while the transport was not running.
   */
  notificationsDropped: number;
  /** Frames that did not decode; each closed its stream. */
  malformedFrames: number;
  /** Incoming calls refused (own or missing server id, wrong protocol version, too many servers outside the member list). */
  refusedCalls: number;
  /** Outgoing election streams that failed or ended (each is retried after a back-off). */
  electionLinkFailures: number;
}

export function newPeerTransportCounters(): PeerTransportCounters {
  return {
    quorumFramesSent: 0,
    quorumFramesReceived: 0,
    quorumMessagesSent: 0,
    quorumMessagesReceived: 0,
    quorumMessagesDropped: 0,
    quorumStreamsOverflowed: 0,
    notificationFramesSent: 0,
    notificationFramesReceived: 0,
    notificationsSent: 0,
    notificationsReceived: 0,
    notificationsDropped: 0,
    malformedFrames: 0,
    refusedCalls: 0,
    electionLinkFailures: 0,
  };
}

export interface PeerLinkContext {
  readonly myId: number;
  readonly limits: PeerLimits;
  readonly counters: PeerTransportCounters;
  /** The transport's logger (component peer-transport, this server's id). */
  readonly logger: Logger;
  readonly members: MemberTable;
  readonly calls: PeerCalls;
  /** Flushes a stream's queued output once the current run of microtasks is over. */
  readonly flusher: FlushScheduler;
  /** Delivers what the links received to the host's handlers. */
  readonly dispatch: HandlerDispatch;
  /** Whether the transport is running: nothing is dialled or retried otherwise. */
  running(): boolean;
}
