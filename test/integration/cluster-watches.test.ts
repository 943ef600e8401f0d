/**
 * A persistent recursive watch across a move to another server, on three real voters: the watching
 * client's server is cut off (its TCP connection destroyed, new ones refused) or killed with -9
 * (the leader, so the move also crosses an election). Every change made under the subtree before
 * the move and after it must reach the watcher exactly once, in zxid order.
 *
 * As in ZooKeeper, the client sets the watch again (setWatches with its last zxid) and the server
 * does not replay to a persistent watch what changed while the client was away: so the test makes
 * its "before" changes, waits until the watcher has received them, moves, waits until the watch
 * is set again, then makes its "after" changes. Zxids come from the writer's own answers.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, ZkError, type ClientState, type WatchedEvent } from "../../src/index.js";
import { waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { TcpProxy } from "../helpers/tcp-proxy.js";
import { waitFor } from "../helpers/wait.js";

/**
 * Granted by these servers' maxSessionTimeoutMs: a move is noticed at once (the connection is
 * destroyed), and the session outlives an election on a loaded machine.
 */
const SESSION_TIMEOUT_MS = 20_000;

/** Resolves on `wanted`; fails, rather than waiting for good, if the session ends first. */
function nextState(client: Client, wanted: ClientState): Promise<void> {
  return new Promise((resolve, reject) => {
    const listener = (state: ClientState): void => {
      if (state !== wanted && state !== "expired" && state !== "closed") return;
      client.off("state", listener);
      if (state === wanted) resolve();
      else reject(new Error(`the session ended (${state}) instead of becoming ${wanted}`));
    };
    client.on("state", listener);
  });
}

/** `operation` once the client has a serving server again (a reconnect can land on one still electing). */
async function once(client: Client, operation: () => Promise<unknown>): Promise<void> {
  await waitFor(
    "a serving server",
    async () => {
      try {
        await operation();
        return true;
      } catch (error) {
        if (error instanceof ZkError && error.code === "CONNECTIONLOSS" && client.state !== "expired") return undefined;
        throw error;
      }
    },
    60_000,
  );
}

/**
 * After this the watcher has received the events of every write committed before the call: the
 * sync brings its server up to date, and a server sends events before any later answer.
 */
async function caughtUp(watcher: Client): Promise<void> {
  await once(watcher, async () => {
    await watcher.sync("/");
    await watcher.exists("/");
  });
}

/**
 * Changes under `root` through `writer`, each with the event a recursive watch on `root` must get
 * (type, path, zxid) — a delete's zxid is its parent's pzxid right after it.
 */
async function changes(writer: Client, root: string, round: string): Promise<string[]> {
  const expected: string[] = [];
  const created = async (path: string): Promise<void> => {
    expected.push(`NodeCreated ${path} ${(await writer.createWithStat(path, round)).stat.czxid}`);
  };
  const changed = async (path: string): Promise<void> => {
    expected.push(`NodeDataChanged ${path} ${(await writer.setData(path, round)).mzxid}`);
  };
  const deleted = async (path: string): Promise<void> => {
    await writer.delete(path);
    const parent = await writer.exists(path.slice(0, path.lastIndexOf("/")));
    assert.ok(parent);
    expected.push(`NodeDeleted ${path} ${parent.pzxid}`);
  };
  await created(`${root}/${round}`);
  await created(`${root}/${round}/deep`);
  await created(`${root}/${round}/deep/er`);
  await changed(`${root}/${round}/deep/er`);
  await changed(root);
  await deleted(`${root}/${round}/deep/er`);
  await changed(`${root}/${round}`);
  await writer.create(`${root}-sibling-${round}`, ""); // outside the subtree: no event
  return expected;
}

function assertExactlyInZxidOrder(seen: WatchedEvent[], expected: string[]): void {
  assert.deepEqual(
    seen.map((e) => `${e.type} ${e.path} ${e.zxid}`),
    expected,
    "every change before and after the move, once each, nothing else",
  );
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i]!.zxid > seen[i - 1]!.zxid, `zxid order at event ${i}`);
}

describe("a persistent recursive watch across a move to another server", () => {
  let cluster: ClusterProcess;
  const clients: Client[] = [];
  const proxies: TcpProxy[] = [];
  before(async () => {
    cluster = await ClusterProcess.start({
      voters: 3,
      tickMs: 200,
      initLimitTicks: 20,
      syncLimitTicks: 10,
      config: { maxSessionTimeoutMs: SESSION_TIMEOUT_MS },
    });
    await waitForLeader(cluster);
  });
  after(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await Promise.allSettled(proxies.map((p) => p.close()));
    await cluster?.stop();
  });

  async function connect(connectString: string): Promise<Client> {
    const client = await Client.connect(connectString, { sessionTimeoutMs: SESSION_TIMEOUT_MS, connectTimeoutMs: 30_000, shuffleHosts: false });
    clients.push(client);
    return client;
  }

  test("its server cut off: the client moves, and every change before and after reaches the watch once, in zxid order", async () => {
    const leader = await waitForLeader(cluster);
    const [home, ...others] = [1, 2, 3].filter((id) => id !== leader).concat(leader);
    const proxy = await TcpProxy.start(cluster.server(home!).port);
    proxies.push(proxy);
    const watcher = await connect([proxy.address, ...others.map((id) => cluster.server(id).connectString)].join(","));
    const writer = await connect(cluster.server(leader).connectString);
    const root = "/moved-cut";
    await writer.create(root, "");
    const seen: WatchedEvent[] = [];
    await watcher.addWatch(root, (e) => void seen.push(e), "persistent-recursive");

    const expected = await changes(writer, root, "before");
    await caughtUp(watcher);
    assert.equal(seen.length, expected.length, "the watcher has every event of the changes before the move");

    const reconnected = nextState(watcher, "reconnected");
    proxy.cut(true);
    await reconnected;
    // Answered after the re-registration (the first request on the new stream): the watch is set again.
    await caughtUp(watcher);
    expected.push(...(await changes(writer, root, "after")));
    await caughtUp(watcher);

    assertExactlyInZxidOrder(seen, expected);
  });

  test("its server (the leader) killed: the client moves after the election, and every change before and after reaches the watch once, in zxid order", async () => {
    const leader = await waitForLeader(cluster);
    const followers = [1, 2, 3].filter((id) => id !== leader && cluster.server(id).running);
    assert.equal(followers.length, 2);
    const watcher = await connect([leader, ...followers].map((id) => cluster.server(id).connectString).join(","));
    const writer = await connect(followers.map((id) => cluster.server(id).connectString).join(","));
    const root = "/moved-kill";
    await writer.create(root, "");
    const seen: WatchedEvent[] = [];
    await watcher.addWatch(root, (e) => void seen.push(e), "persistent-recursive");

    const expected = await changes(writer, root, "before");
    await caughtUp(watcher);
    assert.equal(seen.length, expected.length, "the watcher has every event of the changes before the move");

    const reconnected = nextState(watcher, "reconnected");
    await cluster.server(leader).crash();
    await reconnected;
    await waitForLeader(cluster, leader);
    await caughtUp(watcher);
    // The writer's server went through the election too: write only once it serves again.
    await once(writer, () => writer.sync("/"));
    expected.push(...(await changes(writer, root, "after")));
    await caughtUp(watcher);

    assertExactlyInZxidOrder(seen, expected);
  });
});
