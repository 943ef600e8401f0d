/**
 * A request that reaches a server after its session has moved to another server must be refused
 * (ZooKeeper: SESSIONMOVED from the leader's owner check). Found by the 30-minute chaos run: a
 * lock create held back by a cut client link executed after the client had failed over and
 * looked for it, leaving a "ghost" lock node owned by its live session, and the lock was never
 * granted again. The leader knows each session's owner (the server where its client last created
 * or resumed it) and refuses a request from any other server: tested here with the left server
 * a follower (its forward is refused) and the leader itself (its own request is refused).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Client } from "../../src/index.js";
import { ChaosCluster, CLIENTS } from "../chaos/chaos-cluster.js";
import { waitFor } from "../helpers/wait.js";

async function createHeldBackUntilSessionMoved(cluster: ChaosCluster, left: number, movedTo: number, dir: string, clients: Client[]): Promise<void> {
  // Both servers serve clients before the client starts, so that it is attached to `left`.
  for (const id of [left, movedTo]) await (await Client.connect(cluster.directConnectString(id), { connectTimeoutMs: 30_000 })).close();
  const addresses = cluster.connectString.split(",");
  const a = await Client.connect(`${addresses[left - 1]},${addresses[movedTo - 1]}`, { sessionTimeoutMs: 2_000, shuffleHosts: false });
  clients.push(a);
  await a.create(dir, "");
  cluster.setBlocked([[CLIENTS, left]]); // the client's requests to `left` are held back, not lost
  await assert.rejects(a.create(`${dir}/ghost`, "", { mode: "ephemeral" }), (e: unknown) => e instanceof Error && "code" in e && e.code === "CONNECTIONLOSS");
  await waitFor(`failover to server ${movedTo}`, () => (a.state === "connected" || a.state === "reconnected" ? true : undefined), 30_000);
  await a.sync(dir);
  assert.deepEqual(await a.getChildren(dir), [], "the create has not happened when the client looks for it");
  cluster.setBlocked([]); // the held-back create reaches `left` now
  const witness = await Client.connect(cluster.directConnectString(left), { connectTimeoutMs: 10_000 });
  clients.push(witness);
  // `left` has then answered (or dropped) the stale connection's create: a write after it on
  // `left`'s own connection is ordered after it.
  await witness.create(`${dir}/marker`, "");
  await a.sync(dir);
  assert.deepEqual(
    (await a.getChildren(dir)).filter((c) => c !== "marker"),
    [],
    "no node appears behind the client's back",
  );
  await a.create(`${dir}/after`, "", { mode: "ephemeral" });
  assert.deepEqual((await a.getChildren(dir)).sort(), ["after", "marker"], "the session still works where it moved to");
}

test("a create held back until after its session moved to another server does not take effect", { timeout: 180_000 }, async () => {
  const cluster = await ChaosCluster.start({ voters: 3, tickMs: 100 });
  const clients: Client[] = [];
  try {
    const leader = await waitFor("a leader", () => cluster.agreedLeader(), 60_000);
    const [followerA, followerB] = [1, 2, 3].filter((id) => id !== leader) as [number, number];
    await createHeldBackUntilSessionMoved(cluster, followerA, followerB, "/from-follower", clients);
    await createHeldBackUntilSessionMoved(cluster, leader, followerA, "/from-leader", clients);
    assert.equal(cluster.agreedLeader(), leader, "both cases ran under one leader");
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()));
    await cluster.stop();
  }
});
