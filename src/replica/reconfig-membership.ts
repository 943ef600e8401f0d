/**
 * Reconfiguration membership, as one member sees it (ZooKeeper's QuorumPeer keeps the same in its
 * last-committed and last-proposed verifiers): the configuration in force, the reconfiguration
 * logged here and not known committed, those heard of from peers, and what follows for elections
 * (whose quorums this server needs, as what it votes), for the transport (whom it dials) and for a
 * term in progress (whether its place in it changed).
 *
 * Every decision is a pure function of a `MembershipState` (test/unit/membership-golden.test.ts
 * checks them against golden traces); `ReconfigMembership` holds the state for the peer and carries
 * out what the decisions say (log lines, the transport's member list).
 */
import { ZkError } from "../common/errors.js";
import { parseMembership, type MemberAddress, type MemberRole } from "../common/membership.js";
import type { LogRecord } from "../consensus/messages.js";
import { JointQuorum, QuorumVerifier, type PendingConfig } from "../consensus/quorum.js";
import type { Notification } from "../election/types.js";
import { formatZxid as hex } from "../store/zxid.js";
import { configText, quorumOf, reconfigsIn, roleOf, type ClusterConfig } from "./cluster-config.js";
import type { LogSink, PeerPort } from "./ports.js";

/**
 * Reconfigurations heard of from peers' notifications and not logged here, kept for elections (a
 * handful at most: one is normally in flight; older ones drop first).
 */
export const HEARD_RECONFIGS_MAX = 4;

/** What every membership decision is made from. */
export interface MembershipState {
  serverId: number;
  /** The configuration in force here: the last reconfiguration applied, or the one it started with. */
  inForce: ClusterConfig;
  /** Logged records the tree has not applied (not known committed here), oldest first. */
  unapplied: readonly LogRecord[];
  /** The highest zxid logged here, in the log or the tree. */
  lastLoggedZxid: number;
  /** The zxid of the last txn applied to the tree here (the tree holds only committed txns). */
  lastAppliedZxid: number;
  /** Reconfigurations peers logged and did not see committed, by version, that this server has not logged. */
  heard: ReadonlyMap<number, ClusterConfig>;
  /** Versions of reconfigurations logged or heard of here that a peer's word shows never commit (see leftOutBy). */
  leftOut: ReadonlySet<number>;
}

/** What a peer's notification says of its tree: the configuration in force there and the last txn applied. */
export interface PeerApplied {
  inForce: number;
  applied: number;
}

/** This server's place in the elections: its role and the quorums (one per configuration in play) that elect. */
export interface ElectionView {
  role: MemberRole;
  quorum: JointQuorum;
}

/** A configuration as a notification carries it. */
export type OfferedConfig = NonNullable<Notification["config"]>;

// ---- decisions (pure)

/** Reconfigurations among the unapplied log records newer than the configuration in force, oldest first. */
export function loggedReconfigs(state: MembershipState): ClusterConfig[] {
  return reconfigsIn(state.unapplied, state.inForce.version);
}

/**
 * The reconfiguration logged here that may not be committed: the last one logged, if it is not in
 * force. Only the last can be: a leader proposes one only once the one before it has committed,
 * and commits its whole history before it serves (see `provedCommitted`).
 */
export function pendingReconfig(state: MembershipState): ClusterConfig | undefined {
  const last = loggedReconfigs(state).at(-1);
  return last === undefined || state.leftOut.has(last.version) ? undefined : last;
}

/**
 * Whether a peer's tree proves that the reconfiguration at `version` never commits: the peer
 * applied a txn after it while a configuration older than it is in force there. A tree holds only
 * committed txns, applied in zxid order, and applying a reconfiguration puts it in force; so the
 * committed history went past `version` without it, and a history never gains a txn below one it
 * has committed. Without this, a server that logged a reconfiguration its leader never got
 * committed (cut off with it) keeps needing a quorum of that membership in every election, until
 * it syncs with a leader — which that quorum may never elect (simulator seed 26243: a voter the
 * reconfiguration would have added never votes, as its own log settles it).
 */
export function leftOutBy(version: number, peer: PeerApplied): boolean {
  return peer.inForce < version && version < peer.applied;
}

/**
 * The reconfigurations this server logged or heard of that a peer's word shows never commit, added
 * to those known already (the set keeps only versions still logged or heard of here), or undefined
 * when nothing changes.
 */
export function hearApplied(state: MembershipState, peer: PeerApplied): Set<number> | undefined {
  const candidates = [...state.heard.keys()];
  const last = loggedReconfigs(state).at(-1);
  if (last !== undefined) candidates.push(last.version);
  const fresh = candidates.filter((version) => !state.leftOut.has(version) && leftOutBy(version, peer));
  if (fresh.length === 0) return undefined;
  return new Set([...candidates.filter((version) => state.leftOut.has(version)), ...fresh]);
}

/**
 * A logged reconfiguration that another logged after it proves committed (the leader that proposed
 * the later one had the earlier one committed), to bring into force. Without this a server
 * restarted before it applied them — say after 3 → 5 → 3 voters and no snapshot since — would
 * count every one of them as pending and need a quorum of each to elect, which may no longer exist.
 */
export function provedCommitted(state: MembershipState): ClusterConfig | undefined {
  const logged = loggedReconfigs(state);
  return logged.length >= 2 ? logged[logged.length - 2] : undefined;
}

/**
 * Whether a reconfiguration heard of from a peer is settled by this server's own log: one at or below
 * the last zxid logged here is either in that log (logged or in force here) or was dropped by the
 * history the log holds, and then never commits. The log up to there is one leader's history (an
 * epoch has one leader, and a learner's log is its leader's up to where it stops), and a leader
 * proposes only once its epoch is established, with every proposal of an earlier epoch that will
 * ever commit in its history. A server that keeps such a one in play needs a quorum of a membership
 * no leader will ever run with: the cut-off peer that logged it votes there until it syncs, but a
 * quorum of it may never back anyone again (simulator seed 4388).
 */
export function settledByLog(state: MembershipState, version: number): boolean {
  return version <= state.lastLoggedZxid;
}

/** Logged pending reconfigurations and those heard of, by version, each once, oldest first. */
export function reconfigsInPlay(state: MembershipState): ClusterConfig[] {
  const byVersion = new Map<number, ClusterConfig>();
  for (const [version, config] of state.heard) {
    if (version > state.inForce.version && !settledByLog(state, version) && !state.leftOut.has(version)) byVersion.set(version, config);
  }
  const pending = pendingReconfig(state);
  if (pending !== undefined) byVersion.set(pending.version, pending);
  return [...byVersion.values()].sort((a, b) => a.version - b.version);
}

/**
 * The configuration in force and every reconfiguration not known committed, logged here or heard
 * of from a peer that logged it: a quorum of each elects.
 */
export function configsInPlay(state: MembershipState): ClusterConfig[] {
  return [state.inForce, ...reconfigsInPlay(state)];
}

/**
 * Our place in every configuration in play: the one in force and each reconfiguration not known
 * committed (either may be the next leader's); undefined when we are in none of them.
 */
export function electionView(state: MembershipState): ElectionView | undefined {
  const quorum = new JointQuorum(configsInPlay(state).map(quorumOf));
  const me = state.serverId;
  const role = quorum.isVoter(me) ? "participant" : quorum.observers.has(me) ? "observer" : undefined;
  return role === undefined ? undefined : { role, quorum };
}

/**
 * The view of a server in no configuration in play (removed by a reconfiguration, or never added):
 * it talks as an observer of the configuration in force would, never following anyone, so that the
 * others hear the configuration it knows and it hears theirs (it learns if it is added again).
 */
export function outsiderView(state: MembershipState): ElectionView {
  const inForce = quorumOf(state.inForce);
  return { role: "observer", quorum: new JointQuorum([new QuorumVerifier(inForce.voters, [...inForce.observers, state.serverId])]) };
}

/**
 * Whether this server may lead: a voter of the configuration in force or of the reconfiguration it
 * logged, which is what a leader core built from its own log counts (a voter only through a
 * reconfiguration heard of from a peer votes, but may not lead).
 */
export function mayLead(state: MembershipState): boolean {
  const pending = pendingReconfig(state);
  return new JointQuorum([quorumOf(state.inForce), ...(pending === undefined ? [] : [quorumOf(pending)])]).isVoter(state.serverId);
}

/** Neither in the configuration in force nor in one in play (which may yet come into force). */
export function outsideEveryConfig(state: MembershipState): boolean {
  return roleOf(state.inForce, state.serverId) === undefined && electionView(state) === undefined;
}

/**
 * Whom the transport dials: the members of every configuration in play (a voter of a pending one
 * must hear this server's notifications), each id once — as a participant if any of them makes it
 * one, else as the configuration in force lists it. This server's own entry is left out: the
 * transport keeps the one it bound.
 */
export function transportMembers(state: MembershipState): MemberAddress[] {
  const members = new Map<number, MemberAddress>();
  for (const config of configsInPlay(state)) {
    for (const member of config.members) {
      if (member.serverId === state.serverId) continue;
      const known = members.get(member.serverId);
      if (known === undefined || (known.role === "observer" && member.role === "participant")) members.set(member.serverId, member);
    }
  }
  return [...members.values()];
}

/**
 * A peer logged a reconfiguration and did not see it committed: the heard set with it added (the
 * oldest dropped past HEARD_RECONFIGS_MAX, and those the log has settled since), or undefined when
 * it changes nothing: known already (heard, or logged here), or settled by this server's log (see
 * settledByLog).
 */
export function hearPending(state: MembershipState, offered: ClusterConfig): Map<number, ClusterConfig> | undefined {
  if (state.heard.has(offered.version) || settledByLog(state, offered.version)) return undefined;
  const heard = new Map([...state.heard].filter(([version]) => !settledByLog(state, version)));
  heard.set(offered.version, offered);
  while (heard.size > HEARD_RECONFIGS_MAX) heard.delete(Math.min(...heard.keys()));
  return heard;
}

/** Whether two election views give this server the same role among the same voters and observers. */
export function sameView(a: ElectionView | undefined, b: ElectionView | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.role === b.role && a.quorum.sameMembership(b.quorum);
}

/**
 * Why a learner must leave its term now that `inForce` is in force, or undefined if it stays: its
 * role changed (ZooKeeper's learner restarts when a reconfiguration changes its role), it was
 * removed, or its leader no longer votes. (A leader that no longer votes steps down inside its core.)
 */
export function learnerPlaceChange(inForce: ClusterConfig, serverId: number, termRole: MemberRole, leaderId: number): string | undefined {
  const me = roleOf(inForce, serverId);
  if (me !== termRole) return me === undefined ? "removed from the configuration" : `now ${me === "participant" ? "a participant" : "an observer"}`;
  if (!quorumOf(inForce).isVoter(leaderId)) return "the leader is no voter of the configuration in force";
  return undefined;
}

/**
 * What every notification carries besides the vote: the configuration in force, for a server that
 * missed it; the latest reconfiguration logged here and not seen committed, for a server it makes a
 * voter; and the last txn applied here, for a server holding a reconfiguration that never commits.
 */
export function notificationViews(state: MembershipState): Pick<Notification, "config" | "pending" | "applied"> {
  const pending = pendingReconfig(state);
  return {
    config: { version: state.inForce.version, text: configText(state.inForce) },
    ...(pending === undefined ? {} : { pending: { version: pending.version, text: configText(pending) } }),
    ...(state.lastAppliedZxid === 0 ? {} : { applied: state.lastAppliedZxid }),
  };
}

/** A configuration a peer's notification carries, or undefined if it is malformed. */
export function parseOffered(offered: OfferedConfig): ClusterConfig | undefined {
  if (!Number.isSafeInteger(offered.version)) return undefined;
  try {
    return { version: offered.version, members: parseMembership(offered.text).members };
  } catch (error) {
    if (!(error instanceof ZkError)) throw error;
    return undefined;
  }
}

// ---- the state, kept for one peer

export interface ReconfigMembershipDeps {
  serverId: number;
  /** The configuration the server starts with (the tree's, if a reconfiguration wrote it). */
  initial: ClusterConfig;
  /** False for a standalone server: it cannot be reconfigured, and /zookeeper/config is "". */
  reconfigurable: boolean;
  /** The log records the tree has not applied (the peer's recent log). */
  unapplied: () => readonly LogRecord[];
  /** The highest zxid logged here, in the log or the tree. */
  lastLoggedZxid: () => number;
  /** The zxid of the tree's last applied txn. */
  lastAppliedZxid: () => number;
  transport: PeerPort;
  logger: LogSink;
}

export class ReconfigMembership {
  private inForce: ClusterConfig;
  private heard = new Map<number, ClusterConfig>();
  private leftOut = new Set<number>();
  /** Set when a configuration came into force: a learner whose place changed re-elects (see takeChanged). */
  private changed = false;
  /** The version of the configuration that left this server out, once said (logged once per version). */
  private outsideSince: number | undefined;

  constructor(private readonly deps: ReconfigMembershipDeps) {
    this.inForce = deps.initial;
    // Restarted: a reconfiguration logged before another is in force, though not applied yet; and
    // the transport must dial the members of what is in play, not only those of the static file.
    this.activateProvedCommitted();
    this.changed = false;
    this.updateTransport();
  }

  get state(): MembershipState {
    const { serverId, unapplied, lastLoggedZxid, lastAppliedZxid } = this.deps;
    return {
      serverId,
      inForce: this.inForce,
      unapplied: unapplied(),
      lastLoggedZxid: lastLoggedZxid(),
      lastAppliedZxid: lastAppliedZxid(),
      heard: this.heard,
      leftOut: this.leftOut,
    };
  }

  /** The configuration in force here (ZooKeeper's getQuorumVerifier, with the members' addresses). */
  get configInForce(): ClusterConfig {
    return this.inForce;
  }

  /** /zookeeper/config's text for the configuration in force ("" for a standalone server). */
  get textInForce(): string {
    return this.deps.reconfigurable ? configText(this.inForce) : "";
  }

  get reconfigurable(): boolean {
    return this.deps.reconfigurable;
  }

  /**
   * The quorums a new term runs with: the configuration in force's, and that of the last
   * reconfiguration logged here — even one a peer showed never commits: a term commits its leader's
   * whole log, so it needs that quorum too (such a server cannot win a sound election anyway).
   */
  termQuorums(): { quorum: QuorumVerifier; pendingConfigs: PendingConfig[] } {
    const pending = loggedReconfigs(this.state).at(-1);
    return { quorum: quorumOf(this.inForce), pendingConfigs: pending === undefined ? [] : [{ zxid: pending.version, quorum: quorumOf(pending) }] };
  }

  /** A configuration came into force: the new one is in force here from now on (each server keeps it in its tree). */
  activate(config: ClusterConfig): void {
    if (config.version <= this.inForce.version) return;
    this.inForce = config;
    for (const version of this.heard.keys()) if (version <= config.version) this.heard.delete(version);
    this.changed = true;
    this.updateTransport();
    const members = config.members.map((m) => `${m.serverId}:${m.role}`).join(",");
    this.deps.logger.info({ version: hex(config.version), members }, "configuration in force");
  }

  /** Brings into force a logged reconfiguration that a later logged one proves committed. */
  activateProvedCommitted(): void {
    const proved = provedCommitted(this.state);
    if (proved !== undefined) this.activate(proved);
  }

  /** Whether a configuration came into force since last asked. */
  takeChanged(): boolean {
    const changed = this.changed;
    this.changed = false;
    return changed;
  }

  /** The transport dials the members of every configuration in play. */
  updateTransport(): void {
    this.deps.transport.updateMembers?.(transportMembers(this.state));
  }

  /**
   * A peer has logged a reconfiguration and not seen it committed. The next leader may be one that
   * logged it, and its term needs a quorum of that configuration too (it may have committed): a
   * server it makes a voter must vote, even one that never logged it — an observer it promotes
   * never saw the proposal, a server it adds may have been cut off, one it brings back was
   * removed. Elections here count it as in play until this server serves (its log is then its
   * leader's, the reconfiguration in it or truncated away) or a newer configuration is in force.
   * Voting grants nothing by itself: the leader's establishment still needs every quorum, and
   * the logs of whoever backs it are what Zab syncs from.
   *
   * Returns whether this server's election view changed (an election under way must restart).
   */
  hearPending(from: number, offered: OfferedConfig): boolean {
    if (this.heard.has(offered.version) || settledByLog(this.state, offered.version)) return false;
    const config = this.parse(from, offered);
    if (config === undefined) return false;
    const before = electionView(this.state);
    const heard = hearPending(this.state, config);
    if (heard === undefined) return false;
    this.heard = heard;
    this.deps.logger.info({ from, version: hex(config.version) }, "heard of a pending reconfiguration");
    return !sameView(before, electionView(this.state));
  }

  /**
   * A peer says a newer configuration than ours is in force (ZooKeeper adopts it from a
   * notification too): only a committed configuration is ever in force, so it is safe to run with.
   * Peers are trusted here as everywhere in the quorum protocol (mutual TLS keeps strangers out).
   * A server that was down, or cut off, while the membership changed learns it here — that it was
   * removed, or whom to vote with now. Returns whether it was adopted.
   */
  adopt(from: number, offered: OfferedConfig): boolean {
    const config = this.parse(from, offered);
    if (config === undefined) return false;
    this.deps.logger.info({ from, version: hex(config.version) }, "adopting a newer configuration from a peer");
    this.activate(config);
    this.changed = false;
    return true;
  }

  /**
   * A peer's notification says what its tree holds (see leftOutBy). Returns whether this server's
   * election view changed (an election under way must restart).
   */
  hearApplied(from: number, peer: PeerApplied): boolean {
    const leftOut = hearApplied(this.state, peer);
    if (leftOut === undefined) return false;
    const before = electionView(this.state);
    const added = [...leftOut].filter((version) => !this.leftOut.has(version));
    this.leftOut = leftOut;
    this.deps.logger.info(
      { from, versions: added.map(hex), peerInForce: hex(peer.inForce), peerApplied: hex(peer.applied) },
      "a peer's tree went past a pending reconfiguration without it: it never commits",
    );
    return !sameView(before, electionView(this.state));
  }

  /** This server serves: its log is its leader's now, and what it heard of is settled there. */
  serving(): void {
    this.heard.clear();
    this.leftOut.clear();
  }

  /** The view to elect with; a server outside every configuration says so once per version. */
  electionViewToLook(): ElectionView {
    const view = electionView(this.state);
    if (view !== undefined) return view;
    if (this.outsideSince !== this.inForce.version) {
      this.outsideSince = this.inForce.version;
      this.deps.logger.warn({ version: hex(this.inForce.version) }, "not a member of the configuration in force: not serving");
    }
    return outsiderView(this.state);
  }

  private parse(from: number, offered: OfferedConfig): ClusterConfig | undefined {
    const config = parseOffered(offered);
    if (config === undefined && Number.isSafeInteger(offered.version)) {
      this.deps.logger.warn({ from, version: hex(offered.version) }, "a peer sent a malformed configuration: ignored");
    }
    return config;
  }
}

/**
 * The configuration a server starts with: its membership text (version 0 unless the text names one),
 * or, for a standalone server (no text), its one member with no addresses.
 */
export function staticConfig(membershipText: string, servers: readonly { id: number; role: MemberRole }[]): ClusterConfig {
  if (membershipText === "") {
    return { version: 0, members: servers.map((s) => ({ serverId: s.id, host: "", quorumPort: 0, electionPort: 0, role: s.role })) };
  }
  const { members, version } = parseMembership(membershipText);
  return { version: Number(version ?? 0n), members };
}
