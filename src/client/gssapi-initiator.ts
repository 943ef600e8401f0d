/**
 * The initiator side of the system's GSS-API (src/common/gssapi-library.ts) for the SDK's SASL
 * GSSAPI login: the client's credentials as a Krb5LoginModule section names them, and a
 * security context initiated with the server token by token. Loaded only when a client logs in
 * with GSSAPI (sasl-gssapi.ts imports it on first use), so the SDK runs where koffi or MIT
 * Kerberos are missing as long as nobody asks for Kerberos.
 */
import { createHash } from "node:crypto";
import {
  GssCredential,
  GssSecurityContext,
  HOSTBASED_SERVICE_OID,
  importName,
  inputBuffer,
  KRB5_MECHANISM_OID,
  KRB5_PRINCIPAL_NAME_OID,
  oidDesc,
} from "../common/gssapi-library.js";
import type { GssInitiator, KerberosClientLogin } from "./sasl-gssapi.js";

const GSS_C_MUTUAL_FLAG = 2;
const GSS_C_CONF_FLAG = 16;
const GSS_C_INTEG_FLAG = 32;
/** Mutual authentication (the server proves it holds the service key), and the integrity the SASL layer messages need. */
const REQUESTED_FLAGS = GSS_C_MUTUAL_FLAG | GSS_C_CONF_FLAG | GSS_C_INTEG_FLAG;

/**
 * The client's credentials as Krb5LoginModule takes them: a ticket cache, a client keytab, or
 * both (MIT uses the cache's ticket and gets a new one with the keytab's key when there is none).
 * A keytab login without a ticket cache keeps its tickets in a memory cache of this process, one
 * per principal and keytab, as Java keeps them in its Subject: MIT would otherwise write them
 * into the user's default cache.
 */
export function acquireInitiatorCredential(login: KerberosClientLogin): Promise<GssCredential> {
  const store: Record<string, string> = {};
  if (login.useTicketCache && login.ticketCache !== undefined) store.ccache = `FILE:${login.ticketCache}`;
  if (login.useKeyTab) {
    if (login.keyTab !== undefined) store.client_keytab = login.keyTab;
    if (!login.useTicketCache) store.ccache = `MEMORY:corral-${createHash("sha256").update(`${login.principal}\0${login.keyTab}`).digest("hex").slice(0, 32)}`;
  }
  return GssCredential.acquire(login.principal, "initiate", store);
}

/** One security context initiated with `target` (a principal name, or `service@host`) by `credential`, which it owns. */
export class InitiatorContext extends GssSecurityContext implements GssInitiator {
  constructor(
    private readonly credential: GssCredential,
    private readonly target: { name: string; hostBased: boolean },
  ) {
    super();
  }

  protected override releaseHeld(): void {
    this.credential.release();
  }

  /** The first token (`token` null) or the answer to the server's; `established` once the context is. Rejects with GssError. */
  step(token: Uint8Array | null): Promise<{ output: Uint8Array; established: boolean }> {
    return this.using(async (gss) => {
      const target = importName(gss, this.target.name, this.target.hostBased ? HOSTBASED_SERVICE_OID : KRB5_PRINCIPAL_NAME_OID);
      try {
        const input = token === null ? null : inputBuffer(token);
        const mechanism = oidDesc(KRB5_MECHANISM_OID);
        return await this.establishStep(gss, "gss_init_sec_context", gss.initSecContext, (minor, context, output) => [
          minor,
          this.credential.current,
          context,
          target,
          mechanism,
          REQUESTED_FLAGS,
          0,
          null,
          input,
          null,
          output,
          [0],
          null,
        ]);
      } finally {
        gss.releaseName([0], [target]);
      }
    });
  }
}
