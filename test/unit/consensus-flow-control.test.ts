/**
 * The leader's flow control (docs/architecture.md §7b): what it has proposed and not committed is
 * bounded in count and bytes, what it has sent one follower and not had acked likewise — a slow
 * follower is caught up from the history, never flooded — and a follower is dropped as not keeping
 * up only on evidence that it stopped.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
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

test("the leader stops taking writes once the bytes it proposed and has not committed reach its window", () => {
  const h = new Harness([1, 2, 3]);
  h.proposalBytesInFlightMax = 3_000;
  const leader = establish(h);
  for (const id of [2, 3]) h.server(id).autoDurable = false;
  h.propose(sized(1_000));
  h.propose(sized(1_000));
  assert.equal(leader.canPropose, true, "2,000 of 3,000 bytes in flight");
  h.propose(sized(1_500));
  assert.equal(leader.canPropose, false, "3,500 bytes in flight: the proposal that crossed the bound went, no more");
  assert.equal(leader.outstandingBytes, 3_500);
  assert.throws(() => leader.allocateZxid(), /allocateZxid while not able to propose/);
  h.deliver();
  h.flush(2);
  h.deliver();
  assert.equal(leader.outstandingBytes, 0, "a quorum acked: everything committed");
  assert.equal(leader.canPropose, true);
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
  h.proposalBytesInFlightMax = 2_500;
  const leader = establish(h);
  h.server(3).autoDurable = false;
  h.trace.length = 0;
  // Server 2 keeps up, so proposals commit and the leader keeps taking writes; server 3 does not ack.
  const zxids: number[] = [];
  for (let i = 0; i < 6; i++) {
    zxids.push(h.propose(sized(1_000)));
    h.deliver();
  }
  const sentTo3 = () => h.trace.filter((l) => l.startsWith("1→3 proposal("));
  assert.equal(sentTo3().length, 3, "3 × 1,000 bytes: the one that crosses 2,500 goes, no more");
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
