/**
 * Fault schedules: a random one drawn from the seed (run.ts, and the CI seeds), and the
 * fast-check command model (model.test.ts) that shrinks a failing schedule.
 */
import type { Fault, Simulation } from "./cluster.js";
import type { Prng } from "./prng.js";

export interface ScheduledFault {
  afterMs: number;
  fault: Fault;
}

/** A random schedule: `count` faults spread over the fault phase, keeping crashes recoverable. */
export function randomSchedule(prng: Prng, members: number, voters: number, count: number): ScheduledFault[] {
  const schedule: ScheduledFault[] = [];
  const down = new Set<number>();
  for (let i = 0; i < count; i++) {
    const afterMs = prng.between(50, 1_500);
    const server = prng.between(1, members);
    const roll = prng.float();
    let fault: Fault;
    if (roll < 0.22) {
      // At most a minority of voters down at once, so that the cluster can always make progress.
      const downVoters = [...down].filter((id) => id <= voters).length;
      if (down.has(server) || (server <= voters && downVoters + 1 > Math.floor((voters - 1) / 2)))
        fault = { kind: "restart", server: prng.pick([...down, server]) };
      else fault = { kind: "crash", server };
    } else if (roll < 0.4) fault = { kind: "restart", server: down.size > 0 ? prng.pick([...down]) : server };
    else if (roll < 0.55) fault = { kind: "partition", a: server, b: prng.between(1, members), oneWay: prng.chance(0.5) };
    else if (roll < 0.63) fault = { kind: "isolate", server };
    else if (roll < 0.775) fault = { kind: "heal" };
    else if (roll < 0.835) fault = { kind: "clockJump", server, deltaMs: prng.pick([-3_000, -500, 400, 1_500, 5_000]) };
    else if (roll < 0.875) fault = { kind: "restartAll" };
    else if (roll < 0.915) fault = { kind: "isolateLeaderWithOne" };
    else if (roll < 0.945)
      fault = prng.chance(0.5)
        ? { kind: "pauseLeader", durationMs: prng.pick([300, 1_500, 4_000]) }
        : { kind: "pause", server, durationMs: prng.pick([300, 1_500, 4_000]) };
    else if (roll < 0.985) fault = { kind: "pauseOnNextWrite", durationMs: prng.pick([1_500, 1_800, 3_000, 4_000]), cutClients: prng.chance(0.5) };
    else fault = { kind: "crashLeader" };
    if (fault.kind === "crash") down.add(fault.server);
    if (fault.kind === "restart") down.delete(fault.server);
    if (fault.kind === "restartAll") down.clear();
    if (fault.kind === "partition" && fault.a === fault.b) continue;
    schedule.push({ afterMs, fault });
  }
  return schedule;
}

export interface SimOutcome {
  seed: number;
  violations: { property: string; message: string }[];
  stats: Simulation["stats"];
  trace: string[];
  config: Simulation["config"];
}
