/**
 * The client side of SASL GSSAPI (RFC 4752) as Java's GssKrb5Client runs it for ZooKeeper's
 * client, with quality of protection `auth` only:
 *
 *   1. the initial response is the Kerberos context's first token (an AP-REQ for `<service>@<host>`);
 *   2. each server token goes to the context until it is established; its last output, or an empty
 *      token, goes back;
 *   3. the server's wrapped offer of security layers is unwrapped; it must offer "none", which the
 *      client chooses, wrapped, with no receive buffer and no authorization id; the exchange is
 *      complete, and the server names the session `sasl:<principal>`.
 *
 * The GSS-API is a port (GssInitiator): production opens MIT Kerberos (gssapi-initiator.ts, loaded
 * on first use), unit tests a fake. Every step of the library runs on a worker thread; server
 * tokens are bounded in size and the context in steps, so a hostile server cannot keep a login going.
 */
import { decodeLayerMessage, encodeLayerMessage, GSSAPI_TOKEN_BYTES_MAX, SASL_GSSAPI_LAYER_NONE } from "../common/sasl-gssapi.js";
import type { SaslClientMechanism, SaslClientStep } from "./sasl-mechanism.js";
import type { GssapiSaslOptions } from "./types.js";

/** One initiator security context; each call is made only after the last one settled. */
export interface GssInitiator {
  /** The first token (`token` null), or the answer to the server's. */
  step(token: Uint8Array | null): Promise<{ output: Uint8Array; established: boolean }>;
  wrap(message: Uint8Array): Promise<Uint8Array>;
  unwrap(token: Uint8Array): Promise<Uint8Array>;
  /** Frees the context and its credential, once no call is in flight. */
  release(): void;
}

/** Where a client's Kerberos tickets come from, as a Krb5LoginModule section says it. */
export interface KerberosClientLogin {
  principal: string | undefined;
  useTicketCache: boolean;
  ticketCache: string | undefined;
  useKeyTab: boolean;
  keyTab: string | undefined;
}

/** The default service name of ZooKeeper's servers (zookeeper.sasl.client.username). */
const DEFAULT_SERVICE_NAME = "zookeeper";
/** A Kerberos context is established in one or two round trips; more is a server leading the client on. */
const CONTEXT_STEPS_MAX = 4;

type State = "start" | "context" | "await-offer" | "done";

export class GssapiClient implements SaslClientMechanism {
  readonly name = "GSSAPI";
  private state: State = "start";
  private contextSteps = 0;
  private initiator: GssInitiator | undefined;
  private disposed = false;

  constructor(private readonly open: () => Promise<GssInitiator>) {}

  async evaluate(challenge: Uint8Array | null): Promise<SaslClientStep> {
    const state = this.state;
    this.state = "done";
    if (challenge !== null && challenge.byteLength > GSSAPI_TOKEN_BYTES_MAX) throw new Error(`a GSSAPI server token of ${challenge.byteLength} bytes`);
    switch (state) {
      case "start":
        if (challenge !== null) throw new Error("GSSAPI starts with its initial response");
        return this.initiate();
      case "context":
        if (challenge === null) throw new Error("the server sent no GSSAPI token");
        return this.continueContext(challenge);
      case "await-offer":
        if (challenge === null) throw new Error("the server sent no GSSAPI security layer offer");
        return this.chooseLayer(challenge);
      case "done":
        throw new Error("GSSAPI exchange already over");
    }
  }

  dispose(): void {
    this.disposed = true;
    this.state = "done";
    this.initiator?.release();
  }

  private async initiate(): Promise<SaslClientStep> {
    const initiator = await this.open();
    if (this.disposed) {
      initiator.release();
      throw new Error("the connection ended during the Kerberos login");
    }
    this.initiator = initiator;
    return this.contextStep(null);
  }

  private continueContext(challenge: Uint8Array): Promise<SaslClientStep> {
    if (this.contextSteps >= CONTEXT_STEPS_MAX) throw new Error(`the GSSAPI context is not established after ${CONTEXT_STEPS_MAX} steps`);
    return this.contextStep(challenge);
  }

  private async contextStep(token: Uint8Array | null): Promise<SaslClientStep> {
    this.contextSteps += 1;
    const { output, established } = await this.initiator!.step(token);
    // Established: the server's offer comes next, in answer to this token (empty when the context has nothing more to say).
    this.state = established ? "await-offer" : "context";
    return { token: output, complete: false };
  }

  private async chooseLayer(challenge: Uint8Array): Promise<SaslClientStep> {
    const offer = decodeLayerMessage(await this.initiator!.unwrap(challenge));
    if (typeof offer === "string") throw new Error(offer);
    if ((offer.layers & SASL_GSSAPI_LAYER_NONE) === 0) throw new Error(`the server offers security layers ${offer.layers}, not auth (no security layer)`);
    const answer = await this.initiator!.wrap(encodeLayerMessage({ layers: SASL_GSSAPI_LAYER_NONE, maxMessageBytes: 0, authorizationId: "" }));
    return { token: answer, complete: true };
  }
}

/** The GSSAPI mechanism for a connection to `host`, over MIT Kerberos with the credentials `options` name. */
export function kerberosMechanism(options: GssapiSaslOptions, host: string): GssapiClient {
  const target =
    options.serverPrincipal === undefined
      ? { name: `${options.serviceName ?? DEFAULT_SERVICE_NAME}@${host}`, hostBased: true }
      : { name: options.serverPrincipal, hostBased: false };
  const login: KerberosClientLogin = {
    principal: options.principal,
    useTicketCache: options.useTicketCache ?? false,
    ticketCache: options.ticketCache,
    useKeyTab: options.useKeyTab ?? false,
    keyTab: options.keyTab,
  };
  return new GssapiClient(async () => {
    // Loaded here, not at the SDK's start: only a Kerberos login needs koffi and MIT's library.
    const { acquireInitiatorCredential, InitiatorContext } = await import("./gssapi-initiator.js");
    return new InitiatorContext(await acquireInitiatorCredential(login), target);
  });
}
