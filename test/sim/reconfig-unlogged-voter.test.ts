/**
 * A reconfiguration whose new quorum needs a voter that never logged it. An observer is promoted
 * while it is cut off; the leader crashes after the two other voters logged the promotion, before
 * it committed. The next leader needs a quorum of the promoted configuration too (it may have
 * committed), and only the observer can complete one — but it never saw the proposal (ZooKeeper's
 * observers do not see proposals either). It must learn from the others' notifications that it
 * votes, or the cluster waits for the crashed leader forever (simulator seeds 1148 and 5641 of the
 * 20,000-seed run did).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SCRIPTED_NETWORK, Simulation, type SimServer } from "./cluster.js";

const OBSERVER = 4;

/** Up to the moment the leader crashes with the promotion logged by both followers, uncommitted; undefined if the seed's timing did not allow it. */
function promotionStranded(seed: number): { sim: Simulation; crashed: SimServer } | undefined {
  const sim = new Simulation(seed, {
    voters: 3,
    observers: 1,
    spares: 0,
    clients: 3,
    reconfig: true,
    ...SCRIPTED_NETWORK,
    netDelayMsMax: 20,
    clientThinkMsMax: 500,
  });
  sim.runFor(3_000);
  const leader = sim.servers.find((s) => s.leading && s.serving);
  if (leader === undefined) return undefined;
  sim.applyFault({ kind: "isolate", server: OBSERVER });
  sim.runFor(50);
  sim.applyFault({ kind: "reconfig", joining: [{ id: OBSERVER, role: "participant" }], leaving: [], newMembers: undefined, fromCurrent: false });
  const followers = sim.servers.filter((s) => s.id !== leader.id && s.id !== OBSERVER);
  for (let ms = 0; ms < 2_000; ms++) {
    if (leader.replica!.status.configInForce.version !== 0) return undefined; // committed first
    if (followers.every((s) => s.replica!.status.reconfigsLogged.length > 0)) {
      sim.applyFault({ kind: "crash", server: leader.id });
      return { sim, crashed: leader };
    }
    sim.runFor(1);
  }
  return undefined;
}

test("a voter that never logged the reconfiguration promoting it votes in the election after it", () => {
  let scenarios = 0;
  for (let seed = 1; seed <= 40 && scenarios < 3; seed++) {
    const stranded = promotionStranded(seed);
    if (stranded === undefined) continue;
    scenarios += 1;
    const { sim, crashed } = stranded;
    const observer = sim.servers.find((s) => s.id === OBSERVER)!;
    assert.equal(observer.replica!.status.reconfigsLogged.length, 0, `seed ${seed}: the observer never logged the promotion`);
    sim.applyFault({ kind: "heal" });
    sim.runFor(30_000);
    const up = sim.servers.filter((s) => s.id !== crashed.id);
    const leader = up.find((s) => s.leading && s.serving);
    assert.ok(leader, `seed ${seed}: a leader serves among ${up.map((s) => s.id).join(",")} with server ${crashed.id} down`);
    for (const s of up) {
      assert.ok(s.serving, `seed ${seed}: server ${s.id} serves`);
      const member = s.replica!.status.configInForce.members.find((m) => m.serverId === OBSERVER);
      assert.equal(member?.role, "participant", `seed ${seed}: server ${s.id} has the promotion in force`);
    }
  }
  assert.ok(scenarios >= 1, "some seed stranded the promotion (crash after both followers logged it, before it committed)");
});
