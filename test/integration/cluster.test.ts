/**
 * A replicated cluster of real server processes (issue 3): three voters and one observer on
 * 127.0.0.1, driven through the SDK. Times that matter to users (failover) are reported on stderr,
 * never asserted.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, ZkError, type WatchedEvent } from "../../src/index.js";
import { connectTo, createSurvivingFailover, treeAt, treesAt, waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { waitFor } from "../helpers/wait.js";

describe("three voters and an observer", () => {
  let cluster: ClusterProcess;
  const clients: Client[] = [];
  before(async () => {
    cluster = await ClusterProcess.start({ voters: 3, observers: 1, tickMs: 200, initLimitTicks: 20, syncLimitTicks: 10 });
    await waitForLeader(cluster);
  });
  after(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await cluster?.stop();
  });

  test("writes through every server are read back from every server, and watches fire across servers", async () => {
    for (const id of [1, 2, 3, 4]) clients.push(await connectTo(cluster, id));
    await clients[0]!.create("/everywhere", "");
    const events: WatchedEvent[] = [];
    await clients[3]!.sync("/everywhere");
    await clients[3]!.getChildren("/everywhere", { watch: (e) => events.push(e) });
    for (const [index, client] of clients.entries()) await client.create(`/everywhere/from-${index + 1}`, `written at server ${index + 1}`);
    await waitFor("the observer's child watch", () => (events.length > 0 ? true : undefined));
    assert.deepEqual(
      events.map((e) => `${e.type} ${e.path}`),
      ["NodeChildrenChanged /everywhere"],
    );
    const views = await Promise.all(clients.map((c) => treeAt(c, "/everywhere")));
    for (const view of views) {
      assert.equal(view.size, 5);
      assert.deepEqual(view, views[0]);
    }
    assert.equal(views[0]!.get("/everywhere/from-4"), "written at server 4", "a write at the observer is forwarded and applied everywhere");
  });

  test("an ephemeral made through one server disappears everywhere when its session closes", async () => {
    const owner = await connectTo(cluster, 2);
    const path = await owner.create("/eph-", "", { mode: "ephemeral-sequential" });
    for (const client of clients) {
      await client.sync("/");
      assert.ok(await client.exists(path));
    }
    await owner.close();
    for (const client of clients) {
      await client.sync("/");
      assert.equal(await client.exists(path), null);
    }
  });
});

describe("failures", () => {
  let cluster: ClusterProcess;
  before(async () => {
    cluster = await ClusterProcess.start({ voters: 3, tickMs: 200, initLimitTicks: 20, syncLimitTicks: 10, snapshotEveryTxns: 300, snapshotRetainCount: 2 });
    await waitForLeader(cluster);
  });
  after(async () => {
    await cluster?.stop();
  });

  test("kill -9 of the leader under a write load: a new leader is elected, no acknowledged write is lost, the session survives", async () => {
    const leader = await waitForLeader(cluster);
    const follower = [1, 2, 3].find((id) => id !== leader)!;
    const others = [1, 2, 3]
      .filter((id) => id !== leader)
      .map((id) => cluster.server(id).connectString)
      .join(",");
    const zk = await Client.connect(others, { sessionTimeoutMs: 6_000, connectTimeoutMs: 30_000, shuffleHosts: false });
    await zk.create("/failover", "");
    const sessionId = zk.sessionId;
    const acked: number[] = [];
    let killedAt = 0;
    let firstAfterKillMs: number | undefined;
    let i = 0;
    const deadline = Date.now() + 60_000;
    const writer = (async () => {
      while (firstAfterKillMs === undefined) {
        assert.ok(Date.now() < deadline, `no write succeeded within 60 s of killing leader ${leader}`);
        const n = i++;
        const issuedAt = Date.now();
        try {
          await zk.create(`/failover/w-${String(n).padStart(6, "0")}`, String(n));
          acked.push(n);
          if (killedAt > 0 && issuedAt > killedAt) firstAfterKillMs = Date.now() - killedAt;
        } catch (error) {
          assert.ok(error instanceof ZkError && error.code === "CONNECTIONLOSS", String(error));
          // While disconnected the SDK fails at once: yield so that it can reconnect.
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        if (killedAt === 0 && acked.length === 200) {
          killedAt = Date.now();
          await cluster.server(leader).crash();
        }
      }
    })();
    await writer;
    process.stderr.write(`failover: leader ${leader} killed; first write issued after the kill succeeded ${firstAfterKillMs} ms later\n`);
    const newLeader = await waitForLeader(cluster, leader);
    assert.notEqual(newLeader, leader);
    assert.equal(zk.sessionId, sessionId, "the session survived the failover");
    const check = await connectTo(cluster, follower);
    const present = new Set(await check.getChildren("/failover"));
    for (const n of acked) assert.ok(present.has(`w-${String(n).padStart(6, "0")}`), `acknowledged write ${n} lost`);
    await check.close();
    await zk.close();

    await cluster.server(leader).restart();
    await waitFor(
      "the old leader rejoined",
      () => (cluster.agreedLeader() === newLeader && cluster.roles().get(leader)?.role === "following" ? true : undefined),
      30_000,
    );
  });

  test("a restarted follower catches up; every server ends with the same tree", async () => {
    const leader = await waitForLeader(cluster);
    const follower = [1, 2, 3].find((id) => id !== leader)!;
    const others = [1, 2, 3]
      .filter((id) => id !== follower)
      .map((id) => cluster.server(id).connectString)
      .join(",");
    const zk = await Client.connect(others, { sessionTimeoutMs: 6_000, connectTimeoutMs: 30_000 });
    await createSurvivingFailover(zk, "/catchup", "");
    await cluster.server(follower).stop();
    for (let n = 0; n < 50; n++) await createSurvivingFailover(zk, `/catchup/a-${n}`, String(n));
    cluster.server(follower).stderr = "";
    await cluster.server(follower).restart();
    await waitFor("the follower rejoined", () => (cluster.roles().get(follower)?.role === "following" ? true : undefined), 30_000);
    const views = await treesAt(cluster, [1, 2, 3], "/catchup");
    assert.equal(views[0]!.size, 51);
    for (const view of views) assert.deepEqual(view, views[0]);
    await zk.close();
  });

  test("losing the quorum stops writes without a false success; healing resumes them", async () => {
    const leader = await waitForLeader(cluster);
    const [a, b] = [1, 2, 3].filter((id) => id !== leader);
    const zk = await connectTo(cluster, leader);
    await zk.create("/quorum", "");
    cluster.server(a!).pause();
    cluster.server(b!).pause();
    let outcome: "ok" | "failed" = "failed";
    try {
      await zk.create("/quorum/while-alone", "must not be acknowledged");
      outcome = "ok";
    } catch (error) {
      assert.ok(error instanceof ZkError, String(error));
    } finally {
      cluster.server(a!).resume();
      cluster.server(b!).resume();
    }
    assert.equal(outcome, "failed", "a write without a quorum was acknowledged");
    await waitForLeader(cluster);
    const after = await Client.connect(cluster.connectString, { sessionTimeoutMs: 4_000, connectTimeoutMs: 30_000 });
    await waitFor(
      "writes resume",
      async () => {
        try {
          await after.create("/quorum/healed", "");
          return true;
        } catch {
          return undefined;
        }
      },
      30_000,
    );
    assert.ok(await after.exists("/quorum/healed"));
    await after.close();
    await zk.close().catch(() => {});
  });
});
