/**
 * Vote order and vote checks for FastLeaderElection. Votes are ordered by (peerEpoch, zxid, leader):
 * the server with the newest epoch wins, then the one with the longest log, then the higher id
 * (ZooKeeper's totalOrderPredicate).
 */
import { isZxid, ZXID_EPOCH_LIMIT } from "../store/zxid.js";
import type { ServerState, Vote } from "./types.js";

/**
 * What an observer proposes: nobody. Observers ask for the leader but never vote (ZooKeeper gives
 * a non-voting server the initial vote Long.MIN_VALUE for id, zxid and epoch). Server ids start at
 * 1, so every real vote sorts above this one, and on the wire (proto/peer.proto, unsigned fields)
 * it is simply the empty Vote.
 */
export const NO_VOTE: Readonly<Vote> = Object.freeze({ leader: 0, zxid: 0, peerEpoch: 0 });

export function isNoVote(vote: Vote): boolean {
  return vote.leader === NO_VOTE.leader && vote.zxid === NO_VOTE.zxid && vote.peerEpoch === NO_VOTE.peerEpoch;
}

/** Negative if `a` sorts below `b`, zero if equal, positive if above: (peerEpoch, zxid, leader). */
export function compareVotes(a: Vote, b: Vote): number {
  if (a.peerEpoch !== b.peerEpoch) return a.peerEpoch < b.peerEpoch ? -1 : 1;
  if (a.zxid !== b.zxid) return a.zxid < b.zxid ? -1 : 1;
  if (a.leader !== b.leader) return a.leader < b.leader ? -1 : 1;
  return 0;
}

/**
 * A server id as the election accepts it: a positive safe integer (the server config narrows it to
 * 1..254, ZooKeeper's myid); 0 is nobody, see NO_VOTE.
 */
export function isServerId(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 1;
}

export function isPeerEpoch(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 && value < ZXID_EPOCH_LIMIT;
}

/** A well-formed vote: NO_VOTE, or (server id, zxid, epoch) each in range. Peer input: never trusted. */
export function isWellFormedVote(vote: unknown): vote is Vote {
  if (typeof vote !== "object" || vote === null) return false;
  const v = vote as Record<string, unknown>;
  if (v.leader === NO_VOTE.leader && v.zxid === NO_VOTE.zxid && v.peerEpoch === NO_VOTE.peerEpoch) return true;
  return isServerId(v.leader) && isZxid(v.zxid) && isPeerEpoch(v.peerEpoch);
}

const PEER_STATES: ReadonlySet<unknown> = new Set<ServerState>(["looking", "following", "leading", "observing"]);

export function isServerState(value: unknown): value is ServerState {
  return PEER_STATES.has(value);
}
