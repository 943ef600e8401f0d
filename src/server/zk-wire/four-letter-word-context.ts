/**
 * Fills a FourLetterWordContext from the running server: what srvr, stat, mntr, conf, cons, envi
 * and wchs report. The renderer (four-letter-words.ts) stays pure; this is the one place that
 * reads the process, the config and the live state for it.
 */
import { homedir, hostname, release, tmpdir, userInfo } from "node:os";
import { freemem, totalmem } from "node:os";
import { memberAddresses } from "../cluster-servers.js";
import type { ServerConfig } from "../config.js";
import type { DataTree } from "../../store/data-tree.js";
import type { LearnerStage } from "../../consensus/leader.js";
import { zookeeperFullVersion, type FourLetterWordConnection, type FourLetterWordContext, type FourLetterWordServerMode } from "./four-letter-words.js";
import type { PortStats, ZkConnectionStats } from "./connection-stats.js";

const MB = 1024 * 1024;

/** What the server runtime tells about itself at the moment a word is asked. */
export interface FourLetterWordSource {
  config: ServerConfig;
  corralVersion: string;
  startedAt: Date;
  tree: DataTree;
  /** undefined while the server is not serving (electing, syncing). */
  mode: FourLetterWordServerMode | undefined;
  /** Serving read-only sessions (read-only mode, cut off from a quorum). */
  readOnly: boolean;
  connections: readonly ZkConnectionStats[];
  totals: PortStats;
  outstandingRequests: number;
  /** Leader only. */
  learners?: readonly { sid: number; role: "participant" | "observer"; stage: LearnerStage }[];
  /** Leader only: this term's proposal sizes (-1 before the first). */
  proposalSizeBytes?: { last: number; min: number; max: number };
}

export function fourLetterWordContext(source: FourLetterWordSource): FourLetterWordContext {
  const { config, tree } = source;
  const connections = source.connections.map(connectionOf);
  let approximateDataSizeBytes = 0;
  let ephemeralsCount = 0;
  tree.walk((path, node) => {
    approximateDataSizeBytes += path.length + node.data.byteLength;
  });
  for (const sessionId of tree.sessionsWithEphemerals()) ephemeralsCount += tree.ephemeralsOf(sessionId).size;
  const watches = tree.watches;
  const learners = source.learners;
  const synced = learners?.filter((l) => l.stage === "upToDate") ?? [];
  return {
    version: zookeeperFullVersion(source.corralVersion, source.startedAt),
    mode: source.mode ?? (config.servers.length === 0 ? "standalone" : "follower"),
    readOnly: source.readOnly,
    serving: source.mode !== undefined || source.readOnly,
    zxid: BigInt(tree.lastProcessedZxid),
    nodeCount: tree.nodeCount(),
    watches: { connections: watches.watcherCount(), paths: watches.watchedPathCount(), total: watches.watchCount() },
    connections,
    latency: { minMs: source.totals.latency.minMs, avgMs: source.totals.latency.avgMs, maxMs: source.totals.latency.maxMs },
    packetsReceived: source.totals.packetsReceived,
    packetsSent: source.totals.packetsSent,
    outstandingRequests: source.outstandingRequests,
    ephemeralsCount,
    approximateDataSizeBytes,
    ...(learners === undefined
      ? {}
      : {
          leader: {
            learners: learners.length,
            syncedFollowers: synced.filter((l) => l.role === "participant").length,
            syncedNonVotingFollowers: 0,
            syncedObservers: synced.filter((l) => l.role === "observer").length,
            pendingSyncs: learners.length - synced.length,
            proposalSizeBytes: source.proposalSizeBytes ?? { last: -1, min: -1, max: -1 },
          },
        }),
    config: {
      clientPort: config.zkClientPort,
      secureClientPort: config.secureZkClientPort,
      dataDir: config.dataDir,
      dataDirSizeBytes: 0,
      dataLogDir: config.dataDir,
      dataLogSizeBytes: 0,
      tickTimeMs: config.tickMs,
      maxClientConnectionsPerHost: config.maxClientCnxns,
      minSessionTimeoutMs: config.minSessionTimeoutMs,
      maxSessionTimeoutMs: config.maxSessionTimeoutMs,
      clientPortListenBacklog: -1,
      serverId: config.serverId,
      ...(config.servers.length === 0
        ? {}
        : {
            quorum: {
              initLimitTicks: config.initLimitTicks,
              syncLimitTicks: config.syncLimitTicks,
              electionAlgorithm: 3,
              members: memberAddresses(config.servers),
              configVersion: 0n,
            },
          }),
    },
    environment: {
      hostName: hostname(),
      javaVersion: process.versions.node,
      javaVendor: "Node.js",
      javaHome: process.execPath,
      javaClassPath: "",
      javaLibraryPath: "",
      javaIoTmpdir: tmpdir(),
      javaCompiler: "<NA>",
      osName: process.platform === "linux" ? "Linux" : process.platform,
      osArch: process.arch === "x64" ? "amd64" : process.arch,
      osVersion: release(),
      userName: safeUserName(),
      userHome: homedir(),
      userDir: process.cwd(),
      memoryFreeMb: Math.floor(freemem() / MB),
      memoryMaxMb: Math.floor(totalmem() / MB),
      memoryTotalMb: Math.floor(process.memoryUsage().rss / MB),
    },
  };
}

function connectionOf(stats: ZkConnectionStats): FourLetterWordConnection {
  const session = stats.session;
  return {
    remoteHost: stats.remoteHost,
    remotePort: stats.remotePort,
    interestOps: 1,
    outstandingRequests: stats.outstandingRequests,
    packetsReceived: stats.packetsReceived,
    packetsSent: stats.packetsSent,
    ...(session === undefined
      ? {}
      : {
          session: {
            sessionId: session.sessionId,
            lastOperation: session.lastOperation,
            establishedMs: session.establishedMs,
            sessionTimeoutMs: session.sessionTimeoutMs,
            lastCxid: session.lastCxid,
            lastZxid: session.lastZxid,
            lastResponseMs: session.lastResponseMs,
            lastLatencyMs: session.latency.lastMs,
            minLatencyMs: session.latency.minMs,
            avgLatencyMs: Math.round(session.latency.avgMs),
            maxLatencyMs: session.latency.maxMs,
          },
        }),
  };
}

function safeUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return "";
  }
}
