/**
 * Apache Curator (Debian's Curator 5 over ZooKeeper 3.8's Java client) connects to corral's
 * ZooKeeper port with SASL DIGEST-MD5 from a JAAS Client section, and two of its clients run an
 * InterProcessMutex whose nodes carry the user's `sasl` ACL. The Java program is
 * test/curator/CuratorSaslLock.java, compiled here with javac; the test skips only when java,
 * javac or Curator's jars are missing (CI installs them: .ci/run).
 */
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { digestClientJaas, digestServerJaas } from "../helpers/jaas-files.js";
import { startSaslServer } from "../helpers/sasl-server.js";
import type { ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";

const SOURCE = fileURLToPath(new URL("../../../test/curator/CuratorSaslLock.java", import.meta.url));
const JAVA = process.env.JAVA ?? "java";
const JAVAC = process.env.JAVAC ?? "javac";
const JARS = [
  "/usr/share/java/curator-recipes.jar",
  "/usr/share/java/curator-framework.jar",
  "/usr/share/java/curator-client.jar",
  "/usr/share/java/zookeeper.jar",
];
const LOGGING_JAR = "/usr/share/java/slf4j-simple.jar";

function missingTools(): string | undefined {
  for (const tool of [JAVA, JAVAC]) {
    if (spawnSync(tool, ["-version"], { stdio: "ignore" }).status !== 0) return `no working ${tool} (apt-get install default-jdk-headless)`;
  }
  const jar = [...JARS, LOGGING_JAR].find((path) => !existsSync(path));
  return jar === undefined ? undefined : `no ${jar} (apt-get install libcurator-recipes-java libcurator-framework-java)`;
}

describe("Apache Curator with SASL DIGEST-MD5 against corral's ZooKeeper port", { skip: missingTools() ?? false }, () => {
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let server: ServerProcess;

  before(async () => {
    dir = await makeTempDir("corral-curator-sasl-");
    await promisify(execFile)(JAVAC, ["-nowarn", "-d", dir.path, "-cp", JARS.join(":"), SOURCE], { timeout: 120_000 });
    await writeFile(join(dir.path, "client.jaas"), digestClientJaas("bob", "bob-secret"));
    server = await startSaslServer(dir.path, "server", digestServerJaas({ bob: "bob-secret" }));
  });

  after(async () => {
    await server?.stop();
    await dir?.remove();
  });

  test("two SASL-authenticated Curator clients take turns with an InterProcessMutex under a sasl ACL", async () => {
    const { stdout } = await promisify(execFile)(
      JAVA,
      [
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        `-Djava.security.auth.login.config=${join(dir.path, "client.jaas")}`,
        "-cp",
        [dir.path, ...JARS, LOGGING_JAR].join(":"),
        "CuratorSaslLock",
        server.zkConnectString,
        "bob",
        "/locks/sasl",
      ],
      { timeout: 180_000 },
    );
    assert.deepEqual(stdout.trim().split("\n"), [
      "whoami ip:127.0.0.1,sasl:bob",
      "acquired-a true",
      "acquired-b-while-held false",
      "acquired-b true",
      "acl 31:sasl:bob",
      "done",
    ]);
  });
});
