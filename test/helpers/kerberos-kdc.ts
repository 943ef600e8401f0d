/**
 * A throw-away Kerberos realm for tests: Debian's MIT KDC (krb5-kdc) started here on 127.0.0.1 with
 * a fresh database in a temp dir, principals made with kadmin.local and their keys exported to
 * keytabs. Nothing outside the temp dir is read or written: KRB5_CONFIG and KRB5_KDC_PROFILE
 * point every tool at the dir's own files, and `env` gives clients and servers the same.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { kerberosKeytabJaas } from "./jaas-files.js";
import { freePort } from "./server-process.js";
import { makeTempDir } from "./temp-dir.js";

const INSTALL_HINT = "apt-get install krb5-kdc krb5-admin-server krb5-user";
const TOOLS = ["/usr/sbin/krb5kdc", "/usr/sbin/kdb5_util", "/usr/sbin/kadmin.local", "/usr/bin/kinit"];

export function assertKerberosInstalled(): void {
  const missing = TOOLS.filter((tool) => !existsSync(tool));
  if (missing.length > 0) throw new Error(`${missing.join(", ")} missing: ${INSTALL_HINT}`);
}

export class KerberosKdc {
  private constructor(
    readonly realm: string,
    readonly dir: string,
    readonly port: number,
    private readonly child: ChildProcess,
    private readonly removeDir: () => Promise<void>,
  ) {}

  /** What every Kerberos client and server of the realm needs in its environment. */
  get env(): Record<string, string> {
    return { KRB5_CONFIG: join(this.dir, "krb5.conf"), KRB5_KDC_PROFILE: join(this.dir, "kdc.conf") };
  }

  get krb5Conf(): string {
    return join(this.dir, "krb5.conf");
  }

  static async start(realm = "KAZOOTEST.ORG"): Promise<KerberosKdc> {
    assertKerberosInstalled();
    const dir = await makeTempDir("corral-kdc-");
    let child: ChildProcess | undefined;
    try {
      const port = await freePort();
      await writeFile(
        join(dir.path, "krb5.conf"),
        [
          "[libdefaults]",
          `  default_realm = ${realm}`,
          "  dns_lookup_kdc = false",
          "  dns_lookup_realm = false",
          "  rdns = false",
          // TCP first: its port is the one freePort checked.
          "  udp_preference_limit = 1",
          "[realms]",
          `  ${realm} = {`,
          `    kdc = 127.0.0.1:${port}`,
          "  }",
          "",
        ].join("\n"),
      );
      await writeFile(
        join(dir.path, "kdc.conf"),
        [
          "[kdcdefaults]",
          `  kdc_listen = 127.0.0.1:${port}`,
          `  kdc_tcp_listen = 127.0.0.1:${port}`,
          "[realms]",
          `  ${realm} = {`,
          `    database_name = ${join(dir.path, "principal")}`,
          `    key_stash_file = ${join(dir.path, "stash")}`,
          `    acl_file = ${join(dir.path, "kadm5.acl")}`,
          "  }",
          "[logging]",
          `  kdc = FILE:${join(dir.path, "kdc.log")}`,
          "",
        ].join("\n"),
      );
      const env = { ...process.env, KRB5_CONFIG: join(dir.path, "krb5.conf"), KRB5_KDC_PROFILE: join(dir.path, "kdc.conf") };
      run("/usr/sbin/kdb5_util", ["create", "-s", "-r", realm, "-P", "throw-away-master-key"], env);
      child = spawn("/usr/sbin/krb5kdc", ["-n", "-r", realm], { env, stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
      const kdc = new KerberosKdc(realm, dir.path, port, child, dir.remove);
      await kdc.untilServing(() => output);
      return kdc;
    } catch (error) {
      child?.kill("SIGKILL");
      await dir.remove();
      throw error;
    }
  }

  /** Adds `principal` (without the realm) with a random key and writes its keytab; returns the keytab's path. */
  addPrincipal(principal: string, keytabName: string): string {
    const keytab = join(this.dir, keytabName);
    const env = { ...process.env, ...this.env };
    run("/usr/sbin/kadmin.local", ["-r", this.realm, "-q", `addprinc -randkey ${principal}@${this.realm}`], env);
    run("/usr/sbin/kadmin.local", ["-r", this.realm, "-q", `ktadd -k ${keytab} ${principal}@${this.realm}`], env);
    return keytab;
  }

  /** kinit from a keytab into the credentials cache `cache` (a file path); `extra`: more kinit options. */
  kinit(principal: string, keytab: string, cache: string, extra: string[] = []): void {
    run("/usr/bin/kinit", ["-kt", keytab, ...extra, `${principal}@${this.realm}`], { ...process.env, ...this.env, KRB5CCNAME: `FILE:${cache}` });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGKILL");
      await exited;
    }
    await this.removeDir();
  }

  /** Until kinit for a missing principal gets the KDC's own answer (not "cannot reach any KDC"). */
  private async untilServing(output: () => string): Promise<void> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const probe = spawnSync("/usr/bin/kinit", ["-k", "-t", "/dev/null", `nobody@${this.realm}`], {
        env: { ...process.env, ...this.env, KRB5CCNAME: `FILE:${join(this.dir, "probe-cache")}` },
        encoding: "utf8",
      });
      if (!/Cannot contact any KDC/i.test(probe.stderr)) return;
      if (this.child.exitCode !== null || Date.now() > deadline) throw new Error(`the KDC did not start: ${output()}\n${probe.stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** A started realm with a service principal for corral's servers and some users, each with a keytab. */
export interface KerberosServiceRealm {
  kdc: KerberosKdc;
  /** Keytab paths: `server` for the service, then one per user. */
  keytabs: Record<string, string>;
  /** A directory for JAAS files, holding the servers' `server.jaas` (a Server section with the service's keytab). */
  jaasDir: string;
  /** The servers' environment: the realm's configuration, and the replay cache in the realm's dir (nothing outside the temp dirs). */
  serverEnv: Record<string, string>;
}

/** Starts a KDC for `realm` with the service principal `service` (without the realm) and `users`. */
export async function startServiceRealm(realm: string, service: string, users: readonly string[]): Promise<KerberosServiceRealm> {
  const kdc = await KerberosKdc.start(realm);
  try {
    const keytabs: Record<string, string> = { server: kdc.addPrincipal(service, "server.keytab") };
    for (const user of users) keytabs[user] = kdc.addPrincipal(user, `${user}.keytab`);
    const jaasDir = join(kdc.dir, "jaas");
    await mkdir(jaasDir);
    await writeFile(join(jaasDir, "server.jaas"), kerberosKeytabJaas("Server", `${service}@${realm}`, keytabs.server!));
    return { kdc, keytabs, jaasDir, serverEnv: { ...kdc.env, KRB5RCACHEDIR: kdc.dir } };
  } catch (error) {
    await kdc.stop();
    throw error;
  }
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv): void {
  const result = spawnSync(file, args, { env, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${file} ${args.join(" ")} failed (${result.status}): ${result.stderr || result.stdout}`);
}
