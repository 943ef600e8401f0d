/**
 * The replicated tree of znodes, ZooKeeper's DataTree without I/O: `apply(txn)` changes it
 * deterministically and returns the watch deliveries the change fires; the read methods answer
 * a server's local reads and register watches (one-time ones, and addWatch's persistent ones).
 *
 * Stat bookkeeping. Each node stores the Stat a ZooKeeper client sees, with two deliberate points:
 * - `cversion` counts child creates *and* deletes, as ZooKeeper reports it (its DataNode.copyStat
 *   shows `2 * creates - numChildren`). So the root of a fresh tree, which holds the reserved
 *   "/zookeeper" without having created it, shows cversion -1, exactly as ZooKeeper's does.
 *   The count of creates, from which ZooKeeper names sequential children, is
 *   `(cversion + numChildren) / 2`: see `sequenceNumberOf`.
 * - `ephemeralOwner` stores the raw owner (session id, CONTAINER_OWNER or a ttlOwner()); stats
 *   handed out (reads, apply results) show 0 for containers and TTL nodes, as ZooKeeper does.
 *   `getNode(path).stat` is the raw record.
 *
 * Captures. `beginCapture()` freezes the tree as it is now without copying it: from then on, the
 * first change to each node first saves the node as it was (its pre-image), so the capture reads
 * every node as of the moment it began while writes go on. A snapshot of a million znodes is then
 * encoded a slice at a time between writes instead of stopping them for seconds, and is still the
 * exact image of one zxid (not ZooKeeper's fuzzy snapshot). The cost is one copy per node changed
 * while the capture is open.
 */
import { assert } from "../common/assert.js";
import { ZkError, ZkErrorCode } from "../common/errors.js";
import type { AddWatchMode } from "../common/watch-modes.js";
import { DigestSum, formatDigest, nodeHash, sessionHash } from "./tree-digest.js";
import type {
  Acl,
  CreateTxn,
  MultiTxn,
  OpResult,
  ReconfigTxn,
  SetAclTxn,
  SetDataTxn,
  Stat,
  Txn,
  TxnHeader,
  TxnResult,
  WatchDelivery,
  WatchEvent,
} from "./types.js";
import { OPEN_ACL_UNSAFE, ownerKind, PERSISTENT_OWNER, WatchEventType } from "./types.js";
import { READ_ACL_UNSAFE } from "../common/znode.js";
import { WatchManager } from "./watch-manager.js";
import { aclCostBytes, znodeCostBytes } from "./znode-cost.js";
import {
  formatQuotaFigures,
  isQuotaAccounted,
  limitsPathOf,
  parseQuotaFigures,
  quotaNodeTarget,
  statsPathOf,
  unsetFigures,
  type QuotaFigures,
} from "../common/quota.js";

export interface ZNode {
  data: Uint8Array;
  acl: Acl[];
  stat: Stat;
  /** Child names (not paths). */
  children: Set<string>;
}

/** A node as the tree lends it out: look, do not touch. */
export interface ReadonlyZNode {
  readonly data: Uint8Array;
  readonly acl: readonly Acl[];
  readonly stat: Readonly<Stat>;
  readonly children: ReadonlySet<string>;
}

/**
 * The tree frozen at `zxid` (see the file note, Captures): read nodes through `node`, and `release`
 * it once done — until then every first change to a node keeps a copy of it.
 */
export interface TreeCapture {
  readonly zxid: number;
  readonly nodeCount: number;
  /** Ascending by id. */
  readonly sessions: readonly (readonly [bigint, SessionRecord])[];
  /** The node at `path` as of `zxid`: the caller walks down from "/" through children it saw here. */
  node(path: string): ReadonlyZNode;
  release(): void;
}

/** A replicated session record: created by createSession, removed by closeSession. */
export interface SessionRecord {
  timeoutMs: number;
  password: Uint8Array;
}

/** The watched paths a reconnecting client hands back, per kind (ZooKeeper's SetWatches2). */
export interface WatchLists {
  dataWatches: readonly string[];
  existWatches: readonly string[];
  childWatches: readonly string[];
  persistentWatches: readonly string[];
  persistentRecursiveWatches: readonly string[];
}

export interface ApplyOutcome {
  result: TxnResult;
  /** Watches this txn fired, in ZooKeeper's order, each carrying the txn's zxid. */
  deliveries: WatchDelivery[];
}

/**
 * Leaves share one empty children set, saving a Set per leaf. Adding to it is a bug: the tree
 * swaps in a real Set on a node's first child.
 */
class NoChildren extends Set<string> {
  override add(value: string): this {
    assert(false, `tried to add child ${JSON.stringify(value)} to the shared empty children set`);
  }
}
const NO_CHILDREN: Set<string> = new NoChildren();
const NO_PATHS: ReadonlySet<string> = new Set();

const ROOT = "/";
const UTF8 = new TextEncoder();
const RESERVED = "/zookeeper";
const QUOTA = "/zookeeper/quota";
const CONFIG = "/zookeeper/config";

export class DataTree {
  /** This server's watches (not replicated, not in snapshots). */
  readonly watches = new WatchManager();

  private readonly nodes = new Map<string, ZNode>();
  /**
   * The sorted names of each parent listed since its children last changed, keyed by its children
   * set: a hundred clients listing one parent of a million children sort it once, not a hundred
   * times (~130 ms each). Dropped when a child is created or deleted; a set replaced is a new key.
   */
  private readonly sortedChildren = new WeakMap<ReadonlySet<string>, string[]>();
  private readonly ephemerals = new Map<bigint, Set<string>>();
  private readonly containers = new Set<string>();
  private readonly ttls = new Set<string>();
  /** Paths with a quota (a limits node under /zookeeper/quota). */
  private readonly quotaRoots = new Set<string>();
  private readonly sessionRecords = new Map<bigint, SessionRecord>();
  private lastZxid = 0;
  /** znodeCostBytes summed over every node, kept as nodes change (what the space quota measures). */
  private costBytes = 0;
  /** Per open capture: pre-images of the nodes changed since it began. */
  private openCaptures: Map<string, ZNode>[] = [];
  /** The digest's sums (tree-digest.ts), kept as the tree changes. */
  private nodeDigest = new DigestSum();
  private sessionDigest = new DigestSum();
  /**
   * Nodes the txn being applied changed, each hashed back into the digest once it is applied:
   * true when its hash from before the txn was taken out (false: created by the txn).
   */
  private readonly changing = new Map<string, boolean>();

  /**
   * A fresh tree: "/", "/zookeeper", "/zookeeper/quota" and "/zookeeper/config", every stat zero
   * (as ZooKeeper's, see the file note for cversion), the config node readable by all and with
   * aversion -1, as ZooKeeper 3.8 makes it (empty until a cluster member writes its membership in).
   */
  constructor() {
    this.nodes.set(ROOT, newNode(zeroStat(), new Set(["zookeeper"])));
    this.nodes.set(RESERVED, newNode(zeroStat(), new Set(["quota", "config"])));
    this.nodes.set(QUOTA, newNode(zeroStat(), NO_CHILDREN));
    this.nodes.set(CONFIG, configNode());
    for (const path of [ROOT, RESERVED]) {
      const node = this.nodes.get(path)!;
      node.stat.numChildren = node.children.size;
      node.stat.cversion = -node.children.size;
    }
    this.recountCost();
    this.recountDigest();
  }

  /**
   * Puts this server's membership into /zookeeper/config, as ZooKeeper's initConfigInZKDatabase
   * does at start and after a snapshot: local state, not a txn. Version -1 as there; no time, so
   * that every member of one configuration holds the same node.
   */
  setMembershipText(text: string): void {
    const node = this.nodes.get(CONFIG);
    assert(node !== undefined, "every tree has /zookeeper/config");
    // A reconfiguration wrote it: replicated from then on, and what the server runs with.
    if (node.stat.mzxid !== 0) return;
    const data = UTF8.encode(text);
    this.costBytes += data.length - node.data.length;
    node.data = data;
    node.stat.dataLength = node.data.length;
    node.stat.version = -1;
  }

  /**
   * Rebuilds a tree from restored parts (the snapshot codec's way in). Takes ownership of the
   * nodes and sessions; indexes (ephemerals, containers, TTL nodes) are derived here.
   * The parts must form a valid tree: violations are bugs of the caller, asserted.
   */
  static restore(nodes: Map<string, ZNode>, sessions: Map<bigint, SessionRecord>, lastProcessedZxid: number): DataTree {
    const tree = new DataTree();
    tree.nodes.clear();
    assert(nodes.has(ROOT), "restored tree has no root");
    for (const [path, node] of nodes) {
      if (node.children.size === 0) node.children = NO_CHILDREN;
      if (node.stat.numChildren !== node.children.size) assert(false, `restored ${path}: numChildren disagrees with children`);
      if (node.stat.dataLength !== node.data.length) assert(false, `restored ${path}: dataLength disagrees with data`);
      if (path !== ROOT) {
        const slash = path.lastIndexOf("/");
        const parent = nodes.get(slash === 0 ? ROOT : path.slice(0, slash));
        if (!(parent !== undefined && parent.children.has(path.slice(slash + 1)))) assert(false, `restored ${path}: not a child of its parent`);
      }
      tree.nodes.set(path, node);
      tree.indexOwner(path, node.stat.ephemeralOwner);
      const quota = quotaNodeTarget(path);
      if (quota?.kind === "limits") tree.quotaRoots.add(quota.target);
    }
    // Snapshots written before corral had /zookeeper/config lack it; every server adds it alike.
    const reserved = tree.nodes.get(RESERVED);
    if (reserved !== undefined && !tree.nodes.has(CONFIG)) {
      tree.nodes.set(CONFIG, configNode());
      reserved.children = new Set([...reserved.children, "config"]);
      reserved.stat.numChildren += 1;
      reserved.stat.cversion -= 1;
    }
    for (const [sessionId, record] of sessions) tree.sessionRecords.set(sessionId, record);
    tree.lastZxid = lastProcessedZxid;
    tree.recountCost();
    tree.recountDigest();
    return tree;
  }

  /** The zxid of the last txn applied (0 for a fresh tree). */
  get lastProcessedZxid(): number {
    return this.lastZxid;
  }

  /** Live sessions, replicated through createSession / closeSession. */
  get sessions(): ReadonlyMap<bigint, SessionRecord> {
    return this.sessionRecords;
  }

  /** The stored node (raw stat, shared data and children): read-only use, e.g. by prep. */
  getNode(path: string): ReadonlyZNode | undefined {
    return this.nodes.get(path);
  }

  nodeCount(): number {
    return this.nodes.size;
  }

  /** The tree's estimated memory: znodeCostBytes summed over its nodes, kept current (no walk). */
  estimatedBytes(): number {
    return this.costBytes;
  }

  /** Paths of the ephemeral nodes a session owns. */
  ephemeralsOf(sessionId: bigint): ReadonlySet<string> {
    return this.ephemerals.get(sessionId) ?? NO_PATHS;
  }

  /** Sessions owning at least one ephemeral node. */
  sessionsWithEphemerals(): IterableIterator<bigint> {
    return this.ephemerals.keys();
  }

  /** Paths of container nodes (for the leader's container cleanup). */
  containerPaths(): ReadonlySet<string> {
    return this.containers;
  }

  /** Paths of TTL nodes (for the leader's TTL cleanup). */
  ttlPaths(): ReadonlySet<string> {
    return this.ttls;
  }

  // ---------------------------------------------------------------------------------------------
  // Writes

  /**
   * Applies one txn decided by prep. Deterministic: the same txns in the same order give the same
   * tree, results and deliveries on every server. A txn that cannot apply (a missing parent, an
   * existing node, a version that does not follow) means prep was wrong: asserted, not answered.
   */
  apply(txn: Txn): ApplyOutcome {
    const header = txn.header;
    const body = txn.body;
    if (header.zxid <= this.lastZxid) assert(false, `zxid ${header.zxid} applied after ${this.lastZxid}`);
    const deliveries: WatchDelivery[] = [];
    let result: TxnResult;
    switch (body.type) {
      case "create":
        result = { type: "create", path: body.path, stat: clientStat(this.createNode(body, header, deliveries)) };
        break;
      case "delete":
        this.deleteNode(body.path, header.zxid, deliveries);
        result = { type: "delete" };
        break;
      case "setData":
        result = { type: "setData", stat: clientStat(this.setData(body, header, deliveries)) };
        break;
      case "reconfig":
        result = { type: "reconfig", data: body.data, stat: clientStat(this.reconfig(body, header, deliveries)) };
        break;
      case "setAcl":
        result = { type: "setAcl", stat: clientStat(this.setAcl(body)) };
        break;
      case "check":
        result = { type: "check" };
        break;
      case "multi":
        result = { type: "multi", results: this.applyMulti(body, header, deliveries) };
        break;
      case "createSession":
        this.setSessionRecord(header.sessionId, { timeoutMs: body.timeoutMs, password: body.password });
        result = { type: "createSession" };
        break;
      case "closeSession":
        result = { type: "closeSession", deletedPaths: this.closeSession(header, deliveries) };
        break;
      case "error":
        result = { type: "error", err: body.err };
        break;
      default:
        assert(false, `unknown txn type ${(body as { type: string }).type}`);
    }
    this.lastZxid = header.zxid;
    this.hashInChanged();
    return { result, deliveries };
  }

  private applyMulti(body: MultiTxn, header: TxnHeader, deliveries: WatchDelivery[]): OpResult[] {
    const ops = body.ops;
    const results: OpResult[] = [];
    let failed = false;
    for (const op of ops) {
      if (op.type === "error") {
        failed = true;
        break;
      }
    }
    if (failed) {
      // ZooKeeper's DataTree.processTxn: nothing applies; ops before the first failure report OK,
      // error ops keep their code, and ops after an error report RUNTIMEINCONSISTENCY.
      let postFailed = false;
      for (const op of ops) {
        if (op.type === "error") {
          postFailed = true;
          results.push({ type: "error", err: op.err });
        } else {
          results.push({ type: "error", err: postFailed ? ZkErrorCode.RUNTIMEINCONSISTENCY : ZkErrorCode.OK });
        }
      }
      return results;
    }
    for (const op of ops) {
      switch (op.type) {
        case "create":
          results.push({ type: "create", path: op.path, stat: clientStat(this.createNode(op, header, deliveries)) });
          break;
        case "delete":
          this.deleteNode(op.path, header.zxid, deliveries);
          results.push({ type: "delete" });
          break;
        case "setData":
          results.push({ type: "setData", stat: clientStat(this.setData(op, header, deliveries)) });
          break;
        case "check":
          results.push({ type: "check" });
          break;
        default:
          assert(false, `op type ${op.type} inside a multi`);
      }
    }
    return results;
  }

  /** Returns the new node's stored stat. */
  private createNode(txn: CreateTxn, header: TxnHeader, deliveries: WatchDelivery[]): Stat {
    const path = txn.path;
    const zxid = header.zxid;
    const slash = path.lastIndexOf("/");
    if (slash < 0 || path.length <= 1) assert(false, `create ${path}: not a non-root absolute path`);
    const parentPath = slash === 0 ? ROOT : path.slice(0, slash);
    const name = path.slice(slash + 1);
    const parent = this.nodes.get(parentPath);
    if (parent === undefined) assert(false, `create ${path}: parent missing`);
    if (parent.children.has(name)) assert(false, `create ${path}: node exists`);
    const parentStat = parent.stat;
    if (parentStat.ephemeralOwner !== PERSISTENT_OWNER && ownerKind(parentStat.ephemeralOwner) === "ephemeral") {
      assert(false, `create ${path}: parent is ephemeral`);
    }
    if (txn.parentCversion !== ((parentStat.cversion + 1) | 0)) {
      assert(false, `create ${path}: parentCversion ${txn.parentCversion} does not follow ${parentStat.cversion}`);
    }

    this.beforeChange(parentPath, parent);
    parentStat.cversion = txn.parentCversion;
    parentStat.pzxid = zxid;
    parentStat.numChildren++;
    if (parent.children === NO_CHILDREN) parent.children = new Set();
    this.sortedChildren.delete(parent.children);
    parent.children.add(name);

    const owner = txn.ephemeralOwner;
    const stat: Stat = {
      czxid: zxid,
      mzxid: zxid,
      ctime: header.timeMs,
      mtime: header.timeMs,
      version: 0,
      cversion: 0,
      aversion: 0,
      ephemeralOwner: owner,
      dataLength: txn.data.length,
      numChildren: 0,
      pzxid: zxid,
    };
    this.nodes.set(path, { data: txn.data, acl: txn.acl, stat, children: NO_CHILDREN });
    this.costBytes += znodeCostBytes(path, txn.data.length, txn.acl);
    if (!this.changing.has(path)) this.changing.set(path, false);
    if (owner !== PERSISTENT_OWNER) this.indexOwner(path, owner);
    const quota = quotaNodeTarget(path);
    if (quota?.kind === "limits") this.quotaRoots.add(quota.target);
    // Recounted whichever of the two comes second (zkCli writes the limits first).
    if (quota !== undefined && this.nodes.has(statsPathOf(quota.target))) this.recountQuota(quota.target);
    if (quota === undefined) this.chargeQuota(path, 1, txn.data.length);

    this.watches.triggerData(path, WatchEventType.NodeCreated, zxid, deliveries);
    this.watches.triggerChild(parentPath, WatchEventType.NodeChildrenChanged, zxid, deliveries);
    return stat;
  }

  private deleteNode(path: string, zxid: number, deliveries: WatchDelivery[]): void {
    const node = this.nodes.get(path);
    if (node === undefined) assert(false, `delete ${path}: no node`);
    if (node.children.size !== 0) assert(false, `delete ${path}: has children`);
    const slash = path.lastIndexOf("/");
    if (slash < 0 || path.length <= 1) assert(false, `delete ${path}: not a non-root absolute path`);
    const parentPath = slash === 0 ? ROOT : path.slice(0, slash);
    const parent = this.nodes.get(parentPath);
    if (parent === undefined) assert(false, `delete ${path}: no parent`);
    this.beforeChange(path, node);
    this.beforeChange(parentPath, parent);
    this.sortedChildren.delete(parent.children);
    if (!parent.children.delete(path.slice(slash + 1))) assert(false, `delete ${path}: not a child of its parent`);

    const parentStat = parent.stat;
    parentStat.cversion = (parentStat.cversion + 1) | 0;
    parentStat.pzxid = zxid;
    parentStat.numChildren--;
    if (parent.children.size === 0) parent.children = NO_CHILDREN;
    this.nodes.delete(path);
    this.costBytes -= znodeCostBytes(path, node.data.length, node.acl);
    const owner = node.stat.ephemeralOwner;
    if (owner !== PERSISTENT_OWNER) this.unindexOwner(path, owner);
    const quota = quotaNodeTarget(path);
    if (quota?.kind === "limits") this.quotaRoots.delete(quota.target);
    else this.chargeQuota(path, -1, -node.data.length);

    this.watches.triggerDeleted(path, zxid, deliveries);
    this.watches.triggerChild(parentPath, WatchEventType.NodeChildrenChanged, zxid, deliveries);
  }

  private setData(txn: SetDataTxn, header: TxnHeader, deliveries: WatchDelivery[]): Stat {
    const node = this.nodes.get(txn.path);
    if (node === undefined) assert(false, `setData ${txn.path}: no node`);
    const stat = node.stat;
    if (txn.version !== ((stat.version + 1) | 0)) assert(false, `setData ${txn.path}: version ${txn.version} does not follow ${stat.version}`);
    this.chargeQuota(txn.path, 0, txn.data.length - node.data.length);
    this.beforeChange(txn.path, node);
    this.costBytes += txn.data.length - node.data.length;
    node.data = txn.data;
    stat.version = txn.version;
    stat.mzxid = header.zxid;
    stat.mtime = header.timeMs;
    stat.dataLength = txn.data.length;
    this.watches.triggerData(txn.path, WatchEventType.NodeDataChanged, header.zxid, deliveries);
    return stat;
  }

  /** ZooKeeper writes the new configuration with version -1 (its reconfig's setData): the version stays -1. */
  private reconfig(txn: ReconfigTxn, header: TxnHeader, deliveries: WatchDelivery[]): Stat {
    const node = this.nodes.get(CONFIG);
    assert(node !== undefined, "every tree has /zookeeper/config");
    this.beforeChange(CONFIG, node);
    this.costBytes += txn.data.length - node.data.length;
    node.data = txn.data;
    node.stat.mzxid = header.zxid;
    node.stat.mtime = header.timeMs;
    node.stat.dataLength = txn.data.length;
    this.watches.triggerData(CONFIG, WatchEventType.NodeDataChanged, header.zxid, deliveries);
    return node.stat;
  }

  private setAcl(txn: SetAclTxn): Stat {
    const node = this.nodes.get(txn.path);
    if (node === undefined) assert(false, `setAcl ${txn.path}: no node`);
    const stat = node.stat;
    if (txn.aversion !== ((stat.aversion + 1) | 0)) assert(false, `setAcl ${txn.path}: aversion ${txn.aversion} does not follow ${stat.aversion}`);
    this.beforeChange(txn.path, node);
    this.costBytes += aclCostBytes(txn.acl) - aclCostBytes(node.acl);
    node.acl = txn.acl;
    stat.aversion = txn.aversion;
    return stat;
  }

  /**
   * Keeps the stats node of the quota covering `path` current. Its data changes without a new
   * version or mzxid, as ZooKeeper's does: every server applies the same txns, so they agree.
   */
  private chargeQuota(path: string, count: number, bytes: number): void {
    const root = this.quotaRootOf(path);
    if (root === undefined) return;
    const statsPath = statsPathOf(root);
    const stats = this.nodes.get(statsPath);
    if (stats === undefined) return; // limits set but no stats node yet: counted when it is created
    const usage = parseQuotaFigures(stats.data);
    this.writeQuotaUsage(statsPath, stats, { ...usage, count: usage.count + count, bytes: usage.bytes + bytes });
  }

  /** A stats node was created: it holds the subtree's real figures from now on (ZooKeeper's updateQuotaForPath). */
  private recountQuota(root: string): void {
    const statsPath = statsPathOf(root);
    const stats = this.nodes.get(statsPath)!;
    let count = 0;
    let bytes = 0;
    this.visitSubtree(root, (node) => {
      count += 1;
      bytes += node.data.length;
    });
    this.writeQuotaUsage(statsPath, stats, { ...unsetFigures(), count, bytes });
  }

  private writeQuotaUsage(statsPath: string, stats: ZNode, usage: QuotaFigures): void {
    this.beforeChange(statsPath, stats);
    const data = UTF8.encode(formatQuotaFigures(usage));
    this.costBytes += data.length - stats.data.length;
    stats.data = data;
    stats.stat.dataLength = stats.data.length;
  }

  /** Deletes the session's ephemerals in sorted path order, drops its record and its watches. */
  private closeSession(header: TxnHeader, deliveries: WatchDelivery[]): string[] {
    const sessionId = header.sessionId;
    const owned = this.ephemerals.get(sessionId);
    let deleted: string[] = [];
    if (owned !== undefined) {
      deleted = [...owned].sort();
      for (const path of deleted) this.deleteNode(path, header.zxid, deliveries);
      assert(!this.ephemerals.has(sessionId), "ephemeral index still holds a closed session");
    }
    this.setSessionRecord(sessionId, undefined);
    this.watches.removeWatcher(sessionId);
    return deleted;
  }

  /** Once, for a tree built whole (a fresh one, a restored one); after that every change adjusts the total. */
  private recountCost(): void {
    let bytes = 0;
    for (const [path, node] of this.nodes) bytes += znodeCostBytes(path, node.data.length, node.acl);
    this.costBytes = bytes;
  }

  private indexOwner(path: string, owner: bigint): void {
    this.ownerIndex(owner)?.add(path);
  }

  private unindexOwner(path: string, owner: bigint): void {
    const index = this.ownerIndex(owner);
    if (index === undefined) return;
    const indexed = index.delete(path);
    if (ownerKind(owner) !== "ephemeral") return;
    assert(indexed, `ephemeral index misses ${path}`);
    if (index.size === 0) this.ephemerals.delete(owner);
  }

  /** The index a node of `owner` is kept in, none for persistent nodes; an ephemeral's is its session's. */
  private ownerIndex(owner: bigint): Set<string> | undefined {
    switch (ownerKind(owner)) {
      case "persistent":
        return undefined;
      case "container":
        return this.containers;
      case "ttl":
        return this.ttls;
      case "ephemeral": {
        let paths = this.ephemerals.get(owner);
        if (paths === undefined) {
          paths = new Set();
          this.ephemerals.set(owner, paths);
        }
        return paths;
      }
    }
  }

  /** Called before `node` changes: its hash leaves the digest until the txn is applied, and captures keep it as it was. */
  private beforeChange(path: string, node: ZNode): void {
    if (!this.changing.has(path)) {
      this.changing.set(path, true);
      this.hashNode(path, node, -1);
    }
    this.preserve(path, node);
  }

  /** The nodes the txn changed, as they are now, back into the digest (deleted ones stay out). */
  private hashInChanged(): void {
    for (const path of this.changing.keys()) {
      const node = this.nodes.get(path);
      if (node !== undefined) this.hashNode(path, node, 1);
    }
    this.changing.clear();
  }

  private hashNode(path: string, node: ZNode, sign: 1 | -1): void {
    // /zookeeper/config is each server's own until a reconfiguration writes it (see digest()).
    if (path === CONFIG && node.stat.mzxid === 0) return;
    if (sign === 1) this.nodeDigest.add(nodeHash(path, node));
    else this.nodeDigest.subtract(nodeHash(path, node));
  }

  private setSessionRecord(sessionId: bigint, record: SessionRecord | undefined): void {
    const previous = this.sessionRecords.get(sessionId);
    if (previous !== undefined) this.sessionDigest.subtract(sessionHash(sessionId, previous));
    if (record === undefined) {
      this.sessionRecords.delete(sessionId);
      return;
    }
    this.sessionRecords.set(sessionId, record);
    this.sessionDigest.add(sessionHash(sessionId, record));
  }

  /** The digest's sums computed afresh from every node and session record. */
  private recountDigest(): void {
    const { nodes, sessions } = this.sumEverything();
    this.nodeDigest = nodes;
    this.sessionDigest = sessions;
  }

  private sumEverything(): { nodes: DigestSum; sessions: DigestSum } {
    const nodes = new DigestSum();
    const sessions = new DigestSum();
    for (const [path, node] of this.nodes) {
      if (path !== CONFIG || node.stat.mzxid !== 0) nodes.add(nodeHash(path, node));
    }
    for (const [sessionId, record] of this.sessionRecords) sessions.add(sessionHash(sessionId, record));
    return { nodes, sessions };
  }

  /** Keeps `node` as it is now for every open capture that has no pre-image of it yet. */
  private preserve(path: string, node: ZNode): void {
    for (const preImages of this.openCaptures) {
      if (preImages.has(path)) continue;
      preImages.set(path, {
        data: node.data,
        acl: node.acl,
        stat: { ...node.stat },
        children: node.children === NO_CHILDREN ? NO_CHILDREN : new Set(node.children),
      });
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Reads

  /** The node's stat or null. With a watcher, registers an exist watch whether or not the node exists. */
  exists(path: string, watcher?: bigint): Stat | null {
    if (watcher !== undefined) this.watches.addDataWatch(path, watcher);
    const node = this.nodes.get(path);
    return node === undefined ? null : clientStat(node.stat);
  }

  /** Throws ZkError NONODE; the data watch is registered only when the node exists. `data` is shared: do not mutate. */
  getData(path: string, watcher?: bigint): { data: Uint8Array; stat: Stat } {
    const node = this.nodes.get(path);
    if (node === undefined) throw new ZkError("NONODE", undefined, path);
    if (watcher !== undefined) this.watches.addDataWatch(path, watcher);
    return { data: node.data, stat: clientStat(node.stat) };
  }

  /**
   * Child names sorted. Throws ZkError NONODE; the child watch is registered only when the node
   * exists. The list is shared by every listing until the children change: callers only read it
   * (the codecs' record types want a mutable array, hence its type).
   */
  getChildren(path: string, watcher?: bigint): { children: string[]; stat: Stat } {
    const node = this.nodes.get(path);
    if (node === undefined) throw new ZkError("NONODE", undefined, path);
    if (watcher !== undefined) this.watches.addChildWatch(path, watcher);
    let sorted = this.sortedChildren.get(node.children);
    if (sorted === undefined || sorted.length !== node.children.size) {
      sorted = [...node.children].sort();
      this.sortedChildren.set(node.children, sorted);
    }
    return { children: sorted, stat: clientStat(node.stat) };
  }

  /** How many nodes are below `path`, at any depth (ZooKeeper's getAllChildrenNumber). Throws ZkError NONODE. */
  descendantCount(path: string): number {
    const node = this.nodes.get(path);
    if (node === undefined) throw new ZkError("NONODE", undefined, path);
    let count = 0;
    this.visitSubtree(path, () => (count += 1));
    return count - 1;
  }

  /** Calls `visit` on `path` (if it exists) and every node below it, in no particular order. */
  private visitSubtree(path: string, visit: (node: ZNode) => void): void {
    const pending = this.nodes.has(path) ? [path] : [];
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      const node = this.nodes.get(next)!;
      visit(node);
      const prefix = next === ROOT ? ROOT : next + "/";
      for (const child of node.children) pending.push(prefix + child);
    }
  }

  /** The deepest path at or above `path` that has a quota (ZooKeeper's getMaxPrefixWithQuota). */
  quotaRootOf(path: string): string | undefined {
    if (this.quotaRoots.size === 0 || !isQuotaAccounted(path)) return undefined;
    for (let p = path; p !== ROOT; p = p.slice(0, Math.max(1, p.lastIndexOf("/")))) {
      if (this.quotaRoots.has(p)) return p;
    }
    return undefined;
  }

  /** A quota's limits and the subtree's current usage (each as ZooKeeper's StatsTrack), if `path` has one. */
  quotaOf(path: string): { limits: QuotaFigures; usage: QuotaFigures } | undefined {
    if (!this.quotaRoots.has(path)) return undefined;
    const limits = this.nodes.get(limitsPathOf(path));
    const usage = this.nodes.get(statsPathOf(path));
    return { limits: parseQuotaFigures(limits?.data ?? ""), usage: parseQuotaFigures(usage?.data ?? "") };
  }

  /** A copy of the node's ACL list. Throws ZkError NONODE. */
  getAcl(path: string): { acl: Acl[]; stat: Stat } {
    const node = this.nodes.get(path);
    if (node === undefined) throw new ZkError("NONODE", undefined, path);
    return { acl: node.acl.map(copyAcl), stat: clientStat(node.stat) };
  }

  /**
   * addWatch: a persistent or persistent-recursive watch, set whether or not the node exists (a
   * watch on a missing node fires on its creation), as ZooKeeper's DataTree.addWatch.
   */
  addWatch(path: string, mode: AddWatchMode, watcher: bigint): void {
    this.watches.addPersistentWatch(path, watcher, mode);
  }

  /**
   * Re-registers a reconnecting client's watches, as ZooKeeper's DataTree.setWatches: a one-time
   * watch whose change the client missed since `relativeZxid` fires now (zxid = lastProcessedZxid),
   * others are registered. Data watch: node gone → NodeDeleted, mzxid > relativeZxid →
   * NodeDataChanged. Exist watch: node exists → NodeCreated. Child watch: node gone → NodeDeleted,
   * pzxid > relativeZxid → NodeChildrenChanged. Persistent and persistent-recursive watches are
   * registered again and fire nothing now: ZooKeeper does not look at `relativeZxid` for them, so
   * changes made while the client was disconnected are not replayed to them.
   */
  setWatches(relativeZxid: number, lists: WatchLists, watcher: bigint): WatchDelivery[] {
    const out: WatchDelivery[] = [];
    const zxid = this.lastZxid;
    const fire = (type: WatchEvent["type"], path: string): void => {
      out.push({ watcher, event: { type, path, zxid } });
    };
    for (const path of lists.dataWatches) {
      const node = this.nodes.get(path);
      if (node === undefined) fire(WatchEventType.NodeDeleted, path);
      else if (node.stat.mzxid > relativeZxid) fire(WatchEventType.NodeDataChanged, path);
      else this.watches.addDataWatch(path, watcher);
    }
    for (const path of lists.existWatches) {
      if (this.nodes.has(path)) fire(WatchEventType.NodeCreated, path);
      else this.watches.addDataWatch(path, watcher);
    }
    for (const path of lists.childWatches) {
      const node = this.nodes.get(path);
      if (node === undefined) fire(WatchEventType.NodeDeleted, path);
      else if (node.stat.pzxid > relativeZxid) fire(WatchEventType.NodeChildrenChanged, path);
      else this.watches.addChildWatch(path, watcher);
    }
    for (const path of lists.persistentWatches) this.watches.addPersistentWatch(path, watcher, "persistent");
    for (const path of lists.persistentRecursiveWatches) this.watches.addPersistentWatch(path, watcher, "persistent-recursive");
    return out;
  }

  // ---------------------------------------------------------------------------------------------
  // Whole-tree views

  /**
   * Visits every node parent-before-child, siblings in sorted order (a deterministic pre-order
   * walk). `node.stat` is the raw stored stat. The tree must not change during the walk.
   */
  walk(visit: (path: string, node: ReadonlyZNode) => void): void {
    const stack: string[] = [ROOT];
    while (stack.length > 0) {
      const path = stack.pop()!;
      const node = this.nodes.get(path);
      if (node === undefined) assert(false, `walk: ${path} vanished`);
      visit(path, node);
      if (node.children.size === 0) continue;
      const names = [...node.children].sort();
      const prefix = path === ROOT ? ROOT : path + "/";
      for (let i = names.length - 1; i >= 0; i--) stack.push(prefix + names[i]!);
    }
  }

  /** Captures begun and not yet released (each keeps pre-images while open). */
  openCaptureCount(): number {
    return this.openCaptures.length;
  }

  /** Freezes the tree as it is now (see the file note, Captures). */
  beginCapture(): TreeCapture {
    const preImages = new Map<string, ZNode>();
    this.openCaptures.push(preImages);
    const nodes = this.nodes;
    let released = false;
    return {
      zxid: this.lastZxid,
      nodeCount: nodes.size,
      sessions: [...this.sessionRecords].sort(([a], [b]) => compareBigInt(a, b)),
      node: (path) => {
        assert(!released, "capture read after release");
        const node = preImages.get(path) ?? nodes.get(path);
        if (node === undefined) assert(false, `capture: ${path} vanished`);
        return node;
      },
      release: () => {
        if (released) return;
        released = true;
        this.openCaptures = this.openCaptures.filter((open) => open !== preImages);
      },
    };
  }

  /**
   * A deterministic hash of everything replicated: every node (path, data, ACL, raw stat), the
   * session records, and lastProcessedZxid (tree-digest.ts). Two servers at the same zxid must
   * agree on it; kept as the tree changes, so reading it costs nothing.
   * /zookeeper/config is each server's own view until a reconfiguration writes it (a server about
   * to be added lists itself), as in ZooKeeper: only then is it replicated and hashed.
   */
  digest(): string {
    return formatDigest(this.lastZxid, this.nodeDigest, this.nodes.size, this.sessionDigest, this.sessionRecords.size);
  }

  /**
   * TEST ONLY: sets a node's data as no txn did — what a lost or doubled txn, or a bug in apply,
   * leaves behind — for the tests of the replicas' digest checks. The digest follows, as it follows
   * every change to the tree.
   */
  alterBehindItsBackForTest(path: string, data: Uint8Array): void {
    const node = this.nodes.get(path);
    assert(node !== undefined, `alter ${path}: no node`);
    this.beforeChange(path, node);
    node.data = data;
    node.stat.dataLength = data.length;
    this.hashInChanged();
  }

  /** The digest computed from scratch, walking every node: what digest() must always equal. */
  recomputedDigest(): string {
    const { nodes, sessions } = this.sumEverything();
    return formatDigest(this.lastZxid, nodes, this.nodes.size, sessions, this.sessionRecords.size);
  }
}

// -----------------------------------------------------------------------------------------------
// Helpers shared with prep and the codecs

/** A plain copy of a stored stat. */
export function copyStat(stat: Readonly<Stat>): Stat {
  return { ...stat };
}

/** The stat a client sees: a copy, with ephemeralOwner 0 for containers and TTL nodes (ZooKeeper's copyStat). */
export function clientStat(stat: Readonly<Stat>): Stat {
  const copy = copyStat(stat);
  if (copy.ephemeralOwner !== PERSISTENT_OWNER && ownerKind(copy.ephemeralOwner) !== "ephemeral") {
    copy.ephemeralOwner = PERSISTENT_OWNER;
  }
  return copy;
}

/**
 * The number ZooKeeper gives the next sequential child of a node with this stat: the count of
 * children ever created under it, `(cversion + numChildren) / 2` since cversion counts creates and
 * deletes. Prep must apply it to the parent's stat as changed by the txns still in flight.
 */
export function sequenceNumberOf(parentStat: Pick<Stat, "cversion" | "numChildren">): number {
  const twice = parentStat.cversion + parentStat.numChildren;
  if (twice % 2 !== 0) assert(false, `cversion ${parentStat.cversion} and numChildren ${parentStat.numChildren} disagree`);
  return twice / 2;
}

/** `prefix` completed as ZooKeeper names a sequential node: `%010d` of the sequence number. */
export function sequentialPath(prefix: string, sequenceNumber: number): string {
  if (!Number.isInteger(sequenceNumber)) assert(false, `sequence number ${sequenceNumber}`);
  const digits = Math.abs(sequenceNumber).toString();
  return sequenceNumber < 0 ? prefix + "-" + digits.padStart(9, "0") : prefix + digits.padStart(10, "0");
}

export function zeroStat(): Stat {
  return {
    czxid: 0,
    mzxid: 0,
    ctime: 0,
    mtime: 0,
    version: 0,
    cversion: 0,
    aversion: 0,
    ephemeralOwner: PERSISTENT_OWNER,
    dataLength: 0,
    numChildren: 0,
    pzxid: 0,
  };
}

/** The empty children set shared by leaves (read-only), for code building ZNodes (snapshot decode). */
export function emptyChildren(): Set<string> {
  return NO_CHILDREN;
}

function newNode(stat: Stat, children: Set<string>): ZNode {
  return { data: new Uint8Array(0), acl: OPEN_ACL_UNSAFE as Acl[], stat, children };
}

function configNode(): ZNode {
  const node = newNode(zeroStat(), NO_CHILDREN);
  node.acl = READ_ACL_UNSAFE as Acl[];
  node.stat.aversion = -1;
  return node;
}

function copyAcl(acl: Acl): Acl {
  return { perms: acl.perms, id: { scheme: acl.id.scheme, id: acl.id.id } };
}

function compareBigInt(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
