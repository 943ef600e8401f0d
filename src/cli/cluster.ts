/**
 * `corral cluster`: a whole cluster on this machine, one `corral server` child process per member.
 *
 * It writes one cluster config (<data-dir>/cluster.json, the same format every server reads): the
 * membership it lays out, plus the settings every member shares, taken from a base config file
 * (--config), CORRAL_* variables and flags as `corral server` takes them. It then
 * starts `corral server --config <that file> --server-id <id>` for each member (data under
 * <data-dir>/<id>), prefixes each child's output lines with its id, waits until every server
 * serves sessions, then prints the members and the connect string. SIGINT/SIGTERM stop every
 * child (SIGTERM, then SIGKILL after a bounded grace) and exit 0 when all stopped cleanly. A child
 * that dies on its own is reported and not restarted. Children also stop by themselves if the
 * launcher disappears (they watch their IPC channel to it).
 *
 * With reconfigEnabled (--reconfig-enabled true) the cluster grows and shrinks live: `add` and
 * `remove ID` typed on the launcher's stdin run ZooKeeper's dynamic reconfiguration as the super
 * user (src/cli/cluster-reconfig.ts, whose password the launcher makes: src/cli/cluster-super.ts),
 * and cluster.json follows the membership in force, so a restart comes back with it
 * (src/cli/cluster-membership.ts).
 *
 * Given certificate files (--tls-cert-file, --tls-key-file, --tls-ca-file) every port of the
 * cluster is TLS: the gRPC client ports (clientPortTls), the election and quorum links (sslQuorum)
 * and the ZooKeeper-protocol ports, which become secure ones (secureZkClientPort); a plain
 * ZooKeeper port is opened beside them only when --zk-base-port asks for it.
 */
import type { MemberRole } from "../common/membership.js";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { ANSWERED_FOUR_LETTER_WORDS } from "../server/zk-wire/four-letter-words.js";
import { formatHostPort, validateServers, type ServerEntry } from "../server/cluster-servers.js";
import { ConfigError } from "../server/config-error.js";
import { FIELDS, defaultConfig, fieldFromFlag, readConfigSources, resolveConfig, type ServerConfig, type TlsClientAuth } from "../server/config.js";
import type { ClientTlsOptions } from "../client/types.js";
import { MemberProcesses, describeExit, stoppedCleanly, waitServing, type ClusterIo, type Member } from "./cluster-children.js";
import { ClusterCommandError, commandHelp, readCommands } from "./cluster-commands.js";
import { CLUSTER_CONFIG_FILE, ensureLaunchRecord, membershipKey, readLaunchRecord, writeAtomically } from "./cluster-membership.js";
import { ClusterReconfigurer } from "./cluster-reconfig.js";
import { setUpSuperUser, type SuperCredential } from "./cluster-super.js";
import { connectLines, connectStrings, display, memberTable, rolesAreLive } from "./cluster-table.js";
import { readClientTls } from "./tls-options.js";

export { CLUSTER_CONFIG_FILE } from "./cluster-membership.js";
export type { ClusterIo } from "./cluster-children.js";

export interface ClusterOptions {
  voters: number;
  observers: number;
  /** Client ports are basePort, basePort+1, … in id order. */
  basePort: number;
  quorumBasePort: number;
  electionBasePort: number;
  /** ZooKeeper-protocol client ports are zkBasePort, zkBasePort+1, …; 0 = none. */
  zkBasePort: number;
  /** The same over TLS (secureZkClientPort) at secureZkBasePort, …; 0 = none. */
  secureZkBasePort: number;
  /** TLS on every port, with these PEM files (absolute paths); undefined = plain text. */
  tls: ClusterTls | undefined;
  /** Prometheus /metrics ports are metricsBasePort, metricsBasePort+1, …; 0 = none. */
  metricsBasePort: number;
  /** Admin HTTP ports (/commands, /healthz, /readyz) are adminBasePort, adminBasePort+1, …; 0 = none. */
  adminBasePort: number;
  host: string;
  /** Absolute; the cluster config and one data dir per server (<dataDir>/<id>) live here. */
  dataDir: string;
  /**
   * What every member's config holds besides the membership: the base config file, then CORRAL_*
   * variables, then flags, each overriding the one before (over launcherDefaults()).
   */
  shared: Partial<ServerConfig>;
  /** After SIGTERM, how long a child may take to stop before it gets SIGKILL. */
  stopGraceMs: number;
  /** How long the servers may take to serve sessions before the launch is abandoned. */
  startTimeoutMs: number;
  /** Every member's log lines on the terminal too, not just in DIR/<id>/server.log. */
  verbose: boolean;
  /** The super user's "super:<password>" for a superDigest the user gave (absolute path); undefined: none. */
  superAuthFile: string | undefined;
}

/** ZooKeeper's customary ports: 2181 for clients, 2888 quorum, 3888 election — same offsets from any base. */
const QUORUM_OFFSET = 2888 - 2181;
const ELECTION_OFFSET = 3888 - 2181;
/** The ZooKeeper-protocol ports sit 100 above the gRPC ones: 2281, 2282, … by default. */
const ZK_OFFSET = 100;
/** The metrics and admin ports sit where ZooKeeper's docs put them for the default base: 7000 and 8080. */
const METRICS_OFFSET = 7000 - 2181;
const ADMIN_OFFSET = 8080 - 2181;

/** The launcher's own flags: [value, what it does] (the usage is printed from this table). */
export const CLUSTER_FLAGS: Readonly<Record<string, readonly [string, string]>> = {
  voters: ["N", "voting members, ids 1..N (default 3)"],
  observers: ["N", "observers, the ids after the voters (default 0)"],
  "base-port": ["P", "server i's client port is P + i - 1 (default 2181)"],
  "quorum-base-port": ["P", "server i's quorum port is P + i - 1 (default base + 707: 2888)"],
  "election-base-port": ["P", "server i's election port is P + i - 1 (default base + 1707: 3888)"],
  "zk-base-port": ["P", "server i's ZooKeeper-protocol port is P + i - 1 (default base + 100: 2281, none with TLS; 0 = none)"],
  "secure-zk-base-port": ["P", "server i's ZooKeeper-protocol port over TLS is P + i - 1 (default with TLS: base + 100; 0 = none)"],
  "tls-cert-file": ["FILE", "TLS on every port with this certificate (PEM); needs --tls-key-file and --tls-ca-file"],
  "tls-key-file": ["FILE", "the certificate's private key (PEM)"],
  "tls-ca-file": ["FILE", "the CAs every peer and client certificate must chain to (PEM)"],
  "tls-client-auth": ["need|want|none", "whether clients must present a certificate (default need)"],
  "metrics-base-port": ["P", "server i's Prometheus /metrics port is P + i - 1 (default base + 4819: 7000; 0 = none)"],
  "admin-base-port": ["P", "server i's admin HTTP port (/commands, /healthz, /readyz) is P + i - 1 (default base + 5899: 8080; 0 = none)"],
  "data-dir": ["DIR", "cluster.json and each server's data, DIR/<id> (default ./data)"],
  "stop-grace-ms": ["MS", "after Ctrl-C, how long a server may take to stop before SIGKILL (default 10000)"],
  "start-timeout-ms": ["MS", "how long the servers may take to serve sessions (default 60000)"],
  verbose: ["", "every member's log lines here too (they always go to DIR/<id>/server.log); without it, one line per role change, warning or error"],
  "super-auth-file": [
    "FILE",
    "with --reconfig-enabled true and your own --super-digest: a file (mode 0600) holding super:<password>, for add and remove (default: a password made in DIR/super-auth)",
  ],
};

/**
 * The fields the launcher sets for each member itself (its membership): they cannot come from a
 * base config, the environment or a flag.
 */
export const MEMBER_FIELDS: readonly (keyof ServerConfig)[] = [
  "serverId",
  "dataDir",
  "clientHost",
  "clientPort",
  "zkClientPort",
  "secureZkClientPort",
  "metricsPort",
  "adminPort",
  "servers",
];

/** The fields a base config (and CORRAL_*, and a flag) may set for every member. */
export const SHARED_FIELDS = (Object.keys(FIELDS) as (keyof ServerConfig)[]).filter((field) => !MEMBER_FIELDS.includes(field));

/** Where the launcher's shared settings start, before the base config: the server's defaults, but every four-letter word on. */
export function launcherDefaults(): Partial<ServerConfig> {
  const defaults = defaultConfig();
  return {
    tickMs: defaults.tickMs,
    initLimitTicks: defaults.initLimitTicks,
    syncLimitTicks: defaults.syncLimitTicks,
    // A local development cluster answers every four-letter word corral has (ZooKeeper's default is srvr alone).
    fourLetterWordWhitelist: ANSWERED_FOUR_LETTER_WORDS.join(","),
  };
}

/** Where the members' shared settings come from, besides the flags. */
export interface ClusterSources {
  /** A base config: the JSON `corral server --config` reads, without the member fields. */
  file?: string;
  /** The launcher's environment: its CORRAL_* variables reach every member. */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

export interface ClusterTls {
  certFile: string;
  keyFile: string;
  caFile: string;
  clientAuth: TlsClientAuth;
}

const TLS_CLIENT_AUTH: readonly string[] = ["need", "want", "none"] satisfies TlsClientAuth[];

/** The TLS flags, all three files or none; paths made absolute (the servers read them from the cluster file). */
function parseClusterTls(flags: Record<string, string>, cwd: string): ClusterTls | undefined {
  const files = (["tls-cert-file", "tls-key-file", "tls-ca-file"] as const).map((name) => flags[name]);
  if (files.every((file) => file === undefined)) {
    for (const name of ["tls-client-auth", "secure-zk-base-port"]) {
      if (flags[name] !== undefined) throw new ConfigError(name, "needs --tls-cert-file, --tls-key-file and --tls-ca-file");
    }
    return undefined;
  }
  const missing = (["tls-cert-file", "tls-key-file", "tls-ca-file"] as const).find((name) => flags[name] === undefined || flags[name].trim() === "");
  if (missing !== undefined) throw new ConfigError(missing, "a TLS cluster needs --tls-cert-file, --tls-key-file and --tls-ca-file");
  const clientAuth = flags["tls-client-auth"] ?? "need";
  if (!TLS_CLIENT_AUTH.includes(clientAuth)) throw new ConfigError("tls-client-auth", `expected need, want or none, got ${JSON.stringify(clientAuth)}`);
  const [certFile, keyFile, caFile] = files.map((file) => (isAbsolute(file!) ? file! : resolve(cwd, file!))) as [string, string, string];
  return { certFile, keyFile, caFile, clientAuth: clientAuth as TlsClientAuth };
}

function intFlag(flags: Record<string, string>, name: string, fallback: number, min: number, max: number): number {
  const raw = flags[name];
  if (raw === undefined) return fallback;
  const value = raw.trim() === "" ? NaN : Number(raw);
  if (!Number.isSafeInteger(value)) throw new ConfigError(name, `expected an integer, got ${JSON.stringify(raw)}`);
  if (value < min || value > max) throw new ConfigError(name, `must be within [${min}, ${max}], got ${value}`);
  return value;
}

function boolFlag(flags: Record<string, string>, name: string): boolean {
  const raw = flags[name];
  if (raw === undefined || raw === "false") return false;
  if (raw === "true") return true;
  throw new ConfigError(name, `expected true or false, got ${JSON.stringify(raw)}`);
}

/** --super-auth-file, made absolute; it only serves reconfiguration. */
function superAuthFile(flags: Record<string, string>, shared: Partial<ServerConfig>, cwd: string): string | undefined {
  const file = flags["super-auth-file"];
  if (file === undefined) return undefined;
  if (file.trim() === "") throw new ConfigError("super-auth-file", "must not be empty");
  if (shared.reconfigEnabled !== true) throw new ConfigError("super-auth-file", "is for add and remove, which need --reconfig-enabled true");
  return isAbsolute(file) ? file : resolve(cwd, file);
}

/**
 * `corral cluster` flags, base config and environment → options; a bad one is a ConfigError naming
 * the flag or field. Every member's config is validated here, before anything is written or started.
 */
export function parseClusterOptions(flags: Record<string, string>, sources: ClusterSources = {}): ClusterOptions {
  const memberFlags: Record<string, string> = {};
  for (const [name, value] of Object.entries(flags)) {
    if (Object.hasOwn(CLUSTER_FLAGS, name)) continue;
    if (fieldFromFlag(name) === undefined) throw new ConfigError(name, "unknown option (corral cluster --help lists them)");
    memberFlags[name] = value;
  }
  const { values: shared, from } = readConfigSources({
    ...(sources.file === undefined ? {} : { file: sources.file }),
    env: sources.env ?? {},
    flags: memberFlags,
  });
  for (const field of MEMBER_FIELDS) {
    if (from[field] !== undefined) {
      throw new ConfigError(
        field,
        `set by ${from[field]}, but corral cluster sets every member's ${MEMBER_FIELDS.join(", ")} itself (see --base-port, --zk-base-port, --data-dir)`,
      );
    }
  }
  const voters = intFlag(flags, "voters", 3, 1, 254);
  const observers = intFlag(flags, "observers", 0, 0, 253);
  const size = voters + observers;
  if (size > 254) throw new ConfigError("observers", `voters + observers must be at most 254, got ${size}`);
  const basePort = intFlag(flags, "base-port", 2181, 1, 65535);
  const quorumBasePort = intFlag(flags, "quorum-base-port", basePort + QUORUM_OFFSET, 1, 65535);
  const electionBasePort = intFlag(flags, "election-base-port", basePort + ELECTION_OFFSET, 1, 65535);
  const tls = parseClusterTls(flags, sources.cwd ?? process.cwd());
  // With TLS the ZooKeeper-protocol ports are the secure ones; a plain one only when asked for.
  const zkBasePort = intFlag(flags, "zk-base-port", tls === undefined ? basePort + ZK_OFFSET : 0, 0, 65535);
  const secureZkBasePort = intFlag(flags, "secure-zk-base-port", tls === undefined ? 0 : basePort + ZK_OFFSET, 0, 65535);
  // Derived defaults past 65535 (a high --base-port) mean none rather than an error.
  const derived = (offset: number) => (basePort + offset + size - 1 <= 65535 ? basePort + offset : 0);
  const metricsBasePort = intFlag(flags, "metrics-base-port", derived(METRICS_OFFSET), 0, 65535);
  const adminBasePort = intFlag(flags, "admin-base-port", derived(ADMIN_OFFSET), 0, 65535);
  const optional: [string, number][] = [
    ["zk-base-port", zkBasePort],
    ["secure-zk-base-port", secureZkBasePort],
    ["metrics-base-port", metricsBasePort],
    ["admin-base-port", adminBasePort],
  ];
  const ranges: [string, number][] = [
    ["base-port", basePort],
    ["quorum-base-port", quorumBasePort],
    ["election-base-port", electionBasePort],
    ...optional.filter(([, first]) => first !== 0),
  ];
  for (const [name, first] of ranges) {
    const last = first + size - 1;
    if (last > 65535) throw new ConfigError(name, `ports ${first}..${last} for ${size} servers go beyond 65535`);
  }
  for (let i = 0; i < ranges.length; i++) {
    for (let j = i + 1; j < ranges.length; j++) {
      const [a, first] = ranges[i]!;
      const [b, other] = ranges[j]!;
      if (first < other + size && other < first + size) {
        throw new ConfigError(b, `ports ${other}..${other + size - 1} overlap the --${a} range ${first}..${first + size - 1}`);
      }
    }
  }
  const dataDir = flags["data-dir"] ?? "./data";
  if (dataDir.trim() === "") throw new ConfigError("data-dir", "must not be empty");
  const options: ClusterOptions = {
    voters,
    observers,
    basePort,
    quorumBasePort,
    electionBasePort,
    zkBasePort,
    secureZkBasePort,
    tls,
    metricsBasePort,
    adminBasePort,
    host: "127.0.0.1",
    dataDir: isAbsolute(dataDir) ? dataDir : resolve(sources.cwd ?? process.cwd(), dataDir),
    shared,
    stopGraceMs: intFlag(flags, "stop-grace-ms", 10_000, 0, 600_000),
    startTimeoutMs: intFlag(flags, "start-timeout-ms", 60_000, 1, 3_600_000),
    verbose: boolFlag(flags, "verbose"),
    superAuthFile: superAuthFile(flags, shared, sources.cwd ?? process.cwd()),
  };
  // Each member loads the file as itself: validate exactly that, with the server's own rules.
  const json = clusterConfigJson(options) as Partial<ServerConfig>;
  for (const entry of json.servers!) resolveConfig({ ...json, serverId: entry.id });
  return options;
}

/** Server `id`'s entry in the launcher's port layout: every port is its range's base + id - 1. */
export function memberEntry(options: ClusterOptions, id: number, role: MemberRole): ServerEntry {
  const i = id - 1;
  return {
    id,
    host: options.host,
    clientPort: options.basePort + i,
    quorumPort: options.quorumBasePort + i,
    electionPort: options.electionBasePort + i,
    role,
    ...(options.zkBasePort === 0 ? {} : { zkClientPort: options.zkBasePort + i }),
    ...(options.secureZkBasePort === 0 ? {} : { secureZkClientPort: options.secureZkBasePort + i }),
    ...(options.metricsBasePort === 0 ? {} : { metricsPort: options.metricsBasePort + i }),
    ...(options.adminBasePort === 0 ? {} : { adminPort: options.adminBasePort + i }),
  };
}

/** The members the flags lay out: ids 1..voters are participants, the next `observers` ids observers. */
export function clusterServers(options: ClusterOptions): ServerEntry[] {
  const servers: ServerEntry[] = [];
  for (let id = 1; id <= options.voters + options.observers; id++) servers.push(memberEntry(options, id, id <= options.voters ? "participant" : "observer"));
  validateServers(servers);
  return servers;
}

/** The JSON every member reads (with its own --server-id); "{id}" gives each its own data dir. */
export function clusterConfigJson(options: ClusterOptions, servers: readonly ServerEntry[] = clusterServers(options)): Record<string, unknown> {
  const tls = options.tls;
  return {
    dataDir: join(options.dataDir, "{id}"),
    ...launcherDefaults(),
    ...options.shared,
    // The launcher's TLS flags win over shared settings, as every flag does.
    ...(tls === undefined
      ? {}
      : { clientPortTls: true, sslQuorum: true, tlsCertFile: tls.certFile, tlsKeyFile: tls.keyFile, tlsCaFile: tls.caFile, tlsClientAuth: tls.clientAuth }),
    servers,
  };
}

export interface WrittenClusterConfig {
  path: string;
  /** The data dir held this cluster already. */
  reused: boolean;
  /** The members in force: the flags' layout, or what live changes made of it. */
  servers: ServerEntry[];
  /** The members differ from the flags' layout: they were changed live (add, remove). */
  changedLive: boolean;
}

/**
 * Writes <dataDir>/cluster.json (atomically). A data dir that already holds a different cluster is
 * refused: reusing its servers' data under another membership is how a quorum loses writes. Only
 * the membership counts: other settings (the base config, CORRAL_*) may change between runs. One
 * exception: a membership changed live from the one these flags lay out (DIR/launch.json says so)
 * is the cluster's own, and is kept.
 */
export function writeClusterConfig(options: ClusterOptions): WrittenClusterConfig {
  mkdirSync(options.dataDir, { recursive: true });
  const path = join(options.dataDir, CLUSTER_CONFIG_FILE);
  const layout = clusterServers(options);
  let servers = layout;
  let reused = false;
  if (existsSync(path)) {
    let previous: ServerEntry[];
    try {
      previous = (JSON.parse(readFileSync(path, "utf8")) as { servers: ServerEntry[] }).servers;
      membershipKey(previous);
    } catch (error) {
      throw new ConfigError("data-dir", `${path} exists but is not a cluster config (${(error as Error).message}); remove it or pick another --data-dir`);
    }
    if (membershipKey(previous) !== membershipKey(layout)) servers = changedLive(options, path, previous, layout);
    reused = true;
  }
  writeAtomically(path, JSON.stringify(clusterConfigJson(options, servers), null, 2) + "\n");
  return { path, reused, servers, changedLive: servers !== layout };
}

/** The members a live change left, laid out with today's flags; refused unless the flags are the ones they were changed from. */
function changedLive(options: ClusterOptions, path: string, previous: readonly ServerEntry[], layout: readonly ServerEntry[]): ServerEntry[] {
  const launch = readLaunchRecord(options.dataDir);
  const relaid = previous.map((s) => memberEntry(options, s.id, s.role)).sort((a, b) => a.id - b.id);
  if (launch === undefined || launch.initialMembership !== membershipKey(layout) || membershipKey(relaid) !== membershipKey(previous)) {
    const live =
      launch === undefined
        ? ""
        : `; it was changed live (add, remove) from a cluster launched as ${launch.initialMembership}, so run it with the flags it was launched with`;
    throw new ConfigError(
      "data-dir",
      `${path} describes another cluster (${membershipKey(previous)})${live}; its servers' data belongs to that membership: use another --data-dir or remove it`,
    );
  }
  return relaid;
}

/** Records the members in force after a live change: cluster.json lists them, launch.json the flags' layout they came from. */
export function recordMembership(options: ClusterOptions, servers: readonly ServerEntry[]): void {
  ensureLaunchRecord(options.dataDir, clusterServers(options));
  writeAtomically(join(options.dataDir, CLUSTER_CONFIG_FILE), JSON.stringify(clusterConfigJson(options, servers), null, 2) + "\n");
}

/** A joiner's own config, DIR/joining-<id>.json: the members and itself, the cluster's shared settings. */
function writeJoinerConfig(options: ClusterOptions, servers: readonly ServerEntry[], id: number): string {
  const path = join(options.dataDir, `joining-${id}.json`);
  writeAtomically(path, JSON.stringify(clusterConfigJson(options, servers), null, 2) + "\n");
  return path;
}

/** Runs the cluster until SIGINT/SIGTERM (or until every server is gone); answers the exit code. */
export async function runCluster(
  launched: ClusterOptions,
  io: ClusterIo = { out: (t) => void process.stdout.write(t), err: (t) => void process.stderr.write(t) },
): Promise<number> {
  const reconfigEnabled = launched.shared.reconfigEnabled === true;
  // A cluster that may be reconfigured needs a super user, and the launcher its password.
  const superUser = reconfigEnabled ? setUpSuperUser(launched.dataDir, launched.shared.superDigest ?? "", launched.superAuthFile) : undefined;
  const options: ClusterOptions = superUser === undefined ? launched : { ...launched, shared: { ...launched.shared, superDigest: superUser.digest } };
  const written = writeClusterConfig(options);
  let servers: readonly ServerEntry[] = written.servers;
  const configPath = written.path;
  const strings = connectStrings(servers, options.host);
  // The launcher checks each server over TLS with the cluster's own certificate as its client's.
  const probeTls: ClientTlsOptions | undefined =
    options.tls === undefined ? undefined : readClientTls({ caFile: options.tls.caFile, certFile: options.tls.certFile, keyFile: options.tls.keyFile });
  const voters = servers.filter((s) => s.role === "participant").length;
  const observers = servers.length - voters;
  io.out(
    `corral cluster: ${voters} voter${voters === 1 ? "" : "s"}, ${observers} observer${observers === 1 ? "" : "s"} ` +
      `on ${options.host}; config ${display(configPath)}${written.reused ? " (reusing its data)" : ""}\n` +
      (written.changedLive ? `note: the members are the ones add and remove left (${servers.map((s) => s.id).join(", ")}), not --voters/--observers\n` : "") +
      `connect string: ${strings.grpc}${options.tls === undefined ? "" : " (TLS)"}\n` +
      (strings.zk === undefined ? "" : `ZooKeeper-protocol connect string: ${strings.zk}\n`) +
      (strings.secureZk === undefined ? "" : `ZooKeeper-protocol connect string over TLS: ${strings.secureZk}\n`) +
      `members' logs: ${display(join(options.dataDir, "<id>", "server.log"))}${options.verbose ? ", and here" : " (--verbose shows them here too)"}\n`,
  );
  if (voters % 2 === 0) {
    io.out(`note: ${voters} voters tolerate no more failures than ${voters - 1}; an odd number is usual\n`);
  }

  let forced = false;
  let finish!: (code: number) => void;
  const finished = new Promise<number>((resolve) => (finish = resolve));
  const processes = new MemberProcesses(options.dataDir, io, options.verbose, (member: Member) => {
    io.err(`corral cluster: server ${member.entry.id} (pid ${member.child.pid}) exited unexpectedly (${describeExit(member.exit!)}); it is not restarted\n`);
    if (processes.alive().length === 0) {
      io.err("corral cluster: every server has exited\n");
      processes.stopping = true;
      finish(1);
    }
  });
  const stopAll = async (reason: string): Promise<void> => {
    if (processes.stopping) {
      // A second Ctrl-C: do not wait for the grace period.
      forced = true;
      for (const m of processes.alive()) m.child.kill("SIGKILL");
      return;
    }
    processes.stopping = true;
    commands?.stop();
    const running = processes.alive();
    io.out(`corral cluster: ${reason}: stopping ${running.length} server${running.length === 1 ? "" : "s"}\n`);
    for (const m of running) m.child.kill("SIGTERM");
    const grace = setTimeout(() => {
      for (const m of processes.alive()) {
        io.err(`corral cluster: server ${m.entry.id} (pid ${m.child.pid}) did not stop within ${options.stopGraceMs} ms: SIGKILL\n`);
        forced = true;
        m.child.kill("SIGKILL");
      }
    }, options.stopGraceMs);
    await Promise.all(processes.members.map((m) => m.closed));
    clearTimeout(grace);
    const unclean = running.filter((m) => !stoppedCleanly(m.exit!));
    for (const m of unclean) io.err(`corral cluster: server ${m.entry.id} stopped uncleanly (${describeExit(m.exit!)})\n`);
    const crashed = processes.members.filter((m) => m.unexpected).length;
    io.out(
      `corral cluster: stopped${crashed > 0 ? ` (${crashed} server${crashed === 1 ? "" : "s"} had exited on ${crashed === 1 ? "its" : "their"} own)` : ""}\n`,
    );
    finish(forced || unclean.length > 0 || crashed > 0 ? 1 : 0);
  };
  let commands: ReturnType<typeof readCommands> | undefined;
  const onSignal = (signal: NodeJS.Signals) => void stopAll(signal);
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  try {
    for (const entry of servers) processes.spawn(entry, configPath);
    const deadline = Date.now() + options.startTimeoutMs;
    const failures = (await Promise.all(processes.members.map((m) => waitServing(m, deadline, () => processes.stopping, probeTls)))).filter(
      (f): f is string => f !== undefined,
    );
    if (!processes.stopping && failures.length > 0) {
      for (const failure of failures) io.err(`corral cluster: ${failure} (${options.startTimeoutMs} ms)\n`);
      await stopAll("start-up failed");
      await finished;
      return 1;
    }
    if (!processes.stopping) {
      const rows = processes.members.map((m) => ({ entry: m.entry, liveRole: m.liveRole, pid: m.child.pid }));
      io.out(
        `corral cluster: ${rows.length} server${rows.length === 1 ? "" : "s"} serving${rolesAreLive(rows) ? "" : " (roles as configured; log level info shows who leads)"}\n` +
          memberTable(rows, options.dataDir) +
          connectLines(strings, options.tls) +
          consoleLine(servers[0]!, superUser?.credential) +
          (reconfigEnabled ? reconfigLines(superUser!.credential, strings.grpc) : "") +
          "press Ctrl-C to stop\n",
      );
      if (reconfigEnabled && io.input !== undefined) {
        const reconfigurer = new ClusterReconfigurer({
          io,
          processes,
          dataDir: options.dataDir,
          host: options.host,
          tls: options.tls,
          probeTls,
          reconfigEnabled,
          credential: superUser?.credential,
          stopGraceMs: options.stopGraceMs,
          startTimeoutMs: options.startTimeoutMs,
          layout: (id, role) => memberEntry(options, id, role),
          servers: () => servers,
          record: (next) => {
            recordMembership(options, next);
            servers = next;
          },
          writeJoinerConfig: (members, id) => writeJoinerConfig(options, members, id),
          removeJoinerConfig: (path) => rmSync(path, { force: true }),
          stopping: () => processes.stopping,
        });
        commands = readCommands(
          io.input,
          (command) => reconfigurer.run(command),
          (error) => {
            if (processes.stopping) return;
            if (error instanceof ClusterCommandError) io.err(`corral cluster: ${error.command}: ${error.message}\n`);
            else io.err(`corral cluster: ${(error as Error).message}\n`);
          },
          () => {
            if (!processes.stopping) io.out("corral cluster: stdin ended: no more commands; the cluster keeps running (Ctrl-C or SIGTERM stops it)\n");
          },
        );
      }
    }
    return await finished;
  } finally {
    commands?.stop();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await processes.closeLogs();
  }
}

/** Where to open the web console: any member's admin port serves it, for the whole cluster. */
function consoleLine(entry: ServerEntry, credential: SuperCredential | undefined): string {
  if (entry.adminPort === undefined) return "";
  const login = credential === undefined ? "" : ` (it asks for the super user: the password after "super:" in ${display(credential.file)})`;
  return `web console: http://${formatHostPort(entry.host, entry.adminPort)}/console/${login}\n`;
}

/** How to grow and shrink the cluster, and to sign in as the super user by hand. */
function reconfigLines(credential: SuperCredential | undefined, connectString: string): string {
  const who =
    credential === undefined
      ? "the super user is yours (superDigest): add and remove need its password, --super-auth-file FILE\n"
      : `super user: ${display(credential.file)} holds its credential${credential.generated ? " (made now, mode 0600; keep it private)" : ""}; ` +
        `by hand: corral shell --connect ${connectString}, then addauth digest <that file's line>\n`;
  return `reconfiguration is on; type a command and Enter to change the membership live:\n${commandHelp()}${who}`;
}
