/**
 * The corral client (docs/architecture.md §6): the public API of one session. It checks arguments, builds
 * request ops, turns answers into results, and owns what the user sees — the promises, the
 * "state" and "error" events, the watch callbacks. What happens on the connection (xids and the
 * order of answers, reconnects, expiry, pings) is decided by the session machine
 * (session-machine.ts) and carried out over gRPC by the transport (grpc-transport.ts); this class
 * wires the two together and acts on the machine's outcomes.
 */
import { EventEmitter } from "node:events";
import type * as grpc from "@grpc/grpc-js";
import { ZkError, ZkErrorCode } from "../common/errors.js";
import { validatePath } from "../common/paths.js";
import { configFrom, type ClientConfig } from "./client-config.js";
import { hostAddress, parseConnectString, prependChroot, shuffled, stripChroot, type HostPort } from "./connect-string.js";
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
import type { DecodedResponse, DecodedWatchEvent, RequestOp } from "./codec.js";
import { GrpcTransport } from "./grpc-transport.js";
import { multiErrorFromWire, multiResultsFromWire, opsToWire, readOpsToWire, readResultsFromWire } from "./ops.js";
import { membersFromWire } from "./membership-follow.js";
import { MembershipFollower } from "./membership-follower.js";
import type { SessionEffect } from "./session-io.js";
import { SessionMachine } from "./session-machine.js";
import type {
  Acl,
  ClientInfo,
  ClusterConfiguration,
  ClusterMembers,
  ReconfigChange,
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
import { WatchRegistry, type RemovedWatchers, type WatchKind } from "./watch-registry.js";

export { DEFAULT_SESSION_TIMEOUT_MS } from "./client-config.js";
export { RECONNECT_BACKOFF_MS_MAX, RECONNECT_BACKOFF_MS_MIN, nextXid, reconnectDelayMs } from "./session-machine.js";

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
  getAcl: 10,
  setAcl: 11,
  addAuth: 12,
  whoAmI: 13,
  addWatchPersistent: 14,
  addWatchRecursive: 15,
  removeWatches: 16,
  checkWatches: 17,
  getEphemerals: 18,
  getAllChildrenNumber: 19,
  multiRead: 20,
  reconfig: 21,
  getConfig: 22,
  getMembers: 23,
} as const;
type KindValue = (typeof Kind)[keyof typeof Kind];

/** A request's user-facing half: the session machine hands it back with the answer or failure. */
interface Pending {
  kind: KindValue;
  /** The user's path (for error messages). */
  path: string | undefined;
  /** The server's path (for watch registration). */
  serverPath: string;
  watcher: Watcher | undefined;
  ops: Op[] | ReadOp[] | undefined;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- one Pending holds the resolve of every kind's Promise<T>; `kind` picks T, which no type here can tie to it
  resolve: (value: any) => void;
  reject: (err: ZkError) => void;
}

/** The events of a Client and their listeners' arguments. */
export interface ClientEvents {
  state: [state: ClientState];
  error: [err: unknown];
}

/** A corral session. Create one with `Client.connect`. */
export class Client extends EventEmitter<ClientEvents> {
  /**
   * Connects to one of the hosts of `connectString` ("h1:p1,h2:p2/optional/chroot") and resolves
   * once a server accepted the session. Rejects with ZkError CONNECTIONLOSS if none did within
   * connectTimeoutMs, SESSIONEXPIRED if the session to resume is gone, BADARGUMENTS for bad options.
   * With `canBeReadOnly`, a session a read-only server accepted counts: see `readOnly`.
   */
  static connect(connectString: string, options: ConnectOptions & { credentials?: grpc.ChannelCredentials } = {}): Promise<Client> {
    let config: ClientConfig;
    try {
      config = configFrom(connectString, options);
    } catch (err) {
      return refused(err);
    }
    return new Client(config).start();
  }

  private readonly config: ClientConfig;
  private readonly registry = new WatchRegistry();
  private readonly session: SessionMachine<Pending>;
  private readonly transport: GrpcTransport;
  private stateValue: ClientState = "connecting";
  private connectSettle: { resolve: (c: Client) => void; reject: (e: ZkError) => void } | undefined;
  private closePromise: Promise<void> | undefined;
  private closeResolve: (() => void) | undefined;
  /** With ConnectOptions.followMembership: keeps the server list on the cluster's members. */
  private readonly follower: MembershipFollower | undefined;

  private constructor(config: ClientConfig) {
    super();
    this.config = config;
    this.session = new SessionMachine<Pending>(
      {
        hosts: config.hosts,
        sessionTimeoutMs: config.sessionTimeoutMs,
        connectTimeoutMs: config.connectTimeoutMs,
        sessionId: config.sessionId,
        password: config.password,
        canBeReadOnly: config.canBeReadOnly,
        watchedPaths: () => this.registry.paths(),
        random: Math.random,
      },
      (effect) => this.onSessionEffect(effect),
    );
    this.transport = new GrpcTransport(config.channel, this.session);
    this.follower = config.followMembership
      ? new MembershipFollower({
          getConfig: (options) => this.getConfig(options),
          getMembers: () => this.getMembers(),
          updateServerList: (connectString) => this.updateServerList(connectString),
          servers: () => this.servers,
          connected: () => {
            const host = this.session.connectedHost;
            const serverId = this.session.connectedServerId;
            return host === undefined || serverId === undefined ? undefined : { serverId, address: hostAddress(host) };
          },
          chroot: config.chroot,
          log: (level, fields, message) => this.log(level, fields, message),
        })
      : undefined;
  }

  /** The last state reported through the "state" event ("reconnected" means connected again). */
  get state(): ClientState {
    return this.stateValue;
  }

  /** True while a server holds this session on an open stream. */
  get connected(): boolean {
    return this.session.connected;
  }

  /**
   * True while connected read-only (only with the connect option `canBeReadOnly`): the server has
   * lost its quorum, and it answers writes and syncs with ZkError NOTREADONLY. Changes only along
   * with a "connected" or "reconnected" state.
   */
  get readOnly(): boolean {
    return this.session.readOnly;
  }

  /** The session id the cluster gave this session (0n before the first connect); ZooKeeper prints it as 0x… hex. */
  get sessionId(): bigint {
    return this.session.sessionId;
  }

  /** The session's password, which a client needs, with the session id, to resume the session. */
  get sessionPassword(): Uint8Array {
    return this.session.password;
  }

  /** The session timeout the server granted: the one asked for, clamped to its min/maxSessionTimeoutMs. */
  get negotiatedTimeoutMs(): number {
    return this.session.negotiatedTimeoutMs;
  }

  /** The highest zxid of any response or watch event received. */
  get lastZxidSeen(): bigint {
    return this.session.lastZxidSeen;
  }

  /** The chroot of the connect string, if any. */
  get chroot(): string | undefined {
    return this.config.chroot;
  }

  /** The server this session is connected to, as "host:port" ("[ipv6]:port"); undefined while not connected. */
  get connectedHost(): string | undefined {
    const host = this.session.connectedHost;
    return host === undefined ? undefined : hostAddress(host);
  }

  /**
   * The servers this client connects to, as "host:port" ("[ipv6]:port"), in the order it tries
   * them: the connect string's (shuffled unless shuffleHosts is false) until `updateServerList`
   * — yours, or followMembership's — replaces them. A copy: changing it changes nothing.
   */
  get servers(): string[] {
    return this.session.servers.map(hostAddress);
  }

  /**
   * Replaces the servers this client connects to (ZooKeeper's updateServerList), for instance after
   * the ensemble's membership changed. The client keeps its server if it is still listed, or moves
   * to another one with the probability that spreads all clients evenly over the new list
   * (ZooKeeper's probabilistic load balancing, ZOOKEEPER-1355); if its server left, it always
   * moves. A move is a reconnect with the same session: "disconnected", then "reconnected", the
   * requests in flight failing CONNECTIONLOSS, watches and credentials sent again. Resolves once
   * the choice is made, not once moved. Rejects with BADARGUMENTS for an empty or malformed
   * connect string or a chroot other than this client's, and SESSIONEXPIRED once the session is
   * closed or expired.
   */
  updateServerList(connectString: string): Promise<void> {
    let hosts: HostPort[];
    try {
      const parsed = parseConnectString(connectString);
      if (parsed.chroot !== this.config.chroot) {
        const want = this.config.chroot ?? "none";
        throw new ZkError("BADARGUMENTS", `the chroot of ${JSON.stringify(connectString)} is ${parsed.chroot ?? "none"}, this client's is ${want}`);
      }
      hosts = this.config.shuffleHosts ? shuffled(parsed.hosts, Math.random) : parsed.hosts;
    } catch (err) {
      return refused(err);
    }
    const lifecycle = this.session.lifecycle;
    if (lifecycle !== "active") {
      const why = lifecycle === "expired" ? "session expired" : "client closed";
      return Promise.reject(new ZkError("SESSIONEXPIRED", `SESSIONEXPIRED: ${why}`));
    }
    this.session.updateServerList(hosts);
    return Promise.resolve();
  }

  // ---------------------------------------------------------------------------------------------
  // Operations

  /** Creates a znode; resolves with its actual path (sequential suffix included, chroot stripped). */
  create(path: string, data?: Data, options: CreateOptions = {}): Promise<string> {
    return this.sendCreate(Kind.create, path, data, options);
  }

  /** As `create`, but also resolves with the new node's Stat. */
  createWithStat(path: string, data?: Data, options: CreateOptions = {}): Promise<{ path: string; stat: Stat }> {
    return this.sendCreate(Kind.createWithStat, path, data, options);
  }

  /** The node's Stat, or null if it does not exist. A watch is set either way (data or exist watch). */
  exists(path: string, options: WatchOptions = {}): Promise<Stat | null> {
    return this.send(Kind.exists, path, (p) => {
      p.serverPath = this.serverPath(path);
      p.watcher = checkWatcher(options.watch);
      return { $case: "exists", exists: { path: p.serverPath, watch: p.watcher !== undefined } };
    });
  }

  /** The node's data and Stat. With `watch`, a data watch: it fires once on the node's next change or deletion. NONODE if there is no node (no watch is set then). */
  getData(path: string, options: WatchOptions = {}): Promise<{ data: Uint8Array; stat: Stat }> {
    return this.send(Kind.getData, path, (p) => {
      p.serverPath = this.serverPath(path);
      p.watcher = checkWatcher(options.watch);
      return { $case: "getData", getData: { path: p.serverPath, watch: p.watcher !== undefined } };
    });
  }

  /** Replaces the node's data; resolves with its new Stat. With `version` (not -1), BADVERSION unless the node's data version is that one. */
  setData(path: string, data: Data, options: VersionOptions = {}): Promise<Stat> {
    return this.send(Kind.setData, path, (p) => {
      p.serverPath = this.serverPath(path);
      return { $case: "setData", setData: { path: p.serverPath, data: toBytes(data), version: checkVersion(options.version) } };
    });
  }

  /** Deletes the node. NONODE if it is gone, NOTEMPTY if it has children, BADVERSION if `version` (not -1) is not its data version. */
  delete(path: string, options: VersionOptions = {}): Promise<void> {
    return this.send(Kind.delete, path, (p) => {
      p.serverPath = this.serverPath(path);
      return { $case: "delete", delete: { path: p.serverPath, version: checkVersion(options.version) } };
    });
  }

  /** Child names (not paths), in the server's order. */
  getChildren(path: string, options: WatchOptions = {}): Promise<string[]> {
    return this.sendGetChildren(Kind.getChildren, path, options);
  }

  /** As `getChildren`, with the node's Stat. */
  getChildrenWithStat(path: string, options: WatchOptions = {}): Promise<{ children: string[]; stat: Stat }> {
    return this.sendGetChildren(Kind.getChildrenWithStat, path, options);
  }

  /**
   * The node's ACL and Stat. Needs READ or ADMIN on the node (NOAUTH otherwise); with READ alone,
   * digest ids come back as "user:x".
   */
  getACL(path: string): Promise<{ acl: Acl[]; stat: Stat }> {
    return this.send(Kind.getAcl, path, (p) => {
      p.serverPath = this.serverPath(path);
      return { $case: "getAcl", getAcl: { path: p.serverPath } };
    });
  }

  /**
   * Replaces the node's ACL; needs ADMIN on it. `version` is the expected aversion (-1: any).
   * An `auth` entry stands for every digest id this session authenticated as (INVALIDACL if none).
   */
  setACL(path: string, acl: readonly Acl[], options: VersionOptions = {}): Promise<Stat> {
    return this.send(Kind.setAcl, path, (p) => {
      p.serverPath = this.serverPath(path);
      const version = checkVersion(options.version);
      return { $case: "setAcl", setAcl: { path: p.serverPath, acl: aclToWire(acl ?? []), version } };
    });
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
    // Once accepted, the session machine keeps the credential and sends it on every new connection.
    return this.send(Kind.addAuth, undefined, () => {
      if (typeof scheme !== "string") throw new ZkError("BADARGUMENTS", "scheme must be a string");
      return { $case: "addAuth", addAuth: { scheme, auth: toBytes(auth) } };
    });
  }

  /** The ids this session's connection is authenticated as, its `ip` first (ZooKeeper's whoAmI). */
  whoAmI(): Promise<ClientInfo[]> {
    return this.send(Kind.whoAmI, undefined, () => ({ $case: "whoAmI", whoAmI: {} }));
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
    return this.send(mode === "persistent" ? Kind.addWatchPersistent : Kind.addWatchRecursive, basePath, (p) => {
      p.serverPath = this.serverPath(basePath);
      requireWatcher(watcher);
      p.watcher = watcher;
      return { $case: "addWatch", addWatch: { path: p.serverPath, mode: addWatchModeNumber(mode) } };
    });
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
    return this.send(
      Kind.checkWatches,
      path,
      (p) => {
        p.serverPath = this.serverPath(path);
        requireWatcher(watcher);
        p.watcher = watcher;
        const type = watcherTypeNumber(watcherType);
        checkLocal(local);
        return { $case: "checkWatches", checkWatches: { path: p.serverPath, type } };
      },
      watcherType,
      local,
    );
  }

  /**
   * Removes every callback's watches of `watcherType` on `path`, here and on the server (ZooKeeper's
   * removeWatches opcode); each callback gets its WatchRemoved event(s). Rejects NOWATCHER if this
   * client holds no such watch. `local` as for `removeWatches`.
   */
  removeAllWatches(path: string, watcherType: WatcherType, local = false): Promise<void> {
    return this.send(
      Kind.removeWatches,
      path,
      (p) => {
        p.serverPath = this.serverPath(path);
        const type = watcherTypeNumber(watcherType);
        checkLocal(local);
        return { $case: "removeWatches", removeWatches: { path: p.serverPath, type } };
      },
      watcherType,
      local,
    );
  }

  /**
   * Applies every op or none. Resolves with one OpResult per op; on failure rejects with a
   * ZkMultiError whose `code` is the failing op's error and `results` the per-op list.
   */
  multi(ops: readonly Op[]): Promise<OpResult[]> {
    return this.send(Kind.multi, undefined, (p) => {
      const wireOps = opsToWire(ops, this.config.chroot);
      p.ops = ops.slice();
      return { $case: "multi", multi: { ops: wireOps } };
    });
  }

  /**
   * This session's ephemeral nodes whose path starts with `prefixPath` — a plain string prefix, as
   * in ZooKeeper ("/app/lock-" matches "/app/lock-0000000001"); "/" means all. Sorted paths.
   */
  getEphemerals(prefixPath = "/"): Promise<string[]> {
    return this.send(Kind.getEphemerals, prefixPath, (p) => {
      validatePath(prefixPath);
      const chroot = this.config.chroot;
      // Under a chroot, "/" means the chroot's subtree, not every path that starts with its name.
      p.serverPath = chroot !== undefined && prefixPath === "/" ? chroot + "/" : prependChroot(chroot, prefixPath);
      return { $case: "getEphemerals", getEphemerals: { prefixPath: p.serverPath } };
    });
  }

  /** How many nodes are below `path`, at any depth (ZooKeeper's getAllChildrenNumber). */
  getAllChildrenNumber(path: string): Promise<number> {
    return this.send(Kind.getAllChildrenNumber, path, (p) => {
      p.serverPath = this.serverPath(path);
      return { $case: "getAllChildrenNumber", getAllChildrenNumber: { path: p.serverPath } };
    });
  }

  /**
   * getData / getChildren of several nodes, all read from one state of this server. Unlike multi,
   * each read succeeds or fails on its own: an entry is `{ type: "error", code }` for a read that
   * failed (NONODE, say) and the call itself resolves. Built with `op.getData` / `op.getChildren`.
   */
  multiRead(ops: readonly ReadOp[]): Promise<ReadOpResult[]> {
    return this.send(Kind.multiRead, undefined, (p) => {
      const wireOps = readOpsToWire(ops, this.config.chroot);
      p.ops = ops.slice();
      return { $case: "multiRead", multiRead: { ops: wireOps } };
    });
  }

  /**
   * Changes the cluster's membership (ZooKeeper's reconfig; the servers need reconfigEnabled, and
   * this session the super user's id or WRITE on /zookeeper/config). Resolves with the new
   * configuration once it is in force. RECONFIGINPROGRESS while another is, BADVERSION if
   * `fromConfig` is not the one in force, NEWCONFIGNOQUORUM unless a quorum of the new members is
   * connected to the leader and synced, BADARGUMENTS for a malformed member or fewer than two voters.
   */
  reconfig(change: ReconfigChange): Promise<ClusterConfiguration> {
    return this.send(Kind.reconfig, undefined, () => {
      const list = (items: readonly (string | number)[] | undefined) => (items === undefined ? undefined : items.join(","));
      if (change.newMembers !== undefined && (change.joining !== undefined || change.leaving !== undefined)) {
        throw new ZkError("BADARGUMENTS", "reconfig takes newMembers or joining/leaving, not both");
      }
      return {
        $case: "reconfig",
        reconfig: { joining: list(change.joining), leaving: list(change.leaving), newMembers: list(change.newMembers), fromConfig: change.fromConfig ?? -1n },
      };
    });
  }

  /** The configuration in force, from /zookeeper/config (whatever this client's chroot). */
  getConfig(options: WatchOptions = {}): Promise<ClusterConfiguration> {
    return this.send(Kind.getConfig, CONFIG_NODE, (p) => {
      p.serverPath = CONFIG_NODE;
      p.watcher = checkWatcher(options.watch);
      return { $case: "getData", getData: { path: CONFIG_NODE, watch: p.watcher !== undefined } };
    });
  }

  /**
   * The members of the configuration in force on the server this session is connected to, each
   * with the address its corral client port is dialled at when that server knows it — what
   * /zookeeper/config cannot say, as it names the ZooKeeper-protocol ports. Answered by the server
   * itself (read-only ones too), in order with this session's other requests; no ACL applies.
   * UNIMPLEMENTED from a server that predates it. ConnectOptions.followMembership uses it.
   */
  getMembers(): Promise<ClusterMembers> {
    return this.send(Kind.getMembers, undefined, () => ({ $case: "getMembers", getMembers: {} }));
  }

  /** Resolves once this server has applied everything the leader had committed when the sync began. */
  sync(path: string): Promise<void> {
    return this.send(Kind.sync, path, (p) => {
      p.serverPath = this.serverPath(path);
      return { $case: "sync", sync: { path: p.serverPath } };
    });
  }

  /**
   * Ends the session: the server deletes its ephemerals. Requests sent before close are answered
   * first; requests after it fail SESSIONEXPIRED. Never rejects.
   */
  close(): Promise<void> {
    if (this.closePromise) return this.closePromise;
    this.follower?.stop();
    this.closePromise = new Promise<void>((resolve) => {
      this.closeResolve = resolve;
    });
    this.session.close();
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
    return this.send(kind, path, (p) => {
      const mode: CreateMode = options.mode ?? "persistent";
      const flag = modeFlag(mode);
      p.serverPath = this.serverPath(path, isSequentialMode(mode));
      return {
        $case: "create",
        create: {
          path: p.serverPath,
          data: toBytes(data),
          acl: aclToWire(options.acl),
          mode: flag,
          ttlMs: ttlToWire(mode, options.ttlMs),
        },
      };
    });
  }

  private sendGetChildren<T>(kind: KindValue, path: string, options: WatchOptions): Promise<T> {
    return this.send(kind, path, (p) => {
      p.serverPath = this.serverPath(path);
      p.watcher = checkWatcher(options.watch);
      return { $case: "getChildren", getChildren: { path: p.serverPath, watch: p.watcher !== undefined } };
    });
  }

  /**
   * Sends one request of `kind` for the user's `path`. `build` checks the call's arguments, in
   * their order, and returns the request, filling in what the answer will need: `serverPath`
   * (blank for requests without a node), `watcher` to register, `ops` to read the results by. A
   * throw there — a refused argument — comes back as this call's rejection, never as a throw, and
   * nothing is sent. `removing` is the watcher type of a removal of watches (see `sendRemoval`).
   */
  private send<T>(kind: KindValue, path: string | undefined, build: (p: Pending) => RequestOp, removing?: WatcherType, local = false): Promise<T> {
    const pending: Pending = { kind, path, serverPath: "", watcher: undefined, ops: undefined, resolve: unsettled, reject: unsettled };
    let request: RequestOp;
    try {
      request = build(pending);
    } catch (err) {
      return refused(err);
    }
    // build accepted the watcher type, so `removing` is set exactly for removeWatches and removeAllWatches.
    if (removing !== undefined) return this.sendRemoval(request, pending, removing, local) as Promise<T>;
    const lifecycle = this.session.lifecycle;
    if (lifecycle !== "active") {
      const why = lifecycle === "expired" ? "session expired" : "client closed";
      return Promise.reject(new ZkError("SESSIONEXPIRED", `SESSIONEXPIRED: ${why}`, path));
    }
    if (!this.session.connected) {
      return Promise.reject(new ZkError("CONNECTIONLOSS", "CONNECTIONLOSS: not connected", path));
    }
    return new Promise<T>((resolve, reject) => {
      pending.resolve = resolve;
      pending.reject = reject;
      this.session.submit(request, pending);
    });
  }

  /**
   * A removal of watches, settled as ZooKeeper's WatchDeregistration: nothing held here → NOWATCHER;
   * a failure (no connection, or the server's error) → that error, unless `local`; otherwise the
   * watches go and their callbacks are told. It settles while the answer is read, so no frame after
   * the answer reaches a removed callback.
   */
  private sendRemoval(request: RequestOp, removal: Pending, type: WatcherType, local: boolean): Promise<void> {
    const { kind, serverPath, watcher } = removal;
    // A removal always names a node: send() gets the user's path for both kinds.
    const path = removal.path!;
    if (!this.registry.contains(serverPath, watcher, type)) return Promise.reject(new ZkError("NOWATCHER", undefined, path));
    return new Promise<void>((resolve, reject) => {
      const settle = (err: ZkError | undefined): void => {
        // An event may have spent a one-time watch while the request was out.
        if (!this.registry.contains(serverPath, watcher, type)) return reject(new ZkError("NOWATCHER", undefined, path));
        if (err !== undefined && !local) return reject(err);
        this.notifyRemoved(this.registry.remove(serverPath, watcher, type)!, path);
        resolve();
      };
      const lifecycle = this.session.lifecycle;
      if (lifecycle !== "active" || !this.session.connected) {
        const code = lifecycle === "active" ? "CONNECTIONLOSS" : "SESSIONEXPIRED";
        settle(new ZkError(code, `${code}: not connected`, path));
        return;
      }
      this.session.submit(request, { kind, path, serverPath, watcher: undefined, ops: undefined, resolve: () => settle(undefined), reject: settle });
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

  // ---------------------------------------------------------------------------------------------
  // The session machine's outcomes

  private start(): Promise<Client> {
    const promise = new Promise<Client>((resolve, reject) => {
      this.connectSettle = { resolve, reject };
    });
    this.session.start();
    return promise;
  }

  private onSessionEffect(effect: SessionEffect<Pending>): void {
    switch (effect.type) {
      case "open":
      case "send":
      case "close":
      case "armTimer":
      case "cancelTimer":
        this.transport.execute(effect);
        return;
      case "answered":
        this.onAnswer(effect.token, effect.response);
        return;
      case "failed":
        effect.token.reject(new ZkError(effect.code, effect.message, effect.token.path));
        return;
      case "event":
        this.onEvent(effect.event);
        return;
      case "state":
        if (effect.state === "expired") this.registry.clear();
        this.setState(effect.state);
        this.follower?.onState(effect.state);
        if (effect.state === "connected") this.settleConnect(undefined);
        return;
      case "connectFailed":
        this.follower?.stop();
        this.registry.clear();
        this.stateValue = effect.state;
        this.settleConnect(effect.error);
        return;
      case "closed": {
        this.follower?.stop();
        this.registry.clear();
        if (effect.announce) this.setState("closed");
        const resolve = this.closeResolve;
        this.closeResolve = undefined;
        resolve?.();
        return;
      }
      case "log":
        this.log(effect.level, effect.fields, effect.message);
        return;
    }
  }

  private settleConnect(error: ZkError | undefined): void {
    const settle = this.connectSettle;
    this.connectSettle = undefined;
    if (error === undefined) settle?.resolve(this);
    else settle?.reject(error);
  }

  private onAnswer(pending: Pending, response: DecodedResponse): void {
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
            this.resolveWatched(p, "exist", null);
            return;
          }
          break;
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
      case Kind.addAuth:
      case Kind.removeWatches:
      case Kind.checkWatches:
        p.resolve(undefined);
        return;
      case Kind.addWatchPersistent:
      case Kind.addWatchRecursive:
        this.resolveWatched(p, p.kind === Kind.addWatchPersistent ? "persistent" : "persistent-recursive", undefined);
        return;
      case Kind.whoAmI:
        p.resolve(r.clientInfo.map((info) => ({ authScheme: info.authScheme, user: info.user })));
        return;
      case Kind.exists:
        this.resolveWatched(p, "data", requireStat(r.stat));
        return;
      case Kind.getData:
        this.resolveWatched(p, "data", { data: r.data, stat: requireStat(r.stat) });
        return;
      case Kind.getConfig:
        this.resolveWatched(p, "data", configurationOf(r.data, requireStat(r.stat)));
        return;
      case Kind.reconfig:
        p.resolve(configurationOf(r.data, requireStat(r.stat)));
        return;
      case Kind.getMembers:
        p.resolve(membersFromWire(r.members));
        return;
      case Kind.setData:
      case Kind.setAcl:
        p.resolve(requireStat(r.stat));
        return;
      case Kind.getChildren:
        this.resolveWatched(p, "child", r.children);
        return;
      case Kind.getChildrenWithStat:
        this.resolveWatched(p, "child", { children: r.children, stat: requireStat(r.stat) });
        return;
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

  /**
   * Resolves a request that may set a watch. The registry holds only watches a whole answer
   * confirmed: callers build `value` first, so an answer `requireStat` refuses adds none.
   */
  private resolveWatched(p: Pending, kind: WatchKind, value: unknown): void {
    if (p.watcher) this.registry.add(kind, p.serverPath, p.watcher);
    p.resolve(value);
  }

  private onEvent(event: DecodedWatchEvent): void {
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

/**
 * The promise of a call whose arguments were refused before anything was sent. The checks throw
 * ZkErrors (BADARGUMENTS, INVALIDACL); an argument no check foresaw fails with the TypeError that
 * reading it raised. Either way an Error, which the promise rejects with unchanged.
 */
function refused<T>(err: unknown): Promise<T> {
  const error = err as Error;
  return Promise.reject(error);
}

/** A Pending's resolve and reject until `send` hands it the promise's own. */
function unsettled(): void {
  // never called: nothing can answer a request before it is submitted
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

const CONFIG_NODE = "/zookeeper/config";

/** The configuration text's "version=<hex>" line (0 when it has none, as a standalone server's empty node). */
function configurationOf(data: Uint8Array, stat: Stat): ClusterConfiguration {
  const text = new TextDecoder().decode(data);
  const version = /(?:^|\n)version=([0-9a-fA-F]{1,16})\s*$/.exec(text)?.[1];
  return { text, version: version === undefined ? 0n : BigInt("0x" + version), stat };
}
