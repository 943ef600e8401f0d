import { parseArgs } from "node:util";
import { tlsFilesFromFlags, type TlsFileOptions } from "../src/cli/tls-options.js";
import { WORKLOADS, isWorkloadName, type WorkloadName } from "./driver.js";

/** Defaults are the reference throughput setup (bench/README.md, "The bar"), so a bare `npm run bench` is comparable to it. */
export interface BenchOptions {
  /** One entry per server; connection i goes to hosts[i % hosts.length]. */
  hosts: string[];
  connections: number;
  inflight: number;
  warmupS: number;
  durationS: number;
  valueBytes: number;
  keys: number;
  workloads: WorkloadName[];
  target: string;
  jsonOut: string | undefined;
  root: string;
  readPercent: number;
  sessionTimeoutMs: number;
  connectTimeoutS: number;
  cleanupTimeoutS: number;
  drainTimeoutS: number;
  keep: boolean;
  seed: number;
  help: boolean;
  /** Connect over TLS (--tls or any --tls-* flag), as `corral shell` does; undefined = plain text. */
  tls: TlsFileOptions | undefined;
}

export const USAGE = `usage: npm run bench -- [flags]     (or: node dist/bench/run.js [flags])

Drives a running server or cluster closed-loop and prints one JSON line per workload on stdout:
{"target","workload","connections","inflight","valueBytes","durationS","ops","opsPerSec",
 "p50Ms","p99Ms","p999Ms","errors"}. Progress goes to stderr.

  --connect HOSTS          host:port[,host:port...]; connections round-robin over them  [127.0.0.1:2181]
  --connections N          client connections (sessions)                                 [8]
  --inflight K             requests each connection keeps in flight                      [16]
  --warmup-s S             warm-up per workload, not measured                            [2]
  --duration-s S           measured window per workload                                  [10]
  --value-bytes B          payload of every create / setData                             [100]
  --keys N                 key space for getData / setData: ROOT/k0000 ...               [1000]
  --workloads LIST         comma-separated: ${WORKLOADS.join(",")}  [all]
                           (mixed = 90 % getData / 10 % setData; see --read-percent)
  --target NAME            system adapter in bench/targets/                              [corral]
                           corral: corral's SDK (gRPC port); zookeeper: node-zookeeper-client,
                           for ZooKeeper or corral's ZooKeeper-protocol port (zkClientPort)
  --json-out FILE          also append the JSON lines to FILE
  --root PATH              where the key space lives (kept between runs)                 [/bench]
  --read-percent P         getData share of "mixed"                                      [90]
  --session-timeout-ms MS  requested session timeout                                     [10000]
  --connect-timeout-s S    give up connecting after S                                    [10]
  --drain-timeout-s S      wait for requests still in flight after a window              [10]
  --cleanup-timeout-s S    bound on deleting the sequential nodes created                [60]
  --keep                   leave the sequential nodes (ROOT/seq-<run>) in place
  --seed N                 seed for key choice (default: random, printed)
  --tls                    connect over TLS (a server with clientPortTls); the system's CAs unless:
  --tls-ca-file F          CAs the servers' certificates must chain to (PEM)
  --tls-cert-file F        client certificate (PEM), with --tls-key-file F, for tlsClientAuth need/want
  --tls-servername NAME    the name the servers' certificates must carry, if not the host dialled
  --failover               measure leader failover on a cluster of its own instead (--failover --help)
  --help`;

function positiveInteger(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${flag} must be a positive integer, got "${text}"`);
  return value;
}

function nonNegativeNumber(flag: string, text: string): number {
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value) || value < 0) throw new Error(`--${flag} must be a number ≥ 0, got "${text}"`);
  return value;
}

/** "a:1,b:2/chroot" → ["a:1/chroot", "b:2/chroot"]. */
export function splitConnectString(connect: string): string[] {
  const slash = connect.indexOf("/");
  const chroot = slash === -1 ? "" : connect.slice(slash);
  const hostPart = slash === -1 ? connect : connect.slice(0, slash);
  const hosts = hostPart
    .split(",")
    .map((h) => h.trim())
    .filter((h) => h.length > 0);
  if (hosts.length === 0) throw new Error(`--connect has no host: "${connect}"`);
  for (const host of hosts) {
    if (!/^(\[[0-9a-fA-F:.]+\]|[^:\s]+):\d{1,5}$/.test(host)) throw new Error(`--connect: "${host}" is not host:port`);
  }
  return hosts.map((h) => h + chroot);
}

export function parseBenchArgs(argv: readonly string[]): BenchOptions {
  const { values, positionals } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: true,
    options: {
      connect: { type: "string", default: "127.0.0.1:2181" },
      connections: { type: "string", default: "8" },
      inflight: { type: "string", default: "16" },
      "warmup-s": { type: "string", default: "2" },
      "duration-s": { type: "string", default: "10" },
      "value-bytes": { type: "string", default: "100" },
      keys: { type: "string", default: "1000" },
      workloads: { type: "string", default: WORKLOADS.join(",") },
      target: { type: "string", default: "corral" },
      "json-out": { type: "string" },
      root: { type: "string", default: "/bench" },
      "read-percent": { type: "string", default: "90" },
      "session-timeout-ms": { type: "string", default: "10000" },
      "connect-timeout-s": { type: "string", default: "10" },
      "drain-timeout-s": { type: "string", default: "10" },
      "cleanup-timeout-s": { type: "string", default: "60" },
      keep: { type: "boolean", default: false },
      seed: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
      tls: { type: "boolean", default: false },
      "tls-ca-file": { type: "string" },
      "tls-cert-file": { type: "string" },
      "tls-key-file": { type: "string" },
      "tls-servername": { type: "string" },
    },
  });
  if (positionals.length > 0) throw new Error(`unexpected argument: ${positionals[0]}`);

  const workloads: WorkloadName[] = [];
  for (const name of values.workloads
    .split(",")
    .map((w) => w.trim())
    .filter((w) => w.length > 0)) {
    if (!isWorkloadName(name)) throw new Error(`unknown workload "${name}"; known: ${WORKLOADS.join(", ")}`);
    if (!workloads.includes(name)) workloads.push(name);
  }
  if (workloads.length === 0) throw new Error("--workloads is empty");

  const root = values.root;
  if (!root.startsWith("/") || (root.length > 1 && root.endsWith("/")) || root.includes("//")) {
    throw new Error(`--root must be an absolute path without trailing "/", got "${root}"`);
  }
  const readPercent = nonNegativeNumber("read-percent", values["read-percent"]);
  if (readPercent > 100) throw new Error(`--read-percent must be ≤ 100`);
  const durationS = nonNegativeNumber("duration-s", values["duration-s"]);
  if (durationS === 0) throw new Error("--duration-s must be > 0");
  const valueBytes = Number(values["value-bytes"]);
  if (!Number.isInteger(valueBytes) || valueBytes < 0) throw new Error(`--value-bytes must be an integer ≥ 0`);
  const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 32) : Number(values.seed);
  if (!Number.isInteger(seed) || seed < 0 || seed >= 2 ** 32) throw new Error(`--seed must be an integer in [0, 2^32)`);

  return {
    hosts: splitConnectString(values.connect),
    connections: positiveInteger("connections", values.connections),
    inflight: positiveInteger("inflight", values.inflight),
    warmupS: nonNegativeNumber("warmup-s", values["warmup-s"]),
    durationS,
    valueBytes,
    keys: positiveInteger("keys", values.keys),
    workloads,
    target: values.target,
    jsonOut: values["json-out"],
    root,
    readPercent,
    sessionTimeoutMs: positiveInteger("session-timeout-ms", values["session-timeout-ms"]),
    connectTimeoutS: nonNegativeNumber("connect-timeout-s", values["connect-timeout-s"]),
    cleanupTimeoutS: nonNegativeNumber("cleanup-timeout-s", values["cleanup-timeout-s"]),
    drainTimeoutS: nonNegativeNumber("drain-timeout-s", values["drain-timeout-s"]),
    keep: values.keep,
    seed,
    help: values.help,
    tls: tlsOptions(values),
  };
}

function tlsOptions(values: { tls: boolean } & Record<string, unknown>): TlsFileOptions | undefined {
  let files: TlsFileOptions | undefined;
  try {
    files = tlsFilesFromFlags(values as Record<string, string | undefined>);
  } catch (error) {
    throw new Error(`--${(error as { field?: string }).field ?? "tls"}: ${(error as Error).message}`, { cause: error });
  }
  return files ?? (values.tls ? {} : undefined);
}
