/**
 * The client sessions of one server and the answer stage of the request chain (ZooKeeper's
 * FinalRequestProcessor, with the per-session ordering of its CommitProcessor): each session's
 * requests wait in one FIFO queue, and `drain` answers from its head, in order — a read runs
 * against the local tree when it reaches the head, so it sees every earlier write of its session
 * (contract item 2) and never waits on disk; a write is answered when its txn is applied here; a
 * sync once the tree has applied everything ordered before it (contract item 3). Watch events an
 * apply fires are sent before any later answer (contract item 6).
 *
 * The request pipeline (pipeline.ts) puts requests into the queues; the apply stage hands every
 * applied txn here (`applied`); the quorum peer ends sessions here when its term ends, when the
 * leader expires one, and when read-only mode gives one up (ClientSessionControl).
 */
import { assert } from "../common/assert.js";
import { limits } from "../common/constants.js";
import { ZkError, ZkErrorCode } from "../common/errors.js";
import { validatePath } from "../common/paths.js";
import type { DataTree } from "../store/data-tree.js";
import { Perms, type Acl, type Id, type Txn, type TxnResult, type WatchDelivery } from "../store/types.js";
import { checkAcl, clientInfoOf, permits, redactDigests } from "./acl.js";
import { auditEventsOfWrite, ephemeralDeletionEvents, type AuditPort } from "./audit.js";
import { zookeeperIdOrder } from "./zookeeper-id-order.js";
import type { ClientConnection, RequestObserver } from "./pipeline.js";
import {
  EMPTY_BODY,
  type ClusterMembersReply,
  type ClientRequest,
  type MultiReadOpRequest,
  type MultiReadRequest,
  type ReadOpResult,
  type ReadRequest,
  type Reply,
  type WriteRequest,
  type ZooKeeperChecks,
} from "./requests.js";
import type { ClientSessionControl } from "./quorum-peer.js";
import type { OutboundBudget } from "./outbound-budget.js";

export type EntryKind = "read" | "write" | "sync";

export interface QueueEntry {
  xid: number;
  request: ClientRequest;
  kind: EntryKind;
  connection: ClientConnection;
  /** The connection's ids when the request arrived: what its ACL checks use. */
  authInfo: readonly Id[];
  /** Set when the answer is known (writes: at apply; rejections: at once). */
  reply: Reply | undefined;
  /** For syncs: the zxid the tree must reach; undefined until the broadcast says. */
  syncZxid: number | undefined;
  /** When it arrived, on the observer's clock (0 without an observer). */
  receivedMs: number;
}

export class SessionState {
  connection: ClientConnection | undefined;
  /** From `head` on: the requests not yet answered. Before it: answered ones' slots, emptied, until the queue is next cut. */
  readonly queue: (QueueEntry | undefined)[] = [];
  head = 0;
  /** A closeSession (asked for or expiry) is in flight: new requests are refused. */
  closing = false;
  constructor(
    readonly id: bigint,
    readonly timeoutMs: number,
  ) {}

  queued(): number {
    return this.queue.length - this.head;
  }
}

export interface ClientSessionsDeps {
  /** Read through on every use: a learner's tree is replaced when it syncs by SNAP or TRUNC. */
  state: { readonly tree: DataTree };
  /** The session is gone from this server: whoever tracks its liveness forgets it. */
  forget(sessionId: bigint): void;
  /** Told how long each request took to answer. */
  observer?: RequestObserver;
  /** getMembers' answer, read when its turn comes; absent: getMembers is UNIMPLEMENTED. */
  members?: () => ClusterMembersReply;
  /** Told each audited write as it is answered (audit.enable); absent: nothing is audited, at no cost. */
  audit?: AuditPort;
  /** The server's bound on answers queued and not written out: at it, reads wait their turn; absent: reads never wait. */
  outbound?: OutboundBudget;
  /**
   * TEST ONLY, deliberately broken: every n-th watch event a txn fires is never sent. The chaos
   * tests switch it on to prove their watch checker catches a server that loses notifications.
   */
  unsafeDropEveryNthWatchEvent?: number;
}

export class ClientSessions implements ClientSessionControl {
  private readonly sessions = new Map<bigint, SessionState>();
  private readonly syncWaiters = new Set<SessionState>();
  /** Sessions whose next read waits for the outbound bound, in the order they came to it. */
  private readonly readWaiters = new Set<SessionState>();
  private resumingReads = false;
  private readonly pendingCreates = new Map<bigint, (accepted: boolean) => void>();
  /** Sessions a read-only server opened: no txn made them, and they end when read-only mode does. */
  private readonly localSessions = new Map<bigint, { timeoutMs: number; password: Uint8Array }>();
  /** Watch events fired by txns so far (for unsafeDropEveryNthWatchEvent only). */
  private eventsFired = 0;

  constructor(private readonly deps: ClientSessionsDeps) {
    deps.outbound?.onOpen(() => this.resumeReads());
  }

  private get tree(): DataTree {
    return this.deps.state.tree;
  }

  /** The tree's last applied zxid: what an answer made now carries. */
  get lastProcessedZxid(): number {
    return this.tree.lastProcessedZxid;
  }

  /** `done(true)` once the createSession txn of `sessionId` is applied (false if the server resets first). */
  awaitCreated(sessionId: bigint, done: (accepted: boolean) => void): void {
    this.pendingCreates.set(sessionId, done);
  }

  /** Open a session read-only mode serves alone (no quorum is there to create it). */
  openLocalSession(sessionId: bigint, timeoutMs: number, password: Uint8Array): void {
    this.localSessions.set(sessionId, { timeoutMs, password });
  }

  /** A session's record: in the replicated tree, or opened here by read-only mode. */
  private sessionRecord(sessionId: bigint): { timeoutMs: number; password: Uint8Array } | undefined {
    return this.tree.sessions.get(sessionId) ?? this.localSessions.get(sessionId);
  }

  /** A read-only session that timed out: ended here, as no txn can end it. */
  endLocally(sessionId: bigint): void {
    this.localSessions.delete(sessionId);
    this.closeSession(sessionId, false);
  }

  /**
   * Bind a known session to a connection (new or resumed). A previous connection of the session is
   * ended, and the watches it registered are dropped: the client re-registers them with setWatches.
   * Returns the session's timeout.
   */
  attach(sessionId: bigint, connection: ClientConnection): number {
    const record = this.sessionRecord(sessionId);
    if (!record) assert(false, `attach of unknown session ${sessionId}`);
    let session = this.sessions.get(sessionId);
    if (!session) {
      session = new SessionState(sessionId, record.timeoutMs);
      this.sessions.set(sessionId, session);
    }
    const previous = session.connection;
    session.connection = connection;
    if (previous && previous !== connection) {
      this.tree.watches.removeWatcher(sessionId);
      previous.end("moved");
    }
    return session.timeoutMs;
  }

  /** The connection went away. The session lives on until it expires or is resumed elsewhere. */
  detach(sessionId: bigint, connection: ClientConnection): void {
    const session = this.sessions.get(sessionId);
    if (!session || session.connection !== connection) return;
    session.connection = undefined;
    this.tree.watches.removeWatcher(sessionId);
  }

  /** Whether `password` opens `sessionId` here. */
  checkSession(sessionId: bigint, password: Uint8Array): boolean {
    const record = this.sessionRecord(sessionId);
    if (!record) return false;
    if (this.sessions.get(sessionId)?.closing) return false;
    return equalBytes(record.password, password);
  }

  /** The timeout of a session `checkSession` accepts. */
  sessionTimeoutMs(sessionId: bigint): number {
    const record = this.sessionRecord(sessionId);
    if (!record) assert(false, `timeout of unknown session ${sessionId}`);
    return record.timeoutMs;
  }

  /** An attached session, for the pipeline to queue its requests; undefined if never attached (or ended). */
  get(sessionId: bigint): SessionState | undefined {
    return this.sessions.get(sessionId);
  }

  /**
   * Mark an expiring session so nothing more is accepted from it; true if its closeSession must be
   * ordered (it was not closing already, and the tree still holds it).
   */
  expire(sessionId: bigint): boolean {
    const session = this.sessions.get(sessionId);
    if (session?.closing) return false;
    if (session) session.closing = true;
    return this.tree.sessions.has(sessionId);
  }

  /** A read-only session's close, answered here (no txn will answer it): the session ends now. */
  closeHere(sessionId: bigint): void {
    this.localSessions.delete(sessionId);
    this.closeSession(sessionId, true);
  }

  /** Requests queued over every session, not yet answered. */
  outstandingRequests(): number {
    let total = 0;
    for (const session of this.sessions.values()) total += session.queued();
    return total;
  }

  /** Sessions attached to a live connection here. */
  connectedSessions(): number {
    let count = 0;
    for (const session of this.sessions.values()) if (session.connection?.open) count += 1;
    return count;
  }

  /** The ids of the sessions attached to a live connection here. */
  connectedSessionIds(): bigint[] {
    const ids: bigint[] = [];
    for (const [sessionId, session] of this.sessions) if (session.connection?.open) ids.push(sessionId);
    return ids;
  }

  queuedRequests(sessionId: bigint): number {
    return this.sessions.get(sessionId)?.queued() ?? 0;
  }

  /** The database applied `txn`: fire its watches, answer its request, release what waited on it. */
  applied(txn: Txn, result: TxnResult, deliveries: WatchDelivery[]): void {
    const dropEvery = this.deps.unsafeDropEveryNthWatchEvent;
    for (const delivery of deliveries) {
      if (dropEvery !== undefined && ++this.eventsFired % dropEvery === 0) continue;
      const target = this.sessions.get(delivery.watcher)?.connection;
      if (target?.open) target.sendEvent(delivery.event);
    }
    const sessionId = txn.header.sessionId;
    // A createSession the leader refused (the id is a live session's) answers the connect that
    // waits on it, never a request of the live session.
    const refusedCreate = result.type === "error" && txn.header.cxid === 0 ? this.pendingCreates.get(sessionId) : undefined;
    const session = refusedCreate === undefined ? this.sessions.get(sessionId) : undefined;
    if (refusedCreate !== undefined) {
      this.pendingCreates.delete(sessionId);
      refusedCreate(false);
    }
    switch (result.type) {
      case "createSession": {
        const done = this.pendingCreates.get(sessionId);
        this.pendingCreates.delete(sessionId);
        done?.(true);
        break;
      }
      case "closeSession": {
        // Every server that applies it audits the deletions, as ZooKeeper's DataTree does.
        const audit = this.deps.audit;
        if (audit) for (const event of ephemeralDeletionEvents(sessionId, result.deletedPaths, audit.systemUser)) audit.record(event);
        // The client's own close (it is waiting for this txn), or the leader's expiry.
        const waiting = session === undefined ? undefined : this.firstUnansweredWrite(session);
        const askedFor = waiting?.request.op === "close" && waiting.xid === txn.header.cxid;
        if (session) this.answerWrite(session, txn, result);
        this.closeSession(sessionId, askedFor);
        break;
      }
      default:
        if (session) this.answerWrite(session, txn, result);
    }
    if (this.syncWaiters.size > 0) {
      const waiting = [...this.syncWaiters];
      this.syncWaiters.clear();
      for (const waiter of waiting) this.drain(waiter);
    }
  }

  /**
   * Drop every connection and everything queued: the server stops serving (shutting down, or a
   * cluster member leaving broadcast). Sessions live on in the replicated tree; their clients
   * reconnect, here later or elsewhere now, and resume them.
   */
  reset(): void {
    const creates = [...this.pendingCreates.values()];
    this.pendingCreates.clear();
    for (const done of creates) done(false);
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    this.localSessions.clear();
    this.syncWaiters.clear();
    this.readWaiters.clear();
    for (const session of sessions) {
      this.tree.watches.removeWatcher(session.id);
      session.connection?.end("closed");
    }
  }

  private answerWrite(session: SessionState, txn: Txn, result: TxnResult): void {
    const entry = this.firstUnansweredWrite(session);
    // A server-made closeSession (expiry) answers nothing.
    if (!entry) return;
    if (result.type === "closeSession" && entry.request.op !== "close") return;
    // A write this queue is not waiting for: one the session's client sent on an earlier
    // connection (committed after a leader change, once the client had reconnected and sent new
    // requests), or one sent by another connection resuming the same session. It is applied like
    // every txn; nobody here waits for its answer (ZooKeeper answers only the requests a server
    // holds). Per connection, writes commit in the order they were sent, so the first unanswered
    // write is the only one a txn can answer.
    if (entry.xid !== txn.header.cxid) return;
    // Audited where ZooKeeper's FinalRequestProcessor audits: the server holding the request, as it answers.
    const audit = this.deps.audit;
    if (audit) {
      const connection = { sessionId: session.id, authInfo: entry.authInfo, remoteAddress: entry.connection.remoteAddress };
      for (const event of auditEventsOfWrite(entry.request as WriteRequest, result, connection)) audit.record(event);
    }
    entry.reply = replyFor(result, txn.header.zxid);
    this.drain(session);
  }

  private firstUnansweredWrite(session: SessionState): QueueEntry | undefined {
    for (let i = session.head; i < session.queue.length; i++) {
      const entry = session.queue[i]!;
      if (entry.kind === "write" && entry.reply === undefined) return entry;
    }
    return undefined;
  }

  private closeSession(sessionId: bigint, askedFor: boolean): void {
    const session = this.sessions.get(sessionId);
    this.deps.forget(sessionId);
    this.tree.watches.removeWatcher(sessionId);
    if (!session) return;
    session.closing = true;
    this.drain(session);
    this.sessions.delete(sessionId);
    this.syncWaiters.delete(session);
    this.readWaiters.delete(session);
    session.connection?.end(askedFor ? "closed" : "expired");
    session.connection = undefined;
  }

  /** The outbound total fell under its bound: the sessions waiting read, in turn, while it stays under. */
  private resumeReads(): void {
    if (this.resumingReads) return;
    this.resumingReads = true;
    try {
      for (const session of this.readWaiters) {
        if (this.deps.outbound?.open === false) break;
        this.readWaiters.delete(session);
        this.drain(session);
      }
    } finally {
      this.resumingReads = false;
    }
  }

  /** Answer, in order, every request at the head of the session's queue that can be answered now. */
  drain(session: SessionState): void {
    const queue = session.queue;
    while (session.head < queue.length) {
      const entry = queue[session.head]!;
      if (entry.reply === undefined) {
        if (entry.kind === "write") break;
        if (entry.kind === "sync") {
          if (entry.syncZxid === undefined || this.tree.lastProcessedZxid < entry.syncZxid) {
            this.syncWaiters.add(session);
            break;
          }
          const path = (entry.request as Extract<ClientRequest, { op: "sync" }>).path;
          entry.reply = { err: 0, zxid: this.tree.lastProcessedZxid, body: { kind: "path", path } };
        } else if (entry.connection !== session.connection) {
          // Its connection is gone: nobody reads the answer, and a watch it set would outlive that
          // connection and fire on the session's next one. (ZooKeeper binds a watch to the connection
          // that set it; here a watch belongs to the session, so a dead connection sets none.)
          entry.reply = this.errorReply(ZkErrorCode.CONNECTIONLOSS);
        } else if (this.deps.outbound?.open === false) {
          if (!this.readWaiters.has(session)) this.deps.outbound.waited();
          this.readWaiters.add(session);
          break;
        } else {
          entry.reply = this.executeRead(session, entry.request as ReadRequest, entry.authInfo);
        }
      }
      // Its slot lets the request go now (a write's data may be a MiB), not when the queue is cut.
      queue[session.head] = undefined;
      session.head += 1;
      if (!entry.connection.open) continue;
      // SESSIONMOVED is a connection-level error in ZooKeeper (FinalRequestProcessor closes the
      // connection instead of answering, ZOOKEEPER-710): the client sees a lost connection and
      // reconnects, which revalidates the session where it is now, or finds it expired.
      if (isSessionMoved(entry.reply)) entry.connection.end("moved");
      else {
        entry.connection.sendReply(entry.xid, entry.reply);
        // ZooKeeper's ServerStats.updateLatency: a request with a txn is an update, anything else a read.
        this.deps.observer?.answered(entry.kind === "write" ? "update" : "read", this.deps.observer.nowMs() - entry.receivedMs);
      }
    }
    if (session.head === queue.length) {
      queue.length = 0;
      session.head = 0;
    } else if (session.head > 256) {
      queue.splice(0, session.head);
      session.head = 0;
    }
  }

  /** One op of a multiRead: its own answer or its own error (NONODE, NOAUTH...), never the whole request's. */
  private executeReadOp(request: MultiReadRequest, op: MultiReadOpRequest, authInfo: readonly Id[]): ReadOpResult {
    try {
      checkReadPath(request, op.path);
      checkAcl(this.aclOf(op.path), Perms.READ, authInfo, op.path);
      if (op.op === "getData") {
        const { data, stat } = this.tree.getData(op.path);
        return { type: "getData", data, stat };
      }
      return { type: "getChildren", children: this.tree.getChildren(op.path).children };
    } catch (error) {
      if (error instanceof ZkError) return { type: "error", err: error.errno };
      throw error;
    }
  }

  /** The checks are ZooKeeper 3.8's FinalRequestProcessor's: NONODE first, then the node's ACL, then any watch. */
  private executeRead(session: SessionState, request: ReadRequest, authInfo: readonly Id[]): Reply {
    const zxid = this.tree.lastProcessedZxid;
    try {
      const watcher = "watch" in request && request.watch ? this.watcherFor(session) : undefined;
      switch (request.op) {
        case "exists": {
          // No ACL check, as ZooKeeper up to 3.8.3 (3.8.4 began to check READ on a node that exists).
          // ZooKeeper's exists looks at one thing of the path: NUL.
          if (request.zooKeeperChecks && request.path.includes("\u0000")) throw new ZkError("BADARGUMENTS", "NUL in a path", request.path);
          checkReadPath(request, request.path);
          const stat = this.tree.exists(request.path, watcher);
          if (!stat) return { err: ZkErrorCode.NONODE, zxid, body: EMPTY_BODY };
          return { err: 0, zxid, body: { kind: "stat", stat } };
        }
        case "getData": {
          checkReadPath(request, request.path);
          checkAcl(this.aclOf(request.path), Perms.READ, authInfo, request.path);
          const { data, stat } = this.tree.getData(request.path, watcher);
          return { err: 0, zxid, body: { kind: "data", data, stat } };
        }
        case "getChildren": {
          checkReadPath(request, request.path);
          checkAcl(this.aclOf(request.path), Perms.READ, authInfo, request.path);
          const { children, stat } = this.tree.getChildren(request.path, watcher);
          return { err: 0, zxid, body: { kind: "children", children, stat } };
        }
        case "getAcl": {
          checkReadPath(request, request.path);
          const nodeAcl = this.aclOf(request.path);
          checkAcl(nodeAcl, Perms.READ | Perms.ADMIN, authInfo, request.path);
          const { acl, stat } = this.tree.getAcl(request.path);
          // Reading an ACL with READ alone shows who, not their password hashes (ZooKeeper 3.6+).
          return { err: 0, zxid, body: { kind: "acl", acl: permits(nodeAcl, Perms.ADMIN, authInfo) ? acl : redactDigests(acl), stat } };
        }
        case "getEphemerals": {
          const prefix = request.prefixPath.trim();
          const all = [...this.tree.ephemeralsOf(session.id)];
          const paths = prefix === "" || prefix === "/" ? all : all.filter((path) => path.startsWith(request.prefixPath));
          return { err: 0, zxid, body: { kind: "paths", paths: paths.sort() } };
        }
        case "getAllChildrenNumber": {
          checkReadPath(request, request.path);
          checkAcl(this.aclOf(request.path), Perms.READ, authInfo, request.path);
          return { err: 0, zxid, body: { kind: "number", number: this.tree.descendantCount(request.path) } };
        }
        case "multiRead":
          return { err: 0, zxid, body: { kind: "multiRead", results: request.ops.map((op) => this.executeReadOp(request, op, authInfo)) } };
        case "whoAmI":
          return { err: 0, zxid, body: { kind: "whoAmI", clientInfo: zookeeperIdOrder(authInfo).map(clientInfoOf) } };
        case "getMembers":
          if (this.deps.members === undefined) return { err: ZkErrorCode.UNIMPLEMENTED, zxid, body: EMPTY_BODY };
          return { err: 0, zxid, body: { kind: "members", ...this.deps.members() } };
        case "setWatches": {
          for (const list of [request.dataWatches, request.existWatches, request.childWatches, request.persistentWatches, request.persistentRecursiveWatches]) {
            for (const path of list) checkReadPath(request, path);
          }
          const deliveries = this.tree.setWatches(request.relativeZxid, request, session.id);
          for (const delivery of deliveries) session.connection?.sendEvent(delivery.event);
          return { err: 0, zxid, body: EMPTY_BODY };
        }
        case "addWatch": {
          checkReadPath(request, request.path);
          this.tree.addWatch(request.path, request.mode, this.watcherFor(session));
          return { err: 0, zxid, body: EMPTY_BODY };
        }
        case "removeWatches":
        case "checkWatches": {
          // ZooKeeper's watch lookup takes the parent of a path before it looks: one without a slash throws.
          if (request.op === "checkWatches" && request.zooKeeperChecks && request.path !== "" && !request.path.includes("/")) {
            throw new ZkError("MARSHALLINGERROR", "a path without a slash", request.path);
          }
          checkReadPath(request, request.path);
          const watches = this.tree.watches;
          const found =
            request.op === "removeWatches"
              ? watches.removeWatch(request.path, request.watcherType, session.id)
              : watches.containsWatch(request.path, request.watcherType, session.id);
          return { err: found ? 0 : ZkErrorCode.NOWATCHER, zxid, body: EMPTY_BODY };
        }
      }
    } catch (error) {
      return { err: codeOf(error), zxid, body: EMPTY_BODY };
    }
  }

  /** The ACL of the node at `path`; ZkError NONODE if there is none. */
  private aclOf(path: string): readonly Acl[] {
    const node = this.tree.getNode(path);
    if (!node) throw new ZkError("NONODE", undefined, path);
    return node.acl;
  }

  private watcherFor(session: SessionState): bigint {
    if (this.tree.watches.watchCountOf(session.id) >= limits.watchesPerSessionMax) {
      throw new ZkError("BADARGUMENTS", "too many watches for this session");
    }
    return session.id;
  }

  errorReply(err: number): Reply {
    return { err, zxid: this.tree.lastProcessedZxid, body: EMPTY_BODY };
  }
}

function replyFor(result: TxnResult, zxid: number): Reply {
  switch (result.type) {
    case "create":
      return { err: 0, zxid, body: { kind: "create", path: result.path, stat: result.stat } };
    case "setData":
    case "setAcl":
      return { err: 0, zxid, body: { kind: "stat", stat: result.stat } };
    // ZooKeeper answers a reconfig with the new configuration, as a getData of /zookeeper/config.
    case "reconfig":
      return { err: 0, zxid, body: { kind: "data", data: result.data, stat: result.stat } };
    case "multi": {
      const failed = result.results.find((r) => r.type === "error" && r.err !== 0);
      return { err: failed && failed.type === "error" ? failed.err : 0, zxid, body: { kind: "multi", results: result.results } };
    }
    case "error":
      return { err: result.err, zxid, body: EMPTY_BODY };
    case "delete":
    case "check":
    case "createSession":
    case "closeSession":
      return { err: 0, zxid, body: EMPTY_BODY };
  }
}

function isSessionMoved(reply: Reply): boolean {
  if (reply.err === ZkErrorCode.SESSIONMOVED) return true;
  return reply.body.kind === "multi" && reply.body.results.some((result) => result.type === "error" && result.err === ZkErrorCode.SESSIONMOVED);
}

/** A read's, sync's or watch request's path is validated, BADARGUMENTS, unless it asks for ZooKeeper's checks, which validate none. */
export function checkReadPath(request: ZooKeeperChecks, path: string): void {
  if (request.zooKeeperChecks !== true) validatePath(path);
}

export function codeOf(error: unknown): number {
  if (error instanceof ZkError) return error.errno;
  throw error;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  let diff = 0;
  for (let i = 0; i < a.byteLength; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}
