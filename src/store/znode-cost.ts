/**
 * What one znode costs the server's memory, estimated from what the tree holds of it: the space
 * quota (spaceQuotaBytes) is measured in this unit. The estimate is a pure function of the node's
 * path, data length and ACL, so every server that applies the same txns holds the same total, and
 * the leader can charge a write before it is applied.
 *
 * The fixed part is the heap a znode's records take in this tree (its map entry, node and Stat
 * objects, its children set slot), measured with a build of corral: 200,000 znodes of 21-character
 * paths took 577 bytes of V8 heap each, whatever their data size. Data is held outside the heap, in
 * its own buffer, counted at its length; the path is held twice (the map key and the name in the
 * parent's children).
 */
import type { Acl } from "../common/znode.js";

/** Heap a znode's records take besides its path, data and ACL entries. */
export const ZNODE_OVERHEAD_BYTES = 480;
/** Heap one ACL entry's objects take besides its scheme and id strings. */
export const ACL_ENTRY_OVERHEAD_BYTES = 40;

export function aclCostBytes(acl: readonly Acl[]): number {
  let bytes = 0;
  for (const entry of acl) bytes += ACL_ENTRY_OVERHEAD_BYTES + entry.id.scheme.length + entry.id.id.length;
  return bytes;
}

/** The estimated memory of a znode at `path` holding `dataBytes` of data under `acl`. */
export function znodeCostBytes(path: string, dataBytes: number, acl: readonly Acl[]): number {
  return ZNODE_OVERHEAD_BYTES + 2 * path.length + dataBytes + aclCostBytes(acl);
}
