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
 * damaged and what a person can do. Refusing is for good, so it rests on fresh words only: each
 * voter counted as repairing must have sent a notification since the verdict was first reached.
 * A transport re-sends a peer's last notification on every new link (as ZooKeeper's does), and
 * that may be from before the peer's own repair finished; a voter paused or down since sends no
 * new one, and may be a good copy that comes back.
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

/** A voter's last word: 0 for a good copy, else the number its repairing notification carried. */
type Word = number;

export class RepairState {
  private damageNow: StorageDamage | undefined;
  /** The other voters heard from since this repair began, and the last word of each. */
  private readonly heard = new Map<number, Word>();
  /** Set while lingering before a refusal (see refusal): when it is due, and the words heard when it began. */
  private lingeringNow: { dueAtMs: number; wordsAtStart: ReadonlyMap<number, Word> } | undefined;
  /** Notifications sent while repairing (Notification.repairing numbers them). */
  private notificationsSent = 0;

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
    this.lingeringNow = undefined;
  }

  /** A voter's notification: `repairing` as it carried it (Notification.repairing), absent from a good copy. */
  heardFrom(serverId: number, repairing: number | undefined): void {
    if (serverId !== this.myId) this.heard.set(serverId, repairing ?? 0);
  }

  /** What the next notification this member sends carries as Notification.repairing; undefined when it holds a good copy. */
  nextNotificationNumber(): number | undefined {
    if (this.damageNow === undefined) return undefined;
    // 1 … 2^32 - 1 round and round (a uint32 on the wire; 0 is a good copy's): only a change counts.
    this.notificationsSent = (this.notificationsSent % 0xffffffff) + 1;
    return this.notificationsSent;
  }

  /** Found unrepairable, and lingering before it refuses to go on. */
  get lingering(): boolean {
    return this.lingeringNow !== undefined;
  }

  /**
   * The verdict, acted on after lingering for `lingerMs` — still telling the others it repairs, so
   * that another damaged member that has not heard it yet learns why nobody can repair it either —
   * and once each voter counted as repairing has said so again since the lingering began (see the
   * file note). `first`: the verdict is new (worth a log line); `due`: stop now.
   */
  refusal(quorum: RepairQuorum, nowMs: number, lingerMs: number): { error: CannotRepairError; first: boolean; due: boolean } | undefined {
    const error = this.verdict(quorum);
    if (error === undefined) {
      this.lingeringNow = undefined;
      return undefined;
    }
    const lingering = this.lingeringNow;
    if (lingering === undefined) {
      this.lingeringNow = { dueAtMs: nowMs + lingerMs, wordsAtStart: new Map(this.heard) };
      return { error, first: true, due: false };
    }
    return { error, first: false, due: nowMs >= lingering.dueAtMs && this.repairingSaidAgain(quorum, lingering.wordsAtStart) };
  }

  /** Whether every voter whose last word is that it repairs has sent that word anew since `wordsAtStart`. */
  private repairingSaidAgain(quorum: RepairQuorum, wordsAtStart: ReadonlyMap<number, Word>): boolean {
    for (const voter of quorum.voters) {
      const word = this.heard.get(voter);
      if (word !== undefined && word !== 0 && word === wordsAtStart.get(voter)) return false;
    }
    return true;
  }

  /**
   * While repairing: the refusal, once every other voter has been heard from and the good copies
   * among them cannot make a quorum (a standalone server, the only voter, at once). Undefined
   * otherwise: a voter not heard from may be a good copy that comes back.
   */
  verdict(quorum: RepairQuorum): CannotRepairError | undefined {
    const damage = this.damageNow;
    if (damage === undefined) return undefined;
    const good: number[] = [];
    for (const voter of quorum.voters) {
      if (voter === this.myId) continue;
      const word = this.heard.get(voter);
      if (word === undefined) return undefined;
      if (word === 0) good.push(voter);
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
