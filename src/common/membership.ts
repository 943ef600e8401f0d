/**
 * The cluster's membership in ZooKeeper's dynamic-configuration text (QuorumMaj.toString): what
 * /zookeeper/config holds, zkCli's `config` prints and the `conf` four-letter word ends with.
 */

import { hexDigits64 } from "./hex.js";
import { ZkError } from "./errors.js";

/**
 * Whether a member votes (a participant) or only learns (an observer): ZooKeeper's LearnerType,
 * one name for it everywhere in corral.
 */
export type MemberRole = "participant" | "observer";

export interface MemberAddress {
  serverId: number;
  host: string;
  quorumPort: number;
  electionPort: number;
  role: MemberRole;
  /** The ZooKeeper-protocol client address ("server.N=...;host:port"), when the member has one. */
  clientHost?: string;
  clientPort?: number;
}

/**
 * The longest configuration text a cluster may run with: every election notification carries it
 * (the peer codec refuses longer ones), so a reconfig asking for more is refused up front.
 */
export const MEMBERSHIP_TEXT_BYTES_MAX = 64 * 1024;

/**
 * One "server.N=host:quorum:election:type[;clientHost:clientPort]" line per member in id order (as
 * ZooKeeper's map of them iterates), then "version=<hex>", no newline after it.
 */
export function formatMembership(members: readonly MemberAddress[], version: bigint): string {
  let text = "";
  for (const member of [...members].sort((a, b) => a.serverId - b.serverId)) {
    text += `server.${member.serverId}=${bracketed(member.host)}:${member.quorumPort}:${member.electionPort}:${member.role}`;
    if (member.clientHost !== undefined && member.clientPort !== undefined) text += `;${bracketed(member.clientHost)}:${member.clientPort}`;
    text += "\n";
  }
  return `${text}version=${hexDigits64(version)}`;
}

/** An IPv6 address in brackets, as Java's formatInetAddr writes one before a port. */
function bracketed(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

/**
 * One member from ZooKeeper's dynamic-configuration form: `key` is "server.N", `value`
 * "host:quorumPort:electionPort[:participant|observer][;[clientHost:]clientPort]". Throws ZkError
 * BADARGUMENTS on anything else. `clientRequired`: reconfig's joiners must name a client port.
 */
export function parseMember(key: string, value: string, clientRequired = false): MemberAddress {
  const idText = /^server\.(\d{1,9})$/.exec(key.trim())?.[1];
  if (idText === undefined || Number(idText) < 1) throw badMember(`"${key}" is not server.<id>`);
  const serverId = Number(idText);
  const [serverPart = "", clientPart, ...rest] = value.trim().split(";");
  if (rest.length > 0) throw badMember(`server.${serverId}: more than one ';'`);
  const fields = splitHostPorts(serverPart);
  if (fields === undefined || fields.ports.length < 2 || fields.ports.length > 3) {
    throw badMember(`server.${serverId}: expected host:quorumPort:electionPort[:role], got "${serverPart}"`);
  }
  const [quorumText, electionText, roleText] = fields.ports;
  const type = roleText === undefined || roleText === "participant" ? "participant" : roleText === "observer" ? "observer" : undefined;
  if (type === undefined) throw badMember(`server.${serverId}: unknown role "${roleText}"`);
  const member: MemberAddress = {
    serverId,
    host: fields.host,
    quorumPort: port(quorumText!, serverId),
    electionPort: port(electionText!, serverId),
    role: type,
  };
  if (clientPart === undefined || clientPart.trim() === "") {
    if (clientRequired) throw badMember(`server.${serverId}: no client port`);
    return member;
  }
  const client = clientPart.includes(":") ? splitHostPorts(clientPart.trim()) : { host: "0.0.0.0", ports: [clientPart.trim()] };
  if (client === undefined || client.ports.length !== 1) throw badMember(`server.${serverId}: bad client address "${clientPart}"`);
  return { ...member, clientHost: client.host, clientPort: port(client.ports[0]!, serverId) };
}

/**
 * A membership in ZooKeeper's dynamic-configuration text: "server.N=…" lines (newlines or commas
 * between them, as reconfig's new-members list) and an optional "version=<hex>". Throws ZkError
 * BADARGUMENTS on a malformed line, a repeated id or address, or no member at all.
 */
export function parseMembership(text: string, clientRequired = false): { members: MemberAddress[]; version: bigint | undefined } {
  const members: MemberAddress[] = [];
  let version: bigint | undefined;
  for (const raw of text.split(/[\n,]/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    if (eq < 0) throw badMember(`"${line}" is not key=value`);
    const key = line.slice(0, eq).trim();
    const value = line.slice(eq + 1);
    if (key === "version") {
      if (!/^[0-9a-fA-F]{1,16}$/.test(value.trim())) throw badMember(`bad version "${value}"`);
      version = BigInt("0x" + value.trim());
      continue;
    }
    members.push(parseMember(key, value, clientRequired));
  }
  if (members.length === 0) throw badMember("no server.<id> line");
  checkDistinct(members);
  return { members, version };
}

/** No id twice, and no two members on one quorum or election address (ZooKeeper's checkAddressDuplicate). */
export function checkDistinct(members: readonly MemberAddress[]): void {
  const ids = new Set<number>();
  const addresses = new Set<string>();
  for (const m of members) {
    if (ids.has(m.serverId)) throw badMember(`server.${m.serverId} is listed twice`);
    ids.add(m.serverId);
    for (const address of [`${m.host}:${m.quorumPort}`, `${m.host}:${m.electionPort}`]) {
      if (addresses.has(address)) throw badMember(`server.${m.serverId}: ${address} is already in use by another member`);
      addresses.add(address);
    }
  }
}

/** A host name or IPv4 address (at most a DNS name's 253 characters). */
const HOST_NAME = /^[A-Za-z0-9._-]{1,253}$/;
/** An IPv6 address as it stands between brackets (an optional zone after '%'). */
const IPV6 = /^[0-9A-Fa-f:.]{2,45}(?:%[A-Za-z0-9._-]{1,64})?$/;

/**
 * "host:p1:p2…" with the host optionally in brackets (IPv6). The host must be a host name or an IP
 * address: every member dials every other's, and an address gRPC cannot parse (a carriage return
 * or a line separator inside a name) would throw where it is dialled — on every server, for a
 * reconfig a client asked for.
 */
function splitHostPorts(text: string): { host: string; ports: string[] } | undefined {
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    if (close < 0 || text[close + 1] !== ":") return undefined;
    const host = text.slice(1, close);
    return IPV6.test(host) && host.includes(":") ? { host, ports: text.slice(close + 2).split(":") } : undefined;
  }
  const [host, ...ports] = text.split(":");
  if (host === undefined || !HOST_NAME.test(host) || ports.length === 0) return undefined;
  return { host, ports };
}

function port(text: string, serverId: number): number {
  const value = /^\d{1,5}$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!(value >= 1 && value <= 65_535)) throw badMember(`server.${serverId}: bad port "${text}"`);
  return value;
}

function badMember(detail: string): ZkError {
  return new ZkError("BADARGUMENTS", `bad server specification: ${detail}`);
}
