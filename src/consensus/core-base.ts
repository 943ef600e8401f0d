/**
 * What the two Zab cores, Leader and Learner, do alike for their one term: the host contract of
 * core-io.ts (one fresh Ready per input, nothing more once stopped), the durable-log bookkeeping,
 * the epoch promise and the step-down. Kept in one place so that the two sides of the protocol
 * cannot drift apart on it; each core adds only what its role means.
 */
import { assert } from "../common/assert.js";
import { epochOf, makeZxid } from "../store/zxid.js";
import { emptyReady, SPENT_READY, type ZabInput, type ZabPhase, type ZabReady } from "./core-io.js";
import type { QuorumMessage } from "./messages.js";
import { resolveOptions, type ResolvedZabOptions, type ZabOptions } from "./options.js";

export abstract class ZabCoreBase {
  readonly myId: number;
  protected readonly options: ResolvedZabOptions;
  protected phaseNow: ZabPhase = "discovery";
  protected acceptedEpoch: number;
  protected currentEpoch: number;
  /** Highest zxid durable in our own log. */
  protected abstract durableZxid: number;
  /** The last zxid in our own log, durable or not: no logDurable may reach past it. */
  protected abstract readonly lastLoggedZxid: number;
  protected nowMs: number;
  protected stopped = false;
  protected out: ZabReady = SPENT_READY;

  protected constructor(options: ZabOptions) {
    this.options = resolveOptions(options);
    this.myId = options.myId;
    this.acceptedEpoch = options.durable.acceptedEpoch;
    this.currentEpoch = options.durable.currentEpoch;
    this.nowMs = options.nowMs;
  }

  // ---- views for the host

  get phase(): ZabPhase {
    return this.phaseNow;
  }

  get serving(): boolean {
    return !this.stopped && this.phaseNow === "broadcast";
  }

  /** The epoch this term runs in, once known (undefined before). */
  abstract get epoch(): number | undefined;

  // ---- inputs

  step(input: ZabInput): ZabReady {
    this.begin();
    if (this.stopped) return this.finish();
    switch (input.type) {
      case "message":
        this.onMessage(input.from, input.message);
        break;
      case "tick":
        this.nowMs = Math.max(this.nowMs, input.nowMs); // a clock that jumps back does not rewind our timers
        this.onTick();
        break;
      case "logDurable":
        // Built only on failure: this input comes with every group commit.
        if (!(input.zxid <= this.lastLoggedZxid)) assert(false, `durable ${input.zxid} beyond our log ${this.lastLoggedZxid}`);
        if (input.zxid > this.durableZxid) {
          this.durableZxid = input.zxid;
          this.afterDurable();
        }
        break;
      case "epochDurable":
        this.onEpochDurable(input.which, input.epoch);
        break;
      case "truncated":
        this.onTruncated(input.zxid);
        break;
      case "snapshotInstalled":
        this.onSnapshotInstalled(input.zxid);
        break;
      case "disconnected":
        this.onDisconnected(input.peer);
        break;
    }
    return this.finish();
  }

  protected abstract onMessage(from: number, message: QuorumMessage): void;
  /** `nowMs` has moved (never backwards) before this is called. */
  protected abstract onTick(): void;
  /** Something of ours became durable (at least `durableZxid` moved): what waited for it may go out. */
  protected abstract afterDurable(): void;
  protected abstract onEpochDurable(which: "accepted" | "current", epoch: number): void;
  protected abstract onTruncated(zxid: number): void;
  protected abstract onSnapshotInstalled(zxid: number): void;
  protected abstract onDisconnected(peer: number): void;

  // ---- effects

  /** Promises never to follow an epoch below `epoch`; it holds across restarts once `epochDurable` answers. */
  protected acceptEpoch(epoch: number): void {
    this.acceptedEpoch = epoch;
    this.out.persist.push({ kind: "acceptedEpoch", epoch });
  }

  protected enterPhase(phase: ZabPhase): void {
    this.phaseNow = phase;
    this.out.events.push({ event: "phase", phase, epoch: this.epoch! });
  }

  /** Ends the term: the host drops this core, and every later input is ignored. */
  protected stepDown(reason: string): void {
    this.stopped = true;
    this.out.stepDown = { reason };
    this.out.events.push({ event: "stepDown", reason });
  }

  protected begin(): void {
    this.out = emptyReady(this.serving);
  }

  protected finish(): ZabReady {
    const out = this.out;
    out.serving = this.serving;
    this.out = SPENT_READY;
    return out;
  }
}

/**
 * The zxid that follows `lastZxid` in `epoch`: the next counter, or the epoch's first when
 * `lastZxid` belongs to an older one. The leader numbers its proposals by it and a learner
 * checks them by it, so both must compute it alike.
 */
export function nextZxidInEpoch(epoch: number, lastZxid: number): number {
  return epochOf(lastZxid) === epoch ? lastZxid + 1 : makeZxid(epoch, 1);
}
