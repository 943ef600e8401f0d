/**
 * FastLeaderElection machines on the simulator's network twin (test/sim/twins/sim-network.ts): the
 * twin delays, duplicates, cuts and resends their notifications on one timeline
 * (test/sim/twins/scheduler.ts), every draw from one seeded Prng (test/sim/prng.ts), so a seed
 * replays a run exactly. This file only feeds the pure machines: what the network delivers goes to
 * `receive`, each machine is ticked at its deadlines, and what it sends goes back to the network.
 * A crashed server is detached from the network. Every step can be written to a trace, which the
 * scenario tests compare against golden text.
 */
import type { MemberRole } from "../../src/common/membership.js";
import { QuorumVerifier } from "../../src/consensus/quorum.js";
import {
  FastLeaderElection,
  type Decision,
  type ElectionOutput,
  type ElectionSelf,
  type FastLeaderElectionOptions,
} from "../../src/election/fast-leader-election.js";
import type { Notification, Vote } from "../../src/election/types.js";
import { compareVotes, isNoVote } from "../../src/election/vote.js";
import type { PeerPort } from "../../src/replica/ports.js";
import { counterOf, epochOf, makeZxid } from "../../src/store/zxid.js";
import { Prng } from "../sim/prng.js";
import { SteppedScheduler } from "../sim/twins/scheduler.js";
import { SimNetwork } from "../sim/twins/sim-network.js";

export interface ServerSpec {
  id: number;
  /** The server's current epoch, which also is the epoch of its last zxid here. */
  epoch: number;
  /** The counter of its last zxid. */
  counter: number;
}

export interface NetworkOptions {
  voters: ServerSpec[];
  observers?: number[];
  seed?: number;
  /**
   * Each notification takes 1 to 1 + maxDelayMs ms (the twin's netDelayMsMax), so notifications
   * sent close together arrive in any order. 0: every one takes 1 ms and delivery is FIFO.
   * Default 20.
   */
  maxDelayMs?: number;
  /** Chance that the network delivers a notification twice. Default 0. */
  duplicateRate?: number;
  /** Write every step to `trace`. */
  trace?: boolean;
  /**
   * A model of Zab's liveness rules, which the real host applies after the election: a learner whose
   * leader is not leading (or is unreachable), and a leader without a quorum of reachable learners
   * naming it, go back to LOOKING after this long. Undefined: decisions are final.
   */
  learnerTimeoutMs?: number;
  election?: Partial<Pick<FastLeaderElectionOptions, "finalizeWaitMs" | "notificationTimeoutMs" | "maxNotificationIntervalMs">>;
}

export function formatVote(v: Vote): string {
  if (isNoVote(v)) return "nobody";
  return `${v.leader}(e${v.peerEpoch} z${epochOf(v.zxid)}:${counterOf(v.zxid)})`;
}

export function formatNotification(n: Notification): string {
  return `${n.state} r${n.round} ${formatVote(n.vote)}`;
}

export class ElectionNetwork {
  readonly quorum: QuorumVerifier;
  readonly nodes = new Map<number, FastLeaderElection>();
  readonly selves = new Map<number, ElectionSelf>();
  /** The latest decision of each server. */
  readonly decisions = new Map<number, Decision>();
  readonly crashed = new Set<number>();
  readonly trace: string[] = [];
  /** Notifications handed to a live machine. */
  delivered = 0;
  learnerTimeoutMs: number | undefined;
  /** When each decided server was first seen without a working leader (see learnerTimeoutMs). */
  private readonly troubleSinceMs = new Map<number, number>();
  private readonly scheduler = new SteppedScheduler();
  private readonly network: SimNetwork;
  private readonly ports = new Map<number, PeerPort>();
  private readonly tracing: boolean;

  constructor(options: NetworkOptions) {
    const observers = options.observers ?? [];
    this.quorum = new QuorumVerifier(
      options.voters.map((v) => v.id),
      observers,
    );
    this.tracing = options.trace ?? false;
    this.learnerTimeoutMs = options.learnerTimeoutMs;
    const faults = { netDelayMsMax: options.maxDelayMs ?? 20, electionLoss: 0, electionDuplicate: options.duplicateRate ?? 0, streamBreak: 0 };
    const ids = [...options.voters.map((v) => v.id), ...observers];
    this.network = new SimNetwork(this.scheduler, new Prng(options.seed ?? 1), faults, (line) => this.log(line), ids);
    const make = (myId: number, role: MemberRole) => new FastLeaderElection({ myId, role, quorum: this.quorum, ...options.election });
    for (const v of options.voters) {
      this.nodes.set(v.id, make(v.id, "participant"));
      this.selves.set(v.id, { lastZxid: makeZxid(v.epoch, v.counter), currentEpoch: v.epoch });
    }
    for (const id of observers) {
      this.nodes.set(id, make(id, "observer"));
      this.selves.set(id, { lastZxid: 0, currentEpoch: 0 });
    }
    for (const id of ids) {
      this.ports.set(
        id,
        this.network.attach(id, {
          onNotification: (notification) => this.receive(id, notification),
          onQuorumMessage: () => {
            throw new Error("no quorum traffic in an election test");
          },
          onQuorumStreamClosed: () => {},
        }),
      );
    }
    // The links come up (a started member's peers resend their last notification to it: nothing
    // yet) before anyone looks.
    while (this.scheduler.runNext());
  }

  get nowMs(): number {
    return this.scheduler.nowMs;
  }

  node(id: number): FastLeaderElection {
    const n = this.nodes.get(id);
    if (n === undefined) throw new Error(`no server ${id}`);
    return n;
  }

  get ids(): number[] {
    return [...this.nodes.keys()].sort((a, b) => a - b);
  }

  get liveIds(): number[] {
    return this.ids.filter((id) => !this.crashed.has(id));
  }

  // ---- driving

  start(...ids: number[]): void {
    for (const id of ids) {
      if (this.crashed.has(id)) continue;
      const node = this.node(id);
      const out = node.startLooking(this.selves.get(id)!, this.nowMs);
      this.log(`t=${this.nowMs} ${id} starts looking`);
      this.handle(id, out);
    }
  }

  startAll(): void {
    this.start(...this.ids);
  }

  /** Lose every notification in flight (the links stay up: nothing is resent but by the machines). */
  loseAll(): void {
    for (const m of this.network.loseNotificationsInFlight()) this.log(`t=${this.nowMs} ${m.from}→${m.to} lost ${formatNotification(m.notification)}`);
  }

  /** Deliver everything in flight, and what the deliveries send, until nothing is; time moves with each delivery. */
  flush(limit = 100_000): void {
    for (let i = 0; i < limit; i++) if (!this.scheduler.runNext()) return;
    throw new Error(`flush did not settle within ${limit} deliveries`);
  }

  /** Deliver what arrives within `ms`, then move time to its end and tick every live server. */
  advance(ms: number): void {
    const untilMs = this.nowMs + ms;
    while (this.scheduler.runNext(untilMs));
    this.scheduler.nowMs = untilMs;
    this.tickAll();
  }

  tickAll(): void {
    for (const id of this.liveIds) {
      const out = this.node(id).tick(this.nowMs);
      this.handle(id, out, "tick");
    }
    this.applyLearnerTimeouts();
  }

  /**
   * Deliver and let time pass, jumping straight to the next delivery or deadline, until `until()`
   * holds or time passes `limitMs`. Returns whether `until()` held.
   */
  run(until: () => boolean, limitMs: number): boolean {
    for (let steps = 0; steps < 1_000_000; steps++) {
      if (until()) return true;
      const next = this.nextEventMs();
      if (next === undefined || next > limitMs) return until();
      if (this.scheduler.runNext(next)) continue;
      this.scheduler.nowMs = Math.max(this.nowMs, next);
      this.tickAll();
    }
    throw new Error("run did not settle within 1,000,000 steps");
  }

  // ---- faults

  /** Cut every link between the two groups, both ways. */
  partition(a: number[], b: number[]): void {
    for (const x of a) {
      for (const y of b) {
        this.network.block(x, y);
        this.network.block(y, x);
      }
    }
    this.log(`t=${this.nowMs} partition ${a.join(" ")} | ${b.join(" ")}`);
  }

  /** Every cut link comes back and resends the last notification it was asked to carry. */
  heal(): void {
    this.network.healAll();
    this.log(`t=${this.nowMs} heal`);
  }

  crash(id: number): void {
    this.crashed.add(id);
    this.network.detach(id);
    this.log(`t=${this.nowMs} ${id} crashes`);
  }

  // ---- inspection

  allLiveDecided(): boolean {
    return this.liveIds.every((id) => this.node(id).state !== "looking");
  }

  allLiveVotersDecided(): boolean {
    return this.liveIds.every((id) => !this.quorum.isVoter(id) || this.node(id).state !== "looking");
  }

  /** The best (peerEpoch, zxid, id) vote among the given voters. */
  bestVoteAmong(ids: number[]): number {
    const votes = ids
      .filter((id) => this.quorum.isVoter(id))
      .map((id) => ({ leader: id, zxid: this.selves.get(id)!.lastZxid, peerEpoch: this.selves.get(id)!.currentEpoch }));
    votes.sort(compareVotes);
    return votes[votes.length - 1]!.leader;
  }

  // ---- internals

  private nextEventMs(): number | undefined {
    const times: number[] = [];
    const delivery = this.scheduler.nextEventMs();
    if (delivery !== undefined) times.push(delivery);
    for (const id of this.liveIds) {
      const d = this.node(id).nextDeadlineMs();
      if (d !== undefined) times.push(d);
    }
    if (this.learnerTimeoutMs !== undefined) {
      for (const id of this.liveIds) {
        if (this.node(id).state === "looking" || this.hasWorkingLeader(id)) continue;
        const since = this.troubleSinceMs.get(id);
        times.push(since === undefined ? this.nowMs : since + this.learnerTimeoutMs);
      }
    }
    return times.length === 0 ? undefined : Math.min(...times);
  }

  private reachable(a: number, b: number): boolean {
    return !this.crashed.has(a) && !this.crashed.has(b) && !this.network.isBlocked(a, b) && !this.network.isBlocked(b, a);
  }

  /** Zab would keep this decided server where it is: see `learnerTimeoutMs`. */
  private hasWorkingLeader(id: number): boolean {
    const decision = this.node(id).decision;
    if (decision === undefined) return false;
    if (decision.state === "leading") {
      const backers = this.liveIds.filter((peer) => {
        const d = this.node(peer).decision;
        return (peer === id || this.reachable(id, peer)) && d !== undefined && d.leader === id && d.state !== "observing";
      });
      return this.quorum.containsQuorum(backers);
    }
    const leader = this.nodes.get(decision.leader);
    return leader !== undefined && this.reachable(id, decision.leader) && leader.state === "leading";
  }

  private applyLearnerTimeouts(): void {
    if (this.learnerTimeoutMs === undefined) return;
    for (const id of this.liveIds) {
      if (this.node(id).state === "looking" || this.hasWorkingLeader(id)) {
        this.troubleSinceMs.delete(id);
        continue;
      }
      const since = this.troubleSinceMs.get(id);
      if (since === undefined) {
        this.troubleSinceMs.set(id, this.nowMs);
      } else if (this.nowMs - since >= this.learnerTimeoutMs) {
        this.troubleSinceMs.delete(id);
        this.log(`t=${this.nowMs} ${id} gives up on leader ${this.node(id).decision?.leader}`);
        this.start(id);
      }
    }
  }

  /** What the network delivers to `to` (never to a crashed server: it is detached). */
  private receive(to: number, notification: Notification): void {
    this.delivered += 1;
    this.log(`t=${this.nowMs} ${notification.from}→${to} ${formatNotification(notification)}`);
    this.handle(to, this.node(to).receive(notification, this.nowMs));
  }

  private handle(id: number, out: ElectionOutput, cause?: "tick"): void {
    const port = this.ports.get(id)!;
    const byContent = new Map<string, { to: number[]; cut: number[] }>();
    for (const { to, notification } of out.send) {
      const key = formatNotification(notification);
      const group = byContent.get(key) ?? { to: [], cut: [] };
      byContent.set(key, group);
      // The network drops what a cut link is asked to carry (and resends the last of it on heal).
      (this.network.isBlocked(id, to) ? group.cut : group.to).push(to);
      port.sendNotification(to, notification);
    }
    const prefix = cause === "tick" ? `t=${this.nowMs} ${id}` : `  ${id}`;
    for (const [content, { to, cut }] of byContent) {
      const cutOff = cut.length === 0 ? "" : ` (cut: ${cut.join(" ")})`;
      this.log(`${prefix} sends ${content} → ${to.length === 0 ? "nobody" : to.join(" ")}${cutOff}`);
    }
    if (out.decided !== undefined) {
      this.decisions.set(id, out.decided);
      this.log(`${prefix} decides ${out.decided.state} ${out.decided.leader} r${out.decided.round}`);
    }
  }

  private log(line: string): void {
    if (this.tracing) this.trace.push(line);
  }
}
