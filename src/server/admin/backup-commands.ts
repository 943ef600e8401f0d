/**
 * ZooKeeper 3.9's `snapshot` and `restore` admin commands (Commands.SnapshotCommand,
 * RestoreCommand) on corral's admin port, with ZooKeeper's gate in front of both:
 *
 * - authentication from the `Authorization` header, "<scheme> <credentials>" ("digest user:pass",
 *   or "ip" alone, the address being the connection's), through the same providers sessions use;
 *   none → 401 "Auth info is missing for the command", refused → 401 "Not authenticated";
 * - authorization: every one of READ, WRITE, CREATE, DELETE and ADMIN on "/", each bit checked on
 *   its own (ZooKeeper 3.9.4's fix; any single bit sufficed before) → 403 "Not authorized";
 * - a rate limit per command, one per `adminRateLimitIntervalMs` (ZooKeeper's
 *   zookeeper.admin.rateLimiterIntervalInMS, 5 minutes) → 429.
 *
 * `GET /commands/snapshot?streaming=true` (the default) answers a corral backup (backup-file.ts) of
 * this server's tree, exact at one zxid, with ZooKeeper's headers `last_zxid` ("0x…") and
 * `snapshot_size` (bytes); the backup is written to a temp file in the data dir first, as ZooKeeper
 * streams its snapshot file, so the size is known before the first byte goes. `streaming=false`
 * answers the headers and the JSON alone.
 *
 * `POST /commands/restore` takes a backup as the body, checks it whole (integrity hash, snapshot
 * decodes), answers `last_zxid`, and then has the process entry stop this server, restore its data
 * dir in place (restore.ts) and start it again. Without a process entry to do that (an embedded
 * server), restore is refused; so it is on a cluster member, which the others would bring back to
 * their history at its first sync (restore.ts): a cluster is restored into new data dirs.
 */
import { createReadStream, createWriteStream } from "node:fs";
import { open, readdir, unlink } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { Perms } from "../../common/znode.js";
import { permits } from "../../replica/acl.js";
import { authenticate, remoteAddressOfPeer } from "../../replica/auth.js";
import { SnapshotEncoder } from "../../store/snapshot-codec.js";
import { formatZxid } from "../../store/zxid.js";
import { BackupError, BackupFramer, readBackupFile, treeOfBackup } from "../backup/backup-file.js";
import { snapshotChunks } from "../disk-storage.js";
import type { Logger } from "../log.js";
import type { ServerStatus } from "../server-status.js";
import { ZK_NOT_SERVING } from "../zk-wire/four-letter-words.js";
import { sendJson } from "./http-listeners.js";

/** ZooKeeper's default zookeeper.admin.rateLimiterIntervalInMS. */
export const ADMIN_RATE_LIMIT_INTERVAL_MS_DEFAULT = 300_000;

export interface BackupCommandsContext {
  status: ServerStatus;
  dataDir: string;
  superDigest: string;
  rateLimitIntervalMs: number;
  /** A monotonic clock (ms). */
  nowMs: () => number;
  logger: Logger;
  /** The process entry's: stop this server, restore its data dir from the backup at `file` (then remove it), start again. */
  restoreAndRestart?: (file: string) => void;
}

/** ZooKeeper's RateLimiter: `rate` calls, then none until `intervalMs` after the last refill. */
class RateLimiter {
  private remaining: number;
  private refilledMs: number;
  constructor(
    private readonly rate: number,
    private readonly intervalMs: number,
    nowMs: number,
  ) {
    this.remaining = rate;
    this.refilledMs = nowMs;
  }

  allow(nowMs: number): boolean {
    if (nowMs > this.refilledMs + this.intervalMs) {
      this.remaining = this.rate;
      this.refilledMs = nowMs;
    }
    if (this.remaining === 0) return false;
    this.remaining -= 1;
    return true;
  }
}

const PRIMARY: Readonly<Record<string, "snapshot" | "restore">> = { snapshot: "snapshot", snap: "snapshot", restore: "restore", rest: "restore" };
const ALL_PERMISSION_BITS = [Perms.READ, Perms.WRITE, Perms.CREATE, Perms.DELETE, Perms.ADMIN];
const TEMP_PREFIX = ".admin-backup-";

export class BackupCommands {
  /** The primary names, for the /commands index. */
  static readonly NAMES = ["restore", "snapshot"] as const;
  /** The request paths that take POST. */
  static readonly POST_PATHS = ["/commands/restore", "/commands/rest"] as const;
  private readonly limiters: Record<"snapshot" | "restore", RateLimiter>;
  private tempCounter = 0;
  /** A restore was accepted: this server is about to stop for it. */
  private restoring = false;

  constructor(private readonly context: BackupCommandsContext) {
    const now = context.nowMs();
    this.limiters = { snapshot: new RateLimiter(1, context.rateLimitIntervalMs, now), restore: new RateLimiter(1, context.rateLimitIntervalMs, now) };
  }

  handles(name: string): boolean {
    return Object.hasOwn(PRIMARY, name);
  }

  async handle(request: IncomingMessage, response: ServerResponse, name: string): Promise<void> {
    const command = PRIMARY[name]!;
    const isPost = request.method === "POST";
    if (isPost !== (command === "restore")) {
      response.setHeader("allow", command === "restore" ? "POST" : "GET, HEAD");
      return sendJson(response, 405, { command, error: `${command} takes ${command === "restore" ? "POST" : "GET"}` });
    }
    if (!this.context.status.serving) return sendJson(response, 200, { command: name, error: ZK_NOT_SERVING });
    const refusal = this.authorize(request);
    if (refusal !== undefined) return sendJson(response, refusal.status, { command: name, error: refusal.error });
    if (command === "restore" && this.context.restoreAndRestart === undefined) {
      return sendJson(response, 503, {
        command,
        error: "restore is not available here: it needs the corral server process, which restarts this server from the backup",
      });
    }
    if (command === "restore" && this.context.status.config.servers.length > 0) {
      return sendJson(response, 409, {
        command,
        error:
          "restore restores a standalone server; a cluster member would be brought back by the others at its next sync. " +
          "Restore a cluster with corral restore into new data dirs, every member from the same backup (docs/operations/backup-restore.md)",
      });
    }
    if (!this.limiters[command].allow(this.context.nowMs())) {
      return sendJson(response, 429, { command, error: `rate limited: one ${command} every ${Math.round(this.context.rateLimitIntervalMs / 1000)} s` });
    }
    if (command === "snapshot") return this.snapshot(request, response);
    return this.restore(request, response);
  }

  private authorize(request: IncomingMessage): { status: number; error: string } | undefined {
    const header = request.headers.authorization;
    if (header === undefined) return { status: 401, error: "Auth info is missing for the command" };
    const parts = header.split(" ");
    const [scheme, credentials] = parts;
    if (parts.length > 2 || scheme === undefined || (scheme !== "ip" && credentials === undefined)) return { status: 401, error: "Not authenticated" };
    const remote = remoteAddressOfPeer(`${request.socket.remoteAddress ?? ""}:${request.socket.remotePort ?? 0}`);
    const ids = authenticate(scheme, new TextEncoder().encode(credentials ?? ""), remote, { superDigest: this.context.superDigest });
    if (ids === undefined || ids.length === 0) return { status: 401, error: "Not authenticated" };
    const acl = this.context.status.tree.getAcl("/").acl;
    for (const bit of ALL_PERMISSION_BITS) if (!permits(acl, bit, ids)) return { status: 403, error: "Not authorized" };
    return undefined;
  }

  /** The backup written whole to a temp file, then streamed (see the file note). */
  private async snapshot(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const streaming = new URL(request.url ?? "/", "http://localhost").searchParams.get("streaming")?.toLowerCase() !== "false";
    await this.removeStaleTempFiles();
    this.tempCounter += 1;
    const temp = join(this.context.dataDir, `${TEMP_PREFIX}${process.pid}-${this.tempCounter}.tmp`);
    const encoder = new SnapshotEncoder(this.context.status.tree);
    const framer = new BackupFramer(encoder.zxid);
    try {
      const handle = await open(temp, "wx");
      try {
        await handle.write(framer.header());
        for await (const chunk of snapshotChunks(encoder)) await handle.write(framer.body(chunk));
        await handle.write(framer.trailer());
      } finally {
        await handle.close();
      }
      const headers = { last_zxid: formatZxid(encoder.zxid), snapshot_size: String(framer.totalBytes) };
      this.context.logger.info({ zxid: headers.last_zxid, bytes: framer.totalBytes, sha256: framer.sha256, streaming }, "backup taken through the admin port");
      if (!streaming) {
        for (const [key, value] of Object.entries(headers)) response.setHeader(key, value);
        return sendJson(response, 200, { command: "snapshot", error: null });
      }
      response.writeHead(200, { ...headers, "content-type": "application/octet-stream", "content-length": framer.totalBytes, "cache-control": "no-store" });
      await pipeline(createReadStream(temp), response);
    } finally {
      encoder.abort();
      await unlink(temp).catch(() => undefined);
    }
  }

  /** Temp files a crash left behind (a backup stopped half way). */
  private async removeStaleTempFiles(): Promise<void> {
    for (const entry of await readdir(this.context.dataDir)) {
      if (entry.startsWith(TEMP_PREFIX) && !entry.startsWith(`${TEMP_PREFIX}${process.pid}-`))
        await unlink(join(this.context.dataDir, entry)).catch(() => undefined);
    }
  }

  private async restore(request: IncomingMessage, response: ServerResponse): Promise<void> {
    // Only with adminRateLimitIntervalMs 0 can a second one come in while the first is under way.
    if (this.restoring) return sendJson(response, 409, { command: "restore", error: "a restore is under way" });
    this.restoring = true;
    try {
      await this.receiveRestore(request, response);
    } catch (error) {
      this.restoring = false;
      throw error;
    }
  }

  /** Keeps `restoring` set once the restore is accepted: the process restarts the server. */
  private async receiveRestore(request: IncomingMessage, response: ServerResponse): Promise<void> {
    // Beside the data dir, not in it: the data dir is replaced whole.
    const upload = `${this.context.dataDir}.restore-upload-${process.pid}`;
    let zxid: number;
    try {
      await pipeline(request, createWriteStream(upload));
      const backup = await readBackupFile(upload);
      treeOfBackup(backup);
      zxid = backup.zxid;
    } catch (error) {
      await unlink(upload).catch(() => undefined);
      this.restoring = false;
      if (error instanceof BackupError) return sendJson(response, 400, { command: "restore", error: error.message.replace(`${upload}: `, "") });
      throw error;
    }
    this.context.logger.warn({ zxid: formatZxid(zxid) }, "restore through the admin port: this server restarts from the backup");
    // Once answered (or the asker gone), never before: stopping the server closes this connection.
    response.once("close", () => this.context.restoreAndRestart!(upload));
    sendJson(response, 200, { last_zxid: zxid, command: "restore", error: null });
  }
}
