/**
 * The server side of SASL DIGEST-MD5 (RFC 2831) as ZooKeeper runs it (Java's DigestMD5Server
 * created for protocol "zookeeper" and server name "zk-sasl-md5", default properties): quality of
 * protection `auth` only, one realm (the server name), the md5-sess algorithm, UTF-8 offered.
 *
 *   1. the client's empty initial token → the challenge: realm, nonce, qop, charset, algorithm;
 *   2. its digest-response → checked (nonce, nc 1, realm, digest-uri, qop, the response digest
 *      against the user's password) and answered with `rspauth`, the proof the server knows it.
 *
 * Anything else, in any order or size, is a SaslFailure. Pure given its nonce source: no clock,
 * no randomness of its own.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { saslFailure, type SaslMechanismServer, type SaslStep } from "./mechanism.js";

export interface DigestMd5Options {
  /** "zookeeper" */
  protocol: string;
  /** "zk-sasl-md5": ZooKeeper's fixed host part of the digest-uri, and the one realm offered. */
  serverName: string;
  /** The user's password (a JAAS `user_<name>` option), undefined for an unknown user. */
  passwordOf(user: string): string | undefined;
  /** Fresh random bytes for the nonce (the server's entropy). */
  nonceBytes(count: number): Uint8Array;
}

/** Java's DigestMD5Server refuses a response longer than this. */
export const DIGEST_RESPONSE_BYTES_MAX = 4096;
/** Java's nonce: 30 random bytes, base64 (40 characters). */
const NONCE_BYTES = 30;
/** Directives one response may carry; RFC 2831 defines twelve. */
const DIRECTIVES_MAX = 32;

type State = { at: "start" } | { at: "challenged"; nonce: string } | { at: "done" };

export class DigestMd5Server implements SaslMechanismServer {
  readonly name = "DIGEST-MD5";
  private state: State = { at: "start" };

  constructor(private readonly options: DigestMd5Options) {}

  evaluate(token: Uint8Array): Promise<SaslStep> {
    return Promise.resolve(this.step(token));
  }

  dispose(): void {
    this.state = { at: "done" };
  }

  /** The same step, synchronously. */
  step(token: Uint8Array): SaslStep {
    const state = this.state;
    this.state = { at: "done" };
    switch (state.at) {
      case "start":
        if (token.byteLength !== 0) return saslFailure("DIGEST-MD5 must not have an initial response");
        return this.challenge();
      case "challenged":
        return this.verify(token, state.nonce);
      case "done":
        return saslFailure("DIGEST-MD5 exchange already over");
    }
  }

  private challenge(): SaslStep {
    const nonce = Buffer.from(this.options.nonceBytes(NONCE_BYTES)).toString("base64");
    this.state = { at: "challenged", nonce };
    const realm = quoted(this.options.serverName);
    return { kind: "continue", token: Buffer.from(`realm=${realm},nonce="${nonce}",qop="auth",charset=utf-8,algorithm=md5-sess`, "latin1") };
  }

  private verify(token: Uint8Array, nonce: string): SaslStep {
    if (token.byteLength > DIGEST_RESPONSE_BYTES_MAX) return saslFailure(`digest-response of ${token.byteLength} bytes`);
    const raw = parseDirectives(Buffer.from(token).toString("latin1"));
    if (typeof raw === "string") return saslFailure(`malformed digest-response: ${raw}`);
    const utf8 = raw.get("charset");
    if (utf8 !== undefined && utf8.toLowerCase() !== "utf-8") return saslFailure(`charset ${utf8}`);
    // Values are bytes: UTF-8 text when the client said so, ISO 8859-1 otherwise (RFC 2831 2.1.2).
    const value = (name: string): string | undefined => {
      const text = raw.get(name);
      return text === undefined || utf8 === undefined ? text : Buffer.from(text, "latin1").toString("utf8");
    };
    const username = value("username");
    const realm = value("realm") ?? "";
    const cnonce = raw.get("cnonce");
    const nc = raw.get("nc");
    const qop = raw.get("qop") ?? "auth";
    const digestUri = value("digest-uri");
    const response = raw.get("response");
    const authzid = value("authzid");
    if (username === undefined || cnonce === undefined || nc === undefined || digestUri === undefined || response === undefined) {
      return saslFailure("digest-response lacks username, cnonce, nc, digest-uri or response");
    }
    if (raw.get("nonce") !== nonce) return saslFailure("nonce mismatch");
    if (nc !== "00000001") return saslFailure(`nonce-count ${nc}`);
    if (qop !== "auth") return saslFailure(`qop ${qop} not offered`);
    if (realm !== this.options.serverName) return saslFailure(`realm ${realm} not offered`);
    const slash = digestUri.indexOf("/");
    const uriService = digestUri.slice(0, slash);
    const uriHost = digestUri.slice(slash + 1).split("/")[0] ?? "";
    if (slash < 0 || uriService !== this.options.protocol || uriHost.toLowerCase() !== this.options.serverName.toLowerCase()) {
      return saslFailure(`digest-uri ${digestUri}`);
    }
    const password = this.options.passwordOf(username);
    if (password === undefined) return saslFailure(`no password for user ${username}`);
    const useUtf8 = utf8 !== undefined;
    const a1 = Buffer.concat([
      md5(Buffer.concat([textBytes(username, useUtf8), Buffer.from(":"), textBytes(realm, useUtf8), Buffer.from(":"), textBytes(password, useUtf8)])),
      Buffer.from(`:${nonce}:${cnonce}`, "latin1"),
      authzid === undefined ? Buffer.alloc(0) : Buffer.from(`:${raw.get("authzid")!}`, "latin1"),
    ]);
    const rawCnonce = raw.get("cnonce")!;
    const digest = (a2: string) => hex(md5(Buffer.from(`${hex(md5(a1))}:${nonce}:${nc}:${rawCnonce}:${qop}:${hex(md5(Buffer.from(a2, "latin1")))}`, "latin1")));
    const rawUri = raw.get("digest-uri")!;
    const expected = Buffer.from(digest(`AUTHENTICATE:${rawUri}`), "latin1");
    const given = Buffer.from(response.toLowerCase(), "latin1");
    if (given.byteLength !== expected.byteLength || !timingSafeEqual(given, expected)) return saslFailure(`wrong response digest for user ${username}`);
    return {
      kind: "complete",
      token: Buffer.from(`rspauth=${digest(`:${rawUri}`)}`, "latin1"),
      authenticationId: username,
      authorizationId: authzid ?? username,
    };
  }
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

function quoted(text: string): string {
  return `"${text.replace(/(["\\])/g, "\\$1")}"`;
}

function md5(bytes: Uint8Array): Buffer {
  return createHash("md5").update(bytes).digest();
}

function hex(bytes: Buffer): string {
  return bytes.toString("hex");
}
