/**
 * JSON text with 64-bit integers written exactly: ZooKeeper's admin commands print session ids and
 * zxids as JSON numbers (Java longs), and JSON.stringify can neither take a bigint nor keep a
 * number above 2^53 exact. Here a bigint is written as its decimal digits; everything else as
 * JSON.stringify would (NaN and infinities as null, undefined properties left out), indented by
 * two spaces as ZooKeeper's pretty printer does.
 */
export function toJson(value: unknown, indent = ""): string {
  if (typeof value === "bigint") return value.toString();
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return `[\n${value.map((item) => inner + toJson(item === undefined ? null : item, inner)).join(",\n")}\n${indent}]`;
  }
  const entries = Object.entries(value as Record<string, unknown>).filter(([, item]) => item !== undefined && typeof item !== "function");
  if (entries.length === 0) return "{}";
  return `{\n${entries.map(([key, item]) => `${inner}${JSON.stringify(key)} : ${toJson(item, inner)}`).join(",\n")}\n${indent}}`;
}
