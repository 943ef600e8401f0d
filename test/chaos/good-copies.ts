/**
 * The damage budget the corrupt and reconfiguration nemeses share. Issue 29's promises (a damaged
 * member repairs; nothing damaged is served) hold only while the configuration in force keeps a
 * quorum of voters whose copies are good, so both loops ask here before they act: the corrupt
 * nemesis before it damages a member, the reconfiguration nemesis before it changes who votes.
 *
 * A damaged member counts as good again only once it has proved its repair: it has logged
 * "serving clients" since it was started on its damaged files (Zab lets a learner serve only after
 * it has synced the leader's history, and a damaged one only after a full snapshot replaced its
 * files) and it still follows, observes or leads. One that refused to start never proves it.
 *
 * Decisions and the acts they allow happen under one lock, so that the two loops never each spend
 * the same margin.
 */
import type { MemberRole } from "../../src/common/membership.js";
import type { RoleLine } from "../helpers/cluster-process.js";
import type { ChaosCluster } from "./chaos-cluster.js";

/** Who is in the configuration in force, and in which role. */
export type Roles = ReadonlyMap<number, MemberRole>;

interface Damaged {
  /** Where the server's log stood when it was started on its damaged files; undefined while it is down. */
  logFrom: number | undefined;
}

/** What the budget reads of the servers (a ChaosCluster; a stand-in in the unit tests). */
export interface ServersSeen {
  isRunning(id: number): boolean;
  roles(): Map<number, RoleLine>;
  server(id: number): { readonly stderr: string };
}

export class GoodCopies {
  private readonly damaged = new Map<number, Damaged>();
  private lock: Promise<unknown> = Promise.resolve();

  constructor(private readonly cluster: ServersSeen) {}

  /** `act` alone: no other decision of either nemesis runs until it settles. */
  exclusive<T>(act: () => Promise<T>): Promise<T> {
    const turn = this.lock.then(act, act);
    this.lock = turn.catch(() => undefined);
    return turn;
  }

  /** Server `id`'s files are about to be damaged (it is down). */
  markDamaged(id: number): void {
    this.damaged.set(id, { logFrom: undefined });
  }

  /** Server `id` has just been started on its damaged files: from here its log may prove the repair. */
  startedDamaged(id: number, logFrom: number): void {
    const entry = this.damaged.get(id);
    if (entry !== undefined) entry.logFrom = logFrom;
  }

  /** The servers whose copies are damaged and not yet proved repaired (proved ones are forgotten). */
  unproved(): number[] {
    const roles = this.cluster.roles();
    for (const [id, { logFrom }] of this.damaged) {
      if (logFrom === undefined || !this.cluster.isRunning(id)) continue;
      const role = roles.get(id)?.role;
      const serving = this.cluster.server(id).stderr.includes('"msg":"serving clients"', logFrom);
      if (serving && role !== undefined && role !== "looking") this.damaged.delete(id);
    }
    return [...this.damaged.keys()];
  }

  /**
   * Why `voters` (a configuration's voters) would lack a quorum of good copies were `alsoDamaged`
   * damaged too; undefined when they keep one.
   */
  shortfall(voters: readonly number[], alsoDamaged?: number): string | undefined {
    const bad = new Set(this.unproved());
    if (alsoDamaged !== undefined) bad.add(alsoDamaged);
    const good = voters.filter((id) => !bad.has(id));
    const quorum = Math.floor(voters.length / 2) + 1;
    if (good.length >= quorum) return undefined;
    const unprovedVoters = voters.filter((id) => bad.has(id) && id !== alsoDamaged);
    const why = unprovedVoters.length === 0 ? "" : `; ${unprovedVoters.join(", ")} not yet proved repaired`;
    return `voters {${voters.join(",")}} would keep ${good.length} good copies, below their quorum of ${quorum}${why}`;
  }
}

/** The membership `cluster` was started with. */
export function startingRoles(cluster: ChaosCluster): Roles {
  return new Map(cluster.ids.map((id) => [id, cluster.voterIds.includes(id) ? "participant" : "observer"]));
}

/** The voters of `roles`, in id order. */
export function votersOf(roles: Roles): number[] {
  return [...roles]
    .filter(([, role]) => role === "participant")
    .map(([id]) => id)
    .sort((a, b) => a - b);
}
