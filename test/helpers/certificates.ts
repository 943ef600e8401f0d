/**
 * Certificates for TLS tests, made with the openssl command line in a temp dir: a CA, server
 * certificates for 127.0.0.1 / localhost, client certificates with chosen subjects, and a second,
 * untrusted CA. Keys are EC P-256 in PKCS#8 PEM (what node:tls, grpc-js and ZooKeeper's PEM
 * key store all read). Nothing is cached between test files; `remove()` deletes it all.
 */
import { execFile } from "node:child_process";
import { randomBytes, X509Certificate } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect as connectTls, type ConnectionOptions } from "node:tls";
import { promisify } from "node:util";
import { makeTempDir } from "./temp-dir.js";

const run = promisify(execFile);

export interface IssuedCertificate {
  /** PEM certificate file. */
  certFile: string;
  /** PEM private key file (PKCS#8). */
  keyFile: string;
  /** Certificate and key in one PEM file: ZooKeeper's `PEM` key store type. */
  keyStoreFile: string;
  /** Upper-case hex, as X509Certificate.serialNumber shows it. */
  serialNumber: string;
  /** The subject as given to openssl (`/CN=…/O=…`). */
  subject: string;
  cert: Buffer;
  key: Buffer;
}

export interface IssueOptions {
  /** openssl -subj syntax: `/CN=name/O=org`; `+` joins attributes of one RDN. */
  subject: string;
  /** subjectAltName entries; server certificates get IP:127.0.0.1 and DNS:localhost by default. */
  subjectAltNames?: string[];
  /** Hex; random when absent. */
  serialNumber?: string;
  /** The files' base name; from the subject when absent. */
  name?: string;
}

/** One certificate authority in its own directory. */
export class TestCa {
  private issued = 0;

  private constructor(
    readonly dir: string,
    readonly name: string,
    /** The CA certificate (PEM): what clients and servers trust. */
    readonly caFile: string,
    private readonly caKeyFile: string,
  ) {}

  static async create(dir: string, name: string): Promise<TestCa> {
    const caFile = join(dir, `${name}-ca.pem`);
    const caKeyFile = join(dir, `${name}-ca.key`);
    await openssl([
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      caKeyFile,
      "-out",
      caFile,
      "-days",
      "3",
      "-subj",
      `/CN=${name} test CA`,
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    return new TestCa(dir, name, caFile, caKeyFile);
  }

  get ca(): Buffer {
    return readFileSync(this.caFile);
  }

  /** A certificate signed by this CA, usable by a server and a client alike. */
  async issue(options: IssueOptions): Promise<IssuedCertificate> {
    const base = join(this.dir, `${this.name}-${options.name ?? `cert${++this.issued}`}`);
    const keyFile = `${base}.key`;
    const csrFile = `${base}.csr`;
    const certFile = `${base}.pem`;
    const extFile = `${base}.ext`;
    const serialNumber = (options.serialNumber ?? "5" + randomBytes(8).toString("hex")).toUpperCase();
    const subjectAltNames = options.subjectAltNames ?? ["IP:127.0.0.1", "DNS:localhost"];
    writeFileSync(
      extFile,
      [
        "basicConstraints=CA:FALSE",
        "keyUsage=critical,digitalSignature,keyEncipherment,keyAgreement",
        "extendedKeyUsage=serverAuth,clientAuth",
        ...(subjectAltNames.length > 0 ? [`subjectAltName=${subjectAltNames.join(",")}`] : []),
      ].join("\n") + "\n",
    );
    await openssl([
      "req",
      "-new",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-utf8",
      "-multivalue-rdn",
      "-keyout",
      keyFile,
      "-out",
      csrFile,
      "-subj",
      options.subject,
    ]);
    await openssl([
      "x509",
      "-req",
      "-in",
      csrFile,
      "-CA",
      this.caFile,
      "-CAkey",
      this.caKeyFile,
      "-set_serial",
      `0x${serialNumber}`,
      "-days",
      "2",
      "-extfile",
      extFile,
      "-out",
      certFile,
    ]);
    const cert = readFileSync(certFile);
    const key = readFileSync(keyFile);
    const keyStoreFile = `${base}-keystore.pem`;
    writeFileSync(keyStoreFile, Buffer.concat([key, cert]));
    return { certFile, keyFile, keyStoreFile, serialNumber: new X509Certificate(cert).serialNumber.toUpperCase(), subject: options.subject, cert, key };
  }
}

/** A trusted CA and an untrusted one, in one temp dir. */
export interface TestPki {
  dir: string;
  trusted: TestCa;
  /** A CA nobody is configured to trust: what it signs must be refused. */
  untrusted: TestCa;
  remove(): Promise<void>;
}

export async function makeTestPki(): Promise<TestPki> {
  const dir = await makeTempDir("corral-tls-");
  try {
    const trusted = await TestCa.create(dir.path, "trusted");
    const untrusted = await TestCa.create(dir.path, "untrusted");
    return { dir: dir.path, trusted, untrusted, remove: dir.remove };
  } catch (error) {
    await dir.remove();
    throw error;
  }
}

async function openssl(args: string[]): Promise<void> {
  try {
    await run("openssl", args, { timeout: 30_000 });
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`openssl ${args.slice(0, 2).join(" ")} failed: ${e.stderr ?? e.message}`, { cause: error });
  }
}

/** The serial number (upper-case hex) of the certificate a TLS port on 127.0.0.1 presents now. */
export async function presentedSerial(port: number, options: ConnectionOptions): Promise<string> {
  const socket = connectTls({ host: "127.0.0.1", port, ...options });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("secureConnect", () => resolve());
      socket.once("error", reject);
    });
    return socket.getPeerCertificate().serialNumber.toUpperCase();
  } finally {
    socket.destroy();
  }
}
