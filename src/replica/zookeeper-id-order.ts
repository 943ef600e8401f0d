/**
 * The order in which ZooKeeper 3.8 walks a connection's authenticated ids (see zookeeperIdOrder).
 * Pure.
 */
import type { Id } from "../common/znode.js";

/**
 * `ids` (in the order they were added) in the order ZooKeeper 3.8 iterates a connection's ids:
 * its ServerCnxn keeps them in a ConcurrentHashMap-backed set, so whoAmI lists them, and an `auth`
 * ACL expands to them, in hash-bin order. This replays that map: a 16-bin table that doubles when
 * it reaches three quarters full, bins chosen by the spread of Id.hashCode(), entries appended to
 * their bin, and a resize that splits each bin the way ConcurrentHashMap.transfer does.
 */
export function zookeeperIdOrder(ids: readonly Id[]): Id[] {
  let table: { hash: number; id: Id }[][] = Array.from({ length: 16 }, () => []);
  let count = 0;
  for (const id of ids) {
    const hash = spread(idHashCode(id));
    const bin = table[hash & (table.length - 1)]!;
    if (bin.some((entry) => entry.id.scheme === id.scheme && entry.id.id === id.id)) continue;
    bin.push({ hash, id });
    count += 1;
    if (count >= table.length - (table.length >>> 2)) table = transfer(table);
  }
  return table.flatMap((bin) => bin.map((entry) => entry.id));
}

function transfer(table: { hash: number; id: Id }[][]): { hash: number; id: Id }[][] {
  const n = table.length;
  const next: { hash: number; id: Id }[][] = Array.from({ length: 2 * n }, () => []);
  table.forEach((bin, i) => {
    if (bin.length === 0) return;
    // The longest tail whose entries all go the same way keeps its order; those before it are
    // pushed onto the front of their new bin one by one, which reverses them.
    let lastRun = 0;
    for (let k = 1; k < bin.length; k++) if ((bin[k]!.hash & n) !== (bin[k - 1]!.hash & n)) lastRun = k;
    const low = (bin[lastRun]!.hash & n) === 0 ? bin.slice(lastRun) : [];
    const high = (bin[lastRun]!.hash & n) === 0 ? [] : bin.slice(lastRun);
    for (let k = 0; k < lastRun; k++) ((bin[k]!.hash & n) === 0 ? low : high).unshift(bin[k]!);
    next[i] = low;
    next[i + n] = high;
  });
  return next;
}

/** ConcurrentHashMap.spread. */
function spread(h: number): number {
  return (h ^ (h >>> 16)) & 0x7fffffff;
}

/** The jute-generated Id.hashCode: 37 * (37 * 17 + scheme.hashCode()) + id.hashCode(), in int arithmetic. */
function idHashCode(id: Id): number {
  return (Math.imul(37, (Math.imul(37, 17) + javaStringHash(id.scheme)) | 0) + javaStringHash(id.id)) | 0;
}

/** java.lang.String.hashCode over UTF-16 code units. */
function javaStringHash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (Math.imul(31, h) + text.charCodeAt(i)) | 0;
  return h;
}
