/**
 * LoadBalancer: picks one instance of a service from a live list (a ServiceCache) by a strategy.
 * Pure policy over whatever list the source holds now; it talks to no server itself.
 */
import { ZkError } from "../common/errors.js";
import type { ServiceInstance } from "./service-discovery.js";

/** How `LoadBalancer.next` picks: in turn by id, at random, or the lowest `payload.load` (ties in turn). */
export type BalancingStrategy = "round-robin" | "random" | "least-loaded";

/** Anything that knows the current instances (ServiceCache does). */
export interface InstanceSource {
  /** The instances to pick from, now. */
  instances(): readonly ServiceInstance[];
}

/** What a `LoadBalancer` takes. */
export interface LoadBalancerOptions {
  /** How it picks. */
  strategy: BalancingStrategy;
  /** A number in [0, 1), as Math.random (the default); inject one to make `random` deterministic. */
  random?: () => number;
}

/** The `load` an instance reports in its payload; instances that report none count as 0. */
export function loadOf(instance: ServiceInstance): number {
  const payload = instance.payload;
  if (typeof payload !== "object" || payload === null) return 0;
  const load = (payload as { load?: unknown }).load;
  return typeof load === "number" && Number.isFinite(load) ? load : 0;
}

/** Instances in a stable order (by id), so that round-robin cycles whatever order the source lists. */
function byId(instances: readonly ServiceInstance[]): ServiceInstance[] {
  return [...instances].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The `turn`-th instance in id order, cycling. */
export function pickRoundRobin(instances: readonly ServiceInstance[], turn: number): ServiceInstance | null {
  if (instances.length === 0) return null;
  const sorted = byId(instances);
  return sorted[turn % sorted.length]!;
}

/** The instance at `draw` ∈ [0, 1) of the id-ordered list. */
export function pickRandom(instances: readonly ServiceInstance[], draw: number): ServiceInstance | null {
  if (instances.length === 0) return null;
  if (!(draw >= 0 && draw < 1)) throw new ZkError("BADARGUMENTS", `random() must return a number in [0, 1), got ${draw}`);
  const sorted = byId(instances);
  return sorted[Math.floor(draw * sorted.length)]!;
}

/** An instance with the lowest load; ties are taken in turn (round-robin among the least loaded). */
export function pickLeastLoaded(instances: readonly ServiceInstance[], turn: number): ServiceInstance | null {
  if (instances.length === 0) return null;
  const sorted = byId(instances);
  const lowest = Math.min(...sorted.map(loadOf));
  const least = sorted.filter((instance) => loadOf(instance) === lowest);
  return least[turn % least.length]!;
}

/**
 * Chooses an instance for each request. `next()` returns one of the source's current instances, or
 * null when it has none (e.g. a ServiceCache whose session was lost reports none, so a balancer
 * never hands out an instance it can no longer vouch for).
 */
export class LoadBalancer {
  private turn = 0;
  private readonly random: () => number;

  constructor(
    private readonly source: InstanceSource,
    private readonly options: LoadBalancerOptions,
  ) {
    const strategies: BalancingStrategy[] = ["round-robin", "random", "least-loaded"];
    if (!strategies.includes(options.strategy)) throw new ZkError("BADARGUMENTS", `unknown balancing strategy ${String(options.strategy)}`);
    this.random = options.random ?? Math.random;
  }

  /** How it picks. */
  get strategy(): BalancingStrategy {
    return this.options.strategy;
  }

  /** The instance to use for the next call; null when there is none. */
  next(): ServiceInstance | null {
    const instances = this.source.instances();
    switch (this.options.strategy) {
      case "round-robin":
        return pickRoundRobin(instances, this.nextTurn());
      case "random":
        return instances.length === 0 ? null : pickRandom(instances, this.random());
      case "least-loaded":
        return pickLeastLoaded(instances, this.nextTurn());
    }
  }

  private nextTurn(): number {
    const turn = this.turn;
    this.turn = (this.turn + 1) % Number.MAX_SAFE_INTEGER;
    return turn;
  }
}
