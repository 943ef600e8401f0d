/**
 * TEST ONLY: disk fault injection for the fail-stop tests (test/integration/disk-fault.test.ts).
 * Never set this in production: a server with it armed fails one of its durable writes on purpose
 * and stops (exit code 70).
 *
 *   CORRAL_TEST_DISK_FAULT=<rule>[,<rule>...]
 *   <rule>   = <target>[:<n>][:<when>]
 *   <target> = append    one group-commit `sync: true` batch of txn log records
 *            | epoch     one write of Zab's acceptedEpoch or currentEpoch
 *            | truncate  one batch of deletes of a log truncation (Zab TRUNC, SNAP install)
 *            | purge     one write of log retention (after a snapshot)
 *            | snapshot  one snapshot file save (background, or a SNAP install)
 *   <n>      = the n-th write of that target since the process started; default 1 (the next one)
 *   <when>   = before    the write never reaches the disk (default)
 *            | after     the write reaches the disk, then its sync reports an I/O error
 *
 * e.g. `append:3` (the third log batch fails), `epoch` (the next epoch write fails),
 * `append:5:after,snapshot`. Each rule fires once. The failure is injected at the LevelDB /
 * snapshot-file boundary (src/store/disk/faults.ts): the write's promise rejects with an error
 * shaped like LevelDB's `LEVEL_IO_ERROR` (Node's `EIO` for snapshot files), so the server runs
 * exactly the code a failing disk would make it run.
 *
 * The variable is read by the CLI (src/cli/main.ts), never inside src/store; the server logs a
 * warning at start-up whenever a plan is armed.
 */
import type { DiskFaults, DiskWriteKind, InjectedFaultTiming } from "../store/disk/faults.js";
import { ConfigError } from "./config-error.js";

export const DISK_FAULT_ENV = "CORRAL_TEST_DISK_FAULT";

export type DiskFaultTarget = "append" | "epoch" | "truncate" | "purge" | "snapshot";

const KIND_OF_TARGET: Record<DiskFaultTarget, DiskWriteKind> = {
  append: "append",
  epoch: "stable",
  truncate: "truncate",
  purge: "purge",
  snapshot: "snapshot",
};

const TIMING_OF_WHEN: Record<string, InjectedFaultTiming> = { before: "beforeWrite", after: "afterWrite" };

export interface DiskFaultRule {
  target: DiskFaultTarget;
  /** 1-based: the n-th write of the target's kind since start-up. */
  nth: number;
  timing: InjectedFaultTiming;
}

/** Rules beyond this are a typo, not a test. */
const RULES_MAX = 16;
/** A write count a test can reach; larger is a typo too. */
const NTH_MAX = 1_000_000;

/** Parses the variable's value; throws ConfigError (the CLI exits 2 with its message) on bad syntax. */
export function parseDiskFaultSpec(spec: string): DiskFaultRule[] {
  const rules: DiskFaultRule[] = [];
  const parts = spec.split(",").map((part) => part.trim());
  if (parts.length > RULES_MAX) throw new ConfigError(DISK_FAULT_ENV, `at most ${RULES_MAX} rules`);
  for (const part of parts) {
    const fields = part.split(":");
    const [target, ...rest] = fields;
    if (target === undefined || !Object.hasOwn(KIND_OF_TARGET, target)) {
      throw new ConfigError(DISK_FAULT_ENV, `"${part}": the target must be one of ${Object.keys(KIND_OF_TARGET).join(", ")}`);
    }
    let nth = 1;
    let timing: InjectedFaultTiming = "beforeWrite";
    if (rest[0] !== undefined && /^\d+$/.test(rest[0])) {
      nth = Number(rest.shift());
      if (!(nth >= 1 && nth <= NTH_MAX)) throw new ConfigError(DISK_FAULT_ENV, `"${part}": n must be in 1..${NTH_MAX}`);
    }
    if (rest[0] !== undefined) {
      const when = TIMING_OF_WHEN[rest.shift()!];
      if (when === undefined) throw new ConfigError(DISK_FAULT_ENV, `"${part}": the last field must be a count, "before" or "after"`);
      timing = when;
    }
    if (rest.length > 0) throw new ConfigError(DISK_FAULT_ENV, `"${part}": expected <target>[:<n>][:before|after]`);
    rules.push({ target: target as DiskFaultTarget, nth, timing });
  }
  return rules;
}

/** Counts the writes of each kind and fails the ones the rules name (each rule once). */
export class DiskFaultPlan implements DiskFaults {
  private readonly writesSeen = new Map<DiskWriteKind, number>();
  private readonly pending: DiskFaultRule[];

  constructor(
    /** The variable's value, for the start-up warning. */
    readonly spec: string,
    rules: readonly DiskFaultRule[],
  ) {
    this.pending = [...rules];
  }

  static parse(spec: string): DiskFaultPlan {
    return new DiskFaultPlan(spec, parseDiskFaultSpec(spec));
  }

  failWrite(kind: DiskWriteKind): boolean | InjectedFaultTiming {
    const seen = (this.writesSeen.get(kind) ?? 0) + 1;
    this.writesSeen.set(kind, seen);
    const index = this.pending.findIndex((rule) => KIND_OF_TARGET[rule.target] === kind && rule.nth === seen);
    if (index < 0) return false;
    const [rule] = this.pending.splice(index, 1);
    return rule!.timing;
  }
}

/** The plan `env` arms, or undefined when the variable is unset or empty (the normal case). */
export function diskFaultPlanFromEnv(env: Readonly<Record<string, string | undefined>>): DiskFaultPlan | undefined {
  const spec = env[DISK_FAULT_ENV]?.trim();
  return spec === undefined || spec === "" ? undefined : DiskFaultPlan.parse(spec);
}
