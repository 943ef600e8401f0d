/**
 * The membership a cluster member runs with, and the reconfiguration that changes it (ZooKeeper's
 * dynamic reconfiguration, PrepRequestProcessor's reconfig case): what is decided from the request
 * and the configuration in force, with ZooKeeper's errors in ZooKeeper's order. Pure: the leader's
 * host supplies what it knows (the synced learners, whether one is in flight).
 */
import { ZkError } from "../common/errors.js";
import {
  checkDistinct,
  formatMembership,
  MEMBERSHIP_TEXT_BYTES_MAX,
  parseMember,
  parseMembership,
  type MemberAddress,
  type MemberRole,
} from "../common/membership.js";
import { QuorumVerifier } from "../consensus/quorum.js";
import { decodeTxn } from "../store/txn-codec.js";
import type { DataTree } from "../store/data-tree.js";
import type { LogRecord } from "../consensus/messages.js";
import type { ClusterMembersReply, MemberReply } from "./requests.js";

export interface ClusterConfig {
  /** The zxid of the reconfiguration that installed it; 0 for the configuration the servers started with. */
  version: number;
  members: readonly MemberAddress[];
}

const UTF8 = new TextEncoder();
const TEXT = new TextDecoder();

export function quorumOf(config: ClusterConfig): QuorumVerifier {
  return new QuorumVerifier(
    config.members.filter((m) => m.role === "participant").map((m) => m.serverId),
    config.members.filter((m) => m.role === "observer").map((m) => m.serverId),
  );
}

export function roleOf(config: ClusterConfig, serverId: number): MemberRole | undefined {
  return config.members.find((m) => m.serverId === serverId)?.role;
}

/** /zookeeper/config's text for `config` (ZooKeeper's QuorumVerifier.toString). */
export function configText(config: ClusterConfig): string {
  return formatMembership(config.members, BigInt(config.version));
}

/** The configuration a reconfig txn at `zxid` installs (its data is that configuration's text). */
export function configOfTxnData(data: Uint8Array, zxid: number): ClusterConfig {
  return { version: zxid, members: parseMembership(TEXT.decode(data)).members };
}

/** The configuration a tree holds, if a reconfiguration wrote it (before that, /zookeeper/config is each server's own view). */
export function configOfTree(tree: DataTree): ClusterConfig | undefined {
  const node = tree.getNode("/zookeeper/config");
  if (node === undefined || node.stat.mzxid === 0) return undefined;
  return configOfTxnData(node.data, node.stat.mzxid);
}

/** Reconfigurations among logged records not known committed, oldest first, newer than `after`. */
export function reconfigsIn(records: readonly LogRecord[], after: number): ClusterConfig[] {
  const found: ClusterConfig[] = [];
  for (const record of records) {
    if (record.zxid <= after) continue;
    const txn = decodeTxn(record.record);
    if (txn.body.type === "reconfig") found.push(configOfTxnData(txn.body.data, record.zxid));
  }
  return found;
}

/** A reconfig request as ZooKeeper's ReconfigRequest has it (null: not given). */
export interface ReconfigRequestFields {
  joining: string | null;
  leaving: string | null;
  newMembers: string | null;
  /** The configuration version the change is meant for, or -1 for whatever is in force. */
  fromConfig: bigint;
}

export interface ReconfigContext {
  enabled: boolean;
  /** The configuration in force. */
  current: ClusterConfig;
  /** A reconfiguration is proposed and not yet committed. */
  inFlight: boolean;
  /** The leader and the learners synced with it: a quorum of the new configuration must be among them. */
  synced: readonly number[];
}

/**
 * The configuration `request` asks for, checked in ZooKeeper's order up to (not including) the
 * ACL check, which the caller does last: RECONFIGDISABLED, RECONFIGINPROGRESS, BADVERSION,
 * BADARGUMENTS (malformed, or fewer than two voters), NEWCONFIGNOQUORUM. `zxid`: the txn's, which
 * becomes the new version.
 */
export function planReconfig(request: ReconfigRequestFields, context: ReconfigContext, zxid: number): ClusterConfig {
  if (!context.enabled) throw new ZkError("RECONFIGDISABLED", "reconfiguration is disabled (reconfigEnabled)");
  if (context.inFlight) throw new ZkError("RECONFIGINPROGRESS", "another reconfiguration is in progress");
  const current = context.current;
  if (request.fromConfig !== -1n && request.fromConfig !== BigInt(current.version)) {
    throw new ZkError("BADVERSION", `reconfiguration from version ${request.fromConfig.toString(16)}, but the last seen is ${current.version.toString(16)}`);
  }
  let members: MemberAddress[];
  if (request.newMembers !== null) {
    members = parseMembership(request.newMembers).members;
  } else {
    const next = new Map(current.members.map((m) => [m.serverId, m]));
    for (const leaving of splitList(request.leaving)) {
      if (!/^\d{1,9}$/.test(leaving)) throw new ZkError("BADARGUMENTS", `leaving server id "${leaving}" is not a number`);
      next.delete(Number(leaving));
    }
    for (const joiner of splitList(request.joining)) {
      const parts = joiner.split("=");
      if (parts.length !== 2) throw new ZkError("BADARGUMENTS", "Wrong format of server string");
      const member = parseMember(parts[0]!, parts[1]!, true);
      next.set(member.serverId, member);
    }
    members = [...next.values()];
    checkDistinct(members);
  }
  const config: ClusterConfig = { version: zxid, members };
  if (members.filter((m) => m.role === "participant").length < 2) {
    throw new ZkError("BADARGUMENTS", "Reconfig failed - new configuration must include at least 2 followers");
  }
  // Every election notification carries the configuration: one too long for them would stop every server's elections.
  if (UTF8.encode(configText(config)).byteLength > MEMBERSHIP_TEXT_BYTES_MAX) {
    throw new ZkError("BADARGUMENTS", `Reconfig failed - the new configuration's text is over ${MEMBERSHIP_TEXT_BYTES_MAX} bytes`);
  }
  if (!quorumOf(config).containsQuorum(context.synced)) {
    throw new ZkError("NEWCONFIGNOQUORUM", "Reconfig failed - there must be a connected and synced quorum in new configuration");
  }
  return config;
}

/** The txn data of a reconfiguration: the new configuration's text. */
/** getMembers' answer: `config`'s members in id order, each with its client address when `addressOf` knows it. */
export function membersReply(config: ClusterConfig, addressOf?: (serverId: number) => { host: string; port: number } | undefined): ClusterMembersReply {
  const members = [...config.members]
    .sort((a, b) => a.serverId - b.serverId)
    .map((member): MemberReply => {
      const clientAddress = addressOf?.(member.serverId);
      return { serverId: member.serverId, role: member.role, ...(clientAddress === undefined ? {} : { clientAddress }) };
    });
  return { version: config.version, members };
}

export function reconfigTxnData(config: ClusterConfig): Uint8Array {
  return UTF8.encode(configText(config));
}

function splitList(text: string | null): string[] {
  if (text === null) return [];
  return text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}
