/**
 * The watch workload, judged by ZooKeeper's semantics. Every watcher sees the same transitions:
 * one version holds one value at one zxid, whoever reads it, and that value was written (or is the
 * initial one). Within a session a watcher never goes back: its reads' versions do not decrease,
 * its events' zxids increase, and a one-shot watcher's read after an event told while connected
 * shows at least the change that fired it. None is missed: a persistent watch that stays connected between two events
 * was told of every acknowledged write between them (a disconnection may fold several changes into
 * one event, as ZooKeeper's does); and every watcher still connected at the end has caught up with
 * the last write acknowledged a little before the end (a one-shot watcher sees a subsequence of the
 * versions, so its reads count too).
 */
import type { Op, Verdict, WatchEventOp, WatchLostOp, WatchReadOp, WatchWriteOp } from "../history.js";
import { describeOp, Findings, parseZxid, verdictOf } from "./format.js";

export const WATCHES_CHECKER = "watches";

/** A write acknowledged this long before the history ends must have reached every connected watcher. */
export const CATCH_UP_MS = 2_000;

type WatcherOp = WatchReadOp | WatchEventOp | WatchLostOp;

export function checkWatches(ops: readonly Op[], initialValue: string): Verdict {
  const findings = new Findings();
  const writes = ops.filter((op): op is WatchWriteOp => op.f === "watch-write");
  const acked = writes.filter((op) => op.outcome === "ok" && op.result !== undefined);
  const watcherOps = ops.filter((op): op is WatcherOp => op.f === "watch-read" || op.f === "watch-event" || op.f === "watch-lost");
  const reads = watcherOps.filter((op): op is WatchReadOp => op.f === "watch-read" && op.outcome === "ok" && op.result !== undefined);

  checkStates(writes, reads, initialValue, findings);
  const ackedZxids = acked.map((op) => ({ op, zxid: parseZxid(op.result!.mzxid) ?? -1n })).sort((a, b) => (a.zxid < b.zxid ? -1 : a.zxid > b.zxid ? 1 : 0));

  const byWatcher = new Map<number, WatcherOp[]>();
  for (const op of watcherOps) {
    let list = byWatcher.get(op.process);
    if (list === undefined) byWatcher.set(op.process, (list = []));
    list.push(op);
  }
  const end = ops.reduce((latest, op) => Math.max(latest, op.completedAt ?? op.invokedAt), 0);
  for (const [process, list] of byWatcher) {
    const sessions = new Map<string, WatcherOp[]>();
    for (const op of list) {
      let ofSession = sessions.get(op.session);
      if (ofSession === undefined) sessions.set(op.session, (ofSession = []));
      ofSession.push(op);
    }
    for (const ofSession of sessions.values()) checkSession(ofSession, ackedZxids, findings);
    checkCaughtUp(process, list, acked, end, findings);
  }

  const events = watcherOps.filter((op): op is WatchEventOp => op.f === "watch-event");
  return verdictOf(WATCHES_CHECKER, findings, {
    writes: acked.length,
    writesUnknown: writes.filter((op) => op.outcome === "unknown").length,
    watchers: byWatcher.size,
    oneShotEvents: events.filter((op) => op.mode === "one-shot").length,
    persistentEvents: events.filter((op) => op.mode === "persistent").length,
    reads: reads.length,
    connectionsLost: watcherOps.filter((op) => op.f === "watch-lost").length,
  });
}

/** One version, one value, one zxid — across the writer's answers and every watcher's reads. */
function checkStates(writes: readonly WatchWriteOp[], reads: readonly WatchReadOp[], initialValue: string, findings: Findings): void {
  const writeOf = new Map(writes.map((op) => [op.value, op]));
  const byVersion = new Map<number, { value: string; mzxid: string; op: Op }>();
  const record = (version: number, value: string, mzxid: string, op: Op) => {
    const seen = byVersion.get(version);
    if (seen === undefined) byVersion.set(version, { value, mzxid, op });
    else if (seen.value !== value || seen.mzxid !== mzxid)
      findings.add(
        `version ${version} seen as ${JSON.stringify(seen.value)} at zxid ${seen.mzxid} (${describeOp(seen.op)}) and as ${JSON.stringify(value)} at zxid ${mzxid}: ${describeOp(op)}`,
      );
  };
  for (const op of writes) if (op.outcome === "ok" && op.result !== undefined) record(op.result.version, op.value, op.result.mzxid, op);
  for (const op of reads) {
    const { value, version, mzxid } = op.result!;
    record(version, value, mzxid, op);
    if (value === initialValue) {
      if (version !== 0) findings.add(`the initial value read at version ${version}: ${describeOp(op)}`);
      continue;
    }
    const write = writeOf.get(value);
    if (write === undefined) findings.add(`a watcher read ${JSON.stringify(value)}, which nobody wrote: ${describeOp(op)}`);
    else if (write.outcome === "fail") findings.add(`a watcher read the value of a write that definitively failed: ${describeOp(write)}; ${describeOp(op)}`);
    else if (write.result !== undefined && write.result.version !== version)
      findings.add(`${describeOp(op)} reads the value written as version ${write.result.version}`);
  }
}

/** Within one session, in the order the watcher saw things. */
function checkSession(ops: readonly WatcherOp[], ackedZxids: readonly { op: WatchWriteOp; zxid: bigint }[], findings: Findings): void {
  let lastRead: WatchReadOp | undefined;
  let lastEvent: WatchEventOp | undefined;
  /** The event a one-shot watcher must see reflected in its next read. */
  let pendingEvent: WatchEventOp | undefined;
  let connectedSinceLastEvent = true;
  /** Whether the one-shot watch armed by the last read has been set on this connection all along. */
  let connectedSinceArmed = true;
  for (const op of ops) {
    if (op.f === "watch-lost") {
      connectedSinceLastEvent = false;
      connectedSinceArmed = false;
      continue;
    }
    if (op.f === "watch-read") {
      if (op.outcome !== "ok" || op.result === undefined) continue;
      if (lastRead !== undefined && op.result.version < lastRead.result!.version)
        findings.add(`a watcher's read went back within its session: ${describeOp(lastRead)}; then ${describeOp(op)}`);
      if (pendingEvent !== undefined && (parseZxid(op.result.mzxid) ?? -1n) < BigInt(pendingEvent.zxid)) {
        findings.add(`a one-shot watcher read data older than the change it was told of (zxid ${pendingEvent.zxid}): ${describeOp(op)}`);
      }
      pendingEvent = undefined;
      lastRead = op;
      connectedSinceArmed = true;
      continue;
    }
    const zxid = parseZxid(op.zxid);
    if (zxid === undefined) continue; // an event without a txn's zxid (ZooKeeper's -1)
    if (lastEvent !== undefined) {
      const previous = BigInt(lastEvent.zxid);
      if (zxid <= previous) findings.add(`a watcher was told of zxid ${op.zxid} after zxid ${lastEvent.zxid} in one session (process ${op.process})`);
      else if (op.mode === "persistent" && connectedSinceLastEvent) {
        const missed = ackedZxids.filter(({ zxid: z }) => z > previous && z < zxid);
        for (const { op: write } of missed.slice(0, 3)) {
          findings.add(`a persistent watcher connected throughout was told of zxid ${lastEvent.zxid}, then ${op.zxid}, missing ${describeOp(write)}`);
        }
      }
    }
    // An event fired on reconnection (the server found the key changed since the client last
    // heard) carries the server's latest zxid, not the change's: only one told while connected
    // names the change.
    if (op.mode === "one-shot") pendingEvent = connectedSinceArmed ? op : undefined;
    lastEvent = op;
    connectedSinceLastEvent = true;
  }
}

/**
 * The last write acknowledged at least CATCH_UP_MS before the end has reached every watcher whose
 * session began before it and whose connection held from its invocation to the end.
 */
function checkCaughtUp(process: number, ops: readonly WatcherOp[], acked: readonly WatchWriteOp[], end: number, findings: Findings): void {
  let target: WatchWriteOp | undefined;
  for (const op of acked) {
    if (op.completedAt! > end - CATCH_UP_MS) continue;
    if (target === undefined || BigInt(op.result!.mzxid) > BigInt(target.result!.mzxid)) target = op;
  }
  const last = ops[ops.length - 1];
  if (target === undefined || last === undefined) return;
  const session = ops.filter((op) => op.session === last.session);
  if (session[0]!.invokedAt >= target.invokedAt) return; // a session begun after the write is told of later changes only
  if (session.some((op) => op.f === "watch-lost" && op.invokedAt >= target.invokedAt)) return;
  const wanted = BigInt(target.result!.mzxid);
  const caughtUp = session.some(
    (op) =>
      (op.f === "watch-event" && (parseZxid(op.zxid) ?? -1n) >= wanted) ||
      (op.f === "watch-read" && op.mode === "one-shot" && op.outcome === "ok" && BigInt(op.result!.mzxid) >= wanted),
  );
  if (!caughtUp) findings.add(`watcher p${process} (${last.mode}), connected throughout, never learned of ${describeOp(target)}`);
}
