/**
 * ACL decisions as ZooKeeper 3.8 makes them: ZooKeeperServer.checkACL, PrepRequestProcessor.fixupACL,
 * the `ip` and `digest` providers' isValid / matches, and the digest redaction of getACL. Pure
 * functions of their arguments: the ids a request is checked with are an input of the request (the
 * connection's, carried to the leader with a forwarded write), so prep stays deterministic.
 *
 * The server knows the schemes ZooKeeper registers by default: `ip` and `digest` authenticate and
 * match; `world:anyone` matches everyone; `auth` exists only in a request, expanded to the caller's
 * authenticated ids; a session holding the `super` id passes every check. And `x509`, ZooKeeper's
 * X509AuthenticationProvider, always registered here: a connection whose client certificate the
 * server verified holds `x509:<subject DN>`, which matches an entry with exactly that DN. And
 * `sasl`, ZooKeeper's SASLAuthenticationProvider, also always registered: a connection that
 * completed a SASL exchange holds `sasl:<authorized id>`; an entry matches that id, and a
 * `sasl:super` id matches every `sasl` entry, as in ZooKeeper. Registering it whatever the
 * configuration keeps prep's verdict on a `sasl` ACL the same on every server.
 */
import { ZkError } from "../common/errors.js";
import { Perms, type Acl, type Id } from "../common/znode.js";
import { parseKerberosName } from "./kerberos-name.js";
import { isValidDistinguishedName } from "./x509-name.js";
import { zookeeperIdOrder } from "./zookeeper-id-order.js";

/** Schemes whose ids an `auth` ACL entry expands to (the providers whose isAuthenticated is true). */
const AUTHENTICATED_SCHEMES: ReadonlySet<string> = new Set(["digest", "x509", "sasl"]);

/** The id of a session authenticated as the configured super user. */
export const SUPER_ID: Id = Object.freeze({ scheme: "super", id: "" });

/** Whether ids `authInfo` may do what `perm` (a Perms bit set) names on a node whose ACL is `acl`. */
export function permits(acl: readonly Acl[], perm: number, authInfo: readonly Id[]): boolean {
  // ZooKeeper lets anyone touch a node that has no ACL at all.
  if (acl.length === 0) return true;
  for (const id of authInfo) if (id.scheme === SUPER_ID.scheme) return true;
  for (const entry of acl) {
    if ((entry.perms & perm) === 0) continue;
    const { scheme, id } = entry.id;
    if (scheme === "world" && id === "anyone") return true;
    for (const authId of authInfo) {
      if (authId.scheme !== scheme) continue;
      if ((scheme === "digest" || scheme === "x509") && authId.id === id) return true;
      if (scheme === "ip" && ipMatches(authId.id, id)) return true;
      if (scheme === "sasl" && (authId.id === id || authId.id === "super")) return true;
    }
  }
  return false;
}

/** Throws ZkError NOAUTH unless `permits(acl, perm, authInfo)`. */
export function checkAcl(acl: readonly Acl[], perm: number, authInfo: readonly Id[], path: string): void {
  if (!permits(acl, perm, authInfo)) throw new ZkError("NOAUTH", undefined, path);
}

/**
 * ZooKeeper's fixupACL: the ACL a create or setACL stores. Duplicates are dropped, `auth` entries
 * become one entry per authenticated (`digest`, `x509` or `sasl`) id of the caller (INVALIDACL when it has
 * none: an `ip` or `super` id does not count), and every other entry must name a known scheme with a well-formed id. An empty list is
 * INVALIDACL (a create that gives none gets the open ACL before this is reached).
 */
export function fixupAcl(acl: readonly Acl[], authInfo: readonly Id[], path: string): Acl[] {
  const unique = withoutDuplicates(acl);
  if (unique.length === 0) throw new ZkError("INVALIDACL", "an ACL list must not be empty", path);
  const fixed: Acl[] = [];
  for (const entry of unique) {
    if (!Number.isInteger(entry.perms) || entry.perms < 0 || entry.perms > Perms.ALL) {
      throw new ZkError("INVALIDACL", `bad permissions ${entry.perms}`, path);
    }
    const { scheme, id } = entry.id;
    if (scheme === "world" && id === "anyone") {
      fixed.push(entry);
    } else if (scheme === "auth") {
      // In the order ZooKeeper iterates a connection's ids, so the stored ACL reads back the same.
      const authenticated = zookeeperIdOrder(authInfo).filter((authId) => AUTHENTICATED_SCHEMES.has(authId.scheme));
      if (authenticated.length === 0) throw new ZkError("INVALIDACL", "an auth ACL needs an authenticated session", path);
      for (const authId of authenticated) fixed.push({ perms: entry.perms, id: { scheme: authId.scheme, id: authId.id } });
    } else if (isValidId(scheme, id)) {
      fixed.push(entry);
    } else {
      throw new ZkError("INVALIDACL", `invalid ACL id ${scheme}:${id}`, path);
    }
  }
  return fixed;
}

/** Whether an ACL may name `scheme:id` (only schemes with a provider; world only as world:anyone). */
export function isValidId(scheme: string, id: string): boolean {
  switch (scheme) {
    case "digest":
      return javaSplitCount(id, ":") === 2;
    case "ip":
      return parseIpExpression(id) !== undefined;
    case "x509":
      return isValidDistinguishedName(id);
    case "sasl":
      return parseKerberosName(id) !== undefined;
    default:
      return false;
  }
}

/**
 * ZooKeeper's IPAuthenticationProvider.matches: `remote` (an address) against `aclExpr`
 * ("a.b.c.d" or "a.b.c.d/bits"). IPv4 only, as in ZooKeeper 3.8: an IPv6 address matches nothing.
 */
export function ipMatches(remote: string, aclExpr: string): boolean {
  const expression = parseIpExpression(aclExpr);
  const address = parseIpv4(remote);
  if (expression === undefined || address === undefined) return false;
  const mask = expression.bits === 0 ? 0 : (0xffffffff << (32 - expression.bits)) >>> 0;
  return (address & mask) >>> 0 === (expression.address & mask) >>> 0;
}

/**
 * What getACL shows a caller without ADMIN on the node (ZooKeeper 3.6+): digest ids keep their
 * user, the password hash becomes "x".
 */
export function redactDigests(acl: readonly Acl[]): Acl[] {
  return acl.map((entry) => (entry.id.scheme === "digest" ? { perms: entry.perms, id: { scheme: "digest", id: entry.id.id.replace(/:.*/g, ":x") } } : entry));
}

/** One entry of a whoAmI answer (ZooKeeper's ClientInfo). */
export interface ClientInfo {
  authScheme: string;
  user: string;
}

/** ZooKeeper's ClientInfo for whoAmI: the scheme and the provider's user name (digest: the user; x509: the DN; sasl: the id). */
export function clientInfoOf(id: Id): ClientInfo {
  switch (id.scheme) {
    case "digest":
      return { authScheme: id.scheme, user: id.id.split(":")[0] ?? "" };
    case "ip":
    case "x509":
    case "sasl":
      return { authScheme: id.scheme, user: id.id };
    default:
      // No provider answers for the scheme (super): ZooKeeper reports an empty user.
      return { authScheme: id.scheme, user: "" };
  }
}

/**
 * `acl` without repeated entries, first occurrences in order (ZooKeeper's removeDuplicates). In
 * linear time: a client may send tens of thousands of entries in one request (a 1 MiB frame holds
 * 40,000), and a quadratic scan of them held the event loop, and every other session, for seconds.
 */
function withoutDuplicates(acl: readonly Acl[]): Acl[] {
  const seen = new Set<string>();
  const unique: Acl[] = [];
  for (const entry of acl) {
    // JSON keeps the three fields apart whatever characters the strings hold.
    const key = JSON.stringify([entry.perms, entry.id.scheme, entry.id.id]);
    if (seen.has(key)) continue;
    seen.add(key);
    unique.push(entry);
  }
  return unique;
}

/** The length of Java's `text.split(separator)`: trailing empty parts are dropped. */
function javaSplitCount(text: string, separator: string): number {
  const parts = text.split(separator);
  while (parts.length > 0 && parts[parts.length - 1] === "") parts.pop();
  return parts.length;
}

/** "a.b.c.d" or "a.b.c.d/bits" with bits in 0..32; undefined when ZooKeeper's isValid says no. */
function parseIpExpression(text: string): { address: number; bits: number } | undefined {
  const slash = text.indexOf("/");
  const address = parseIpv4(slash < 0 ? text : text.slice(0, slash));
  if (address === undefined) return undefined;
  if (slash < 0) return { address, bits: 32 };
  const bits = parseJavaInt(text.slice(slash + 1));
  if (bits === undefined || bits < 0 || bits > 32) return undefined;
  return { address, bits };
}

/** A dotted IPv4 address as an unsigned 32-bit number; each part as Java's Integer.parseInt reads it. */
function parseIpv4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let address = 0;
  for (const part of parts) {
    const value = parseJavaInt(part);
    if (value === undefined || value < 0 || value > 255) return undefined;
    address = address * 256 + value;
  }
  return address;
}

/** Integer.parseInt's accepted forms: an optional sign and decimal digits, nothing else. */
function parseJavaInt(text: string): number | undefined {
  if (!/^[+-]?[0-9]+$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}
