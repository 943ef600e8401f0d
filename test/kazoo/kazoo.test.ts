/**
 * kazoo's own test suite (Debian's python3-kazoo 2.8, kazoo/tests) as a gate on corral's ZooKeeper
 * port: pytest runs the whole directory against (a) a standalone corral and (b) a three-voter
 * corral cluster given as the three-host connect string of its ZooKeeper ports, through
 * test/kazoo/corral_kazoo_plugin.py (test/helpers/kazoo-suite.ts). A run passes when nothing
 * failed or errored and every skip is the plugin's named list or one kazoo decides for its
 * environment. The servers get what kazoo's own harness gives its ZooKeeper: tickTime 2000
 * (initLimit 4, syncLimit 2), read-only mode and reconfiguration on, every four-letter word, the super digest of
 * "super:test", and for test_sasl.py its JAAS file's DIGEST-MD5 Server section (kazoo's GSSAPI
 * tests, which need a KDC, run in test/integration/zk-sasl-kerberos.test.ts).
 *
 * `npm run test:kazoo` runs this file alone; KAZOO_SELECT="test_lock.py test_client.py::TestClient"
 * narrows a local run to some of kazoo's files or tests (the stale-skip-list check is then off);
 * KAZOO_REPORT_DIR=dir keeps each run's pytest output, JUnit XML and server logs there
 * (standalone.*, cluster.*, <target>-server-<i>.log).
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, test, type TestContext } from "node:test";
import { Client } from "../../src/index.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { collapseRepeatedLines, failedCaseDetails, removeRunFiles, runKazooSuite, skipOrigin, verdict, type KazooRun } from "../helpers/kazoo-suite.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

/** kazoo's harness: `super:test` (-Dzookeeper.DigestAuthenticationProvider.superDigest). */
const SUPER_DIGEST = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";
/** kazoo's harness (ZOOKEEPER_JAAS_AUTH=digest): the JAAS file its ZooKeeper reads for test_sasl.py. */
const KAZOO_DIGEST_JAAS = `Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_super="super_secret"
    user_jaasuser="jaas_password";
};
`;
/** kazoo's harness writes tickTime=2000, initLimit=4, syncLimit=2 into its zoo.cfg. */
const TICK_MS = 2000;
/**
 * One run takes 1.5-2 minutes on the 2-core CI machine (a real ZooKeeper: 2); pytest is killed
 * after this, so a hung kazoo test cannot hold CI's 30-minute budget.
 */
const RUN_LIMIT_MS = 8 * 60_000;

const select = process.env.KAZOO_SELECT?.split(/\s+/).filter((s) => s !== "");

async function servesSessions(grpcConnectString: string): Promise<void> {
  await waitFor(
    `a session on ${grpcConnectString}`,
    async () => {
      try {
        const client = await Client.connect(grpcConnectString, { sessionTimeoutMs: 10_000, connectTimeoutMs: 5_000 });
        try {
          await client.exists("/");
          return true;
        } finally {
          await client.close();
        }
      } catch {
        return undefined;
      }
    },
    60_000,
  );
}

function report(t: TestContext, label: string, run: KazooRun): void {
  const { passed, failed, error, skipped } = run.counts;
  t.diagnostic(`kazoo against ${label}: ${passed} passed, ${failed} failed, ${error} errors, ${skipped} skipped in ${(run.wallMs / 1000).toFixed(0)} s`);
  for (const c of run.cases) {
    if (c.outcome === "skipped") t.diagnostic(`  skipped (${skipOrigin(c.message)}): ${c.id}: ${c.message}`);
  }
  for (const c of run.cases) {
    if (c.rerun !== undefined) t.diagnostic(`  run twice (${c.outcome} the second time): ${c.id}: ${c.rerun}`);
  }
  const slow = [...run.cases].sort((a, b) => b.seconds - a.seconds).slice(0, 5);
  t.diagnostic(`  slowest: ${slow.map((c) => `${c.id} ${c.seconds.toFixed(1)} s`).join(", ")}`);
}

/** A server's log lines at pino's warn level or above (40+), with their times. */
function warningLines(stderr: string): string[] {
  const lines: string[] = [];
  for (const line of stderr.split("\n")) {
    const level = /"level":(\d+)/.exec(line);
    if (level !== null && Number(level[1]) >= 40) lines.push(line.length > 600 ? `${line.slice(0, 600)}…` : line);
  }
  return lines;
}

/**
 * Runs the suite against the ZooKeeper ports of `servers` (kazoo's tests may stop and restart
 * them), which must all be running at the end.
 */
async function gate(t: TestContext, label: string, name: string, servers: readonly ServerProcess[]): Promise<void> {
  const hosts = servers.map((s) => s.zkConnectString).join(",");
  const run = await runKazooSuite({ hosts, servers, timeoutMs: RUN_LIMIT_MS, ...(select ? { select } : {}) });
  try {
    report(t, `${label} (${hosts})`, run);
    const problems = verdict(run);
    servers.forEach((server, i) => {
      if (!server.running)
        problems.push(`server ${i} (${server.zkConnectString}) is not running after the run (exit code ${server.exitCode}):\n${server.stderr.slice(-4_000)}`);
    });
    if (problems.length > 0) {
      const serverWarnings = servers.map((server, i) => `--- server ${i}'s last warnings ---\n${warningLines(server.stderr).slice(-30).join("\n")}`);
      const report = [...problems, failedCaseDetails(run), ...serverWarnings, `--- pytest's last output ---\n${collapseRepeatedLines(run.tail).slice(-3_000)}`];
      assert.fail(`kazoo's suite against ${label}:\n${report.join("\n")}`);
    }
  } finally {
    const reportDir = process.env.KAZOO_REPORT_DIR;
    await removeRunFiles(run, reportDir ? { dir: reportDir, name } : undefined);
    if (reportDir) await Promise.all(servers.map((server, i) => writeFile(join(reportDir, `${name}-server-${i}.log`), server.stderr)));
  }
}

describe("kazoo's test suite against corral's ZooKeeper port", { concurrency: 1 }, () => {
  test("a standalone server", { timeout: RUN_LIMIT_MS + 60_000 }, async (t) => {
    const dir = await makeTempDir("corral-kazoo-standalone-");
    let server: ServerProcess | undefined;
    try {
      const jaasFile = join(dir.path, "jaas.conf");
      await writeFile(jaasFile, KAZOO_DIGEST_JAAS);
      server = await ServerProcess.start({
        dataDir: join(dir.path, "data"),
        zkPort: await freePort(),
        tickMs: TICK_MS,
        extraArgs: [
          ...["--four-letter-word-whitelist", "*", "--super-digest", SUPER_DIGEST, "--read-only-mode-enabled", "true", "--reconfig-enabled", "true"],
          // As kazoo's own harness configures ZooKeeper (kazoo/testing/common.py): its suite keeps
          // more than maxClientCnxns's default of 60 clients open at once against one server.
          ...["--max-client-cnxns", "0"],
          ...["--jaas-config-file", jaasFile],
        ],
      });
      await servesSessions(server.connectString);
      await gate(t, "a standalone server", "standalone", [server]);
    } finally {
      await server?.stop();
      await dir.remove();
    }
  });

  test("a three-voter cluster", { timeout: RUN_LIMIT_MS + 120_000 }, async (t) => {
    const jaasDir = await makeTempDir("corral-kazoo-jaas-");
    const jaasConfigFile = join(jaasDir.path, "jaas.conf");
    await writeFile(jaasConfigFile, KAZOO_DIGEST_JAAS);
    const cluster = await ClusterProcess.start({
      voters: 3,
      tickMs: TICK_MS,
      initLimitTicks: 4,
      syncLimitTicks: 2,
      superDigest: SUPER_DIGEST,
      config: { fourLetterWordWhitelist: "*", readOnlyModeEnabled: true, reconfigEnabled: true, jaasConfigFile, maxClientCnxns: 0 },
    }).catch(async (error: unknown) => {
      await jaasDir.remove();
      throw error;
    });
    try {
      await waitFor("a leader every server agrees on", () => cluster.agreedLeader(), 60_000);
      for (const server of cluster.servers.values()) await servesSessions(server.connectString);
      await gate(t, "a three-voter cluster", "cluster", [...cluster.servers.values()]);
    } finally {
      await cluster.stop();
      await jaasDir.remove();
    }
  });
});
