/**
 * Whose turn it is in a lock directory: pure functions over child names, no I/O. Every lock
 * recipe (exclusive, read, write) keeps one sequential-ephemeral node per contender in a
 * directory; the policy says which children compete, whether a contender holds the lock, and
 * otherwise the single node whose deletion can change its answer (the only node it watches, so a
 * release wakes exactly one waiter).
 */
import { sortBySequence, withoutProtectedPrefix } from "./common.js";

/** The kinds of contender node, by the name before the sequence number. */
export type ContenderKind = "lock" | "read" | "write";

/** A contender node name taken apart: `[_c_<uuid>-]<kind>-<10 digits>`. */
export interface ContenderName {
  kind: ContenderKind;
  sequence: number;
}

const CONTENDER = /^(lock|read|write)-(\d{10})$/;

/** The kind and sequence of a contender node name, or undefined for any other child. */
export function parseContender(name: string): ContenderName | undefined {
  const match = CONTENDER.exec(withoutProtectedPrefix(name));
  if (!match) return undefined;
  return { kind: match[1] as ContenderKind, sequence: Number(match[2]) };
}

/** A contender's position: it holds the lock, it waits for one node to go, or its node is gone. */
export type Turn = { kind: "granted" } | { kind: "wait"; on: string } | { kind: "gone" };

export interface LockPolicy {
  /** The name this contender's node gets (before ZooKeeper's sequence suffix): "lock-", "read-", "write-". */
  readonly nodeName: string;
  /** Which children of the directory compete with this contender. */
  readonly competesWith: readonly ContenderKind[];
  /** Decides the turn of `mine` among `contenders`, which are already in sequence order. */
  decide(contenders: readonly string[], mine: string): Turn;
}

/** The children that compete under `policy`, in sequence order. */
export function contendersOf(policy: LockPolicy, children: readonly string[]): string[] {
  return sortBySequence(
    children.filter((name) => {
      const parsed = parseContender(name);
      return parsed !== undefined && policy.competesWith.includes(parsed.kind);
    }),
  );
}

/** First in line holds; everyone else watches the node just before its own. */
function firstInLine(contenders: readonly string[], mine: string): Turn {
  const index = contenders.indexOf(mine);
  if (index < 0) return { kind: "gone" };
  if (index === 0) return { kind: "granted" };
  return { kind: "wait", on: contenders[index - 1]! };
}

/** Exclusive lock (Lock, RevocableLock, the Semaphore's internal lock): `lock-` nodes only. */
export const EXCLUSIVE_POLICY: LockPolicy = { nodeName: "lock-", competesWith: ["lock"], decide: firstInLine };

/** The write side of a ReadWriteLock: waits for every lower node, read or write. */
export const WRITE_POLICY: LockPolicy = { nodeName: "write-", competesWith: ["read", "write"], decide: firstInLine };

/**
 * The read side of a ReadWriteLock: readers share, so a reader is held up only by writers ahead
 * of it. It watches just the nearest of them; when that one goes (released, or abandoned while
 * waiting itself) the reader looks again and either holds or watches the next writer down.
 */
export const READ_POLICY: LockPolicy = {
  nodeName: "read-",
  competesWith: ["read", "write"],
  decide(contenders, mine) {
    const index = contenders.indexOf(mine);
    if (index < 0) return { kind: "gone" };
    for (let i = index - 1; i >= 0; i--) {
      const name = contenders[i]!;
      if (parseContender(name)?.kind === "write") return { kind: "wait", on: name };
    }
    return { kind: "granted" };
  },
};
