/**
 * The space quota on a three-voter cluster of real processes, with spaceQuotaBytes scaled down to
 * 256 KiB: clients filling the tree through a follower get QUOTAEXCEEDED at the ceiling through
 * either door (the leader's prep decides); the servers stay up and agree; reads, shrinking writes
 * and deletes go on; the leader raises the space alarm (log line, gauge, /readyz) and clears it
 * once deletes have made room, after which writes that grow the tree are accepted again.
 *
 * The ZooKeeper door is driven by the raw jute client: node-zookeeper-client, whose code list stops
 * at ZooKeeper 3.4's, throws on QUOTAEXCEEDED (-125) as it does on any code added since.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client } from "../../src/index.js";
import { ZkErrorCode } from "../../src/common/errors.js";
import { connectTo, waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { Perms } from "../../src/common/znode.js";
import { CreateRequest, DeleteRequest, GetDataRequest, OpCode, SetDataRequest } from "../../src/server/zk-wire/records.js";
import { JuteClient } from "../helpers/jute-client.js";
import { Scrape } from "../helpers/prometheus.js";
import { waitFor } from "../helpers/wait.js";
import { withCode } from "../helpers/zk-error.js";

const QUOTA_BYTES = 256 * 1024;
const ZNODE_BYTES = 16 * 1024;
/** More creates than the quota can hold: the fill loops stop at the first refusal well before it. */
const FILL_ATTEMPTS_MAX = 64;

const OPEN_ACL = [{ perms: Perms.ALL, id: { scheme: "world", id: "anyone" } }];

/** The ZooKeeper error code of each request through the ZooKeeper door (0 for success). */
const zkDoor = (client: JuteClient) => ({
  create: async (path: string, size: number) =>
    (await client.request(OpCode.create, CreateRequest, { path, data: new Uint8Array(size), acl: OPEN_ACL, flags: 0 })).header.err,
  setData: async (path: string, size: number) =>
    (await client.request(OpCode.setData, SetDataRequest, { path, data: new Uint8Array(size), version: -1 })).header.err,
  getData: async (path: string) => (await client.request(OpCode.getData, GetDataRequest, { path, watch: false })).header.err,
  delete: async (path: string) => (await client.request(OpCode.delete, DeleteRequest, { path, version: -1 })).header.err,
});

interface ReadyBody {
  ready: boolean;
  alarms?: { name: string; reason: string }[];
}

async function readyz(cluster: ClusterProcess, id: number): Promise<ReadyBody> {
  const response = await fetch(`${cluster.server(id).adminUrl}/readyz`);
  return (await response.json()) as ReadyBody;
}

describe("the space quota", () => {
  let cluster: ClusterProcess;
  let leader: number;
  let followers: number[];
  let grpc: Client;
  let jute: JuteClient;
  let zk: ReturnType<typeof zkDoor>;

  before(async () => {
    cluster = await ClusterProcess.start({ voters: 3, tickMs: 200, httpPorts: true, config: { spaceQuotaBytes: QUOTA_BYTES } });
    leader = await waitForLeader(cluster);
    followers = [1, 2, 3].filter((id) => id !== leader);
    grpc = await connectTo(cluster, followers[0]!);
    jute = await JuteClient.connect(cluster.server(followers[1]!).zkConnectString);
    zk = zkDoor(jute);
  });

  after(async () => {
    await jute?.close();
    await grpc?.close();
    await cluster?.stop();
  });

  test("filling the tree through either door ends in QUOTAEXCEEDED; deleting clears the alarm and brings writes back", async () => {
    // The gRPC door fills the tree until the leader refuses.
    let grpcCreated = 0;
    let grpcRefusal: unknown;
    for (let i = 0; i < FILL_ATTEMPTS_MAX && grpcRefusal === undefined; i++) {
      await grpc.create(`/grpc-${i}`, new Uint8Array(ZNODE_BYTES)).then(
        () => (grpcCreated += 1),
        (error: unknown) => (grpcRefusal = error),
      );
    }
    assert.ok(grpcCreated >= 8, `${grpcCreated} znodes of 16 KiB fit under 256 KiB`);
    assert.ok(withCode("QUOTAEXCEEDED")(grpcRefusal), `the gRPC door's refusal: ${String(grpcRefusal)}`);

    // The ZooKeeper door gets ZooKeeper's code for it, -125, for a create and a growing setData.
    assert.equal(await zk.create("/zk-0", ZNODE_BYTES), ZkErrorCode.QUOTAEXCEEDED);
    assert.equal(await zk.setData("/grpc-0", 2 * ZNODE_BYTES), ZkErrorCode.QUOTAEXCEEDED);

    // Reads and writes that do not grow the tree are served.
    assert.equal((await grpc.getData("/grpc-1")).data.length, ZNODE_BYTES);
    assert.equal(await zk.getData("/grpc-1"), 0);
    assert.equal(await zk.setData("/grpc-1", ZNODE_BYTES), 0, "a setData of the same size");
    await grpc.setData("/grpc-2", new Uint8Array(ZNODE_BYTES - 16));

    // The leader's alarm: one log line, the gauge, the refusals counted, a NOSPACE reason on /readyz.
    const leaderServer = cluster.server(leader);
    assert.equal(leaderServer.stderr.split('"msg":"space quota alarm:').length - 1, 1, "one alarm line for all the refusals");
    const scrape = await Scrape.of(leaderServer.metricsUrl);
    assert.equal(scrape.value("corral_space_alarm"), 1);
    assert.ok(scrape.value("corral_space_quota_refusals") >= 3, "every refusal is counted");
    assert.ok(scrape.value("corral_space_used_bytes") <= QUOTA_BYTES);
    const alarmed = await readyz(cluster, leader);
    assert.equal(alarmed.ready, true, "still ready: reads and deletes are served");
    assert.deepEqual(
      alarmed.alarms?.map((alarm) => alarm.name),
      ["NOSPACE"],
    );

    // Deleting through the ZooKeeper door makes room: the alarm clears and both doors create again.
    for (let i = 3; i < 6; i++) assert.equal(await zk.delete(`/grpc-${i}`), 0);
    await waitFor("the alarm cleared", async () => ((await readyz(cluster, leader)).alarms === undefined ? true : undefined));
    assert.equal((await Scrape.of(leaderServer.metricsUrl)).value("corral_space_alarm"), 0);
    assert.match(leaderServer.stderr, /"msg":"space quota alarm cleared"/);
    await grpc.create("/grpc-again", new Uint8Array(ZNODE_BYTES));
    assert.equal(await zk.create("/zk-again", ZNODE_BYTES), 0);

    // Every server is up, and once each has applied the last write they hold the same estimate.
    for (const id of [1, 2, 3]) assert.ok(cluster.server(id).running, `server ${id} is running`);
    const scrapeUsed = (id: number) => Scrape.of(cluster.server(id).metricsUrl).then((scrape) => scrape.value("corral_space_used_bytes"));
    const used = await waitFor("the three servers' estimates agree", async () => {
      const figures = await Promise.all([1, 2, 3].map(scrapeUsed));
      return new Set(figures).size === 1 ? figures : undefined;
    });
    assert.ok(used[0]! > 8 * ZNODE_BYTES && used[0]! <= QUOTA_BYTES, `${used[0]} bytes held`);
  });
});
