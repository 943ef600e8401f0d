/**
 * A reconfiguration logged by a cut-off leader and one follower only, that the rest of the cluster
 * went on without. Five voters and observer 6: the leader proposes promoting 6 just as it is cut
 * off with one follower, so only those two log it; the other three elect a new leader of a later
 * epoch and commit writes without it. Two of those three are then lost (one crashed, one cut off)
 * and the link between the halves heals: the survivors are the new leader, the two holding the
 * promotion, and observer 6. Those two still count the promotion as pending and need a quorum of
 * 1..6 to elect, which 6 never completes (its own log went past the promotion, so it does not vote
 * for it); only learning from the new leader's tree that the promotion was left out of the
 * committed history lets them follow it (simulator seed 26243 of a 10,000-seed run waited forever).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SCRIPTED_NETWORK, Simulation, type SimServer } from "./cluster.js";

const OBSERVER = 6;

interface Stranded {
  sim: Simulation;
  /** The cut-off leader and its follower, both holding the promotion. */
  holders: SimServer[];
  version: number;
}

/** Up to the moment only the leader and one follower logged the promotion; undefined if the seed's timing did not allow it. */
function promotionLoggedByTwo(seed: number): Stranded | undefined {
  const sim = new Simulation(seed, {
    voters: 5,
    observers: 1,
    spares: 0,
    clients: 3,
    reconfig: true,
    ...SCRIPTED_NETWORK,
    netDelayMsMax: 20,
    clientThinkMsMax: 200,
  });
  sim.runFor(3_000);
  const leader = sim.servers.find((s) => s.leading && s.serving);
  if (leader === undefined) return undefined;
  sim.applyFault({ kind: "reconfig", joining: [{ id: OBSERVER, role: "participant" }], leaving: [], newMembers: undefined, fromCurrent: false });
  // Cut the leader off with one follower the moment it logs the proposal, before the others hear it.
  for (let ms = 0; ms < 2_000; ms++) {
    if (leader.replica!.status.reconfigsLogged.length > 0) break;
    sim.runFor(1);
  }
  const logged = leader.replica!.status.reconfigsLogged.at(-1);
  if (logged === undefined) return undefined;
  const others = sim.servers.filter((s) => s.id !== leader.id && s.id !== OBSERVER);
  const heardOf = (s: SimServer) => s.replica!.status.reconfigsLogged.length > 0 || s.replica!.status.configInForce.version !== 0;
  if (others.some(heardOf) || leader.replica!.status.configInForce.version !== 0) return undefined;
  const buddy = others[0]!;
  for (const s of sim.servers) {
    if (s.id === leader.id || s.id === buddy.id) continue;
    sim.applyFault({ kind: "partition", a: leader.id, b: s.id, oneWay: false });
    sim.applyFault({ kind: "partition", a: buddy.id, b: s.id, oneWay: false });
  }
  sim.runFor(1_000);
  if (buddy.replica!.status.reconfigsLogged.at(-1)?.version !== logged.version) return undefined;
  if (others.slice(1).some(heardOf) || buddy.replica!.status.configInForce.version !== 0) return undefined;
  return { sim, holders: [leader, buddy], version: logged.version };
}

test("servers holding a reconfiguration the committed history went past follow a leader without it", () => {
  let scenarios = 0;
  for (let seed = 1; seed <= 40 && scenarios < 3; seed++) {
    const stranded = promotionLoggedByTwo(seed);
    if (stranded === undefined) continue;
    const { sim, holders, version } = stranded;
    // The other three go on without the promotion: a new leader commits writes after it.
    sim.runFor(8_000);
    const rest = sim.servers.filter((s) => s.id !== OBSERVER && !holders.includes(s));
    const newLeader = rest.find((s) => s.leading && s.serving);
    if (newLeader === undefined || newLeader.tree.lastProcessedZxid <= version) continue;
    scenarios += 1;
    const [crashed, cutOff] = rest.filter((s) => s !== newLeader);
    sim.applyFault({ kind: "crash", server: crashed!.id });
    sim.applyFault({ kind: "heal" });
    sim.applyFault({ kind: "isolate", server: cutOff!.id });
    sim.runFor(30_000);
    const leader = sim.servers.find((s) => s.leading && s.serving);
    assert.ok(leader, `seed ${seed}: a leader serves with server ${crashed!.id} down and ${cutOff!.id} cut off`);
    for (const s of holders) {
      assert.ok(s.serving, `seed ${seed}: server ${s.id}, which logged the promotion, serves`);
      assert.equal(s.replica!.status.reconfigsLogged.length, 0, `seed ${seed}: server ${s.id}'s log lost the promotion to its leader's history`);
      const member = s.replica!.status.configInForce.members.find((m) => m.serverId === OBSERVER);
      assert.equal(member?.role, "observer", `seed ${seed}: server ${s.id} keeps ${OBSERVER} an observer`);
    }
  }
  assert.ok(scenarios >= 1, "some seed stranded the promotion with the cut-off leader and one follower while the rest went on");
});
