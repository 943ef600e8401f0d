/**
 * `corral cluster` as a user runs it: real child processes on 127.0.0.1, one per member. It prints
 * the connect string once every server serves, each client port takes an SDK session, Ctrl-C stops
 * every child and exits 0, a crashed child is reported (not restarted), bad flags exit 2.
 * `corral health` is checked against the same servers.
 *
 * The members form one replicated cluster: a write through one is read back through another (by
 * the SDK, and by `corral shell` given the three-host connect string), and with log level info the
 * table shows who leads. Settings given to the launcher — a base config file and CORRAL_* variables
 * — reach every member; changed between runs, they keep the data dir.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { Client, CREATOR_ALL_ACL, generateDigest, setQuota } from "../../src/index.js";
import { fourLetterWord } from "../helpers/four-letter-word.js";
import { CLI, freeRange, runScript } from "../helpers/cli-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";
import { withCode } from "../helpers/zk-error.js";

const run = (args: string[], env: NodeJS.ProcessEnv = {}) => runScript(CLI, args, env);

async function portRanges(count: number): Promise<string[]> {
  const taken = new Set<number>();
  const base = await freeRange(count, taken);
  const quorum = await freeRange(count, taken);
  const election = await freeRange(count, taken);
  const zookeeper = await freeRange(count, taken);
  const metrics = await freeRange(count, taken);
  const admin = await freeRange(count, taken);
  return [
    "--base-port",
    String(base),
    "--quorum-base-port",
    String(quorum),
    "--election-base-port",
    String(election),
    "--zk-base-port",
    String(zookeeper),
    "--metrics-base-port",
    String(metrics),
    "--admin-base-port",
    String(admin),
  ];
}

interface Row {
  id: number;
  role: string;
  /** "leading", "following <id>", "observing <id>" when the servers' logs showed it. */
  liveRole: string | undefined;
  client: string;
  /** The ZooKeeper-protocol port, "-" when none. */
  zookeeper: string;
  /** The Prometheus metrics and admin HTTP ports, "-" when none. */
  metrics: string;
  admin: string;
  pid: number;
}

/** The member table `corral cluster` prints once everything serves. */
function rows(stdout: string): Row[] {
  return [
    ...stdout.matchAll(/^ {2}(\d+) +(participant|observer)(?:, (leading|following \d+|observing \d+))? +(\S+) +(\S+) +(\S+) +(\S+) +\S+ +\S+ +\S+ +(\d+)$/gm),
  ].map((m) => ({
    id: Number(m[1]),
    role: m[2]!,
    liveRole: m[3],
    client: m[4]!,
    zookeeper: m[5]!,
    metrics: m[6]!,
    admin: m[7]!,
    pid: Number(m[8]),
  }));
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw error;
  }
}

/** Server processes started with this cluster file, found through /proc (Linux). */
function serversOf(configPath: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    let args: string[];
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    } catch {
      continue; // gone meanwhile
    }
    const at = args.indexOf("--config");
    if (args.includes("server") && at >= 0 && args[at + 1] === configPath) found.push(args[args.indexOf("--server-id") + 1]!);
  }
  return found.sort();
}

async function startCluster(args: string[], env: NodeJS.ProcessEnv = {}) {
  const launched = run(["cluster", ...args], env);
  const connectString = await waitFor(
    "the cluster's connect string",
    () => {
      assert.equal(launched.child.exitCode, null, `corral cluster exited early:\n${launched.out()}\n${launched.err()}`);
      return /connect with: Client\.connect\("([^"]+)"\)/.exec(launched.out())?.[1];
    },
    15_000,
  );
  return { ...launched, connectString };
}

test("corral cluster --verbose shows every member's log lines on the terminal, as well as in server.log", { timeout: 30_000 }, async () => {
  const dir = await makeTempDir();
  const dataDir = join(dir.path, "data");
  const cluster = await startCluster(["--voters", "1", "--verbose", "--data-dir", dataDir, "--tick-ms", "200", ...(await portRanges(1))], {
    CORRAL_LOG_LEVEL: "info",
  });
  try {
    await waitFor("a JSON log line", () => (/^\[1\] \{.*"msg":"role changed"/m.test(cluster.err()) ? true : undefined));
    assert.match(readFileSync(join(dataDir, "1", "server.log"), "utf8"), /"msg":"role changed"/);
  } finally {
    cluster.child.kill("SIGINT");
    assert.equal(await cluster.exit, 0, cluster.err());
    await dir.remove();
  }
});

test("corral cluster --voters 3: every member serves, Ctrl-C stops them all and exits 0", { timeout: 30_000 }, async () => {
  const dir = await makeTempDir();
  const dataDir = join(dir.path, "data");
  const ports = await portRanges(3);
  const base = Number(ports[1]);
  const cluster = await startCluster(["--voters", "3", "--data-dir", dataDir, "--tick-ms", "200", ...ports], { CORRAL_LOG_LEVEL: "info" });
  try {
    const expected = [0, 1, 2].map((i) => `127.0.0.1:${base + i}`);
    assert.equal(cluster.connectString, expected.join(","));
    const zkBase = Number(ports[ports.indexOf("--zk-base-port") + 1]);
    const expectedZk = [0, 1, 2].map((i) => `127.0.0.1:${zkBase + i}`);
    assert.match(cluster.out(), new RegExp(`^ZooKeeper-protocol connect string: ${expectedZk.join(",").replaceAll(".", "\\.")}$`, "m"));
    assert.match(cluster.out(), new RegExp(`zkCli\\.sh -server ${expectedZk.join(",").replaceAll(".", "\\.")}`));
    const members = rows(cluster.out());
    assert.deepEqual(
      members.map((r) => [r.id, r.role, r.client, r.zookeeper]),
      expected.map((client, i) => [i + 1, "participant", client, expectedZk[i]]),
    );
    // Each ZooKeeper port answers (the dev cluster enables the four-letter words).
    for (const address of expectedZk) assert.equal(await fourLetterWord(Number(address.split(":")[1]), "ruok"), "imok");
    // Each member serves its own metrics and admin ports, as the table says.
    const [metricsBase, adminBase] = ["--metrics-base-port", "--admin-base-port"].map((flag) => Number(ports[ports.indexOf(flag) + 1]));
    assert.deepEqual(
      members.map((r) => [r.metrics, r.admin]),
      [0, 1, 2].map((i) => [`127.0.0.1:${metricsBase! + i}`, `127.0.0.1:${adminBase! + i}`]),
    );
    for (const member of members) {
      const ready = await waitFor(`server ${member.id} ready`, async () => ((await fetch(`http://${member.admin}/readyz`)).status === 200 ? true : undefined));
      assert.equal(ready, true);
      assert.match(await (await fetch(`http://${member.metrics}/metrics`)).text(), /^quorum_size 3$/m);
    }
    assert.equal(new Set(members.map((r) => r.pid)).size, 3);
    // Log level info: the table shows the elected roles, one leader and two followers of it.
    const leaders = members.filter((r) => r.liveRole === "leading");
    assert.equal(leaders.length, 1, cluster.out());
    for (const r of members) if (r !== leaders[0]) assert.equal(r.liveRole, `following ${leaders[0]!.id}`);
    for (const member of members) assert.ok(processExists(member.pid), `server ${member.id} runs`);
    assert.deepEqual(serversOf(join(dataDir, "cluster.json")), ["1", "2", "3"]);
    // The terminal reads as one line per event; every member's log stream is in its server.log.
    assert.match(cluster.out(), new RegExp(`^web console: http://${members[0]!.admin.replaceAll(".", "\\.")}/console/$`, "m"));
    const terminal = cluster.out() + cluster.err();
    assert.doesNotMatch(terminal, /^\[\d+\] \{/m, "no raw JSON log line on the terminal");
    assert.match(cluster.out(), new RegExp(`^\\[${leaders[0]!.id}\\] now leading$`, "m"));
    assert.match(cluster.out(), new RegExp(`^\\[${leaders[0]!.id}\\] serving clients as leading, epoch \\d+`, "m"));
    for (const member of members) {
      const log = readFileSync(join(dataDir, String(member.id), "server.log"), "utf8");
      assert.match(log, /^\{.*"msg":"role changed"/m, `server ${member.id}'s server.log holds its log lines`);
    }

    for (const member of members) {
      const zk = await Client.connect(member.client, { connectTimeoutMs: 30_000 });
      try {
        assert.notEqual(await zk.exists("/"), null);
        assert.equal(await zk.create(`/written-via-${member.id}`, "x"), `/written-via-${member.id}`);
      } finally {
        await zk.close();
      }
    }
    // One cluster, not three servers: what was written through each member is read back through another.
    const reader = await Client.connect(members[0]!.client, { connectTimeoutMs: 30_000 });
    try {
      await reader.sync("/");
      for (const member of members) assert.ok(await reader.exists(`/written-via-${member.id}`), `write through ${member.id} replicated`);
    } finally {
      await reader.close();
    }
    // `corral shell` with the three-host connect string: it reads back a write made through member 3,
    // and what it creates is read back through every member.
    const sh = run(["shell", "--connect", cluster.connectString]);
    sh.child.stdin.end(
      ["sync /", "get /written-via-3", 'create /shell "via the shell"', "create /shell/a 1", "sync /shell", "ls /shell", "get /shell", ""].join("\n"),
    );
    assert.equal(await sh.exit, 0, sh.err());
    assert.equal(sh.err(), "");
    assert.equal(sh.out(), ["Sync is OK", "x", "Created /shell", "Created /shell/a", "Sync is OK", "[a]", "via the shell", ""].join("\n"));
    for (const member of members) {
      const zk = await Client.connect(member.client, { connectTimeoutMs: 30_000 });
      try {
        await zk.sync("/");
        assert.equal(new TextDecoder().decode((await zk.getData("/shell")).data), "via the shell", `the shell's write read through ${member.id}`);
        assert.deepEqual(await zk.getChildren("/shell"), ["a"]);
      } finally {
        await zk.close();
      }
    }

    assert.ok(existsSync(join(dataDir, "cluster.json")));
    for (const member of members) assert.ok(existsSync(join(dataDir, String(member.id))), `data dir of ${member.id}`);

    // `corral health`: explicit address, the address the container environment implies, a dead port.
    const healthy = run(["health", "--connect", members[1]!.client]);
    assert.equal(await healthy.exit, 0, healthy.err());
    assert.match(healthy.out(), /^ok: /);
    const fromEnv = run(["health"], {
      CORRAL_SERVERS: `1=127.0.0.1:${base}:1:2,2=127.0.0.1:${base + 1}:3:4,3=127.0.0.1:${base + 2}:5:6`,
      CORRAL_SERVER_ID: "3",
      CORRAL_CLIENT_HOST: "0.0.0.0",
    });
    assert.equal(await fromEnv.exit, 0, fromEnv.err());
    assert.match(fromEnv.out(), new RegExp(`127\\.0\\.0\\.1:${base + 2}`));

    cluster.child.kill("SIGINT");
    assert.equal(await cluster.exit, 0, cluster.err());
    assert.match(cluster.out(), /stopping 3 servers/);
    for (const member of members) assert.equal(processExists(member.pid), false, `server ${member.id} (pid ${member.pid}) is gone`);
    assert.deepEqual(serversOf(join(dataDir, "cluster.json")), []);

    const dead = run(["health", "--connect", members[0]!.client, "--timeout-ms", "500"]);
    assert.equal(await dead.exit, 1);
    assert.match(dead.err(), /unhealthy/);
  } finally {
    if (cluster.child.exitCode === null) cluster.child.kill("SIGKILL");
    await dir.remove();
  }
});

test("a member that dies is reported and not restarted; the others keep serving", { timeout: 20_000 }, async () => {
  const dir = await makeTempDir();
  const ports = await portRanges(2);
  const cluster = await startCluster(["--voters", "1", "--observers", "1", "--data-dir", dir.path, "--tick-ms", "200", ...ports]);
  try {
    const [voter, observer] = rows(cluster.out());
    assert.equal(voter?.role, "participant");
    assert.equal(observer?.role, "observer");
    process.kill(observer.pid, "SIGKILL");
    await waitFor("the crash report", () => (/server 2 \(pid \d+\) exited unexpectedly \(killed by SIGKILL\)/.test(cluster.err()) ? true : undefined));
    const zk = await Client.connect(voter.client, { connectTimeoutMs: 30_000 });
    assert.notEqual(await zk.exists("/"), null);
    await zk.close();
    assert.deepEqual(serversOf(join(dir.path, "cluster.json")), ["1"], "server 2 was not restarted");

    cluster.child.kill("SIGTERM");
    // A cluster that lost a member does not report a clean run.
    assert.equal(await cluster.exit, 1);
    assert.match(cluster.out(), /1 server had exited on its own/);
    assert.equal(processExists(voter.pid), false);
  } finally {
    if (cluster.child.exitCode === null) cluster.child.kill("SIGKILL");
    await dir.remove();
  }
});

test("bad cluster flags exit 2 naming the flag, before anything starts", async () => {
  const dir = await makeTempDir();
  try {
    const zero = run(["cluster", "--voters", "0", "--data-dir", dir.path]);
    assert.equal(await zero.exit, 2);
    assert.match(zero.err(), /voters/);
    const unknown = run(["cluster", "--client-port-base", "2181", "--data-dir", dir.path]);
    assert.equal(await unknown.exit, 2);
    assert.match(unknown.err(), /client-port-base: unknown option/);
    // The membership is the launcher's: not from a flag, the environment or a base config.
    const member = run(["cluster", "--client-port", "2181", "--data-dir", dir.path]);
    assert.equal(await member.exit, 2);
    assert.match(member.err(), /clientPort: set by --client-port, but corral cluster sets every member's/);
    const fromEnv = run(["cluster", "--data-dir", dir.path], { CORRAL_CLIENT_PORT: "1" });
    assert.equal(await fromEnv.exit, 2);
    assert.match(fromEnv.err(), /clientPort: set by CORRAL_CLIENT_PORT/);
    const base = join(dir.path, "base.json");
    await writeFile(base, JSON.stringify({ ttlNodesEnabled: true, servers: "1=127.0.0.1:2181:2888:3888" }));
    const fromFile = run(["cluster", "--config", base, "--data-dir", dir.path]);
    assert.equal(await fromFile.exit, 2);
    assert.match(fromFile.err(), /servers: set by .*base\.json/);
    // A shared setting is validated, with the server's rules, before anything starts.
    const badDigest = run(["cluster", "--data-dir", dir.path], { CORRAL_SUPER_DIGEST: "super:test" });
    assert.equal(await badDigest.exit, 2);
    assert.match(badDigest.err(), /superDigest: expected/);
    assert.equal(existsSync(join(dir.path, "cluster.json")), false);
  } finally {
    await dir.remove();
  }
});

test("a base config and CORRAL_* variables given to the launcher reach every member; changed, they keep the data dir", { timeout: 60_000 }, async () => {
  const dir = await makeTempDir();
  const dataDir = join(dir.path, "data");
  const base = join(dir.path, "base.json");
  const ports = await portRanges(3);
  const args = ["--voters", "3", "--data-dir", dataDir, "--tick-ms", "200", "--config", base, ...ports];
  await writeFile(base, JSON.stringify({ ttlNodesEnabled: true, fourLetterWordWhitelist: "ruok" }));
  let cluster = await startCluster(args, { CORRAL_SUPER_DIGEST: generateDigest("super:test"), CORRAL_ENFORCE_QUOTA: "true" });
  const clients: Client[] = [];
  const connect = async (connectString: string) => {
    const zk = await Client.connect(connectString, { connectTimeoutMs: 30_000 });
    clients.push(zk);
    return zk;
  };
  try {
    const members = rows(cluster.out());
    assert.equal(members.length, 3);
    const owner = await connect(cluster.connectString);
    await owner.addAuthInfo("digest", "alice:secret");
    await owner.create("/private", "alice's", { acl: CREATOR_ALL_ACL });
    for (const member of members) {
      // The base config's whitelist, not the launcher's every-word default, on each ZooKeeper port.
      const zkPort = Number(member.zookeeper.split(":")[1]);
      assert.equal(await fourLetterWord(zkPort, "ruok"), "imok", `ruok on ${member.id}`);
      assert.equal(await fourLetterWord(zkPort, "mntr"), "mntr is not executed because it is not in the whitelist.\n", `mntr on ${member.id}`);
      const zk = await connect(member.client);
      try {
        await zk.sync("/");
        await assert.rejects(zk.getData("/private"), withCode("NOAUTH"), `a stranger on ${member.id}`);
        // CORRAL_SUPER_DIGEST: the super user passes the ACL on this member (reads are local).
        await zk.addAuthInfo("digest", "super:test");
        assert.deepEqual(
          (await zk.whoAmI()).map((info) => info.authScheme),
          ["super", "ip", "digest"],
          `super on ${member.id}`,
        );
        assert.equal(new TextDecoder().decode((await zk.getData("/private")).data), "alice's");
        // ttlNodesEnabled from the base config.
        assert.equal(await zk.create(`/ttl-${member.id}`, "", { mode: "persistent-with-ttl", ttlMs: 600_000 }), `/ttl-${member.id}`);
      } finally {
        await zk.close();
      }
    }
    // CORRAL_ENFORCE_QUOTA: a hard limit refuses the write.
    await owner.create("/quota", "");
    await setQuota(owner, "/quota", { countHardLimit: 2 });
    await owner.create("/quota/a", "");
    await assert.rejects(owner.create("/quota/b", ""), withCode("QUOTAEXCEEDED"));
    await owner.close();
    cluster.child.kill("SIGINT");
    assert.equal(await cluster.exit, 0, cluster.err());

    // The same members, another base config and no CORRAL_*: the data dir is this cluster's still,
    // so it is reused, and the members run with the new settings.
    await writeFile(base, JSON.stringify({ fourLetterWordWhitelist: "conf" }));
    cluster = await startCluster(args);
    assert.match(cluster.out(), /\(reusing its data\)/);
    const again = rows(cluster.out());
    const zk = await connect(again[2]!.client);
    try {
      await zk.sync("/");
      assert.notEqual(await zk.exists("/ttl-1"), null, "the data is kept");
      await assert.rejects(zk.create("/ttl-again", "", { mode: "persistent-with-ttl", ttlMs: 600_000 }), withCode("UNIMPLEMENTED"));
      await zk.addAuthInfo("digest", "super:test");
      await assert.rejects(zk.getData("/private"), withCode("NOAUTH"), "no super user any more");
    } finally {
      await zk.close();
    }
    const zkPort = Number(again[0]!.zookeeper.split(":")[1]);
    assert.equal(await fourLetterWord(zkPort, "mntr"), "mntr is not executed because it is not in the whitelist.\n");
    assert.match(await fourLetterWord(zkPort, "conf"), /^clientPort=/m);
    cluster.child.kill("SIGINT");
    assert.equal(await cluster.exit, 0, cluster.err());
  } finally {
    await Promise.all(clients.map((zk) => zk.close()));
    if (cluster.child.exitCode === null) cluster.child.kill("SIGKILL");
    await dir.remove();
  }
});
