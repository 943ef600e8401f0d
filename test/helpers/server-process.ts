/**
 * A real corral server as a child process on 127.0.0.1 with a free port and a data dir of the
 * test's choosing — the shipped CLI, not an in-process shortcut.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";

const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

/**
 * Test servers listen below the kernel's ephemeral range, on ports picked as the embedded server
 * picks its cluster's (src/embed/free-ports.ts, which says why), from the same per-process set, so
 * a test's servers and its embedded ones never get the same port.
 */
import { freePort } from "../../src/embed/free-ports.js";
export { freePort, portIsFree, PICKED_PORT_MAX as TEST_PORT_MAX, PICKED_PORT_MIN as TEST_PORT_MIN } from "../../src/embed/free-ports.js";

async function waitForPort(port: number, child: ChildProcess, deadlineMs: number, lastWords: () => string): Promise<void> {
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`server exited before listening (code ${child.exitCode}, signal ${child.signalCode}): ${lastWords().slice(-1_000)}`);
    }
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: "127.0.0.1", port });
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    if (Date.now() - started > deadlineMs) throw new Error(`server did not listen on ${port} within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export interface ServerProcessOptions {
  dataDir: string;
  port?: number;
  /** The ZooKeeper-protocol client port (--zk-client-port); none when absent. */
  zkPort?: number;
  /** The Prometheus metrics port (--metrics-port) and the admin HTTP port (--admin-port); none when absent. */
  metricsPort?: number;
  adminPort?: number;
  /** The ZooKeeper-protocol port over TLS (--secure-zk-client-port; the TLS flags go in extraArgs); none when absent. */
  secureZkPort?: number;
  tickMs?: number;
  serverId?: number;
  snapshotEveryTxns?: number;
  snapshotRetainCount?: number;
  logLevel?: string;
  extraArgs?: string[];
  /** Extra environment variables for the server process (e.g. test-only fault switches). */
  env?: Record<string, string>;
}

export class ServerProcess {
  private child: ChildProcess | undefined;
  /** Settles when the current child has exited and its stderr is fully read. */
  private closed: Promise<number | null> | undefined;
  /** Everything the process wrote to stderr (its logs), across restarts. */
  stderr = "";

  private constructor(
    readonly options: ServerProcessOptions,
    readonly port: number,
  ) {}

  static async start(options: ServerProcessOptions): Promise<ServerProcess> {
    const server = new ServerProcess(options, options.port ?? (await freePort()));
    await server.launch();
    return server;
  }

  get connectString(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** host:port of the ZooKeeper-protocol port; throws when the server was started without one. */
  get zkConnectString(): string {
    if (this.options.zkPort === undefined) throw new Error("this server was started without a ZooKeeper port (zkPort)");
    return `127.0.0.1:${this.options.zkPort}`;
  }

  /** http://127.0.0.1:<metrics port>; throws when the server was started without one. */
  get metricsUrl(): string {
    if (this.options.metricsPort === undefined) throw new Error("this server was started without a metrics port (metricsPort)");
    return `http://127.0.0.1:${this.options.metricsPort}`;
  }

  /** http://127.0.0.1:<admin port>; throws when the server was started without one. */
  get adminUrl(): string {
    if (this.options.adminPort === undefined) throw new Error("this server was started without an admin port (adminPort)");
    return `http://127.0.0.1:${this.options.adminPort}`;
  }

  /** host:port of the secure ZooKeeper-protocol port; throws when the server was started without one. */
  get secureZkConnectString(): string {
    if (this.options.secureZkPort === undefined) throw new Error("this server was started without a secure ZooKeeper port (secureZkPort)");
    return `127.0.0.1:${this.options.secureZkPort}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGSTOP / SIGCONT: a long pause (like a GC stall) without losing any state. */
  pause(): void {
    this.child?.kill("SIGSTOP");
  }

  resume(): void {
    this.child?.kill("SIGCONT");
  }

  /** The exit code of the last launch's process once it exited on its own (null: killed by a signal or still running). */
  get exitCode(): number | null {
    return this.child?.exitCode ?? null;
  }

  /** `env` replaces `options.env` for this launch only (e.g. a test-only fault switch). */
  async launch(env: Record<string, string> | undefined = this.options.env): Promise<void> {
    const o = this.options;
    const args = [
      CLI,
      "server",
      "--server-id",
      String(o.serverId ?? 1),
      "--data-dir",
      o.dataDir,
      "--client-host",
      "127.0.0.1",
      "--client-port",
      String(this.port),
      ...(o.zkPort === undefined ? [] : ["--zk-client-port", String(o.zkPort)]),
      ...(o.metricsPort === undefined ? [] : ["--metrics-port", String(o.metricsPort)]),
      ...(o.adminPort === undefined ? [] : ["--admin-port", String(o.adminPort)]),
      ...(o.secureZkPort === undefined ? [] : ["--secure-zk-client-port", String(o.secureZkPort)]),
      "--tick-ms",
      String(o.tickMs ?? 100),
      "--snapshot-every-txns",
      String(o.snapshotEveryTxns ?? 100_000),
      "--snapshot-retain-count",
      String(o.snapshotRetainCount ?? 3),
      ...(o.extraArgs ?? []),
    ];
    // An investigation's Node flags for every server a test starts (e.g. "--cpu-prof --cpu-prof-dir=DIR"),
    // which NODE_OPTIONS refuses.
    const nodeArgs = process.env["CORRAL_TEST_SERVER_NODE_ARGS"]?.split(" ").filter((arg) => arg !== "") ?? [];
    const child = spawn(process.execPath, [...nodeArgs, ...args], {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, CORRAL_LOG_LEVEL: o.logLevel ?? "warn", ...env },
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      this.stderr += chunk;
    });
    this.child = child;
    this.closed = new Promise((resolve) => child.once("close", (code) => resolve(code)));
    await waitForPort(this.port, child, 20_000, () => this.stderr);
  }

  /** kill -9: no chance to flush anything. */
  async crash(): Promise<void> {
    await this.signalAndWait("SIGKILL");
  }

  /** Ctrl-C: a clean stop. Resolves with the exit code. */
  async stop(): Promise<number | null> {
    return this.signalAndWait("SIGTERM");
  }

  /** `overrides.env` replaces `options.env` for this run only; a later plain restart() goes back to `options.env`. */
  async restart(overrides: { env?: Record<string, string> } = {}): Promise<void> {
    await this.launch(overrides.env ?? this.options.env);
  }

  /**
   * Waits (at most `limitMs`) for the process to exit on its own, and for its last log lines;
   * resolves with its exit code (null if a signal ended it).
   */
  async waitForExit(limitMs = 30_000): Promise<number | null> {
    const closed = this.closed;
    if (!closed) throw new Error("the server was never launched");
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`server on port ${this.port} did not exit within ${limitMs} ms`)), limitMs);
    });
    try {
      return await Promise.race([closed, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async signalAndWait(signal: NodeJS.Signals): Promise<number | null> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null;
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.kill(signal);
    return exited;
  }
}
