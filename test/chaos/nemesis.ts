/**
 * The nemesis: injects one fault at a time into a ChaosCluster, holds it, heals it, lets the
 * cluster recover for a moment, and repeats until told to stop. Reconfiguration runs beside the
 * others, in a loop of its own, so that membership changes while other faults are in force. Every
 * choice comes from a seeded Prng, so a run's fault schedule replays from its seed (the processes'
 * timing does not).
 *
 * - partition, delay: the link proxies (see chaos-cluster.ts).
 * - kill: kill -9 of one server (sometimes of all), restarted at the heal; pause: SIGSTOP/SIGCONT.
 * - clock: one server's clock jumps (by up to two minutes either way) or strobes (back and forth
 *   every few hundred ms), through the server's test clock (src/server/test-clock.ts).
 * - corrupt: one server is killed, one of its files damaged (a flipped bit, a cut, a zeroed page,
 *   a torn tail, in a LevelDB file or a snapshot), and it is started again at the heal: it must
 *   repair from the others (or refuse to start, which the run reports as a dead server). Only
 *   within the damage budget (good-copies.ts): the configuration in force must keep a quorum of
 *   voters with good copies, so a voter whose damage would break that is passed over for another
 *   server (an observer's damage never costs a quorum); when none may be damaged the nemesis waits
 *   a little for the damaged ones to prove their repair, and failing that records the corruption
 *   as deferred, with the reason, and leaves this turn to the others.
 * - reconfig: see MembershipNemesis.
 */
import { damageFile, DAMAGES, FILE_KINDS, fileOf } from "../helpers/file-damage.js";
import { Prng } from "../sim/prng.js";
import type { FaultRecord } from "./history.js";
import { type ChaosCluster, CLIENTS } from "./chaos-cluster.js";
import { GoodCopies, type Roles, startingRoles, votersOf } from "./good-copies.js";
import { MembershipNemesis } from "./membership-nemesis.js";

export const NEMESES = ["partition", "kill", "pause", "delay", "clock", "corrupt", "reconfig"] as const;
export type NemesisName = (typeof NEMESES)[number];

/** A comma-separated list of nemeses; `all` names every one. */
export function parseNemeses(list: string): NemesisName[] {
  const names = list
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .flatMap((name) => (name === "all" ? [...NEMESES] : [name]));
  for (const name of names) {
    if (!(NEMESES as readonly string[]).includes(name)) throw new Error(`unknown nemesis "${name}" (known: ${NEMESES.join(", ")}, all)`);
  }
  if (names.length === 0) throw new Error("no nemesis named");
  return [...new Set(names)] as NemesisName[];
}

/** What the cluster must be started with for `nemeses` to work on it. */
export function clusterNeeds(nemeses: readonly NemesisName[]): { reconfig: boolean; clockSkew: boolean } {
  return { reconfig: nemeses.includes("reconfig"), clockSkew: nemeses.includes("clock") };
}

export interface NemesisOptions {
  nemeses: readonly NemesisName[];
  seed: number;
  /** Milliseconds since the run started (the history's clock). */
  now: () => number;
  /** Called with every fault as it starts and again when it ends. */
  onFault?: (fault: FaultRecord) => void;
  /** How long a fault is held, in ms. */
  faultMs?: readonly [number, number];
  /** Quiet time between faults, in ms. */
  quietMs?: readonly [number, number];
  /**
   * Partition shapes to use; default every shape. The broken-server test asks for the one that
   * leaves the leader on its own.
   */
  partitionShapes?: readonly PartitionShape[];
}

export const PARTITION_SHAPES = ["isolate-leader", "isolate-one", "halves", "one-way", "bridge", "clients"] as const;
export type PartitionShape = (typeof PARTITION_SHAPES)[number];

/** A fault in force: how to describe it and how to undo it. */
export interface ActiveFault {
  kind: string;
  description: string;
  heal: () => Promise<void>;
}

/** How often the corrupt nemesis looks for a server the budget lets it damage before it defers, and how far apart. */
const DAMAGE_TRIES = 5;
const DAMAGE_RETRY_MS = 2_000;

export class Nemesis {
  readonly faults: FaultRecord[] = [];
  private readonly prng: Prng;
  /** The damage budget the corrupt and reconfiguration nemeses share. */
  private readonly copies: GoodCopies;
  private membership: MembershipNemesis | undefined;
  private stopping = false;
  /** The loops' sleeps, woken early by stop(). */
  private readonly sleepers = new Set<() => void>();

  constructor(
    private readonly cluster: ChaosCluster,
    private readonly options: NemesisOptions,
  ) {
    this.prng = new Prng(options.seed);
    this.copies = new GoodCopies(cluster);
  }

  /** Runs faults until `stop()`; always leaves the cluster healed, every server running, every member back. */
  async run(): Promise<void> {
    const others = this.options.nemeses.filter((name) => name !== "reconfig");
    // The reconfiguration loop draws from a stream of its own, so that the schedule replays from
    // the seed however the two loops' turns interleave.
    const membershipPrng = this.options.nemeses.includes("reconfig") ? this.prng.fork() : undefined;
    const membership = membershipPrng === undefined ? undefined : new MembershipNemesis(this.cluster, membershipPrng.fork(), this.copies);
    this.membership = membership;
    try {
      await Promise.all([
        others.length === 0 ? Promise.resolve() : this.loop(this.prng, () => this.inject(this.prng.pick(others))),
        membership === undefined ? Promise.resolve() : this.loop(membershipPrng!, () => membership.change()),
      ]);
    } finally {
      await this.cluster.healAll();
      await membership?.restore();
    }
  }

  /** Faults from `inject`, one at a time, each held, healed and followed by a quiet spell. */
  private async loop(prng: Prng, inject: () => Promise<ActiveFault | undefined>): Promise<void> {
    const [faultLo, faultHi] = this.options.faultMs ?? [2_000, 7_000];
    const [quietLo, quietHi] = this.options.quietMs ?? [1_500, 4_000];
    await this.sleep(prng.between(quietLo, quietHi));
    while (!this.stopping) {
      const active = await inject();
      if (active !== undefined) {
        const record: FaultRecord = { kind: active.kind, description: active.description, startedAt: this.options.now() };
        this.record(record);
        await this.sleep(prng.between(faultLo, faultHi));
        await active.heal();
        record.endedAt = this.options.now();
        this.options.onFault?.(record);
      }
      await this.sleep(prng.between(quietLo, quietHi));
    }
  }

  stop(): void {
    this.stopping = true;
    for (const wake of this.sleepers) wake();
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.sleepers.add(done);
    });
  }

  private inject(name: Exclude<NemesisName, "reconfig">): Promise<ActiveFault | undefined> {
    switch (name) {
      case "partition":
        return Promise.resolve(this.partition());
      case "kill":
        return this.kill();
      case "pause":
        return Promise.resolve(this.pause());
      case "delay":
        return Promise.resolve(this.delay());
      case "clock":
        return this.clock();
      case "corrupt":
        return this.corrupt();
    }
  }

  /** A random server, or the one the cluster believes leads (half the time, when there is one). */
  private target(): { id: number; leader: boolean } {
    const leader = this.cluster.believedLeader();
    if (leader !== undefined && this.prng.chance(0.5)) return { id: leader, leader: true };
    const id = this.prng.pick(this.cluster.ids);
    return { id, leader: id === leader };
  }

  private partition(): ActiveFault {
    const ids = this.cluster.ids;
    const shape = this.prng.pick(this.options.partitionShapes ?? PARTITION_SHAPES);
    const pairs: [number, number][] = [];
    const cut = (a: number, b: number) => pairs.push([a, b], [b, a]);
    let description: string;
    switch (shape) {
      case "isolate-leader":
      case "isolate-one": {
        const { id, leader } = shape === "isolate-leader" ? this.target() : { id: this.prng.pick(ids), leader: false };
        for (const other of ids) if (other !== id) cut(id, other);
        description = `isolate server ${id}${leader ? " (leader)" : ""} from its peers`;
        break;
      }
      case "halves": {
        const shuffled = this.prng.shuffle([...ids]);
        const minority = shuffled.slice(0, Math.floor(ids.length / 2));
        const majority = shuffled.slice(minority.length);
        for (const a of minority) for (const b of majority) cut(a, b);
        description = `partition {${minority.join(",")}} | {${majority.join(",")}}`;
        break;
      }
      case "one-way": {
        const { id } = this.target();
        for (const other of ids) if (other !== id) pairs.push([id, other]);
        description = `one-way: server ${id} cannot send to its peers (but hears them)`;
        break;
      }
      case "bridge": {
        // Two sides that cannot see each other, and one server that sees both.
        const shuffled = this.prng.shuffle([...ids]);
        const bridge = shuffled[0]!;
        const rest = shuffled.slice(1);
        const left = rest.slice(0, Math.ceil(rest.length / 2));
        const right = rest.slice(left.length);
        for (const a of left) for (const b of right) cut(a, b);
        description = `bridge: {${left.join(",")}} | {${right.join(",")}} joined only through ${bridge}`;
        break;
      }
      case "clients": {
        const { id, leader } = this.target();
        cut(CLIENTS, id);
        description = `clients cut off from server ${id}${leader ? " (leader)" : ""}`;
        break;
      }
    }
    this.cluster.setBlocked(pairs);
    return {
      kind: "partition",
      description,
      heal: () => {
        this.cluster.setBlocked([]);
        return Promise.resolve();
      },
    };
  }

  private async kill(): Promise<ActiveFault> {
    if (this.prng.chance(0.15)) {
      await this.cluster.restartAll();
      return { kind: "restart-all", description: "kill -9 every server, then restart them all", heal: () => Promise.resolve() };
    }
    const { id, leader } = this.target();
    await this.cluster.kill(id);
    return { kind: "kill", description: `kill -9 server ${id}${leader ? " (leader)" : ""}`, heal: () => this.cluster.restart(id) };
  }

  private pause(): ActiveFault {
    const { id, leader } = this.target();
    this.cluster.pause(id);
    return {
      kind: "pause",
      description: `SIGSTOP server ${id}${leader ? " (leader)" : ""}`,
      heal: () => {
        this.cluster.resume(id);
        return Promise.resolve();
      },
    };
  }

  private delay(): ActiveFault {
    const { id, leader } = this.target();
    const ms = this.prng.between(20, 300);
    this.cluster.setDelay([id], ms);
    return {
      kind: "delay",
      description: `delay every link of server ${id}${leader ? " (leader)" : ""} by ${ms} ms`,
      heal: () => {
        this.cluster.setDelay([], 0);
        return Promise.resolve();
      },
    };
  }

  private async clock(): Promise<ActiveFault> {
    const { id, leader } = this.target();
    const sign = this.prng.chance(0.5) ? 1 : -1;
    const who = `server ${id}${leader ? " (leader)" : ""}`;
    let description: string;
    if (this.prng.chance(0.5)) {
      const offsetMs = sign * this.prng.between(5_000, 120_000);
      await this.cluster.setClockSkew(id, { offsetMs });
      description = `${who}'s clock jumps ${offsetMs > 0 ? "ahead" : "back"} ${Math.abs(offsetMs / 1000).toFixed(0)} s`;
    } else {
      const deltaMs = sign * this.prng.between(5_000, 60_000);
      const periodMs = this.prng.between(50, 500);
      await this.cluster.setClockSkew(id, { strobe: { deltaMs, periodMs } });
      description = `${who}'s clock strobes ${deltaMs > 0 ? "+" : "-"}${Math.abs(deltaMs / 1000).toFixed(0)} s and back every ${periodMs} ms`;
    }
    return { kind: "clock", description, heal: () => this.cluster.setClockSkew(id, {}) };
  }

  /**
   * Kills a server the budget allows damaging, damages one of its files, and starts it again at the
   * heal; undefined (and a deferral recorded) when the budget allows none within a few tries.
   */
  private async corrupt(): Promise<ActiveFault | undefined> {
    const preferred = this.target();
    let reason = "";
    for (let attempt = 0; attempt < DAMAGE_TRIES && !this.stopping; attempt++) {
      if (attempt > 0) await this.sleep(DAMAGE_RETRY_MS);
      const outcome = await this.copies.exclusive(() => this.damageWithinBudget(preferred.id));
      if (typeof outcome !== "string") {
        const { id, done, passedOver } = outcome;
        const leader = id === preferred.id && preferred.leader;
        const instead = passedOver === undefined ? "" : ` (server ${preferred.id} passed over: ${passedOver})`;
        return {
          kind: "corrupt",
          description: `kill -9 server ${id}${leader ? " (leader)" : ""}, ${done}, start it again${instead}`,
          // One that refuses its damaged files stays down: the run's servers-alive verdict names it.
          heal: async () => {
            const logFrom = this.cluster.server(id).stderr.length;
            await this.cluster.restart(id).catch(() => undefined);
            this.copies.startedDamaged(id, logFrom);
          },
        };
      }
      reason = outcome;
    }
    const at = this.options.now();
    this.record({ kind: "corrupt-deferred", description: `no server may be damaged: ${reason}`, startedAt: at, endedAt: at });
    return undefined;
  }

  /**
   * Under the budget's lock: the first of `preferred` and the rest (in a random order) whose damage
   * leaves the configuration in force a quorum of good voters is killed and damaged. Otherwise why not.
   */
  private async damageWithinBudget(preferred: number): Promise<{ id: number; done: string; passedOver?: string } | string> {
    const roles = await this.rolesInForce();
    if (roles === undefined) return "the configuration in force could not be read";
    const voters = votersOf(roles);
    const shortfall = (id: number) => (roles.get(id) === "participant" ? this.copies.shortfall(voters, id) : undefined);
    const order = [preferred, ...this.prng.shuffle(this.cluster.ids.filter((id) => id !== preferred))];
    const id = order.find((candidate) => shortfall(candidate) === undefined);
    const passedOver = shortfall(preferred);
    if (id === undefined) return passedOver ?? "";
    await this.cluster.kill(id);
    const damage = this.prng.pick(DAMAGES);
    // The newest file of a kind, trying kinds in a random order: early on there may be no table or snapshot yet.
    for (const kind of this.prng.shuffle([...FILE_KINDS])) {
      const file = await fileOf(this.cluster.dataDir(id), kind).catch(() => undefined);
      if (file === undefined) continue;
      const what = await damageFile(file, damage, this.prng.nextUint32()).catch((error: unknown) => `${String(error)}`);
      this.copies.markDamaged(id);
      return { id, done: `${damage} in its ${kind} file (${what})`, ...(passedOver === undefined ? {} : { passedOver }) };
    }
    return { id, done: "nothing to damage", ...(passedOver === undefined ? {} : { passedOver }) };
  }

  /** The configuration in force: read back when the reconfiguration nemesis changes it, else the one the cluster started with. */
  private rolesInForce(): Promise<Roles | undefined> {
    if (this.membership !== undefined) return this.membership.inForce();
    return Promise.resolve(startingRoles(this.cluster));
  }

  private record(fault: FaultRecord): void {
    this.faults.push(fault);
    this.options.onFault?.(fault);
  }
}
