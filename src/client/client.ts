/**
 * The corral client: one session, carried by one long-lived gRPC bidirectional stream at a time
 * (DESIGN.md §5, §6). Requests are written in call order and answered in that order, so in-flight
 * requests wait in a FIFO and each response must match its head. Watch events arrive on the same
 * stream, before the answer of any later read that could see their change.
 *
 * Connection life: connect frame → connect answer → requests/events/pings; on loss every in-flight
 * request fails CONNECTIONLOSS, hosts are retried round-robin with a capped back-off, resuming the
 * session (id + password + last zxid seen); the first requests on the new stream authenticate it
 * again with every credential `addAuthInfo` succeeded with (a server keeps them per connection, as
 * ZooKeeper's client re-sends them), then re-register the watches still held here (setWatches).
 * The server alone decides expiry.
 */
import { EventEmitter } from "node:events";
import type * as grpc from "@grpc/grpc-js";
import { CLIENT_PROTOCOL_BATCHES_SINCE, CLIENT_PROTOCOL_VERSION } from "../common/constants.js";
import { ZkError, ZkErrorCode } from "../common/errors.js";
import type { ZkErrorName } from "../common/errors.js";
import { validatePath } from "../common/paths.js";
import type { ClientFrame, RequestOp } from "../protocol/client-wire.js";
import { hostAddress, parseConnectString, prependChroot, shuffled, stripChroot } from "./connect-string.js";
import type { HostPort } from "./connect-string.js";
import {
  aclFromWire,
  aclToWire,
  addWatchModeNumber,
  checkVersion,
  eventTypeName,
  modeFlag,
  requireStat,
  toBytes,
  ttlToWire,
  watcherTypeNumber,
} from "./convert.js";
import type { DecodedConnectResponse, DecodedResponse, DecodedServerFrame, DecodedWatchEvent } from "./codec.js";
import { Fifo } from "./fifo.js";
import { GrpcTransport, grpcChannelSettings, type ConnectionLoss, type GrpcChannelSettings } from "./grpc-transport.js";
import { multiErrorFromWire, multiResultsFromWire, opsToWire, readOpsToWire, readResultsFromWire } from "./ops.js";
import type {
  Acl,
  ClientInfo,
  AddWatchMode,
  ClientLogger,
  ClientState,
  ConnectOptions,
  CreateMode,
  CreateOptions,
  Data,
  Op,
  OpResult,
  ReadOp,
  ReadOpResult,
  Stat,
  VersionOptions,
  WatchOptions,
  WatchedEventType,
  Watcher,
  WatcherType,
} from "./types.js";
import { isSequentialMode } from "./types.js";
import { WatchRegistry, chunkWatchPaths, type RemovedWatchers } from "./watch-registry.js";

export const DEFAULT_SESSION_TIMEOUT_MS = 10_000;
/** Back-off between connection attempts: first retry at once, then 50 ms doubling up to 1 s. */
export const RECONNECT_BACKOFF_MS_MIN = 50;
export const RECONNECT_BACKOFF_MS_MAX = 1_000;
/** The liveness timer ticks 12 times per negotiated timeout. */
const TICKS_PER_TIMEOUT = 12;
/** Idle sending for 4 ticks (≈ timeout/3) → ping. */
const PING_AFTER_IDLE_TICKS = 4;
/** Nothing received for 8 ticks (≈ 2/3 of the timeout) → the connection is dead. */
const DEAD_AFTER_IDLE_TICKS = 8;
/** setWatches requests are split so that each stays well inside the message limit. */
const SET_WATCHES_BYTES_MAX = 256 * 1024;
const XID_MAX = 0x7fffffff;

/** The next client xid: increasing int32 from 1, wrapping to 1 (never 0 or negative, as ZooKeeper reserves those). */
export function nextXid(xid: number): number {
  return xid >= XID_MAX ? 1 : xid + 1;
}

/** Delay before connection attempt number `attempt` (0-based, counted since the last success). */
export function reconnectDelayMs(attempt: number): number {
  if (attempt <= 0) return 0;
  return Math.min(RECONNECT_BACKOFF_MS_MAX, RECONNECT_BACKOFF_MS_MIN * 2 ** Math.min(attempt - 1, 20));
}

/** What a pending request turns its answer into. */
const Kind = {
  create: 0,
  createWithStat: 1,
  delete: 2,
  exists: 3,
  getData: 4,
  setData: 5,
  getChildren: 6,
  getChildrenWithStat: 7,
  multi: 8,
  sync: 9,
  setWatches: 10,
  close: 11,
  getAcl: 12,
  setAcl: 13,
  addAuth: 14,
  whoAmI: 15,
  addWatchPersistent: 16,
  addWatchRecursive: 17,
  removeWatches: 18,
  checkWatches: 19,
  getEphemerals: 20,
  getAllChildrenNumber: 21,
  multiRead: 22,
} as const;
type KindValue = (typeof Kind)[keyof typeof Kind];

interface Pending {
  xid: number;
  kind: KindValue;
  /** The user's path (for error messages). */
  path: string | undefined;
  /** The server's path (for watch registration). */
  serverPath: string;
  watcher: Watcher | undefined;
  ops: Op[] | ReadOp[] | undefined;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  resolve: (value: any) => void;
  reject: (err: ZkError) => void;
}

type ConnectionPhase = "connecting" | "open" | "dead";

interface Connection {
  /** The transport's name for it; frames and ends of earlier connections are ignored. */
  readonly id: number;
  readonly host: HostPort;
  phase: ConnectionPhase;
  /** Set by the connect answer (protocol 2): frames of one event-loop turn go out as one batch. */
  batching: boolean;
  readonly pending: Fifo<Pending>;
  attemptTimer: NodeJS.Timeout | undefined;
  ticker: NodeJS.Timeout | undefined;
  sentSinceTick: boolean;
  receivedSinceTick: boolean;
  sendIdleTicks: number;
  receiveIdleTicks: number;
}

type Lifecycle = "active" | "closing" | "closed" | "expired";

interface ClientConfig {
  hosts: HostPort[];
  chroot: string | undefined;
  sessionTimeoutMs: number;
  connectTimeoutMs: number;
  sessionId: bigint;
  password: Uint8Array;
  logger: ClientLogger | undefined;
  channel: GrpcChannelSettings;
}

const EMPTY_BYTES = new Uint8Array(0);
const noop = (): void => {};

function positiveInteger(value: unknown, name: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0 || value > 0x7fffffff) {
    throw new ZkError("BADARGUMENTS", `${name} must be a positive integer number of ms, not ${String(value)}`);
  }
  return value;
}

function configFrom(connectString: string, options: ConnectOptions & { credentials?: grpc.ChannelCredentials }): ClientConfig {
  const parsed = parseConnectString(connectString);
  const sessionTimeoutMs = positiveInteger(options.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS, "sessionTimeoutMs");
  const connectTimeoutMs = positiveInteger(options.connectTimeoutMs ?? sessionTimeoutMs, "connectTimeoutMs");
  if ((options.sessionId === undefined) !== (options.password === undefined)) {
    throw new ZkError("BADARGUMENTS", "resuming a session needs both sessionId and password");
  }
  if (options.sessionId !== undefined && typeof options.sessionId !== "bigint") {
    throw new ZkError("BADARGUMENTS", "sessionId must be a bigint");
  }
  if (options.password !== undefined && !(options.password instanceof Uint8Array)) {
    throw new ZkError("BADARGUMENTS", "password must be a Uint8Array");
  }
  if (options.tls !== undefined && options.credentials !== undefined) throw new ZkError("BADARGUMENTS", "give tls or credentials, not both");
  return {
    hosts: options.shuffleHosts === false ? parsed.hosts : shuffled(parsed.hosts),
    chroot: parsed.chroot,
    sessionTimeoutMs,
    connectTimeoutMs,
    sessionId: options.sessionId ?? 0n,
    password: options.password ?? EMPTY_BYTES,
    logger: options.logger,
    channel: grpcChannelSettings(options.tls, options.credentials),
  };
}

export interface Client {
  on(event: "state", listener: (state: ClientState) => void): this;
  on(event: "error", listener: (err: unknown) => void): this;
  once(event: "state", listener: (state: ClientState) => void): this;
  once(event: "error", listener: (err: unknown) => void): this;
  off(event: "state", listener: (state: ClientState) => void): this;
  off(event: "error", listener: (err: unknown) => void): this;
}

/** A corral session. Create one with `Client.connect`. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class Client extends EventEmitter {
  /**
   * Connects to one of the hosts of `connectString` ("h1:p1,h2:p2/optional/chroot") and resolves
   * once a server accepted the session. Rejects with ZkError CONNECTIONLOSS if none did within
   * connectTimeoutMs, SESSIONEXPIRED if the session to resume is gone, BADARGUMENTS for bad options.
   */
  static connect(connectString: string, options: ConnectOptions & { credentials?: grpc.ChannelCredentials } = {}): Promise<Client> {
    let config: ClientConfig;
    try {
      config = configFrom(connectString, options);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Client(config).start();
  }

  private readonly config: ClientConfig;
  private readonly registry = new WatchRegistry();
  /** Credentials the server accepted, in order: sent again on every new connection. */
  private readonly authInfo: { scheme: string; auth: Uint8Array }[] = [];
  private readonly transport: GrpcTransport;
  private lifecycle: Lifecycle = "active";
  private stateValue: ClientState = "connecting";
  private everConnected = false;
  private conn: Connection | null = null;
  private connectionCount = 0;
  private xid = 0;
  private hostIndex = 0;
  private attempt = 0;
  private sessionIdValue: bigint;
  private password: Uint8Array;
  private timeoutMs: number;
  private lastZxid = 0n;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private connectTimer: NodeJS.Timeout | undefined;
  private closeTimer: NodeJS.Timeout | undefined;
  private connectSettle: { resolve: (c: Client) => void; reject: (e: ZkError) => void } | undefined;
  private closePromise: Promise<void> | undefined;
  private closeResolve: (() => void) | undefined;

  private constructor(config: ClientConfig) {
    super();
    this.config = config;
    this.sessionIdValue = config.sessionId;
    this.password = config.password;
    this.timeoutMs = config.sessionTimeoutMs;
    this.transport = new GrpcTransport(config.channel, {
      receive: (id, frame) => {
        if (this.conn !== null && this.conn.id === id) this.onFrame(this.conn, frame);
      },
      lost: (id, cause) => {
        if (this.conn !== null && this.conn.id === id) this.onStreamGone(this.conn, cause);
      },
    });
  }

  /** The last state reported through the "state" event ("reconnected" means connected again). */
  get state(): ClientState {
    return this.stateValue;
  }

  /** True while a server holds this session on an open stream. */
  get connected(): boolean {
    return this.conn !== null && this.conn.phase === "open";
  }

  get sessionId(): bigint {
    return this.sessionIdValue;
  }

  get sessionPassword(): Uint8Array {
    return this.password;
  }

  get negotiatedTimeoutMs(): number {
    return this.timeoutMs;
  }

  /** The highest zxid of any response or watch event received. */
  get lastZxidSeen(): bigint {
    return this.lastZxid;
  }

  /** The chroot of the connect string, if any. */
  get chroot(): string | undefined {
    return this.config.chroot;
  }

  // ---------------------------------------------------------------------------------------------
  // Operations

  /** Creates a znode; resolves with its actual path (sequential suffix included, chroot stripped). */
  create(path: string, data?: Data, options: CreateOptions = {}): Promise<string> {
    return this.sendCreate(Kind.create, path, data, options);
  }

  createWithStat(path: string, data?: Data, options: CreateOptions = {}): Promise<{ path: string; stat: Stat }> {
    return this.sendCreate(Kind.createWithStat, path, data, options);
  }

  /** The node's Stat, or null if it does not exist. A watch is set either way (data or exist watch). */
  exists(path: string, options: WatchOptions = {}): Promise<Stat | null> {
    let serverPath: string;
    let watcher: Watcher | undefined;
    try {
      serverPath = this.serverPath(path);
      watcher = checkWatcher(options.watch);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.send(Kind.exists, { op: "exists", exists: { path: serverPath, watch: watcher !== undefined } }, path, serverPath, watcher);
  }

  getData(path: string, options: WatchOptions = {}): Promise<{ data: Uint8Array; stat: Stat }> {
    let serverPath: string;
    let watcher: Watcher | undefined;
    try {
      serverPath = this.serverPath(path);
      watcher = checkWatcher(options.watch);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.send(Kind.getData, { op: "getData", getData: { path: serverPath, watch: watcher !== undefined } }, path, serverPath, watcher);
  }

  setData(path: string, data: Data, options: VersionOptions = {}): Promise<Stat> {
    let serverPath: string;
    let bytes: Uint8Array;
    let version: number;
    try {
      serverPath = this.serverPath(path);
      bytes = toBytes(data);
      version = checkVersion(options.version);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.send(Kind.setData, { op: "setData", setData: { path: serverPath, data: bytes, version } }, path, serverPath);
  }

  delete(path: string, options: VersionOptions = {}): Promise<void> {
    let serverPath: string;
    let version: number;
    try {
      serverPath = this.serverPath(path);
      version = checkVersion(options.version);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.send(Kind.delete, { op: "delete", delete: { path: serverPath, version } }, path, serverPath);
  }

  /** Child names (not paths), in the server's order. */
  getChildren(path: string, options: WatchOptions = {}): Promise<string[]> {
    return this.sendGetChildren(Kind.getChildren, path, options);
  }

  getChildrenWithStat(path: string, options: WatchOptions = {}): Promise<{ children: string[]; stat: Stat }> {
    return this.sendGetChildren(Kind.getChildrenWithStat, path, options);
  }

  /**
   * The node's ACL and Stat. Needs READ or ADMIN on the node (NOAUTH otherwise); with READ alone,
   * digest ids come back as "user:x".
   */
  getACL(path: string): Promise<{ acl: Acl[]; stat: Stat }> {
    let serverPath: string;
    try {
      serverPath = this.serverPath(path);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.send(Kind.getAcl, { op: "getAcl", getAcl: { path: serverPath } }, path, serverPath);
  }

  /**
   * Replaces the node's ACL; needs ADMIN on it. `version` is the expected aversion (-1: any).
   * An `auth` entry stands for every digest id this session authenticated as (INVALIDACL if none).
   */
  setACL(path: string, acl: readonly Acl[], options: VersionOptions = {}): Promise<Stat> {
    let serverPath: string;
    let version: number;
    let wireAcl;
    try {
      serverPath = this.serverPath(path);
      version = checkVersion(options.version);
      wireAcl = aclToWire(acl ?? []);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.send(Kind.setAcl, { op: "setAcl", setAcl: { path: serverPath, acl: wireAcl, version } }, path, serverPath);
  }

  /** @deprecated ZooKeeper's name is getACL. */
  getAcl(path: string): Promise<{ acl: Acl[]; stat: Stat }> {
    return this.getACL(path);
  }

  /** @deprecated ZooKeeper's name is setACL. */
  setAcl(path: string, acl: readonly Acl[], options: VersionOptions = {}): Promise<Stat> {
    return this.setACL(path, acl, options);
  }

  /**
   * Authenticates the session's connection as well (ZooKeeper's addAuthInfo): `digest` with
   * "user:password", or `ip`. Counts for every request sent after it, and is sent again on every
   * new connection. Rejects with AUTHFAILED (unknown scheme); the session
   * stays usable and keeps the ids it had.
   */
  addAuthInfo(scheme: string, auth: Data): Promise<void> {
    let bytes: Uint8Array;
    try {
      if (typeof scheme !== "string") throw new ZkError("BADARGUMENTS", "scheme must be a string");
      bytes = toBytes(auth);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.send<void>(Kind.addAuth, { op: "addAuth", addAuth: { scheme, auth: bytes } }, undefined, "").then(() => {
      // Runs before any later frame or reconnect is handled: the next connection sends it again.
      if (!this.authInfo.some((known) => known.scheme === scheme && equalBytes(known.auth, bytes))) this.authInfo.push({ scheme, auth: bytes.slice() });
    });
  }

  /** The ids this session's connection is authenticated as, its `ip` first (ZooKeeper's whoAmI). */
  whoAmI(): Promise<ClientInfo[]> {
    return this.send(Kind.whoAmI, { op: "whoAmI", whoAmI: {} }, undefined, "");
  }

  /**
   * Sets a watch that stays after it fires (ZooKeeper's addWatch), whether or not the node exists.
   * "persistent": every NodeCreated, NodeDataChanged, NodeDeleted and NodeChildrenChanged of
   * `basePath`. "persistent-recursive": NodeCreated, NodeDataChanged and NodeDeleted of `basePath`
   * and of every node below it (never NodeChildrenChanged). It is set again after a reconnect;
   * changes made while disconnected are not replayed to it (ZooKeeper's semantics: re-read what
   * matters on "reconnected"). Remove it with `removeWatches` / `removeAllWatches`.
   */
  addWatch(basePath: string, watcher: Watcher, mode: AddWatchMode): Promise<void> {
    let serverPath: string;
    let modeNumber: number;
    try {
      serverPath = this.serverPath(basePath);
      requireWatcher(watcher);
      modeNumber = addWatchModeNumber(mode);
    } catch (err) {
      return Promise.reject(err);
    }
    const kind = mode === "persistent" ? Kind.addWatchPersistent : Kind.addWatchRecursive;
    return this.send(kind, { op: "addWatch", addWatch: { path: serverPath, mode: modeNumber } }, basePath, serverPath, watcher);
  }

  /**
   * Removes one callback's watches of `watcherType` on `path` ("children", "data" — getData and
   * exists —, "persistent", "persistent-recursive" or "any"); the callback gets a
   * ChildWatchRemoved, DataWatchRemoved or PersistentWatchRemoved event for each kind it lost, and
   * no event of the removed watches after this resolves. Rejects NOWATCHER if this client holds no
   * such watch. The server is only asked whether it holds one (ZooKeeper's checkWatches): the
   * session's other callbacks may still need it. With `local`, the watches are removed here even
   * when the server cannot be reached or answers with an error.
   */
  removeWatches(path: string, watcher: Watcher, watcherType: WatcherType, local = false): Promise<void> {
    let serverPath: string;
    let type: number;
    try {
      serverPath = this.serverPath(path);
      requireWatcher(watcher);
      type = watcherTypeNumber(watcherType);
      checkLocal(local);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.sendRemoval(Kind.checkWatches, { op: "checkWatches", checkWatches: { path: serverPath, type } }, path, serverPath, watcher, watcherType, local);
  }

  /**
   * Removes every callback's watches of `watcherType` on `path`, here and on the server (ZooKeeper's
   * removeWatches opcode); each callback gets its WatchRemoved event(s). Rejects NOWATCHER if this
   * client holds no such watch. `local` as for `removeWatches`.
   */
  removeAllWatches(path: string, watcherType: WatcherType, local = false): Promise<void> {
    let serverPath: string;
    let type: number;
    try {
      serverPath = this.serverPath(path);
      type = watcherTypeNumber(watcherType);
      checkLocal(local);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.sendRemoval(Kind.removeWatches, { op: "removeWatches", removeWatches: { path: serverPath, type } }, path, serverPath, undefined, watcherType, local);
  }

  /**
   * Applies every op or none. Resolves with one OpResult per op; on failure rejects with a
   * ZkMultiError whose `code` is the failing op's error and `results` the per-op list.
   */
  multi(ops: readonly Op[]): Promise<OpResult[]> {
    let wireOps;
    try {
      wireOps = opsToWire(ops, this.config.chroot);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.send(Kind.multi, { op: "multi", multi: { ops: wireOps } }, undefined, "", undefined, ops.slice());
  }

  /**
   * This session's ephemeral nodes whose path starts with `prefixPath` — a plain string prefix, as
   * in ZooKeeper ("/app/lock-" matches "/app/lock-0000000001"); "/" means all. Sorted paths.
   */
  getEphemerals(prefixPath = "/"): Promise<string[]> {
    let serverPrefix: string;
    try {
      validatePath(prefixPath);
      const chroot = this.config.chroot;
      // Under a chroot, "/" means the chroot's subtree, not every path that starts with its name.
      serverPrefix = chroot !== undefined && prefixPath === "/" ? chroot + "/" : prependChroot(chroot, prefixPath);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.send(Kind.getEphemerals, { op: "getEphemerals", getEphemerals: { prefixPath: serverPrefix } }, prefixPath, serverPrefix);
  }

  /** How many nodes are below `path`, at any depth (ZooKeeper's getAllChildrenNumber). */
  getAllChildrenNumber(path: string): Promise<number> {
    let serverPath: string;
    try {
      serverPath = this.serverPath(path);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.send(Kind.getAllChildrenNumber, { op: "getAllChildrenNumber", getAllChildrenNumber: { path: serverPath } }, path, serverPath);
  }

  /**
   * getData / getChildren of several nodes, all read from one state of this server. Unlike multi,
   * each read succeeds or fails on its own: an entry is `{ type: "error", code }` for a read that
   * failed (NONODE, say) and the call itself resolves. Built with `op.getData` / `op.getChildren`.
   */
  multiRead(ops: readonly ReadOp[]): Promise<ReadOpResult[]> {
    let wireOps;
    try {
      wireOps = readOpsToWire(ops, this.config.chroot);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.send(Kind.multiRead, { op: "multiRead", multiRead: { ops: wireOps } }, undefined, "", undefined, ops.slice());
  }

  /** Resolves once this server has applied everything the leader had committed when the sync began. */
  sync(path: string): Promise<void> {
    let serverPath: string;
    try {
      serverPath = this.serverPath(path);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.send(Kind.sync, { op: "sync", sync: { path: serverPath } }, path, serverPath);
  }

  /**
   * Ends the session: the server deletes its ephemerals. Requests sent before close are answered
   * first; requests after it fail SESSIONEXPIRED. Never rejects.
   */
  close(): Promise<void> {
    if (this.closePromise) return this.closePromise;
    this.closePromise = new Promise<void>((resolve) => {
      this.closeResolve = resolve;
    });
    if (this.lifecycle !== "active") {
      this.finishClose();
      return this.closePromise;
    }
    this.lifecycle = "closing";
    this.clearReconnectTimer();
    const conn = this.conn;
    if (conn && conn.phase === "open") {
      const pending: Pending = {
        xid: (this.xid = nextXid(this.xid)),
        kind: Kind.close,
        path: undefined,
        serverPath: "",
        watcher: undefined,
        ops: undefined,
        resolve: () => this.finishClose(),
        reject: noop,
      };
      this.write(conn, pending, { op: "close", close: {} });
      this.closeTimer = setTimeout(() => this.finishClose(), this.timeoutMs);
    } else {
      this.finishClose();
    }
    return this.closePromise;
  }

  // ---------------------------------------------------------------------------------------------
  // Request plumbing

  private serverPath(path: string, sequential = false): string {
    if (typeof path !== "string") throw new ZkError("BADARGUMENTS", "path must be a string");
    validatePath(path, sequential);
    return prependChroot(this.config.chroot, path);
  }

  private sendCreate<T>(kind: KindValue, path: string, data: Data | undefined, options: CreateOptions): Promise<T> {
    let request: RequestOp;
    let serverPath: string;
    try {
      const mode: CreateMode = options.mode ?? "persistent";
      const flag = modeFlag(mode);
      serverPath = this.serverPath(path, isSequentialMode(mode));
      request = {
        op: "create",
        create: {
          path: serverPath,
          data: toBytes(data),
          acl: aclToWire(options.acl),
          mode: flag,
          ttlMs: ttlToWire(mode, options.ttlMs),
        },
      };
    } catch (err) {
      return Promise.reject(err);
    }
    return this.send(kind, request, path, serverPath);
  }

  private sendGetChildren<T>(kind: KindValue, path: string, options: WatchOptions): Promise<T> {
    let serverPath: string;
    let watcher: Watcher | undefined;
    try {
      serverPath = this.serverPath(path);
      watcher = checkWatcher(options.watch);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.send(kind, { op: "getChildren", getChildren: { path: serverPath, watch: watcher !== undefined } }, path, serverPath, watcher);
  }

  /**
   * A removal of watches, settled as ZooKeeper's WatchDeregistration: nothing held here → NOWATCHER;
   * a failure (no connection, or the server's error) → that error, unless `local`; otherwise the
   * watches go and their callbacks are told. It settles while the answer is read, so no frame after
   * the answer reaches a removed callback.
   */
  private sendRemoval(
    kind: KindValue,
    request: RequestOp,
    path: string,
    serverPath: string,
    watcher: Watcher | undefined,
    type: WatcherType,
    local: boolean,
  ): Promise<void> {
    if (!this.registry.contains(serverPath, watcher, type)) return Promise.reject(new ZkError("NOWATCHER", undefined, path));
    return new Promise<void>((resolve, reject) => {
      const settle = (err: ZkError | undefined): void => {
        // An event may have spent a one-time watch while the request was out.
        if (!this.registry.contains(serverPath, watcher, type)) return reject(new ZkError("NOWATCHER", undefined, path));
        if (err !== undefined && !local) return reject(err);
        this.notifyRemoved(this.registry.remove(serverPath, watcher, type)!, path);
        resolve();
      };
      const conn = this.conn;
      if (this.lifecycle !== "active" || conn === null || conn.phase !== "open") {
        const code = this.lifecycle === "active" ? "CONNECTIONLOSS" : "SESSIONEXPIRED";
        settle(new ZkError(code, `${code}: not connected`, path));
        return;
      }
      const pending: Pending = {
        xid: (this.xid = nextXid(this.xid)),
        kind,
        path,
        serverPath,
        watcher: undefined,
        ops: undefined,
        resolve: () => settle(undefined),
        reject: settle,
      };
      this.write(conn, pending, request);
    });
  }

  /** Tells removed callbacks, one event per kind of watch each lost (ZooKeeper's order: child, data, persistent). */
  private notifyRemoved(removed: RemovedWatchers, path: string): void {
    const groups: [Set<Watcher>, WatchedEventType][] = [
      [removed.child, "ChildWatchRemoved"],
      [removed.data, "DataWatchRemoved"],
      [removed.persistent, "PersistentWatchRemoved"],
    ];
    for (const [watchers, type] of groups) {
      for (const watcher of watchers) {
        try {
          watcher({ type, path, zxid: -1n });
        } catch (err) {
          this.reportCallbackError(err);
        }
      }
    }
  }

  private send<T>(
    kind: KindValue,
    request: RequestOp,
    path: string | undefined,
    serverPath: string,
    watcher?: Watcher,
    ops?: Op[] | ReadOp[],
  ): Promise<T> {
    if (this.lifecycle !== "active") {
      const why = this.lifecycle === "expired" ? "session expired" : "client closed";
      return Promise.reject(new ZkError("SESSIONEXPIRED", `SESSIONEXPIRED: ${why}`, path));
    }
    const conn = this.conn;
    if (conn === null || conn.phase !== "open") {
      return Promise.reject(new ZkError("CONNECTIONLOSS", "CONNECTIONLOSS: not connected", path));
    }
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = {
        xid: (this.xid = nextXid(this.xid)),
        kind,
        path,
        serverPath,
        watcher,
        ops,
        resolve,
        reject,
      };
      this.write(conn, pending, request);
    });
  }

  private write(conn: Connection, pending: Pending, op: RequestOp): void {
    conn.pending.push(pending);
    conn.sentSinceTick = true;
    this.sendFrame(conn, { frame: "request", request: { xid: pending.xid, ...op } });
  }

  /**
   * Every frame leaves through here, in order. With batching, frames written during one turn of
   * the event loop (a burst of requests from promise continuations) share one gRPC message.
   */
  private sendFrame(conn: Connection, frame: ClientFrame): void {
    this.transport.send(conn.id, frame, conn.batching);
  }

  // ---------------------------------------------------------------------------------------------
  // Connection management

  private start(): Promise<Client> {
    const promise = new Promise<Client>((resolve, reject) => {
      this.connectSettle = { resolve, reject };
    });
    this.connectTimer = setTimeout(() => {
      this.connectTimer = undefined;
      if (this.everConnected || this.lifecycle !== "active") return;
      this.log("warn", { hosts: this.config.hosts }, "no server accepted the session in time");
      this.abandon(new ZkError("CONNECTIONLOSS", `CONNECTIONLOSS: could not connect within ${this.config.connectTimeoutMs} ms`));
    }, this.config.connectTimeoutMs);
    this.startAttempt();
    return promise;
  }

  /** The per-attempt connect timeout: ZooKeeper's sessionTimeout / hosts, but not absurdly small. */
  private attemptTimeoutMs(): number {
    const perHost = Math.floor(this.timeoutMs / this.config.hosts.length);
    return Math.max(perHost, Math.min(this.timeoutMs, 1_000));
  }

  private startAttempt(): void {
    this.reconnectTimer = undefined;
    if (this.lifecycle !== "active") return;
    const host = this.config.hosts[this.hostIndex] as HostPort;
    this.hostIndex = (this.hostIndex + 1) % this.config.hosts.length;
    const conn: Connection = {
      id: ++this.connectionCount,
      host,
      phase: "connecting",
      batching: false,
      pending: new Fifo<Pending>(),
      attemptTimer: undefined,
      ticker: undefined,
      sentSinceTick: true,
      receivedSinceTick: true,
      sendIdleTicks: 0,
      receiveIdleTicks: 0,
    };
    this.conn = conn;
    this.transport.open(conn.id, host);
    this.log("debug", { address: hostAddress(host), sessionId: hex(this.sessionIdValue), lastZxidSeen: this.lastZxid.toString() }, "connecting");
    conn.attemptTimer = setTimeout(() => {
      conn.attemptTimer = undefined;
      this.onStreamGone(conn, { serverBehind: false, message: "connect attempt timed out" });
    }, this.attemptTimeoutMs());
    this.sendFrame(conn, {
      frame: "connect",
      connect: {
        protocolVersion: CLIENT_PROTOCOL_VERSION,
        lastZxidSeen: this.lastZxid.toString(),
        timeoutMs: this.config.sessionTimeoutMs,
        sessionId: this.sessionIdValue.toString(),
        password: this.password,
      },
    });
  }

  private scheduleReconnect(): void {
    if (this.lifecycle !== "active" || this.reconnectTimer !== undefined) return;
    const delay = reconnectDelayMs(this.attempt);
    this.attempt++;
    this.reconnectTimer = setTimeout(() => this.startAttempt(), delay);
  }

  private clearReconnectTimer(): void {
    if (this.reconnectTimer !== undefined) {
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = undefined;
    }
  }

  private onFrame(conn: Connection, frame: DecodedServerFrame): void {
    if (conn !== this.conn || conn.phase === "dead") return;
    conn.receivedSinceTick = true;
    switch (frame.frame) {
      case "response":
        this.onResponse(conn, frame.response);
        return;
      case "event":
        this.onEvent(conn, frame.event);
        return;
      case "pong":
        return;
      case "connect":
        this.onConnectResponse(conn, frame.connect);
        return;
      case "batch":
        // Each frame as if it had come alone; onFrame stops at once if one of them ends the connection.
        for (const inner of frame.frames) this.onFrame(conn, inner);
        return;
      default:
        this.protocolError(conn, `unknown frame ${JSON.stringify((frame as { frame?: unknown }).frame)}`);
    }
  }

  private onConnectResponse(conn: Connection, answer: DecodedConnectResponse): void {
    if (conn.phase !== "connecting") {
      this.protocolError(conn, "a second connect answer on one stream");
      return;
    }
    if (conn.attemptTimer !== undefined) {
      clearTimeout(conn.attemptTimer);
      conn.attemptTimer = undefined;
    }
    const resuming = this.sessionIdValue !== 0n;
    if (answer.err === ZkErrorCode.SESSIONEXPIRED || (answer.err === 0 && answer.timeoutMs <= 0)) {
      this.log("info", { sessionId: hex(this.sessionIdValue) }, "session expired");
      this.expire(conn);
      return;
    }
    if (answer.err !== 0) {
      this.log("warn", { err: answer.err, host: conn.host }, "server refused the connection");
      this.dropConnection(conn, "CONNECTIONLOSS");
      return;
    }
    if (resuming && answer.sessionId !== this.sessionIdValue) {
      this.log("error", { asked: hex(this.sessionIdValue), got: hex(answer.sessionId) }, "server answered another session; treating ours as expired");
      this.expire(conn);
      return;
    }
    this.sessionIdValue = answer.sessionId;
    this.password = answer.password;
    this.timeoutMs = answer.timeoutMs;
    this.attempt = 0;
    conn.phase = "open";
    conn.batching = answer.protocolVersion >= CLIENT_PROTOCOL_BATCHES_SINCE;
    const tickMs = Math.max(1, Math.floor(this.timeoutMs / TICKS_PER_TIMEOUT));
    conn.ticker = setInterval(() => this.tick(conn), tickMs);
    conn.ticker.unref();
    this.log("debug", { host: conn.host, sessionId: hex(this.sessionIdValue), timeoutMs: this.timeoutMs, serverId: answer.serverId }, "connected");
    if (!this.everConnected) {
      this.everConnected = true;
      if (this.connectTimer !== undefined) {
        clearTimeout(this.connectTimer);
        this.connectTimer = undefined;
      }
      this.setState("connected");
      const settle = this.connectSettle;
      this.connectSettle = undefined;
      settle?.resolve(this);
    } else {
      // Authenticate and re-register watches before anything a "reconnected" listener may send.
      this.sendAuthInfo(conn);
      this.sendSetWatches(conn);
      this.setState("reconnected");
    }
  }

  /** Sends every credential accepted before, in order, ahead of any other request on a new stream. */
  private sendAuthInfo(conn: Connection): void {
    for (const entry of this.authInfo) {
      const pending: Pending = {
        xid: (this.xid = nextXid(this.xid)),
        kind: Kind.addAuth,
        path: undefined,
        serverPath: "",
        watcher: undefined,
        ops: undefined,
        resolve: noop,
        reject: (err: ZkError) => {
          if (err.code !== "AUTHFAILED") return;
          // Only a server configured unlike the one that accepted it refuses it: stop sending it.
          this.log("warn", { scheme: entry.scheme, host: conn.host }, "the server refused credentials another server had accepted");
          const index = this.authInfo.indexOf(entry);
          if (index >= 0) this.authInfo.splice(index, 1);
        },
      };
      this.write(conn, pending, { op: "addAuth", addAuth: { scheme: entry.scheme, auth: entry.auth } });
    }
  }

  /** Re-registers every watch still held here, before any other request on a new stream. */
  private sendSetWatches(conn: Connection): void {
    if (this.registry.size === 0) return;
    const relativeZxid = this.lastZxid.toString();
    for (const chunk of chunkWatchPaths(this.registry.paths(), SET_WATCHES_BYTES_MAX)) {
      const pending: Pending = {
        xid: (this.xid = nextXid(this.xid)),
        kind: Kind.setWatches,
        path: undefined,
        serverPath: "",
        watcher: undefined,
        ops: undefined,
        resolve: noop,
        reject: noop,
      };
      this.write(conn, pending, { op: "setWatches", setWatches: { relativeZxid, ...chunk } });
    }
  }

  private onResponse(conn: Connection, response: DecodedResponse): void {
    if (conn.phase !== "open") {
      this.protocolError(conn, "a response before the connect answer");
      return;
    }
    if (response.zxid > this.lastZxid) this.lastZxid = response.zxid;
    const pending = conn.pending.shift();
    if (pending === undefined || pending.xid !== response.xid) {
      if (pending !== undefined) pending.reject(new ZkError("CONNECTIONLOSS", "CONNECTIONLOSS: xid out of order", pending.path));
      this.protocolError(conn, `response xid ${response.xid} but expected ${pending === undefined ? "none" : pending.xid}`);
      return;
    }
    try {
      this.complete(pending, response);
    } catch (err) {
      // A malformed answer (e.g. a missing stat): fail this request, keep the session.
      pending.reject(err instanceof ZkError ? err : new ZkError("MARSHALLINGERROR", String(err), pending.path));
    }
  }

  private complete(p: Pending, r: DecodedResponse): void {
    const err = r.err;
    if (err !== 0) {
      switch (p.kind) {
        case Kind.exists:
          if (err === ZkErrorCode.NONODE) {
            if (p.watcher) this.registry.add("exist", p.serverPath, p.watcher);
            p.resolve(null);
            return;
          }
          break;
        case Kind.setWatches:
          this.log("warn", { err }, "setWatches failed");
          p.resolve(undefined);
          return;
        case Kind.close:
          p.resolve(undefined);
          return;
        case Kind.multi:
          p.reject(multiErrorFromWire(err, p.ops as Op[], r.results));
          return;
      }
      p.reject(ZkError.fromErrno(err, p.path));
      return;
    }
    const chroot = this.config.chroot;
    switch (p.kind) {
      case Kind.create:
        p.resolve(stripChroot(chroot, r.path));
        return;
      case Kind.createWithStat:
        p.resolve({ path: stripChroot(chroot, r.path), stat: requireStat(r.stat) });
        return;
      case Kind.delete:
      case Kind.sync:
      case Kind.setWatches:
      case Kind.close:
      case Kind.addAuth:
      case Kind.removeWatches:
      case Kind.checkWatches:
        p.resolve(undefined);
        return;
      case Kind.addWatchPersistent:
      case Kind.addWatchRecursive:
        if (p.watcher) this.registry.add(p.kind === Kind.addWatchPersistent ? "persistent" : "persistent-recursive", p.serverPath, p.watcher);
        p.resolve(undefined);
        return;
      case Kind.whoAmI:
        p.resolve(r.clientInfo.map((info) => ({ authScheme: info.authScheme, user: info.user })));
        return;
      case Kind.exists: {
        const stat = requireStat(r.stat);
        if (p.watcher) this.registry.add("data", p.serverPath, p.watcher);
        p.resolve(stat);
        return;
      }
      case Kind.getData: {
        const stat = requireStat(r.stat);
        if (p.watcher) this.registry.add("data", p.serverPath, p.watcher);
        p.resolve({ data: r.data, stat });
        return;
      }
      case Kind.setData:
      case Kind.setAcl:
        p.resolve(requireStat(r.stat));
        return;
      case Kind.getChildren:
        if (p.watcher) this.registry.add("child", p.serverPath, p.watcher);
        p.resolve(r.children);
        return;
      case Kind.getChildrenWithStat: {
        const stat = requireStat(r.stat);
        if (p.watcher) this.registry.add("child", p.serverPath, p.watcher);
        p.resolve({ children: r.children, stat });
        return;
      }
      case Kind.getAcl:
        p.resolve({ acl: aclFromWire(r.acl), stat: requireStat(r.stat) });
        return;
      case Kind.multi:
        p.resolve(multiResultsFromWire(p.ops as Op[], r.results, chroot));
        return;
      case Kind.getEphemerals: {
        const paths = chroot === undefined ? r.children : r.children.filter((path) => path.startsWith(chroot + "/"));
        p.resolve(paths.map((path) => stripChroot(chroot, path)));
        return;
      }
      case Kind.getAllChildrenNumber:
        p.resolve(r.number);
        return;
      case Kind.multiRead:
        p.resolve(readResultsFromWire(p.ops as ReadOp[], r.results));
        return;
    }
  }

  private onEvent(conn: Connection, event: DecodedWatchEvent): void {
    if (conn.phase !== "open") {
      this.protocolError(conn, "a watch event before the connect answer");
      return;
    }
    if (event.zxid > this.lastZxid) this.lastZxid = event.zxid;
    const type = eventTypeName(event.type);
    if (type === undefined) {
      this.log("debug", { type: event.type, path: event.path }, "ignoring an event of unknown type");
      return;
    }
    const watchers = this.registry.materialize(type, event.path);
    if (watchers.size === 0) return;
    const delivered = { type, path: stripChroot(this.config.chroot, event.path), zxid: event.zxid };
    for (const watcher of watchers) {
      try {
        watcher({ ...delivered });
      } catch (err) {
        this.reportCallbackError(err);
      }
    }
  }

  /** One liveness tick: ping when idle, declare the connection dead when the server went quiet. */
  private tick(conn: Connection): void {
    if (conn !== this.conn || conn.phase !== "open") return;
    if (conn.receivedSinceTick) {
      conn.receivedSinceTick = false;
      conn.receiveIdleTicks = 0;
    } else if (++conn.receiveIdleTicks >= DEAD_AFTER_IDLE_TICKS) {
      this.log("warn", { host: conn.host }, "nothing received for 2/3 of the session timeout; reconnecting");
      this.dropConnection(conn, "CONNECTIONLOSS");
      return;
    }
    if (conn.sentSinceTick) {
      conn.sentSinceTick = false;
      conn.sendIdleTicks = 0;
    } else if (++conn.sendIdleTicks >= PING_AFTER_IDLE_TICKS) {
      conn.sendIdleTicks = 0;
      this.sendFrame(conn, { frame: "ping", ping: {} });
    }
  }

  private onStreamGone(conn: Connection, cause: ConnectionLoss): void {
    if (conn !== this.conn || conn.phase === "dead") return;
    if (cause.serverBehind) {
      this.log("info", { host: conn.host, details: cause.message }, "server is behind our last seen zxid; trying the next host");
    } else {
      this.log("debug", { host: conn.host, err: cause.message }, "stream ended");
    }
    this.dropConnection(conn, "CONNECTIONLOSS");
  }

  private protocolError(conn: Connection, what: string): void {
    this.log("error", { host: conn.host }, `protocol violation: ${what}`);
    this.dropConnection(conn, "CONNECTIONLOSS");
  }

  /** Ends a connection: fails its in-flight requests, then reconnects, or finishes a close. */
  private dropConnection(conn: Connection, code: ZkErrorName): void {
    const wasOpen = conn.phase === "open";
    this.teardown(conn, code);
    if (this.lifecycle === "closing") {
      this.finishClose();
      return;
    }
    if (this.lifecycle !== "active") return;
    if (wasOpen) this.setState("disconnected");
    if (this.lifecycle === "active") this.scheduleReconnect();
  }

  private teardown(conn: Connection, code: ZkErrorName): void {
    if (conn.phase === "dead") return;
    conn.phase = "dead";
    if (this.conn === conn) this.conn = null;
    if (conn.attemptTimer !== undefined) clearTimeout(conn.attemptTimer);
    if (conn.ticker !== undefined) clearInterval(conn.ticker);
    conn.attemptTimer = undefined;
    conn.ticker = undefined;
    this.transport.close(conn.id);
    for (const pending of conn.pending.drain()) {
      pending.reject(new ZkError(code, `${code}: ${code === "CONNECTIONLOSS" ? "connection lost" : "session expired"}`, pending.path));
    }
  }

  private expire(conn: Connection): void {
    const closing = this.lifecycle === "closing";
    this.lifecycle = "expired";
    this.teardown(conn, "SESSIONEXPIRED");
    this.clearReconnectTimer();
    this.clearConnectTimer();
    this.registry.clear();
    const settle = this.connectSettle;
    this.connectSettle = undefined;
    if (settle) {
      this.stateValue = "expired";
      settle.reject(new ZkError("SESSIONEXPIRED", "SESSIONEXPIRED: the session to resume is gone"));
      return;
    }
    this.setState("expired");
    if (closing) this.finishClose();
  }

  /** Gives up before ever connecting (connect timeout): no events, the connect promise rejects. */
  private abandon(err: ZkError): void {
    this.lifecycle = "closed";
    this.stateValue = "closed";
    this.clearReconnectTimer();
    this.clearConnectTimer();
    if (this.conn) this.teardown(this.conn, "CONNECTIONLOSS");
    const settle = this.connectSettle;
    this.connectSettle = undefined;
    settle?.reject(err);
  }

  private finishClose(): void {
    if (this.closeTimer !== undefined) {
      clearTimeout(this.closeTimer);
      this.closeTimer = undefined;
    }
    const alreadyClosed = this.lifecycle === "closed";
    this.lifecycle = "closed";
    this.clearReconnectTimer();
    this.clearConnectTimer();
    if (this.conn) this.teardown(this.conn, "CONNECTIONLOSS");
    this.registry.clear();
    if (!alreadyClosed || this.stateValue !== "closed") this.setState("closed");
    const resolve = this.closeResolve;
    this.closeResolve = undefined;
    resolve?.();
  }

  private clearConnectTimer(): void {
    if (this.connectTimer !== undefined) {
      clearTimeout(this.connectTimer);
      this.connectTimer = undefined;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Reporting

  private setState(state: ClientState): void {
    this.stateValue = state;
    try {
      this.emit("state", state);
    } catch (err) {
      this.reportCallbackError(err);
    }
  }

  /** A user callback threw: report it on "error" if anyone listens, never let it break the session. */
  private reportCallbackError(err: unknown): void {
    if (this.listenerCount("error") === 0) return;
    try {
      this.emit("error", err);
    } catch {
      // an error listener that throws is ignored too
    }
  }

  private log(level: keyof ClientLogger, obj: object, msg: string): void {
    const logger = this.config.logger;
    if (logger === undefined) return;
    try {
      logger[level](obj, msg);
    } catch {
      // logging must never break the client
    }
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && a.every((byte, i) => byte === b[i]);
}

/** Session ids are shown in hex, as ZooKeeper logs them. */
function hex(id: bigint): string {
  return "0x" + BigInt.asUintN(64, id).toString(16);
}

function requireWatcher(watcher: Watcher): void {
  if (typeof watcher !== "function") throw new ZkError("BADARGUMENTS", "watcher must be a function");
}

function checkLocal(local: boolean): void {
  if (typeof local !== "boolean") throw new ZkError("BADARGUMENTS", "local must be a boolean");
}

function checkWatcher(watch: Watcher | undefined): Watcher | undefined {
  if (watch === undefined || watch === null) return undefined;
  if (typeof watch !== "function") throw new ZkError("BADARGUMENTS", "watch must be a function");
  return watch;
}
