/**
 * FastLeaderElection (ZooKeeper's FLE, docs/architecture.md §4) as a deterministic state machine.
 *
 * The host feeds three inputs — `startLooking` when the server enters LOOKING, `receive` for every
 * notification a peer sent, `tick` as time passes — and after each one carries out the returned
 * `ElectionOutput`: send every notification in `send`, and when `decided` is set, hand the decision
 * to Zab (lead, follow or observe). Time arrives as `nowMs`; nothing here reads a clock, draws a
 * random number, sets a timer or touches a socket (docs/architecture.md practices 1 and 5).
 *
 * After deciding, the machine stays in the decided state so that it can answer: a LOOKING peer that
 * asks gets our state and vote back, and learns the established leader without a new election
 * (ZooKeeper's out-of-election path). The host calls `settle` to change what it answers (e.g. the
 * new peer epoch once Zab has established it) and `startLooking` again when Zab gives up.
 *
 * Rules, as in ZooKeeper's FastLeaderElection:
 * - votes are ordered by (peerEpoch, zxid, leader); a vote for a non-voter is never better;
 * - a LOOKING notification with a higher round moves us to that round, clears the received votes,
 *   re-votes (the better of our own vote and theirs) and broadcasts; an equal round with a better
 *   vote is adopted and broadcast; a lower round is ignored, and answered with our vote;
 * - when a quorum of the received votes (ours included) equals our proposal, a finalize window
 *   opens; a better vote inside it cancels the window, anything else is dropped (but see below);
 *   at its end we decide: leading if the vote is ours, following otherwise;
 * - FOLLOWING/LEADING notifications go to an out-of-election table (and, in our round, to the
 *   received votes); a quorum of them agreeing on a leader that itself says LEADING lets us join
 *   at once (ZooKeeper's checkLeader);
 * - with nothing decided and nothing received for the current notification interval, we resend
 *   our vote and double the interval, up to `maxNotificationIntervalMs`.
 *
 * Observers vote for nobody: they ask every voter, and voters answer observers at once with their
 * own state and vote. An observer never counts toward a quorum (voters drop its notification
 * after answering) and joins only through FOLLOWING/LEADING answers.
 *
 * Where this differs from ZooKeeper, on purpose:
 * - the finalize window is a fixed deadline from the moment the quorum formed (ZooKeeper restarts
 *   its wait after every dropped notification);
 * - a LOOKING notification from a later round also ends the window (ZooKeeper drops it unless its
 *   vote is better): the quorum we were about to act on is from a round its members have left, and
 *   deciding on it can leave us following a server that never leads until Zab times out;
 * - a voter answers an observer only while the observer is LOOKING, and a LOOKING observer answers
 *   nobody — both cut pointless answer loops.
 */
import type { MemberRole } from "../common/membership.js";
import { assert } from "../common/assert.js";
import { isZxid } from "../store/zxid.js";
import type { Notification, ServerState, Vote } from "./types.js";
import { compareVotes, isPeerEpoch, isServerState, isServerId, isWellFormedVote, NO_VOTE } from "./vote.js";

/**
 * The membership view the election needs. consensus/quorum.ts's QuorumVerifier satisfies it
 * structurally; it is restated here because src/election may not import src/consensus
 * (docs/architecture.md §2).
 */
export interface ElectionQuorum {
  readonly voters: ReadonlySet<number>;
  readonly observers: ReadonlySet<number>;
  isVoter(id: number): boolean;
  /** Whether `ids` (non-voters ignored) form a quorum of the voters. */
  containsQuorum(ids: Iterable<number>): boolean;
  /**
   * With several configurations in play (a reconfiguration logged, not known committed): whether
   * `ids` form a quorum of any one of them. Enough to join a leader that others already follow —
   * following grants nothing, the leader's own establishment is what needs every quorum — and a
   * reconfiguration that leader's term abandoned must not keep us from ever joining it.
   */
  containsQuorumOfAny?(ids: Iterable<number>): boolean;
}

export interface FastLeaderElectionOptions {
  myId: number;
  role: MemberRole;
  quorum: ElectionQuorum;
  /** How long a quorum for our proposal must stand before we decide (ZooKeeper's finalizeWait). */
  finalizeWaitMs?: number;
  /** First resend interval while nothing is decided (ZooKeeper's minNotificationInterval). */
  notificationTimeoutMs?: number;
  /** The resend interval doubles up to this (ZooKeeper's maxNotificationInterval). */
  maxNotificationIntervalMs?: number;
}

export const ELECTION_DEFAULTS = {
  finalizeWaitMs: 200,
  notificationTimeoutMs: 200,
  maxNotificationIntervalMs: 60_000,
} as const;

/** Non-voters whose last answer is remembered (for the answer rate limit). */
const NON_VOTERS_REMEMBERED_MAX = 256;

export type DecidedState = "leading" | "following" | "observing";

/** The outcome of an election: who leads, what we do, and the vote and round we answer with. */
export interface Decision {
  leader: number;
  state: DecidedState;
  vote: Vote;
  /** The election round the decision was made in (ZooKeeper's electionEpoch of the final vote). */
  round: number;
}

export interface OutgoingNotification {
  to: number;
  notification: Notification;
}

/** Everything one input produced. `send` holds at most one notification per member. */
export interface ElectionOutput {
  send: OutgoingNotification[];
  /** Set by the input that ended the election; undefined otherwise (also when already decided). */
  decided: Decision | undefined;
}

/** The host's own log position, read when it enters LOOKING. */
export interface ElectionSelf {
  lastZxid: number;
  currentEpoch: number;
  /**
   * Whether this participant may lead: false when it votes only through a reconfiguration it heard
   * of and has not logged, so that a leader core built from its own log would not count it a voter.
   * Such a server votes for nobody until it adopts a better vote, as ZooKeeper's getInitId gives a
   * server outside its own voting members no vote of its own. Default true.
   */
  mayLead?: boolean;
}

/** A vote as a table keeps it: with the round it was cast in and the sender's state. */
interface TableEntry {
  vote: Vote;
  round: number;
  state: ServerState;
}

interface LookingPhase {
  kind: "looking";
  /** What we vote when we vote for ourselves (NO_VOTE for an observer). */
  selfVote: Vote;
  proposal: Vote;
  /** Votes of the current round, by sender (ZooKeeper's recvset); ours included. */
  received: Map<number, TableEntry>;
  /** FOLLOWING/LEADING notifications of any round, by sender (ZooKeeper's outofelection). */
  outOfElection: Map<number, TableEntry>;
  /** Set while a quorum backs the proposal: decide at this time unless a better vote arrives. */
  finalizeAtMs: number | undefined;
  resendIntervalMs: number;
  resendAtMs: number;
}

type Phase = { kind: "idle" } | LookingPhase | { kind: "settled"; decision: Decision };

export class FastLeaderElection {
  readonly myId: number;
  readonly finalizeWaitMs: number;
  readonly notificationTimeoutMs: number;
  readonly maxNotificationIntervalMs: number;
  private roleNow: MemberRole;
  /** Set by startLooking: whether our own vote names us (ElectionSelf.mayLead). */
  private mayLead = false;
  private quorum: ElectionQuorum;
  /** Voters other than us, ascending: where our vote goes. */
  private peersToNotify: readonly number[];
  private membersCount: number;
  /** When each non-voter was last answered (see receive), oldest first. */
  private readonly nonVoterAnsweredAtMs = new Map<number, number>();
  /** ZooKeeper's logicalclock: the election round; bumped by startLooking, raised by peers. */
  private logicalClock = 0;
  /** The latest time any input carried; deadlines are judged against it (time never goes back). */
  private nowMs = 0;
  private phase: Phase = { kind: "idle" };

  constructor(options: FastLeaderElectionOptions) {
    const { myId, role, quorum } = options;
    this.myId = myId;
    this.roleNow = role;
    this.quorum = quorum;
    this.finalizeWaitMs = options.finalizeWaitMs ?? ELECTION_DEFAULTS.finalizeWaitMs;
    this.notificationTimeoutMs = options.notificationTimeoutMs ?? ELECTION_DEFAULTS.notificationTimeoutMs;
    this.maxNotificationIntervalMs = options.maxNotificationIntervalMs ?? ELECTION_DEFAULTS.maxNotificationIntervalMs;

    assert(isServerId(myId), `server id must be a positive safe integer: ${myId}`);
    assert(Number.isSafeInteger(this.finalizeWaitMs) && this.finalizeWaitMs >= 0, "finalizeWaitMs is a non-negative integer");
    assert(Number.isSafeInteger(this.notificationTimeoutMs) && this.notificationTimeoutMs > 0, "notificationTimeoutMs is a positive integer");
    assert(
      Number.isSafeInteger(this.maxNotificationIntervalMs) && this.maxNotificationIntervalMs >= this.notificationTimeoutMs,
      "maxNotificationIntervalMs is an integer no smaller than notificationTimeoutMs",
    );

    this.peersToNotify = [];
    this.membersCount = 0;
    this.useView(role, quorum);
  }

  get role(): MemberRole {
    return this.roleNow;
  }

  /**
   * A new membership view (a reconfiguration came into force, or one is pending: the host hands a
   * joint view). The host calls `startLooking` right after: votes counted under the old view are
   * dropped with the round.
   */
  reconfigure(role: MemberRole, quorum: ElectionQuorum): void {
    this.useView(role, quorum);
  }

  private useView(role: MemberRole, quorum: ElectionQuorum): void {
    const myId = this.myId;
    for (const id of [...quorum.voters, ...quorum.observers]) assert(isServerId(id), `member id must be a positive safe integer: ${id}`);
    if (role === "participant") assert(quorum.isVoter(myId), `participant ${myId} is not a voter`);
    else assert(quorum.observers.has(myId), `observer ${myId} is not listed as an observer`);
    this.roleNow = role;
    this.quorum = quorum;
    this.peersToNotify = [...quorum.voters].filter((id) => id !== myId).sort((a, b) => a - b);
    this.membersCount = quorum.voters.size + quorum.observers.size;
  }

  /** ZooKeeper's ServerState; "looking" also before the first startLooking. */
  get state(): ServerState {
    return this.phase.kind === "settled" ? this.phase.decision.state : "looking";
  }

  /** The current election round (logical clock). */
  get round(): number {
    return this.logicalClock;
  }

  /** What we answer with: our proposal while looking, the decided vote after. */
  get currentVote(): Vote {
    switch (this.phase.kind) {
      case "idle":
        return { ...NO_VOTE };
      case "looking":
        return { ...this.phase.proposal };
      case "settled":
        return { ...this.phase.decision.vote };
    }
  }

  get decision(): Decision | undefined {
    return this.phase.kind === "settled" ? copyDecision(this.phase.decision) : undefined;
  }

  /**
   * The votes of the current round that this server holds (its own included), by sender; empty when
   * not looking. For logs and tests.
   */
  votesReceived(): { from: number; vote: Vote; round: number; state: ServerState }[] {
    if (this.phase.kind !== "looking") return [];
    return [...this.phase.received].map(([from, e]) => ({ from, vote: { ...e.vote }, round: e.round, state: e.state })).sort((a, b) => a.from - b.from);
  }

  /** When the host must call `tick` next (finalize deadline or resend), or undefined if never. */
  nextDeadlineMs(): number | undefined {
    if (this.phase.kind !== "looking") return undefined;
    return this.phase.finalizeAtMs ?? this.phase.resendAtMs;
  }

  /**
   * Enter LOOKING: bump the round, vote for ourselves (an observer for nobody) and send the vote to
   * every voter. Forgets every vote received in an earlier election.
   */
  startLooking(self: ElectionSelf, nowMs: number): ElectionOutput {
    this.advanceTo(nowMs);
    assert(isZxid(self.lastZxid), `lastZxid is not a zxid: ${self.lastZxid}`);
    assert(isPeerEpoch(self.currentEpoch), `currentEpoch out of range: ${self.currentEpoch}`);
    assert(this.logicalClock < Number.MAX_SAFE_INTEGER, "election round exhausted");
    this.logicalClock += 1;

    this.mayLead = this.role === "participant" && self.mayLead !== false;
    const selfVote: Vote = this.mayLead ? { leader: this.myId, zxid: self.lastZxid, peerEpoch: self.currentEpoch } : { ...NO_VOTE };
    const phase: LookingPhase = {
      kind: "looking",
      selfVote,
      proposal: { ...selfVote },
      received: new Map(),
      outOfElection: new Map(),
      finalizeAtMs: undefined,
      resendIntervalMs: this.notificationTimeoutMs,
      resendAtMs: this.nowMs + this.notificationTimeoutMs,
    };
    this.phase = phase;

    const output = emptyOutput();
    this.broadcast(phase, output);
    if (this.role === "participant") {
      this.recordOwnVote(phase);
      this.checkProposalQuorum(phase);
    }
    return output;
  }

  /**
   * A notification from peer `n.from`. Malformed ones are ignored; a non-voter's is answered,
   * never counted — an observer's, and a server outside our view's (ZooKeeper answers those too:
   * a server about to be added finds the leader this way).
   */
  receive(n: Notification, nowMs: number): ElectionOutput {
    this.advanceTo(nowMs);
    const output = emptyOutput();
    if (!isWellFormedNotification(n)) return output;
    if (n.from === this.myId) return output;

    const phase = this.phase;
    if (phase.kind === "idle") return output;

    if (!this.quorum.isVoter(n.from)) {
      // An observer (or a server we do not know) asking: answer, never count it. At most once per
      // notification interval each: two servers outside each other's view (one removed, one not
      // yet added) would otherwise answer each other's answers without end.
      if (n.state === "looking" && this.role === "participant" && this.mayAnswerNonVoter(n.from)) this.answer(n.from, output);
      return output;
    }
    if (phase.kind === "settled") this.stepSettled(n, output);
    else this.stepLooking(phase, n, output);
    this.checkBounds(output);
    return output;
  }

  /** Time passes: decide at the finalize deadline, or resend our vote with back-off. */
  tick(nowMs: number): ElectionOutput {
    this.advanceTo(nowMs);
    const output = emptyOutput();
    const phase = this.phase;
    if (phase.kind !== "looking") return output;

    if (phase.finalizeAtMs !== undefined) {
      if (this.nowMs >= phase.finalizeAtMs) {
        assert(this.hasQuorum(phase.received, this.ownEntry(phase)), "a quorum backs the proposal at the finalize deadline");
        this.decide(phase.proposal, this.logicalClock, output);
      }
      return output;
    }
    if (this.nowMs >= phase.resendAtMs) {
      this.broadcast(phase, output);
      phase.resendIntervalMs = Math.min(phase.resendIntervalMs * 2, this.maxNotificationIntervalMs);
      phase.resendAtMs = this.nowMs + phase.resendIntervalMs;
    }
    return output;
  }

  /**
   * Put the machine in a decided state without an election, or change what it answers with:
   * e.g. `settle({ ...decision, vote: { ...decision.vote, peerEpoch: newEpoch } })` once Zab has
   * established a new epoch (ZooKeeper's updateElectionVote).
   */
  settle(decision: Decision): void {
    assert(isWellFormedVote(decision.vote) && isServerId(decision.vote.leader), "a decision names a real vote");
    assert(decision.vote.leader === decision.leader, "the decided vote names the leader");
    assert(this.quorum.isVoter(decision.leader), `leader ${decision.leader} is not a voter`);
    assert(Number.isSafeInteger(decision.round) && decision.round >= 0, "round is a non-negative integer");
    assert(decision.state === this.decidedStateFor(decision.leader), `state ${decision.state} does not fit leader ${decision.leader}`);
    this.phase = { kind: "settled", decision: copyDecision(decision) };
  }

  // ---- per-phase steps

  /** Not looking: a looking voter gets our state and vote so that it can join. */
  private stepSettled(n: Notification, output: ElectionOutput): void {
    if (n.state === "looking") this.answer(n.from, output);
  }

  private stepLooking(phase: LookingPhase, n: Notification, output: ElectionOutput): void {
    // Something arrived: the quiet period that triggers a resend starts over (ZooKeeper polls its
    // queue with the notification timeout) — unless it is a voter's resend of exactly what we
    // already hold from it. Such repeats must not postpone our own resend: a voter that missed our
    // better vote resends its own worse one at the same cadence as our quiet period, and each of
    // its repeats would restart that period, so ours would never go out and neither would ever
    // decide (found by the simulator's minority-out convergence, seed 327).
    const held = phase.received.get(n.from);
    const repeat =
      held !== undefined && n.round === this.logicalClock && held.round === n.round && held.state === n.state && compareVotes(held.vote, n.vote) === 0;
    if (!repeat) phase.resendAtMs = this.nowMs + phase.resendIntervalMs;

    // A looking voter behind our round gets our vote so that it catches up.
    if (this.role === "participant" && n.state === "looking" && n.round < this.logicalClock) this.answer(n.from, output);

    // A vote for nobody (a voter that may not lead, see ElectionSelf.mayLead) still carries its
    // round: a looking voter ahead of us must pull us into its round, or neither would ever count
    // the other. It never backs a proposal.
    const forNobody = n.state === "looking" && n.vote.leader === NO_VOTE.leader;
    if (!this.quorum.isVoter(n.vote.leader) && !forNobody) return;
    if (phase.finalizeAtMs !== undefined) {
      // Inside the finalize window only a better vote, or a voter that has moved on to a later
      // round, matters: either reopens the election. Anything else is dropped, as in ZooKeeper.
      const laterRound = n.state === "looking" && n.round > this.logicalClock;
      if (!laterRound && !this.isBetter(n.vote, phase.proposal)) return;
      phase.finalizeAtMs = undefined;
    }

    switch (n.state) {
      case "looking":
        if (this.role === "participant") this.takeLookingVote(phase, n, output);
        break;
      case "following":
      case "leading":
        this.takeEstablishedVote(phase, n, output);
        break;
      case "observing":
        break;
    }
    // A better vote that did not change our proposal (an established leader we cannot join yet)
    // cancelled the window; the quorum for our proposal still stands, so the window reopens.
    if (this.phase === phase && this.role === "participant") this.checkProposalQuorum(phase);
  }

  private takeLookingVote(phase: LookingPhase, n: Notification, output: ElectionOutput): void {
    if (n.round > this.logicalClock) {
      this.logicalClock = n.round;
      phase.received.clear();
      phase.proposal = this.isBetter(n.vote, phase.selfVote) ? { ...n.vote } : { ...phase.selfVote };
      this.broadcast(phase, output);
    } else if (n.round < this.logicalClock) {
      return;
    } else if (this.isBetter(n.vote, phase.proposal)) {
      phase.proposal = { ...n.vote };
      this.broadcast(phase, output);
    }
    this.recordOwnVote(phase);
    this.setBounded(phase.received, n.from, entryOf(n));
    this.checkProposalQuorum(phase);
  }

  /** A FOLLOWING/LEADING notification: join that leader if a quorum stands behind it. */
  private takeEstablishedVote(phase: LookingPhase, n: Notification, output: ElectionOutput): void {
    const entry = entryOf(n);
    if (n.round === this.logicalClock) {
      this.setBounded(phase.received, n.from, entry);
      if (this.hasQuorum(phase.received, entry, true) && this.checkLeader(phase.received, n.vote.leader, n.round)) {
        this.decide(n.vote, n.round, output);
        return;
      }
    }
    this.setBounded(phase.outOfElection, n.from, entry);
    if (this.hasQuorum(phase.outOfElection, entry, true) && this.checkLeader(phase.outOfElection, n.vote.leader, n.round)) {
      this.logicalClock = n.round;
      this.decide(n.vote, n.round, output);
    }
  }

  // ---- helpers

  private decide(vote: Vote, round: number, output: ElectionOutput): void {
    const decision: Decision = { leader: vote.leader, state: this.decidedStateFor(vote.leader), vote: { ...vote }, round };
    this.phase = { kind: "settled", decision };
    output.decided = copyDecision(decision);
  }

  private decidedStateFor(leader: number): DecidedState {
    if (this.role === "observer") {
      assert(leader !== this.myId, "an observer never leads");
      return "observing";
    }
    return leader === this.myId ? "leading" : "following";
  }

  /**
   * ZooKeeper's checkLeader: to follow someone else, that server must itself have told us it is
   * leading; to lead on others' word, the decision must be from our own round.
   */
  private checkLeader(table: ReadonlyMap<number, TableEntry>, leader: number, round: number): boolean {
    if (leader !== this.myId) return table.get(leader)?.state === "leading";
    return this.logicalClock === round;
  }

  /** `toJoin`: backers of a leader already decided by others (see ElectionQuorum.containsQuorumOfAny). */
  private hasQuorum(table: ReadonlyMap<number, TableEntry>, target: TableEntry, toJoin = false): boolean {
    const backers: number[] = [];
    for (const [sid, entry] of table) if (entriesAgree(entry, target)) backers.push(sid);
    return toJoin && this.quorum.containsQuorumOfAny !== undefined ? this.quorum.containsQuorumOfAny(backers) : this.quorum.containsQuorum(backers);
  }

  private checkProposalQuorum(phase: LookingPhase): void {
    if (phase.finalizeAtMs !== undefined) return;
    // Nobody, or ourselves when we may not lead (a vote for us adopted from an earlier round): wait for a better vote.
    if (phase.proposal.leader === NO_VOTE.leader || (phase.proposal.leader === this.myId && !this.mayLead)) return;
    if (this.hasQuorum(phase.received, this.ownEntry(phase))) phase.finalizeAtMs = this.nowMs + this.finalizeWaitMs;
  }

  /** ZooKeeper's own notification loops back to itself; here our vote is written in directly. */
  private recordOwnVote(phase: LookingPhase): void {
    this.setBounded(phase.received, this.myId, this.ownEntry(phase));
  }

  private ownEntry(phase: LookingPhase): TableEntry {
    return { vote: { ...phase.proposal }, round: this.logicalClock, state: "looking" };
  }

  private isBetter(candidate: Vote, current: Vote): boolean {
    return this.quorum.isVoter(candidate.leader) && compareVotes(candidate, current) > 0;
  }

  private mayAnswerNonVoter(id: number): boolean {
    const last = this.nonVoterAnsweredAtMs.get(id);
    if (last !== undefined && this.nowMs - last < this.notificationTimeoutMs) return false;
    this.nonVoterAnsweredAtMs.delete(id);
    this.nonVoterAnsweredAtMs.set(id, this.nowMs);
    // Bounded: the oldest answered drops out first (it may then be answered a little early).
    if (this.nonVoterAnsweredAtMs.size > NON_VOTERS_REMEMBERED_MAX) this.nonVoterAnsweredAtMs.delete(this.nonVoterAnsweredAtMs.keys().next().value!);
    return true;
  }

  private broadcast(phase: LookingPhase, output: ElectionOutput): void {
    for (const to of this.peersToNotify) {
      pushSend(output, to, { from: this.myId, state: "looking", vote: { ...phase.proposal }, round: this.logicalClock });
    }
  }

  private answer(to: number, output: ElectionOutput): void {
    const round = this.phase.kind === "settled" ? this.phase.decision.round : this.logicalClock;
    pushSend(output, to, { from: this.myId, state: this.state, vote: this.currentVote, round });
  }

  private setBounded(table: Map<number, TableEntry>, sid: number, entry: TableEntry): void {
    table.set(sid, entry);
    assert(table.size <= this.membersCount, "a vote table holds at most one entry per member");
  }

  private checkBounds(output: ElectionOutput): void {
    assert(output.send.length <= this.membersCount, "one input sends at most one notification per member");
  }

  private advanceTo(nowMs: number): void {
    assert(Number.isFinite(nowMs), `nowMs must be a finite number: ${nowMs}`);
    if (nowMs > this.nowMs) this.nowMs = nowMs;
  }
}

function emptyOutput(): ElectionOutput {
  return { send: [], decided: undefined };
}

/** Replace any earlier notification to the same peer from this input: only the latest matters. */
function pushSend(output: ElectionOutput, to: number, notification: Notification): void {
  const index = output.send.findIndex((s) => s.to === to);
  if (index >= 0) output.send.splice(index, 1);
  output.send.push({ to, notification });
}

function entryOf(n: Notification): TableEntry {
  return { vote: { ...n.vote }, round: n.round, state: n.state };
}

/**
 * ZooKeeper's Vote.equals: if either side is still looking, leader, zxid, round and epoch must all
 * match; between two settled servers, leader and epoch suffice (their zxids and rounds may differ
 * once the leader's epoch has moved on).
 */
function entriesAgree(a: TableEntry, b: TableEntry): boolean {
  if (a.state === "looking" || b.state === "looking") {
    return a.vote.leader === b.vote.leader && a.vote.zxid === b.vote.zxid && a.round === b.round && a.vote.peerEpoch === b.vote.peerEpoch;
  }
  return a.vote.leader === b.vote.leader && a.vote.peerEpoch === b.vote.peerEpoch;
}

function copyDecision(d: Decision): Decision {
  return { leader: d.leader, state: d.state, vote: { ...d.vote }, round: d.round };
}

/** Peer input is checked, never trusted: a malformed notification is dropped, not asserted on. */
function isWellFormedNotification(n: unknown): n is Notification {
  if (typeof n !== "object" || n === null) return false;
  const x = n as Record<string, unknown>;
  return (
    isServerId(x.from) &&
    isServerState(x.state) &&
    typeof x.round === "number" &&
    Number.isSafeInteger(x.round) &&
    x.round >= 0 &&
    x.round < Number.MAX_SAFE_INTEGER &&
    isWellFormedVote(x.vote)
  );
}
