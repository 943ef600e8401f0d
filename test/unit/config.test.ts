/**
 * The server config: a table of valid sources and what they load to, a table of invalid ones and
 * the field each error names, and the cluster helpers (connect string, quorum members, the compact
 * CORRAL_SERVERS form).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import {
  clusterConnectString,
  clusterSecureZkConnectString,
  clusterZkConnectString,
  formatServers,
  parseServers,
  quorumMembers,
  thisServer,
  type ServerEntry,
} from "../../src/server/cluster-servers.js";
import { ConfigError } from "../../src/server/config-error.js";
import { clientTlsFiles, envName, loadConfig, quorumTlsFiles, type ConfigSources, type ServerConfig } from "../../src/server/config.js";

const dir = mkdtempSync(join(tmpdir(), "corral-config-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
/** A JSON config file holding `content` (an object is serialised, a string written as is). */
function file(content: unknown): string {
  const path = join(dir, `config-${files++}.json`);
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

const entry = (id: number, clientPort: number, role: ServerEntry["role"] = "participant", host = "127.0.0.1"): ServerEntry => ({
  id,
  host,
  clientPort,
  quorumPort: 2888 + id,
  electionPort: 3888 + id,
  role,
});
const THREE = [entry(1, 2181), entry(2, 2182), entry(3, 2183)];
const THREE_COMPACT = "1=127.0.0.1:2181:2889:3889:participant,2=127.0.0.1:2182:2890:3890:participant,3=127.0.0.1:2183:2891:3891:participant";
const DOCKER = "1=corral1:2181:2888:3888:participant,2=corral2:2181:2888:3888:participant,3=corral3:2181:2888:3888,4=corral4:2181:2888:3888:observer";

interface ValidCase {
  name: string;
  sources: () => ConfigSources;
  expect: Partial<ServerConfig>;
}

const VALID: ValidCase[] = [
  {
    name: "no source at all: standalone defaults",
    sources: () => ({}),
    expect: {
      serverId: 1,
      clientHost: "127.0.0.1",
      clientPort: 2181,
      servers: [],
      initLimitTicks: 10,
      syncLimitTicks: 5,
      tickMs: 2000,
      commitLogCount: 10_000,
    },
  },
  {
    name: "a shared JSON file and --server-id: this server's client address comes from its entry",
    sources: () => ({ file: file({ servers: THREE, tickMs: 500 }), flags: { "server-id": "2" } }),
    expect: { serverId: 2, clientHost: "127.0.0.1", clientPort: 2182, servers: THREE, tickMs: 500, minSessionTimeoutMs: 1000 },
  },
  {
    name: "JSON entries may leave role out (participant)",
    sources: () => ({ file: file({ serverId: 1, servers: [{ id: 1, host: "a", clientPort: 1, quorumPort: 2, electionPort: 3 }] }) }),
    expect: { clientHost: "a", clientPort: 1, servers: [{ id: 1, host: "a", clientPort: 1, quorumPort: 2, electionPort: 3, role: "participant" }] },
  },
  {
    name: "the servers field of a JSON file may use the compact form",
    sources: () => ({ file: file({ servers: THREE_COMPACT }), env: { CORRAL_SERVER_ID: "3" } }),
    expect: { serverId: 3, clientPort: 2183, servers: THREE },
  },
  {
    name: "container style: CORRAL_SERVERS + CORRAL_SERVER_ID + a bind address of 0.0.0.0",
    sources: () => ({ env: { CORRAL_SERVERS: DOCKER, CORRAL_SERVER_ID: "4", CORRAL_CLIENT_HOST: "0.0.0.0", CORRAL_DATA_DIR: "/data" } }),
    expect: {
      serverId: 4,
      clientHost: "0.0.0.0",
      clientPort: 2181,
      dataDir: "/data",
      servers: [
        { id: 1, host: "corral1", clientPort: 2181, quorumPort: 2888, electionPort: 3888, role: "participant" },
        { id: 2, host: "corral2", clientPort: 2181, quorumPort: 2888, electionPort: 3888, role: "participant" },
        { id: 3, host: "corral3", clientPort: 2181, quorumPort: 2888, electionPort: 3888, role: "participant" },
        { id: 4, host: "corral4", clientPort: 2181, quorumPort: 2888, electionPort: 3888, role: "observer" },
      ],
    },
  },
  {
    name: "compact form: whitespace, newlines, a trailing comma, a server. prefix and an IPv6 host",
    sources: () => ({ env: { CORRAL_SERVERS: " server.1=[::1]:2181:2888:3888 ,\n 2=[::1]:2182:2889:3889:observer,", CORRAL_SERVER_ID: "1" } }),
    expect: {
      clientHost: "::1",
      servers: [
        { id: 1, host: "::1", clientPort: 2181, quorumPort: 2888, electionPort: 3888, role: "participant" },
        { id: 2, host: "::1", clientPort: 2182, quorumPort: 2889, electionPort: 3889, role: "observer" },
      ],
    },
  },
  {
    name: "an explicit clientPort that agrees with the entry is fine",
    sources: () => ({ env: { CORRAL_SERVERS: THREE_COMPACT }, flags: { "server-id": "1", "client-port": "2181" } }),
    expect: { clientPort: 2181 },
  },
  {
    name: "CORRAL_SERVERS replaces the file's list, --servers replaces both",
    sources: () => ({
      file: file({ servers: THREE, serverId: 1 }),
      env: { CORRAL_SERVERS: "1=x:1:2:3" },
      flags: { servers: "1=y:4:5:6,2=z:4:5:6:observer" },
    }),
    expect: {
      clientHost: "y",
      clientPort: 4,
      servers: [
        { id: 1, host: "y", clientPort: 4, quorumPort: 5, electionPort: 6, role: "participant" },
        { id: 2, host: "z", clientPort: 4, quorumPort: 5, electionPort: 6, role: "observer" },
      ],
    },
  },
  {
    name: "an empty CORRAL_SERVERS turns a cluster file back into a standalone server",
    sources: () => ({ file: file({ servers: THREE }), env: { CORRAL_SERVERS: "" } }),
    expect: { servers: [], serverId: 1, clientPort: 2181 },
  },
  {
    name: '"{id}" in dataDir becomes the server id',
    sources: () => ({ file: file({ servers: THREE, dataDir: "/var/lib/corral/{id}" }), flags: { "server-id": "3" } }),
    expect: { dataDir: "/var/lib/corral/3" },
  },
  {
    name: "initLimitTicks and syncLimitTicks from env and flags",
    sources: () => ({ env: { CORRAL_INIT_LIMIT_TICKS: "20" }, flags: { "sync-limit-ticks": "2" } }),
    expect: { initLimitTicks: 20, syncLimitTicks: 2 },
  },
  {
    name: "commitLogCount defaults to the DIFF window's maximum and can be lowered",
    sources: () => ({ env: { CORRAL_COMMIT_LOG_COUNT: "500" } }),
    expect: { commitLogCount: 500 },
  },
  {
    name: "container cleanup defaults to ZooKeeper's once a minute, at most 10000 deletions a minute",
    sources: () => ({}),
    expect: { containerCheckIntervalMs: 60_000, containerMaxPerMinute: 10_000, ttlNodesEnabled: false },
  },
  {
    name: "container cleanup and TTL nodes from env and flags",
    sources: () => ({ env: { CORRAL_CONTAINER_CHECK_INTERVAL_MS: "250", CORRAL_TTL_NODES_ENABLED: "true" }, flags: { "container-max-per-minute": "60" } }),
    expect: { containerCheckIntervalMs: 250, containerMaxPerMinute: 60, ttlNodesEnabled: true },
  },
  {
    name: "no super user by default; superDigest from the file, CORRAL_SUPER_DIGEST overriding it",
    sources: () => ({ file: file({ superDigest: "super:D/InIHSb7yEEbrWz8b9l71RjZJU=" }), env: { CORRAL_SUPER_DIGEST: "root:D/InIHSb7yEEbrWz8b9l71RjZJU=" } }),
    expect: { superDigest: "root:D/InIHSb7yEEbrWz8b9l71RjZJU=" },
  },
  { name: "superDigest defaults to none", sources: () => ({}), expect: { superDigest: "" } },
];

for (const c of VALID) {
  test(`valid: ${c.name}`, () => {
    const config = loadConfig(c.sources());
    for (const [key, value] of Object.entries(c.expect)) {
      assert.deepEqual(config[key as keyof ServerConfig], value, key);
    }
  });
}

interface InvalidCase {
  name: string;
  sources: () => ConfigSources;
  field: string;
  /** Something else the message must say. */
  says?: RegExp;
}

const cluster = (servers: unknown, serverId = "1"): ConfigSources => ({ file: file({ servers }), flags: { "server-id": serverId } });

const INVALID: InvalidCase[] = [
  {
    name: "a duplicate id",
    sources: () => cluster([entry(1, 2181), entry(2, 2182), { ...entry(3, 2183), id: 2 }]),
    field: "servers[2].id",
    says: /duplicate id 2/,
  },
  { name: "id 0", sources: () => cluster([{ ...entry(1, 2181), id: 0 }]), field: "servers[0].id" },
  { name: "id 255", sources: () => cluster([entry(1, 2181), { ...entry(2, 2182), id: 255 }]), field: "servers[1].id" },
  { name: "an id that is not an integer", sources: () => ({ env: { CORRAL_SERVERS: "x=h:1:2:3", CORRAL_SERVER_ID: "1" } }), field: "servers[0].id" },
  { name: "client port 0", sources: () => cluster([{ ...entry(1, 2181), clientPort: 0 }]), field: "servers[0].clientPort" },
  { name: "quorum port above 65535", sources: () => cluster([entry(1, 2181), { ...entry(2, 2182), quorumPort: 70000 }]), field: "servers[1].quorumPort" },
  {
    name: "an election port that is not a number",
    sources: () => ({ env: { CORRAL_SERVERS: "1=h:1:2:three", CORRAL_SERVER_ID: "1" } }),
    field: "servers[0].electionPort",
  },
  {
    name: "two servers sharing host:port",
    sources: () => cluster([entry(1, 2181), { ...entry(2, 2182), quorumPort: 2889 }]),
    field: "servers[1].quorumPort",
    says: /127\.0\.0\.1:2889 is already servers\[0\]\.quorumPort/,
  },
  { name: "one server using one port twice", sources: () => cluster([{ ...entry(1, 2181), electionPort: 2181 }]), field: "servers[0].electionPort" },
  {
    name: "host names are compared without case",
    sources: () => cluster([entry(1, 2181, "participant", "Node-A"), { ...entry(2, 2181, "participant", "node-a") }]),
    field: "servers[1].clientPort",
  },
  { name: "an empty host", sources: () => cluster([entry(1, 2181), { ...entry(2, 2182), host: " " }]), field: "servers[1].host" },
  { name: "a host with a space", sources: () => cluster([{ ...entry(1, 2181), host: "a b" }]), field: "servers[0].host" },
  { name: "a bracketed IPv6 host in JSON", sources: () => cluster([{ ...entry(1, 2181), host: "[::1]" }]), field: "servers[0].host" },
  { name: "an unknown role", sources: () => cluster([{ ...entry(1, 2181), role: "leader" }]), field: "servers[0].role" },
  {
    name: "an unknown role in the compact form",
    sources: () => ({ env: { CORRAL_SERVERS: "1=h:1:2:3:voter", CORRAL_SERVER_ID: "1" } }),
    field: "servers[0].role",
  },
  { name: "only observers", sources: () => cluster([entry(1, 2181, "observer"), entry(2, 2182, "observer")]), field: "servers", says: /participant/ },
  { name: "serverId not in the list", sources: () => cluster(THREE, "4"), field: "serverId", says: /4 is not in servers/ },
  { name: "a cluster without an explicit serverId", sources: () => ({ file: file({ servers: THREE }) }), field: "serverId", says: /must be set/ },
  {
    name: "a clientPort that contradicts the entry",
    sources: () => ({ ...cluster(THREE, "1"), env: { CORRAL_CLIENT_PORT: "9999" } }),
    field: "clientPort",
    says: /2181/,
  },
  { name: "an unknown field in an entry", sources: () => cluster([{ ...entry(1, 2181), weight: 1 }]), field: "servers[0].weight", says: /unknown field/ },
  {
    name: "a missing port in an entry",
    sources: () => cluster([{ id: 1, host: "h", clientPort: 1, quorumPort: 2 }]),
    field: "servers[0].electionPort",
    says: /missing/,
  },
  { name: "an entry that is not an object", sources: () => cluster([entry(1, 2181), "2=h:1:2:3"]), field: "servers[1]" },
  {
    name: "a compact entry with too few ports",
    sources: () => ({ env: { CORRAL_SERVERS: "1=h:1:2:3,2=h:2181:2888", CORRAL_SERVER_ID: "1" } }),
    field: "servers[1]",
  },
  { name: "servers neither a list nor a string", sources: () => cluster(3), field: "servers" },
  { name: "initLimitTicks 0", sources: () => ({ file: file({ initLimitTicks: 0 }) }), field: "initLimitTicks" },
  { name: "commitLogCount 0", sources: () => ({ file: file({ commitLogCount: 0 }) }), field: "commitLogCount" },
  { name: "commitLogCount above the maximum window", sources: () => ({ flags: { "commit-log-count": "10001" } }), field: "commitLogCount" },
  { name: "containerCheckIntervalMs below 10", sources: () => ({ file: file({ containerCheckIntervalMs: 5 }) }), field: "containerCheckIntervalMs" },
  { name: "containerMaxPerMinute 0", sources: () => ({ env: { CORRAL_CONTAINER_MAX_PER_MINUTE: "0" } }), field: "containerMaxPerMinute" },
  {
    name: "a superDigest that is a password, not a digest",
    sources: () => ({ env: { CORRAL_SUPER_DIGEST: "super:test" } }),
    field: "superDigest",
    says: /base64/,
  },
  { name: "a superDigest without its user", sources: () => ({ flags: { "super-digest": "D/InIHSb7yEEbrWz8b9l71RjZJU=" } }), field: "superDigest" },
  { name: "syncLimitTicks not a number", sources: () => ({ env: { CORRAL_SYNC_LIMIT_TICKS: "soon" } }), field: "syncLimitTicks" },
  { name: "an unknown top-level field still fails", sources: () => ({ file: file({ server: [] }) }), field: "server", says: /unknown field/ },
  { name: "tickMs 0 still fails", sources: () => ({ flags: { "tick-ms": "0" } }), field: "tickMs" },
  { name: "a file that is not JSON", sources: () => ({ file: file("servers: []") }), field: "config" },
];

for (const c of INVALID) {
  test(`invalid: ${c.name} → names ${c.field}`, () => {
    assert.throws(
      () => loadConfig(c.sources()),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError, `a ConfigError, got ${String(error)}`);
        assert.equal(error.field, c.field, error.message);
        assert.ok(error.message.includes(`${c.field}:`), error.message);
        if (c.says) assert.match(error.message, c.says);
        return true;
      },
    );
  });
}

test("every field has its CORRAL_ variable; the list is CORRAL_SERVERS", () => {
  assert.equal(envName("servers"), "CORRAL_SERVERS");
  assert.equal(envName("serverId"), "CORRAL_SERVER_ID");
  assert.equal(envName("initLimitTicks"), "CORRAL_INIT_LIMIT_TICKS");
  assert.equal(envName("syncLimitTicks"), "CORRAL_SYNC_LIMIT_TICKS");
});

test("the compact form round-trips through formatServers and parseServers", () => {
  const servers: ServerEntry[] = [entry(1, 2181), entry(2, 2182, "observer", "fe80::1"), entry(7, 2187, "participant", "zk7.example")];
  const text = formatServers(servers);
  assert.equal(text, "1=127.0.0.1:2181:2889:3889:participant,2=[fe80::1]:2182:2890:3890:observer,7=zk7.example:2187:2895:3895:participant");
  assert.deepEqual(parseServers(text), servers);
});

test("clusterConnectString lists every server, observers included, in list order", () => {
  const config = loadConfig({ env: { CORRAL_SERVERS: DOCKER, CORRAL_SERVER_ID: "1" } });
  assert.equal(clusterConnectString(config), "corral1:2181,corral2:2181,corral3:2181,corral4:2181");
  const v6 = loadConfig({ env: { CORRAL_SERVERS: "1=[::1]:2181:2888:3888", CORRAL_SERVER_ID: "1" } });
  assert.equal(clusterConnectString(v6), "[::1]:2181");
  assert.equal(clusterConnectString(loadConfig({ flags: { "client-port": "3000" } })), "127.0.0.1:3000");
});

test("the ZooKeeper-protocol port: off by default, per server entry in a cluster, in both list forms", () => {
  const standalone = loadConfig({});
  assert.equal(standalone.zkClientPort, -1);
  assert.equal(standalone.fourLetterWordWhitelist, "srvr");
  assert.equal(clusterZkConnectString(standalone), undefined);
  assert.equal(clusterZkConnectString(loadConfig({ flags: { "zk-client-port": "3100" } })), "127.0.0.1:3100");

  const compact = "1=127.0.0.1:2181:2888:3888:participant:2281,2=127.0.0.1:2182:2889:3889,3=127.0.0.1:2183:2890:3890:observer:2283";
  const servers = parseServers(compact);
  assert.deepEqual(
    servers.map((s) => s.zkClientPort),
    [2281, undefined, 2283],
  );
  assert.equal(
    formatServers(servers),
    "1=127.0.0.1:2181:2888:3888:participant:2281,2=127.0.0.1:2182:2889:3889:participant,3=127.0.0.1:2183:2890:3890:observer:2283",
  );
  assert.equal(loadConfig({ env: { CORRAL_SERVERS: compact, CORRAL_SERVER_ID: "1" } }).zkClientPort, 2281);
  assert.equal(loadConfig({ env: { CORRAL_SERVERS: compact, CORRAL_SERVER_ID: "2" } }).zkClientPort, -1);
  assert.equal(clusterZkConnectString(loadConfig({ env: { CORRAL_SERVERS: compact, CORRAL_SERVER_ID: "2" } })), "127.0.0.1:2281,127.0.0.1:2283");

  const json = file({ servers: [{ ...entry(1, 2181), zkClientPort: 2281 }, entry(2, 2182)] });
  assert.equal(loadConfig({ file: json, flags: { "server-id": "1" } }).zkClientPort, 2281);
  // Disagreeing with the entry, clashing with another port, or out of range: refused, naming the field.
  assert.throws(
    () => loadConfig({ file: json, flags: { "server-id": "1", "zk-client-port": "2999" } }),
    (e: unknown) => e instanceof ConfigError && e.field === "zkClientPort",
  );
  const clash = file({ servers: [{ ...entry(1, 2181), zkClientPort: 2181 }] });
  assert.throws(
    () => loadConfig({ file: clash, flags: { "server-id": "1" } }),
    (e: unknown) => e instanceof ConfigError && e.field === "servers[0].zkClientPort",
  );
  assert.throws(
    () => loadConfig({ flags: { "zk-client-port": "70000" } }),
    (e: unknown) => e instanceof ConfigError && e.field === "zkClientPort",
  );
});

test("TLS: off by default; ZooKeeper's secureClientPort per server entry, in both list forms", () => {
  const standalone = loadConfig({});
  assert.equal(standalone.secureZkClientPort, -1);
  assert.equal(standalone.clientPortTls, false);
  assert.equal(standalone.sslQuorum, false);
  assert.equal(standalone.tlsClientAuth, "need", "ZooKeeper's ssl.clientAuth default");
  assert.equal(clientTlsFiles(standalone), undefined);
  assert.equal(quorumTlsFiles(standalone), undefined);

  const compact = "1=127.0.0.1:2181:2888:3888:participant:2281:2381,2=127.0.0.1:2182:2889:3889:participant::2382,3=127.0.0.1:2183:2890:3890";
  const servers = parseServers(compact);
  assert.deepEqual(
    servers.map((s) => [s.zkClientPort, s.secureZkClientPort]),
    [
      [2281, 2381],
      [undefined, 2382],
      [undefined, undefined],
    ],
  );
  assert.equal(
    formatServers(servers),
    "1=127.0.0.1:2181:2888:3888:participant:2281:2381,2=127.0.0.1:2182:2889:3889:participant::2382,3=127.0.0.1:2183:2890:3890:participant",
  );
  const tlsFlags = { "tls-cert-file": "s.pem", "tls-key-file": "s.key", "tls-ca-file": "ca.pem" };
  const two = loadConfig({ env: { CORRAL_SERVERS: compact, CORRAL_SERVER_ID: "2" }, flags: tlsFlags });
  assert.deepEqual([two.zkClientPort, two.secureZkClientPort], [-1, 2382]);
  assert.equal(clusterSecureZkConnectString(two), "127.0.0.1:2381,127.0.0.1:2382");
  assert.deepEqual(clientTlsFiles(two), { certFile: "s.pem", keyFile: "s.key", caFile: "ca.pem" });
  const json = file({ servers: [{ ...entry(1, 2181), secureZkClientPort: 2381 }, entry(2, 2182)] });
  assert.equal(loadConfig({ file: json, flags: { "server-id": "1", ...tlsFlags } }).secureZkClientPort, 2381);
  assert.throws(
    () => loadConfig({ file: json, flags: { "server-id": "1", "secure-zk-client-port": "2999", ...tlsFlags } }),
    (e: unknown) => e instanceof ConfigError && e.field === "secureZkClientPort",
  );
  const clash = file({ servers: [{ ...entry(1, 2181), zkClientPort: 2281, secureZkClientPort: 2281 }] });
  assert.throws(
    () => loadConfig({ file: clash, flags: { "server-id": "1", ...tlsFlags } }),
    (e: unknown) => e instanceof ConfigError && e.field === "servers[0].secureZkClientPort",
  );
});

test("TLS: the files each TLS port needs, the quorum's falling back to the client ports'", () => {
  const isField = (field: string) => (e: unknown) => e instanceof ConfigError && e.field === field;
  assert.throws(() => loadConfig({ flags: { "client-port-tls": "true" } }), isField("tlsCertFile"));
  assert.throws(() => loadConfig({ flags: { "secure-zk-client-port": "0", "tls-cert-file": "s.pem" } }), isField("tlsKeyFile"));
  assert.throws(() => loadConfig({ flags: { "client-port-tls": "true", "tls-cert-file": "s.pem", "tls-key-file": "s.key" } }), isField("tlsCaFile"));
  const noClientAuth = loadConfig({ flags: { "client-port-tls": "true", "tls-cert-file": "s.pem", "tls-key-file": "s.key", "tls-client-auth": "none" } });
  assert.deepEqual(clientTlsFiles(noClientAuth), { certFile: "s.pem", keyFile: "s.key", caFile: "" });
  assert.throws(() => loadConfig({ flags: { "tls-client-auth": "maybe" } }), isField("tlsClientAuth"));
  assert.throws(() => loadConfig({ flags: { "tls-reload-interval-ms": "0" } }), isField("tlsReloadIntervalMs"));
  assert.throws(() => loadConfig({ flags: { "ssl-quorum": "true" } }), isField("quorumTlsCertFile"));
  const quorum = loadConfig({
    flags: { "ssl-quorum": "true", "tls-cert-file": "s.pem", "tls-key-file": "s.key", "tls-ca-file": "ca.pem", "quorum-tls-ca-file": "peers.pem" },
  });
  assert.deepEqual(quorumTlsFiles(quorum), { certFile: "s.pem", keyFile: "s.key", caFile: "peers.pem" });
  assert.equal(quorum.sslQuorumHostnameVerification, true);
  assert.equal(loadConfig({ env: { CORRAL_X509_SUPER_USER: "CN=admin,O=Example\\, Inc." } }).x509SuperUser, "CN=admin,O=Example\\, Inc.");
  assert.throws(() => loadConfig({ flags: { "x509-super-user": "admin" } }), isField("x509SuperUser"));
});

test("quorumMembers splits voters from observers, in id order; standalone has none", () => {
  const config = loadConfig({ env: { CORRAL_SERVERS: "3=c:1:2:3,1=a:1:2:3:observer,2=b:1:2:3", CORRAL_SERVER_ID: "2" } });
  const { voters, observers } = quorumMembers(config);
  assert.deepEqual(
    voters.map((s) => s.id),
    [2, 3],
  );
  assert.deepEqual(
    observers.map((s) => s.id),
    [1],
  );
  assert.equal(thisServer(config)?.host, "b");
  assert.deepEqual(quorumMembers(loadConfig({})), { voters: [], observers: [] });
  assert.equal(thisServer(loadConfig({})), undefined);
});

test("metrics and admin ports: off by default on loopback, set per server or per entry in a cluster's JSON list", () => {
  const standalone = loadConfig({});
  assert.deepEqual([standalone.metricsPort, standalone.metricsHost, standalone.adminPort, standalone.adminHost], [-1, "127.0.0.1", -1, "127.0.0.1"]);
  const set = loadConfig({
    env: { CORRAL_METRICS_PORT: "7000", CORRAL_ADMIN_PORT: "8080", CORRAL_ADMIN_HOST: "0.0.0.0" },
    flags: { "metrics-host": "0.0.0.0" },
  });
  assert.deepEqual([set.metricsPort, set.metricsHost, set.adminPort, set.adminHost], [7000, "0.0.0.0", 8080, "0.0.0.0"]);
  assert.equal(loadConfig({ flags: { "metrics-port": "0", "admin-port": "0" } }).adminPort, 0, "0 = any free port");

  // A one-host cluster's file gives each member its own ports; another member's entry is not ours.
  const json = file({
    servers: [
      { ...entry(1, 2181), metricsPort: 7000, adminPort: 8080 },
      { ...entry(2, 2182), metricsPort: 7001 },
    ],
  });
  const first = loadConfig({ file: json, flags: { "server-id": "1" } });
  assert.deepEqual([first.metricsPort, first.adminPort], [7000, 8080]);
  const second = loadConfig({ file: json, flags: { "server-id": "2" } });
  assert.deepEqual([second.metricsPort, second.adminPort], [7001, -1]);
  // An entry without them leaves the server's own setting alone (compose: CORRAL_METRICS_PORT in each container).
  assert.equal(loadConfig({ env: { CORRAL_SERVERS: THREE_COMPACT, CORRAL_SERVER_ID: "2", CORRAL_METRICS_PORT: "7000" } }).metricsPort, 7000);
  assert.equal(loadConfig({ file: json, flags: { "server-id": "2", "admin-port": "8081" } }).adminPort, 8081);
});

const HTTP_PORT_ERRORS: [string, () => ConfigSources, string][] = [
  ["out of range", () => ({ flags: { "metrics-port": "-2" } }), "metricsPort"],
  ["out of range", () => ({ flags: { "admin-port": "65536" } }), "adminPort"],
  ["an empty bind address", () => ({ flags: { "admin-host": " " } }), "adminHost"],
  ["the client port again", () => ({ flags: { "client-port": "2181", "metrics-port": "2181" } }), "metricsPort"],
  ["the metrics port again on a wildcard address", () => ({ flags: { "metrics-port": "7000", "admin-port": "7000", "admin-host": "0.0.0.0" } }), "adminPort"],
  [
    "another member's port on the same host",
    () => ({
      file: file({
        servers: [
          { ...entry(1, 2181), metricsPort: 7000 },
          { ...entry(2, 2182), adminPort: 7000 },
        ],
      }),
      flags: { "server-id": "1" },
    }),
    "servers[1].adminPort",
  ],
  [
    "a different port than its entry's",
    () => ({ file: file({ servers: [{ ...entry(1, 2181), metricsPort: 7000 }] }), flags: { "server-id": "1", "metrics-port": "7001" } }),
    "metricsPort",
  ],
];

for (const [what, sources, field] of HTTP_PORT_ERRORS) {
  test(`metrics and admin ports: ${what} is refused, naming ${field}`, () => {
    assert.throws(
      () => loadConfig(sources()),
      (e: unknown) => e instanceof ConfigError && e.field === field,
    );
  });
}

test("metrics and admin ports on different bind addresses may share a number", () => {
  const config = loadConfig({ flags: { "metrics-port": "7000", "metrics-host": "127.0.0.1", "admin-port": "7000", "admin-host": "127.0.0.2" } });
  assert.deepEqual([config.metricsPort, config.adminPort], [7000, 7000]);
});
