/**
 * `corral cluster`'s add, remove and members: ZooKeeper's procedure for changing a live cluster's
 * membership, run on the launcher's own children.
 *
 * add: the joiner starts with a config listing the members and itself. Before any reconfiguration
 * it learns from the leader as a non-voting learner and serves once synced; after one, it hears
 * that it is outside the configuration in force and waits. Either way, once it has reached the
 * members, the super user's reconfig adds it, and it syncs as a member.
 * remove: reconfig the server out, wait until the remaining members run with the new
 * configuration, then stop it (its data dir stays).
 * After each, cluster.json lists the members in force, read back from the configuration itself.
 */
import type { MemberRole } from "../common/membership.js";
import { join } from "node:path";
import { parseMembership } from "../common/membership.js";
import { Client, ZkError, type ClusterConfiguration, type ReconfigChange } from "../index.js";
import type { ClientTlsOptions } from "../client/types.js";
import { formatHostPort, validateServers, type ServerEntry } from "../server/cluster-servers.js";
import { ConfigError } from "../server/config-error.js";
import { describeExit, stoppedCleanly, waitServing, type ClusterIo, type MemberProcesses } from "./cluster-children.js";
import { ClusterCommandError, commandHelp, type ClusterCommand } from "./cluster-commands.js";
import { membersInConfig, membershipKey, memberLine, nextMemberId, removalRefusal, SERVER_ID_MAX } from "./cluster-membership.js";
import type { SuperCredential } from "./cluster-super.js";
import { connectLines, connectStrings, display, memberTable, rolesAreLive } from "./cluster-table.js";
import type { ClusterTls } from "./cluster.js";

/** Errors after which a reconfig may or may not have happened: the configuration is read back. */
const AMBIGUOUS: ReadonlySet<string> = new Set(["CONNECTIONLOSS", "OPERATIONTIMEOUT", "SESSIONEXPIRED"]);
const SESSION_TIMEOUT_MS = 10_000;

/** What the operations need of the running launcher. */
export interface LiveCluster {
  io: ClusterIo;
  processes: MemberProcesses;
  dataDir: string;
  host: string;
  tls: ClusterTls | undefined;
  probeTls: ClientTlsOptions | undefined;
  reconfigEnabled: boolean;
  credential: SuperCredential | undefined;
  stopGraceMs: number;
  /** How long a new member may take to reach the others, and to serve. */
  startTimeoutMs: number;
  /** Server `id`'s entry in the launcher's port layout. */
  layout(id: number, role: MemberRole): ServerEntry;
  /** The members in force, as cluster.json lists them. */
  servers(): readonly ServerEntry[];
  /** Records the members in force in cluster.json. */
  record(servers: readonly ServerEntry[]): void;
  /** Writes a joiner's own config (the members and itself); answers its path. */
  writeJoinerConfig(servers: readonly ServerEntry[], id: number): string;
  removeJoinerConfig(path: string): void;
  stopping(): boolean;
}

export class ClusterReconfigurer {
  constructor(private readonly cluster: LiveCluster) {}

  async run(command: ClusterCommand): Promise<void> {
    switch (command.name) {
      case "add":
        return this.add(command.role);
      case "remove":
        return this.remove(command.id);
      case "members":
        return this.members();
      case "help":
        this.cluster.io.out(`corral cluster: commands (one a line on stdin):\n${commandHelp()}`);
        return;
    }
  }

  private async add(role: MemberRole): Promise<void> {
    const { io, processes } = this.cluster;
    const auth = this.credential("add");
    const servers = this.cluster.servers();
    const id = nextMemberId(servers, this.cluster.dataDir);
    if (id > SERVER_ID_MAX) throw new ClusterCommandError("add", `no server id left: ids go up to ${SERVER_ID_MAX} and DIR/<id> directories keep theirs`);
    const entry = this.cluster.layout(id, role);
    try {
      validateServers([...servers, entry]);
    } catch (error) {
      if (error instanceof ConfigError) throw new ClusterCommandError("add", `server ${id} cannot have the next ports: ${error.message}`);
      throw error;
    }
    const admin = await this.connect(auth);
    try {
      await admin.sync("/");
      const before = await admin.getConfig();
      const joinerFile = this.cluster.writeJoinerConfig([...servers, entry], id);
      io.out(`corral cluster: add: starting server ${id} (${role}) with ${display(joinerFile)}: the members and itself\n`);
      const member = processes.spawn(entry, joinerFile, true);
      let config: ClusterConfiguration;
      try {
        const deadline = Date.now() + this.cluster.startTimeoutMs;
        // Serving: synced as a non-voting learner; outside: it has heard the members' configuration.
        const failure = await waitServing(
          member,
          deadline,
          () => this.cluster.stopping(),
          this.cluster.probeTls,
          () => member.outside,
        );
        if (failure !== undefined) throw new ClusterCommandError("add", `${failure}; see ${display(join(this.cluster.dataDir, String(id), "server.log"))}`);
        if (this.cluster.stopping()) throw new ClusterCommandError("add", "the cluster is stopping");
        const line = memberLine(entry);
        io.out(`corral cluster: add: reconfig -add ${line}\n`);
        config = await this.reconfig(admin, { joining: [line], fromConfig: before.version }, (ids) => ids.includes(id));
      } catch (error) {
        // Not added: the joiner goes (its directory stays, so its id is not given out again).
        if (!(error instanceof ClusterCommandError && error.unknownOutcome)) await processes.retire(member, this.cluster.stopGraceMs);
        throw error;
      } finally {
        this.cluster.removeJoinerConfig(joinerFile);
      }
      member.quietOutside = false;
      this.adopt(config, [...servers, entry]);
      const failure = await waitServing(member, Date.now() + this.cluster.startTimeoutMs, () => this.cluster.stopping(), this.cluster.probeTls);
      if (failure !== undefined) io.err(`corral cluster: add: server ${id} is a member, but ${failure}\n`);
      this.print(`server ${id} added`, config);
    } finally {
      await admin.close();
    }
  }

  private async remove(id: number): Promise<void> {
    const { io, processes } = this.cluster;
    const auth = this.credential("remove");
    const servers = this.cluster.servers();
    const running = new Set(processes.alive().map((m) => m.entry.id));
    const refusal = removalRefusal(servers, id, running);
    if (refusal !== undefined) throw new ClusterCommandError("remove", refusal);
    let config: ClusterConfiguration;
    const leaving = processes.find(id);
    if (leaving !== undefined) leaving.quietOutside = true;
    const admin = await this.connect(auth);
    try {
      await admin.sync("/");
      const before = await admin.getConfig();
      io.out(`corral cluster: remove: reconfig -remove ${id}\n`);
      config = await this.reconfig(admin, { leaving: [id], fromConfig: before.version }, (ids) => !ids.includes(id));
    } finally {
      await admin.close();
    }
    this.adopt(config, servers);
    // The others run with the new configuration before the removed server goes: whoever leads next
    // (the removed one may have led) starts from it.
    const remaining = processes.alive().filter((m) => m.entry.id !== id);
    const late = await Promise.all(remaining.map((m) => this.runsWith(m.entry, config.version)));
    for (const failure of late.filter((f): f is string => f !== undefined)) io.err(`corral cluster: remove: ${failure}\n`);
    if (leaving !== undefined) {
      const exit = await processes.retire(leaving, this.cluster.stopGraceMs);
      if (!stoppedCleanly(exit)) io.err(`corral cluster: remove: server ${id} stopped uncleanly (${describeExit(exit)})\n`);
    }
    const data = display(join(this.cluster.dataDir, String(id)));
    io.out(`corral cluster: remove: server ${id} ${leaving === undefined ? "was not running" : "stopped"}; its data stays in ${data}\n`);
    this.print(`server ${id} removed`, config);
  }

  /** Lists the members; the configuration in force, read from the cluster, corrects cluster.json if it drifted. */
  private async members(): Promise<void> {
    let config: ClusterConfiguration | undefined;
    try {
      config = await this.readConfigInForce();
      this.adopt(config, this.known());
    } catch (error) {
      this.cluster.io.err(`corral cluster: members: the configuration in force could not be read (${(error as Error).message}); as cluster.json lists them:\n`);
    }
    this.print("members", config);
  }

  /** The super user's "super:password", or why add/remove cannot run. */
  private credential(command: string): string {
    if (!this.cluster.reconfigEnabled) {
      throw new ClusterCommandError(command, "reconfiguration is off: run corral cluster with --reconfig-enabled true (ZooKeeper's reconfigEnabled)");
    }
    if (this.cluster.credential === undefined) {
      throw new ClusterCommandError(
        command,
        "superDigest was given without its password: give it to corral cluster with --super-auth-file FILE, or reconfigure with corral shell (addauth digest super:PASSWORD, then reconfig)",
      );
    }
    return this.cluster.credential.auth;
  }

  /** The configuration in force, read after a sync on a session of its own. */
  private async readConfigInForce(): Promise<ClusterConfiguration> {
    const client = await this.connect(undefined);
    try {
      await client.sync("/");
      return await client.getConfig();
    } finally {
      await client.close();
    }
  }

  private async connect(auth: string | undefined, servers: readonly ServerEntry[] = this.cluster.servers()): Promise<Client> {
    const tls = this.cluster.probeTls;
    const client = await Client.connect(connectStrings(servers, this.cluster.host).grpc, {
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      connectTimeoutMs: this.cluster.startTimeoutMs,
      ...(tls === undefined ? {} : { tls }),
    });
    if (auth !== undefined) {
      try {
        await client.addAuthInfo("digest", auth);
      } catch (error) {
        await client.close();
        throw error;
      }
    }
    return client;
  }

  /**
   * The reconfig's new configuration. When its answer is lost, the configuration in force is read
   * back: `applied` (given its member ids) says whether the change is in it.
   */
  private async reconfig(admin: Client, change: ReconfigChange, applied: (ids: number[]) => boolean): Promise<ClusterConfiguration> {
    const command = change.joining === undefined ? "remove" : "add";
    try {
      return await admin.reconfig(change);
    } catch (error) {
      if (!(error instanceof ZkError)) throw error;
      if (!AMBIGUOUS.has(error.code)) throw new ClusterCommandError(command, `the cluster refused the reconfig: ${error.code}: ${error.message}`);
      let config: ClusterConfiguration;
      try {
        config = await this.readConfigInForce();
      } catch {
        throw new ClusterCommandError(
          command,
          `the reconfig's answer was lost (${error.code}) and the configuration could not be read back: members shows where it stands`,
          true,
        );
      }
      if (applied(parseMembership(config.text).members.map((m) => m.serverId))) return config;
      throw new ClusterCommandError(command, `the reconfig's answer was lost (${error.code}) and the configuration in force does not have the change`);
    }
  }

  /** Every member the launcher has an entry for: the members in force and any child it runs. */
  private known(): ServerEntry[] {
    const known = new Map(this.cluster.servers().map((s) => [s.id, s]));
    for (const m of this.cluster.processes.members) if (!known.has(m.entry.id)) known.set(m.entry.id, m.entry);
    return [...known.values()];
  }

  /** Records the members `config` lists in cluster.json, if that is news. */
  private adopt(config: ClusterConfiguration, known: readonly ServerEntry[]): void {
    const { servers, unknown } = membersInConfig(config.text, known);
    if (unknown.length > 0) {
      this.cluster.io.err(
        `corral cluster: the configuration in force also lists server${unknown.length === 1 ? "" : "s"} ${unknown.join(", ")}, which corral cluster did not start: cluster.json lists only its own\n`,
      );
    }
    if (membershipKey(servers) !== membershipKey(this.cluster.servers())) this.cluster.record(servers);
  }

  /** Until server `entry` runs with configuration `version` or later; answers why not, or undefined. */
  private async runsWith(entry: ServerEntry, version: bigint): Promise<string | undefined> {
    const deadline = Date.now() + this.cluster.startTimeoutMs;
    let last = "";
    while (Date.now() < deadline && !this.cluster.stopping()) {
      try {
        const client = await this.connect(undefined, [entry]);
        try {
          if ((await client.getConfig()).version >= version) return undefined;
        } finally {
          await client.close();
        }
      } catch (error) {
        last = ` (${(error as Error).message})`;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return `server ${entry.id} (${formatHostPort(entry.host, entry.clientPort)}) did not show configuration ${version.toString(16)} in time${last}`;
  }

  private print(what: string, config: ClusterConfiguration | undefined): void {
    const { io, processes } = this.cluster;
    const servers = this.cluster.servers();
    const rows = servers.map((entry) => {
      const member = processes.find(entry.id);
      return { entry, liveRole: member?.liveRole, pid: member?.exit === undefined ? member?.child.pid : undefined };
    });
    const voters = servers.filter((s) => s.role === "participant").length;
    const observers = servers.length - voters;
    const version = config === undefined ? "" : `; configuration ${config.version.toString(16)} in force`;
    io.out(
      `corral cluster: ${what}: ${voters} voter${voters === 1 ? "" : "s"}, ${observers} observer${observers === 1 ? "" : "s"}${version}` +
        `${rolesAreLive(rows) ? "" : " (roles as configured)"}\n` +
        memberTable(rows, this.cluster.dataDir) +
        connectLines(connectStrings(servers, this.cluster.host), this.cluster.tls),
    );
  }
}
