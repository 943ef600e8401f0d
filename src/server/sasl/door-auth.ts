/**
 * What a client door needs to authenticate as ZooKeeper does beyond the auth packet: the SASL
 * policy each connection's ConnectionSasl follows, the schemes a client must have authenticated
 * with before its first request (enforce.auth), and where outcomes are counted. Both doors take
 * the same: the ZooKeeper port's sasl packets and the gRPC port's SaslRequests run one exchange.
 */
import type { Logger } from "pino";
import { hex64 } from "../../common/hex.js";
import type { SaslOutcome } from "../../replica/connection-session.js";
import { ConnectionSasl, type AuthOutcomes, type SaslPolicy } from "./connection-sasl.js";

export interface ClientDoorAuth {
  sasl: SaslPolicy;
  /** Empty: nothing enforced. */
  enforcedSchemes: ReadonlySet<string>;
  outcomes: AuthOutcomes;
}

/** No SASL login, nothing enforced: a sasl token is answered OK with no token. */
export const NO_SASL: ClientDoorAuth = Object.freeze({
  sasl: {
    newMechanism: undefined,
    rules: { removeHostFromPrincipal: false, removeRealmFromPrincipal: false, defaultRealm: "" },
    superUsers: new Set<string>(),
    saslRequired: false,
    allowSaslFailedClients: false,
  },
  enforcedSchemes: new Set<string>(),
  outcomes: { authenticated: () => {} },
});

/** The session a door's SASL answers for: whether it still reads, whether a token is being evaluated, and whether an inbound bound holds it paused. */
interface AuthenticatingSession {
  readonly sessionId: bigint;
  readonly open: boolean;
  readonly authenticating: boolean;
  readonly throttled: boolean;
}

/**
 * One connection's SASL exchange at its door (ZooKeeper's processSasl): the mechanism is made at
 * the first token, reading pauses while a token is evaluated (off the event loop's thread for
 * GSSAPI) — what the client sends meanwhile waits in the kernel or in the transport's flow control,
 * not in our memory — and resumes once the answer is out, unless another token is then evaluated.
 */
export class DoorSasl {
  private sasl: ConnectionSasl | undefined;

  constructor(
    private readonly auth: ClientDoorAuth,
    private readonly logger: Logger,
    private readonly reading: { pause(): void; resume(): void },
  ) {}

  authenticate(session: AuthenticatingSession, token: Uint8Array, done: (outcome: SaslOutcome) => void): void {
    this.sasl ??= new ConnectionSasl(this.auth.sasl, this.auth.outcomes, this.logger);
    this.reading.pause();
    void this.sasl.answer(token, hex64(session.sessionId)).then((outcome) => {
      done(outcome);
      if (session.open && !session.authenticating && !session.throttled) this.reading.resume();
    });
  }

  /** The connection ended: whatever the mechanism holds is freed. */
  dispose(): void {
    this.sasl?.dispose();
  }
}
