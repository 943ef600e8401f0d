/**
 * The client side of SASL DIGEST-MD5 (RFC 2831) as ZooKeeper's clients compute it (Java's
 * DigestMD5Client, kazoo's pure-sasl): the digest-response to a server's challenge, for tests that
 * speak SASL themselves. `overrides` replaces directives (to send a wrong one on purpose).
 */
import { createHash } from "node:crypto";
import { parseDirectives } from "../../src/common/digest-md5.js";

const md5 = (bytes: Buffer | string) => createHash("md5").update(bytes).digest();

export function digestResponse(challenge: string, user: string, password: string, overrides: Record<string, string> = {}, cnonce = "OA6MHXh6VqTrRk"): string {
  const c = parseDirectives(challenge);
  if (typeof c === "string") throw new Error(`not a challenge: ${c}`);
  const fields: Record<string, string> = {
    username: user,
    realm: c.get("realm") ?? "",
    nonce: c.get("nonce") ?? "",
    cnonce,
    nc: "00000001",
    qop: "auth",
    "digest-uri": "zookeeper/zk-sasl-md5",
    ...overrides,
  };
  const a1 = Buffer.concat([md5(`${fields.username}:${fields.realm}:${password}`), Buffer.from(`:${fields.nonce}:${fields.cnonce}`)]);
  const response = md5(
    `${md5(a1).toString("hex")}:${fields.nonce}:${fields.nc}:${fields.cnonce}:${fields.qop}:${md5(`AUTHENTICATE:${fields["digest-uri"]}`).toString("hex")}`,
  ).toString("hex");
  return Object.entries({ ...fields, response: overrides.response ?? response })
    .map(([k, v]) => `${k}="${v}"`)
    .join(",");
}
