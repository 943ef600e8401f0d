/**
 * An embedded corral for tests and examples: one server, or a cluster of N members, running inside
 * the calling process on free loopback ports with a temporary data directory, started in one call
 * and stopped — data directory removed — in one call.
 *
 * ```ts
 * import { startCluster } from "corral/embed";
 * const cluster = await startCluster({ voters: 3 });
 * // Client.connect(cluster.connectString), or any ZooKeeper client on cluster.zkConnectString
 * await cluster.stop();
 * ```
 *
 * The servers are the production ones (real LevelDB with fsync, real gRPC and TCP on 127.0.0.1),
 * only hosted in your process instead of their own; see docs/embed.md.
 *
 * @module
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ServerEntry } from "../server/cluster-servers.js";
import { resolveConfig, type ServerConfig } from "../server/config.js";
import { createLogger } from "../server/log.js";
import { CorralServer } from "../server/server.js";
import { freePort } from "./free-ports.js";

/**
 * The server settings an embedded server or cluster takes; each is the field of the same name in
 * corral's configuration reference (docs/operations/configuration.md). The rest — ports, hosts,
 * data directories, the member list — the embedding chooses.
 */
export interface EmbeddedSettings {
  /** ZooKeeper's tickTime, the unit of session timeouts and of initLimit and syncLimit (default 2000). */
  tickMs?: number;
  /** The shortest session timeout granted (default 2 ticks). */
  minSessionTimeoutMs?: number;
  /** The longest session timeout granted (default 20 ticks). */
  maxSessionTimeoutMs?: number;
  /** Allow TTL nodes (default false: a TTL create is UNIMPLEMENTED). */
  ttlNodesEnabled?: boolean;
  /** A member cut off from its quorum serves reads to clients that accept read-only (default false). */
  readOnlyModeEnabled?: boolean;
  /** Allow `reconfig`, membership changes by the super user (default false). */
  reconfigEnabled?: boolean;
  /** Refuse writes past a quota's hard limit with QUOTAEXCEEDED (default false). */
  enforceQuota?: boolean;
  /** The space quota: past this estimate of the tree's memory, writes that grow it are QUOTAEXCEEDED (default 0: half the heap limit). */
  spaceQuotaBytes?: number;
  /** The super user, `super:<base64 SHA-1 of "super:password">` as `generateDigest("super:password")` gives it (default none). */
  superDigest?: string;
  /** How often the leader deletes empty containers and expired TTL nodes, in ms (default 60000). */
  containerCheckIntervalMs?: number;
  /** Take a snapshot after about this many applied txns (default 100000). */
  snapshotEveryTxns?: number;
  /** The four-letter words the ZooKeeper port answers, comma-separated (default `*`, all of them). */
  fourLetterWordWhitelist?: string;
  /**
   * The servers' log level on stderr: fatal, error, warn, info, debug, trace or silent (default
   * `error`; the CORRAL_LOG_LEVEL environment variable overrides it).
   */
  logLevel?: string;
}

/** What {@link startServer} takes. */
export interface StartServerOptions {
  /** Server settings; unset ones keep corral's defaults. */
  settings?: EmbeddedSettings;
}

/** What {@link startCluster} takes. */
export interface StartClusterOptions {
  /** Voting members, ids 1..voters (default 3). */
  voters?: number;
  /** Observers after them: they serve clients and learn every write but never vote (default 0). */
  observers?: number;
  /** Settings every member shares; unset ones keep corral's defaults. */
  settings?: EmbeddedSettings;
  /** How long to wait for every member to serve before giving up and cleaning up, in ms (default 60000). */
  startTimeoutMs?: number;
}

/** One member of an embedded cluster, which can be stopped and started again on its own ports and data. */
export interface EmbeddedMember {
  /** Its id, 1.. (voters first). */
  readonly serverId: number;
  /** `participant` (votes) or `observer`. */
  readonly role: "participant" | "observer";
  /** `host:port` of its gRPC client port, for `Client.connect`. */
  readonly connectString: string;
  /** `host:port` of its ZooKeeper-protocol port, for any ZooKeeper client. */
  readonly zkConnectString: string;
  /** Its data directory (the txn log and snapshots), inside the cluster's temporary directory. */
  readonly dataDir: string;
  /** Whether it is running (started and not stopped). */
  readonly running: boolean;
  /** Stops it, as a crash-free shutdown; its data stays for {@link EmbeddedMember.start}. Resolves once it has stopped. */
  stop(): Promise<void>;
  /** Starts it again on the same ports and data; resolves once it is running (it serves once it has rejoined a quorum). */
  start(): Promise<void>;
}

/** A running embedded cluster. */
export interface EmbeddedCluster {
  /** Every member's gRPC client address, comma-separated, for `Client.connect`. */
  readonly connectString: string;
  /** Every member's ZooKeeper-protocol address, comma-separated, for zkCli, kazoo, Curator or node-zookeeper-client. */
  readonly zkConnectString: string;
  /** The members, by id. */
  readonly members: readonly EmbeddedMember[];
  /** The temporary directory holding every member's data; removed by {@link EmbeddedCluster.stop}. */
  readonly dataDir: string;
  /** Stops every member and removes the data directory. Safe to call more than once. */
  stop(): Promise<void>;
}

/** A running embedded standalone server. */
export interface EmbeddedServer {
  /** `host:port` of its gRPC client port, for `Client.connect`. */
  readonly connectString: string;
  /** `host:port` of its ZooKeeper-protocol port, for any ZooKeeper client. */
  readonly zkConnectString: string;
  /** Its temporary data directory; removed by {@link EmbeddedServer.stop}. */
  readonly dataDir: string;
  /** Stops the server and removes its data directory. Safe to call more than once. */
  stop(): Promise<void>;
}

const LOOPBACK = "127.0.0.1";
const MEMBERS_MAX = 254;
const WAIT_STEP_MS = 25;

/** The settings as configuration fields, with the embedding's own defaults. */
function settingsFields(settings: EmbeddedSettings | undefined): Partial<ServerConfig> {
  return { fourLetterWordWhitelist: "*", logLevel: "error", ...settings };
}

/**
 * A durable write failed: the server stops (fail-stop) as `corral server` does, but without ending
 * the embedding process, which may be a test runner. (During start there is no server to stop yet:
 * start itself then fails.)
 */
async function startOne(config: ServerConfig): Promise<CorralServer> {
  const logger = createLogger(config.logLevel, { serverId: config.serverId });
  const started: { server?: CorralServer } = {};
  const onFatal = (error: unknown): void => {
    logger.fatal({ err: error }, "a durable write failed: stopping this embedded server (fail-stop)");
    void started.server?.stop();
  };
  started.server = await CorralServer.start(config, logger, { onFatal });
  return started.server;
}

async function removeDir(path: string): Promise<void> {
  await rm(path, { recursive: true, force: true, maxRetries: 3 });
}

/**
 * Starts a standalone server on free loopback ports (a gRPC client port and a ZooKeeper-protocol
 * port) with a fresh temporary data directory, and resolves once it serves.
 */
export async function startServer(options: StartServerOptions = {}): Promise<EmbeddedServer> {
  const dataDir = await mkdtemp(join(tmpdir(), "corral-embed-"));
  let server: CorralServer;
  try {
    // Port 0: the kernel picks a free port at bind time, so nothing can take it in between.
    const config = resolveConfig({ ...settingsFields(options.settings), dataDir, clientHost: LOOPBACK, clientPort: 0, zkClientPort: 0 });
    server = await startOne(config);
  } catch (error) {
    await removeDir(dataDir);
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return {
    connectString: server.connectString,
    zkConnectString: server.zkConnectString!,
    dataDir,
    stop: () =>
      (stopping ??= (async () => {
        await server.stop();
        await removeDir(dataDir);
      })()),
  };
}

class Member implements EmbeddedMember {
  private server: CorralServer | undefined;
  private starting: Promise<void> | undefined;

  constructor(
    private readonly config: ServerConfig,
    private readonly entry: ServerEntry,
  ) {}

  get serverId(): number {
    return this.entry.id;
  }
  get role(): "participant" | "observer" {
    return this.entry.role;
  }
  get connectString(): string {
    return `${LOOPBACK}:${this.entry.clientPort}`;
  }
  get zkConnectString(): string {
    return `${LOOPBACK}:${this.entry.zkClientPort}`;
  }
  get dataDir(): string {
    return this.config.dataDir;
  }
  get running(): boolean {
    return this.server !== undefined;
  }
  get serving(): boolean {
    return this.server?.status.serving ?? false;
  }

  start(): Promise<void> {
    if (this.server) return Promise.resolve();
    this.starting ??= startOne(this.config).then(
      (server) => {
        this.server = server;
        this.starting = undefined;
      },
      (error: unknown) => {
        this.starting = undefined;
        throw error;
      },
    );
    return this.starting;
  }

  async stop(): Promise<void> {
    await this.starting?.catch(() => {});
    const server = this.server;
    this.server = undefined;
    await server?.stop();
  }
}

/** Resolves once `done()` holds; rejects with `what` after `timeoutMs`. */
async function waitUntil(what: string, done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!done()) {
    if (performance.now() > deadline) throw new Error(`embedded cluster: ${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, WAIT_STEP_MS));
  }
}

/**
 * Starts a cluster of `voters` participants and `observers` observers on free loopback ports, each
 * member with its own data directory under one temporary directory, and resolves once every member
 * serves clients (a leader is elected and every other member follows or observes it).
 */
export async function startCluster(options: StartClusterOptions = {}): Promise<EmbeddedCluster> {
  const voters = options.voters ?? 3;
  const observers = options.observers ?? 0;
  if (!Number.isInteger(voters) || !Number.isInteger(observers) || voters < 1 || observers < 0 || voters + observers > MEMBERS_MAX) {
    throw new RangeError(`startCluster: voters must be 1..${MEMBERS_MAX} and observers 0.., together at most ${MEMBERS_MAX}; got ${voters} and ${observers}`);
  }
  const dataDir = await mkdtemp(join(tmpdir(), "corral-embed-cluster-"));
  const members: Member[] = [];
  try {
    const servers: ServerEntry[] = [];
    for (let id = 1; id <= voters + observers; id++) {
      servers.push({
        id,
        host: LOOPBACK,
        clientPort: await freePort(),
        quorumPort: await freePort(),
        electionPort: await freePort(),
        role: id <= voters ? "participant" : "observer",
        zkClientPort: await freePort(),
      });
    }
    const shared = settingsFields(options.settings);
    for (const entry of servers) {
      const config = resolveConfig({ ...shared, serverId: entry.id, dataDir: join(dataDir, String(entry.id)), servers });
      members.push(new Member(config, entry));
    }
    await Promise.all(members.map((member) => member.start()));
    await waitUntil("not every member served", () => members.every((member) => member.serving), options.startTimeoutMs ?? 60_000);
  } catch (error) {
    await Promise.all(members.map((member) => member.stop()));
    await removeDir(dataDir);
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return {
    connectString: members.map((member) => member.connectString).join(","),
    zkConnectString: members.map((member) => member.zkConnectString).join(","),
    members,
    dataDir,
    stop: () =>
      (stopping ??= (async () => {
        await Promise.all(members.map((member) => member.stop()));
        await removeDir(dataDir);
      })()),
  };
}
