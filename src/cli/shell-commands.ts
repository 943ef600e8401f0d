/**
 * `corral shell`, parsing: splitting a command line into arguments, each command's options as
 * ZooKeeper's zkCli reads them, `corral shell`'s own flags, tab completion. Pure; answers are
 * formatted by src/cli/shell-format.ts and src/cli/shell.ts runs the commands against a `Client`.
 */
import { Perms } from "../index.js";
import type { Acl, AddWatchMode, CreateMode, QuotaLimits, WatcherType } from "../index.js";
import { assert } from "../common/assert.js";
import { parseMembership } from "../common/membership.js";
import { ConfigError } from "../server/config-error.js";
import { isTlsFlag, setTlsFlag, type TlsFileOptions } from "./tls-options.js";

export const DEFAULT_CONNECT_STRING = "127.0.0.1:2181";
export const DEFAULT_TIMEOUT_MS = 10_000;

/** `corral shell`'s own flags and their values, as its usage shows them. */
/** `corral shell`'s own flags and their values ("" for a switch); the usage is printed from this table. */
export const SHELL_FLAGS: Readonly<Record<string, string>> = {
  connect: "host:port[,host:port...][/chroot]",
  "timeout-ms": "MS",
  tls: "",
  "tls-ca-file": "FILE",
  "tls-cert-file": "FILE",
  "tls-key-file": "FILE",
  "tls-servername": "NAME",
  "jaas-config": "FILE",
  "sasl-client-section": "NAME",
  "sasl-service-name": "NAME",
  "sasl-client": "true|false",
  "sasl-server-principal": "PRINCIPAL",
  "krb5-config": "FILE",
};

/**
 * The shell's SASL flags under the Java system properties zkCli.sh reads for them, which the shell
 * also takes as `-D<property>=<value>` (on its command line, or in CLIENT_JVMFLAGS as zkCli.sh does).
 */
export const SASL_PROPERTIES: Readonly<Record<string, keyof ShellSasl>> = {
  "java.security.auth.login.config": "jaasConfigFile",
  "zookeeper.sasl.clientconfig": "section",
  "zookeeper.sasl.client.username": "serviceName",
  "zookeeper.sasl.client": "enabled",
  "zookeeper.server.principal": "serverPrincipal",
  "java.security.krb5.conf": "krb5Config",
};
const SASL_FLAGS: Readonly<Record<string, keyof ShellSasl>> = {
  "jaas-config": "jaasConfigFile",
  "sasl-client-section": "section",
  "sasl-service-name": "serviceName",
  "sasl-client": "enabled",
  "sasl-server-principal": "serverPrincipal",
  "krb5-config": "krb5Config",
};

/** How the shell logs in with SASL, as zkCli.sh's system properties say it. */
export interface ShellSasl {
  /** java.security.auth.login.config: the JAAS file; none, no SASL. */
  jaasConfigFile?: string;
  /** zookeeper.sasl.clientconfig: its section; default Client. */
  section?: string;
  /** zookeeper.sasl.client.username: the server's SASL service name; default zookeeper. */
  serviceName?: string;
  /** zookeeper.sasl.client: "false" turns SASL off. */
  enabled?: string;
  /** zookeeper.server.principal: the server's whole Kerberos principal; default `<serviceName>@<host>`. */
  serverPrincipal?: string;
  /** java.security.krb5.conf: the Kerberos configuration (KRB5_CONFIG); default the system's. */
  krb5Config?: string;
}

/** A failure the shell words itself (not connected, no server answered): printed as its message. */
export class ShellError extends Error {
  constructor(
    message: string,
    /** The exit code when this ends the shell: 2 for a bad --connect string, 1 otherwise. */
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = "ShellError";
  }
}

/** Bad input to one shell command: the message says what and shows that command's usage. */
export class ShellUsageError extends ShellError {
  constructor(message: string) {
    super(message);
    this.name = "ShellUsageError";
  }
}

// -------------------------------------------------------------------------------------------------
// Splitting a line into arguments

/**
 * Splits a command line on blanks. Double quotes group ("a b"; inside them \" and \\ are the only
 * escapes), single quotes group literally ('a "b"'), pieces next to each other join (a"b c" → ab c),
 * "" is an empty argument. A line whose first non-blank character is # is a comment: no arguments.
 */
export function splitArgs(line: string): string[] {
  const args: string[] = [];
  let current = "";
  let inArg = false;
  let i = 0;
  if (line.trimStart().startsWith("#")) return args;
  while (i < line.length) {
    const c = line[i]!;
    if (c === " " || c === "\t" || c === "\r" || c === "\n") {
      if (inArg) args.push(current);
      current = "";
      inArg = false;
      i++;
    } else if (c === '"' || c === "'") {
      inArg = true;
      i++;
      for (;;) {
        if (i >= line.length) throw new ShellUsageError(`unterminated ${c === '"' ? "double" : "single"} quote in: ${line}`);
        const q = line[i]!;
        if (q === c) break;
        if (c === '"' && q === "\\" && (line[i + 1] === '"' || line[i + 1] === "\\")) {
          current += line[i + 1];
          i += 2;
        } else {
          current += q;
          i++;
        }
      }
      i++; // the closing quote
    } else {
      current += c;
      inArg = true;
      i++;
    }
  }
  if (inArg) args.push(current);
  return args;
}

// -------------------------------------------------------------------------------------------------
// Commands

export type ShellCommand =
  | { name: "ls"; path: string; stat: boolean; watch: boolean; recursive: boolean }
  | { name: "get"; path: string; stat: boolean; watch: boolean }
  | { name: "stat"; path: string; watch: boolean }
  /** `acl`: zkCli's third argument (absent: the server's default, world:anyone). */
  | { name: "create"; path: string; data: string; mode: CreateMode; ttlMs: number | undefined; acl?: Acl[] }
  | { name: "set"; path: string; data: string; stat: boolean; version: number }
  | { name: "delete"; path: string; version: number }
  | { name: "deleteall"; path: string }
  | { name: "sync"; path: string }
  | { name: "getAcl"; path: string; stat: boolean }
  | { name: "setAcl"; path: string; acl: Acl[]; stat: boolean; version: number; recursive: boolean }
  | { name: "getEphemerals"; path: string }
  | { name: "getAllChildrenNumber"; path: string }
  | { name: "addauth"; scheme: string; auth: string }
  | { name: "whoami" }
  | { name: "addWatch"; path: string; mode: AddWatchMode }
  | { name: "removewatches"; path: string; watcherType: WatcherType; local: boolean }
  | { name: "setquota"; path: string; limit: QuotaLimit; value: number }
  | { name: "listquota"; path: string }
  | { name: "delquota"; path: string; limit: QuotaLimit | undefined }
  | { name: "config"; clientAddresses: boolean; stat: boolean; watch: boolean }
  | { name: "reconfig"; membership: ReconfigMembership; stat: boolean; fromConfig: bigint }
  | { name: "close" }
  | { name: "connect"; connectString: string | undefined }
  | { name: "printwatches"; enabled: boolean | undefined }
  | { name: "history" }
  | { name: "help" }
  | { name: "quit" };

/**
 * What a `reconfig` asks for: servers to add and ids to remove (incremental), or the whole new
 * membership, listed (-members) or in a file of server.N=… lines (-file, read when it runs).
 */
export type ReconfigMembership =
  { mode: "incremental"; joining: string[]; leaving: number[] } | { mode: "members"; members: string[] } | { mode: "file"; file: string };

interface CommandSpec {
  name: ShellCommand["name"];
  /** The arguments as zkCli's help shows them. */
  args: string;
  /** Option letters without a value. */
  flags: string;
  /** Option letters followed by a value. */
  valued: string;
  /** Options spelled as a word after one dash (-add), each followed by a value; every occurrence is kept. */
  words?: readonly string[];
  positionalMin: number;
  positionalMax: number;
}

/** zkCli 3.8's reconfig synopsis, word for word. */
const RECONFIG_ARGS =
  "[-s] [-v version] [[-file path] | [-members serverID=host:port1:port2;port3[,...]*]] | [-add serverId=host:port1:port2;port3[,...]]* [-remove serverId[,...]*]";

const SPECS: readonly CommandSpec[] = [
  { name: "ls", args: "[-s] [-w] [-R] path", flags: "swR", valued: "", positionalMin: 1, positionalMax: 1 },
  { name: "get", args: "[-s] [-w] path", flags: "sw", valued: "", positionalMin: 1, positionalMax: 1 },
  { name: "stat", args: "[-w] path", flags: "w", valued: "", positionalMin: 1, positionalMax: 1 },
  { name: "create", args: "[-e] [-s] [-c] [-t ttl] path [data] [acl]", flags: "esc", valued: "t", positionalMin: 1, positionalMax: 3 },
  { name: "set", args: "[-s] [-v version] path data", flags: "s", valued: "v", positionalMin: 2, positionalMax: 2 },
  { name: "delete", args: "[-v version] path", flags: "", valued: "v", positionalMin: 1, positionalMax: 1 },
  { name: "deleteall", args: "path", flags: "", valued: "", positionalMin: 1, positionalMax: 1 },
  { name: "sync", args: "path", flags: "", valued: "", positionalMin: 1, positionalMax: 1 },
  { name: "getAcl", args: "[-s] path", flags: "s", valued: "", positionalMin: 1, positionalMax: 1 },
  { name: "setAcl", args: "[-s] [-v version] [-R] path acl", flags: "sR", valued: "v", positionalMin: 2, positionalMax: 2 },
  { name: "getEphemerals", args: "[path]", flags: "", valued: "", positionalMin: 0, positionalMax: 1 },
  { name: "getAllChildrenNumber", args: "path", flags: "", valued: "", positionalMin: 1, positionalMax: 1 },
  { name: "addauth", args: "scheme auth", flags: "", valued: "", positionalMin: 1, positionalMax: 2 },
  { name: "whoami", args: "", flags: "", valued: "", positionalMin: 0, positionalMax: 0 },
  {
    name: "addWatch",
    args: "[-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE",
    flags: "",
    valued: "m",
    positionalMin: 1,
    positionalMax: 1,
  },
  { name: "removewatches", args: "path [-c|-d|-a] [-l]", flags: "cdal", valued: "", positionalMin: 1, positionalMax: 1 },
  { name: "setquota", args: "-n|-b|-N|-B val path", flags: "", valued: "nbNB", positionalMin: 1, positionalMax: 1 },
  { name: "listquota", args: "path", flags: "", valued: "", positionalMin: 1, positionalMax: 1 },
  { name: "delquota", args: "[-n|-b|-N|-B] path", flags: "nbNB", valued: "", positionalMin: 1, positionalMax: 1 },
  { name: "config", args: "[-c] [-w] [-s]", flags: "cws", valued: "", positionalMin: 0, positionalMax: 0 },
  { name: "reconfig", args: RECONFIG_ARGS, flags: "s", valued: "v", words: ["file", "members", "add", "remove"], positionalMin: 0, positionalMax: 0 },
  { name: "close", args: "", flags: "", valued: "", positionalMin: 0, positionalMax: 0 },
  { name: "connect", args: "[host:port[,host:port...][/chroot]]", flags: "", valued: "", positionalMin: 0, positionalMax: 1 },
  { name: "printwatches", args: "on|off", flags: "", valued: "", positionalMin: 0, positionalMax: 1 },
  { name: "history", args: "", flags: "", valued: "", positionalMin: 0, positionalMax: 0 },
  { name: "help", args: "", flags: "", valued: "", positionalMin: 0, positionalMax: 0 },
  { name: "quit", args: "", flags: "", valued: "", positionalMin: 0, positionalMax: 0 },
];

/** Lower-case name → spec; `exit` is `quit`. */
const SPEC_BY_NAME = new Map(SPECS.map((spec) => [spec.name.toLowerCase(), spec]));
SPEC_BY_NAME.set("exit", SPEC_BY_NAME.get("quit")!);

/** Every command name, for tab completion. */
export const COMMAND_NAMES: readonly string[] = [...SPECS.map((spec) => spec.name), "exit"];

export function usageOf(spec: Pick<CommandSpec, "name" | "args">): string {
  return spec.args === "" ? spec.name : `${spec.name} ${spec.args}`;
}

/** The `help` text (and what an unknown command prints). */
export function helpText(): string {
  return [
    `corral shell ${Object.entries(SHELL_FLAGS)
      .map(([flag, value]) => (value === "" ? `[--${flag}]` : `[--${flag} ${value}]`))
      .join(" ")} [cmd args]`,
    ...SPECS.map((spec) => `\t${usageOf(spec)}${spec.name === "quit" ? " (or exit)" : ""}`),
    'Quote data that contains blanks: create /x "hello world". -- ends the options: set /x -- -data.',
  ].join("\n");
}

interface ParsedOptions {
  flags: Set<string>;
  /** A valued letter's last value. */
  values: Map<string, string>;
  /** A word option's values, in the order given. */
  words: Map<string, string[]>;
  positionals: string[];
}

/**
 * Options as commons-cli's parser reads them for zkCli: anywhere among the arguments, bundled
 * (-sw), a value separate or attached (-v 3, -v3), a word option's value separate (-add x); "--"
 * ends them; "-" alone and "-5" are arguments.
 */
function parseOptions(args: readonly string[], spec: CommandSpec): ParsedOptions {
  const parsed: ParsedOptions = { flags: new Set(), values: new Map(), words: new Map(), positionals: [] };
  let optionsEnded = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!optionsEnded && arg === "--") {
      optionsEnded = true;
      continue;
    }
    if (optionsEnded || !/^-[A-Za-z]/.test(arg)) {
      parsed.positionals.push(arg);
      continue;
    }
    const word = arg.slice(1);
    if (spec.words?.includes(word) === true) {
      const value = args[++i];
      if (value === undefined) throw usageError(spec, `Missing argument for option: ${word}`);
      parsed.words.set(word, [...(parsed.words.get(word) ?? []), value]);
      continue;
    }
    for (let j = 1; j < arg.length; j++) {
      const letter = arg[j]!;
      if (spec.flags.includes(letter)) {
        parsed.flags.add(letter);
      } else if (spec.valued.includes(letter)) {
        const attached = arg.slice(j + 1);
        const value = attached !== "" ? attached : args[++i];
        if (value === undefined) throw usageError(spec, `Missing argument for option: ${letter}`);
        parsed.values.set(letter, value);
        break;
      } else {
        throw usageError(spec, `Unrecognized option: -${letter}`);
      }
    }
  }
  return parsed;
}

function usageError(spec: CommandSpec, reason: string): ShellUsageError {
  return new ShellUsageError(`${reason}\nusage: ${usageOf(spec)}`);
}

function parseVersion(spec: CommandSpec, text: string | undefined): number {
  if (text === undefined) return -1;
  const version = /^-?[0-9]{1,10}$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(version) || version < -1 || version > 0x7fffffff) {
    throw usageError(spec, `version must be an integer from -1 to ${0x7fffffff}, not ${JSON.stringify(text)}`);
  }
  return version;
}

function createMode(spec: CommandSpec, o: ParsedOptions): { mode: CreateMode; ttlMs: number | undefined } {
  const ephemeral = o.flags.has("e");
  const sequential = o.flags.has("s");
  const container = o.flags.has("c");
  const ttlText = o.values.get("t");
  if (container && (ephemeral || sequential)) {
    throw usageError(spec, "-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.");
  }
  if (ttlText !== undefined) {
    if (ephemeral) throw usageError(spec, "TTLs cannot be used with Ephemeral znodes");
    if (container) throw usageError(spec, "TTLs cannot be used with Container znodes");
    const ttlMs = /^[0-9]{1,16}$/.test(ttlText) ? Number(ttlText) : NaN;
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 1) throw usageError(spec, `ttl must be a positive number of ms, not ${JSON.stringify(ttlText)}`);
    return { mode: sequential ? "persistent-sequential-with-ttl" : "persistent-with-ttl", ttlMs };
  }
  if (container) return { mode: "container", ttlMs: undefined };
  const mode: CreateMode = ephemeral ? (sequential ? "ephemeral-sequential" : "ephemeral") : sequential ? "persistent-sequential" : "persistent";
  return { mode, ttlMs: undefined };
}

/** zkCli's ACL text: comma-separated scheme:id:perms, the id running to the last colon (digest:bob:hash:cdrwa). */
export function parseAclText(spec: CommandSpec, text: string): Acl[] {
  const acl: Acl[] = [];
  for (const entry of text.split(",")) {
    const first = entry.indexOf(":");
    const last = entry.lastIndexOf(":");
    // zkCli skips such an entry and sets the rest; setting a narrower ACL than typed is worse than refusing.
    if (first < 0 || first === last) throw usageError(spec, `${entry} does not have the form scheme:id:perm`);
    acl.push({ id: { scheme: entry.slice(0, first), id: entry.slice(first + 1, last) }, perms: parsePerms(spec, entry.slice(last + 1)) });
  }
  return acl;
}

const PERM_BY_LETTER: Readonly<Record<string, number>> = {
  c: Perms.CREATE,
  d: Perms.DELETE,
  r: Perms.READ,
  w: Perms.WRITE,
  a: Perms.ADMIN,
};

function parsePerms(spec: CommandSpec, text: string): number {
  let perms = 0;
  for (const letter of text) {
    const perm = PERM_BY_LETTER[letter];
    if (perm === undefined) throw usageError(spec, `Unknown perm type: ${letter}`);
    perms |= perm;
  }
  return perms;
}

/** zkCli's AddWatchMode.valueOf(mode.toUpperCase()): PERSISTENT or PERSISTENT_RECURSIVE in any case. */
function addWatchMode(spec: CommandSpec, text: string | undefined): AddWatchMode {
  if (text === undefined) return "persistent-recursive";
  const upper = text.toUpperCase();
  if (upper === "PERSISTENT") return "persistent";
  if (upper === "PERSISTENT_RECURSIVE") return "persistent-recursive";
  throw usageError(spec, `mode must be PERSISTENT or PERSISTENT_RECURSIVE, not ${JSON.stringify(text)}`);
}

/** The quota a setquota / delquota option names (ZooKeeper's StatsTrack keys). */
export type QuotaLimit = keyof Required<QuotaLimits>;

const QUOTA_LIMIT_BY_LETTER: Readonly<Record<"n" | "b" | "N" | "B", QuotaLimit>> = {
  n: "count",
  b: "bytes",
  N: "countHardLimit",
  B: "byteHardLimit",
};

/** ZooKeeper's quota subtree; no quota may be set inside it. */
const QUOTA_ROOT = "/zookeeper/quota";

/** The one quota option given (zkCli's option group allows one), or undefined for none. */
function onlyQuotaLetter(spec: CommandSpec, letters: readonly string[]): keyof typeof QUOTA_LIMIT_BY_LETTER | undefined {
  if (letters.length > 1) {
    throw usageError(spec, `The option '${letters[1]}' was specified but an option from this group has already been selected: '${letters[0]}'`);
  }
  const letter = letters[0];
  assert(letter === undefined || letter in QUOTA_LIMIT_BY_LETTER, `quota option letters are n b N B, not ${letter}`);
  return letter as keyof typeof QUOTA_LIMIT_BY_LETTER | undefined;
}

/** -n / -N: a count above zero; -b / -B: bytes, zero or more (zkCli's checks). */
function quotaValue(spec: CommandSpec, letter: string, text: string): number {
  const value = /^[+-]?[0-9]{1,15}$/.test(text) ? Number(text) : NaN;
  const isCount = letter === "n" || letter === "N";
  if (!Number.isSafeInteger(value) || (isCount && value > 0x7fffffff)) {
    throw usageError(spec, `the ${isCount ? "num" : "bytes"} quota must be an integer, not ${JSON.stringify(text)}`);
  }
  if (isCount && value <= 0) throw usageError(spec, "the num quota must be greater than zero");
  if (!isCount && value < 0) throw usageError(spec, "the bytes quota must be greater than or equal to zero");
  return value;
}

/** The largest configuration version: reconfig's -v is a Java long. */
const CONFIG_VERSION_MAX = (1n << 63n) - 1n;

/** reconfig's -v: the version in hex as `config` prints it (zkCli's Long.parseLong(v, 16)); -1 (the default) is any. */
function configVersion(spec: CommandSpec, text: string | undefined): bigint {
  if (text === undefined) return -1n;
  const match = /^([+-]?)([0-9a-fA-F]{1,16})$/.exec(text);
  const magnitude = match === null ? undefined : BigInt(`0x${match[2]}`);
  const version = magnitude === undefined ? undefined : match![1] === "-" ? -magnitude : magnitude;
  if (version === undefined || version > CONFIG_VERSION_MAX || version < -CONFIG_VERSION_MAX - 1n) {
    throw usageError(spec, `-v must be followed by a long (configuration version) in hex, not ${JSON.stringify(text)}`);
  }
  return version;
}

/** A list option's entries: every occurrence split on commas, trimmed, empties dropped, in lower case (as zkCli sends them). */
function listEntries(spec: CommandSpec, word: string, values: readonly string[], synopsis: string): string[] {
  const entries = values
    .flatMap((value) => value.split(","))
    .map((entry) => entry.trim().toLowerCase())
    .filter((entry) => entry !== "");
  if (entries.length === 0) throw usageError(spec, `-${word} needs ${synopsis}`);
  return entries;
}

/**
 * `reconfig`, checked in zkCli's order: some membership option, a valid -v, then no mixing of the
 * incremental (-add, -remove) and whole-membership (-members, -file) forms. -add and -remove may
 * each be given more than once (zkCli keeps only the first).
 */
function reconfigCommand(spec: CommandSpec, o: ParsedOptions): Extract<ShellCommand, { name: "reconfig" }> {
  const [file, members, add, remove] = (["file", "members", "add", "remove"] as const).map((word) => o.words.get(word));
  if (file === undefined && members === undefined && add === undefined && remove === undefined) {
    throw usageError(spec, "Missing required option: one of -add, -remove, -members, -file");
  }
  const fromConfig = configVersion(spec, o.values.get("v"));
  if ((file !== undefined || members !== undefined) && (add !== undefined || remove !== undefined)) {
    throw usageError(spec, "Can't use -file or -members together with -add or -remove (mixing incremental and non-incremental modes is not allowed)");
  }
  if (file !== undefined && members !== undefined) throw usageError(spec, "Can't use -file and -members together (conflicting non-incremental modes)");
  const stat = o.flags.has("s");
  if (file !== undefined) {
    if (file.length > 1) throw usageError(spec, "Can't use -file more than once");
    return { name: "reconfig", membership: { mode: "file", file: file[0]! }, stat, fromConfig };
  }
  if (members !== undefined) {
    return {
      name: "reconfig",
      membership: { mode: "members", members: listEntries(spec, "members", members, "serverID=host:port1:port2;port3[,...]") },
      stat,
      fromConfig,
    };
  }
  const joining = add === undefined ? [] : listEntries(spec, "add", add, "serverId=host:port1:port2;port3[,...]");
  const leaving = (remove === undefined ? [] : listEntries(spec, "remove", remove, "serverId[,...]")).map((id) => {
    if (!/^[0-9]{1,9}$/.test(id)) throw usageError(spec, `-remove takes server ids, not ${JSON.stringify(id)}`);
    return Number(id);
  });
  return { name: "reconfig", membership: { mode: "incremental", joining, leaving }, stat, fromConfig };
}

/**
 * Java's Properties.load, as zkCli reads reconfig's -file: key=value, key:value or "key value"
 * lines, # and ! comment lines, a line ending in an odd number of backslashes goes on in the next,
 * backslash escapes (\t \n \r \f \uXXXX, any other character as itself). A later key wins.
 */
export function parseJavaProperties(text: string): Map<string, string> {
  const properties = new Map<string, string>();
  const lines = text.split(/\r\n|\r|\n/);
  const blank = /^[ \t\f]*/;
  const continued = (line: string) => (/\\+$/.exec(line)?.[0].length ?? 0) % 2 === 1;
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]!.replace(blank, "");
    if (line === "" || line.startsWith("#") || line.startsWith("!")) continue;
    while (continued(line)) {
      line = line.slice(0, -1);
      if (++i >= lines.length) break;
      line += lines[i]!.replace(blank, "");
    }
    let keyEnd = 0;
    while (keyEnd < line.length && !"=: \t\f".includes(line[keyEnd]!)) keyEnd += line[keyEnd] === "\\" ? 2 : 1;
    keyEnd = Math.min(keyEnd, line.length);
    let valueStart = keyEnd;
    while (valueStart < line.length && " \t\f".includes(line[valueStart]!)) valueStart++;
    if (line[valueStart] === "=" || line[valueStart] === ":") valueStart++;
    while (valueStart < line.length && " \t\f".includes(line[valueStart]!)) valueStart++;
    properties.set(unescapeProperty(line.slice(0, keyEnd)), unescapeProperty(line.slice(valueStart)));
  }
  return properties;
}

const PROPERTY_ESCAPES: Readonly<Record<string, string>> = { t: "\t", n: "\n", r: "\r", f: "\f" };

function unescapeProperty(text: string): string {
  return text.replace(/\\(u[0-9a-fA-F]{4}|.?)/g, (_match, escaped: string) =>
    escaped.startsWith("u") && escaped.length === 5 ? String.fromCharCode(parseInt(escaped.slice(1), 16)) : (PROPERTY_ESCAPES[escaped] ?? escaped),
  );
}

/**
 * The members a `reconfig -file` file names, as zkCli reads it (QuorumPeerConfig.parseDynamicConfig):
 * server.N=… entries; version=… is ignored; any other key is an error, as is a malformed member or
 * none at all. Throws Error (ZkError BADARGUMENTS for a malformed member) with the reason.
 */
export function membersFromFile(text: string): string[] {
  const members: string[] = [];
  for (const [key, value] of parseJavaProperties(text)) {
    const name = key.trim();
    if (name === "version") continue;
    if (!name.startsWith("server.")) throw new Error(`Unrecognised parameter: ${name}`);
    members.push(`${name}=${value.trim()}`);
  }
  parseMembership(members.join("\n"));
  return members;
}

/**
 * Turns a split command line into a command. Throws ShellUsageError for an unknown command (with
 * the whole help) or bad arguments (with that command's usage). Command names are matched
 * case-insensitively (getacl works); an empty line is not a command (the caller skips it).
 */
export function parseCommand(args: readonly string[]): ShellCommand {
  const [word, ...rest] = args;
  if (word === undefined) throw new ShellUsageError("no command");
  const spec = SPEC_BY_NAME.get(word.toLowerCase());
  if (spec === undefined) throw new ShellUsageError(`Unknown command: ${word}\n${helpText()}`);
  const o = parseOptions(rest, spec);
  const n = o.positionals.length;
  if (n < spec.positionalMin) throw usageError(spec, n === 0 && spec.positionalMin === 1 && /\bpath\b/.test(spec.args) ? "missing path" : "missing arguments");
  if (n > spec.positionalMax) {
    const hint = spec.args.includes("data") ? " (quote data that contains blanks)" : "";
    throw usageError(spec, `too many arguments${hint}`);
  }
  const path = o.positionals[0] ?? "";
  const s = o.flags.has("s");
  const w = o.flags.has("w");
  switch (spec.name) {
    case "ls":
      return { name: "ls", path, stat: s, watch: w, recursive: o.flags.has("R") };
    case "get":
      return { name: "get", path, stat: s, watch: w };
    case "stat":
      return { name: "stat", path, watch: w };
    case "create":
      return {
        name: "create",
        path,
        data: o.positionals[1] ?? "",
        ...createMode(spec, o),
        ...(o.positionals[2] === undefined ? {} : { acl: parseAclText(spec, o.positionals[2]) }),
      };
    case "set":
      return { name: "set", path, data: o.positionals[1]!, stat: s, version: parseVersion(spec, o.values.get("v")) };
    case "delete":
      return { name: "delete", path, version: parseVersion(spec, o.values.get("v")) };
    case "deleteall":
      if (path === "/") throw usageError(spec, "deleteall cannot delete the root");
      return { name: "deleteall", path };
    case "sync":
      return { name: "sync", path };
    case "getAcl":
      return { name: "getAcl", path, stat: s };
    case "setAcl":
      return {
        name: "setAcl",
        path,
        acl: parseAclText(spec, o.positionals[1]!),
        stat: s,
        version: parseVersion(spec, o.values.get("v")),
        recursive: o.flags.has("R"),
      };
    case "getEphemerals":
      return { name: "getEphemerals", path: o.positionals[0] ?? "/" };
    case "getAllChildrenNumber":
      return { name: "getAllChildrenNumber", path };
    case "addauth":
      return { name: "addauth", scheme: o.positionals[0]!, auth: o.positionals[1] ?? "" };
    case "addWatch":
      return { name: "addWatch", path, mode: addWatchMode(spec, o.values.get("m")) };
    case "removewatches": {
      // zkCli's order: -c wins over -d, -d over -a; none means any.
      const watcherType: WatcherType = o.flags.has("c") ? "children" : o.flags.has("d") ? "data" : "any";
      return { name: "removewatches", path, watcherType, local: o.flags.has("l") };
    }
    case "setquota": {
      const letter = onlyQuotaLetter(spec, [...o.values.keys()]);
      if (letter === undefined) throw usageError(spec, "Missing required option: one of -n, -b, -N, -B");
      if (path.startsWith(QUOTA_ROOT)) throw new ShellUsageError(`cannot set a quota under the path: ${QUOTA_ROOT}`);
      return { name: "setquota", path, limit: QUOTA_LIMIT_BY_LETTER[letter], value: quotaValue(spec, letter, o.values.get(letter)!) };
    }
    case "listquota":
      return { name: "listquota", path };
    case "delquota": {
      const letter = onlyQuotaLetter(spec, [...o.flags]);
      return { name: "delquota", path, limit: letter === undefined ? undefined : QUOTA_LIMIT_BY_LETTER[letter] };
    }
    case "config":
      return { name: "config", clientAddresses: o.flags.has("c"), stat: s, watch: w };
    case "reconfig":
      return reconfigCommand(spec, o);
    case "connect":
      return { name: "connect", connectString: o.positionals[0] };
    case "printwatches": {
      const arg = o.positionals[0]?.toLowerCase();
      if (arg !== undefined && arg !== "on" && arg !== "off") throw usageError(spec, `expected on or off, not ${JSON.stringify(o.positionals[0])}`);
      return { name: "printwatches", enabled: arg === undefined ? undefined : arg === "on" };
    }
    case "whoami":
    case "close":
    case "history":
    case "help":
    case "quit":
      return { name: spec.name };
  }
}

// -------------------------------------------------------------------------------------------------
// Tab completion (interactive mode)

/** The child path of `parent` named `name`. */
export function childPath(parent: string, name: string): string {
  return parent === "/" ? `/${name}` : `${parent}/${name}`;
}

/** Command names starting with `prefix`. */
export function completeCommandName(prefix: string): string[] {
  return COMMAND_NAMES.filter((name) => name.startsWith(prefix));
}

/**
 * Where to look to complete a path being typed: "/app/wo" → children of "/app" starting with "wo".
 * Undefined for anything that is not an absolute path.
 */
export function pathCompletionTarget(partial: string): { parent: string; prefix: string } | undefined {
  if (!partial.startsWith("/")) return undefined;
  const slash = partial.lastIndexOf("/");
  return { parent: slash === 0 ? "/" : partial.slice(0, slash), prefix: partial.slice(slash + 1) };
}

// -------------------------------------------------------------------------------------------------
// `corral shell` itself

export interface ShellArgs {
  connectString: string;
  timeoutMs: number;
  /** A command to run instead of reading stdin (one-command mode). */
  command: string[] | undefined;
  help: boolean;
  /** Connect over TLS (--tls, or any --tls-* file flag); undefined = plain text. */
  tls: TlsFileOptions | undefined;
  /** SASL as zkCli.sh's system properties set it (the flags, -D properties, CLIENT_JVMFLAGS). */
  sasl: ShellSasl;
}

/**
 * `corral shell [--connect HOSTS] [--timeout-ms MS] [--tls] [--tls-ca-file F] [--tls-cert-file F]
 * [--tls-key-file F] [--tls-servername NAME] [--jaas-config F] [--sasl-client-section NAME]
 * [--sasl-service-name NAME] [--sasl-client true|false] [-D<property>=<value>] [--] [cmd args...]`:
 * the first argument that is not a flag (or everything after "--") is one command to run. A single
 * command argument holding blanks is split as a shell line (corral shell -- "ls /").
 * `clientJvmFlags` is CLIENT_JVMFLAGS, whose SASL properties count as zkCli.sh's do (the command
 * line's win). Throws ConfigError (exit code 2).
 */
export function parseShellArgs(argv: readonly string[], clientJvmFlags = ""): ShellArgs {
  const parsed: ShellArgs = { connectString: DEFAULT_CONNECT_STRING, timeoutMs: DEFAULT_TIMEOUT_MS, command: undefined, help: false, tls: undefined, sasl: {} };
  for (const word of clientJvmFlags.split(/\s+/)) if (word.startsWith("-D")) setSaslProperty(parsed.sasl, word, false);
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      i++;
      break;
    }
    if (arg === "--help" || arg === "-h") {
      parsed.help = true;
      continue;
    }
    if (!arg.startsWith("-")) break;
    if (arg.startsWith("-D")) {
      setSaslProperty(parsed.sasl, arg, true);
      continue;
    }
    const known = `shell takes --${Object.keys(SHELL_FLAGS).join(", --")} and -D<property>=<value> for ${Object.keys(SASL_PROPERTIES).join(", ")}`;
    if (!arg.startsWith("--")) throw new ConfigError(arg, `unknown option (${known})`);
    if (arg === "--tls") {
      // TLS with the system's CAs and no client certificate, unless --tls-* flags say more.
      parsed.tls ??= {};
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    const value = eq < 0 ? argv[++i] : arg.slice(eq + 1);
    if (!Object.hasOwn(SHELL_FLAGS, name) || name === "tls") throw new ConfigError(name, `unknown option (${known})`);
    if (value === undefined) throw new ConfigError(name, "missing value");
    if (isTlsFlag(name)) {
      setTlsFlag((parsed.tls ??= {}), name, value);
    } else if (Object.hasOwn(SASL_FLAGS, name)) {
      parsed.sasl[SASL_FLAGS[name]!] = value;
    } else if (name === "connect") {
      if (value.trim() === "") throw new ConfigError(name, "expected host:port[,host:port...][/chroot]");
      parsed.connectString = value;
    } else {
      const timeoutMs = /^[0-9]{1,10}$/.test(value) ? Number(value) : NaN;
      if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 0x7fffffff) {
        throw new ConfigError(name, `expected a positive integer, got ${JSON.stringify(value)}`);
      }
      parsed.timeoutMs = timeoutMs;
    }
  }
  const rest = argv.slice(i);
  if (rest.length === 1 && /\s/.test(rest[0]!)) {
    try {
      parsed.command = splitArgs(rest[0]!);
    } catch (error) {
      throw new ConfigError("command", (error as Error).message);
    }
  } else if (rest.length > 0) {
    parsed.command = [...rest];
  }
  return parsed;
}

/** A `-D<property>=<value>` word: one of SASL_PROPERTIES sets its setting; another is refused when `strict` (the command line), skipped otherwise (CLIENT_JVMFLAGS). */
function setSaslProperty(sasl: ShellSasl, word: string, strict: boolean): void {
  const eq = word.indexOf("=");
  const property = eq < 0 ? word.slice(2) : word.slice(2, eq);
  const setting = Object.hasOwn(SASL_PROPERTIES, property) ? SASL_PROPERTIES[property] : undefined;
  if (setting === undefined) {
    if (strict) throw new ConfigError(word, `unknown property (the shell takes -D for ${Object.keys(SASL_PROPERTIES).join(", ")})`);
    return;
  }
  if (eq < 0) throw new ConfigError(property, "missing value (-D<property>=<value>)");
  sasl[setting] = word.slice(eq + 1);
}
