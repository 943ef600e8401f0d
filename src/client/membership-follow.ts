/**
 * What a client following the cluster's membership makes of a getMembers answer: the server list it
 * should switch to, or why it keeps the one it has. Pure, so that every rule has a table test.
 */
import { ZkError } from "../common/errors.js";
import type { Members as WireMembers } from "../../gen/client.js";
import { hostAddress } from "./connect-string.js";
import type { ClusterMember, ClusterMembers } from "./types.js";

export type FollowDecision = { kind: "update"; servers: string[] } | { kind: "keep"; reason: string };

/** The server this session is connected to: its address as dialled, its id as it gave it. */
export interface ConnectedServer {
  serverId: number;
  address: string;
}

/**
 * The next server list for a client whose list is `current` (addresses as `hostAddress` writes
 * them), connected to `connected`, given `answer`:
 * - the connected server must advertise the very address this client dialled: otherwise something
 *   (a load balancer, NAT, a port mapping) stands between them, and the advertised addresses may be
 *   unreachable from here;
 * - every member's address known: the list becomes exactly those;
 * - some unknown (added by reconfig, never heard by the answering server): the known ones are added,
 *   nothing is removed — one unknown member must not drop a server the client can use;
 * - no change as a set, or no address at all: the list stays.
 */
export function nextServerList(current: readonly string[], answer: ClusterMembers, connected: ConnectedServer | undefined): FollowDecision {
  if (connected === undefined) return { kind: "keep", reason: "not connected" };
  const self = answer.members.find((m) => m.serverId === connected.serverId);
  if (self === undefined) return { kind: "keep", reason: `server ${connected.serverId} is not a member of the configuration it reports` };
  if (self.clientAddress !== connected.address) {
    return {
      kind: "keep",
      reason: `server ${connected.serverId} was dialled at ${connected.address} but advertises ${self.clientAddress ?? "no address"}: its members' addresses may not be reachable from here`,
    };
  }
  const known = answer.members.flatMap((m) => (m.clientAddress === undefined ? [] : [m.clientAddress]));
  const complete = known.length === answer.members.length;
  const next = complete ? known : [...current, ...known.filter((address) => !current.includes(address))];
  if (sameSet(next, current)) return { kind: "keep", reason: "the members are the servers already listed" };
  return { kind: "update", servers: next };
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const left = new Set(a);
  const right = new Set(b);
  return left.size === right.size && [...left].every((x) => right.has(x));
}

/** A getMembers answer → the SDK's ClusterMembers; MARSHALLINGERROR if it carries none. */
export function membersFromWire(wire: WireMembers | undefined): ClusterMembers {
  if (wire === undefined) throw new ZkError("MARSHALLINGERROR", "getMembers answer carries no members");
  const members = wire.members.map((m): ClusterMember => {
    const known = m.clientHost !== "" && m.clientPort >= 1 && m.clientPort <= 65_535;
    return {
      serverId: m.serverId,
      role: m.observer ? "observer" : "participant",
      ...(known ? { clientAddress: hostAddress({ host: m.clientHost, port: m.clientPort }) } : {}),
    };
  });
  return { version: wire.configVersion, members };
}
