import { setTimeout as sleepTimer } from "node:timers/promises";

/** Time as the driver sees it; tests substitute a virtual clock. */
export interface Clock {
  /** Monotonic milliseconds (fractional allowed). */
  now(): number;
  /** Resolves after `ms`, or at once (never rejecting) when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realClock: Clock = {
  now: () => performance.now(),
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return;
    try {
      await sleepTimer(ms, undefined, signal === undefined ? undefined : { signal });
    } catch (error) {
      if ((error as { name?: unknown }).name !== "AbortError") throw error;
    }
  },
};

/** Uniform numbers in [0, 1) from a 32-bit seed (mulberry32): cheap and reproducible. */
export type Random = () => number;

export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
