/**
 * Read-only mode for a would-be leader stranded in discovery. Its voters chose it and then went
 * away before following it (kazoo's TestReadOnlyMode stops two of three servers one after the
 * other: the second can still vote for the third before it stops). The member waits there for
 * initLimit with no quorum, as cut off as a looking one, and must serve read-only sessions like one.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SCRIPTED_NETWORK, Simulation, type SimServer } from "./cluster.js";

const TICK_MS = 100;
/** Long enough that read-only mode (2 s out of service) starts before the term gives up. */
const INIT_LIMIT_TICKS = 60;

function strandedLeader(seed: number): { sim: Simulation; stranded: SimServer } {
  const sim = new Simulation(seed, {
    voters: 3,
    observers: 0,
    clients: 0,
    ...SCRIPTED_NETWORK,
    readOnlyMode: true,
    tickMs: TICK_MS,
    initLimitTicks: INIT_LIMIT_TICKS,
    netDelayMsMax: 20,
  });
  sim.runFor(2_000);
  const leader = sim.servers.find((s) => s.leading && s.serving);
  assert.ok(leader, "a leader serves after warm-up");
  sim.applyFault({ kind: "crash", server: leader.id });
  // The moment one of the other two decides to lead, cut it off from the last voter: it holds a
  // decided term in discovery that no quorum will ever join.
  for (let ms = 0; ms < 5_000; ms++) {
    const deciding = sim.servers.find((s) => s.up && s.replica?.status.role === "leading");
    if (deciding) {
      assert.equal(deciding.replica!.status.zabState, "discovery", "cut off before any learner synced");
      sim.applyFault({ kind: "isolate", server: deciding.id });
      return { sim, stranded: deciding };
    }
    sim.runFor(1);
  }
  assert.fail("no member decided to lead after the leader crashed");
}

test("a would-be leader waiting in discovery for voters that went away serves read-only sessions", () => {
  for (const seed of [1, 2, 3]) {
    const { sim, stranded } = strandedLeader(seed);
    const peer = () => stranded.replica!.status;
    let readOnlyWhileLeading = false;
    // Within initLimit (6 s) of deciding: read-only mode starts 2 s after it stopped serving.
    for (let ms = 0; ms < 5_000 && !readOnlyWhileLeading; ms += 10) {
      sim.runFor(10);
      readOnlyWhileLeading = peer().role === "leading" && peer().zabState === "discovery" && peer().readOnly;
    }
    assert.ok(readOnlyWhileLeading, `seed ${seed}: server ${stranded.id} served read-only while its term waited in discovery`);
    assert.equal(stranded.serving, false, "and it does not serve read-write");
    // Healed, a quorum forms again: read-only mode ends (at the latest when synchronization begins).
    sim.applyFault({ kind: "heal" });
    sim.applyFault({ kind: "restart", server: sim.servers.find((s) => !s.up)!.id });
    sim.runFor(15_000);
    assert.equal(peer().readOnly, false, `seed ${seed}: read-only mode ended once a quorum formed`);
    assert.ok(stranded.serving, `seed ${seed}: server ${stranded.id} serves read-write again`);
  }
});
