/**
 * The server side of SASL GSSAPI (RFC 4752) as Java's GssKrb5Server runs it for ZooKeeper, with
 * quality of protection `auth` only (no security layer):
 *
 *   1. client tokens go to the GSS acceptor until its context is established (its last output
 *      token, if any, goes back; the client then sends an empty token);
 *   2. the server sends, wrapped, the layers it offers (1: none) and its largest receive buffer;
 *   3. the client answers, wrapped, the layer it chose (must be 1), its buffer size and an
 *      optional authorization id; the exchange is complete. The authenticated id is the
 *      context's peer principal, `client@REALM`.
 *
 * The GSS-API itself is a port (GssAcceptor): production binds MIT Kerberos (gssapi-binding.ts),
 * unit tests a fake.
 */
import { decodeLayerMessage, encodeLayerMessage, GSSAPI_TOKEN_BYTES_MAX, SASL_GSSAPI_LAYER_NONE } from "../../common/sasl-gssapi.js";
import { saslFailure, type SaslMechanismServer, type SaslStep } from "./mechanism.js";

/** One acceptor security context; each call is made only after the last one settled. */
export interface GssAcceptor {
  step(token: Uint8Array): Promise<{ output: Uint8Array; established: boolean; peer: string | undefined }>;
  wrap(message: Uint8Array): Promise<Uint8Array>;
  unwrap(token: Uint8Array): Promise<Uint8Array>;
  release(): void;
}

/** Java's default javax.security.sasl.maxbuffer: what the server says it can receive. */
const MAX_RECEIVE_BYTES = 65536;

type State = "context" | "send-layers" | "await-layer" | "done";

export class GssapiServer implements SaslMechanismServer {
  readonly name = "GSSAPI";
  private state: State = "context";
  private peer = "";

  constructor(private readonly acceptor: GssAcceptor) {}

  async evaluate(token: Uint8Array): Promise<SaslStep> {
    const state = this.state;
    this.state = "done";
    if (token.byteLength > GSSAPI_TOKEN_BYTES_MAX) return saslFailure(`a GSSAPI token of ${token.byteLength} bytes`);
    try {
      switch (state) {
        case "context":
          return await this.acceptToken(token);
        case "send-layers":
          if (token.byteLength !== 0) return saslFailure("the GSSAPI handshake expects an empty token after the context is established");
          return await this.offerLayers();
        case "await-layer":
          return await this.chooseLayer(token);
        case "done":
          return saslFailure("GSSAPI exchange already over");
      }
    } catch (error) {
      return saslFailure((error as Error).message);
    }
  }

  dispose(): void {
    this.state = "done";
    this.acceptor.release();
  }

  private async acceptToken(token: Uint8Array): Promise<SaslStep> {
    const { output, established, peer } = await this.acceptor.step(token);
    if (!established) {
      this.state = "context";
      return { kind: "continue", token: output };
    }
    this.peer = peer ?? "";
    // The acceptor's last token (mutual authentication) goes first; the client answers it empty.
    if (output.byteLength > 0) {
      this.state = "send-layers";
      return { kind: "continue", token: output };
    }
    return this.offerLayers();
  }

  private async offerLayers(): Promise<SaslStep> {
    const offer = encodeLayerMessage({ layers: SASL_GSSAPI_LAYER_NONE, maxMessageBytes: MAX_RECEIVE_BYTES, authorizationId: "" });
    const wrapped = await this.acceptor.wrap(offer);
    this.state = "await-layer";
    return { kind: "continue", token: wrapped };
  }

  private async chooseLayer(token: Uint8Array): Promise<SaslStep> {
    const answer = decodeLayerMessage(await this.acceptor.unwrap(token));
    if (typeof answer === "string") return saslFailure(answer);
    if (answer.layers !== SASL_GSSAPI_LAYER_NONE) return saslFailure(`the client chose security layer ${answer.layers}, not auth`);
    const authorizationId = answer.authorizationId === "" ? this.peer : answer.authorizationId;
    return { kind: "complete", token: null, authenticationId: this.peer, authorizationId };
  }
}
