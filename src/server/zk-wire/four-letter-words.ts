/**
 * ZooKeeper 3.8's four-letter words ("4lw"): a connection whose first 4 bytes, read as the
 * frame's big-endian int length, spell a known command is answered with plain text and closed
 * (NIOServerCnxn.checkFourLetterWord, server/command/FourLetterCommands).
 *
 * This module is the responder only: recognising a word, parsing the whitelist, and rendering
 * the exact text ZooKeeper 3.8 writes, from a plain snapshot the server runtime fills in. Wiring
 * it to a socket is the ZooKeeper port's business.
 *
 * Text formats follow apache/zookeeper release-3.8.6: RuokCommand, StatCommand (srvr/stat),
 * MonitorCommand (mntr), ConfCommand + ZooKeeperServer/QuorumZooKeeperServer.dumpConf,
 * ConsCommand + ServerCnxn.dumpConnectionInfo, EnvCommand + Environment.list, WatchCommand +
 * WatchManager.toString (wchs), IsroCommand, NopCommand (whitelist refusal), ServerStats.toString,
 * Version.getFullVersion. Java's PrintWriter.println ends lines with "\n" on Linux; commands
 * that use print (ruok, isro, the tail of a quorum conf) end without one, exactly as there.
 *
 * Pure: no sockets, no clock, no process state.
 */
import { hexDigits64 } from "../../common/hex.js";
import { assert } from "../../common/assert.js";
import { formatMembership, type MemberAddress } from "../../common/membership.js";

// ---- words ----------------------------------------------------------------------------------

/**
 * Every command ZooKeeper 3.8 recognises (FourLetterCommands.cmd2String), including the telnet
 * "interrupt process" sequence 0xfff4fffd that it registers as "telnet close". A recognised word
 * is always answered — if not enabled, with the whitelist refusal — never parsed as a frame.
 */
export const KNOWN_FOUR_LETTER_WORDS = [
  "conf",
  "cons",
  "crst",
  "dirs",
  "dump",
  "envi",
  "gtmk",
  "ruok",
  "stmk",
  "srst",
  "srvr",
  "stat",
  "wchc",
  "wchp",
  "wchs",
  "mntr",
  "isro",
  "hash",
  "telnet close",
] as const;
export type FourLetterWord = (typeof KNOWN_FOUR_LETTER_WORDS)[number];

/** The words corral answers. Any other known word is refused as not whitelisted, even under "*". */
export const ANSWERED_FOUR_LETTER_WORDS = ["ruok", "srvr", "stat", "mntr", "conf", "cons", "envi", "wchs", "isro"] as const satisfies readonly FourLetterWord[];
export type AnsweredFourLetterWord = (typeof ANSWERED_FOUR_LETTER_WORDS)[number];

const TELNET_CLOSE_CODE = 0xfff4fffd | 0; // as a signed int, like Java's
const ANSWERED = new Set<string>(ANSWERED_FOUR_LETTER_WORDS);

function wordCode(word: FourLetterWord): number {
  if (word === "telnet close") return TELNET_CLOSE_CODE;
  assert(word.length === 4, `four-letter word ${word}`);
  return (word.charCodeAt(0) << 24) | (word.charCodeAt(1) << 16) | (word.charCodeAt(2) << 8) | word.charCodeAt(3) | 0;
}

const WORD_BY_CODE: ReadonlyMap<number, FourLetterWord> = new Map(KNOWN_FOUR_LETTER_WORDS.map((w) => [wordCode(w), w]));

/**
 * The word the first 4 bytes of a connection spell, or undefined when they are an ordinary
 * frame length (ConnectRequest) — ZooKeeper reads them as a signed big-endian int and looks it up.
 * Case matters ("RUOK" is a frame length of 1381322571, refused later as too long).
 */
export function recognizeFourLetterWord(firstBytes: Uint8Array): FourLetterWord | undefined {
  if (firstBytes.byteLength < 4) return undefined;
  const code = new DataView(firstBytes.buffer, firstBytes.byteOffset, 4).getInt32(0, false);
  return WORD_BY_CODE.get(code);
}

// ---- whitelist ------------------------------------------------------------------------------

export interface FourLetterWordWhitelistOptions {
  /** ZooKeeper's readonlymode.enabled: then "isro" is always enabled too. */
  readOnlyModeEnabled: boolean;
}

/**
 * Parses the value of `4lw.commands.whitelist` (FourLetterCommands.isEnabled): comma-separated,
 * each item trimmed, empty items skipped; an item "*" enables every known word (items after it
 * are not read). Whatever the value — including unset (undefined) — "srvr" is enabled, and "isro"
 * too when read-only mode is enabled. Unknown words are kept (harmless: they are never asked for).
 * Matching is case-sensitive, as in ZooKeeper. So ZooKeeper 3.8's default — the setting absent —
 * enables "srvr" only (zkServer.sh status depends on it).
 */
export function parseFourLetterWordWhitelist(
  value: string | undefined,
  options: FourLetterWordWhitelistOptions = { readOnlyModeEnabled: false },
): ReadonlySet<string> {
  const enabled = new Set<string>();
  if (value !== undefined) {
    for (const item of value.split(",")) {
      const word = item.trim();
      if (word === "*") {
        for (const known of KNOWN_FOUR_LETTER_WORDS) enabled.add(known);
        break;
      }
      if (word !== "") enabled.add(word);
    }
  }
  if (options.readOnlyModeEnabled) enabled.add("isro");
  enabled.add("srvr");
  return enabled;
}

// ---- the snapshot the server fills in -------------------------------------------------------

/** ZooKeeper's ServerStats.getServerState values; a read-only server reports "read-only". */
export type FourLetterWordServerMode = "leader" | "follower" | "observer" | "standalone";

export interface FourLetterWordSession {
  sessionId: bigint;
  /** ZooKeeper's op names ("PING", "GETD", "SETW", ...) or "NA" before the first. */
  lastOperation: string;
  establishedMs: number;
  sessionTimeoutMs: number;
  /** -1 when none yet (then ZooKeeper leaves lcxid out). */
  lastCxid: number;
  /** -1n before the first response (printed as ffffffffffffffff, as Long.toHexString does). */
  lastZxid: bigint;
  lastResponseMs: number;
  lastLatencyMs: number;
  minLatencyMs: number;
  avgLatencyMs: number;
  maxLatencyMs: number;
}

export interface FourLetterWordConnection {
  remoteHost: string;
  remotePort: number;
  /** NIO interest ops of the connection (1 = read); printed in hex. */
  interestOps: number;
  outstandingRequests: number;
  packetsReceived: number;
  packetsSent: number;
  /** Absent before the connect handshake finished (ZooKeeper prints brief info then). */
  session?: FourLetterWordSession;
}

export interface FourLetterWordConfig {
  clientPort: number;
  /** -1 when no secure port, as ZooKeeper prints. */
  secureClientPort: number;
  dataDir: string;
  dataDirSizeBytes: number;
  dataLogDir: string;
  dataLogSizeBytes: number;
  tickTimeMs: number;
  maxClientConnectionsPerHost: number;
  minSessionTimeoutMs: number;
  maxSessionTimeoutMs: number;
  /** -1 for the OS default, as ZooKeeper prints. */
  clientPortListenBacklog: number;
  serverId: number;
  /** Present for a server in a quorum (QuorumZooKeeperServer.dumpConf adds these). */
  quorum?: {
    initLimitTicks: number;
    syncLimitTicks: number;
    /** ZooKeeper's electionAlg: 3 is FastLeaderElection. */
    electionAlgorithm: number;
    members: readonly MemberAddress[];
    /** The quorum verifier version (printed in hex). */
    configVersion: bigint;
  };
}

/** What Environment.list reports, in its order; corral fills the java.* keys with its runtime's. */
export interface FourLetterWordEnvironment {
  hostName: string;
  javaVersion: string;
  javaVendor: string;
  javaHome: string;
  javaClassPath: string;
  javaLibraryPath: string;
  javaIoTmpdir: string;
  javaCompiler: string;
  osName: string;
  osArch: string;
  osVersion: string;
  userName: string;
  userHome: string;
  userDir: string;
  memoryFreeMb: number;
  memoryMaxMb: number;
  memoryTotalMb: number;
}

export interface FourLetterWordContext {
  /** Version.getFullVersion()-shaped: see zookeeperFullVersion. */
  version: string;
  mode: FourLetterWordServerMode;
  /** A read-only server (ZooKeeper's ReadOnlyZooKeeperServer): mode reads "read-only", isro "ro". */
  readOnly: boolean;
  /** False while the server has no running ZooKeeperServer (electing, syncing, shutting down). */
  serving: boolean;
  /** The last processed zxid. */
  zxid: bigint;
  nodeCount: number;
  /** Watching connections, watched paths and total watches (WatchManager.toString). */
  watches: { connections: number; paths: number; total: number };
  connections: readonly FourLetterWordConnection[];
  latency: { minMs: number; avgMs: number; maxMs: number };
  packetsReceived: number;
  packetsSent: number;
  outstandingRequests: number;
  ephemeralsCount: number;
  approximateDataSizeBytes: number;
  /** Unknown on this platform: ZooKeeper's OSMXBean reports -1. */
  openFileDescriptorCount?: number;
  maxFileDescriptorCount?: number;
  /** Leader only: learners, synced followers, pending syncs, proposal sizes (BufferStats, -1 before any). */
  leader?: {
    learners: number;
    syncedFollowers: number;
    syncedNonVotingFollowers: number;
    syncedObservers: number;
    pendingSyncs: number;
    proposalSizeBytes: { last: number; min: number; max: number };
  };
  config: FourLetterWordConfig;
  environment: FourLetterWordEnvironment;
}

// ---- version --------------------------------------------------------------------------------

/**
 * The ZooKeeper version corral claims. Version-sniffing clients (kazoo's server_version, Curator,
 * monitoring scripts, zkServer.sh) read the leading "major.minor.micro" of srvr/stat/envi/mntr;
 * corral speaks the 3.8 client protocol, and 3.8.0 is the lowest 3.8 feature level, so nothing
 * switches on a fix corral does not have.
 */
export const ZOOKEEPER_COMPATIBLE_VERSION = "3.8.0";

/**
 * Version.getFullVersion's shape, "<version>-<revision>, built on <date>", with the qualifier
 * "corral" and corral's own version as the revision:
 * "3.8.0-corral-0.1.0, built on 2026-11-22 14:50 UTC". A regex for /^(\d+)\.(\d+)\.(\d+)/ or a
 * split on "-" or "," finds 3.8.0; a human sees it is corral.
 */
export function zookeeperFullVersion(corralVersion: string, builtAt: Date): string {
  return `${ZOOKEEPER_COMPATIBLE_VERSION}-corral-${corralVersion}, built on ${zookeeperBuildDate(builtAt)}`;
}

/** ZooKeeper's build date format, "yyyy-MM-dd HH:mm z" in UTC. */
export function zookeeperBuildDate(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())} ${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())} UTC`;
}

// ---- rendering ------------------------------------------------------------------------------

export const ZK_NOT_SERVING = "This ZooKeeper instance is not currently serving requests";

export interface FourLetterWordAnswer {
  word: FourLetterWord;
  /** The whole reply; the connection is closed after it. */
  text: string;
  /** False when the word was refused by the whitelist. */
  executed: boolean;
}

/** Answers a recognised word: the whitelist refusal, or the command's text. */
export function answerFourLetterWord(word: FourLetterWord, whitelist: ReadonlySet<string>, context: FourLetterWordContext): FourLetterWordAnswer {
  if (!whitelist.has(word) || !ANSWERED.has(word)) {
    return { word, executed: false, text: `${word} is not executed because it is not in the whitelist.\n` };
  }
  return { word, executed: true, text: renderFourLetterWord(word as AnsweredFourLetterWord, context) };
}

/** The text one command writes, whitelist aside. */
export function renderFourLetterWord(word: AnsweredFourLetterWord, context: FourLetterWordContext): string {
  switch (word) {
    case "ruok":
      return "imok";
    case "isro":
      if (!context.serving) return "null";
      return context.readOnly ? "ro" : "rw";
    case "envi":
      return renderEnvironment(context);
    case "srvr":
    case "stat":
      return context.serving ? renderStat(context, word === "stat") : `${ZK_NOT_SERVING}\n`;
    case "mntr":
      return context.serving ? renderMonitor(context) : `${ZK_NOT_SERVING}\n`;
    case "conf":
      return context.serving ? renderConf(context.config) : `${ZK_NOT_SERVING}\n`;
    case "cons":
      return context.serving ? renderConnections(context) : `${ZK_NOT_SERVING}\n`;
    case "wchs":
      return context.serving ? renderWatchSummary(context) : `${ZK_NOT_SERVING}\n`;
  }
}

/** ZooKeeper's ServerStats.getServerState: the mode, or "read-only". */
export function serverState(context: FourLetterWordContext): string {
  return context.readOnly ? "read-only" : context.mode;
}

/** Java's Long.toHexString: two's complement for negatives. */
export const javaLongHex = hexDigits64;

/** Java's Double.toString for the values these commands print (latency averages). */
export function javaDoubleToString(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "Infinity" : "-Infinity";
  if (value === 0) return Object.is(value, -0) ? "-0.0" : "0.0";
  const magnitude = Math.abs(value);
  if (magnitude >= 1e-3 && magnitude < 1e7) {
    const text = String(value);
    return text.includes(".") ? text : `${text}.0`;
  }
  const [mantissa, exponent] = value.toExponential().split("e") as [string, string];
  return `${mantissa.includes(".") ? mantissa : `${mantissa}.0`}E${exponent.replace("+", "")}`;
}

/** Java's InetSocketAddress.toString for a resolved address without a host name: "/ip:port". */
function socketAddress(host: string, port: number): string {
  return host.includes(":") ? `/[${host}]:${port}` : `/${host}:${port}`;
}

function connectionInfo(connection: FourLetterWordConnection, brief: boolean): string {
  let text = ` ${socketAddress(connection.remoteHost, connection.remotePort)}[`;
  text += connection.interestOps === 0 ? "0" : (connection.interestOps >>> 0).toString(16);
  text += `](queued=${connection.outstandingRequests},recved=${connection.packetsReceived},sent=${connection.packetsSent}`;
  const session = connection.session;
  if (!brief && session !== undefined && session.sessionId !== 0n) {
    text += `,sid=0x${javaLongHex(session.sessionId)},lop=${session.lastOperation}`;
    text += `,est=${session.establishedMs},to=${session.sessionTimeoutMs}`;
    if (session.lastCxid >= 0) text += `,lcxid=0x${(session.lastCxid >>> 0).toString(16)}`;
    text += `,lzxid=0x${javaLongHex(session.lastZxid)},lresp=${session.lastResponseMs}`;
    text += `,llat=${session.lastLatencyMs},minlat=${session.minLatencyMs}`;
    text += `,avglat=${session.avgLatencyMs},maxlat=${session.maxLatencyMs}`;
  }
  return `${text})`;
}

function renderStat(context: FourLetterWordContext, withClients: boolean): string {
  let text = `Zookeeper version: ${context.version}\n`;
  if (context.readOnly) text += "READ-ONLY mode; serving only read-only clients\n";
  if (withClients) {
    text += "Clients:\n";
    for (const connection of context.connections) text += `${connectionInfo(connection, true)}\n`;
    text += "\n";
  }
  const { minMs, avgMs, maxMs } = context.latency;
  text += `Latency min/avg/max: ${minMs}/${javaDoubleToString(avgMs)}/${maxMs}\n`;
  text += `Received: ${context.packetsReceived}\n`;
  text += `Sent: ${context.packetsSent}\n`;
  text += `Connections: ${context.connections.length}\n`;
  text += `Outstanding: ${context.outstandingRequests}\n`;
  text += `Zxid: 0x${javaLongHex(context.zxid)}\n`;
  text += `Mode: ${serverState(context)}\n`;
  text += `Node count: ${context.nodeCount}\n`;
  if (serverState(context) === "leader") {
    const sizes = context.leader?.proposalSizeBytes ?? { last: -1, min: -1, max: -1 };
    text += `Proposal sizes last/min/max: ${sizes.last}/${sizes.min}/${sizes.max}\n`;
  }
  return text;
}

/**
 * mntr: "zk_<key>\t<value>" lines. ZooKeeper prints version and server_state first, then its
 * metrics provider's gauges in ConcurrentHashMap order (unspecified); corral prints the gauges it
 * has in ZooKeeperServer/LeaderZooKeeperServer.registerMetrics order. Integers print as integers,
 * other numbers as Java doubles.
 */
function renderMonitor(context: FourLetterWordContext): string {
  return monitorFigures(context)
    .map(([key, value]) => `zk_${key}\t${typeof value === "string" ? value : key === "avg_latency" ? javaDoubleToString(value) : String(value)}\n`)
    .join("");
}

/**
 * What mntr reports, in its order, typed: strings (version, server_state) and numbers
 * (avg_latency a double, the rest integers). The admin server's `monitor` command reports the same.
 */
export function monitorFigures(context: FourLetterWordContext): [string, string | number][] {
  const figures: [string, string | number][] = [
    ["version", context.version],
    ["server_state", serverState(context)],
    ["avg_latency", context.latency.avgMs],
    ["max_latency", context.latency.maxMs],
    ["min_latency", context.latency.minMs],
    ["packets_received", context.packetsReceived],
    ["packets_sent", context.packetsSent],
    ["num_alive_connections", context.connections.length],
    ["outstanding_requests", context.outstandingRequests],
    ["znode_count", context.nodeCount],
    ["watch_count", context.watches.total],
    ["ephemerals_count", context.ephemeralsCount],
    ["approximate_data_size", context.approximateDataSizeBytes],
    ["open_file_descriptor_count", context.openFileDescriptorCount ?? -1],
    ["max_file_descriptor_count", context.maxFileDescriptorCount ?? -1],
  ];
  const leader = context.leader;
  if (serverState(context) === "leader" && leader !== undefined) {
    figures.push(
      ["learners", leader.learners],
      ["synced_followers", leader.syncedFollowers],
      ["synced_non_voting_followers", leader.syncedNonVotingFollowers],
      ["synced_observers", leader.syncedObservers],
      ["pending_syncs", leader.pendingSyncs],
      ["last_proposal_size", leader.proposalSizeBytes.last],
      ["max_proposal_size", leader.proposalSizeBytes.max],
      ["min_proposal_size", leader.proposalSizeBytes.min],
    );
  }
  return figures;
}

/** `key=value` lines, as ZooKeeper's dumpConf and Environment.list print them. */
function keyValueLines(entries: readonly (readonly [string, string | number])[]): string {
  return entries.map(([key, value]) => `${key}=${value}\n`).join("");
}

function renderConf(config: FourLetterWordConfig): string {
  const entries: [string, string | number][] = [
    ["clientPort", config.clientPort],
    ["secureClientPort", config.secureClientPort],
    ["dataDir", config.dataDir],
    ["dataDirSize", config.dataDirSizeBytes],
    ["dataLogDir", config.dataLogDir],
    ["dataLogSize", config.dataLogSizeBytes],
    ["tickTime", config.tickTimeMs],
    ["maxClientCnxns", config.maxClientConnectionsPerHost],
    ["minSessionTimeout", config.minSessionTimeoutMs],
    ["maxSessionTimeout", config.maxSessionTimeoutMs],
    ["clientPortListenBacklog", config.clientPortListenBacklog],
    ["serverId", config.serverId],
  ];
  const quorum = config.quorum;
  if (quorum === undefined) return keyValueLines(entries);
  const self = quorum.members.find((member) => member.serverId === config.serverId);
  assert(self !== undefined, `server ${config.serverId} is not among its quorum members`);
  entries.push(
    ["initLimit", quorum.initLimitTicks],
    ["syncLimit", quorum.syncLimitTicks],
    ["electionAlg", quorum.electionAlgorithm],
    ["electionPort", self.electionPort],
    ["quorumPort", self.quorumPort],
    ["peerType", self.role === "participant" ? 0 : 1],
  );
  return `${keyValueLines(entries)}membership: \n${formatMembership(quorum.members, quorum.configVersion)}`;
}

function renderConnections(context: FourLetterWordContext): string {
  let text = "";
  for (const connection of context.connections) text += `${connectionInfo(connection, false)}\n`;
  return `${text}\n`;
}

function renderEnvironment(context: FourLetterWordContext): string {
  return `Environment:\n${keyValueLines(environmentEntries(context))}`;
}

/** envi's key=value pairs, in Environment.list's order (the admin `environment` command's too). */
export function environmentEntries(context: FourLetterWordContext): [string, string][] {
  const env = context.environment;
  return [
    ["zookeeper.version", context.version],
    ["host.name", env.hostName],
    ["java.version", env.javaVersion],
    ["java.vendor", env.javaVendor],
    ["java.home", env.javaHome],
    ["java.class.path", env.javaClassPath],
    ["java.library.path", env.javaLibraryPath],
    ["java.io.tmpdir", env.javaIoTmpdir],
    ["java.compiler", env.javaCompiler],
    ["os.name", env.osName],
    ["os.arch", env.osArch],
    ["os.version", env.osVersion],
    ["user.name", env.userName],
    ["user.home", env.userHome],
    ["user.dir", env.userDir],
    ["os.memory.free", `${env.memoryFreeMb}MB`],
    ["os.memory.max", `${env.memoryMaxMb}MB`],
    ["os.memory.total", `${env.memoryTotalMb}MB`],
  ];
}

function renderWatchSummary(context: FourLetterWordContext): string {
  const { connections, paths, total } = context.watches;
  return `${connections} connections watching ${paths} paths\nTotal watches:${total}\n`;
}
