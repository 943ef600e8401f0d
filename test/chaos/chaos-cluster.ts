/**
 * ChaosCluster: a corral cluster as real server processes on 127.0.0.1 with a LinkProxy on every
 * link, so a nemesis can cut, slow, kill, pause and restart any part of it.
 *
 * Every ordered pair of servers (i, j) gets two proxies, one for i's calls to j's election port
 * and one for its calls to j's quorum port: each server has its own config file in which the
 * others' peer ports are the proxies of its own links. Clients reach server j through one proxy
 * per server. The network is described by the set of blocked directed pairs (from, to) over the
 * nodes 1..N and CLIENTS: a proxy's forward direction carries dialler → listener traffic, so it
 * drops when (dialler, listener) is blocked, and its backward direction when (listener, dialler) is.
 */
import { mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { generateDigest } from "../../src/index.js";
import { TEST_CLOCK_ENV } from "../../src/server/test-clock.js";
import { agreedLeaderOf, rolesOf, type RoleLine } from "../helpers/cluster-process.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { LinkProxy } from "./link-proxy.js";

/** The node standing for every client in the partition matrix. */
export const CLIENTS = 0;

export interface ChaosClusterOptions {
  voters: number;
  observers?: number;
  tickMs?: number;
  initLimitTicks?: number;
  syncLimitTicks?: number;
  /** Extra environment for every server (test-only switches). */
  env?: Record<string, string>;
  /** Give every server a metrics port (the soak reads its sessions and watches there). */
  metrics?: boolean;
  /** Turn on reconfig (and the super user that may run it, SUPER_CREDENTIAL). */
  reconfig?: boolean;
  /** Give every server a test clock file (CORRAL_TEST_CLOCK_FILE) that setClockSkew writes. */
  clockSkew?: boolean;
}

/** The digest super user of a cluster started with `reconfig`, as addAuthInfo("digest", …) takes it. */
export const SUPER_CREDENTIAL = "super:chaos";

interface Entry {
  id: number;
  clientPort: number;
  quorumPort: number;
  electionPort: number;
  role: "participant" | "observer";
}

const linkKey = (from: number, to: number) => `${from}>${to}`;

export class ChaosCluster {
  readonly servers = new Map<number, ServerProcess>();
  private readonly peerLinks: { from: number; to: number; proxy: LinkProxy }[] = [];
  private readonly clientLinks = new Map<number, LinkProxy>();
  private blocked = new Set<string>();
  private readonly paused = new Set<number>();
  /** Each server's view of the others: its config file's entries (the peers' ports are its link proxies). */
  private readonly views = new Map<number, Entry[]>();
  private readonly clockFiles = new Map<number, string>();

  private constructor(
    readonly ids: readonly number[],
    readonly voterIds: readonly number[],
    private readonly removeDir: () => Promise<void>,
  ) {}

  /**
   * Starts the cluster; a start that fails (a probed-free port taken by another process before
   * the server bound it — CI runs test files in parallel) is torn down and tried again.
   */
  static async start(options: ChaosClusterOptions): Promise<ChaosCluster> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await ChaosCluster.startOnce(options);
      } catch (error) {
        if (attempt >= 3) throw error;
      }
    }
  }

  private static async startOnce(options: ChaosClusterOptions): Promise<ChaosCluster> {
    const dir = await makeTempDir("corral-chaos-");
    const count = options.voters + (options.observers ?? 0);
    const entries: Entry[] = [];
    for (let id = 1; id <= count; id++) {
      entries.push({
        id,
        clientPort: await freePort(),
        quorumPort: await freePort(),
        electionPort: await freePort(),
        role: id <= options.voters ? "participant" : "observer",
      });
    }
    const ids = entries.map((e) => e.id);
    const cluster = new ChaosCluster(ids, ids.slice(0, options.voters), dir.remove);
    // If the harness itself dies mid-run, its servers must not outlive it.
    process.on("exit", cluster.killOnExit);
    try {
      const tickMs = options.tickMs ?? 100;
      for (const me of entries) {
        const view: Entry[] = [];
        for (const other of entries) {
          if (other.id === me.id) {
            view.push(me);
            continue;
          }
          const election = await LinkProxy.start(`${me.id}→${other.id} election`, await freePort(), other.electionPort);
          const quorum = await LinkProxy.start(`${me.id}→${other.id} quorum`, await freePort(), other.quorumPort);
          cluster.peerLinks.push({ from: me.id, to: other.id, proxy: election }, { from: me.id, to: other.id, proxy: quorum });
          view.push({ ...other, electionPort: election.port, quorumPort: quorum.port });
        }
        const configFile = join(dir.path, `server-${me.id}.json`);
        const config = {
          tickMs,
          initLimitTicks: options.initLimitTicks ?? 20,
          syncLimitTicks: options.syncLimitTicks ?? 5,
          ...(options.reconfig === true ? { reconfigEnabled: true, superDigest: generateDigest(SUPER_CREDENTIAL) } : {}),
          servers: view.map((e) => ({ ...e, host: "127.0.0.1" })),
        };
        cluster.views.set(me.id, view);
        const env = { ...options.env };
        if (options.clockSkew === true) {
          const clockFile = join(dir.path, `clock-${me.id}.json`);
          cluster.clockFiles.set(me.id, clockFile);
          await writeFile(clockFile, "{}");
          env[TEST_CLOCK_ENV] = clockFile;
        }
        await writeFile(configFile, JSON.stringify(config, null, 2));
        cluster.clientLinks.set(me.id, await LinkProxy.start(`clients→${me.id}`, await freePort(), me.clientPort));
        const server = await ServerProcess.start({
          dataDir: join(dir.path, String(me.id)),
          port: me.clientPort,
          serverId: me.id,
          tickMs,
          logLevel: "info",
          snapshotEveryTxns: 2_000,
          ...(options.metrics === true ? { metricsPort: await freePort() } : {}),
          extraArgs: ["--config", configFile],
          env,
        });
        cluster.servers.set(me.id, server);
      }
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** Every server, through the client proxies (what the workload's clients use). */
  get connectString(): string {
    return this.ids.map((id) => `127.0.0.1:${this.clientLinks.get(id)!.port}`).join(",");
  }

  /** One server, bypassing the proxies (for the final reads, after the network is healed). */
  directConnectString(id: number): string {
    return this.server(id).connectString;
  }

  server(id: number): ServerProcess {
    const server = this.servers.get(id);
    if (server === undefined) throw new Error(`no server ${id}`);
    return server;
  }

  // ---- network

  /** Replaces the network's state: exactly the directed pairs in `pairs` drop traffic. */
  setBlocked(pairs: Iterable<readonly [number, number]>): void {
    this.blocked = new Set([...pairs].map(([from, to]) => linkKey(from, to)));
    for (const { from, to, proxy } of this.peerLinks) proxy.setBlocked(this.isBlocked(from, to), this.isBlocked(to, from));
    for (const [id, proxy] of this.clientLinks) proxy.setBlocked(this.isBlocked(CLIENTS, id), this.isBlocked(id, CLIENTS));
  }

  isBlocked(from: number, to: number): boolean {
    return this.blocked.has(linkKey(from, to));
  }

  /** Delays every link touching one of `nodes` (CLIENTS included) by `ms`; 0 removes the delay. */
  setDelay(nodes: readonly number[], ms: number): void {
    const touches = (from: number, to: number) => nodes.includes(from) || nodes.includes(to);
    for (const { from, to, proxy } of this.peerLinks) proxy.setDelay(touches(from, to) ? ms : 0);
    for (const [id, proxy] of this.clientLinks) proxy.setDelay(touches(CLIENTS, id) ? ms : 0);
  }

  healNetwork(): void {
    this.setBlocked([]);
    this.setDelay([], 0);
  }

  // ---- processes

  async kill(id: number): Promise<void> {
    this.paused.delete(id);
    await this.server(id).crash();
  }

  async restart(id: number): Promise<void> {
    const server = this.server(id);
    if (!server.running) await server.restart();
  }

  pause(id: number): void {
    this.server(id).pause();
    this.paused.add(id);
  }

  resume(id: number): void {
    this.server(id).resume();
    this.paused.delete(id);
  }

  isRunning(id: number): boolean {
    return this.server(id).running;
  }

  /** kill -9 of every server at once, then all restarted (a power loss of the whole cluster). */
  async restartAll(): Promise<void> {
    for (const id of this.paused) this.server(id).resume();
    this.paused.clear();
    await Promise.all(this.ids.map((id) => this.server(id).crash()));
    await Promise.all(this.ids.map((id) => this.server(id).restart()));
  }

  /** Heals the network and the clocks, resumes paused servers and restarts dead ones. */
  async healAll(): Promise<void> {
    this.healNetwork();
    await Promise.all([...this.clockFiles.keys()].map((id) => this.setClockSkew(id, {})));
    for (const id of [...this.paused]) this.resume(id);
    // A server that will not start (one refusing its damaged files) stays down: the run reports it.
    await Promise.allSettled(this.ids.map((id) => this.restart(id)));
  }

  // ---- clocks, files, membership

  /** Skews server `id`'s clock as test-clock.ts reads it ({} for none); needs `clockSkew`. */
  async setClockSkew(id: number, skew: object): Promise<void> {
    const file = this.clockFiles.get(id);
    if (file === undefined) throw new Error(`server ${id} has no test clock (start the cluster with clockSkew)`);
    // Whole or not at all: the server polls the file and must never read half of it.
    await writeFile(`${file}.next`, JSON.stringify(skew));
    await rename(`${file}.next`, file);
  }

  dataDir(id: number): string {
    return this.server(id).options.dataDir;
  }

  /**
   * Server `id`'s line for reconfig as `viewOf` sees it: its peer ports are `viewOf`'s link proxies
   * to it (so the leader that runs the change dials it through its own links), its client port the
   * clients' proxy.
   */
  memberLine(id: number, role: "participant" | "observer", viewOf: number): string {
    const entry = this.views.get(viewOf)?.find((e) => e.id === id);
    if (entry === undefined) throw new Error(`no server ${id} in server ${viewOf}'s view`);
    return `server.${id}=127.0.0.1:${entry.quorumPort}:${entry.electionPort}:${role};127.0.0.1:${this.clientLinks.get(id)!.port}`;
  }

  // ---- roles

  roles(): Map<number, RoleLine> {
    return rolesOf(this.servers);
  }

  /** The server the running, unpaused servers last called leader, if exactly one claims it. */
  believedLeader(): number | undefined {
    const claims = [...this.roles()].filter(([id, role]) => role.role === "leading" && !this.paused.has(id));
    return claims.length === 1 ? claims[0]![0] : undefined;
  }

  /**
   * A leader that a majority of the voters (itself included) name as such: the cluster can serve.
   * A server that cannot rejoin does not hold this up; the run's other checks report it.
   */
  quorumLeader(): number | undefined {
    const roles = this.roles();
    for (const [id, role] of roles) {
      if (role.role !== "leading" || this.paused.has(id)) continue;
      const behind = this.voterIds.filter((v) => v === id || (roles.get(v)?.role === "following" && roles.get(v)?.leader === id && !this.paused.has(v)));
      if (behind.length > this.voterIds.length / 2) return id;
    }
    return undefined;
  }

  /** The leader every running server agrees on, if they all do. */
  agreedLeader(): number | undefined {
    return agreedLeaderOf(this.servers);
  }

  /** Writes every server's log (its stderr, across restarts) to `dir`/server-<id>.log. */
  async saveLogs(dir: string): Promise<string[]> {
    await mkdir(dir, { recursive: true });
    const files: string[] = [];
    for (const [id, server] of this.servers) {
      const file = join(dir, `server-${id}.log`);
      await writeFile(file, server.stderr);
      files.push(file);
    }
    return files;
  }

  private readonly killOnExit = (): void => {
    for (const server of this.servers.values()) {
      const pid = server.pid;
      if (pid === undefined || !server.running) continue;
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  };

  async stop(): Promise<void> {
    process.off("exit", this.killOnExit);
    for (const id of this.paused) this.servers.get(id)?.resume();
    this.paused.clear();
    // kill -9: a chaos run needs nothing flushed, and a clean stop could wait on a wedged peer.
    await Promise.allSettled([...this.servers.values()].map((s) => s.crash()));
    await Promise.allSettled([...this.peerLinks.map((l) => l.proxy), ...this.clientLinks.values()].map((p) => p.close()));
    await this.removeDir();
  }
}
