/**
 * A three-server cluster the bench starts, measures and tears down itself: corral (three
 * `corral server` processes) or Apache ZooKeeper 3.8 (three `java … QuorumPeerMain` processes).
 * Both are asked the same questions the same way, through four-letter words on their
 * ZooKeeper-protocol ports: who serves, in which mode (`srvr`), how many followers the leader
 * counts as synced (`mntr`). Used by `npm run bench -- --failover` and `npm run bench:compare`.
 */
import { dirname } from "node:path";
import { rmSync } from "node:fs";
import { ClusterProcess } from "../test/helpers/cluster-process.js";
import { fourLetterWord } from "../test/helpers/four-letter-word.js";
import { srvrMode, ZooKeeperEnsemble } from "../test/helpers/zookeeper-ensemble.js";

export type SystemName = "zookeeper" | "corral";

export interface ClusterUnderTest {
  readonly system: SystemName;
  readonly serverIds: readonly number[];
  /** "127.0.0.1:port" of server `id`'s ZooKeeper-protocol client port. */
  zkHost(id: number): string;
  /** "127.0.0.1:port" of server `id`'s corral SDK (gRPC) port; undefined for ZooKeeper. */
  sdkHost(id: number): string | undefined;
  /** Whether server `id`'s process is up (it may not be serving yet). */
  running(id: number): boolean;
  /** Server `id`'s process id while it runs. */
  pid(id: number): number | undefined;
  /** kill -9 of server `id`; resolves once it has exited. */
  crash(id: number): Promise<void>;
  /** Starts server `id` again on its ports and data; resolves once it listens (not necessarily serves). */
  restart(id: number): Promise<void>;
  /** Kills every server and removes the data dirs. */
  stop(): Promise<void>;
  /** Last resort, synchronous (for a process "exit" handler): kill -9 everything, remove the dirs. */
  killNowAndRemove(): void;
}

function zkPort(host: string): number {
  return Number(host.slice(host.lastIndexOf(":") + 1));
}

/** `srvr`'s Mode ("leader", "follower", …) of every running server that serves. */
export async function serverModes(cluster: ClusterUnderTest, limitMs = 2_000): Promise<Map<number, string>> {
  const modes = new Map<number, string>();
  await Promise.all(
    cluster.serverIds
      .filter((id) => cluster.running(id))
      .map(async (id) => {
        const mode = srvrMode(await fourLetterWord(zkPort(cluster.zkHost(id)), "srvr", limitMs));
        if (mode !== undefined) modes.set(id, mode);
      }),
  );
  return modes;
}

/** The leader, when exactly one running server says it leads and every other running one follows. */
export async function agreedLeader(cluster: ClusterUnderTest): Promise<number | undefined> {
  const modes = await serverModes(cluster);
  const running = cluster.serverIds.filter((id) => cluster.running(id));
  const leaders = running.filter((id) => modes.get(id) === "leader");
  if (leaders.length !== 1) return undefined;
  return running.every((id) => id === leaders[0] || modes.get(id) === "follower") ? leaders[0] : undefined;
}

/** The lowest-numbered server whose `srvr` says follower. */
export async function someFollower(cluster: ClusterUnderTest): Promise<number | undefined> {
  const modes = await serverModes(cluster);
  return cluster.serverIds.find((id) => modes.get(id) === "follower");
}

/** A number from `mntr` ("zk_synced_followers\t2"), or undefined. */
export async function monitorFigure(cluster: ClusterUnderTest, id: number, key: string): Promise<number | undefined> {
  const answer = await fourLetterWord(zkPort(cluster.zkHost(id)), "mntr", 2_000);
  const match = new RegExp(`^zk_${key}\\t(\\S+)$`, "m").exec(answer);
  return match === null ? undefined : Number(match[1]);
}

/**
 * Whether every server serves and the quorum is whole again: one leader, every other server
 * following it and counted by the leader among its synced followers.
 */
export async function wholeQuorum(cluster: ClusterUnderTest): Promise<boolean> {
  if (!cluster.serverIds.every((id) => cluster.running(id))) return false;
  const leader = await agreedLeader(cluster);
  if (leader === undefined) return false;
  return (await monitorFigure(cluster, leader, "synced_followers")) === cluster.serverIds.length - 1;
}

/** Polls `probe` every 50 ms until it gives a value, for at most `limitMs`. */
export async function poll<T>(what: string, probe: () => Promise<T | undefined>, limitMs: number): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up after ${limitMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Until every server serves and the leader counts every other one as a synced follower. */
export async function waitWholeQuorum(cluster: ClusterUnderTest, limitMs = 120_000): Promise<void> {
  await poll(`${cluster.system}: every server serving and synced`, async () => ((await wholeQuorum(cluster)) ? true : undefined), limitMs);
}

export interface StartOptions {
  tickMs: number;
  /** ZooKeeper only: more zoo.cfg lines. */
  zooKeeperConfig?: readonly string[];
  /** corral only: its servers' log level (their logs are kept in memory; see CorralCluster.logOf). */
  logLevel?: string;
}

/** Three corral voters; fsync on (corral's default), every four-letter word allowed (mntr is not by default). */
export class CorralCluster implements ClusterUnderTest {
  readonly system = "corral";
  readonly serverIds: readonly number[];

  private constructor(readonly cluster: ClusterProcess) {
    this.serverIds = [...cluster.servers.keys()].sort((a, b) => a - b);
  }

  static async start(options: StartOptions): Promise<CorralCluster> {
    // initLimit 10 and syncLimit 5 ticks: ZooKeeper's zoo_sample.cfg, as ZooKeeperCluster uses.
    const cluster = await ClusterProcess.start({
      voters: 3,
      tickMs: options.tickMs,
      initLimitTicks: 10,
      syncLimitTicks: 5,
      config: { fourLetterWordWhitelist: "*" },
      ...(options.logLevel === undefined ? {} : { env: { CORRAL_LOG_LEVEL: options.logLevel } }),
    });
    return new CorralCluster(cluster);
  }

  /** Everything server `id` logged. */
  logOf(id: number): string {
    return this.cluster.server(id).stderr;
  }

  zkHost(id: number): string {
    return this.cluster.server(id).zkConnectString;
  }

  sdkHost(id: number): string {
    return this.cluster.server(id).connectString;
  }

  running(id: number): boolean {
    return this.cluster.server(id).running;
  }

  pid(id: number): number | undefined {
    return this.cluster.server(id).pid;
  }

  crash(id: number): Promise<void> {
    return this.cluster.server(id).crash();
  }

  restart(id: number): Promise<void> {
    return this.cluster.server(id).restart();
  }

  stop(): Promise<void> {
    return this.cluster.stop();
  }

  killNowAndRemove(): void {
    for (const server of this.cluster.servers.values()) {
      if (server.pid !== undefined && server.running) process.kill(server.pid, "SIGKILL");
    }
    rmSync(dirname(this.cluster.configFile), { recursive: true, force: true });
  }
}

/** Three ZooKeeper 3.8 servers from Debian's package; forceSync=yes (ZooKeeper's default). */
export class ZooKeeperCluster implements ClusterUnderTest {
  readonly system = "zookeeper";
  readonly serverIds: readonly number[];

  private constructor(readonly ensemble: ZooKeeperEnsemble) {
    this.serverIds = ensemble.serverIds;
  }

  static async start(options: StartOptions): Promise<ZooKeeperCluster> {
    const ensemble = await ZooKeeperEnsemble.start({
      servers: 3,
      tickTimeMs: options.tickMs,
      initLimitTicks: 10,
      syncLimitTicks: 5,
      ...(options.zooKeeperConfig === undefined ? {} : { extraConfig: options.zooKeeperConfig }),
    });
    return new ZooKeeperCluster(ensemble);
  }

  /** The "Zookeeper version:" of `srvr`, e.g. "3.8.0-…, built on …". */
  get version(): string {
    return this.ensemble.version;
  }

  zkHost(id: number): string {
    return this.ensemble.connectString(id);
  }

  sdkHost(): undefined {
    return undefined;
  }

  running(id: number): boolean {
    return this.ensemble.running(id);
  }

  pid(id: number): number | undefined {
    return this.ensemble.pid(id);
  }

  crash(id: number): Promise<void> {
    return this.ensemble.crash(id);
  }

  async restart(id: number): Promise<void> {
    await this.ensemble.restart(id);
  }

  stop(): Promise<void> {
    return this.ensemble.stop();
  }

  killNowAndRemove(): void {
    this.ensemble.killNow();
    rmSync(this.ensemble.dir, { recursive: true, force: true });
  }
}
