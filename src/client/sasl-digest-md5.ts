/**
 * The client side of SASL DIGEST-MD5 (RFC 2831) as ZooKeeper's Java client runs it (DigestMD5Client
 * for protocol "zookeeper" and server name "zk-sasl-md5", the user as authorization id):
 *
 *   1. an empty initial response (the mechanism has none);
 *   2. the server's challenge → the digest-response: the realm offered, the server's nonce, a fresh
 *      cnonce, nc 1, qop `auth`, and the digest of the password;
 *   3. the server's `rspauth` → checked, which authenticates the server; the exchange is complete.
 *
 * Anything else from the server — a challenge without a nonce or `auth`, another algorithm, a
 * wrong rspauth, a token too long — rejects, and the session's login fails.
 */
import { DIGEST_MD5_SERVER_NAME, digestResponseValue, parseDirectives, quoted, type DigestInputs } from "../common/digest-md5.js";
import type { SaslClientMechanism, SaslClientStep } from "./sasl-mechanism.js";

/** RFC 2831 2.1.1: a challenge is at most 2048 bytes. */
const CHALLENGE_BYTES_MAX = 2048;
/** Java's default javax.security.sasl.maxbuffer, said in the response. */
const MAX_BUFFER = 65536;

type State = { at: "start" } | { at: "initial-sent" } | { at: "response-sent"; inputs: DigestInputs } | { at: "done" };

export class DigestMd5Client implements SaslClientMechanism {
  readonly name = "DIGEST-MD5";
  private state: State = { at: "start" };

  constructor(
    private readonly username: string,
    private readonly password: string,
    /** The service part of the digest-uri. */
    private readonly protocol: string,
    private readonly cnonce: () => string,
  ) {}

  evaluate(challenge: Uint8Array | null): Promise<SaslClientStep> {
    try {
      return Promise.resolve(this.step(challenge));
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  dispose(): void {
    this.state = { at: "done" };
  }

  private step(challenge: Uint8Array | null): SaslClientStep {
    const state = this.state;
    this.state = { at: "done" };
    switch (state.at) {
      case "start":
        if (challenge !== null) throw new Error("DIGEST-MD5 starts with its initial response");
        this.state = { at: "initial-sent" };
        return { token: new Uint8Array(0), complete: false };
      case "initial-sent":
        return this.respond(challenge);
      case "response-sent":
        return this.checkRspauth(challenge, state.inputs);
      case "done":
        throw new Error("DIGEST-MD5 exchange already over");
    }
  }

  private respond(challenge: Uint8Array | null): SaslClientStep {
    if (challenge === null || challenge.byteLength === 0) throw new Error("the server sent no DIGEST-MD5 challenge");
    if (challenge.byteLength > CHALLENGE_BYTES_MAX) throw new Error(`a DIGEST-MD5 challenge of ${challenge.byteLength} bytes`);
    const directives = parseDirectives(Buffer.from(challenge).toString("latin1"));
    if (typeof directives === "string") throw new Error(`malformed DIGEST-MD5 challenge: ${directives}`);
    const nonce = directives.get("nonce");
    if (nonce === undefined) throw new Error("the DIGEST-MD5 challenge has no nonce");
    const qops = (directives.get("qop") ?? "auth").split(",").map((qop) => qop.trim());
    if (!qops.includes("auth")) throw new Error(`the server offers qop ${qops.join(",")}, not auth`);
    if (directives.get("algorithm") !== "md5-sess") throw new Error(`DIGEST-MD5 algorithm ${directives.get("algorithm") ?? "(none)"}`);
    const utf8 = directives.get("charset")?.toLowerCase() === "utf-8";
    // Text travels as UTF-8 when the server said it reads it, else ISO 8859-1 (RFC 2831 2.1.2).
    const wire = (text: string): string => (utf8 ? Buffer.from(text, "utf8").toString("latin1") : text);
    const realm = directives.get("realm") === undefined ? "" : Buffer.from(directives.get("realm")!, "latin1").toString(utf8 ? "utf8" : "latin1");
    const digestUri = `${this.protocol}/${DIGEST_MD5_SERVER_NAME}`;
    const inputs: DigestInputs = {
      username: this.username,
      realm,
      password: this.password,
      utf8,
      rawNonce: nonce,
      rawCnonce: this.cnonce(),
      rawNc: "00000001",
      rawQop: "auth",
      rawDigestUri: digestUri,
      rawAuthzid: wire(this.username),
    };
    const fields = [
      ...(utf8 ? ["charset=utf-8"] : []),
      `username=${quoted(wire(this.username))}`,
      `realm=${quoted(wire(realm))}`,
      `nonce=${quoted(nonce)}`,
      `nc=${inputs.rawNc}`,
      `cnonce=${quoted(inputs.rawCnonce)}`,
      `digest-uri=${quoted(digestUri)}`,
      `maxbuf=${MAX_BUFFER}`,
      `response=${digestResponseValue(inputs, "AUTHENTICATE")}`,
      `qop=auth`,
      `authzid=${quoted(inputs.rawAuthzid!)}`,
    ];
    this.state = { at: "response-sent", inputs };
    return { token: Buffer.from(fields.join(","), "latin1"), complete: false };
  }

  private checkRspauth(token: Uint8Array | null, inputs: DigestInputs): SaslClientStep {
    if (token === null || token.byteLength === 0 || token.byteLength > CHALLENGE_BYTES_MAX) throw new Error("the server sent no rspauth");
    const directives = parseDirectives(Buffer.from(token).toString("latin1"));
    if (typeof directives === "string") throw new Error(`malformed rspauth: ${directives}`);
    if (directives.get("rspauth") !== digestResponseValue(inputs, "")) throw new Error("the server's rspauth is wrong: it does not know the password");
    return { token: null, complete: true };
  }
}
