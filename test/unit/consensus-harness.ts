/**
 * A small synchronous driver for Zab scenario tests over the simulator's twins: each server keeps
 * its log and epochs in a MemoryStorage (test/sim/twins/memory-storage.ts) and talks over
 * SimNetwork's quorum streams (test/sim/twins/sim-network.ts), on SteppedSchedulers the test steps.
 * Every message takes 1 ms, so delivery is FIFO over all pairs, and a server's writes land when
 * `flush` runs its disk (at the end of each Ready while it is `autoDurable`). Txn records are
 * opaque bytes here; the "tree" is the list of applied zxids, and a snapshot is that list encoded.
 */
import { createZab, type ZabCore } from "../../src/consensus/zab.js";
import type { PersistAction, ZabEvent, ZabInput, ZabReady } from "../../src/consensus/core-io.js";
import type { LogRecord, QuorumMessage } from "../../src/consensus/messages.js";
import { QuorumVerifier, type PendingConfig } from "../../src/consensus/quorum.js";
import type { PeerPort } from "../../src/replica/ports.js";
import { formatZxid } from "../../src/store/zxid.js";
import { Prng } from "../sim/prng.js";
import { MemoryStorage } from "../sim/twins/memory-storage.js";
import { SteppedScheduler } from "../sim/twins/scheduler.js";
import { SimNetwork } from "../sim/twins/sim-network.js";

export interface WireMessage {
  from: number;
  to: number;
  message: QuorumMessage;
}

export class HarnessServer {
  /** Applied zxids, in order: the "tree". */
  applied: number[] = [];
  /** Make every write durable at the end of the Ready that asked for it; otherwise only `flush` does. */
  autoDurable = true;
  zab: ZabCore | undefined;
  stepDown: string | undefined;
  serving = false;
  /** Bumped with every core: what an earlier core's writes answer is not fed to a later one. */
  generation = 0;
  /** The server's disk: its writes complete, in order, when this is run. */
  readonly disk = new SteppedScheduler();
  readonly storage: MemoryStorage;

  constructor(
    readonly id: number,
    public port: PeerPort,
  ) {
    this.storage = new MemoryStorage(this.disk, id, () => 0);
    Object.assign(this.storage.durable, { acceptedEpoch: 0, currentEpoch: 0 });
  }

  // What is durable, as the storage twin holds it (a test may set it before the server starts).
  get acceptedEpoch(): number {
    return this.storage.durable.acceptedEpoch ?? 0;
  }

  set acceptedEpoch(epoch: number) {
    this.storage.durable.acceptedEpoch = epoch;
  }

  get currentEpoch(): number {
    return this.storage.durable.currentEpoch ?? 0;
  }

  set currentEpoch(epoch: number) {
    this.storage.durable.currentEpoch = epoch;
  }

  get log(): LogRecord[] {
    return this.storage.durableRecords;
  }

  set log(records: LogRecord[]) {
    this.storage.durableRecords = records;
  }

  get treeZxid(): number {
    return this.applied[this.applied.length - 1] ?? 0;
  }
}

export class Harness {
  readonly servers = new Map<number, HarnessServer>();
  readonly quorum: QuorumVerifier;
  readonly trace: string[] = [];
  committedLogRecordsMax = 100;
  /** The leader's flow-control window (undefined: zabLimits'). */
  proposalsInFlightMax: number | undefined;
  proposalBytesInFlightMax: number | undefined;
  committedLogBytesMax: number | undefined;
  private readonly net = new SteppedScheduler();
  /** Which delivered messages reach their server (see `deliver`). */
  private admit: (m: WireMessage) => boolean = () => true;

  /** `spares`: servers outside the configuration, which learn as participants the leader does not count. */
  constructor(voters: number[], observers: number[] = [], spares: number[] = []) {
    this.quorum = new QuorumVerifier(voters, observers);
    const ids = [...voters, ...observers, ...spares];
    const faults = { netDelayMsMax: 0, electionLoss: 0, electionDuplicate: 0, streamBreak: 0 };
    const network = new SimNetwork(this.net, new Prng(1), faults, (line) => this.trace.push(line), ids);
    for (const id of ids) {
      const port = network.attach(id, {
        onNotification: () => {
          throw new Error("no election in a Zab test");
        },
        onQuorumMessage: (from, message) => {
          if (!this.admit({ from, to: id, message })) return;
          this.trace.push(`${from}→${id} ${describe(message)}`);
          this.input(id, { type: "message", from, message });
        },
        onQuorumStreamClosed: (peer) => this.input(id, { type: "disconnected", peer }),
      });
      this.servers.set(id, new HarnessServer(id, port));
    }
    // The links come up before anything is sent.
    while (this.net.runNext());
  }

  get nowMs(): number {
    return this.net.nowMs;
  }

  server(id: number): HarnessServer {
    return this.servers.get(id)!;
  }

  /** Starts server `id` as leader (leaderId undefined) or as a learner of `leaderId`, from what is durable. */
  start(id: number, leaderId?: number, pendingConfigs: readonly PendingConfig[] = [], options: { repairing?: boolean } = {}): ZabCore {
    const s = this.server(id);
    const role =
      leaderId === undefined
        ? { kind: "leader" as const }
        : this.quorum.observers.has(id)
          ? { kind: "observer" as const, leaderId }
          : { kind: "follower" as const, leaderId };
    s.generation += 1;
    if (leaderId === undefined) s.port.stopFollowing();
    else s.port.followLeader(leaderId);
    s.zab = createZab(role, {
      myId: id,
      quorum: this.quorum,
      pendingConfigs,
      tickMs: 100,
      initLimitTicks: 10,
      syncLimitTicks: 5,
      durable: { acceptedEpoch: s.acceptedEpoch, currentEpoch: s.currentEpoch, log: s.log.slice() },
      state: { snapshot: () => ({ zxid: s.treeZxid, bytes: new TextEncoder().encode(JSON.stringify(s.applied)) }), lastZxid: () => s.treeZxid },
      nowMs: this.nowMs,
      committedLogRecordsMax: this.committedLogRecordsMax,
      ...(this.proposalsInFlightMax === undefined ? {} : { proposalsInFlightMax: this.proposalsInFlightMax }),
      ...(this.proposalBytesInFlightMax === undefined ? {} : { proposalBytesInFlightMax: this.proposalBytesInFlightMax }),
      ...(this.committedLogBytesMax === undefined ? {} : { committedLogBytesMax: this.committedLogBytesMax }),
      ...(options.repairing === true ? { repairing: true } : {}),
    });
    s.stepDown = undefined;
    this.handle(s, s.zab.start());
    return s.zab;
  }

  input(id: number, input: ZabInput): void {
    const s = this.server(id);
    if (s.zab === undefined) return;
    this.handle(s, s.zab.step(input));
  }

  /** `config`: the record is a reconfiguration installing it. */
  propose(record: string, config?: QuorumVerifier): number {
    const leader = [...this.servers.values()].find((s) => s.zab?.kind === "leader" && s.zab.serving);
    if (leader === undefined || leader.zab?.kind !== "leader") throw new Error("no serving leader");
    const zxid = leader.zab.allocateZxid();
    this.handle(leader, leader.zab.propose(zxid, new TextEncoder().encode(record), config));
    return zxid;
  }

  /** Makes every pending write of `id` durable, answering the core that asked. */
  flush(id: number): void {
    const disk = this.server(id).disk;
    while (disk.runNext());
  }

  /**
   * Delivers messages, oldest first, until none are left; `filter` may hold some back (returning
   * false drops them at the receiver).
   */
  deliver(filter: (m: WireMessage) => boolean = () => true): void {
    this.admit = filter;
    try {
      for (let delivered = 0; this.net.runNext(); delivered++) if (delivered > 100_000) throw new Error("message storm");
    } finally {
      this.admit = () => true;
    }
  }

  events(): string[] {
    return this.trace.filter((line) => line.startsWith("#"));
  }

  private handle(s: HarnessServer, ready: ZabReady): void {
    const generation = s.generation;
    s.serving = ready.serving;
    for (const e of ready.events) this.trace.push(`# ${s.id} ${describeEvent(e)}`);
    for (const record of ready.apply) {
      if (record.zxid <= s.treeZxid) throw new Error(`server ${s.id} applied ${record.zxid} after ${s.treeZxid}`);
      s.applied.push(record.zxid);
    }
    for (const { to, message } of ready.send) {
      if (s.zab?.kind === "leader") s.port.sendToLearner(to, message);
      else s.port.sendToLeader(message);
    }
    for (const action of ready.persist) this.carryOut(s, action, (input) => this.answer(s, generation, input));
    for (const id of ready.disconnect) s.port.closeLearner(id);
    if (ready.stepDown) {
      s.stepDown = ready.stepDown.reason;
      s.zab = undefined;
      s.generation += 1;
      s.port.stopFollowing();
      // The last Ready's writes still happen (the host drains before the next term); nobody hears of them.
      this.flush(s.id);
      return;
    }
    if (s.autoDurable) this.flush(s.id);
  }

  private answer(s: HarnessServer, generation: number, input: ZabInput): void {
    if (generation === s.generation && s.zab !== undefined) this.handle(s, s.zab.step(input));
  }

  /** Hands `action` to the storage twin; `done` gets the core's answer once it is durable. */
  private carryOut(s: HarnessServer, action: PersistAction, done: (input: ZabInput) => void): void {
    const { log, stable, snapshots } = s.storage;
    switch (action.kind) {
      case "appendLog":
        return log.append(action.zxid, action.record, () => done({ type: "logDurable", zxid: action.zxid }));
      case "truncateLog":
        return log.truncateAfter(action.zxid, () => done({ type: "truncated", zxid: s.log[s.log.length - 1]?.zxid ?? s.treeZxid }));
      case "installSnapshot":
        s.applied = decodeApplied(action.snapshot, action.zxid);
        return snapshots.install(action.zxid, action.snapshot, () => done({ type: "snapshotInstalled", zxid: action.zxid }));
      case "acceptedEpoch":
        return stable.saveEpoch("accepted", action.epoch, () => done({ type: "epochDurable", which: "accepted", epoch: action.epoch }));
      case "currentEpoch":
        return stable.saveEpoch("current", action.epoch, () => done({ type: "epochDurable", which: "current", epoch: action.epoch }));
    }
  }
}

export function describe(m: QuorumMessage): string {
  switch (m.type) {
    case "learnerInfo":
      return `learnerInfo(${m.role}, accepted ${m.acceptedEpoch}, last ${formatZxid(m.lastZxid)}${m.repairing === true ? ", repairing" : ""})`;
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
    case "treeDigest":
      return `treeDigest(${formatZxid(m.zxid)}${m.digest === undefined ? "" : ` ${m.digest}`})`;
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
    case "configActivated":
      return `configActivated ${formatZxid(e.zxid)}`;
  }
}

/** The harness's snapshot is the applied zxid list as JSON; anything else (a fuzzed snap) stands for just its zxid. */
function decodeApplied(bytes: Uint8Array, zxid: number): number[] {
  try {
    const list: unknown = JSON.parse(new TextDecoder().decode(bytes));
    if (Array.isArray(list) && list.every((x) => typeof x === "number") && list[list.length - 1] === zxid) return list;
  } catch {
    // not one of ours
  }
  return zxid === 0 ? [] : [zxid];
}
