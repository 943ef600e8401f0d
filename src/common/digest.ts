/**
 * The id a `digest` ACL names, computed as ZooKeeper's DigestAuthenticationProvider.generateDigest
 * does, so that ACLs and super-user digests made with ZooKeeper's tools work here unchanged. Shared
 * by the server (which hashes what `addAuthInfo` sends) and the SDK (which builds ACLs).
 */
import { createHash } from "node:crypto";

/**
 * `"user:password"` → `"user:" + base64(SHA-1("user:password"))`. The whole string is hashed and the
 * user is the part before the first colon (the whole string when there is none, as ZooKeeper).
 */
export function generateDigest(userPassword: string): string {
  const colon = userPassword.indexOf(":");
  const user = colon < 0 ? userPassword : userPassword.slice(0, colon);
  return `${user}:${createHash("sha1").update(userPassword, "utf8").digest("base64")}`;
}
