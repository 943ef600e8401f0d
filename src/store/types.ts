/**
 * The records the store speaks: znode metadata, ACLs, transactions and what applying them yields.
 * Shaped after ZooKeeper's own jute records (zookeeper.jute) so that a ZooKeeper wire-protocol
 * front door is a codec over these, not a rewrite.
 *
 * Units and representations inside the server:
 * - zxid: a `number` (epoch * 2^32 + counter). Exact while epoch < 2^21, which `zxid.ts` asserts.
 * - session ids and ephemeralOwner: signed 64-bit `bigint`, as ZooKeeper's `long`.
 * - times: milliseconds since the Unix epoch, `number`, stamped by the leader in prep.
 */

/** Zxids as exact numbers (see above); ephemeralOwner as PERSISTENT_OWNER below describes. */
export type Stat = StatFields<number>;

export { CREATE_MODE_FLAGS, OPEN_ACL_UNSAFE, Perms, TTL_MS_MAX } from "../common/znode.js";
export type { Acl, CreateMode, Id } from "../common/znode.js";
import { isSequentialMode, TTL_MS_MAX } from "../common/znode.js";
import type { Acl, StatFields } from "../common/znode.js";

/** Whether a create in this mode gets a sequential suffix. */
export const isSequential = isSequentialMode;

/**
 * ephemeralOwner also encodes the special node kinds, as ZooKeeper's EphemeralType does:
 * 0 = persistent, CONTAINER_OWNER = container, top byte 0xFF = TTL (ttl ms in the low 40 bits),
 * anything else = the owning session id.
 */
export const PERSISTENT_OWNER = 0n;
export const CONTAINER_OWNER = -(1n << 63n);
const TTL_TAG = BigInt.asIntN(64, 0xffn << 56n);
const TTL_MASK = BigInt(TTL_MS_MAX);

export function ttlOwner(ttlMs: number): bigint {
  return BigInt.asIntN(64, TTL_TAG | (BigInt(ttlMs) & TTL_MASK));
}

export type OwnerKind = "persistent" | "ephemeral" | "container" | "ttl";

export function ownerKind(owner: bigint): OwnerKind {
  if (owner === PERSISTENT_OWNER) return "persistent";
  if (owner === CONTAINER_OWNER) return "container";
  if (BigInt.asIntN(64, owner & TTL_TAG) === TTL_TAG) return "ttl";
  return "ephemeral";
}

export function ttlOfOwner(owner: bigint): number {
  return Number(owner & TTL_MASK);
}

/** Who stamped a txn and when: ZooKeeper's TxnHeader. */
export interface TxnHeader {
  sessionId: bigint;
  /** The client's xid for the request that produced this txn (0 for server-made txns). */
  cxid: number;
  zxid: number;
  timeMs: number;
}

/** A state change decided by prep: already validated, fully resolved (sequential names, versions). */
export type TxnBody = CreateTxn | DeleteTxn | SetDataTxn | SetAclTxn | CheckTxn | MultiTxn | CreateSessionTxn | CloseSessionTxn | ErrorTxn | ReconfigTxn;

export interface CreateTxn {
  type: "create";
  /** Final path, sequential suffix already resolved. */
  path: string;
  data: Uint8Array;
  acl: Acl[];
  /** 0n persistent, session id, CONTAINER_OWNER or a ttlOwner(). */
  ephemeralOwner: bigint;
  /** The parent's cversion after this create (parent.cversion + 1 at prep time). */
  parentCversion: number;
}
export interface DeleteTxn {
  type: "delete";
  path: string;
}
export interface SetDataTxn {
  type: "setData";
  path: string;
  data: Uint8Array;
  /** The node's version after this write. */
  version: number;
}
/**
 * A reconfiguration (ZooKeeper's reconfig, a setData of /zookeeper/config): `data` is the new
 * configuration's text, "server.N=…" lines and "version=<this txn's zxid in hex>". Applied, its
 * configuration is the one in force.
 */
export interface ReconfigTxn {
  type: "reconfig";
  data: Uint8Array;
}
export interface SetAclTxn {
  type: "setAcl";
  path: string;
  acl: Acl[];
  /** The node's aversion after this write. */
  aversion: number;
}
/** Only inside a multi: a version check that changes nothing. */
export interface CheckTxn {
  type: "check";
  path: string;
  version: number;
}
export interface MultiTxn {
  type: "multi";
  /** If any op is an ErrorTxn the whole multi failed and changes nothing. */
  ops: (CreateTxn | DeleteTxn | SetDataTxn | CheckTxn | ErrorTxn)[];
}
export interface CreateSessionTxn {
  type: "createSession";
  timeoutMs: number;
  /** Stored so that any server can check a resuming client. */
  password: Uint8Array;
}
export interface CloseSessionTxn {
  type: "closeSession";
}
/** A write that prep rejected. It keeps the zxid sequence and the session's order; it changes nothing. */
export interface ErrorTxn {
  type: "error";
  /** A ZkErrorCode number. */
  err: number;
}

export interface Txn {
  header: TxnHeader;
  body: TxnBody;
}

/** What applying one txn produced, to be answered to the session that sent it. */
export type TxnResult =
  | { type: "create"; path: string; stat: Stat }
  | { type: "delete" }
  | { type: "setData"; stat: Stat }
  | { type: "reconfig"; data: Uint8Array; stat: Stat }
  | { type: "setAcl"; stat: Stat }
  | { type: "check" }
  | { type: "multi"; results: OpResult[] }
  | { type: "createSession" }
  | { type: "closeSession"; deletedPaths: string[] }
  | { type: "error"; err: number };

/** One entry of a multi's answer: ZooKeeper's OpResult (err 0 = success). */
export type OpResult =
  { type: "create"; path: string; stat: Stat } | { type: "delete" } | { type: "setData"; stat: Stat } | { type: "check" } | { type: "error"; err: number };

/** ZooKeeper's Watcher.Event.EventType numbers. */
export const WatchEventType = {
  None: -1,
  NodeCreated: 1,
  NodeDeleted: 2,
  NodeDataChanged: 3,
  NodeChildrenChanged: 4,
  DataWatchRemoved: 5,
  ChildWatchRemoved: 6,
  PersistentWatchRemoved: 7,
} as const;
export type WatchEventTypeValue = (typeof WatchEventType)[keyof typeof WatchEventType];

export interface WatchEvent {
  type: WatchEventTypeValue;
  path: string;
  /** The zxid of the txn that fired it. */
  zxid: number;
}

/** A fired watch addressed to one watcher (a session id inside the server). */
export interface WatchDelivery {
  watcher: bigint;
  event: WatchEvent;
}
