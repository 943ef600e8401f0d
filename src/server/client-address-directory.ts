/**
 * Where each server's corral client port is dialled, by server id. /zookeeper/config names only the
 * ZooKeeper-protocol ports, so a server learns the others' gRPC client addresses from its static
 * config (the members it started with) and from the servers themselves: every peer call carries the
 * caller's advertised address (`corral-client-address`, see peer/peer-calls.ts), and every answer the
 * callee's. A server added by a reconfiguration is known once it has called this one, or answered
 * a call from it. getMembers joins this with the configuration in force (replica/cluster-config.ts membersReply).
 *
 * What a peer says is checked here (a bounded length, a host, a port 1..65535) and a bad value is
 * ignored: the directory is only as trustworthy as the peer links, which is the trust a member
 * already has to vote. Its size is bounded by the ids a corral server can have.
 */
import type { ServerConfig } from "./config.js";

/** The highest id a corral server can have (config.ts: 1..254, 255 would collide with TTL owner tags). */
export const SERVER_ID_MAX = 254;
/** The longest address accepted: a 253-character DNS name (or a bracketed IPv6 literal), ':', five digits. */
export const CLIENT_ADDRESS_CHARS_MAX = 262;

/** A client address as clients dial it. */
export interface ClientAddress {
  /** A host name or IP address; IPv6 without brackets. */
  host: string;
  port: number;
}

const HOST_PORT = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+)):([0-9]{1,5})$/;

/**
 * "host:port" or "[ipv6]:port" → the address; undefined for anything else (too long, no host, a
 * port outside 1..65535, characters no host name has). Never throws: the text comes from a peer.
 */
export function parseClientAddress(text: unknown): ClientAddress | undefined {
  if (typeof text !== "string" || text.length > CLIENT_ADDRESS_CHARS_MAX) return undefined;
  const match = HOST_PORT.exec(text);
  if (match === null) return undefined;
  const host = match[1] ?? match[2]!;
  const port = Number(match[3]);
  if (port < 1 || port > 65_535) return undefined;
  // An IPv6 literal has a colon; one without brackets would be ambiguous with the port.
  if (match[1] !== undefined && !host.includes(":")) return undefined;
  return { host, port };
}

/** The address as a connect string names it ("host:port", "[ipv6]:port"). */
export function formatClientAddress(address: ClientAddress): string {
  return address.host.includes(":") ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}

function isServerId(serverId: number): boolean {
  return Number.isInteger(serverId) && serverId >= 1 && serverId <= SERVER_ID_MAX;
}

export class ClientAddressDirectory {
  private readonly addresses = new Map<number, ClientAddress>();
  private own: string | undefined;

  /**
   * `serverId` is this server; `seeds` the members of its static config with their client
   * addresses (a later record from the server itself replaces its seed).
   */
  constructor(
    readonly serverId: number,
    seeds: Iterable<{ serverId: number; address: string }> = [],
  ) {
    for (const seed of seeds) this.store(seed.serverId, seed.address);
  }

  /** This server's own address as it advertises it to its peers, once known. */
  get ownAddress(): string | undefined {
    return this.own;
  }

  /** This server's client port is bound at `address` ("host:port"): advertised from now on. */
  advertise(address: string): boolean {
    if (!this.store(this.serverId, address)) return false;
    this.own = formatClientAddress(this.addresses.get(this.serverId)!);
    return true;
  }

  /**
   * Records what server `serverId` says its client address is (peer metadata); false, and nothing
   * changes, if it is not one — or if it names this server, whose address only `advertise` sets.
   */
  record(serverId: number, text: unknown): boolean {
    return serverId !== this.serverId && this.store(serverId, text);
  }

  private store(serverId: number, text: unknown): boolean {
    if (!isServerId(serverId)) return false;
    const address = parseClientAddress(text);
    if (address === undefined) return false;
    this.addresses.set(serverId, address);
    return true;
  }

  /** Where server `serverId`'s clients connect, if known. */
  addressOf(serverId: number): ClientAddress | undefined {
    return this.addresses.get(serverId);
  }

  /** How many servers have an address here (at most SERVER_ID_MAX). */
  get size(): number {
    return this.addresses.size;
  }
}

/** Hosts that bind every interface: no client can dial them. */
const WILDCARD_HOSTS = new Set(["0.0.0.0", "::", "0:0:0:0:0:0:0:0"]);

/**
 * Where clients dial this server's client port bound at `port`: its clientHost, unless that binds
 * every interface — then its servers entry's host (what the cluster's connect string names), or
 * loopback for a standalone server (as the console does).
 */
export function advertisedClientAddress(config: Pick<ServerConfig, "serverId" | "clientHost" | "servers">, port: number): string {
  let host = config.clientHost;
  if (WILDCARD_HOSTS.has(host)) {
    const self = config.servers.find((s) => s.id === config.serverId);
    host = self?.host ?? (host === "0.0.0.0" ? "127.0.0.1" : "::1");
  }
  return formatClientAddress({ host, port });
}

/**
 * The directory a server starts with: every member of its static config at its entry's host and
 * client port, and itself at its advertised address when its client port is configured (in a
 * cluster it always is; a port 0 is advertised once bound, see `advertise`).
 */
export function directoryFromConfig(config: Pick<ServerConfig, "serverId" | "clientHost" | "clientPort" | "servers">): ClientAddressDirectory {
  const directory = new ClientAddressDirectory(
    config.serverId,
    config.servers.map((s) => ({ serverId: s.id, address: formatClientAddress({ host: s.host, port: s.clientPort }) })),
  );
  if (config.clientPort > 0) directory.advertise(advertisedClientAddress(config, config.clientPort));
  return directory;
}
