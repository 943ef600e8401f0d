/**
 * Kerberos for the ZooKeeper port: the keytab's acceptor credentials, acquired once at start
 * (a keytab without the principal's key stops the server, as ZooKeeper's failed login does), and a
 * GSSAPI mechanism server over a fresh security context for each connection.
 */
import { ConfigError } from "../config-error.js";
import { GssError, kerberosDefaultRealm, type GssCredential } from "../../common/gssapi-library.js";
import { acceptorCredential, AcceptorContext } from "./gssapi-binding.js";
import { GssapiServer } from "./gssapi-mechanism.js";
import type { KerberosAcceptor, KerberosLogin } from "./sasl-config.js";

export function kerberosAcceptor(login: KerberosLogin): KerberosAcceptor {
  let credential: GssCredential;
  try {
    credential = acceptorCredential(login.principal, login.keyTab);
  } catch (error) {
    if (error instanceof GssError)
      throw new ConfigError("jaasConfigFile", `Kerberos login as ${login.principal} with ${login.keyTab} failed: ${error.message}`);
    throw error;
  }
  return {
    newMechanism: () => new GssapiServer(new AcceptorContext(credential)),
    defaultRealm: kerberosDefaultRealm(),
  };
}
