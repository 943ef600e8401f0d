/**
 * Dynamic reconfiguration on real server processes (issue 15): a three-voter cluster grows to five
 * voters and shrinks back to three with reconfig, under a steady write load, and no acknowledged
 * write is lost; every member runs with each configuration as it comes into force, and the servers
 * it removes stop serving. The two spares are started as ZooKeeper's procedure says: their own
 * config file lists the members and themselves, and they learn from the leader until added.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, generateDigest, ZkError } from "../../src/index.js";
import { connectTo, waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { waitFor } from "../helpers/wait.js";
import { WriteLoad } from "../helpers/write-load.js";

const SUPER = "super:test";
const LOAD_ROOT = "/load";

describe("reconfig on a live cluster", () => {
  let cluster: ClusterProcess;
  const clients: Client[] = [];
  const client = async (id: number): Promise<Client> => {
    const c = await connectTo(cluster, id);
    clients.push(c);
    return c;
  };
  /** Until server `id` runs with a configuration of at least `version`. */
  const runsWith = async (id: number, version: bigint): Promise<string> => {
    const reader = await client(id);
    return waitFor(
      `server ${id} to run with version ${version.toString(16)}`,
      async () => {
        const config = await reader.getConfig();
        return config.version >= version ? config.text : undefined;
      },
      30_000,
    );
  };

  before(async () => {
    cluster = await ClusterProcess.start({ voters: 3, spares: 2, superDigest: generateDigest(SUPER), config: { reconfigEnabled: true } });
    await waitForLeader(cluster);
  });
  after(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await cluster?.stop();
  });

  test("3 → 5 → 3 voters under a write load: no acknowledged write is lost, and the removed servers stop serving", async (t) => {
    const admin = await client(1);
    await admin.addAuthInfo("digest", SUPER);
    await admin.create(LOAD_ROOT, "");
    const load = new WriteLoad(await client(2), LOAD_ROOT);
    await waitFor("the load to be under way", () => (load.acked.length >= 20 ? true : undefined), 30_000);

    // A client without the super user's id is refused: the ACL of /zookeeper/config is read-only.
    const stranger = await client(3);
    await assert.rejects(stranger.reconfig({ leaving: [3] }), (e: unknown) => e instanceof ZkError && e.code === "NOAUTH");

    const grown = await admin.reconfig({ joining: [cluster.memberLine(4), cluster.memberLine(5)] });
    assert.equal((grown.text.match(/:participant;/g) ?? []).length, 5, grown.text);
    assert.equal(grown.stat.mzxid, grown.version, "the reconfig's own txn wrote the configuration");
    for (const id of [1, 2, 3, 4, 5]) assert.equal(await runsWith(id, grown.version), grown.text, `server ${id}`);
    await waitFor("writes in the five-voter configuration", () => (load.acked.length >= 60 ? true : undefined), 30_000);

    // An out-of-date version is BADVERSION; the one in force is accepted.
    await assert.rejects(admin.reconfig({ leaving: [5], fromConfig: grown.version - 1n }), (e: unknown) => e instanceof ZkError && e.code === "BADVERSION");
    const shrunk = await admin.reconfig({ leaving: [4, 5], fromConfig: grown.version });
    assert.equal((shrunk.text.match(/:participant;/g) ?? []).length, 3, shrunk.text);
    for (const id of [1, 2, 3]) assert.equal(await runsWith(id, shrunk.version), shrunk.text, `server ${id}`);
    const before = load.acked.length;
    await waitFor("writes in the three-voter configuration again", () => (load.acked.length >= before + 40 ? true : undefined), 30_000);
    await load.stop();

    assert.deepEqual(load.failed, [], "no write failed other than by a lost connection");
    t.diagnostic(
      `${load.acked.length} writes acknowledged; configurations ${grown.version.toString(16)} (5 voters), ${shrunk.version.toString(16)} (3 voters)`,
    );
    // Every acknowledged write is on every member.
    for (const id of [1, 2, 3]) {
      const reader = await client(id);
      await reader.sync(LOAD_ROOT);
      const present = new Set((await reader.getChildren(LOAD_ROOT)).map((name) => `${LOAD_ROOT}/${name}`));
      const missing = load.acked.filter((path) => !present.has(path));
      assert.deepEqual(missing, [], `server ${id} has every acknowledged write (${load.acked.length})`);
    }
    // The removed servers say so, and serve no client.
    for (const id of [4, 5]) {
      await waitFor(
        `server ${id} to leave service`,
        () => (cluster.server(id).stderr.includes("not a member of the configuration in force") ? true : undefined),
        30_000,
      );
      await assert.rejects(
        (async () => {
          const c = await Client.connect(cluster.server(id).connectString, { sessionTimeoutMs: 4_000, connectTimeoutMs: 1_500 });
          clients.push(c);
        })(),
        `server ${id} refuses sessions`,
      );
    }
  });
});

describe("replacing a dead member", () => {
  let cluster: ClusterProcess;
  const clients: Client[] = [];
  after(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await cluster?.stop();
  });

  test("a dead voter is replaced by a spare in one reconfig; the writes made meanwhile are on the new member", async () => {
    cluster = await ClusterProcess.start({ voters: 3, spares: 1, superDigest: generateDigest(SUPER), config: { reconfigEnabled: true } });
    const leader = await waitForLeader(cluster);
    const dead = [1, 2, 3].find((id) => id !== leader)!;
    await cluster.server(dead).stop();
    const admin = await connectTo(cluster, leader);
    clients.push(admin);
    await admin.addAuthInfo("digest", SUPER);
    await admin.create("/before", "written with a member down");
    const replaced = await admin.reconfig({ leaving: [dead], joining: [cluster.memberLine(4)] });
    assert.ok(!replaced.text.includes(`server.${dead}=`) && replaced.text.includes("server.4="), replaced.text);
    await admin.create("/after", "written in the new configuration");
    const fresh = await connectTo(cluster, 4);
    clients.push(fresh);
    await fresh.sync("/");
    assert.equal(Buffer.from((await fresh.getData("/before")).data).toString(), "written with a member down");
    assert.equal(Buffer.from((await fresh.getData("/after")).data).toString(), "written in the new configuration");
    assert.equal((await fresh.getConfig()).version, replaced.version);
  });
});
