/**
 * Apache Curator's admin API drives corral's dynamic reconfiguration through the ZooKeeper port: a
 * real, independently written client (Debian's Curator 5 over ZooKeeper 3.8's Java client) reads
 * the configuration, adds a spare as a participant and removes it again, and is refused a stale
 * fromConfig (BADVERSION) and a change without the super user (NOAUTH). Curator's EnsembleTracker
 * watches /zookeeper/config and builds its connect string from each member's ';client' address;
 * the test checks that it follows every change.
 *
 * The Java program (test/curator/CuratorReconfig.java) is compiled here with javac against the
 * jars under /usr/share/java and prints one line per step; see its header for the format. The
 * test skips only when java, javac or Curator's jars are missing (CI installs them: .ci/run).
 */
import assert from "node:assert/strict";
import { execFile, spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { generateDigest, type Client, type ClusterConfiguration } from "../../src/index.js";
import { connectTo, waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

const SOURCE = fileURLToPath(new URL("../../../test/curator/CuratorReconfig.java", import.meta.url));
const JAVA = process.env.JAVA ?? "java";
const JAVAC = process.env.JAVAC ?? "javac";
/** Debian's jars; their manifests' Class-Path brings in guava, slf4j-api, zookeeper-jute and the rest. */
const CURATOR_JARS = ["/usr/share/java/curator-framework.jar", "/usr/share/java/curator-client.jar", "/usr/share/java/zookeeper.jar"];
/** slf4j's simple binding: Curator's and ZooKeeper's warnings go to stderr (kept for a failure's message). */
const LOGGING_JAR = "/usr/share/java/slf4j-simple.jar";
const PASSWORD = "test";
const SUPER = `super:${PASSWORD}`;
const SPARE = 4;
/** The whole Java run, from JVM start to its last line; it is killed after this. */
const JAVA_RUN_MS_MAX = 240_000;
/** One step of the Java program (a reconfig, or its EnsembleTracker catching up). */
const STEP_MS_MAX = 90_000;

function missingTools(): string | undefined {
  for (const tool of [JAVA, JAVAC]) {
    if (spawnSync(tool, ["-version"], { stdio: "ignore" }).status !== 0) return `no working ${tool} (apt-get install default-jdk-headless)`;
  }
  const jar = [...CURATOR_JARS, LOGGING_JAR].find((path) => !existsSync(path));
  if (jar !== undefined) return `no ${jar} (apt-get install libcurator-framework-java libcurator-client-java)`;
  return undefined;
}

/** One stdout line of the Java program: "<step> key=value ...". */
interface Step {
  name: string;
  fields: Record<string, string>;
  line: string;
}

function parseStep(line: string): Step {
  const [name = "", ...pairs] = line.split(" ");
  const fields: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    if (at > 0) fields[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return { name, fields, line };
}

/** A configuration text as the program prints it (newlines written as "\n"). */
function unescape(text: string): string {
  return text.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
}

/** The Java program as a child process, read one step at a time in the order it prints them. */
class CuratorRun {
  private readonly lines: string[] = [];
  private read = 0;
  private stderr = "";
  private exitStatus: string | undefined;
  private readonly killTimer: NodeJS.Timeout;

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    createInterface({ input: child.stdout }).on("line", (line) => this.lines.push(line));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      this.stderr += chunk;
    });
    // A write to a program that has exited fails (EPIPE); its exit is reported by next() instead.
    child.stdin.on("error", () => undefined);
    child.on("exit", (code, signal) => {
      this.exitStatus = signal ?? String(code);
    });
    this.killTimer = setTimeout(() => this.kill(), JAVA_RUN_MS_MAX);
    this.killTimer.unref();
  }

  static start(classDir: string, args: string[]): CuratorRun {
    const classpath = [classDir, ...CURATOR_JARS, LOGGING_JAR].join(":");
    return new CuratorRun(
      spawn(
        JAVA,
        [
          "-Xmx256m",
          "-XX:+UseSerialGC",
          "-XX:TieredStopAtLevel=1",
          "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
          "-Dorg.slf4j.simpleLogger.logFile=System.err",
          // No JAAS file here: do not try SASL, only the digest the program adds.
          "-Dzookeeper.sasl.client=false",
          "-cp",
          classpath,
          "CuratorReconfig",
          ...args,
        ],
        { stdio: ["pipe", "pipe", "pipe"] },
      ),
    );
  }

  /**
   * The next line of step `name` (lines before it are passed over: a test that failed early leaves
   * its lines unread); throws, with the program's output, when the program fails or exits first.
   */
  async next(name: string): Promise<Step> {
    return waitFor(
      `Curator's "${name}" line`,
      () => {
        while (this.read < this.lines.length) {
          const step = parseStep(this.lines[this.read++]!);
          if (step.name === name) return step;
          if (step.name === "failed") throw new Error(`the Java program failed before "${name}": ${step.line}`);
        }
        if (this.exitStatus !== undefined) throw new Error(`the Java program exited (${this.exitStatus}) before "${name}"`);
        return undefined;
      },
      STEP_MS_MAX,
    ).catch((error: unknown) => {
      throw new Error(`${error instanceof Error ? error.message : String(error)}\n${this.output()}`);
    });
  }

  /** Lets the program go on from "paused". */
  resume(): void {
    if (this.exitStatus === undefined) this.child.stdin.write("go on\n");
  }

  async exited(): Promise<string> {
    return waitFor("the Java program to exit", () => this.exitStatus, STEP_MS_MAX);
  }

  output(): string {
    return `stdout:\n${this.lines.join("\n")}\nstderr (last 4 KiB):\n${this.stderr.slice(-4096)}`;
  }

  kill(): void {
    clearTimeout(this.killTimer);
    if (this.exitStatus === undefined) this.child.kill("SIGKILL");
  }
}

const skip = missingTools();

describe("Apache Curator's admin API against corral's ZooKeeper port", { skip: skip ?? false }, () => {
  let cluster: ClusterProcess;
  let removeClassDir: (() => Promise<void>) | undefined;
  let curator: CuratorRun | undefined;
  const clients: Client[] = [];
  /** ZooKeeper-port addresses of `ids`, sorted as the program prints a connect string. */
  const zkAddresses = (ids: number[]) =>
    ids
      .map((id) => cluster.server(id).zkConnectString)
      .sort()
      .join(",");
  /** The configuration server `id` runs with once it has at least `version`, read through corral's SDK. */
  const configAt = async (id: number, version: bigint) => {
    const reader = await connectTo(cluster, id);
    clients.push(reader);
    return waitFor(
      `server ${id} to run with version ${version.toString(16)}`,
      async () => {
        const config = await reader.getConfig();
        return config.version >= version ? config : undefined;
      },
      STEP_MS_MAX,
    );
  };
  let initial: ClusterConfiguration;
  let joinedVersion: bigint;

  before(async () => {
    const classDir = await makeTempDir("corral-curator-");
    removeClassDir = classDir.remove;
    await promisify(execFile)(JAVAC, ["-nowarn", "-d", classDir.path, "-cp", CURATOR_JARS.join(":"), SOURCE], { timeout: 120_000 });
    cluster = await ClusterProcess.start({ voters: 3, spares: 1, superDigest: generateDigest(SUPER), config: { reconfigEnabled: true } });
    await waitForLeader(cluster);
    // Read before the program starts: it goes on to change the configuration at once.
    initial = await configAt(1, 0n);
    curator = CuratorRun.start(classDir.path, [zkAddresses([1, 2, 3]), PASSWORD, cluster.memberLine(SPARE), String(SPARE)]);
  });
  after(async () => {
    curator?.kill();
    await Promise.allSettled(clients.map((c) => c.close()));
    await cluster?.stop();
    await removeClassDir?.();
  });

  test("Curator reads corral's configuration, and its EnsembleTracker connects to the members' ZooKeeper ports", async () => {
    const run = curator!;
    assert.equal((await run.next("connected")).fields.connect, zkAddresses([1, 2, 3]));
    const config = await run.next("config");
    assert.equal(config.fields.version, initial.version.toString(16), config.line);
    assert.equal(unescape(config.fields.text ?? ""), initial.text, config.line);
    assert.equal(config.fields.participants, "1,2,3", config.line);
    assert.equal(config.fields.observers, "", config.line);
    assert.equal(config.fields.clients, zkAddresses([1, 2, 3]), `Curator's connect string from the ';client' addresses: ${config.line}`);
    const tracker = await run.next("tracker-initial");
    assert.equal(tracker.fields.version, initial.version.toString(16), tracker.line);
    assert.equal(tracker.fields.connect, zkAddresses([1, 2, 3]), tracker.line);
  });

  test("Curator adds the spare as a participant: corral runs with it, and the EnsembleTracker connects to it too", async () => {
    const run = curator!;
    try {
      const joined = await run.next("joined");
      assert.equal(joined.fields.participants, "1,2,3,4", joined.line);
      joinedVersion = BigInt(`0x${joined.fields.version}`);
      assert.ok(joinedVersion > initial.version, joined.line);
      assert.equal(joined.fields.mzxid, joined.fields.version, `the reconfig's own txn wrote the configuration: ${joined.line}`);
      assert.equal(joined.fields.clients, zkAddresses([1, 2, 3, SPARE]), joined.line);
      const text = unescape(joined.fields.text ?? "");
      assert.ok(text.split("\n").includes(cluster.memberLine(SPARE)), text);
      // The spare itself, asked through corral's own SDK, runs with the configuration Curator got back.
      const atSpare = await configAt(SPARE, joinedVersion);
      assert.equal(atSpare.version, joinedVersion);
      assert.equal(atSpare.text, text);
      const tracker = await run.next("tracker-joined");
      assert.equal(tracker.fields.version, joined.fields.version, tracker.line);
      assert.equal(tracker.fields.participants, "1,2,3,4", tracker.line);
      assert.equal(tracker.fields.connect, zkAddresses([1, 2, 3, SPARE]), tracker.line);
      await run.next("paused");
    } finally {
      run.resume();
    }
  });

  test("Curator removes the spare again from the version in force, and the EnsembleTracker drops it", async () => {
    const run = curator!;
    const left = await run.next("left");
    assert.equal(left.fields.participants, "1,2,3", left.line);
    const leftVersion = BigInt(`0x${left.fields.version}`);
    assert.ok(leftVersion > joinedVersion, left.line);
    assert.equal(left.fields.mzxid, left.fields.version, left.line);
    assert.equal(left.fields.clients, zkAddresses([1, 2, 3]), left.line);
    const corral = await configAt(1, leftVersion);
    assert.equal(corral.version, leftVersion);
    assert.equal(corral.text, unescape(left.fields.text ?? ""));
    assert.ok(!corral.text.includes(`server.${SPARE}=`), corral.text);
    const tracker = await run.next("tracker-left");
    assert.equal(tracker.fields.version, left.fields.version, tracker.line);
    assert.equal(tracker.fields.connect, zkAddresses([1, 2, 3]), tracker.line);
  });

  test("a reconfig from a configuration no longer in force is BadVersionException", async () => {
    const stale = await curator!.next("stale");
    assert.equal(stale.fields.fromConfig, joinedVersion.toString(16), stale.line);
    assert.equal(stale.fields.error, "BADVERSION:BadVersionException", stale.line);
  });

  test("without the super user Curator reads the configuration but may not change it: NoAuthException", async () => {
    const run = curator!;
    const read = await run.next("stranger-config");
    assert.equal(read.fields.participants, "1,2,3", read.line);
    const refused = await run.next("noauth");
    assert.equal(refused.fields.error, "NOAUTH:NoAuthException", refused.line);
    await run.next("done");
    assert.equal(await run.exited(), "0", run.output());
    const corral = await configAt(1, 0n);
    assert.equal(corral.version.toString(16), read.fields.version, "no refused reconfig changed the configuration");
  });
});
