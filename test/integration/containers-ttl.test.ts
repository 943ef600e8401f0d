/**
 * Container and TTL nodes on real server processes: a three-voter cluster whose leader scans every
 * 200 ms, and a standalone server with TTL nodes left disabled. What is asserted is what happened
 * (which nodes exist on which server, in which epoch a delete committed, that a TTL node was never
 * seen gone before its TTL), never how long anything took.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, op, ZkError, ZkErrorCode, type Stat } from "../../src/index.js";
import { CREATE_MODE_FLAGS, TTL_MS_MAX } from "../../src/common/znode.js";
import { connectTo, waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { RawStream } from "../helpers/raw-session.js";
import { ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

const SCAN_INTERVAL_MS = 200;
const epochOf = (zxid: bigint): bigint => zxid >> 32n;

/** Whether `path` exists on the server `client` talks to, once it has applied everything committed before. */
async function existsSynced(client: Client, path: string): Promise<Stat | null> {
  await client.sync(path);
  return client.exists(path);
}

function isZkError(code: ZkError["code"]) {
  return (error: unknown) => {
    assert.ok(error instanceof ZkError, `expected a ZkError ${code}, got ${String(error)}`);
    assert.equal(error.code, code);
    return true;
  };
}

describe("three voters, container cleanup every 200 ms, TTL nodes enabled", () => {
  let cluster: ClusterProcess;
  const clients: Client[] = [];
  before(async () => {
    cluster = await ClusterProcess.start({
      voters: 3,
      tickMs: 200,
      initLimitTicks: 20,
      syncLimitTicks: 10,
      config: { ttlNodesEnabled: true, containerCheckIntervalMs: SCAN_INTERVAL_MS },
    });
    await waitForLeader(cluster);
    for (const id of [1, 2, 3]) clients.push(await connectTo(cluster, id));
  });
  after(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await cluster?.stop();
  });

  test("a container disappears from every server after its last child goes; unused and occupied containers stay", async () => {
    const [one, two, three] = clients as [Client, Client, Client];
    await one.create("/lock", "", { mode: "container" });
    await one.create("/fresh", "", { mode: "container" });
    await one.create("/occupied", "", { mode: "container" });
    await two.create("/occupied/member", "");
    const holder = await two.create("/lock/holder-", "", { mode: "ephemeral-sequential" });
    const seen = await existsSynced(three, "/lock");
    assert.ok(seen);
    assert.equal(seen.ephemeralOwner, 0n, "a container shows ephemeralOwner 0, as in ZooKeeper");

    // A witness container emptied now: once it is gone, scans have run while /lock held its child.
    await three.create("/witness", "", { mode: "container" });
    await three.delete(await three.create("/witness/x", ""));
    await waitFor("the witness container to be deleted", async () => ((await existsSynced(one, "/witness")) === null ? true : undefined));
    assert.ok(await existsSynced(one, "/lock"), "a container with a child is never deleted");

    await two.delete(holder);
    for (const client of clients) {
      await waitFor("the emptied container to vanish on every server", async () => ((await existsSynced(client, "/lock")) === null ? true : undefined));
    }
    for (const client of clients) {
      assert.ok(await existsSynced(client, "/fresh"), "a container that never had a child stays");
      assert.ok(await existsSynced(client, "/occupied"), "a container with a child stays");
    }
  });

  test("bad TTLs sent past the SDK get BADARGUMENTS and the session stays usable", async () => {
    const stream = RawStream.open(cluster.server(1).connectString);
    try {
      assert.equal((await stream.connect()).err, 0);
      let xid = 1;
      const create = (path: string, mode: number, ttlMs: string) => stream.request({ xid: xid++, create: { path, mode, ttlMs } });
      const ttlMode = CREATE_MODE_FLAGS["persistent-with-ttl"];
      for (const [mode, ttlMs, what] of [
        [ttlMode, "0", "a TTL of 0"],
        [ttlMode, String(TTL_MS_MAX + 1), "a TTL above 2^40 - 1"],
        [CREATE_MODE_FLAGS["persistent-sequential-with-ttl"], "0", "a sequential TTL node without a TTL"],
        [CREATE_MODE_FLAGS.persistent, "1000", "a TTL on a persistent node"],
        [CREATE_MODE_FLAGS.container, "1000", "a TTL on a container"],
      ] as const) {
        assert.equal((await create("/bad-ttl", mode, ttlMs)).err, ZkErrorCode.BADARGUMENTS, what);
      }
      assert.equal((await create("/good-ttl", ttlMode, "600000")).err, 0, "the same session still creates");
      await assert.rejects(clients[0]!.create("/sdk-ttl", "", { mode: "persistent-with-ttl", ttlMs: 0 }), isZkError("BADARGUMENTS"));
      assert.equal(await existsSynced(clients[1]!, "/bad-ttl"), null, "nothing was created by a refused request");
    } finally {
      stream.end();
    }
  });

  test("a TTL node created under one leader expires under the next, never before its TTL; one with a child stays", async () => {
    const leader = await waitForLeader(cluster);
    const followers = [1, 2, 3].filter((id) => id !== leader);
    const zk = await Client.connect(followers.map((id) => cluster.server(id).connectString).join(","), { sessionTimeoutMs: 6_000, connectTimeoutMs: 30_000 });
    try {
      const ttlMs = 3_000;
      await zk.create("/ttl-home", "");
      // One multi: created apart, the parent could expire (1 ms TTL, childless) before its child came.
      await zk.multi([op.create("/ttl-parent", "", { mode: "persistent-with-ttl", ttlMs: 1 }), op.create("/ttl-parent/child", "")]);
      const { stat } = await zk.createWithStat("/ttl-home/node", "", { mode: "persistent-with-ttl", ttlMs });
      assert.equal(stat.ephemeralOwner, 0n, "a TTL node shows ephemeralOwner 0, as in ZooKeeper");
      await cluster.server(leader).crash();
      const newLeader = await waitForLeader(cluster, leader);
      assert.notEqual(newLeader, leader);

      const goneAt = await waitFor(
        "the TTL node to expire on a survivor",
        async () => {
          try {
            return (await existsSynced(zk, "/ttl-home/node")) === null ? Date.now() : undefined;
          } catch (error) {
            if (error instanceof ZkError && error.code === "CONNECTIONLOSS") return undefined; // reconnecting after the kill
            throw error;
          }
        },
        60_000,
      );
      assert.ok(goneAt > stat.mtime + ttlMs, `seen gone at ${goneAt}, before mtime ${stat.mtime} + ttl ${ttlMs}`);
      const home = await zk.exists("/ttl-home");
      assert.ok(home);
      assert.ok(epochOf(home.pzxid) > epochOf(stat.czxid), "the delete committed in a later epoch than the create: the new leader made it");
      for (const id of followers) {
        const client = await connectTo(cluster, id);
        try {
          assert.equal(await existsSynced(client, "/ttl-home/node"), null, `server ${id} no longer has the TTL node`);
          assert.ok(await existsSynced(client, "/ttl-parent"), `server ${id} keeps the expired TTL node that has a child`);
        } finally {
          await client.close();
        }
      }
    } finally {
      await zk.close();
    }
  });
});

describe("a standalone server with TTL nodes disabled", () => {
  let server: ServerProcess;
  let removeDir: (() => Promise<void>) | undefined;
  let zk: Client;
  before(async () => {
    const dir = await makeTempDir("corral-containers-");
    removeDir = dir.remove;
    server = await ServerProcess.start({ dataDir: dir.path, tickMs: 100, extraArgs: ["--container-check-interval-ms", String(SCAN_INTERVAL_MS)] });
    zk = await Client.connect(server.connectString, { sessionTimeoutMs: 4_000, connectTimeoutMs: 20_000 });
  });
  after(async () => {
    await zk?.close();
    await server?.stop();
    await removeDir?.();
  });

  test("a TTL create is UNIMPLEMENTED, as in ZooKeeper without extended types, and the session stays usable", async () => {
    await assert.rejects(zk.create("/t", "", { mode: "persistent-with-ttl", ttlMs: 1_000 }), isZkError("UNIMPLEMENTED"));
    await assert.rejects(zk.create("/t-", "", { mode: "persistent-sequential-with-ttl", ttlMs: 1_000 }), isZkError("UNIMPLEMENTED"));
    assert.equal(await zk.create("/after", ""), "/after");
  });

  test("the standalone server deletes an emptied container itself", async () => {
    await zk.create("/c", "", { mode: "container" });
    await zk.delete(await zk.create("/c/child", ""));
    await waitFor("the emptied container to be deleted", async () => ((await zk.exists("/c")) === null ? true : undefined));
  });
});
