/**
 * A session's committed writes reach servers where that session is now held by another
 * connection: the client reconnected after a leader change and sent new requests, or a second
 * connection resumed the session (ZooKeeper's way to force an expiry). Such a txn is applied and
 * answered to nobody; before, a follower died on "txn cxid N answers xid M" (found by the recipe
 * tests). Real processes, three voters.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ZkError } from "../../src/index.js";
import { RecipeCluster } from "../helpers/recipe-cluster.js";

describe("writes of a session resumed elsewhere", () => {
  let cluster: RecipeCluster;
  before(async () => {
    cluster = await RecipeCluster.start();
  });
  after(async () => {
    await cluster?.stop();
  });

  test("expiring a session through a second connection while its writes are in flight crashes no server", async () => {
    const observer = await cluster.client();
    for (let round = 0; round < 8; round++) {
      const victim = await cluster.client();
      const path = `/resumed-${round}`;
      await victim.create(path, "");
      let stop = false;
      let acked = 0;
      const writer = (async () => {
        while (!stop && victim.state !== "expired") {
          const results = await Promise.allSettled(Array.from({ length: 20 }, () => victim.setData(path, "x")));
          for (const r of results) {
            if (r.status === "fulfilled") acked += 1;
            else assert.ok(r.reason instanceof ZkError, String(r.reason));
          }
          await new Promise((resolve) => setImmediate(resolve));
        }
      })();
      // Let writes be in flight, then resume-and-close the session from a second connection.
      while (acked < 20) await new Promise((resolve) => setImmediate(resolve));
      await cluster.expire(victim);
      stop = true;
      await writer;
      for (const [id, server] of cluster.cluster.servers) assert.ok(server.running, `server ${id} died in round ${round}:\n${server.stderr.slice(-2_000)}`);
      // And the cluster still takes writes.
      await observer.setData(path, `checked ${round}`);
    }
  });
});
