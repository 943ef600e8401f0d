/**
 * Znode path rules, as ZooKeeper's PathUtils.validatePath applies them, and small path helpers.
 * Shared by the server and the client SDK, so it depends on nothing outside src/common.
 */
import { assert } from "./assert.js";
import { limits } from "./constants.js";
import { ZkError } from "./errors.js";

/** Digits ZooKeeper appends to a sequential node's name (`%010d`). */
export const SEQUENTIAL_SUFFIX_LENGTH = 10;

/**
 * Throws `ZkError("BADARGUMENTS", reason, path)` unless `path` is a valid znode path:
 * absolute, no empty segment, no trailing "/" but the root, no "." or ".." segment, no NUL and none
 * of the characters ZooKeeper rejects (U+0001–U+001F, U+007F–U+009F, U+D800–U+F8FF, U+FFF0–U+FFFF),
 * and at most `limits.pathLengthMax` UTF-16 code units.
 *
 * With `sequential`, the path is a prefix that the server completes with a 10-digit suffix, so it
 * is checked as ZooKeeper does (`path + "1"`): a trailing "/" is allowed ("/locks/" → "/locks/0000000007"),
 * and the length limit leaves room for the suffix.
 */
export function validatePath(path: string, sequential = false): void {
  const reason = pathProblem(path, sequential);
  if (reason !== undefined) throw new ZkError("BADARGUMENTS", `invalid path ${JSON.stringify(path)}: ${reason}`, path);
}

/** The same rules as `validatePath`, answering with the reason instead of throwing (undefined = valid). */
export function pathProblem(path: string, sequential = false): string | undefined {
  if (typeof path !== "string") return "path must be a string";
  const lengthMax = sequential ? limits.pathLengthMax - SEQUENTIAL_SUFFIX_LENGTH : limits.pathLengthMax;
  if (path.length > lengthMax) return `longer than ${lengthMax} characters`;
  // ZooKeeper validates path + "1" for sequential creates: the suffix completes the last segment.
  const length = sequential ? path.length + 1 : path.length;
  if (length === 0) return "path must not be empty";
  if (path.charCodeAt(0) !== 0x2f) return "path must start with /";
  if (length === 1) return undefined; // the root
  if (!sequential && path.charCodeAt(length - 1) === 0x2f) return "path must not end with /";

  let last = 0x2f; // "/"
  for (let i = 1; i < length; i++) {
    // Index path.length exists only when sequential: it is the "1" ZooKeeper appends.
    const c = i < path.length ? path.charCodeAt(i) : 0x31;
    if (c === 0) return `null character not allowed @${i}`;
    if (c === 0x2f && last === 0x2f) return `empty node name specified @${i}`;
    if (c === 0x2e) {
      // A segment that is exactly "." or "..".
      const segmentEnd = i + 1 === length || (i + 1 < path.length && path.charCodeAt(i + 1) === 0x2f);
      if (segmentEnd) {
        if (last === 0x2f) return `relative paths not allowed @${i}`;
        if (last === 0x2e && i >= 2 && path.charCodeAt(i - 2) === 0x2f) return `relative paths not allowed @${i}`;
      }
    } else if ((c > 0x0000 && c <= 0x001f) || (c >= 0x007f && c <= 0x009f) || (c >= 0xd800 && c <= 0xf8ff) || (c >= 0xfff0 && c <= 0xffff)) {
      return `invalid character @${i}`;
    }
    last = c;
  }
  return undefined;
}

/** "/a/b" → "/a", "/a" → "/". The root has no parent: asking for it is a bug. */
export function parentOf(path: string): string {
  const slash = path.lastIndexOf("/");
  if (slash < 0 || path.length <= 1) assert(false, `parentOf(${JSON.stringify(path)}): not a non-root absolute path`);
  return slash === 0 ? "/" : path.slice(0, slash);
}

/** "/a/b" → "b", "/" → "". */
export function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/** joinPath("/", "a") → "/a", joinPath("/a", "b") → "/a/b". */
export function joinPath(parent: string, child: string): string {
  return parent === "/" ? "/" + child : parent + "/" + child;
}

/** Whether `path` is "/zookeeper" or below it: ZooKeeper's reserved subtree. */
export function isReservedPath(path: string): boolean {
  return path === "/zookeeper" || path.startsWith("/zookeeper/");
}
