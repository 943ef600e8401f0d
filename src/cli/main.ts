#!/usr/bin/env node
/**
 * `corral server --config <file> [--field value ...]` runs one server;
 * `corral start` runs the local development server on 127.0.0.1:2181 with data under ./data;
 * `corral cluster` runs a cluster of server processes on 127.0.0.1 (src/cli/cluster.ts);
 * `corral health` checks that a server serves sessions (container health checks);
 * `corral shell` is the command-line client, ZooKeeper's zkCli.sh (src/cli/shell.ts);
 * `corral backup`, `restore`, `import`, `export` and `data` are the offline tools (src/cli/tools.ts).
 * `--help` (or `-h`) on any of them prints its usage (src/cli/usage.ts).
 */
import { ConsoleService } from "../console/console-service.js";
import { ConfigError } from "../server/config-error.js";
import { loadConfig, type ServerConfig } from "../server/config.js";
import { diskFaultPlanFromEnv } from "../server/disk-faults.js";
import { DataDamagedError } from "../server/disk-storage.js";
import { createLogger } from "../server/log.js";
import { CorralServer, DATA_DAMAGED_EXIT_CODE } from "../server/server.js";
import { skewedClock, TEST_CLOCK_ENV } from "../server/test-clock.js";
import { dropIpServerNameWarning } from "./quiet-warnings.js";
import { readFlags } from "./tool-command.js";

/** `--name value` or `--name=value` pairs, `--config FILE` apart; `--help` or `-h` asks for the usage. */
function parseFlags(args: string[]): { config?: string; flags: Record<string, string>; help: boolean } {
  // The one switch without a value is corral cluster's --verbose; elsewhere it is an unknown option.
  const { pairs, help } = readFlags(args, (name) => name === "verbose");
  const flags: Record<string, string> = {};
  let config: string | undefined;
  for (const [name, value] of pairs) {
    if (name === "config") config = value;
    else flags[name] = value;
  }
  return config === undefined ? { flags, help } : { config, flags, help };
}

/** Prints a command's usage (the overview when undefined) to stdout. */
async function printUsage(command?: string): Promise<void> {
  const { usage } = await import("./usage.js");
  process.stdout.write(`${usage(command)}\n`);
}

async function runServer(config: ServerConfig, banner: boolean): Promise<void> {
  const logger = createLogger(config.logLevel, { serverId: config.serverId });
  // TEST ONLY (see src/server/disk-faults.ts): unset in production, where nothing is injected.
  const diskFaults = diskFaultPlanFromEnv(process.env);
  // TEST ONLY: the deliberately broken leader the chaos tests must catch (see ServerHooks).
  const unsafeCommitOnOwnAck = process.env["CORRAL_TEST_UNSAFE_SOLO_COMMIT"] === "1";
  // TEST ONLY: the server that loses watch events, which the chaos watch checker must catch.
  const dropEvery = Number(process.env["CORRAL_TEST_UNSAFE_DROP_WATCH_EVENTS"] ?? 0);
  const unsafeDropEveryNthWatchEvent = Number.isSafeInteger(dropEvery) && dropEvery > 0 ? dropEvery : undefined;
  // TEST ONLY: the chaos clock nemesis's skewed clock (see src/server/test-clock.ts).
  const clockFile = process.env[TEST_CLOCK_ENV];
  const clock = clockFile === undefined || clockFile === "" ? undefined : skewedClock(clockFile);
  // The admin `restore` command: this process stops the server, restores its data dir, starts it again.
  let restarting: Promise<void> | undefined;
  const start = (): Promise<CorralServer> =>
    CorralServer.start(config, logger, {
      adminExtension: (context) => new ConsoleService(context),
      ...(diskFaults ? { diskFaults } : {}),
      ...(unsafeCommitOnOwnAck ? { unsafeCommitOnOwnAck } : {}),
      ...(clock === undefined ? {} : { clock }),
      ...(unsafeDropEveryNthWatchEvent === undefined ? {} : { unsafeDropEveryNthWatchEvent }),
      restoreAndRestart: (file) => {
        restarting ??= (async () => {
          await server.stop();
          const { restoreFromUpload } = await import("./backup.js");
          await restoreFromUpload(config.dataDir, file, logger);
          server = await start();
        })()
          .catch((error: unknown) => {
            logger.fatal({ err: error }, "could not start again after a restore");
            process.exit(1);
          })
          .finally(() => (restarting = undefined));
      },
    });
  let server = await start();
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
    Promise.resolve(restarting)
      .then(() => server.stop())
      .then(
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
    case "start":
    case "server": {
      const { config, flags, help } = parseFlags(rest);
      if (help) return printUsage(command);
      await runServer(loadConfig({ ...(config ? { file: config } : {}), flags, env: process.env }), command === "start");
      return;
    }
    case "cluster": {
      const { config, flags, help } = parseFlags(rest);
      if (help) return printUsage(command);
      const { parseClusterOptions, runCluster } = await import("./cluster.js");
      const options = parseClusterOptions(flags, { ...(config ? { file: config } : {}), env: process.env });
      // add/remove/members come on stdin; it is read only when reconfiguration is on, since a
      // launcher reading a terminal while in the background is stopped by SIGTTIN.
      const io = { out: (t: string) => void process.stdout.write(t), err: (t: string) => void process.stderr.write(t), input: process.stdin };
      return process.exit(await runCluster(options, io));
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
      if (parsed.help) return printUsage(command);
      const { runHealth } = await import("./health.js");
      return process.exit(await runHealth(parsed.config, parsed.flags, process.env));
    }
    case "backup":
    case "restore":
    case "import":
    case "export":
    case "data": {
      const { runToolCommand } = await import("./tools.js");
      return process.exit(await runToolCommand(command, rest));
    }
    case "shell": {
      const { parseShellArgs, runShell } = await import("./shell.js");
      return process.exit(await runShell(parseShellArgs(rest, process.env.CLIENT_JVMFLAGS)));
    }
    case "help": {
      const { usage } = await import("./usage.js");
      // "corral help data dump": a command of two words.
      const topic = rest.length === 0 ? undefined : rest.join(" ");
      const text = usage(topic);
      if (text === undefined) {
        process.stderr.write(`unknown command ${topic}\n${usage()}\n`);
        process.exit(2);
      }
      process.stdout.write(`${text}\n`);
      return;
    }
    case undefined:
    case "--help":
    case "-h":
      return printUsage();
    default: {
      const { usage } = await import("./usage.js");
      process.stderr.write(`unknown command ${command}\n${usage()}\n`);
      process.exit(2);
    }
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
  if (error instanceof DataDamagedError) {
    process.stderr.write(`corral: ${error.message}\n`);
    process.exit(DATA_DAMAGED_EXIT_CODE);
  }
  process.stderr.write(`corral: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
