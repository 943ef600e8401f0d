/**
 * The metrics and admin HTTP ports on real server processes (random free ports, 127.0.0.1):
 * /metrics parsed by a real Prometheus text-format parser, with figures that move when the test
 * writes; every admin command that has a four-letter word checked against that word's figures on
 * the same server; /healthz and /readyz, and /readyz following a member's quorum away and back.
 */
import { hex64 } from "../../src/common/hex.js";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { Client } from "../../src/index.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { fourLetterWord } from "../helpers/four-letter-word.js";
import { Nzk, zookeeper } from "../helpers/nzk.js";
import { adminCommand, adminGet, Scrape } from "../helpers/prometheus.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

// ---- reading the four-letter words' text -------------------------------------------------------

/** mntr's "zk_key\tvalue" lines. */
function mntrFigures(text: string): Map<string, string> {
  return new Map(
    text
      .trim()
      .split("\n")
      .map((line) => {
        const [key, value] = line.split("\t") as [string, string];
        return [key.replace(/^zk_/, ""), value];
      }),
  );
}

/** srvr's and stat's "Key: value" lines (after the Clients section, when there is one). */
function statFigures(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^([A-Za-z][A-Za-z /]*): (.*)$/gm)].map((m) => [m[1]!, m[2]!]));
}

/** conf's and envi's "key=value" lines. */
function keyValues(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^([^=\n]+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
}

/** One line of cons (or of stat's Clients section): the address and its (k=v,...) fields. */
function connectionLines(text: string): { address: string; fields: Map<string, string> }[] {
  return [...text.matchAll(/^ \/(\S+?)\[[0-9a-f]+\]\((.*)\)$/gm)].map((m) => ({
    address: m[1]!,
    fields: new Map(m[2]!.split(",").map((kv) => kv.split("=") as [string, string])),
  }));
}

/**
 * Reads a four-letter word, runs `read` (the admin command), and reads the word again, until both
 * readings of the word agree: then nothing moved in between (a client's ping, say) and the admin
 * answer must show the same figures.
 */
async function steady<T>(port: number, word: string, read: () => Promise<T>, volatile: RegExp = /^$/): Promise<{ text: string; answer: T }> {
  const normal = (text: string) =>
    text
      .split("\n")
      .filter((line) => !volatile.test(line))
      .join("\n");
  for (let attempt = 0; attempt < 20; attempt++) {
    const before = await fourLetterWord(port, word);
    const answer = await read();
    const after = await fourLetterWord(port, word);
    if (normal(before) === normal(after)) return { text: before, answer };
  }
  throw new Error(`${word} never held still`);
}

async function rawAdmin(adminUrl: string, name: string): Promise<{ json: Record<string, unknown>; raw: string }> {
  const raw = await (await fetch(`${adminUrl}/commands/${name}`)).text();
  return { json: JSON.parse(raw) as Record<string, unknown>, raw };
}

const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

/** `corral health` with these arguments and environment: its exit code and output. */
function health(args: string[], env: Record<string, string> = {}): { status: number | null; out: string } {
  const run = spawnSync(process.execPath, [CLI, "health", ...args], { encoding: "utf8", env: { PATH: process.env["PATH"] ?? "", ...env }, timeout: 30_000 });
  return { status: run.status, out: run.stdout + run.stderr };
}

const nzkSessionId = (nzk: Nzk) => nzk.sessionId.readBigUInt64BE(0);

// ---- a standalone server ---------------------------------------------------------------------

describe("a standalone server's metrics and admin ports", () => {
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let server: ServerProcess;
  let zkPort: number;
  let sdk: Client;
  let nzk: Nzk;

  before(async () => {
    dir = await makeTempDir();
    zkPort = await freePort();
    server = await ServerProcess.start({
      dataDir: dir.path,
      zkPort,
      metricsPort: await freePort(),
      adminPort: await freePort(),
      // Long enough sessions that their pings seldom land between two readings.
      tickMs: 1_000,
      extraArgs: ["--four-letter-word-whitelist", "*"],
    });
    await waitFor("the admin port", async () => ((await fetch(`${server.adminUrl}/healthz`).catch(() => undefined))?.status === 200 ? true : undefined));
    sdk = await Client.connect(server.connectString, { sessionTimeoutMs: 20_000 });
    nzk = await Nzk.connect(server.zkConnectString, { sessionTimeoutMs: 20_000 });
  });

  after(async () => {
    await nzk?.close();
    await sdk?.close();
    await server?.stop();
    await dir?.remove();
  });

  test("/metrics: znode_count rises by N after N creates; update, read, fsync and batch counts rise", async () => {
    const N = 25;
    const first = await Scrape.of(server.metricsUrl);
    assert.equal(first.type("znode_count"), "GAUGE");
    assert.equal(first.type("commit_count"), "COUNTER");
    assert.equal(first.type("readlatency"), "SUMMARY");
    assert.deepEqual([...first.summary("readlatency").quantiles.keys()], [0.5, 0.9, 0.99]);
    assert.equal(first.value("corral_server_state", { state: "standalone" }), 1);
    assert.equal(first.value("corral_serving"), 1);
    assert.equal(first.summary("dbinittime").count, 1);
    assert.ok(!first.has("quorum_size"), "a standalone server has no quorum");
    assert.ok(!first.has("learners"), "nor learners");

    for (let i = 0; i < N; i++) await sdk.create(`/metrics-${i}`, "x".repeat(10));
    const written = await Scrape.of(server.metricsUrl);
    assert.equal(written.value("znode_count"), first.value("znode_count") + N);
    assert.ok(written.value("approximate_data_size") >= first.value("approximate_data_size") + N * 10);
    assert.ok(written.summary("updatelatency").count >= first.summary("updatelatency").count + N);
    assert.ok(written.summary("fsynctime").count > first.summary("fsynctime").count);
    assert.ok(
      written.summary("sync_processor_batch_size").sum >= first.summary("sync_processor_batch_size").sum + N,
      "every txn went through a group-commit batch",
    );
    assert.ok(written.summary("updatelatency").quantiles.get(0.5)! > 0);

    for (let i = 0; i < N; i++) await sdk.getData(`/metrics-${i}`);
    const read = await Scrape.of(server.metricsUrl);
    assert.ok(read.summary("readlatency").count >= written.summary("readlatency").count + N);
    assert.ok(read.value("global_sessions") >= 2);
    assert.ok(read.value("corral_client_sessions") >= 2, "both doors' sessions");
    assert.equal(read.value("num_alive_connections"), 1, "the ZooKeeper port's one connection");
    assert.ok(read.value("uptime") > 0);
    assert.ok(read.has("nodejs_eventloop_lag_seconds"), "and Node's own figures");
  });

  test("every admin command with a four-letter word reports that word's figures", async () => {
    // Something to count: an ephemeral and a watch from each door.
    await nzk.create("/admin-watched", Buffer.from("w"));
    await nzk.create("/admin-eph-nzk", null, { mode: zookeeper.CreateMode.EPHEMERAL });
    await nzk.exists("/admin-watched", () => undefined);
    await sdk.create("/admin-eph-sdk", "", { mode: "ephemeral" });

    assert.equal(await fourLetterWord(zkPort, "ruok"), "imok");
    assert.deepEqual(await adminCommand(server.adminUrl, "ruok"), { command: "ruok", error: null });

    const mntr = await steady(zkPort, "mntr", () => adminCommand(server.adminUrl, "mntr"));
    const figures = mntrFigures(mntr.text);
    const { command, error, ...monitor } = mntr.answer;
    assert.deepEqual([command, error], ["monitor", null]);
    assert.deepEqual(Object.keys(monitor), [...figures.keys()], "the same keys in the same order");
    for (const [key, text] of figures) {
      const value = monitor[key];
      // While a word is answered its own connection is one of the port's, as in ZooKeeper; an HTTP request is not.
      const asking = key === "num_alive_connections" ? 1 : 0;
      assert.equal(typeof value === "number" ? value + asking : value, typeof value === "number" ? Number(text) : text, `mntr ${key}`);
    }
    assert.ok(Number(figures.get("ephemerals_count")) >= 2 && Number(figures.get("watch_count")) >= 1);

    for (const word of ["srvr", "stat"] as const) {
      // The word's own connection (no packets yet) comes from a new port each time.
      const { text, answer } = await steady(zkPort, word, () => rawAdmin(server.adminUrl, word), /recved=0,sent=0\)$/);
      const lines = statFigures(text);
      const stats = answer.json["server_stats"] as Record<string, unknown>;
      assert.equal(answer.json["command"], word === "srvr" ? "server_stats" : "stats");
      assert.equal(`Zookeeper version: ${String(answer.json["version"])}`, text.split("\n")[0]);
      const [min, avg, max] = lines.get("Latency min/avg/max")!.split("/").map(Number);
      assert.deepEqual([min, avg, max], [stats["min_latency"], stats["avg_latency"], stats["max_latency"]]);
      assert.equal(Number(lines.get("Received")), stats["packets_received"]);
      assert.equal(Number(lines.get("Sent")), stats["packets_sent"]);
      assert.equal(Number(lines.get("Connections")), (stats["num_alive_client_connections"] as number) + 1, "the word's own connection and the others");
      assert.equal(Number(lines.get("Outstanding")), stats["outstanding_requests"]);
      assert.equal(lines.get("Zxid"), `0x${BigInt(/"last_processed_zxid" : (\d+)/.exec(answer.raw)![1]!).toString(16)}`);
      assert.equal(lines.get("Mode"), stats["server_state"]);
      assert.equal(Number(lines.get("Node count")), answer.json["node_count"]);
      if (word === "stat") {
        const clients = connectionLines(text);
        const listed = answer.json["connections"] as Record<string, unknown>[];
        assert.equal(clients.length, listed.length + 1, "the word's own connection and the others");
        for (const entry of listed) {
          const client = clients.find((c) => c.address === entry["remote_socket_address"]);
          assert.ok(client, `stat lists ${String(entry["remote_socket_address"])}`);
          const match = entry;
          assert.equal(match["packets_received"], Number(client.fields.get("recved")));
          assert.equal(match["packets_sent"], Number(client.fields.get("sent")));
          assert.equal(match["outstanding_requests"], Number(client.fields.get("queued")));
        }
      }
    }

    const conf = keyValues(await fourLetterWord(zkPort, "conf"));
    const configuration = await adminCommand(server.adminUrl, "conf");
    assert.equal(configuration["command"], "configuration");
    for (const [word, key] of [
      ["clientPort", "client_port"],
      ["dataDir", "data_dir"],
      ["dataLogDir", "data_log_dir"],
      ["tickTime", "tick_time"],
      ["maxClientCnxns", "max_client_cnxns"],
      ["minSessionTimeout", "min_session_timeout"],
      ["maxSessionTimeout", "max_session_timeout"],
      ["serverId", "server_id"],
      ["clientPortListenBacklog", "client_port_listen_backlog"],
    ] as const) {
      assert.equal(String(configuration[key]), conf.get(word), `conf ${word}`);
    }

    const cons = await steady(zkPort, "cons", () => rawAdmin(server.adminUrl, "cons"), /^ \/(?!.*sid=)/);
    // The word's own connection has no session (cons shows no sid for it); the others are the admin's.
    const consLines = connectionLines(cons.text).filter((line) => line.fields.has("sid"));
    const connections = cons.answer.json["connections"] as Record<string, unknown>[];
    assert.equal(connections.length, consLines.length);
    assert.ok(consLines.length >= 1);
    const sessionIds = [...cons.answer.raw.matchAll(/"session_id" : (\d+)/g)].map((m) => BigInt(m[1]!));
    for (const [i, line] of consLines.entries()) {
      const info = connections.find((c) => c["remote_socket_address"] === line.address)!;
      assert.ok(info, `cons lists ${line.address}`);
      assert.equal(hex64(sessionIds[connections.indexOf(info)]!), line.fields.get("sid"), `connection ${i}'s session`);
      for (const [field, key] of [
        ["recved", "packets_received"],
        ["sent", "packets_sent"],
        ["queued", "outstanding_requests"],
        ["to", "session_timeout"],
        ["est", "established"],
        ["lresp", "last_response_time"],
        ["llat", "last_latency"],
        ["minlat", "min_latency"],
        ["avglat", "avg_latency"],
        ["maxlat", "max_latency"],
      ] as const) {
        assert.equal(String(info[key]), line.fields.get(field), `cons ${field}`);
      }
      assert.equal(info["last_operation"], line.fields.get("lop"));
    }
    assert.ok(sessionIds.includes(nzkSessionId(nzk)), "the ZooKeeper-port client's session is listed");

    const envi = keyValues(await fourLetterWord(zkPort, "envi"));
    const environment = await adminCommand(server.adminUrl, "envi");
    assert.equal(environment["command"], "environment");
    const { command: _c, error: _e, ...variables } = environment;
    assert.deepEqual(Object.keys(variables), [...envi.keys()]);
    for (const [key, value] of envi) if (!key.startsWith("os.memory.")) assert.equal(variables[key], value, `envi ${key}`);

    const wchs = await steady(zkPort, "wchs", () => adminCommand(server.adminUrl, "wchs"));
    const [, connectionsWatching, paths, total] = /^(\d+) connections watching (\d+) paths\nTotal watches:(\d+)\n$/.exec(wchs.text)!;
    assert.deepEqual(
      [wchs.answer["num_connections"], wchs.answer["num_paths"], wchs.answer["num_total_watches"], wchs.answer["command"]],
      [Number(connectionsWatching), Number(paths), Number(total), "watch_summary"],
    );

    assert.equal(await fourLetterWord(zkPort, "isro"), "rw");
    assert.deepEqual(await adminCommand(server.adminUrl, "isro"), { read_only: false, command: "is_read_only", error: null });
  });

  test("dump, watches and watches_by_path name the sessions, their ephemerals and their watches", async () => {
    const nzkId = String(nzkSessionId(nzk));
    const sdkId = String(sdk.sessionId);
    const dump = await rawAdmin(server.adminUrl, "dump");
    const ephemerals = dump.json["session_id_to_ephemeral_paths"] as Record<string, string[]>;
    assert.deepEqual(ephemerals[nzkId], ["/admin-eph-nzk"]);
    assert.deepEqual(ephemerals[sdkId], ["/admin-eph-sdk"]);
    // Expiry: every live session has an expiry bucket on the server that owns expiry.
    const expiring = [
      ...dump.raw
        .split('"expiry_time_to_session_ids"')[1]!
        .split('"session_id_to_ephemeral_paths"')[0]!
        .matchAll(/(?<![":\d])(\d{10,})(?!")/g),
    ].map((m) => m[1]!);
    for (const id of [nzkId, sdkId]) assert.ok(expiring.includes(id), `session ${id} expires some time`);

    const watches = (await adminCommand(server.adminUrl, "watches"))["session_id_to_watched_paths"] as Record<string, string[]>;
    assert.deepEqual(watches[nzkId], ["/admin-watched"]);
    const byPath = await rawAdmin(server.adminUrl, "watches_by_path");
    assert.match(byPath.raw, new RegExp(`"/admin-watched" : \\[\\s*${nzkId}\\s*\\]`));

    assert.deepEqual(await adminCommand(server.adminUrl, "leader"), { command: "leader", error: "server is not initialized" });
    assert.deepEqual(await adminCommand(server.adminUrl, "zabstate"), { voting: false, zabstate: "", command: "zabstate", error: null });
  });

  test("aliases, unknown commands, /healthz, /readyz and what the ports refuse", async () => {
    assert.equal((await adminCommand(server.adminUrl, "monitor"))["command"], "monitor");
    assert.deepEqual(await adminCommand(server.adminUrl, "no_such_command"), { command: "no_such_command", error: "Unknown command: no_such_command" });
    assert.match(await (await fetch(`${server.adminUrl}/commands`)).text(), /<a href="\/commands\/monitor">monitor<\/a>/);
    assert.deepEqual(await adminGet(server.adminUrl, "/healthz"), { status: 200, body: { status: "ok" } });
    assert.deepEqual(await adminGet(server.adminUrl, "/readyz"), { status: 200, body: { ready: true, server_state: "standalone" } });
    assert.equal((await fetch(`${server.adminUrl}/commands/ruok`, { method: "POST" })).status, 405);
    assert.equal((await fetch(`${server.adminUrl}/metrics`)).status, 404);
    assert.equal((await fetch(`${server.metricsUrl}/commands/ruok`)).status, 404);
  });

  test("corral health --probe readyz|healthz asks the admin port, from --connect or the CORRAL_* settings", () => {
    const admin = server.adminUrl.replace("http://", "");
    assert.deepEqual(health(["--probe", "readyz", "--connect", admin]), { status: 0, out: `ok: ${admin} serving\n` });
    assert.deepEqual(health(["--probe", "healthz", "--connect", admin]), { status: 0, out: `ok: ${admin} alive\n` });
    const port = admin.split(":")[1]!;
    assert.equal(health(["--probe", "readyz"], { CORRAL_ADMIN_PORT: port, CORRAL_ADMIN_HOST: "0.0.0.0" }).status, 0, "0.0.0.0 is probed on loopback");
    const none = health(["--probe", "readyz"]);
    assert.equal(none.status, 1);
    assert.match(none.out, /adminPort: --probe readyz asks the admin port, and this server has none/);
    assert.equal(health(["--probe", "bogus", "--connect", admin]).status, 1);
  });
});

// ---- a three-voter cluster -------------------------------------------------------------------

describe("a three-voter cluster's metrics and admin ports", () => {
  let cluster: ClusterProcess;

  before(async () => {
    cluster = await ClusterProcess.start({ voters: 3, httpPorts: true, config: { fourLetterWordWhitelist: "*" } });
  });

  after(async () => {
    await cluster?.stop();
  });

  const readyz = async (server: ServerProcess) => (await fetch(`${server.adminUrl}/readyz`).catch(() => undefined))?.status;

  async function allReady(): Promise<number> {
    for (const server of cluster.servers.values())
      await waitFor(`${server.adminUrl} ready`, async () => ((await readyz(server)) === 200 ? true : undefined), 60_000);
    return waitFor("an agreed leader", () => cluster.agreedLeader(), 60_000);
  }

  test("the leader reports its quorum, learners, lag, proposals and commits; followers what they received", async () => {
    const leaderId = await allReady();
    const leader = cluster.server(leaderId);
    const followers = [...cluster.servers].filter(([id]) => id !== leaderId).map(([, s]) => s);

    const before = await Scrape.of(leader.metricsUrl);
    assert.equal(before.value("quorum_size"), 3);
    assert.equal(before.value("corral_server_state", { state: "leading" }), 1);
    await waitFor("two synced followers", async () => ((await Scrape.of(leader.metricsUrl)).value("synced_followers") === 2 ? true : undefined));
    const followerBefore = await Scrape.of(followers[0]!.metricsUrl);
    assert.equal(followerBefore.value("corral_server_state", { state: "following" }), 1);
    assert.ok(!followerBefore.has("learners"), "only a leader lists learners");
    assert.ok(followerBefore.summary("election_time").count >= 1);
    assert.ok(followerBefore.summary("follower_sync_time").count >= 1);

    const N = 20;
    const zk = await Client.connect(cluster.connectString);
    try {
      for (let i = 0; i < N; i++) await zk.create(`/cluster-metrics-${i}`, "v");
    } finally {
      await zk.close();
    }
    const after = await Scrape.of(leader.metricsUrl);
    assert.equal(after.value("learners"), 2);
    assert.ok(after.value("proposal_count") >= before.value("proposal_count") + N);
    assert.ok(after.value("commit_count") >= before.value("commit_count") + N);
    assert.ok(after.value("last_proposal_size") > 0);
    assert.ok(after.summary("election_time").count >= 1 && after.summary("leader_unavailable_time").count >= 1);
    assert.ok(after.has("corral_proposals_in_flight"));
    const lag = after.byLabel("corral_learner_lag_zxids", "learner");
    assert.deepEqual([...lag.keys()].sort(), followers.map((f) => String(f.options.serverId)).sort(), "one lag per follower");
    for (const value of lag.values()) assert.ok(value >= 0);
    for (const follower of followers) {
      await waitFor(`follower ${follower.options.serverId} has every node`, async () => {
        const scrape = await Scrape.of(follower.metricsUrl);
        return scrape.value("znode_count") === after.value("znode_count") &&
          scrape.value("learner_commit_received_count") >= followerBefore.value("learner_commit_received_count") + N
          ? true
          : undefined;
      });
    }

    for (const [id, server] of cluster.servers) {
      assert.deepEqual(await adminCommand(server.adminUrl, "leader"), {
        is_leader: id === leaderId,
        leader_id: leaderId,
        leader_ip: "127.0.0.1",
        command: "leader",
        error: null,
      });
      const zab = await adminCommand(server.adminUrl, "zabstate");
      assert.deepEqual([zab["myid"], zab["is_leader"], zab["voting"], zab["zabstate"]], [id, id === leaderId, true, "broadcast"]);
      assert.deepEqual(Object.keys((await adminCommand(server.adminUrl, "voting_view"))["current_config"] as object), ["1", "2", "3"]);
    }
    const leaderMntr = await steady(
      Number(leader.zkConnectString.split(":")[1]),
      "mntr",
      () => adminCommand(leader.adminUrl, "mntr"),
      /^zk_(packets|avg_latency|max_latency|min_latency)/,
    );
    const figures = mntrFigures(leaderMntr.text);
    for (const key of [
      "server_state",
      "learners",
      "synced_followers",
      "pending_syncs",
      "znode_count",
      "last_proposal_size",
      "max_proposal_size",
      "min_proposal_size",
    ]) {
      assert.equal(String(leaderMntr.answer[key]), figures.get(key), `mntr ${key}`);
    }
    assert.equal(leaderMntr.answer["peer_state"], "leading - broadcast");
  });

  test("/readyz: 503 on a member whose quorum is gone, 200 again once it is back", async () => {
    const leaderId = await allReady();
    const survivor = cluster.server(leaderId);
    const others = [...cluster.servers].filter(([id]) => id !== leaderId).map(([, s]) => s);
    const lookingBefore = (await Scrape.of(survivor.metricsUrl)).value("looking_count");
    await Promise.all(others.map((s) => s.stop()));

    await waitFor("the lone member not ready", async () => ((await readyz(survivor)) === 503 ? true : undefined), 60_000);
    const { status, body } = await adminGet(survivor.adminUrl, "/readyz");
    assert.equal(status, 503);
    assert.deepEqual(body, { ready: false, server_state: "looking" });
    assert.deepEqual(await adminGet(survivor.adminUrl, "/healthz"), { status: 200, body: { status: "ok" } }, "alive all the same");
    assert.deepEqual(await adminCommand(survivor.adminUrl, "mntr"), { command: "monitor", error: "This ZooKeeper instance is not currently serving requests" });
    const alone = await Scrape.of(survivor.metricsUrl);
    assert.equal(alone.value("corral_serving"), 0);
    assert.equal(alone.value("corral_server_state", { state: "looking" }), 1);
    assert.ok(alone.value("looking_count") > lookingBefore);
    assert.ok(!alone.has("learners"), "no leader, no learners");
    const probe = health(["--probe", "readyz", "--connect", survivor.adminUrl.replace("http://", "")]);
    assert.equal(probe.status, 1);
    assert.match(probe.out, /\/readyz answered 503/);

    await Promise.all(others.map((s) => s.restart()));
    await allReady();
    assert.deepEqual((await adminGet(survivor.adminUrl, "/readyz")).status, 200);
    const back = await Scrape.of(survivor.metricsUrl);
    assert.equal(back.value("corral_serving"), 1);
    assert.ok(back.summary("unavailable_time").count >= 2, "it counted its time out of service");
  });
});
