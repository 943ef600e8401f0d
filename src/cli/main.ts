#!/usr/bin/env node
/**
 * `corral server --config <file> [--field value ...]` runs one server;
 * `corral start` runs the local development server on 127.0.0.1:2181 with data under ./data;
 * `corral cluster` runs a cluster of server processes on 127.0.0.1 (src/cli/cluster.ts);
 * `corral health` checks that a server serves sessions (container health checks);
 * `corral shell` is the command-line client, ZooKeeper's zkCli.sh (src/cli/shell.ts).
 */
import { ConfigError, loadConfig, type ServerConfig } from "../server/config.js";
import { diskFaultPlanFromEnv } from "../server/disk-faults.js";
import { createLogger } from "../server/log.js";
import { CorralServer } from "../server/server.js";
import { dropIpServerNameWarning } from "./quiet-warnings.js";

const USAGE = `usage:
  corral start                          standalone server on 127.0.0.1:2181, data under ./data
  corral server [--config FILE] [--server-id N] [--data-dir DIR] [--client-host H] [--client-port P]
                [--tick-ms MS] [--min-session-timeout-ms MS] [--max-session-timeout-ms MS]
                [--snapshot-every-txns N] [--snapshot-retain-count N] [--log-level LEVEL]
                [--servers ID=HOST:CLIENT:QUORUM:ELECTION[:ROLE],...] [--init-limit-ticks N] [--sync-limit-ticks N]
                [--client-port-tls true] [--secure-zk-client-port P] [--ssl-quorum true] [--tls-cert-file F]
                [--tls-key-file F] [--tls-ca-file F] [--tls-client-auth need|want|none] [--x509-super-user DN] ...
  Every field can also come from the environment as CORRAL_<FIELD>, e.g. CORRAL_CLIENT_PORT=2181,
  CORRAL_SERVERS=1=corral1:2181:2888:3888:participant,2=corral2:2181:2888:3888:participant,...
  corral cluster [--voters 3] [--observers 0] [--base-port 2181] [--quorum-base-port P] [--election-base-port P]
                 [--data-dir ./data] [--tick-ms 2000] [--stop-grace-ms 10000] [--start-timeout-ms 60000]
                 [--tls-cert-file F --tls-key-file F --tls-ca-file F [--tls-client-auth need|want|none]
                  [--secure-zk-base-port P]]
                                        one server process per member on 127.0.0.1, data under DIR/<id>;
                                        with certificate files, TLS on every port
  corral health [--connect HOST:PORT] [--config FILE] [--timeout-ms 5000] [--tls-ca-file F] [--tls-cert-file F]
                [--tls-key-file F] [--tls-servername NAME]
                                        exit 0 if the server answers exists("/"), else 1; without
                                        --connect, the client port of the server CORRAL_* describes
  corral shell [--connect HOST:PORT[,HOST:PORT...][/CHROOT]] [--timeout-ms 10000] [--tls] [--tls-ca-file F]
               [--tls-cert-file F] [--tls-key-file F] [--tls-servername NAME] [--] [COMMAND ARGS...]
                                        the command-line client (zkCli): a prompt on a terminal, one
                                        command a line from a pipe, or just COMMAND; "corral shell help"
                                        lists the commands (ls, get, stat, create, set, delete, ...)`;

function parseFlags(args: string[]): { config?: string; flags: Record<string, string> } {
  const flags: Record<string, string> = {};
  let config: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith("--")) throw new ConfigError(arg, "unexpected argument");
    const [name, inline] = arg.slice(2).split("=", 2) as [string, string | undefined];
    const value = inline ?? args[++i];
    if (value === undefined) throw new ConfigError(name, "missing value");
    if (name === "config") config = value;
    else flags[name] = value;
  }
  return config === undefined ? { flags } : { config, flags };
}

async function runServer(config: ServerConfig, banner: boolean): Promise<void> {
  const logger = createLogger(config.logLevel, { serverId: config.serverId });
  // TEST ONLY (see src/server/disk-faults.ts): unset in production, where nothing is injected.
  const diskFaults = diskFaultPlanFromEnv(process.env);
  // TEST ONLY: the deliberately broken leader the chaos tests must catch (see ServerHooks).
  const unsafeCommitOnOwnAck = process.env["CORRAL_TEST_UNSAFE_SOLO_COMMIT"] === "1";
  const server = await CorralServer.start(config, logger, { ...(diskFaults ? { diskFaults } : {}), ...(unsafeCommitOnOwnAck ? { unsafeCommitOnOwnAck } : {}) });
  if (banner) {
    process.stdout.write(
      `corral standalone server ${config.serverId} serving on ${server.connectString} (data in ${config.dataDir})\n` +
        `connect with: Client.connect("${server.connectString}")\n` +
        `press Ctrl-C to stop\n`,
    );
  }
  let signalled = false;
  const stop = (signal: string) => {
    if (signalled) return;
    signalled = true;
    logger.info({ signal }, "stopping");
    server.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, "unclean stop");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
  // Started by `corral cluster` (an IPC channel to the launcher): stop when the launcher is gone,
  // even if it was killed with SIGKILL and could not stop us itself.
  if (process.channel) {
    process.channel.unref();
    process.on("disconnect", () => stop("launcher exited"));
  }
}

async function main(argv: string[]): Promise<void> {
  dropIpServerNameWarning();
  const [command, ...rest] = argv;
  switch (command) {
    case "start": {
      const { config, flags } = parseFlags(rest);
      await runServer(loadConfig({ ...(config ? { file: config } : {}), flags, env: process.env }), true);
      return;
    }
    case "server": {
      const { config, flags } = parseFlags(rest);
      await runServer(loadConfig({ ...(config ? { file: config } : {}), flags, env: process.env }), false);
      return;
    }
    case "cluster": {
      const { config, flags } = parseFlags(rest);
      if (config !== undefined) throw new ConfigError("config", "corral cluster writes its own config; see --help");
      const { parseClusterOptions, runCluster } = await import("./cluster.js");
      process.exit(await runCluster(parseClusterOptions(flags)));
    }
    case "health": {
      let parsed: ReturnType<typeof parseFlags>;
      try {
        parsed = parseFlags(rest);
      } catch (error) {
        // Docker reserves health check exit code 2: every failure of `health` is 1.
        process.stderr.write(`unhealthy: ${(error as Error).message}\n`);
        process.exit(1);
      }
      const { runHealth } = await import("./health.js");
      process.exit(await runHealth(parsed.config, parsed.flags, process.env));
    }
    case "shell": {
      const { parseShellArgs, runShell } = await import("./shell.js");
      process.exit(await runShell(parseShellArgs(rest)));
    }
    case undefined:
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(USAGE + "\n");
      return;
    default:
      process.stderr.write(`unknown command ${command}\n${USAGE}\n`);
      process.exit(2);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`corral: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
