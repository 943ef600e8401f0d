/**
 * Whole elections on the simulator's network twin (./election-network.ts): 3 and 5 voters plus an
 * observer, delays (and so delivery order) and duplicates drawn from a seeded PRNG, with partitions
 * and crashes. Every assertion message carries the seed; `new ElectionNetwork({ ..., seed })`
 * replays it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Prng } from "../sim/prng.js";
import { ElectionNetwork, type ServerSpec } from "./election-network.js";

// ELECTION_SEEDS=5000 for a longer soak.
const SEEDS = Number(process.env.ELECTION_SEEDS ?? 150);
const MINUTE_MS = 60_000;

/** Voters 1..n with (epoch, counter) drawn from small ranges, so that ties are common. */
function randomVoters(seed: number, n: number): ServerSpec[] {
  const prng = new Prng(seed ^ 0x5eed);
  return Array.from({ length: n }, (_, i) => ({ id: i + 1, epoch: 1 + prng.int(3), counter: prng.int(4) }));
}

function describe(voters: ServerSpec[]): string {
  return voters.map((v) => `${v.id}@${v.epoch}:${v.counter}`).join(" ");
}

/** The one leader every decided server names; fails if two servers disagree. */
function agreedLeader(net: ElectionNetwork, ids: number[], context: string): number {
  const leaders = new Set(ids.map((id) => net.node(id).decision?.leader));
  assert.equal(leaders.size, 1, `${context}: servers disagree on the leader: ${[...leaders].join(", ")}`);
  const [leader] = leaders;
  assert.ok(leader !== undefined, `${context}: nobody decided`);
  return leader;
}

function agreesOnWorkingLeader(net: ElectionNetwork): boolean {
  const leaders = new Set(net.liveIds.map((id) => net.node(id).decision?.leader));
  const [leader] = leaders;
  return leaders.size === 1 && leader !== undefined && net.node(leader).state === "leading";
}

function checkRoles(net: ElectionNetwork, ids: number[], leader: number, context: string): void {
  for (const id of ids) {
    const expected = id === leader ? "leading" : net.quorum.isVoter(id) ? "following" : "observing";
    assert.equal(net.node(id).state, expected, `${context}: server ${id}`);
  }
}

for (const voterCount of [3, 5]) {
  const observer = voterCount + 1;

  test(`${voterCount} voters and an observer, any delivery order, duplicates included: all decide the same leader, the best (epoch, zxid, id)`, () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const voters = randomVoters(seed, voterCount);
      const context = `seed ${seed} voters ${describe(voters)}`;
      const net = new ElectionNetwork({ voters, observers: [observer], seed, maxDelayMs: [5, 20, 60][seed % 3], duplicateRate: seed % 2 === 0 ? 0.05 : 0 });
      net.startAll();
      assert.ok(
        net.run(() => net.allLiveDecided(), 10 * MINUTE_MS),
        `${context}: not everyone decided`,
      );
      const leader = agreedLeader(net, net.ids, context);
      assert.equal(leader, net.bestVoteAmong(net.ids), context);
      checkRoles(net, net.ids, leader, context);
    }
  });

  test(`${voterCount} voters: a minority cut off never decides while cut, and after healing joins the established leader`, () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const voters = randomVoters(seed, voterCount);
      // Cut off the voters with the best logs: the majority must elect among itself, and the
      // minority must still follow that leader after healing rather than win a new election.
      const ranked = [...voters].sort((a, b) => b.epoch - a.epoch || b.counter - a.counter || b.id - a.id).map((v) => v.id);
      const minorityVoters = ranked.slice(0, Math.floor((voterCount - 1) / 2));
      const observerWithMinority = seed % 2 === 0;
      const minority = observerWithMinority ? [...minorityVoters, observer] : minorityVoters;
      const majority = [...voters.map((v) => v.id), observer].filter((id) => !minority.includes(id));
      const context = `seed ${seed} voters ${describe(voters)} minority ${minority.join(" ")}`;

      const net = new ElectionNetwork({ voters, observers: [observer], seed, maxDelayMs: 20 });
      net.partition(minority, majority);
      net.startAll();
      const majorityDecided = () => majority.every((id) => net.node(id).state !== "looking");
      assert.ok(net.run(majorityDecided, 10 * MINUTE_MS), `${context}: the majority did not decide`);
      const leader = agreedLeader(net, majority, context);
      assert.equal(leader, net.bestVoteAmong(majority), `${context}: the best of the connected quorum leads`);

      net.run(() => false, net.nowMs + 10 * MINUTE_MS);
      for (const id of minority) assert.equal(net.node(id).state, "looking", `${context}: ${id} decided while cut off`);

      const majorityRounds = majority.map((id) => net.node(id).decision!.round);
      net.heal();
      assert.ok(
        net.run(() => net.allLiveDecided(), net.nowMs + 10 * MINUTE_MS),
        `${context}: the minority did not join after healing`,
      );
      assert.equal(agreedLeader(net, net.ids, context), leader, `${context}: the established leader stays`);
      checkRoles(net, net.ids, leader, context);
      assert.deepEqual(
        majority.map((id) => net.node(id).decision!.round),
        majorityRounds,
        `${context}: no new election`,
      );
    }
  });
}

test("the server with the highest epoch wins even against higher zxids and ids", () => {
  for (let seed = 1; seed <= 20; seed++) {
    const voters: ServerSpec[] = [
      { id: 1, epoch: 4, counter: 0 },
      { id: 2, epoch: 3, counter: 90 },
      { id: 3, epoch: 3, counter: 99 },
    ];
    const net = new ElectionNetwork({ voters, seed });
    net.startAll();
    assert.ok(net.run(() => net.allLiveDecided(), MINUTE_MS));
    assert.equal(agreedLeader(net, net.ids, `seed ${seed}`), 1);
  }
});

test("in the same epoch the server with the highest zxid wins regardless of id", () => {
  for (let seed = 1; seed <= 20; seed++) {
    const voters: ServerSpec[] = [
      { id: 1, epoch: 3, counter: 7 },
      { id: 2, epoch: 3, counter: 9 },
      { id: 3, epoch: 3, counter: 8 },
      { id: 4, epoch: 3, counter: 1 },
      { id: 5, epoch: 3, counter: 2 },
    ];
    const net = new ElectionNetwork({ voters, seed });
    net.startAll();
    assert.ok(net.run(() => net.allLiveDecided(), MINUTE_MS));
    assert.equal(agreedLeader(net, net.ids, `seed ${seed}`), 2);
  }
});

test("ties in (epoch, zxid) are broken by the highest id", () => {
  for (let seed = 1; seed <= 20; seed++) {
    const voters: ServerSpec[] = [1, 2, 3, 4, 5].map((id) => ({ id, epoch: 2, counter: 4 }));
    const net = new ElectionNetwork({ voters, seed });
    net.startAll();
    assert.ok(net.run(() => net.allLiveDecided(), MINUTE_MS));
    assert.equal(agreedLeader(net, net.ids, `seed ${seed}`), 5);
  }
});

for (const voterCount of [3, 5]) {
  test(`${voterCount} voters: when the leader crashes the survivors elect the best of themselves in a new round`, () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const voters = randomVoters(seed, voterCount);
      const observer = voterCount + 1;
      const context = `seed ${seed} voters ${describe(voters)}`;
      const net = new ElectionNetwork({ voters, observers: [observer], seed, maxDelayMs: 20, learnerTimeoutMs: 2000 });
      net.startAll();
      assert.ok(
        net.run(() => net.allLiveDecided(), MINUTE_MS),
        `${context}: first election`,
      );
      const first = agreedLeader(net, net.ids, context);
      net.crash(first);
      const survivors = net.liveIds;
      const reelected = () => net.allLiveDecided() && agreesOnWorkingLeader(net);
      assert.ok(
        net.run(() => net.liveIds.some((id) => net.node(id).state === "looking"), net.nowMs + MINUTE_MS),
        `${context}: nobody noticed`,
      );
      assert.ok(net.run(reelected, net.nowMs + 10 * MINUTE_MS), `${context}: no new leader`);
      const second = agreedLeader(net, survivors, context);
      assert.equal(second, net.bestVoteAmong(survivors), context);
      checkRoles(net, survivors, second, context);
      assert.ok(net.node(second).decision!.round > 1, `${context}: the new leader was elected in a later round`);
    }
  });
}
