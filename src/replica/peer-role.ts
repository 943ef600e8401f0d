/**
 * The role a member plays, as a tagged union on `state` (docs/architecture.md practice 3): looking
 * (no term), leading with its Zab core and its write admission (prep and cleanup), following or
 * observing with a learner core. What a role holds exists only in that role: switching on `state`
 * gives the leader's core and admission, or a learner's core, with nothing left to check.
 */
import { zabLimits } from "../consensus/constants.js";
import type { ZabOptions } from "../consensus/options.js";
import { createZab, type Leader, type Learner } from "../consensus/zab.js";
import type { Decision } from "../election/fast-leader-election.js";
import { assert } from "../common/assert.js";
import { ForwardQueue } from "./forward-queue.js";
import type { LeaderAdmission, LeaderTerm } from "./leader-admission.js";

export interface Looking {
  state: "looking";
}

export interface Leading {
  state: "leading";
  leaderId: number;
  zab: Leader;
  admission: LeaderAdmission;
}

export interface Learning {
  state: "following" | "observing";
  leaderId: number;
  zab: Learner;
  /** Client writes waiting to be forwarded, and the bound on those forwarded and not answered. */
  forwards: ForwardQueue;
}

export type PeerRole = Looking | Leading | Learning;

/** A role with a term: leading, following or observing. */
export type InTerm = Leading | Learning;

export const LOOKING: Looking = Object.freeze({ state: "looking" });

/** The role an election's decision gives this server. */
export function termStateOf(decision: Decision): InTerm["state"] {
  return decision.state === "leading" ? "leading" : decision.state === "following" ? "following" : "observing";
}

/**
 * A learner's bound on the writes it has forwarded and not had answered: twice the leader's
 * in-flight window, so that the leader always has this learner's next writes waiting when its
 * window opens, and a write forwarded behind them waits for little more than one window.
 */
export function forwardBytesMaxOf(proposalBytesInFlightMax: number): number {
  return 2 * proposalBytesInFlightMax;
}

/**
 * The role for a decided term, with its core built from `options`; a leader's admission is made by
 * `admit` for the new core, its Readies going to `carryOut`.
 */
export function beginTerm(decision: Decision, options: ZabOptions, term: Omit<LeaderTerm, "leader">, admit: (term: LeaderTerm) => LeaderAdmission): InTerm {
  const state = termStateOf(decision);
  const leaderId = decision.leader;
  if (state === "leading") {
    const zab = createZab({ kind: "leader" }, options);
    assert(zab.kind === "leader", "a leading term runs a Leader core");
    return { state, leaderId, zab, admission: admit({ ...term, leader: zab }) };
  }
  const zab = createZab({ kind: state === "following" ? "follower" : "observer", leaderId }, options);
  assert(zab.kind !== "leader", "a learning term runs a Learner core");
  return { state, leaderId, zab, forwards: new ForwardQueue(forwardBytesMaxOf(options.proposalBytesInFlightMax ?? zabLimits.proposalBytesInFlightMax)) };
}
