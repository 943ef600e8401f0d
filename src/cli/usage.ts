/**
 * What `corral --help` and `corral COMMAND --help` (or `-h`, or `corral help COMMAND`) print. Each
 * command's options are listed from the tables its parser reads — config.ts's FIELDS for the
 * server's settings, CLUSTER_FLAGS, HEALTH_FLAGS, SHELL_FLAGS — so no flag is accepted unlisted.
 */
import { formatServers } from "../server/cluster-servers.js";
import { FIELDS, defaultConfig, envName, flagName, type ServerConfig } from "../server/config.js";
import { CLUSTER_FLAGS, MEMBER_FIELDS, SHARED_FIELDS, launcherDefaults } from "./cluster.js";
import { commandHelp } from "./cluster-commands.js";
import { HEALTH_FLAGS } from "./health.js";
import { helpText } from "./shell-commands.js";
import { TOOL_COMMANDS } from "./tools.js";

/** Each server setting's value and meaning; a Record, so a new field does not compile without one. */
export const FIELD_HELP: Readonly<Record<keyof ServerConfig, readonly [string, string]>> = {
  serverId: ["N", "1..254, this server's id (ZooKeeper's myid); required when servers lists a cluster"],
  dataDir: ["DIR", "the txn log and snapshots; {id} is replaced by serverId"],
  clientHost: ["HOST", "the address the gRPC client port binds; in a cluster, this server's entry's host"],
  clientPort: ["PORT", "the gRPC client port; in a cluster, this server's entry's"],
  zkClientPort: ["PORT", "the ZooKeeper-protocol client port, -1 none, 0 any free; in a cluster, this server's entry's"],
  fourLetterWordWhitelist: ["WORDS", "four-letter words the ZooKeeper port answers, comma-separated, * for all"],
  tickMs: ["MS", "ZooKeeper's tickTime"],
  minSessionTimeoutMs: ["MS", "the shortest session timeout granted (default 2 ticks)"],
  maxSessionTimeoutMs: ["MS", "the longest session timeout granted (default 20 ticks)"],
  snapshotEveryTxns: ["N", "take a snapshot after a random count of txns in (N/2, N]"],
  snapshotRetainCount: ["N", "snapshots kept; older log records are purged"],
  ttlNodesEnabled: ["true|false", "allow TTL nodes; when off a TTL create is UNIMPLEMENTED"],
  readOnlyModeEnabled: ["true|false", "a member cut off from its quorum serves reads to clients that allow read-only (ZooKeeper's readonlymode.enabled)"],
  reconfigEnabled: ["true|false", "allow the reconfig operation: membership changes without restarts, by the super user (ZooKeeper's reconfigEnabled)"],
  enforceQuota: ["true|false", "refuse writes past a quota's hard limit with QUOTAEXCEEDED"],
  spaceQuotaBytes: ["BYTES", "the space quota: past this estimate of the tree's memory, writes that grow it are QUOTAEXCEEDED; 0 half the heap limit"],
  containerCheckIntervalMs: ["MS", "how often the leader deletes empty containers and expired TTL nodes"],
  containerMaxPerMinute: ["N", "at most this many of those deletions a minute"],
  logLevel: ["LEVEL", "fatal, error, warn, info, debug, trace or silent"],
  servers: ["ID=HOST:CLIENT:QUORUM:ELECTION[:ROLE[:ZK_PORT]],...", "every member, this one included (in the file, a JSON list); none = standalone"],
  initLimitTicks: ["N", "ticks a learner may take to connect to and sync with the leader"],
  syncLimitTicks: ["N", "ticks a learner may lag or fall silent before it is dropped"],
  commitLogCount: ["N", "committed txns the leader keeps in memory to DIFF a returning learner"],
  proposalBytesInFlightMax: [
    "BYTES",
    "the leader's flow-control window: bytes proposed and not committed, and sent to a follower and not acked; the leader also proposes nothing while an up-to-date follower that is acking is two windows behind, and a learner forwards at most two windows of writes not yet answered. Small writes (\u2264 20 KiB) may pass these bounds by 1 MiB, so one session's small write never waits for room behind others' large ones",
  ],
  globalOutstandingLimit: [
    "N",
    "ZooKeeper's globalOutstandingLimit: requests read from clients and not answered, over every connection; at it, connections holding their share stop being read until answered",
  ],
  globalOutstandingBytesMax: ["BYTES", "the same bound in bytes"],
  connectionOutstandingMax: ["N", "requests one connection may have read and not answered before it stops being read"],
  connectionOutstandingBytesMax: ["BYTES", "the same bound in bytes"],
  connectionUnsentBytesMax: ["BYTES", "answers and watch events one connection may leave unread before the server ends it (its session stays)"],
  globalUnsentBytesMax: [
    "BYTES",
    "answers and watch events all client connections together may hold encoded and not yet written out; at it a read waits for its turn before it runs (nothing is refused), so many big answers at once cost at most this plus one answer",
  ],
  maxClientCnxns: [
    "N",
    "ZooKeeper's maxClientCnxns: connections one client address may hold open over every client port; past it a new one is closed at once; 0 no limit",
  ],
  connectionThrottleTokens: [
    "N",
    "ZooKeeper's connection_throttle_tokens: a bucket of this many tokens, one taken by each connect request; an empty bucket refuses the connect; 0 off",
  ],
  connectionThrottleFillTimeMs: ["MS", "ZooKeeper's connection_throttle_fill_time: how often the bucket gains connectionThrottleFillCount tokens"],
  connectionThrottleFillCount: ["N", "ZooKeeper's connection_throttle_fill_count: tokens added every connectionThrottleFillTimeMs"],
  throttledOpWaitTimeMs: ["MS", "ZooKeeper's throttled_op_wait_time: a write that waited at the leader longer than this is answered THROTTLEDOP; 0 off"],
  superDigest: ["DIGEST", "the super user, super:<base64 SHA-1 of super:password>; the same on every server"],
  metricsPort: ["PORT", "the Prometheus /metrics port, -1 none, 0 any free; in a cluster, this server's entry's"],
  metricsHost: ["HOST", "the address the metrics port binds"],
  adminPort: ["PORT", "the admin HTTP port (ZooKeeper's AdminServer commands, /healthz, /readyz), -1 none, 0 any free; in a cluster, this server's entry's"],
  adminHost: ["HOST", "the address the admin port binds"],
  secureZkClientPort: ["PORT", "the ZooKeeper-protocol port over TLS (ZooKeeper's secureClientPort), -1 none, 0 any free; in a cluster, this server's entry's"],
  clientPortTls: ["true|false", "the gRPC client port speaks TLS (tlsCertFile, tlsKeyFile)"],
  tlsCertFile: ["FILE", "this server's certificate (chain) for its client ports, PEM"],
  tlsKeyFile: ["FILE", "its private key, PEM"],
  tlsCaFile: ["FILE", "the CAs client certificates must chain to, PEM"],
  tlsClientAuth: ["need|want|none", "whether TLS clients must present a certificate (ZooKeeper's ssl.clientAuth)"],
  sslQuorum: ["true|false", "election and quorum links use mutual TLS (ZooKeeper's sslQuorum)"],
  quorumTlsCertFile: ["FILE", "the quorum links' certificate, PEM (default: tlsCertFile)"],
  quorumTlsKeyFile: ["FILE", "the quorum links' key, PEM (default: tlsKeyFile)"],
  quorumTlsCaFile: ["FILE", "the CAs peer certificates must chain to, PEM (default: tlsCaFile)"],
  sslQuorumHostnameVerification: ["true|false", "a peer's certificate must name the host its servers entry gives"],
  tlsReloadIntervalMs: ["MS", "how often certificate, key and CA files are read again (a change applies to new connections)"],
  x509SuperUser: ["DN", "a client certificate subject that passes every ACL check (ZooKeeper's X509AuthenticationProvider.superUser)"],
  jaasConfigFile: ["FILE", "ZooKeeper's JAAS file (java.security.auth.login.config): SASL on both client ports, DIGEST-MD5 users or a Kerberos keytab"],
  saslServerSection: ["NAME", "the JAAS file's section this server logs in with (ZooKeeper's zookeeper.sasl.serverconfig)"],
  superUser: ["IDS", "SASL ids (comma-separated) that pass every ACL check (ZooKeeper's zookeeper.superUser)"],
  saslSuperPassword: ["PASSWORD", "DIGEST-MD5 user super's password instead of the JAAS file's (ZooKeeper's SASLAuthenticationProvider.superPassword)"],
  kerberosRemoveHostFromPrincipal: ["true|false", "sasl ids drop a principal's /host (ZooKeeper's kerberos.removeHostFromPrincipal)"],
  kerberosRemoveRealmFromPrincipal: ["true|false", "sasl ids drop a principal's @REALM (ZooKeeper's kerberos.removeRealmFromPrincipal)"],
  allowSaslFailedClients: ["true|false", "a client whose SASL exchange failed stays connected, unauthenticated (ZooKeeper's allowSaslFailedClients)"],
  sessionRequireClientSaslAuth: ["true|false", "clients must complete SASL before any request (ZooKeeper's sessionRequireClientSASLAuth)"],
  enforceAuthEnabled: ["true|false", "clients must authenticate with one of enforceAuthSchemes before any request (ZooKeeper's enforce.auth.enabled)"],
  enforceAuthSchemes: ["SCHEMES", "comma-separated: ip, digest, x509, sasl (ZooKeeper's enforce.auth.schemes)"],
  auditEnable: ["true|false", "write the audit log: clients' writes, ephemerals of closed sessions, start and stop (ZooKeeper's audit.enable)"],
  auditLogFile: ["FILE", "the audit log's file, {id} replaced by serverId; none: zookeeper_audit.log in the data dir"],
  adminAuth: ["true|false", "the web console (/console/ on the admin port) asks for the super user's password; on whenever superDigest is set"],
  adminRateLimitIntervalMs: ["MS", "the admin port's snapshot (backup) and restore commands each run at most once in this long"],
};

/**
 * Where each command's documentation is, as paths in the repository and in the installed package
 * (both ship docs/); `npm run docs` builds them into a site.
 */
export const DOCS: Readonly<Record<string, string>> = {
  overview: "README.md, docs/getting-started.md",
  server: "docs/operations/configuration.md, docs/operations/cluster.md",
  start: "docs/getting-started.md, docs/operations/configuration.md",
  cluster: "docs/operations/cluster.md#running-a-cluster-locally",
  health: "docs/operations/production.md",
  shell: "docs/shell.md",
  backup: "docs/operations/backup-restore.md",
  restore: "docs/operations/backup-restore.md",
  import: "docs/operations/migrate-from-zookeeper.md",
  export: "docs/operations/migrate-from-zookeeper.md#rolling-back-to-zookeeper",
  data: "docs/operations/backup-restore.md#inspecting-a-data-dir",
};

function docsLine(command: string): string {
  return `\ndocumentation: ${DOCS[command]}`;
}

const COMMANDS: readonly (readonly [string, string])[] = [
  ["start", "a standalone server on 127.0.0.1:2181, data under ./data (corral server, with a banner)"],
  ["server", "one server, standalone or a member of a cluster"],
  ["cluster", "a cluster on this machine, one server process per member"],
  ["health", "exit 0 if a server answers a session, else 1 (container health checks)"],
  ["shell", "the command-line client, ZooKeeper's zkCli"],
  ["backup", "a backup of a live server's tree, over its admin port"],
  ["restore", "a member's data dir from a backup"],
  ["import", "a ZooKeeper data dir into a corral data dir"],
  ["export", "a corral data dir into a ZooKeeper snapshot"],
  ["data", "a data dir's tree (data dump) or txn log (data log), for people"],
  ["help", "this usage; corral help COMMAND (or COMMAND --help) shows a command's"],
];

/** Two columns: the flag with its value, then what it does. */
function table(rows: readonly (readonly [string, string])[]): string {
  const width = Math.min(36, Math.max(...rows.map(([left]) => left.length)));
  return rows.map(([left, right]) => (left.length > width ? `  ${left}\n  ${"".padEnd(width)}  ${right}` : `  ${left.padEnd(width)}  ${right}`)).join("\n");
}

/** One row per field: its flag and value, its meaning and, when it has one, its default. */
function fieldRows(fields: readonly (keyof ServerConfig)[], defaults: Partial<ServerConfig>): [string, string][] {
  return fields.map((field) => {
    const [value, meaning] = FIELD_HELP[field];
    const fallback = defaults[field];
    // The one list field is `servers`: a default list would be shown as --servers takes it.
    const text = Array.isArray(fallback) ? formatServers(fallback) : String(fallback);
    const shown = fallback === undefined || fallback === "" || (Array.isArray(fallback) && fallback.length === 0) ? "" : ` (default ${text})`;
    return [`--${flagName(field)} ${value}`, meaning + shown];
  });
}

const HELP_ROW = ["-h, --help", "print this usage"] as const;
const SERVER_FIELDS = Object.keys(FIELDS) as (keyof ServerConfig)[];

function serverUsage(command: "server" | "start"): string {
  return [
    `usage: corral ${command} [--config FILE] [--FIELD VALUE ...]`,
    "",
    command === "server"
      ? "Runs one server: standalone, or the member --server-id of the cluster --servers lists."
      : "Runs one server as corral server does and prints where it serves; without options a standalone\nserver on 127.0.0.1:2181 with data under ./data.",
    "Every setting is a field of the JSON file given with --config (--tick-ms is tickMs there), an",
    `environment variable (${envName("tickMs")}) and a flag; flags beat the environment, which beats the`,
    "file, which beats the defaults. An invalid configuration exits 2, naming the field.",
    "",
    "options:",
    table([["--config FILE", "a JSON object holding any of the fields below"], ...fieldRows(SERVER_FIELDS, defaultConfig()), HELP_ROW]),
    docsLine(command),
  ].join("\n");
}

function clusterUsage(): string {
  return [
    "usage: corral cluster [LAUNCHER OPTIONS] [--config FILE] [--FIELD VALUE ...]",
    "",
    "Runs a cluster on 127.0.0.1, one `corral server` process per member (ids from 1, voters first).",
    "It writes DIR/cluster.json — the membership it lays out plus the settings every member shares —",
    "and starts `corral server --config DIR/cluster.json --server-id ID` for each member, then prints",
    "the connect strings once all serve. Ctrl-C stops them all (exit 0 if all stopped cleanly). A data",
    "dir whose cluster.json describes another membership is refused.",
    "",
    "With --reconfig-enabled true the cluster grows and shrinks live (ZooKeeper's dynamic",
    "reconfiguration), by commands typed on the launcher's stdin, one a line:",
    commandHelp().trimEnd(),
    "add gives the next id the next ports of each range; reconfig runs as the super user, whose",
    "password the launcher makes in DIR/super-auth (mode 0600) unless --super-digest is yours",
    "(then --super-auth-file). cluster.json follows the membership in force: run again with the same",
    "flags, the launcher comes back with the members add and remove left (DIR/launch.json records the",
    "flags' membership they came from). The end of stdin ends the commands, not the cluster.",
    "",
    "launcher options:",
    table([...Object.entries(CLUSTER_FLAGS).map(([flag, [value, meaning]]) => [`--${flag} ${value}`, meaning] as const), HELP_ROW]),
    "",
    "every member's settings: corral server's, except the ones the launcher sets for each member",
    `(${MEMBER_FIELDS.join(", ")}).`,
    "Later winning: the defaults below, a base config file (--config), CORRAL_<FIELD> variables in",
    "the launcher's environment, the flags. They are written to cluster.json, so a member restarted",
    "by hand with that file gets them too.",
    table([
      ["--config FILE", "a base config: the JSON corral server --config reads, without the fields above"],
      ...fieldRows(SHARED_FIELDS, { ...defaultConfig(), ...launcherDefaults() }),
    ]),
    docsLine("cluster"),
  ].join("\n");
}

function healthUsage(): string {
  return [
    `usage: corral health ${Object.entries(HEALTH_FLAGS)
      .map(([flag, [value]]) => `[--${flag} ${value}]`)
      .join(" ")}`,
    "",
    'Exits 0 when the server accepts a session and answers exists("/"), 1 otherwise (never 2, which',
    "Docker reserves). Without --connect it checks the client port that the CORRAL_* environment (and",
    "--config) describe, on 127.0.0.1 when that port is bound to 0.0.0.0.",
    "",
    "options:",
    table([...Object.entries(HEALTH_FLAGS).map(([flag, [value, meaning]]) => [`--${flag} ${value}`, meaning] as const), HELP_ROW]),
    docsLine("health"),
  ].join("\n");
}

/** What each offline tool does, after its synopsis; its options come from its flag table. */
const TOOL_HELP: Readonly<Record<string, readonly string[]>> = {
  backup: [
    "Takes a backup of a running server's tree through its admin port (ZooKeeper 3.9's",
    "snapshot?streaming=true): one file, exact at one zxid, with a SHA-256 over all of it, checked",
    "before it is kept. The server asks for every permission on / (digest or ip), and gives one",
    "snapshot per adminRateLimitIntervalMs.",
  ],
  restore: [
    "Lays down a member's data dir from a backup, checking all of it first: a damaged or truncated",
    "file is refused and nothing is written. Restore every member of a new cluster from the same",
    "file, then start them (docs/operations/backup-restore.md). The new cluster keeps its own",
    "membership, not the one the backup's cluster had.",
  ],
  import: [
    "Reads a ZooKeeper 3.4–3.9 data dir as ZooKeeper recovers it (the newest whole snapshot, plain,",
    ".gz or .snappy, then the txn logs after it, checksummed) and lays down a corral member's data",
    "dir holding the same tree: data, ACLs, every stat, sequential counters, sessions, and zxids",
    "going on from ZooKeeper's. A damaged file stops it; nothing is written then.",
  ],
  export: [
    "Writes a corral data dir's tree as a ZooKeeper 3.8 snapshot, DIR/version-2/snapshot.<zxid>, that",
    "ZooKeeper started with dataDir=DIR loads: the way back. Safe while the member runs.",
  ],
  "data dump": [
    "Prints the tree a member's data dir holds, as its server would recover it, with every stat and",
    "ACL (ZooKeeper's zkSnapShotToolkit). Read-only, safe while the member runs.",
  ],
  "data log": ["Prints every txn in a member's log, one a line (ZooKeeper's zkTxnLogToolkit). Read-only, safe", "while the member runs."],
};

function toolUsage(name: string): string {
  const tool = TOOL_COMMANDS[name]!;
  const rows = Object.entries(tool.flags).map(([flag, [value, meaning]]) => [`--${flag}${value === "" ? "" : ` ${value}`}`, meaning] as const);
  return [`usage: corral ${name} [OPTIONS]`, "", ...TOOL_HELP[name]!, "", "options:", table([...rows, HELP_ROW]), docsLine(name.split(" ")[0]!)].join("\n");
}

function dataUsage(): string {
  return [
    "usage: corral data dump|log [OPTIONS]",
    "",
    "A member's data dir for people: `corral data dump` prints its tree, `corral data log` its txn",
    "log. Both read only, and are safe while the member's server runs.",
    "",
    toolUsage("data dump"),
    "",
    toolUsage("data log"),
  ].join("\n");
}

function overview(): string {
  return ["usage: corral COMMAND [OPTIONS]", "", "commands:", table(COMMANDS.map(([name, meaning]) => [name, meaning])), docsLine("overview")].join("\n");
}

/** The usage of `command` (undefined: the overview), or undefined when there is no such command. */
export function usage(command?: string): string | undefined {
  switch (command) {
    case undefined:
    case "help":
      return overview();
    case "server":
    case "start":
      return serverUsage(command);
    case "cluster":
      return clusterUsage();
    case "health":
      return healthUsage();
    case "shell":
      return helpText() + docsLine("shell");
    case "data":
      return dataUsage();
    case "backup":
    case "restore":
    case "import":
    case "export":
    case "data dump":
    case "data log":
      return toolUsage(command);
    default:
      return undefined;
  }
}
