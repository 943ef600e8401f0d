/**
 * Disk faults (docs/architecture.md §1 item 5): a server whose durable write fails stops itself — exit code
 * 70 and one fatal log line — rather than acknowledge the write or carry on with a log it can no
 * longer trust. The failure is injected at the LevelDB / snapshot-file boundary by the test-only
 * CORRAL_TEST_DISK_FAULT switch (src/server/disk-faults.ts), so the server runs exactly the code a
 * real I/O error would make it run. Every test then checks what the clients were told against
 * what survived: no acknowledged write is ever lost.
 */
import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { Client, ZkError } from "../../src/index.js";
import { DISK_FAULT_ENV } from "../../src/server/disk-faults.js";
import { connectTo, createSurvivingFailover, syncModeLines, treesAt, waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess, type ClusterOptions } from "../helpers/cluster-process.js";
import { ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

const FATAL_MESSAGE = "a durable write failed: stopping without answering (fail-stop)";
const FAIL_STOP_EXIT_CODE = 70;
const VOTERS = [1, 2, 3];
const CLUSTER: ClusterOptions = { voters: 3, tickMs: 200, initLimitTicks: 20, syncLimitTicks: 10 };
/** Bounds every write loop: a fault that never fires fails the test instead of hanging it. */
const WRITES_MAX = 200;

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");
const name = (i: number) => `w-${String(i).padStart(4, "0")}`;

interface LogLine {
  level: number;
  msg: string;
  err?: { message?: string; type?: string };
}

function logLines(stderr: string, msg: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const line of stderr.split("\n")) {
    if (!line.includes(msg)) continue;
    try {
      const parsed = JSON.parse(line) as LogLine;
      if (parsed.msg === msg) lines.push(parsed);
    } catch {
      // not a log line (a stack trace, a torn line)
    }
  }
  return lines;
}

/** The process stopped on its own with code 70 and said why in exactly one fatal line naming the fault. */
async function assertFailStopped(server: ServerProcess, fault: RegExp): Promise<void> {
  const code = await server.waitForExit(60_000);
  const fatal = logLines(server.stderr, FATAL_MESSAGE);
  assert.equal(code, FAIL_STOP_EXIT_CODE, `exit code (stderr tail: ${server.stderr.slice(-2_000)})`);
  assert.equal(fatal.length, 1, "one fatal line");
  assert.equal(fatal[0]!.level, 60, "logged at level fatal");
  assert.match(fatal[0]!.err?.message ?? "", fault);
}

/** The start-up warning every armed server prints. */
function assertWarned(server: ServerProcess): void {
  assert.ok(server.stderr.includes(`TEST ONLY: ${DISK_FAULT_ENV} is set`), "an armed server warns at start-up");
}

/**
 * Waits until `server` has logged that it serves clients after `mark` (an offset in its stderr):
 * past its sync, so its epochs and log are durable. A "following" role line alone comes before that.
 */
async function waitServing(server: ServerProcess, mark = 0): Promise<void> {
  await waitFor(`server on port ${server.port} serving`, () => (server.stderr.slice(mark).includes('"serving clients"') ? true : undefined), 30_000);
}

/**
 * Restarts `server` with `spec` armed. The fault may strike before the helper has seen the port
 * open (a follower's first writes come with its sync): a process that already exited is the
 * test's to judge, not a failed restart.
 */
async function restartArmed(server: ServerProcess, spec: string): Promise<void> {
  try {
    await server.restart({ env: { [DISK_FAULT_ENV]: spec } });
  } catch (error) {
    if (server.running || server.exitCode === null) throw error;
  }
}

/**
 * One session writes `<parent>/w-NNNN` one at a time until a write fails or `stop()` holds. Answers
 * the writes acknowledged and the one that failed (with its error code), if any.
 */
async function writeUntilFailure(
  zk: Client,
  parent: string,
  stop: () => boolean = () => false,
): Promise<{ acked: string[]; failed?: { path: string; code: string } }> {
  const acked: string[] = [];
  for (let i = 0; i < WRITES_MAX && !stop(); i++) {
    const path = `${parent}/${name(i)}`;
    try {
      await zk.create(path, `value ${i}`);
      acked.push(path);
    } catch (error) {
      assert.ok(error instanceof ZkError, String(error));
      return { acked, failed: { path, code: error.code } };
    }
  }
  return { acked };
}

/** Every node under `parent` (after a sync on the client's server), as path → data. */
async function childrenWithData(zk: Client, parent: string): Promise<Map<string, string>> {
  await zk.sync(parent);
  const nodes = new Map<string, string>();
  for (const child of (await zk.getChildren(parent)).sort()) nodes.set(`${parent}/${child}`, text((await zk.getData(`${parent}/${child}`)).data));
  return nodes;
}

function assertAllPresent(present: ReadonlyMap<string, string>, acked: readonly string[], where: string): void {
  for (const path of acked) assert.ok(present.has(path), `acknowledged write ${path} lost (${where})`);
}

describe("disk faults: fail-stop", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  });

  async function standalone(spec: string | undefined, options: { snapshotEveryTxns?: number } = {}): Promise<{ server: ServerProcess; dir: string }> {
    const dir = await makeTempDir();
    cleanups.push(dir.remove);
    const server = await ServerProcess.start({
      dataDir: dir.path,
      tickMs: 100,
      ...(spec === undefined ? {} : { env: { [DISK_FAULT_ENV]: spec } }),
      ...options,
    });
    cleanups.push(() => server.stop());
    return { server, dir: dir.path };
  }

  async function connect(connectString: string): Promise<Client> {
    const zk = await Client.connect(connectString, { sessionTimeoutMs: 4_000, connectTimeoutMs: 30_000 });
    cleanups.push(() => zk.close());
    return zk;
  }

  /** A fresh three-voter cluster, every member past its first sync. */
  async function cluster(options: Partial<ClusterOptions> = {}): Promise<ClusterProcess> {
    const started = await ClusterProcess.start({ ...CLUSTER, ...options });
    cleanups.push(() => started.stop());
    await waitForLeader(started);
    for (const server of started.servers.values()) await waitServing(server);
    return started;
  }

  /** Stops `id` cleanly and brings it back with `spec` armed, under the same leader, serving. */
  async function rearm(c: ClusterProcess, id: number, leader: number, spec: string): Promise<void> {
    const server = c.server(id);
    await server.stop();
    const mark = server.stderr.length;
    await restartArmed(server, spec);
    await waitFor(`server ${id} rejoined armed`, () => (c.agreedLeader() === leader && c.roles().get(id)?.role === "following" ? true : undefined), 30_000);
    await waitServing(server, mark);
    assertWarned(server);
  }

  test("standalone: the write whose log batch fails is never acknowledged, the server exits 70, and every acknowledged write survives the restart", async () => {
    // Batch 1 is the session, 2 is /a, so three creates under /a succeed before batch 6 fails.
    const { server } = await standalone("append:6");
    assertWarned(server);
    const zk = await connect(server.connectString);
    await zk.create("/a", "");
    const { acked, failed } = await writeUntilFailure(zk, "/a");
    assert.ok(acked.length >= 1, "some writes were acknowledged before the fault");
    assert.ok(failed, "a write failed");
    assert.equal(failed.code, "CONNECTIONLOSS", "the failing write is answered by the connection's loss, not an OK");
    await assertFailStopped(server, /txn log failed: IO error: injected test fault: append write failed/);
    await zk.close();

    await server.restart({ env: {} });
    const check = await connect(server.connectString);
    const present = await childrenWithData(check, "/a");
    assert.deepEqual([...present.keys()], acked, "exactly the acknowledged writes: the failed batch never reached the log");
    for (const [index, path] of acked.entries()) assert.equal(present.get(path), `value ${index}`);
    await check.close();
  });

  test("standalone: a batch that reached the disk before its sync failed is still never acknowledged", async () => {
    const { server } = await standalone("append:5:after");
    const zk = await connect(server.connectString);
    await zk.create("/after", "");
    const { acked, failed } = await writeUntilFailure(zk, "/after");
    assert.ok(failed && failed.code === "CONNECTIONLOSS", `the write whose sync failed got ${JSON.stringify(failed)}`);
    await assertFailStopped(server, /injected test fault: append sync failed after the write/);
    await zk.close();

    await server.restart({ env: {} });
    const check = await connect(server.connectString);
    const present = await childrenWithData(check, "/after");
    assertAllPresent(present, acked, "after restart");
    // Whether the data of a failed fsync survives is the disk's business; here it did (the fault
    // strikes after LevelDB wrote it), and an unacknowledged write that survives is allowed.
    assert.deepEqual([...present.keys()], [...acked, failed.path]);
    await check.close();
  });

  test("standalone: a failed snapshot is logged and the server carries on; nothing is lost", async () => {
    const { server, dir } = await standalone("snapshot:1", { snapshotEveryTxns: 10 });
    const zk = await connect(server.connectString);
    await zk.create("/snap", "");
    for (let i = 0; i < 40; i++) await zk.create(`/snap/${name(i)}`, `value ${i}`);
    const failures = await waitFor("the snapshot failure's log line", () => {
      const lines = server.stderr.split("\n").filter((line) => line.includes('"snapshot failed: carrying on'));
      return lines.length > 0 ? lines : undefined;
    });
    assert.equal(failures.length, 1, "only the first snapshot was made to fail");
    assert.match(failures[0]!, /EIO: i\/o error, write \(injected test fault: snapshot write failed\)/);
    assert.ok(server.running, "a failed snapshot does not stop the server");
    assert.equal(logLines(server.stderr, FATAL_MESSAGE).length, 0);
    // The next snapshots are written as usual.
    await waitFor("a later snapshot file", async () =>
      (await readdir(join(dir, "snapshots"))).some((f) => /^snapshot\.[0-9a-f]{16}$/.test(f)) ? true : undefined,
    );
    await zk.close();

    assert.equal(await server.stop(), 0);
    await server.restart({ env: {} });
    const check = await connect(server.connectString);
    assert.equal((await childrenWithData(check, "/snap")).size, 40);
    await check.close();
  });

  test("standalone: a failed log purge after a snapshot stops the server at once, not at its next write", async () => {
    // A server snapshots after a count of txns drawn from (N/2, N]: with N = 2 that is always 2.
    const { server } = await standalone("purge:1", { snapshotEveryTxns: 2 });
    const zk = await connect(server.connectString);
    // The session and /p are txns 1 and 2: /p starts the snapshot whose retention purges the log.
    // Nothing is written after it.
    await zk.create("/p", "value");
    await assertFailStopped(server, /txn log failed: IO error: injected test fault: purge write failed/);
    await zk.close();

    await server.restart({ env: {} });
    const check = await connect(server.connectString);
    assert.equal(text((await check.getData("/p")).data), "value");
    await check.close();
  });

  test("a follower whose log batch fails exits 70 before acking it; the quorum left keeps serving and every acknowledged write survives", async () => {
    const c = await cluster();
    const leader = await waitForLeader(c);
    const follower = VOTERS.find((id) => id !== leader)!;
    const other = VOTERS.find((id) => id !== leader && id !== follower)!;
    await rearm(c, follower, leader, "append:4");

    const zk = await connect(c.server(leader).connectString);
    await zk.create("/b", "");
    const { acked, failed } = await writeUntilFailure(zk, "/b", () => !c.server(follower).running);
    assert.equal(failed, undefined, "the leader kept its quorum: no write failed");
    await assertFailStopped(c.server(follower), /txn log failed: IO error: injected test fault: append write failed/);
    // The leader and the other follower are a quorum: writes go on.
    for (let i = 0; i < 20; i++) {
      const path = `/b/after-${i}`;
      await createSurvivingFailover(zk, path, "after the follower stopped");
      acked.push(path);
    }
    await zk.close();
    for (const [index, view] of (await treesAt(c, [leader, other], "/b")).entries()) assertAllPresent(view, acked, `server ${[leader, other][index]}`);

    await c.server(follower).restart({ env: {} });
    await waitFor("the follower rejoined without the fault", () => (c.roles().get(follower)?.role === "following" ? true : undefined), 30_000);
    const views = await treesAt(c, VOTERS, "/b");
    assertAllPresent(views[0]!, acked, "after the follower's return");
    for (const view of views) assert.deepEqual(view, views[0]);
    await c.stop();
  });

  test("a leader whose log batch fails exits 70 without acknowledging it; a new leader serves every acknowledged write and the old one rejoins", async () => {
    const c = await cluster();
    const firstLeader = await waitForLeader(c);
    // Arm a follower, then make it the leader: with equal logs the higher id wins the election.
    const followers = VOTERS.filter((id) => id !== firstLeader);
    const target = Math.max(...followers);
    await rearm(c, target, firstLeader, "append:8");
    await c.server(firstLeader).crash();
    assert.equal(await waitForLeader(c, firstLeader), target, "the armed server leads (equal logs, higher id)");
    const mark = c.server(firstLeader).stderr.length;
    await c.server(firstLeader).restart();
    await waitFor(
      "three servers under the armed leader",
      () => (c.agreedLeader() === target && c.roles().get(firstLeader)?.role === "following" ? true : undefined),
      30_000,
    );
    await waitServing(c.server(firstLeader), mark);

    const zk = await Client.connect(c.server(target).connectString, { sessionTimeoutMs: 4_000, connectTimeoutMs: 30_000 });
    cleanups.push(() => zk.close());
    await zk.create("/c", "");
    const { acked, failed } = await writeUntilFailure(zk, "/c");
    assert.ok(acked.length >= 1, "some writes were acknowledged before the fault");
    assert.ok(failed, "a write failed");
    assert.equal(failed.code, "CONNECTIONLOSS", "the leader stopped instead of answering");
    await assertFailStopped(c.server(target), /txn log failed: IO error: injected test fault: append write failed/);
    await zk.close();

    const newLeader = await waitForLeader(c, target);
    const survivors = VOTERS.filter((id) => id !== target);
    assert.ok(survivors.includes(newLeader));
    for (const [index, view] of (await treesAt(c, survivors, "/c")).entries()) {
      assertAllPresent(view, acked, `server ${survivors[index]}`);
      // The failed write may have reached the followers' logs and been committed by the new
      // leader (its outcome was unknown to the client); nothing else may appear.
      for (const path of view.keys()) if (path !== "/c") assert.ok(acked.includes(path) || path === failed.path, `unexpected ${path}`);
    }

    await c.server(target).restart({ env: {} });
    await waitFor(
      "the old leader rejoined as a follower",
      () => (c.agreedLeader() === newLeader && c.roles().get(target)?.role === "following" ? true : undefined),
      30_000,
    );
    const views = await treesAt(c, VOTERS, "/c");
    for (const view of views) assert.deepEqual(view, views[0]);
    assertAllPresent(views[0]!, acked, "after the old leader's return");
    await c.stop();
  });

  test("a server whose epoch write fails during an election exits 70 instead of taking part in the new epoch", async () => {
    const c = await cluster();
    const firstLeader = await waitForLeader(c);
    const target = VOTERS.find((id) => id !== firstLeader)!;
    const other = VOTERS.find((id) => id !== firstLeader && id !== target)!;
    // Rejoining the epoch it already accepted writes no epoch: the fault waits for the next election.
    await rearm(c, target, firstLeader, "epoch");
    const zk = await connectTo(c, firstLeader);
    await zk.create("/d", "");
    const acked: string[] = [];
    for (let i = 0; i < 20; i++) {
      await zk.create(`/d/${name(i)}`, `value ${i}`);
      acked.push(`/d/${name(i)}`);
    }
    await zk.close();

    c.server(target).stderr = "";
    await c.server(firstLeader).crash();
    await assertFailStopped(c.server(target), /txn log failed: IO error: injected test fault: stable write failed/);
    const after = c.server(target).stderr;
    assert.ok(!after.includes('"zab phase"'), "it never reached the new epoch's synchronization");
    assert.ok(!after.includes('"serving clients"'), "it never served in the new epoch");

    // The server left alone is no quorum; the old leader's return makes one.
    await c.server(firstLeader).restart();
    const newLeader = await waitForLeader(c, target);
    assert.ok([firstLeader, other].includes(newLeader));
    for (const [index, view] of (await treesAt(c, [firstLeader, other], "/d")).entries())
      assertAllPresent(view, acked, `server ${[firstLeader, other][index]}`);

    await c.server(target).restart({ env: {} });
    await waitFor(
      "the server rejoined without the fault",
      () => (c.agreedLeader() === newLeader && c.roles().get(target)?.role === "following" ? true : undefined),
      30_000,
    );
    const views = await treesAt(c, VOTERS, "/d");
    for (const view of views) assert.deepEqual(view, views[0]);
    assert.equal(views[0]!.size, acked.length + 1);
    await c.stop();
  });

  for (const [spec, fault] of [
    ["snapshot", /EIO: i\/o error, write \(injected test fault: snapshot write failed\)/],
    ["truncate", /txn log failed: IO error: injected test fault: truncate write failed/],
  ] as const) {
    test(`a follower synced by SNAP whose ${spec} write fails exits 70 (the installed snapshot is its only copy); it rejoins once the fault is gone`, async () => {
      const commitLogCount = 40;
      const c = await cluster({ commitLogCount });
      const leader = await waitForLeader(c);
      const follower = VOTERS.find((id) => id !== leader)!;
      const others = VOTERS.filter((id) => id !== follower);
      const zk = await Client.connect(others.map((id) => c.server(id).connectString).join(","), { sessionTimeoutMs: 4_000, connectTimeoutMs: 30_000 });
      cleanups.push(() => zk.close());
      await createSurvivingFailover(zk, "/s", "");
      await c.server(follower).stop();
      const acked: string[] = [];
      for (let i = 0; i < 3 * commitLogCount; i++) {
        await createSurvivingFailover(zk, `/s/${name(i)}`, `value ${i}`);
        acked.push(`/s/${name(i)}`);
      }
      const seen = syncModeLines(c.server(leader).stderr).length;
      await restartArmed(c.server(follower), spec);
      await assertFailStopped(c.server(follower), fault);
      const sync = await waitFor(`leader ${leader} syncs follower ${follower}`, () =>
        syncModeLines(c.server(leader).stderr)
          .slice(seen)
          .find((line) => line.learner === follower),
      );
      assert.equal(sync.mode, "SNAP", JSON.stringify(sync));

      await createSurvivingFailover(zk, "/s/after", "the quorum left still serves");
      acked.push("/s/after");
      await zk.close();
      await c.server(follower).restart({ env: {} });
      await waitFor("the follower rejoined without the fault", () => (c.roles().get(follower)?.role === "following" ? true : undefined), 30_000);
      const views = await treesAt(c, VOTERS, "/s");
      for (const view of views) assert.deepEqual(view, views[0]);
      assertAllPresent(views[0]!, acked, "after the follower's return");
      await c.stop();
    });
  }
});
