/**
 * The server's Prometheus metrics, under ZooKeeper 3.8's names wherever ZooKeeper has one
 * (ServerMetrics.java, ZooKeeperServer/LeaderZooKeeperServer/QuorumZooKeeperServer.registerMetrics,
 * the Prometheus provider's summaries), so that ZooKeeper dashboards and alerts read corral as they
 * read ZooKeeper; corral's own under `corral_`.
 *
 * Two kinds, as in ZooKeeper:
 * - events (counters and summaries) are bumped where they happen, through the methods below: one
 *   increment, or one slot of a bucket sketch (WindowedSummary) — nothing that allocates or sorts;
 * - gauges are read at scrape time from the server's live state (ServerStatus, the same snapshot
 *   the four-letter words render), never kept up to date on the write path.
 *
 * One registry per server (not prom-client's global one): tests run several servers in a process.
 * Serving it over HTTP is the admin edge's business (src/server/admin/metrics-listener.ts).
 */
import client from "prom-client";
import type { QuotaExceeded } from "../replica/quota-guard.js";
import type { ServerStatus } from "./server-status.js";
import { WindowedSummary } from "./windowed-summary.js";

/** ZooKeeper's DetailLevel.ADVANCED summaries: median, p90, p99. BASIC ones: the median. */
const ADVANCED = [0.5, 0.9, 0.99] as const;
const BASIC = [0.5] as const;

export type RequestKind = "read" | "update";
export type LearnerKind = "follower" | "observer";
export type SyncMode = "DIFF" | "TRUNC" | "SNAP";

const SERVER_STATES = ["standalone", "looking", "leading", "following", "observing"] as const;

export class ServerMetrics {
  readonly registry = new client.Registry();
  private readonly summaries: WindowedSummary[] = [];
  /** Every metric corral defines, exported now or only in some states (leader-only gauges). */
  private readonly names: string[] = [];

  // ---- events: summaries (ms unless named otherwise)
  private readonly readLatency = this.summary(
    "readlatency",
    "Read request latency in ms, from arrival to answer (ZooKeeper's READ_LATENCY; sync included, pings not)",
    ADVANCED,
  );
  private readonly updateLatency = this.summary("updatelatency", "Write request latency in ms, from arrival to answer (ZooKeeper's UPDATE_LATENCY)", ADVANCED);
  private readonly fsyncTime = this.summary("fsynctime", "Time in ms of one txn log group-commit batch write with fsync (ZooKeeper's FSYNC_TIME)", BASIC);
  private readonly batchSize = this.summary(
    "sync_processor_batch_size",
    "Txns made durable by one fsync: the group-commit batch size (ZooKeeper's BATCH_SIZE)",
    BASIC,
  );
  private readonly snapshotTime = this.summary("snapshottime", "Time in ms to serialise and write one snapshot (ZooKeeper's SNAPSHOT_TIME)", BASIC);
  private readonly dbInitTime = this.summary(
    "dbinittime",
    "Time in ms to load the database at start: snapshot and log replay (ZooKeeper's DB_INIT_TIME)",
    BASIC,
  );
  private readonly electionTime = this.summary(
    "election_time",
    "Time in ms from entering LOOKING to a leader being decided (ZooKeeper's ELECTION_TIME)",
    BASIC,
  );
  private readonly followerSyncTime = this.summary(
    "follower_sync_time",
    "Time in ms a follower took to sync with a new leader (ZooKeeper's FOLLOWER_SYNC_TIME)",
    BASIC,
  );
  private readonly observerSyncTime = this.summary(
    "observer_sync_time",
    "Time in ms an observer took to sync with a new leader (ZooKeeper's OBSERVER_SYNC_TIME)",
    BASIC,
  );
  private readonly unavailableTime = this.summary(
    "unavailable_time",
    "Time in ms from leaving service (LOOKING) to serving again (ZooKeeper's UNAVAILABLE_TIME)",
    BASIC,
  );
  private readonly leaderUnavailableTime = this.summary(
    "leader_unavailable_time",
    "unavailable_time of the terms this server led (ZooKeeper's LEADER_UNAVAILABLE_TIME)",
    BASIC,
  );

  /** Every request's latency over a short window, for the console's live chart (not exported). */
  private readonly recentLatency = this.track(
    new WindowedSummary({
      name: "corral_console_recent_latency",
      help: "console only",
      percentiles: [0.5, 0.95, 0.99],
      registers: [],
      maxAgeSeconds: 10,
      ageBuckets: 5,
    }),
  );

  // ---- events: counters
  private readonly lookingCount = this.counter("looking_count", "Times this server entered LOOKING (ZooKeeper's LOOKING_COUNT)");
  private readonly diffCount = this.counter("diff_count", "Learners this leader synced by DIFF or TRUNC (ZooKeeper's DIFF_COUNT)");
  private readonly snapCount = this.counter("snap_count", "Learners this leader synced by SNAP (ZooKeeper's SNAP_COUNT)");
  private readonly proposalCount = this.counter("proposal_count", "Txns this server proposed as leader (ZooKeeper's PROPOSAL_COUNT)");
  private readonly commitCount = this.counter("commit_count", "Txns this server committed as leader (ZooKeeper's COMMIT_COUNT)");
  private readonly learnerProposalCount = this.counter(
    "learner_proposal_received_count",
    "Proposals this server received as a learner (ZooKeeper's LEARNER_PROPOSAL_RECEIVED_COUNT)",
  );
  private readonly learnerCommitCount = this.counter(
    "learner_commit_received_count",
    "Committed txns this server applied as a learner (ZooKeeper's LEARNER_COMMIT_RECEIVED_COUNT)",
  );
  private readonly quotaErrors = new client.Counter({
    name: "quota_exceeded_error_per_namespace",
    help: "Writes refused with QUOTAEXCEEDED, by top-level namespace (ZooKeeper's QUOTA_EXCEEDED_ERROR_PER_NAMESPACE)",
    labelNames: ["key"],
    registers: [this.registry],
  });
  private readonly quotaExceeded = new client.Counter({
    name: "corral_quota_exceeded_count",
    help: "Writes that went past a quota limit, soft (logged) or hard (refused when enforceQuota), as this server's leader prep saw them",
    labelNames: ["limit", "hard"],
    registers: [this.registry],
  });

  // ---- gauges, set from the live state at scrape time (ZooKeeper's registerGauge names)
  private readonly gauges = {
    avg_latency: this.gauge("avg_latency", "Average request latency in ms on the ZooKeeper port since start (mntr's zk_avg_latency)"),
    max_latency: this.gauge("max_latency", "Largest request latency in ms on the ZooKeeper port since start"),
    min_latency: this.gauge("min_latency", "Smallest request latency in ms on the ZooKeeper port since start"),
    packets_received: this.gauge("packets_received", "Packets received on the ZooKeeper port since start"),
    packets_sent: this.gauge("packets_sent", "Packets sent on the ZooKeeper port since start"),
    num_alive_connections: this.gauge("num_alive_connections", "Open connections on the ZooKeeper port (mntr's zk_num_alive_connections)"),
    outstanding_requests: this.gauge("outstanding_requests", "Requests received and not yet answered, over every session here"),
    uptime: this.gauge("uptime", "Time in ms since this server started"),
    znode_count: this.gauge("znode_count", "Znodes in the tree"),
    watch_count: this.gauge("watch_count", "Watches held by the sessions connected here"),
    ephemerals_count: this.gauge("ephemerals_count", "Ephemeral znodes in the tree"),
    approximate_data_size: this.gauge("approximate_data_size", "Bytes of znode paths and data in the tree"),
    global_sessions: this.gauge("global_sessions", "Sessions alive in the cluster"),
  };
  private readonly quorumSize = this.gauge("quorum_size", "Voting members of the cluster (ZooKeeper's quorum_size; clustered servers only)", false);
  private readonly leaderGauges = {
    learners: this.gauge("learners", "Learners connected to this leader", false),
    synced_followers: this.gauge("synced_followers", "Followers in sync with this leader", false),
    synced_non_voting_followers: this.gauge("synced_non_voting_followers", "Non-voting followers in sync with this leader (always 0 in corral)", false),
    synced_observers: this.gauge("synced_observers", "Observers in sync with this leader", false),
    pending_syncs: this.gauge("pending_syncs", "Learners this leader is still syncing", false),
    leader_uptime: this.gauge("leader_uptime", "Time in ms since this leader began serving", false),
    last_proposal_size: this.gauge("last_proposal_size", "Bytes of this leader's last proposal (-1 before the first)", false),
    max_proposal_size: this.gauge("max_proposal_size", "Bytes of this leader's largest proposal this term (-1 before the first)", false),
    min_proposal_size: this.gauge("min_proposal_size", "Bytes of this leader's smallest proposal this term (-1 before the first)", false),
    corral_proposals_in_flight: this.gauge("corral_proposals_in_flight", "Proposals this leader sent and has not committed yet", false),
  };
  private readonly learnerLag = new client.Gauge({
    name: "corral_learner_lag_zxids",
    help: "How many txns each follower is behind this leader's last proposal, from its acks (observers do not ack and are not listed)",
    labelNames: ["learner"],
    registers: [],
  });
  private readonly serverState = new client.Gauge({
    name: "corral_server_state",
    help: "1 for this server's current state (standalone, looking, leading, following, observing), 0 for the others",
    labelNames: ["state"],
    registers: [this.registry],
  });
  private readonly serving = this.gauge(
    "corral_serving",
    "1 while this server serves clients (standalone, or part of a quorum with an established leader): /readyz",
  );
  private readonly lastZxid = this.gauge("corral_last_processed_zxid", "The zxid of the last txn applied to this server's tree");
  private readonly clientSessions = this.gauge("corral_client_sessions", "Sessions with a live connection to this server, through either client port");

  constructor() {
    this.names.push(
      "counter quota_exceeded_error_per_namespace",
      "counter corral_quota_exceeded_count",
      "gauge corral_learner_lag_zxids",
      "gauge corral_server_state",
    );
    // ZooKeeper's Prometheus provider exports the JVM's figures (exportJvmInfo); corral exports the
    // process's and Node's: CPU, memory, open fds, event-loop lag, GC.
    client.collectDefaultMetrics({ register: this.registry });
  }

  // ---- events

  requestAnswered(kind: RequestKind, latencyMs: number): void {
    (kind === "read" ? this.readLatency : this.updateLatency).observe(latencyMs);
    this.recentLatency.observe(latencyMs);
  }

  /**
   * What the web console charts: requests answered since start (reads, updates) and latency
   * percentiles (ms) of every request over the last ~10 s (NaN when none was answered).
   */
  requestFigures(): { reads: number; updates: number; p50Ms: number; p95Ms: number; p99Ms: number } {
    const recent = this.recentLatency;
    return {
      reads: this.readLatency.observations,
      updates: this.updateLatency.observations,
      p50Ms: recent.quantile(0.5),
      p95Ms: recent.quantile(0.95),
      p99Ms: recent.quantile(0.99),
    };
  }

  logBatchDurable(records: number, durationMs: number): void {
    this.fsyncTime.observe(durationMs);
    this.batchSize.observe(records);
  }

  snapshotTaken(durationMs: number): void {
    this.snapshotTime.observe(durationMs);
  }

  databaseLoaded(durationMs: number): void {
    this.dbInitTime.observe(durationMs);
  }

  lookingStarted(): void {
    this.lookingCount.inc();
  }

  electionDecided(durationMs: number): void {
    this.electionTime.observe(durationMs);
  }

  learnerSynced(kind: LearnerKind, durationMs: number): void {
    (kind === "follower" ? this.followerSyncTime : this.observerSyncTime).observe(durationMs);
  }

  servingAgain(unavailableMs: number, leading: boolean): void {
    this.unavailableTime.observe(unavailableMs);
    if (leading) this.leaderUnavailableTime.observe(unavailableMs);
  }

  learnerSyncSent(mode: SyncMode): void {
    (mode === "SNAP" ? this.snapCount : this.diffCount).inc();
  }

  proposed(): void {
    this.proposalCount.inc();
  }

  committed(count: number): void {
    this.commitCount.inc(count);
  }

  learnerProposalsReceived(count: number): void {
    this.learnerProposalCount.inc(count);
  }

  learnerCommitsReceived(count: number): void {
    this.learnerCommitCount.inc(count);
  }

  quotaLimitExceeded(event: QuotaExceeded): void {
    this.quotaExceeded.inc({ limit: event.limit, hard: String(event.hard) });
    if (event.refused) this.quotaErrors.inc({ key: topNamespace(event.path) });
  }

  // ---- scrape

  /** Reads the gauges from `status` (ZooKeeper's sampleGauges), then renders the text format. */
  async scrape(status: ServerStatus): Promise<string> {
    this.sample(status);
    return this.registry.metrics();
  }

  /**
   * The names of every metric corral itself defines (Node's process metrics aside), whether or
   * not exported right now: what dashboards and alert rules may refer to (deploy/ is checked
   * against it). A summary's samples add `_sum` and `_count`.
   */
  metricNames(): { name: string; type: "counter" | "gauge" | "summary" }[] {
    return this.names.map((entry) => {
      const [type, name] = entry.split(" ") as ["counter" | "gauge" | "summary", string];
      return { name, type };
    });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Stops the summaries' window timers. */
  close(): void {
    for (const summary of this.summaries) summary.close();
  }

  private sample(status: ServerStatus): void {
    const context = status.fourLetterWordContext();
    const g = this.gauges;
    g.avg_latency.set(context.latency.avgMs);
    g.max_latency.set(context.latency.maxMs);
    g.min_latency.set(context.latency.minMs);
    g.packets_received.set(context.packetsReceived);
    g.packets_sent.set(context.packetsSent);
    g.num_alive_connections.set(context.connections.length);
    g.outstanding_requests.set(context.outstandingRequests);
    g.uptime.set(status.uptimeMs());
    g.znode_count.set(context.nodeCount);
    g.watch_count.set(context.watches.total);
    g.ephemerals_count.set(context.ephemeralsCount);
    g.approximate_data_size.set(context.approximateDataSizeBytes);
    g.global_sessions.set(status.globalSessions());

    const state = status.state();
    for (const name of SERVER_STATES) this.serverState.set({ state: name }, name === state ? 1 : 0);
    this.serving.set(status.serving ? 1 : 0);
    this.lastZxid.set(Number(context.zxid));
    this.clientSessions.set(status.clientSessions());

    // As ZooKeeper registers these only while it has a quorum peer, or leads, corral lists them only then.
    const quorumSize = status.quorumSize();
    this.present(this.quorumSize, quorumSize !== undefined);
    if (quorumSize !== undefined) this.quorumSize.set(quorumSize);
    const leader = status.leaderStatus();
    const leaderFigures = context.leader;
    const leading = leader !== undefined && leaderFigures !== undefined && context.serving;
    for (const gauge of Object.values(this.leaderGauges)) this.present(gauge, leading);
    this.present(this.learnerLag, leading);
    if (!leading) return;
    const l = this.leaderGauges;
    l.learners.set(leaderFigures.learners);
    l.synced_followers.set(leaderFigures.syncedFollowers);
    l.synced_non_voting_followers.set(leaderFigures.syncedNonVotingFollowers);
    l.synced_observers.set(leaderFigures.syncedObservers);
    l.pending_syncs.set(leaderFigures.pendingSyncs);
    l.leader_uptime.set(leader.uptimeMs);
    l.last_proposal_size.set(leaderFigures.proposalSizeBytes.last);
    l.max_proposal_size.set(leaderFigures.proposalSizeBytes.max);
    l.min_proposal_size.set(leaderFigures.proposalSizeBytes.min);
    l.corral_proposals_in_flight.set(leader.proposalsInFlight);
    this.learnerLag.reset();
    for (const learner of leader.learners) {
      if (learner.lagZxids !== undefined) this.learnerLag.set({ learner: String(learner.sid) }, learner.lagZxids);
    }
  }

  /** Registers or unregisters a gauge so that it is exported only while it means something. */
  private present(metric: client.Gauge, present: boolean): void {
    const name = (metric as unknown as { name: string }).name;
    const registered = this.registry.getSingleMetric(name) !== undefined;
    if (present && !registered) this.registry.registerMetric(metric);
    else if (!present && registered) this.registry.removeSingleMetric(name);
  }

  private summary(name: string, help: string, percentiles: readonly number[]): WindowedSummary {
    this.names.push(`summary ${name}`);
    const summary = new WindowedSummary({ name, help, percentiles, registers: [this.registry] });
    this.summaries.push(summary);
    return summary;
  }

  private track(summary: WindowedSummary): WindowedSummary {
    this.summaries.push(summary);
    return summary;
  }

  private counter(name: string, help: string): client.Counter {
    this.names.push(`counter ${name}`);
    return new client.Counter({ name, help, registers: [this.registry] });
  }

  private gauge(name: string, help: string, register = true): client.Gauge {
    this.names.push(`gauge ${name}`);
    return new client.Gauge({ name, help, registers: register ? [this.registry] : [] });
  }
}

/** ZooKeeper's PathUtils.getTopNamespace: the first path segment ("/app/x" → "app"). */
export function topNamespace(path: string): string {
  const segment = path.split("/")[1];
  return segment === undefined || segment === "" ? "/" : segment;
}
