/**
 * A stand-in election that exchanges no messages: a looking server decides after a random pause, on
 * a leader the simulator picks from its global view. Servers may decide differently, and while
 * faults run the pick is sometimes not the most up-to-date voter: Zab must stay safe whatever the
 * election decides.
 */
import type { Decision, ElectionOutput } from "../../src/election/fast-leader-election.js";
import type { LeaderElection } from "../../src/replica/quorum-peer.js";

export class OracleElection implements LeaderElection {
  private decideAtMs: number | undefined;
  private decided: Decision | undefined;
  private round = 0;

  constructor(
    private readonly myId: number,
    private observer: boolean,
    private readonly pick: () => number | undefined,
    private readonly pauseMs: () => number,
  ) {}

  get decision(): Decision | undefined {
    return this.decided;
  }

  startLooking(_self: unknown, nowMs: number): ElectionOutput {
    this.round += 1;
    this.decided = undefined;
    this.decideAtMs = nowMs + this.pauseMs();
    return { send: [], decided: undefined };
  }

  receive(): ElectionOutput {
    return { send: [], decided: undefined };
  }

  tick(nowMs: number): ElectionOutput {
    if (this.decideAtMs === undefined || nowMs < this.decideAtMs) return { send: [], decided: undefined };
    const leader = this.pick();
    if (leader === undefined || (this.observer && leader === this.myId)) {
      this.decideAtMs = nowMs + this.pauseMs();
      return { send: [], decided: undefined };
    }
    this.decideAtMs = undefined;
    const state = leader === this.myId ? "leading" : this.observer ? "observing" : "following";
    this.decided = { leader, state, vote: { leader, zxid: 0, peerEpoch: 0 }, round: this.round };
    return { send: [], decided: this.decided };
  }

  reconfigure(role: "participant" | "observer"): void {
    this.observer = role === "observer";
  }

  settle(decision: Decision): void {
    this.decided = decision;
  }
}
