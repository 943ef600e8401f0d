/**
 * A stand-in election: a looking server decides after a random pause, on a leader the simulator
 * picks from its global view. Servers may decide differently, and while faults run the pick is
 * sometimes not the most up-to-date voter: Zab must stay safe whatever the election decides. It
 * exchanges no votes; with `hello` (runs with reconfigurations) a looking server greets the others
 * and a decided one answers, so that the configuration each notification carries reaches a server
 * that missed a reconfiguration, as FastLeaderElection's notifications carry it.
 */
import type { Decision, ElectionOutput } from "../../src/election/fast-leader-election.js";
import type { Notification } from "../../src/election/types.js";
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
    /** The other servers to greet when looking; none: no messages at all. */
    private readonly hello: () => readonly number[] = () => [],
  ) {}

  get decision(): Decision | undefined {
    return this.decided;
  }

  startLooking(_self: unknown, nowMs: number): ElectionOutput {
    this.round += 1;
    this.decided = undefined;
    this.decideAtMs = nowMs + this.pauseMs();
    const greeting: Notification = { from: this.myId, state: "looking", vote: { leader: 0, zxid: 0, peerEpoch: 0 }, round: this.round };
    return { send: this.hello().map((to) => ({ to, notification: greeting })), decided: undefined };
  }

  /** A decided server answers a looking one (never a looking one: two would greet each other forever). */
  receive(n: Notification): ElectionOutput {
    const decided = this.decided;
    if (n.state !== "looking" || decided === undefined) return { send: [], decided: undefined };
    return { send: [{ to: n.from, notification: { from: this.myId, state: decided.state, vote: decided.vote, round: decided.round } }], decided: undefined };
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

  /**
   * A new view: only our role matters here. The simulator's pick is global (the voters of the
   * configuration in force), so a server whose own view is stale still follows the right leader,
   * as FastLeaderElection's server does once a notification hands it the newer configuration.
   */
  reconfigure(role: "participant" | "observer"): void {
    this.observer = role === "observer";
  }

  settle(decision: Decision): void {
    this.decided = decision;
  }
}
