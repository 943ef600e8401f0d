/**
 * TLS material for the server's ports: a certificate, its key and the CAs a peer must chain to,
 * each a PEM file, read at start-up (a bad file stops the server with a ConfigError naming its
 * field) and read again every `reloadIntervalMs`. A change that forms a valid certificate and key
 * is taken for every new connection, without a restart (etcd's and ZooKeeper's FileChangeWatcher
 * behaviour); one that does not (a rotation half written: the certificate replaced, its key not
 * yet) is logged and the previous material kept until the files are whole again.
 *
 * The same material feeds node:tls servers (setSecureContext), grpc-js servers (a ServerCredentials
 * whose secure context options are updated) and grpc-js channels (a CertificateProvider).
 */
import * as grpc from "@grpc/grpc-js";
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { createSecureContext, type PeerCertificate, type SecureContextOptions } from "node:tls";
import { ConfigError } from "./config-error.js";
import type { TlsClientAuth } from "./config.js";
import type { Logger } from "./log.js";
import { subjectOfCertificate } from "../replica/x509-name.js";

/** Where the PEM files are, and which configuration field names each (for errors). */
export interface PemFileSet {
  certFile: string;
  keyFile: string;
  /** "" = no CA file (a server that does not verify client certificates). */
  caFile: string;
  fields: { certFile: string; keyFile: string; caFile: string };
}

/** One consistent reading of the files. */
export interface PemMaterial {
  cert: Buffer;
  key: Buffer;
  ca: Buffer | undefined;
  /** Of the (first) certificate, for logs and tests: upper-case hex, subject DN, expiry. */
  serialNumber: string;
  subject: string;
  validTo: string;
}

function readPem(path: string, field: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ConfigError(field, `cannot read ${path}: ${(error as Error).message}`);
  }
}

/** What the three files hold (no CA file: undefined). */
interface PemContents {
  cert: Buffer;
  key: Buffer;
  ca: Buffer | undefined;
}

function readContents(files: PemFileSet): PemContents {
  return {
    cert: readPem(files.certFile, files.fields.certFile),
    key: readPem(files.keyFile, files.fields.keyFile),
    ca: files.caFile === "" ? undefined : readPem(files.caFile, files.fields.caFile),
  };
}

function sameContents(a: PemContents, b: PemContents): boolean {
  return a.cert.equals(b.cert) && a.key.equals(b.key) && (a.ca === undefined ? b.ca === undefined : b.ca !== undefined && a.ca.equals(b.ca));
}

/** Checks what the files hold: the certificate parses, the key is its key, the CA file holds certificates. */
function materialOf(contents: PemContents, files: PemFileSet): PemMaterial {
  const { cert, key, ca } = contents;
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cert);
  } catch (error) {
    throw new ConfigError(files.fields.certFile, `${files.certFile} is not a PEM certificate: ${(error as Error).message}`);
  }
  try {
    createSecureContext({ cert, key });
  } catch (error) {
    throw new ConfigError(files.fields.keyFile, `${files.keyFile} is not the key of ${files.certFile}: ${(error as Error).message}`);
  }
  if (ca !== undefined) {
    try {
      new X509Certificate(ca);
      createSecureContext({ ca });
    } catch (error) {
      throw new ConfigError(files.fields.caFile, `${files.caFile} is not a PEM certificate file: ${(error as Error).message}`);
    }
  }
  return {
    cert,
    key,
    ca,
    serialNumber: certificate.serialNumber.toUpperCase(),
    subject: subjectOfCertificate(certificate.raw),
    validTo: certificate.validTo,
  };
}

/** The files of one TLS identity, watched for changes. */
export class PemFiles {
  private material: PemMaterial;
  private readonly listeners = new Set<(material: PemMaterial) => void>();
  private timer: NodeJS.Timeout | undefined;
  /** What the files held at the last poll: a broken rotation is logged once, not at every poll. */
  private lastSeen: PemContents;

  /** Reads the files now; throws ConfigError if they do not form a certificate and its key. */
  constructor(
    private readonly files: PemFileSet,
    private readonly options: { reloadIntervalMs: number; logger: Logger; purpose: string },
  ) {
    this.lastSeen = readContents(files);
    this.material = materialOf(this.lastSeen, files);
    options.logger.info(this.describe(this.material), "TLS certificate loaded");
  }

  get current(): PemMaterial {
    return this.material;
  }

  /** Calls `listener` with every new material; returns the unsubscribe function. */
  onChange(listener: (material: PemMaterial) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Starts polling the files (idempotent). The timer does not keep the process alive. */
  watch(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.poll(), this.options.reloadIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.listeners.clear();
  }

  /** Reads the files again; takes them if they changed and form a certificate and its key. Exposed for tests. */
  poll(): void {
    let contents: PemContents;
    try {
      contents = readContents(this.files);
    } catch (error) {
      // A file replaced by rename can be missing for an instant: keep what we have, look again later.
      this.options.logger.debug({ purpose: this.options.purpose, reason: (error as Error).message }, "TLS files unreadable: keeping the current certificate");
      return;
    }
    if (sameContents(contents, this.lastSeen)) return;
    this.lastSeen = contents;
    if (sameContents(contents, this.material)) return;
    let next: PemMaterial;
    try {
      next = materialOf(contents, this.files);
    } catch (error) {
      this.options.logger.warn(
        { purpose: this.options.purpose, reason: (error as Error).message },
        "TLS files changed but do not form a certificate and its key: keeping the current certificate",
      );
      return;
    }
    this.material = next;
    this.options.logger.info(this.describe(next), "TLS certificate reloaded");
    for (const listener of this.listeners) listener(next);
  }

  private describe(material: PemMaterial): Record<string, unknown> {
    return {
      purpose: this.options.purpose,
      certFile: this.files.certFile,
      serialNumber: material.serialNumber,
      subject: material.subject,
      validTo: material.validTo,
    };
  }
}

function contextOptions(material: PemMaterial): SecureContextOptions {
  return { cert: material.cert, key: material.key, ...(material.ca === undefined ? {} : { ca: material.ca }) };
}

/** Options for a node:tls server: ZooKeeper's ssl.clientAuth as requestCert / rejectUnauthorized. */
export function tlsServerOptions(
  material: PemMaterial,
  clientAuth: TlsClientAuth,
): SecureContextOptions & { requestCert: boolean; rejectUnauthorized: boolean } {
  return { ...contextOptions(material), requestCert: clientAuth !== "none", rejectUnauthorized: clientAuth === "need" };
}

/**
 * grpc-js server credentials that follow `files`: every new connection is served with the latest
 * material (grpc-js calls setSecureContext on its HTTP/2 server when the options change).
 */
class ReloadingServerCredentials extends grpc.ServerCredentials {
  constructor(files: PemFiles, clientAuth: TlsClientAuth) {
    super({ requestCert: clientAuth !== "none", rejectUnauthorized: clientAuth === "need" }, contextOptions(files.current));
    files.onChange((material) => this.updateSecureContextOptions(contextOptions(material)));
  }

  override _equals(other: grpc.ServerCredentials): boolean {
    return this === other;
  }
}

export function serverCredentials(files: PemFiles, clientAuth: TlsClientAuth): grpc.ServerCredentials {
  return new ReloadingServerCredentials(files, clientAuth);
}

/**
 * A grpc-js CertificateProvider over `files`: the CA and this server's identity, updated when the
 * files change. Listeners are called on the next tick, as grpc-js's own providers do.
 */
class PemCertificateProvider implements grpc.experimental.CertificateProvider {
  private readonly caListeners = new Set<grpc.experimental.CaCertificateUpdateListener>();
  private readonly identityListeners = new Set<grpc.experimental.IdentityCertificateUpdateListener>();

  constructor(private readonly files: PemFiles) {
    files.onChange((material) => {
      for (const listener of this.caListeners) listener(material.ca === undefined ? null : { caCertificate: material.ca });
      for (const listener of this.identityListeners) listener({ certificate: material.cert, privateKey: material.key });
    });
  }

  addCaCertificateListener(listener: grpc.experimental.CaCertificateUpdateListener): void {
    this.caListeners.add(listener);
    const ca = this.files.current.ca;
    process.nextTick(listener, ca === undefined ? null : { caCertificate: ca });
  }

  removeCaCertificateListener(listener: grpc.experimental.CaCertificateUpdateListener): void {
    this.caListeners.delete(listener);
  }

  addIdentityCertificateListener(listener: grpc.experimental.IdentityCertificateUpdateListener): void {
    this.identityListeners.add(listener);
    const { cert, key } = this.files.current;
    process.nextTick(listener, { certificate: cert, privateKey: key });
  }

  removeIdentityCertificateListener(listener: grpc.experimental.IdentityCertificateUpdateListener): void {
    this.identityListeners.delete(listener);
  }
}

/**
 * grpc-js channel credentials presenting `files`' certificate and trusting its CAs; every new
 * connection uses the latest material. `verifyHostname: false` skips the check that the server's
 * certificate names the host dialled (the chain is still verified).
 */
export function channelCredentials(files: PemFiles, options: { verifyHostname: boolean }): grpc.ChannelCredentials {
  const provider = new PemCertificateProvider(files);
  return grpc.experimental.createCertificateProviderChannelCredentials(
    provider,
    provider,
    options.verifyHostname ? {} : { checkServerIdentity: () => undefined },
  );
}

/** The x509 subject DN of a verified peer certificate (node:tls or grpc-js auth context), if it has one that parses. */
export function subjectOfPeer(certificate: PeerCertificate | undefined): string | undefined {
  if (certificate === undefined || certificate.raw === undefined || certificate.raw.byteLength === 0) return undefined;
  try {
    return subjectOfCertificate(certificate.raw);
  } catch {
    return undefined;
  }
}

/**
 * What a client of this server presents and checks when it connects to this server's own TLS
 * port (the web console): this server's certificate and key, its CAs, and the first DNS name its
 * certificate carries (the loopback address it dials is rarely in the certificate).
 */
export function selfConnectionTls(material: PemMaterial): { ca?: Buffer; cert: Buffer; key: Buffer; servername?: string } {
  let servername: string | undefined;
  try {
    const names = new X509Certificate(material.cert).subjectAltName ?? "";
    servername = [...names.matchAll(/(?:^|, )DNS:([^,]+)/g)].map((m) => m[1]!).find((name) => !name.startsWith("*"));
  } catch {
    servername = undefined;
  }
  return {
    cert: material.cert,
    key: material.key,
    ...(material.ca === undefined ? {} : { ca: material.ca }),
    ...(servername === undefined ? {} : { servername }),
  };
}
