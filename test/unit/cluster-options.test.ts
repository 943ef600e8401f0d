/**
 * `corral cluster` without processes: its flags, the port layout, and the cluster file it writes —
 * which every member must load, through the ordinary config loader, as itself — with the settings
 * a base config, CORRAL_* variables and flags give every member, and the fields it keeps its own.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { CLUSTER_FLAGS, MEMBER_FIELDS, SHARED_FIELDS, clusterServers, parseClusterOptions, writeClusterConfig } from "../../src/cli/cluster.js";
import { quorumMembers } from "../../src/server/cluster-servers.js";
import { ConfigError } from "../../src/server/config-error.js";
import { FIELDS, envName, flagName, loadConfig } from "../../src/server/config.js";

const dir = mkdtempSync(join(tmpdir(), "corral-cluster-opts-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("defaults: three voters on ZooKeeper's ports, data under ./data", () => {
  const options = parseClusterOptions({}, { cwd: "/home/me/app" });
  assert.equal(options.dataDir, "/home/me/app/data");
  assert.deepEqual(options.shared, {});
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
  assert.deepEqual(
    servers.map((s) => s.role),
    ["participant", "participant", "participant", "observer", "observer"],
  );
  assert.deepEqual(
    servers.map((s) => s.clientPort),
    [30000, 30001, 30002, 30003, 30004],
  );
  assert.deepEqual(
    servers.map((s) => s.quorumPort),
    [30707, 30708, 30709, 30710, 30711],
  );
  assert.deepEqual(
    servers.map((s) => s.electionPort),
    [31707, 31708, 31709, 31710, 31711],
  );
  const explicit = clusterServers(parseClusterOptions({ voters: "1", "base-port": "5000", "quorum-base-port": "6000", "election-base-port": "7000" }));
  assert.deepEqual([explicit[0]!.quorumPort, explicit[0]!.electionPort], [6000, 7000]);
});

test("ZooKeeper-protocol ports sit 100 above the client ports unless --zk-base-port moves them; 0 turns them off", () => {
  assert.deepEqual(
    clusterServers(parseClusterOptions({ voters: "3" })).map((s) => s.zkClientPort),
    [2281, 2282, 2283],
  );
  assert.deepEqual(
    clusterServers(parseClusterOptions({ voters: "2", "zk-base-port": "9000" })).map((s) => s.zkClientPort),
    [9000, 9001],
  );
  assert.deepEqual(
    clusterServers(parseClusterOptions({ voters: "2", "zk-base-port": "0" })).map((s) => s.zkClientPort),
    [undefined, undefined],
  );
});

test("with certificate files every port is TLS: the ZooKeeper-protocol ports become secure ones, a plain one only on request", () => {
  const tls = { "tls-cert-file": "certs/server.pem", "tls-key-file": "certs/server.key", "tls-ca-file": "/etc/ca.pem" };
  const options = parseClusterOptions({ voters: "3", ...tls }, { cwd: "/home/me" });
  assert.deepEqual(options.tls, { certFile: "/home/me/certs/server.pem", keyFile: "/home/me/certs/server.key", caFile: "/etc/ca.pem", clientAuth: "need" });
  assert.deepEqual(
    clusterServers(options).map((s) => [s.zkClientPort, s.secureZkClientPort]),
    [
      [undefined, 2281],
      [undefined, 2282],
      [undefined, 2283],
    ],
  );
  const both = clusterServers(parseClusterOptions({ voters: "2", ...tls, "zk-base-port": "9000", "secure-zk-base-port": "9100", "tls-client-auth": "want" }));
  assert.deepEqual(
    both.map((s) => [s.zkClientPort, s.secureZkClientPort]),
    [
      [9000, 9100],
      [9001, 9101],
    ],
  );
  assert.equal(parseClusterOptions({ voters: "3" }).tls, undefined);
  assert.deepEqual(
    clusterServers(parseClusterOptions({ voters: "1" })).map((s) => s.secureZkClientPort),
    [undefined],
  );
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
  [{ "tick-ms": "0" }, "tickMs"],
  [{ "data-dir": "" }, "data-dir"],
  [{ "client-port": "1" }, "clientPort"],
  [{ "server-id": "1" }, "serverId"],
  [{ servers: "" }, "servers"],
  [{ "client-host": "0.0.0.0" }, "clientHost"],
  [{ "zk-client-port": "2999" }, "zkClientPort"],
  [{ bogus: "1" }, "bogus"],
  [{ "super-digest": "super:short" }, "superDigest"],
  [{ "ttl-nodes-enabled": "yes" }, "ttlNodesEnabled"],
  [{ "min-session-timeout-ms": "5000", "max-session-timeout-ms": "4000" }, "minSessionTimeoutMs"],
];
for (const [flags, field] of BAD) {
  test(`corral cluster ${Object.entries(flags)
    .map(([k, v]) => `--${k} ${JSON.stringify(v)}`)
    .join(" ")} is refused naming ${field}`, () => {
    assert.throws(
      () => parseClusterOptions(flags),
      (error: unknown) => error instanceof ConfigError && error.field === field,
    );
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
  assert.equal(writeClusterConfig({ ...first, shared: { tickMs: 100 } }).reused, true);
  assert.throws(
    () => writeClusterConfig(parseClusterOptions({ voters: "5", "base-port": "41000", "data-dir": dataDir })),
    (error: unknown) => error instanceof ConfigError && error.field === "data-dir" && /another cluster/.test(error.message),
  );
  assert.notEqual(readFileSync(join(dataDir, "cluster.json"), "utf8"), before, "the same shape rewrote the tick");
  // A changed base config, environment or flag is not another membership.
  const base = join(dir, "b-base.json");
  writeFileSync(base, JSON.stringify({ ttlNodesEnabled: true, enforceQuota: true }));
  const changed = parseClusterOptions(
    { voters: "3", "base-port": "41000", "data-dir": dataDir, "tick-ms": "300" },
    { file: base, env: { CORRAL_SUPER_DIGEST: SUPER } },
  );
  assert.equal(writeClusterConfig(changed).reused, true);
  const written = loadConfig({ file: join(dataDir, "cluster.json"), flags: { "server-id": "2" } });
  assert.deepEqual([written.ttlNodesEnabled, written.enforceQuota, written.superDigest, written.tickMs], [true, true, SUPER, 300]);
  // Neither is a different ZooKeeper-protocol port: it is not part of the membership.
  assert.equal(writeClusterConfig(parseClusterOptions({ voters: "3", "base-port": "41000", "data-dir": dataDir, "zk-base-port": "0" })).reused, true);
  writeFileSync(join(dataDir, "cluster.json"), "{ not json");
  assert.throws(
    () => writeClusterConfig(first),
    (error: unknown) => error instanceof ConfigError && error.field === "data-dir",
  );
});

const SUPER = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";

test("a base config, CORRAL_* variables and flags reach every member's config; flags beat the environment, which beats the file", () => {
  const base = join(dir, "base.json");
  writeFileSync(
    base,
    JSON.stringify({
      ttlNodesEnabled: true,
      enforceQuota: true,
      tickMs: 100,
      fourLetterWordWhitelist: "ruok",
      superDigest: "other:D/InIHSb7yEEbrWz8b9l71RjZJU=",
    }),
  );
  const env = { CORRAL_SUPER_DIGEST: SUPER, CORRAL_TICK_MS: "150", CORRAL_CONTAINER_CHECK_INTERVAL_MS: "500", CORRAL_LOG_LEVEL: "warn", UNRELATED: "x" };
  const options = parseClusterOptions(
    { voters: "2", observers: "1", "base-port": "42000", "data-dir": join(dir, "c"), "tick-ms": "200", "commit-log-count": "50" },
    { file: base, env },
  );
  const { path } = writeClusterConfig(options);
  for (const id of [1, 2, 3]) {
    const config = loadConfig({ file: path, flags: { "server-id": String(id) } });
    assert.equal(config.ttlNodesEnabled, true);
    assert.equal(config.enforceQuota, true);
    assert.equal(config.fourLetterWordWhitelist, "ruok", "the base config beats the launcher's every-word default");
    assert.equal(config.superDigest, SUPER, "the environment beats the base config");
    assert.equal(config.containerCheckIntervalMs, 500);
    assert.equal(config.logLevel, "warn");
    assert.equal(config.tickMs, 200, "a flag beats the environment");
    assert.equal(config.commitLogCount, 50);
    assert.equal(config.clientPort, 42000 + id - 1, "the membership stays the launcher's");
    assert.equal(config.dataDir, join(dir, "c", String(id)));
  }
  // Without any of them: the launcher's defaults (every four-letter word corral answers).
  const plain = loadConfig({
    file: writeClusterConfig(parseClusterOptions({ voters: "1", "base-port": "42100", "data-dir": join(dir, "d") })).path,
    flags: { "server-id": "1" },
  });
  assert.match(plain.fourLetterWordWhitelist, /^ruok,srvr,.*mntr/);
  assert.deepEqual([plain.ttlNodesEnabled, plain.enforceQuota, plain.superDigest, plain.tickMs], [false, false, "", 2000]);
});

test("every field but the membership can be shared; the membership is refused from the base config, the environment and a flag, naming field and source", () => {
  assert.deepEqual(
    Object.keys(FIELDS).filter((field) => !(SHARED_FIELDS as string[]).includes(field)),
    ["serverId", "dataDir", "clientHost", "clientPort", "zkClientPort", "servers", "metricsPort", "adminPort", "secureZkClientPort"],
  );
  const base = join(dir, "member-base.json");
  const dataDir = join(dir, "refused");
  const values: Record<string, unknown> = {
    serverId: 2,
    dataDir: "/tmp/x",
    clientHost: "0.0.0.0",
    clientPort: 3000,
    zkClientPort: 3100,
    metricsPort: 3200,
    adminPort: 3300,
    secureZkClientPort: 3400,
    servers: [],
  };
  for (const field of MEMBER_FIELDS) {
    const raw = values[field];
    writeFileSync(base, JSON.stringify({ ttlNodesEnabled: true, [field]: raw }));
    const text = Array.isArray(raw) ? "" : String(raw);
    const cases: [{ file?: string; env?: Record<string, string> }, Record<string, string>, string][] = [
      [{ file: base }, {}, base],
      [{ env: { [envName(field)]: text } }, {}, envName(field)],
    ];
    // --data-dir is the launcher's own flag (the parent of every member's data dir).
    if (!Object.hasOwn(CLUSTER_FLAGS, flagName(field))) cases.push([{}, { [flagName(field)]: text }, `--${flagName(field)}`]);
    for (const [sources, flags, source] of cases) {
      assert.throws(
        () => parseClusterOptions({ "data-dir": dataDir, ...flags }, sources),
        (error: unknown) => error instanceof ConfigError && error.field === field && error.message.includes(`set by ${source}`),
        `${field} from ${source}`,
      );
    }
  }
  assert.throws(() => readFileSync(join(dataDir, "cluster.json")), /ENOENT/, "nothing written");
});

test("a base config that is not a config object, or has an unknown or invalid field, is refused naming it", () => {
  const base = join(dir, "bad-base.json");
  for (const [content, field] of [
    ["{ not json", "config"],
    ["[]", "config"],
    [JSON.stringify({ ttlNodes: true }), "ttlNodes"],
    [JSON.stringify({ snapshotEveryTxns: 0 }), "snapshotEveryTxns"],
    [JSON.stringify({ logLevel: "loud" }), "logLevel"],
  ] as const) {
    writeFileSync(base, content);
    assert.throws(
      () => parseClusterOptions({}, { file: base }),
      (error: unknown) => error instanceof ConfigError && error.field === field,
      content,
    );
  }
  assert.throws(
    () => parseClusterOptions({}, { file: join(dir, "missing.json") }),
    (error: unknown) => error instanceof ConfigError && error.field === "config",
  );
  assert.throws(
    () => parseClusterOptions({}, { env: { CORRAL_ENFORCE_QUOTA: "maybe" } }),
    (error: unknown) => error instanceof ConfigError && error.field === "enforceQuota",
  );
});

test("metrics and admin ports sit at ZooKeeper's 7000 and 8080 for the default base, move with --base-port, 0 turns them off", () => {
  const servers = clusterServers(parseClusterOptions({ voters: "3" }));
  assert.deepEqual(
    servers.map((s) => [s.metricsPort, s.adminPort]),
    [
      [7000, 8080],
      [7001, 8081],
      [7002, 8082],
    ],
  );
  const moved = clusterServers(parseClusterOptions({ voters: "2", "base-port": "3181" }));
  assert.deepEqual(
    moved.map((s) => [s.metricsPort, s.adminPort]),
    [
      [8000, 9080],
      [8001, 9081],
    ],
  );
  const explicit = clusterServers(parseClusterOptions({ voters: "2", "metrics-base-port": "9100", "admin-base-port": "0" }));
  assert.deepEqual(
    explicit.map((s) => [s.metricsPort, s.adminPort]),
    [
      [9100, undefined],
      [9101, undefined],
    ],
  );
  // Past 65535 the derived defaults are none, not an error: a high --base-port still works.
  const high = clusterServers(parseClusterOptions({ voters: "3", "base-port": "61000", "quorum-base-port": "50000", "election-base-port": "51000" }));
  assert.deepEqual(
    high.map((s) => [s.metricsPort, s.adminPort]),
    [
      [undefined, undefined],
      [undefined, undefined],
      [undefined, undefined],
    ],
  );
  assert.throws(
    () => parseClusterOptions({ voters: "3", "metrics-base-port": "2182" }),
    (e: unknown) => e instanceof ConfigError && e.field === "metrics-base-port",
  );
  assert.throws(
    () => parseClusterOptions({ voters: "3", "admin-base-port": "7001" }),
    (e: unknown) => e instanceof ConfigError && e.field === "admin-base-port",
  );
});

test("every member of the written cluster file loads its own metrics and admin ports", () => {
  const options = parseClusterOptions({ voters: "2", observers: "1", "data-dir": join(dir, "http-ports") });
  const { path } = writeClusterConfig(options);
  for (const id of [1, 2, 3]) {
    const config = loadConfig({ file: path, flags: { "server-id": String(id) } });
    assert.deepEqual([config.metricsPort, config.adminPort], [7000 + id - 1, 8080 + id - 1]);
  }
});
