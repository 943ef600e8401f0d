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
import type { LeaderStatus } from "../replica/peer-status.js";
import type { QuotaExceeded } from "../replica/quota-guard.js";
import type { ServerStatus } from "./server-status.js";
import { WindowedSummary } from "./windowed-summary.js";
import type { FourLetterWordContext } from "./zk-wire/four-letter-words.js";

/** ZooKeeper's DetailLevel.ADVANCED summaries: median, p90, p99. BASIC ones: the median. */
const ADVANCED = [0.5, 0.9, 0.99] as const;
const BASIC = [0.5] as const;

export type RequestKind = "read" | "update";
export type LearnerKind = "follower" | "observer";
export type SyncMode = "DIFF" | "TRUNC" | "SNAP";

const KNOWN_AUTH_SCHEMES: ReadonlySet<string> = new Set(["ip", "digest", "x509", "sasl"]);

const SERVER_STATES = ["standalone", "looking", "leading", "following", "observing"] as const;

// The tables below are in export order: a registry lists metrics in the order they were made.

/** Event summaries by name, in ms unless named otherwise. */
const SUMMARIES = {
  readlatency: { help: "Read request latency in ms, from arrival to answer (ZooKeeper's READ_LATENCY; sync included, pings not)", percentiles: ADVANCED },
  updatelatency: { help: "Write request latency in ms, from arrival to answer (ZooKeeper's UPDATE_LATENCY)", percentiles: ADVANCED },
  fsynctime: { help: "Time in ms of one txn log group-commit batch write with fsync (ZooKeeper's FSYNC_TIME)", percentiles: BASIC },
  sync_processor_batch_size: { help: "Txns made durable by one fsync: the group-commit batch size (ZooKeeper's BATCH_SIZE)", percentiles: BASIC },
  snapshottime: { help: "Time in ms to serialise and write one snapshot (ZooKeeper's SNAPSHOT_TIME)", percentiles: BASIC },
  dbinittime: { help: "Time in ms to load the database at start: snapshot and log replay (ZooKeeper's DB_INIT_TIME)", percentiles: BASIC },
  election_time: { help: "Time in ms from entering LOOKING to a leader being decided (ZooKeeper's ELECTION_TIME)", percentiles: BASIC },
  follower_sync_time: { help: "Time in ms a follower took to sync with a new leader (ZooKeeper's FOLLOWER_SYNC_TIME)", percentiles: BASIC },
  observer_sync_time: { help: "Time in ms an observer took to sync with a new leader (ZooKeeper's OBSERVER_SYNC_TIME)", percentiles: BASIC },
  unavailable_time: { help: "Time in ms from leaving service (LOOKING) to serving again (ZooKeeper's UNAVAILABLE_TIME)", percentiles: BASIC },
  leader_unavailable_time: { help: "unavailable_time of the terms this server led (ZooKeeper's LEADER_UNAVAILABLE_TIME)", percentiles: BASIC },
} satisfies Record<string, { help: string; percentiles: readonly number[] }>;

/** Event counters by name: their help. */
const COUNTERS = {
  looking_count: "Times this server entered LOOKING (ZooKeeper's LOOKING_COUNT)",
  diff_count: "Learners this leader synced by DIFF or TRUNC (ZooKeeper's DIFF_COUNT)",
  snap_count: "Learners this leader synced by SNAP (ZooKeeper's SNAP_COUNT)",
  proposal_count: "Txns this server proposed as leader (ZooKeeper's PROPOSAL_COUNT)",
  commit_count: "Txns this server committed as leader (ZooKeeper's COMMIT_COUNT)",
  learner_proposal_received_count: "Proposals this server received as a learner (ZooKeeper's LEARNER_PROPOSAL_RECEIVED_COUNT)",
  learner_commit_received_count: "Committed txns this server applied as a learner (ZooKeeper's LEARNER_COMMIT_RECEIVED_COUNT)",
  throttled_ops: "Writes answered THROTTLEDOP: they waited at this leader past throttledOpWaitTimeMs (ZooKeeper's THROTTLED_OPS)",
  connection_rejected: "Client connections closed at accept: their address already held maxClientCnxns (ZooKeeper's CONNECTION_REJECTED)",
  corral_space_quota_refusals: "Writes this server refused as leader with QUOTAEXCEEDED because they would grow the tree past spaceQuotaBytes",
  corral_audit_events_dropped_count: "Audit events dropped because the audit log file fell behind (audit.enable)",
  digest_mismatches_count:
    "Times this learner's tree digest differed from its leader's, each followed by a repair from the leader's snapshot (ZooKeeper's DIGEST_MISMATCHES_COUNT)",
} satisfies Record<string, string>;

/** A gauge's help and what it reads at scrape time: ZooKeeper's registerGauge(name, supplier). */
interface GaugeSpec<Figures, Source> {
  readonly help: string;
  readonly read: (figures: Figures, source: Source) => number;
}
type LeaderFigures = NonNullable<FourLetterWordContext["leader"]>;
type ServerGauges = Record<string, GaugeSpec<FourLetterWordContext, ServerStatus>>;

/** ZooKeeper's registerGauge names. */
const ZOOKEEPER_GAUGES: ServerGauges = {
  avg_latency: { help: "Average request latency in ms on the ZooKeeper port since start (mntr's zk_avg_latency)", read: (context) => context.latency.avgMs },
  max_latency: { help: "Largest request latency in ms on the ZooKeeper port since start", read: (context) => context.latency.maxMs },
  min_latency: { help: "Smallest request latency in ms on the ZooKeeper port since start", read: (context) => context.latency.minMs },
  packets_received: { help: "Packets received on the ZooKeeper port since start", read: (context) => context.packetsReceived },
  packets_sent: { help: "Packets sent on the ZooKeeper port since start", read: (context) => context.packetsSent },
  num_alive_connections: { help: "Open connections on the ZooKeeper port (mntr's zk_num_alive_connections)", read: (context) => context.connections.length },
  outstanding_requests: { help: "Requests received and not yet answered, over every session here", read: (context) => context.outstandingRequests },
  uptime: { help: "Time in ms since this server started", read: (_context, status) => status.uptimeMs() },
  znode_count: { help: "Znodes in the tree", read: (context) => context.nodeCount },
  watch_count: { help: "Watches held by the sessions connected here", read: (context) => context.watches.total },
  ephemerals_count: { help: "Ephemeral znodes in the tree", read: (context) => context.ephemeralsCount },
  approximate_data_size: { help: "Bytes of znode paths and data in the tree", read: (context) => context.approximateDataSizeBytes },
  global_sessions: { help: "Sessions alive in the cluster", read: (_context, status) => status.globalSessions() },
};

/** Exported only while this server leads and serves, as ZooKeeper registers them only then. */
const LEADER_GAUGES: Record<string, GaugeSpec<LeaderFigures, LeaderStatus>> = {
  learners: { help: "Learners connected to this leader", read: (figures) => figures.learners },
  synced_followers: { help: "Followers in sync with this leader", read: (figures) => figures.syncedFollowers },
  synced_non_voting_followers: {
    help: "Non-voting followers in sync with this leader (always 0 in corral)",
    read: (figures) => figures.syncedNonVotingFollowers,
  },
  synced_observers: { help: "Observers in sync with this leader", read: (figures) => figures.syncedObservers },
  pending_syncs: { help: "Learners this leader is still syncing", read: (figures) => figures.pendingSyncs },
  leader_uptime: { help: "Time in ms since this leader began serving", read: (_figures, leader) => leader.uptimeMs },
  last_proposal_size: { help: "Bytes of this leader's last proposal (-1 before the first)", read: (figures) => figures.proposalSizeBytes.last },
  max_proposal_size: { help: "Bytes of this leader's largest proposal this term (-1 before the first)", read: (figures) => figures.proposalSizeBytes.max },
  min_proposal_size: { help: "Bytes of this leader's smallest proposal this term (-1 before the first)", read: (figures) => figures.proposalSizeBytes.min },
  corral_proposals_in_flight: { help: "Proposals this leader sent and has not committed yet", read: (_figures, leader) => leader.proposalsInFlight },
  corral_proposal_bytes_in_flight: {
    help: "Bytes of the proposals this leader sent and has not committed yet (bounded by proposalBytesInFlightMax)",
    read: (_figures, leader) => leader.proposalBytesInFlight,
  },
  corral_admission_queued_writes: {
    help: "Writes waiting at this leader for room in its flow-control window (taken round-robin across sessions)",
    read: (_figures, leader) => leader.admissionQueued.count,
  },
  corral_admission_queued_bytes: { help: "Bytes of those writes", read: (_figures, leader) => leader.admissionQueued.bytes },
};

/** corral's own; they follow corral_server_state in the export. */
const CORRAL_GAUGES: ServerGauges = {
  corral_serving: {
    help: "1 while this server serves clients (standalone, or part of a quorum with an established leader): /readyz",
    read: (_context, status) => (status.serving ? 1 : 0),
  },
  corral_last_processed_zxid: { help: "The zxid of the last txn applied to this server's tree", read: (context) => Number(context.zxid) },
  corral_client_sessions: {
    help: "Sessions with a live connection to this server, through either client port",
    read: (_context, status) => status.clientSessions(),
  },
  corral_inbound_outstanding_bytes: {
    help: "Bytes of the requests both client doors have read and not answered (bounded by globalOutstandingBytesMax)",
    read: (_context, status) => status.inbound.bytes,
  },
  corral_inbound_paused_connections: {
    help: "Client connections not being read now because they or the server are at an inbound bound",
    read: (_context, status) => status.inbound.pausedConnections,
  },
  corral_inbound_pauses: {
    help: "Times since start a client connection stopped being read at an inbound bound",
    read: (_context, status) => status.inbound.pauses,
  },
  corral_outbound_unsent_bytes: {
    help: "Bytes of answers and watch events both client doors hold encoded and not yet written out (bounded by globalUnsentBytesMax plus one answer)",
    read: (_context, status) => status.outbound.bytes,
  },
  corral_outbound_unsent_bytes_peak: {
    help: "The most bytes both client doors have held encoded and not yet written out at once since start",
    read: (_context, status) => status.outbound.peakBytes,
  },
  corral_outbound_reads_waited: {
    help: "Reads since start that waited for their turn because the server was at globalUnsentBytesMax",
    read: (_context, status) => status.outbound.readsWaited,
  },
  corral_space_quota_bytes: {
    help: "The space quota (spaceQuotaBytes): the tree's estimated bytes past which writes that grow it are refused",
    read: (_context, status) => status.space().quotaBytes,
  },
  corral_space_used_bytes: {
    help: "The tree's estimated memory in bytes, as the space quota measures it (each znode's records, path and data)",
    read: (_context, status) => status.space().usedBytes,
  },
  corral_space_alarm: {
    help: "1 while this server's leader prep refuses writes for space (from the first refusal until the write last refused would fit)",
    read: (_context, status) => (status.space().alarm ? 1 : 0),
  },
};

/** One metric per entry of `table`, under the entry's key, made in the table's order. */
function metricsOf<K extends string, Spec, Metric>(table: Record<K, Spec>, make: (name: K, spec: Spec) => Metric): Record<K, Metric> {
  // Filled key by key below: complete once the loop ends.
  const made = {} as Record<K, Metric>;
  for (const name in table) made[name] = make(name, table[name]);
  return made;
}

export class ServerMetrics {
  readonly registry = new client.Registry();
  /** Every metric corral defines, exported now or only in some states (leader-only gauges). */
  private readonly names: string[] = [];

  // ---- events
  private readonly summaries = metricsOf(SUMMARIES, (name, { help, percentiles }) => this.summary(name, help, percentiles));
  /** Every request's latency over a short window, for the console's live chart (not exported). */
  private readonly recentLatency = new WindowedSummary({
    name: "corral_console_recent_latency",
    help: "console only",
    percentiles: [0.5, 0.95, 0.99],
    registers: [],
    maxAgeSeconds: 10,
    ageBuckets: 5,
  });
  private readonly counters = metricsOf(COUNTERS, (name, help) => this.counter(name, help));
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
  /** ZooKeeper 3.8 counts no client authentications (its ensemble_auth_* are about server links). */
  private readonly authentications = new client.Counter({
    name: "corral_client_authentications",
    help: "Client authentications on this server, auth packets and SASL exchanges, by scheme and result",
    labelNames: ["scheme", "result"],
    registers: [this.registry],
  });

  // ---- gauges, set from the live state at scrape time
  private readonly zooKeeperGauges = this.gauges(ZOOKEEPER_GAUGES);
  private readonly quorumSize = this.gauge("quorum_size", "Voting members of the cluster (ZooKeeper's quorum_size; clustered servers only)", false);
  private readonly leaderGauges = this.gauges(LEADER_GAUGES, false);
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
  private readonly corralGauges = this.gauges(CORRAL_GAUGES);

  constructor() {
    this.names.push(
      "counter quota_exceeded_error_per_namespace",
      "counter corral_quota_exceeded_count",
      "counter corral_client_authentications",
      "gauge corral_learner_lag_zxids",
      "gauge corral_server_state",
    );
    // ZooKeeper's Prometheus provider exports the JVM's figures (exportJvmInfo); corral exports the
    // process's and Node's: CPU, memory, open fds, event-loop lag, GC.
    client.collectDefaultMetrics({ register: this.registry });
  }

  // ---- events

  requestAnswered(kind: RequestKind, latencyMs: number): void {
    (kind === "read" ? this.summaries.readlatency : this.summaries.updatelatency).observe(latencyMs);
    this.recentLatency.observe(latencyMs);
  }

  /**
   * What the web console charts: requests answered since start (reads, updates) and latency
   * percentiles (ms) of every request over the last ~10 s (NaN when none was answered).
   */
  requestFigures(): { reads: number; updates: number; p50Ms: number; p95Ms: number; p99Ms: number } {
    const recent = this.recentLatency;
    return {
      reads: this.summaries.readlatency.observations,
      updates: this.summaries.updatelatency.observations,
      p50Ms: recent.quantile(0.5),
      p95Ms: recent.quantile(0.95),
      p99Ms: recent.quantile(0.99),
    };
  }

  logBatchDurable(records: number, durationMs: number): void {
    this.summaries.fsynctime.observe(durationMs);
    this.summaries.sync_processor_batch_size.observe(records);
  }

  snapshotTaken(durationMs: number): void {
    this.summaries.snapshottime.observe(durationMs);
  }

  databaseLoaded(durationMs: number): void {
    this.summaries.dbinittime.observe(durationMs);
  }

  lookingStarted(): void {
    this.counters.looking_count.inc();
  }

  electionDecided(durationMs: number): void {
    this.summaries.election_time.observe(durationMs);
  }

  learnerSynced(kind: LearnerKind, durationMs: number): void {
    (kind === "follower" ? this.summaries.follower_sync_time : this.summaries.observer_sync_time).observe(durationMs);
  }

  servingAgain(unavailableMs: number, leading: boolean): void {
    this.summaries.unavailable_time.observe(unavailableMs);
    if (leading) this.summaries.leader_unavailable_time.observe(unavailableMs);
  }

  learnerSyncSent(mode: SyncMode): void {
    (mode === "SNAP" ? this.counters.snap_count : this.counters.diff_count).inc();
  }

  proposed(): void {
    this.counters.proposal_count.inc();
  }

  committed(count: number): void {
    this.counters.commit_count.inc(count);
  }

  learnerProposalsReceived(count: number): void {
    this.counters.learner_proposal_received_count.inc(count);
  }

  learnerCommitsReceived(count: number): void {
    this.counters.learner_commit_received_count.inc(count);
  }

  treeDigestMismatch(): void {
    this.counters.digest_mismatches_count.inc();
  }

  quotaLimitExceeded(event: QuotaExceeded): void {
    this.quotaExceeded.inc({ limit: event.limit, hard: String(event.hard) });
    if (event.refused) this.quotaErrors.inc({ key: topNamespace(event.path) });
  }

  spaceQuotaRefused(): void {
    this.counters.corral_space_quota_refusals.inc();
  }

  throttledOp(): void {
    this.counters.throttled_ops.inc();
  }

  connectionRejected(): void {
    this.counters.connection_rejected.inc();
  }

  auditEventsDropped(count: number): void {
    this.counters.corral_audit_events_dropped_count.inc(count);
  }

  /** An auth packet or a SASL exchange finished; a scheme corral does not know counts as "unknown" (a client names it). */
  clientAuthenticated(scheme: string, succeeded: boolean): void {
    this.authentications.inc({ scheme: KNOWN_AUTH_SCHEMES.has(scheme) ? scheme : "unknown", result: succeeded ? "success" : "failure" });
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
    for (const summary of [...Object.values(this.summaries), this.recentLatency]) summary.close();
  }

  private sample(status: ServerStatus): void {
    const context = status.fourLetterWordContext();
    for (const [gauge, { read }] of [...this.zooKeeperGauges, ...this.corralGauges]) gauge.set(read(context, status));
    const state = status.state();
    for (const name of SERVER_STATES) this.serverState.set({ state: name }, name === state ? 1 : 0);

    // As ZooKeeper registers these only while it has a quorum peer, or leads, corral lists them only then.
    const quorumSize = status.quorumSize();
    this.present(this.quorumSize, quorumSize !== undefined);
    if (quorumSize !== undefined) this.quorumSize.set(quorumSize);
    const leader = status.leaderStatus();
    const figures = context.leader;
    const leading = leader !== undefined && figures !== undefined && context.serving;
    for (const [gauge] of this.leaderGauges) this.present(gauge, leading);
    this.present(this.learnerLag, leading);
    if (!leading) return;
    for (const [gauge, { read }] of this.leaderGauges) gauge.set(read(figures, leader));
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
    return new WindowedSummary({ name, help, percentiles, registers: [this.registry] });
  }

  private counter(name: string, help: string): client.Counter {
    this.names.push(`counter ${name}`);
    return new client.Counter({ name, help, registers: [this.registry] });
  }

  private gauge(name: string, help: string, register = true): client.Gauge {
    this.names.push(`gauge ${name}`);
    return new client.Gauge({ name, help, registers: register ? [this.registry] : [] });
  }

  /** The table's gauges, each with its spec, so that a scrape can read them in one loop. */
  private gauges<Figures, Source>(table: Record<string, GaugeSpec<Figures, Source>>, register = true): [client.Gauge, GaugeSpec<Figures, Source>][] {
    return Object.entries(table).map(([name, spec]) => [this.gauge(name, spec.help, register), spec]);
  }
}

/** ZooKeeper's PathUtils.getTopNamespace: the first path segment ("/app/x" → "app"). */
export function topNamespace(path: string): string {
  const segment = path.split("/")[1];
  return segment === undefined || segment === "" ? "/" : segment;
}
