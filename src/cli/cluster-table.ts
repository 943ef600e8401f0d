/**
 * What `corral cluster` prints of its members: one row per member (ids, roles, every port, data
 * dir, pid) and how to connect, at start-up and after each membership change.
 */
import { isAbsolute, join, relative } from "node:path";
import { clusterConnectString, clusterSecureZkConnectString, clusterZkConnectString, formatHostPort, type ServerEntry } from "../server/cluster-servers.js";
import type { ClusterTls } from "./cluster.js";

/** A path relative to the working directory when it lies under it. */
export function display(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel) ? rel : path;
}

export interface TableRow {
  entry: ServerEntry;
  liveRole: string | undefined;
  pid: number | undefined;
}

export interface ConnectStrings {
  grpc: string;
  zk: string | undefined;
  secureZk: string | undefined;
}

export function connectStrings(servers: readonly ServerEntry[], host: string): ConnectStrings {
  return {
    grpc: clusterConnectString({ servers: [...servers], clientHost: host, clientPort: 0 }),
    zk: clusterZkConnectString({ servers: [...servers], clientHost: host, zkClientPort: -1 }),
    secureZk: clusterSecureZkConnectString({ servers: [...servers], clientHost: host, secureZkClientPort: -1 }),
  };
}

/** The member table; roles as configured, plus what each server logged of its own when all did. */
export function memberTable(rows: readonly TableRow[], dataDir: string): string {
  const live = rows.every((r) => r.liveRole !== undefined);
  const secure = rows.some((r) => r.entry.secureZkClientPort !== undefined);
  const port = (host: string, value: number | undefined) => (value === undefined ? "-" : formatHostPort(host, value));
  const cells = rows.map(({ entry: e, liveRole, pid }) => [
    String(e.id),
    live ? `${e.role}, ${liveRole}` : e.role,
    port(e.host, e.clientPort),
    port(e.host, e.zkClientPort),
    ...(secure ? [port(e.host, e.secureZkClientPort)] : []),
    port(e.host, e.metricsPort),
    port(e.host, e.adminPort),
    port(e.host, e.quorumPort),
    port(e.host, e.electionPort),
    display(join(dataDir, String(e.id))),
    pid === undefined ? "-" : String(pid),
  ]);
  const header = ["id", "role", "client", "zookeeper", ...(secure ? ["zookeeper-tls"] : []), "metrics", "admin", "quorum", "election", "data", "pid"];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  const line = (row: string[]) =>
    "  " +
    row
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd() +
    "\n";
  return line(header) + cells.map(line).join("");
}

/** Whether every row shows a role the server logged itself. */
export function rolesAreLive(rows: readonly TableRow[]): boolean {
  return rows.every((r) => r.liveRole !== undefined);
}

/** How to connect: the SDK, the shell over TLS, any ZooKeeper client. */
export function connectLines(strings: ConnectStrings, tls: ClusterTls | undefined): string {
  return (
    (tls === undefined
      ? `connect with: Client.connect("${strings.grpc}")\n`
      : `connect with: Client.connect("${strings.grpc}", { tls: { ca, cert, key } })  (ca: ${display(tls.caFile)}; a client certificate ${tls.clientAuth === "need" ? "is required" : tls.clientAuth === "want" ? "gives an x509 id" : "is not asked for"})\n` +
        `or: corral shell --connect ${strings.grpc} --tls-ca-file ${display(tls.caFile)} --tls-cert-file CERT --tls-key-file KEY\n`) +
    (strings.zk === undefined ? "" : `or any ZooKeeper client: zkCli.sh -server ${strings.zk}\n`) +
    (strings.secureZk === undefined
      ? ""
      : `or any ZooKeeper client over TLS: zkCli.sh -server ${strings.secureZk} with CLIENT_JVMFLAGS="-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty -Dzookeeper.client.secure=true -Dzookeeper.ssl.trustStore.location=${display(tls!.caFile)} -Dzookeeper.ssl.trustStore.type=PEM -Dzookeeper.ssl.keyStore.location=KEY_AND_CERT.pem -Dzookeeper.ssl.keyStore.type=PEM"\n`)
  );
}
