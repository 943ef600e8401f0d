/**
 * `corral backup` and `corral restore`: a backup taken from a live server over its admin port
 * (ZooKeeper 3.9's `snapshot?streaming=true`), checked before it is kept; and a member's data dir
 * laid down from one (every member of a new cluster from the same file, as `etcdutl snapshot
 * restore`). The admin `restore` command's half that runs in the server process is here too.
 */
import { request } from "node:http";
import { createWriteStream } from "node:fs";
import { readFile, rename, stat, unlink } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { pipeline } from "node:stream/promises";
import { ConfigError } from "../server/config-error.js";
import { BackupError, readBackupFile } from "../server/backup/backup-file.js";
import { restoreInPlace, restoreIntoNewDataDir } from "../server/backup/restore.js";
import { fsyncDirectory } from "../store/disk/snapshot-store.js";
import { formatZxid } from "../store/zxid.js";
import type { Logger } from "../server/log.js";
import { required, type FlagTable, type ToolIo } from "./tool-command.js";

export const BACKUP_FLAGS: FlagTable = {
  server: ["HOST:PORT", "the admin port of the server to back up (its adminPort)"],
  out: ["FILE", "where to write the backup; it must not exist yet"],
  auth: ["USER:PASSWORD|ip", "sign in with digest credentials (a user with every permission on /, or the super user), or by this address (ip)"],
  "auth-file": ["FILE", "the same, read from a file only its owner can read (e.g. corral cluster's DIR/super-auth)"],
};

export const RESTORE_FLAGS: FlagTable = {
  from: ["FILE", "the backup (corral backup's file, or the admin port's snapshot command's answer)"],
  "data-dir": ["DIR", "the member's data dir to lay down; it must be new or empty, and {id} is replaced by --server-id"],
  "server-id": ["N", "the member this data dir is for (1..254): fills in {id} in --data-dir"],
};

/** Refuse a credential file larger than this unread. */
const AUTH_FILE_BYTES_MAX = 4096;

export async function runBackup(flags: Record<string, string>, io: ToolIo): Promise<void> {
  const server = required(flags, "server");
  const out = resolve(required(flags, "out"));
  const authorization = await authorizationOf(flags);
  let url: URL;
  try {
    url = new URL(`http://${server}/commands/snapshot?streaming=true`);
  } catch {
    throw new ConfigError("server", `expected HOST:PORT, got ${JSON.stringify(server)}`);
  }
  if (url.port === "") throw new ConfigError("server", `expected HOST:PORT (the admin port), got ${JSON.stringify(server)}`);
  await stat(dirname(out)).catch(() => {
    throw new ConfigError("out", `the directory ${dirname(out)} does not exist`);
  });
  if (
    await stat(out).then(
      () => true,
      () => false,
    )
  )
    throw new ConfigError("out", `${out} exists already: backups are never overwritten`);

  const temp = join(dirname(out), `.${basename(out)}.tmp-${process.pid}`);
  try {
    const headers = await download(url, authorization, temp);
    const backup = await readBackupFile(temp);
    if (headers.lastZxid !== undefined && headers.lastZxid !== formatZxid(backup.zxid)) {
      throw new BackupError(`the server said last_zxid ${headers.lastZxid}, the backup holds ${formatZxid(backup.zxid)}`);
    }
    if (headers.size !== undefined && headers.size !== backup.bytes) throw new BackupError(`the server said ${headers.size} bytes, ${backup.bytes} arrived`);
    await rename(temp, out);
    await fsyncDirectory(dirname(out));
    io.out(`backup of ${server} at zxid ${formatZxid(backup.zxid)}: ${backup.bytes} bytes, sha256 ${backup.sha256}, written to ${out}\n`);
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

/** The Authorization header ZooKeeper's admin server reads: "digest user:password" or "ip". */
async function authorizationOf(flags: Record<string, string>): Promise<string> {
  let credentials = flags["auth"];
  const file = flags["auth-file"];
  if (credentials !== undefined && file !== undefined) throw new ConfigError("auth-file", "give --auth or --auth-file, not both");
  if (file !== undefined) {
    const info = await stat(file).catch(() => {
      throw new ConfigError("auth-file", `${file} does not exist`);
    });
    if ((info.mode & 0o077) !== 0) throw new ConfigError("auth-file", `${file} is readable by others (mode ${(info.mode & 0o777).toString(8)}): chmod 600 it`);
    if (info.size > AUTH_FILE_BYTES_MAX) throw new ConfigError("auth-file", `${file} is over ${AUTH_FILE_BYTES_MAX} bytes`);
    credentials = (await readFile(file, "utf8")).trim();
  }
  if (credentials === undefined) throw new ConfigError("auth", "required (or --auth-file): the snapshot command needs every permission on /");
  if (credentials === "ip") return "ip";
  if (!/^[^\s:]+:\S+$/.test(credentials)) throw new ConfigError("auth", "expected USER:PASSWORD or ip");
  return `digest ${credentials}`;
}

/** GETs the backup into `file`; a refusal (JSON) becomes an error with the server's reason. */
function download(url: URL, authorization: string, file: string): Promise<{ lastZxid: string | undefined; size: number | undefined }> {
  return new Promise((resolvePromise, reject) => {
    const call = request(url, { headers: { authorization } }, (response) => {
      const type = response.headers["content-type"] ?? "";
      if (response.statusCode !== 200 || !type.startsWith("application/octet-stream")) {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (body += chunk.slice(0, 4096)));
        response.on("end", () => {
          let reason = body.trim();
          try {
            const error = (JSON.parse(body) as { error?: unknown }).error;
            if (typeof error === "string") reason = error;
          } catch {
            // not JSON: the body as it came
          }
          reject(new Error(`${url.host} refused the backup: HTTP ${response.statusCode}: ${reason}`));
        });
        return;
      }
      const lastZxid = response.headers["last_zxid"];
      const size = response.headers["snapshot_size"];
      pipeline(response, createWriteStream(file, { flags: "wx" })).then(
        () => resolvePromise({ lastZxid: typeof lastZxid === "string" ? lastZxid : undefined, size: typeof size === "string" ? Number(size) : undefined }),
        reject,
      );
    });
    call.on("error", (error) => reject(new Error(`cannot reach ${url.host}: ${error.message}`)));
    call.end();
  });
}

export async function runRestore(flags: Record<string, string>, io: ToolIo): Promise<void> {
  const from = required(flags, "from");
  let dataDir = required(flags, "data-dir");
  const serverId = flags["server-id"];
  if (serverId !== undefined) {
    const id = Number(serverId);
    if (!Number.isInteger(id) || id < 1 || id > 254) throw new ConfigError("server-id", `expected 1..254, got ${JSON.stringify(serverId)}`);
    dataDir = dataDir.replaceAll("{id}", String(id));
  } else if (dataDir.includes("{id}")) {
    throw new ConfigError("data-dir", "holds {id}: give --server-id");
  }
  const summary = await restoreIntoNewDataDir(from, dataDir);
  io.out(
    `restored ${from} (zxid ${formatZxid(summary.zxid)}, ${summary.nodes} znodes, ${summary.sessions} sessions, sha256 ${summary.sha256}) into ${dataDir}\n`,
  );
}

/** The admin `restore` command, in the server process once its server has stopped. Never throws: the server starts again either way. */
export async function restoreFromUpload(dataDir: string, upload: string, logger: Logger): Promise<void> {
  try {
    const summary = await restoreInPlace(dataDir, await readBackupFile(upload), Date.now());
    logger.warn({ ...summary, zxid: formatZxid(summary.zxid) }, "data dir restored from a backup; the old one is kept at previousDataDir");
  } catch (error) {
    logger.error({ err: error }, "restore failed: starting again on the data dir as it was");
  } finally {
    await unlink(upload).catch(() => undefined);
  }
}
