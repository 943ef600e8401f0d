/**
 * What a client door needs to authenticate as ZooKeeper does beyond the auth packet: the SASL
 * policy each connection's ConnectionSasl follows, the schemes a client must have authenticated
 * with before its first request (enforce.auth), and where outcomes are counted.
 */
import type { AuthOutcomes, SaslPolicy } from "./connection-sasl.js";

export interface ZkDoorAuth {
  sasl: SaslPolicy;
  /** Empty: nothing enforced. */
  enforcedSchemes: ReadonlySet<string>;
  outcomes: AuthOutcomes;
}

/** No SASL login, nothing enforced: a sasl packet is answered OK with no token. */
export const NO_SASL: ZkDoorAuth = Object.freeze({
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
