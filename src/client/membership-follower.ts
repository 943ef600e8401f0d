/**
 * ConnectOptions.followMembership: keeps a client's server list on the members of the configuration
 * in force, as Curator's EnsembleTracker does. It reads /zookeeper/config with a watch; when the
 * configuration's version is one it has not followed yet, it asks getMembers (the config text names
 * only the ZooKeeper-protocol ports) and hands what nextServerList decides to updateServerList.
 *
 * Triggers: the session's first connection, every reconnection (the watch may have been lost with
 * a request that failed; the client's own setWatches replays one that was set), and the watch. One
 * run at a time; a trigger during a run asks for one more. Nothing retries on a timer, so it never
 * loops: a failed read waits for the next trigger. It never throws into user code and stops for good
 * on close or expiry.
 */
import { ZkError } from "../common/errors.js";
import { nextServerList, type ConnectedServer } from "./membership-follow.js";
import type { ClientLogger, ClientState, ClusterConfiguration, ClusterMembers, WatchOptions } from "./types.js";

/** What the follower needs of its client. */
export interface FollowedClient {
  getConfig(options: WatchOptions): Promise<ClusterConfiguration>;
  getMembers(): Promise<ClusterMembers>;
  updateServerList(connectString: string): Promise<void>;
  /** The server list, as "host:port" strings. */
  servers(): readonly string[];
  connected(): ConnectedServer | undefined;
  chroot: string | undefined;
  log(level: keyof ClientLogger, fields: object, message: string): void;
}

export class MembershipFollower {
  private stopped = false;
  private running = false;
  private again = false;
  /** The configuration version whose members were last looked at; none before the first. */
  private followedVersion: bigint | undefined;
  /** One function, so that every read sets the same watch (a watch set twice by one function is one). */
  private readonly watcher = (): void => this.refresh();

  constructor(private readonly client: FollowedClient) {}

  /** The session's state changed: (re)connected → look again; expired or closed → stop. */
  onState(state: ClientState): void {
    if (state === "expired" || state === "closed") this.stop();
    // After the state's own listeners: a request sent from inside the announcement would go ahead of theirs.
    else if (state === "connected" || state === "reconnected") queueMicrotask(() => this.refresh());
  }

  stop(): void {
    this.stopped = true;
  }

  /** Reads the configuration and follows it if its version is new; at most one run at a time. */
  refresh(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.run();
  }

  private async run(): Promise<void> {
    try {
      do {
        this.again = false;
        await this.followOnce();
      } while (this.again && !this.stopped);
    } catch (err) {
      // followOnce catches what its calls reject with; this is a bug of ours, and still not the user's problem.
      this.client.log("error", { err: String(err) }, "membership follower failed");
    } finally {
      this.running = false;
    }
  }

  private async followOnce(): Promise<void> {
    const config = await this.attempt(() => this.client.getConfig({ watch: this.watcher }), "read /zookeeper/config");
    if (config === undefined || config.version === this.followedVersion || this.stopped) return;
    const answer = await this.attempt(
      () => this.client.getMembers(),
      "ask for the members",
      () => {
        // An older server cannot answer getMembers: nothing to follow until the configuration changes again.
        this.followedVersion = config.version;
      },
    );
    if (answer === undefined || this.stopped) return;
    // A server answers with the configuration in force, which it activates as it applies the txn
    // that wrote /zookeeper/config; an older one means it is behind what was read: ask again on the next trigger.
    if (answer.version < config.version) return;
    this.followedVersion = config.version;
    const servers = this.client.servers();
    const decision = nextServerList(servers, answer, this.client.connected());
    const fields = { version: config.version.toString(16), servers, members: answer.members };
    if (decision.kind === "keep") {
      this.client.log("debug", { ...fields, reason: decision.reason }, "membership followed: server list kept");
      return;
    }
    const connectString = decision.servers.join(",") + (this.client.chroot ?? "");
    const updated = await this.attempt(() => this.client.updateServerList(connectString).then(() => true), "update the server list");
    if (updated) this.client.log("info", { ...fields, next: decision.servers }, "membership followed: server list updated");
  }

  /** `call`'s result, or undefined if it failed (logged; never thrown at the user). */
  private async attempt<T>(call: () => Promise<T>, what: string, unimplemented?: () => void): Promise<T | undefined> {
    try {
      return await call();
    } catch (err) {
      const code = err instanceof ZkError ? err.code : String(err);
      if (code === "UNIMPLEMENTED") {
        unimplemented?.();
        this.client.log("warn", { code }, `membership follower could not ${what}: the server does not support it`);
      } else {
        this.client.log("debug", { code }, `membership follower could not ${what}`);
      }
      return undefined;
    }
  }
}
