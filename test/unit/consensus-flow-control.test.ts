/**
 * The leader's flow control (docs/architecture.md §7b): what it has proposed and not committed is
 * bounded in count and bytes, what it has sent one follower and not had acked likewise — a slow
 * follower is caught up from the history, never flooded — and a follower is dropped as not keeping
 * up only on evidence that it stopped.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { zabLimits } from "../../src/consensus/constants.js";
import type { Leader } from "../../src/consensus/leader.js";
import { Harness } from "./consensus-harness.js";

function establish(h: Harness): Leader {
  h.start(1);
  h.start(2, 1);
  h.start(3, 1);
  h.deliver();
  assert.ok(h.server(1).serving && h.server(2).serving && h.server(3).serving);
  return h.server(1).zab as Leader;
}

/** A record of `bytes` bytes (the harness's records are opaque). */
const sized = (bytes: number): string => "x".repeat(bytes);

/** Records larger than a small proposal: the window's byte bound holds them exactly. */
const LARGE = zabLimits.smallProposalBytesMax + 10_000;

test("the leader stops taking writes once the bytes it proposed and has not committed reach its window", () => {
  const h = new Harness([1, 2, 3]);
  h.proposalBytesInFlightMax = 3 * LARGE;
  const leader = establish(h);
  for (const id of [2, 3]) h.server(id).autoDurable = false;
  h.propose(sized(LARGE));
  h.propose(sized(LARGE));
  assert.equal(leader.canPropose, true, "two of three large records in flight");
  h.propose(sized(LARGE * 1.5));
  assert.equal(leader.canPropose, false, "three and a half in flight: the proposal that crossed the bound went, no more");
  assert.equal(leader.outstandingBytes, 3.5 * LARGE);
  h.deliver();
  h.flush(2);
  h.deliver();
  assert.equal(leader.outstandingBytes, 0, "a quorum acked: everything committed");
  assert.equal(leader.canPropose, true);
});

test("past a full window, small proposals still go within the small reserve, and none beyond it", () => {
  const h = new Harness([1, 2, 3]);
  h.proposalBytesInFlightMax = 2 * LARGE;
  const leader = establish(h);
  for (const id of [2, 3]) h.server(id).autoDurable = false;
  h.propose(sized(2 * LARGE));
  assert.deepEqual([leader.canPropose, leader.canProposeSmall], [false, true]);
  const small = zabLimits.smallProposalBytesMax;
  let passed = 0;
  while (leader.canProposeSmall) {
    h.propose(sized(small));
    passed += 1;
  }
  assert.equal(passed, Math.ceil(zabLimits.smallProposalsReserveBytes / small), "the reserve's worth of small proposals, the one that crosses it included");
  assert.throws(() => leader.allocateZxid(), /allocateZxid while not able to propose/);
});

test("a small proposal is sent at once to a follower whose window is full of large ones; a large one waits for its ack", () => {
  const h = new Harness([1, 2, 3]);
  h.proposalBytesInFlightMax = 2 * LARGE;
  const leader = establish(h);
  h.server(3).autoDurable = false;
  h.trace.length = 0;
  for (let i = 0; i < 2; i++) {
    h.propose(sized(LARGE));
    h.deliver();
  }
  const sentTo3 = () => leader.learners().find((l) => l.sid === 3)!.sentZxid;
  const small = h.propose("heartbeat");
  h.deliver();
  assert.equal(sentTo3(), small, "the small one went past the full window");
  const large = h.propose(sized(LARGE));
  h.deliver();
  assert.equal(sentTo3(), small, "the large one waits");
  h.flush(3);
  h.deliver();
  assert.equal(sentTo3(), large, "until its acks make room");
});

test("the leader stops taking writes at its window's count too", () => {
  const h = new Harness([1, 2, 3]);
  h.proposalsInFlightMax = 2;
  const leader = establish(h);
  for (const id of [2, 3]) h.server(id).autoDurable = false;
  h.propose("a");
  assert.equal(leader.canPropose, true);
  h.propose("b");
  assert.equal(leader.canPropose, false);
  h.deliver();
  h.flush(3);
  h.deliver();
  assert.equal(leader.canPropose, true);
});

test("a follower slower than the quorum is sent no more than its window, and the rest as its acks make room", () => {
  const h = new Harness([1, 2, 3]);
  h.proposalBytesInFlightMax = 2.5 * LARGE;
  const leader = establish(h);
  h.server(3).autoDurable = false;
  h.trace.length = 0;
  // Server 2 keeps up, so proposals commit and the leader keeps taking writes; server 3 does not ack.
  const zxids: number[] = [];
  for (let i = 0; i < 6; i++) {
    zxids.push(h.propose(sized(LARGE)));
    h.deliver();
  }
  const sentTo3 = () => h.trace.filter((l) => l.startsWith("1→3 proposal("));
  assert.equal(sentTo3().length, 3, "three large records: the one that crosses two and a half goes, no more");
  const committedTo3 = h.trace.filter((l) => l.startsWith("1→3 commit(")).map((l) => Number.parseInt(/commit\(0x([0-9a-f]+)\)/.exec(l)![1]!, 16));
  assert.ok(committedTo3.length > 0 && committedTo3.every((zxid) => zxid <= zxids[2]!), "its commits name only zxids it was sent");
  assert.deepEqual(
    leader.learners().map((l) => [l.sid, l.sentZxid]),
    [
      [2, zxids[5]],
      [3, zxids[2]],
    ],
  );
  h.flush(3);
  h.deliver();
  h.flush(3);
  h.deliver();
  assert.equal(sentTo3().length, 6, "its acks made room: it got the rest from the history");
  assert.deepEqual(h.server(3).applied.slice(-6), zxids, "and applied them all, in order");
  assert.ok(!h.events().some((e) => e.includes("dropped")), "nobody was dropped");
});

test("a follower with proposals in flight and no ack progress for syncLimit is dropped, with the evidence in the reason", () => {
  const h = new Harness([1, 2, 3]);
  establish(h);
  h.server(3).autoDurable = false;
  const zxid = h.propose("stuck");
  h.deliver();
  const syncLimitMs = 5 * 100;
  // It still answers pings (it is not silent), but never acks.
  for (let t = 50; t <= syncLimitMs + 100; t += 50) {
    h.input(1, { type: "tick", nowMs: h.nowMs + t });
    h.deliver();
  }
  const dropped = h.events().find((e) => e.startsWith("# 1 dropped 3"));
  assert.ok(dropped !== undefined, "server 3 was dropped");
  assert.match(dropped, /not keeping up: no ack progress for \d+ ms \(syncLimit 500 ms\); 1 proposals \(5 bytes\) in flight to it/);
  assert.ok(dropped.includes(`sent 0x${zxid.toString(16)}`), dropped);
  assert.ok(!h.events().some((e) => e.startsWith("# 1 dropped 2")), "server 2, which acks, stays");
});

test("a follower that keeps acking, however far behind, is never dropped for lagging", () => {
  const h = new Harness([1, 2, 3]);
  h.proposalBytesInFlightMax = 1_000;
  const leader = establish(h);
  h.server(3).autoDurable = false;
  let nowMs = h.nowMs;
  let last = 0;
  for (let i = 0; i < 40; i++) {
    // Two writes every 200 ms; server 3 makes one write durable in that time: behind, and falling
    // further behind, but moving.
    h.propose(sized(600));
    last = h.propose(sized(600));
    h.deliver();
    nowMs += 200;
    h.server(3).disk.runNext();
    h.input(1, { type: "tick", nowMs });
    h.deliver();
  }
  const three = leader.learners().find((l) => l.sid === 3)!;
  assert.ok(last - three.ackedZxid >= 30, `server 3 is far behind: acked ${three.ackedZxid}, last ${last}`);
  assert.ok(!h.events().some((e) => e.includes("dropped")), h.events().join("\n"));
});

test("a follower whose next txn has left the history is dropped to sync again, with the evidence", () => {
  const h = new Harness([1, 2, 3]);
  h.proposalsInFlightMax = 2;
  h.committedLogRecordsMax = 3;
  establish(h);
  h.server(3).autoDurable = false;
  for (let i = 0; i < 8; i++) {
    h.propose(`t${i}`);
    h.deliver();
  }
  // Server 3 acks its two; by then the records after them were committed and trimmed.
  h.flush(3);
  h.deliver();
  const dropped = h.events().find((e) => e.startsWith("# 1 dropped 3"));
  assert.ok(dropped !== undefined && dropped.includes("not keeping up: fell behind the history"), h.events().join("\n"));
});

test("the leader waits for an up-to-date follower that is acking but two windows behind, and not for one that stopped acking", () => {
  const h = new Harness([1, 2, 3]);
  h.proposalBytesInFlightMax = 2 * LARGE;
  const leader = establish(h);
  h.server(3).autoDurable = false;
  // Server 2 keeps up, so everything commits; server 3 logs one record at a time.
  let proposed = 0;
  while (leader.canPropose && proposed < 20) {
    h.propose(sized(LARGE));
    h.deliver();
    proposed += 1;
    if (proposed === 3) {
      h.server(3).disk.runNext();
      h.deliver();
    }
  }
  assert.equal(proposed, 5, "four windows' worth committed with server 2; server 3 acked one and is four records behind");
  assert.equal(leader.outstandingBytes, 0, "nothing is waiting for the quorum: the leader waits for server 3");
  h.server(3).disk.runNext();
  h.deliver();
  assert.equal(leader.canPropose, true, "its ack made room");
  h.propose(sized(LARGE));
  h.deliver();
  assert.equal(leader.canPropose, false);
  // Server 3 stops acking: after half a tick without progress the leader goes on without it.
  h.input(1, { type: "tick", nowMs: h.nowMs + 60 });
  h.deliver();
  assert.equal(leader.canPropose, true, "a follower with no ack progress is not waited for");
  assert.ok(!h.events().some((e) => e.includes("dropped")), "and nobody was dropped");
});
