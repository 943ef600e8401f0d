/**
 * A JAAS login configuration's client section as ZooKeeper's client reads it (the file named by
 * java.security.auth.login.config, the section by zookeeper.sasl.clientconfig, default `Client`),
 * made into the SDK's SASL options, so that the file zkCli.sh, Curator or HBase log in with works
 * unchanged:
 *
 *     Client {
 *       org.apache.zookeeper.server.auth.DigestLoginModule required
 *       username="bob"
 *       password="bobsecret";
 *     };
 *
 * An entry with `username` and `password` is DIGEST-MD5. A Kerberos entry
 * (com.sun.security.auth.module.Krb5LoginModule) is GSSAPI with the options Java's module reads:
 * `useTicketCache` (and `ticketCache`), `useKeyTab` with `keyTab` and `principal`, both (the cache
 * first); `storeKey`, `doNotPrompt` and the like change nothing for a client that never prompts.
 *
 *     Client {
 *       com.sun.security.auth.module.Krb5LoginModule required
 *       useKeyTab=true keyTab="/etc/security/keytabs/app.keytab"
 *       principal="app@EXAMPLE.COM" storeKey=true useTicketCache=false;
 *     };
 */
import { readFileSync } from "node:fs";
import { ZkError } from "../common/errors.js";
import { parseJaasConfig, type JaasConfig } from "../common/jaas-config.js";
import type { GssapiSaslOptions, SaslOptions } from "./types.js";

/** ZooKeeper's default client section (zookeeper.sasl.clientconfig). */
export const DEFAULT_JAAS_CLIENT_SECTION = "Client";
/** A JAAS file larger than this is refused unread. */
const JAAS_FILE_BYTES_MAX = 1 << 20;
const KERBEROS_LOGIN_MODULE = /(^|\.)Krb5LoginModule$/;

/** Which part of a JAAS file a client logs in with, as ZooKeeper's client properties name it. */
export interface JaasClientOptions {
  /** The section to log in with; default `Client`. Named, it must exist; the default may be missing (no SASL then, as in ZooKeeper). */
  section?: string;
  /** The SASL service name (zookeeper.sasl.client.username); default "zookeeper". */
  serviceName?: string;
  /** The server's whole Kerberos principal (zookeeper.server.principal); default `<serviceName>@<host>`. */
  serverPrincipal?: string;
}

/**
 * The SASL options the JAAS file `file` gives a client, or undefined when it has no section of the
 * default name (ZooKeeper's client then goes on without SASL). Throws ZkError BADARGUMENTS when the
 * file cannot be read or parsed, a named section is missing, or its login is not one this client speaks.
 */
export function saslFromJaasFile(file: string, options: JaasClientOptions = {}): SaslOptions | undefined {
  let config: JaasConfig;
  try {
    const text = readFileSync(file);
    if (text.byteLength > JAAS_FILE_BYTES_MAX) throw new Error(`larger than ${JAAS_FILE_BYTES_MAX} bytes`);
    config = parseJaasConfig(text.toString("utf8"));
  } catch (error) {
    throw new ZkError("BADARGUMENTS", `JAAS configuration ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const section = options.section ?? DEFAULT_JAAS_CLIENT_SECTION;
  const entries = config.get(section);
  if (entries === undefined) {
    if (options.section === undefined) return undefined;
    throw new ZkError("BADARGUMENTS", `JAAS configuration ${file} has no section ${section}`);
  }
  const kerberos = entries.find((entry) => KERBEROS_LOGIN_MODULE.test(entry.loginModule));
  if (kerberos !== undefined) return kerberosLogin(section, kerberos.options, options);
  const login = entries.find((entry) => entry.options.has("username") && entry.options.has("password"));
  if (login === undefined) throw new ZkError("BADARGUMENTS", `JAAS section ${section} has no entry with username and password`);
  return {
    mechanism: "DIGEST-MD5",
    username: login.options.get("username")!,
    password: login.options.get("password")!,
    ...(options.serviceName === undefined ? {} : { serviceName: options.serviceName }),
  };
}

/** A Krb5LoginModule entry's options as GSSAPI options; Java's module refuses the same sections. */
function kerberosLogin(section: string, entry: ReadonlyMap<string, string>, options: JaasClientOptions): GssapiSaslOptions {
  const flag = (name: string): boolean => entry.get(name)?.toLowerCase() === "true";
  const useTicketCache = flag("useTicketCache");
  const useKeyTab = flag("useKeyTab");
  const principal = entry.get("principal");
  if (!useTicketCache && !useKeyTab) {
    throw new ZkError(
      "BADARGUMENTS",
      `JAAS section ${section} logs in with Kerberos but neither useTicketCache nor useKeyTab: a password prompt, which a client cannot answer`,
    );
  }
  if (useKeyTab && !useTicketCache && principal === undefined)
    throw new ZkError("BADARGUMENTS", `JAAS section ${section} uses a keytab but names no principal`);
  const optional = (key: keyof GssapiSaslOptions, value: string | undefined) => (value === undefined ? {} : { [key]: value });
  return {
    mechanism: "GSSAPI",
    useTicketCache,
    useKeyTab,
    ...optional("principal", principal),
    ...optional("ticketCache", useTicketCache ? entry.get("ticketCache") : undefined),
    ...optional("keyTab", useKeyTab ? entry.get("keyTab") : undefined),
    ...optional("serviceName", options.serviceName),
    ...optional("serverPrincipal", options.serverPrincipal),
  };
}
