/**
 * The public types of the corral SDK (docs/architecture.md §6). 64-bit values a user sees — zxids, session ids,
 * ephemeralOwner — are `bigint`; everything else is a plain `number`.
 */
import type { ZkErrorName } from "../common/errors.js";
import type { StatFields } from "../common/znode.js";

/** Znode metadata as ZooKeeper's Stat record. */
export interface Stat extends StatFields<bigint> {
  /** Owning session id for ephemerals; 0n for every other node, containers and TTL nodes included (as ZooKeeper shows them). */
  ephemeralOwner: bigint;
}

export { CREATE_MODE_FLAGS, CREATOR_ALL_ACL, isSequentialMode, isTtlMode, OPEN_ACL_UNSAFE, Perms, READ_ACL_UNSAFE } from "../common/znode.js";
export type { Acl, CreateMode, Id } from "../common/znode.js";
import type { Acl, CreateMode } from "../common/znode.js";

/** One id the session is authenticated as, as `whoAmI` reports it (ZooKeeper's ClientInfo). */
export interface ClientInfo {
  /** "ip", "digest" or "super". */
  authScheme: string;
  /** digest: the user name; ip: the client's address as the server sees it; super: "". */
  user: string;
}

/** Data arguments: bytes, or a string sent as UTF-8. */
export type Data = Uint8Array | string;

export type { AddWatchMode, WatcherType } from "../common/watch-modes.js";

/** Events about a znode, sent by the server when a watch fires. */
export type NodeEventType = "NodeCreated" | "NodeDeleted" | "NodeDataChanged" | "NodeChildrenChanged";

/**
 * Every event a watcher can get: the node events, and the event a watcher gets when
 * `removeWatches` / `removeAllWatches` takes it away (one-time child watch → ChildWatchRemoved,
 * one-time data or exist watch → DataWatchRemoved, persistent or recursive → PersistentWatchRemoved).
 */
export type WatchedEventType = NodeEventType | "DataWatchRemoved" | "ChildWatchRemoved" | "PersistentWatchRemoved";

/** What a watcher is called with. */
export interface WatchedEvent {
  /** What happened. */
  type: WatchedEventType;
  /** The znode the event is about, relative to the chroot. */
  path: string;
  /** zxid of the transaction that fired it; -1n for the WatchRemoved events (ZooKeeper's NO_ZXID). */
  zxid: bigint;
}

/**
 * A watch callback. A one-time watch (getData, exists, getChildren) calls it once; a watch of
 * `addWatch` on every event until it is removed. The same function set twice on one path and kind
 * is one watch.
 */
export type Watcher = (event: WatchedEvent) => void;

/**
 * Connection state as the "state" event reports it.
 * "connecting" is only ever seen before `Client.connect` resolves. "authFailed" (ZooKeeper's
 * AuthFailed): the server refused the session's SASL login on a new connection; the client does not
 * reconnect, and every call fails with AUTHFAILED, as ZooKeeper's client in state AUTH_FAILED.
 * A client with `canBeReadOnly` may be "connected" or "reconnected" read-only: `client.readOnly`
 * tells, and it changes only along with one of these two states (see ConnectOptions.canBeReadOnly).
 */
export type ClientState = "connecting" | "connected" | "disconnected" | "reconnected" | "expired" | "authFailed" | "closed";

/** pino-compatible logger subset (console works too). */
export interface ClientLogger {
  /** Detail: each connection attempt, a stream that ended, each decision of followMembership that changed nothing. */
  debug(obj: object, msg?: string): void;
  /** Changes worth knowing: the server list updated, a session expired, a move off a read-only server. */
  info(obj: object, msg?: string): void;
  /** Something went wrong and the client carries on: a server refused the connection, nothing heard for 2/3 of the timeout. */
  warn(obj: object, msg?: string): void;
  /** A server broke the protocol, or the membership follower failed; the client carries on. */
  error(obj: object, msg?: string): void;
}

/** What `Client.connect` takes besides the connect string. */
export interface ConnectOptions {
  /** Requested session timeout; the server negotiates it. Default 10 000. */
  sessionTimeoutMs?: number;
  /** Give up if no server accepted the session within this time (ZkError CONNECTIONLOSS). Default: sessionTimeoutMs. */
  connectTimeoutMs?: number;
  /** Try hosts in random order, as ZooKeeper does. Default true. */
  shuffleHosts?: boolean;
  /** Resume an existing session (with its password) instead of creating one. */
  sessionId?: bigint;
  /** The password of the session to resume (`client.sessionPassword` of the client that opened it); with `sessionId`. */
  password?: Uint8Array;
  /**
   * Accept a read-only session (ZooKeeper's canBeReadOnly), from a server with readOnlyModeEnabled
   * that is cut off from its quorum; default false, and such a server is then passed over. While
   * `client.readOnly` is true, reads answer from that server's tree as it stands (possibly stale),
   * and writes and syncs fail with ZkError NOTREADONLY. The client keeps looking for a server with
   * a quorum among its other hosts and moves there as soon as one takes the session ("disconnected",
   * then "reconnected" with `readOnly` false). A session first opened read-only is known to its
   * server alone: the move (or any reconnect) gets a new session, with a new `sessionId` — no
   * "expired" is reported, as it owned nothing (no ephemerals) — and watches are set again on it.
   * A session that a quorum has held is resumed as always.
   */
  canBeReadOnly?: boolean;
  /** Where the client logs what it decides (reconnects, server list changes, expiry); default: nowhere. */
  logger?: ClientLogger;
  /** Connect over TLS (a server with clientPortTls); absent = plain text. */
  tls?: ClientTlsOptions;
  /**
   * Log in with SASL on every connection, before anything else is sent on it, as ZooKeeper's client
   * does with a JAAS `Client` section (`saslFromJaasFile` reads one into this). `Client.connect`
   * resolves once the first login succeeded, and the session then holds `sasl:<user>`; a refused
   * login rejects it with AUTHFAILED (or, later, ends in the "authFailed" state). Absent: no SASL.
   */
  sasl?: SaslOptions;
  /**
   * Follow the cluster's membership (as Curator's EnsembleTracker does): once the session is
   * established, and after every reconfiguration, the client reads the members in force
   * (`getMembers`, prompted by a watch on /zookeeper/config) and makes their client addresses its
   * server list with `updateServerList`, keeping its chroot — so a client started with servers
   * 1..3 reaches a server 4 added later, and leaves a server that was removed. Default false, as
   * ZooKeeper's own client (and etcd's, whose endpoint sync is off by default): it replaces the
   * addresses you gave with the ones the servers advertise.
   *
   * It never throws into your code and never loops: it acts on a change of configuration version,
   * re-reads after every reconnect, and stops on close or expiry. It leaves the list alone when the
   * server it is connected to advertises another address than the one this client dialled (a
   * load balancer, NAT or port mapping between them: those addresses may not be reachable from
   * here), or when no member's address is known; a member whose address the answering server does
   * not know (one added by reconfig that never called it) only adds the others, it removes nothing.
   */
  followMembership?: boolean;
}

/** A SASL login (RFC 4422), with the mechanism the server's JAAS Server section configures. */
export type SaslOptions = DigestMd5SaslOptions | GssapiSaslOptions;

/** DIGEST-MD5 (RFC 2831): a user of the server's `user_<name>` options and its password. */
export interface DigestMd5SaslOptions {
  mechanism: "DIGEST-MD5";
  username: string;
  password: string;
  /** The service part of the digest-uri (ZooKeeper's zookeeper.sasl.client.username); default "zookeeper". */
  serviceName?: string;
}

/**
 * Kerberos (GSSAPI, RFC 4752, QOP auth) through the system's MIT libgssapi_krb5, as a JAAS
 * section with Krb5LoginModule logs in: the ticket cache (`useTicketCache`), a keytab
 * (`useKeyTab`), or the cache first and the keytab when it has no ticket (both). The Kerberos
 * configuration is the library's (KRB5_CONFIG, else /etc/krb5.conf). The server is
 * `<serviceName>@<host>` for the host each connection dials, or `serverPrincipal`.
 */
export interface GssapiSaslOptions {
  mechanism: "GSSAPI";
  /** The client's principal (`name@REALM`; without a realm, the default realm's); default: the ticket cache's. Required with a keytab alone. */
  principal?: string;
  /** Take tickets from a credentials cache: `ticketCache` (a file), else the default one (KRB5CCNAME). */
  useTicketCache?: boolean;
  ticketCache?: string;
  /** Get tickets with the key of `principal` in `keyTab` (else the default client keytab), into a cache of this client's own. */
  useKeyTab?: boolean;
  keyTab?: string;
  /** The server's service name (zookeeper.sasl.client.username); default "zookeeper". */
  serviceName?: string;
  /** The server's whole principal (zookeeper.server.principal, e.g. `zookeeper/host@REALM`); replaces serviceName and the host. */
  serverPrincipal?: string;
}

/** PEM text or bytes, as node:tls takes them. */
export type Pem = string | Uint8Array;

/**
 * TLS for the client: whom to trust and, for servers that verify clients (tlsClientAuth need or
 * want), the client's own certificate and key, which give its sessions the x509 id of the
 * certificate's subject.
 */
export interface ClientTlsOptions {
  /** CA certificates the server's certificate must chain to; default: the system's roots. */
  ca?: Pem;
  /** The client certificate (chain); with `key`. */
  cert?: Pem;
  /** Its private key (unencrypted PEM); with `cert`. */
  key?: Pem;
  /** The name the server's certificate must carry, when it is not the host dialled (an IP, a load balancer). */
  servername?: string;
}

/** How `create`, `createWithStat` and `op.create` make a node. */
export interface CreateOptions {
  /**
   * "persistent" by default. A "container" is deleted by the server once its last child is gone;
   * a "persistent-with-ttl" / "persistent-sequential-with-ttl" node once it has had no children
   * and no data change for `ttlMs` (the server must enable TTL nodes, else UNIMPLEMENTED).
   */
  mode?: CreateMode;
  /** Empty or absent: world:anyone with every permission. */
  acl?: readonly Acl[];
  /** Required for the TTL modes (1..2^40 - 1 ms, ZooKeeper's range), forbidden otherwise: else BADARGUMENTS. */
  ttlMs?: number;
}

/** Options of the reads that can leave a one-time watch: `exists`, `getData`, `getChildren`, `getConfig`. */
export interface WatchOptions {
  /** Called once, with the event, on the next change the read could have seen (see `Watcher`). */
  watch?: Watcher;
}

/**
 * A membership change (ZooKeeper's reconfig): either incremental — `joining` members
 * ("server.N=host:quorumPort:electionPort[:participant|observer];[clientHost:]clientPort") and
 * `leaving` server ids — or `newMembers`, the whole new list in the same form.
 */
export interface ReconfigChange {
  /** Member lines to add (or, with a known id, to change that member's role or ports). */
  joining?: readonly string[];
  /** Server ids to remove. */
  leaving?: readonly number[];
  /** The whole new member list (non-incremental); not with `joining` or `leaving`. */
  newMembers?: readonly string[];
  /** The configuration version the change is meant for (BADVERSION if another is in force); any by default. */
  fromConfig?: bigint;
}

/** A cluster configuration as /zookeeper/config holds it: its text, its members and its version. */
export interface ClusterConfiguration {
  /** "server.N=…" lines, then "version=<hex>". */
  text: string;
  /** The zxid of the reconfiguration that made it (0 for the configuration the servers started with). */
  version: bigint;
  stat: Stat;
}

/** One member of the configuration in force, as `getMembers` reports it. */
export interface ClusterMember {
  /** Its id, 1..254. */
  serverId: number;
  /** Observers serve clients but do not vote. */
  role: "participant" | "observer";
  /**
   * Where clients dial its corral client port ("host:port", "[ipv6]:port"); absent when the
   * answering server does not know it (a server added by reconfig that has not called that one).
   */
  clientAddress?: string;
}

/** The configuration in force on the server that answered, with the members' client addresses. */
export interface ClusterMembers {
  /** As ClusterConfiguration.version: the zxid of the reconfiguration that made it, 0 for the static one. */
  version: bigint;
  /** In server id order. */
  members: ClusterMember[];
}

/** The expected version of a conditional write: `setData`, `delete`, `setACL` and their multi ops. */
export interface VersionOptions {
  /** -1 (the default) matches any version. */
  version?: number;
}

/** One operation of a multi; build them with `op`. */
export type Op =
  | { type: "create"; path: string; data: Uint8Array; mode: CreateMode; acl: readonly Acl[] | undefined; ttlMs: number | undefined }
  | { type: "delete"; path: string; version: number }
  | { type: "setData"; path: string; data: Uint8Array; version: number }
  | { type: "check"; path: string; version: number };

/** One read of `client.multiRead([...])` (ZooKeeper's Op.getData / Op.getChildren); no watches. */
export type ReadOp = { type: "getData"; path: string } | { type: "getChildren"; path: string };

/** One entry of a multiRead's answer: each read succeeds or fails on its own. */
export type ReadOpResult =
  { type: "getData"; data: Uint8Array; stat: Stat } | { type: "getChildren"; children: string[] } | { type: "error"; err: number; code: ZkErrorName };

/** One entry of a multi's answer, ZooKeeper's OpResult. */
export type OpResult =
  | { type: "create"; path: string; stat: Stat }
  | { type: "delete" }
  | { type: "setData"; stat: Stat }
  | { type: "check" }
  /** Only in ZkMultiError.results: err 0 before the failed op, its code, RUNTIMEINCONSISTENCY after. */
  | { type: "error"; err: number; code: ZkErrorName };
