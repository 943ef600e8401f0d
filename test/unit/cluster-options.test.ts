/**
 * `corral cluster` without processes: its flags, the port layout, and the cluster file it writes —
 * which every member must load, through the ordinary config loader, as itself.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { clusterServers, parseClusterOptions, writeClusterConfig } from "../../src/cli/cluster.js";
import { ConfigError, loadConfig, quorumMembers } from "../../src/server/config.js";

const dir = mkdtempSync(join(tmpdir(), "corral-cluster-opts-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("defaults: three voters on ZooKeeper's ports, data under ./data", () => {
  const options = parseClusterOptions({}, "/home/me/app");
  assert.equal(options.dataDir, "/home/me/app/data");
  assert.equal(options.tickMs, 2000);
  assert.deepEqual(
    clusterServers(options).map((s) => [s.id, s.host, s.clientPort, s.quorumPort, s.electionPort, s.role]),
    [
      [1, "127.0.0.1", 2181, 2888, 3888, "participant"],
      [2, "127.0.0.1", 2182, 2889, 3889, "participant"],
      [3, "127.0.0.1", 2183, 2890, 3890, "participant"],
    ],
  );
});

test("observers take the ids after the voters; every port range moves with --base-port", () => {
  const servers = clusterServers(parseClusterOptions({ voters: "3", observers: "2", "base-port": "30000" }));
  assert.deepEqual(servers.map((s) => s.role), ["participant", "participant", "participant", "observer", "observer"]);
  assert.deepEqual(servers.map((s) => s.clientPort), [30000, 30001, 30002, 30003, 30004]);
  assert.deepEqual(servers.map((s) => s.quorumPort), [30707, 30708, 30709, 30710, 30711]);
  assert.deepEqual(servers.map((s) => s.electionPort), [31707, 31708, 31709, 31710, 31711]);
  const explicit = clusterServers(parseClusterOptions({ voters: "1", "base-port": "5000", "quorum-base-port": "6000", "election-base-port": "7000" }));
  assert.deepEqual([explicit[0]!.quorumPort, explicit[0]!.electionPort], [6000, 7000]);
});

test("ZooKeeper-protocol ports sit 100 above the client ports unless --zk-base-port moves them; 0 turns them off", () => {
  assert.deepEqual(clusterServers(parseClusterOptions({ voters: "3" })).map((s) => s.zkClientPort), [2281, 2282, 2283]);
  assert.deepEqual(clusterServers(parseClusterOptions({ voters: "2", "zk-base-port": "9000" })).map((s) => s.zkClientPort), [9000, 9001]);
  assert.deepEqual(clusterServers(parseClusterOptions({ voters: "2", "zk-base-port": "0" })).map((s) => s.zkClientPort), [undefined, undefined]);
});

test("with certificate files every port is TLS: the ZooKeeper-protocol ports become secure ones, a plain one only on request", () => {
  const tls = { "tls-cert-file": "certs/server.pem", "tls-key-file": "certs/server.key", "tls-ca-file": "/etc/ca.pem" };
  const options = parseClusterOptions({ voters: "3", ...tls }, "/home/me");
  assert.deepEqual(options.tls, { certFile: "/home/me/certs/server.pem", keyFile: "/home/me/certs/server.key", caFile: "/etc/ca.pem", clientAuth: "need" });
  assert.deepEqual(clusterServers(options).map((s) => [s.zkClientPort, s.secureZkClientPort]), [[undefined, 2281], [undefined, 2282], [undefined, 2283]]);
  const both = clusterServers(parseClusterOptions({ voters: "2", ...tls, "zk-base-port": "9000", "secure-zk-base-port": "9100", "tls-client-auth": "want" }));
  assert.deepEqual(both.map((s) => [s.zkClientPort, s.secureZkClientPort]), [[9000, 9100], [9001, 9101]]);
  assert.equal(parseClusterOptions({ voters: "3" }).tls, undefined);
  assert.deepEqual(clusterServers(parseClusterOptions({ voters: "1" })).map((s) => s.secureZkClientPort), [undefined]);
});

const BAD: [Record<string, string>, string][] = [
  [{ "tls-cert-file": "s.pem", "tls-key-file": "s.key" }, "tls-ca-file"],
  [{ "tls-ca-file": "ca.pem" }, "tls-cert-file"],
  [{ "tls-client-auth": "need" }, "tls-client-auth"],
  [{ "secure-zk-base-port": "3000" }, "secure-zk-base-port"],
  [{ "tls-cert-file": "s.pem", "tls-key-file": "s.key", "tls-ca-file": "ca.pem", "tls-client-auth": "maybe" }, "tls-client-auth"],
  [{ "tls-cert-file": "s.pem", "tls-key-file": "s.key", "tls-ca-file": "ca.pem", "secure-zk-base-port": "2182" }, "secure-zk-base-port"],
  [{ "zk-base-port": "2182" }, "zk-base-port"],
  [{ "zk-base-port": "-1" }, "zk-base-port"],
  [{ voters: "0" }, "voters"],
  [{ voters: "three" }, "voters"],
  [{ observers: "-1" }, "observers"],
  [{ voters: "200", observers: "100" }, "observers"],
  [{ "base-port": "65535" }, "base-port"],
  [{ "base-port": "64000" }, "election-base-port"],
  [{ "quorum-base-port": "2182" }, "quorum-base-port"],
  [{ "base-port": "3000", "election-base-port": "3002" }, "election-base-port"],
  [{ "tick-ms": "0" }, "tick-ms"],
  [{ "data-dir": "" }, "data-dir"],
  [{ "client-port": "1" }, "client-port"],
];
for (const [flags, field] of BAD) {
  test(`corral cluster ${Object.entries(flags).map(([k, v]) => `--${k} ${JSON.stringify(v)}`).join(" ")} is refused naming ${field}`, () => {
    assert.throws(() => parseClusterOptions(flags), (error: unknown) => error instanceof ConfigError && error.field === field);
  });
}

test("the cluster file loads, for every member, as that member with its own data dir", () => {
  const options = parseClusterOptions({ voters: "3", observers: "1", "base-port": "40000", "data-dir": join(dir, "a"), "tick-ms": "250" });
  const { path, reused } = writeClusterConfig(options);
  assert.equal(reused, false);
  assert.equal(path, join(dir, "a", "cluster.json"));
  for (const id of [1, 2, 3, 4]) {
    const config = loadConfig({ file: path, flags: { "server-id": String(id) } });
    assert.equal(config.serverId, id);
    assert.equal(config.dataDir, join(dir, "a", String(id)));
    assert.equal(config.clientHost, "127.0.0.1");
    assert.equal(config.clientPort, 40000 + id - 1);
    assert.equal(config.tickMs, 250);
    assert.equal(config.servers.length, 4);
  }
  const members = quorumMembers(loadConfig({ file: path, flags: { "server-id": "1" } }));
  assert.deepEqual([members.voters.length, members.observers.length], [3, 1]);
});

test("a data dir holding another cluster's file is refused; the same cluster reuses it", () => {
  const dataDir = join(dir, "b");
  const first = parseClusterOptions({ voters: "3", "base-port": "41000", "data-dir": dataDir });
  writeClusterConfig(first);
  const before = readFileSync(join(dataDir, "cluster.json"), "utf8");
  assert.equal(writeClusterConfig({ ...first, tickMs: 100 }).reused, true);
  assert.throws(
    () => writeClusterConfig(parseClusterOptions({ voters: "5", "base-port": "41000", "data-dir": dataDir })),
    (error: unknown) => error instanceof ConfigError && error.field === "data-dir" && /another cluster/.test(error.message),
  );
  assert.notEqual(readFileSync(join(dataDir, "cluster.json"), "utf8"), before, "the same shape rewrote the tick");
  writeFileSync(join(dataDir, "cluster.json"), "{ not json");
  assert.throws(() => writeClusterConfig(first), (error: unknown) => error instanceof ConfigError && error.field === "data-dir");
});
