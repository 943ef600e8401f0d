/**
 * A connection's SASL exchange as ZooKeeper 3.8's ZooKeeperServer.processSasl answers it, apart
 * from any door: each `sasl` packet's token in, the reply out (header error, SetSASLResponse
 * token, the ids to add, whether the connection ends). A door asks `answer` for each packet, sends
 * the reply at once (ZooKeeper answers a sasl packet when it reads it, outside the session's
 * order, with zxid 0) and reads nothing more of that connection until it has.
 *
 *  - No SASL login configured: OK with no token, as a ZooKeeper whose JAAS file has no Server
 *    section answers.
 *  - A step that fails: AUTHFAILED (SESSIONCLOSEDREQUIRESASLAUTH when the server requires `sasl`
 *    authentication) with a null token, and the connection closes; its session lives on until it
 *    expires, as in ZooKeeper. With allowSaslFailedClients (and SASL not required) the failure
 *    is only logged and the client goes on unauthenticated, answered OK with no token.
 *  - The step that completes: the connection gains `sasl:<id>` (the principal rules applied),
 *    and `super` when that id is one of the configured super users.
 */
import type { Logger } from "pino";
import { limits } from "../../common/constants.js";
import { ZkErrorCode } from "../../common/errors.js";
import type { Id } from "../../common/znode.js";
import { SUPER_ID } from "../../replica/acl.js";
import { saslAuthorizedId, type PrincipalRules } from "../../replica/kerberos-name.js";
import { saslFailure, type SaslMechanismServer, type SaslStep } from "./mechanism.js";

/** What the server's configuration says about SASL (ZooKeeper's system properties of the same names). */
export interface SaslPolicy {
  /** The JAAS Server section's mechanism, making one server per connection; undefined: no SASL login. */
  newMechanism: (() => SaslMechanismServer) | undefined;
  rules: PrincipalRules;
  /** zookeeper.superUser: authorized ids that also get the super id. */
  superUsers: ReadonlySet<string>;
  /** enforce.auth.enabled with `sasl` among enforce.auth.schemes (or sessionRequireClientSASLAuth). */
  saslRequired: boolean;
  /** zookeeper.allowSaslFailedClients */
  allowSaslFailedClients: boolean;
}

/** Told of every finished exchange: the server's metrics and audit. */
export interface AuthOutcomes {
  authenticated(scheme: string, succeeded: boolean): void;
}

export interface SaslAnswer {
  /** The reply header's error code. */
  err: number;
  /** The SetSASLResponse token (null: none). */
  token: Uint8Array | null;
  /** Ids the connection gains (added before any later packet of it is read). */
  ids: readonly Id[];
  /** The connection ends once this answer is out. */
  close: boolean;
}

export class ConnectionSasl {
  private mechanism: SaslMechanismServer | undefined;
  private finished = false;

  constructor(
    private readonly policy: SaslPolicy,
    private readonly outcomes: AuthOutcomes,
    private readonly logger: Logger,
  ) {}

  /** `sessionId` is for the log only. Never rejects. */
  async answer(token: Uint8Array, sessionId: string): Promise<SaslAnswer> {
    const newMechanism = this.policy.newMechanism;
    if (newMechanism === undefined) return { err: ZkErrorCode.OK, token: null, ids: [], close: false };
    if (this.finished) return this.failed("a sasl packet after the exchange was over", "", sessionId);
    this.mechanism ??= newMechanism();
    const mechanism = this.mechanism;
    let step: SaslStep;
    try {
      step = await mechanism.evaluate(token);
    } catch (error) {
      // A mechanism answers failures as values; anything thrown is still only this client's failure.
      step = saslFailure(error instanceof Error ? error.message : "the mechanism failed");
    }
    switch (step.kind) {
      case "continue":
        return { err: ZkErrorCode.OK, token: step.token, ids: [], close: false };
      case "failed":
        return this.failed(step.reason, mechanism.name, sessionId);
      case "complete": {
        this.finished = true;
        this.dispose();
        const id = saslAuthorizedId(step.authenticationId, step.authorizationId, this.policy.rules);
        if (id === undefined || Buffer.byteLength(id) > limits.authBytesMax) {
          return this.failed(`no usable id for ${JSON.stringify(step.authenticationId.slice(0, 200))}`, mechanism.name, sessionId);
        }
        const ids: Id[] = [{ scheme: "sasl", id }];
        const superUser = this.policy.superUsers.has(id);
        if (superUser) ids.push(SUPER_ID);
        this.outcomes.authenticated("sasl", true);
        this.logger.info(
          { session: sessionId, scheme: "sasl", mechanism: mechanism.name, id, ...(superUser ? { superUser } : {}) },
          "SASL authentication succeeded",
        );
        return { err: ZkErrorCode.OK, token: step.token, ids, close: false };
      }
    }
  }

  /** The connection ended: whatever the mechanism holds is freed. */
  dispose(): void {
    this.mechanism?.dispose();
  }

  private failed(reason: string, mechanism: string, sessionId: string): SaslAnswer {
    this.finished = true;
    this.dispose();
    this.outcomes.authenticated("sasl", false);
    const tolerated = this.policy.allowSaslFailedClients && !this.policy.saslRequired;
    this.logger.warn({ session: sessionId, scheme: "sasl", mechanism, reason, ...(tolerated ? { kept: true } : {}) }, "SASL authentication failed");
    if (tolerated) return { err: ZkErrorCode.OK, token: null, ids: [], close: false };
    return { err: this.policy.saslRequired ? ZkErrorCode.SESSIONCLOSEDREQUIRESASLAUTH : ZkErrorCode.AUTHFAILED, token: null, ids: [], close: true };
  }
}
