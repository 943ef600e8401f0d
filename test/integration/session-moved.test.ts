/**
 * A request that reaches a server after its session has moved to another server must be refused
 * (ZooKeeper: SESSIONMOVED from the leader's owner check). Found by the 30-minute chaos run: a
 * lock create held back by a cut client link executed after the client had failed over and
 * looked for it, leaving a "ghost" lock node owned by its live session, and the lock was never
 * granted again. corral checks session ownership only within one server so far: this test is a
 * `todo` until the leader-side owner check exists (then drop the todo).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Client } from "../../src/index.js";
import { ChaosCluster, CLIENTS } from "../chaos/chaos-cluster.js";
import { waitFor } from "../helpers/wait.js";

test("a create held back until after its session moved to another server does not take effect", { todo: "cross-server SESSIONMOVED (leader-side owner check) not implemented yet", timeout: 120_000 }, async () => {
  const cluster = await ChaosCluster.start({ voters: 3, tickMs: 100 });
  const clients: Client[] = [];
  try {
    await waitFor("a leader", () => cluster.agreedLeader(), 60_000);
    const [first, second] = cluster.connectString.split(",");
    const a = await Client.connect(`${first},${second}`, { sessionTimeoutMs: 2_000, shuffleHosts: false });
    clients.push(a);
    await a.create("/g", "");
    cluster.setBlocked([[CLIENTS, 1]]); // the client's requests to server 1 are held back, not lost
    await assert.rejects(a.create("/g/ghost", "", { mode: "ephemeral" }), (e: unknown) => e instanceof Error && "code" in e && e.code === "CONNECTIONLOSS");
    await waitFor("failover to server 2", () => (a.state === "connected" || a.state === "reconnected" ? true : undefined), 30_000);
    await a.sync("/g");
    assert.deepEqual(await a.getChildren("/g"), [], "the create has not happened when the client looks for it");
    cluster.setBlocked([]); // the held-back create reaches server 1 now
    const observer = await Client.connect(cluster.directConnectString(1), { connectTimeoutMs: 10_000 });
    clients.push(observer);
    // Server 1 has then answered (or dropped) the stale connection's create: a write after it on
    // server 1's own connection is ordered after it.
    await observer.create("/g/marker", "");
    await a.sync("/g");
    assert.deepEqual((await a.getChildren("/g")).filter((c) => c !== "marker"), [], "no node appears behind the client's back");
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()));
    await cluster.stop();
  }
});
