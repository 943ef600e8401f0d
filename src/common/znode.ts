/**
 * The znode vocabulary shared by the server and the SDK: Stat, ACLs, permissions and create modes,
 * with ZooKeeper's own numbers.
 */

/**
 * ZooKeeper's Stat record. Generic in the zxid only: the server keeps zxids as `number`s (exact, as
 * store/zxid.ts asserts), while the SDK hands them out as the 64-bit `bigint`s the wire carries.
 */
export interface StatFields<Zxid> {
  /** zxid of the create. */
  czxid: Zxid;
  /** zxid of the last data change. */
  mzxid: Zxid;
  /** zxid of the last change to the children list. */
  pzxid: Zxid;
  /** Creation time, ms since the Unix epoch. */
  ctime: number;
  /** Last data change time, ms since the Unix epoch. */
  mtime: number;
  version: number;
  cversion: number;
  aversion: number;
  /** Owning session id for ephemerals, 0n for persistent nodes; what containers and TTL nodes show here differs by side. */
  ephemeralOwner: bigint;
  dataLength: number;
  numChildren: number;
}

export interface Id {
  scheme: string;
  id: string;
}

export interface Acl {
  /** Bit set of Perms (READ 1, WRITE 2, CREATE 4, DELETE 8, ADMIN 16). */
  perms: number;
  id: Id;
}

export const Perms = { READ: 1, WRITE: 2, CREATE: 4, DELETE: 8, ADMIN: 16, ALL: 31 } as const;

/** world:anyone with every permission: what the server applies when no ACL is given. */
export const OPEN_ACL_UNSAFE: readonly Acl[] = Object.freeze([Object.freeze({ perms: Perms.ALL, id: Object.freeze({ scheme: "world", id: "anyone" }) })]);

/** Every permission for the ids the creating session authenticated as (ZooKeeper's CREATOR_ALL_ACL). */
export const CREATOR_ALL_ACL: readonly Acl[] = Object.freeze([Object.freeze({ perms: Perms.ALL, id: Object.freeze({ scheme: "auth", id: "" }) })]);

/** Reading for everyone, nothing else (ZooKeeper's READ_ACL_UNSAFE). */
export const READ_ACL_UNSAFE: readonly Acl[] = Object.freeze([Object.freeze({ perms: Perms.READ, id: Object.freeze({ scheme: "world", id: "anyone" }) })]);

export type CreateMode =
  "persistent" | "ephemeral" | "persistent-sequential" | "ephemeral-sequential" | "container" | "persistent-with-ttl" | "persistent-sequential-with-ttl";

/** ZooKeeper's CreateMode flag numbers, as they travel on every wire. */
export const CREATE_MODE_FLAGS: Readonly<Record<CreateMode, number>> = Object.freeze({
  persistent: 0,
  ephemeral: 1,
  "persistent-sequential": 2,
  "ephemeral-sequential": 3,
  container: 4,
  "persistent-with-ttl": 5,
  "persistent-sequential-with-ttl": 6,
});

/** Create modes indexed by their wire flag: every codec that reads a flag looks it up here. */
export const CREATE_MODES_BY_FLAG: readonly CreateMode[] = Object.freeze(
  (Object.entries(CREATE_MODE_FLAGS) as [CreateMode, number][]).sort((a, b) => a[1] - b[1]).map(([mode]) => mode),
);

export function isSequentialMode(mode: CreateMode): boolean {
  return mode === "persistent-sequential" || mode === "ephemeral-sequential" || mode === "persistent-sequential-with-ttl";
}

/** Largest TTL a TTL node's ephemeralOwner can carry (its low 40 bits), as ZooKeeper's EphemeralType.TTL. */
export const TTL_MS_MAX = 2 ** 40 - 1;

export function isTtlMode(mode: CreateMode): boolean {
  return mode === "persistent-with-ttl" || mode === "persistent-sequential-with-ttl";
}

/**
 * A znode's data when it was written as null (ZooKeeper's create or setData with null data; only
 * ZooKeeper-protocol clients can): empty bytes everywhere, except that a ZooKeeper client reads
 * it back as null (zkCli prints "null"). Told apart by identity; the log, snapshots and forwarded
 * requests keep it (writeNullableBytes).
 */
export const NULL_DATA: Uint8Array = Object.freeze(new Uint8Array(0));
