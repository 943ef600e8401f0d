/**
 * FastLeaderElection, one machine at a time: each test feeds hand-made notifications and ticks and
 * checks what the machine sends and decides. Time is a number; nothing here waits.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { JointQuorum, QuorumVerifier } from "../../src/consensus/quorum.js";
import { FastLeaderElection, type ElectionOutput, type FastLeaderElectionOptions } from "../../src/election/fast-leader-election.js";
import type { Notification, ServerState, Vote } from "../../src/election/types.js";
import { NO_VOTE } from "../../src/election/vote.js";
import { makeZxid } from "../../src/store/zxid.js";
import { formatNotification, formatVote } from "./election-network.js";

/** Voters 1..n, observers as given. */
function quorum(voters: number, observers: number[] = []): QuorumVerifier {
  return new QuorumVerifier(
    Array.from({ length: voters }, (_, i) => i + 1),
    observers,
  );
}

function machine(myId: number, q = quorum(3, [4]), options: Partial<FastLeaderElectionOptions> = {}): FastLeaderElection {
  return new FastLeaderElection({ myId, role: q.isVoter(myId) ? "participant" : "observer", quorum: q, ...options });
}

const vote = (leader: number, epoch: number, counter: number): Vote => ({ leader, peerEpoch: epoch, zxid: makeZxid(epoch, counter) });
const note = (from: number, state: ServerState, round: number, v: Vote): Notification => ({ from, state, round, vote: v });
/** Every server's own log position in these tests: epoch 1, counter 5 — ids break the ties. */
const SELF = { lastZxid: makeZxid(1, 5), currentEpoch: 1 };

/** "to: state rN vote" per notification sent, in order. */
function sent(out: ElectionOutput): string[] {
  return out.send.map((s) => `${s.to}: ${formatNotification(s.notification)}`);
}

test("startLooking bumps the round, votes for itself and sends the vote to every other voter", () => {
  const m = machine(2);
  const first = m.startLooking(SELF, 0);
  assert.deepEqual(sent(first), ["1: looking r1 2(e1 z1:5)", "3: looking r1 2(e1 z1:5)"]);
  assert.equal(m.state, "looking");
  const second = m.startLooking(SELF, 10);
  assert.equal(m.round, 2);
  assert.deepEqual(sent(second), ["1: looking r2 2(e1 z1:5)", "3: looking r2 2(e1 z1:5)"]);
});

test("a notification with a higher round resets the round and the received votes, re-votes self against it and broadcasts", () => {
  const m = machine(1, quorum(5));
  m.startLooking(SELF, 0);
  m.receive(note(2, "looking", 1, vote(5, 1, 9)), 0); // adopt 5 in round 1
  assert.equal(formatVote(m.currentVote), "5(e1 z1:9)");
  assert.deepEqual(
    m.votesReceived().map((e) => e.from),
    [1, 2],
  );

  // Round 3 arrives with a vote for 3: better than our own vote (1), worse than the 5 we had adopted.
  const out = m.receive(note(3, "looking", 3, vote(3, 1, 6)), 1);
  assert.equal(m.round, 3);
  assert.equal(formatVote(m.currentVote), "3(e1 z1:6)", "re-vote compares our own vote with theirs, not the old proposal");
  assert.deepEqual(sent(out), ["2: looking r3 3(e1 z1:6)", "3: looking r3 3(e1 z1:6)", "4: looking r3 3(e1 z1:6)", "5: looking r3 3(e1 z1:6)"]);
  assert.deepEqual(
    m.votesReceived().map((e) => `${e.from} r${e.round} ${formatVote(e.vote)}`),
    ["1 r3 3(e1 z1:6)", "3 r3 3(e1 z1:6)"],
    "round 1 votes are gone",
  );
});

test("a higher round whose vote is worse than ours makes us broadcast our own vote in that round", () => {
  const m = machine(3);
  m.startLooking(SELF, 0);
  const out = m.receive(note(1, "looking", 4, vote(1, 1, 5)), 0);
  assert.equal(m.round, 4);
  assert.deepEqual(sent(out), ["1: looking r4 3(e1 z1:5)", "2: looking r4 3(e1 z1:5)"]);
});

test("an equal round with a better vote is adopted and re-broadcast", () => {
  const m = machine(1, quorum(5));
  m.startLooking(SELF, 0);
  const out = m.receive(note(2, "looking", 1, vote(2, 1, 6)), 0);
  assert.equal(formatVote(m.currentVote), "2(e1 z1:6)");
  assert.deepEqual(sent(out), ["2: looking r1 2(e1 z1:6)", "3: looking r1 2(e1 z1:6)", "4: looking r1 2(e1 z1:6)", "5: looking r1 2(e1 z1:6)"]);
});

test("an equal round with a worse vote is recorded but neither adopted nor broadcast", () => {
  const m = machine(3, quorum(5));
  m.startLooking(SELF, 0);
  const out = m.receive(note(2, "looking", 1, vote(2, 1, 5)), 0);
  assert.deepEqual(out.send, []);
  assert.equal(formatVote(m.currentVote), "3(e1 z1:5)");
  assert.deepEqual(
    m.votesReceived().map((e) => `${e.from}:${e.vote.leader}`),
    ["2:2", "3:3"],
  );
});

test("a lower round is ignored, and a looking sender gets our vote back so that it catches up", () => {
  const m = machine(1);
  m.startLooking(SELF, 0);
  m.startLooking(SELF, 0); // round 2
  const out = m.receive(note(3, "looking", 1, vote(3, 9, 9)), 0);
  assert.equal(formatVote(m.currentVote), "1(e1 z1:5)", "the better vote of an old round is not adopted");
  assert.deepEqual(sent(out), ["3: looking r2 1(e1 z1:5)"], "only the lagging sender is answered");
  assert.deepEqual(
    m.votesReceived().map((e) => e.from),
    [1],
  );
});

test("a quorum for our proposal opens a finalize window; the decision comes at its deadline", () => {
  const m = machine(1, quorum(3), { finalizeWaitMs: 200 });
  m.startLooking(SELF, 0);
  const quorumFormed = m.receive(note(3, "looking", 1, vote(3, 1, 5)), 50); // adopt 3: {1, 3} back it
  assert.equal(quorumFormed.decided, undefined, "no decision at once");
  assert.equal(m.nextDeadlineMs(), 250);
  assert.equal(m.tick(249).decided, undefined);
  const at = m.tick(250);
  assert.deepEqual(at.decided, { leader: 3, state: "following", vote: vote(3, 1, 5), round: 1 });
  assert.equal(m.state, "following");
  assert.equal(m.nextDeadlineMs(), undefined);
});

test("the server whose vote won decides leading", () => {
  const m = machine(3, quorum(3));
  m.startLooking(SELF, 0);
  m.receive(note(1, "looking", 1, vote(3, 1, 5)), 0);
  assert.equal(m.tick(200).decided?.state, "leading");
});

test("a better vote inside the finalize window prevents the decision", () => {
  const m = machine(2, quorum(3), { finalizeWaitMs: 200 });
  m.startLooking(SELF, 0);
  m.receive(note(1, "looking", 1, vote(2, 1, 5)), 0); // {1, 2} back 2: window until 200
  const better = m.receive(note(3, "looking", 1, vote(3, 1, 5)), 100);
  assert.deepEqual(sent(better), ["1: looking r1 3(e1 z1:5)", "3: looking r1 3(e1 z1:5)"]);
  assert.equal(m.tick(200).decided, undefined, "the old deadline passes without a decision");
  assert.equal(m.state, "looking");
  // {2, 3} now back 3: a fresh window, counted from when that quorum formed.
  assert.equal(m.nextDeadlineMs(), 300);
  assert.equal(m.tick(300).decided?.leader, 3);
});

test("a vote no better than the proposal inside the finalize window changes nothing", () => {
  const m = machine(3, quorum(5), { finalizeWaitMs: 200 });
  m.startLooking(SELF, 0);
  m.receive(note(1, "looking", 1, vote(3, 1, 5)), 0);
  m.receive(note(2, "looking", 1, vote(3, 1, 5)), 0); // {1, 2, 3} of 5 back 3
  const worse = m.receive(note(4, "looking", 1, vote(4, 1, 1)), 100);
  assert.deepEqual(worse.send, []);
  assert.deepEqual(m.receive(note(5, "following", 1, vote(5, 1, 0)), 150).send, []);
  assert.equal(m.nextDeadlineMs(), 200, "the deadline stands");
  assert.equal(m.tick(200).decided?.state, "leading");
});

test("a looking notification from a later round inside the finalize window reopens the election in that round", () => {
  const m = machine(1, quorum(3), { finalizeWaitMs: 200 });
  m.startLooking(SELF, 0);
  m.receive(note(2, "looking", 1, vote(2, 1, 5)), 0); // {1, 2} back 2 in round 1
  // 2 has started a new election since: its round-1 vote no longer stands.
  const out = m.receive(note(2, "looking", 2, vote(2, 1, 5)), 50);
  assert.equal(m.round, 2);
  assert.deepEqual(sent(out), ["2: looking r2 2(e1 z1:5)", "3: looking r2 2(e1 z1:5)"]);
  assert.equal(m.nextDeadlineMs(), 250, "a fresh window for the quorum of round 2");
  assert.deepEqual(m.tick(250).decided, { leader: 2, state: "following", vote: vote(2, 1, 5), round: 2 });
});

test("a joining server learns an established leader from following and leading answers without a new election", () => {
  const m = machine(3, quorum(3));
  m.startLooking({ lastZxid: makeZxid(9, 9), currentEpoch: 9 }, 0); // the best log, but too late
  const first = m.receive(note(1, "following", 7, vote(2, 4, 3)), 1);
  assert.equal(first.decided, undefined, "one follower is not a quorum");
  const second = m.receive(note(2, "leading", 7, vote(2, 4, 3)), 2);
  assert.deepEqual(second.decided, { leader: 2, state: "following", vote: vote(2, 4, 3), round: 7 });
  assert.deepEqual(second.send, [], "joining sends no vote");
  assert.equal(m.round, 7, "the logical clock moves to the leader's round");
});

test("joining requires the leader itself to say it is leading", () => {
  const m = machine(5, quorum(5));
  m.startLooking(SELF, 0);
  for (const from of [1, 2, 4]) m.receive(note(from, "following", 2, vote(3, 2, 0)), 0);
  assert.equal(m.state, "looking", "three followers of 3 are a quorum, but 3 has not said it leads");
  const leader = m.receive(note(3, "leading", 2, vote(3, 2, 0)), 0);
  assert.equal(leader.decided?.leader, 3);
});

test("settled servers agree on the leader by leader and epoch even when their zxids and rounds differ", () => {
  const m = machine(3, quorum(3));
  m.startLooking(SELF, 0);
  m.receive(note(1, "following", 4, { leader: 2, peerEpoch: 5, zxid: makeZxid(4, 10) }), 0);
  const out = m.receive(note(2, "leading", 6, { leader: 2, peerEpoch: 5, zxid: makeZxid(5, 0) }), 0);
  assert.equal(out.decided?.leader, 2);
});

test("a decided server answers a looking voter with its own state and decided vote", () => {
  const m = machine(1, quorum(3));
  m.startLooking(SELF, 0);
  m.receive(note(3, "looking", 1, vote(3, 2, 0)), 0);
  m.tick(200);
  const out = m.receive(note(2, "looking", 5, vote(2, 1, 1)), 300);
  assert.deepEqual(sent(out), ["2: following r1 3(e2 z2:0)"]);
  assert.equal(m.state, "following", "answering does not reopen the election");
  assert.deepEqual(m.receive(note(3, "leading", 1, vote(3, 2, 0)), 300).send, [], "settled senders get no answer");
});

test("settle changes what a decided server answers with", () => {
  const m = machine(1, quorum(3));
  m.settle({ leader: 3, state: "following", vote: vote(3, 2, 0), round: 4 });
  m.settle({ ...m.decision!, vote: { ...m.decision!.vote, peerEpoch: 3 } }); // Zab established epoch 3
  const out = m.receive(note(2, "looking", 5, vote(2, 1, 1)), 0);
  assert.equal(out.send[0]?.notification.vote.peerEpoch, 3);
  assert.equal(out.send[0]?.notification.round, 4);
});

test("an observer asks every voter with a vote for nobody", () => {
  const o = machine(4);
  const out = o.startLooking(SELF, 0);
  assert.deepEqual(sent(out), ["1: looking r1 nobody", "2: looking r1 nobody", "3: looking r1 nobody"]);
});

test("a voter answers an observer at once and never counts it", () => {
  const m = machine(1, quorum(3, [4]));
  m.startLooking(SELF, 0);
  // Even an observer that (wrongly) votes for us must not make a quorum with our own vote.
  const out = m.receive(note(4, "looking", 1, vote(1, 1, 5)), 0);
  assert.deepEqual(sent(out), ["4: looking r1 1(e1 z1:5)"]);
  assert.deepEqual(
    m.votesReceived().map((e) => e.from),
    [1],
  );
  assert.equal(m.nextDeadlineMs(), 200, "no finalize window: the next deadline is the resend");
  assert.equal(m.tick(200).decided, undefined);
  m.receive(note(4, "following", 1, vote(2, 1, 5)), 300);
  m.receive(note(2, "leading", 1, vote(2, 1, 5)), 300);
  assert.equal(m.state, "looking", "an observer's following answer does not count toward joining");
});

test("an observer never decides from looking votes, even from a quorum of voters", () => {
  const o = machine(4);
  o.startLooking(SELF, 0);
  for (const from of [1, 2, 3]) assert.deepEqual(o.receive(note(from, "looking", 1, vote(3, 1, 5)), 0).send, []);
  o.tick(10_000);
  assert.equal(o.state, "looking");
});

test("an observer learns the leader from following and leading answers and observes", () => {
  const o = machine(4);
  o.startLooking(SELF, 0);
  o.receive(note(1, "following", 3, vote(3, 1, 5)), 0);
  const out = o.receive(note(3, "leading", 3, vote(3, 1, 5)), 0);
  assert.deepEqual(out.decided, { leader: 3, state: "observing", vote: vote(3, 1, 5), round: 3 });
});

test("with a reconfiguration in play, a vote needs a quorum of both; joining an established leader, a quorum of either", () => {
  // In force {1,2,3}; logged and not committed: {1,4,5}.
  const joint = new JointQuorum([new QuorumVerifier([1, 2, 3]), new QuorumVerifier([1, 4, 5])]);
  const m = new FastLeaderElection({ myId: 1, role: "participant", quorum: joint });
  m.startLooking(SELF, 0);
  // 2 and 3 back our own vote: a quorum of {1,2,3} only, so no finalize window opens.
  m.receive(note(2, "looking", 1, vote(1, 1, 5)), 0);
  m.receive(note(3, "looking", 1, vote(1, 1, 5)), 0);
  assert.equal(m.tick(1_000).decided, undefined, "no quorum of {1,4,5}");
  m.receive(note(4, "looking", 1, vote(1, 1, 5)), 1_000);
  assert.equal(m.tick(2_000).decided?.leader, 1, "1 and 4 make it");

  // A leader that others already follow (elected under {1,2,3} alone, its term abandoning the
  // reconfiguration) is joined on a quorum of {1,2,3}: following grants nothing.
  const j = new FastLeaderElection({ myId: 4, role: "participant", quorum: joint });
  j.startLooking(SELF, 0);
  j.receive(note(2, "following", 7, vote(3, 2, 1)), 0);
  const out = j.receive(note(3, "leading", 7, vote(3, 2, 1)), 0);
  assert.deepEqual(out.decided, { leader: 3, state: "following", vote: vote(3, 2, 1), round: 7 });
});

test("joint views compare by their configurations' voters and observers, in order", () => {
  const view = (...configs: [number[], number[]][]) => new JointQuorum(configs.map(([voters, observers]) => new QuorumVerifier(voters, observers)));
  assert.ok(view([[1, 2, 3], [4]]).sameMembership(view([[3, 2, 1], [4]])));
  assert.ok(!view([[1, 2, 3], [4]]).sameMembership(view([[1, 2, 3], []])), "an observer fewer");
  assert.ok(!view([[1, 2, 3], [4]]).sameMembership(view([[1, 2, 3, 4], []])), "the observer promoted");
  assert.ok(!view([[1, 2, 3], [4]]).sameMembership(view([[1, 2, 3], [4]], [[1, 2, 3, 4], []])), "a pending configuration more");
  assert.ok(!view([[1, 2], []], [[1, 2, 3], []]).sameMembership(view([[1, 2, 3], []], [[1, 2], []])), "the same configurations in another order");
});

test("a server outside the view is answered, never counted, and at most once per notification interval", () => {
  const m = machine(1, quorum(3, [4]));
  m.startLooking(SELF, 0);
  // Server 9 (about to be added, say) asks: it gets our vote, and neither our round nor our vote moves.
  const out = m.receive(note(9, "looking", 7, vote(9, 9, 9)), 0);
  assert.deepEqual(
    out.send.map((s) => [s.to, s.notification.state, formatVote(s.notification.vote)]),
    [[9, "looking", "1(e1 z1:5)"]],
  );
  assert.equal(out.decided, undefined);
  assert.equal(m.round, 1);
  assert.equal(formatVote(m.currentVote), "1(e1 z1:5)");
  // Asked again at once (its answer to our answer, in a loop of two servers outside each other's view): silence.
  assert.deepEqual(m.receive(note(9, "looking", 7, vote(9, 9, 9)), 100).send, []);
  // A notification interval later it is answered again.
  assert.deepEqual(
    m.receive(note(9, "looking", 7, vote(9, 9, 9)), 200).send.map((s) => s.to),
    [9],
  );
});

test("votes for a non-voter are ignored", () => {
  const m = machine(1, quorum(3, [4]));
  m.startLooking(SELF, 0);
  const out = m.receive(note(2, "looking", 1, vote(4, 9, 9)), 0);
  assert.deepEqual(out.send, []);
  assert.equal(formatVote(m.currentVote), "1(e1 z1:5)");
});

test("malformed notifications are dropped without throwing", () => {
  const m = machine(1);
  m.startLooking(SELF, 0);
  const bad: unknown[] = [
    null,
    { from: 2, state: "looking", round: 1 },
    { from: 2, state: "confused", round: 1, vote: vote(2, 1, 5) },
    { from: 2, state: "looking", round: -1, vote: vote(2, 1, 5) },
    { from: 2, state: "looking", round: 1.5, vote: vote(2, 1, 5) },
    { from: 2, state: "looking", round: 1, vote: { leader: 2, zxid: -5, peerEpoch: 1 } },
    { from: 2, state: "looking", round: 1, vote: { leader: 2, zxid: 2 ** 60, peerEpoch: 1 } },
    { from: "2", state: "looking", round: 1, vote: vote(2, 1, 5) },
    { from: 0, state: "looking", round: 1, vote: vote(2, 1, 5) },
    { from: 2, state: "looking", round: 1, vote: { leader: 0, zxid: makeZxid(1, 5), peerEpoch: 1 } },
  ];
  for (const n of bad) assert.deepEqual(m.receive(n as Notification, 0), { send: [], decided: undefined });
  assert.equal(formatVote(m.currentVote), "1(e1 z1:5)");
});

test("with nothing decided, tick resends the vote with a doubling interval up to the maximum", () => {
  const m = machine(1, quorum(3), { notificationTimeoutMs: 100, maxNotificationIntervalMs: 400 });
  m.startLooking(SELF, 0);
  const resendTimes: number[] = [];
  for (let t = 0; t <= 1600; t += 10) if (m.tick(t).send.length > 0) resendTimes.push(t);
  assert.deepEqual(resendTimes, [100, 300, 700, 1100, 1500]);
  assert.deepEqual(sent(m.tick(1900)), ["2: looking r1 1(e1 z1:5)", "3: looking r1 1(e1 z1:5)"]);
});

test("a received notification restarts the quiet period before the next resend", () => {
  const m = machine(1, quorum(5), { notificationTimeoutMs: 100 });
  m.startLooking(SELF, 0);
  m.receive(note(2, "looking", 1, vote(2, 1, 1)), 90);
  assert.deepEqual(m.tick(100).send, []);
  assert.equal(m.nextDeadlineMs(), 190);
  assert.equal(m.tick(190).send.length, 4);
});

test("a voter's repeat of the vote we already hold from it does not restart the quiet period (no resend livelock)", () => {
  const m = machine(1, quorum(5), { notificationTimeoutMs: 100 });
  m.startLooking(SELF, 0);
  m.receive(note(2, "looking", 1, vote(2, 1, 1)), 90);
  assert.equal(m.nextDeadlineMs(), 190, "something new: the quiet period starts over");
  // The same vote again, as a voter that missed ours resends it: our resend still goes out on time.
  m.receive(note(2, "looking", 1, vote(2, 1, 1)), 180);
  assert.equal(m.nextDeadlineMs(), 190);
  assert.deepEqual(sent(m.tick(190)), ["2: looking r1 1(e1 z1:5)", "3: looking r1 1(e1 z1:5)", "4: looking r1 1(e1 z1:5)", "5: looking r1 1(e1 z1:5)"]);
  // A different vote from the same voter is news again.
  m.receive(note(2, "looking", 1, vote(2, 1, 2)), 250);
  assert.equal(m.nextDeadlineMs(), 250 + 200);
});

test("a single voter elects itself after the finalize window", () => {
  const m = machine(1, quorum(1));
  assert.deepEqual(m.startLooking(SELF, 0).send, []);
  assert.equal(m.tick(199).decided, undefined);
  assert.equal(m.tick(200).decided?.state, "leading");
});

test("before startLooking a machine ignores notifications", () => {
  const m = machine(1);
  assert.deepEqual(m.receive(note(2, "looking", 1, vote(2, 1, 5)), 0), { send: [], decided: undefined });
  assert.deepEqual(m.tick(10_000), { send: [], decided: undefined });
  assert.deepEqual(m.currentVote, { ...NO_VOTE });
});

test("time never runs backwards inside the machine", () => {
  const m = machine(1, quorum(3), { finalizeWaitMs: 200 });
  m.startLooking(SELF, 1000);
  m.receive(note(3, "looking", 1, vote(3, 1, 5)), 1000);
  assert.equal(m.tick(500).decided, undefined, "an earlier time is read as 'no time passed'");
  assert.equal(m.tick(1200).decided?.leader, 3);
});

test("a participant that may not lead votes for nobody, adopts a better vote, and is not elected on a stale vote for itself", () => {
  const m = machine(3, quorum(3));
  const first = m.startLooking({ ...SELF, mayLead: false }, 0);
  assert.deepEqual(sent(first), ["1: looking r1 nobody", "2: looking r1 nobody"], "its own vote names nobody");
  // Its own vote is worse than any real one: it adopts server 1's and finalizes on it with server 2.
  m.receive(note(1, "looking", 1, vote(1, 1, 5)), 1);
  assert.equal(formatVote(m.currentVote), "1(e1 z1:5)");
  m.receive(note(2, "looking", 1, vote(1, 1, 5)), 2);
  const decided = m.tick(1_000).decided;
  assert.equal(decided?.state, "following");
  assert.equal(decided?.leader, 1);

  // A stale vote naming it (from when it could lead) never gets it elected: it waits for a better vote.
  const n = machine(3, quorum(3));
  n.startLooking({ ...SELF, mayLead: false }, 0);
  n.receive(note(1, "looking", 1, vote(3, 1, 9)), 1);
  n.receive(note(2, "looking", 1, vote(3, 1, 9)), 2);
  assert.equal(formatVote(n.currentVote), "3(e1 z1:9)");
  assert.equal(n.tick(10_000).decided, undefined, "no decision to lead on votes for a server that may not lead");
});

test("a looking voter's vote for nobody in a later round pulls the others into that round, where they count its next vote", () => {
  const m = machine(1, quorum(3));
  m.startLooking(SELF, 0);
  const out = m.receive(note(3, "looking", 4, NO_VOTE), 1);
  assert.equal(m.round, 4, "the round moves on");
  assert.equal(formatVote(m.currentVote), "1(e1 z1:5)", "a vote for nobody is never adopted");
  assert.deepEqual(sent(out), ["2: looking r4 1(e1 z1:5)", "3: looking r4 1(e1 z1:5)"]);
  // Server 3 adopts our vote in round 4: with it, a quorum backs server 1.
  m.receive(note(3, "looking", 4, vote(1, 1, 5)), 2);
  assert.equal(m.tick(1_000).decided?.state, "leading");
});

test("a voter that may not lead proposes nobody even with the better log, and counts toward the quorum of the vote it adopts", () => {
  const m = machine(3);
  const out = m.startLooking({ ...SELF, lastZxid: makeZxid(1, 9), mayLead: false }, 0);
  assert.deepEqual(sent(out), ["1: looking r1 nobody", "2: looking r1 nobody"], "its better log does not make it a candidate");
  m.receive(note(1, "looking", 1, vote(1, 1, 2)), 1);
  assert.equal(formatVote(m.currentVote), "1(e1 z1:2)");
  const decided = m.tick(1 + 200);
  assert.equal(decided.decided?.leader, 1, "it and server 1 make the quorum that elects 1");
  assert.equal(decided.decided?.state, "following");
});

test("voters that may not lead never decide among themselves on nobody", () => {
  const m = machine(1, quorum(3));
  m.startLooking({ ...SELF, mayLead: false }, 0);
  m.receive(note(2, "looking", 1, { ...NO_VOTE }), 1);
  m.receive(note(3, "looking", 1, { ...NO_VOTE }), 2);
  assert.equal(m.tick(10_000).decided, undefined);
  assert.equal(m.state, "looking");
});
