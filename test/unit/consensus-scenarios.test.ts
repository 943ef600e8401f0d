/**
 * Zab scenarios as small scripts (docs/architecture.md practice 13): a leader and learners driven through a
 * FIFO wire, with the events and messages they produce checked against the expected trace.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Harness } from "./consensus-harness.js";
import { makeZxid } from "../../src/store/zxid.js";
import type { Leader } from "../../src/consensus/leader.js";
import { QuorumVerifier } from "../../src/consensus/quorum.js";

const z = makeZxid;
const enc = (s: string) => new TextEncoder().encode(s);

function establish(h: Harness, leader: number, learners: number[]): void {
  h.start(leader);
  for (const id of learners) h.start(id, leader);
  h.deliver();
}

test("three fresh servers establish epoch 1 with empty DIFFs, then commit proposals in order everywhere", () => {
  const h = new Harness([1, 2, 3]);
  establish(h, 1, [2, 3]);
  assert.deepEqual(h.events(), [
    "# 1 joined 2 (participant)",
    "# 1 newEpoch 1",
    "# 1 joined 3 (participant)",
    "# 2 phase synchronization (epoch 1)",
    "# 3 phase synchronization (epoch 1)",
    "# 1 phase synchronization (epoch 1)",
    "# 1 sync 2 DIFF 0x0..0x0: learner is in sync",
    "# 1 sync 3 DIFF 0x0..0x0: learner is in sync",
    "# 1 phase broadcast (epoch 1)",
    "# 2 phase broadcast (epoch 1)",
    "# 3 phase broadcast (epoch 1)",
  ]);
  assert.ok(h.server(1).serving && h.server(2).serving && h.server(3).serving);
  const a = h.propose("a");
  const b = h.propose("b");
  assert.deepEqual([a, b], [z(1, 1), z(1, 2)]);
  h.deliver();
  for (const id of [1, 2, 3]) assert.deepEqual(h.server(id).applied, [z(1, 1), z(1, 2)], `server ${id}`);
  assert.equal(h.server(1).currentEpoch, 1);
  assert.equal(h.server(2).acceptedEpoch, 1);
});

test("a follower acks a proposal only after it is durable, and the leader commits only on a quorum", () => {
  const h = new Harness([1, 2, 3]);
  establish(h, 1, [2, 3]);
  h.server(2).autoDurable = false;
  h.server(3).autoDurable = false;
  h.trace.length = 0;
  const zxid = h.propose("x");
  h.deliver();
  assert.ok(!h.trace.some((l) => l.includes("ack(")), "no ack before the follower's fsync");
  assert.deepEqual(h.server(1).applied, [], "the leader alone is no quorum");
  h.flush(2);
  h.deliver();
  assert.ok(h.trace.includes(`2→1 ack(0x${zxid.toString(16)})`));
  assert.deepEqual(h.server(1).applied, [zxid]);
  assert.deepEqual(h.server(2).applied, [zxid], "the follower applies once committed and durable");
  assert.deepEqual(h.server(3).applied, [], "not durable at 3 yet");
  h.flush(3);
  h.deliver();
  assert.deepEqual(h.server(3).applied, [zxid]);
});

test("the leader pipelines: proposal N+1 leaves before N commits, and both commit in order", () => {
  const h = new Harness([1, 2, 3]);
  establish(h, 1, [2, 3]);
  h.server(2).autoDurable = false;
  h.server(3).autoDurable = false;
  h.trace.length = 0;
  h.propose("p1");
  h.propose("p2");
  h.deliver();
  assert.deepEqual(
    h.trace.filter((l) => l.startsWith("1→2")),
    ["1→2 proposal(0x100000001)", "1→2 proposal(0x100000002)"],
  );
  h.flush(3);
  h.deliver();
  assert.deepEqual(h.server(1).applied, [z(1, 1), z(1, 2)]);
  assert.ok(h.trace.includes("1→2 commit(0x100000002)"), "one cumulative commit");
});

test("a follower with an uncommitted tail from an older epoch is TRUNCated, then DIFFed", () => {
  const h = new Harness([1, 2, 3]);
  const committed = [
    { zxid: z(1, 1), record: enc("a") },
    { zxid: z(1, 2), record: enc("b") },
  ];
  for (const id of [1, 2, 3]) Object.assign(h.server(id), { acceptedEpoch: 2, currentEpoch: 2, log: committed.slice() });
  h.server(1).log = [...h.server(1).log, { zxid: z(2, 1), record: enc("c") }];
  h.server(3).log = [...h.server(3).log, { zxid: z(1, 3), record: enc("stale") }];
  establish(h, 1, [2, 3]);
  assert.ok(h.events().includes("# 1 sync 3 TRUNC 0x100000002..0x200000001: learner has a txn the leader's history lacks"));
  assert.ok(h.events().includes("# 1 sync 2 DIFF 0x100000002..0x200000001: learner's last zxid is in the committed-log window"));
  for (const id of [1, 2, 3]) {
    assert.deepEqual(
      h.server(id).log.map((r) => r.zxid),
      [z(1, 1), z(1, 2), z(2, 1)],
      `log of ${id}`,
    );
    assert.deepEqual(h.server(id).applied, [z(1, 1), z(1, 2), z(2, 1)], `tree of ${id}`);
    assert.equal(h.server(id).currentEpoch, 3);
  }
});

test("a learner behind the committed-log window gets a SNAP, then the records after it", () => {
  const h = new Harness([1, 2, 3]);
  h.committedLogRecordsMax = 2;
  establish(h, 1, [2]);
  for (let i = 0; i < 6; i++) h.propose(`t${i}`);
  h.deliver();
  h.start(3, 1);
  h.deliver();
  assert.ok(h.events().some((e) => e.startsWith("# 1 sync 3 SNAP 0x100000006..0x100000006: learner is behind the committed-log window")));
  assert.deepEqual(h.server(3).applied, h.server(1).applied);
  h.propose("after");
  h.deliver();
  assert.deepEqual(h.server(3).applied, h.server(1).applied);
});

test("a learner joining while proposals are in flight gets each exactly once", () => {
  const h = new Harness([1, 2, 3]);
  establish(h, 1, [2]);
  h.server(2).autoDurable = false;
  h.propose("in-flight-1");
  h.propose("in-flight-2");
  h.deliver();
  h.start(3, 1);
  h.deliver((m) => !(m.from === 1 && m.to === 3 && m.message.type === "upToDate") || true);
  h.propose("after-join");
  h.deliver();
  const toThree = h.trace.filter((l) => l.startsWith("1→3"));
  assert.ok(toThree.includes("1→3 syncTxns(uncommitted 0x100000001 0x100000002)"), toThree.join("\n"));
  assert.ok(toThree.includes("1→3 proposal(0x100000003)"));
  // Server 3's newLeader ack makes the in-flight proposals durable on a quorum.
  assert.deepEqual(h.server(1).applied, [z(1, 1), z(1, 2), z(1, 3)]);
  assert.deepEqual(h.server(3).applied, [z(1, 1), z(1, 2), z(1, 3)]);
});

test("a learner refuses a leader whose epoch is below its accepted epoch", () => {
  const h = new Harness([1, 2, 3]);
  h.server(2).acceptedEpoch = 5;
  h.start(2, 1);
  h.input(2, { type: "message", from: 1, message: { type: "leaderInfo", newEpoch: 4, protocolVersion: 1 } });
  assert.match(h.server(2).stepDown ?? "", /below our accepted epoch 5/);
});

test("a leader drops a learner that accepted its epoch already before it is established", () => {
  const h = new Harness([1, 2, 3, 4, 5]);
  h.start(1);
  h.start(2, 1);
  h.start(3, 1);
  h.deliver((m) => m.message.type === "learnerInfo");
  h.server(5).acceptedEpoch = 1;
  h.start(5, 1);
  h.deliver();
  assert.ok(h.events().includes("# 1 dropped 5: learner accepted epoch 1, we propose 1"));
});

test("a leader steps down for a member that accepted a newer epoch, so that it can rejoin", () => {
  const h = new Harness([1, 2, 3]);
  establish(h, 1, [2]);
  h.server(3).acceptedEpoch = 5;
  h.start(3, 1);
  h.deliver();
  assert.match(h.server(1).stepDown ?? "", /learner 3 accepted epoch 5, above our epoch 1/);
  assert.equal(h.server(1).acceptedEpoch, 5, "the leader adopted the higher accepted epoch");
  establish(h, 1, [2, 3]);
  assert.ok(h.events().includes("# 1 newEpoch 6"));
  assert.ok(h.server(3).serving);
});

test("the leader abdicates when a quorum member's history is ahead of its own", () => {
  const h = new Harness([1, 2, 3]);
  Object.assign(h.server(2), { acceptedEpoch: 1, currentEpoch: 1, log: [{ zxid: z(1, 1), record: enc("x") }] });
  establish(h, 1, [2]);
  assert.match(h.server(1).stepDown ?? "", /learner 2 is ahead of us/);
});

test("observers are synced and informed but never count toward a quorum", () => {
  const h = new Harness([1, 2, 3], [4]);
  establish(h, 1, [4]);
  assert.equal(h.server(1).serving, false, "leader + observer is no quorum");
  h.start(2, 1);
  h.deliver();
  assert.ok(h.server(1).serving && h.server(4).serving);
  h.server(2).autoDurable = false;
  h.propose("o");
  h.deliver();
  assert.deepEqual(h.server(4).applied, [], "nothing committed: the observer's presence does not help");
  h.flush(2);
  h.deliver();
  assert.deepEqual(h.server(4).applied, [z(1, 1)]);
  assert.ok(h.trace.includes("1→4 inform(0x100000001)"));
  assert.ok(!h.trace.some((l) => l.startsWith("4→1 ack(0x100000001)")), "observers never ack proposals");
});

test("a misbehaving learner is dropped, not trusted", () => {
  const h = new Harness([1, 2, 3]);
  establish(h, 1, [2, 3]);
  h.input(1, { type: "message", from: 3, message: { type: "ack", zxid: z(7, 7) } });
  assert.ok(h.events().includes("# 1 dropped 3: unexpected ack of 30064771079"));
  assert.ok(h.server(1).serving, "one follower left: still a quorum");
});

test("a leader that loses its quorum steps down; a follower that loses its leader steps down", () => {
  const h = new Harness([1, 2, 3]);
  establish(h, 1, [2, 3]);
  for (const nowMs of [100, 200, 300, 400]) {
    for (const id of [1, 2, 3]) h.input(id, { type: "tick", nowMs });
    h.deliver();
  }
  assert.equal(h.server(1).stepDown, undefined, "pings answered: all is well");
  h.input(1, { type: "tick", nowMs: 1_000 });
  h.input(2, { type: "tick", nowMs: 1_000 });
  assert.match(h.server(2).stepDown ?? "", /nothing from leader 1/);
  assert.match(h.server(1).stepDown ?? "", /lost the quorum|silent/);
});

test("forwarded writes surface at the leader; a sync is answered with the last proposed zxid", () => {
  const h = new Harness([1, 2, 3]);
  establish(h, 1, [2, 3]);
  h.propose("w");
  const follower = h.server(2).zab!;
  assert.equal(follower.kind, "follower");
  if (follower.kind !== "follower") return;
  const fwd = follower.forward(9n, 1, enc("req"));
  assert.deepEqual(
    fwd.send.map((s) => s.message.type),
    ["request"],
  );
  const leader = h.server(1).zab as Leader;
  const ready = leader.step({ type: "message", from: 2, message: fwd.send[0]!.message });
  assert.deepEqual(ready.forwarded, [{ from: 2, sessionId: 9n, cxid: 1, request: enc("req") }]);
  h.trace.length = 0;
  h.input(1, { type: "message", from: 2, message: { type: "sync", syncId: 4 } });
  h.propose("after the sync");
  h.deliver();
  // The answer waits for a quorum's answer to a fresh ping, and names the zxid proposed before the sync.
  const toTwo = h.trace.filter((l) => l.startsWith("1→2") || l.startsWith("2→1"));
  const ping = toTwo.indexOf("1→2 ping(0)");
  const answer = toTwo.indexOf("2→1 ping(0)");
  const done = toTwo.indexOf("1→2 syncDone(4, 0x100000001)");
  assert.ok(ping >= 0 && ping < answer && answer < done, toTwo.join("\n"));
});

test("a resumed session is revalidated through the leader; the host's verdict goes back to the learner that asked", () => {
  const h = new Harness([1, 2, 3]);
  establish(h, 1, [2, 3]);
  const follower = h.server(2).zab!;
  if (follower.kind !== "follower") return assert.fail("server 2 follows");
  const asked = follower.revalidate(9n, 4_000);
  assert.deepEqual(
    asked.send.map((s) => s.message),
    [{ type: "revalidate", sessionId: 9n, timeoutMs: 4_000 }],
  );
  const leader = h.server(1).zab as Leader;
  const received = leader.step({ type: "message", from: 2, message: asked.send[0]!.message });
  assert.deepEqual(received.revalidations, [{ from: 2, sessionId: 9n, timeoutMs: 4_000 }], "the host decides, not the core");
  const answer = leader.answerRevalidation(2, 9n, false);
  assert.deepEqual(answer.send, [{ to: 2, message: { type: "revalidated", sessionId: 9n, valid: false } }]);
  const back = follower.step({ type: "message", from: 1, message: answer.send[0]!.message });
  assert.deepEqual(back.revalidated, [{ sessionId: 9n, valid: false }]);
  assert.deepEqual(leader.answerRevalidation(7, 9n, true).send, [], "no answer to a learner that is not up to date with us");
});

test("a learner that revalidates a session before it is up to date is dropped", () => {
  const h = new Harness([1, 2, 3]);
  h.start(1);
  h.start(2, 1);
  h.deliver((m) => m.from === 2 && m.message.type === "learnerInfo");
  const leader = h.server(1).zab as Leader;
  const ready = leader.step({ type: "message", from: 2, message: { type: "revalidate", sessionId: 9n, timeoutMs: 4_000 } });
  assert.deepEqual(ready.revalidations, []);
  assert.deepEqual(ready.disconnect, [2]);
});

test("a leader cut off from its quorum never answers a sync", () => {
  const h = new Harness([1, 2, 3]);
  establish(h, 1, [2, 3]);
  const leader = h.server(1).zab as Leader;
  const ready = leader.requestSync(1);
  assert.deepEqual(ready.syncsDone, [], "not before a quorum answered a ping sent after the sync");
  h.deliver((m) => m.from !== 2 && m.from !== 3); // the followers' answers are lost
  assert.deepEqual(
    h.trace.filter((l) => l.includes("syncDone")),
    [],
  );
  const confirmed = leader.step({ type: "message", from: 2, message: { type: "ping", touches: [] } });
  assert.deepEqual(confirmed.syncsDone, [{ syncId: 1, zxid: 0 }], "one follower's answer + ours is a quorum of three");
});

/**
 * A learner whose log holds committed records its tree has not applied (it crashed, or lost its
 * leader, between logging them and hearing their commit) and that the sync does not send again:
 * the sync must tell it they are committed. Nothing is proposed afterwards — in a quiet cluster no
 * later commit would ever release them, and a sync at that learner (answered with the leader's last
 * zxid) would wait forever.
 */
function withUnappliedTail(h: Harness, ids: number[]): void {
  const log = [
    { zxid: z(1, 1), record: enc("a") },
    { zxid: z(1, 2), record: enc("b") },
  ];
  for (const id of ids) Object.assign(h.server(id), { acceptedEpoch: 1, currentEpoch: 1, log: log.slice(), applied: [z(1, 1)] });
}

test("a follower in sync with the establishing leader applies the logged records it had not applied", () => {
  const h = new Harness([1, 2, 3]);
  withUnappliedTail(h, [1, 2]);
  h.server(1).applied = [z(1, 1), z(1, 2)];
  establish(h, 1, [2]);
  assert.ok(h.events().includes("# 1 sync 2 DIFF 0x100000002..0x100000002: learner is in sync"));
  assert.ok(h.server(2).serving);
  assert.deepEqual(h.server(2).applied, [z(1, 1), z(1, 2)], "1.2 is in the history the new epoch committed");
});

test("a follower joining an established leader applies the committed records it already logged", () => {
  const h = new Harness([1, 2, 3]);
  withUnappliedTail(h, [1, 2, 3]);
  establish(h, 1, [2]);
  assert.deepEqual(h.server(1).applied, [z(1, 1), z(1, 2)]);
  h.start(3, 1);
  h.deliver();
  assert.ok(h.server(3).serving);
  assert.deepEqual(h.server(3).applied, [z(1, 1), z(1, 2)], "1.2 was committed before 3 joined");
});

test("a follower joining while proposals are in flight applies only what is committed", () => {
  const h = new Harness([1, 2, 3]);
  withUnappliedTail(h, [1, 2, 3]);
  establish(h, 1, [2]);
  h.server(1).autoDurable = false;
  h.server(2).autoDurable = false;
  const inFlight = h.propose("c");
  h.deliver();
  h.start(3, 1);
  h.deliver();
  assert.ok(h.server(3).serving);
  assert.deepEqual(h.server(3).applied, [z(1, 1), z(1, 2)], `${inFlight} is not committed yet: 3's ack alone is no quorum`);
  h.flush(1);
  h.deliver();
  assert.deepEqual(h.server(3).applied, [z(1, 1), z(1, 2), inFlight]);
});

test("an observer in sync with the leader applies the logged records it had not applied", () => {
  const h = new Harness([1, 2, 3], [4, 5]);
  withUnappliedTail(h, [1, 2, 3, 4, 5]);
  establish(h, 1, [2, 4]);
  assert.ok(h.server(4).serving);
  assert.deepEqual(h.server(4).applied, [z(1, 1), z(1, 2)], "an observer synced at establishment");
  h.start(5, 1);
  h.deliver();
  assert.ok(h.server(5).serving);
  assert.deepEqual(h.server(5).applied, [z(1, 1), z(1, 2)], "an observer joining later");
});

test("a reconfiguration commits only on a quorum of the new configuration too; then the new one alone commits", () => {
  // {1,2,3} → {1,4,5}: 4 and 5 learn from the start as participants the leader does not count yet.
  const h = new Harness([1, 2, 3], [], [4, 5]);
  establish(h, 1, [2, 3, 4, 5]);
  h.server(4).autoDurable = false;
  h.server(5).autoDurable = false;
  const p = h.propose("reconfig", new QuorumVerifier([1, 4, 5]));
  h.deliver();
  assert.deepEqual(h.server(1).applied, [], "1, 2 and 3 are a quorum of the old configuration only");
  h.flush(4);
  h.deliver();
  assert.deepEqual(h.server(1).applied, [p], "1 and 4 are a quorum of the new one as well");
  assert.ok(h.events().includes(`# 1 configActivated 0x${p.toString(16)}`));
  // In force now: 2 and 3 no longer count, 4 or 5 must.
  const q = h.propose("after");
  h.deliver();
  assert.deepEqual(h.server(1).applied, [p], "2 and 3 acked, but they left the configuration");
  h.flush(5);
  h.deliver();
  assert.deepEqual(h.server(1).applied, [p, q]);
  assert.equal(h.server(1).stepDown, undefined);
});

test("a leader that is no voter of the configuration it commits steps down once it has committed it", () => {
  const h = new Harness([1, 2, 3], [], [4]);
  establish(h, 1, [2, 3, 4]);
  const p = h.propose("reconfig", new QuorumVerifier([2, 3, 4]));
  h.deliver();
  assert.deepEqual(h.server(1).applied, [p]);
  assert.equal(h.server(1).stepDown, "not a voter of the configuration in force");
  // The commit goes out before the streams close; whether it lands or not, the new configuration's
  // servers hold the record, and their next leader (elected by both configurations) commits it.
  for (const id of [2, 3, 4])
    assert.ok(
      h.server(id).log.some((r) => r.zxid === p),
      `server ${id} logged the reconfiguration`,
    );
});

test("a new term with a reconfiguration in its history establishes only on a quorum of both configurations", () => {
  const h = new Harness([1, 2, 3], [], [4, 5]);
  // Server 1 logged a reconfiguration to {1,4,5} in epoch 1 that nobody saw committed; it leads the next term.
  h.server(1).log = [{ zxid: z(1, 1), record: enc("reconfig") }];
  h.server(1).acceptedEpoch = 1;
  h.server(1).currentEpoch = 1;
  const leader = h.start(1, undefined, [{ zxid: z(1, 1), quorum: new QuorumVerifier([1, 4, 5]) }]);
  h.start(2, 1);
  h.start(3, 1);
  h.deliver();
  assert.equal(leader.serving, false, "a quorum of {1,2,3} is not one of {1,4,5}");
  h.start(4, 1);
  h.deliver();
  assert.equal(leader.serving, true, "1 and 4 make the new configuration's quorum as well");
  assert.ok(h.events().includes(`# 1 configActivated 0x${z(1, 1).toString(16)}`), "established, its whole history commits: the reconfiguration is in force");
});

test("a repairing learner is no part of the quorum that decides the epoch, and is synced by SNAP whatever its zxid", () => {
  const h = new Harness([1, 2, 3]);
  h.start(1);
  h.start(2, 1, [], { repairing: true });
  h.deliver();
  assert.ok(h.trace.includes("2→1 learnerInfo(participant, accepted 0, last 0x0, repairing)"));
  assert.ok(!h.events().some((e) => e.includes("newEpoch")), "the leader and a repairing learner are no quorum of good copies");
  h.start(3, 1);
  h.deliver();
  assert.ok(h.events().includes("# 1 newEpoch 1"));
  assert.ok(h.events().includes("# 1 sync 2 SNAP 0x0..0x0: learner is repairing damaged state"), h.events().join("\n"));
  assert.ok(h.events().includes("# 1 sync 3 DIFF 0x0..0x0: learner is in sync"));
  for (const id of [1, 2, 3]) assert.ok(h.server(id).serving, `server ${id} serves`);
  const zxid = h.propose("after the repair");
  h.deliver();
  for (const id of [1, 2, 3]) assert.deepEqual(h.server(id).applied, [zxid], `server ${id}`);
});

test("a repairing learner takes a snapshot below what it had applied (its state is what it repairs)", () => {
  const h = new Harness([1, 2, 3]);
  establish(h, 1, [2, 3]);
  for (let i = 0; i < 3; i++) h.propose(`t${i}`);
  h.deliver();
  // Server 2's tree went bad at 0x100000003; the leader it finds next starts from its snapshot at 0x100000001.
  const leaderLog = h.server(1).log.slice(0, 1);
  Object.assign(h.server(1), { log: leaderLog, applied: [z(1, 1)] });
  Object.assign(h.server(3), { log: leaderLog.slice(), applied: [z(1, 1)] });
  h.start(1);
  h.start(3, 1);
  h.start(2, 1, [], { repairing: true });
  h.deliver();
  assert.ok(
    h.events().some((e) => e.startsWith("# 1 sync 2 SNAP 0x100000001..")),
    h.events().join("\n"),
  );
  assert.ok(h.server(2).serving, "the repaired learner serves");
  assert.deepEqual(h.server(2).applied, h.server(1).applied);
});
