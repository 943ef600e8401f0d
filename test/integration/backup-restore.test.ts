/**
 * Backup and restore with real parts. A three-member cluster takes writes while `corral backup`
 * streams a snapshot from one member's admin port (ZooKeeper 3.9's snapshot command: digest
 * authentication, every permission on /, the rate limit); `corral restore` lays the backup down as
 * the data dirs of a new three-member cluster, which then holds every write at or below the
 * backup's zxid and none after it. A damaged or truncated backup is refused and nothing is written.
 * The admin `restore` command brings a running server back to a backup in place.
 */
import assert from "node:assert/strict";
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { after, test } from "node:test";
import { Client } from "../../src/index.js";
import { CLI, runScript } from "../helpers/cli-process.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";
import { WriteLoad } from "../helpers/write-load.js";
import { SUPER_AUTH, SUPER_DIGEST } from "../helpers/zookeeper-workload.js";

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

async function cli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const run = runScript(CLI, args);
  const code = await run.exit;
  return { code, out: run.out(), err: run.err() };
}

/** One admin-port request; the body as text unless it is a backup. */
function admin(
  url: string,
  options: { method?: string; auth?: string; body?: Buffer } = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const call = request(url, { method: options.method ?? "GET", headers: options.auth === undefined ? {} : { authorization: options.auth } }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
    });
    call.on("error", reject);
    call.end(options.body);
  });
}

/** Sets data on one node again and again, remembering each value's mzxid. */
class CounterLoad {
  readonly written: { value: number; mzxid: bigint }[] = [];
  private running = true;
  private readonly done: Promise<void>;
  constructor(client: Client, path: string) {
    this.done = (async () => {
      for (let value = 1; this.running; value++) {
        const stat = await client.setData(path, String(value));
        this.written.push({ value, mzxid: stat.mzxid });
      }
    })();
  }
  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}

test("a backup taken under a write load, restored into a new three-member cluster, holds every write up to its zxid and none after", async () => {
  const dir = await makeTempDir("corral-backup-");
  cleanups.push(dir.remove);
  const source = await ClusterProcess.start({ voters: 3, httpPorts: true, superDigest: SUPER_DIGEST });
  cleanups.push(() => source.stop());
  const client = await Client.connect(source.connectString, { sessionTimeoutMs: 10_000, connectTimeoutMs: 30_000 });
  cleanups.push(() => client.close());
  await client.create("/load", "");
  await client.create("/counter", "0");
  const creates = new WriteLoad(client, "/load");
  const counter = new CounterLoad(client, "/counter");
  await waitFor("50 acknowledged creates", () => (creates.acked.length >= 50 ? true : undefined), 60_000);

  // The member the client writes through is the one backed up (any member would do).
  const member = source.server(1);
  const backupFile = join(dir.path, "cluster.backup");
  const backup = await cli(["backup", "--server", member.adminUrl.replace("http://", ""), "--out", backupFile, "--auth", SUPER_AUTH]);
  assert.equal(backup.code, 0, backup.err);
  const zxid = BigInt(/at zxid (0x[0-9a-f]+)/.exec(backup.out)![1]!);
  // A member of a running quorum is not restored in place: the others would sync it back.
  const inPlace = await admin(`${member.adminUrl}/commands/restore`, { method: "POST", auth: `digest ${SUPER_AUTH}`, body: await readFile(backupFile) });
  assert.equal(inPlace.status, 409);
  assert.match(inPlace.body.toString(), /Restore a cluster with corral restore into new data dirs/);
  const acknowledgedAtBackup = creates.acked.length;
  await waitFor("50 more acknowledged creates", () => (creates.acked.length >= acknowledgedAtBackup + 50 ? true : undefined), 60_000);
  await creates.stop();
  await counter.stop();
  assert.deepEqual(creates.failed, []);

  // What the source cluster says each acknowledged create's zxid is.
  const czxids = new Map<string, bigint>();
  for (const path of creates.acked) czxids.set(path, (await client.exists(path))!.czxid);
  const before = [...czxids].filter(([, czxid]) => czxid <= zxid).map(([path]) => path);
  const later = [...czxids].filter(([, czxid]) => czxid > zxid).map(([path]) => path);
  assert.ok(before.length >= 50 && later.length >= 50, `writes on both sides of the backup (${before.length} / ${later.length})`);
  const counterAtBackup = counter.written.filter((w) => w.mzxid <= zxid).at(-1)!;

  // Restore every member of a new cluster from the one file.
  const restoredDir = join(dir.path, "restored", "{id}");
  for (const id of [1, 2, 3]) {
    const restored = await cli(["restore", "--from", backupFile, "--data-dir", restoredDir, "--server-id", String(id)]);
    assert.equal(restored.code, 0, restored.err);
    assert.match(restored.out, new RegExp(`zxid 0x${zxid.toString(16)}, \\d+ znodes`));
  }
  const restoredCluster = await ClusterProcess.start({ voters: 3, dataDirOf: (id) => restoredDir.replace("{id}", String(id)) });
  cleanups.push(() => restoredCluster.stop());
  const reader = await Client.connect(restoredCluster.connectString, { sessionTimeoutMs: 10_000, connectTimeoutMs: 30_000 });
  cleanups.push(() => reader.close());
  await reader.sync("/");
  const present = new Set((await reader.getChildren("/load")).map((name) => `/load/${name}`));
  assert.deepEqual(
    before.filter((path) => !present.has(path)),
    [],
    "every create at or below the backup's zxid is there",
  );
  assert.deepEqual(
    later.filter((path) => present.has(path)),
    [],
    "no create after the backup's zxid is there",
  );
  const restoredCounter = await reader.getData("/counter");
  assert.equal(Buffer.from(restoredCounter.data).toString(), String(counterAtBackup.value));
  assert.equal(restoredCounter.stat.mzxid, counterAtBackup.mzxid);
  // The new cluster writes on, past the backup's zxid.
  const next = await reader.setData("/counter", "after the restore");
  assert.ok(next.mzxid > zxid);
});

test("a backup with a changed byte, cut short, or of another kind is refused by restore, and nothing is written", async () => {
  const dir = await makeTempDir("corral-backup-refused-");
  cleanups.push(dir.remove);
  const server = await ServerProcess.start({ dataDir: join(dir.path, "server"), adminPort: await freePort(), extraArgs: ["--super-digest", SUPER_DIGEST] });
  cleanups.push(() => server.stop());
  const client = await Client.connect(server.connectString);
  for (let i = 0; i < 20; i++) await client.create(`/n${i}`, `value ${i}`);
  await client.close();
  const good = join(dir.path, "good.backup");
  const taken = await cli(["backup", "--server", server.adminUrl.replace("http://", ""), "--out", good, "--auth", SUPER_AUTH]);
  assert.equal(taken.code, 0, taken.err);
  const bytes = await readFile(good);

  const flipped = Buffer.from(bytes);
  flipped[Math.floor(flipped.length / 2)]! ^= 0x10;
  const cases: [string, Buffer, RegExp][] = [
    ["flipped", flipped, /damaged: its SHA-256 does not match/],
    ["truncated", bytes.subarray(0, bytes.length - 100), /truncated or damaged: no trailer/],
    ["tiny", bytes.subarray(0, 20), /truncated: 20 bytes/],
    ["zookeeper", Buffer.concat([Buffer.from("ZKSN"), Buffer.alloc(100)]), /a ZooKeeper snapshot \(use corral import\)/],
  ];
  for (const [name, contents, message] of cases) {
    const file = join(dir.path, `${name}.backup`);
    await writeFile(file, contents);
    const target = join(dir.path, `restored-${name}`);
    const refused = await cli(["restore", "--from", file, "--data-dir", target]);
    assert.equal(refused.code, 2, `${name}: ${refused.err}`);
    assert.match(refused.err, message);
    assert.equal(refused.err.trim().split("\n").length, 1, `${name}: one line`);
    await assert.rejects(stat(target), { code: "ENOENT" }, `${name}: nothing written`);
  }
  assert.deepEqual(
    (await readdir(dir.path)).filter((name) => name.startsWith(".restored")),
    [],
    "no staging dir left behind",
  );
});

test("the admin snapshot command asks for authentication, every permission on /, and gives one backup per interval", async () => {
  const dir = await makeTempDir("corral-backup-auth-");
  cleanups.push(dir.remove);
  const server = await ServerProcess.start({ dataDir: join(dir.path, "server"), adminPort: await freePort(), extraArgs: ["--super-digest", SUPER_DIGEST] });
  cleanups.push(() => server.stop());
  const url = `${server.adminUrl}/commands/snapshot?streaming=true`;
  const missing = await admin(url);
  assert.equal(missing.status, 401);
  assert.match(missing.body.toString(), /Auth info is missing for the command/);
  assert.equal((await admin(url, { auth: "kerberos x" })).status, 401);

  // Only the super user (and whoever the ACL names) may take one once / has a closed ACL.
  const client = await Client.connect(server.connectString);
  await client.setACL("/", [{ perms: 31, id: { scheme: "digest", id: "alice:Ffo6p0Qt2qRRCkDDoWC4Rwp+X1k=" } }]);
  await client.close();
  const stranger = await admin(url, { auth: "digest mallory:guess" });
  assert.equal(stranger.status, 403);
  assert.match(stranger.body.toString(), /Not authorized/);

  const first = await admin(url, { auth: `digest ${SUPER_AUTH}` });
  assert.equal(first.status, 200);
  assert.equal(first.headers["content-type"], "application/octet-stream");
  assert.match(String(first.headers["last_zxid"]), /^0x[0-9a-f]+$/);
  assert.equal(Number(first.headers["snapshot_size"]), first.body.length);
  assert.equal(first.body.subarray(0, 4).toString(), "CRBK");
  const second = await admin(url, { auth: `digest ${SUPER_AUTH}` });
  assert.equal(second.status, 429);
});

test("the admin restore command brings a running server back to a backup, keeping its old data dir beside", async () => {
  const dir = await makeTempDir("corral-admin-restore-");
  cleanups.push(dir.remove);
  const dataDir = join(dir.path, "server");
  const server = await ServerProcess.start({ dataDir, adminPort: await freePort(), extraArgs: ["--super-digest", SUPER_DIGEST] });
  cleanups.push(() => server.stop());
  let client = await Client.connect(server.connectString);
  await client.create("/kept", "before the backup");
  const taken = await admin(`${server.adminUrl}/commands/snapshot`, { auth: `digest ${SUPER_AUTH}` });
  assert.equal(taken.status, 200);
  await client.create("/lost", "after the backup");
  await client.close();

  const damaged = Buffer.from(taken.body);
  damaged[damaged.length - 60]! ^= 1;
  const refused = await admin(`${server.adminUrl}/commands/restore`, { method: "POST", auth: `digest ${SUPER_AUTH}`, body: damaged });
  assert.equal(refused.status, 400);
  assert.match(refused.body.toString(), /SHA-256 does not match/);

  // The refused attempt spent the interval's restore: a server with a short interval takes the good one.
  await server.stop();
  await server.launch();
  const answer = await admin(`${server.adminUrl}/commands/restore`, { method: "POST", auth: `digest ${SUPER_AUTH}`, body: taken.body });
  assert.equal(answer.status, 200, answer.body.toString());
  assert.match(answer.body.toString(), new RegExp(`"last_zxid" : ${BigInt(String(taken.headers["last_zxid"]))}`));
  client = await Client.connect(server.connectString, { connectTimeoutMs: 30_000 });
  cleanups.push(() => client.close());
  // The client may still reach the server as it was, until it restarts.
  await waitFor("the restored tree", async () => ((await client.exists("/lost").catch(() => "not yet")) === null ? true : undefined), 30_000);
  assert.equal(Buffer.from((await client.getData("/kept")).data).toString(), "before the backup");
  assert.ok(
    (await readdir(dir.path)).some((name) => name.startsWith("server.before-restore-")),
    "the old data dir is kept",
  );
});
