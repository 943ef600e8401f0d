/**
 * The client side's TLS flags, shared by `corral shell`, `corral health`, `corral cluster`'s
 * readiness probe and the bench: PEM files named on the command line, read into what
 * `Client.connect(…, { tls })` takes.
 */
import { readFileSync } from "node:fs";
import type { ClientTlsOptions } from "../client/types.js";
import { ConfigError } from "../server/config-error.js";

/** Where the client's TLS material is; every field optional (no CA file: the system's roots). */
export interface TlsFileOptions {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  servername?: string;
}

/** Flag name → field. */
export const TLS_FLAGS = {
  "tls-ca-file": "caFile",
  "tls-cert-file": "certFile",
  "tls-key-file": "keyFile",
  "tls-servername": "servername",
} as const satisfies Record<string, keyof TlsFileOptions>;

export type TlsFlag = keyof typeof TLS_FLAGS;

export function isTlsFlag(name: string): name is TlsFlag {
  return Object.hasOwn(TLS_FLAGS, name);
}

/** Sets the field `flag` names; a blank value is a ConfigError naming the flag. */
export function setTlsFlag(files: TlsFileOptions, flag: TlsFlag, value: string): void {
  if (value.trim() === "") throw new ConfigError(flag, "must not be empty");
  files[TLS_FLAGS[flag]] = value;
}

/** The `--tls-*` flags among `flags`, or undefined when there are none. */
export function tlsFilesFromFlags(flags: Readonly<Record<string, string | undefined>>): TlsFileOptions | undefined {
  let files: TlsFileOptions | undefined;
  for (const flag of Object.keys(TLS_FLAGS) as TlsFlag[]) {
    const value = flags[flag];
    if (value === undefined) continue;
    files ??= {};
    setTlsFlag(files, flag, value);
  }
  return files;
}

function flagOf(field: keyof TlsFileOptions): TlsFlag {
  return (Object.keys(TLS_FLAGS) as TlsFlag[]).find((flag) => TLS_FLAGS[flag] === field)!;
}

function read(files: TlsFileOptions, field: "caFile" | "certFile" | "keyFile"): Buffer | undefined {
  const path = files[field];
  if (path === undefined) return undefined;
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ConfigError(flagOf(field), `cannot read ${path}: ${(error as Error).message}`);
  }
}

/** Reads the files into the SDK's `tls` option; a missing file or a lone cert/key is a ConfigError naming the flag. */
export function readClientTls(files: TlsFileOptions): ClientTlsOptions {
  if ((files.certFile === undefined) !== (files.keyFile === undefined)) {
    throw new ConfigError(files.certFile === undefined ? "tls-cert-file" : "tls-key-file", "--tls-cert-file and --tls-key-file go together");
  }
  const ca = read(files, "caFile");
  const cert = read(files, "certFile");
  const key = read(files, "keyFile");
  return {
    ...(ca === undefined ? {} : { ca }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key }),
    ...(files.servername === undefined ? {} : { servername: files.servername }),
  };
}
