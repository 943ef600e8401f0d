/**
 * A whole cluster restarted after several reconfigurations and no snapshot since. Every server
 * comes back with the reconfigurations in its log, none applied to its tree. Only the last can be
 * uncommitted (a leader proposes one only once the one before committed): the others are in force.
 * Counting them all as pending asks an election for a quorum of each — after 3 → 5 → 3 voters
 * with the first two removed, a quorum of the first configuration, whose servers are gone. Found
 * by `corral cluster`'s grow-and-shrink test on real processes.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SCRIPTED_NETWORK, Simulation, type SimMember } from "./cluster.js";

function reconfigure(sim: Simulation, change: { joining?: SimMember[]; leaving?: number[] }, expectVoters: number[]): void {
  const before = sim.latestConfig.version;
  for (let attempt = 0; attempt < 20; attempt++) {
    sim.applyFault({ kind: "reconfig", joining: change.joining ?? [], leaving: change.leaving ?? [], newMembers: undefined, fromCurrent: false });
    sim.runFor(1_500);
    if (sim.latestConfig.version !== before) break;
  }
  const voters = sim.latestConfig.members
    .filter((m) => m.role === "participant")
    .map((m) => m.serverId)
    .sort((a, b) => a - b);
  assert.deepEqual(voters, expectVoters, `the reconfiguration after ${before} came into force`);
  // Every member applies it (else a later crash may catch one with it unlogged: another scenario).
  sim.runFor(2_000);
}

test("a cluster restarted after 3 → 5 → 3 voters, before any snapshot, elects among the members in force", () => {
  let ran = 0;
  for (const seed of [1, 2, 3]) {
    const sim = new Simulation(seed, {
      voters: 3,
      observers: 0,
      spares: 2,
      clients: 3,
      reconfig: true,
      ...SCRIPTED_NETWORK,
      snapshotEveryTxns: 100_000,
      committedLogRecordsMax: 500,
      clientThinkMsMax: 500,
    });
    sim.runFor(3_000);
    reconfigure(sim, { joining: [{ id: 4, role: "participant" }] }, [1, 2, 3, 4]);
    reconfigure(sim, { joining: [{ id: 5, role: "participant" }] }, [1, 2, 3, 4, 5]);
    reconfigure(sim, { leaving: [1] }, [2, 3, 4, 5]);
    reconfigure(sim, { leaving: [2] }, [3, 4, 5]);
    for (const server of sim.servers) sim.applyFault({ kind: "crash", server: server.id });
    for (const id of [3, 4, 5]) sim.applyFault({ kind: "restart", server: id });
    sim.runFor(20_000);
    const leader = sim.servers.find((s) => s.leading && s.serving);
    assert.ok(leader, `seed ${seed}: a leader serves among 3, 4, 5`);
    for (const id of [3, 4, 5]) assert.ok(sim.servers.find((s) => s.id === id)!.serving, `seed ${seed}: server ${id} serves`);
    ran += 1;
  }
  assert.equal(ran, 3);
});
