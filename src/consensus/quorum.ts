import { assert } from "../common/assert.js";

/** Majority of the voting members; observers never count. (ZooKeeper's QuorumMaj.) */
export class QuorumVerifier {
  readonly voters: ReadonlySet<number>;
  readonly observers: ReadonlySet<number>;

  constructor(voters: Iterable<number>, observers: Iterable<number> = []) {
    this.voters = new Set(voters);
    this.observers = new Set(observers);
    assert(this.voters.size > 0, "a cluster needs at least one voter");
    for (const id of this.observers) assert(!this.voters.has(id), `server ${id} is both voter and observer`);
  }

  get quorumSize(): number {
    return Math.floor(this.voters.size / 2) + 1;
  }

  /** Whether `ids` (any iterable of server ids; non-voters are ignored) form a quorum. */
  containsQuorum(ids: Iterable<number>): boolean {
    let count = 0;
    for (const id of new Set(ids)) if (this.voters.has(id)) count += 1;
    return count >= this.quorumSize;
  }

  isVoter(id: number): boolean {
    return this.voters.has(id);
  }

  /** Whether `other` has the same voters and observers. */
  sameMembers(other: QuorumVerifier): boolean {
    return sameSet(this.voters, other.voters) && sameSet(this.observers, other.observers);
  }
}

function sameSet(a: ReadonlySet<number>, b: ReadonlySet<number>): boolean {
  return a.size === b.size && [...a].every((id) => b.has(id));
}

/** A reconfiguration logged at `zxid` and not known to be committed: `quorum` is the configuration it installs. */
export interface PendingConfig {
  zxid: number;
  quorum: QuorumVerifier;
}

/**
 * The voters a decision needs while reconfigurations are in play (ZooKeeper's pair of last
 * committed and last proposed verifiers): a quorum of every configuration at once. Until a
 * reconfiguration commits, either of its configurations may be the one the next leader runs with,
 * so every election, epoch and establishment must stand in both.
 */
export class JointQuorum {
  readonly voters: ReadonlySet<number>;
  readonly observers: ReadonlySet<number>;

  constructor(readonly configs: readonly QuorumVerifier[]) {
    assert(configs.length > 0, "a joint quorum of at least one configuration");
    this.voters = new Set(configs.flatMap((c) => [...c.voters]));
    this.observers = new Set(configs.flatMap((c) => [...c.observers]).filter((id) => !this.voters.has(id)));
  }

  containsQuorum(ids: Iterable<number>): boolean {
    const present = [...ids];
    return this.configs.every((config) => config.containsQuorum(present));
  }

  containsQuorumOfAny(ids: Iterable<number>): boolean {
    const present = [...ids];
    return this.configs.some((config) => config.containsQuorum(present));
  }

  /** A voter of any of the configurations (its vote and acks count where it votes). */
  isVoter(id: number): boolean {
    return this.voters.has(id);
  }

  /** The same configurations, in the same order, with the same voters and observers. */
  sameMembership(other: JointQuorum): boolean {
    return (
      this.configs.length === other.configs.length &&
      this.configs.every((config, i) => sameIds(config.voters, other.configs[i]!.voters) && sameIds(config.observers, other.configs[i]!.observers))
    );
  }
}

function sameIds(a: ReadonlySet<number>, b: ReadonlySet<number>): boolean {
  return a.size === b.size && [...a].every((id) => b.has(id));
}
