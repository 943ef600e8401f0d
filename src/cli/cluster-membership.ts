/**
 * The membership `corral cluster` runs, as it changes live. DIR/cluster.json always lists the
 * members in force, so that a member restarted by hand, or the whole launcher restarted, comes back
 * with them. DIR/launch.json remembers the membership the launcher's flags laid out before the first
 * live change: run again with those same flags, the launcher takes cluster.json's members rather
 * than refusing them as another cluster's. Pure but for reading and writing those two files.
 */
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseMembership } from "../common/membership.js";
import { formatHostPort, formatServers, type ServerEntry } from "../server/cluster-servers.js";
import { ConfigError } from "../server/config-error.js";

export const CLUSTER_CONFIG_FILE = "cluster.json";
export const LAUNCH_FILE = "launch.json";

/** The highest server id ZooKeeper (and corral) accepts. */
export const SERVER_ID_MAX = 254;

/** Who the members are and how they reach each other; client-side ports may change between runs, membership not. */
export function membershipKey(servers: readonly ServerEntry[]): string {
  const sorted = [...servers].sort((a, b) => a.id - b.id);
  return formatServers(sorted.map(({ zkClientPort: _client, secureZkClientPort: _secure, metricsPort: _metrics, adminPort: _admin, ...entry }) => entry));
}

/** What DIR/launch.json holds. */
interface LaunchRecord {
  /** membershipKey of the members the flags laid out, before the first live change. */
  initialMembership: string;
}

/** The launch record, if the membership was ever changed live in `dataDir`. */
export function readLaunchRecord(dataDir: string): LaunchRecord | undefined {
  const path = join(dataDir, LAUNCH_FILE);
  if (!existsSync(path)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as Partial<LaunchRecord>;
    if (typeof parsed.initialMembership !== "string") throw new Error("no initialMembership");
    return { initialMembership: parsed.initialMembership };
  } catch (error) {
    throw new ConfigError("data-dir", `${path} is not corral cluster's launch record (${(error as Error).message}); remove it or pick another --data-dir`);
  }
}

/** Writes `text` to `path` through a temporary file and a rename: a reader sees the old file or the new one. */
export function writeAtomically(path: string, text: string): void {
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, text);
  renameSync(temp, path);
}

/** Records the flags' membership as the initial one, unless a live change already did. */
export function ensureLaunchRecord(dataDir: string, initial: readonly ServerEntry[]): void {
  if (readLaunchRecord(dataDir) !== undefined) return;
  const record: LaunchRecord = { initialMembership: membershipKey(initial) };
  writeAtomically(join(dataDir, LAUNCH_FILE), JSON.stringify(record, null, 2) + "\n");
}

/**
 * The id the next member gets: past every current member and every DIR/<id> directory, so that a
 * new member never starts on a removed member's data (ZooKeeper advises against reusing ids).
 */
export function nextMemberId(servers: readonly ServerEntry[], dataDir: string): number {
  let last = Math.max(0, ...servers.map((s) => s.id));
  for (const name of existsSync(dataDir) ? readdirSync(dataDir) : []) {
    if (/^[1-9]\d{0,2}$/.test(name)) last = Math.max(last, Number(name));
  }
  return last + 1;
}

/** Voters needed for a quorum of `voters` (a majority). */
export function quorumSize(voters: number): number {
  return Math.floor(voters / 2) + 1;
}

/**
 * Why removing server `id` must not be tried, or undefined when it may: it must be a member, at
 * least two voters must remain (ZooKeeper refuses fewer), and a quorum of the members both before
 * and after must be running, since the change commits only with both.
 */
export function removalRefusal(servers: readonly ServerEntry[], id: number, running: ReadonlySet<number>): string | undefined {
  const member = servers.find((s) => s.id === id);
  if (member === undefined) return `server ${id} is not a member (members: ${servers.map((s) => s.id).join(", ")})`;
  if (member.role === "observer") return undefined;
  const before = servers.filter((s) => s.role === "participant").map((s) => s.id);
  const after = before.filter((voter) => voter !== id);
  if (after.length < 2) {
    return `removing voter ${id} would leave ${after.length} voter${after.length === 1 ? "" : "s"}: a cluster keeps at least 2 (add one first)`;
  }
  for (const [which, voters] of [
    ["the voters now", before],
    ["the remaining voters", after],
  ] as const) {
    const up = voters.filter((voter) => running.has(voter));
    const needed = quorumSize(voters.length);
    if (up.length < needed) {
      return `${which} (${voters.join(", ")}) need ${needed} running to commit the change, and only ${up.length} ${up.length === 1 ? "is" : "are"} (${up.join(", ") || "none"})`;
    }
  }
  return undefined;
}

/**
 * ZooKeeper's member line for a reconfig's joining list: "server.N=host:quorum:election:role;host:port".
 * The client address is the ZooKeeper-protocol port (what /zookeeper/config lists); a member
 * without one names its secure one, or else its gRPC port, since a joiner must name some client port.
 */
export function memberLine(entry: ServerEntry): string {
  const clientPort = entry.zkClientPort ?? entry.secureZkClientPort ?? entry.clientPort;
  const address = (port: number) => formatHostPort(entry.host, port);
  return `server.${entry.id}=${address(entry.quorumPort)}:${entry.electionPort}:${entry.role};${address(clientPort)}`;
}

/**
 * The members a configuration text lists, as the launcher's entries (`known` by id, with the
 * configuration's role), and the ids it lists that the launcher did not start (changed by hand).
 */
export function membersInConfig(text: string, known: readonly ServerEntry[]): { servers: ServerEntry[]; unknown: number[] } {
  const servers: ServerEntry[] = [];
  const unknown: number[] = [];
  for (const member of parseMembership(text).members) {
    const entry = known.find((s) => s.id === member.serverId);
    if (entry === undefined) unknown.push(member.serverId);
    else servers.push({ ...entry, role: member.role });
  }
  return { servers: servers.sort((a, b) => a.id - b.id), unknown };
}
