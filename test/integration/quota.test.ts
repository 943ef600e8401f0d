/**
 * Quotas on a three-voter cluster started with enforceQuota (issue 6): set through the SDK in
 * zkCli's layout, a hard limit refused with QUOTAEXCEEDED through a follower (the leader's prep
 * decides), a soft limit logged by the leader and allowed, the usage identical on every server,
 * nested quotas refused, and a removed quota no longer limiting anything.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, deleteQuota, listQuota, setQuota } from "../../src/index.js";
import { statsPathOf } from "../../src/common/quota.js";
import { connectTo, waitForLeader } from "../helpers/cluster-client.js";
import { withCode } from "../helpers/zk-error.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { waitFor } from "../helpers/wait.js";

describe("quotas", () => {
  let cluster: ClusterProcess;
  let leader: number;
  let zk: Client;
  before(async () => {
    cluster = await ClusterProcess.start({ voters: 3, tickMs: 200, config: { enforceQuota: true } });
    leader = await waitForLeader(cluster);
    zk = await connectTo(
      cluster,
      [1, 2, 3].find((id) => id !== leader)!,
    );
  });
  after(async () => {
    await zk?.close();
    await cluster?.stop();
  });

  test("a hard count limit is refused with QUOTAEXCEEDED; the session stays usable; every server agrees on the usage", async () => {
    await zk.create("/hard", "");
    await setQuota(zk, "/hard", { countHardLimit: 3 });
    await zk.create("/hard/a", "1");
    await zk.create("/hard/b", "22");
    await assert.rejects(zk.create("/hard/c", ""), withCode("QUOTAEXCEEDED"));
    await assert.rejects(
      zk.multi([{ type: "create", path: "/hard/d", data: new Uint8Array(), mode: "persistent", acl: undefined, ttlMs: undefined }]),
      withCode("QUOTAEXCEEDED"),
    );
    assert.deepEqual(await listQuota(zk, "/hard"), { limits: { count: -1, bytes: -1, countHardLimit: 3, byteHardLimit: -1 }, usage: { count: 3, bytes: 3 } });
    await zk.delete("/hard/a");
    await zk.create("/hard/c", "");
    for (const id of [1, 2, 3]) {
      const other = await connectTo(cluster, id);
      try {
        await other.sync("/");
        assert.equal(Buffer.from((await other.getData(statsPathOf("/hard"))).data).toString(), "count=3,bytes=2", `server ${id}`);
      } finally {
        await other.close();
      }
    }
  });

  test("a soft limit is logged by the leader and allowed", async () => {
    await zk.create("/soft", "");
    await setQuota(zk, "/soft", { count: 1 });
    await zk.create("/soft/over", "");
    await waitFor("the leader's quota line", () => (cluster.server(leader).stderr.includes('"path":"/soft/over"') ? true : undefined), 10_000);
    assert.match(cluster.server(leader).stderr, /"msg":"quota exceeded"/);
  });

  test("nested quotas are refused; a deleted quota limits nothing", async () => {
    await zk.create("/outer", "");
    await zk.create("/outer/inner", "");
    await setQuota(zk, "/outer", { countHardLimit: 2 });
    await assert.rejects(setQuota(zk, "/outer/inner", { count: 5 }), withCode("BADARGUMENTS"));
    await assert.rejects(setQuota(zk, "/missing", { count: 5 }), withCode("NONODE"));
    await assert.rejects(zk.create("/outer/more", ""), withCode("QUOTAEXCEEDED"));
    assert.equal(await deleteQuota(zk, "/outer"), true);
    assert.equal(await listQuota(zk, "/outer"), null);
    assert.equal(await zk.exists("/zookeeper/quota/outer"), null, "the empty quota path is removed too");
    await zk.create("/outer/more", "");
    assert.equal(await deleteQuota(zk, "/outer"), false);
  });
});
