import type { ClientTlsOptions } from "../src/index.js";

/**
 * The load generator's only view of the system under test. The driver (bench/driver.ts) knows
 * nothing else, so a ZooKeeper (node-zookeeper-client) or etcd (etcd3) adapter is one new file in
 * bench/targets/ and one line in bench/run.ts.
 *
 * Paths are ZooKeeper-style ("/bench/k0042"); an adapter for a flat key space (etcd) maps them to
 * keys and emulates `children` with a prefix range.
 */
export interface BenchTarget {
  readonly name: string;
  /** Opens one client connection (one session) to exactly one server, `host:port`. */
  connect(host: string, options: BenchConnectOptions): Promise<BenchConnection>;
}

export interface BenchConnectOptions {
  sessionTimeoutMs: number;
  /** TLS for targets that speak it (corral's SDK); a target without TLS refuses it. */
  tls?: ClientTlsOptions;
}

export interface BenchConnection {
  /** Creates a persistent sequential node named `${prefix}<counter>` holding `value`; returns its path. */
  createSequential(prefix: string, value: Uint8Array): Promise<string>;
  /** Unconditional write of an existing node's data. */
  setData(path: string, value: Uint8Array): Promise<void>;
  /** Reads a node's data from the server this connection talks to. */
  getData(path: string): Promise<Uint8Array>;
  /** Creates a persistent node; resolves false (and changes nothing) when it already exists. */
  create(path: string, value: Uint8Array): Promise<boolean>;
  /** Names (not paths) of a node's children; [] when the node does not exist. */
  children(path: string): Promise<string[]>;
  /** Deletes a childless node whatever its version; resolves false when it does not exist. */
  delete(path: string): Promise<boolean>;
  close(): Promise<void>;
}

/** A short, stable label for an error thrown by a target ("CONNECTIONLOSS", "Error", …). */
export function errorLabel(error: unknown): string {
  if (typeof error === "object" && error !== null) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string" && code.length > 0) return code;
    if (typeof code === "number") return String(code);
    const name = (error as { name?: unknown }).name;
    if (typeof name === "string" && name.length > 0) return name;
  }
  return typeof error;
}
