/**
 * spaceQuotaBytes when the configuration leaves it at 0: a fraction of the V8 heap this process may
 * grow to (node --max-old-space-size, or V8's default for the machine's memory). Half, because the
 * tree is not all a server holds: proposals in flight, requests read and not answered, watches,
 * sessions, and the copies a snapshot keeps of nodes changed while it is written all live beside
 * it. With V8's default heap on a 64-bit machine of 16 GiB or more (about 4 GiB) the quota is
 * about 2 GiB, etcd's default --quota-backend-bytes.
 */
import { getHeapStatistics } from "node:v8";

/** The share of the heap limit the tree may take by default. */
export const SPACE_QUOTA_HEAP_FRACTION = 0.5;

/** The space quota a server runs with: `configured`, or the heap-derived default when it is 0. */
export function spaceQuotaBytesOf(configured: number): number {
  if (configured > 0) return configured;
  return Math.floor(getHeapStatistics().heap_size_limit * SPACE_QUOTA_HEAP_FRACTION);
}
