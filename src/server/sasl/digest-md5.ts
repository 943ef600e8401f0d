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
import { timingSafeEqual } from "node:crypto";
import { digestResponseValue, parseDirectives, quoted } from "../../common/digest-md5.js";
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
    const inputs = {
      username,
      realm,
      password,
      utf8: utf8 !== undefined,
      rawNonce: nonce,
      rawCnonce: cnonce,
      rawNc: nc,
      rawQop: qop,
      rawDigestUri: raw.get("digest-uri")!,
      rawAuthzid: raw.get("authzid"),
    };
    const expected = Buffer.from(digestResponseValue(inputs, "AUTHENTICATE"), "latin1");
    const given = Buffer.from(response.toLowerCase(), "latin1");
    if (given.byteLength !== expected.byteLength || !timingSafeEqual(given, expected)) return saslFailure(`wrong response digest for user ${username}`);
    return {
      kind: "complete",
      token: Buffer.from(`rspauth=${digestResponseValue(inputs, "")}`, "latin1"),
      authenticationId: username,
      authorizationId: authzid ?? username,
    };
  }
}
