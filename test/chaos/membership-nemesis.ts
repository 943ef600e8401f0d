/**
 * The reconfiguration nemesis: membership changes through the real reconfig API (incremental
 * joining/leaving, run by the digest super user), while the other nemeses go on. A change removes a
 * voter (the leader too, sometimes), makes a voter an observer, or makes an observer a voter; its
 * heal puts the original membership back, whatever the cluster's configuration then holds. A change
 * starts only from the original membership (one still away from it is put back first), so the
 * configuration never has fewer voters than the original less one.
 *
 * Every change is judged by what the configuration read back holds, not by the reconfig's answer:
 * one that went unanswered (the leader it removed stepped down before replying) may have happened
 * all the same, and then it is recorded and healed like any other. The heal puts members back one
 * at a time: corral counts only learners synced with the leader towards the new configuration's
 * quorum, and a member outside the configuration is none, so two voters cannot come back at once
 * when only two are left.
 *
 * Changes of who votes are weighed against the damage budget the corrupt nemesis spends too (see
 * good-copies.ts): none may leave the voters without a quorum of good copies.
 *
 * A limit of the link proxies: after a reconfiguration every member dials the others at the
 * addresses of the configuration in force, which are the proxies of one member's view (the leader
 * that ran the change, or the member whose config file the first configuration came from), not
 * each dialler's own links. A partition after a reconfiguration therefore cuts the links through
 * the proxies it blocks, which is less than (and not always what) its description says.
 */
import { parseMembership } from "../../src/common/membership.js";
import { Client, type ReconfigChange } from "../../src/index.js";
import type { Prng } from "../sim/prng.js";
import { type ChaosCluster, SUPER_CREDENTIAL } from "./chaos-cluster.js";
import { type GoodCopies, type Roles, startingRoles, votersOf } from "./good-copies.js";
import type { ActiveFault } from "./nemesis.js";
import { withLimit } from "./workloads.js";

const RECONFIG_LIMIT_MS = 15_000;
/** How long the heal keeps trying to put the original membership back (the next change tries again). */
const RESTORE_LIMIT_MS = 90_000;

interface Change {
  change: ReconfigChange;
  description: string;
  /** The voters once it is in force. */
  voters: number[];
}

export class MembershipNemesis {
  private readonly original: Roles;

  constructor(
    private readonly cluster: ChaosCluster,
    private readonly prng: Prng,
    private readonly copies: GoodCopies,
  ) {
    this.original = startingRoles(cluster);
  }

  /**
   * One membership change, or undefined when none was made: the configuration could not be read,
   * an earlier change was still in force (this turn puts it back instead), or the budget allowed
   * none.
   */
  async change(): Promise<ActiveFault | undefined> {
    const inForce = await this.inForce();
    if (inForce === undefined) return undefined;
    if (!sameRoles(inForce, this.original)) {
      await this.restore();
      return undefined;
    }
    return this.copies.exclusive(async () => {
      const planned = this.candidates(inForce).find((c) => this.copies.shortfall(c.voters) === undefined);
      if (planned === undefined) return undefined;
      const answered = await this.reconfig(planned.change);
      const after = await this.inForce();
      if (!answered && after !== undefined && sameRoles(after, inForce)) return undefined;
      const unanswered = after === undefined ? " (unanswered; the heal reads back whether it happened)" : " (unanswered, in force all the same)";
      return { kind: "reconfig", description: `${planned.description}${answered ? "" : unanswered}`, heal: () => this.restore() };
    });
  }

  /** Until the configuration in force has every original member in its original role (or the limit passes). */
  async restore(): Promise<void> {
    const deadline = Date.now() + RESTORE_LIMIT_MS;
    while (Date.now() < deadline) {
      if (await this.copies.exclusive(() => this.restoreStep())) return;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }

  /** The configuration in force, as a member reads it back; undefined when none answered. */
  async inForce(): Promise<Roles | undefined> {
    const config = await this.asSuper((client) => client.getConfig());
    if (config === undefined) return undefined;
    return new Map(parseMembership(config.text).members.map((m) => [m.serverId, m.role]));
  }

  /** The changes this turn may make from `inForce`, in the order the draw prefers them. */
  private candidates(inForce: Roles): Change[] {
    const voters = votersOf(inForce);
    const observers = [...inForce.keys()].filter((id) => inForce.get(id) === "observer");
    const leader = this.cluster.believedLeader();
    const who = (id: number) => `server ${id}${id === leader ? " (leader)" : ""}`;
    const first = leader !== undefined && voters.includes(leader) && this.prng.chance(0.3) ? leader : this.prng.pick(voters);
    const ordered = [first, ...this.prng.shuffle(voters.filter((id) => id !== first))];
    const less = (id: number) => voters.filter((v) => v !== id);
    const removals = ordered.map((voter): Change => ({ change: { leaving: [voter] }, description: `reconfig: remove ${who(voter)}`, voters: less(voter) }));
    const demotions = ordered.map((voter): Change => ({
      change: { joining: [this.cluster.memberLine(voter, "observer", this.viewer())] },
      description: `reconfig: ${who(voter)} becomes an observer`,
      voters: less(voter),
    }));
    const promotions = this.prng.shuffle(observers).map((observer): Change => ({
      change: { joining: [this.cluster.memberLine(observer, "participant", this.viewer())] },
      description: `reconfig: observer ${observer} becomes a voter`,
      voters: [...voters, observer].sort((a, b) => a - b),
    }));
    const kinds = [removals, demotions, ...(promotions.length > 0 ? [promotions] : [])];
    const roll = this.prng.int(kinds.length);
    return [...kinds.slice(roll), ...kinds.slice(0, roll)].flat();
  }

  /**
   * One member back in its original role, the first the budget allows; true when nothing is left to
   * put back.
   */
  private async restoreStep(): Promise<boolean> {
    const inForce = await this.inForce();
    if (inForce === undefined) return false;
    const strangers = [...inForce.keys()].filter((id) => !this.original.has(id));
    const misplaced = [...this.original].filter(([id, role]) => inForce.get(id) !== role);
    if (strangers.length === 0 && misplaced.length === 0) return true;
    if (strangers.length > 0) {
      await this.reconfig({ leaving: strangers });
      return false;
    }
    const voters = votersOf(inForce);
    const votersWith = (id: number, role: string) => (role === "participant" ? [...voters, id] : voters.filter((v) => v !== id));
    // Running members first: a voter that is down adds to the quorum without adding to who can form it.
    const ordered = [...misplaced].sort(([a], [b]) => Number(!this.cluster.isRunning(a)) - Number(!this.cluster.isRunning(b)));
    const next = ordered.find(([id, role]) => this.copies.shortfall(votersWith(id, role)) === undefined);
    if (next !== undefined) await this.reconfig({ joining: [this.cluster.memberLine(next[0], next[1], this.viewer())] });
    return false;
  }

  /** The member whose link proxies the new member lines name: the leader, as it runs the change. */
  private viewer(): number {
    return this.cluster.believedLeader() ?? this.cluster.ids[0]!;
  }

  private async reconfig(change: ReconfigChange): Promise<boolean> {
    return (await this.asSuper((client) => client.reconfig(change))) !== undefined;
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

function sameRoles(a: Roles, b: Roles): boolean {
  return a.size === b.size && [...a].every(([id, role]) => b.get(id) === role);
}
