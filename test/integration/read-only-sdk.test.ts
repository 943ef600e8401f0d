/**
 * Read-only mode through corral's own SDK (the connect option canBeReadOnly, ZooKeeper's client
 * semantics) on real server processes. A member cut off from its quorum serves a client that
 * allows it: reads from its tree, NOTREADONLY for writes and syncs (the server's answer, not the
 * client's guess); a client that does not allow it finds no server. Once a quorum takes the
 * session again the client is read-write by itself — when the read-only server rejoins and ends
 * its connections, and, while it stays cut off, by the client's own probes of its other hosts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Client, op, ZkError, type ClientState } from "../../src/index.js";
import { ChaosCluster, CLIENTS } from "../chaos/chaos-cluster.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { fourLetterWord } from "../helpers/four-letter-word.js";
import { waitFor } from "../helpers/wait.js";

const zkPort = (cluster: ClusterProcess, id: number) => Number(cluster.server(id).zkConnectString.split(":")[1]);
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

async function rejectsWith(promise: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => error instanceof ZkError && error.code === code);
}

/** The states a client reports from now on. */
function recordStates(client: Client): ClientState[] {
  const states: ClientState[] = [];
  client.on("state", (state) => states.push(state));
  return states;
}

/** Resolves once `client` is connected read-write. */
function readWrite(client: Client): Promise<true> {
  return waitFor("the client read-write again", () => (client.connected && !client.readOnly ? true : undefined), 120_000);
}

test(
  "an SDK client that allows read-only reads from a member cut off from its quorum, is refused writes, and is read-write again once the quorum is back",
  { timeout: 300_000 },
  async () => {
    const cluster = await ClusterProcess.start({ voters: 3, config: { readOnlyModeEnabled: true, fourLetterWordWhitelist: "*" } });
    const clients: Client[] = [];
    const connect = async (connectString: string, options: Parameters<typeof Client.connect>[1]) => {
      const client = await Client.connect(connectString, options);
      clients.push(client);
      return client;
    };
    try {
      await waitFor("an agreed leader", () => cluster.agreedLeader(), 60_000);
      const writer = await connect(cluster.server(3).connectString, {});
      await writer.create("/ro", "before the partition");
      await writer.close();

      cluster.server(1).pause();
      cluster.server(2).pause();
      await waitFor("server 3 read-only", async () => ((await fourLetterWord(zkPort(cluster, 3), "isro")) === "ro" ? true : undefined), 60_000);

      // Without canBeReadOnly the read-only member is passed over, and there is no other.
      await rejectsWith(Client.connect(cluster.server(3).connectString, { connectTimeoutMs: 3_000 }), "CONNECTIONLOSS");

      const alone = await connect(cluster.server(3).connectString, { canBeReadOnly: true });
      const aloneStates = recordStates(alone);
      const readOnlySessionId = alone.sessionId;
      assert.equal(alone.state, "connected");
      assert.equal(alone.readOnly, true);
      const { data } = await alone.getData("/ro");
      assert.equal(text(data), "before the partition");
      assert.ok((await alone.getChildren("/")).includes("ro"));
      assert.notEqual(await alone.exists("/ro"), null);
      await rejectsWith(alone.create("/ro/child", "x"), "NOTREADONLY");
      await rejectsWith(alone.setData("/ro", "x"), "NOTREADONLY");
      await rejectsWith(alone.delete("/ro"), "NOTREADONLY");
      await rejectsWith(alone.sync("/ro"), "NOTREADONLY");
      await rejectsWith(alone.multi([op.setData("/ro", "x")]), "NOTREADONLY");
      assert.equal(text((await alone.getData("/ro")).data), "before the partition", "the session still serves after its refused writes");

      // Given every host, a client finds the one member that serves it, read-only.
      const anywhere = await connect(cluster.connectString, { canBeReadOnly: true, connectTimeoutMs: 60_000 });
      const anywhereStates = recordStates(anywhere);
      assert.equal(anywhere.readOnly, true);
      assert.equal(text((await anywhere.getData("/ro")).data), "before the partition");
      await rejectsWith(anywhere.create("/ro/child", "x"), "NOTREADONLY");

      cluster.server(1).resume();
      cluster.server(2).resume();
      await Promise.all([readWrite(alone), readWrite(anywhere)]);

      // The session only server 3 knew was not resumed: a new one, and no expiry reported.
      assert.notEqual(alone.sessionId, readOnlySessionId);
      for (const states of [aloneStates, anywhereStates]) {
        assert.ok(!states.includes("expired"), `no expiry, got ${states.join(", ")}`);
        assert.equal(states.at(-1), "reconnected");
      }
      await alone.create("/ro/alone", "a");
      await anywhere.create("/ro/anywhere", "b", { mode: "ephemeral" });
      await alone.sync("/ro");
      assert.deepEqual((await alone.getChildren("/ro")).sort(), ["alone", "anywhere"]);
    } finally {
      cluster.server(1).resume();
      cluster.server(2).resume();
      await Promise.allSettled(clients.map((client) => client.close()));
      await cluster.stop();
    }
  },
);

test("a client read-only at a member that stays cut off moves its session to a read-write server its probes find", { timeout: 300_000 }, async () => {
  const cluster = await ChaosCluster.start({ voters: 3, tickMs: 100, env: { CORRAL_READ_ONLY_MODE_ENABLED: "true" } });
  const clients: Client[] = [];
  try {
    await waitFor("a leader", () => cluster.agreedLeader(), 60_000);
    const writer = await Client.connect(cluster.connectString, { connectTimeoutMs: 30_000 });
    clients.push(writer);
    await writer.create("/probe", "before the partition");
    await writer.close();

    // Server 3 loses its peers; the client can reach server 3 alone.
    const partition: [number, number][] = [
      [1, 3],
      [3, 1],
      [2, 3],
      [3, 2],
    ];
    cluster.setBlocked([...partition, [CLIENTS, 1], [1, CLIENTS], [CLIENTS, 2], [2, CLIENTS]]);
    const client = await Client.connect(cluster.connectString, { canBeReadOnly: true, connectTimeoutMs: 120_000 });
    clients.push(client);
    const states = recordStates(client);
    assert.equal(client.readOnly, true);
    assert.equal(text((await client.getData("/probe")).data), "before the partition");
    await rejectsWith(client.setData("/probe", "x"), "NOTREADONLY");

    // The client may reach the quorum again; server 3 stays cut off, so only a probe can find it.
    cluster.setBlocked(partition);
    await readWrite(client);
    assert.deepEqual(states.slice(-2), ["disconnected", "reconnected"]);
    await client.create("/probe/after", "y");
    assert.deepEqual(await client.getChildren("/probe"), ["after"]);

    const stillCutOff = await Client.connect(cluster.directConnectString(3), { canBeReadOnly: true, connectTimeoutMs: 30_000 });
    clients.push(stillCutOff);
    assert.equal(stillCutOff.readOnly, true, "server 3 never rejoined: the client moved by itself");
  } finally {
    await Promise.allSettled(clients.map((client) => client.close()));
    await cluster.stop();
  }
});
