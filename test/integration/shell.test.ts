/**
 * `corral shell` against a real standalone server process: scripts on stdin and single commands
 * from the arguments print zkCli's answers on stdout and its error wording on stderr, with exit
 * code 0 when every command succeeded, 1 when one failed, 2 for bad flags.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { Client, generateDigest, Perms } from "../../src/index.js";
import { helpText } from "../../src/cli/shell-commands.js";
import { formatStat } from "../../src/cli/shell-format.js";
import { waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { ServerProcess, freePort } from "../helpers/server-process.js";
import { withCode } from "../helpers/zk-error.js";
import { makeTempDir } from "../helpers/temp-dir.js";

const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

let server: ServerProcess | undefined;
let dir: Awaited<ReturnType<typeof makeTempDir>> | undefined;
const running = new Set<ChildProcess>();

before(async () => {
  dir = await makeTempDir();
  server = await ServerProcess.start({ dataDir: dir.path });
});

after(async () => {
  for (const child of running) child.kill("SIGKILL");
  await server?.stop();
  await dir?.remove();
});

function target(): string {
  assert.ok(server, "the server started");
  return server.connectString;
}

interface ShellRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `corral shell ARGS` with `stdin` piped in (so never interactive), times in UTC. */
function shell(args: string[], stdin = ""): Promise<ShellRun> {
  const child = spawn(process.execPath, [CLI, "shell", ...args], {
    env: { ...process.env, TZ: "UTC" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  running.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  child.stdin.end(stdin);
  return new Promise((resolve) => {
    child.once("close", (code) => {
      running.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}

async function withClient<T>(fn: (zk: Client) => Promise<T>): Promise<T> {
  const zk = await Client.connect(target());
  try {
    return await fn(zk);
  } finally {
    await zk.close();
  }
}

test("a script creates, lists and reads znodes and prints zkCli's answers", async () => {
  const run = await shell(
    ["--connect", target()],
    [
      'create /app "hello world"',
      "create /app/a 1",
      "create -s /app/job- x",
      "ls /app",
      "get /app",
      "set /app v2",
      "get -s /app",
      "stat /app/a",
      "getAcl /app",
      "sync /app",
      "",
    ].join("\n"),
  );
  assert.equal(run.stderr, "");
  assert.equal(run.code, 0);

  const { appStat, aStat, children } = await withClient(async (zk) => ({
    appStat: (await zk.getData("/app")).stat,
    aStat: (await zk.exists("/app/a"))!,
    children: await zk.getChildren("/app"),
  }));
  const job = children.find((name) => name.startsWith("job-"));
  assert.match(job ?? "", /^job-[0-9]{10}$/);
  assert.equal(
    run.stdout,
    [
      "Created /app",
      "Created /app/a",
      `Created /app/${job}`,
      `[a, ${job}]`,
      "hello world",
      "v2",
      formatStat(appStat, "UTC"),
      formatStat(aStat, "UTC"),
      "'world,'anyone",
      ": cdrwa",
      "Sync is OK",
      "",
    ].join("\n"),
  );
  // The printed Stat is the node's: version bumped once by set, two children, two bytes of data.
  assert.match(run.stdout, /\nv2\ncZxid = 0x[0-9a-f]+\nctime = \w{3} \w{3} \d\d \d\d:\d\d:\d\d UTC \d{4}\n/);
  assert.match(run.stdout, /\ndataVersion = 1\naclVersion = 0\nephemeralOwner = 0x0\ndataLength = 2\nnumChildren = 2\n/);
});

test("a script deletes a node and a whole subtree", async () => {
  await withClient(async (zk) => {
    for (const path of ["/rm", "/rm/x", "/rm/tree", "/rm/tree/a", "/rm/tree/a/b", "/rm/tree/c"]) await zk.create(path, "");
  });
  const run = await shell(["--connect", target()], "delete /rm/x\ndeleteall /rm/tree\nls /rm\n");
  assert.deepEqual(run, { code: 0, stdout: "[]\n", stderr: "" });
  assert.equal(await withClient((zk) => zk.exists("/rm/tree")), null);
});

test("failures print zkCli's messages on stderr, the script goes on, and the exit code is 1", async () => {
  const run = await shell(
    ["--connect", target()],
    ["create /err 1", "create /err 2", "set -v 7 /err x", "create /err/child c", "delete /err", "get /err/none", "frob /err", "get", "get /err"].join("\n"),
  );
  assert.equal(run.code, 1);
  assert.equal(run.stdout, "Created /err\nCreated /err/child\n1\n");
  assert.equal(
    run.stderr,
    [
      "Node already exists: /err",
      "version No is not valid : /err",
      "Node not empty: /err",
      "Node does not exist: /err/none",
      "Unknown command: frob",
      helpText(),
      "missing path",
      "usage: get [-s] [-w] path",
      "",
    ].join("\n"),
  );
});

test("a watch set by get -w or ls -w prints its WatchedEvent when the same script fires it", async () => {
  const run = await shell(["--connect", target()], "create /w v1\nget -w /w\nset /w v2\nls -w /w\ncreate /w/c\nget /w\n");
  assert.equal(run.stderr, "");
  assert.equal(run.code, 0);
  assert.equal(
    run.stdout,
    [
      "Created /w",
      "v1",
      "",
      "WATCHER::",
      "",
      "WatchedEvent state:SyncConnected type:NodeDataChanged path:/w",
      "[]",
      "",
      "WATCHER::",
      "",
      "WatchedEvent state:SyncConnected type:NodeChildrenChanged path:/w",
      "Created /w/c",
      "v2",
      "",
    ].join("\n"),
  );
});

test("close ends the session and its ephemerals, connect opens a new one, quit ends the script", async () => {
  const run = await shell(
    ["--connect", target()],
    ["create -e /eph", "close", "ls /eph", `connect ${target()}`, "stat /eph", "quit", "create /after-quit"].join("\n"),
  );
  assert.equal(run.code, 1);
  assert.equal(run.stdout, "Created /eph\n");
  assert.equal(run.stderr, `Not connected: connect [host:port] opens a session (last: ${target()})\nNode does not exist: /eph\n`);
  assert.equal(await withClient((zk) => zk.exists("/after-quit")), null);
});

test("one command from the arguments runs and sets the exit code", async () => {
  assert.deepEqual(await shell(["--connect", target(), "--", "create", "/one", "a b"]), { code: 0, stdout: "Created /one\n", stderr: "" });
  assert.deepEqual(await shell(["--connect", target(), "get", "/one"]), { code: 0, stdout: "a b\n", stderr: "" });
  assert.deepEqual(await shell(["--connect", target(), "ls /one"]), { code: 0, stdout: "[]\n", stderr: "" });
  assert.deepEqual(await shell(["--connect", target(), "--", "get", "/nope"]), { code: 1, stdout: "", stderr: "Node does not exist: /nope\n" });
  assert.deepEqual(await shell(["--connect", target(), "--", "set", "/one"]), {
    code: 1,
    stdout: "",
    stderr: "missing arguments\nusage: set [-s] [-v version] path data\n",
  });
});

test("a chroot in the connect string roots every path", async () => {
  await withClient(async (zk) => {
    await zk.create("/tenant", "");
    await zk.create("/tenant/x", "inside");
  });
  const run = await shell(["--connect", `${target()}/tenant`], "ls /\nget /x\ncreate /y\n");
  assert.deepEqual(run, { code: 0, stdout: "[x]\ninside\nCreated /y\n", stderr: "" });
  assert.deepEqual((await withClient((zk) => zk.getChildren("/tenant"))).sort(), ["x", "y"]);
});

test("bad flags exit 2; nothing listening is reported and exits 1; help needs no server", async () => {
  const flag = await shell(["--bogus", "x"]);
  assert.equal(flag.code, 2);
  assert.match(flag.stderr, /bogus: unknown option/);

  const connectString = await shell(["--connect", "a:b:c", "ls", "/"]);
  assert.equal(connectString.code, 2);
  assert.match(connectString.stderr, /invalid connect string "a:b:c"/);

  const port = await freePort();
  const expected =
    `Unable to connect to 127.0.0.1:${port}: no server accepted a session within 300 ms.\n` +
    "Is a corral server running there? (npm start runs a three-voter cluster on 127.0.0.1:2181-2183)\n";
  assert.deepEqual(await shell(["--connect", `127.0.0.1:${port}`, "--timeout-ms", "300", "--", "ls", "/"]), { code: 1, stdout: "", stderr: expected });
  assert.deepEqual(await shell(["--connect", `127.0.0.1:${port}`, "--timeout-ms", "300"], "ls /\n"), { code: 1, stdout: "", stderr: expected });

  assert.deepEqual(await shell(["--connect", `127.0.0.1:${port}`, "help"]), { code: 0, stdout: `${helpText()}\n`, stderr: "" });
});

test("getEphemerals lists this session's ephemerals, getAllChildrenNumber counts descendants, whoami shows addauth's id", async () => {
  const run = await shell(
    ["--connect", target()],
    [
      "create /eph-app",
      "create -e /eph-app/b",
      "create -e /eph-app/a",
      "create /eph-app/p",
      "create /eph-app/p/q",
      "getEphemerals",
      "getEphemerals /eph-app/a",
      "getEphemerals /nothing-here",
      "getAllChildrenNumber /eph-app",
      "getAllChildrenNumber /eph-app/p/q",
      "getAllChildrenNumber /eph-none",
      "whoami",
      "addauth digest bob:secret",
      "whoami",
    ].join("\n"),
  );
  assert.equal(run.stderr, "Node does not exist: /eph-none\n");
  assert.equal(run.code, 1);
  assert.equal(
    run.stdout,
    [
      "Created /eph-app",
      "Created /eph-app/b",
      "Created /eph-app/a",
      "Created /eph-app/p",
      "Created /eph-app/p/q",
      "[/eph-app/a, /eph-app/b]",
      "[/eph-app/a]",
      "[]",
      "4",
      "0",
      "Auth scheme: User",
      "ip: 127.0.0.1",
      "Auth scheme: User",
      // ZooKeeper's order (its connection ids are a hash set), not the order they were added.
      "digest: bob",
      "ip: 127.0.0.1",
      "",
    ].join("\n"),
  );
});

test("setAcl sets zkCli's ACL text, -s prints the Stat, -R reaches every descendant, and the ACL is enforced", async () => {
  await withClient(async (zk) => {
    for (const path of ["/acl", "/acl/c", "/acl/c/d"]) await zk.create(path, "");
  });
  const bob = generateDigest("bob:secret");
  const run = await shell(
    ["--connect", target()],
    [
      `setAcl -s /acl digest:${bob}:cdrwa,world:anyone:r`,
      "getAcl /acl",
      "set /acl x",
      "setAcl /acl world:anyone:cdrwa",
      "addauth digest bob:secret",
      "setAcl -v 7 /acl world:anyone:cdrwa",
      "set /acl x",
      "setAcl -R /acl world:anyone:r",
      "getAcl /acl/c/d",
      "setAcl /acl world:anyone",
    ].join("\n"),
  );
  const stat = await withClient(async (zk) => (await zk.getACL("/acl")).stat);
  assert.equal(
    run.stderr,
    [
      "Insufficient permission : /acl",
      "Insufficient permission : /acl",
      "version No is not valid : /acl",
      "world:anyone does not have the form scheme:id:perm",
      "usage: setAcl [-s] [-v version] [-R] path acl",
      "",
    ].join("\n"),
  );
  assert.equal(run.code, 1);
  // The Stat setAcl -s printed is the node's after that first change: aclVersion 1, the data unset.
  assert.equal(stat.aversion, 2);
  assert.match(run.stdout, /^cZxid = 0x[0-9a-f]+\n(?:.*\n){6}aclVersion = 1\n/);
  const afterStat = run.stdout.split("\n").slice(11).join("\n");
  // Read without ADMIN (before addauth), the digest's hash is hidden, as ZooKeeper 3.6+ does.
  assert.equal(afterStat, ["'digest,'bob:x", ": cdrwa", "'world,'anyone", ": r", "'world,'anyone", ": r", ""].join("\n"));
  // The whole tree now reads world:anyone:r, so no one can write it.
  await withClient(async (zk) => {
    for (const path of ["/acl", "/acl/c", "/acl/c/d"]) {
      assert.deepEqual((await zk.getACL(path)).acl, [{ perms: Perms.READ, id: { scheme: "world", id: "anyone" } }], path);
    }
    await assert.rejects(zk.setData("/acl/c", "y"), withCode("NOAUTH"));
  });
});

test("addWatch prints every event of a persistent recursive or persistent watch, removewatches ends it", async () => {
  const run = await shell(
    ["--connect", target()],
    [
      "create /aw",
      "addWatch /aw",
      "create /aw/x",
      "set /aw/x 1",
      "removewatches /aw",
      "create /aw/y",
      "addWatch -m persistent /aw",
      "create /aw/z",
      "set /aw/z 2",
      "set /aw 3",
      "removewatches /aw -a",
      "set /aw 4",
      "removewatches /aw",
    ].join("\n"),
  );
  assert.equal(run.stderr, "KeeperErrorCode = No such watcher for /aw\n");
  assert.equal(run.code, 1);
  const event = (type: string, path: string) => `\nWATCHER::\n\nWatchedEvent state:SyncConnected type:${type} path:${path}`;
  assert.equal(
    run.stdout,
    [
      "Created /aw",
      event("NodeCreated", "/aw/x"),
      "Created /aw/x",
      event("NodeDataChanged", "/aw/x"),
      event("PersistentWatchRemoved", "/aw"),
      "Created /aw/y",
      event("NodeChildrenChanged", "/aw"),
      "Created /aw/z",
      event("NodeDataChanged", "/aw"),
      event("PersistentWatchRemoved", "/aw"),
      "",
    ].join("\n"),
  );
});

test("setquota, listquota and delquota keep ZooKeeper's quota nodes and print zkCli's lines", async () => {
  await withClient(async (zk) => {
    await zk.create("/q", "");
    await zk.create("/q/a", "12345");
    await zk.create("/q/a/deep", "");
  });
  const run = await shell(
    ["--connect", target()],
    [
      "setquota -n 10 /q",
      "listquota /q",
      "setquota -B 100 /q",
      "listquota /q",
      "delquota -n /q",
      "listquota /q",
      "setquota -n 1 /q",
      "setquota -n 5 /q/a",
      "setquota -n 5 /q-none",
      "delquota /q",
      "listquota /q",
      "delquota /q",
      "delquota -b /q",
    ].join("\n"),
  );
  const location = "absolute path is /zookeeper/quota/q/zookeeper_limits";
  assert.equal(
    run.stderr,
    [location, location, location, "/q/a has a parent /q which has a quota", "/q-none does not exist.", location, "quota for /q does not exist.", ""].join(
      "\n",
    ),
  );
  assert.equal(run.code, 1);
  assert.equal(
    run.stdout,
    [
      "Output quota for /q count=10,bytes=-1",
      "Output stat for /q count=3,bytes=5",
      "Output quota for /q count=10,bytes=-1=;byteHardLimit=100",
      "Output stat for /q count=3,bytes=5",
      "Output quota for /q count=-1,bytes=-1=;byteHardLimit=100",
      "Output stat for /q count=3,bytes=5",
      "[Warning]: the count quota you create is less than the existing count:3",
      "Quota does not exist for /q",
      "Quota does not exist for /q",
      "",
    ].join("\n"),
  );
  // delquota took the quota nodes away, down to /zookeeper/quota itself.
  assert.deepEqual(await withClient((zk) => zk.getChildren("/zookeeper/quota")), []);
});

describe("config and reconfig against a three-voter cluster", () => {
  const SUPER = "super:test";
  let cluster: ClusterProcess | undefined;
  let files: Awaited<ReturnType<typeof makeTempDir>> | undefined;

  before(async () => {
    files = await makeTempDir();
    cluster = await ClusterProcess.start({ voters: 3, superDigest: generateDigest(SUPER), config: { reconfigEnabled: true } });
    await waitForLeader(cluster);
  });
  after(async () => {
    await cluster?.stop();
    await files?.remove();
  });

  function started(): ClusterProcess {
    assert.ok(cluster, "the cluster started");
    return cluster;
  }

  /** The configuration in force, read through the SDK after the shell is done. */
  async function configuration() {
    const zk = await Client.connect(started().connectString);
    try {
      await zk.sync("/");
      return await zk.getConfig();
    } finally {
      await zk.close();
    }
  }

  /** An observer's member line on ports nothing listens on: an observer need not be up to join. */
  async function observerLine(): Promise<{ line: string; clientAddress: string }> {
    const [quorumPort, electionPort, clientPort] = [await freePort(), await freePort(), await freePort()];
    return {
      line: `server.100=127.0.0.1:${quorumPort}:${electionPort}:observer;127.0.0.1:${clientPort}`,
      clientAddress: `127.0.0.1:${clientPort}`,
    };
  }

  /** The versions of the configurations `reconfig` committed, in the order it printed them. */
  function committedVersions(stdout: string): string[] {
    return [...stdout.matchAll(/Committed new configuration:\n(?:server\.[^\n]*\n)+version=([0-9a-f]+)\n/g)].map((m) => m[1]!);
  }

  test("config prints the configuration; reconfig -add and -remove an observer print the new one; refusals print zkCli's words", async () => {
    const voters = [1, 2, 3].map((id) => started().memberLine(id));
    const initial = await configuration();
    assert.equal(initial.text, [...voters, `version=${initial.version.toString(16)}`].join("\n"));
    const observer = await observerLine();
    const run = await shell(
      ["--connect", started().connectString],
      [
        "config",
        `reconfig -add ${observer.line}`,
        `addauth digest ${SUPER}`,
        "config -w",
        `reconfig -add ${observer.line}`,
        "config -c",
        "reconfig -remove 100 -v 1",
        "reconfig -s -remove 100",
        "config -s",
      ].join("\n"),
    );
    const final = await configuration();
    assert.equal(run.stderr, "Insufficient permission : /zookeeper/config\nversion No is not valid : /zookeeper/config\n");
    assert.equal(run.code, 1);
    const [added, removed] = committedVersions(run.stdout);
    assert.ok(added !== undefined && removed !== undefined, run.stdout);
    assert.equal(removed, final.version.toString(16));
    const clientAddresses = [1, 2, 3].map((id) => started().server(id).zkConnectString);
    const finalText = [...voters, `version=${removed}`].join("\n");
    assert.equal(
      run.stdout,
      [
        initial.text,
        initial.text,
        "",
        "WATCHER::",
        "",
        "WatchedEvent state:SyncConnected type:NodeDataChanged path:/zookeeper/config",
        "Committed new configuration:",
        [...voters, observer.line, `version=${added}`].join("\n"),
        `${added} ${[...clientAddresses, observer.clientAddress].join(",")}`,
        "Committed new configuration:",
        finalText,
        formatStat(final.stat, "UTC"),
        finalText,
        formatStat(final.stat, "UTC"),
        "",
      ].join("\n"),
    );
  });

  test("reconfig -file and -members replace the whole membership", async () => {
    const voters = [1, 2, 3].map((id) => started().memberLine(id));
    const observer = await observerLine();
    const file = join(files!.path, "members.cfg");
    await writeFile(file, ["# the voters and an observer", ...voters, observer.line, "version=1", ""].join("\n"));
    const run = await shell(
      ["--connect", started().connectString],
      [`addauth digest ${SUPER}`, `reconfig -file ${file}`, `reconfig -members ${voters.join(",")}`, `reconfig -file ${join(files!.path, "none.cfg")}`].join(
        "\n",
      ),
    );
    const final = await configuration();
    const [withObserver, withoutObserver] = committedVersions(run.stdout);
    assert.equal(withoutObserver, final.version.toString(16));
    assert.equal(
      run.stdout,
      [
        "Committed new configuration:",
        [...voters, observer.line, `version=${withObserver}`].join("\n"),
        "Committed new configuration:",
        [...voters, `version=${withoutObserver}`].join("\n"),
        "",
      ].join("\n"),
    );
    assert.match(run.stderr, /^Error processing \S+none\.cfg: ENOENT: no such file or directory/);
    assert.equal(run.code, 1);
  });
});
