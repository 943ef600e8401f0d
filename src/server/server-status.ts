/**
 * What a running server tells about itself, read at the moment someone asks: the four-letter
 * words, the admin HTTP commands and the Prometheus gauges all read this one object, so each
 * figure is computed in one place and the three agree.
 *
 * Nothing here is kept up to date as the server runs; every method reads the live state (tree,
 * pipeline, quorum peer, ZooKeeper port) when it is called.
 */
import type { DataTree } from "../store/data-tree.js";
import type { WriteBroadcast } from "../replica/broadcast.js";
import type { ServerConfig } from "./config.js";
import type { InboundBudget } from "../replica/inbound-budget.js";
import type { OutboundBudget } from "../replica/outbound-budget.js";
import type { RequestPipeline } from "../replica/pipeline.js";
import type { ElectionSeen, LeaderStatus, PeerStatus } from "../replica/peer-status.js";
import type { SessionTracker } from "../replica/session-tracker.js";
import type { SpaceAlarm } from "../replica/space-quota.js";
import type { StorageDamage } from "../replica/ports.js";
import { fourLetterWordContext } from "./zk-wire/four-letter-word-context.js";
import type { FourLetterWordContext, FourLetterWordServerMode } from "./zk-wire/four-letter-words.js";
import type { ZkClientService } from "./zk-wire/zk-client-service.js";
import { PortStats } from "./zk-wire/connection-stats.js";

/** ZooKeeper's peer states, plus standalone. */
export type ServerState = "standalone" | "looking" | "leading" | "following" | "observing";

export interface ServerStatusDeps {
  config: ServerConfig;
  corralVersion: string;
  startedAt: Date;
  /** Read through on every use: a learner's tree is replaced when it syncs by SNAP or TRUNC. */
  state: { readonly tree: DataTree };
  pipeline: RequestPipeline;
  /** What both client doors have read and not answered, against the inbound bounds. */
  inbound: InboundBudget;
  /** What both client doors hold encoded and not written out, against globalUnsentBytesMax. */
  outbound: OutboundBudget;
  /** The space quota's alarm (spaceQuotaBytes), raised where the leader refuses writes for space. */
  spaceAlarm: SpaceAlarm;
  broadcast: WriteBroadcast;
  /** Who owns session expiry here: the standalone server's, or the cluster's (live only while leading). */
  tracker: SessionTracker;
  /** The cluster member's own status; undefined for a standalone server. */
  quorumPeer: PeerStatus | undefined;
  /** The ZooKeeper ports, plain and secure, once they listen (none when the server has none). */
  zkServices: () => readonly ZkClientService[];
  /** Their shared totals (srvr and mntr report the server's, as ZooKeeper's ServerStats). */
  zkTotals: PortStats;
  nowMs: () => number;
}

export class ServerStatus {
  constructor(private readonly deps: ServerStatusDeps) {}

  get config(): ServerConfig {
    return this.deps.config;
  }

  get tree(): DataTree {
    return this.deps.state.tree;
  }

  get version(): string {
    return this.deps.corralVersion;
  }

  /** Serving clients: standalone, or part of a quorum with an established leader (/readyz). */
  get serving(): boolean {
    return this.deps.broadcast.serving;
  }

  /** What this member repairs from its leader instead of serving (damaged files, a tree whose digest differed). */
  get repairing(): StorageDamage | undefined {
    return this.deps.quorumPeer?.repairing;
  }

  state(): ServerState {
    const peer = this.deps.quorumPeer;
    return peer ? peer.role : "standalone";
  }

  /** ZooKeeper's ServerStats.getServerState, while serving. */
  mode(): FourLetterWordServerMode | undefined {
    if (!this.serving) return undefined;
    switch (this.state()) {
      case "standalone":
        return "standalone";
      case "leading":
        return "leader";
      case "observing":
        return "observer";
      default:
        return "follower";
    }
  }

  uptimeMs(): number {
    return this.deps.nowMs() - this.deps.startedAt.getTime();
  }

  /** Sessions alive in the (replicated) tree. */
  globalSessions(): number {
    return this.tree.sessions.size;
  }

  /** Sessions with a live connection here, through either client port. */
  clientSessions(): number {
    return this.deps.pipeline.connectedSessions();
  }

  get inbound(): InboundBudget {
    return this.deps.inbound;
  }

  get outbound(): OutboundBudget {
    return this.deps.outbound;
  }

  /** The space quota: its ceiling, the tree's estimated bytes against it, and whether its alarm is raised. */
  space(): { quotaBytes: number; usedBytes: number; alarm: boolean } {
    const alarm = this.deps.spaceAlarm;
    return { quotaBytes: alarm.quotaBytes, usedBytes: this.tree.estimatedBytes(), alarm: alarm.active };
  }

  /** The sessions with a live connection here, through either client port. */
  connectedSessionIds(): bigint[] {
    return this.deps.pipeline.connectedSessionIds();
  }

  /** Requests received here and not yet answered. */
  outstandingRequests(): number {
    return this.deps.pipeline.outstandingRequests();
  }

  /** Voting members; undefined for a standalone server. */
  quorumSize(): number | undefined {
    if (!this.deps.quorumPeer) return undefined;
    return this.deps.config.servers.filter((s) => s.role === "participant").length;
  }

  /** The current term's leader (this server when leading); undefined while looking or standalone. */
  leaderId(): number | undefined {
    return this.deps.quorumPeer?.currentLeader;
  }

  /** The current epoch a clustered server persisted; undefined for a standalone server. */
  currentEpoch(): number | undefined {
    return this.deps.quorumPeer?.currentEpoch;
  }

  /** The elections a clustered server saw decided, oldest first; none for a standalone server. */
  electionsSeen(): readonly ElectionSeen[] {
    return this.deps.quorumPeer?.electionsSeen ?? [];
  }

  /** ZooKeeper's ZabState; undefined for a standalone server. */
  zabState(): string | undefined {
    return this.deps.quorumPeer?.zabState;
  }

  /** A serving leader's learners, lag and proposals in flight. */
  leaderStatus(): LeaderStatus | undefined {
    return this.deps.quorumPeer?.leaderStatus();
  }

  /**
   * When each session's expiry bucket falls due, where this server owns expiry (standalone, or
   * the leader); empty elsewhere, as ZooKeeper's learners report.
   */
  sessionExpiries(): Map<bigint, number> {
    const expiries = new Map<bigint, number>();
    const peer = this.deps.quorumPeer;
    if (peer && !(peer.role === "leading" && peer.serving)) return expiries;
    for (const sessionId of this.tree.sessions.keys()) {
      const at = this.deps.tracker.expiryOf(sessionId);
      if (at !== undefined) expiries.set(sessionId, at);
    }
    return expiries;
  }

  /** The snapshot the four-letter words render (and the admin commands and gauges read). */
  fourLetterWordContext(): FourLetterWordContext {
    const { config, quorumPeer, pipeline } = this.deps;
    const zkServices = this.deps.zkServices();
    const learners = quorumPeer?.learners();
    return fourLetterWordContext({
      config,
      corralVersion: this.deps.corralVersion,
      startedAt: this.deps.startedAt,
      tree: this.tree,
      mode: this.mode(),
      readOnly: this.deps.broadcast.readOnly,
      connections: zkServices.flatMap((service) => service.stats()),
      totals: this.deps.zkTotals,
      outstandingRequests: pipeline.outstandingRequests(),
      ...(learners === undefined ? {} : { learners, proposalSizeBytes: quorumPeer!.proposalSizes }),
    });
  }
}
