/**
 * What a member tells of itself, read at the moment someone asks (the four-letter words, the admin
 * commands, the metrics, the console, the simulator's checkers): its role and term, its leader's
 * view of the learners, the membership it runs with, and the elections it saw. Nothing here is kept
 * up to date; every getter reads the peer, the membership and read-only mode as they stand.
 */
import type { Leader, LearnerStage } from "../consensus/leader.js";
import type { ZabPhase } from "../consensus/core-io.js";
import { epochOf } from "../store/zxid.js";
import type { ClusterConfig } from "./cluster-config.js";
import type { ProposalSizes } from "./leader-admission.js";
import type { ServerState } from "../election/types.js";
import type { PeerRole } from "./peer-role.js";
import type { Clock, StorageDamage } from "./ports.js";
import type { ReadOnlyMode } from "./read-only-mode.js";
import { configsInPlay, mayLead, pendingReconfig, type ReconfigMembership } from "./reconfig-membership.js";

export type { ProposalSizes } from "./leader-admission.js";

/** A leader's view of one learner, for status pages and metrics. */
export interface LearnerStatus {
  sid: number;
  role: "participant" | "observer";
  stage: LearnerStage;
  ackedZxid: number;
  /** Txns behind our last proposal by its acks; undefined for observers (they do not ack) and before its first ack. */
  lagZxids: number | undefined;
}

/** What a serving leader reports of itself. */
export interface LeaderStatus {
  uptimeMs: number;
  lastProposedZxid: number;
  proposalsInFlight: number;
  /** Their bytes (bounded by proposalBytesInFlightMax). */
  proposalBytesInFlight: number;
  /** Writes waiting at this leader for room in its window, and their bytes. */
  admissionQueued: { count: number; bytes: number };
  learners: LearnerStatus[];
}

/** One election this server saw decided: when, how long it looked, whom it chose, as what. */
export interface ElectionSeen {
  decidedAtMs: number;
  tookMs: number;
  leader: number;
  state: "leading" | "following" | "observing";
  round: number;
}

/** Elections kept for the console; older ones drop off. */
const ELECTIONS_SEEN_MAX = 20;

/** The last ELECTIONS_SEEN_MAX elections a server took part in, oldest first. */
export class ElectionHistory {
  private readonly seen: ElectionSeen[] = [];

  record(election: ElectionSeen): void {
    this.seen.push(election);
    if (this.seen.length > ELECTIONS_SEEN_MAX) this.seen.shift();
  }

  get all(): readonly ElectionSeen[] {
    return this.seen;
  }
}

/** What PeerStatus reads of the peer. */
export interface StatusSource {
  readonly role: PeerRole;
  /** The epoch this server last persisted as current (ZooKeeper's currentEpoch file). */
  readonly currentEpoch: number;
  readonly elections: ElectionHistory;
  readonly repairing: StorageDamage | undefined;
}

const NO_PROPOSALS: ProposalSizes = Object.freeze({ last: -1, min: -1, max: -1 });

export class PeerStatus {
  constructor(
    private readonly peer: StatusSource,
    private readonly membership: ReconfigMembership,
    private readonly readOnlyMode: ReadOnlyMode,
    private readonly clock: Clock,
  ) {}

  get role(): ServerState {
    return this.peer.role.state;
  }

  /** Serving clients read-write: the current term's core is in broadcast. */
  get serving(): boolean {
    const role = this.peer.role;
    return role.state !== "looking" && role.zab.serving;
  }

  /** Serving read-only sessions: cut off from a quorum, with read-only mode on. */
  get readOnly(): boolean {
    return this.readOnlyMode.active;
  }

  /** What this member repairs from its leader instead of serving; undefined when it holds a good copy. */
  get repairing(): StorageDamage | undefined {
    return this.peer.repairing;
  }

  /** The leader of the current term, once decided (undefined while looking). */
  get currentLeader(): number | undefined {
    const role = this.peer.role;
    return role.state === "looking" ? undefined : role.leaderId;
  }

  /** The epoch of the current term's core (undefined while looking, or before a learner hears its leader's). */
  get termEpoch(): number | undefined {
    const role = this.peer.role;
    return role.state === "looking" ? undefined : role.zab.epoch;
  }

  get currentEpoch(): number {
    return this.peer.currentEpoch;
  }

  /** ZooKeeper's ZabState: "election" while looking, then the current core's phase. */
  get zabState(): "election" | ZabPhase {
    const role = this.peer.role;
    return role.state === "looking" ? "election" : role.zab.phase;
  }

  /** The configuration in force here (ZooKeeper's getQuorumVerifier, with the members' addresses). */
  get configInForce(): ClusterConfig {
    return this.membership.configInForce;
  }

  /** /zookeeper/config's text for the configuration in force ("" for a standalone server). */
  get configTextInForce(): string {
    return this.membership.textInForce;
  }

  /** The configuration in force and every reconfiguration not known committed, logged here or heard of. */
  get configsInPlay(): ClusterConfig[] {
    return configsInPlay(this.membership.state);
  }

  /** The reconfiguration logged here and not known committed (heard ones left out). */
  get reconfigsLogged(): ClusterConfig[] {
    const pending = pendingReconfig(this.membership.state);
    return pending === undefined ? [] : [pending];
  }

  /**
   * Whether this server may lead: a voter of the configuration in force or of one it logged (see
   * reconfig-membership's mayLead) that holds a good copy (a repairing one proposes nobody).
   */
  get mayLead(): boolean {
    return mayLead(this.membership.state) && this.peer.repairing === undefined;
  }

  /** The elections this server saw decided, oldest first (the console's cluster view). */
  get electionsSeen(): readonly ElectionSeen[] {
    return this.peer.elections.all;
  }

  /** This term's proposal sizes, while leading (stat's "Proposal sizes last/min/max"). */
  get proposalSizes(): ProposalSizes {
    const role = this.peer.role;
    return role.state === "leading" ? role.admission.proposalSizes : NO_PROPOSALS;
  }

  /** Leader only: its learners and where each stands (mntr); undefined on any other role. */
  learners(): ReturnType<Leader["learners"]> | undefined {
    const role = this.peer.role;
    return role.state === "leading" ? role.zab.learners() : undefined;
  }

  /** Leader only, while serving: its learners with their lag, its proposals in flight. */
  leaderStatus(): LeaderStatus | undefined {
    const role = this.peer.role;
    if (role.state !== "leading" || !role.zab.serving) return undefined;
    const zab = role.zab;
    const last = zab.lastProposedZxid;
    return {
      uptimeMs: this.clock.nowMs() - role.admission.servingSince,
      lastProposedZxid: last,
      proposalsInFlight: zab.outstandingProposals,
      proposalBytesInFlight: zab.outstandingBytes,
      admissionQueued: role.admission.queued,
      learners: zab.learners().map((learner) => ({ ...learner, lagZxids: learner.role === "participant" ? lagOf(last, learner.ackedZxid) : undefined })),
    };
  }
}

/** Txns between a learner's last ack and our last proposal (a different epoch's ack: all of this epoch's). */
function lagOf(lastProposedZxid: number, ackedZxid: number): number | undefined {
  if (ackedZxid < 0) return undefined;
  if (epochOf(ackedZxid) !== epochOf(lastProposedZxid)) return lastProposedZxid % 2 ** 32;
  return Math.max(0, lastProposedZxid - ackedZxid);
}
