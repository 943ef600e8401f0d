/**
 * Properties of whole elections under fast-check: random (epoch, zxid) per server, random starting
 * rounds, random delivery orders (the network's seed) and random crashes that leave a quorum.
 * A counterexample prints its inputs; rebuilding the network from them replays it exactly.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { ElectionNetwork, type ServerSpec } from "./election-network.js";

const MINUTE_MS = 60_000;

interface Cluster {
  voters: ServerSpec[];
  withObserver: boolean;
  /** Extra startLooking calls per server before the election, so that rounds differ. */
  extraRounds: number[];
  /** Per voter: undefined = stays up; otherwise crashes after that many deliveries (0 = never starts). */
  crashAfter: (number | undefined)[];
  seed: number;
}

const cluster: fc.Arbitrary<Cluster> = fc.constantFrom(3, 5).chain((n) =>
  fc.record({
    voters: fc
      .array(fc.record({ epoch: fc.integer({ min: 0, max: 3 }), counter: fc.integer({ min: 0, max: 5 }) }), { minLength: n, maxLength: n })
      .map((specs) => specs.map((s, i) => ({ id: i + 1, ...s }))),
    withObserver: fc.boolean(),
    extraRounds: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: n + 1, maxLength: n + 1 }),
    crashAfter: fc
      .array(fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined, freq: 3 }), { minLength: n, maxLength: n })
      // Keep a quorum up: crash at most a minority.
      .map((crashes) => {
        let allowed = Math.floor((n - 1) / 2);
        return crashes.map((c) => (c !== undefined && allowed-- > 0 ? c : undefined));
      }),
    seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
  }),
);

function build(c: Cluster, learnerTimeoutMs?: number): ElectionNetwork {
  const observerId = c.voters.length + 1;
  return new ElectionNetwork({ voters: c.voters, observers: c.withObserver ? [observerId] : [], seed: c.seed, learnerTimeoutMs });
}

function startWithRounds(net: ElectionNetwork, c: Cluster, skip: (id: number) => boolean): void {
  for (const id of net.ids) {
    if (skip(id)) continue;
    for (let r = 0; r <= (c.extraRounds[id - 1] ?? 0); r++) net.start(id);
  }
}

test("servers down for the whole election: every live server decides, all agree, and the leader is the best live voter backed by a quorum", () => {
  fc.assert(
    fc.property(cluster, (c) => {
      const net = build(c);
      const down = c.voters.filter((_, i) => c.crashAfter[i] !== undefined).map((v) => v.id);
      for (const id of down) net.crash(id);
      startWithRounds(net, c, (id) => down.includes(id));
      assert.ok(
        net.run(() => net.allLiveDecided(), 10 * MINUTE_MS),
        "every live server decides",
      );

      const leaders = new Set(net.liveIds.map((id) => net.node(id).decision!.leader));
      assert.equal(leaders.size, 1, "one leader");
      const leader = [...leaders][0]!;
      assert.ok(net.liveIds.includes(leader), "the leader is up");
      assert.equal(net.node(leader).state, "leading");
      assert.equal(leader, net.bestVoteAmong(net.liveIds), "the best (epoch, zxid, id) among the live voters leads");
      const backers = net.liveIds.filter((id) => net.quorum.isVoter(id) && net.node(id).decision!.leader === leader);
      assert.ok(backers.includes(leader) && net.quorum.containsQuorum(backers), "the leader is in the quorum that elected it");
      for (const id of net.liveIds) if (!net.quorum.isVoter(id)) assert.equal(net.node(id).state, "observing");
    }),
    { numRuns: 300 },
  );
});

test("servers crashing during the election: every server that decides agrees, and with Zab's learner timeout a live leader with a quorum emerges", () => {
  fc.assert(
    fc.property(cluster, (c) => {
      const net = build(c);
      const neverStart = c.voters.filter((_, i) => c.crashAfter[i] === 0).map((v) => v.id);
      for (const id of neverStart) net.crash(id);
      startWithRounds(net, c, (id) => neverStart.includes(id));

      // Crash the others at their delivery counts, then let the election finish.
      const pending = c.voters
        .map((v, i) => ({ id: v.id, after: c.crashAfter[i] }))
        .filter((x): x is { id: number; after: number } => x.after !== undefined && x.after > 0)
        .sort((a, b) => a.after - b.after);
      for (const { id, after } of pending) {
        net.run(() => net.delivered >= after || net.allLiveDecided(), 10 * MINUTE_MS);
        net.crash(id);
      }
      // Observers wait for a leader that says it leads, which a crashed one never does.
      assert.ok(
        net.run(() => net.allLiveVotersDecided(), net.nowMs + 10 * MINUTE_MS),
        "every live voter decides",
      );
      // Everyone who decided, including servers that crashed after deciding.
      const leaders = new Set([...net.decisions.values()].map((d) => d.leader));
      assert.equal(leaders.size, 1, `decided servers agree: ${[...leaders].join(", ")}`);

      // The leader may be one that crashed after being voted for; Zab's rule sends its learners back
      // to LOOKING, and the survivors elect a live leader.
      net.learnerTimeoutMs = 2000;
      const settled = () => {
        if (!net.allLiveDecided()) return false;
        const current = new Set(net.liveIds.map((id) => net.node(id).decision!.leader));
        const [leader] = current;
        return current.size === 1 && leader !== undefined && net.liveIds.includes(leader) && net.node(leader).state === "leading";
      };
      assert.ok(net.run(settled, net.nowMs + 10 * MINUTE_MS), "a live leader emerges");
      const leader = net.node(net.liveIds[0]!).decision!.leader;
      const backers = net.liveIds.filter((id) => net.quorum.isVoter(id) && net.node(id).decision!.leader === leader);
      assert.ok(backers.includes(leader) && net.quorum.containsQuorum(backers), "the leader is in a quorum of live voters that follows it");
    }),
    { numRuns: 300 },
  );
});
