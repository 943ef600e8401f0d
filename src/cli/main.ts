#!/usr/bin/env node
/**
 * `corral server --config <file> [--field value ...]` runs one server;
 * `corral start` runs the local development server on 127.0.0.1:2181 with data under ./data.
 */
import { ConfigError, loadConfig, type ServerConfig } from "../server/config.js";
import { createLogger } from "../server/log.js";
import { CorralServer } from "../server/server.js";

const USAGE = `usage:
  corral start                          standalone server on 127.0.0.1:2181, data under ./data
  corral server [--config FILE] [--server-id N] [--data-dir DIR] [--client-host H] [--client-port P]
                [--tick-ms MS] [--min-session-timeout-ms MS] [--max-session-timeout-ms MS]
                [--snapshot-every-txns N] [--snapshot-retain-count N] [--log-level LEVEL]
  Every field can also come from the environment as CORRAL_<FIELD>, e.g. CORRAL_CLIENT_PORT=2181.`;

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
  const server = await CorralServer.start(config, logger);
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
}

async function main(argv: string[]): Promise<void> {
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
