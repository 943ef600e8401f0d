/**
 * Server configuration: one typed, validated object. Sources, later ones winning: defaults, a
 * JSON file (`--config`), environment variables (CORRAL_<FIELD> in upper snake case, for
 * containers), command-line flags (--field-name). Anything invalid is a ConfigError naming the field.
 *
 * A cluster is the `servers` list (cluster-servers.ts): every server (voters and observers) with its
 * host and its client, quorum and election ports. One file (or one CORRAL_SERVERS value) describes
 * the whole cluster and is shared by all its servers; each is started with its own serverId. An
 * empty list means standalone.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { limits } from "../common/constants.js";
import { zabLimits } from "../consensus/constants.js";
import { isValidDistinguishedName } from "../replica/x509-name.js";
import { parseServers, serverEntryFromObject, validateServers, type ServerEntry } from "./cluster-servers.js";
import { coerceInt, ConfigError } from "./config-error.js";

export interface ServerConfig {
  /** 1..254, unique in a cluster (ZooKeeper's myid; 255 would collide with TTL owner tags). */
  serverId: number;
  dataDir: string;
  /** The address the client port binds; in a cluster it defaults to this server's entry's host. */
  clientHost: string;
  /** In a cluster it comes from this server's entry (and must agree with it if set). */
  clientPort: number;
  /**
   * The second client port, speaking Apache ZooKeeper's binary protocol (zkCli.sh, Curator,
   * kazoo...), on clientHost; -1 = none, 0 = any free port. In a cluster it comes from this
   * server's entry.
   */
  zkClientPort: number;
  /**
   * ZooKeeper's 4lw.commands.whitelist for the ZooKeeper port: comma-separated words, "*" for
   * all. "srvr" is always on (ZooKeeper's default is that alone).
   */
  fourLetterWordWhitelist: string;
  /** ZooKeeper's tickTime: the unit of session timeouts, initLimit and syncLimit. */
  tickMs: number;
  minSessionTimeoutMs: number;
  maxSessionTimeoutMs: number;
  /** Take a snapshot after this many applied txns. */
  snapshotEveryTxns: number;
  /** Snapshots kept on disk; log records older than the oldest kept one are purged. */
  snapshotRetainCount: number;
  ttlNodesEnabled: boolean;
  /**
   * ZooKeeper's readonlymode.enabled: a cluster member cut off from its quorum for a while serves
   * reads to the clients that allow it (their connect request's read-only flag) and refuses
   * their writes with NOTREADONLY, until it joins a quorum again.
   */
  readOnlyModeEnabled: boolean;
  /**
   * ZooKeeper's reconfigEnabled: the reconfig operation (dynamic membership changes) is allowed,
   * to the super user or whoever /zookeeper/config's ACL lets write; off, it is RECONFIGDISABLED.
   */
  reconfigEnabled: boolean;
  /** Refuse writes past a hard quota limit (QUOTAEXCEEDED); soft limits are only logged. */
  enforceQuota: boolean;
  /**
   * The space quota (etcd's --quota-backend-bytes): the tree's estimated memory, in bytes, past which
   * the leader refuses writes that would grow it (QUOTAEXCEEDED) and raises the space alarm; reads,
   * deletes and writes that do not grow the tree go on. 0: half the V8 heap limit of the process.
   */
  spaceQuotaBytes: number;
  /**
   * How often the leader looks for empty containers and expired TTL nodes to delete (ZooKeeper's
   * znode.container.checkIntervalMs). A container is deleted only once it has been found empty
   * at two scans in a row, so an emptied container goes within one to two intervals.
   */
  containerCheckIntervalMs: number;
  /** Upper bound on those deletions, spread over the scans of a minute (ZooKeeper's znode.container.maxPerMinute). */
  containerMaxPerMinute: number;
  logLevel: string;
  /** Every server of the cluster, this one included; empty = standalone. */
  servers: ServerEntry[];
  /** ZooKeeper's initLimit: ticks a learner may take to connect to and sync with the leader. */
  initLimitTicks: number;
  /** ZooKeeper's syncLimit: ticks a learner may fall silent before the leader drops it (and vice versa). */
  syncLimitTicks: number;
  /**
   * Committed txns the leader keeps in memory to bring a returning learner up to date with a DIFF
   * (ZooKeeper's zookeeper.commitLogCount); a learner further behind gets a SNAP.
   */
  commitLogCount: number;
  /**
   * The leader's flow-control window, in bytes: what it has proposed and not committed, and what
   * it has sent one follower and not had acked. A write waits for room before the leader decides
   * it, and a follower slower than the quorum gets its next proposals once it acks. Every write is
   * applied behind everything proposed before it, so this (and the two windows an acking follower
   * may lag) is what a small write waits behind on a busy cluster: the default, the largest
   * message, keeps that near 100 ms at this machine's disk rate. Larger suits high-latency links.
   * (Not in ZooKeeper, whose leader queues without bound.)
   */
  proposalBytesInFlightMax: number;
  /**
   * ZooKeeper's zookeeper.globalOutstandingLimit: requests this server has read from its clients
   * and not answered, over every connection of both doors. At the bound a connection holding its
   * share of it (the bound over the connections with something outstanding) stops being read until
   * its answers come (TCP or HTTP/2 pushes back on its client); one below its share, or with nothing
   * outstanding, is still read, so a client with a few small requests is never held behind a storm.
   */
  globalOutstandingLimit: number;
  /** The same bound in bytes (not in ZooKeeper, whose limit counts requests, whatever their size). */
  globalOutstandingBytesMax: number;
  /** Requests one connection may have read and not answered before it stops being read (not in ZooKeeper). */
  connectionOutstandingMax: number;
  /** Their bytes. */
  connectionOutstandingBytesMax: number;
  /**
   * Bytes of answers and watch events one connection may leave unread (written, not yet taken by
   * its client's TCP or HTTP/2 window) before the server ends it; its session stays, and its client
   * reconnects and re-registers its watches. (ZooKeeper queues them without bound.)
   */
  connectionUnsentBytesMax: number;
  /**
   * Answers and watch events both client doors may hold encoded and not yet written out, over every
   * connection: at it, a read waits for its turn before it runs (nothing is refused), so many
   * clients asking for big answers at once (listings of a parent with a million children) cost at
   * most this plus one answer. Kept well above connectionUnsentBytesMax: a client that stops reading
   * holds its share until its connection is ended.
   */
  globalUnsentBytesMax: number;
  /**
   * ZooKeeper's maxClientCnxns: connections one client address may hold open to this server, over
   * every client port (a gRPC session stream counts as one); past it a new one is closed at once.
   * 0: no limit.
   */
  maxClientCnxns: number;
  /**
   * ZooKeeper's connection token bucket (zookeeper.connection_throttle_tokens, _fill_time,
   * _fill_count): each ConnectRequest takes a token from a bucket of this many, refilled by
   * connectionThrottleFillCount every connectionThrottleFillTimeMs; an empty bucket refuses the
   * connect and closes its connection. 0 (ZooKeeper's default): off.
   */
  connectionThrottleTokens: number;
  connectionThrottleFillTimeMs: number;
  connectionThrottleFillCount: number;
  /**
   * ZooKeeper's throttledOpWaitTime (zookeeper.throttled_op_wait_time): a write that waited at the
   * leader longer than this for room in its flow-control window is answered THROTTLEDOP instead of
   * being applied. 0 (ZooKeeper's default): off; clients older than ZooKeeper 3.6 do not know the code.
   */
  throttledOpWaitTimeMs: number;
  /**
   * ZooKeeper's zookeeper.DigestAuthenticationProvider.superDigest: "super:<base64 sha1>" (the
   * digest of "super:<password>"). A session that adds that digest authentication passes every ACL
   * check. "" = no super user.
   */
  superDigest: string;
  /**
   * The HTTP port serving Prometheus metrics at /metrics (ZooKeeper's metricsProvider.httpPort,
   * 7000 in its docs and in deploy/); -1 = none, 0 = any free port. In a cluster it defaults to
   * this server's entry's metricsPort.
   */
  metricsPort: number;
  /** The address the metrics port binds (ZooKeeper's metricsProvider.httpHost). */
  metricsHost: string;
  /**
   * The admin HTTP port (ZooKeeper's AdminServer, admin.serverPort, 8080 in its docs and in
   * deploy/): /commands/<name> as JSON, /healthz and /readyz; -1 = none, 0 = any free port. In a
   * cluster it defaults to this server's entry's adminPort.
   */
  adminPort: number;
  /** The address the admin port binds (ZooKeeper's admin.serverAddress); loopback unless set. */
  adminHost: string;
  /**
   * The web console on the admin port (/console/) asks for the super user's credentials (HTTP
   * Basic, checked as a ZooKeeper digest against superDigest). On by itself whenever superDigest
   * is set; true without a superDigest is a ConfigError (no one could sign in).
   */
  adminAuth: boolean;
  /**
   * The admin port's `snapshot` and `restore` commands each run at most once in this long
   * (ZooKeeper's zookeeper.admin.rateLimiterIntervalInMS).
   */
  adminRateLimitIntervalMs: number;

  // TLS, configured as ZooKeeper's secureClientPort, ssl.*, sslQuorum and ssl.quorum.* are.
  // Certificates and keys are PEM files, read again when they change (tlsReloadIntervalMs).
  /**
   * The ZooKeeper-protocol port over TLS (ZooKeeper's secureClientPort), on clientHost, beside or
   * instead of zkClientPort; -1 = none, 0 = any free port. In a cluster it comes from this
   * server's entry.
   */
  secureZkClientPort: number;
  /** The gRPC client port speaks TLS (tlsCertFile, tlsKeyFile) instead of plain text. */
  clientPortTls: boolean;
  /** This server's certificate (chain) for its client ports, PEM (ZooKeeper's ssl.keyStore). */
  tlsCertFile: string;
  /** Its private key, PEM, unencrypted. */
  tlsKeyFile: string;
  /** The CAs client certificates must chain to, PEM (ZooKeeper's ssl.trustStore). */
  tlsCaFile: string;
  /**
   * ZooKeeper's ssl.clientAuth on the TLS client ports: "need" (a client without a certificate
   * the CAs verify is refused), "want" (asked for; a verified one gives its x509 id) or "none".
   */
  tlsClientAuth: TlsClientAuth;
  /** ZooKeeper's sslQuorum: election and quorum links use mutual TLS; a peer the CAs do not verify is refused. */
  sslQuorum: boolean;
  /** The quorum links' certificate, key and CAs (ZooKeeper's ssl.quorum.*); "" = the client ports' file. */
  quorumTlsCertFile: string;
  quorumTlsKeyFile: string;
  quorumTlsCaFile: string;
  /**
   * ZooKeeper's ssl.quorum.hostnameVerification: a peer's certificate must name the host its entry
   * in servers gives (both ways: the server dialled, and the member a caller claims to be).
   */
  sslQuorumHostnameVerification: boolean;
  /** How often certificate, key and CA files are read again; a change takes effect for new connections. */
  tlsReloadIntervalMs: number;
  /**
   * ZooKeeper's zookeeper.X509AuthenticationProvider.superUser: a client whose verified
   * certificate has this subject DN (as its x509 id spells it) passes every ACL check. "" = none.
   */
  x509SuperUser: string;

  // SASL on both client ports, under ZooKeeper's names (src/server/sasl/sasl-config.ts reads them).
  /** ZooKeeper's java.security.auth.login.config, the JAAS file; "" = no SASL login. */
  jaasConfigFile: string;
  /** Its section this server logs in with (zookeeper.sasl.serverconfig). */
  saslServerSection: string;
  /** zookeeper.superUser: SASL ids (comma-separated) that also get the super id. */
  superUser: string;
  /** zookeeper.SASLAuthenticationProvider.superPassword: DIGEST-MD5 user "super"'s password. */
  saslSuperPassword: string;
  /** zookeeper.kerberos.removeHostFromPrincipal and removeRealmFromPrincipal. */
  kerberosRemoveHostFromPrincipal: boolean;
  kerberosRemoveRealmFromPrincipal: boolean;
  /** zookeeper.allowSaslFailedClients */
  allowSaslFailedClients: boolean;
  /** zookeeper.sessionRequireClientSASLAuth */
  sessionRequireClientSaslAuth: boolean;
  /** zookeeper.enforce.auth.enabled and zookeeper.enforce.auth.schemes (comma-separated). */
  enforceAuthEnabled: boolean;
  enforceAuthSchemes: string;
  /**
   * ZooKeeper's audit.enable: every write a client makes through this server, the ephemerals a
   * closed session loses, and this server's start and stop are written to auditLogFile.
   */
  auditEnable: boolean;
  /** The audit log (ZooKeeper's zookeeper_audit.log); "" = zookeeper_audit.log in dataDir. "{id}" becomes serverId. */
  auditLogFile: string;
}

/** ZooKeeper's ssl.clientAuth values. */
export type TlsClientAuth = "need" | "want" | "none";
const TLS_CLIENT_AUTH: ReadonlySet<string> = new Set<TlsClientAuth>(["need", "want", "none"]);

export type FieldKind = "int" | "string" | "bool" | "servers";
/** Every field and how its value is read; the flags (`--field-name`) and CORRAL_* names derive from it. */
export const FIELDS: Readonly<Record<keyof ServerConfig, FieldKind>> = {
  serverId: "int",
  dataDir: "string",
  clientHost: "string",
  clientPort: "int",
  zkClientPort: "int",
  fourLetterWordWhitelist: "string",
  tickMs: "int",
  minSessionTimeoutMs: "int",
  maxSessionTimeoutMs: "int",
  snapshotEveryTxns: "int",
  snapshotRetainCount: "int",
  ttlNodesEnabled: "bool",
  readOnlyModeEnabled: "bool",
  reconfigEnabled: "bool",
  enforceQuota: "bool",
  spaceQuotaBytes: "int",
  containerCheckIntervalMs: "int",
  containerMaxPerMinute: "int",
  logLevel: "string",
  servers: "servers",
  initLimitTicks: "int",
  syncLimitTicks: "int",
  commitLogCount: "int",
  proposalBytesInFlightMax: "int",
  globalOutstandingLimit: "int",
  globalOutstandingBytesMax: "int",
  connectionOutstandingMax: "int",
  connectionOutstandingBytesMax: "int",
  connectionUnsentBytesMax: "int",
  globalUnsentBytesMax: "int",
  maxClientCnxns: "int",
  connectionThrottleTokens: "int",
  connectionThrottleFillTimeMs: "int",
  connectionThrottleFillCount: "int",
  throttledOpWaitTimeMs: "int",
  superDigest: "string",
  metricsPort: "int",
  metricsHost: "string",
  adminPort: "int",
  adminHost: "string",
  adminAuth: "bool",
  adminRateLimitIntervalMs: "int",
  secureZkClientPort: "int",
  clientPortTls: "bool",
  tlsCertFile: "string",
  tlsKeyFile: "string",
  tlsCaFile: "string",
  tlsClientAuth: "string",
  sslQuorum: "bool",
  quorumTlsCertFile: "string",
  quorumTlsKeyFile: "string",
  quorumTlsCaFile: "string",
  sslQuorumHostnameVerification: "bool",
  tlsReloadIntervalMs: "int",
  x509SuperUser: "string",
  jaasConfigFile: "string",
  saslServerSection: "string",
  superUser: "string",
  saslSuperPassword: "string",
  kerberosRemoveHostFromPrincipal: "bool",
  kerberosRemoveRealmFromPrincipal: "bool",
  allowSaslFailedClients: "bool",
  sessionRequireClientSaslAuth: "bool",
  enforceAuthEnabled: "bool",
  enforceAuthSchemes: "string",
  auditEnable: "bool",
  auditLogFile: "string",
};

const MiB = 1024 * 1024;

/** What generateDigest yields: a user without a colon, then 28 base64 characters of SHA-1. */
const SUPER_DIGEST = /^[^:]*:[A-Za-z0-9+/]{27}=$/;
const LOG_LEVELS = new Set(["fatal", "error", "warn", "info", "debug", "trace", "silent"]);

export function defaultConfig(): Omit<ServerConfig, "minSessionTimeoutMs" | "maxSessionTimeoutMs"> {
  return {
    serverId: 1,
    dataDir: "./data",
    clientHost: "127.0.0.1",
    clientPort: 2181,
    zkClientPort: -1,
    fourLetterWordWhitelist: "srvr",
    tickMs: 2000,
    snapshotEveryTxns: 100_000,
    snapshotRetainCount: 3,
    ttlNodesEnabled: false,
    readOnlyModeEnabled: false,
    reconfigEnabled: false,
    enforceQuota: false,
    spaceQuotaBytes: 0,
    containerCheckIntervalMs: 60_000,
    containerMaxPerMinute: 10_000,
    logLevel: "info",
    servers: [],
    initLimitTicks: 10,
    syncLimitTicks: 5,
    commitLogCount: zabLimits.committedLogRecordsMax,
    proposalBytesInFlightMax: limits.messageBytesMax,
    globalOutstandingLimit: 1000,
    globalOutstandingBytesMax: 8 * MiB,
    connectionOutstandingMax: 1000,
    connectionOutstandingBytesMax: 4 * MiB,
    connectionUnsentBytesMax: 64 * MiB,
    globalUnsentBytesMax: 256 * MiB,
    maxClientCnxns: 60,
    connectionThrottleTokens: 0,
    connectionThrottleFillTimeMs: 1,
    connectionThrottleFillCount: 1,
    throttledOpWaitTimeMs: 0,
    superDigest: "",
    metricsPort: -1,
    metricsHost: "127.0.0.1",
    adminPort: -1,
    adminHost: "127.0.0.1",
    adminAuth: false,
    adminRateLimitIntervalMs: 300_000,
    secureZkClientPort: -1,
    clientPortTls: false,
    tlsCertFile: "",
    tlsKeyFile: "",
    tlsCaFile: "",
    tlsClientAuth: "need",
    sslQuorum: false,
    quorumTlsCertFile: "",
    quorumTlsKeyFile: "",
    quorumTlsCaFile: "",
    sslQuorumHostnameVerification: true,
    tlsReloadIntervalMs: 5_000,
    x509SuperUser: "",
    jaasConfigFile: "",
    saslServerSection: "Server",
    superUser: "",
    saslSuperPassword: "",
    kerberosRemoveHostFromPrincipal: false,
    kerberosRemoveRealmFromPrincipal: false,
    allowSaslFailedClients: false,
    sessionRequireClientSaslAuth: false,
    enforceAuthEnabled: false,
    enforceAuthSchemes: "",
    auditEnable: false,
    auditLogFile: "",
  };
}

/** kebab-case flag → field name; undefined when no field has that flag. */
export function fieldFromFlag(flag: string): keyof ServerConfig | undefined {
  const camel = flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
  return Object.hasOwn(FIELDS, camel) ? (camel as keyof ServerConfig) : undefined;
}
/** The flag that sets `field`, without its dashes: serverId → server-id. */
export function flagName(field: string): string {
  return field.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());
}
/** The environment variable that sets `field`: serverId → CORRAL_SERVER_ID, servers → CORRAL_SERVERS. */
export function envName(field: string): string {
  return "CORRAL_" + field.replace(/[A-Z]/g, (c) => "_" + c).toUpperCase();
}

function coerce(field: keyof ServerConfig, raw: unknown): unknown {
  const kind = FIELDS[field];
  if (kind === "int") return coerceInt(field, raw);
  if (kind === "bool") {
    if (raw === true || raw === "true") return true;
    if (raw === false || raw === "false") return false;
    throw new ConfigError(field, `expected true or false, got ${JSON.stringify(raw)}`);
  }
  if (kind === "servers") {
    if (typeof raw === "string") return parseServers(raw);
    if (Array.isArray(raw)) return raw.map((item, index) => serverEntryFromObject(item, index));
    throw new ConfigError(field, `expected a list of servers or a string "ID=HOST:CLIENT:QUORUM:ELECTION[:ROLE],...", got ${JSON.stringify(raw)}`);
  }
  if (typeof raw !== "string") throw new ConfigError(field, `expected a string, got ${JSON.stringify(raw)}`);
  return raw;
}

export interface ConfigSources {
  file?: string;
  /** Parsed flags: kebab-case name → value. */
  flags?: Record<string, string>;
  env?: NodeJS.ProcessEnv;
}

/** What some source set, coerced field by field but neither defaulted nor validated. */
export interface ConfigValues {
  values: Partial<ServerConfig>;
  /** Where each value came from: the file's path, its CORRAL_* variable or its --flag. */
  from: Partial<Record<keyof ServerConfig, string>>;
}

/** Reads the file, then the environment, then the flags, each overriding the one before. */
export function readConfigSources(sources: ConfigSources): ConfigValues {
  const values: Record<string, unknown> = {};
  const from: Record<string, string> = {};
  if (sources.file) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(sources.file, "utf8"));
    } catch (error) {
      throw new ConfigError("config", `cannot read ${sources.file}: ${(error as Error).message}`);
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new ConfigError("config", "the file must hold a JSON object");
    for (const [key, value] of Object.entries(parsed)) {
      if (!Object.hasOwn(FIELDS, key)) throw new ConfigError(key, "unknown field");
      values[key] = coerce(key as keyof ServerConfig, value);
      from[key] = sources.file;
    }
  }
  const env = sources.env ?? {};
  for (const field of Object.keys(FIELDS) as (keyof ServerConfig)[]) {
    const value = env[envName(field)];
    if (value !== undefined) {
      values[field] = coerce(field, value);
      from[field] = envName(field);
    }
  }
  for (const [flag, value] of Object.entries(sources.flags ?? {})) {
    const field = fieldFromFlag(flag);
    if (!field) throw new ConfigError(flag, "unknown option");
    values[field] = coerce(field, value);
    from[field] = `--${flag}`;
  }
  return { values: values, from };
}

export function loadConfig(sources: ConfigSources): ServerConfig {
  return resolveConfig(readConfigSources(sources).values);
}

/**
 * The defaults overridden by `values` (what some source set), completed and validated: session
 * bounds from tickMs, a cluster member's client host and ports from its own entry, "{id}" in dataDir.
 */
export function resolveConfig(values: Partial<ServerConfig>): ServerConfig {
  const merged: Record<string, unknown> = { ...defaultConfig(), ...values };
  /** Fields some source set, as opposed to defaults. */
  const explicit = new Set<string>(Object.keys(values));
  const tickMs = merged["tickMs"] as number;
  merged["minSessionTimeoutMs"] ??= tickMs * limits.sessionTimeoutTicksMin;
  merged["maxSessionTimeoutMs"] ??= tickMs * limits.sessionTimeoutTicksMax;

  const servers = merged["servers"] as ServerEntry[];
  if (servers.length > 0) {
    // A shared cluster file cannot know which server reads it: the id must be given, never defaulted.
    if (!explicit.has("serverId")) {
      throw new ConfigError("serverId", "must be set (--server-id, CORRAL_SERVER_ID or the file) when servers lists a cluster");
    }
    const self = servers.find((s) => s.id === merged["serverId"]);
    if (self) {
      if (!explicit.has("clientHost")) merged["clientHost"] = self.host;
      if (!explicit.has("clientPort")) merged["clientPort"] = self.clientPort;
      if (!explicit.has("zkClientPort")) merged["zkClientPort"] = self.zkClientPort ?? -1;
      if (!explicit.has("metricsPort") && self.metricsPort !== undefined) merged["metricsPort"] = self.metricsPort;
      if (!explicit.has("adminPort") && self.adminPort !== undefined) merged["adminPort"] = self.adminPort;
      if (!explicit.has("secureZkClientPort")) merged["secureZkClientPort"] = self.secureZkClientPort ?? -1;
    }
  }
  // "{id}" in dataDir lets one shared file give every server of a single-host cluster its own dir.
  merged["dataDir"] = (merged["dataDir"] as string).replaceAll("{id}", String(merged["serverId"]));
  merged["auditLogFile"] = ((merged["auditLogFile"] as string) || join(merged["dataDir"] as string, "zookeeper_audit.log")).replaceAll(
    "{id}",
    String(merged["serverId"]),
  );
  return validateConfig(merged as unknown as ServerConfig);
}

export function validateConfig(config: ServerConfig): ServerConfig {
  const range = (field: keyof ServerConfig, min: number, max: number): void => {
    const value = config[field] as number;
    if (value < min || value > max) throw new ConfigError(field, `must be within [${min}, ${max}], got ${value}`);
  };
  range("serverId", 1, 254);
  range("clientPort", 0, 65535);
  range("zkClientPort", -1, 65535);
  range("metricsPort", -1, 65535);
  range("adminPort", -1, 65535);
  range("tickMs", 1, 60_000);
  range("snapshotEveryTxns", 1, 100_000_000);
  range("snapshotRetainCount", 1, 1000);
  range("minSessionTimeoutMs", 1, config.maxSessionTimeoutMs);
  range("maxSessionTimeoutMs", config.minSessionTimeoutMs, 24 * 3600 * 1000);
  range("initLimitTicks", 1, 10_000);
  range("syncLimitTicks", 1, 10_000);
  range("commitLogCount", 1, zabLimits.committedLogRecordsMax);
  range("proposalBytesInFlightMax", limits.messageBytesMax, zabLimits.proposalBytesInFlightMax);
  range("globalOutstandingLimit", 1, 10_000_000);
  range("globalOutstandingBytesMax", limits.messageBytesMax, 64 * 1024 * MiB);
  range("connectionOutstandingMax", 1, limits.sessionRequestsQueuedMax);
  range("connectionOutstandingBytesMax", limits.messageBytesMax, 64 * 1024 * MiB);
  range("connectionUnsentBytesMax", 64 * 1024, 64 * 1024 * MiB);
  range("globalUnsentBytesMax", 64 * 1024, 64 * 1024 * MiB);
  range("maxClientCnxns", 0, 10_000_000);
  range("connectionThrottleTokens", 0, 10_000_000);
  range("connectionThrottleFillTimeMs", 1, 24 * 3600 * 1000);
  range("connectionThrottleFillCount", 1, 10_000_000);
  range("throttledOpWaitTimeMs", 0, 24 * 3600 * 1000);
  range("spaceQuotaBytes", 0, Number.MAX_SAFE_INTEGER);
  range("containerCheckIntervalMs", 10, 24 * 3600 * 1000);
  range("containerMaxPerMinute", 1, 10_000_000);
  range("adminRateLimitIntervalMs", 0, 24 * 3600 * 1000);
  if (config.dataDir.trim() === "") throw new ConfigError("dataDir", "must not be empty");
  if (config.clientHost.trim() === "") throw new ConfigError("clientHost", "must not be empty");
  if (config.metricsHost.trim() === "") throw new ConfigError("metricsHost", "must not be empty");
  if (config.adminHost.trim() === "") throw new ConfigError("adminHost", "must not be empty");
  validateServers(config.servers);
  // Ports of this process that bind the same address must differ (0, any free port, never collides).
  const own: [keyof ServerConfig, string, number][] = [
    ["clientPort", config.clientHost, config.clientPort],
    ["zkClientPort", config.clientHost, config.zkClientPort],
    ["secureZkClientPort", config.clientHost, config.secureZkClientPort],
    ["metricsPort", config.metricsHost, config.metricsPort],
    ["adminPort", config.adminHost, config.adminPort],
  ];
  for (let i = 0; i < own.length; i++) {
    for (let j = 0; j < i; j++) {
      const [field, host, port] = own[i]!;
      const [other, otherHost, otherPort] = own[j]!;
      if (port > 0 && port === otherPort && bindsOverlap(host, otherHost)) throw new ConfigError(field, `${port} is already ${other}`);
    }
  }
  if (!LOG_LEVELS.has(config.logLevel)) throw new ConfigError("logLevel", `one of ${[...LOG_LEVELS].join(", ")}`);
  if (config.adminAuth && config.superDigest === "") throw new ConfigError("adminAuth", "needs a superDigest: the console signs in the super user");
  if (config.superDigest !== "" && !SUPER_DIGEST.test(config.superDigest)) {
    throw new ConfigError(
      "superDigest",
      `expected user:<base64 SHA-1 of "user:password"> (e.g. super:D/InIHSb7yEEbrWz8b9l71RjZJU=), got ${JSON.stringify(config.superDigest)}`,
    );
  }
  validateTls(config);
  if (config.servers.length > 0) {
    const self = config.servers.find((s) => s.id === config.serverId);
    if (!self) {
      throw new ConfigError("serverId", `${config.serverId} is not in servers (ids ${config.servers.map((s) => s.id).join(", ")})`);
    }
    if (config.clientPort !== self.clientPort) {
      throw new ConfigError("clientPort", `is ${config.clientPort} but servers gives server ${self.id} client port ${self.clientPort}`);
    }
    if (config.zkClientPort !== (self.zkClientPort ?? -1)) {
      throw new ConfigError(
        "zkClientPort",
        `is ${config.zkClientPort} but servers gives server ${self.id} ${self.zkClientPort === undefined ? "none" : `ZooKeeper client port ${self.zkClientPort}`}`,
      );
    }
    if (config.secureZkClientPort !== (self.secureZkClientPort ?? -1)) {
      throw new ConfigError(
        "secureZkClientPort",
        `is ${config.secureZkClientPort} but servers gives server ${self.id} ${self.secureZkClientPort === undefined ? "none" : `secure ZooKeeper client port ${self.secureZkClientPort}`}`,
      );
    }
    for (const field of ["metricsPort", "adminPort"] as const) {
      const listed = self[field];
      if (listed !== undefined && config[field] !== listed)
        throw new ConfigError(field, `is ${config[field]} but servers gives server ${self.id} ${field} ${listed}`);
    }
  }
  return config;
}

/** Whether two bind addresses can clash on one port: the same one, or either a wildcard. */
function bindsOverlap(a: string, b: string): boolean {
  const wildcard = (host: string) => host === "0.0.0.0" || host === "::" || host === "";
  return wildcard(a) || wildcard(b) || a.toLowerCase() === b.toLowerCase();
}

/** The TLS fields: which files each enabled TLS port needs, the client auth mode, the super user's DN. */
function validateTls(config: ServerConfig): void {
  const range = (field: "secureZkClientPort" | "tlsReloadIntervalMs", min: number, max: number): void => {
    if (config[field] < min || config[field] > max) throw new ConfigError(field, `must be within [${min}, ${max}], got ${config[field]}`);
  };
  range("secureZkClientPort", -1, 65535);
  range("tlsReloadIntervalMs", 10, 24 * 3600 * 1000);
  if (!TLS_CLIENT_AUTH.has(config.tlsClientAuth))
    throw new ConfigError("tlsClientAuth", `expected need, want or none, got ${JSON.stringify(config.tlsClientAuth)}`);
  if (config.x509SuperUser !== "" && !isValidDistinguishedName(config.x509SuperUser)) {
    throw new ConfigError("x509SuperUser", `not a distinguished name (e.g. CN=admin,O=Example): ${JSON.stringify(config.x509SuperUser)}`);
  }
  const clientTls = config.clientPortTls || config.secureZkClientPort >= 0;
  if (clientTls) {
    const why = config.clientPortTls ? "clientPortTls is set" : "secureZkClientPort is set";
    for (const field of ["tlsCertFile", "tlsKeyFile"] as const) if (config[field] === "") throw new ConfigError(field, `must be set: ${why}`);
    if (config.tlsClientAuth !== "none" && config.tlsCaFile === "")
      throw new ConfigError("tlsCaFile", `must be set: tlsClientAuth is ${config.tlsClientAuth} (or set it to none)`);
  }
  if (config.sslQuorum) {
    for (const [field, fallback] of [
      ["quorumTlsCertFile", "tlsCertFile"],
      ["quorumTlsKeyFile", "tlsKeyFile"],
      ["quorumTlsCaFile", "tlsCaFile"],
    ] as const) {
      if (config[field] === "" && config[fallback] === "") throw new ConfigError(field, `must be set (or ${fallback}): sslQuorum is set`);
    }
  }
}

/** The PEM files of the client ports' TLS, or undefined when neither TLS client port is on. */
export function clientTlsFiles(config: ServerConfig): { certFile: string; keyFile: string; caFile: string } | undefined {
  if (!config.clientPortTls && config.secureZkClientPort < 0) return undefined;
  return { certFile: config.tlsCertFile, keyFile: config.tlsKeyFile, caFile: config.tlsClientAuth === "none" ? "" : config.tlsCaFile };
}

/** The PEM files of the quorum links' mutual TLS (the client ports' where not given), or undefined without sslQuorum. */
export function quorumTlsFiles(config: ServerConfig): { certFile: string; keyFile: string; caFile: string } | undefined {
  if (!config.sslQuorum) return undefined;
  return {
    certFile: config.quorumTlsCertFile || config.tlsCertFile,
    keyFile: config.quorumTlsKeyFile || config.tlsKeyFile,
    caFile: config.quorumTlsCaFile || config.tlsCaFile,
  };
}
