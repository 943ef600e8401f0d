/**
 * Fault schedules: a random one drawn from the seed (run.ts, and the CI seeds), and the
 * fast-check command model (model.test.ts) that shrinks a failing schedule.
 */
import type { Fault, SimMember, Simulation } from "./cluster.js";
import type { Prng } from "./prng.js";

export interface ScheduledFault {
  afterMs: number;
  fault: Fault;
}

/**
 * A random schedule: `count` faults spread over the fault phase, keeping crashes recoverable. With
 * `reconfig`, about 30 % of them are reconfigurations instead (the draws for the other faults
 * are made all the same, so a seed without reconfigurations replays as it always did).
 */
export function randomSchedule(prng: Prng, members: number, voters: number, count: number, reconfig = false): ScheduledFault[] {
  const schedule: ScheduledFault[] = [];
  const down = new Set<number>();
  for (let i = 0; i < count; i++) {
    // Right after a reconfiguration, half the time: the fault lands while it is still in flight.
    const previous = schedule[schedule.length - 1]?.fault;
    const afterMs = previous?.kind === "reconfig" && prng.chance(0.5) ? prng.between(1, 30) : prng.between(50, 1_500);
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
    if (reconfig && prng.chance(0.3)) fault = randomReconfig(prng, members);
    if (fault.kind === "crash") down.add(fault.server);
    if (fault.kind === "restart") down.delete(fault.server);
    if (fault.kind === "restartAll") down.clear();
    if (fault.kind === "partition" && fault.a === fault.b) continue;
    schedule.push({ afterMs, fault });
  }
  return schedule;
}

/** A membership change over the servers 1..members: grow, shrink, re-role, or a whole new list. */
function randomReconfig(prng: Prng, members: number): Fault {
  const member = (): SimMember => ({ id: prng.between(1, members), role: prng.chance(0.75) ? "participant" : "observer" });
  const fromCurrent = prng.chance(0.3);
  const roll = prng.float();
  if (roll < 0.35) return { kind: "reconfig", joining: [member()], leaving: [], newMembers: undefined, fromCurrent };
  if (roll < 0.6) return { kind: "reconfig", joining: [], leaving: [prng.between(1, members)], newMembers: undefined, fromCurrent };
  if (roll < 0.75) return { kind: "reconfig", joining: [member()], leaving: [prng.between(1, members)], newMembers: undefined, fromCurrent };
  const ids = prng.shuffle(Array.from({ length: members }, (_, i) => i + 1)).slice(0, prng.between(2, members));
  return {
    kind: "reconfig",
    joining: [],
    leaving: [],
    newMembers: ids.map((id) => ({ id, role: prng.chance(0.75) ? "participant" : "observer" })),
    fromCurrent,
  };
}

export interface SimOutcome {
  seed: number;
  violations: { property: string; message: string }[];
  stats: Simulation["stats"];
  trace: string[];
  config: Simulation["config"];
}
