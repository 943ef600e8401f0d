/**
 * Issue 13 from the command line: `corral cluster` given certificate files runs a cluster with TLS
 * on every port; `corral shell`, `corral health` and the bench take the same --tls-* flags (files),
 * and a client without a certificate is turned away with a hint. Certificates are made here by
 * openssl; the cluster runs as child processes on 127.0.0.1 with free ports.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { Client } from "../../src/index.js";
import { makeTestPki } from "../helpers/certificates.js";
import { CLI, freeRange, runScript } from "../helpers/cli-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";
import { withCode } from "../helpers/zk-error.js";

const BENCH = fileURLToPath(new URL("../../bench/run.js", import.meta.url));

const run = runScript;

test(
  "corral cluster with certificate files: TLS on every port, and the shell, health and the bench connect with --tls-* flags",
  { timeout: 180_000 },
  async () => {
    const pki = await makeTestPki();
    const dir = await makeTempDir("corral-tls-cli-");
    const server = await pki.trusted.issue({ subject: "/CN=corral server", name: "server" });
    const alice = await pki.trusted.issue({ subject: "/CN=alice", name: "alice", subjectAltNames: [] });
    const taken = new Set<number>();
    // Every port the cluster opens comes from a free range: the metrics and admin ports' defaults
    // (base + 4819, base + 5899) were never checked, and once collided with another test's port.
    const ranges: number[] = [];
    for (let i = 0; i < 6; i++) ranges.push(await freeRange(3, taken));
    const [base, quorum, election, secureZk, metrics, admin] = ranges as [number, number, number, number, number, number];
    const dataDir = join(dir.path, "data");
    const cluster = run(CLI, [
      "cluster",
      "--voters",
      "3",
      "--tick-ms",
      "200",
      "--data-dir",
      dataDir,
      "--base-port",
      String(base),
      "--quorum-base-port",
      String(quorum),
      "--election-base-port",
      String(election),
      "--secure-zk-base-port",
      String(secureZk),
      "--metrics-base-port",
      String(metrics),
      "--admin-base-port",
      String(admin),
      "--tls-cert-file",
      server.certFile,
      "--tls-key-file",
      server.keyFile,
      "--tls-ca-file",
      pki.trusted.caFile,
    ]);
    const clientTls = ["--tls-ca-file", pki.trusted.caFile, "--tls-cert-file", alice.certFile, "--tls-key-file", alice.keyFile];
    try {
      await waitFor(
        "the TLS cluster to serve",
        () => {
          assert.equal(cluster.child.exitCode, null, `corral cluster exited early:\n${cluster.out()}\n${cluster.err()}`);
          return cluster.out().includes("3 servers serving") ? true : undefined;
        },
        90_000,
      );
      const hosts = [0, 1, 2].map((i) => `127.0.0.1:${base + i}`);
      const connectString = hosts.join(",");
      assert.match(cluster.out(), new RegExp(`connect string: ${connectString.replaceAll(".", "\\.")} \\(TLS\\)`));
      assert.match(
        cluster.out(),
        new RegExp(`ZooKeeper-protocol connect string over TLS: ${[0, 1, 2].map((i) => `127\\.0\\.0\\.1:${secureZk + i}`).join(",")}`),
      );
      assert.doesNotMatch(cluster.out(), /^ZooKeeper-protocol connect string: /m, "no plain ZooKeeper port unless asked for");
      assert.match(cluster.out(), /Client\.connect\("[^"]+", \{ tls: \{ ca, cert, key \} \}\)/);
      const config = JSON.parse(readFileSync(join(dataDir, "cluster.json"), "utf8")) as Record<string, unknown>;
      assert.deepEqual(
        [config["clientPortTls"], config["sslQuorum"], config["tlsCertFile"], config["tlsKeyFile"], config["tlsCaFile"], config["tlsClientAuth"]],
        [true, true, server.certFile, server.keyFile, pki.trusted.caFile, "need"],
      );

      // The SDK: over TLS at every member, one replicated tree; in plain text, nowhere.
      for (const [i, host] of hosts.entries()) {
        const zk = await Client.connect(host, { tls: { ca: pki.trusted.ca, cert: alice.cert, key: alice.key }, connectTimeoutMs: 30_000 });
        try {
          await zk.create(`/via-${i + 1}`, "over TLS");
        } finally {
          await zk.close();
        }
      }
      await assert.rejects(Client.connect(hosts[0]!, { connectTimeoutMs: 2_000 }), withCode("CONNECTIONLOSS"));

      // corral shell with the certificate files: a script reads back what went through another member.
      const sh = run(CLI, ["shell", "--connect", connectString, ...clientTls]);
      sh.child.stdin.end(["sync /", "get /via-3", 'create /shell "via the shell"', "whoami", ""].join("\n"));
      assert.equal(await sh.exit, 0, sh.err());
      assert.equal(sh.err(), "", "no warning on stderr (Node's DEP0123 for an IP address as TLS server name is dropped)");
      const out = sh.out().split("\n");
      assert.deepEqual(out.slice(0, 3), ["Sync is OK", "over TLS", "Created /shell"]);
      assert.ok(out.includes("x509: CN=alice"), sh.out());
      // Without a certificate the server refuses, and the shell says what to check.
      const refused = run(CLI, ["shell", "--connect", hosts[0]!, "--timeout-ms", "2000", "--tls-ca-file", pki.trusted.caFile, "--", "ls", "/"]);
      assert.equal(await refused.exit, 1);
      assert.match(refused.err(), /Over TLS: .*--tls-cert-file/);
      const missing = run(CLI, ["shell", "--connect", hosts[0]!, "--tls-ca-file", join(dir.path, "nowhere.pem"), "--", "ls", "/"]);
      assert.equal(await missing.exit, 2);
      assert.match(missing.err(), /tls-ca-file: cannot read/);

      // corral health: with the flags; and from the cluster file alone, as a container's check would.
      const health = run(CLI, ["health", "--connect", hosts[1]!, ...clientTls]);
      assert.equal(await health.exit, 0, health.err());
      const selfCheck = run(CLI, ["health", "--config", join(dataDir, "cluster.json")], { CORRAL_SERVER_ID: "2" });
      assert.equal(await selfCheck.exit, 0, selfCheck.err());
      const plainHealth = run(CLI, ["health", "--connect", hosts[1]!, "--timeout-ms", "2000"]);
      assert.equal(await plainHealth.exit, 1);

      // The bench over TLS: a short run, its line marked "tls":true, no errors.
      const bench = run(BENCH, [
        "--connect",
        connectString,
        "--workloads",
        "getData",
        "--connections",
        "3",
        "--inflight",
        "4",
        "--warmup-s",
        "0",
        "--duration-s",
        "1",
        "--keys",
        "10",
        ...clientTls,
      ]);
      assert.equal(await bench.exit, 0, bench.err());
      const line = JSON.parse(bench.out().trim()) as { workload: string; tls?: boolean; ops: number; errors: number };
      assert.deepEqual([line.workload, line.tls, line.errors], ["getData", true, 0]);
      assert.ok(line.ops > 0);
    } finally {
      cluster.child.kill("SIGINT");
      const code = await cluster.exit;
      await dir.remove();
      await pki.remove();
      assert.equal(code, 0, `corral cluster stopped uncleanly:\n${cluster.err()}`);
    }
  },
);
