/**
 * `corral shell` against a real standalone server process: scripts on stdin and single commands
 * from the arguments print zkCli's answers on stdout and its error wording on stderr, with exit
 * code 0 when every command succeeded, 1 when one failed, 2 for bad flags.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { Client } from "../../src/index.js";
import { helpText } from "../../src/cli/shell-commands.js";
import { formatStat } from "../../src/cli/shell-format.js";
import { ServerProcess, freePort } from "../helpers/server-process.js";
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
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  child.stdin!.end(stdin);
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
    [
      "create /err 1",
      "create /err 2",
      "set -v 7 /err x",
      "create /err/child c",
      "delete /err",
      "get /err/none",
      "frob /err",
      "get",
      "get /err",
    ].join("\n"),
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
