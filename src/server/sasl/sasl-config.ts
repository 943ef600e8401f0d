/**
 * The server's SASL settings, read once at start as ZooKeeper reads its JAAS file and system
 * properties (ServerCnxnFactory.configureSaslLogin, SaslServerCallbackHandler,
 * AuthenticationHelper): which mechanism a connection's exchange runs, whose passwords or which
 * keytab it checks against, how an authenticated principal becomes an id, and which schemes a
 * client must have authenticated with before its first request.
 *
 * The mechanism follows the JAAS section as in ZooKeeper: an entry of Kerberos's login module
 * (Krb5LoginModule) makes it GSSAPI with that entry's keyTab and principal; otherwise DIGEST-MD5
 * with the section's `user_<name>` options. A jaasConfigFile without the section, or a Kerberos
 * entry without keyTab or principal, stops the server at start (ZooKeeper's does too).
 */
import { readFileSync } from "node:fs";
import { DIGEST_MD5_PROTOCOL, DIGEST_MD5_SERVER_NAME } from "../../common/digest-md5.js";
import type { Entropy } from "../../replica/ports.js";
import { ConfigError } from "../config-error.js";
import type { ServerConfig } from "../config.js";
import type { SaslPolicy } from "./connection-sasl.js";
import { DigestMd5Server } from "./digest-md5.js";
import { parseJaasConfig, type JaasEntry } from "../../common/jaas-config.js";
import type { SaslMechanismServer } from "./mechanism.js";

/** The schemes corral authenticates with: ZooKeeper's default providers, x509 and sasl. */
const AUTH_SCHEMES: ReadonlySet<string> = new Set(["ip", "digest", "x509", "sasl"]);
const USER_PREFIX = "user_";
const KERBEROS_LOGIN_MODULE = /(^|\.)Krb5LoginModule$/;

export type SaslSettings = Pick<
  ServerConfig,
  | "jaasConfigFile"
  | "saslServerSection"
  | "superUser"
  | "saslSuperPassword"
  | "kerberosRemoveHostFromPrincipal"
  | "kerberosRemoveRealmFromPrincipal"
  | "allowSaslFailedClients"
  | "sessionRequireClientSaslAuth"
  | "enforceAuthEnabled"
  | "enforceAuthSchemes"
>;

/** A Kerberos Server section: the acceptor's keytab and principal (`service/host@REALM`). */
export interface KerberosLogin {
  keyTab: string;
  principal: string;
}

/** What a JAAS Server section makes of the server's SASL. */
export type SaslLogin = { mechanism: "DIGEST-MD5"; passwords: ReadonlyMap<string, string> } | ({ mechanism: "GSSAPI" } & KerberosLogin);

/**
 * The schemes a client must have authenticated with before its first request: `sasl` alone under
 * sessionRequireClientSaslAuth, enforceAuthSchemes under enforceAuthEnabled (which then must name
 * some, every one known), none otherwise. ConfigError for a wrong list.
 */
export function enforcedAuthSchemes(
  settings: Pick<SaslSettings, "sessionRequireClientSaslAuth" | "enforceAuthEnabled" | "enforceAuthSchemes">,
): ReadonlySet<string> {
  if (settings.sessionRequireClientSaslAuth) return new Set(["sasl"]);
  if (!settings.enforceAuthEnabled) return new Set();
  const schemes = settings.enforceAuthSchemes
    .split(",")
    .map((scheme) => scheme.trim())
    .filter((scheme) => scheme !== "");
  if (schemes.length === 0) throw new ConfigError("enforceAuthSchemes", "must name a scheme: enforceAuthEnabled is set");
  for (const scheme of schemes) {
    if (!AUTH_SCHEMES.has(scheme)) throw new ConfigError("enforceAuthSchemes", `${JSON.stringify(scheme)} is not one of ${[...AUTH_SCHEMES].join(", ")}`);
  }
  return new Set(schemes);
}

/** The login a JAAS file's `section` describes; ConfigError when there is none. */
export function saslLoginOf(jaasText: string, section: string, superPassword: string): SaslLogin {
  let entries: readonly JaasEntry[] | undefined;
  try {
    entries = parseJaasConfig(jaasText).get(section);
  } catch (error) {
    throw new ConfigError("jaasConfigFile", (error as Error).message);
  }
  if (entries === undefined) throw new ConfigError("jaasConfigFile", `no JAAS section named ${section} (saslServerSection)`);
  const kerberos = entries.find((entry) => KERBEROS_LOGIN_MODULE.test(entry.loginModule));
  if (kerberos !== undefined) {
    const keyTab = kerberos.options.get("keyTab");
    const principal = kerberos.options.get("principal");
    if (keyTab === undefined || principal === undefined)
      throw new ConfigError("jaasConfigFile", `${section}'s ${kerberos.loginModule} entry needs keyTab and principal`);
    if (!/^[^/@]+\/[^/@]+@[^/@]+$/.test(principal)) throw new ConfigError("jaasConfigFile", `principal ${JSON.stringify(principal)} is not service/host@REALM`);
    return { mechanism: "GSSAPI", keyTab, principal };
  }
  const passwords = new Map<string, string>();
  for (const entry of entries) {
    for (const [key, value] of entry.options) if (key.startsWith(USER_PREFIX)) passwords.set(key.slice(USER_PREFIX.length), value);
  }
  // zookeeper.SASLAuthenticationProvider.superPassword stands in for user_super's.
  if (superPassword !== "") passwords.set("super", superPassword);
  return { mechanism: "DIGEST-MD5", passwords };
}

/** Reads settings.jaasConfigFile (undefined when "": no SASL login). */
export function readSaslLogin(settings: Pick<SaslSettings, "jaasConfigFile" | "saslServerSection" | "saslSuperPassword">): SaslLogin | undefined {
  if (settings.jaasConfigFile === "") return undefined;
  let text: string;
  try {
    text = readFileSync(settings.jaasConfigFile, "utf8");
  } catch (error) {
    throw new ConfigError("jaasConfigFile", `cannot read ${settings.jaasConfigFile}: ${(error as Error).message}`);
  }
  return saslLoginOf(text, settings.saslServerSection, settings.saslSuperPassword);
}

/** What makes a GSSAPI mechanism server for each connection, and the Kerberos default realm. */
export interface KerberosAcceptor {
  newMechanism(): SaslMechanismServer;
  defaultRealm: string;
}

/**
 * The policy a connection's ConnectionSasl follows. `kerberos` is the acceptor made from a GSSAPI
 * login (it holds the keytab's credentials); `entropy` gives DIGEST-MD5 its nonces.
 */
export function saslPolicy(settings: SaslSettings, login: SaslLogin | undefined, entropy: Entropy, kerberos?: KerberosAcceptor): SaslPolicy {
  let newMechanism: (() => SaslMechanismServer) | undefined;
  if (login?.mechanism === "DIGEST-MD5") {
    const passwords = login.passwords;
    newMechanism = () =>
      new DigestMd5Server({
        protocol: DIGEST_MD5_PROTOCOL,
        serverName: DIGEST_MD5_SERVER_NAME,
        passwordOf: (user) => passwords.get(user),
        nonceBytes: (count) => entropy.bytes(count),
      });
  } else if (login?.mechanism === "GSSAPI") {
    if (kerberos === undefined) throw new Error("a GSSAPI login needs its Kerberos acceptor");
    newMechanism = () => kerberos.newMechanism();
  }
  const required = enforcedAuthSchemes(settings);
  return {
    newMechanism,
    rules: {
      removeHostFromPrincipal: settings.kerberosRemoveHostFromPrincipal,
      removeRealmFromPrincipal: settings.kerberosRemoveRealmFromPrincipal,
      defaultRealm: kerberos?.defaultRealm ?? "",
    },
    superUsers: new Set(
      settings.superUser
        .split(",")
        .map((id) => id.trim())
        .filter((id) => id !== ""),
    ),
    saslRequired: required.has("sasl"),
    allowSaslFailedClients: settings.allowSaslFailedClients,
  };
}
