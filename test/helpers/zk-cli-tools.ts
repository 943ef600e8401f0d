/**
 * Scripted sessions through Apache ZooKeeper's own command-line clients — the Java `zkCli.sh` and
 * the C `cli_mt` (Debian's `zookeeper` and `zookeeper-bin`) — and normalised transcripts of them,
 * so one script run against two servers gives two comparable line lists.
 *
 * zkCli.sh: one JVM per script, every command fed on stdin (without JLine it reads plain lines and
 * runs each one synchronously). After every command the harness adds a barrier of three lines:
 *   `sync /`        — zkCli waits for the sync callback, which the client's event thread runs after
 *                     every watch event queued before it, so all events a command caused are
 *                     printed before its barrier ends (their place is not left to thread timing);
 *   `printwatches`  — prints "printwatches is on" to stdout: the stdout segment marker;
 *   `ls`            — a parse error, "ls [-s] [-w] [-R] path" on stderr: the stderr segment marker.
 * stdout and stderr are read through separate pipes (two Java threads print to the same fd
 * otherwise and can split each other's lines), and cut into one segment per command.
 *
 * cli_mt: one process, fed one command at a time. Every command is followed by `sync /`, whose
 * completion ("[/]: rc = 0" + "\tname = /") is the barrier: the C client's completion thread runs
 * completions and watch events in arrival order, so once it is printed everything the command
 * caused is printed too, and the next command is written only then. Its output is all on stderr.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";

export const ZKCLI = process.env.ZKCLI ?? "/usr/share/zookeeper/bin/zkCli.sh";
export const CLI_MT = process.env.CLI_MT ?? "/usr/lib/zookeeper/bin/cli_mt";

const INSTALL_HINT = "apt-get install zookeeper zookeeper-bin";

export function assertCliToolsInstalled(): void {
  for (const tool of [ZKCLI, CLI_MT]) {
    if (!existsSync(tool)) throw new Error(`${tool} is missing: ${INSTALL_HINT}`);
  }
}

/** Tool processes still running when the test process exits are killed with their process group. */
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) killGroup(child);
});

function killGroup(child: ChildProcess): void {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    child.kill("SIGKILL");
  }
}

function lines(text: string): string[] {
  const all = text.replace(/\r/g, "").split("\n");
  if (all.at(-1) === "") all.pop();
  return all;
}

/** Maps values that legitimately differ between servers to "<kind#n>", n by first appearance. */
class Ordinals {
  private readonly seen = new Map<string, number>();
  constructor(private readonly kind: string) {}
  name(key: string): string {
    let n = this.seen.get(key);
    if (n === undefined) {
      n = this.seen.size + 1;
      this.seen.set(key, n);
    }
    return `<${this.kind}#${n}>`;
  }
}

/** A hex id as a canonical key ("0x1a", "1A" and "1a" are the same id). */
function hexKey(hex: string): string {
  return BigInt(hex.startsWith("0x") ? hex : `0x${hex}`).toString(16);
}

// ---------------------------------------------------------------------------------------------
// zkCli.sh

export interface ZkCliSegment {
  /** The script line, "(connect)" for what comes before the first one. */
  command: string;
  out: string[];
  err: string[];
  /** "WatchedEvent state:… type:… path:…" lines, in the order the client's event thread printed them. */
  events: string[];
}

export interface ZkCliRun {
  segments: ZkCliSegment[];
  stdout: string;
  stderr: string;
  exitCode: number | null;
}

const BARRIER = ["sync /", "printwatches", "ls"];
const OUT_MARK = "printwatches is on";
const ERR_MARK = "ls [-s] [-w] [-R] path";
const ENDS_SESSION = /^\s*(close|quit)\b/;

function spawnTool(file: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const child = spawn(file, args, {
    stdio: ["pipe", "pipe", "pipe"],
    detached: true, // its own process group: zkCli.sh is bash + java, both go on a kill
    env: { ...process.env, ...env },
  });
  running.add(child);
  child.once("exit", () => running.delete(child));
  return child;
}

/** Resolves with the exit code once the process closed its pipes; kills its group after `limitMs`. */
function closed(child: ChildProcess, limitMs: number, what: () => string): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      killGroup(child);
      reject(new Error(`${what()} did not finish within ${limitMs} ms`));
    }, limitMs);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/**
 * The -D options (and class path) that make zkCli.sh connect over TLS, as ZooKeeper documents:
 * the Netty client socket, `zookeeper.client.secure`, and PEM trust and key stores (`keyStoreFile`
 * holds the client's key and certificate; without it the client presents none). Debian's
 * zookeeper.jar manifest leaves out netty-codec and netty-resolver, which the Netty socket needs,
 * so the class path is given again with them (the JVM takes the last -cp).
 */
export function zkCliTlsFlags(options: { caFile: string; keyStoreFile?: string }): string[] {
  const jars = ["/usr/share/java/zookeeper.jar", "/usr/share/java/netty-codec.jar", "/usr/share/java/netty-resolver.jar"];
  for (const jar of jars) if (!existsSync(jar)) throw new Error(`${jar} is missing: ${INSTALL_HINT}`);
  for (const file of [options.caFile, options.keyStoreFile ?? ""])
    if (/\s/.test(file)) throw new Error(`no blanks in ${file}: CLIENT_JVMFLAGS is split on them`);
  return [
    "-cp",
    ["/etc/zookeeper/conf", ...jars].join(":"),
    "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
    "-Dzookeeper.client.secure=true",
    `-Dzookeeper.ssl.trustStore.location=${options.caFile}`,
    "-Dzookeeper.ssl.trustStore.type=PEM",
    ...(options.keyStoreFile === undefined ? [] : [`-Dzookeeper.ssl.keyStore.location=${options.keyStoreFile}`, "-Dzookeeper.ssl.keyStore.type=PEM"]),
  ];
}

/**
 * zkCli.sh against `connectString` with `lines` on its standard input, as it is: for a session
 * that never serves (its client refused), where runZkCli's barriers cannot run.
 */
export async function runZkCliRaw(
  connectString: string,
  lines: readonly string[],
  limitMs = 60_000,
  options: { jvmFlags?: string[] } = {},
): Promise<{ stdout: string; stderr: string; exitCode: number | null }> {
  assertCliToolsInstalled();
  const child = spawnTool("bash", [ZKCLI, "-server", connectString], {
    // faster JVM start for a short-lived client; nothing here changes what it prints
    CLIENT_JVMFLAGS: ["-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx128m", ...(options.jvmFlags ?? [])].join(" "),
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  child.stdin!.on("error", () => undefined); // EPIPE if it died early; the exit check reports that
  child.stdin!.end(lines.join("\n") + "\n");
  const exitCode = await closed(child, limitMs, () => `zkCli.sh against ${connectString}\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`);
  return { stdout, stderr, exitCode };
}

/**
 * Runs `commands` (one zkCli.sh line each) in one zkCli.sh session against `connectString` and
 * cuts the output into one segment per command (`jvmFlags`: more -D options, e.g. for TLS). Commands after `close`/`quit` get no barrier
 * (there is no session left to sync); they and their output form the last segment.
 */
export async function runZkCli(connectString: string, commands: readonly string[], limitMs = 60_000, options: { jvmFlags?: string[] } = {}): Promise<ZkCliRun> {
  assertCliToolsInstalled();
  const input: string[] = [...BARRIER];
  const labels: string[] = ["(connect)"];
  const tail: string[] = [];
  let sessionOpen = true;
  for (const command of commands) {
    if (command.includes("\n")) throw new Error(`one line per command: ${JSON.stringify(command)}`);
    if (command.trim() === "sync /" || command.trim() === "printwatches") throw new Error(`"${command}" is the harness's barrier`);
    input.push(command);
    if (ENDS_SESSION.test(command)) sessionOpen = false;
    if (sessionOpen) {
      input.push(...BARRIER);
      labels.push(command);
    } else {
      tail.push(command);
    }
  }
  const { stdout, stderr, exitCode } = await runZkCliRaw(connectString, input, limitMs, options);

  const fail = (why: string): never => {
    throw new Error(`zkCli.sh transcript unusable: ${why} (exit ${exitCode})\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`);
  };
  if (!stdout.includes("JLine support is disabled")) fail("JLine is active, so stdin is read as a terminal (prompts would mix into the output)");
  const outParts = splitOn(lines(stdout), OUT_MARK);
  const errParts = splitOn(
    lines(stderr).filter((line) => !line.startsWith("SLF4J: ")), // the logging framework's start-up notes
    ERR_MARK,
  );
  const expected = labels.length + 1;
  if (outParts.length !== expected || errParts.length !== expected) {
    fail(`expected ${expected} segments, stdout has ${outParts.length} and stderr ${errParts.length}`);
  }
  const segments: ZkCliSegment[] = [];
  for (let i = 0; i < expected; i++) {
    const { out, events } = extractEvents(outParts[i]!);
    if (i < labels.length && out.at(-1) === "Sync is OK") out.pop(); // the barrier's own line
    segments.push({ command: i < labels.length ? labels[i]! : tail.join(" ; "), out, err: errParts[i]!, events });
  }
  if (tail.length === 0) {
    const last = segments.at(-1)!;
    if (last.out.length === 0 && last.err.length === 0 && last.events.length === 0) segments.pop();
  }
  return { segments, stdout, stderr, exitCode };
}

function splitOn(all: string[], marker: string): string[][] {
  const parts: string[][] = [[]];
  for (const line of all) {
    if (line === marker) parts.push([]);
    else parts.at(-1)!.push(line);
  }
  return parts;
}

/** zkCli prints each event as println("\nWATCHER::") and println("\n" + event): a blank line before each. */
function extractEvents(part: string[]): { out: string[]; events: string[] } {
  const out: string[] = [];
  const events: string[] = [];
  for (let i = 0; i < part.length; i++) {
    const line = part[i]!;
    const next = part[i + 1];
    if (line === "" && next === "WATCHER::") {
      i++;
    } else if (line === "" && next !== undefined && next.startsWith("WatchedEvent ")) {
      events.push(next);
      i++;
    } else {
      out.push(line);
    }
  }
  return { out, events };
}

/**
 * One line per item: "$ <command>", then "out: …", "err: …", "event: …" with server-specific values
 * replaced:
 *  - cZxid / mZxid / pZxid → <zxid#n>, numbered by first appearance, so which stats share a zxid
 *    and which do not still has to match; ctime / mtime → <time>;
 *  - ephemeralOwner → <session#n> unless 0x0 (whether a node is ephemeral still has to match);
 *  - the banner ("Connecting to <connect string>", "Welcome…", "JLine…") is dropped;
 *  - getEphemerals' list is sorted: ZooKeeper answers from a HashSet, so its order is not part of
 *    the protocol (ls and ls -R need nothing: zkCli sorts children itself);
 *  - the Closed event of `close`/`quit` is dropped: zkCli exits right after closing, and whether its
 *    event thread printed "state:Closed" first is a race inside the client, not a server answer.
 * Everything else — data, versions, cversion, numChildren, dataLength, ACLs, error messages,
 * children, watch events and their order — is kept verbatim.
 */
export function normaliseZkCli(run: ZkCliRun): string[] {
  const zxids = new Ordinals("zxid");
  const sessions = new Ordinals("session");
  const stat = (line: string): string => {
    let m = /^(cZxid|mZxid|pZxid) = (0x[0-9a-f]+)$/.exec(line);
    if (m) return `${m[1]} = ${hexKey(m[2]!) === "0" ? "0x0" : zxids.name(hexKey(m[2]!))}`;
    m = /^(ctime|mtime) = .+$/.exec(line);
    if (m) return `${m[1]} = <time>`;
    m = /^ephemeralOwner = (0x[0-9a-f]+)$/.exec(line);
    if (m) return `ephemeralOwner = ${hexKey(m[1]!) === "0" ? "0x0" : sessions.name(hexKey(m[1]!))}`;
    return line;
  };
  const transcript: string[] = [];
  for (const segment of run.segments) {
    transcript.push(`$ ${segment.command}`);
    const isEphemerals = /^\s*getEphemerals\b/.test(segment.command);
    for (let line of segment.out) {
      if (segment.command === "(connect)" && /^(Connecting to \S+|Welcome to ZooKeeper!|JLine support is disabled)$/.test(line)) continue;
      if (isEphemerals) line = sortedList(line);
      transcript.push(`out: ${stat(line)}`);
    }
    for (const line of segment.err) transcript.push(`err: ${stat(line)}`);
    for (const event of segment.events) {
      if (ENDS_SESSION.test(segment.command) && event === "WatchedEvent state:Closed type:None path:null") continue;
      transcript.push(`event: ${event}`);
    }
  }
  return transcript;
}

function sortedList(line: string): string {
  const m = /^\[(.*)\]$/.exec(line);
  if (!m || m[1] === "") return line;
  return `[${m[1]!.split(", ").sort().join(", ")}]`;
}

// ---------------------------------------------------------------------------------------------
// cli_mt

/** A script line, or one after which the harness waits for `until` in the output instead of a barrier
 * (for a command that ends the session, such as an addauth the server refuses). */
export type CliMtStep = string | { command: string; until: string };

export interface CliMtSegment {
  command: string;
  lines: string[];
}

export interface CliMtRun {
  segments: CliMtSegment[];
  stderr: string;
  stdout: string;
  exitCode: number | null;
}

const MT_BARRIER = "sync /";

/**
 * Runs `steps` through one cli_mt process against `connectString`, one command in flight at a
 * time; the process is ended with `quit` (its output is the "(quit)" segment).
 */
export async function runCliMt(connectString: string, steps: readonly CliMtStep[], stepLimitMs = 15_000): Promise<CliMtRun> {
  assertCliToolsInstalled();
  const child = spawnTool(CLI_MT, ["-h", connectString]);
  let stderr = "";
  let stdout = "";
  let wake: (() => void) | undefined;
  const changed = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
    changed();
  });
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stdin!.on("error", () => undefined);
  child.once("exit", changed);
  const exit = closed(child, stepLimitMs * (steps.length + 2), () => `cli_mt against ${connectString}\n--- output ---\n${stderr}`);
  exit.catch(() => undefined); // awaited below; a step failure is reported first

  /** Waits until `find` locates something in the output after `from`; returns its [start, end). */
  const waitFor = async (what: string, find: () => [number, number] | undefined): Promise<[number, number]> => {
    const deadline = Date.now() + stepLimitMs;
    for (;;) {
      const found = find();
      if (found) return found;
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`cli_mt exited (code ${child.exitCode}) while waiting for ${what}\n--- output ---\n${stderr}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        killGroup(child);
        throw new Error(`cli_mt: no ${what} within ${stepLimitMs} ms\n--- output ---\n${stderr}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  };
  const barrierAfter = (from: number) => (): [number, number] | undefined => {
    const re = /^\[\/\]: rc = (-?\d+)\n/gm;
    re.lastIndex = from;
    const m = re.exec(stderr);
    if (!m) return undefined;
    if (m[1] !== "0") return [m.index, re.lastIndex]; // a failed barrier: the transcript shows its rc
    const name = "\tname = /\n";
    return stderr.startsWith(name, re.lastIndex) ? [m.index, re.lastIndex + name.length] : undefined;
  };

  const segments: CliMtSegment[] = [];
  let from = 0;
  let sessionOpen = true;
  try {
    child.stdin!.write(`${MT_BARRIER}\n`);
    let [start, end] = await waitFor("connection barrier", barrierAfter(from));
    segments.push({ command: "(connect)", lines: lines(stderr.slice(from, start)) });
    from = end;
    for (const step of steps) {
      const command = typeof step === "string" ? step : step.command;
      if (command.includes("\n")) throw new Error(`one line per command: ${JSON.stringify(command)}`);
      if (command.trim() === MT_BARRIER) throw new Error(`"${MT_BARRIER}" is the harness's barrier`);
      if (typeof step !== "string") {
        child.stdin!.write(`${command}\n`);
        const until = step.until;
        [start, end] = await waitFor(JSON.stringify(until), () => {
          const at = stderr.indexOf(until, from);
          return at < 0 ? undefined : [at + until.length, at + until.length];
        });
        sessionOpen = false; // such a step ends the session: no more barriers
      } else if (sessionOpen) {
        child.stdin!.write(`${command}\n${MT_BARRIER}\n`);
        [start, end] = await waitFor(`barrier after "${command}"`, barrierAfter(from));
      } else {
        throw new Error(`"${command}" comes after a session-ending step`);
      }
      segments.push({ command, lines: lines(stderr.slice(from, start)) });
      from = end;
    }
    child.stdin!.end("quit\n");
  } catch (error) {
    killGroup(child);
    throw error;
  }
  const exitCode = sessionOpen ? await exit : await exitAfterRefusal(child, exit, () => stderr);
  segments.push({ command: "(quit)", lines: lines(stderr.slice(from)) });
  return { segments, stderr, stdout, exitCode };
}

/** How long cli_mt may take to exit once it has said "Quitting..." after its session was ended. */
const QUIT_GRACE_MS = 5_000;

/**
 * cli_mt's exit after the server ended its session (an auth failure). It prints "Quitting..." and
 * then, now and then, never returns from zookeeper_close: its own IO and completion threads
 * deadlock on a handle it has already closed itself (seen once in 2 CI-like runs, against corral,
 * with the socket closed by the client). Everything it prints is out by then, so after a grace
 * the process group is killed and the transcript stands as printed.
 */
async function exitAfterRefusal(child: ChildProcess, exit: Promise<number | null>, output: () => string): Promise<number | null> {
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), QUIT_GRACE_MS)));
    const outcome = await Promise.race([exit.then((code) => ({ code })), grace]).finally(() => clearTimeout(timer));
    if (outcome !== undefined) return outcome.code;
    if (output().includes("Quitting...")) {
      killGroup(child);
      return null;
    }
  }
}

/** The C client's own log lines: "2026-11-22 15:49:31,194:19191(0x7f5d…):ZOO_ERROR@func@line: …". */
const C_LOG_LINE = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}:\d+\(0x[0-9a-f]+\):ZOO_[A-Z]+@/;

/**
 * "$ <command>" and the output lines, with server-specific values replaced:
 *  - czxid / mzxid → <zxid#n> by first appearance (0 stays 0: not a transaction);
 *  - ctime / mtime (ctime(3) text) → <time>; "time = N msec" (the tool's own stopwatch) → <ms>;
 *  - the session id and non-zero ephemeralOwner → <session#n>, the same n for the same id, so
 *    "this node is owned by my session" still has to match;
 *  - the children lines of ls / ls2 are sorted: cli_mt prints them in the server's order, and
 *    ZooKeeper's is a HashSet's (not part of the protocol);
 *  - the C client's timestamped log lines are dropped.
 */
export function normaliseCliMt(run: CliMtRun): string[] {
  const zxids = new Ordinals("zxid");
  const sessions = new Ordinals("session");
  const zxid = (hex: string) => (hexKey(hex) === "0" ? "0" : zxids.name(hexKey(hex)));
  const session = (hex: string) => (hexKey(hex) === "0" ? "0" : sessions.name(hexKey(hex)));
  const transcript: string[] = [];
  for (const segment of run.segments) {
    transcript.push(`$ ${segment.command}`);
    const kept = segment.lines.filter((line) => !C_LOG_LINE.test(line));
    for (let i = 0; i < kept.length; i++) {
      const line = kept[i]!;
      transcript.push(
        line
          .replace(/^time = \d+ msec$/, "time = <ms> msec")
          .replace(/^Got a new session id: 0x([0-9a-f]+)$/, (_, id: string) => `Got a new session id: ${session(id)}`)
          .replace(/^\tctime = .*$/, "\tctime = <time>")
          .replace(/^\tmtime=.*$/, "\tmtime=<time>")
          .replace(/^\t(czxid|mzxid)=([0-9a-f]+)$/, (_, k: string, v: string) => `\t${k}=${zxid(v)}`)
          .replace(/^\tephemeralOwner = ([0-9a-f]+)$/, (_, v: string) => `\tephemeralOwner = ${session(v)}`),
      );
      // ls / ls2 completion: "<path>: rc = N", then one "\t<child>" line per child
      if (/^\/\S*: rc = -?\d+$/.test(line)) {
        let j = i + 1;
        while (j < kept.length && kept[j]!.startsWith("\t")) j++;
        transcript.push(...kept.slice(i + 1, j).sort());
        i = j - 1;
      }
    }
  }
  return transcript;
}
