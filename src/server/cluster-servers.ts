/**
 * The cluster's servers list: every member (voters and observers) with its host and its client,
 * quorum and election ports, as ZooKeeper's `server.N=` lines give them. One list describes the
 * whole cluster and is shared by all its servers, so it is read, written and checked on its own
 * (the compact CORRAL_SERVERS form, a JSON array), apart from any one server's configuration; what
 * tools and clients derive from it (connect strings, the voters, the dynamic configuration's
 * members) is here too.
 */
import type { MemberAddress, MemberRole } from "../common/membership.js";
import { coerceInt, ConfigError } from "./config-error.js";

/** One member of the cluster, as every server's config lists it (ZooKeeper's `server.N=` line). */
export interface ServerEntry {
  /** 1..254, this server's serverId. */
  id: number;
  /** Where the others (and clients) reach it; a hostname or an IP address (IPv6 without brackets). */
  host: string;
  clientPort: number;
  /** Followers and observers connect to the leader's quorum port (ZooKeeper's 2888). */
  quorumPort: number;
  /** Leader election traffic (ZooKeeper's 3888). */
  electionPort: number;
  /** Participants vote and can lead; observers only learn. */
  role: MemberRole;
  /** The port speaking ZooKeeper's own client protocol (jute); absent = none. */
  zkClientPort?: number;
  /**
   * This server's Prometheus /metrics port and its admin HTTP port (JSON form only): what it
   * serves when its own config does not say otherwise. Other members never use them; they are
   * here so that one cluster file gives every member of a one-host cluster its own ports.
   */
  metricsPort?: number;
  adminPort?: number;
  /** The same protocol over TLS (ZooKeeper's secureClientPort); absent = none. */
  secureZkClientPort?: number;
}

const ROLES: ReadonlySet<string> = new Set<MemberRole>(["participant", "observer"]);
const ENTRY_FIELDS = [
  "id",
  "host",
  "clientPort",
  "quorumPort",
  "electionPort",
  "role",
  "zkClientPort",
  "secureZkClientPort",
  "metricsPort",
  "adminPort",
] as const;
/** An entry's optional ports, each a field of the server's own config too. */
const ENTRY_OPTIONAL_PORTS = ["zkClientPort", "secureZkClientPort", "metricsPort", "adminPort"] as const;
const ENTRY_PORTS = ["clientPort", "quorumPort", "electionPort"] as const;

/** One entry of a JSON `servers` array. `role` may be omitted (participant). */
export function serverEntryFromObject(raw: unknown, index: number): ServerEntry {
  const at = `servers[${index}]`;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new ConfigError(at, `expected an object, got ${JSON.stringify(raw)}`);
  const record = raw as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!(ENTRY_FIELDS as readonly string[]).includes(key)) throw new ConfigError(`${at}.${key}`, "unknown field");
  }
  for (const key of ["id", "host", ...ENTRY_PORTS] as const) {
    if (record[key] === undefined) throw new ConfigError(`${at}.${key}`, "missing");
  }
  if (typeof record["host"] !== "string") throw new ConfigError(`${at}.host`, `expected a string, got ${JSON.stringify(record["host"])}`);
  const role = record["role"] ?? "participant";
  if (typeof role !== "string") throw new ConfigError(`${at}.role`, `expected participant or observer, got ${JSON.stringify(role)}`);
  return {
    id: coerceInt(`${at}.id`, record["id"]),
    host: record["host"],
    clientPort: coerceInt(`${at}.clientPort`, record["clientPort"]),
    quorumPort: coerceInt(`${at}.quorumPort`, record["quorumPort"]),
    electionPort: coerceInt(`${at}.electionPort`, record["electionPort"]),
    role: role as MemberRole,
    ...Object.fromEntries(ENTRY_OPTIONAL_PORTS.filter((port) => record[port] !== undefined).map((port) => [port, coerceInt(`${at}.${port}`, record[port])])),
  };
}

const COMPACT_ENTRY = /^(?:server\.)?([^=]*)=(\[[^\]]*\]|[^:[\]]*):([^:]*):([^:]*):([^:]*)(?::([^:]*)(?::([^:]*)(?::([^:]*))?)?)?$/;

/**
 * The compact servers list used by CORRAL_SERVERS and --servers:
 * `ID=HOST:CLIENT_PORT:QUORUM_PORT:ELECTION_PORT[:ROLE[:ZK_CLIENT_PORT[:SECURE_ZK_CLIENT_PORT]]]`
 * entries separated by commas (whitespace around entries ignored, an IPv6 host in brackets, ROLE
 * participant by default, no ZooKeeper-protocol port by default; ZK_CLIENT_PORT may be left empty
 * when only the secure one is given), e.g.
 * `1=corral1:2181:2888:3888:participant,2=corral2:2181:2888:3888,4=corral4:2181:2888:3888:observer`.
 * Only the syntax is checked here; validateConfig checks the values.
 */
export function parseServers(text: string): ServerEntry[] {
  const entries: ServerEntry[] = [];
  for (const part of text.split(",")) {
    const item = part.trim();
    if (item === "") continue;
    const at = `servers[${entries.length}]`;
    const match = COMPACT_ENTRY.exec(item);
    if (!match)
      throw new ConfigError(
        at,
        `expected ID=HOST:CLIENT_PORT:QUORUM_PORT:ELECTION_PORT[:participant|observer[:ZK_CLIENT_PORT[:SECURE_ZK_CLIENT_PORT]]], got ${JSON.stringify(item)}`,
      );
    const [, id, hostText, client, quorum, election, role, zkClient, secureZkClient] = match as unknown as [
      string,
      string,
      string,
      string,
      string,
      string,
      string | undefined,
      string | undefined,
      string | undefined,
    ];
    const host = hostText.startsWith("[") ? hostText.slice(1, -1) : hostText;
    entries.push({
      id: coerceInt(`${at}.id`, id),
      host,
      clientPort: coerceInt(`${at}.clientPort`, client),
      quorumPort: coerceInt(`${at}.quorumPort`, quorum),
      electionPort: coerceInt(`${at}.electionPort`, election),
      role: (role ?? "participant") as MemberRole,
      ...(zkClient === undefined || (zkClient === "" && secureZkClient !== undefined) ? {} : { zkClientPort: coerceInt(`${at}.zkClientPort`, zkClient) }),
      ...(secureZkClient === undefined ? {} : { secureZkClientPort: coerceInt(`${at}.secureZkClientPort`, secureZkClient) }),
    });
  }
  return entries;
}

/** `host:port`, with an IPv6 host in brackets. */
export function formatHostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The compact form parseServers reads back (CORRAL_SERVERS). */
export function formatServers(servers: readonly ServerEntry[]): string {
  return servers
    .map((s) => {
      const zk =
        s.secureZkClientPort !== undefined ? `:${s.zkClientPort ?? ""}:${s.secureZkClientPort}` : s.zkClientPort === undefined ? "" : `:${s.zkClientPort}`;
      return `${s.id}=${s.host.includes(":") ? `[${s.host}]` : s.host}:${s.clientPort}:${s.quorumPort}:${s.electionPort}:${s.role}${zk}`;
    })
    .join(",");
}

/** The members as ZooKeeper's dynamic configuration lists them: the client address is the ZooKeeper-protocol port's. */
export function memberAddresses(servers: readonly ServerEntry[]): MemberAddress[] {
  return servers.map((s) => ({
    serverId: s.id,
    host: s.host,
    quorumPort: s.quorumPort,
    electionPort: s.electionPort,
    role: s.role,
    ...(s.zkClientPort === undefined ? {} : { clientHost: s.host, clientPort: s.zkClientPort }),
  }));
}

/** The servers list on its own: ids, hosts, ports, roles. Empty is valid (standalone). */
export function validateServers(servers: readonly ServerEntry[]): void {
  if (!Array.isArray(servers)) throw new ConfigError("servers", "expected a list");
  // Array.isArray narrows to any[]; the entries are ServerEntry objects, each field checked below.
  const entries: readonly ServerEntry[] = servers;
  const ids = new Map<number, number>();
  const endpoints = new Map<string, string>();
  entries.forEach((server, index) => {
    const at = `servers[${index}]`;
    if (!Number.isSafeInteger(server.id) || server.id < 1 || server.id > 254) {
      throw new ConfigError(`${at}.id`, `must be an integer within [1, 254], got ${server.id}`);
    }
    const twin = ids.get(server.id);
    if (twin !== undefined) throw new ConfigError(`${at}.id`, `duplicate id ${server.id} (also servers[${twin}])`);
    ids.set(server.id, index);
    if (typeof server.host !== "string" || server.host.trim() === "") throw new ConfigError(`${at}.host`, "must not be empty");
    if (/[\s,=/[\]]/.test(server.host)) throw new ConfigError(`${at}.host`, `not a host name or address: ${JSON.stringify(server.host)}`);
    if (!ROLES.has(server.role)) throw new ConfigError(`${at}.role`, `expected participant or observer, got ${JSON.stringify(server.role)}`);
    const ports = [...ENTRY_PORTS, ...ENTRY_OPTIONAL_PORTS.filter((port) => server[port] !== undefined)];
    for (const port of ports) {
      const value = server[port] as number;
      if (!Number.isSafeInteger(value) || value < 1 || value > 65535) {
        throw new ConfigError(`${at}.${port}`, `must be an integer within [1, 65535], got ${value}`);
      }
      const endpoint = formatHostPort(server.host.toLowerCase(), value);
      const user = endpoints.get(endpoint);
      if (user !== undefined) throw new ConfigError(`${at}.${port}`, `${endpoint} is already ${user}`);
      endpoints.set(endpoint, `${at}.${port}`);
    }
  });
  if (entries.length > 0 && !entries.some((s) => s.role === "participant")) {
    throw new ConfigError("servers", "needs at least one participant (observers cannot form a quorum)");
  }
}

/** This server's own entry in the servers list (undefined when standalone). */
export function thisServer(config: { readonly servers: readonly ServerEntry[]; readonly serverId: number }): ServerEntry | undefined {
  return config.servers.find((s) => s.id === config.serverId);
}

/** The voting members (participants) and the observers, each in id order; both empty when standalone. */
export function quorumMembers(config: { readonly servers: readonly ServerEntry[] }): { voters: ServerEntry[]; observers: ServerEntry[] } {
  const sorted = [...config.servers].sort((a, b) => a.id - b.id);
  return { voters: sorted.filter((s) => s.role === "participant"), observers: sorted.filter((s) => s.role === "observer") };
}

/**
 * What a client passes to Client.connect: every server's host:clientPort (observers serve clients
 * too), in list order; a standalone server's own clientHost:clientPort.
 */
export function clusterConnectString(config: { readonly servers: readonly ServerEntry[]; readonly clientHost: string; readonly clientPort: number }): string {
  if (config.servers.length === 0) return formatHostPort(config.clientHost, config.clientPort);
  return config.servers.map((s) => formatHostPort(s.host, s.clientPort)).join(",");
}

/**
 * What a ZooKeeper client (zkCli.sh -server, Curator, kazoo) connects with: every server's
 * host:zkClientPort; undefined when no server has one.
 */
export function clusterZkConnectString(config: {
  readonly servers: readonly ServerEntry[];
  readonly clientHost: string;
  readonly zkClientPort: number;
}): string | undefined {
  if (config.servers.length === 0) return config.zkClientPort > 0 ? formatHostPort(config.clientHost, config.zkClientPort) : undefined;
  const hosts = config.servers.filter((s) => s.zkClientPort !== undefined).map((s) => formatHostPort(s.host, s.zkClientPort!));
  return hosts.length > 0 ? hosts.join(",") : undefined;
}

/** The same over TLS: every server's host:secureZkClientPort; undefined when no server has one. */
export function clusterSecureZkConnectString(config: {
  readonly servers: readonly ServerEntry[];
  readonly clientHost: string;
  readonly secureZkClientPort: number;
}): string | undefined {
  if (config.servers.length === 0) return config.secureZkClientPort > 0 ? formatHostPort(config.clientHost, config.secureZkClientPort) : undefined;
  const hosts = config.servers.filter((s) => s.secureZkClientPort !== undefined).map((s) => formatHostPort(s.host, s.secureZkClientPort!));
  return hosts.length > 0 ? hosts.join(",") : undefined;
}
