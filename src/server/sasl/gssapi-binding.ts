/**
 * The acceptor side of the system's GSS-API (src/common/gssapi-library.ts): credentials from the
 * JAAS Server section's keytab, and a security context accepted token by token whose peer is the
 * client's principal.
 */
import { GssCredential, gssFailure, GssSecurityContext, inputBuffer, isGssError, outputBuffer, takeBuffer } from "../../common/gssapi-library.js";

/** Acceptor credentials for `principal` from `keyTab`; throws GssError when the keytab has no key for it (or cannot be read). */
export function acceptorCredential(principal: string, keyTab: string): GssCredential {
  return GssCredential.acquireNow(principal, "accept", { keytab: keyTab });
}

/** One security context being accepted, then used to wrap and unwrap. */
export class AcceptorContext extends GssSecurityContext {
  constructor(private readonly credential: GssCredential) {
    super();
  }

  /** One token of the client's; `peer` once the context is established. Rejects with GssError. */
  step(token: Uint8Array): Promise<{ output: Uint8Array; established: boolean; peer: string | undefined }> {
    return this.using(async (gss) => {
      const source: unknown[] = [null];
      try {
        const { output, established } = await this.establishStep(gss, "gss_accept_sec_context", gss.acceptSecContext, (minor, context, out) => [
          minor,
          context,
          this.credential.current,
          inputBuffer(token),
          null,
          source,
          null,
          out,
          [0],
          null,
          null,
        ]);
        if (!established) return { output, established, peer: undefined };
        const minor = [0];
        const display = outputBuffer();
        const displayed = gss.displayName(minor, source[0], display, null) as number;
        if (isGssError(displayed)) throw gssFailure(gss, "gss_display_name", displayed, minor[0]!);
        return { output, established, peer: Buffer.from(takeBuffer(gss, display)).toString("utf8") };
      } finally {
        if (source[0] !== null) gss.releaseName([0], source);
      }
    });
  }
}
