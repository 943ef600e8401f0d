/**
 * `corral cluster`'s child processes: one `corral server` per member, its output prefixed with its
 * id on the terminal and appended to DIR/<id>/server.log, its role read from its own log lines.
 * A member stops with the whole cluster (stopAll) or alone when a reconfiguration removed it, or an
 * add was abandoned (retire); only a child that exits without being asked is "unexpected".
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { ClientTlsOptions } from "../client/types.js";
import { formatHostPort, type ServerEntry } from "../server/cluster-servers.js";
import { probe } from "./health.js";
import { summarizeMemberLogLine } from "./member-log.js";

const MAIN = fileURLToPath(new URL("./main.js", import.meta.url));

/** What a server logs when it is outside the configuration in force (see src/replica/reconfig-membership.ts). */
const OUTSIDE_MESSAGE = "not a member of the configuration in force";

export interface ClusterIo {
  out: (text: string) => void;
  err: (text: string) => void;
  /** Where `add`, `remove` and `members` are read from, one a line; none: the cluster takes no commands. */
  input?: NodeJS.ReadableStream;
}

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Member {
  entry: ServerEntry;
  child: ChildProcess;
  /** Set once the process is gone and its output drained. */
  exit: ChildExit | undefined;
  closed: Promise<void>;
  /** It exited without being asked to. */
  unexpected: boolean;
  /** Asked to stop alone (removed, or its add abandoned): its exit is expected and not counted. */
  retiring: boolean;
  /** What the server last logged of its own role ("leading", "following", …), when its log level shows it. */
  liveRole: string | undefined;
  /** It logged that it is outside the configuration in force: a joiner that has heard the members. */
  outside: boolean;
  /** Being added or removed: its "not a member" warnings are expected and stay in its log file. */
  quietOutside: boolean;
}

/** The role in a server's structured "role changed" log line, if `line` is one. */
export function roleFromLogLine(line: string): string | undefined {
  if (!line.includes('"role changed"')) return undefined;
  try {
    const parsed = JSON.parse(line) as { role?: unknown; leader?: unknown };
    if (typeof parsed.role !== "string") return undefined;
    return typeof parsed.leader === "number" && parsed.role !== "leading" ? `${parsed.role} ${parsed.leader}` : parsed.role;
  } catch {
    return undefined;
  }
}

export function describeExit(exit: ChildExit): string {
  return exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
}

/** A clean stop: exit 0, or the signal the launcher sent. */
export function stoppedCleanly(exit: ChildExit): boolean {
  return exit.code === 0 || exit.signal === "SIGTERM" || exit.signal === "SIGINT";
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Until `member` serves sessions (the same probe as `corral health`: up means serving, not merely
 * listening), or `enough()` says waiting is over; answers why not, or undefined.
 */
export async function waitServing(
  member: Member,
  deadlineMs: number,
  stopping: () => boolean,
  tls: ClientTlsOptions | undefined,
  enough: () => boolean = () => false,
): Promise<string | undefined> {
  const address = formatHostPort(member.entry.host, member.entry.clientPort);
  for (;;) {
    if (stopping() || enough()) return undefined;
    if (member.exit !== undefined) return `server ${member.entry.id} exited while starting (${describeExit(member.exit)})`;
    const left = deadlineMs - Date.now();
    if (left <= 0) return `server ${member.entry.id} did not serve ${address} within --start-timeout-ms`;
    try {
      await probe(address, Math.min(2_000, left), tls);
      return undefined;
    } catch {
      await sleep(100);
    }
  }
}

/**
 * What a child inherits: everything but CORRAL_*. The launcher's CORRAL_* settings are in the
 * cluster file already, so a member restarted by hand with that file gets them too.
 */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith("CORRAL_")) env[key] = value;
  }
  return env;
}

export class MemberProcesses {
  /** Every member started and not retired, in start order. */
  readonly members: Member[] = [];
  /** Set once the whole cluster is stopping: no exit is unexpected from then on. */
  stopping = false;
  private readonly logs: WriteStream[] = [];

  constructor(
    private readonly dataDir: string,
    private readonly io: ClusterIo,
    private readonly verbose: boolean,
    /** A member exited on its own. */
    private readonly onUnexpectedExit: (member: Member) => void,
  ) {}

  alive(): Member[] {
    return this.members.filter((m) => m.exit === undefined);
  }

  find(id: number): Member | undefined {
    return this.members.find((m) => m.entry.id === id);
  }

  /** Starts `corral server --config <configPath> --server-id <id>`. */
  spawn(entry: ServerEntry, configPath: string, quietOutside = false): Member {
    const child = spawn(process.execPath, [MAIN, "server", "--config", configPath, "--server-id", String(entry.id)], {
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      env: childEnv(),
    });
    const member: Member = {
      entry,
      child,
      exit: undefined,
      closed: Promise.resolve(),
      unexpected: false,
      retiring: false,
      liveRole: undefined,
      outside: false,
      quietOutside,
    };
    member.closed = new Promise<void>((resolve) => {
      child.once("close", (code, signal) => {
        member.exit = { code, signal };
        if (!this.stopping && !member.retiring) {
          member.unexpected = true;
          this.onUnexpectedExit(member);
        }
        resolve();
      });
    });
    child.once("error", (error) => this.io.err(`corral cluster: server ${entry.id}: ${error.message}\n`));
    const prefix = `[${entry.id}] `;
    const log = this.memberLog(entry.id);
    const onLine = (line: string, stream: "stdout" | "stderr") => {
      log.write(line + "\n");
      member.liveRole = roleFromLogLine(line) ?? member.liveRole;
      const outside = line.includes(OUTSIDE_MESSAGE);
      if (outside) member.outside = true;
      if (this.verbose) return (stream === "stdout" ? this.io.out : this.io.err)(prefix + line + "\n");
      if (outside && member.quietOutside) return;
      const summary = summarizeMemberLogLine(line);
      if (summary) (summary.severe ? this.io.err : this.io.out)(prefix + summary.text + "\n");
    };
    createInterface({ input: child.stdout!, crlfDelay: Infinity }).on("line", (line) => onLine(line, "stdout"));
    createInterface({ input: child.stderr!, crlfDelay: Infinity }).on("line", (line) => onLine(line, "stderr"));
    this.members.push(member);
    return member;
  }

  /**
   * Stops one member (SIGTERM, then SIGKILL after `graceMs`) and forgets it; resolves with how it
   * ended, once its output is drained.
   */
  async retire(member: Member, graceMs: number): Promise<ChildExit> {
    member.retiring = true;
    if (member.exit === undefined) member.child.kill("SIGTERM");
    const grace = setTimeout(() => {
      if (member.exit === undefined) member.child.kill("SIGKILL");
    }, graceMs);
    await member.closed;
    clearTimeout(grace);
    const at = this.members.indexOf(member);
    if (at >= 0) this.members.splice(at, 1);
    return member.exit!;
  }

  async closeLogs(): Promise<void> {
    await Promise.all(this.logs.map((log) => new Promise<void>((resolve) => log.end(resolve))));
  }

  /** A member's log file, DIR/<id>/server.log, appended to across runs. */
  private memberLog(id: number): WriteStream {
    const dir = join(this.dataDir, String(id));
    mkdirSync(dir, { recursive: true });
    const log = createWriteStream(join(dir, "server.log"), { flags: "a" });
    // A full disk must not take the launcher down: the terminal still shows what matters.
    log.on("error", () => undefined);
    this.logs.push(log);
    return log;
  }
}
