/**
 * A real Apache ZooKeeper 3.8 (Debian's `zookeeper` package) as a child process, standalone, for
 * differential tests: a free port on 127.0.0.1, its own temp conf and data dir, admin server off,
 * every four-letter word allowed, logs to a file in the temp dir. `stop()` kills it and removes
 * the dir.
 *
 * It runs the package's jar directly with QuorumPeerMain (what zkServer.sh runs; with no `server.N`
 * lines it serves standalone) instead of through zkServer.sh, because Debian's zkEnv.sh pins
 * /etc/zookeeper/conf and the log dir, and a direct child is one pid to kill.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, openSync, closeSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { freePort } from "./server-process.js";
import { makeTempDir } from "./temp-dir.js";

/** Debian bookworm's layout (packages `zookeeper`, `libzookeeper-java`, `libslf4j-java`, `liblog4j1.2-java`). */
export const ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar";
export const LOGGING_JARS = ["/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar"];
export const JAVA = process.env.JAVA ?? (existsSync("/usr/bin/java") ? "/usr/bin/java" : "java");

import { fourLetterWord } from "./four-letter-word.js";

export { fourLetterWord };

export const INSTALL_HINT = "apt-get install zookeeper zookeeper-bin";

/** Throws, naming the apt packages, when Debian's ZooKeeper server jar is not installed. */
export function assertZooKeeperInstalled(): void {
  if (!existsSync(ZOOKEEPER_JAR)) {
    throw new Error(`ZooKeeper 3.8 is not installed (${ZOOKEEPER_JAR} is missing): ${INSTALL_HINT}`);
  }
}

/** Children still running when the test process exits are killed (a crashed test must not leave a JVM behind). */
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

export interface RealZooKeeperOptions {
  /** ZooKeeper's tickTime (ms); the session timeout a client may ask for is 2..20 ticks. */
  tickTimeMs?: number;
  startLimitMs?: number;
  /** More zoo.cfg lines (e.g. "snapCount=50"). */
  configLines?: string[];
  /** JVM system properties (e.g. zookeeper.extendedTypesEnabled: "true"). */
  systemProperties?: Record<string, string>;
  /** A data dir to serve from (its version-2/ as ZooKeeper finds it) instead of a fresh empty one; left in place by stop(). */
  dataDir?: string;
  /**
   * Its audit log on (audit.enable=true in zoo.cfg), routed by log4j to `auditLogFile` with the
   * layout of ZooKeeper's own sample configuration (%d{ISO8601} %p %c{2}: %m%n).
   */
  auditLog?: boolean;
}

export class RealZooKeeper {
  private constructor(
    readonly port: number,
    readonly dir: string,
    /** Its dataDir (version-2/ holds the snapshots and txn logs). */
    readonly dataDir: string,
    /** The server's "Zookeeper version:" line from `srvr`, e.g. "3.8.0-…, built on …". */
    readonly version: string,
    private readonly child: ChildProcess,
    private readonly removeDir: () => Promise<void>,
  ) {}

  get connectString(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Where its audit log goes (written only when started with `auditLog`). */
  get auditLogFile(): string {
    return join(this.dir, "zookeeper_audit.log");
  }

  /** log4j's file (INFO and up) and the JVM's own stdout/stderr. */
  get logFiles(): { log: string; out: string } {
    return { log: join(this.dir, "zookeeper.log"), out: join(this.dir, "zookeeper.out") };
  }

  static async start(options: RealZooKeeperOptions = {}): Promise<RealZooKeeper> {
    assertZooKeeperInstalled();
    const dir = await makeTempDir("corral-realzk-");
    let child: ChildProcess | undefined;
    try {
      const port = await freePort();
      const conf = join(dir.path, "conf");
      const data = options.dataDir ?? join(dir.path, "data");
      await mkdir(conf);
      await mkdir(data, { recursive: true });
      const zooCfg = join(conf, "zoo.cfg");
      await writeFile(
        zooCfg,
        [
          `tickTime=${options.tickTimeMs ?? 2000}`,
          `dataDir=${data}`,
          `clientPort=${port}`,
          "clientPortAddress=127.0.0.1",
          "admin.enableServer=false",
          "4lw.commands.whitelist=*",
          ...(options.auditLog === true ? ["audit.enable=true"] : []),
          ...(options.configLines ?? []),
          "",
        ].join("\n"),
      );
      const logFile = join(dir.path, "zookeeper.log");
      const log4j = join(conf, "log4j.properties");
      await writeFile(
        log4j,
        [
          "log4j.rootLogger=INFO, FILE",
          "log4j.appender.FILE=org.apache.log4j.FileAppender",
          `log4j.appender.FILE.File=${logFile}`,
          "log4j.appender.FILE.layout=org.apache.log4j.PatternLayout",
          "log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} - %-5p [%t:%C{1}@%L] - %m%n",
          ...(options.auditLog === true
            ? [
                "log4j.logger.org.apache.zookeeper.audit.Slf4jAuditLogger=INFO, AUDIT",
                "log4j.additivity.org.apache.zookeeper.audit.Slf4jAuditLogger=false",
                "log4j.appender.AUDIT=org.apache.log4j.FileAppender",
                `log4j.appender.AUDIT.File=${join(dir.path, "zookeeper_audit.log")}`,
                "log4j.appender.AUDIT.layout=org.apache.log4j.PatternLayout",
                "log4j.appender.AUDIT.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n",
              ]
            : []),
          "",
        ].join("\n"),
      );
      const classpath = [conf, ZOOKEEPER_JAR, ...LOGGING_JARS.filter((jar) => existsSync(jar))].join(":");
      const outFd = openSync(join(dir.path, "zookeeper.out"), "a");
      try {
        child = spawn(
          JAVA,
          [
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            `-Dlog4j.configuration=file:${log4j}`,
            `-Dzookeeper.log.dir=${dir.path}`,
            "-Dzookeeper.jmx.log4j.disable=true",
            ...Object.entries(options.systemProperties ?? {}).map(([name, value]) => `-D${name}=${value}`),
            "-cp",
            classpath,
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            zooCfg,
          ],
          { stdio: ["ignore", outFd, outFd] },
        );
      } finally {
        closeSync(outFd);
      }
      running.add(child);
      const spawned = child;
      spawned.once("exit", () => running.delete(spawned));
      const version = await waitUntilServing(port, spawned, options.startLimitMs ?? 30_000);
      return new RealZooKeeper(port, dir.path, data, version, spawned, dir.remove);
    } catch (error) {
      const logs = tail(join(dir.path, "zookeeper.out")) + tail(join(dir.path, "zookeeper.log"));
      if (child) await killAndWait(child);
      await dir.remove();
      throw new Error(`${(error as Error).message}\n--- ZooKeeper output (tail) ---\n${logs}`, { cause: error });
    }
  }

  /** SIGTERM, and waits for the exit: the JVM's shutdown hooks run (the audit log's serverStop); stop() still removes the dir. */
  async terminate(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.child.kill("SIGTERM");
    await exited;
  }

  /** kill -9, leaving its data dir to be read; stop() still removes it. */
  async kill(): Promise<void> {
    await killAndWait(this.child);
  }

  /** kill -9 (its data is a throwaway), then removes the conf, data and log dir (not a dataDir given to start). */
  async stop(): Promise<void> {
    await killAndWait(this.child);
    await this.removeDir();
  }
}

async function waitUntilServing(port: number, child: ChildProcess, limitMs: number): Promise<string> {
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`ZooKeeper exited before serving (code ${child.exitCode}, signal ${child.signalCode})`);
    }
    // `srvr` answers "This ZooKeeper instance is not currently serving requests" until it serves.
    const answer = await fourLetterWord(port, "srvr", 2_000);
    const version = /^Zookeeper version: (.*)$/m.exec(answer);
    if (version && /^Mode: standalone$/m.test(answer)) {
      if (!version[1]!.startsWith("3.8.")) throw new Error(`expected ZooKeeper 3.8, found ${version[1]}`);
      return version[1]!;
    }
    if (Date.now() - started > limitMs) throw new Error(`ZooKeeper did not serve on 127.0.0.1:${port} within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function killAndWait(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGKILL");
  await exited;
}

function tail(file: string, chars = 3_000): string {
  try {
    return readFileSync(file, "utf8").slice(-chars);
  } catch {
    return "";
  }
}
