/**
 * Authentication of a connection (ZooKeeper's auth packet and its `digest` / `ip` / `x509`
 * providers): the ids a connection starts with, and what `addAuthInfo(scheme, auth)` adds to the
 * connection it arrives on. Unlike ZooKeeper, a failed attempt only answers AUTHFAILED: the
 * connection and its session go on as before.
 */
import { limits } from "../common/constants.js";
import { generateDigest } from "../common/digest.js";
import type { Id } from "../common/znode.js";
import { SUPER_ID } from "./acl.js";

const utf8 = new TextDecoder();

export interface AuthOptions {
  /**
   * ZooKeeper's zookeeper.DigestAuthenticationProvider.superDigest, "super:<base64 sha1>": a digest
   * authentication that hashes to it also makes the connection the super user. "" = none.
   */
  superDigest: string;
}

/**
 * ZooKeeper's zookeeper.X509AuthenticationProvider.superUser: a client certificate whose subject
 * is this DN (as x509 ids spell it) also makes the connection the super user. "" = none.
 */
export interface CertificateAuthOptions {
  x509SuperUser: string;
}

/**
 * The ids a client certificate the server verified gives its connection (X509AuthenticationProvider
 * .handleAuthentication): `super:<dn>` first when the DN is the configured super user, then
 * `x509:<dn>`. None for a DN longer than `limits.authBytesMax` (an id must fit a forwarded write).
 */
export function certificateAuthIds(subjectDn: string, options: CertificateAuthOptions): readonly Id[] {
  if (new TextEncoder().encode(subjectDn).byteLength > limits.authBytesMax) return [];
  const ids: Id[] = [];
  if (options.x509SuperUser !== "" && subjectDn === options.x509SuperUser) ids.push({ scheme: SUPER_ID.scheme, id: subjectDn });
  ids.push({ scheme: "x509", id: subjectDn });
  return ids;
}

/**
 * The ids an auth attempt adds, or undefined for AUTHFAILED: an unknown scheme, or more bytes than
 * `limits.authBytesMax`.
 * `remoteAddress` is the connection's client address, which is all `ip` authentication proves;
 * `certificateIds` what its verified client certificate gave it, which is all `x509` proves
 * (AUTHFAILED without one, whatever the packet holds).
 */
export function authenticate(
  scheme: string,
  auth: Uint8Array,
  remoteAddress: string,
  options: AuthOptions,
  certificateIds: readonly Id[] = [],
): Id[] | undefined {
  if (auth.byteLength > limits.authBytesMax) return undefined;
  switch (scheme) {
    case "digest": {
      // Credentials without a colon are hashed all the same, as ZooKeeper does ("blah" → "blah:<hash>").
      const digest = generateDigest(utf8.decode(auth));
      const ids: Id[] = [];
      if (options.superDigest !== "" && digest === options.superDigest) ids.push(SUPER_ID);
      ids.push({ scheme: "digest", id: digest });
      return ids;
    }
    case "ip":
      return remoteAddress === "" ? undefined : [{ scheme: "ip", id: remoteAddress }];
    case "x509":
      return certificateIds.length === 0 ? undefined : [...certificateIds];
    default:
      return undefined;
  }
}

/**
 * The ids a new connection starts with: its `ip` id, as every ZooKeeper ServerCnxn, then those of
 * its verified client certificate (certificateAuthIds), as ZooKeeper's secure port adds them
 * once the TLS handshake is done.
 */
export function initialAuthInfo(remoteAddress: string, certificateIds: readonly Id[] = []): readonly Id[] {
  return [...(remoteAddress === "" ? [] : [{ scheme: "ip", id: remoteAddress }]), ...certificateIds];
}

/**
 * The client address in a gRPC peer string ("address:port", the address unbracketed, or
 * "unknown"), as ZooKeeper's getHostAddress shows it; "" when unknown. An IPv4 client reaching an
 * IPv6 socket shows as "::ffff:a.b.c.d", which Java reports as a.b.c.d.
 */
export function remoteAddressOfPeer(peer: string): string {
  const withPort = /^(.+):\d+$/.exec(peer);
  if (!withPort) return "";
  const address = withPort[1]!;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1]! : address;
}

/**
 * `current` plus `added`, without duplicates (ZooKeeper keeps a connection's ids as a set), or
 * undefined when that would exceed `limits.authIdsPerConnectionMax`.
 */
export function withAuthIds(current: readonly Id[], added: readonly Id[]): readonly Id[] | undefined {
  const next = [...current];
  for (const id of added) if (!next.some((known) => known.scheme === id.scheme && known.id === id.id)) next.push(id);
  return next.length > limits.authIdsPerConnectionMax ? undefined : next;
}

/**
 * ZooKeeper's enforce.auth.enabled / enforce.auth.schemes (AuthenticationHelper): with `schemes`
 * non-empty, a connection must hold an id of one of them before any request but `auth` and `sasl`
 * packets; its first other packet is answered SESSIONCLOSEDREQUIRESASLAUTH and the connection
 * closes. (Every connection holds its `ip` id, so listing `ip` lets everyone in, as in ZooKeeper.)
 */
export function authenticationMissing(authInfo: readonly Id[], enforcedSchemes: ReadonlySet<string>): boolean {
  return enforcedSchemes.size > 0 && !authInfo.some((id) => enforcedSchemes.has(id.scheme));
}
