/**
 * The client side of one SASL exchange on one connection (javax.security.sasl.SaslClient as
 * ZooKeeper's client drives it): the initial response, then each server token answered, until the
 * mechanism is complete. The session machine (session-machine.ts) decides when a token goes out and
 * when the exchange is over; a mechanism only computes, on the host's side of the machine, where
 * entropy (a cnonce) and the system's libraries may be used.
 */
import { ZkError } from "../common/errors.js";
import { DIGEST_MD5_PROTOCOL } from "../common/digest-md5.js";
import { DigestMd5Client } from "./sasl-digest-md5.js";
import { kerberosMechanism } from "./sasl-gssapi.js";
import type { SaslOptions } from "./types.js";

/** What the client does after evaluating a server token (or starting). */
export interface SaslClientStep {
  /** The token to send, or null for none. */
  token: Uint8Array | null;
  /** The mechanism has authenticated the server: once the answer to `token` (if any) is OK, the exchange is over. */
  complete: boolean;
}

export interface SaslClientMechanism {
  readonly name: string;
  /** `challenge` null: the initial response. Rejects with an Error saying why the exchange cannot go on. */
  evaluate(challenge: Uint8Array | null): Promise<SaslClientStep>;
  /** Frees what the mechanism holds; the connection ended. */
  dispose(): void;
}

/** A fresh mechanism for one connection to `host`; `cnonce` draws DIGEST-MD5's nonce. Throws BADARGUMENTS for options no mechanism takes. */
export function newSaslMechanism(options: SaslOptions, host: string, cnonce: () => string): SaslClientMechanism {
  switch (options.mechanism) {
    case "DIGEST-MD5":
      return new DigestMd5Client(options.username, options.password, options.serviceName ?? DIGEST_MD5_PROTOCOL, cnonce);
    case "GSSAPI":
      return kerberosMechanism(options, host);
    default:
      throw new ZkError(
        "BADARGUMENTS",
        `SASL mechanism ${JSON.stringify((options as { mechanism: unknown }).mechanism)} is not one this client speaks (DIGEST-MD5, GSSAPI)`,
      );
  }
}
