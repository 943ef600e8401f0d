/**
 * One simulated run from one seed: warm up, inject a fault schedule, (in half the runs) heal all
 * but a minority and check that the rest converge, heal everything, check convergence.
 */
import { Simulation, type Fault } from "./cluster.js";
import { randomSchedule, type ScheduledFault, type SimOutcome } from "./schedule.js";

export const CONVERGENCE_BUDGET_MS = 60_000;
/** The share of runs whose faults end with a minority kept out while the rest converge, before everything heals. */
export const MINORITY_FIRST_CHANCE = 0.5;
/** Dead sessions time out after 2 s; the leader checks every tick. */
export const SESSION_EXPIRY_BUDGET_MS = 10_000;

export interface RunOptions {
  /** Faults in the random schedule (ignored when `schedule` is given). */
  steps?: number;
  /** An explicit schedule (fast-check's), instead of one drawn from the seed. */
  schedule?: ScheduledFault[];
  /** Force one election (default: drawn from the seed, mostly the real FastLeaderElection). */
  election?: "fle" | "oracle";
  /** SIMULATION SABOTAGE: storage reads back without checking, or a damaged server does not say it repairs (SimConfig). */
  sabotage?: "uncheckedReads" | "silentRepair";
  /** Storage faults (SimConfig.storageFaults) on in every run without reconfigurations, not in about half. */
  storageFaults?: boolean;
}

export function runSeed(seed: number, options: RunOptions = {}): SimOutcome {
  const sim = new Simulation(seed, {
    ...(options.election === undefined ? {} : { election: options.election }),
    ...(options.sabotage === undefined ? {} : { [options.sabotage]: true }),
    ...(options.storageFaults === true ? { storageFaults: true } : {}),
  });
  const scheduleRng = sim.prng.fork();
  const schedule = options.schedule ?? randomSchedule(scheduleRng, sim.servers.length, sim.config.voters, options.steps ?? 12, sim.config.reconfig);
  try {
    sim.runFor(1_000);
    for (const { afterMs, fault } of schedule) {
      sim.runFor(afterMs);
      sim.applyFault(fault);
    }
    sim.runFor(1_000);
    // Half the runs first keep a random minority crashed or cut off: the rest must still elect a
    // leader and converge (issue 3: "a leader is elected whenever a quorum is connected").
    if (scheduleRng.chance(MINORITY_FIRST_CHANCE)) {
      const minority = sim.convergeWithout(sim.randomMinority(scheduleRng), CONVERGENCE_BUDGET_MS);
      if (minority !== undefined) sim.checker.fail("a connected quorum elects a leader and converges", minority);
    }
    const quiet = sim.convergeQuietly(CONVERGENCE_BUDGET_MS);
    if (quiet !== undefined) sim.checker.fail("a quiet cluster applies every committed txn everywhere", quiet);
    const failure = sim.converge(CONVERGENCE_BUDGET_MS);
    if (failure !== undefined) sim.checker.fail("convergence after healing", failure);
    else {
      const sessions = sim.checkSessionExpiry(SESSION_EXPIRY_BUDGET_MS);
      if (sessions !== undefined) sim.checker.fail("ephemerals of an expired session disappear on every server", sessions);
      const cleanup = sim.checkCleanup();
      if (cleanup !== undefined) sim.checker.fail("empty containers and expired TTL nodes are deleted", cleanup);
      const config = sim.checkConfigInForce();
      if (config !== undefined) sim.checker.fail("an acknowledged reconfiguration is in force after healing", config);
    }
    const finalZxid = Math.max(...sim.servers.map((s) => s.tree.lastProcessedZxid));
    sim.checker.checkAckedWrites((zxid) => sim.headerAt(zxid), finalZxid);
    sim.checkConfigChain();
  } catch (error) {
    // An assertion inside the core or the store is a bug like any other: report it with the seed.
    sim.checker.fail("committed prefixes agree", `crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  }
  return { seed, violations: sim.checker.violations, stats: sim.stats, trace: traceAroundFirstViolation(sim.trace), config: sim.config };
}

export function describeFault(fault: Fault): string {
  return JSON.stringify(fault);
}

/** The trace lines leading to the first violation (or the last lines when there is none). */
function traceAroundFirstViolation(trace: string[]): string[] {
  const at = trace.findIndex((line) => line.includes("VIOLATION"));
  return at < 0 ? trace.slice(-80) : trace.slice(Math.max(0, at - 120), at + 5);
}
