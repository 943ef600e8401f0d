/**
 * The storage twin's damage (twins/memory-storage.ts) against two deliberately broken builds, so
 * that the properties the random runs check with storage faults on are shown able to fail:
 * - storage that reads back without checking serves damaged records: the committed-prefix checker
 *   (same txn at every zxid, equal tree digests at equal zxids) catches it on seeds of the random runs;
 * - a member that starts empty after finding damage but does not say it repairs counts toward a
 *   quorum with nothing: a history without the acknowledged writes is committed over them, and the
 *   committed-prefix checker catches it.
 * The same runs on the real build pass.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Simulation, type SimConfig } from "./cluster.js";
import { runSeed } from "./runner.js";

/** The random runs' first seeds (12 steps), with storage faults on in each (none in those with reconfigurations). */
const SCANNED_SEEDS = 30;

test("storage read back unchecked serves damaged records on some of the first seeds, and the committed-prefix checker catches each; checked, those seeds pass", () => {
  const caught: number[] = [];
  for (let seed = 0; seed < SCANNED_SEEDS; seed++) {
    const sabotaged = runSeed(seed, { steps: 12, storageFaults: true, sabotage: "uncheckedReads" });
    if (sabotaged.violations.length === 0) continue;
    assert.ok(sabotaged.stats.damagedRestarts > 0, `seed ${seed} failed without storage damage`);
    assert.ok(
      sabotaged.violations.some((v) => v.property === "committed prefixes agree"),
      `seed ${seed}: ${JSON.stringify(sabotaged.violations.slice(0, 2))}`,
    );
    caught.push(seed);
  }
  assert.ok(caught.length >= 3, `caught on seeds ${caught.join(", ")}`);
  for (const seed of caught) assert.deepEqual(runSeed(seed, { steps: 12, storageFaults: true }).violations, [], `seed ${seed} with checked reads`);
});

/** The scripted runs' cluster: three voters, the real election, no random faults (the script makes them). */
const SCRIPTED: Partial<SimConfig> = {
  voters: 3,
  observers: 0,
  clients: 2,
  reconfig: false,
  storageFaults: false,
  election: "fle",
  electionLoss: 0,
  electionDuplicate: 0,
  streamBreak: 0,
  slowDiskServer: 0,
  snapshotEveryTxns: 1000,
};

/** Flips one bit in `serverId`'s first or last logged record while it is down. */
function damageRecord(sim: Simulation, serverId: number, which: "first" | "last"): void {
  const log = sim.server(serverId).storage.durable.log;
  assert.ok(log.length >= 2, `server ${serverId} logged records`);
  const at = which === "first" ? 0 : log.length - 1;
  log[at] = { zxid: log[at]!.zxid, stored: log[at]!.stored.map((b, i) => (i === 20 ? b ^ 0x10 : b)) };
}

/**
 * Three voters; server 3 is cut off while 1 and 2 acknowledge writes; 1 and 2 crash, and one of
 * 2's records (`damaged`) is damaged; 2 and 3 come back without 1. The good copies of the
 * acknowledged writes are on 1 alone, so 2 and 3 must wait for it; then all converge, every
 * acknowledged write kept.
 */
function damagedMemberWithAStaleOne(silentRepair: boolean, damaged: "first" | "last" = "first"): Simulation {
  const sim = new Simulation(11, { ...SCRIPTED, silentRepair });
  sim.runFor(2_000);
  sim.applyFault({ kind: "isolate", server: 3 });
  const ackedBefore = sim.stats.ackedWrites;
  sim.runFor(3_000);
  assert.ok(sim.stats.ackedWrites > ackedBefore, "1 and 2 acknowledged writes while 3 was cut off");
  sim.applyFault({ kind: "crash", server: 1 });
  sim.applyFault({ kind: "crash", server: 2 });
  damageRecord(sim, 2, damaged);
  sim.applyFault({ kind: "heal" });
  sim.applyFault({ kind: "restart", server: 2 });
  sim.runFor(5_000);
  sim.applyFault({ kind: "restart", server: 1 });
  const failure = sim.converge(60_000);
  if (failure !== undefined) sim.checker.fail("convergence after healing", failure);
  sim.checker.checkAckedWrites((zxid) => sim.headerAt(zxid), Math.max(...sim.servers.map((s) => s.tree.lastProcessedZxid)));
  return sim;
}

test("a member that found damage and says it repairs never makes a quorum with a stale one: every acknowledged write survives", () => {
  const sim = damagedMemberWithAStaleOne(false);
  assert.deepEqual(sim.checker.violations, []);
});

test("a member whose last record is damaged repairs rather than cut it back as a torn write (it was acknowledged whole): every acknowledged write survives", () => {
  const sim = damagedMemberWithAStaleOne(false, "last");
  assert.deepEqual(sim.checker.violations, []);
});

test("a member that found damage but does not say it repairs makes a quorum with a stale one, and the checkers catch the history that drops the acknowledged writes", () => {
  const sim = damagedMemberWithAStaleOne(true);
  // The new leader's history replaces the committed one from its first txn: the committed-prefix
  // checker sees a second txn at a committed zxid before the durability check at the end runs.
  const caught = new Set(sim.checker.violations.map((v) => v.property));
  assert.ok(caught.has("committed prefixes agree") || caught.has("acknowledged writes survive"), `caught: ${[...caught].join("; ")}`);
});

test("a damaged member does not refuse on a voter's notification re-sent from before that voter's own repair finished: it waits, and repairs once the voter answers", () => {
  const sim = new Simulation(5, SCRIPTED);
  sim.runFor(2_000);
  // Server 3 finds damage at restart, says so to the others while it looks for a leader, and repairs.
  sim.applyFault({ kind: "crash", server: 3 });
  damageRecord(sim, 3, "first");
  sim.applyFault({ kind: "restart", server: 3 });
  sim.runFor(3_000);
  const three = sim.server(3);
  assert.ok(three.serving && three.storage.durable.repairing === undefined, "server 3 repaired");
  // Then 3 pauses, and 1 restarts damaged: the only word of 3's it gets is 3's last notification,
  // re-sent on the new link, which says 3 repairs. Its pause lasts well past the lingering (2.8 s).
  sim.applyFault({ kind: "pause", server: 3, durationMs: 8_000 });
  sim.applyFault({ kind: "crash", server: 1 });
  damageRecord(sim, 1, "first");
  sim.applyFault({ kind: "restart", server: 1 });
  sim.runFor(7_000);
  assert.deepEqual(sim.checker.violations, [], "server 1 is still up, waiting");
  assert.ok(sim.server(1).up && sim.server(1).storage.durable.repairing !== undefined, "server 1 still repairs");
  const failure = sim.converge(60_000);
  if (failure !== undefined) sim.checker.fail("convergence after healing", failure);
  assert.deepEqual(sim.checker.violations, []);
  assert.equal(sim.server(1).storage.durable.repairing, undefined, "server 1 repaired from the leader");
});
