/**
 * The reconfiguration nemesis: membership changes through the real reconfig API (incremental
 * joining/leaving, run by the digest super user), while the other nemeses go on. A change removes a
 * voter (the leader too, sometimes), makes a voter an observer, or makes an observer a voter; its
 * heal puts the original membership back, whatever the cluster's configuration then holds. One
 * change at a time, so the configuration never has fewer voters than the original less one.
 *
 * A change whose reconfig is refused or unanswered (a quorum out of reach, another change in
 * progress) is not recorded as a fault; the heal reads the configuration back rather than trusting
 * what it asked for, because an unanswered reconfig may have happened all the same.
 *
 * A limit of the link proxies: after a reconfiguration every member dials the others at the
 * addresses of the configuration in force, which are the proxies of one member's view (the leader
 * that ran the change, or the member whose config file the first configuration came from), not
 * each dialler's own links. A partition after a reconfiguration therefore cuts the links through
 * the proxies it blocks, which is less than (and not always what) its description says.
 */
import { parseMembership, type MemberRole } from "../../src/common/membership.js";
import { Client, type ReconfigChange } from "../../src/index.js";
import type { Prng } from "../sim/prng.js";
import { type ChaosCluster, SUPER_CREDENTIAL } from "./chaos-cluster.js";
import type { ActiveFault } from "./nemesis.js";
import { withLimit } from "./workloads.js";

const RECONFIG_LIMIT_MS = 15_000;
/** How long the heal keeps trying to put the original membership back. */
const RESTORE_LIMIT_MS = 90_000;

type Roles = Map<number, MemberRole>;

export class MembershipNemesis {
  private readonly original: Roles;

  constructor(
    private readonly cluster: ChaosCluster,
    private readonly prng: Prng,
  ) {
    this.original = new Map(cluster.ids.map((id) => [id, cluster.voterIds.includes(id) ? "participant" : "observer"]));
  }

  /** One membership change, or undefined when it could not be made. */
  async change(): Promise<ActiveFault | undefined> {
    const voters = this.cluster.voterIds;
    const observers = this.cluster.ids.filter((id) => !voters.includes(id));
    const leader = this.cluster.believedLeader();
    const voter = leader !== undefined && this.prng.chance(0.3) ? leader : this.prng.pick(voters);
    const who = (id: number) => `server ${id}${id === leader ? " (leader)" : ""}`;
    const roll = this.prng.int(observers.length > 0 ? 3 : 2);
    let change: ReconfigChange;
    let description: string;
    if (roll === 0) {
      change = { leaving: [voter] };
      description = `reconfig: remove ${who(voter)}`;
    } else if (roll === 1) {
      change = { joining: [this.cluster.memberLine(voter, "observer", this.viewer())] };
      description = `reconfig: ${who(voter)} becomes an observer`;
    } else {
      const observer = this.prng.pick(observers);
      change = { joining: [this.cluster.memberLine(observer, "participant", this.viewer())] };
      description = `reconfig: observer ${observer} becomes a voter`;
    }
    if (!(await this.reconfig(change))) return undefined;
    return { kind: "reconfig", description, heal: () => this.restore() };
  }

  /** Until the configuration in force has every original member in its original role (or the limit passes). */
  async restore(): Promise<void> {
    const deadline = Date.now() + RESTORE_LIMIT_MS;
    while (Date.now() < deadline) {
      const inForce = await this.inForce();
      if (inForce !== undefined) {
        const joining = [...this.original]
          .filter(([id, role]) => inForce.get(id) !== role)
          .map(([id, role]) => this.cluster.memberLine(id, role, this.viewer()));
        const leaving = [...inForce.keys()].filter((id) => !this.original.has(id));
        if (joining.length === 0 && leaving.length === 0) return;
        await this.reconfig({ ...(joining.length > 0 ? { joining } : {}), ...(leaving.length > 0 ? { leaving } : {}) });
      }
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }

  /** The member whose link proxies the new member lines name: the leader, as it runs the change. */
  private viewer(): number {
    return this.cluster.believedLeader() ?? this.cluster.ids[0]!;
  }

  private async reconfig(change: ReconfigChange): Promise<boolean> {
    return (await this.asSuper((client) => client.reconfig(change))) !== undefined;
  }

  private async inForce(): Promise<Roles | undefined> {
    const config = await this.asSuper((client) => client.getConfig());
    if (config === undefined) return undefined;
    return new Map(parseMembership(config.text).members.map((m) => [m.serverId, m.role]));
  }

  /** `action` through a fresh session of the super user; undefined when it failed or went unanswered. */
  private async asSuper<T>(action: (client: Client) => Promise<T>): Promise<T | undefined> {
    let client: Client | undefined;
    try {
      client = await Client.connect(this.cluster.connectString, { connectTimeoutMs: 5_000, sessionTimeoutMs: 4_000 });
      await client.addAuthInfo("digest", SUPER_CREDENTIAL);
      return await withLimit(action(client), RECONFIG_LIMIT_MS, "reconfig");
    } catch {
      return undefined;
    } finally {
      await client?.close().catch(() => undefined);
    }
  }
}
