/**
 * throttledOpWaitTimeMs on real server processes (ZooKeeper's throttled_op_wait_time): writes that
 * waited at the leader longer than it for room in the flow-control window are answered THROTTLEDOP
 * and not applied; the others are applied; the session lives on; throttled_ops counts them.
 */
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";
import { limits } from "../../src/common/constants.js";
import { Client } from "../../src/index.js";
import { connectTo, waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { Scrape } from "../helpers/prometheus.js";
import { waitFor } from "../helpers/wait.js";

const WRITES = 64;
const VALUE_BYTES = 512 * 1024;

let cluster: ClusterProcess;
let client: Client | undefined;

before(async () => {
  // The smallest window (two of these writes) and a 1 ms wait.
  cluster = await ClusterProcess.start({
    voters: 3,
    httpPorts: true,
    config: { throttledOpWaitTimeMs: 1, proposalBytesInFlightMax: limits.messageBytesMax },
  });
});

after(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.stop();
});

test("writes that waited at the leader past throttledOpWaitTimeMs are answered THROTTLEDOP and not applied, and the session lives on", async () => {
  const leaderId = await waitForLeader(cluster);
  const leader = cluster.server(leaderId);
  const followers = [...cluster.servers.values()].filter((server) => server !== leader);
  client = await connectTo(cluster, leaderId);
  const sessionId = client.sessionId;
  await client.create("/throttled", "");
  // With both followers stopped nothing commits: the first writes fill the window and the next
  // ones wait in the leader's queue. However fast or slow this machine is, a write seen waiting
  // and then held 20 ms more has waited past 1 ms when the followers come back.
  for (const follower of followers) follower.pause();
  const value = new Uint8Array(VALUE_BYTES);
  let outcomes: Promise<string[]>;
  try {
    outcomes = Promise.all(
      Array.from({ length: WRITES }, () =>
        client!.setData("/throttled", value).then(
          () => "ok",
          (error: { code?: string }) => error.code ?? "other",
        ),
      ),
    );
    await waitFor("writes waiting at the leader", async () =>
      (await Scrape.of(leader.metricsUrl)).value("corral_admission_queued_writes") > 0 ? true : undefined,
    );
    await sleep(20);
  } finally {
    for (const follower of followers) follower.resume();
  }
  const settled = await outcomes;
  const ok = settled.filter((outcome) => outcome === "ok").length;
  const throttled = settled.filter((outcome) => outcome === "THROTTLEDOP").length;
  assert.equal(ok + throttled, WRITES, `outcomes: ${settled.join(",")}`);
  assert.ok(throttled > 0, "the writes that waited in the queue were throttled");
  assert.ok(ok > 0, "the writes in the window went in");
  // Only the acknowledged writes were applied.
  assert.equal((await client.exists("/throttled"))?.version, ok);
  assert.equal(client.sessionId, sessionId);
  assert.equal((await Scrape.of(leader.metricsUrl)).value("throttled_ops"), throttled);
});
