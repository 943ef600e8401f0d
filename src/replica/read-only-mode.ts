/**
 * Read-only mode (ZooKeeper's ReadOnlyZooKeeperServer): a member cut off from a quorum, with
 * readonlymode.enabled, serves read-only sessions from its tree as it stands. While it does, it
 * tracks those sessions' liveness itself, since no leader does now, and ends a session silent for
 * its timeout (ZooKeeper's read-only server runs its own tracker too). The peer ends the sessions
 * this mode gives up: it decides, the peer carries out.
 */
import { hex64 } from "../common/hex.js";
import { quorumOf, roleOf, type ClusterConfig } from "./cluster-config.js";
import type { ServerState } from "../election/types.js";
import type { Clock, LogSink } from "./ports.js";
import { SessionTracker } from "./session-tracker.js";

/**
 * A member out of service this long (or a tick, if longer), still looking for a leader or waiting
 * in discovery for its quorum, starts serving read-only sessions when read-only mode is on, as
 * ZooKeeper's QuorumPeer starts its ReadOnlyZooKeeperServer after looking this long: long
 * enough that an ordinary re-election does not drop every client into read-only mode and back.
 */
export const READ_ONLY_AFTER_MS_MIN = 2_000;

export interface ReadOnlyModeDeps {
  /** ZooKeeper's readonlymode.enabled. */
  enabled: boolean;
  serverId: number;
  tickMs: number;
  clock: Clock;
  logger: LogSink;
}

/** How long and how this member has been out of service, as the peer sees it at a tick. */
export interface Outage {
  /** The configuration in force. */
  config: ClusterConfig;
  /** Since it last served (or started): a term that failed in discovery and the election after it are one outage. */
  outOfServiceMs: number;
  role: ServerState;
}

export class ReadOnlyMode {
  /** While read-only: the liveness of the sessions served here. */
  private sessions: SessionTracker | undefined;

  constructor(private readonly deps: ReadOnlyModeDeps) {}

  /** Serving read-only sessions: cut off from a quorum, with read-only mode on. */
  get active(): boolean {
    return this.sessions !== undefined;
  }

  /**
   * Called while looking, and while a decided term is still in discovery: a would-be leader whose
   * voters went away after voting for it waits there up to initLimit, as cut off as a looking
   * member (ZooKeeper serves read-only only while looking, and leaves such clients without service
   * for initLimit). Discovery leaves the tree alone; read-only mode ends when synchronization begins.
   * It starts once the member has been out of service max(2 s, a tick). Returns the read-only
   * sessions that timed out: the peer ends them.
   */
  tick(outage: Outage): bigint[] {
    const { enabled, serverId, tickMs, logger } = this.deps;
    if (!enabled) return [];
    if (this.sessions === undefined) {
      // Not a member (removed): nothing of ours to serve, read-only or not.
      if (roleOf(outage.config, serverId) === undefined) return [];
      // A lone voter is its own quorum: it has nothing to be cut off from.
      const inForce = quorumOf(outage.config);
      const alone = inForce.voters.size === 1 && inForce.isVoter(serverId);
      if (alone || outage.outOfServiceMs < Math.max(READ_ONLY_AFTER_MS_MIN, tickMs)) return [];
      this.sessions = new SessionTracker(tickMs, () => this.deps.clock.nowMs());
      logger.info({ outOfServiceMs: outage.outOfServiceMs, role: outage.role }, "serving read-only sessions");
      return [];
    }
    const expired = this.sessions.collectExpired();
    for (const sessionId of expired) logger.info({ session: hex64(sessionId) }, "read-only session expired");
    return expired;
  }

  /** Ends read-only mode; true if it was on (the peer then ends every read-only session's connection). */
  leave(reason: string): boolean {
    if (this.sessions === undefined) return false;
    this.sessions = undefined;
    this.deps.logger.info({ reason }, "read-only mode ended");
    return true;
  }

  /** A read-only session was heard from; false when not read-only (the session is someone else's to track). */
  touch(sessionId: bigint, timeoutMs: number): boolean {
    if (this.sessions === undefined) return false;
    this.sessions.touch(sessionId, timeoutMs);
    return true;
  }

  forget(sessionId: bigint): void {
    this.sessions?.forget(sessionId);
  }
}
