/**
 * How the web console shows and reads znode data and Stat: pure functions, no I/O.
 *
 * Data is shown as text when it is valid UTF-8 without control characters other than whitespace
 * (pretty-printed when it parses as a JSON object or array), else as hex; the hex view is always
 * there, cut at `HEX_BYTES_MAX`. Data typed into the page arrives as text (sent as UTF-8) or hex.
 */
import { hex64 } from "../common/hex.js";
import { ZkError } from "../common/errors.js";
import type { Stat } from "../client/types.js";

/** The most bytes the hex view shows (1 MiB of data would be a 2 MiB string). */
export const HEX_BYTES_MAX = 64 * 1024;

export interface DataView {
  size: number;
  /** The data as text, when it is text. */
  text?: string;
  /** The text pretty-printed, when it is a JSON object or array. */
  json?: string;
  hex: string;
  hexTruncated: boolean;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

export function viewOfData(data: Uint8Array): DataView {
  const shown = data.subarray(0, HEX_BYTES_MAX);
  const view: DataView = { size: data.byteLength, hex: Buffer.from(shown).toString("hex"), hexTruncated: shown.byteLength < data.byteLength };
  let text: string | undefined;
  try {
    text = strictUtf8.decode(data);
  } catch {
    return view;
  }
  // eslint-disable-next-line no-control-regex -- control characters mark binary data
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text)) return view;
  view.text = text;
  const trimmed = text.trim();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      view.json = JSON.stringify(JSON.parse(trimmed), null, 2);
    } catch {
      // Text that only looks like JSON: shown as text.
    }
  }
  return view;
}

/** Data from the page: `encoding` "text" (the default) or "hex"; anything else is BADARGUMENTS. */
export function dataFromInput(data: unknown, encoding: unknown): Uint8Array {
  if (data === undefined || data === null) return new Uint8Array(0);
  if (typeof data !== "string") throw new ZkError("BADARGUMENTS", "data must be a string");
  if (encoding === undefined || encoding === "text") return new TextEncoder().encode(data);
  if (encoding !== "hex") throw new ZkError("BADARGUMENTS", `unknown data encoding ${JSON.stringify(encoding)} (text or hex)`);
  const digits = data.replace(/\s+/g, "");
  if (digits.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(digits)) throw new ZkError("BADARGUMENTS", "hex data must be pairs of hex digits");
  return new Uint8Array(Buffer.from(digits, "hex"));
}

/** A version from the page: an integer from -1 (any) up; absent = -1. */
export function versionFromInput(version: unknown): number {
  if (version === undefined || version === null || version === "") return -1;
  const value = typeof version === "string" ? Number(version.trim()) : version;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < -1 || value > 0x7fffffff) {
    throw new ZkError("BADARGUMENTS", `version must be an integer from -1 to 2147483647, got ${JSON.stringify(version)}`);
  }
  return value;
}

/** A path from the page: a string (the SDK checks ZooKeeper's path rules and answers BADARGUMENTS). */
export function pathFromInput(path: unknown): string {
  if (typeof path !== "string" || path === "") throw new ZkError("BADARGUMENTS", "a path is required");
  return path;
}

/** Stat as JSON: 64-bit values as hex strings ("0x…"), as zkCli prints them. */
export function statJson(stat: Stat): Record<string, string | number> {
  return {
    czxid: hex64(stat.czxid),
    mzxid: hex64(stat.mzxid),
    pzxid: hex64(stat.pzxid),
    ctime: stat.ctime,
    mtime: stat.mtime,
    version: stat.version,
    cversion: stat.cversion,
    aversion: stat.aversion,
    ephemeralOwner: hex64(stat.ephemeralOwner),
    dataLength: stat.dataLength,
    numChildren: stat.numChildren,
  };
}
