/**
 * `corral health`: is a server serving sessions? Connects with the SDK, asks exists("/") and
 * closes. Exit 0 when it answered, 1 otherwise — never 2, which Docker reserves. The container
 * health checks in deploy/ run it; `corral cluster` uses the same probe to know a server is up.
 *
 * Over TLS it takes the shell's --tls-* flags; without them, a server whose config has
 * clientPortTls is checked with its own certificate and key as the client's, trusting its
 * tlsCaFile and expecting the first DNS name of its certificate (a self-check: the chain is
 * verified, the host dialled is the loopback address).
 */
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { Client, type ClientTlsOptions } from "../index.js";
import { ConfigError, formatHostPort, loadConfig, type ServerConfig } from "../server/config.js";
import { isTlsFlag, readClientTls, tlsFilesFromFlags, type TlsFileOptions } from "./tls-options.js";

const WILDCARDS: Record<string, string> = { "0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1" };

/**
 * Where a health check inside the server's own container reaches it: its client port, on the
 * loopback address when the port is bound to every interface.
 */
export function healthTarget(config: Pick<ServerConfig, "clientHost" | "clientPort">): string {
  const host = WILDCARDS[config.clientHost] ?? config.clientHost;
  return formatHostPort(host, config.clientPort);
}

/** Resolves when `connectString` accepted a session and answered exists("/"); rejects otherwise. */
export async function probe(connectString: string, timeoutMs: number, tls?: ClientTlsOptions): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let client: Client | undefined;
  let settled = false;
  const attempt = (async () => {
    const connected = await Client.connect(connectString, { connectTimeoutMs: timeoutMs, shuffleHosts: false, ...(tls === undefined ? {} : { tls }) });
    if (settled) {
      void connected.close(); // the deadline passed while connecting
      return;
    }
    client = connected;
    const root = await connected.exists("/");
    if (root === null) throw new Error('exists("/") answered null');
  })();
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([attempt, deadline]);
  } finally {
    settled = true;
    clearTimeout(timer);
    attempt.catch(() => undefined);
    // close() never rejects; bound it anyway so a hung server cannot hang the probe.
    const closing = (client as Client | undefined)?.close();
    if (closing) await Promise.race([closing, new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
  }
}

/** The `corral health` command; answers the process exit code. */
export async function runHealth(configFile: string | undefined, flags: Record<string, string>, env: NodeJS.ProcessEnv): Promise<number> {
  let target: string;
  let timeoutMs = 5_000;
  let tls: ClientTlsOptions | undefined;
  try {
    const { connect, "timeout-ms": timeout, ...rest } = flags;
    const unknown = Object.keys(rest).find((name) => !isTlsFlag(name));
    if (unknown !== undefined) throw new ConfigError(unknown, "unknown option (health takes --connect, --config, --timeout-ms, --tls-ca-file, --tls-cert-file, --tls-key-file, --tls-servername)");
    if (timeout !== undefined) {
      timeoutMs = Number(timeout);
      if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new ConfigError("timeout-ms", `expected a positive integer, got ${JSON.stringify(timeout)}`);
    }
    let tlsFiles = tlsFilesFromFlags(rest);
    if (connect !== undefined) {
      target = connect;
    } else {
      const config = loadConfig({ ...(configFile ? { file: configFile } : {}), env });
      target = healthTarget(config);
      tlsFiles ??= selfCheckTls(config);
    }
    if (tlsFiles !== undefined) tls = readClientTls(tlsFiles);
  } catch (error) {
    process.stderr.write(`unhealthy: ${(error as Error).message}\n`);
    return 1;
  }
  try {
    await probe(target, timeoutMs, tls);
    process.stdout.write(`ok: ${target} serving\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`unhealthy: ${target}: ${(error as Error).message}\n`);
    return 1;
  }
}

/** A TLS server checks itself with its own certificate (see the file comment); undefined without clientPortTls. */
function selfCheckTls(config: ServerConfig): TlsFileOptions | undefined {
  if (!config.clientPortTls) return undefined;
  const files: TlsFileOptions = { certFile: config.tlsCertFile, keyFile: config.tlsKeyFile, ...(config.tlsCaFile === "" ? {} : { caFile: config.tlsCaFile }) };
  try {
    const names = new X509Certificate(readFileSync(config.tlsCertFile)).subjectAltName ?? "";
    const dns = [...names.matchAll(/(?:^|, )DNS:([^,]+)/g)].map((m) => m[1]!).find((name) => !name.startsWith("*"));
    if (dns !== undefined) files.servername = dns;
  } catch {
    // readClientTls reports an unreadable file; a certificate without names is checked against the address dialled
  }
  return files;
}
