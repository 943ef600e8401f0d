/**
 * Quotas in ZooKeeper's layout, so that its tools (zkCli's setquota / listquota / delquota) and
 * data work unchanged: a quota on `/app` is the node `/zookeeper/quota/app/zookeeper_limits`
 * (written by clients) beside `/zookeeper/quota/app/zookeeper_stats` (kept current by the tree:
 * how many nodes and data bytes the subtree holds, `/app` itself included). Both hold ZooKeeper's
 * StatsTrack text, e.g. "count=10,bytes=-1=;byteHardLimit=-1;countHardLimit=20"; -1 or absent = no
 * limit. `count` / `bytes` are soft limits (exceeding one is logged and counted), `countHardLimit`
 * / `byteHardLimit` are refused with QUOTAEXCEEDED when the server enforces quotas.
 */
const utf8 = new TextDecoder();

export const QUOTA_ROOT = "/zookeeper/quota";
export const LIMITS_NODE = "zookeeper_limits";
export const STATS_NODE = "zookeeper_stats";

/** A StatsTrack: every figure -1 when unset. */
export interface QuotaFigures {
  /** Nodes in the subtree, its root included (soft limit). */
  count: number;
  /** Bytes of data in the subtree (soft limit). */
  bytes: number;
  /** Nodes: writes past it are QUOTAEXCEEDED when the server enforces quotas. */
  countHardLimit: number;
  /** Bytes: writes past it are QUOTAEXCEEDED when the server enforces quotas. */
  byteHardLimit: number;
}

const KEYS: readonly (keyof QuotaFigures)[] = ["count", "bytes", "countHardLimit", "byteHardLimit"];

export function unsetFigures(): QuotaFigures {
  return { count: -1, bytes: -1, countHardLimit: -1, byteHardLimit: -1 };
}

/**
 * Parses StatsTrack text ("key=value" pairs separated by "," or ";"); unknown keys and values that
 * are not integers are ignored, so a hand-written limits node never breaks the server.
 */
export function parseQuotaFigures(data: Uint8Array | string): QuotaFigures {
  const figures = unsetFigures();
  const text = typeof data === "string" ? data : utf8.decode(data);
  for (const pair of text.split(/[,;]+/)) {
    const [key, value] = pair.split("=");
    if (key === undefined || !(KEYS as readonly string[]).includes(key)) continue;
    const n = value === undefined || value === "" ? -1 : Number(value);
    if (Number.isSafeInteger(n)) figures[key as keyof QuotaFigures] = n;
  }
  return figures;
}

/** ZooKeeper's StatsTrack.toString: count and bytes first, then "=" and the other keys sorted, ";"-separated. */
export function formatQuotaFigures(figures: QuotaFigures): string {
  let text = `count=${figures.count},bytes=${figures.bytes}`;
  const extra = (["byteHardLimit", "countHardLimit"] as const).filter((key) => figures[key] !== -1);
  if (extra.length > 0) text += "=" + extra.map((key) => `;${key}=${figures[key]}`).join("");
  return text;
}

export function limitsPathOf(path: string): string {
  return `${QUOTA_ROOT}${path}/${LIMITS_NODE}`;
}

export function statsPathOf(path: string): string {
  return `${QUOTA_ROOT}${path}/${STATS_NODE}`;
}

/** For a limits or stats node, the quota'd path it belongs to; undefined for any other path. */
export function quotaNodeTarget(path: string): { target: string; kind: "limits" | "stats" } | undefined {
  if (!path.startsWith(QUOTA_ROOT + "/")) return undefined;
  const slash = path.lastIndexOf("/");
  const name = path.slice(slash + 1);
  if (name !== LIMITS_NODE && name !== STATS_NODE) return undefined;
  const target = path.slice(QUOTA_ROOT.length, slash);
  if (target === "") return undefined;
  return { target, kind: name === LIMITS_NODE ? "limits" : "stats" };
}

/** Nodes in /zookeeper are never counted against a quota (ZooKeeper keeps none on its own subtree). */
export function isQuotaAccounted(path: string): boolean {
  return path !== "/zookeeper" && !path.startsWith("/zookeeper/");
}
