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
 * Given certificate files (--tls-cert-file, --tls-key-file, --tls-ca-file) every port of the
 * cluster is TLS: the gRPC client ports (clientPortTls), the election and quorum links (sslQuorum)
 * and the ZooKeeper-protocol ports, which become secure ones (secureZkClientPort); a plain
 * ZooKeeper port is opened beside them only when --zk-base-port asks for it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync, type WriteStream } from "node:fs";
import { isAbsolute, join, relative, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { ANSWERED_FOUR_LETTER_WORDS } from "../server/zk-wire/four-letter-words.js";
import {
  ConfigError,
  FIELDS,
  clusterConnectString,
  clusterSecureZkConnectString,
  clusterZkConnectString,
  defaultConfig,
  fieldFromFlag,
  formatHostPort,
  formatServers,
  readConfigSources,
  resolveConfig,
  validateServers,
  type ServerConfig,
  type ServerEntry,
  type TlsClientAuth,
} from "../server/config.js";
import type { ClientTlsOptions } from "../client/types.js";
import { probe } from "./health.js";
import { summarizeMemberLogLine } from "./member-log.js";
import { readClientTls } from "./tls-options.js";

const MAIN = fileURLToPath(new URL("./main.js", import.meta.url));

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
  };
  // Each member loads the file as itself: validate exactly that, with the server's own rules.
  const json = clusterConfigJson(options) as Partial<ServerConfig>;
  for (const entry of json.servers!) resolveConfig({ ...json, serverId: entry.id });
  return options;
}

/** The members: ids 1..voters are participants, the next `observers` ids observers. */
export function clusterServers(options: ClusterOptions): ServerEntry[] {
  const servers: ServerEntry[] = [];
  for (let i = 0; i < options.voters + options.observers; i++) {
    servers.push({
      id: i + 1,
      host: options.host,
      clientPort: options.basePort + i,
      quorumPort: options.quorumBasePort + i,
      electionPort: options.electionBasePort + i,
      role: i < options.voters ? "participant" : "observer",
      ...(options.zkBasePort === 0 ? {} : { zkClientPort: options.zkBasePort + i }),
      ...(options.secureZkBasePort === 0 ? {} : { secureZkClientPort: options.secureZkBasePort + i }),
      ...(options.metricsBasePort === 0 ? {} : { metricsPort: options.metricsBasePort + i }),
      ...(options.adminBasePort === 0 ? {} : { adminPort: options.adminBasePort + i }),
    });
  }
  validateServers(servers);
  return servers;
}

/** The JSON every member reads (with its own --server-id); "{id}" gives each its own data dir. */
export function clusterConfigJson(options: ClusterOptions): Record<string, unknown> {
  const tls = options.tls;
  return {
    dataDir: join(options.dataDir, "{id}"),
    ...launcherDefaults(),
    ...options.shared,
    // The launcher's TLS flags win over shared settings, as every flag does.
    ...(tls === undefined
      ? {}
      : { clientPortTls: true, sslQuorum: true, tlsCertFile: tls.certFile, tlsKeyFile: tls.keyFile, tlsCaFile: tls.caFile, tlsClientAuth: tls.clientAuth }),
    servers: clusterServers(options),
  };
}

export const CLUSTER_CONFIG_FILE = "cluster.json";

/**
 * Writes <dataDir>/cluster.json (atomically). A data dir that already holds a different cluster is
 * refused: reusing its servers' data under another membership is how a quorum loses writes. Only
 * the membership counts: other settings (the base config, CORRAL_*) may change between runs.
 */
export function writeClusterConfig(options: ClusterOptions): { path: string; reused: boolean } {
  mkdirSync(options.dataDir, { recursive: true });
  const path = join(options.dataDir, CLUSTER_CONFIG_FILE);
  const json = clusterConfigJson(options);
  const servers = json["servers"] as ServerEntry[];
  let reused = false;
  if (existsSync(path)) {
    let previous: string;
    try {
      previous = membership((JSON.parse(readFileSync(path, "utf8")) as { servers: ServerEntry[] }).servers);
    } catch (error) {
      throw new ConfigError("data-dir", `${path} exists but is not a cluster config (${(error as Error).message}); remove it or pick another --data-dir`);
    }
    if (previous !== membership(servers)) {
      throw new ConfigError(
        "data-dir",
        `${path} describes another cluster (${previous}); its servers' data belongs to that membership: use another --data-dir or remove it`,
      );
    }
    reused = true;
  }
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, JSON.stringify(json, null, 2) + "\n");
  renameSync(temp, path);
  return { path, reused };
}

/** Who the members are and how they reach each other; client ports may change between runs, membership not. */
function membership(servers: readonly ServerEntry[]): string {
  return formatServers(servers.map(({ zkClientPort: _client, secureZkClientPort: _secure, metricsPort: _metrics, adminPort: _admin, ...entry }) => entry));
}

/**
 * What a child inherits: everything but CORRAL_*. The launcher's CORRAL_* settings are in the
 * cluster file already, so a member restarted by hand with that file gets them too.
 */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith("CORRAL_")) env[key] = value;
  }
  return env;
}

interface Member {
  entry: ServerEntry;
  child: ChildProcess;
  /** Set once the process is gone and its output drained. */
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  closed: Promise<void>;
  unexpected: boolean;
  /** What the server last logged of its own role ("leading", "following", …), when its log level shows it. */
  liveRole: string | undefined;
}

/** The role in a server's structured "role changed" log line, if `line` is one. */
export function roleFromLogLine(line: string): string | undefined {
  if (!line.includes('"role changed"')) return undefined;
  try {
    const parsed = JSON.parse(line) as { role?: unknown; leader?: unknown };
    if (typeof parsed.role !== "string") return undefined;
    return typeof parsed.leader === "number" && parsed.role !== "leading" ? `${parsed.role} ${parsed.leader}` : parsed.role;
  } catch {
    return undefined;
  }
}

function describeExit(exit: { code: number | null; signal: NodeJS.Signals | null }): string {
  return exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
}

function display(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel) ? rel : path;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface ClusterIo {
  out: (text: string) => void;
  err: (text: string) => void;
}

/** Runs the cluster until SIGINT/SIGTERM (or until every server is gone); answers the exit code. */
export async function runCluster(
  options: ClusterOptions,
  io: ClusterIo = { out: (t) => void process.stdout.write(t), err: (t) => void process.stderr.write(t) },
): Promise<number> {
  const { path: configPath, reused } = writeClusterConfig(options);
  const servers = clusterServers(options);
  const connectString = clusterConnectString({ servers, clientHost: options.host, clientPort: options.basePort });
  const zkConnectString = clusterZkConnectString({ servers, clientHost: options.host, zkClientPort: -1 });
  const secureZkConnectString = clusterSecureZkConnectString({ servers, clientHost: options.host, secureZkClientPort: -1 });
  // The launcher checks each server over TLS with the cluster's own certificate as its client's.
  const probeTls: ClientTlsOptions | undefined =
    options.tls === undefined ? undefined : readClientTls({ caFile: options.tls.caFile, certFile: options.tls.certFile, keyFile: options.tls.keyFile });
  io.out(
    `corral cluster: ${options.voters} voter${options.voters === 1 ? "" : "s"}, ${options.observers} observer${options.observers === 1 ? "" : "s"} ` +
      `on ${options.host}; config ${display(configPath)}${reused ? " (reusing its data)" : ""}\n` +
      `connect string: ${connectString}${options.tls === undefined ? "" : " (TLS)"}\n` +
      (zkConnectString === undefined ? "" : `ZooKeeper-protocol connect string: ${zkConnectString}\n`) +
      (secureZkConnectString === undefined ? "" : `ZooKeeper-protocol connect string over TLS: ${secureZkConnectString}\n`) +
      `members' logs: ${display(join(options.dataDir, "<id>", "server.log"))}${options.verbose ? ", and here" : " (--verbose shows them here too)"}\n`,
  );
  if (options.voters % 2 === 0) {
    io.out(`note: ${options.voters} voters tolerate no more failures than ${options.voters - 1}; an odd number is usual\n`);
  }

  let stopping = false;
  let forced = false;
  let finish!: (code: number) => void;
  const finished = new Promise<number>((resolve) => (finish = resolve));
  const members: Member[] = [];
  const logs: WriteStream[] = [];

  const alive = () => members.filter((m) => m.exit === undefined);
  const stopAll = async (reason: string): Promise<void> => {
    if (stopping) {
      // A second Ctrl-C: do not wait for the grace period.
      forced = true;
      for (const m of alive()) m.child.kill("SIGKILL");
      return;
    }
    stopping = true;
    const running = alive();
    io.out(`corral cluster: ${reason}: stopping ${running.length} server${running.length === 1 ? "" : "s"}\n`);
    for (const m of running) m.child.kill("SIGTERM");
    const grace = setTimeout(() => {
      for (const m of alive()) {
        io.err(`corral cluster: server ${m.entry.id} (pid ${m.child.pid}) did not stop within ${options.stopGraceMs} ms: SIGKILL\n`);
        forced = true;
        m.child.kill("SIGKILL");
      }
    }, options.stopGraceMs);
    await Promise.all(members.map((m) => m.closed));
    clearTimeout(grace);
    const unclean = running.filter((m) => {
      const exit = m.exit!;
      return !(exit.code === 0 || exit.signal === "SIGTERM" || exit.signal === "SIGINT");
    });
    for (const m of unclean) io.err(`corral cluster: server ${m.entry.id} stopped uncleanly (${describeExit(m.exit!)})\n`);
    const crashed = members.filter((m) => m.unexpected).length;
    io.out(
      `corral cluster: stopped${crashed > 0 ? ` (${crashed} server${crashed === 1 ? "" : "s"} had exited on ${crashed === 1 ? "its" : "their"} own)` : ""}\n`,
    );
    finish(forced || unclean.length > 0 || crashed > 0 ? 1 : 0);
  };
  const onSignal = (signal: NodeJS.Signals) => void stopAll(signal);
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  try {
    for (const entry of servers) {
      const child = spawn(process.execPath, [MAIN, "server", "--config", configPath, "--server-id", String(entry.id)], {
        stdio: ["ignore", "pipe", "pipe", "ipc"],
        env: childEnv(),
      });
      const member: Member = { entry, child, exit: undefined, closed: Promise.resolve(), unexpected: false, liveRole: undefined };
      member.closed = new Promise<void>((resolve) => {
        child.once("close", (code, signal) => {
          member.exit = { code, signal };
          if (!stopping) {
            member.unexpected = true;
            io.err(`corral cluster: server ${entry.id} (pid ${child.pid}) exited unexpectedly (${describeExit(member.exit)}); it is not restarted\n`);
            if (alive().length === 0) {
              io.err("corral cluster: every server has exited\n");
              stopping = true;
              finish(1);
            }
          }
          resolve();
        });
      });
      child.once("error", (error) => io.err(`corral cluster: server ${entry.id}: ${error.message}\n`));
      const prefix = `[${entry.id}] `;
      const log = memberLog(options, entry.id);
      logs.push(log);
      const onLine = (line: string, stream: "stdout" | "stderr") => {
        log.write(line + "\n");
        member.liveRole = roleFromLogLine(line) ?? member.liveRole;
        if (options.verbose) return (stream === "stdout" ? io.out : io.err)(prefix + line + "\n");
        const summary = summarizeMemberLogLine(line);
        if (summary) (summary.severe ? io.err : io.out)(prefix + summary.text + "\n");
      };
      createInterface({ input: child.stdout!, crlfDelay: Infinity }).on("line", (line) => onLine(line, "stdout"));
      createInterface({ input: child.stderr!, crlfDelay: Infinity }).on("line", (line) => onLine(line, "stderr"));
      members.push(member);
    }

    // Up = serving sessions (the same probe as `corral health`), not merely listening.
    const deadline = Date.now() + options.startTimeoutMs;
    const waitServing = async (m: Member): Promise<string | undefined> => {
      const address = formatHostPort(m.entry.host, m.entry.clientPort);
      for (;;) {
        if (stopping) return undefined;
        if (m.exit !== undefined) return `server ${m.entry.id} exited while starting (${describeExit(m.exit)})`;
        const left = deadline - Date.now();
        if (left <= 0) return `server ${m.entry.id} did not serve ${address} within ${options.startTimeoutMs} ms`;
        try {
          await probe(address, Math.min(2_000, left), probeTls);
          return undefined;
        } catch {
          await sleep(100);
        }
      }
    };
    const failures = (await Promise.all(members.map(waitServing))).filter((f): f is string => f !== undefined);
    if (!stopping && failures.length > 0) {
      for (const failure of failures) io.err(`corral cluster: ${failure}\n`);
      await stopAll("start-up failed");
      await finished;
      return 1;
    }
    if (!stopping) {
      const live = members.every((m) => m.liveRole !== undefined);
      const rows = members.map((m) => [
        String(m.entry.id),
        live ? `${m.entry.role}, ${m.liveRole}` : m.entry.role,
        formatHostPort(m.entry.host, m.entry.clientPort),
        m.entry.zkClientPort === undefined ? "-" : formatHostPort(m.entry.host, m.entry.zkClientPort),
        ...(secureZkConnectString === undefined
          ? []
          : [m.entry.secureZkClientPort === undefined ? "-" : formatHostPort(m.entry.host, m.entry.secureZkClientPort)]),
        m.entry.metricsPort === undefined ? "-" : formatHostPort(m.entry.host, m.entry.metricsPort),
        m.entry.adminPort === undefined ? "-" : formatHostPort(m.entry.host, m.entry.adminPort),
        formatHostPort(m.entry.host, m.entry.quorumPort),
        formatHostPort(m.entry.host, m.entry.electionPort),
        display(join(options.dataDir, String(m.entry.id))),
        String(m.child.pid),
      ]);
      const header = [
        "id",
        "role",
        "client",
        "zookeeper",
        ...(secureZkConnectString === undefined ? [] : ["zookeeper-tls"]),
        "metrics",
        "admin",
        "quorum",
        "election",
        "data",
        "pid",
      ];
      const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
      const line = (cells: string[]) =>
        "  " +
        cells
          .map((c, i) => c.padEnd(widths[i]!))
          .join("  ")
          .trimEnd() +
        "\n";
      io.out(
        `corral cluster: ${members.length} server${members.length === 1 ? "" : "s"} serving${live ? "" : " (roles as configured; log level info shows who leads)"}\n` +
          line(header) +
          rows.map(line).join("") +
          (options.tls === undefined
            ? `connect with: Client.connect("${connectString}")\n`
            : `connect with: Client.connect("${connectString}", { tls: { ca, cert, key } })  (ca: ${display(options.tls.caFile)}; a client certificate ${options.tls.clientAuth === "need" ? "is required" : options.tls.clientAuth === "want" ? "gives an x509 id" : "is not asked for"})\n` +
              `or: corral shell --connect ${connectString} --tls-ca-file ${display(options.tls.caFile)} --tls-cert-file CERT --tls-key-file KEY\n`) +
          (zkConnectString === undefined ? "" : `or any ZooKeeper client: zkCli.sh -server ${zkConnectString}\n`) +
          (secureZkConnectString === undefined
            ? ""
            : `or any ZooKeeper client over TLS: zkCli.sh -server ${secureZkConnectString} with CLIENT_JVMFLAGS="-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty -Dzookeeper.client.secure=true -Dzookeeper.ssl.trustStore.location=${display(options.tls!.caFile)} -Dzookeeper.ssl.trustStore.type=PEM -Dzookeeper.ssl.keyStore.location=KEY_AND_CERT.pem -Dzookeeper.ssl.keyStore.type=PEM"\n`) +
          consoleLine(members[0]!.entry) +
          "press Ctrl-C to stop\n",
      );
    }
    return await finished;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await Promise.all(logs.map((log) => new Promise<void>((resolve) => log.end(resolve))));
  }
}

/** Where to open the web console: any member's admin port serves it, for the whole cluster. */
function consoleLine(entry: ServerEntry): string {
  return entry.adminPort === undefined ? "" : `web console: http://${formatHostPort(entry.host, entry.adminPort)}/console/\n`;
}

/** A member's log file, DIR/<id>/server.log, appended to across runs. */
function memberLog(options: ClusterOptions, id: number): WriteStream {
  const dir = join(options.dataDir, String(id));
  mkdirSync(dir, { recursive: true });
  const log = createWriteStream(join(dir, "server.log"), { flags: "a" });
  // A full disk must not take the launcher down: the terminal still shows what matters.
  log.on("error", () => undefined);
  return log;
}
