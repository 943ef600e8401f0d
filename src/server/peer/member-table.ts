/**
 * The member table: every server the peer transport may dial, with its addresses and role,
 * replaced as a whole when a reconfiguration comes into force. It lives apart from the links so
 * that a membership change is worked out once, here, as the servers that joined, left or moved;
 * PeerTransport.updateMembers then tells each kind of link what that means for it.
 *
 * This server's own entry always stays, even when a new list leaves it out: a removed server keeps
 * running, and keeps its ports, until the host stops it. Its services stay bound where they were
 * started (`me`) until the transport restarts.
 */
import type { MemberRole } from "../../common/membership.js";
import type { Logger } from "pino";
import { assert } from "../../common/assert.js";
import type { MemberAddress } from "../../common/membership.js";

export interface PeerMember {
  id: number;
  host: string;
  quorumPort: number;
  electionPort: number;
  role: MemberRole;
}

/** How a new member list differs from the table it replaced (this server left out). */
export interface MembershipChange {
  /** Joined: dialled on the first send, like any member. */
  added: number[];
  /** Left: no longer dialled. */
  removed: number[];
  /** Still members, at another address or in another role: dialled afresh. */
  changed: number[];
}

/** `host:port`, with an IPv6 host in brackets (as gRPC takes it). */
export function formatAddress(host: string, port: number): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]:${port}` : `${host}:${port}`;
}

function assertMember(id: number, role: string, taken: ReadonlyMap<number, unknown>): void {
  assert(Number.isSafeInteger(id) && id > 0 && id <= 0xffffffff, `server id ${id}`);
  assert(!taken.has(id), `server id ${id} listed twice`);
  assert(role === "participant" || role === "observer", `role of server ${id}`);
}

/** Whether two member records name the same addresses and role. */
function samePeer(a: PeerMember, b: PeerMember): boolean {
  return a.host === b.host && a.quorumPort === b.quorumPort && a.electionPort === b.electionPort && a.role === b.role;
}

function describePeer(m: PeerMember): string {
  return `${formatAddress(m.host, m.quorumPort)}:${m.electionPort}:${m.role}`;
}

export class MemberTable {
  /** This server as it was started: the addresses its services are bound to. */
  readonly me: PeerMember;
  private readonly members = new Map<number, PeerMember>();

  constructor(
    readonly myId: number,
    members: readonly PeerMember[],
    private readonly logger: Logger,
  ) {
    for (const member of members) {
      assertMember(member.id, member.role, this.members);
      this.members.set(member.id, { ...member });
    }
    const me = this.members.get(myId);
    assert(me !== undefined, `server ${myId} is not among the members`);
    this.me = me;
  }

  get(id: number): PeerMember | undefined {
    return this.members.get(id);
  }

  has(id: number): boolean {
    return this.members.has(id);
  }

  /** Every member's id, this server's included, in table order. */
  ids(): number[] {
    return [...this.members.keys()];
  }

  /**
   * Makes `members` the table, with this server's own entry kept if they leave it out, and says
   * how they differ from the table before.
   */
  replace(members: readonly MemberAddress[]): MembershipChange {
    const next = new Map<number, PeerMember>();
    for (const m of members) {
      assertMember(m.serverId, m.role, next);
      next.set(m.serverId, { id: m.serverId, host: m.host, quorumPort: m.quorumPort, electionPort: m.electionPort, role: m.role });
    }
    const mine = next.get(this.myId);
    if (mine === undefined) {
      next.set(this.myId, this.members.get(this.myId)!);
    } else if (!samePeer(mine, this.me)) {
      // Its services stay bound where they are: the host restarts the transport to move them.
      this.logger.warn(
        { listed: describePeer(mine), bound: describePeer(this.me) },
        "this server's own peer address or role changed: its ports stay as they are until the transport restarts",
      );
    }
    const removed: number[] = [];
    const changed: number[] = [];
    for (const [id, old] of this.members) {
      if (id === this.myId) continue;
      const now = next.get(id);
      if (now === undefined) removed.push(id);
      else if (!samePeer(now, old)) changed.push(id);
    }
    const added = [...next.keys()].filter((id) => !this.members.has(id));
    this.members.clear();
    for (const [id, member] of next) this.members.set(id, member);
    return { added, removed, changed };
  }
}
