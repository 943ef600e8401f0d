/**
 * Issue 6's reads on a three-voter cluster, served by a follower (reads never leave the server
 * a client is connected to): getEphemerals, getAllChildrenNumber, multiRead and create's stat
 * (ZooKeeper's create2), each with its bad input answered by a typed error on a session that
 * stays usable.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, op } from "../../src/index.js";
import type { ReadOp } from "../../src/index.js";
import { waitForLeader } from "../helpers/cluster-client.js";
import { withCode } from "../helpers/zk-error.js";
import { ClusterProcess } from "../helpers/cluster-process.js";

describe("ZooKeeper 3.8 reads", () => {
  let cluster: ClusterProcess;
  let zk: Client;
  let other: Client;
  before(async () => {
    cluster = await ClusterProcess.start({ voters: 3, tickMs: 200 });
    const leader = await waitForLeader(cluster);
    const follower = [1, 2, 3].find((id) => id !== leader)!;
    const setup = await Client.connect(cluster.server(follower).connectString, { connectTimeoutMs: 30_000 });
    await setup.create("/app", "");
    await setup.close();
    zk = await Client.connect(`${cluster.server(follower).connectString}/app`, { connectTimeoutMs: 30_000 });
    other = await Client.connect(`${cluster.server(leader).connectString}/app`, { connectTimeoutMs: 30_000 });
  });
  after(async () => {
    await Promise.allSettled([zk?.close(), other?.close()]);
    await cluster?.stop();
  });

  test("getEphemerals lists this session's ephemerals by string prefix, inside the chroot, sorted", async () => {
    await zk.create("/locks", "");
    const mine = await zk.create("/locks/lock-", "", { mode: "ephemeral-sequential" });
    await zk.create("/member", "", { mode: "ephemeral" });
    await other.create("/theirs", "", { mode: "ephemeral" });
    await zk.sync("/");
    assert.deepEqual(await zk.getEphemerals(), [mine, "/member"].sort());
    assert.deepEqual(await zk.getEphemerals("/locks/lock-"), [mine], "a plain string prefix, not a path");
    assert.deepEqual(await zk.getEphemerals("/nothing"), []);
    assert.deepEqual(await other.getEphemerals("/"), ["/theirs"], "only the asking session's own");
    await assert.rejects(zk.getEphemerals("no-slash"), withCode("BADARGUMENTS"));
  });

  test("getAllChildrenNumber counts every node below a path, at any depth", async () => {
    await zk.create("/tree", "");
    for (const path of ["/tree/a", "/tree/a/b", "/tree/a/b/c", "/tree/d"]) await zk.create(path, "");
    assert.equal(await zk.getAllChildrenNumber("/tree"), 4);
    assert.equal(await zk.getAllChildrenNumber("/tree/a/b/c"), 0);
    await assert.rejects(zk.getAllChildrenNumber("/tree/missing"), withCode("NONODE"));
    await assert.rejects(zk.getAllChildrenNumber("/tree/"), withCode("BADARGUMENTS"));
    assert.equal(await zk.getAllChildrenNumber("/tree"), 4, "the session is still usable");
  });

  test("multiRead answers each read on its own: a missing node fails only its own entry", async () => {
    await zk.create("/mr", "");
    await zk.create("/mr/x", "");
    await zk.create("/mr/y", "");
    const stat = await zk.setData("/mr", "hello");
    const results = await zk.multiRead([op.getData("/mr"), op.getChildren("/mr"), op.getData("/mr/missing"), op.getChildren("/mr/x")]);
    assert.equal(results.length, 4);
    const [data, children, missing, empty] = results;
    assert.ok(data?.type === "getData");
    assert.equal(Buffer.from(data.data).toString(), "hello");
    assert.deepEqual(data.stat, stat);
    assert.deepEqual(children, { type: "getChildren", children: ["x", "y"] });
    assert.ok(missing?.type === "error" && missing.code === "NONODE");
    assert.deepEqual(empty, { type: "getChildren", children: [] });
    await assert.rejects(zk.multiRead([op.getData("/mr"), op.setData("/mr", "x") as unknown as ReadOp]), withCode("BADARGUMENTS"));
    await assert.rejects(zk.multiRead([op.getData("bad")]), withCode("BADARGUMENTS"));
    assert.deepEqual(await zk.multiRead([]), []);
  });

  test("create returns the new node's stat (create2), the same as a later exists", async () => {
    const { path, stat } = await zk.createWithStat("/c2-", "abc", { mode: "persistent-sequential" });
    assert.match(path, /^\/c2-\d{10}$/);
    assert.equal(stat.dataLength, 3);
    assert.deepEqual(await zk.exists(path), stat);
  });
});
