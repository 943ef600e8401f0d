/**
 * ZooKeeper connect strings ("h1:p1,h2:p2/optional/chroot") and the chroot mapping between the
 * paths a user sees and the paths the server sees.
 */
import { ZkError } from "../common/errors.js";
import { validatePath } from "../common/paths.js";

/** Port used when a host names none, as ZooKeeper does. */
export const DEFAULT_PORT = 2181;

export interface HostPort {
  host: string;
  port: number;
}

export interface ConnectString {
  hosts: HostPort[];
  /** Absent when the string has no chroot (or the chroot is "/"). */
  chroot: string | undefined;
}

function bad(connectString: string, why: string): ZkError {
  return new ZkError("BADARGUMENTS", `invalid connect string ${JSON.stringify(connectString)}: ${why}`);
}

function parsePort(text: string, connectString: string): number {
  if (!/^[0-9]{1,5}$/.test(text)) throw bad(connectString, `bad port ${JSON.stringify(text)}`);
  const port = Number(text);
  if (port < 1 || port > 65535) throw bad(connectString, `port ${port} out of range`);
  return port;
}

function parseHost(entry: string, connectString: string): HostPort {
  const trimmed = entry.trim();
  if (trimmed === "") throw bad(connectString, "empty host");
  if (trimmed.startsWith("[")) {
    // IPv6 literal: [::1]:2181 or [::1]
    const close = trimmed.indexOf("]");
    if (close < 0) throw bad(connectString, `unterminated IPv6 address in ${JSON.stringify(trimmed)}`);
    const host = trimmed.slice(1, close);
    if (host === "") throw bad(connectString, "empty host");
    const rest = trimmed.slice(close + 1);
    if (rest === "") return { host, port: DEFAULT_PORT };
    if (!rest.startsWith(":")) throw bad(connectString, `unexpected ${JSON.stringify(rest)} after IPv6 address`);
    return { host, port: parsePort(rest.slice(1), connectString) };
  }
  const colon = trimmed.lastIndexOf(":");
  if (colon < 0) return { host: trimmed, port: DEFAULT_PORT };
  const host = trimmed.slice(0, colon);
  if (host === "") throw bad(connectString, "empty host");
  if (host.includes(":")) throw bad(connectString, `IPv6 addresses need brackets: ${JSON.stringify(trimmed)}`);
  return { host, port: parsePort(trimmed.slice(colon + 1), connectString) };
}

/** Parses "host[:port][,host[:port]]*[/chroot]". Throws ZkError BADARGUMENTS on anything else. */
export function parseConnectString(connectString: string): ConnectString {
  if (typeof connectString !== "string" || connectString.trim() === "") throw bad(String(connectString), "empty");
  const slash = connectString.indexOf("/");
  const hostPart = slash < 0 ? connectString : connectString.slice(0, slash);
  let chroot: string | undefined;
  if (slash >= 0) {
    const root = connectString.slice(slash);
    if (root !== "/") {
      try {
        validatePath(root);
      } catch (err) {
        throw bad(connectString, `bad chroot: ${(err as Error).message}`);
      }
      chroot = root;
    }
  }
  const hosts = hostPart.split(",").map((entry) => parseHost(entry, connectString));
  return { hosts, chroot };
}

/** The server's path for a user path (already validated). */
export function prependChroot(chroot: string | undefined, clientPath: string): string {
  if (chroot === undefined) return clientPath;
  // ZooKeeper: "/" under a chroot is the chroot itself.
  return clientPath.length === 1 ? chroot : chroot + clientPath;
}

/** The user's path for a server path; paths outside the chroot are passed through unchanged. */
export function stripChroot(chroot: string | undefined, serverPath: string): string {
  if (chroot === undefined) return serverPath;
  if (serverPath === chroot) return "/";
  if (serverPath.length > chroot.length && serverPath.startsWith(chroot) && serverPath.charCodeAt(chroot.length) === 47 /* / */) {
    return serverPath.slice(chroot.length);
  }
  return serverPath;
}

/** The address gRPC dials: host:port, an IPv6 literal in brackets. */
export function hostAddress(host: HostPort): string {
  return host.host.includes(":") ? `[${host.host}]:${host.port}` : `${host.host}:${host.port}`;
}

/** Fisher–Yates shuffle into a new array; `random` in [0, 1) is the caller's, so that this module stays deterministic. */
export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = items.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const tmp = out[i] as T;
    out[i] = out[j] as T;
    out[j] = tmp;
  }
  return out;
}
