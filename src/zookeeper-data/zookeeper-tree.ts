/**
 * ZooKeeper's DataTree as it loads: a snapshot read in (FileSnap.deserialize), the quota stats
 * recounted (setupQuota), then the logged txns replayed on it (FileTxnSnapLog.processTransaction →
 * DataTree.processTxn) with ZooKeeper's own rules for a fuzzy snapshot — a snapshot is written while
 * txns are applied, so replaying one may meet a node that already exists (NODEEXISTS, ignored but
 * for the parent's cversion and pzxid) or one already gone (NONODE, ignored) — and finally the
 * sessions that own ephemerals but are no longer known killed (ZooKeeperServer.loadData).
 *
 * The stats are ZooKeeper's StatPersisted: `cversion` counts child creates only (a client sees
 * 2 × creates − numChildren). The tree digest (DigestCalculator + AdHash) is kept as ZooKeeper
 * keeps it and compared where the snapshot or a txn recorded one; a difference is reported, since
 * it means this tree is not the one ZooKeeper held.
 */
import { crc32 } from "../store/disk/crc32.js";
import { hex64 } from "../common/hex.js";
import { formatQuotaFigures, LIMITS_NODE, parseQuotaFigures, QUOTA_ROOT, STATS_NODE } from "../common/quota.js";
import { OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, TTL_MS_MAX } from "../common/znode.js";
import { CONTAINER_OWNER, ownerKind, ttlOwner, type Acl } from "../store/types.js";
import { ZooKeeperDataError } from "./errors.js";
import { OPEN_ACL_INDEX, type ZooKeeperSnapshot, type ZooKeeperStat, type ZooKeeperZxidDigest } from "./snapshot-file.js";
import type { ZooKeeperTxn, ZooKeeperTxnEntry, ZooKeeperTxnHeader } from "./txn-records.js";

export interface ZooKeeperNode {
  data: Uint8Array | null;
  acl: readonly Acl[];
  stat: ZooKeeperStat;
  children: Set<string>;
}

/** A place where this tree's digest and the one ZooKeeper recorded differ. */
export interface DigestMismatch {
  zxid: bigint;
  recorded: bigint;
  computed: bigint;
}

/** ZooKeeper's DigestCalculator version this tree computes (2, since 3.6). */
export const DIGEST_VERSION = 2;

/** KeeperException codes processTxn swallows while replaying. */
const NONODE = -101;
const NODEEXISTS = -110;
class Skipped extends Error {
  constructor(readonly code: number) {
    super(String(code));
  }
}

const ROOT = "";
const ZOOKEEPER = "/zookeeper";
/** DigestCalculator leaves out everything below /zookeeper/ (not /zookeeper itself). */
const DIGEST_EXCLUDED_PREFIX = "/zookeeper/";
const UTF8 = new TextEncoder();

export class ZooKeeperTree {
  /** Keyed as ZooKeeper keys them: the root is "", and "/" resolves to it. */
  private readonly nodes = new Map<string, ZooKeeperNode>();
  /** Session id → timeout (ms): ZKDatabase's sessionsWithTimeouts. */
  readonly sessions = new Map<bigint, number>();
  private readonly ephemerals = new Map<bigint, Set<string>>();
  /** Paths under a quota (ZooKeeper's pTrie). */
  private readonly quotaRoots = new Set<string>();
  private digestSum = 0n;
  /** The snapshot's digest, until replay reaches its zxid (the snapshot is fuzzy until then). */
  private snapshotDigest: ZooKeeperZxidDigest | undefined;
  private highestZxid = 0n;
  lastProcessedZxid = 0n;
  private readonly settledMismatches: DigestMismatch[] = [];
  /**
   * The zxid of the digest recorded beside the snapshot, until a comparison past it: up to there a
   * difference is held, not counted. ZooKeeper records there the digest of the last txn it
   * finished, so the txn after it, applied while the snapshot was written but not finished, can be
   * in the snapshot's nodes and missing from that digest (and from every digest up to it).
   * Replaying that txn (always logged: ZooKeeper logs before it applies) brings the tree to the
   * digest the txn carries, so the first comparison past the held zxid settles the question.
   */
  private fuzzyThroughZxid: bigint | undefined;
  private heldMismatch: DigestMismatch | undefined;
  /** How many recorded digests were compared (and matched or not). */
  digestsCompared = 0;
  /** Txns whose zxid was below one already replayed (ZooKeeper logs and applies them). */
  outOfOrderTxns = 0;

  /** An empty tree, as ZooKeeper's DataTree constructor makes it (for a data dir with logs only). */
  static empty(): ZooKeeperTree {
    const tree = new ZooKeeperTree();
    const zero = (): ZooKeeperStat => ({ czxid: 0n, mzxid: 0n, ctime: 0n, mtime: 0n, version: 0, cversion: 0, aversion: 0, ephemeralOwner: 0n, pzxid: 0n });
    tree.put(ROOT, { data: new Uint8Array(0), acl: OPEN_ACL_UNSAFE, stat: zero(), children: new Set(["zookeeper"]) });
    tree.put(ZOOKEEPER, { data: new Uint8Array(0), acl: OPEN_ACL_UNSAFE, stat: zero(), children: new Set(["quota", "config"]) });
    tree.put(QUOTA_ROOT, { data: new Uint8Array(0), acl: OPEN_ACL_UNSAFE, stat: zero(), children: new Set() });
    // addConfigNode: readable by all, aversion -1 (a setACL with version -1).
    tree.put(`${ZOOKEEPER}/config`, { data: new Uint8Array(0), acl: READ_ACL_UNSAFE, stat: { ...zero(), aversion: -1 }, children: new Set() });
    return tree;
  }

  /** DataTree.deserialize, then what loading a snapshot file does with it (digest, lastProcessedZxid). */
  static fromSnapshot(snapshot: ZooKeeperSnapshot, zxid: bigint, file: string): ZooKeeperTree {
    const tree = new ZooKeeperTree();
    for (const [id, timeoutMs] of snapshot.sessions) tree.sessions.set(id, timeoutMs);
    for (const entry of snapshot.nodes) {
      let acl: readonly Acl[] | undefined;
      if (entry.aclIndex === OPEN_ACL_INDEX) acl = OPEN_ACL_UNSAFE;
      else acl = snapshot.acls.get(entry.aclIndex);
      if (acl === undefined)
        throw new ZooKeeperDataError(file, `node ${JSON.stringify(entry.path)} refers to ACL ${entry.aclIndex}, which the ACL cache lacks`);
      const node: ZooKeeperNode = { data: entry.data, acl, stat: { ...entry.stat }, children: new Set() };
      const slash = entry.path.lastIndexOf("/");
      if (slash >= 0) {
        const parent = tree.nodes.get(entry.path.slice(0, slash));
        if (parent === undefined) throw new ZooKeeperDataError(file, `node ${entry.path} comes before its parent`);
        parent.children.add(entry.path.slice(slash + 1));
        tree.indexOwner(entry.path, node.stat.ephemeralOwner);
      } else if (entry.path !== ROOT) {
        throw new ZooKeeperDataError(file, `node path ${JSON.stringify(entry.path)} is not absolute`);
      }
      if (tree.nodes.has(entry.path)) tree.remove(entry.path);
      tree.put(entry.path, node);
    }
    if (!tree.nodes.has(ROOT)) throw new ZooKeeperDataError(file, "the snapshot has no root node");
    tree.setUpQuota();
    tree.lastProcessedZxid = zxid;
    tree.highestZxid = zxid;
    tree.snapshotDigest = snapshot.digest;
    tree.fuzzyThroughZxid = snapshot.digest?.zxid;
    if (tree.snapshotDigest !== undefined) tree.compareSnapshotDigest(zxid);
    return tree;
  }

  /** One logged txn, as fastForwardFromEdits replays it (the caller skips those at or below the snapshot). */
  replay(entry: ZooKeeperTxnEntry): void {
    const { header, txn } = entry;
    if (header.zxid < this.highestZxid && this.highestZxid !== 0n) this.outOfOrderTxns += 1;
    else this.highestZxid = header.zxid;
    if (txn.type === "createSession") this.sessions.set(header.sessionId, txn.timeoutMs);
    else if (txn.type === "closeSession") this.sessions.delete(header.sessionId);
    this.processTxn(header, txn, false);
    if (entry.digest !== undefined && this.snapshotDigest === undefined && entry.digest.version === DIGEST_VERSION) {
      this.compareDigest(header.zxid, entry.digest.treeDigest);
    }
  }

  /**
   * Where this tree's digest and the ones ZooKeeper recorded differ. A difference up to the zxid of
   * the snapshot's own digest counts only while no later txn's digest has been compared.
   */
  get digestMismatches(): readonly DigestMismatch[] {
    return this.heldMismatch === undefined ? this.settledMismatches : [this.heldMismatch, ...this.settledMismatches];
  }

  /** The highest zxid replayed (or the snapshot's): where the tree stands. */
  get zxid(): bigint {
    return this.highestZxid > this.lastProcessedZxid ? this.highestZxid : this.lastProcessedZxid;
  }

  /**
   * ZooKeeperServer.loadData's clean-up: sessions that own ephemerals but are not in the session
   * table lose them (a local change at the last zxid, not a txn). Answers the sessions killed.
   */
  killDeadSessions(): bigint[] {
    const dead = [...this.ephemerals.keys()].filter((session) => !this.sessions.has(session));
    for (const session of dead) this.killSession(session, this.lastProcessedZxid, undefined);
    return dead;
  }

  /** Whether a node is at `path` ("/" is the root). */
  has(path: string): boolean {
    return this.nodes.has(path === "/" ? ROOT : path);
  }

  /** The tree digest as ZooKeeper computes it (an unsigned 64-bit sum). */
  get digest(): bigint {
    return this.digestSum;
  }

  /**
   * Every node reachable from the root, parents first, siblings sorted; the root's path is "/".
   * `childCount` counts the children that exist (what ZooKeeper's next snapshot would hold).
   */
  *walk(): Generator<{ path: string; node: ZooKeeperNode; childCount: number }> {
    const stack: string[] = [ROOT];
    while (stack.length > 0) {
      const path = stack.pop()!;
      const node = this.nodes.get(path)!;
      const children = [...node.children]
        .sort()
        .map((name) => `${path}/${name}`)
        .filter((child) => this.nodes.has(child));
      yield { path: path === ROOT ? "/" : path, node, childCount: children.length };
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // DataTree.processTxn

  private processTxn(header: ZooKeeperTxnHeader, txn: ZooKeeperTxn, isSubTxn: boolean): number {
    let err: number;
    try {
      err = this.applyTxn(header, txn);
    } catch (error) {
      if (!(error instanceof Skipped)) throw error;
      err = error.code;
    }
    // ZOOKEEPER-1269: a create replayed over a node the fuzzy snapshot already holds still moves
    // the parent's cversion and pzxid (only for the create opcode, as ZooKeeper has it).
    if (txn.type === "create" && txn.opcode === 1 && err === NODEEXISTS) {
      const parent = txn.path.slice(0, txn.path.lastIndexOf("/"));
      try {
        this.setCversionPzxid(parent, txn.parentCVersion, header.zxid);
      } catch (error) {
        if (!(error instanceof Skipped)) throw error;
        err = error.code;
      }
    }
    if (!isSubTxn) {
      if (header.zxid > this.lastProcessedZxid) this.lastProcessedZxid = header.zxid;
      if (this.snapshotDigest !== undefined) this.compareSnapshotDigest(header.zxid);
    }
    return err;
  }

  private applyTxn(header: ZooKeeperTxnHeader, txn: ZooKeeperTxn): number {
    const { zxid, timeMs } = header;
    switch (txn.type) {
      case "create":
        this.createNode(txn.path, txn.data, txn.acl, txn.ephemeral ? header.sessionId : 0n, txn.parentCVersion, zxid, timeMs);
        return 0;
      case "createTTL":
        // EphemeralType.TTL.toEphemeralOwner refuses what its 40 bits cannot hold (ZooKeeper fails to load).
        if (txn.ttl <= 0n || txn.ttl > BigInt(TTL_MS_MAX)) throw new ZooKeeperDataError("", `a TTL create at zxid ${hex64(zxid)} has the TTL ${txn.ttl}`);
        this.createNode(txn.path, txn.data, txn.acl, ttlOwner(Number(txn.ttl)), txn.parentCVersion, zxid, timeMs);
        return 0;
      case "createContainer":
        this.createNode(txn.path, txn.data, txn.acl, CONTAINER_OWNER, txn.parentCVersion, zxid, timeMs);
        return 0;
      case "delete":
        this.deleteNode(txn.path, zxid);
        return 0;
      case "setData":
        this.setData(txn.path, txn.data, txn.version, zxid, timeMs);
        return 0;
      case "setACL":
        this.setAcl(txn.path, txn.acl, txn.version);
        return 0;
      case "closeSession":
        this.killSession(header.sessionId, zxid, txn.paths2Delete);
        return 0;
      case "error":
        return txn.err;
      case "check":
      case "createSession":
        return 0;
      case "multi":
        return this.applyMulti(header, txn.txns);
    }
  }

  /** All or nothing: when any op is an error, every op is replayed as one (nothing changes). */
  private applyMulti(header: ZooKeeperTxnHeader, txns: ZooKeeperTxn[]): number {
    const failed = txns.some((sub) => sub.type === "error");
    let err = 0;
    for (const sub of txns) {
      const subHeader = { ...header, opcode: sub.opcode };
      const subErr = failed ? (sub.type === "error" ? sub.err : 0) : this.processTxn(subHeader, sub, true);
      if (subErr !== 0 && err === 0) err = subErr;
    }
    return err;
  }

  private createNode(path: string, data: Uint8Array | null, acl: readonly Acl[], owner: bigint, parentCVersion: number, zxid: bigint, time: bigint): void {
    const slash = path.lastIndexOf("/");
    const parentName = path.slice(0, slash);
    const childName = path.slice(slash + 1);
    if (childName === "") throw new ZooKeeperDataError("", `a create names ${JSON.stringify(path)}`);
    const parent = this.nodes.get(parentName);
    if (parent === undefined) throw new Skipped(NONODE);
    if (parent.children.has(childName)) throw new Skipped(NODEEXISTS);
    this.change(parentName, parent, () => {
      const cversion = parentCVersion === -1 ? parent.stat.cversion + 1 : parentCVersion;
      if (cversion > parent.stat.cversion) {
        parent.stat.cversion = cversion;
        parent.stat.pzxid = zxid;
      }
      parent.children.add(childName);
    });
    const stat: ZooKeeperStat = {
      czxid: zxid,
      mzxid: zxid,
      ctime: time,
      mtime: time,
      version: 0,
      cversion: 0,
      aversion: 0,
      ephemeralOwner: owner,
      pzxid: zxid,
    };
    this.put(path, { data, acl, stat, children: new Set() });
    this.indexOwner(path, owner);
    if (parentName.startsWith(QUOTA_ROOT)) {
      if (childName === LIMITS_NODE) this.addQuotaRoot(parentName.slice(QUOTA_ROOT.length));
      if (childName === STATS_NODE) this.recountQuota(parentName.slice(QUOTA_ROOT.length));
    }
    const quota = this.quotaRootOf(path);
    if (quota !== undefined) this.chargeQuota(quota, data?.length ?? 0, 1);
  }

  private deleteNode(path: string, zxid: bigint): void {
    const slash = path.lastIndexOf("/");
    const parentName = path.slice(0, slash);
    const childName = path.slice(slash + 1);
    const parent = this.nodes.get(parentName);
    if (parent === undefined) throw new Skipped(NONODE);
    // The pzxid moves even when the child is already gone (the fuzzy snapshot lacks it).
    this.change(parentName, parent, () => {
      parent.children.delete(childName);
      if (zxid > parent.stat.pzxid) parent.stat.pzxid = zxid;
    });
    const node = this.nodes.get(path);
    if (node === undefined) throw new Skipped(NONODE);
    this.remove(path);
    const owner = node.stat.ephemeralOwner;
    if (owner !== 0n && ownerKind(owner) === "ephemeral") this.ephemerals.get(owner)?.delete(path);
    if (parentName.startsWith(ZOOKEEPER) && childName === LIMITS_NODE) this.quotaRoots.delete(parentName.slice(QUOTA_ROOT.length));
    const quota = this.quotaRootOf(path);
    if (quota !== undefined) this.chargeQuota(quota, -(node.data?.length ?? 0), -1);
  }

  private setData(path: string, data: Uint8Array | null, version: number, zxid: bigint, time: bigint): void {
    const key = path === "/" ? ROOT : path;
    const node = this.nodes.get(key);
    if (node === undefined) throw new Skipped(NONODE);
    const before = node.data?.length ?? 0;
    this.change(key, node, () => {
      node.data = data;
      node.stat.mtime = time;
      node.stat.mzxid = zxid;
      node.stat.version = version;
    });
    const quota = this.quotaRootOf(path);
    if (quota !== undefined) this.chargeQuota(quota, (data?.length ?? 0) - before, 0);
  }

  private setAcl(path: string, acl: readonly Acl[], version: number): void {
    const key = path === "/" ? ROOT : path;
    const node = this.nodes.get(key);
    if (node === undefined) throw new Skipped(NONODE);
    this.change(key, node, () => {
      node.stat.aversion = version;
      node.acl = acl;
    });
  }

  private setCversionPzxid(path: string, cversion: number, zxid: bigint): void {
    const node = this.nodes.get(path);
    if (node === undefined) throw new Skipped(NONODE);
    const next = cversion === -1 ? node.stat.cversion + 1 : cversion;
    if (next > node.stat.cversion) {
      this.change(path, node, () => {
        node.stat.cversion = next;
        node.stat.pzxid = zxid;
      });
    }
  }

  /** The paths the txn names go first, then whatever else the session still owned. */
  private killSession(session: bigint, zxid: bigint, pathsInTxn: string[] | undefined): void {
    const owned = this.ephemerals.get(session);
    this.ephemerals.delete(session);
    const paths = [...(pathsInTxn ?? []), ...[...(owned ?? [])].filter((path) => pathsInTxn === undefined || !pathsInTxn.includes(path))];
    for (const path of paths) {
      try {
        this.deleteNode(path, zxid);
      } catch (error) {
        if (!(error instanceof Skipped)) throw error;
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Quotas: the stats nodes under /zookeeper/quota, kept as ZooKeeper keeps them

  private setUpQuota(): void {
    const visit = (path: string): void => {
      const node = this.nodes.get(path);
      if (node === undefined) return;
      if (node.children.size === 0) {
        const end = `/${LIMITS_NODE}`;
        if (path.endsWith(end)) {
          const target = path.slice(QUOTA_ROOT.length, path.indexOf(end));
          this.recountQuota(target);
          this.addQuotaRoot(target);
        }
        return;
      }
      for (const child of node.children) visit(`${path}/${child}`);
    };
    visit(QUOTA_ROOT);
  }

  private addQuotaRoot(target: string): void {
    if (target !== "") this.quotaRoots.add(target);
  }

  /** PathTrie.findMaxPrefix, then getMaxPrefixWithQuota's refusal of "/". */
  private quotaRootOf(path: string): string | undefined {
    if (this.quotaRoots.size === 0) return undefined;
    let found: string | undefined;
    let prefix = "";
    for (const part of path.split("/")) {
      if (part === "") continue;
      prefix += `/${part}`;
      if (this.quotaRoots.has(prefix)) found = prefix;
    }
    return found;
  }

  /** updateQuotaForPath: the stats node gets the subtree's real count and bytes. */
  private recountQuota(target: string): void {
    let count = 0;
    let bytes = 0;
    const visit = (path: string): void => {
      const node = this.nodes.get(path);
      if (node === undefined) return;
      count += 1;
      bytes += node.data?.length ?? 0;
      for (const child of node.children) visit(`${path}/${child}`);
    };
    visit(target);
    const statsPath = `${QUOTA_ROOT}${target}/${STATS_NODE}`;
    const stats = this.nodes.get(statsPath);
    if (stats === undefined) return;
    this.change(statsPath, stats, () => {
      stats.data = UTF8.encode(`count=${count},bytes=${bytes}`);
    });
  }

  /** updateQuotaStat: count and bytes moved by a change under the quota (the node's version stays). */
  private chargeQuota(target: string, bytes: number, count: number): void {
    const stats = this.nodes.get(`${QUOTA_ROOT}${target}/${STATS_NODE}`);
    if (stats === undefined) return;
    const figures = parseQuotaFigures(stats.data ?? new Uint8Array(0));
    stats.data = UTF8.encode(formatQuotaFigures({ ...figures, count: figures.count + count, bytes: figures.bytes + bytes }));
  }

  // ---------------------------------------------------------------------------------------------
  // The node map and its digest (NodeHashMapImpl)

  private indexOwner(path: string, owner: bigint): void {
    if (owner === 0n || ownerKind(owner) !== "ephemeral") return;
    let paths = this.ephemerals.get(owner);
    if (paths === undefined) {
      paths = new Set();
      this.ephemerals.set(owner, paths);
    }
    paths.add(path);
  }

  private put(path: string, node: ZooKeeperNode): void {
    this.nodes.set(path, node);
    this.digestSum = BigInt.asUintN(64, this.digestSum + nodeDigest(path, node));
  }

  private remove(path: string): void {
    const node = this.nodes.get(path);
    if (node === undefined) return;
    this.nodes.delete(path);
    this.digestSum = BigInt.asUintN(64, this.digestSum - nodeDigest(path, node));
  }

  /** preChange / postChange around a change to a node: its digest leaves the sum and comes back. */
  private change(path: string, node: ZooKeeperNode, apply: () => void): void {
    this.digestSum = BigInt.asUintN(64, this.digestSum - nodeDigest(path, node));
    apply();
    this.digestSum = BigInt.asUintN(64, this.digestSum + nodeDigest(path, node));
  }

  /** The snapshot's recorded digest against the tree, once replay stands at its zxid. */
  private compareSnapshotDigest(zxid: bigint): void {
    const recorded = this.snapshotDigest!;
    if (zxid !== recorded.zxid) return;
    this.snapshotDigest = undefined;
    if (recorded.version === DIGEST_VERSION) this.compareDigest(zxid, recorded.digest);
  }

  private compareDigest(zxid: bigint, recorded: bigint): void {
    this.digestsCompared += 1;
    const computed = this.digestSum;
    const mismatch =
      BigInt.asUintN(64, recorded) === computed ? undefined : { zxid, recorded: BigInt.asIntN(64, recorded), computed: BigInt.asIntN(64, computed) };
    if (this.fuzzyThroughZxid !== undefined && zxid <= this.fuzzyThroughZxid) {
      this.heldMismatch ??= mismatch;
      return;
    }
    this.fuzzyThroughZxid = undefined;
    this.heldMismatch = undefined;
    if (mismatch !== undefined) this.settledMismatches.push(mismatch);
  }
}

/** DigestCalculator.calculateDigest: CRC-32 of path, data and the stat's fields (0 below /zookeeper/). */
export function nodeDigest(path: string, node: { data: Uint8Array | null; stat: ZooKeeperStat }): bigint {
  if (path.startsWith(DIGEST_EXCLUDED_PREFIX)) return 0n;
  const stat = node.stat;
  const fields = new DataView(new ArrayBuffer(60));
  fields.setBigInt64(0, stat.czxid);
  fields.setBigInt64(8, stat.mzxid);
  fields.setBigInt64(16, stat.pzxid);
  fields.setBigInt64(24, stat.ctime);
  fields.setBigInt64(32, stat.mtime);
  fields.setInt32(40, stat.version);
  fields.setInt32(44, stat.cversion);
  fields.setInt32(48, stat.aversion);
  fields.setBigInt64(52, stat.ephemeralOwner);
  let crc = crc32(UTF8.encode(path === "/" ? ROOT : path));
  if (node.data !== null) crc = crc32(node.data, crc);
  crc = crc32(new Uint8Array(fields.buffer), crc);
  return BigInt(crc);
}
