/**
 * JAAS login sections as ZooKeeper's admin guide writes them, for tests that configure SASL on
 * both sides: a server's `Server` section (DIGEST-MD5 users, or a Kerberos keytab) and a client's
 * `Client` section (DIGEST-MD5 credentials, a Kerberos keytab, or a ticket cache alone).
 */

import { writeFile } from "node:fs/promises";
import { join } from "node:path";

const DIGEST = "org.apache.zookeeper.server.auth.DigestLoginModule";
const KERBEROS = "com.sun.security.auth.module.Krb5LoginModule";

function section(name: string, loginModule: string, options: Record<string, string>): string {
  const lines = Object.entries(options).map(([key, value]) => `  ${key}="${value}"`);
  return `${name} {\n  ${loginModule} required\n${lines.join("\n")};\n};\n`;
}

/** A DIGEST-MD5 Server section with these users and passwords. */
export function digestServerJaas(users: Record<string, string>): string {
  return section("Server", DIGEST, Object.fromEntries(Object.entries(users).map(([user, password]) => [`user_${user}`, password])));
}

export function digestClientJaas(username: string, password: string): string {
  return section("Client", DIGEST, { username, password });
}

/** A DIGEST-MD5 Client section file in `dir` for each user (`<user>.jaas`); their paths by user. */
export async function writeDigestClientJaasFiles(dir: string, users: Record<string, string>): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const [user, password] of Object.entries(users)) {
    files[user] = join(dir, `${user}.jaas`);
    await writeFile(files[user], digestClientJaas(user, password));
  }
  return files;
}

/** A Kerberos section logging in as `principal` (with its realm) from `keyTab`. */
export function kerberosKeytabJaas(name: "Server" | "Client", principal: string, keyTab: string): string {
  return section(name, KERBEROS, { useKeyTab: "true", keyTab, storeKey: "true", useTicketCache: "false", principal });
}

/** A Kerberos Client section that takes its ticket from the cache file `ticketCache` alone. */
export function kerberosTicketCacheJaas(ticketCache: string): string {
  return section("Client", KERBEROS, { useTicketCache: "true", ticketCache, doNotPrompt: "true" });
}
