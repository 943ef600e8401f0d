/**
 * `corral shell`: ZooKeeper's zkCli.sh for corral, on the public SDK (and, for delquota -n|-b|-N|-B,
 * ZooKeeper's quota node layout from src/common/quota.ts). Three ways to run it:
 * interactive (stdin is a TTY: a prompt, history, tab completion of commands and paths), a script
 * (stdin is not a TTY: one command a line, in order) and one command (`corral shell -- ls /`).
 * Answers go to stdout, failures to stderr, in zkCli's words; parsing lives in
 * src/cli/shell-commands.ts, formatting in src/cli/shell-format.ts.
 */
import { readFile, stat as statFile } from "node:fs/promises";
import { createInterface, clearLine, cursorTo, type Interface } from "node:readline";
import { Client, deleteQuota, listQuota, saslFromJaasFile, setQuota, ZkError } from "../index.js";
import { formatQuotaFigures, limitsPathOf } from "../common/quota.js";
import type { Acl, ClientState, ClientTlsOptions, ReconfigChange, SaslOptions, Watcher } from "../index.js";
import { readClientTls } from "./tls-options.js";
import {
  ShellError,
  childPath,
  completeCommandName,
  helpText,
  membersFromFile,
  parseCommand,
  pathCompletionTarget,
  splitArgs,
  type QuotaLimit,
  type ReconfigMembership,
  type ShellArgs,
  type ShellCommand,
  type ShellSasl,
} from "./shell-commands.js";
import {
  describeConnectFailure,
  describeError,
  formatAcl,
  formatChildren,
  formatClientConfig,
  formatData,
  formatJavaList,
  formatPrompt,
  formatQuotaLocation,
  formatQuotaReport,
  formatWhoAmI,
  quotaWarnings,
  formatStat,
  formatStateEvent,
  formatWatchedEvent,
} from "./shell-format.js";

export { parseShellArgs } from "./shell-commands.js";

/** A close that hangs (server gone) must not hang the shell. */
const CLOSE_WAIT_MS_MAX = 1_000;
/** Commands remembered for `history` and the arrow keys. */
const HISTORY_SIZE = 1_000;
/** `history` prints this many of the latest commands, as zkCli does. */
const HISTORY_PRINTED = 11;
/** Script lines read ahead of the command running; stdin is paused beyond this. */
const PENDING_LINES_MAX = 1_000;
/** `reconfig -file`: a membership file larger than this is refused unread. */
const MEMBERSHIP_FILE_BYTES_MAX = 1 << 20;
/** Where the configuration lives; a reconfig's refusals name it. */
const CONFIG_NODE = "/zookeeper/config";

/** Where the shell writes. Every text is one or more lines without the final newline. */
interface ShellOutput {
  /** A command's answer (stdout). */
  out(text: string): void;
  /** A command's failure (stderr). */
  err(text: string): void;
  /** Something that happened on its own: a watch fired, the session changed state (stdout). */
  notify(text: string): void;
  /** The connection state the prompt shows changed. */
  stateChanged(): void;
}

/** One shell's session and settings; runs parsed commands. */
class ShellSession {
  private client: Client | undefined;
  private target: string;
  private printWatches = true;
  private commandCount = 0;
  private readonly history: { number: number; line: string }[] = [];
  /** One function for every watch: the SDK fires it once per path and kind, as zkCli's default watcher. */
  private readonly watcher: Watcher = (event) => {
    if (this.printWatches) this.output.notify(formatWatchedEvent(event));
  };

  constructor(
    private readonly output: ShellOutput,
    private readonly timeoutMs: number,
    connectString: string,
    private readonly interactive: boolean,
    private readonly tls: ClientTlsOptions | undefined,
    /** The JAAS client section's login, made at every connect (zkCli's SASL). */
    private readonly sasl: SaslOptions | undefined,
  ) {
    this.target = connectString;
  }

  get connected(): Client | undefined {
    return this.client?.state === "connected" || this.client?.state === "reconnected" ? this.client : undefined;
  }

  prompt(): string {
    return formatPrompt(this.target, this.client?.state, this.commandCount);
  }

  /** Runs one input line; resolves with whether it succeeded and whether it asked to quit. */
  async runLine(line: string): Promise<{ ok: boolean; quit: boolean }> {
    let args: string[];
    try {
      args = splitArgs(line);
    } catch (error) {
      this.output.err(describeError(error));
      return { ok: false, quit: false };
    }
    if (args.length === 0) return { ok: true, quit: false };
    this.remember(line.trim());
    return this.runArgs(args);
  }

  /** Runs one command given as arguments (one-command mode, or a split line). */
  async runArgs(args: string[]): Promise<{ ok: boolean; quit: boolean }> {
    try {
      const command = parseCommand(args);
      if (command.name === "quit") return { ok: true, quit: true };
      await this.run(command);
      return { ok: true, quit: false };
    } catch (error) {
      this.output.err(describeError(error));
      return { ok: false, quit: false };
    }
  }

  /** Connects to `connectString`, closing the current session first. Throws ShellError. */
  async connect(connectString: string): Promise<void> {
    await this.close();
    this.target = connectString;
    let client: Client;
    try {
      client = await Client.connect(connectString, {
        connectTimeoutMs: this.timeoutMs,
        ...(this.tls === undefined ? {} : { tls: this.tls }),
        ...(this.sasl === undefined ? {} : { sasl: this.sasl }),
      });
    } catch (error) {
      this.output.stateChanged();
      // zkCli's watcher prints the refused login before the failures that follow it.
      if (error instanceof ZkError && error.code === "AUTHFAILED" && this.printWatches) this.output.notify(formatStateEvent("authFailed"));
      const badConnectString = error instanceof ZkError && error.code === "BADARGUMENTS";
      throw new ShellError(describeConnectFailure(connectString, this.timeoutMs, error, this.tls !== undefined), badConnectString ? 2 : 1);
    }
    client.on("state", (state: ClientState) => {
      if (this.client !== client) return;
      this.output.stateChanged();
      if (this.printWatches) this.output.notify(formatStateEvent(state));
      if (state === "expired") this.output.notify("Session expired: its ephemeral nodes and watches are gone; connect starts a new session");
    });
    this.client = client;
    this.output.stateChanged();
    if (this.interactive && this.printWatches) this.output.notify(formatStateEvent("connected"));
  }

  /** Ends the session (its ephemerals go with it); never throws, never waits long. */
  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client === undefined) return;
    this.output.stateChanged();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([client.close(), new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS_MAX)))]);
    clearTimeout(timer);
  }

  private remember(line: string): void {
    this.history.push({ number: this.commandCount++, line });
    if (this.history.length > HISTORY_SIZE) this.history.shift();
  }

  private session(): Client {
    if (this.client === undefined) throw new ShellError(`Not connected: connect [host:port] opens a session (last: ${this.target})`);
    return this.client;
  }

  private async run(command: Exclude<ShellCommand, { name: "quit" }>): Promise<void> {
    const out = (text: string) => this.output.out(text);
    const watch = (on: boolean) => (on ? { watch: this.watcher } : {});
    switch (command.name) {
      case "help":
        return out(helpText());
      case "history":
        for (const entry of this.history.slice(-HISTORY_PRINTED)) out(`${entry.number} - ${entry.line}`);
        return;
      case "printwatches":
        if (command.enabled === undefined) return out(`printwatches is ${this.printWatches ? "on" : "off"}`);
        this.printWatches = command.enabled;
        return;
      case "close":
        return this.close();
      case "connect":
        return this.connect(command.connectString ?? this.target);
    }
    const zk = this.session();
    switch (command.name) {
      case "ls": {
        if (command.recursive) return this.listRecursive(zk, command.path, command.watch);
        const { children, stat } = await zk.getChildrenWithStat(command.path, watch(command.watch));
        out(formatChildren(children));
        if (command.stat) out(formatStat(stat));
        return;
      }
      case "get": {
        const { data, stat } = await zk.getData(command.path, watch(command.watch));
        out(formatData(data));
        if (command.stat) out(formatStat(stat));
        return;
      }
      case "stat": {
        const stat = await zk.exists(command.path, watch(command.watch));
        if (stat === null) throw new ZkError("NONODE", undefined, command.path);
        return out(formatStat(stat));
      }
      case "create": {
        const created = await zk.create(command.path, command.data, {
          mode: command.mode,
          ...(command.ttlMs === undefined ? {} : { ttlMs: command.ttlMs }),
          ...(command.acl === undefined ? {} : { acl: command.acl }),
        });
        return out(`Created ${created}`);
      }
      case "set": {
        const stat = await zk.setData(command.path, command.data, { version: command.version });
        if (command.stat) out(formatStat(stat));
        return;
      }
      case "delete":
        return zk.delete(command.path, { version: command.version });
      case "deleteall":
        return this.deleteAll(zk, command.path);
      case "sync":
        await zk.sync(command.path);
        return out("Sync is OK");
      case "getAcl": {
        const { acl, stat } = await zk.getACL(command.path);
        out(formatAcl(acl));
        if (command.stat) out(formatStat(stat));
        return;
      }
      case "setAcl": {
        if (command.recursive) return this.setAclRecursive(zk, command.path, command.acl, command.version);
        const stat = await zk.setACL(command.path, command.acl, { version: command.version });
        if (command.stat) out(formatStat(stat));
        return;
      }
      case "getEphemerals":
        return out(formatJavaList(await zk.getEphemerals(command.path)));
      case "getAllChildrenNumber":
        return out(String(await zk.getAllChildrenNumber(command.path)));
      case "addauth":
        return zk.addAuthInfo(command.scheme, command.auth);
      case "whoami":
        return out(formatWhoAmI(await zk.whoAmI()));
      case "addWatch":
        return zk.addWatch(command.path, this.watcher, command.mode);
      case "removewatches":
        return zk.removeAllWatches(command.path, command.watcherType, command.local);
      case "setquota": {
        // zkCli's own words for a missing node (setQuota's NONODE would read as a failed read).
        if ((await zk.exists(command.path)) === null) throw new ShellError(`${command.path} does not exist.`);
        await setQuota(zk, command.path, { [command.limit]: command.value });
        const report = await listQuota(zk, command.path);
        for (const warning of report === null ? [] : quotaWarnings(report)) out(warning);
        return;
      }
      case "listquota": {
        this.output.err(formatQuotaLocation(command.path));
        const report = await listQuota(zk, command.path);
        if (report === null) throw new ShellError(`quota for ${command.path} does not exist.`);
        return out(formatQuotaReport(command.path, report));
      }
      case "delquota":
        return this.deleteQuota(zk, command.path, command.limit);
      case "config": {
        const config = await zk.getConfig(watch(command.watch));
        out(command.clientAddresses ? formatClientConfig(config.text) : config.text);
        if (command.stat) out(formatStat(config.stat));
        return;
      }
      case "reconfig": {
        const change = await reconfigChange(command.membership);
        let config;
        try {
          config = await zk.reconfig({ ...change, fromConfig: command.fromConfig });
        } catch (error) {
          // The server's refusal names no node; zkCli's words for it (Insufficient permission : …) need one.
          if (error instanceof ZkError && error.path === undefined) {
            throw new ZkError(error.code, error.message === error.code ? undefined : error.message, CONFIG_NODE);
          }
          throw error;
        }
        out(`Committed new configuration:\n${config.text}`);
        if (command.stat) out(formatStat(config.stat));
        return;
      }
    }
  }

  /**
   * `delquota`: with no option the whole quota goes; with one, that limit becomes -1 and the others
   * stay (zkCli rewrites the limits node; setQuota only ever raises a limit from -1, so it cannot).
   */
  private async deleteQuota(zk: Client, path: string, limit: QuotaLimit | undefined): Promise<void> {
    const missing = `Quota does not exist for ${path}`;
    if (limit === undefined) {
      if (!(await deleteQuota(zk, path))) this.output.out(missing);
      return;
    }
    const report = await listQuota(zk, path);
    if (report === null) return this.output.out(missing);
    await zk.setData(limitsPathOf(path), formatQuotaFigures({ ...report.limits, [limit]: -1 }));
  }

  /**
   * `setAcl -R`: the path and every descendant, parents first (zkCli's visitSubTreeDFS). The tree is
   * listed before any ACL changes, so an ACL that takes READ away cannot hide the nodes below it.
   * A node that fails is reported and the rest still get the ACL; the command then fails.
   */
  private async setAclRecursive(zk: Client, path: string, acl: readonly Acl[], version: number): Promise<void> {
    const tree: string[] = [];
    const stack = [path];
    while (stack.length > 0) {
      const next = stack.pop()!;
      let children: string[];
      try {
        children = await zk.getChildren(next);
      } catch (error) {
        if (next !== path && error instanceof ZkError && error.code === "NONODE") continue;
        throw error;
      }
      tree.push(next);
      for (const child of children.sort().reverse()) stack.push(childPath(next, child));
    }
    let failed = 0;
    for (const node of tree) {
      try {
        await zk.setACL(node, acl, { version });
      } catch (error) {
        if (!(error instanceof ZkError) || error.code === "CONNECTIONLOSS" || error.code === "SESSIONEXPIRED") throw error;
        this.output.err(describeError(error));
        failed++;
      }
    }
    if (failed > 0) throw new ShellError(`setAcl -R: ${failed} of ${tree.length} nodes were not changed`);
  }

  /** `ls -R`: the path and every descendant, depth first, children in name order (zkCli's visitSubTreeDFS). */
  private async listRecursive(zk: Client, path: string, watch: boolean): Promise<void> {
    const stack = [path];
    while (stack.length > 0) {
      const next = stack.pop()!;
      let children: string[];
      try {
        children = await zk.getChildren(next, watch ? { watch: this.watcher } : {});
      } catch (error) {
        // A descendant deleted while we walk is simply not listed.
        if (next !== path && error instanceof ZkError && error.code === "NONODE") continue;
        throw error;
      }
      this.output.out(next);
      for (const child of children.sort().reverse()) stack.push(childPath(next, child));
    }
  }

  /** `deleteall`: every descendant, deepest first, then the node (zkCli's ZKUtil.deleteRecursive). */
  private async deleteAll(zk: Client, path: string): Promise<void> {
    const tree = [path];
    for (let i = 0; i < tree.length; i++) {
      try {
        for (const child of await zk.getChildren(tree[i]!)) tree.push(childPath(tree[i]!, child));
      } catch (error) {
        if (i > 0 && error instanceof ZkError && error.code === "NONODE") continue;
        throw error;
      }
    }
    for (let i = tree.length - 1; i >= 0; i--) {
      try {
        await zk.delete(tree[i]!);
      } catch (error) {
        // Someone else deleted it meanwhile: the goal is reached for that node.
        if (i > 0 && error instanceof ZkError && error.code === "NONODE") continue;
        throw error;
      }
    }
  }
}

/** The SDK's reconfig arguments for a parsed `reconfig`; reads -file's file. Throws ShellError. */
async function reconfigChange(membership: ReconfigMembership): Promise<ReconfigChange> {
  switch (membership.mode) {
    case "incremental":
      return {
        ...(membership.joining.length === 0 ? {} : { joining: membership.joining }),
        ...(membership.leaving.length === 0 ? {} : { leaving: membership.leaving }),
      };
    case "members":
      return { newMembers: membership.members };
    case "file":
      try {
        const { size } = await statFile(membership.file);
        if (size > MEMBERSHIP_FILE_BYTES_MAX) throw new Error(`larger than ${MEMBERSHIP_FILE_BYTES_MAX} bytes`);
        return { newMembers: membersFromFile(await readFile(membership.file, "utf8")) };
      } catch (error) {
        throw new ShellError(`Error processing ${membership.file}: ${error instanceof Error ? error.message : String(error)}`);
      }
  }
}

function plainOutput(): ShellOutput {
  return {
    out: (text) => void process.stdout.write(`${text}\n`),
    err: (text) => void process.stderr.write(`${text}\n`),
    notify: (text) => void process.stdout.write(`${text}\n`),
    stateChanged: () => undefined,
  };
}

/** Lines from stdin, one at a time, with at most PENDING_LINES_MAX read ahead. */
function lineReader(rl: Interface): () => Promise<string | undefined> {
  const pending: string[] = [];
  let ended = false;
  let wake: (() => void) | undefined;
  rl.on("line", (line) => {
    pending.push(line);
    if (pending.length >= PENDING_LINES_MAX) rl.pause();
    wake?.();
  });
  rl.on("close", () => {
    ended = true;
    wake?.();
  });
  return async () => {
    while (pending.length === 0 && !ended) await new Promise<void>((resolve) => (wake = resolve));
    wake = undefined;
    const line = pending.shift();
    if (pending.length < PENDING_LINES_MAX / 2 && !ended) rl.resume();
    return line;
  };
}

/** Script mode: every line of stdin in order; exit 1 if any command failed. */
async function runScript(session: ShellSession): Promise<number> {
  const rl = createInterface({ input: process.stdin, terminal: false });
  const next = lineReader(rl);
  let failed = false;
  for (let line = await next(); line !== undefined; line = await next()) {
    const { ok, quit } = await session.runLine(line);
    if (!ok) failed = true;
    if (quit) break;
  }
  rl.close();
  return failed ? 1 : 0;
}

/**
 * The SASL login zkCli.sh would make with the same system properties: the JAAS file's client section
 * (Client unless named), none without a file, with zookeeper.sasl.client other than true, or when the
 * default section is missing. Throws ShellError (exit 2) for a file or section it cannot use.
 */
function shellSaslLogin(sasl: ShellSasl): SaslOptions | undefined {
  if (sasl.jaasConfigFile === undefined || (sasl.enabled !== undefined && sasl.enabled.toLowerCase() !== "true")) return undefined;
  // MIT's library reads KRB5_CONFIG when a Kerberos login starts, as Java reads java.security.krb5.conf.
  if (sasl.krb5Config !== undefined) process.env.KRB5_CONFIG = sasl.krb5Config;
  try {
    return saslFromJaasFile(sasl.jaasConfigFile, {
      ...(sasl.section === undefined ? {} : { section: sasl.section }),
      ...(sasl.serviceName === undefined ? {} : { serviceName: sasl.serviceName }),
      ...(sasl.serverPrincipal === undefined ? {} : { serverPrincipal: sasl.serverPrincipal }),
    });
  } catch (error) {
    throw new ShellError(describeError(error), 2);
  }
}

/** Interactive mode: a prompt showing the connection state, history, tab completion, Ctrl-C / Ctrl-D to leave. */
async function runInteractive(args: ShellArgs, sasl: SaslOptions | undefined): Promise<number> {
  let busy = true;
  let rl: Interface | undefined;
  // Line editing only when stdout is a terminal too (`corral shell > log` still prompts).
  const terminal = process.stdout.isTTY === true;
  const clearPromptLine = () => {
    if (!terminal) return;
    clearLine(process.stdout, 0);
    cursorTo(process.stdout, 0);
  };
  const redraw = () => {
    if (rl === undefined) return;
    rl.setPrompt(session.prompt());
    if (!busy) {
      clearPromptLine();
      rl.prompt(true);
    }
  };
  const output: ShellOutput = {
    ...plainOutput(),
    notify: (text) => {
      if (rl !== undefined && !busy) clearPromptLine();
      process.stdout.write(`${text}\n`);
      if (!busy) redraw();
    },
    stateChanged: redraw,
  };
  const session = new ShellSession(output, args.timeoutMs, args.connectString, true, args.tls === undefined ? undefined : readClientTls(args.tls), sasl);
  process.stdout.write(`Connecting to ${args.connectString}\n`);
  try {
    await session.connect(args.connectString);
  } catch (error) {
    process.stderr.write(`${describeError(error)}\n`);
    return error instanceof ShellError ? error.exitCode : 1;
  }
  process.stdout.write(`Welcome to corral! Type help for the commands, quit (or Ctrl-D) to leave.\n`);

  rl = createInterface({
    input: process.stdin,
    output: process.stdout,
    terminal,
    historySize: HISTORY_SIZE,
    removeHistoryDuplicates: true,
    completer: (line: string, callback: (error: null, result: [string[], string]) => void) => {
      const words = line.trimStart().split(/\s+/);
      const last = words[words.length - 1] ?? "";
      if (words.length <= 1) return callback(null, [completeCommandName(last), last]);
      const target = pathCompletionTarget(last);
      const zk = session.connected;
      if (target === undefined || zk === undefined) return callback(null, [[], last]);
      zk.getChildren(target.parent).then(
        (children) =>
          callback(null, [
            children
              .filter((c) => c.startsWith(target.prefix))
              .sort()
              .map((c) => childPath(target.parent, c)),
            last,
          ]),
        () => callback(null, [[], last]),
      );
    },
  });
  const reader = rl;
  const next = lineReader(reader);
  reader.on("SIGINT", () => {
    if (reader.line !== "" && !busy) {
      // Ctrl-C on a half-typed line drops the line, as a shell does.
      reader.write(null, { ctrl: true, name: "e" });
      reader.write(null, { ctrl: true, name: "u" });
      return;
    }
    reader.close();
  });
  for (;;) {
    busy = false;
    redraw();
    const line = await next();
    busy = true;
    if (line === undefined) {
      process.stdout.write("\n"); // Ctrl-D or Ctrl-C left the cursor after the prompt
      break;
    }
    const { quit } = await session.runLine(line);
    if (quit) break;
  }
  reader.close();
  await session.close();
  return 0;
}

/** The `corral shell` command; answers the process exit code. */
export async function runShell(args: ShellArgs): Promise<number> {
  if (args.help) {
    // The same text as `corral help shell`: the commands, then where the shell's page is.
    const { usage } = await import("./usage.js");
    process.stdout.write(`${usage("shell")}\n`);
    return 0;
  }
  // `corral shell ... | head`: a closed stdout ends the shell quietly.
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0);
    throw error;
  });
  let sasl: SaslOptions | undefined;
  try {
    sasl = shellSaslLogin(args.sasl);
  } catch (error) {
    process.stderr.write(`${describeError(error)}\n`);
    return 2;
  }
  if (args.command === undefined && process.stdin.isTTY === true) return runInteractive(args, sasl);

  if (args.command !== undefined) {
    // A mistyped command or `help` needs no server.
    let command: ShellCommand;
    try {
      command = parseCommand(args.command);
    } catch (error) {
      process.stderr.write(`${describeError(error)}\n`);
      return 1;
    }
    if (command.name === "help") process.stdout.write(`${helpText()}\n`);
    if (command.name === "help" || command.name === "quit") return 0;
  }
  const session = new ShellSession(
    plainOutput(),
    args.timeoutMs,
    args.connectString,
    false,
    args.tls === undefined ? undefined : readClientTls(args.tls),
    sasl,
  );
  try {
    await session.connect(args.connectString);
  } catch (error) {
    process.stderr.write(`${describeError(error)}\n`);
    return error instanceof ShellError ? error.exitCode : 1;
  }
  try {
    if (args.command !== undefined) return (await session.runArgs(args.command)).ok ? 0 : 1;
    return await runScript(session);
  } finally {
    await session.close();
  }
}
