/**
 * A real corral cluster for integration tests: N server processes on 127.0.0.1 sharing one config
 * file (random free ports, one temp data dir each), each restartable alone. Roles are read from
 * each server's structured "role changed" log lines, so tests see what the servers say of
 * themselves rather than guessing.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ServerEntry as ConfigServerEntry } from "../../src/server/cluster-servers.js";
import { freePort, ServerProcess } from "./server-process.js";
import { makeTempDir } from "./temp-dir.js";

export interface ClusterOptions {
  voters: number;
  observers?: number;
  tickMs?: number;
  initLimitTicks?: number;
  syncLimitTicks?: number;
  commitLogCount?: number;
  snapshotEveryTxns?: number;
  snapshotRetainCount?: number;
  /** More fields of the shared config file (e.g. ttlNodesEnabled, containerCheckIntervalMs, enforceQuota). */
  config?: Record<string, unknown>;
  /** The servers' super user ("super:<base64 sha1>"); none when absent. */
  superDigest?: string;
  /** Give each server a Prometheus metrics port and an admin HTTP port (in its servers entry). */
  httpPorts?: boolean;
  /** Give every server a ZooKeeper-protocol port over TLS too (the TLS fields go in `config`). */
  secureZkClientPorts?: boolean;
  /** Extra environment variables for every server process (e.g. KRB5_CONFIG). */
  env?: Record<string, string>;
  /** Flags for one server only (they beat the shared file), e.g. another certificate. */
  serverArgs?: (id: number) => string[];
  /** Server `id`'s data dir, when it is laid down beforehand (e.g. restored); a fresh one in the cluster's temp dir otherwise. */
  dataDirOf?: (id: number) => string;
  /**
   * Servers outside the configuration, started as ZooKeeper's procedure for adding one says: with
   * the configuration's members and themselves (as participants) in their own config file. They
   * learn from the leader until a reconfig adds them. Ids after the voters and observers.
   */
  spares?: number;
}

/** One server's entry in the config file (with its ZooKeeper port): the addresses a reconfig's member line names. */
export type ServerEntry = Pick<ConfigServerEntry, "id" | "host" | "clientPort" | "quorumPort" | "electionPort" | "role"> & { zkClientPort: number };

export interface RoleLine {
  role: "looking" | "leading" | "following" | "observing";
  leader?: number;
  epoch?: number;
}

export class ClusterProcess {
  private constructor(
    readonly servers: Map<number, ServerProcess>,
    readonly configFile: string,
    private readonly removeDir: () => Promise<void>,
    readonly entries: readonly ServerEntry[] = [],
  ) {}

  /** ZooKeeper's member line for server `id` ("server.N=host:quorum:election:role;host:zkPort"), as reconfig takes it. */
  memberLine(id: number, role: "participant" | "observer" = "participant"): string {
    const e = this.entries.find((entry) => entry.id === id);
    if (e === undefined) throw new Error(`no server ${id}`);
    return `server.${id}=${e.host}:${e.quorumPort}:${e.electionPort}:${role};${e.host}:${e.zkClientPort}`;
  }

  static async start(options: ClusterOptions): Promise<ClusterProcess> {
    const dir = await makeTempDir("corral-cluster-");
    const members = options.voters + (options.observers ?? 0);
    const count = members + (options.spares ?? 0);
    const entries: (ServerEntry & { metricsPort?: number; adminPort?: number; secureZkClientPort?: number })[] = [];
    for (let id = 1; id <= count; id++) {
      entries.push({
        id,
        host: "127.0.0.1",
        clientPort: await freePort(),
        quorumPort: await freePort(),
        electionPort: await freePort(),
        role: id <= options.voters || id > members ? ("participant" as const) : ("observer" as const),
        zkClientPort: await freePort(),
        ...(options.httpPorts ? { metricsPort: await freePort(), adminPort: await freePort() } : {}),
        ...(options.secureZkClientPorts ? { secureZkClientPort: await freePort() } : {}),
      });
    }
    const tickMs = options.tickMs ?? 100;
    const configFile = join(dir.path, "cluster.json");
    const fileFor = async (path: string, servers: typeof entries) =>
      writeFile(
        path,
        JSON.stringify(
          {
            tickMs,
            initLimitTicks: options.initLimitTicks ?? 20,
            syncLimitTicks: options.syncLimitTicks ?? 10,
            ...(options.commitLogCount === undefined ? {} : { commitLogCount: options.commitLogCount }),
            ...options.config,
            ...(options.superDigest === undefined ? {} : { superDigest: options.superDigest }),
            servers,
          },
          null,
          2,
        ),
      );
    await fileFor(configFile, entries.slice(0, members));
    // A spare's own file: the members and itself.
    for (const spare of entries.slice(members)) await fileFor(join(dir.path, `spare-${spare.id}.json`), [...entries.slice(0, members), spare]);
    const servers = new Map<number, ServerProcess>();
    const cluster = new ClusterProcess(servers, configFile, dir.remove, entries);
    try {
      await Promise.all(
        entries.map(async (entry) => {
          const server = await ServerProcess.start({
            dataDir: options.dataDirOf?.(entry.id) ?? join(dir.path, String(entry.id)),
            port: entry.clientPort,
            zkPort: entry.zkClientPort,
            // The same ports as the server's entry (a flag must agree with it).
            ...(entry.metricsPort === undefined ? {} : { metricsPort: entry.metricsPort, adminPort: entry.adminPort }),
            ...(entry.secureZkClientPort === undefined ? {} : { secureZkPort: entry.secureZkClientPort }),
            serverId: entry.id,
            tickMs,
            logLevel: "info",
            ...(options.snapshotEveryTxns === undefined ? {} : { snapshotEveryTxns: options.snapshotEveryTxns }),
            ...(options.snapshotRetainCount === undefined ? {} : { snapshotRetainCount: options.snapshotRetainCount }),
            ...(options.env === undefined ? {} : { env: options.env }),
            extraArgs: ["--config", entry.id > members ? join(dir.path, `spare-${entry.id}.json`) : configFile, ...(options.serverArgs?.(entry.id) ?? [])],
          });
          servers.set(entry.id, server);
        }),
      );
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  get connectString(): string {
    return [...this.servers.values()].map((s) => s.connectString).join(",");
  }

  /** Every server's ZooKeeper-protocol port, for zkCli.sh, node-zookeeper-client and the like. */
  get zkConnectString(): string {
    return [...this.servers.values()].map((s) => s.zkConnectString).join(",");
  }

  server(id: number): ServerProcess {
    const server = this.servers.get(id);
    if (!server) throw new Error(`no server ${id}`);
    return server;
  }

  /** The last role each running server logged. */
  roles(): Map<number, RoleLine> {
    return rolesOf(this.servers);
  }

  /** The id of the server that last logged itself leading, if every running server agrees on it. */
  agreedLeader(): number | undefined {
    return agreedLeaderOf(this.servers);
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.servers.values()].map((s) => s.stop()));
    await this.removeDir();
  }
}

/** The last role each running server of `servers` logged. */
export function rolesOf(servers: ReadonlyMap<number, ServerProcess>): Map<number, RoleLine> {
  const roles = new Map<number, RoleLine>();
  for (const [id, server] of servers) {
    if (!server.running) continue;
    const last = lastRoleLine(server.stderr);
    if (last) roles.set(id, last);
  }
  return roles;
}

/** The server that last logged itself leading, if every running server of `servers` agrees on it. */
export function agreedLeaderOf(servers: ReadonlyMap<number, ServerProcess>): number | undefined {
  const roles = rolesOf(servers);
  const leaders = [...roles].filter(([, r]) => r.role === "leading").map(([id]) => id);
  if (leaders.length !== 1) return undefined;
  const leader = leaders[0]!;
  for (const [id, server] of servers) {
    if (!server.running || id === leader) continue;
    const role = roles.get(id);
    if (!role || (role.role !== "following" && role.role !== "observing") || role.leader !== leader) return undefined;
  }
  return leader;
}

export function lastRoleLine(stderr: string): RoleLine | undefined {
  // Searched from the end: a chaos run's servers log for half an hour and are asked often.
  const marker = '"role changed"';
  for (let at = stderr.lastIndexOf(marker); at >= 0; at = at === 0 ? -1 : stderr.lastIndexOf(marker, at - 1)) {
    const start = stderr.lastIndexOf("\n", at) + 1;
    const end = stderr.indexOf("\n", at);
    if (end < 0) continue; // a torn last line: the next read sees it whole
    try {
      return JSON.parse(stderr.slice(start, end)) as RoleLine;
    } catch {
      // not one of our lines after all; look further back
    }
  }
  return undefined;
}
