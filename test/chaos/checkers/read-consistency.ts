/**
 * ZooKeeper's guarantees for plain reads, which a server answers from its own replica and so are
 * not linearizable (linearizable-register.ts leaves them out). What does hold:
 *  (a) a read returns a state some write produced: no invented value, no value of a write that
 *      definitively failed, and the version and mzxid that write was answered with;
 *  (b) within a session the versions seen of a key never go back (a session only ever moves to a
 *      server at least as up to date as what it has seen);
 *  (c) within a session, having seen zxid z means having seen every write with zxid ≤ z, on every
 *      key (the replicas apply one zxid-ordered log, so a server's state is a prefix of it).
 * Guarantees are per session: a worker that moves to a new session after expiry starts afresh.
 */
import { INITIAL_VALUE, type CasOp, type Op, type ReadOp, type Verdict, type WriteOp } from "../history.js";
import { describeOp, Findings, parseZxid } from "./format.js";

export const READ_CONSISTENCY_CHECKER = "read-consistency";

type RegisterWrite = WriteOp | CasOp;
type SessionOp = RegisterWrite | ReadOp;

/** The newest version of a key among ok writes up to some zxid, and the write that made it. */
interface ZxidPrefixMax {
  zxid: bigint;
  maxVersion: number;
  maxBy: RegisterWrite;
}

export function checkReadConsistency(ops: readonly Op[]): Verdict {
  const findings = new Findings();
  const writerOf = new Map<string, Map<string, RegisterWrite>>();
  const okWritesByKey = new Map<string, { zxid: bigint; op: RegisterWrite }[]>();
  const sessions = new Map<string, SessionOp[]>();
  /** Zxid of every ok answer, parsed once; an op with an unparsable zxid is reported and skipped. */
  const zxidOf = new Map<SessionOp, bigint>();
  let readsChecked = 0;

  for (const op of ops) {
    if (op.f !== "write" && op.f !== "cas" && op.f !== "read") continue;
    let sessionOps = sessions.get(op.session);
    if (sessionOps === undefined) sessions.set(op.session, (sessionOps = []));
    sessionOps.push(op);
    if (op.outcome === "ok") {
      const zxid = op.result === undefined ? undefined : parseZxid(op.result.mzxid);
      if (zxid === undefined) findings.add(`history malformed: ok op without a result carrying a decimal mzxid: ${describeOp(op)}`);
      else zxidOf.set(op, zxid);
    }
    // A malformed write still wrote its value: keep it as a writer so reads of it are not blamed.
    if (op.f === "read") continue;

    let writers = writerOf.get(op.key);
    if (writers === undefined) writerOf.set(op.key, (writers = new Map<string, RegisterWrite>()));
    // Reads are matched to writes by value; a repeated value would make that ambiguous.
    if (writers.has(op.value) || op.value === INITIAL_VALUE) {
      findings.add(`history malformed: value ${JSON.stringify(op.value)} is not unique on key ${JSON.stringify(op.key)}: ${describeOp(op)}`);
    } else {
      writers.set(op.value, op);
    }
    if (op.outcome === "ok" && zxidOf.has(op)) {
      let okWrites = okWritesByKey.get(op.key);
      if (okWrites === undefined) okWritesByKey.set(op.key, (okWrites = []));
      okWrites.push({ zxid: zxidOf.get(op)!, op });
    }
  }

  // (a) Every ok read returns what some write produced.
  /** What the first read of an init or unknown-outcome value saw, to hold later reads of it to. */
  const firstSeen = new Map<string, ReadOp>();
  for (const sessionOps of sessions.values()) {
    for (const read of sessionOps) {
      if (read.f !== "read" || !zxidOf.has(read)) continue;
      readsChecked++;
      const seen = read.result!;
      if (seen.value === INITIAL_VALUE) {
        if (seen.version !== 0) findings.add(`read of the initial value at version ${seen.version}, not 0: ${describeOp(read)}`);
      } else {
        const writer = writerOf.get(read.key)?.get(seen.value);
        if (writer === undefined) {
          findings.add(`read of a value no op wrote: ${describeOp(read)}`);
          continue;
        }
        checkReadAgainstWriter(read, writer, findings, zxidOf);
        if (writer.outcome === "ok") continue;
      }
      // One write produces one (version, mzxid); every read of it must agree with the others.
      const name = `${read.key}\u0000${seen.value}`;
      const first = firstSeen.get(name);
      if (first === undefined) firstSeen.set(name, read);
      else if (first.result!.version !== seen.version || zxidOf.get(first) !== zxidOf.get(read)) {
        findings.add(`two reads of the same write disagree on its version or mzxid: ${describeOp(first)} and ${describeOp(read)}`);
      }
    }
  }

  const prefixMaxByKey = new Map<string, ZxidPrefixMax[]>();
  for (const [key, okWrites] of okWritesByKey) {
    okWrites.sort((a, b) => (a.zxid < b.zxid ? -1 : a.zxid > b.zxid ? 1 : 0));
    const prefix: ZxidPrefixMax[] = [];
    for (const { zxid, op } of okWrites) {
      const last = prefix[prefix.length - 1];
      const version = op.result!.version;
      prefix.push(
        last !== undefined && last.maxVersion >= version ? { zxid, maxVersion: last.maxVersion, maxBy: last.maxBy } : { zxid, maxVersion: version, maxBy: op },
      );
    }
    prefixMaxByKey.set(key, prefix);
  }

  // (b) and (c), walking each session's ops in the order its worker issued them.
  for (const [session, sessionOps] of sessions) {
    sessionOps.sort((a, b) => a.invokedAt - b.invokedAt || a.id - b.id);
    const lastSeen = new Map<string, SessionOp>();
    let floor: { zxid: bigint; op: SessionOp } | undefined;
    for (const op of sessionOps) {
      const zxid = zxidOf.get(op);
      if (zxid === undefined) continue;
      const version = op.result!.version;
      const before = lastSeen.get(op.key);
      if (before !== undefined) {
        const seenVersion = before.result!.version;
        // A write makes a version newer than any that exists, and what the session saw existed.
        if (op.f === "read" ? version < seenVersion : version <= seenVersion) {
          findings.add(`session ${session} went back in time on key ${JSON.stringify(op.key)}: after ${describeOp(before)}, ${describeOp(op)}`);
        }
      }
      if (op.f === "read" && floor !== undefined) {
        const newest = newestWriteUpTo(prefixMaxByKey.get(op.key), floor.zxid);
        if (newest !== undefined && version < newest.maxVersion) {
          findings.add(
            `session ${session} missed a write its view already includes: after ${describeOp(floor.op)}, ` +
              `${describeOp(op)} is older than ${describeOp(newest.maxBy)}, whose zxid is not above the session's`,
          );
        }
      }
      if (before === undefined || version >= before.result!.version) lastSeen.set(op.key, op);
      if (floor === undefined || zxid > floor.zxid) floor = { zxid, op };
    }
  }

  return {
    checker: READ_CONSISTENCY_CHECKER,
    valid: findings.total === 0,
    violations: findings.list(),
    stats: { readsChecked, sessions: sessions.size },
  };
}

function checkReadAgainstWriter(read: ReadOp, writer: RegisterWrite, findings: Findings, zxidOf: Map<SessionOp, bigint>): void {
  const seen = read.result!;
  if (writer.outcome === "fail") {
    findings.add(`read of a value whose write definitively failed: ${describeOp(read)} saw ${describeOp(writer)}`);
    return;
  }
  // A read cannot observe a write invoked after the read had already been answered.
  if (read.completedAt !== undefined && read.completedAt < writer.invokedAt) {
    findings.add(`read of a value before its write was invoked: ${describeOp(read)} saw ${describeOp(writer)}`);
  }
  if (writer.outcome === "ok") {
    if (!zxidOf.has(writer)) return; // reported as malformed; its answer cannot be compared
    if (seen.version !== writer.result!.version || zxidOf.get(writer) !== zxidOf.get(read)) {
      findings.add(`read's version or mzxid differs from the write's answer: ${describeOp(read)} saw ${describeOp(writer)}`);
    }
    return;
  }
  // Unknown outcome: the version it would have made is still bounded by what it is.
  const possible = writer.f === "cas" ? seen.version === writer.expectedVersion + 1 : seen.version >= 1;
  if (!possible) findings.add(`read's version cannot be the one this write made: ${describeOp(read)} saw ${describeOp(writer)}`);
}

/** The prefix-max entry of the last ok write with zxid ≤ `zxid`, by binary search. */
function newestWriteUpTo(prefix: ZxidPrefixMax[] | undefined, zxid: bigint): ZxidPrefixMax | undefined {
  if (prefix === undefined) return undefined;
  let low = 0;
  let high = prefix.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (prefix[mid]!.zxid <= zxid) low = mid + 1;
    else high = mid;
  }
  return low === 0 ? undefined : prefix[low - 1];
}
