/**
 * What `corral cluster` shows of a member's log on the terminal. Every line a member writes goes
 * to its `server.log`; the terminal gets one readable line for what a person starting a cluster
 * wants to see — role changes, the moment a member serves, warnings and errors — and anything that
 * is not a pino line at all (a crash's stack trace, say), unchanged. `--verbose` shows every line.
 */

/** pino's numeric levels. */
const WARN = 40;
const LEVEL_NAMES: Readonly<Record<number, string>> = { 40: "warning", 50: "error", 60: "fatal" };
/** Fields every pino line carries, and those the summary already says. */
const NOISE = new Set(["level", "time", "pid", "hostname", "msg", "serverId", "name"]);

export interface MemberLogSummary {
  text: string;
  /** Warnings and worse go to stderr. */
  severe: boolean;
}

/** The terminal's line for one log line of a member, or undefined when it belongs in the file only. */
export function summarizeMemberLogLine(line: string): MemberLogSummary | undefined {
  if (line.trim() === "") return undefined;
  let entry: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return { text: line, severe: false };
    entry = parsed as Record<string, unknown>;
  } catch {
    return { text: line, severe: false };
  }
  const level = typeof entry["level"] === "number" ? entry["level"] : 30;
  const msg = typeof entry["msg"] === "string" ? entry["msg"] : "";
  if (level >= WARN) return { text: `${LEVEL_NAMES[level >= 60 ? 60 : level >= 50 ? 50 : 40]}: ${msg}${details(entry)}`, severe: true };
  switch (msg) {
    case "role changed":
      return { text: describeRole(entry), severe: false };
    case "serving clients": {
      const epoch = entry["epoch"] === undefined ? "" : `, epoch ${text(entry["epoch"])}`;
      const zxid = entry["lastZxid"] === undefined ? "" : `, last zxid ${text(entry["lastZxid"])}`;
      return { text: `serving clients as ${text(entry["role"] ?? "standalone")}${epoch}${zxid}`, severe: false };
    }
    default:
      return undefined;
  }
}

function describeRole(entry: Record<string, unknown>): string {
  const role = text(entry["role"] ?? "?");
  const leader = typeof entry["leader"] === "number" && role !== "leading" ? ` ${entry["leader"]}` : "";
  const why = typeof entry["reason"] === "string" ? ` (${entry["reason"]})` : "";
  return `now ${role}${leader}${why}`;
}

/** A field of a parsed log line as text: a string as it is, anything else (a number, say) as JSON writes it. */
function text(value: unknown): string {
  return typeof value === "string" ? value : String(JSON.stringify(value));
}

/** ` key=value …` for the fields a warning carries beyond pino's own. */
function details(entry: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(entry)) {
    if (NOISE.has(key) || value === undefined) continue;
    if (key === "err" && typeof value === "object" && value !== null && "message" in value) {
      parts.push(`err=${JSON.stringify(String(value.message))}`);
      continue;
    }
    parts.push(`${key}=${typeof value === "string" ? value : JSON.stringify(value)}`);
  }
  return parts.length === 0 ? "" : ` (${parts.join(" ")})`;
}
