/**
 * Persistent and persistent-recursive watches, removeWatches and removeAllWatches through the SDK
 * against one real server process: what a watcher sees of another session's writes. Zxids are
 * taken from the writer's own answers, so every assertion is on exact events, never on timing.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, type WatchedEvent } from "../../src/index.js";
import { ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";

let server: ServerProcess;
let removeDir: (() => Promise<void>) | undefined;
const clients: Client[] = [];

async function connect(suffix = ""): Promise<Client> {
  const client = await Client.connect(server.connectString + suffix, { sessionTimeoutMs: 4_000, connectTimeoutMs: 20_000 });
  clients.push(client);
  return client;
}

function recorder(): { seen: string[]; watcher: (e: WatchedEvent) => void } {
  const seen: string[] = [];
  return { seen, watcher: (e) => void seen.push(`${e.type} ${e.path} ${e.zxid}`) };
}

/**
 * After this, `watcher` has received every event of writes committed before the call: the sync
 * brings its server up to date, and a server sends an event before any later answer.
 */
async function caughtUp(watcher: Client): Promise<void> {
  await watcher.sync("/");
  await watcher.exists("/");
}

/** The zxid of a delete: its parent's pzxid right after it. */
async function deleteZxid(writer: Client, path: string): Promise<bigint> {
  await writer.delete(path);
  const parent = await writer.exists(path.slice(0, path.lastIndexOf("/")) || "/");
  assert.ok(parent);
  return parent.pzxid;
}

before(async () => {
  const dir = await makeTempDir("corral-watches-");
  removeDir = dir.remove;
  server = await ServerProcess.start({ dataDir: dir.path, tickMs: 100 });
});

after(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await server?.stop();
  await removeDir?.();
});

describe("persistent watches through the SDK", () => {
  test("a recursive watch sees every create, change and delete below it once, in zxid order; a persistent one its node's own events", async () => {
    const writer = await connect();
    const watcher = await connect();
    await writer.create("/tree", "");
    const recursive = recorder();
    const persistent = recorder();
    await watcher.addWatch("/tree", recursive.watcher, "persistent-recursive");
    await watcher.addWatch("/tree", persistent.watcher, "persistent");
    // Overlapping watches of the same session must not double anything.
    await watcher.addWatch("/tree/a", recursive.watcher, "persistent-recursive");

    const a = (await writer.createWithStat("/tree/a", "")).stat.czxid;
    const b = (await writer.createWithStat("/tree/a/b", "")).stat.czxid;
    const bChanged = (await writer.setData("/tree/a/b", "x")).mzxid;
    const bDeleted = await deleteZxid(writer, "/tree/a/b");
    const treeChanged = (await writer.setData("/tree", "y")).mzxid;
    await writer.create("/treeish", "");
    await writer.create("/elsewhere", "");
    await caughtUp(watcher);

    assert.deepEqual(recursive.seen, [
      `NodeCreated /tree/a ${a}`,
      `NodeCreated /tree/a/b ${b}`,
      `NodeDataChanged /tree/a/b ${bChanged}`,
      `NodeDeleted /tree/a/b ${bDeleted}`,
      `NodeDataChanged /tree ${treeChanged}`,
    ]);
    assert.deepEqual(persistent.seen, [`NodeChildrenChanged /tree ${a}`, `NodeDataChanged /tree ${treeChanged}`]);
  });

  test("under a chroot, a recursive watch on / sees the chroot's subtree with chroot-relative paths", async () => {
    const writer = await connect();
    await writer.create("/jail", "");
    const watcher = await connect("/jail");
    const seen = recorder();
    await watcher.addWatch("/", seen.watcher, "persistent-recursive");
    const inside = (await writer.createWithStat("/jail/x", "")).stat.czxid;
    await writer.create("/outside", "");
    await caughtUp(watcher);
    assert.deepEqual(seen.seen, [`NodeCreated /x ${inside}`]);
  });

  test("removeWatches stops one callback and tells it; the session's other callback on the same watch keeps firing", async () => {
    const writer = await connect();
    const watcher = await connect();
    await writer.create("/removal", "");
    const leaving = recorder();
    const staying = recorder();
    await watcher.addWatch("/removal", leaving.watcher, "persistent-recursive");
    await watcher.addWatch("/removal", staying.watcher, "persistent-recursive");
    const first = (await writer.createWithStat("/removal/1", "")).stat.czxid;
    await caughtUp(watcher);
    await watcher.removeWatches("/removal", leaving.watcher, "persistent-recursive");
    const second = (await writer.createWithStat("/removal/2", "")).stat.czxid;
    await caughtUp(watcher);
    assert.deepEqual(leaving.seen, [`NodeCreated /removal/1 ${first}`, "PersistentWatchRemoved /removal -1"]);
    assert.deepEqual(staying.seen, [`NodeCreated /removal/1 ${first}`, `NodeCreated /removal/2 ${second}`]);
  });

  test("removeAllWatches tells every callback of that type and none fires again; other watches of the path stay", async () => {
    const writer = await connect();
    const watcher = await connect();
    await writer.create("/all", "");
    const one = recorder();
    const two = recorder();
    const oneTime = recorder();
    await watcher.addWatch("/all", one.watcher, "persistent");
    await watcher.addWatch("/all", two.watcher, "persistent");
    await watcher.getData("/all", { watch: oneTime.watcher });
    await watcher.removeAllWatches("/all", "persistent");
    assert.deepEqual(one.seen, ["PersistentWatchRemoved /all -1"]);
    assert.deepEqual(two.seen, ["PersistentWatchRemoved /all -1"]);
    const changed = (await writer.setData("/all", "1")).mzxid;
    await writer.create("/all/child", "");
    await caughtUp(watcher);
    assert.deepEqual(one.seen, ["PersistentWatchRemoved /all -1"]);
    assert.deepEqual(two.seen, ["PersistentWatchRemoved /all -1"]);
    assert.deepEqual(oneTime.seen, [`NodeDataChanged /all ${changed}`]);
  });

  test("a watch on a node that does not exist yet fires on its creation and keeps firing after its deletion", async () => {
    const writer = await connect();
    const watcher = await connect();
    const seen = recorder();
    await watcher.addWatch("/later", seen.watcher, "persistent");
    const created = (await writer.createWithStat("/later", "")).stat.czxid;
    const deleted = await deleteZxid(writer, "/later");
    const again = (await writer.createWithStat("/later", "")).stat.czxid;
    await caughtUp(watcher);
    assert.deepEqual(seen.seen, [`NodeCreated /later ${created}`, `NodeDeleted /later ${deleted}`, `NodeCreated /later ${again}`]);
  });
});
