/**
 * Quotas from the SDK, written exactly as ZooKeeper's zkCli (setquota / listquota / delquota)
 * writes them, so either tool reads what the other set: the limits node
 * /zookeeper/quota<path>/zookeeper_limits and the stats node beside it, which the server keeps
 * current. `count` / `bytes` are soft limits (the server logs and counts writes past them);
 * `countHardLimit` / `byteHardLimit` are refused with QUOTAEXCEEDED when the server runs with
 * `enforceQuota`. A quota may not be nested inside or above another one.
 */
import { ZkError } from "../common/errors.js";
import { formatQuotaFigures, limitsPathOf, parseQuotaFigures, QUOTA_ROOT, statsPathOf, unsetFigures, type QuotaFigures } from "../common/quota.js";
import type { Client } from "./client.js";
import { op } from "./ops.js";

/** The limits to set: `count` nodes and `bytes` of data (soft), `countHardLimit` and `byteHardLimit` (hard); unset ones mean none. */
export type QuotaLimits = Partial<QuotaFigures>;

/** A quota's limits (-1 = none) and what the subtree holds now (`count` nodes, `bytes` of data). */
export interface QuotaReport {
  /** The limits, -1 where unset. */
  limits: QuotaFigures;
  /** What the subtree holds now, its root included. */
  usage: { count: number; bytes: number };
}

/** Sets (or, for a path that has one, updates) the quota on `path`, which must exist. */
export async function setQuota(zk: Client, path: string, limits: QuotaLimits): Promise<void> {
  if ((await zk.exists(path)) === null) throw new ZkError("NONODE", `${path} does not exist`, path);
  await refuseNestedQuota(zk, path);
  let at = QUOTA_ROOT;
  for (const part of path.split("/").slice(1)) {
    at += "/" + part;
    await createIfMissing(zk, at, "");
  }
  const figures = { ...unsetFigures(), ...definedOnly(limits) };
  const limitsPath = limitsPathOf(path);
  const existing = await zk.exists(limitsPath);
  if (existing === null) {
    await zk.create(limitsPath, formatQuotaFigures(figures));
    await createIfMissing(zk, statsPathOf(path), formatQuotaFigures({ ...unsetFigures(), count: 0, bytes: 0 }));
    return;
  }
  const merged = parseQuotaFigures((await zk.getData(limitsPath)).data);
  for (const [key, value] of Object.entries(definedOnly(limits)) as [keyof QuotaFigures, number][]) if (value > -1) merged[key] = value;
  await zk.setData(limitsPath, formatQuotaFigures(merged));
}

/** The quota on `path`, or null if it has none. */
export async function listQuota(zk: Client, path: string): Promise<QuotaReport | null> {
  const [limits, stats] = await zk.multiRead([op.getData(limitsPathOf(path)), op.getData(statsPathOf(path))]);
  if (limits?.type !== "getData") return null;
  const usage = stats?.type === "getData" ? parseQuotaFigures(stats.data) : unsetFigures();
  return { limits: parseQuotaFigures(limits.data), usage: { count: usage.count, bytes: usage.bytes } };
}

/** Removes the quota on `path` (its limits and stats nodes, and quota path nodes left empty). Resolves false if it had none. */
export async function deleteQuota(zk: Client, path: string): Promise<boolean> {
  if ((await zk.exists(limitsPathOf(path))) === null) return false;
  for (const node of [statsPathOf(path), limitsPathOf(path)]) await deleteIfPresent(zk, node);
  for (let at = QUOTA_ROOT + path; at !== QUOTA_ROOT; at = at.slice(0, at.lastIndexOf("/"))) {
    const stat = await zk.exists(at);
    if (stat === null) continue;
    if (stat.numChildren > 0) break;
    await deleteIfPresent(zk, at);
  }
  return true;
}

/** zkCli refuses a quota below or above an existing one: usage is kept for the deepest quota only. */
async function refuseNestedQuota(zk: Client, path: string): Promise<void> {
  for (let at = path.slice(0, path.lastIndexOf("/")); at !== ""; at = at.slice(0, at.lastIndexOf("/"))) {
    if ((await zk.exists(limitsPathOf(at))) !== null) throw new ZkError("BADARGUMENTS", `${path} has a parent ${at} which has a quota`, path);
  }
  const below = [QUOTA_ROOT + path];
  for (let at = below.pop(); at !== undefined; at = below.pop()) {
    let children: string[];
    try {
      children = await zk.getChildren(at);
    } catch (error) {
      if (error instanceof ZkError && error.code === "NONODE") continue;
      throw error;
    }
    for (const child of children) {
      if (child === "zookeeper_limits" && at !== QUOTA_ROOT + path) {
        throw new ZkError("BADARGUMENTS", `${path} has a child ${at.slice(QUOTA_ROOT.length)} which has a quota`, path);
      }
      if (child !== "zookeeper_limits" && child !== "zookeeper_stats") below.push(`${at}/${child}`);
    }
  }
}

function definedOnly(limits: QuotaLimits): QuotaLimits {
  const out: QuotaLimits = {};
  for (const key of ["count", "bytes", "countHardLimit", "byteHardLimit"] as const) {
    const value = limits[key];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < -1) throw new ZkError("BADARGUMENTS", `quota ${key} must be an integer ≥ -1, not ${value}`);
    out[key] = value;
  }
  return out;
}

async function createIfMissing(zk: Client, path: string, data: string): Promise<void> {
  try {
    await zk.create(path, data);
  } catch (error) {
    if (!(error instanceof ZkError && error.code === "NODEEXISTS")) throw error;
  }
}

async function deleteIfPresent(zk: Client, path: string): Promise<void> {
  try {
    await zk.delete(path);
  } catch (error) {
    if (!(error instanceof ZkError && error.code === "NONODE")) throw error;
  }
}
