/**
 * Fault schedules generated and shrunk by fast-check's model-based testing (`fc.commands`): each
 * command is one fault followed by some simulated time; the model tracks which servers are down
 * so that shrinking keeps schedules meaningful. After the schedule the network heals and the
 * cluster must converge; every safety property is checked throughout. A failure prints the
 * shrunk schedule and the simulator seed.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { Simulation, type Fault } from "./cluster.js";
import { CONVERGENCE_BUDGET_MS, SESSION_EXPIRY_BUDGET_MS } from "./runner.js";

interface Model {
  members: number;
  down: Set<number>;
}

class FaultCommand implements fc.Command<Model, Simulation> {
  constructor(
    readonly fault: Fault,
    readonly afterMs: number,
  ) {}

  check(model: Readonly<Model>): boolean {
    const f = this.fault;
    if ("server" in f && f.server > model.members) return false;
    if (f.kind === "partition" && (f.a > model.members || f.b > model.members || f.a === f.b)) return false;
    if (f.kind === "crash") return !model.down.has(f.server);
    if (f.kind === "restart") return model.down.has(f.server);
    return true;
  }

  run(model: Model, sim: Simulation): void {
    sim.runFor(this.afterMs);
    sim.applyFault(this.fault);
    const f = this.fault;
    if (f.kind === "crash") model.down.add(f.server);
    if (f.kind === "restart") model.down.delete(f.server);
    if (f.kind === "restartAll") model.down.clear();
    if (f.kind === "crashLeader") {
      model.down.clear();
      for (const s of sim.servers) if (!s.up) model.down.add(s.id);
    }
    const violations = sim.checker.violations.filter((v) => v.property !== "convergence after healing");
    assert.deepEqual(violations, [], "safety holds while faults run");
  }

  toString(): string {
    return `${JSON.stringify(this.fault)} after ${this.afterMs} ms`;
  }
}

const server = fc.integer({ min: 1, max: 6 });
const afterMs = fc.integer({ min: 10, max: 1_500 });
const commands = [
  fc.tuple(server, afterMs).map(([s, t]) => new FaultCommand({ kind: "crash", server: s }, t)),
  fc.tuple(server, afterMs).map(([s, t]) => new FaultCommand({ kind: "restart", server: s }, t)),
  fc.tuple(server, server, fc.boolean(), afterMs).map(([a, b, oneWay, t]) => new FaultCommand({ kind: "partition", a, b, oneWay }, t)),
  fc.tuple(server, afterMs).map(([s, t]) => new FaultCommand({ kind: "isolate", server: s }, t)),
  afterMs.map((t) => new FaultCommand({ kind: "heal" }, t)),
  fc
    .tuple(server, fc.constantFrom(-3_000, -500, 400, 1_500, 5_000), afterMs)
    .map(([s, d, t]) => new FaultCommand({ kind: "clockJump", server: s, deltaMs: d }, t)),
  afterMs.map((t) => new FaultCommand({ kind: "restartAll" }, t)),
  afterMs.map((t) => new FaultCommand({ kind: "crashLeader" }, t)),
  afterMs.map((t) => new FaultCommand({ kind: "isolateLeaderWithOne" }, t)),
  fc.tuple(fc.constantFrom(300, 1_500, 4_000), afterMs).map(([d, t]) => new FaultCommand({ kind: "pauseLeader", durationMs: d }, t)),
  fc
    .tuple(fc.constantFrom(1_500, 1_800, 3_000, 4_000), fc.boolean(), afterMs)
    .map(([d, cut, t]) => new FaultCommand({ kind: "pauseOnNextWrite", durationMs: d, cutClients: cut }, t)),
];

const RUNS = Number(process.env.SIM_FC_RUNS ?? 60);

test("fast-check fault schedules: safety while faults run, convergence after they stop", () => {
  const details = fc.check(
    fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.commands(commands, { maxCommands: 20 }), (seed, cmds) => {
      const sim = new Simulation(seed);
      sim.runFor(1_000);
      fc.modelRun(() => ({ model: { members: sim.servers.length, down: new Set<number>() }, real: sim }), cmds);
      sim.runFor(1_000);
      const failure = sim.converge(CONVERGENCE_BUDGET_MS);
      assert.equal(failure, undefined, `simulator seed ${seed}: ${failure}`);
      const sessions = sim.checkSessionExpiry(SESSION_EXPIRY_BUDGET_MS);
      assert.equal(sessions, undefined, `simulator seed ${seed}: ${sessions}`);
      const cleanup = sim.checkCleanup();
      assert.equal(cleanup, undefined, `simulator seed ${seed}: ${cleanup}`);
      const finalZxid = Math.max(...sim.servers.map((s) => s.tree.lastProcessedZxid));
      sim.checker.checkAckedWrites((zxid) => sim.headerAt(zxid), finalZxid);
      assert.deepEqual(sim.checker.violations, [], `simulator seed ${seed}`);
    }),
    { numRuns: RUNS, seed: Number(process.env.SIM_FC_SEED ?? 20261122) },
  );
  if (details.failed) {
    const [seed, cmds] = details.counterexample ?? [];
    const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
    // fc.commands' value is typed Iterable but is a CommandsIterable, whose toString lists the commands that ran.
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- see above
    const schedule = String(cmds);
    assert.fail(
      `after ${details.numRuns} runs and ${details.numShrinks} shrinks: simulator seed ${seed}, schedule ${schedule}\n${error}\nreplay: SIM_FC_SEED=${details.seed} (path ${details.counterexamplePath})`,
    );
  }
});
