/**
 * The tree digest kept as the tree changes (ZooKeeper's DigestCalculator, `digest.enabled`): each
 * node and each session record hashes on its own, and the digest adds those hashes up, lane by
 * lane modulo 2^32. Being a sum, it does not depend on the order of the nodes, so a change costs
 * the hashes of the nodes it touches (subtract the old, add the new) instead of a walk of the whole
 * tree: members can compare digests as often as they like, at any size.
 *
 * Two servers that applied the same txns hold the same digest at the same zxid; a server whose
 * tree took a change the others did not (a lost or extra txn, a bug in apply) holds another one.
 * It is a check against accidents, not against an adversary: a sum can be steered to a collision.
 */
import { fmix32, Hasher } from "./hasher.js";
import type { Acl, Stat } from "./types.js";

/** What of a node is hashed: everything replicated (path, data, ACL, raw stat). */
export interface DigestedNode {
  readonly data: Uint8Array;
  readonly acl: readonly Acl[];
  readonly stat: Readonly<Stat>;
}

export interface DigestedSession {
  readonly timeoutMs: number;
  readonly password: Uint8Array;
}

/** A running sum of 64-bit hashes, as two 32-bit lanes. */
export class DigestSum {
  private high = 0;
  private low = 0;

  add(lanes: readonly [number, number]): void {
    this.high = (this.high + lanes[0]) >>> 0;
    this.low = (this.low + lanes[1]) >>> 0;
  }

  subtract(lanes: readonly [number, number]): void {
    this.high = (this.high - lanes[0]) >>> 0;
    this.low = (this.low - lanes[1]) >>> 0;
  }

  feed(hasher: Hasher): Hasher {
    return hasher.uint32(this.high).uint32(this.low);
  }
}

export function nodeHash(path: string, node: DigestedNode): [number, number] {
  const hash = new WordHash().string(path).bytes(node.data).word(node.acl.length);
  for (const acl of node.acl) hash.word(acl.perms).string(acl.id.scheme).string(acl.id.id);
  const stat = node.stat;
  hash.owner(stat.ephemeralOwner);
  return hash
    .number(stat.czxid)
    .number(stat.mzxid)
    .number(stat.ctime)
    .number(stat.mtime)
    .word(stat.version)
    .word(stat.cversion)
    .word(stat.aversion)
    .word(stat.dataLength)
    .word(stat.numChildren)
    .number(stat.pzxid)
    .lanes();
}

export function sessionHash(sessionId: bigint, record: DigestedSession): [number, number] {
  return new WordHash().owner(sessionId).number(record.timeoutMs).bytes(record.password).lanes();
}

const TWO_POW_32 = 2 ** 32;

/**
 * Two lanes of murmur3's 32-bit block mixing, fed a word (not a byte) at a time: every write hashes
 * the nodes it changes twice, so this is on the write path and must stay cheap.
 */
class WordHash {
  private a = 0x9747b28c;
  private b = 0x6b43a9b5;

  word(value: number): this {
    let k = Math.imul(value | 0, 0xcc9e2d51);
    k = Math.imul((k << 15) | (k >>> 17), 0x1b873593);
    const a = this.a ^ k;
    this.a = (Math.imul((a << 13) | (a >>> 19), 5) + 0xe6546b64) | 0;
    let j = Math.imul(value | 0, 0x85ebca6b);
    j = Math.imul((j << 13) | (j >>> 19), 0xc2b2ae35);
    const b = this.b ^ j;
    this.b = (Math.imul((b << 17) | (b >>> 15), 9) + 0x52dce729) | 0;
    return this;
  }

  /** Any safe integer, negative included, as two words. */
  number(value: number): this {
    return this.word(Math.floor(value / TWO_POW_32)).word(value >>> 0);
  }

  /** A 64-bit id as two words (persistent nodes, most of a tree, skip the BigInt arithmetic). */
  owner(value: bigint): this {
    if (value === 0n) return this.word(0).word(0);
    const bits = BigInt.asUintN(64, value);
    return this.word(Number(bits >> 32n)).word(Number(bits & 0xffffffffn));
  }

  /** Length first, then two UTF-16 units a word. */
  string(value: string): this {
    const length = value.length;
    this.word(length);
    let i = 0;
    for (; i + 1 < length; i += 2) this.word(value.charCodeAt(i) | (value.charCodeAt(i + 1) << 16));
    if (i < length) this.word(value.charCodeAt(i));
    return this;
  }

  /** Length first, then four bytes a word. */
  bytes(value: Uint8Array): this {
    const length = value.length;
    this.word(length);
    let i = 0;
    for (; i + 3 < length; i += 4) this.word(value[i]! | (value[i + 1]! << 8) | (value[i + 2]! << 16) | (value[i + 3]! << 24));
    let tail = 0;
    for (let shift = 0; i < length; i++, shift += 8) tail |= value[i]! << shift;
    return this.word(tail);
  }

  lanes(): [number, number] {
    const a = fmix32(this.a ^ Math.imul(this.b, 0x9e3779b1));
    const b = fmix32(this.b ^ a);
    return [a >>> 0, b >>> 0];
  }
}

/** The digest as members compare it: 16 hex digits over the zxid, the counts and both sums. */
export function formatDigest(lastZxid: number, nodes: DigestSum, nodeCount: number, sessions: DigestSum, sessionCount: number): string {
  const hasher = new Hasher().number(lastZxid).number(nodeCount);
  nodes.feed(hasher).number(sessionCount);
  return sessions.feed(hasher).hex();
}
