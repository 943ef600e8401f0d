/**
 * ZooKeeper's snapshot file (FileSnap), read and written field for field:
 *
 *   FileHeader { int magic "ZKSN", int version 2, long dbid }
 *   int sessionCount, then per session: long id, int timeout (ms)
 *   ACL cache: int count, then per list: long index, vector<ACL>
 *   nodes, parents before children: ustring path ("" for the root), then DataNode
 *     { buffer data, long aclIndex (-1 = world:anyone ALL), StatPersisted }; ended by the path "/"
 *   seal: long Adler-32 of every byte so far, ustring "/"
 *   3.6+: ZxidDigest { long zxid, int digestVersion, long digest (a hex ustring before version 2) }, seal
 *   3.9+: long lastProcessedZxid, seal
 *
 * The sections after the first seal are optional: older readers stop there, newer ones read on
 * while bytes remain, as ZooKeeper does. Compression (gz, snappy) wraps the whole stream and is the
 * caller's business (zookeeper-data-dir.ts).
 */
import { JuteError, JuteReader, JuteWriter } from "../server/zk-wire/jute.js";
import { ACL, vector } from "../server/zk-wire/records.js";
import type { Acl } from "../store/types.js";
import { adler32 } from "./adler32.js";
import { ZooKeeperDataError } from "./errors.js";
import { aclsOf, FILE_FORMAT_VERSION, FileHeader, SNAPSHOT_MAGIC, StatPersisted } from "./txn-records.js";

/** A znode's StatPersisted: what ZooKeeper stores (cversion counts child creates only). */
export type ZooKeeperStat = ReturnType<typeof StatPersisted.read>;

export interface ZooKeeperSnapshotNode {
  /** "" for the root, as ZooKeeper writes it. */
  path: string;
  data: Uint8Array | null;
  /** An index into the ACL cache; -1 stands for world:anyone with every permission. */
  aclIndex: bigint;
  stat: ZooKeeperStat;
}

export interface ZooKeeperZxidDigest {
  zxid: bigint;
  version: number;
  digest: bigint;
}

export interface ZooKeeperSnapshot {
  sessions: Map<bigint, number>;
  acls: Map<bigint, Acl[]>;
  nodes: ZooKeeperSnapshotNode[];
  /** The tree digest as of `digest.zxid` (3.6+, when digests are on). */
  digest: ZooKeeperZxidDigest | undefined;
  /** The zxid 3.9+ records beside the digest (the file name's zxid is the one ZooKeeper uses). */
  lastProcessedZxid: bigint | undefined;
}

/** The ACL index ZooKeeper reserves for world:anyone with every permission (ReferenceCountedACLCache). */
export const OPEN_ACL_INDEX = -1n;
const END_OF_NODES = "/";
const acls = vector(ACL);

/** Decodes a whole (uncompressed) snapshot stream. Throws ZooKeeperDataError naming `file`. */
export function decodeZooKeeperSnapshot(bytes: Uint8Array, file: string): ZooKeeperSnapshot {
  // A node's data is as large as jute.maxbuffer let it be: bound fields by the bytes alone.
  const reader = new JuteReader(bytes, { fieldLengthMaxBytes: bytes.length });
  try {
    const header = FileHeader.read(reader);
    if (header.magic !== SNAPSHOT_MAGIC) throw new ZooKeeperDataError(file, `not a ZooKeeper snapshot (magic 0x${(header.magic >>> 0).toString(16)})`);
    if (header.version !== FILE_FORMAT_VERSION) throw new ZooKeeperDataError(file, `snapshot format version ${header.version}, only 2 is known`);
    const sessions = new Map<bigint, number>();
    const sessionCount = reader.readInt();
    if (sessionCount < 0 || sessionCount > reader.remainingBytes / 12)
      throw new ZooKeeperDataError(file, `session count ${sessionCount} does not fit the file`);
    for (let i = 0; i < sessionCount; i++) sessions.set(reader.readLong(), reader.readInt());
    const aclCache = new Map<bigint, Acl[]>();
    const aclCount = reader.readInt();
    if (aclCount < 0 || aclCount > reader.remainingBytes / 12) throw new ZooKeeperDataError(file, `ACL cache size ${aclCount} does not fit the file`);
    for (let i = 0; i < aclCount; i++) {
      const index = reader.readLong();
      const list = acls.read(reader);
      if (list === null) throw new ZooKeeperDataError(file, `ACL cache entry ${index} has no list`);
      aclCache.set(index, aclsOf(list));
    }
    const nodes: ZooKeeperSnapshotNode[] = [];
    for (let path = ustringOf(reader); path !== END_OF_NODES; path = ustringOf(reader)) {
      const data = reader.readBuffer();
      const aclIndex = reader.readLong();
      const stat = StatPersisted.read(reader);
      nodes.push({ path, data, aclIndex, stat });
    }
    checkSeal(reader, bytes, file, "the tree");
    let digest: ZooKeeperZxidDigest | undefined;
    let lastProcessedZxid: bigint | undefined;
    if (reader.remainingBytes > 0) {
      const zxid = reader.readLong();
      const version = reader.readInt();
      const value = version < 2 ? BigInt.asIntN(64, BigInt(`0x${ustringOf(reader) || "0"}`)) : reader.readLong();
      checkSeal(reader, bytes, file, "the digest");
      if (zxid > 0n) digest = { zxid, version, digest: value };
    }
    if (reader.remainingBytes > 0) {
      lastProcessedZxid = reader.readLong();
      checkSeal(reader, bytes, file, "the last zxid");
    }
    return { sessions, acls: aclCache, nodes, digest, lastProcessedZxid };
  } catch (error) {
    if (error instanceof JuteError) throw new ZooKeeperDataError(file, `damaged or truncated snapshot: ${error.message}`);
    if (error instanceof SyntaxError) throw new ZooKeeperDataError(file, `damaged snapshot: the digest is not hex`);
    throw error;
  }
}

function ustringOf(reader: JuteReader): string {
  return reader.readUstring() ?? "";
}

/** SnapStream.checkSealIntegrity: the Adler-32 of everything before the seal, then "/". */
function checkSeal(reader: JuteReader, bytes: Uint8Array, file: string, what: string): void {
  const expected = BigInt(adler32(bytes.subarray(0, reader.offsetBytes)));
  const recorded = reader.readLong();
  const slash = reader.readUstring();
  if (recorded !== expected || slash !== "/") throw new ZooKeeperDataError(file, `checksum after ${what} does not match: the snapshot is damaged`);
}

/** What a snapshot holds, for writing one (root first, parents before children, root path ""). */
export interface ZooKeeperSnapshotImage {
  sessions: ReadonlyMap<bigint, number>;
  /** Every node with its ACL list; lists are put in the ACL cache as they come. */
  nodes: Iterable<{ path: string; data: Uint8Array | null; acl: readonly Acl[]; stat: ZooKeeperStat }>;
  digest: ZooKeeperZxidDigest | undefined;
}

/**
 * The snapshot stream FileSnap.serialize writes for `image` (3.6–3.8's layout: the digest section
 * when one is given, no lastProcessedZxid section). world:anyone ALL is written as index -1, as
 * ZooKeeper's ACL cache does.
 */
export function encodeZooKeeperSnapshot(image: ZooKeeperSnapshotImage): Uint8Array {
  const cache = new Map<string, { index: bigint; acl: readonly Acl[] }>();
  const nodes = new JuteWriter(1 << 16);
  for (const node of image.nodes) {
    nodes.writeUstring(node.path);
    nodes.writeBuffer(node.data);
    nodes.writeLong(aclIndexOf(node.acl, cache));
    StatPersisted.write(nodes, node.stat);
  }
  nodes.writeUstring(END_OF_NODES);

  const out = new JuteWriter(nodes.lengthBytes + 1024);
  FileHeader.write(out, { magic: SNAPSHOT_MAGIC, version: FILE_FORMAT_VERSION, dbid: -1n });
  out.writeInt(image.sessions.size);
  for (const [id, timeoutMs] of image.sessions) out.writeLong(id).writeInt(timeoutMs);
  out.writeInt(cache.size);
  for (const { index, acl } of cache.values()) {
    out.writeLong(index);
    acls.write(
      out,
      acl.map((entry) => ({ perms: entry.perms, id: { scheme: entry.id.scheme, id: entry.id.id } })),
    );
  }
  out.writeRaw(nodes.toBytes());
  seal(out);
  if (image.digest !== undefined) {
    out.writeLong(image.digest.zxid).writeInt(image.digest.version).writeLong(image.digest.digest);
    seal(out);
  }
  return out.toBytes();
}

function seal(out: JuteWriter): void {
  out.writeLong(BigInt(adler32(out.toBytes())));
  out.writeUstring("/");
}

function aclIndexOf(acl: readonly Acl[], cache: Map<string, { index: bigint; acl: readonly Acl[] }>): bigint {
  if (acl.length === 1 && acl[0]!.perms === 31 && acl[0]!.id.scheme === "world" && acl[0]!.id.id === "anyone") return OPEN_ACL_INDEX;
  const key = JSON.stringify(acl.map((entry) => [entry.perms, entry.id.scheme, entry.id.id]));
  let entry = cache.get(key);
  if (entry === undefined) {
    entry = { index: BigInt(cache.size + 1), acl };
    cache.set(key, entry);
  }
  return entry.index;
}
