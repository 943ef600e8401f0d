/**
 * The server's SASL login at start (ZooKeeper's ServerCnxnFactory.configureSaslLogin): the JAAS
 * file read, and for Kerberos the keytab's acceptor credentials acquired through the system's
 * GSS-API library — a login that cannot work stops the server before it serves. The Kerberos
 * binding is loaded only when the JAAS section asks for Kerberos.
 */
import type { Logger } from "pino";
import type { Entropy } from "../../replica/ports.js";
import type { ServerConfig } from "../config.js";
import type { ClientDoorAuth } from "./door-auth.js";
import { enforcedAuthSchemes, readSaslLogin, saslPolicy, type KerberosAcceptor } from "./sasl-config.js";

/** `loginPrincipal`: the Kerberos principal the server logged in as (undefined for no login or DIGEST-MD5), ZooKeeper's Login.getUserName. */
export async function clientDoorAuth(
  config: ServerConfig,
  entropy: Entropy,
  logger: Logger,
): Promise<Omit<ClientDoorAuth, "outcomes"> & { loginPrincipal: string | undefined }> {
  const login = readSaslLogin(config);
  let kerberos: KerberosAcceptor | undefined;
  if (login?.mechanism === "GSSAPI") {
    const { kerberosAcceptor } = await import("./gssapi-acceptor.js");
    kerberos = kerberosAcceptor(login);
  }
  const enforcedSchemes = enforcedAuthSchemes(config);
  if (login !== undefined || enforcedSchemes.size > 0) {
    logger.info(
      {
        sasl: login?.mechanism ?? "none",
        ...(login?.mechanism === "GSSAPI" ? { principal: login.principal } : {}),
        ...(login?.mechanism === "DIGEST-MD5" ? { users: login.passwords.size } : {}),
        ...(enforcedSchemes.size > 0 ? { enforcedSchemes: [...enforcedSchemes] } : {}),
      },
      "client authentication",
    );
  }
  return { sasl: saslPolicy(config, login, entropy, kerberos), enforcedSchemes, loginPrincipal: login?.mechanism === "GSSAPI" ? login.principal : undefined };
}
