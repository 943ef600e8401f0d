/**
 * ZooKeeper 3.8's AdminServer commands (org.apache.zookeeper.server.admin.Commands), answered from
 * the same live state as the four-letter words (ServerStatus → FourLetterWordContext), so that
 * `/commands/mntr` and `echo mntr | nc` tell the same figures.
 *
 * A command has a primary name and aliases (`monitor` is also `mntr`); its answer is a JSON object
 * with the command's keys, then `command` (the primary name) and `error` (null, or why it could not
 * run) — CommandResponse.toMap's order. A command that needs a serving server answers, while the
 * server is not serving, with ZooKeeper's "This ZooKeeper instance is not currently serving
 * requests" in `error`; an unknown name with "Unknown command: <name>". Keys are ZooKeeper's
 * (Jackson's snake case of its getters); 64-bit ids are JSON numbers, exactly as written (see json.ts).
 *
 * No I/O here: the HTTP edge (admin-server.ts) calls `runAdminCommand` and writes what it returns.
 */
import type { ServerStatus } from "../server-status.js";
import {
  environmentEntries,
  javaLongHex,
  monitorFigures,
  serverState,
  ZK_NOT_SERVING,
  type FourLetterWordConnection,
  type FourLetterWordContext,
} from "../zk-wire/four-letter-words.js";

export type AdminAnswer = Record<string, unknown>;

interface AdminCommand {
  /** The primary name first, then the aliases. */
  names: readonly string[];
  /** ZooKeeper's isServerRequired: refused while the server does not serve. */
  serverRequired: boolean;
  run(status: ServerStatus, context: FourLetterWordContext): AdminAnswer;
}

/** ZooKeeper's BufferStats before any buffer: -1 everywhere. */
const NO_BUFFER_STATS = { last_buffer_size: -1, min_buffer_size: -1, max_buffer_size: -1 };

const COMMANDS: readonly AdminCommand[] = [
  {
    names: ["configuration", "conf", "config"],
    serverRequired: true,
    // ZooKeeperServerConf.toMap.
    run: (_status, { config }) => ({
      client_port: config.clientPort,
      data_dir: config.dataDir,
      data_log_dir: config.dataLogDir,
      tick_time: config.tickTimeMs,
      max_client_cnxns: config.maxClientConnectionsPerHost,
      min_session_timeout: config.minSessionTimeoutMs,
      max_session_timeout: config.maxSessionTimeoutMs,
      server_id: config.serverId,
      client_port_listen_backlog: config.clientPortListenBacklog,
    }),
  },
  {
    names: ["connections", "cons"],
    serverRequired: true,
    run: (_status, context) => ({ connections: context.connections.map((c) => connectionInfo(c, false)), secure_connections: [] }),
  },
  {
    names: ["dump"],
    serverRequired: true,
    run: (status) => {
      const expiry = new Map<number, bigint[]>();
      for (const [sessionId, at] of status.sessionExpiries()) {
        const sessions = expiry.get(at) ?? [];
        sessions.push(sessionId);
        expiry.set(at, sessions);
      }
      const ephemerals: Record<string, string[]> = {};
      for (const sessionId of status.tree.sessionsWithEphemerals()) ephemerals[String(sessionId)] = [...status.tree.ephemeralsOf(sessionId)].sort();
      return {
        expiry_time_to_session_ids: Object.fromEntries([...expiry].sort(([a], [b]) => a - b).map(([at, ids]) => [String(at), ids])),
        session_id_to_ephemeral_paths: ephemerals,
      };
    },
  },
  {
    names: ["environment", "env", "envi"],
    serverRequired: false,
    run: (_status, context) => Object.fromEntries(environmentEntries(context)),
  },
  {
    names: ["is_read_only", "isro"],
    serverRequired: true,
    run: (_status, context) => ({ read_only: context.readOnly }),
  },
  {
    names: ["leader", "lead"],
    serverRequired: true,
    run: (status) => {
      const state = status.state();
      if (state === "standalone") return { error: "server is not initialized" };
      const leaderId = status.leaderId();
      const leader = status.config.servers.find((s) => s.id === leaderId);
      return { is_leader: state === "leading", leader_id: leaderId ?? -1, leader_ip: leader?.host ?? "" };
    },
  },
  {
    // ZooKeeper's MonitorCommand runs without a server, but has nothing to say then (and its 4lw
    // refuses): corral refuses both ways alike.
    names: ["monitor", "mntr"],
    serverRequired: true,
    run: (status, context) => {
      const figures = monitorFigures(context);
      const [version, state, ...rest] = figures;
      const peerState = peerStateOf(status);
      return Object.fromEntries([version!, state!, ...(peerState === undefined ? [] : [["peer_state", peerState] as [string, string]]), ...rest]);
    },
  },
  {
    names: ["ruok"],
    serverRequired: true,
    run: () => ({}),
  },
  {
    names: ["server_stats", "srvr"],
    serverRequired: true,
    run: (status, context) => serverStats(status, context),
  },
  {
    names: ["stats", "stat"],
    serverRequired: true,
    run: (status, context) => ({
      ...serverStats(status, context),
      connections: context.connections.map((c) => connectionInfo(c, true)),
      secure_connections: [],
    }),
  },
  {
    names: ["voting_view"],
    serverRequired: true,
    run: (status) => {
      const view: Record<string, unknown> = {};
      for (const server of status.config.servers) {
        if (server.role !== "participant") continue;
        view[String(server.id)] = {
          server_addresses: [hostPort(server.host, server.quorumPort)],
          election_addresses: [hostPort(server.host, server.electionPort)],
          client_address: server.zkClientPort === undefined ? "" : hostPort(server.host, server.zkClientPort),
          learner_type: server.role,
        };
      }
      return { current_config: view };
    },
  },
  {
    names: ["watches", "wchc"],
    serverRequired: true,
    run: (status) => {
      const watches = status.tree.watches;
      const bySession: Record<string, string[]> = {};
      for (const watcher of [...watches.watchers()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
        const { data, child } = watches.watchedPathsOf(watcher);
        bySession[String(watcher)] = [...new Set([...data, ...child])].sort();
      }
      return { session_id_to_watched_paths: bySession };
    },
  },
  {
    names: ["watches_by_path", "wchp"],
    serverRequired: true,
    run: (status) => {
      const byPath: Record<string, bigint[]> = {};
      const table = status.tree.watches.watchersByPath();
      for (const path of [...table.keys()].sort()) byPath[path] = [...table.get(path)!].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      return { path_to_session_ids: byPath };
    },
  },
  {
    names: ["watch_summary", "wchs"],
    serverRequired: true,
    // WatchesSummary.toMap, with the same figures as the four-letter word.
    run: (_status, { watches }) => ({ num_connections: watches.connections, num_paths: watches.paths, num_total_watches: watches.total }),
  },
  {
    names: ["zabstate"],
    serverRequired: false,
    run: (status, context) => {
      const config = status.config;
      const self = config.servers.find((s) => s.id === config.serverId);
      if (!self) return { voting: false, zabstate: "" };
      const zxid = context.zxid;
      return {
        myid: config.serverId,
        is_leader: status.state() === "leading",
        quorum_address: hostPort(self.host, self.quorumPort),
        election_address: hostPort(self.host, self.electionPort),
        client_address: self.zkClientPort === undefined ? "" : hostPort(self.host, self.zkClientPort),
        voting: self.role === "participant",
        last_zxid: `0x${javaLongHex(zxid)}`,
        zab_epoch: Number(zxid >> 32n),
        zab_counter: Number(zxid & 0xffffffffn),
        zabstate: status.zabState() ?? "",
      };
    },
  },
];

const BY_NAME: ReadonlyMap<string, AdminCommand> = new Map(COMMANDS.flatMap((command) => command.names.map((name) => [name, command] as const)));

/** Every command's primary name, sorted (the index page at /commands lists them). */
export const ADMIN_COMMAND_NAMES: readonly string[] = COMMANDS.map((c) => c.names[0]!).sort();

/** ZooKeeper's Commands.runCommand: the answer to `/commands/<name>`. */
export function runAdminCommand(name: string, status: ServerStatus): AdminAnswer {
  const command = BY_NAME.get(name);
  if (command === undefined) return { command: name, error: `Unknown command: ${name}` };
  const primary = command.names[0]!;
  if (command.serverRequired && !status.serving) return { command: primary, error: ZK_NOT_SERVING };
  const answer = command.run(status, status.fourLetterWordContext());
  const { error, ...data } = answer;
  return { ...data, command: primary, error: error ?? null };
}

/** ServerCnxn.getConnectionInfo. */
function connectionInfo(connection: FourLetterWordConnection, brief: boolean): AdminAnswer {
  const info: AdminAnswer = {
    remote_socket_address: hostPort(connection.remoteHost, connection.remotePort),
    interest_ops: connection.interestOps,
    outstanding_requests: connection.outstandingRequests,
    packets_received: connection.packetsReceived,
    packets_sent: connection.packetsSent,
  };
  const session = connection.session;
  if (brief || session === undefined) return info;
  return {
    ...info,
    session_id: session.sessionId,
    last_operation: session.lastOperation,
    established: session.establishedMs,
    session_timeout: session.sessionTimeoutMs,
    last_cxid: session.lastCxid,
    last_zxid: session.lastZxid,
    last_response_time: session.lastResponseMs,
    last_latency: session.lastLatencyMs,
    min_latency: session.minLatencyMs,
    avg_latency: session.avgLatencyMs,
    max_latency: session.maxLatencyMs,
  };
}

/** SrvrCommand: version, read_only, the ServerStats bean, node_count (and a leader's proposal_stats). */
function serverStats(status: ServerStatus, context: FourLetterWordContext): AdminAnswer {
  const leader = context.leader;
  return {
    version: context.version,
    read_only: context.readOnly,
    server_stats: {
      packets_sent: context.packetsSent,
      packets_received: context.packetsReceived,
      fsync_threshold_exceed_count: 0,
      client_response_stats: NO_BUFFER_STATS,
      data_dir_size: context.config.dataDirSizeBytes,
      log_dir_size: context.config.dataLogSizeBytes,
      last_processed_zxid: context.zxid,
      outstanding_requests: context.outstandingRequests,
      server_state: serverState(context),
      avg_latency: context.latency.avgMs,
      max_latency: context.latency.maxMs,
      min_latency: context.latency.minMs,
      num_alive_client_connections: context.connections.length,
      auth_failed_count: 0,
      non_mtls_remote_conn_count: 0,
      non_mtls_local_conn_count: 0,
      provider_null: false,
      uptime: status.uptimeMs(),
    },
    client_response: NO_BUFFER_STATS,
    ...(serverState(context) === "leader" && leader !== undefined
      ? {
          proposal_stats: {
            last_buffer_size: leader.proposalSizeBytes.last,
            min_buffer_size: leader.proposalSizeBytes.min,
            max_buffer_size: leader.proposalSizeBytes.max,
          },
        }
      : {}),
    node_count: context.nodeCount,
  };
}

/** QuorumPeer.getDetailedPeerState ("following - broadcast"); undefined for a standalone server. */
function peerStateOf(status: ServerStatus): string | undefined {
  const zabState = status.zabState();
  if (zabState === undefined) return undefined;
  const state = status.state();
  return zabState === "election" ? state : `${state} - ${zabState}`;
}

function hostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}
