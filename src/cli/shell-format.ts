/**
 * `corral shell`, formatting: answers, watch events, the prompt and failures as ZooKeeper's zkCli
 * prints them. Pure; src/cli/shell.ts writes what these return (text without the final newline).
 */
import { hex64 } from "../common/hex.js";
import { permString } from "../common/znode.js";
import { ZkError } from "../index.js";
import type { Acl, ClientInfo, ClientState, QuotaReport, Stat, WatchedEvent } from "../index.js";
import { parseMember } from "../common/membership.js";
import { formatQuotaFigures, limitsPathOf, unsetFigures } from "../common/quota.js";
import { ShellError, parseJavaProperties } from "./shell-commands.js";

const dateFormats = new Map<string, Intl.DateTimeFormat>();

/** Java's Date.toString ("Thu Jan 01 00:00:00 UTC 1970") in `timeZone` (default: the local one). */
export function formatJavaDate(ms: number, timeZone?: string): string {
  const key = timeZone ?? "";
  let format = dateFormats.get(key);
  if (format === undefined) {
    format = new Intl.DateTimeFormat("en-US", {
      ...(timeZone === undefined ? {} : { timeZone }),
      weekday: "short",
      month: "short",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
      year: "numeric",
      timeZoneName: "short",
    });
    dateFormats.set(key, format);
  }
  const part: Record<string, string> = {};
  for (const p of format.formatToParts(ms)) part[p.type] = p.value;
  return `${part["weekday"]} ${part["month"]} ${part["day"]} ${part["hour"]}:${part["minute"]}:${part["second"]} ${part["timeZoneName"]} ${part["year"]}`;
}

/** zkCli's StatPrinter layout, one field a line. */
export function formatStat(stat: Stat, timeZone?: string): string {
  return [
    `cZxid = ${hex64(stat.czxid)}`,
    `ctime = ${formatJavaDate(stat.ctime, timeZone)}`,
    `mZxid = ${hex64(stat.mzxid)}`,
    `mtime = ${formatJavaDate(stat.mtime, timeZone)}`,
    `pZxid = ${hex64(stat.pzxid)}`,
    `cversion = ${stat.cversion}`,
    `dataVersion = ${stat.version}`,
    `aclVersion = ${stat.aversion}`,
    `ephemeralOwner = ${hex64(stat.ephemeralOwner)}`,
    `dataLength = ${stat.dataLength}`,
    `numChildren = ${stat.numChildren}`,
  ].join("\n");
}

/** `ls`: child names sorted, as zkCli prints a Java list: [a, b]. */
export function formatChildren(children: readonly string[]): string {
  return `[${[...children].sort().join(", ")}]`;
}

/** `getEphemerals`: paths in the server's order, as zkCli prints a Java list: [/a, /b]. */
export function formatJavaList(items: readonly string[]): string {
  return `[${items.join(", ")}]`;
}

/** `whoami`: a header, then one "scheme: user" line per id the session is authenticated as. */
export function formatWhoAmI(clientInfo: readonly ClientInfo[]): string {
  return ["Auth scheme: User", ...clientInfo.map((info) => `${info.authScheme}: ${info.user}`)].join("\n");
}

/** `listquota`'s first line (zkCli prints it on stderr): where the limits live. */
export function formatQuotaLocation(path: string): string {
  return `absolute path is ${limitsPathOf(path)}`;
}

/** `listquota`: the limits, then the usage, each as ZooKeeper's StatsTrack text. */
export function formatQuotaReport(path: string, report: QuotaReport): string {
  return [
    `Output quota for ${path} ${formatQuotaFigures(report.limits)}`,
    `Output stat for ${path} ${formatQuotaFigures({ ...unsetFigures(), ...report.usage })}`,
  ].join("\n");
}

/** `setquota`'s warnings (stdout) when a new limit is already below what the subtree holds. */
export function quotaWarnings(report: QuotaReport): string[] {
  const { limits, usage } = report;
  const below = (limit: number, used: number) => limit > -1 && limit < used;
  const warnings: string[] = [];
  if (below(limits.count, usage.count) || below(limits.countHardLimit, usage.count)) {
    warnings.push(`[Warning]: the count quota you create is less than the existing count:${usage.count}`);
  }
  if (below(limits.bytes, usage.bytes) || below(limits.byteHardLimit, usage.bytes)) {
    warnings.push(`[Warning]: the bytes quota you create is less than the existing bytes:${usage.bytes}`);
  }
  return warnings;
}

/**
 * `config -c`: ZooKeeper's ConfigUtils.getClientConfigStr — the configuration's version, a blank,
 * then each member's client address (host:port, 0.0.0.0 for a bare port, nothing for a member
 * without one) joined by commas. Members come in the configuration's order (id order), not in the
 * hash order of the Java Properties zkCli reads them into; a member line that does not parse is left out.
 */
export function formatClientConfig(text: string): string {
  let version = "";
  const addresses: string[] = [];
  for (const [rawKey, rawValue] of parseJavaProperties(text)) {
    const key = rawKey.trim();
    if (key === "version") version = rawValue.trim();
    if (!key.startsWith("server.")) continue;
    try {
      const member = parseMember(key, rawValue);
      const host = member.clientHost?.includes(":") === true ? `[${member.clientHost}]` : member.clientHost;
      addresses.push(member.clientPort === undefined ? "" : `${host}:${member.clientPort}`);
    } catch (error) {
      if (!(error instanceof ZkError)) throw error;
    }
  }
  return `${version} ${addresses.join(",")}`;
}

/** `getAcl`: each entry as zkCli prints it ('world,'anyone then : cdrwa). */
export function formatAcl(acl: readonly Acl[]): string {
  return acl.map((entry) => `'${entry.id.scheme},'${entry.id.id}\n: ${permString(entry.perms)}`).join("\n");
}

const KEEPER_STATE: Record<ClientState, string> = {
  connecting: "Disconnected",
  connected: "SyncConnected",
  reconnected: "SyncConnected",
  disconnected: "Disconnected",
  expired: "Expired",
  authFailed: "AuthFailed",
  closed: "Closed",
};

/** A watch firing, as zkCli's watcher prints it (a blank line, WATCHER::, a blank line, the event). */
export function formatWatchedEvent(event: Pick<WatchedEvent, "type" | "path">): string {
  return `\nWATCHER::\n\nWatchedEvent state:SyncConnected type:${event.type} path:${event.path}`;
}

/** A session state change, as zkCli prints its type:None events. */
export function formatStateEvent(state: ClientState): string {
  return `\nWATCHER::\n\nWatchedEvent state:${KEEPER_STATE[state]} type:None path:null`;
}

/** The connection state zkCli's prompt shows. */
export function promptState(state: ClientState | undefined): "CONNECTING" | "CONNECTED" | "CLOSED" {
  if (state === "connected" || state === "reconnected") return "CONNECTED";
  if (state === "connecting" || state === "disconnected") return "CONNECTING";
  return "CLOSED";
}

/** `[corral: 127.0.0.1:2181(CONNECTED) 0] ` */
export function formatPrompt(connectString: string, state: ClientState | undefined, commandCount: number): string {
  return `[corral: ${connectString}(${promptState(state)}) ${commandCount}] `;
}

/** UTF-8 text of a znode's data, as zkCli prints it (invalid bytes become U+FFFD). */
export function formatData(data: Uint8Array): string {
  return new TextDecoder().decode(data);
}

/**
 * One line for a failed command, never a stack: zkCli's wording for the codes it names
 * (Node does not exist: /x, …), `<CODE>: <path>` for the rest, the SDK's reason where it gave one
 * (an invalid path, a connect timeout).
 */
export function describeError(err: unknown): string {
  if (err instanceof ShellError) return err.message;
  if (!(err instanceof ZkError)) return err instanceof Error ? `error: ${err.message}` : `error: ${String(err)}`;
  // zkCli's words for the reconfig refusals, which name no node.
  switch (err.code) {
    case "RECONFIGINPROGRESS":
      return "Another reconfiguration is in progress -- concurrent reconfigs not supported (yet)";
    case "NEWCONFIGNOQUORUM":
      return "No quorum of new config is connected and up-to-date with the leader of last committed config - try invoking reconfiguration after new servers are connected and synced";
    case "RECONFIGDISABLED":
      return "KeeperErrorCode = Reconfig is disabled";
  }
  const path = err.path;
  const generic = err.message === err.code || (path !== undefined && err.message === `${err.code}: ${path}`);
  if (path !== undefined) {
    switch (err.code) {
      case "NONODE":
        return `Node does not exist: ${path}`;
      case "NODEEXISTS":
        return `Node already exists: ${path}`;
      case "NOTEMPTY":
        return `Node not empty: ${path}`;
      case "BADVERSION":
        return `version No is not valid : ${path}`;
      case "NOCHILDRENFOREPHEMERALS":
        return `Ephemerals cannot have children: ${path}`;
      case "INVALIDACL":
        return `Acl is not valid : ${path}`;
      case "NOAUTH":
        return `Insufficient permission : ${path}`;
      case "NOTREADONLY":
        return `Not a read-only call: ${path}`;
      case "QUOTAEXCEEDED":
        return `Quota has exceeded : ${path}`;
      case "NOWATCHER":
        return `KeeperErrorCode = No such watcher for ${path}`;
      case "BADARGUMENTS":
        return generic ? `Argument error : ${path}` : err.message;
      default:
        return `${err.code}: ${path}`;
    }
  }
  return generic || err.message.startsWith(`${err.code}:`) ? err.message : `${err.code}: ${err.message}`;
}

/** Why `Client.connect(connectString)` failed, for someone who just typed `corral shell`. */
export function describeConnectFailure(connectString: string, timeoutMs: number, err: unknown, tls = false): string {
  if (err instanceof ZkError && err.code === "CONNECTIONLOSS") {
    return (
      `Unable to connect to ${connectString}: no server accepted a session within ${timeoutMs} ms.\n` +
      (tls
        ? `Over TLS: does the server speak TLS on that port (clientPortTls), is its certificate signed by --tls-ca-file and does it name the host, and does it want a client certificate (--tls-cert-file, --tls-key-file)?`
        : `Is a corral server running there? (npm start runs a three-voter cluster on 127.0.0.1:2181-2183)`)
    );
  }
  if (err instanceof ZkError && err.code === "BADARGUMENTS") return err.message;
  return `Unable to connect to ${connectString}: ${describeError(err)}`;
}
