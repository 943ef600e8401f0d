/**
 * Prep: the leader's first request stage (ZooKeeper's PrepRequestProcessor). It turns a client
 * request into a fully decided, deterministic txn: paths, versions and parent/child existence are
 * checked against the tree *plus every change still in flight* (prepped but not yet applied),
 * sequential names are resolved, and the result is stamped by the caller with zxid and time.
 * Followers and observers never run prep; they only apply the txns it produced.
 */
import { assert } from "../common/assert.js";
import { limits } from "../common/constants.js";
import { ZkError, ZkErrorCode } from "../common/errors.js";
import { parentOf, validatePath } from "../common/paths.js";
import { isTtlMode } from "../common/znode.js";
import { cleanupKind } from "../store/cleanup-scan.js";
import { sequenceNumberOf, type DataTree } from "../store/data-tree.js";
import {
  CONTAINER_OWNER,
  isSequential,
  OPEN_ACL_UNSAFE,
  ownerKind,
  PERSISTENT_OWNER,
  Perms,
  TTL_MS_MAX,
  ttlOwner,
  type Acl,
  type CheckTxn,
  type CreateTxn,
  type DeleteTxn,
  type ErrorTxn,
  type Id,
  type MultiTxn,
  type SetAclTxn,
  type SetDataTxn,
  type TxnBody,
} from "../store/types.js";
import { QUOTA_ROOT } from "../common/quota.js";
import { QuotaGuard, type QuotaExceeded } from "./quota-guard.js";
import { SpaceGuard, type SpaceAlarm } from "./space-quota.js";
import { aclCostBytes, znodeCostBytes } from "../store/znode-cost.js";
import type { CheckRequest, CreateRequest, DeleteRequest, MultiOpRequest, SetAclRequest, SetDataRequest, WriteRequest } from "./requests.js";
import { checkAcl, fixupAcl } from "./acl.js";

/** What prep needs to know of a node: the tree's view with in-flight changes applied. */
interface NodeRecord {
  acl: readonly Acl[];
  version: number;
  cversion: number;
  aversion: number;
  numChildren: number;
  ephemeralOwner: bigint;
  dataLength: number;
}

/** A change in flight: the node as it will be once txn `zxid` is applied (`node` null = deleted). */
interface ChangeRecord {
  zxid: number;
  path: string;
  node: NodeRecord | null;
}

export interface PrepOptions {
  /** TTL nodes are off unless enabled, as in ZooKeeper (zookeeper.extendedTypesEnabled). */
  ttlNodesEnabled: boolean;
  /** ZooKeeper's reconfigEnabled: off, a reconfig is RECONFIGDISABLED before anything else is checked. */
  reconfigEnabled?: boolean;
  /** Refuse writes past a hard quota limit with QUOTAEXCEEDED (ZooKeeper's zookeeper.enforceQuota). */
  enforceQuota?: boolean;
  /** Every write past a quota limit, refused or not (the server logs and counts them). */
  onQuotaExceeded?: (event: QuotaExceeded) => void;
  /** The server's space quota (spaceQuotaBytes) and its alarm; absent, the tree may grow without a ceiling. */
  spaceAlarm?: SpaceAlarm;
}

const RESERVED_ROOT = "/zookeeper";
const CONFIG_NODE = "/zookeeper/config";

export class Prep {
  /** Latest in-flight change per path. */
  private readonly changesByPath = new Map<string, ChangeRecord>();
  /** Every in-flight change in zxid order, so applied ones can be retired from the front. */
  private readonly changesInOrder: ChangeRecord[] = [];
  private changesHead = 0;

  private readonly quota: QuotaGuard;
  private readonly space: SpaceGuard | undefined;

  constructor(
    private readonly tree: DataTree,
    private readonly options: PrepOptions,
  ) {
    this.quota = new QuotaGuard(tree, options.enforceQuota ?? false, options.onQuotaExceeded ?? (() => undefined));
    this.space = options.spaceAlarm === undefined ? undefined : new SpaceGuard(tree, options.spaceAlarm);
  }

  /**
   * Decide the txn body for `request`, sent by a connection authenticated as `authInfo` (checked
   * against the ACLs as ZooKeeper's PrepRequestProcessor does). Caller errors never throw: they
   * become an ErrorTxn, which keeps the session's order and the zxid sequence but changes nothing.
   */
  prepare(request: WriteRequest, sessionId: bigint, zxid: number, authInfo: readonly Id[]): TxnBody {
    if (request.op === "close") return this.prepareCloseSession(sessionId, zxid);
    // A cluster's leader plans reconfigurations itself (it knows the membership); a standalone
    // server cannot reconfigure, as ZooKeeper's answers once reconfiguration is enabled.
    if (request.op === "reconfig")
      return { type: "error", err: this.options.reconfigEnabled === true ? ZkErrorCode.UNIMPLEMENTED : ZkErrorCode.RECONFIGDISABLED };
    const zooKeeperChecks = "zooKeeperChecks" in request && request.zooKeeperChecks === true;
    if (request.op === "multi") return this.prepareMulti(request.ops, sessionId, zxid, authInfo, zooKeeperChecks);
    const overlay = new Map<string, ChangeRecord>();
    try {
      const body = this.prepareOne(request, sessionId, zxid, authInfo, overlay, zooKeeperChecks);
      this.commitOverlay(overlay, zxid);
      return body;
    } catch (error) {
      this.discardCharges();
      return errorTxn(error);
    }
  }

  /**
   * A reconfiguration the leader has planned (replica/cluster-config.ts): ZooKeeper's last check is
   * WRITE on /zookeeper/config (open to the super user only, unless an admin changed its ACL).
   */
  prepareReconfig(data: Uint8Array, authInfo: readonly Id[]): TxnBody {
    const node = this.tree.getNode(CONFIG_NODE);
    assert(node !== undefined, "every tree has /zookeeper/config");
    try {
      checkAcl(node.acl, Perms.WRITE, authInfo, CONFIG_NODE);
    } catch (error) {
      return errorTxn(error);
    }
    return { type: "reconfig", data };
  }

  /** A closeSession decided by the server (expiry), not asked for by a client. */
  prepareCloseSession(sessionId: bigint, zxid: number): TxnBody {
    const doomed = new Set<string>(this.tree.ephemeralsOf(sessionId));
    for (const change of this.changesByPath.values()) {
      if (change.node && change.node.ephemeralOwner === sessionId) doomed.add(change.path);
      else if (!change.node) doomed.delete(change.path);
    }
    const overlay = new Map<string, ChangeRecord>();
    for (const path of doomed) {
      if (!this.record(path, overlay)) continue;
      const parentPath = parentOf(path);
      const parent = this.record(parentPath, overlay);
      assert(parent, `parent of ephemeral ${path} exists`);
      overlay.set(parentPath, {
        zxid,
        path: parentPath,
        node: { ...parent, cversion: parent.cversion + 1, numChildren: parent.numChildren - 1 },
      });
      overlay.set(path, { zxid, path, node: null });
    }
    this.commitOverlay(overlay, zxid);
    return { type: "closeSession" };
  }

  /**
   * A delete decided by the leader itself (ZooKeeper's deleteContainer): `path` was picked by a
   * cleanup scan of the tree. It is proposed only if the node still qualifies once the changes in
   * flight are counted: a node with any change in flight (a child being created, its data being
   * set, itself being deleted or recreated as something else) is left for a later scan, and the
   * tree's node must still be an empty used container or an expired TTL node at `nowMs`. Returns
   * undefined, proposing nothing, when it does not; `allocateZxid` is called only when it does.
   */
  prepareDeleteContainer(path: string, nowMs: number, allocateZxid: () => number): { zxid: number; body: DeleteTxn } | undefined {
    if (this.changesByPath.has(path)) return undefined;
    const node = this.tree.getNode(path);
    if (node === undefined || cleanupKind(node.stat, nowMs) === undefined) return undefined;
    const parentPath = parentOf(path);
    const parent = this.record(parentPath, new Map());
    assert(parent, `parent of ${path} exists`);
    const zxid = allocateZxid();
    this.commitOverlay(
      new Map([
        [parentPath, { zxid, path: parentPath, node: { ...parent, cversion: parent.cversion + 1, numChildren: parent.numChildren - 1 } }],
        [path, { zxid, path, node: null }],
      ]),
      zxid,
    );
    return { zxid, body: { type: "delete", path } };
  }

  /** Retire every in-flight change that `zxid` (now applied to the tree) covers. */
  applied(zxid: number): void {
    while (this.changesHead < this.changesInOrder.length) {
      const change = this.changesInOrder[this.changesHead]!;
      if (change.zxid > zxid) break;
      if (this.changesByPath.get(change.path) === change) this.changesByPath.delete(change.path);
      this.changesHead += 1;
    }
    this.quota.applied(zxid);
    this.space?.applied(zxid);
    if (this.changesHead > 1024 && this.changesHead * 2 > this.changesInOrder.length) {
      this.changesInOrder.splice(0, this.changesHead);
      this.changesHead = 0;
    }
  }

  /** Forget every in-flight change (a new leader or a resync starts from the tree alone). */
  reset(): void {
    this.quota.reset();
    this.space?.reset();
    this.changesByPath.clear();
    this.changesInOrder.length = 0;
    this.changesHead = 0;
  }

  inFlightChanges(): number {
    return this.changesInOrder.length - this.changesHead;
  }

  private prepareMulti(ops: MultiOpRequest[], sessionId: bigint, zxid: number, authInfo: readonly Id[], zooKeeperChecks: boolean): TxnBody {
    if (ops.length > limits.multiOpsMax) {
      return { type: "error", err: ZkErrorCode.BADARGUMENTS };
    }
    // One overlay for the whole multi: later ops see earlier ones, and a failure discards it all.
    const overlay = new Map<string, ChangeRecord>();
    const txns: MultiTxn["ops"] = [];
    let failed = false;
    for (const op of ops) {
      if (failed) {
        txns.push({ type: "error", err: ZkErrorCode.RUNTIMEINCONSISTENCY });
        continue;
      }
      try {
        txns.push(this.prepareOne(op, sessionId, zxid, authInfo, overlay, zooKeeperChecks) as MultiTxn["ops"][number]);
      } catch (error) {
        txns.push(errorTxn(error));
        failed = true;
      }
    }
    if (failed) this.discardCharges();
    else this.commitOverlay(overlay, zxid);
    return { type: "multi", ops: txns };
  }

  private prepareOne(
    request: Exclude<WriteRequest, { op: "multi" | "close" | "reconfig" }> | MultiOpRequest,
    sessionId: bigint,
    zxid: number,
    authInfo: readonly Id[],
    overlay: Map<string, ChangeRecord>,
    zooKeeperChecks: boolean,
  ): CreateTxn | DeleteTxn | SetDataTxn | SetAclTxn | CheckTxn {
    switch (request.op) {
      case "create":
        return this.prepareCreate(request, sessionId, zxid, authInfo, overlay, zooKeeperChecks);
      case "delete":
        return this.prepareDelete(request, zxid, authInfo, overlay, zooKeeperChecks);
      case "setData":
        return this.prepareSetData(request, zxid, authInfo, overlay);
      case "setAcl":
        return this.prepareSetAcl(request, zxid, authInfo, overlay);
      case "check":
        return this.prepareCheck(request, authInfo, overlay);
    }
  }

  private prepareCreate(
    request: CreateRequest,
    sessionId: bigint,
    zxid: number,
    authInfo: readonly Id[],
    overlay: Map<string, ChangeRecord>,
    zooKeeperChecks: boolean,
  ): CreateTxn {
    // ZooKeeper's validateCreateRequest runs first: a disabled mode, then a TTL that does not fit it.
    const ephemeralOwner = ownerForMode(request, sessionId, this.options.ttlNodesEnabled);
    const sequential = isSequential(request.mode);
    // ZooKeeper's validatePathForCreate looks only for a slash and NUL now and checks the whole
    // path once the parent is found and allows it, so a malformed path can be NONODE or NOAUTH
    // first; the gRPC door checks it whole first. A sequential name is appended to the path, so
    // "/a/" names a child of "/a" and "/" one of the root.
    if (zooKeeperChecks) checkSlashAndNul(request.path);
    else validatePath(request.path, sequential);
    const parentPath = parentPathOf(request.path);
    checkDataSize(request.data);
    // Through the gRPC door an empty list is how a client asks for the default (ZooKeeper's Java
    // client would have sent OPEN_ACL_UNSAFE itself); a ZooKeeper client's empty list is INVALIDACL.
    const acl = request.acl.length === 0 && !zooKeeperChecks ? (OPEN_ACL_UNSAFE as Acl[]) : fixupAcl(request.acl, authInfo, request.path);
    checkNotReserved(request.path);
    const parent = this.record(parentPath, overlay);
    if (!parent) throw new ZkError("NONODE", undefined, parentPath);
    checkAcl(parent.acl, Perms.CREATE, authInfo, request.path);
    // ZooKeeper names sequential children by the parent's count of child creates, which never goes back.
    const path = sequential ? request.path + String(sequenceNumberOf(parent)).padStart(10, "0") : request.path;
    if (zooKeeperChecks || sequential) validatePath(path);
    if (this.record(path, overlay)) throw new ZkError("NODEEXISTS", undefined, path);
    if (ownerKind(parent.ephemeralOwner) === "ephemeral") {
      throw new ZkError("NOCHILDRENFOREPHEMERALS", undefined, parentPath);
    }
    this.quota.charge(path, 1, request.data.length, zxid);
    this.space?.charge(path, znodeCostBytes(path, request.data.length, acl));
    const parentCversion = parent.cversion + 1;
    overlay.set(parentPath, {
      zxid,
      path: parentPath,
      node: { ...parent, cversion: parentCversion, numChildren: parent.numChildren + 1 },
    });
    overlay.set(path, {
      zxid,
      path,
      node: { acl, version: 0, cversion: 0, aversion: 0, numChildren: 0, ephemeralOwner, dataLength: request.data.length },
    });
    return { type: "create", path, data: request.data, acl, ephemeralOwner, parentCversion };
  }

  private prepareDelete(
    request: DeleteRequest,
    zxid: number,
    authInfo: readonly Id[],
    overlay: Map<string, ChangeRecord>,
    zooKeeperChecks: boolean,
  ): DeleteTxn {
    if (zooKeeperChecks) {
      // ZooKeeper's getParentPathAndValidate: a slash, no NUL, none of its own nodes. It never
      // checks the rest of the path: a malformed one names no node (NONODE), or is NOAUTH first.
      checkSlashAndNul(request.path);
      if (ZOOKEEPER_SPECIAL_PATHS.has(request.path)) throw new ZkError("BADARGUMENTS", "cannot delete the root or ZooKeeper's own nodes", request.path);
    } else {
      validatePath(request.path);
      if (request.path === "/") throw new ZkError("BADARGUMENTS", "cannot delete the root", "/");
    }
    checkNotReserved(request.path);
    // Deleting is a right on the parent, checked before the node is even looked up (ZooKeeper's order).
    const parentPath = parentPathOf(request.path);
    const parent = this.record(parentPath, overlay);
    if (!parent) throw new ZkError("NONODE", undefined, parentPath);
    checkAcl(parent.acl, Perms.DELETE, authInfo, request.path);
    const node = this.record(request.path, overlay);
    if (!node) throw new ZkError("NONODE", undefined, request.path);
    checkVersion(request.version, node.version, request.path);
    if (node.numChildren > 0) throw new ZkError("NOTEMPTY", undefined, request.path);
    this.quota.charge(request.path, -1, -(this.tree.getNode(request.path)?.data.length ?? 0), zxid);
    this.space?.charge(request.path, -znodeCostBytes(request.path, node.dataLength, node.acl));
    overlay.set(parentPath, {
      zxid,
      path: parentPath,
      node: { ...parent, cversion: parent.cversion + 1, numChildren: parent.numChildren - 1 },
    });
    overlay.set(request.path, { zxid, path: request.path, node: null });
    return { type: "delete", path: request.path };
  }

  private prepareSetData(request: SetDataRequest, zxid: number, authInfo: readonly Id[], overlay: Map<string, ChangeRecord>): SetDataTxn {
    validatePath(request.path);
    checkNotReserved(request.path);
    checkDataSize(request.data);
    const node = this.record(request.path, overlay);
    if (!node) throw new ZkError("NONODE", undefined, request.path);
    checkAcl(node.acl, Perms.WRITE, authInfo, request.path);
    // ZooKeeper checks the quota before the version.
    this.quota.charge(request.path, 0, request.data.length - (this.tree.getNode(request.path)?.data.length ?? 0), zxid);
    checkVersion(request.version, node.version, request.path);
    this.space?.charge(request.path, request.data.length - node.dataLength);
    const version = node.version + 1;
    overlay.set(request.path, { zxid, path: request.path, node: { ...node, version, dataLength: request.data.length } });
    return { type: "setData", path: request.path, data: request.data, version };
  }

  private prepareSetAcl(request: SetAclRequest, zxid: number, authInfo: readonly Id[], overlay: Map<string, ChangeRecord>): SetAclTxn {
    validatePath(request.path);
    checkNotReserved(request.path);
    // Unlike a create's, an empty list here is INVALIDACL, as in ZooKeeper.
    const acl = fixupAcl(request.acl, authInfo, request.path);
    const node = this.record(request.path, overlay);
    if (!node) throw new ZkError("NONODE", undefined, request.path);
    checkAcl(node.acl, Perms.ADMIN, authInfo, request.path);
    checkVersion(request.version, node.aversion, request.path);
    this.space?.charge(request.path, aclCostBytes(acl) - aclCostBytes(node.acl));
    const aversion = node.aversion + 1;
    overlay.set(request.path, { zxid, path: request.path, node: { ...node, acl, aversion } });
    return { type: "setAcl", path: request.path, acl, aversion };
  }

  private prepareCheck(request: CheckRequest, authInfo: readonly Id[], overlay: Map<string, ChangeRecord>): CheckTxn {
    validatePath(request.path);
    const node = this.record(request.path, overlay);
    if (!node) throw new ZkError("NONODE", undefined, request.path);
    checkAcl(node.acl, Perms.READ, authInfo, request.path);
    checkVersion(request.version, node.version, request.path);
    return { type: "check", path: request.path, version: request.version };
  }

  /** The node at `path` as it will be after every in-flight change, or undefined if it will not exist. */
  private record(path: string, overlay: Map<string, ChangeRecord>): NodeRecord | undefined {
    const change = overlay.get(path) ?? this.changesByPath.get(path);
    if (change) return change.node ?? undefined;
    const node = this.tree.getNode(path);
    if (!node) return undefined;
    const stat = node.stat;
    return {
      acl: node.acl,
      version: stat.version,
      cversion: stat.cversion,
      aversion: stat.aversion,
      numChildren: stat.numChildren,
      ephemeralOwner: stat.ephemeralOwner,
      dataLength: stat.dataLength,
    };
  }

  private discardCharges(): void {
    this.quota.discard();
    this.space?.discard();
  }

  private commitOverlay(overlay: Map<string, ChangeRecord>, zxid: number): void {
    this.quota.commit();
    this.space?.commit(zxid);
    for (const change of overlay.values()) {
      this.changesByPath.set(change.path, change);
      this.changesInOrder.push(change);
    }
  }
}

/**
 * The ephemeralOwner a create in this mode gets, as ZooKeeper encodes it. TTL modes need TTL nodes
 * enabled (else UNIMPLEMENTED) and a TTL in 1..TTL_MS_MAX; other modes take no TTL (BADARGUMENTS).
 * A TTL of 0 on the wire means none was given.
 */
function ownerForMode(request: CreateRequest, sessionId: bigint, ttlNodesEnabled: boolean): bigint {
  const ttlMs = request.ttlMs;
  if (isTtlMode(request.mode)) {
    if (!ttlNodesEnabled) throw new ZkError("UNIMPLEMENTED", "TTL nodes are disabled (ttlNodesEnabled)", request.path);
    if (!(Number.isSafeInteger(ttlMs) && ttlMs > 0 && ttlMs <= TTL_MS_MAX)) {
      throw new ZkError("BADARGUMENTS", `ttl must be within 1..${TTL_MS_MAX} ms, got ${ttlMs}`, request.path);
    }
    return ttlOwner(ttlMs);
  }
  if (ttlMs !== 0) throw new ZkError("BADARGUMENTS", `a ttl is only valid with a TTL mode, not ${request.mode}`, request.path);
  switch (request.mode) {
    case "ephemeral":
    case "ephemeral-sequential":
      return sessionId;
    case "container":
      return CONTAINER_OWNER;
    default:
      return PERSISTENT_OWNER;
  }
}

function errorTxn(error: unknown): ErrorTxn {
  if (error instanceof ZkError) return { type: "error", err: error.errno };
  throw error;
}

function checkVersion(expected: number, actual: number, path: string): void {
  if (expected !== -1 && expected !== actual) throw new ZkError("BADVERSION", undefined, path);
}

function checkDataSize(data: Uint8Array): void {
  if (data.byteLength > limits.dataBytesMax) {
    throw new ZkError("BADARGUMENTS", `data of ${data.byteLength} bytes exceeds ${limits.dataBytesMax}`);
  }
}

/** What ZooKeeper's validatePathForCreate and getParentPathAndValidate look for before the tree: a slash, and no NUL. */
function checkSlashAndNul(path: string): void {
  if (path.lastIndexOf("/") < 0 || path.includes("\u0000")) throw new ZkError("BADARGUMENTS", `invalid path ${JSON.stringify(path)}`, path);
}

/** The path up to the last slash, "/" for the root and its children, as ZooKeeper's prep takes a parent ("" is its root). */
function parentPathOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash <= 0 ? "/" : path.slice(0, slash);
}

/** The nodes ZooKeeper's DataTree.isSpecialPath names, which no delete may remove. */
const ZOOKEEPER_SPECIAL_PATHS: ReadonlySet<string> = new Set(["/", RESERVED_ROOT, QUOTA_ROOT, RESERVED_ROOT + "/config"]);

/** /zookeeper is the server's, except below /zookeeper/quota, where clients write quotas (as zkCli's setquota does). */
function checkNotReserved(path: string): void {
  if (path.startsWith(QUOTA_ROOT + "/")) return;
  if (path === RESERVED_ROOT || path.startsWith(RESERVED_ROOT + "/")) {
    throw new ZkError("BADARGUMENTS", "the /zookeeper subtree is reserved", path);
  }
}
