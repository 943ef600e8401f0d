/**
 * A member repairing state it cannot vouch for — files found damaged at start (the storage's
 * `recovered.repairing`), or a tree whose digest differs from its leader's — until a full snapshot
 * from the leader replaces it. While repairing, a member serves no client, proposes nobody in
 * elections, and tells its leader (learnerInfo) and the other voters (notifications) that it holds
 * no good copy: a leader needs a quorum of good copies to establish an epoch, so every committed
 * txn is still in one of them.
 *
 * When the other voters have all been heard from and too few of them hold good copies to form a
 * quorum, nobody can repair this member: it refuses to go on (CannotRepairError), naming what was
 * damaged and what a person can do.
 */
import type { StorageDamage } from "./ports.js";

/** A repairing member found too few good copies for a quorum: a person must act. */
export class CannotRepairError extends Error {
  readonly code = "CANNOT_REPAIR";
  constructor(
    readonly damage: StorageDamage,
    goodVoters: readonly number[],
    voters: number,
    quorumSize: number,
  ) {
    super(
      `refusing to start: this server's data is damaged (${damage.file}: ${damage.reason}) and it cannot repair itself: ` +
        `of the ${voters} voters only ${goodVoters.length} hold a good copy (${goodVoters.length === 0 ? "none" : `servers ${goodVoters.join(", ")}`}), ` +
        `and a quorum needs ${quorumSize}. To recover: restore the damaged servers' data directories from a backup (corral restore), ` +
        `or, accepting the loss of any write that only the damaged copies held, move this server's data directory aside and start ` +
        `it with an empty one. The damaged files are kept for inspection (corral data).`,
    );
    this.name = "CannotRepairError";
  }
}

/** The voters of the configuration in force, as the repair verdict needs them. */
export interface RepairQuorum {
  readonly voters: ReadonlySet<number>;
  readonly quorumSize: number;
}

export class RepairState {
  private damageNow: StorageDamage | undefined;
  /** The other voters heard from since this repair began: whether each said it repairs too, and when. */
  private readonly heard = new Map<number, { repairing: boolean; atMs: number }>();
  /** Set while lingering before a refusal (see refusal). */
  private refusingAtMs: number | undefined;

  constructor(
    private readonly myId: number,
    damage: StorageDamage | undefined,
  ) {
    this.damageNow = damage;
  }

  /** What is being repaired; undefined when this member holds a good copy. */
  get damage(): StorageDamage | undefined {
    return this.damageNow;
  }

  get active(): boolean {
    return this.damageNow !== undefined;
  }

  /** This member's state is found untrustworthy while running (a diverged tree). */
  begin(damage: StorageDamage): void {
    this.damageNow ??= damage;
    this.heard.clear();
  }

  /** The leader's snapshot is durable in place of the damage: a good copy again. */
  finished(): void {
    this.damageNow = undefined;
    this.heard.clear();
    this.refusingAtMs = undefined;
  }

  /** A voter's notification said whether it repairs. */
  heardFrom(serverId: number, repairing: boolean, nowMs = 0): void {
    if (serverId !== this.myId) this.heard.set(serverId, { repairing, atMs: nowMs });
  }

  /** Found unrepairable, and lingering before it refuses to go on. */
  get lingering(): boolean {
    return this.refusingAtMs !== undefined;
  }

  /**
   * The verdict, acted on after lingering for `lingerMs` — still telling the others it repairs, so
   * that another damaged member that has not heard it yet learns why nobody can repair it either.
   * Only what was heard within `lingerMs` counts: a notification re-sent from before a voter's own
   * repair finished, or a voter paused since, must not stop a server for good.
   * `first`: the verdict is new (worth a log line); `due`: the lingering is over, stop now.
   */
  refusal(quorum: RepairQuorum, nowMs: number, lingerMs: number): { error: CannotRepairError; first: boolean; due: boolean } | undefined {
    const error = this.verdict(quorum, nowMs - lingerMs);
    if (error === undefined) {
      this.refusingAtMs = undefined;
      return undefined;
    }
    const first = this.refusingAtMs === undefined;
    if (first) this.refusingAtMs = nowMs + lingerMs;
    return { error, first, due: !first && nowMs >= this.refusingAtMs! };
  }

  /**
   * While repairing: the refusal, once every other voter has been heard from (after `heardSinceMs`)
   * and the good copies among them cannot make a quorum (a standalone server, the only voter, at
   * once). Undefined otherwise: a voter not heard from may be a good copy that comes back.
   */
  verdict(quorum: RepairQuorum, heardSinceMs = -Infinity): CannotRepairError | undefined {
    const damage = this.damageNow;
    if (damage === undefined) return undefined;
    const good: number[] = [];
    for (const voter of quorum.voters) {
      if (voter === this.myId) continue;
      const heard = this.heard.get(voter);
      if (heard === undefined || heard.atMs <= heardSinceMs) return undefined;
      if (!heard.repairing) good.push(voter);
    }
    if (good.length >= quorum.quorumSize) return undefined;
    return new CannotRepairError(
      damage,
      good.sort((a, b) => a - b),
      quorum.voters.size,
      quorum.quorumSize,
    );
  }
}
