/**
 * TEST ONLY: a wall clock that a test can jump or strobe, for the chaos suite's clock nemesis
 * (test/chaos/nemesis.ts). Never set this in production.
 *
 *   CORRAL_TEST_CLOCK_FILE=<path>
 *
 * The server then reads the replica's clock as the system clock plus a skew it takes from that
 * file, polled every CLOCK_FILE_POLL_MS. The file holds one JSON object:
 *
 *   {"offsetMs": -45000}                               a jump: the clock reads 45 s early
 *   {"strobe": {"deltaMs": 30000, "periodMs": 200}}    a strobe: +30 s and back, every 200 ms
 *   {} or no file                                      no skew
 *
 * A file that does not parse leaves the skew as it was (a test writing it may be caught halfway).
 * The variable is read by the CLI (src/cli/main.ts), never inside the deterministic core; the
 * server logs a warning at start-up whenever it is set.
 */
import { readFile } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import type { Clock } from "../replica/ports.js";
import { systemClock } from "./runtime-ports.js";

export const TEST_CLOCK_ENV = "CORRAL_TEST_CLOCK_FILE";
const CLOCK_FILE_POLL_MS = 100;
/** Skews beyond a day are a typo, not a test. */
const SKEW_MS_MAX = 86_400_000;

export type ClockSkew = { kind: "none" } | { kind: "offset"; offsetMs: number } | { kind: "strobe"; deltaMs: number; periodMs: number };

const isSkew = (n: unknown): n is number => typeof n === "number" && Number.isFinite(n) && Math.abs(n) <= SKEW_MS_MAX;

/** The skew `text` describes, or undefined when it describes none that makes sense. */
export function parseClockSkew(text: string): ClockSkew | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { offsetMs, strobe } = value as { offsetMs?: unknown; strobe?: { deltaMs?: unknown; periodMs?: unknown } };
  if (offsetMs !== undefined) return isSkew(offsetMs) ? { kind: "offset", offsetMs } : undefined;
  if (strobe !== undefined) {
    const { deltaMs, periodMs } = strobe;
    return isSkew(deltaMs) && isSkew(periodMs) && periodMs >= 1 ? { kind: "strobe", deltaMs, periodMs } : undefined;
  }
  return { kind: "none" };
}

/** How far `skew` moves the clock at monotonic time `monotonicMs`. */
export function skewAt(skew: ClockSkew, monotonicMs: number): number {
  switch (skew.kind) {
    case "none":
      return 0;
    case "offset":
      return skew.offsetMs;
    case "strobe":
      return Math.floor(monotonicMs / skew.periodMs) % 2 === 0 ? 0 : skew.deltaMs;
  }
}

/** The system clock skewed as the file says; polling stops with the process (the timer is unref'd). */
export function skewedClock(file: string): Clock {
  let skew: ClockSkew = { kind: "none" };
  let reading = false;
  const poll = () => {
    if (reading) return;
    reading = true;
    readFile(file, "utf8")
      .then(
        (text) => (skew = parseClockSkew(text) ?? skew),
        () => (skew = { kind: "none" }),
      )
      .finally(() => (reading = false));
  };
  poll();
  setInterval(poll, CLOCK_FILE_POLL_MS).unref();
  return {
    nowMs: () => systemClock.nowMs(),
    wallMs: () => systemClock.wallMs() + skewAt(skew, performance.now()),
    every: (intervalMs, run) => systemClock.every(intervalMs, run),
  };
}
