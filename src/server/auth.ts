/**
 * Authentication of a connection (ZooKeeper's auth packet and its `digest` / `ip` providers): what
 * ids `addAuthInfo(scheme, auth)` adds to the connection it arrives on. Unlike ZooKeeper, a failed
 * attempt only answers AUTHFAILED: the connection and its session go on as before.
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
 * The ids an auth attempt adds, or undefined for AUTHFAILED: an unknown scheme, or more bytes than
 * `limits.authBytesMax`.
 * `remoteAddress` is the connection's client address, which is all `ip` authentication proves.
 */
export function authenticate(scheme: string, auth: Uint8Array, remoteAddress: string, options: AuthOptions): Id[] | undefined {
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
    default:
      return undefined;
  }
}

/** The ids a new connection starts with: its `ip` id, as every ZooKeeper ServerCnxn. */
export function initialAuthInfo(remoteAddress: string): readonly Id[] {
  return remoteAddress === "" ? [] : [{ scheme: "ip", id: remoteAddress }];
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

