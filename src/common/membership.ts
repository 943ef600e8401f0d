/**
 * The cluster's membership in ZooKeeper's dynamic-configuration text (QuorumMaj.toString): what
 * /zookeeper/config holds, zkCli's `config` prints and the `conf` four-letter word ends with.
 */

export interface MemberAddress {
  serverId: number;
  host: string;
  quorumPort: number;
  electionPort: number;
  type: "participant" | "observer";
  /** The ZooKeeper-protocol client address ("server.N=...;host:port"), when the member has one. */
  clientHost?: string;
  clientPort?: number;
}

/**
 * One "server.N=host:quorum:election:type[;clientHost:clientPort]" line per member in id order (as
 * ZooKeeper's map of them iterates), then "version=<hex>", no newline after it.
 */
export function formatMembership(members: readonly MemberAddress[], version: bigint): string {
  let text = "";
  for (const member of [...members].sort((a, b) => a.serverId - b.serverId)) {
    text += `server.${member.serverId}=${bracketed(member.host)}:${member.quorumPort}:${member.electionPort}:${member.type}`;
    if (member.clientHost !== undefined && member.clientPort !== undefined) text += `;${bracketed(member.clientHost)}:${member.clientPort}`;
    text += "\n";
  }
  return `${text}version=${BigInt.asUintN(64, version).toString(16)}`;
}

/** An IPv6 address in brackets, as Java's formatInetAddr writes one before a port. */
function bracketed(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}
