/**
 * Fault injection at the disk boundary, for tests only. The durable side asks a `DiskFaults` hook
 * before each database or snapshot write; when the hook says so, the promise of that write rejects
 * with an error shaped like the real one (LevelDB's `LEVEL_IO_ERROR`, Node's `EIO`), so everything
 * above the boundary — group commit, fail-stop, the server's fatal handler — runs exactly the code
 * a failing disk would make it run. Nothing here reads the environment: the server layer decides
 * whether a hook is installed (src/server/disk-faults.ts).
 */

/** Which durable write a fault hook is asked about. */
export type DiskWriteKind =
  /** One group-commit `sync: true` batch of txn log records. */
  | "append"
  /** A stable number (Zab's acceptedEpoch / currentEpoch), `sync: true`. */
  | "stable"
  /** One batch of deletes of a log truncation (Zab TRUNC, SNAP install). */
  | "truncate"
  /** The purge bound or the purge itself (retention after a snapshot). */
  | "purge"
  /** One snapshot file save (background snapshot or SNAP install). */
  | "snapshot";

/**
 * When an injected fault strikes. `beforeWrite`: the write never reaches the disk (a failed
 * write(2)). `afterWrite`: the data reaches the disk and then the sync reports an I/O error, as a
 * failed fsync leaves it: whether the data survives is unknown to the caller, so it must not be
 * acknowledged either way.
 */
export type InjectedFaultTiming = "beforeWrite" | "afterWrite";

export interface DiskFaults {
  /** Asked once per write; `true` means `beforeWrite`, `false` lets the write run. */
  failWrite?: (kind: DiskWriteKind) => boolean | InjectedFaultTiming;
}

/** The error an injected fault rejects with: LevelDB's I/O error for the log, Node's EIO for files. */
export class InjectedWriteFault extends Error {
  readonly code: "LEVEL_IO_ERROR" | "EIO";
  /** Lets a log reader tell an injected fault from a real one; code never depends on it. */
  readonly injected = true;
  constructor(
    readonly kind: DiskWriteKind,
    readonly timing: InjectedFaultTiming,
  ) {
    const what = timing === "afterWrite" ? "sync failed after the write" : "write failed";
    super(
      kind === "snapshot"
        ? `EIO: i/o error, ${timing === "afterWrite" ? "fsync" : "write"} (injected test fault: snapshot ${what})`
        : `IO error: injected test fault: ${kind} ${what}`,
    );
    this.name = "InjectedWriteFault";
    this.code = kind === "snapshot" ? "EIO" : "LEVEL_IO_ERROR";
  }
}

/** What the hook answers for one write of `kind`, normalised; undefined: no fault. */
export function injectedFaultFor(faults: DiskFaults | undefined, kind: DiskWriteKind): InjectedFaultTiming | undefined {
  const answer = faults?.failWrite?.(kind) ?? false;
  if (answer === false) return undefined;
  return answer === true ? "beforeWrite" : answer;
}

/**
 * Runs one database write through the fault hook: it rejects in place of the write, or after it,
 * exactly where the database's own promise would reject on a real I/O error.
 */
export async function writeWithFaults(faults: DiskFaults | undefined, kind: DiskWriteKind, run: () => Promise<void>): Promise<void> {
  const timing = injectedFaultFor(faults, kind);
  if (timing === "beforeWrite") throw new InjectedWriteFault(kind, timing);
  await run();
  if (timing === "afterWrite") throw new InjectedWriteFault(kind, timing);
}
