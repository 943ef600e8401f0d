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
  /** Number of changes to the data (setData), 0 at create. */
  version: number;
  /** Number of changes to the children list. */
  cversion: number;
  /** Number of changes to the ACL. */
  aversion: number;
  /** Owning session id for ephemerals, 0n for persistent nodes; what containers and TTL nodes show here differs by side. */
  ephemeralOwner: bigint;
  /** Length of the data in bytes. */
  dataLength: number;
  /** Number of children. */
  numChildren: number;
}

/** An identity an ACL entry grants to, and that a session can be authenticated as. */
export interface Id {
  /** `world`, `auth`, `digest`, `ip`, `x509` (or `super`, as `whoAmI` reports it). */
  scheme: string;
  /** What the scheme identifies: `anyone`, `user:<base64 SHA-1>`, `10.0.0.0/8`, a subject DN. */
  id: string;
}

/** One entry of a znode's ACL: the permissions `perms` granted to `id`. */
export interface Acl {
  /** Bit set of Perms (READ 1, WRITE 2, CREATE 4, DELETE 8, ADMIN 16). */
  perms: number;
  /** Who gets them. */
  id: Id;
}

/** Permission bits of an ACL entry, ZooKeeper's numbers; `ALL` is every one of them. */
export const Perms = { READ: 1, WRITE: 2, CREATE: 4, DELETE: 8, ADMIN: 16, ALL: 31 } as const;

/** ZooKeeper's getPermString (zkCli's getAcl, the audit log's acl): c d r w a, in that order. */
export function permString(perms: number): string {
  return (
    (perms & Perms.CREATE ? "c" : "") +
    (perms & Perms.DELETE ? "d" : "") +
    (perms & Perms.READ ? "r" : "") +
    (perms & Perms.WRITE ? "w" : "") +
    (perms & Perms.ADMIN ? "a" : "")
  );
}

/** world:anyone with every permission: what the server applies when no ACL is given. */
export const OPEN_ACL_UNSAFE: readonly Acl[] = Object.freeze([Object.freeze({ perms: Perms.ALL, id: Object.freeze({ scheme: "world", id: "anyone" }) })]);

/** Every permission for the ids the creating session authenticated as (ZooKeeper's CREATOR_ALL_ACL). */
export const CREATOR_ALL_ACL: readonly Acl[] = Object.freeze([Object.freeze({ perms: Perms.ALL, id: Object.freeze({ scheme: "auth", id: "" }) })]);

/** Reading for everyone, nothing else (ZooKeeper's READ_ACL_UNSAFE). */
export const READ_ACL_UNSAFE: readonly Acl[] = Object.freeze([Object.freeze({ perms: Perms.READ, id: Object.freeze({ scheme: "world", id: "anyone" }) })]);

/** What kind of node `create` makes (ZooKeeper's CreateMode). */
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
