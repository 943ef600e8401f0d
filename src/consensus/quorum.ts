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
}
