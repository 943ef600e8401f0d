/**
 * Binary codec for a whole DataTree (SNAP sync and snapshot files). Watches are not part of it.
 *
 * Layout, format version 1 (varint = LEB128, zvarint = zigzag varint):
 *   "CRSN" magic | u8 version | varint lastProcessedZxid
 *   | varint sessionCount, per session (ascending id): int64 id, varint timeoutMs, bytes password
 *   | varint nodeCount, then every node in the tree's pre-order walk (parent before child, siblings
 *     sorted), each: string name ("" for the root), bytes data, varint aclRef (an ACL list is
 *     defined once, on first use: aclRef = number of lists defined so far, followed by the list;
 *     smaller refs reuse one), varint czxid, mzxid, pzxid, zvarint ctime, mtime, version, cversion,
 *     aversion, owner (u8 0 | u8 1 + int64), varint childCount.
 * dataLength and numChildren are derived (data length, child count) rather than stored.
 *
 * Equal trees encode to equal bytes. Decoding checks the structure (valid names and paths,
 * counts that add up, no children under ephemerals) and throws ZkError("MARSHALLINGERROR") on
 * anything malformed. ACL lists are interned: nodes with equal ACLs share one frozen array, as
 * ZooKeeper's ACL cache does.
 */
import { assert } from "../common/assert.js";
import { pathProblem } from "../common/paths.js";
import { ByteReader, ByteWriter } from "./bytes.js";
import { DataTree, emptyChildren, type ReadonlyZNode, type SessionRecord, type TreeCapture, type ZNode } from "./data-tree.js";
import { readAclList, writeAclList } from "./txn-codec.js";
import type { Acl, Stat } from "./types.js";

const ROOT = "/";
import { ownerKind, PERSISTENT_OWNER } from "./types.js";

export const SNAPSHOT_FORMAT_VERSION = 1;
const MAGIC = [0x43, 0x52, 0x53, 0x4e]; // "CRSN"

/** The whole snapshot of `tree` as it is now, in one buffer (SNAP sync, tests). */
export function encodeSnapshot(tree: DataTree): Uint8Array {
  const encoder = new SnapshotEncoder(tree);
  const chunks: Uint8Array[] = [];
  for (let chunk = encoder.next(Infinity); chunk !== undefined; chunk = encoder.next(Infinity)) chunks.push(chunk);
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/**
 * A snapshot of `tree` as of the moment it was made, encoded a slice at a time: the tree is
 * captured (DataTree.beginCapture), so it may go on changing between slices. The chunks, in order,
 * are exactly `encodeSnapshot`'s bytes. Call `abort` to give up before the end; either way the
 * capture is released.
 */
export class SnapshotEncoder {
  readonly zxid: number;
  private readonly capture: TreeCapture;
  private readonly stack: string[] = [ROOT];
  private readonly aclRefByList = new Map<readonly Acl[], number>();
  private readonly aclRefByKey = new Map<string, number>();
  private nodesWritten = 0;
  private started = false;
  private finished = false;

  constructor(tree: DataTree) {
    this.capture = tree.beginCapture();
    this.zxid = this.capture.zxid;
  }

  /** The next chunk, holding at most `maxNodes` nodes (the first also the header); undefined once done. */
  next(maxNodes: number): Uint8Array | undefined {
    const w = new ByteWriter(64 * 1024);
    return this.writeNext(w, maxNodes) ? w.finish() : undefined;
  }

  /**
   * Appends the next chunk (at most `maxNodes` nodes, the first also the header) to `w`; false,
   * writing nothing, once everything was written. A writer reused across calls spares the
   * allocation of a buffer per chunk.
   */
  writeNext(w: ByteWriter, maxNodes: number): boolean {
    if (this.finished) return false;
    const capture = this.capture;
    if (!this.started) {
      this.started = true;
      for (const byte of MAGIC) w.writeUint8(byte);
      w.writeUint8(SNAPSHOT_FORMAT_VERSION);
      w.writeVarUint(capture.zxid);
      w.writeVarUint(capture.sessions.length);
      for (const [sessionId, record] of capture.sessions) {
        w.writeInt64(sessionId);
        if (!(record.timeoutMs >= 0 && record.timeoutMs <= 0x7fffffff)) assert(false, `session timeout ${record.timeoutMs}`);
        w.writeVarUint(record.timeoutMs);
        w.writeBytes(record.password);
      }
      w.writeVarUint(capture.nodeCount);
    }
    const stack = this.stack;
    for (let n = 0; n < maxNodes && stack.length > 0; n++) {
      const path = stack.pop()!;
      const node = capture.node(path);
      this.writeNode(w, path, node);
      if (node.children.size === 0) continue;
      const names = [...node.children].sort();
      const prefix = path === ROOT ? ROOT : path + "/";
      for (let i = names.length - 1; i >= 0; i--) stack.push(prefix + names[i]!);
    }
    if (stack.length === 0) {
      this.finished = true;
      capture.release();
      assert(this.nodesWritten === capture.nodeCount, "snapshot walk missed nodes");
    }
    return true;
  }

  abort(): void {
    this.finished = true;
    this.capture.release();
  }

  private writeNode(w: ByteWriter, path: string, node: ReadonlyZNode): void {
    this.nodesWritten++;
    w.writeString(path.slice(path.lastIndexOf("/") + 1));
    w.writeNullableBytes(node.data);
    let ref = this.aclRefByList.get(node.acl);
    if (ref === undefined) {
      const key = aclKey(node.acl);
      ref = this.aclRefByKey.get(key);
      if (ref === undefined) {
        ref = this.aclRefByKey.size;
        this.aclRefByKey.set(key, ref);
        w.writeVarUint(ref);
        writeAclList(w, node.acl);
      } else {
        w.writeVarUint(ref);
      }
      this.aclRefByList.set(node.acl, ref);
    } else {
      w.writeVarUint(ref);
    }
    const stat = node.stat;
    w.writeVarUint(stat.czxid);
    w.writeVarUint(stat.mzxid);
    w.writeVarUint(stat.pzxid);
    w.writeVarInt(stat.ctime);
    w.writeVarInt(stat.mtime);
    w.writeVarInt32(stat.version);
    w.writeVarInt32(stat.cversion);
    w.writeVarInt32(stat.aversion);
    if (stat.ephemeralOwner === PERSISTENT_OWNER) {
      w.writeUint8(0);
    } else {
      w.writeUint8(1);
      w.writeInt64(stat.ephemeralOwner);
    }
    w.writeVarUint(node.children.size);
  }
}

interface Frame {
  path: string;
  node: ZNode;
  remaining: number;
}

/** Rebuilds a tree (children sets, ephemeral/container/TTL indexes; no watches). Data is copied out of `bytes`. */
export function decodeSnapshot(bytes: Uint8Array): DataTree {
  const r = new ByteReader(bytes);
  for (const byte of MAGIC) {
    if (r.readUint8() !== byte) throw r.malformed("not a corral snapshot");
  }
  const version = r.readUint8();
  if (version !== SNAPSHOT_FORMAT_VERSION) throw r.malformed(`unknown snapshot format version ${version}`);
  const lastProcessedZxid = r.readVarUint();

  const sessions = new Map<bigint, SessionRecord>();
  const sessionCount = r.readVarUintMax(r.remaining / 10, "session count");
  for (let i = 0; i < sessionCount; i++) {
    const sessionId = r.readInt64();
    const timeoutMs = r.readVarUintMax(0x7fffffff, "session timeout");
    const password = r.readBytes();
    if (sessions.has(sessionId)) throw r.malformed(`session ${sessionId} twice`);
    sessions.set(sessionId, { timeoutMs, password });
  }

  // A node takes at least 13 bytes, so a larger count is garbage, caught before allocating.
  const nodeCount = r.readVarUintMax(r.remaining / 13, "node count");
  if (nodeCount === 0) throw r.malformed("no root node");
  const acls: Acl[][] = [];
  const nodes = new Map<string, ZNode>();
  const stack: Frame[] = [];
  for (let i = 0; i < nodeCount; i++) {
    let parent: Frame | undefined;
    if (i > 0) {
      while (stack.length > 0 && stack[stack.length - 1]!.remaining === 0) stack.pop();
      parent = stack[stack.length - 1];
      if (parent === undefined) throw r.malformed(`node ${i} has no parent left to belong to`);
      parent.remaining--;
    }
    const name = r.readString();
    let path: string;
    if (parent === undefined) {
      if (name !== "") throw r.malformed(`root named ${JSON.stringify(name)}`);
      path = "/";
    } else {
      path = parent.path === "/" ? "/" + name : parent.path + "/" + name;
      if (name === "" || name.includes("/") || pathProblem(path) !== undefined) {
        throw r.malformed(`invalid node name ${JSON.stringify(name)} under ${parent.path}`);
      }
      if (parent.node.children.has(name)) throw r.malformed(`${path} twice`);
    }
    const data = r.readNullableBytes();
    const aclRef = r.readVarUint();
    let acl: Acl[];
    if (aclRef < acls.length) {
      acl = acls[aclRef]!;
    } else if (aclRef === acls.length) {
      acl = freezeAclList(readAclList(r));
      acls.push(acl);
    } else {
      throw r.malformed(`ACL reference ${aclRef} beyond ${acls.length} lists`);
    }
    const czxid = r.readVarUint();
    const mzxid = r.readVarUint();
    const pzxid = r.readVarUint();
    const ctime = r.readVarInt();
    const mtime = r.readVarInt();
    const nodeVersion = r.readVarInt32();
    const cversion = r.readVarInt32();
    const aversion = r.readVarInt32();
    const ownerTag = r.readUint8();
    let ephemeralOwner: bigint;
    if (ownerTag === 0) ephemeralOwner = PERSISTENT_OWNER;
    else if (ownerTag === 1) ephemeralOwner = r.readInt64();
    else throw r.malformed(`owner tag ${ownerTag}`);
    if (parent === undefined && ephemeralOwner !== PERSISTENT_OWNER) throw r.malformed("the root has an owner");
    const childCount = r.readVarUintMax(nodeCount - 1 - i, "child count");
    if (childCount > 0 && ephemeralOwner !== PERSISTENT_OWNER && ownerKind(ephemeralOwner) === "ephemeral") {
      throw r.malformed(`ephemeral ${path} has children`);
    }
    const stat: Stat = {
      czxid,
      mzxid,
      ctime,
      mtime,
      version: nodeVersion,
      cversion,
      aversion,
      ephemeralOwner,
      dataLength: data.length,
      numChildren: childCount,
      pzxid,
    };
    const node: ZNode = { data, acl, stat, children: childCount > 0 ? new Set() : emptyChildren() };
    nodes.set(path, node);
    if (parent !== undefined) parent.node.children.add(name);
    if (childCount > 0) stack.push({ path, node, remaining: childCount });
  }
  for (const frame of stack) {
    if (frame.remaining !== 0) throw r.malformed(`${frame.path} is missing ${frame.remaining} children`);
  }
  r.expectEnd("snapshot");
  return DataTree.restore(nodes, sessions, lastProcessedZxid);
}

function aclKey(acl: readonly Acl[]): string {
  return JSON.stringify(acl.map((entry) => [entry.perms, entry.id.scheme, entry.id.id]));
}

function freezeAclList(acl: Acl[]): Acl[] {
  if (Object.isFrozen(acl)) return acl;
  for (const entry of acl) {
    Object.freeze(entry.id);
    Object.freeze(entry);
  }
  return Object.freeze(acl) as Acl[];
}
