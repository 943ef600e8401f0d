/**
 * A three-server (or N-server) Apache ZooKeeper 3.8 ensemble from Debian's package, each server
 * its own `java … QuorumPeerMain` child process on 127.0.0.1: free ports, one temp dir holding
 * every server's zoo.cfg, myid, data and log, admin server off, every four-letter word allowed.
 * Each server can be killed (-9) and restarted alone, on the same ports and data. `stop()` kills
 * them all and removes the dir.
 *
 * Like RealZooKeeper (the standalone one), it runs the package's jar directly rather than through
 * zkServer.sh, whose zkEnv.sh pins /etc/zookeeper/conf and the log dir. Unlike RealZooKeeper it
 * gives the JVM ZooKeeper's own defaults (zkEnv.sh's 1000 MB heap, the JVM's default collector
 * and JIT), because the bench measures it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fourLetterWord } from "./four-letter-word.js";
import { assertZooKeeperInstalled, JAVA, LOGGING_JARS, ZOOKEEPER_JAR } from "./real-zookeeper.js";
import { freePort } from "./server-process.js";
import { makeTempDir } from "./temp-dir.js";

/** Children still running when this process exits are killed (a crashed run must not leave JVMs behind). */
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

export interface ZooKeeperEnsembleOptions {
  servers?: number;
  /** tickTime (ms); initLimit and syncLimit are in ticks, as in zoo.cfg. */
  tickTimeMs?: number;
  initLimitTicks?: number;
  syncLimitTicks?: number;
  /** log4j's root level for each server's zookeeper.log. */
  logLevel?: "DEBUG" | "INFO" | "WARN" | "ERROR";
  /** JVM flags before the class name; ZooKeeper's zkEnv.sh default heap when absent. */
  jvmArgs?: string[];
  /** Bound on each server's start (until `srvr` shows it leading or following). */
  startLimitMs?: number;
  /** reconfigEnabled=true; the server lines then name each client address, as a dynamic configuration does. */
  reconfigEnabled?: boolean;
  /** The super user ("super:<base64 sha1>"), through ZooKeeper's system property. */
  superDigest?: string;
  /** More zoo.cfg lines ("maxClientCnxns=0"), after the ones written here. */
  extraConfig?: readonly string[];
}

interface ZooKeeperMember {
  id: number;
  clientPort: number;
  dir: string;
  zooCfg: string;
  log4j: string;
  child: ChildProcess | undefined;
}

/** `srvr`'s Mode line ("leader", "follower", …), or undefined when the server is not serving. */
export function srvrMode(answer: string): string | undefined {
  return /^Mode: (\S+)$/m.exec(answer)?.[1];
}

export class ZooKeeperEnsemble {
  private constructor(
    readonly dir: string,
    private readonly members: Map<number, ZooKeeperMember>,
    private readonly options: Required<Pick<ZooKeeperEnsembleOptions, "logLevel" | "startLimitMs">> & { jvmArgs: string[] },
    private readonly removeDir: () => Promise<void>,
  ) {}

  /** The server's "Zookeeper version:" line from `srvr` once it served, e.g. "3.8.0-…, built on …". */
  version = "";

  static async start(options: ZooKeeperEnsembleOptions = {}): Promise<ZooKeeperEnsemble> {
    assertZooKeeperInstalled();
    const count = options.servers ?? 3;
    const dir = await makeTempDir("corral-zk-ensemble-");
    const members = new Map<number, ZooKeeperMember>();
    const ensemble = new ZooKeeperEnsemble(
      dir.path,
      members,
      {
        logLevel: options.logLevel ?? "INFO",
        startLimitMs: options.startLimitMs ?? 60_000,
        jvmArgs: [
          ...(options.jvmArgs ?? ["-Xmx1000m"]),
          ...(options.superDigest === undefined ? [] : [`-Dzookeeper.DigestAuthenticationProvider.superDigest=${options.superDigest}`]),
        ],
      },
      dir.remove,
    );
    try {
      const ports = [];
      for (let id = 1; id <= count; id++) {
        ports.push({ id, client: await freePort(), quorum: await freePort(), election: await freePort() });
      }
      for (const { id, client } of ports) {
        const memberDir = join(dir.path, `zk${id}`);
        const data = join(memberDir, "data");
        await mkdir(data, { recursive: true });
        await writeFile(join(data, "myid"), `${id}\n`);
        const zooCfg = join(memberDir, "zoo.cfg");
        await writeFile(
          zooCfg,
          [
            `tickTime=${options.tickTimeMs ?? 2000}`,
            `initLimit=${options.initLimitTicks ?? 10}`,
            `syncLimit=${options.syncLimitTicks ?? 5}`,
            `dataDir=${data}`,
            `clientPort=${client}`,
            "clientPortAddress=127.0.0.1",
            // ZooKeeper's default, written out: every transaction is fsynced before it is acknowledged.
            "forceSync=yes",
            "admin.enableServer=false",
            "4lw.commands.whitelist=*",
            ...(options.reconfigEnabled === true ? ["reconfigEnabled=true"] : []),
            ...(options.extraConfig ?? []),
            ...ports.map(
              (p) => `server.${p.id}=127.0.0.1:${p.quorum}:${p.election}${options.reconfigEnabled === true ? `:participant;127.0.0.1:${p.client}` : ""}`,
            ),
            "",
          ].join("\n"),
        );
        const log4j = join(memberDir, "log4j.properties");
        await writeFile(
          log4j,
          [
            `log4j.rootLogger=${options.logLevel ?? "INFO"}, FILE`,
            "log4j.appender.FILE=org.apache.log4j.FileAppender",
            `log4j.appender.FILE.File=${join(memberDir, "zookeeper.log")}`,
            "log4j.appender.FILE.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} - %-5p [%t:%C{1}@%L] - %m%n",
            "",
          ].join("\n"),
        );
        members.set(id, { id, clientPort: client, dir: memberDir, zooCfg, log4j, child: undefined });
      }
      for (const id of members.keys()) ensemble.launch(id);
      await Promise.all([...members.keys()].map((id) => ensemble.waitServing(id)));
    } catch (error) {
      const logs = [...members.keys()].map((id) => `--- zk${id} ---\n${ensemble.logTail(id)}`).join("\n");
      await ensemble.stop();
      throw new Error(`${(error as Error).message}\n${logs}`, { cause: error });
    }
    return ensemble;
  }

  get serverIds(): number[] {
    return [...this.members.keys()];
  }

  private member(id: number): ZooKeeperMember {
    const member = this.members.get(id);
    if (member === undefined) throw new Error(`no ZooKeeper server ${id}`);
    return member;
  }

  clientPort(id: number): number {
    return this.member(id).clientPort;
  }

  /** "127.0.0.1:port" of server `id`'s client port. */
  connectString(id: number): string {
    return `127.0.0.1:${this.clientPort(id)}`;
  }

  /** Server `id`'s dataDir (its version-2/ holds the snapshots and txn logs). */
  dataDir(id: number): string {
    return join(this.member(id).dir, "data");
  }

  pid(id: number): number | undefined {
    return this.member(id).child?.pid;
  }

  running(id: number): boolean {
    const child = this.member(id).child;
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  /** The last few thousand characters of server `id`'s log4j file and JVM output. */
  logTail(id: number, chars = 3_000): string {
    const { dir } = this.member(id);
    return tail(join(dir, "zookeeper.out"), chars) + tail(join(dir, "zookeeper.log"), chars);
  }

  private launch(id: number): void {
    const member = this.member(id);
    const classpath = [member.dir, ZOOKEEPER_JAR, ...LOGGING_JARS.filter((jar) => existsSync(jar))].join(":");
    const outFd = openSync(join(member.dir, "zookeeper.out"), "a");
    let child: ChildProcess;
    try {
      child = spawn(
        JAVA,
        [
          ...this.options.jvmArgs,
          `-Dlog4j.configuration=file:${member.log4j}`,
          `-Dzookeeper.log.dir=${member.dir}`,
          "-Dzookeeper.jmx.log4j.disable=true",
          "-cp",
          classpath,
          "org.apache.zookeeper.server.quorum.QuorumPeerMain",
          member.zooCfg,
        ],
        { stdio: ["ignore", outFd, outFd] },
      );
    } finally {
      closeSync(outFd);
    }
    running.add(child);
    child.once("exit", () => running.delete(child));
    member.child = child;
  }

  /** Until `srvr` on server `id` shows it leading or following (bounded by the start limit). */
  async waitServing(id: number, limitMs = this.options.startLimitMs): Promise<string> {
    const member = this.member(id);
    const started = Date.now();
    for (;;) {
      const child = member.child;
      if (child === undefined || child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`ZooKeeper server ${id} exited before serving (code ${child?.exitCode}, signal ${child?.signalCode})`);
      }
      // `srvr` answers "This ZooKeeper instance is not currently serving requests" until it serves.
      const answer = await fourLetterWord(member.clientPort, "srvr", 2_000);
      const mode = srvrMode(answer);
      if (mode === "leader" || mode === "follower") {
        const version = /^Zookeeper version: (.*)$/m.exec(answer)?.[1] ?? "";
        if (!version.startsWith("3.8.")) throw new Error(`expected ZooKeeper 3.8, found "${version}"`);
        this.version = version;
        return mode;
      }
      if (Date.now() - started > limitMs) throw new Error(`ZooKeeper server ${id} did not serve on 127.0.0.1:${member.clientPort} within ${limitMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** kill -9 of server `id`; resolves once it has exited. */
  async crash(id: number): Promise<void> {
    const child = this.member(id).child;
    if (child !== undefined) await killAndWait(child);
  }

  /** Starts server `id` again (same ports, same data) and waits until it serves. */
  async restart(id: number): Promise<void> {
    if (this.running(id)) throw new Error(`ZooKeeper server ${id} is still running`);
    this.launch(id);
    await this.waitServing(id);
  }

  /** Kills every server at once, without waiting (for an exit handler). */
  killNow(): void {
    for (const member of this.members.values()) member.child?.kill("SIGKILL");
  }

  /** kill -9 of every server (their data is a throwaway), then removes the dir. */
  async stop(): Promise<void> {
    const children = [...this.members.values()].flatMap((m) => (m.child === undefined ? [] : [m.child]));
    await Promise.allSettled(children.map((child) => killAndWait(child)));
    await this.removeDir();
  }
}

async function killAndWait(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGKILL");
  await exited;
}

function tail(file: string, chars: number): string {
  try {
    return readFileSync(file, "utf8").slice(-chars);
  } catch {
    return "";
  }
}
