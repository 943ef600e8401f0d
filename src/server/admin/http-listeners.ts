/**
 * The server's two HTTP listeners, each on its own port as in ZooKeeper:
 *
 * - metrics (ZooKeeper's Prometheus provider, metricsProvider.httpPort): `GET /metrics`, the
 *   Prometheus text format, gauges read from the live state at that moment;
 * - admin (ZooKeeper's AdminServer, admin.serverPort): `GET /commands/<name>` answers ZooKeeper's
 *   admin commands as JSON (admin-commands.ts), `/commands` lists them; and, for orchestrators,
 *   `GET /healthz` (the process is alive and its event loop answers: 200) and `GET /readyz`
 *   (200 while the server serves clients — standalone, or part of a quorum with an established
 *   leader — else 503).
 *
 * Both answer GET and HEAD only, and nothing else of the server: they read, never change it. The
 * one exception is an admin extension, the web console under /console/ (src/console/console-service.ts),
 * whose API also takes POST and changes the tree as an ordinary client of this server.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { ServerConfig } from "../config.js";
import type { Logger } from "../log.js";
import type { ServerMetrics } from "../metrics.js";
import type { ServerStatus } from "../server-status.js";
import { ADMIN_COMMAND_NAMES, runAdminCommand } from "./admin-commands.js";
import { BackupCommands } from "./backup-commands.js";
import { toJson } from "./json.js";

/** ZooKeeper's admin.commandURL. */
export const COMMAND_URL = "/commands";

type Handler = (request: IncomingMessage, response: ServerResponse, path: string) => Promise<void> | void;

/** One HTTP port. */
export class HttpListener {
  private constructor(
    private readonly server: Server,
    readonly host: string,
    readonly port: number,
  ) {}

  /** `writable`: the paths (by prefix) that also take POST; every other path answers GET and HEAD only. */
  static async listen(host: string, port: number, what: string, handler: Handler, logger: Logger, writable: readonly string[] = []): Promise<HttpListener> {
    const server = createServer({ keepAliveTimeout: 5_000, requestTimeout: 30_000 }, (request, response) => {
      const method = request.method ?? "GET";
      let path: string;
      try {
        path = new URL(request.url ?? "/", "http://localhost").pathname;
      } catch {
        return send(response, 400, "text/plain; charset=utf-8", "bad request target\n");
      }
      const postable = writable.some((prefix) => path.startsWith(prefix));
      if (method !== "GET" && method !== "HEAD" && !(postable && method === "POST")) {
        response.setHeader("allow", postable ? "GET, HEAD, POST" : "GET, HEAD");
        return send(response, 405, "text/plain; charset=utf-8", "method not allowed\n");
      }
      Promise.resolve()
        .then(() => handler(request, response, path))
        .catch((error: unknown) => {
          logger.error({ err: error, path }, `${what} request failed`);
          if (!response.headersSent) send(response, 500, "text/plain; charset=utf-8", "internal error\n");
          else response.destroy();
        });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host, port, exclusive: true }, () => {
        server.off("error", reject);
        resolve();
      });
    });
    server.on("error", (error) => logger.error({ err: error }, `${what} port error`));
    const address = server.address();
    return new HttpListener(server, host, typeof address === "object" && address !== null ? address.port : port);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

function send(response: ServerResponse, status: number, contentType: string, body: string): void {
  response.writeHead(status, { "content-type": contentType, "content-length": Buffer.byteLength(body), "cache-control": "no-store" });
  response.end(body);
}

export function sendJson(response: ServerResponse, status: number, value: unknown): void {
  send(response, status, "application/json", `${toJson(value)}\n`);
}

export function metricsHandler(metrics: ServerMetrics, status: ServerStatus): Handler {
  return async (_request, response, path) => {
    if (path !== "/metrics") return send(response, 404, "text/plain; charset=utf-8", "not found: metrics are at /metrics\n");
    send(response, 200, metrics.contentType, await metrics.scrape(status));
  };
}

/**
 * An application the admin port serves beside ZooKeeper's commands (the web console, src/console).
 * It is composed in by the process entry point, so the server never depends on what it is.
 */
export interface AdminExtension {
  /** Whether `path` is the extension's to answer. */
  owns(path: string): boolean;
  /** Paths under this prefix may be POSTed to (everything else on the admin port is read-only). */
  readonly writablePathPrefix: string;
  handle(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> | void;
  close(): Promise<void>;
}

/** What an admin extension may use of the server that hosts it. */
export interface AdminExtensionContext {
  config: ServerConfig;
  status: ServerStatus;
  metrics: ServerMetrics;
  /** host:port of this server's gRPC client port, once it listens. */
  clientAddress: () => string | undefined;
  /**
   * When that port speaks TLS: the server's own current certificate, key and CAs, and the name its
   * certificate carries, for a client of this server to present and check (a self-connection).
   */
  clientTls: () => { ca?: Buffer; cert: Buffer; key: Buffer; servername?: string } | undefined;
  logger: Logger;
  nowMs: () => number;
}

/** `backup`: the snapshot and restore commands (backup-commands.ts), answered beside the others. */
export function adminHandler(status: ServerStatus, extension?: AdminExtension, backup?: BackupCommands): Handler {
  return (request, response, path) => {
    if (extension !== undefined && extension.owns(path)) return extension.handle(request, response, path);
    if (path === "/healthz") return sendJson(response, 200, { status: "ok" });
    if (path === "/readyz") {
      const ready = status.serving;
      const leaderId = status.leaderId();
      const space = status.space();
      // Still ready with the space alarm raised: reads, deletes and shrinking writes are served, and
      // sending clients elsewhere would not help (every server forwards writes to the same leader).
      const repairing = status.repairing;
      return sendJson(response, ready ? 200 : 503, {
        ready,
        server_state: status.state(),
        ...(leaderId === undefined ? {} : { leader_id: leaderId }),
        ...(space.alarm
          ? {
              alarms: [
                {
                  name: "NOSPACE",
                  reason: `writes that grow the tree are refused: it holds ${space.usedBytes} of ${space.quotaBytes} bytes (spaceQuotaBytes)`,
                },
              ],
            }
          : {}),
        ...(repairing === undefined ? {} : { reason: `repairing from the leader: ${repairing.file}: ${repairing.reason}` }),
      });
    }
    if (path === COMMAND_URL || path === `${COMMAND_URL}/`) {
      // ZooKeeper's CommandServlet: a link to each command.
      const names = backup === undefined ? ADMIN_COMMAND_NAMES : [...ADMIN_COMMAND_NAMES, ...BackupCommands.NAMES].sort();
      const links = names.map((name) => `<a href="${COMMAND_URL}/${name}">${name}</a>\n<br/>\n`).join("");
      return send(response, 200, "text/html; charset=utf-8", links);
    }
    if (path.startsWith(`${COMMAND_URL}/`)) {
      let name: string;
      try {
        name = decodeURIComponent(path.slice(COMMAND_URL.length + 1));
      } catch {
        return send(response, 400, "text/plain; charset=utf-8", "bad command name\n");
      }
      if (backup?.handles(name)) return backup.handle(request, response, name);
      // As ZooKeeper: 200 with the reason in "error", for unknown commands too.
      return sendJson(response, 200, runAdminCommand(name, status));
    }
    send(response, 404, "text/plain; charset=utf-8", `not found: try ${COMMAND_URL}, /healthz, /readyz or /console/\n`);
  };
}
