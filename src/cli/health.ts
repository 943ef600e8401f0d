/**
 * `corral health`: is a server serving sessions? Connects with the SDK, asks exists("/") and
 * closes. Exit 0 when it answered, 1 otherwise — never 2, which Docker reserves. The image's
 * health check runs it; `corral cluster` uses the same probe to know a server is up.
 *
 * `--probe readyz` (or `healthz`) asks the server's admin port instead (GET /readyz: serving,
 * /healthz: alive), for containers without an HTTP client: deploy/docker-compose.yml's checks.
 *
 * Over TLS it takes the shell's --tls-* flags; without them, a server whose config has
 * clientPortTls is checked with its own certificate and key as the client's, trusting its
 * tlsCaFile and expecting the first DNS name of its certificate (a self-check: the chain is
 * verified, the host dialled is the loopback address).
 */
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { Client, type ClientTlsOptions } from "../index.js";
import { formatHostPort } from "../server/cluster-servers.js";
import { ConfigError } from "../server/config-error.js";
import { loadConfig, type ServerConfig } from "../server/config.js";
import { isTlsFlag, readClientTls, tlsFilesFromFlags, type TlsFileOptions } from "./tls-options.js";

/** `corral health`'s flags: [value, what it does] (the usage is printed from this table). */
export const HEALTH_FLAGS: Readonly<Record<string, readonly [string, string]>> = {
  connect: ["HOST:PORT", "the server to check (default: the client port CORRAL_* and --config describe)"],
  config: ["FILE", "the server's config file, read as corral server reads it, for its client port"],
  "timeout-ms": ["MS", "how long the server may take to answer (default 5000)"],
  probe: ["session|readyz|healthz", 'what to ask: a session and exists("/") (default), or the admin port\'s /readyz (serving) or /healthz (alive)'],
  "tls-ca-file": ["FILE", "TLS: the CAs the server's certificate must chain to (PEM); without --tls-* flags, a TLS server is checked with its own files"],
  "tls-cert-file": ["FILE", "TLS: a client certificate (PEM)"],
  "tls-key-file": ["FILE", "TLS: its private key (PEM)"],
  "tls-servername": ["NAME", "TLS: the name the server's certificate must carry"],
};

const WILDCARDS: Record<string, string> = { "0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1" };

/**
 * Where a health check inside the server's own container reaches it: its client port, on the
 * loopback address when the port is bound to every interface.
 */
export function healthTarget(config: Pick<ServerConfig, "clientHost" | "clientPort">): string {
  const host = WILDCARDS[config.clientHost] ?? config.clientHost;
  return formatHostPort(host, config.clientPort);
}

/** Where a probe inside the server's own container reaches its admin port; undefined when it has none. */
export function adminTarget(config: Pick<ServerConfig, "adminHost" | "adminPort">): string | undefined {
  if (config.adminPort <= 0) return undefined;
  return formatHostPort(WILDCARDS[config.adminHost] ?? config.adminHost, config.adminPort);
}

const HTTP_PROBES = ["readyz", "healthz"] as const;
type HttpProbe = (typeof HTTP_PROBES)[number];

/** Resolves when http://<address>/<probe> answers 200; rejects otherwise. */
export async function httpProbe(address: string, probe: HttpProbe, timeoutMs: number): Promise<void> {
  const response = await fetch(`http://${address}/${probe}`, { signal: AbortSignal.timeout(timeoutMs) });
  const body = await response.text();
  if (response.status !== 200) throw new Error(`/${probe} answered ${response.status}: ${body.replace(/\s+/g, " ").trim()}`);
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
    const closing = client?.close();
    if (closing) await Promise.race([closing, new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
  }
}

/** The `corral health` command; answers the process exit code. */
export async function runHealth(configFile: string | undefined, flags: Record<string, string>, env: NodeJS.ProcessEnv): Promise<number> {
  let target: string;
  let timeoutMs = 5_000;
  let kind = "session" as "session" | HttpProbe;
  let tls: ClientTlsOptions | undefined;
  try {
    const { connect, "timeout-ms": timeout, probe: probeFlag, ...rest } = flags;
    const unknown = Object.keys(rest).find((name) => !isTlsFlag(name));
    if (unknown !== undefined) throw new ConfigError(unknown, `unknown option (health takes --${Object.keys(HEALTH_FLAGS).join(", --")})`);
    if (timeout !== undefined) {
      timeoutMs = Number(timeout);
      if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new ConfigError("timeout-ms", `expected a positive integer, got ${JSON.stringify(timeout)}`);
    }
    if (probeFlag !== undefined) {
      if (probeFlag !== "session" && !(HTTP_PROBES as readonly string[]).includes(probeFlag)) {
        throw new ConfigError("probe", `expected session, readyz or healthz, got ${JSON.stringify(probeFlag)}`);
      }
      kind = probeFlag as typeof kind;
    }
    let tlsFiles = tlsFilesFromFlags(rest);
    if (connect !== undefined) target = connect;
    else {
      const config = loadConfig({ ...(configFile ? { file: configFile } : {}), env });
      if (kind === "session") {
        target = healthTarget(config);
        tlsFiles ??= selfCheckTls(config);
      } else {
        const admin = adminTarget(config);
        if (admin === undefined) throw new ConfigError("adminPort", `--probe ${kind} asks the admin port, and this server has none`);
        target = admin;
      }
    }
    if (tlsFiles !== undefined && kind === "session") tls = readClientTls(tlsFiles);
  } catch (error) {
    process.stderr.write(`unhealthy: ${(error as Error).message}\n`);
    return 1;
  }
  try {
    if (kind === "session") await probe(target, timeoutMs, tls);
    else await httpProbe(target, kind, timeoutMs);
    process.stdout.write(`ok: ${target} ${kind === "healthz" ? "alive" : "serving"}\n`);
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
