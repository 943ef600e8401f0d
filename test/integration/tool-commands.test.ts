/**
 * The offline tools (backup, restore, import, export, data dump, data log) given bad input, as a
 * user runs them: one line on stderr naming what is wrong, exit code 2, and nothing written. And
 * the inspection commands read a running member's files without disturbing it.
 */
import assert from "node:assert/strict";
import { mkdir, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Client } from "../../src/index.js";
import { DataTree } from "../../src/store/data-tree.js";
import { zookeeperImageOf } from "../../src/zookeeper-data/convert.js";
import { encodeZooKeeperSnapshot } from "../../src/zookeeper-data/snapshot-file.js";
import { CLI, runScript } from "../helpers/cli-process.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";

let dir: { path: string; remove: () => Promise<void> };
let running: ServerProcess;

before(async () => {
  dir = await makeTempDir("corral-tools-");
  running = await ServerProcess.start({ dataDir: join(dir.path, "running") });
  const client = await Client.connect(running.connectString);
  await client.create("/written", "by a client of the running server");
  await client.close();
  await mkdir(join(dir.path, "not-zookeeper"));
  await writeFile(join(dir.path, "a-file"), "not a directory, not a backup");
});

after(async () => {
  await running?.stop();
  await dir?.remove();
});

async function cli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const run = runScript(CLI, args);
  const code = await run.exit;
  return { code, out: run.out(), err: run.err() };
}

async function refused(args: string[], message: RegExp): Promise<void> {
  const result = await cli(args);
  assert.equal(result.code, 2, `corral ${args.join(" ")}: exit ${result.code}, ${result.err}`);
  assert.equal(result.err.trimEnd().split("\n").length, 1, `one line: ${result.err}`);
  assert.match(result.err, message);
}

const path = (name: string) => join(dir.path, name);

test("restore refuses a missing file, a directory, a file that is no backup, and a running member's data dir", async () => {
  await refused(["restore", "--from", path("nowhere.backup"), "--data-dir", path("r1")], /^corral restore: .*nowhere\.backup does not exist$/m);
  await refused(["restore", "--from", path("not-zookeeper"), "--data-dir", path("r1")], /is a directory, not a backup file/);
  await refused(["restore", "--from", path("a-file"), "--data-dir", path("r1")], /not a corral backup/);
  await refused(["restore", "--data-dir", path("r1")], /--from: required/);
  await refused(["restore", "--from", path("a-file"), "--data-dir", path("{id}")], /--data-dir: holds \{id\}: give --server-id/);
  await refused(["restore", "--from", path("a-file"), "--data-dir", path("r1"), "--server-id", "0"], /--server-id: expected 1..254/);
  await assert.rejects(stat(path("r1")), { code: "ENOENT" });

  // A good backup, for the data dir checks (they come after the backup's).
  const backup = path("good.backup");
  const admin = await ServerProcess.start({ dataDir: path("backed-up"), adminPort: await freePort() });
  try {
    const taken = await cli(["backup", "--server", admin.adminUrl.replace("http://", ""), "--out", backup, "--auth", "anyone:at-all"]);
    assert.equal(taken.code, 0, taken.err);
  } finally {
    await admin.stop();
  }
  await refused(["restore", "--from", backup, "--data-dir", path("running")], /running is in use by a running corral server: stop it first/);
  await refused(["restore", "--from", backup, "--data-dir", path("backed-up")], /already holds data: .*move .* away first/);
});

test("backup refuses missing flags, an --out it cannot write, and says who refused it", async () => {
  await refused(["backup", "--out", path("x.backup"), "--auth", "a:b"], /--server: required/);
  await refused(
    ["backup", "--server", "127.0.0.1:1", "--out", path("missing-dir/x.backup"), "--auth", "a:b"],
    /--out: the directory .*missing-dir does not exist/,
  );
  await refused(["backup", "--server", "127.0.0.1:1", "--out", path("a-file"), "--auth", "a:b"], /--out: .*a-file exists already/);
  await refused(["backup", "--server", "127.0.0.1", "--out", path("x.backup"), "--auth", "a:b"], /--server: expected HOST:PORT/);
  await refused(["backup", "--server", "127.0.0.1:1", "--out", path("x.backup")], /--auth: required/);
  await refused(["backup", "--server", "127.0.0.1:1", "--out", path("x.backup"), "--bogus", "1"], /--bogus: unknown option/);
  const unreachable = await cli(["backup", "--server", "127.0.0.1:1", "--out", path("x.backup"), "--auth", "a:b"]);
  assert.equal(unreachable.code, 1);
  assert.match(unreachable.err, /cannot reach 127\.0\.0\.1:1/);
});

test("import refuses a missing dir, a dir that is not ZooKeeper's, and a running member's data dir", async () => {
  await refused(["import", "--zookeeper-data-dir", path("nowhere"), "--data-dir", path("i1")], /the ZooKeeper data dir does not exist/);
  await refused(["import", "--zookeeper-data-dir", path("not-zookeeper"), "--data-dir", path("i1")], /has no version-2\/ directory: not a ZooKeeper data dir/);
  await mkdir(path("empty-zookeeper/version-2"), { recursive: true });
  await refused(["import", "--zookeeper-data-dir", path("empty-zookeeper"), "--data-dir", path("i1")], /holds neither snapshots nor txn logs/);
  await writeFile(path("empty-zookeeper/version-2/snapshot.10"), "garbage");
  await refused(["import", "--zookeeper-data-dir", path("empty-zookeeper"), "--data-dir", path("i1")], /no snapshot reads back whole/);
  await assert.rejects(stat(path("i1")), { code: "ENOENT" });
  // A ZooKeeper data dir holding an empty tree's snapshot: fine to import, but not over a running member.
  await mkdir(path("zookeeper/version-2"), { recursive: true });
  await writeFile(path("zookeeper/version-2/snapshot.0"), encodeZooKeeperSnapshot(zookeeperImageOf(new DataTree())));
  await refused(
    ["import", "--zookeeper-data-dir", path("zookeeper"), "--data-dir", path("running")],
    /running is in use by a running corral server: stop it first/,
  );
  const imported = await cli(["import", "--zookeeper-data-dir", path("zookeeper"), "--data-dir", path("i2")]);
  assert.equal(imported.code, 0, imported.err);
  assert.match(imported.out, /imported ZooKeeper's tree at zxid 0x0 into .*i2: 4 znodes, 0 sessions/);
});

test("export and the data commands refuse a missing dir and one that is not corral's", async () => {
  for (const command of [
    ["export", "--zookeeper-data-dir", path("out")],
    ["data", "dump"],
    ["data", "log"],
  ]) {
    await refused([...command, "--data-dir", path("nowhere")], /nowhere does not exist/);
    await refused([...command, "--data-dir", path("not-zookeeper")], /is not a corral data dir/);
    await refused([...command, "--data-dir", path("a-file")], /is not a directory/);
  }
  await refused(["data"], /^corral data: which\? dump or log \(corral data --help\)$/m);
  await refused(["data", "dumb", "--data-dir", path("running")], /^corral data dumb: which\? dump or log/m);
});

test("data dump, data log and export read a running member's files, leaving it serving", async () => {
  const dump = await cli(["data", "dump", "--data-dir", path("running")]);
  assert.equal(dump.code, 0, dump.err);
  assert.match(dump.out, /its server is running: read from a copy of the log/);
  assert.match(dump.out, /^\/written\n(?: {2}.*\n)*? {2}data = "by a client of the running server"$/m);
  const json = await cli(["data", "dump", "--data-dir", path("running"), "--json"]);
  const parsed = JSON.parse(json.out) as { serverRunning: boolean; nodes: { path: string }[] };
  assert.ok(parsed.serverRunning && parsed.nodes.some((node) => node.path === "/written"));
  const log = await cli(["data", "log", "--data-dir", path("running")]);
  assert.equal(log.code, 0, log.err);
  assert.match(log.out, /zxid 0x[0-9a-f]+ create \/written persistent dataLength 33/);
  const exported = await cli(["export", "--data-dir", path("running"), "--zookeeper-data-dir", path("exported")]);
  assert.equal(exported.code, 0, exported.err);
  assert.ok((await readdir(path("exported/version-2"))).some((name) => /^snapshot\.[0-9a-f]+$/.test(name)));
  await refused(["export", "--data-dir", path("running"), "--zookeeper-data-dir", path("exported")], /holds ZooKeeper data already/);
  const client = await Client.connect(running.connectString);
  assert.equal(Buffer.from((await client.getData("/written")).data).toString(), "by a client of the running server");
  await client.close();
});
