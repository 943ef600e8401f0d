/**
 * A tiny synchronous driver for Zab scenario tests: servers with in-memory logs and epochs, a FIFO
 * wire per pair, persist actions made durable on demand (or at once). Txn records are opaque
 * bytes here; the "tree" is the list of applied zxids, and a snapshot is that list encoded.
 */
import { createZab, type ZabCore } from "../../src/consensus/zab.js";
import type { PersistAction, ZabEvent, ZabInput, ZabReady } from "../../src/consensus/core-io.js";
import type { LogRecord, QuorumMessage } from "../../src/consensus/messages.js";
import { QuorumVerifier } from "../../src/consensus/quorum.js";
import { formatZxid } from "../../src/store/zxid.js";

export interface HarnessServer {
  id: number;
  acceptedEpoch: number;
  currentEpoch: number;
  log: LogRecord[];
  /** Applied zxids, in order: the "tree". */
  applied: number[];
  pendingPersist: PersistAction[];
  autoDurable: boolean;
  zab: ZabCore | undefined;
  stepDown: string | undefined;
  serving: boolean;
}

export class Harness {
  readonly servers = new Map<number, HarnessServer>();
  readonly quorum: QuorumVerifier;
  readonly trace: string[] = [];
  private readonly wire: { from: number; to: number; message: QuorumMessage }[] = [];
  nowMs = 0;
  committedLogRecordsMax = 100;

  constructor(voters: number[], observers: number[] = []) {
    this.quorum = new QuorumVerifier(voters, observers);
    for (const id of [...voters, ...observers]) {
      this.servers.set(id, { id, acceptedEpoch: 0, currentEpoch: 0, log: [], applied: [], pendingPersist: [], autoDurable: true, zab: undefined, stepDown: undefined, serving: false });
    }
  }

  server(id: number): HarnessServer {
    return this.servers.get(id)!;
  }

  /** Starts server `id` as leader (leaderId undefined) or as a learner of `leaderId`. */
  start(id: number, leaderId?: number): ZabCore {
    const s = this.server(id);
    const role = leaderId === undefined ? { kind: "leader" as const } : this.quorum.isVoter(id) ? { kind: "follower" as const, leaderId } : { kind: "observer" as const, leaderId };
    s.zab = createZab(role, {
      myId: id,
      quorum: this.quorum,
      tickMs: 100,
      initLimitTicks: 10,
      syncLimitTicks: 5,
      durable: { acceptedEpoch: s.acceptedEpoch, currentEpoch: s.currentEpoch, log: s.log.slice() },
      state: { snapshot: () => ({ zxid: this.treeZxid(s), bytes: new TextEncoder().encode(JSON.stringify(s.applied)) }), lastZxid: () => this.treeZxid(s) },
      nowMs: this.nowMs,
      committedLogRecordsMax: this.committedLogRecordsMax,
    });
    s.stepDown = undefined;
    this.handle(s, s.zab.start());
    return s.zab;
  }

  treeZxid(s: HarnessServer): number {
    return s.applied[s.applied.length - 1] ?? 0;
  }

  input(id: number, input: ZabInput): void {
    const s = this.server(id);
    if (s.zab === undefined) return;
    this.handle(s, s.zab.step(input));
  }

  propose(record: string): number {
    const leader = [...this.servers.values()].find((s) => s.zab?.kind === "leader" && s.zab.serving);
    if (leader === undefined || leader.zab?.kind !== "leader") throw new Error("no serving leader");
    const zxid = leader.zab.allocateZxid();
    this.handle(leader, leader.zab.propose(zxid, new TextEncoder().encode(record)));
    return zxid;
  }

  /** Makes every pending persist action of `id` durable, answering the core. */
  flush(id: number): void {
    const s = this.server(id);
    while (s.pendingPersist.length > 0) {
      const action = s.pendingPersist.shift()!;
      this.input(id, this.complete(s, action));
    }
  }

  /** Delivers messages (FIFO) until none are left; `filter` may hold some back (returning false drops them). */
  deliver(filter: (m: { from: number; to: number; message: QuorumMessage }) => boolean = () => true): void {
    for (let guard = 0; this.wire.length > 0; guard++) {
      if (guard > 100_000) throw new Error("message storm");
      const m = this.wire.shift()!;
      if (!filter(m)) continue;
      this.trace.push(`${m.from}→${m.to} ${describe(m.message)}`);
      this.input(m.to, { type: "message", from: m.from, message: m.message });
    }
  }

  events(): string[] {
    return this.trace.filter((line) => line.startsWith("#"));
  }

  private handle(s: HarnessServer, ready: ZabReady): void {
    s.serving = ready.serving;
    for (const e of ready.events) this.trace.push(`# ${s.id} ${describeEvent(e)}`);
    for (const record of ready.apply) {
      const last = s.applied[s.applied.length - 1] ?? 0;
      if (record.zxid <= last) throw new Error(`server ${s.id} applied ${record.zxid} after ${last}`);
      s.applied.push(record.zxid);
    }
    for (const { to, message } of ready.send) this.wire.push({ from: s.id, to, message });
    for (const action of ready.persist) {
      if (action.kind === "installSnapshot") s.applied = decodeApplied(action.snapshot, action.zxid);
      s.pendingPersist.push(action);
    }
    if (ready.stepDown) {
      s.stepDown = ready.stepDown.reason;
      s.zab = undefined;
      // The last Ready's writes still happen (the host drains before the next term).
      for (const action of s.pendingPersist.splice(0)) this.complete(s, action);
      return;
    }
    if (s.autoDurable) this.flush(s.id);
  }

  private complete(s: HarnessServer, action: PersistAction): ZabInput {
    switch (action.kind) {
      case "appendLog":
        s.log.push({ zxid: action.zxid, record: action.record });
        return { type: "logDurable", zxid: action.zxid };
      case "truncateLog":
        s.log = s.log.filter((r) => r.zxid <= action.zxid);
        return { type: "truncated", zxid: s.log[s.log.length - 1]?.zxid ?? this.treeZxid(s) };
      case "installSnapshot":
        s.log = [];
        return { type: "snapshotInstalled", zxid: action.zxid };
      case "acceptedEpoch":
        s.acceptedEpoch = action.epoch;
        return { type: "epochDurable", which: "accepted", epoch: action.epoch };
      case "currentEpoch":
        s.currentEpoch = action.epoch;
        return { type: "epochDurable", which: "current", epoch: action.epoch };
    }
  }
}

export function describe(m: QuorumMessage): string {
  switch (m.type) {
    case "learnerInfo":
      return `learnerInfo(${m.role}, accepted ${m.acceptedEpoch}, last ${formatZxid(m.lastZxid)})`;
    case "leaderInfo":
      return `leaderInfo(${m.newEpoch})`;
    case "ackEpoch":
      return `ackEpoch(current ${m.currentEpoch}, last ${formatZxid(m.lastZxid)})`;
    case "diff":
      return `diff(${formatZxid(m.lastZxid)})`;
    case "trunc":
      return `trunc(${formatZxid(m.zxid)})`;
    case "snap":
      return `snap(${formatZxid(m.zxid)})`;
    case "syncTxns":
      return `syncTxns(${m.committed ? "committed" : "uncommitted"} ${m.txns.map((t) => formatZxid(t.zxid)).join(" ")})`;
    case "newLeader":
    case "ack":
    case "commit":
    case "proposal":
    case "inform":
      return `${m.type}(${formatZxid(m.zxid)})`;
    case "ping":
      return `ping(${m.touches.length})`;
    case "request":
      return `request(${m.cxid})`;
    case "sync":
      return `sync(${m.syncId})`;
    case "syncDone":
      return `syncDone(${m.syncId}, ${formatZxid(m.zxid)})`;
    case "revalidate":
      return `revalidate(${m.sessionId})`;
    case "revalidated":
      return `revalidated(${m.sessionId}, ${m.valid})`;
    case "upToDate":
      return "upToDate";
  }
}

export function describeEvent(e: ZabEvent): string {
  switch (e.event) {
    case "phase":
      return `phase ${e.phase} (epoch ${e.epoch})`;
    case "newEpoch":
      return `newEpoch ${e.epoch}`;
    case "syncMode":
      return `sync ${e.learner} ${e.mode} ${formatZxid(e.fromZxid)}..${formatZxid(e.toZxid)}: ${e.reason}`;
    case "learnerJoined":
      return `joined ${e.learner} (${e.role})`;
    case "learnerDropped":
      return `dropped ${e.learner}: ${e.reason}`;
    case "stepDown":
      return `stepDown: ${e.reason}`;
  }
}

/** The harness's snapshot is the applied zxid list as JSON; anything else (a fuzzed snap) stands for just its zxid. */
function decodeApplied(bytes: Uint8Array, zxid: number): number[] {
  try {
    const list: unknown = JSON.parse(new TextDecoder().decode(bytes));
    if (Array.isArray(list) && list.every((x) => typeof x === "number") && list[list.length - 1] === zxid) return list as number[];
  } catch {
    // not one of ours
  }
  return zxid === 0 ? [] : [zxid];
}
