/**
 * How a host drives a Zab core (docs/architecture.md §3, practices 1–4): the host feeds inputs —
 * a peer message, a tick carrying the time, "this is durable now", a client write to propose — and
 * after each input collects a `ZabReady` batch of effects to carry out. The core never awaits,
 * never reads a clock and never touches a socket or a file. Two hosts run it: src/server (gRPC,
 * LevelDB with fsync, setTimeout) and test/sim (memory, one seeded PRNG).
 *
 * Durability order is in the protocol, not in the host: the core asks for a write in `persist`
 * and only sends what depends on it (ACK, ACKEPOCH, the NEWLEADER ack) after the host has fed the
 * matching `*Durable` input back.
 */
import type { LogRecord, QuorumMessage, SessionTouch } from "./messages.js";

export type PersistAction =
  /** Append to the txn log (group-committed by the host); answered by `logDurable`. */
  | { kind: "appendLog"; zxid: number; record: Uint8Array }
  /** Drop every logged txn after `zxid` and rebuild state from what remains; answered by `truncated`. */
  | { kind: "truncateLog"; zxid: number }
  /** Replace state and log with a snapshot at `zxid`; answered by `snapshotInstalled`. */
  | { kind: "installSnapshot"; zxid: number; snapshot: Uint8Array }
  /** fsync the accepted epoch; answered by `epochDurable`. */
  | { kind: "acceptedEpoch"; epoch: number }
  /** fsync the current epoch; answered by `epochDurable`. */
  | { kind: "currentEpoch"; epoch: number };

export type ZabInput =
  | { type: "message"; from: number; message: QuorumMessage }
  | { type: "tick"; nowMs: number }
  /** Every appended record up to `zxid` is durable. */
  | { type: "logDurable"; zxid: number }
  /** The truncateLog is done; `zxid` is the last logged zxid now (below the asked one if the log lacked it). */
  | { type: "truncated"; zxid: number }
  | { type: "snapshotInstalled"; zxid: number }
  | { type: "epochDurable"; which: "accepted" | "current"; epoch: number }
  /** The transport to/from `peer` broke (stream ended, connect failed). */
  | { type: "disconnected"; peer: number };

/** Something worth one structured log line (role changes, epochs, sync mode chosen, step-down). */
export type ZabEvent =
  | { event: "phase"; phase: ZabPhase; epoch: number }
  | { event: "newEpoch"; epoch: number }
  | { event: "syncMode"; learner: number; mode: "DIFF" | "TRUNC" | "SNAP"; reason: string; fromZxid: number; toZxid: number }
  | { event: "learnerJoined"; learner: number; role: "participant" | "observer" }
  | { event: "learnerDropped"; learner: number; reason: string }
  | { event: "stepDown"; reason: string }
  /** Leader only: the reconfiguration at `zxid` committed; its configuration is the one in force now. */
  | { event: "configActivated"; zxid: number };

export type ZabPhase = "discovery" | "synchronization" | "broadcast";

export interface ZabReady {
  /** Messages that may leave now; none of them depends on a persist still pending. */
  send: { to: number; message: QuorumMessage }[];
  /** Durable writes to carry out, in order. */
  persist: PersistAction[];
  /** Committed txns to apply to the tree, in zxid order. */
  apply: LogRecord[];
  /** Leader only: client writes forwarded by learners, for the host's prep to turn into proposals. */
  forwarded: { from: number; sessionId: bigint; cxid: number; request: Uint8Array }[];
  /** Leader only: sessions heard from through learners (the host's SessionTracker touches them). */
  touches: SessionTouch[];
  /** Learner only: answers to this server's own sync requests (syncId → zxid to reach). */
  syncsDone: { syncId: number; zxid: number }[];
  /** Leader only: sessions learners' clients resumed; the host answers each with `answerRevalidation`. */
  revalidations: { from: number; sessionId: bigint; timeoutMs: number }[];
  /** Learner only: the leader's answers to this server's `revalidate` calls. */
  revalidated: { sessionId: bigint; valid: boolean }[];
  events: ZabEvent[];
  /** Set once the phase reaches broadcast (serve clients) and cleared on step-down. */
  serving: boolean;
  /** The core gave up (quorum lost, leader gone, epoch conflict): the host goes back to election. */
  stepDown: { reason: string } | undefined;
  /** Leader only: close the stream to these learners (dropped: silent, misbehaving or replaced). */
  disconnect: number[];
}

export function emptyReady(serving: boolean): ZabReady {
  return {
    send: [],
    persist: [],
    apply: [],
    forwarded: [],
    touches: [],
    syncsDone: [],
    revalidations: [],
    revalidated: [],
    events: [],
    serving,
    stepDown: undefined,
    disconnect: [],
  };
}

/**
 * What a core holds between two inputs: every input starts a fresh Ready, so none is built for the
 * gap; frozen, so that an effect produced outside an input (a bug) throws instead of being lost.
 */
export const SPENT_READY: ZabReady = Object.freeze({
  send: Object.freeze([]) as unknown as ZabReady["send"],
  persist: Object.freeze([]) as unknown as ZabReady["persist"],
  apply: Object.freeze([]) as unknown as ZabReady["apply"],
  forwarded: Object.freeze([]) as unknown as ZabReady["forwarded"],
  touches: Object.freeze([]) as unknown as ZabReady["touches"],
  syncsDone: Object.freeze([]) as unknown as ZabReady["syncsDone"],
  revalidations: Object.freeze([]) as unknown as ZabReady["revalidations"],
  revalidated: Object.freeze([]) as unknown as ZabReady["revalidated"],
  events: Object.freeze([]) as unknown as ZabReady["events"],
  serving: false,
  stepDown: undefined,
  disconnect: Object.freeze([]) as unknown as ZabReady["disconnect"],
});
