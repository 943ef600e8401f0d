/**
 * What both sides of SASL DIGEST-MD5 (RFC 2831) compute alike, as ZooKeeper runs it (protocol
 * "zookeeper", server name "zk-sasl-md5", quality of protection `auth`): the `name=value`
 * directives of a challenge or response, and the response-value that proves the password — the
 * client's `response` and the server's `rspauth`. Pure: no randomness, no I/O.
 */
import { createHash } from "node:crypto";

/** ZooKeeper's SASL protocol name: the service part of the digest-uri. */
export const DIGEST_MD5_PROTOCOL = "zookeeper";
/** ZooKeeper's fixed host part of the digest-uri, and the one realm its server offers. */
export const DIGEST_MD5_SERVER_NAME = "zk-sasl-md5";
/** Directives one challenge or response may carry; RFC 2831 defines twelve. */
const DIRECTIVES_MAX = 32;

/** What the response-value is computed from. Text fields are characters; `raw` ones are the bytes sent, as ISO 8859-1. */
export interface DigestInputs {
  username: string;
  realm: string;
  password: string;
  /** charset=utf-8 was in force (text is then hashed as RFC 2831 2.1.2.1 says). */
  utf8: boolean;
  rawNonce: string;
  rawCnonce: string;
  rawNc: string;
  rawQop: string;
  rawDigestUri: string;
  /** undefined: no authzid directive. */
  rawAuthzid: string | undefined;
}

/**
 * RFC 2831 2.1.2.1's response-value in lower-case hex: with `a2Prefix` "AUTHENTICATE" the client's
 * `response`, with "" the server's `rspauth`.
 */
export function digestResponseValue(inputs: DigestInputs, a2Prefix: "AUTHENTICATE" | ""): string {
  const { username, realm, password, utf8, rawNonce, rawCnonce, rawNc, rawQop, rawDigestUri, rawAuthzid } = inputs;
  const a1 = Buffer.concat([
    md5(Buffer.concat([textBytes(username, utf8), Buffer.from(":"), textBytes(realm, utf8), Buffer.from(":"), textBytes(password, utf8)])),
    Buffer.from(`:${rawNonce}:${rawCnonce}`, "latin1"),
    rawAuthzid === undefined ? Buffer.alloc(0) : Buffer.from(`:${rawAuthzid}`, "latin1"),
  ]);
  const a2 = `${a2Prefix}:${rawDigestUri}`;
  return hex(md5(Buffer.from(`${hex(md5(a1))}:${rawNonce}:${rawNc}:${rawCnonce}:${rawQop}:${hex(md5(Buffer.from(a2, "latin1")))}`, "latin1")));
}

/**
 * A digest-response's `name=value` directives (RFC 2831 7.1: values tokens or quoted strings,
 * commas with optional white space between, empty elements allowed); a string saying what is
 * wrong otherwise. A directive may appear once.
 */
export function parseDirectives(text: string): Map<string, string> | string {
  const directives = new Map<string, string>();
  let i = 0;
  const skipSpace = () => {
    while (i < text.length && /[ \t\r\n]/.test(text[i]!)) i += 1;
  };
  for (;;) {
    skipSpace();
    while (text[i] === ",") {
      i += 1;
      skipSpace();
    }
    if (i >= text.length) return directives;
    const nameStart = i;
    while (i < text.length && /[!#$%&'*+\-.^_`|~0-9A-Za-z]/.test(text[i]!)) i += 1;
    const name = text.slice(nameStart, i).toLowerCase();
    if (name === "") return `unexpected ${JSON.stringify(text[i])} at ${i}`;
    skipSpace();
    if (text[i] !== "=") return `no "=" after ${name}`;
    i += 1;
    skipSpace();
    let value = "";
    if (text[i] === '"') {
      i += 1;
      for (;;) {
        if (i >= text.length) return `unterminated value of ${name}`;
        const c = text[i]!;
        if (c === '"') break;
        if (c === "\\") i += 1;
        if (i >= text.length) return `unterminated value of ${name}`;
        value += text[i];
        i += 1;
      }
      i += 1;
    } else {
      const valueStart = i;
      while (i < text.length && text[i] !== "," && !/[ \t\r\n]/.test(text[i]!)) i += 1;
      value = text.slice(valueStart, i);
    }
    if (directives.has(name)) return `${name} appears twice`;
    if (directives.size >= DIRECTIVES_MAX) return "too many directives";
    directives.set(name, value);
    skipSpace();
    if (i < text.length && text[i] !== ",") return `unexpected ${JSON.stringify(text[i])} after ${name}`;
  }
}

/**
 * RFC 2831 2.1.2.1: with charset=utf-8, a string whose characters all fit ISO 8859-1 is hashed in
 * ISO 8859-1, any other in UTF-8; without it, ISO 8859-1 (as Java's stringToByte_8859_1).
 */
function textBytes(text: string, useUtf8: boolean): Buffer {
  // eslint-disable-next-line no-control-regex -- the test is for code points above U+00FF
  if (useUtf8 && /[^\u0000-\u00ff]/.test(text)) return Buffer.from(text, "utf8");
  return Buffer.from(text, "latin1");
}

/** `text` as a quoted-string, `"` and `\\` escaped. */
export function quoted(text: string): string {
  return `"${text.replace(/(["\\])/g, "\\$1")}"`;
}

function md5(bytes: Uint8Array): Buffer {
  return createHash("md5").update(bytes).digest();
}

function hex(bytes: Buffer): string {
  return bytes.toString("hex");
}
