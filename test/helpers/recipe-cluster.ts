/**
 * A live three-voter cluster for recipe tests: real server processes on 127.0.0.1, independent
 * SDK sessions (each a separate Client, as separate processes would have), and the two faults
 * every recipe must survive — a session forced to expire and the leader killed mid-operation.
 */
import { Client, ZkError, type ConnectOptions } from "../../src/index.js";
import { ClusterProcess } from "./cluster-process.js";
import { waitFor } from "./wait.js";

/** tickMs 100: sessions may be as short as 200 ms and as long as 2 s, so expiry tests are quick. */
const TICK_MS = 100;

export class RecipeCluster {
  private readonly clients = new Set<Client>();

  private constructor(readonly cluster: ClusterProcess) {}

  /**
   * Without a per-address connection limit (maxClientCnxns=0, as kazoo's harness runs ZooKeeper):
   * a test file keeps every session it opened until it ends, all from 127.0.0.1, and after a few
   * leader kills most of them sit on one server; at the default of 60 that server then refused a
   * test's direct connection to it.
   */
  static async start(): Promise<RecipeCluster> {
    const cluster = await ClusterProcess.start({ voters: 3, tickMs: TICK_MS, initLimitTicks: 20, syncLimitTicks: 10, config: { maxClientCnxns: 0 } });
    const recipes = new RecipeCluster(cluster);
    await recipes.leader();
    return recipes;
  }

  get connectString(): string {
    return this.cluster.connectString;
  }

  /** A new session on the whole cluster; closed by stop() if the test does not. */
  async client(options: ConnectOptions = {}): Promise<Client> {
    const client = await Client.connect(this.connectString, { sessionTimeoutMs: 2_000, connectTimeoutMs: 30_000, ...options });
    this.clients.add(client);
    return client;
  }

  /**
   * Makes `client`'s session expire now, as if its process had been paused past the timeout: a
   * second connection resumes the session and closes it (ZooKeeper's test trick). Resolves once
   * `client` itself has seen "expired".
   */
  async expire(client: Client): Promise<void> {
    const seen = new Promise<void>((resolve) => {
      const listener = (state: string): void => {
        if (state !== "expired") return;
        client.off("state", listener);
        resolve();
      };
      client.on("state", listener);
    });
    // The twin's close can miss: `client` may resume its session (taking it back) before the
    // close lands, and then the close is refused or its connection dropped, and the session lives
    // on. So the twin tries again until `client` has seen its session end.
    const sawExpiry = (ms: number): Promise<boolean> =>
      Promise.race([seen.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);
    for (let attempt = 0; ; attempt++) {
      try {
        const twin = await Client.connect(this.connectString, { sessionId: client.sessionId, password: client.sessionPassword, connectTimeoutMs: 30_000 });
        await twin.close();
      } catch (error) {
        // SESSIONEXPIRED: the session is gone (a previous twin closed it), or the twin, a fresh
        // client with no last-seen zxid, reached a server that has not yet applied the session's
        // creation: either way, see whether `client` learns of an expiry, and try again if not.
        if (!(error instanceof ZkError && error.code === "SESSIONEXPIRED") || attempt >= 50) throw error;
      }
      if (await sawExpiry(attempt < 3 ? 1_000 : 5_000)) return;
      if (attempt >= 50) throw new Error(`session 0x${client.sessionId.toString(16)} did not expire`);
    }
  }

  /** The id of the server every running voter agrees leads. */
  leader(): Promise<number> {
    return waitFor("an agreed leader", () => this.cluster.agreedLeader(), 30_000);
  }

  /** kill -9 of the current leader; returns its id (restart it with restart(id)). */
  async killLeader(): Promise<number> {
    const leader = await this.leader();
    await this.cluster.server(leader).crash();
    return leader;
  }

  async restart(id: number): Promise<void> {
    await this.cluster.server(id).restart();
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.clients].map((c) => c.close()));
    await this.cluster.stop();
  }
}

/** Records who is inside a critical section; any moment with two inside is a violation. */
export class OverlapDetector {
  private readonly inside = new Set<string>();
  readonly violations: string[] = [];
  entries = 0;

  enter(who: string): void {
    if (this.inside.size > 0) this.violations.push(`${who} entered while ${[...this.inside].join(",")} inside`);
    this.inside.add(who);
    this.entries += 1;
  }

  exit(who: string): void {
    this.inside.delete(who);
  }
}
