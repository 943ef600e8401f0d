/**
 * Election scenarios as small scripts with golden output (docs/architecture.md practice 13, after etcd's
 * datadriven tests): where the sequence of notifications is the point, the whole trace is the
 * assertion. The network is the simulator's twin with every notification taking exactly 1 ms, so
 * delivery is FIFO and a trace only changes when behaviour does.
 *
 * Script commands:
 *   voters 1@1:5 2@1:7   servers id@epoch:counter (their current epoch and last zxid)
 *   observers 4          observers
 *   start 1 2 3          those servers start looking
 *   flush                deliver everything in flight, and what that sends, oldest first
 *   lose-all             lose everything in flight (no link breaks, so nothing is resent for it)
 *   advance 200          deliver what arrives within 200 ms, move time to its end, tick every server
 *   partition 1 2 | 3    cut every link between the two groups (sends on a cut link are dropped);
 *   heal                 restores them, and each cut link resends the last notification it dropped
 *   states               print each server's state, leader and round
 *
 * Trace lines: "t=T a→b state rN vote" is a delivery; indented lines are what the receiver did;
 * "(cut: 3)" names the receivers a send did not reach; a vote is
 * "leader(e<peerEpoch> z<zxid epoch>:<zxid counter>)". Set ELECTION_GOLDEN=print to print the
 * actual traces. The network's links come up before the script starts, at t=1.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ElectionNetwork, formatVote, type ServerSpec } from "./election-network.js";

function runScript(script: string): string {
  const lines = script
    .trim()
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
  let voters: ServerSpec[] = [];
  let observers: number[] = [];
  let net: ElectionNetwork | undefined;
  const output: string[] = [];
  const network = (): ElectionNetwork => (net ??= new ElectionNetwork({ voters, observers, maxDelayMs: 0, trace: true }));

  for (const line of lines) {
    const [command, ...args] = line.split(/\s+/);
    const before = net?.trace.length ?? 0;
    output.push(`> ${line}`);
    switch (command) {
      case "voters":
        voters = args.map((a) => {
          const [, id, epoch, counter] = /^(\d+)@(\d+):(\d+)$/.exec(a) ?? [];
          return { id: Number(id), epoch: Number(epoch), counter: Number(counter) };
        });
        continue;
      case "observers":
        observers = args.map(Number);
        continue;
      case "start":
        network().start(...args.map(Number));
        break;
      case "flush":
        network().flush();
        break;
      case "lose-all":
        network().loseAll();
        break;
      case "advance":
        network().advance(Number(args[0]));
        break;
      case "partition": {
        const bar = args.indexOf("|");
        network().partition(args.slice(0, bar).map(Number), args.slice(bar + 1).map(Number));
        break;
      }
      case "heal":
        network().heal();
        break;
      case "states":
        for (const id of network().ids) {
          const node = network().node(id);
          const d = node.decision;
          output.push(d === undefined ? `${id} looking r${node.round} ${formatVote(node.currentVote)}` : `${id} ${d.state} ${d.leader} r${d.round}`);
        }
        continue;
      default:
        throw new Error(`unknown script command: ${line}`);
    }
    output.push(...net!.trace.slice(before));
  }
  return output.join("\n");
}

function golden(script: string, expected: string): void {
  const actual = runScript(script);
  if (process.env.ELECTION_GOLDEN === "print") console.log(`----\n${actual}\n----`);
  assert.equal(
    actual,
    expected
      .trim()
      .split("\n")
      .map((l) => l.replace(/^ {4}/, ""))
      .join("\n"),
  );
}

test("scenario: three voters starting together elect the one with the highest zxid", () => {
  golden(
    `
    voters 1@1:5 2@1:7 3@1:6
    start 1 2 3
    flush
    advance 200
    states
    `,
    `
    > voters 1@1:5 2@1:7 3@1:6
    > start 1 2 3
    t=1 1 starts looking
      1 sends looking r1 1(e1 z1:5) → 2 3
    t=1 2 starts looking
      2 sends looking r1 2(e1 z1:7) → 1 3
    t=1 3 starts looking
      3 sends looking r1 3(e1 z1:6) → 1 2
    > flush
    t=2 1→2 looking r1 1(e1 z1:5)
    t=2 1→3 looking r1 1(e1 z1:5)
    t=2 2→1 looking r1 2(e1 z1:7)
      1 sends looking r1 2(e1 z1:7) → 2 3
    t=2 2→3 looking r1 2(e1 z1:7)
      3 sends looking r1 2(e1 z1:7) → 1 2
    t=2 3→1 looking r1 3(e1 z1:6)
    t=2 3→2 looking r1 3(e1 z1:6)
    t=3 1→2 looking r1 2(e1 z1:7)
    t=3 1→3 looking r1 2(e1 z1:7)
    t=3 3→1 looking r1 2(e1 z1:7)
    t=3 3→2 looking r1 2(e1 z1:7)
    > advance 200
    t=203 1 decides following 2 r1
    t=203 2 decides leading 2 r1
    t=203 3 decides following 2 r1
    > states
    1 following 2 r1
    2 leading 2 r1
    3 following 2 r1
    `,
  );
});

test("scenario: a better vote arriving inside the finalize window reopens the election", () => {
  golden(
    `
    voters 1@1:5 2@1:5 3@1:5
    start 1 2
    flush
    advance 100
    start 3
    flush
    advance 100
    advance 100
    states
    `,
    `
    > voters 1@1:5 2@1:5 3@1:5
    > start 1 2
    t=1 1 starts looking
      1 sends looking r1 1(e1 z1:5) → 2 3
    t=1 2 starts looking
      2 sends looking r1 2(e1 z1:5) → 1 3
    > flush
    t=2 1→2 looking r1 1(e1 z1:5)
    t=2 1→3 looking r1 1(e1 z1:5)
    t=2 2→1 looking r1 2(e1 z1:5)
      1 sends looking r1 2(e1 z1:5) → 2 3
    t=2 2→3 looking r1 2(e1 z1:5)
    t=3 1→2 looking r1 2(e1 z1:5)
    t=3 1→3 looking r1 2(e1 z1:5)
    > advance 100
    > start 3
    t=103 3 starts looking
      3 sends looking r1 3(e1 z1:5) → 1 2
    > flush
    t=104 3→1 looking r1 3(e1 z1:5)
      1 sends looking r1 3(e1 z1:5) → 2 3
    t=104 3→2 looking r1 3(e1 z1:5)
      2 sends looking r1 3(e1 z1:5) → 1 3
    t=105 1→2 looking r1 3(e1 z1:5)
    t=105 1→3 looking r1 3(e1 z1:5)
    t=105 2→1 looking r1 3(e1 z1:5)
    t=105 2→3 looking r1 3(e1 z1:5)
    > advance 100
    > advance 100
    t=305 1 decides following 3 r1
    t=305 2 decides following 3 r1
    t=305 3 decides leading 3 r1
    > states
    1 following 3 r1
    2 following 3 r1
    3 leading 3 r1
    `,
  );
});

test("scenario: a late server with the best log learns the established leader from answers, without a new election", () => {
  golden(
    `
    voters 1@1:5 2@1:7 3@2:0
    start 1 2
    flush
    advance 200
    advance 800
    start 3
    flush
    states
    `,
    `
    > voters 1@1:5 2@1:7 3@2:0
    > start 1 2
    t=1 1 starts looking
      1 sends looking r1 1(e1 z1:5) → 2 3
    t=1 2 starts looking
      2 sends looking r1 2(e1 z1:7) → 1 3
    > flush
    t=2 1→2 looking r1 1(e1 z1:5)
    t=2 1→3 looking r1 1(e1 z1:5)
    t=2 2→1 looking r1 2(e1 z1:7)
      1 sends looking r1 2(e1 z1:7) → 2 3
    t=2 2→3 looking r1 2(e1 z1:7)
    t=3 1→2 looking r1 2(e1 z1:7)
    t=3 1→3 looking r1 2(e1 z1:7)
    > advance 200
    t=203 1 decides following 2 r1
    t=203 2 decides leading 2 r1
    > advance 800
    > start 3
    t=1003 3 starts looking
      3 sends looking r1 3(e2 z2:0) → 1 2
    > flush
    t=1004 3→1 looking r1 3(e2 z2:0)
      1 sends following r1 2(e1 z1:7) → 3
    t=1004 3→2 looking r1 3(e2 z2:0)
      2 sends leading r1 2(e1 z1:7) → 3
    t=1005 1→3 following r1 2(e1 z1:7)
    t=1005 2→3 leading r1 2(e1 z1:7)
      3 decides following 2 r1
    > states
    1 following 2 r1
    2 leading 2 r1
    3 following 2 r1
    `,
  );
});

test("scenario: lost notifications are resent with a doubling interval until a quorum forms", () => {
  golden(
    `
    voters 1@1:5 2@1:7 3@1:6
    start 1 2 3
    lose-all
    advance 200
    lose-all
    advance 200
    advance 200
    flush
    advance 200
    states
    `,
    `
    > voters 1@1:5 2@1:7 3@1:6
    > start 1 2 3
    t=1 1 starts looking
      1 sends looking r1 1(e1 z1:5) → 2 3
    t=1 2 starts looking
      2 sends looking r1 2(e1 z1:7) → 1 3
    t=1 3 starts looking
      3 sends looking r1 3(e1 z1:6) → 1 2
    > lose-all
    t=1 1→2 lost looking r1 1(e1 z1:5)
    t=1 1→3 lost looking r1 1(e1 z1:5)
    t=1 2→1 lost looking r1 2(e1 z1:7)
    t=1 2→3 lost looking r1 2(e1 z1:7)
    t=1 3→1 lost looking r1 3(e1 z1:6)
    t=1 3→2 lost looking r1 3(e1 z1:6)
    > advance 200
    t=201 1 sends looking r1 1(e1 z1:5) → 2 3
    t=201 2 sends looking r1 2(e1 z1:7) → 1 3
    t=201 3 sends looking r1 3(e1 z1:6) → 1 2
    > lose-all
    t=201 1→2 lost looking r1 1(e1 z1:5)
    t=201 1→3 lost looking r1 1(e1 z1:5)
    t=201 2→1 lost looking r1 2(e1 z1:7)
    t=201 2→3 lost looking r1 2(e1 z1:7)
    t=201 3→1 lost looking r1 3(e1 z1:6)
    t=201 3→2 lost looking r1 3(e1 z1:6)
    > advance 200
    > advance 200
    t=601 1 sends looking r1 1(e1 z1:5) → 2 3
    t=601 2 sends looking r1 2(e1 z1:7) → 1 3
    t=601 3 sends looking r1 3(e1 z1:6) → 1 2
    > flush
    t=602 1→2 looking r1 1(e1 z1:5)
    t=602 1→3 looking r1 1(e1 z1:5)
    t=602 2→1 looking r1 2(e1 z1:7)
      1 sends looking r1 2(e1 z1:7) → 2 3
    t=602 2→3 looking r1 2(e1 z1:7)
      3 sends looking r1 2(e1 z1:7) → 1 2
    t=602 3→1 looking r1 3(e1 z1:6)
    t=602 3→2 looking r1 3(e1 z1:6)
    t=603 1→2 looking r1 2(e1 z1:7)
    t=603 1→3 looking r1 2(e1 z1:7)
    t=603 3→1 looking r1 2(e1 z1:7)
    t=603 3→2 looking r1 2(e1 z1:7)
    > advance 200
    t=803 1 decides following 2 r1
    t=803 2 decides leading 2 r1
    t=803 3 decides following 2 r1
    > states
    1 following 2 r1
    2 leading 2 r1
    3 following 2 r1
    `,
  );
});

test("scenario: an observer asks while the voters are still looking, then learns the leader from their answers", () => {
  golden(
    `
    voters 1@1:5 2@1:7 3@1:6
    observers 4
    start 4 1 2
    flush
    advance 200
    flush
    states
    `,
    `
    > voters 1@1:5 2@1:7 3@1:6
    > observers 4
    > start 4 1 2
    t=1 4 starts looking
      4 sends looking r1 nobody → 1 2 3
    t=1 1 starts looking
      1 sends looking r1 1(e1 z1:5) → 2 3
    t=1 2 starts looking
      2 sends looking r1 2(e1 z1:7) → 1 3
    > flush
    t=2 4→1 looking r1 nobody
      1 sends looking r1 1(e1 z1:5) → 4
    t=2 4→2 looking r1 nobody
      2 sends looking r1 2(e1 z1:7) → 4
    t=2 4→3 looking r1 nobody
    t=2 1→2 looking r1 1(e1 z1:5)
    t=2 1→3 looking r1 1(e1 z1:5)
    t=2 2→1 looking r1 2(e1 z1:7)
      1 sends looking r1 2(e1 z1:7) → 2 3
    t=2 2→3 looking r1 2(e1 z1:7)
    t=3 1→4 looking r1 1(e1 z1:5)
    t=3 2→4 looking r1 2(e1 z1:7)
    t=3 1→2 looking r1 2(e1 z1:7)
    t=3 1→3 looking r1 2(e1 z1:7)
    > advance 200
    t=203 1 decides following 2 r1
    t=203 2 decides leading 2 r1
    t=203 4 sends looking r1 nobody → 1 2 3
    > flush
    t=204 4→1 looking r1 nobody
      1 sends following r1 2(e1 z1:7) → 4
    t=204 4→2 looking r1 nobody
      2 sends leading r1 2(e1 z1:7) → 4
    t=204 4→3 looking r1 nobody
    t=205 1→4 following r1 2(e1 z1:7)
    t=205 2→4 leading r1 2(e1 z1:7)
      4 decides observing 2 r1
    > states
    1 following 2 r1
    2 leading 2 r1
    3 looking r0 nobody
    4 observing 2 r1
    `,
  );
});

test("scenario: a minority cut off never decides, and after healing joins the established leader", () => {
  golden(
    `
    voters 1@1:5 2@1:5 3@2:0
    partition 3 | 1 2
    start 1 2 3
    flush
    advance 200
    advance 400
    advance 800
    states
    heal
    flush
    states
    `,
    `
    > voters 1@1:5 2@1:5 3@2:0
    > partition 3 | 1 2
    t=1 partition 3 | 1 2
    > start 1 2 3
    t=1 1 starts looking
      1 sends looking r1 1(e1 z1:5) → 2 (cut: 3)
    t=1 2 starts looking
      2 sends looking r1 2(e1 z1:5) → 1 (cut: 3)
    t=1 3 starts looking
      3 sends looking r1 3(e2 z2:0) → nobody (cut: 1 2)
    > flush
    t=2 1→2 looking r1 1(e1 z1:5)
    t=2 2→1 looking r1 2(e1 z1:5)
      1 sends looking r1 2(e1 z1:5) → 2 (cut: 3)
    t=3 1→2 looking r1 2(e1 z1:5)
    > advance 200
    t=203 1 decides following 2 r1
    t=203 2 decides leading 2 r1
    t=203 3 sends looking r1 3(e2 z2:0) → nobody (cut: 1 2)
    > advance 400
    t=603 3 sends looking r1 3(e2 z2:0) → nobody (cut: 1 2)
    > advance 800
    t=1403 3 sends looking r1 3(e2 z2:0) → nobody (cut: 1 2)
    > states
    1 following 2 r1
    2 leading 2 r1
    3 looking r1 3(e2 z2:0)
    > heal
    t=1403 heal
    > flush
    t=1405 3→1 looking r1 3(e2 z2:0)
      1 sends following r1 2(e1 z1:5) → 3
    t=1405 1→3 looking r1 2(e1 z1:5)
    t=1405 3→2 looking r1 3(e2 z2:0)
      2 sends leading r1 2(e1 z1:5) → 3
    t=1405 2→3 looking r1 2(e1 z1:5)
    t=1406 1→3 following r1 2(e1 z1:5)
    t=1406 2→3 leading r1 2(e1 z1:5)
      3 decides following 2 r1
    > states
    1 following 2 r1
    2 leading 2 r1
    3 following 2 r1
    `,
  );
});
