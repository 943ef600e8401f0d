/**
 * The corral client (docs/architecture.md §6): the public API of one session. It checks arguments, builds
 * request ops, and owns what the user sees — the promises, the "state" and "error" events, the
 * watch callbacks. How a call is submitted (client-requests.ts) and what its answer turns into
 * (pending-request.ts) live beside it. What happens on the connection (xids and the order of
 * answers, reconnects, expiry, pings) is decided by the session machine (session-machine.ts) and
 * carried out over gRPC by the transport (grpc-transport.ts); this class wires the two together
 * and acts on the machine's outcomes.
 */
import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import type * as grpc from "@grpc/grpc-js";
import { ZkError } from "../common/errors.js";
import { validatePath } from "../common/paths.js";
import { configFrom, type ClientConfig } from "./client-config.js";
import { hostAddress, parseConnectString, prependChroot, shuffled, stripChroot, type HostPort } from "./connect-string.js";
import { aclToWire, addWatchModeNumber, checkVersion, eventTypeName, modeFlag, toBytes, ttlToWire, watcherTypeNumber } from "./convert.js";
import type { DecodedResponse, DecodedWatchEvent } from "./codec.js";
import { GrpcTransport } from "./grpc-transport.js";
import { opsToWire, readOpsToWire } from "./ops.js";
import { ClientRequests, refused, sessionOver } from "./client-requests.js";
import { MembershipFollower } from "./membership-follower.js";
import { CONFIG_NODE, Kind, settle, type KindValue, type Pending } from "./pending-request.js";
import { newSaslMechanism, type SaslClientMechanism } from "./sasl-mechanism.js";
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
  Watcher,
  WatcherType,
} from "./types.js";
import { isSequentialMode } from "./types.js";
import { WatchRegistry } from "./watch-registry.js";

export { DEFAULT_SESSION_TIMEOUT_MS } from "./client-config.js";

/** Random bytes of a SASL cnonce (Java's DIGEST-MD5 client draws as many). */
const SASL_CNONCE_BYTES = 30;
export { RECONNECT_BACKOFF_MS_MAX, RECONNECT_BACKOFF_MS_MIN, reconnectDelayMs } from "./session-machine.js";
export { nextXid } from "./session-requests.js";

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
  private readonly requests: ClientRequests;
  private readonly transport: GrpcTransport;
  private stateValue: ClientState = "connecting";
  private connectSettle: { resolve: (c: Client) => void; reject: (e: ZkError) => void } | undefined;
  private closePromise: Promise<void> | undefined;
  private closeResolve: (() => void) | undefined;
  /** With ConnectOptions.followMembership: keeps the server list on the cluster's members. */
  private readonly follower: MembershipFollower | undefined;
  /** With ConnectOptions.sasl: each connection's mechanism while it logs in. */
  private readonly saslMechanisms = new Map<number, SaslClientMechanism>();

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
        sasl: config.sasl !== undefined,
        watchedPaths: () => this.registry.paths(),
        random: Math.random,
      },
      (effect) => this.onSessionEffect(effect),
    );
    this.transport = new GrpcTransport(config.channel, this.session);
    this.requests = new ClientRequests(this.session, this.registry, config.chroot, (err) => this.reportCallbackError(err));
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
    if (lifecycle !== "active") return Promise.reject(sessionOver(lifecycle));
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
    return this.requests.send(Kind.exists, path, (p) => {
      p.serverPath = this.requests.serverPath(path);
      p.watcher = checkWatcher(options.watch);
      return { $case: "exists", exists: { path: p.serverPath, watch: p.watcher !== undefined } };
    });
  }

  /** The node's data and Stat. With `watch`, a data watch: it fires once on the node's next change or deletion. NONODE if there is no node (no watch is set then). */
  getData(path: string, options: WatchOptions = {}): Promise<{ data: Uint8Array; stat: Stat }> {
    return this.requests.send(Kind.getData, path, (p) => {
      p.serverPath = this.requests.serverPath(path);
      p.watcher = checkWatcher(options.watch);
      return { $case: "getData", getData: { path: p.serverPath, watch: p.watcher !== undefined } };
    });
  }

  /** Replaces the node's data; resolves with its new Stat. With `version` (not -1), BADVERSION unless the node's data version is that one. */
  setData(path: string, data: Data, options: VersionOptions = {}): Promise<Stat> {
    return this.requests.send(Kind.setData, path, (p) => {
      p.serverPath = this.requests.serverPath(path);
      return { $case: "setData", setData: { path: p.serverPath, data: toBytes(data), version: checkVersion(options.version) } };
    });
  }

  /** Deletes the node. NONODE if it is gone, NOTEMPTY if it has children, BADVERSION if `version` (not -1) is not its data version. */
  delete(path: string, options: VersionOptions = {}): Promise<void> {
    return this.requests.send(Kind.delete, path, (p) => {
      p.serverPath = this.requests.serverPath(path);
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
    return this.requests.send(Kind.getAcl, path, (p) => {
      p.serverPath = this.requests.serverPath(path);
      return { $case: "getAcl", getAcl: { path: p.serverPath } };
    });
  }

  /**
   * Replaces the node's ACL; needs ADMIN on it. `version` is the expected aversion (-1: any).
   * An `auth` entry stands for every digest id this session authenticated as (INVALIDACL if none).
   */
  setACL(path: string, acl: readonly Acl[], options: VersionOptions = {}): Promise<Stat> {
    return this.requests.send(Kind.setAcl, path, (p) => {
      p.serverPath = this.requests.serverPath(path);
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
    return this.requests.send(Kind.addAuth, undefined, () => {
      if (typeof scheme !== "string") throw new ZkError("BADARGUMENTS", "scheme must be a string");
      return { $case: "addAuth", addAuth: { scheme, auth: toBytes(auth) } };
    });
  }

  /** The ids this session's connection is authenticated as, its `ip` first (ZooKeeper's whoAmI). */
  whoAmI(): Promise<ClientInfo[]> {
    return this.requests.send(Kind.whoAmI, undefined, () => ({ $case: "whoAmI", whoAmI: {} }));
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
    return this.requests.send(mode === "persistent" ? Kind.addWatchPersistent : Kind.addWatchRecursive, basePath, (p) => {
      p.serverPath = this.requests.serverPath(basePath);
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
    return this.requests.send(
      Kind.checkWatches,
      path,
      (p) => {
        p.serverPath = this.requests.serverPath(path);
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
    return this.requests.send(
      Kind.removeWatches,
      path,
      (p) => {
        p.serverPath = this.requests.serverPath(path);
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
    return this.requests.send(Kind.multi, undefined, (p) => {
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
    return this.requests.send(Kind.getEphemerals, prefixPath, (p) => {
      validatePath(prefixPath);
      const chroot = this.config.chroot;
      // Under a chroot, "/" means the chroot's subtree, not every path that starts with its name.
      p.serverPath = chroot !== undefined && prefixPath === "/" ? chroot + "/" : prependChroot(chroot, prefixPath);
      return { $case: "getEphemerals", getEphemerals: { prefixPath: p.serverPath } };
    });
  }

  /** How many nodes are below `path`, at any depth (ZooKeeper's getAllChildrenNumber). */
  getAllChildrenNumber(path: string): Promise<number> {
    return this.requests.send(Kind.getAllChildrenNumber, path, (p) => {
      p.serverPath = this.requests.serverPath(path);
      return { $case: "getAllChildrenNumber", getAllChildrenNumber: { path: p.serverPath } };
    });
  }

  /**
   * getData / getChildren of several nodes, all read from one state of this server. Unlike multi,
   * each read succeeds or fails on its own: an entry is `{ type: "error", code }` for a read that
   * failed (NONODE, say) and the call itself resolves. Built with `op.getData` / `op.getChildren`.
   */
  multiRead(ops: readonly ReadOp[]): Promise<ReadOpResult[]> {
    return this.requests.send(Kind.multiRead, undefined, (p) => {
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
    return this.requests.send(Kind.reconfig, undefined, () => {
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
    return this.requests.send(Kind.getConfig, CONFIG_NODE, (p) => {
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
    return this.requests.send(Kind.getMembers, undefined, () => ({ $case: "getMembers", getMembers: {} }));
  }

  /** Resolves once this server has applied everything the leader had committed when the sync began. */
  sync(path: string): Promise<void> {
    return this.requests.send(Kind.sync, path, (p) => {
      p.serverPath = this.requests.serverPath(path);
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
  // Requests built in more than one call

  private sendCreate<T>(kind: KindValue, path: string, data: Data | undefined, options: CreateOptions): Promise<T> {
    return this.requests.send(kind, path, (p) => {
      const mode: CreateMode = options.mode ?? "persistent";
      const flag = modeFlag(mode);
      p.serverPath = this.requests.serverPath(path, isSequentialMode(mode));
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
    return this.requests.send(kind, path, (p) => {
      p.serverPath = this.requests.serverPath(path);
      p.watcher = checkWatcher(options.watch);
      return { $case: "getChildren", getChildren: { path: p.serverPath, watch: p.watcher !== undefined } };
    });
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
      case "close":
        this.saslMechanisms.get(effect.connection)?.dispose();
        this.saslMechanisms.delete(effect.connection);
        this.transport.execute(effect);
        return;
      case "open":
      case "send":
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
      case "saslStep":
        this.evaluateSasl(effect.connection, effect.host, effect.challenge);
        return;
      case "state":
        if (effect.state === "expired" || effect.state === "authFailed") this.registry.clear();
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

  /** One step of a connection's SASL login, by its mechanism (made at the first step); the machine is told the outcome. */
  private evaluateSasl(connection: number, host: HostPort, challenge: Uint8Array | null): void {
    let mechanism = this.saslMechanisms.get(connection);
    if (mechanism === undefined) {
      // configFrom checked the options: the mechanism is one this client speaks.
      mechanism = newSaslMechanism(this.config.sasl!, host.host, () => randomBytes(SASL_CNONCE_BYTES).toString("base64"));
      this.saslMechanisms.set(connection, mechanism);
    }
    mechanism.evaluate(challenge).then(
      (step) => this.session.saslEvaluated(connection, step),
      (error: unknown) => this.session.saslEvaluated(connection, { failed: error instanceof Error ? error.message : String(error) }),
    );
  }

  private settleConnect(error: ZkError | undefined): void {
    const settle = this.connectSettle;
    this.connectSettle = undefined;
    if (error === undefined) settle?.resolve(this);
    else settle?.reject(error);
  }

  private onAnswer(pending: Pending, response: DecodedResponse): void {
    try {
      settle(pending, response, this.config.chroot, this.registry);
    } catch (err) {
      // A malformed answer (e.g. a missing stat): fail this request, keep the session.
      pending.reject(err instanceof ZkError ? err : new ZkError("MARSHALLINGERROR", String(err), pending.path));
    }
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
