/**
 * updateServerList on real server processes (three voters): a client told that its server is no
 * longer listed moves to one that is, carrying its session — its ephemeral stays, its watch still
 * fires — and a connect string with another chroot, or none that parses, is refused.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Client, ZkError, type ClientState, type WatchedEvent } from "../../src/index.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { waitFor } from "../helpers/wait.js";

async function rejectsWith(promise: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => error instanceof ZkError && error.code === code);
}

test("a client whose server leaves its list moves to a listed server with the same session, its ephemeral and its watch", { timeout: 180_000 }, async () => {
  const cluster = await ClusterProcess.start({ voters: 3 });
  const clients: Client[] = [];
  try {
    await waitFor("an agreed leader", () => cluster.agreedLeader(), 60_000);
    const first = cluster.server(1).connectString;
    const others = [cluster.server(2).connectString, cluster.server(3).connectString];

    const client = await Client.connect(first, {});
    clients.push(client);
    const writer = await Client.connect(first, {});
    clients.push(writer);
    assert.equal(client.connectedHost, first);
    const sessionId = client.sessionId;

    await client.create("/owned", "mine", { mode: "ephemeral" });
    await writer.create("/watched", "before");
    const events: WatchedEvent[] = [];
    await client.getData("/watched", { watch: (event) => events.push(event) });
    const states: ClientState[] = [];
    client.on("state", (state) => states.push(state));

    await client.updateServerList(others.join(","));
    const moved = await waitFor("the client connected to server 2 or 3", () => {
      const host = client.connectedHost;
      return host !== undefined && others.includes(host) ? host : undefined;
    });
    assert.ok(others.includes(moved));
    assert.equal(client.sessionId, sessionId, "the same session");
    assert.deepEqual(states, ["disconnected", "reconnected"]);

    const owned = await writer.exists("/owned");
    assert.ok(owned !== null, "the ephemeral survived the move");
    assert.equal(owned.ephemeralOwner, sessionId);
    assert.equal(new TextDecoder().decode((await client.getData("/owned")).data), "mine");

    await writer.setData("/watched", "after");
    const fired = await waitFor("the watch set before the move", () => events[0]);
    assert.equal(fired.type, "NodeDataChanged");
    assert.equal(fired.path, "/watched");

    // Whatever the list, the client's answers still come from a server of it.
    await client.updateServerList(others.join(","));
    await waitFor("the client connected", () => (client.connected ? true : undefined));
    assert.ok(others.includes(client.connectedHost ?? ""), "a list of the same servers keeps it there");
    assert.equal(client.sessionId, sessionId);

    await rejectsWith(client.updateServerList(`${others[0]}/elsewhere`), "BADARGUMENTS");
    await rejectsWith(client.updateServerList(""), "BADARGUMENTS");
    await rejectsWith(client.updateServerList("127.0.0.1:notaport"), "BADARGUMENTS");
    assert.equal(client.sessionId, sessionId, "a refused list changes nothing");
    assert.ok(client.connected);

    await client.close();
    await rejectsWith(client.updateServerList(others.join(",")), "SESSIONEXPIRED");
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()));
    await cluster.stop();
  }
});

test("a chrooted client keeps its chroot: a list with another chroot, or none, is refused", { timeout: 120_000 }, async () => {
  const cluster = await ClusterProcess.start({ voters: 3 });
  const clients: Client[] = [];
  try {
    await waitFor("an agreed leader", () => cluster.agreedLeader(), 60_000);
    const setup = await Client.connect(cluster.connectString, {});
    clients.push(setup);
    await setup.create("/app", "");
    const client = await Client.connect(`${cluster.server(1).connectString}/app`, {});
    clients.push(client);
    const others = `${cluster.server(2).connectString},${cluster.server(3).connectString}`;

    await rejectsWith(client.updateServerList(`${others}/other`), "BADARGUMENTS");
    await rejectsWith(client.updateServerList(others), "BADARGUMENTS");
    assert.equal(client.connectedHost, cluster.server(1).connectString, "a refused list moves nobody");

    await client.updateServerList(`${others}/app`);
    await waitFor("the client on server 2 or 3", () => (client.connected && client.connectedHost !== cluster.server(1).connectString ? true : undefined));
    await client.create("/inside", "");
    // Another session may be on a server that has not applied it yet: sync first.
    await setup.sync("/app");
    assert.notEqual(await setup.exists("/app/inside"), null, "still under its chroot");
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()));
    await cluster.stop();
  }
});
