/**
 * A tiny in-memory network for FastLeaderElection tests: N machines, one queue of notifications in
 * flight, time as a number that only moves when the test (or `run`) moves it. Delivery order, delay
 * and loss come from one seeded PRNG (mulberry32), so a seed replays a run exactly. Partitions cut
 * links; a crashed server neither sends nor receives. Every step can be written to a trace, which
 * the scenario tests compare against golden text.
 */
import { QuorumVerifier } from "../../src/consensus/quorum.js";
import {
  FastLeaderElection,
  type Decision,
  type ElectionOutput,
  type ElectionSelf,
  type FastLeaderElectionOptions,
} from "../../src/election/fast-leader-election.js";
import type { Notification, PeerRole, Vote } from "../../src/election/types.js";
import { compareVotes, isNoVote } from "../../src/election/vote.js";
import { counterOf, epochOf, makeZxid } from "../../src/store/zxid.js";

/** mulberry32: a 32-bit seeded PRNG, returning floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

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
  /** Chance that a delivery is lost, in [0, 1). */
  lossRate?: number;
  /** Each message waits a random 0..maxDelayMs before it can be delivered. */
  maxDelayMs?: number;
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

interface InFlight {
  from: number;
  to: number;
  notification: Notification;
  deliverAtMs: number;
}

export type DeliveryOrder = "fifo" | "random";

export function formatVote(v: Vote): string {
  if (isNoVote(v)) return "nobody";
  return `${v.leader}(e${v.peerEpoch} z${epochOf(v.zxid)}:${counterOf(v.zxid)})`;
}

export function formatNotification(n: Notification): string {
  return `${n.state} r${n.round} ${formatVote(n.vote)}`;
}

export class ElectionNetwork {
  nowMs = 0;
  readonly quorum: QuorumVerifier;
  readonly nodes = new Map<number, FastLeaderElection>();
  readonly selves = new Map<number, ElectionSelf>();
  /** The latest decision of each server. */
  readonly decisions = new Map<number, Decision>();
  readonly crashed = new Set<number>();
  readonly trace: string[] = [];
  lossRate: number;
  maxDelayMs: number;
  delivered = 0;
  /** Messages lost to `lossRate`. */
  lost = 0;
  learnerTimeoutMs: number | undefined;
  /** When each decided server was first seen without a working leader (see learnerTimeoutMs). */
  private readonly troubleSinceMs = new Map<number, number>();
  private readonly random: () => number;
  private readonly tracing: boolean;
  private inFlight: InFlight[] = [];
  /** Cut links, as "from>to". */
  private readonly cut = new Set<string>();

  constructor(options: NetworkOptions) {
    const observers = options.observers ?? [];
    this.quorum = new QuorumVerifier(
      options.voters.map((v) => v.id),
      observers,
    );
    this.random = mulberry32(options.seed ?? 1);
    this.lossRate = options.lossRate ?? 0;
    this.maxDelayMs = options.maxDelayMs ?? 0;
    this.tracing = options.trace ?? false;
    this.learnerTimeoutMs = options.learnerTimeoutMs;
    const make = (myId: number, role: PeerRole) => new FastLeaderElection({ myId, role, quorum: this.quorum, ...options.election });
    for (const v of options.voters) {
      this.nodes.set(v.id, make(v.id, "participant"));
      this.selves.set(v.id, { lastZxid: makeZxid(v.epoch, v.counter), currentEpoch: v.epoch });
    }
    for (const id of observers) {
      this.nodes.set(id, make(id, "observer"));
      this.selves.set(id, { lastZxid: 0, currentEpoch: 0 });
    }
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

  get pending(): number {
    return this.inFlight.length;
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

  /** Deliver one message that is due now; false if none is. */
  deliverNext(order: DeliveryOrder = "fifo"): boolean {
    const due = this.inFlight.map((m, i) => [m, i] as const).filter(([m]) => m.deliverAtMs <= this.nowMs);
    if (due.length === 0) return false;
    const pick = order === "fifo" ? due[0]! : due[Math.floor(this.random() * due.length)]!;
    this.inFlight.splice(pick[1], 1);
    this.deliverMessage(pick[0]);
    return true;
  }

  /** Deliver the oldest message from `from` to `to`. */
  deliver(from: number, to: number): void {
    const i = this.inFlight.findIndex((m) => m.from === from && m.to === to);
    if (i < 0) throw new Error(`nothing in flight ${from}→${to}`);
    const [m] = this.inFlight.splice(i, 1);
    this.deliverMessage(m!);
  }

  /** Lose the oldest message from `from` to `to`. */
  drop(from: number, to: number): void {
    const i = this.inFlight.findIndex((m) => m.from === from && m.to === to);
    if (i < 0) throw new Error(`nothing in flight ${from}→${to}`);
    const [m] = this.inFlight.splice(i, 1);
    this.log(`t=${this.nowMs} ${from}→${to} lost ${formatNotification(m!.notification)}`);
  }

  /** Lose everything in flight. */
  loseAll(): void {
    for (const m of this.inFlight) this.log(`t=${this.nowMs} ${m.from}→${m.to} lost ${formatNotification(m.notification)}`);
    this.inFlight = [];
  }

  /** Deliver everything due, including what the deliveries send, until nothing is due. */
  flush(order: DeliveryOrder = "fifo", limit = 100_000): void {
    for (let i = 0; i < limit; i++) if (!this.deliverNext(order)) return;
    throw new Error(`flush did not settle within ${limit} deliveries`);
  }

  /** Move time forward by `ms` and tick every live server. */
  advance(ms: number): void {
    this.nowMs += ms;
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
   * Deliver (in `order`) and let time pass, jumping straight to the next delivery or deadline,
   * until `until()` holds or time passes `limitMs`. Returns whether `until()` held.
   */
  run(until: () => boolean, limitMs: number, order: DeliveryOrder = "random"): boolean {
    for (let steps = 0; steps < 1_000_000; steps++) {
      if (until()) return true;
      if (this.deliverNext(order)) continue;
      const next = this.nextEventMs();
      if (next === undefined || next > limitMs) return until();
      this.nowMs = Math.max(this.nowMs, next);
      this.tickAll();
    }
    throw new Error("run did not settle within 1,000,000 steps");
  }

  // ---- faults

  /** Cut every link between the two groups, both ways. */
  partition(a: number[], b: number[]): void {
    for (const x of a) for (const y of b) this.cut.add(`${x}>${y}`).add(`${y}>${x}`);
    this.log(`t=${this.nowMs} partition ${a.join(" ")} | ${b.join(" ")}`);
  }

  heal(): void {
    this.cut.clear();
    this.log(`t=${this.nowMs} heal`);
  }

  crash(id: number): void {
    this.crashed.add(id);
    this.log(`t=${this.nowMs} ${id} crashes`);
  }

  // ---- inspection

  decidedIds(): number[] {
    return this.liveIds.filter((id) => this.node(id).state !== "looking");
  }

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
    const times: number[] = this.inFlight.map((m) => m.deliverAtMs);
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
    return !this.crashed.has(a) && !this.crashed.has(b) && !this.cut.has(`${a}>${b}`) && !this.cut.has(`${b}>${a}`);
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

  private deliverMessage(m: InFlight): void {
    const where = `t=${this.nowMs} ${m.from}→${m.to}`;
    if (this.crashed.has(m.to) || this.crashed.has(m.from)) {
      this.log(`${where} dropped (crashed) ${formatNotification(m.notification)}`);
      return;
    }
    if (this.cut.has(`${m.from}>${m.to}`)) {
      this.log(`${where} dropped (cut) ${formatNotification(m.notification)}`);
      return;
    }
    if (this.lossRate > 0 && this.random() < this.lossRate) {
      this.lost += 1;
      this.log(`${where} lost ${formatNotification(m.notification)}`);
      return;
    }
    this.delivered += 1;
    this.log(`${where} ${formatNotification(m.notification)}`);
    this.handle(m.to, this.node(m.to).receive(m.notification, this.nowMs));
  }

  private handle(id: number, out: ElectionOutput, cause?: "tick"): void {
    const byContent = new Map<string, number[]>();
    for (const { to, notification } of out.send) {
      const delay = this.maxDelayMs > 0 ? Math.floor(this.random() * (this.maxDelayMs + 1)) : 0;
      this.inFlight.push({ from: id, to, notification, deliverAtMs: this.nowMs + delay });
      const key = formatNotification(notification);
      byContent.set(key, [...(byContent.get(key) ?? []), to]);
    }
    const prefix = cause === "tick" ? `t=${this.nowMs} ${id}` : `  ${id}`;
    for (const [content, to] of byContent) this.log(`${prefix} sends ${content} → ${to.join(" ")}`);
    if (out.decided !== undefined) {
      this.decisions.set(id, out.decided);
      this.log(`${prefix} decides ${out.decided.state} ${out.decided.leader} r${out.decided.round}`);
    }
  }

  private log(line: string): void {
    if (this.tracing) this.trace.push(line);
  }
}
