/**
 * One corral server process: recovers its database, then serves the client protocol over gRPC.
 * (The process entry point is src/cli/main.ts; tests embed this class or run the CLI as a child.)
 */
import { FORWARDED_QUEUED_MAX, quorumQueueBytesMaxOf } from "./admission-bounds.js";
import * as grpc from "@grpc/grpc-js";
import { mkdirSync } from "node:fs";
import { userInfo } from "node:os";
import { GRPC_SERVER_CHANNEL_OPTIONS } from "../protocol/client-wire.js";
import { checkServerIdentity } from "node:tls";
import { memberAddresses } from "./cluster-servers.js";
import { clientTlsFiles, quorumTlsFiles, type ServerConfig } from "./config.js";
import { formatMembership } from "../common/membership.js";
import { channelCredentials, PemFiles, selfConnectionTls, serverCredentials } from "./tls.js";
import { DiskStorage } from "./disk-storage.js";
import { noPeers, systemClock, systemEntropy } from "./runtime-ports.js";
import { buildReplica, type Replica } from "../replica/replica.js";
import type { Clock, RecoveredState } from "../replica/ports.js";
import { formatZxid as hex } from "../store/zxid.js";
import { clientServiceDefinition, clientServiceHandlers } from "./grpc-client-service.js";
import { ZkClientService } from "./zk-wire/zk-client-service.js";
import { PortStats } from "./zk-wire/connection-stats.js";
import { parseFourLetterWordWhitelist } from "./zk-wire/four-letter-words.js";
import { ServerStatus } from "./server-status.js";
import { adminHandler, HttpListener, metricsHandler, type AdminExtension, type AdminExtensionContext } from "./admin/http-listeners.js";
import { BackupCommands } from "./admin/backup-commands.js";
import { readFileSync } from "node:fs";
import type { Logger } from "./log.js";
import { ConnectionThrottle } from "./connection-throttle.js";
import { ConnectionsPerAddress } from "./connections-per-address.js";
import { ServerMetrics } from "./metrics.js";
import { PeerTransport, type PeerTransportSecurity } from "./peer/peer-transport.js";
import { advertisedClientAddress, directoryFromConfig } from "./client-address-directory.js";
import { DISK_FAULT_ENV, type DiskFaultPlan } from "./disk-faults.js";
import { clientDoorAuth } from "./sasl/sasl-login.js";
import { openAuditLogFile, type AuditLogFile } from "./audit-log.js";
import { spaceQuotaBytesOf } from "./space-quota-default.js";

/** corral's own version (package.json), which the ZooKeeper port reports inside a 3.8.0 version string. */
const CORRAL_VERSION = readCorralVersion();

function readCorralVersion(): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version?: unknown };
    return typeof manifest.version === "string" ? manifest.version : "unknown";
  } catch {
    return "unknown";
  }
}

/** A server refusing to start on damaged data it cannot repair (EX_DATAERR). */
export const DATA_DAMAGED_EXIT_CODE = 65;

export interface ServerHooks {
  /**
   * A durable write failed (txn log, epochs, truncation, SNAP install): the server has stopped
   * accepting writes and must exit (fail-stop). Called at most once. The default logs one fatal
   * line and exits with code 70.
   */
  onFatal?: (error: unknown) => void;
  /** TEST ONLY: fail chosen durable writes on purpose (CORRAL_TEST_DISK_FAULT, see disk-faults.ts). */
  diskFaults?: DiskFaultPlan;
  /**
   * TEST ONLY, deliberately broken (CORRAL_TEST_UNSAFE_SOLO_COMMIT=1): as leader, commit on this
   * server's own ack alone. The chaos tests use it to prove their checkers catch lost writes.
   */
  unsafeCommitOnOwnAck?: boolean;
  /**
   * TEST ONLY, deliberately broken (CORRAL_TEST_UNSAFE_DROP_WATCH_EVENTS=<n>): every n-th watch
   * event a txn fires is never sent. The chaos tests use it to prove their watch checker catches it.
   */
  unsafeDropEveryNthWatchEvent?: number;
  /** TEST ONLY: the replica's clock, skewed by the chaos clock nemesis (CORRAL_TEST_CLOCK_FILE, see test-clock.ts). */
  clock?: Clock;
  /** What the admin port serves beside ZooKeeper's commands: the web console (src/console), from the CLI. */
  adminExtension?: (context: AdminExtensionContext) => AdminExtension;
  /**
   * The admin `restore` command's second half, from the process entry: stop this server, restore
   * its data dir from the backup at `file`, start it again. Without it the command is refused.
   */
  restoreAndRestart?: (file: string) => void;
}

export class CorralServer {
  private stopping: Promise<void> | undefined;

  private constructor(
    readonly config: ServerConfig,
    readonly clientPort: number,
    private readonly grpcServer: grpc.Server,
    private readonly replica: Replica,
    private readonly storage: DiskStorage,
    private readonly logger: Logger,
    private readonly transport: PeerTransport | undefined,
    readonly metrics: ServerMetrics,
    private readonly zkService: ZkClientService | undefined,
    readonly status: ServerStatus,
    private readonly metricsListener: HttpListener | undefined,
    private readonly adminListener: HttpListener | undefined,
    private readonly adminExtension: AdminExtension | undefined,
    private readonly secureZkService: ZkClientService | undefined,
    private readonly tlsFiles: readonly PemFiles[],
    private readonly auditLog: AuditLogFile | undefined,
  ) {}

  static async start(config: ServerConfig, logger: Logger, hooks: ServerHooks = {}): Promise<CorralServer> {
    mkdirSync(config.dataDir, { recursive: true });
    const clustered = config.servers.length > 0;
    // Certificates first: a missing or mismatched file stops the server before it touches its data.
    const tls = serverTls(config, logger);
    const reportFatal =
      hooks.onFatal ??
      ((error: unknown) => {
        if ((error as { code?: unknown }).code === "CANNOT_REPAIR") {
          // Damaged data with too few good copies left to repair it from: a person must act.
          logger.fatal({ err: error }, (error as Error).message);
          process.exit(DATA_DAMAGED_EXIT_CODE);
        }
        logger.fatal({ err: error }, "a durable write failed: stopping without answering (fail-stop)");
        process.exit(70);
      });
    // One failure reaches us by several roads (the log's onFailed, then each rejected write): report it once.
    let fatalReported = false;
    const onFatal = (error: unknown): void => {
      if (fatalReported) return;
      fatalReported = true;
      reportFatal(error);
    };
    // The JAAS file and the Kerberos keytab next: a SASL login that cannot work stops the server here.
    const { loginPrincipal, ...auth } = await clientDoorAuth(config, systemEntropy, logger);
    const metrics = new ServerMetrics();
    const doorAuth = { ...auth, outcomes: { authenticated: (scheme: string, succeeded: boolean) => metrics.clientAuthenticated(scheme, succeeded) } };
    // Opened before the data: a start that fails from here on is audited as one (ZooKeeper's serverStart failure).
    let auditLog: AuditLogFile | undefined;
    try {
      auditLog = config.auditEnable
        ? openAuditLogFile(config.auditLogFile, {
            systemUser: loginPrincipal ?? systemUserName(),
            logger,
            onDropped: (count) => metrics.auditEventsDropped(count),
          })
        : undefined;
    } catch (error) {
      metrics.close();
      throw error;
    }
    const auditStartFailed = async (): Promise<void> => {
      auditLog?.log.record({ user: auditLog.log.systemUser, operation: "serverStart", result: "failure" });
      await auditLog?.close();
    };
    const faults = hooks.diskFaults;
    if (faults) {
      logger.warn({ diskFault: faults.spec }, `TEST ONLY: ${DISK_FAULT_ENV} is set: a durable write will fail on purpose and this server will stop`);
    }
    const loadStartedMs = performance.now();
    let storage: DiskStorage;
    let recovered: RecoveredState;
    try {
      ({ storage, recovered } = await DiskStorage.open(
        config.dataDir,
        {
          snapshotRetainCount: config.snapshotRetainCount,
          // A member repairs damaged files from its leader; a standalone server holds the only copy.
          onDamage: clustered ? "repair" : "refuse",
          // Whichever write fails the log — a group-commit batch, an epoch, a truncation, the purge
          // after a background snapshot — the server stops at once rather than carry on with a dead log.
          log: { onFailed: onFatal, onBatchDurable: (records, ms) => metrics.logBatchDurable(records, ms), ...(faults ? { faults } : {}) },
          onSnapshotTaken: (ms) => metrics.snapshotTaken(ms),
          ...(faults ? { snapshotFaults: faults } : {}),
        },
        logger,
      ));
    } catch (error) {
      metrics.close();
      await auditStartFailed();
      throw error;
    }
    metrics.databaseLoaded(performance.now() - loadStartedMs);
    const clock = hooks.clock ?? systemClock;
    if (hooks.clock !== undefined) logger.warn("TEST ONLY: the replica's clock is skewed as a test file says (CORRAL_TEST_CLOCK_FILE)");
    const now = () => clock.nowMs();
    let replica: Replica | undefined;
    let transport: PeerTransport | undefined;
    // Every server's client address, for getMembers: the peers tell theirs over the peer links.
    const clientAddresses = directoryFromConfig(config);
    if (clustered) {
      transport = new PeerTransport({
        myId: config.serverId,
        members: config.servers,
        logger,
        clientAddresses,
        limits: { quorumQueueBytesMax: quorumQueueBytesMaxOf(config) },
        ...(tls.peerSecurity === undefined ? {} : { security: tls.peerSecurity }),
        handlers: {
          notification: (n) => replica?.onNotification(n),
          quorumMessage: (from, m) => replica?.onQuorumMessage(from, m),
          quorumStreamOpened: () => {},
          quorumStreamClosed: (peer) => replica?.onQuorumStreamClosed(peer),
        },
      });
    }
    const unsafeCommitOnOwnAck = hooks.unsafeCommitOnOwnAck === true;
    const dropEvery = hooks.unsafeDropEveryNthWatchEvent;
    if (dropEvery !== undefined)
      logger.warn(`TEST ONLY: CORRAL_TEST_UNSAFE_DROP_WATCH_EVENTS=${dropEvery}: this server loses every ${dropEvery}th watch event`);
    if (unsafeCommitOnOwnAck) logger.warn("TEST ONLY: CORRAL_TEST_UNSAFE_SOLO_COMMIT=1: as leader this server commits without a quorum and loses writes");
    // A standalone server is a cluster of one voter: the same replica, with nobody to talk to.
    const members = clustered ? config.servers : [{ id: config.serverId, role: "participant" as const }];
    replica = buildReplica(
      // A static configuration's version is 0, as ZooKeeper's.
      {
        ...config,
        servers: members,
        membershipText: clustered ? formatMembership(memberAddresses(config.servers), 0n) : "",
        forwardedQueuedMax: FORWARDED_QUEUED_MAX,
        spaceQuotaBytes: spaceQuotaBytesOf(config.spaceQuotaBytes),
      },
      {
        storage,
        recovered,
        peers: transport ?? noPeers,
        clock,
        nextTurn: (run) => setImmediate(run),
        entropy: systemEntropy,
        logger,
        metrics,
        requestObserver: {
          nowMs: () => performance.now(),
          answered: (kind, ms) => metrics.requestAnswered(kind, ms),
          authenticated: (scheme, succeeded) => metrics.clientAuthenticated(scheme, succeeded),
        },
        clientAddressOf: (serverId) => clientAddresses.addressOf(serverId),
        ...(auditLog === undefined ? {} : { audit: auditLog.log }),
        onFatal,
        ...(unsafeCommitOnOwnAck ? { unsafeCommitOnOwnAck } : {}),
        // Where each write waits, hop by hop: only at log level trace (an investigation, not production).
        ...(logger.isLevelEnabled("trace") ? { hops: { hop: (name, fields) => logger.trace({ hop: name, ...fields }, "hop") } } : {}),
        ...(dropEvery === undefined ? {} : { unsafeDropEveryNthWatchEvent: dropEvery }),
      },
    );
    const { pipeline, sessions, broadcast, tracker } = replica;
    const database = replica.database;
    const quorumPeer = clustered ? replica.status : undefined;

    const connectionsPerAddress = new ConnectionsPerAddress(config.maxClientCnxns, logger, () => metrics.connectionRejected());
    const connectThrottle = new ConnectionThrottle(
      { tokens: config.connectionThrottleTokens, fillTimeMs: config.connectionThrottleFillTimeMs, fillCount: config.connectionThrottleFillCount },
      () => performance.now(),
      () => metrics.connectionRejected(),
    );
    const grpcServer = new grpc.Server({
      ...GRPC_SERVER_CHANNEL_OPTIONS,
      "grpc.keepalive_permit_without_calls": 1,
      "grpc.keepalive_time_ms": 10_000,
      "grpc.keepalive_timeout_ms": 5_000,
    });
    const certificateAuth = { x509SuperUser: config.x509SuperUser };
    grpcServer.addService(
      clientServiceDefinition(),
      clientServiceHandlers({
        serverId: config.serverId,
        state: database,
        pipeline,
        sessions,
        inbound: replica.inbound,
        logger,
        certificateAuth,
        auth: doorAuth,
        connectionsPerAddress,
        connectThrottle,
        unsentBytesMax: config.connectionUnsentBytesMax,
        outbound: replica.outbound,
      }),
    );
    let clientPort: number;
    let zkService: ZkClientService | undefined;
    let metricsListener: HttpListener | undefined;
    let adminListener: HttpListener | undefined;
    let adminExtension: AdminExtension | undefined;
    let clientPortBound: number | undefined;
    let secureZkService: ZkClientService | undefined;
    // Both ZooKeeper ports are one server to srvr, mntr and cons: shared totals, every connection listed.
    const zkTotals = new PortStats();
    // One view of the live state for the four-letter words, the admin commands and the metrics.
    const status = new ServerStatus({
      config,
      corralVersion: CORRAL_VERSION,
      startedAt: new Date(),
      state: database,
      pipeline,
      inbound: replica.inbound,
      outbound: replica.outbound,
      spaceAlarm: replica.spaceAlarm,
      broadcast,
      tracker,
      quorumPeer,
      zkServices: () => [zkService, secureZkService].filter((service): service is ZkClientService => service !== undefined),
      zkTotals,
      nowMs: now,
    });
    try {
      if (transport) await transport.start();
      replica.start();
      // A standalone server's one-voter election and first epoch take a few milliseconds: its client
      // ports open once it serves, so that the first client to connect is never turned away.
      if (!clustered) await new Promise<void>((resolve) => replica.peer.whenServing(resolve));
      if (config.zkClientPort >= 0 || config.secureZkClientPort >= 0) {
        const zkDeps = {
          serverId: config.serverId,
          state: database,
          pipeline,
          sessions,
          inbound: replica.inbound,
          fourLetterWords: parseFourLetterWordWhitelist(config.fourLetterWordWhitelist, { readOnlyModeEnabled: config.readOnlyModeEnabled }),
          fourLetterWordContext: () => status.fourLetterWordContext(),
          nowMs: now,
          logger,
          totals: zkTotals,
          auth: doorAuth,
          connectionsPerAddress,
          connectThrottle,
          unsentBytesMax: config.connectionUnsentBytesMax,
          outbound: replica.outbound,
        };
        if (config.zkClientPort >= 0) zkService = await ZkClientService.listen(config.clientHost, config.zkClientPort, zkDeps);
        if (config.secureZkClientPort >= 0) {
          secureZkService = await ZkClientService.listen(config.clientHost, config.secureZkClientPort, zkDeps, {
            files: tls.client!,
            clientAuth: config.tlsClientAuth,
            certificateAuth,
          });
        }
      }
      if (config.metricsPort >= 0) {
        metricsListener = await HttpListener.listen(config.metricsHost, config.metricsPort, "metrics", metricsHandler(metrics, status), logger);
      }
      if (config.adminPort >= 0) {
        // An extension (the web console) reaches this server as a client does, through its own
        // client port (loopback when it binds every interface).
        const clientHost = { "0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1" }[config.clientHost] ?? config.clientHost;
        adminExtension = hooks.adminExtension?.({
          config,
          status,
          metrics,
          clientAddress: () => (clientPortBound === undefined ? undefined : `${clientHost.includes(":") ? `[${clientHost}]` : clientHost}:${clientPortBound}`),
          clientTls: () => (config.clientPortTls && tls.client ? selfConnectionTls(tls.client.current) : undefined),
          logger,
          nowMs: now,
        });
        const backupCommands = new BackupCommands({
          status,
          dataDir: config.dataDir,
          superDigest: config.superDigest,
          rateLimitIntervalMs: config.adminRateLimitIntervalMs,
          nowMs: () => performance.now(),
          logger,
          ...(hooks.restoreAndRestart === undefined ? {} : { restoreAndRestart: hooks.restoreAndRestart }),
        });
        adminListener = await HttpListener.listen(config.adminHost, config.adminPort, "admin", adminHandler(status, adminExtension, backupCommands), logger, [
          ...(adminExtension === undefined ? [] : [adminExtension.writablePathPrefix]),
          ...BackupCommands.POST_PATHS,
        ]);
      }
      const clientCredentials = config.clientPortTls ? serverCredentials(tls.client!, config.tlsClientAuth) : grpc.ServerCredentials.createInsecure();
      clientPort = await new Promise<number>((resolve, reject) => {
        grpcServer.bindAsync(`${config.clientHost}:${config.clientPort}`, clientCredentials, (error, port) => (error ? reject(error) : resolve(port)));
      });
      clientPortBound = clientPort;
      // The port actually bound (a configured 0 becomes the one picked): what peers hear from now on.
      clientAddresses.advertise(advertisedClientAddress(config, clientPort));
    } catch (error) {
      await adminExtension?.close();
      await adminListener?.close();
      await metricsListener?.close();
      await zkService?.close();
      await secureZkService?.close();
      await transport?.stop();
      await new Promise<void>((resolve) => replica.stop(resolve));
      await storage.close();
      metrics.close();
      for (const files of tls.all) files.stop();
      await auditStartFailed();
      throw error;
    }
    for (const files of tls.all) files.watch();
    const server = new CorralServer(
      config,
      clientPort,
      grpcServer,
      replica,
      storage,
      logger,
      transport,
      metrics,
      zkService,
      status,
      metricsListener,
      adminListener,
      adminExtension,
      secureZkService,
      tls.all,
      auditLog,
    );
    auditLog?.log.record({ user: auditLog.log.systemUser, operation: "serverStart", result: "success" });
    logger.info(
      {
        clientAddress: `${config.clientHost}:${clientPort}`,
        ...(config.clientPortTls ? { clientTls: config.tlsClientAuth } : {}),
        ...(zkService ? { zkClientAddress: `${config.clientHost}:${zkService.port}` } : {}),
        ...(secureZkService ? { secureZkClientAddress: `${config.clientHost}:${secureZkService.port}` } : {}),
        ...(config.sslQuorum && clustered ? { sslQuorum: true } : {}),
        ...(metricsListener ? { metricsAddress: `${metricsListener.host}:${metricsListener.port}` } : {}),
        ...(adminListener ? { adminAddress: `${adminListener.host}:${adminListener.port}` } : {}),
        lastZxid: hex(database.tree.lastProcessedZxid),
        mode: clustered ? "cluster" : "standalone",
      },
      "listening for clients",
    );
    return server;
  }

  get connectString(): string {
    return `${this.config.clientHost}:${this.clientPort}`;
  }

  /** host:port of the ZooKeeper-protocol port, when it has one. */
  get zkConnectString(): string | undefined {
    return this.zkService ? `${this.config.clientHost}:${this.zkService.port}` : undefined;
  }

  /** The Prometheus metrics port, when it has one (the bound port: a configured 0 becomes the one picked). */
  get metricsPort(): number | undefined {
    return this.metricsListener?.port;
  }

  /** The admin HTTP port, when it has one. */
  get adminPort(): number | undefined {
    return this.adminListener?.port;
  }

  /** host:port of the ZooKeeper-protocol port over TLS, when it has one. */
  get secureZkConnectString(): string | undefined {
    return this.secureZkService ? `${this.config.clientHost}:${this.secureZkService.port}` : undefined;
  }

  /** Write a snapshot now (tests use it to take one mid-load). */
  snapshot(): Promise<void> {
    return new Promise((resolve) => this.replica.takeSnapshot(resolve));
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      // Written as the stop begins, before the server has stopped: "invoked", as ZooKeeper's shutdown hook writes it.
      this.auditLog?.log.record({ user: this.auditLog.log.systemUser, operation: "serverStop", result: "invoked" });
      // The console's own session closes while this server can still answer it.
      if (this.adminExtension) await Promise.race([this.adminExtension.close(), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
      await new Promise<void>((resolve) => this.replica.stop(resolve));
      // The admin port goes first and the metrics port last: /readyz fails as soon as we stop.
      await this.adminListener?.close();
      await this.zkService?.close();
      await this.secureZkService?.close();
      for (const files of this.tlsFiles) files.stop();
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          this.grpcServer.forceShutdown();
          resolve();
        }, 2_000);
        this.grpcServer.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      await this.transport?.stop();
      await this.storage.close();
      await this.auditLog?.close();
      await this.metricsListener?.close();
      this.metrics.close();
      this.logger.info("stopped");
    })();
    return this.stopping;
  }
}

/** The TLS material a server's configuration asks for, read (and checked) at start-up. */
interface ServerTls {
  /** For the gRPC client port (clientPortTls) and the secure ZooKeeper port. */
  client: PemFiles | undefined;
  /** Mutual TLS on the election and quorum links (sslQuorum, in a cluster). */
  peerSecurity: PeerTransportSecurity | undefined;
  /** Every file set, to watch and to stop. */
  all: PemFiles[];
}

/** Reads the configured PEM files; a ConfigError names the field of a file that is missing or wrong. */
function serverTls(config: ServerConfig, logger: Logger): ServerTls {
  const watch = { reloadIntervalMs: config.tlsReloadIntervalMs, logger };
  const all: PemFiles[] = [];
  const clientFiles = clientTlsFiles(config);
  const client =
    clientFiles &&
    new PemFiles({ ...clientFiles, fields: { certFile: "tlsCertFile", keyFile: "tlsKeyFile", caFile: "tlsCaFile" } }, { ...watch, purpose: "client ports" });
  if (client) all.push(client);
  const quorumFiles = config.servers.length > 0 ? quorumTlsFiles(config) : undefined;
  let peerSecurity: PeerTransportSecurity | undefined;
  if (quorumFiles) {
    const fields = {
      certFile: config.quorumTlsCertFile === "" ? "tlsCertFile" : "quorumTlsCertFile",
      keyFile: config.quorumTlsKeyFile === "" ? "tlsKeyFile" : "quorumTlsKeyFile",
      caFile: config.quorumTlsCaFile === "" ? "tlsCaFile" : "quorumTlsCaFile",
    };
    const quorum = new PemFiles({ ...quorumFiles, fields }, { ...watch, purpose: "quorum" });
    all.push(quorum);
    const verifyHostname = config.sslQuorumHostnameVerification;
    peerSecurity = {
      serverCredentials: () => serverCredentials(quorum, "need"),
      channelCredentials: () => channelCredentials(quorum, { verifyHostname }),
      // ZooKeeper's ssl.quorum.hostnameVerification, on the receiving side: the caller's certificate
      // must name the host of the member it says it is.
      ...(verifyHostname
        ? {
            verifyCaller: (member, certificate) => {
              if (certificate === undefined) return "no verified certificate";
              const mismatch = checkServerIdentity(member.host, certificate);
              return mismatch === undefined ? undefined : `its certificate does not name ${member.host}: ${mismatch.message}`;
            },
          }
        : {}),
    };
  }
  return { client, peerSecurity, all };
}

/** The user this process runs as (Java's user.name, which ZooKeeper's audit log names for the server's own operations). */
function systemUserName(): string {
  try {
    return userInfo().username;
  } catch {
    // No passwd entry for the uid (a container's arbitrary user).
    return process.env["USER"] ?? "<NA>";
  }
}
