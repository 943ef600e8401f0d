/**
 * The public types of the corral SDK (DESIGN.md §6). 64-bit values a user sees — zxids, session ids,
 * ephemeralOwner — are `bigint`; everything else is a plain `number`.
 */
import type { ZkErrorName } from "../common/errors.js";

/** Znode metadata as ZooKeeper's Stat record. */
export interface Stat {
  /** zxid of the create. */
  czxid: bigint;
  /** zxid of the last data change. */
  mzxid: bigint;
  /** zxid of the last change to the children list. */
  pzxid: bigint;
  /** Creation time, ms since the Unix epoch. */
  ctime: number;
  /** Last data change time, ms since the Unix epoch. */
  mtime: number;
  version: number;
  cversion: number;
  aversion: number;
  /** Owning session id for ephemerals, 0n for persistent nodes (containers and TTL nodes encode their kind). */
  ephemeralOwner: bigint;
  dataLength: number;
  numChildren: number;
}

export { CREATE_MODE_FLAGS, isSequentialMode, isTtlMode, OPEN_ACL_UNSAFE, Perms } from "../common/znode.js";
export type { Acl, CreateMode, Id } from "../common/znode.js";
import type { Acl, CreateMode } from "../common/znode.js";

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

export interface WatchedEvent {
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
 * "connecting" is only ever seen before `Client.connect` resolves.
 */
export type ClientState = "connecting" | "connected" | "disconnected" | "reconnected" | "expired" | "closed";

/** pino-compatible logger subset (console works too). */
export interface ClientLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface ConnectOptions {
  /** Requested session timeout; the server negotiates it. Default 10 000. */
  sessionTimeoutMs?: number;
  /** Give up if no server accepted the session within this time (ZkError CONNECTIONLOSS). Default: sessionTimeoutMs. */
  connectTimeoutMs?: number;
  /** Try hosts in random order, as ZooKeeper does. Default true. */
  shuffleHosts?: boolean;
  /** Resume an existing session (with its password) instead of creating one. */
  sessionId?: bigint;
  password?: Uint8Array;
  logger?: ClientLogger;
}

export interface CreateOptions {
  mode?: CreateMode;
  /** Empty or absent: world:anyone with every permission. */
  acl?: readonly Acl[];
  /** Required for the TTL modes, forbidden otherwise. */
  ttlMs?: number;
}

export interface WatchOptions {
  watch?: Watcher;
}

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

/** One entry of a multi's answer, ZooKeeper's OpResult. */
export type OpResult =
  | { type: "create"; path: string; stat: Stat }
  | { type: "delete" }
  | { type: "setData"; stat: Stat }
  | { type: "check" }
  /** Only in ZkMultiError.results: err 0 before the failed op, its code, RUNTIMEINCONSISTENCY after. */
  | { type: "error"; err: number; code: ZkErrorName };
