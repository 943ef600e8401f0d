/**
 * One server side of a SASL mechanism, for one connection (javax.security.sasl.SaslServer as
 * ZooKeeper drives it): each client token in, the server's answer out, until the exchange is
 * complete. Errors are values: a token the mechanism refuses is a SaslFailure.
 */

/** What one client token gets. */
export type SaslStep =
  | { kind: "continue"; token: Uint8Array }
  /** Authenticated: `token` is the last one for the client (DIGEST-MD5's rspauth), if any. */
  | { kind: "complete"; token: Uint8Array | null; authenticationId: string; authorizationId: string }
  | SaslFailure;

/** The exchange failed; `reason` is for the server's log, never for the client. */
export interface SaslFailure {
  kind: "failed";
  reason: string;
}

export interface SaslMechanismServer {
  readonly name: string;
  /** Resolves (never rejects) with what `token` gets. Called again only once the last call resolved. */
  evaluate(token: Uint8Array): Promise<SaslStep>;
  /** Frees what the mechanism holds (a GSS context); the connection ended. */
  dispose(): void;
}

export function saslFailure(reason: string): SaslFailure {
  return { kind: "failed", reason };
}
