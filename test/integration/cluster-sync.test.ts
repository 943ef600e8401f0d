/**
 * How a returning learner is brought up to date (issue 3, docs/architecture.md §4): each of the leader's three
 * sync modes is forced on a real three-voter cluster and recognised by the leader's own structured
 * "zab syncMode" line, then every server must hold the same tree.
 *
 * - DIFF: a follower misses a few writes, fewer than the leader's committed-log window.
 * - SNAP: a follower misses more writes than the window (commitLogCount is lowered to make it cheap).
 * - TRUNC: a leader logs a proposal no follower ever receives (both followers paused, then killed
 *   while paused, so the proposal dies unread in their sockets), is killed, and comes back after the
 *   others have moved to a new epoch: its extra txn must be cut from its log and never appear.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, ZkError } from "../../src/index.js";
import { connectTo, createSurvivingFailover, syncModeLines, treesAt, waitForLeader, type SyncModeLine } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { waitFor } from "../helpers/wait.js";

const VOTERS = [1, 2, 3];
const COMMIT_LOG_COUNT = 40;

describe("learner sync modes", () => {
  let cluster: ClusterProcess;
  before(async () => {
    cluster = await ClusterProcess.start({ voters: 3, tickMs: 200, initLimitTicks: 20, syncLimitTicks: 5, commitLogCount: COMMIT_LOG_COUNT });
    await waitForLeader(cluster);
  });
  after(async () => {
    await cluster?.stop();
  });

  /** Stops `follower`, makes `writes` creates under `root` through the others, restarts it; returns the leader's sync line for it. */
  async function missWritesAndReturn(root: string, writes: number): Promise<{ leader: number; follower: number; sync: SyncModeLine }> {
    const leader = await waitForLeader(cluster);
    const follower = VOTERS.find((id) => id !== leader)!;
    const others = VOTERS.filter((id) => id !== follower)
      .map((id) => cluster.server(id).connectString)
      .join(",");
    const zk = await Client.connect(others, { sessionTimeoutMs: 6_000, connectTimeoutMs: 30_000 });
    try {
      await createSurvivingFailover(zk, root, "");
      await cluster.server(follower).stop();
      for (let n = 0; n < writes; n++) await createSurvivingFailover(zk, `${root}/n-${String(n).padStart(4, "0")}`, String(n));
    } finally {
      await zk.close();
    }
    const leaderLog = cluster.server(leader);
    const seen = syncModeLines(leaderLog.stderr).length;
    await cluster.server(follower).restart();
    const sync = await waitFor(
      `leader ${leader} syncs follower ${follower}`,
      () =>
        syncModeLines(leaderLog.stderr)
          .slice(seen)
          .find((l) => l.learner === follower),
      30_000,
    );
    await waitFor("the follower rejoined", () => (cluster.roles().get(follower)?.role === "following" ? true : undefined), 30_000);
    return { leader, follower, sync };
  }

  async function assertSameTreeEverywhere(root: string, expectedSize: number): Promise<Map<string, string>> {
    const views = await treesAt(cluster, VOTERS, root);
    assert.equal(views[0]!.size, expectedSize);
    for (const view of views) assert.deepEqual(view, views[0]);
    return views[0]!;
  }

  test("DIFF: a follower that missed fewer writes than the committed-log window gets only those writes", async () => {
    const { sync } = await missWritesAndReturn("/diff", 10);
    assert.equal(sync.mode, "DIFF", JSON.stringify(sync));
    assert.match(sync.reason, /in the committed-log window/);
    await assertSameTreeEverywhere("/diff", 11);
  });

  test("SNAP: a follower further behind than the committed-log window gets the leader's snapshot", async () => {
    const { sync } = await missWritesAndReturn("/snap", 3 * COMMIT_LOG_COUNT);
    assert.equal(sync.mode, "SNAP", JSON.stringify(sync));
    assert.match(sync.reason, /behind the committed-log window/);
    await assertSameTreeEverywhere("/snap", 3 * COMMIT_LOG_COUNT + 1);
  });

  test("TRUNC: a leader's proposal that no follower received is cut from its log when it returns", async () => {
    const oldLeader = await waitForLeader(cluster);
    const followers = VOTERS.filter((id) => id !== oldLeader);
    const zk = await connectTo(cluster, oldLeader);
    await zk.create("/trunc", "");
    await zk.sync("/trunc");

    for (const id of followers) cluster.server(id).pause();
    let lostOutcome: "ok" | "failed" | undefined;
    zk.create("/trunc/lost", "never committed").then(
      () => (lostOutcome = "ok"),
      (error: unknown) => {
        assert.ok(error instanceof ZkError, String(error));
        lostOutcome = "failed";
      },
    );
    // The leader logs the proposal at once, then gives up its followers after syncLimit and steps
    // down: waiting for that guarantees the proposal is in its log before it is killed.
    await waitFor(`leader ${oldLeader} steps down without a quorum`, () => (cluster.roles().get(oldLeader)?.role === "looking" ? true : undefined), 30_000);
    await cluster.server(oldLeader).crash();
    // SIGKILL ends a stopped process too: the proposal waiting in its socket is never read.
    for (const id of followers) await cluster.server(id).crash();
    await waitFor("the lost create's outcome", () => lostOutcome, 30_000);
    assert.equal(lostOutcome, "failed", "a write no follower logged was acknowledged");
    await zk.close();

    for (const id of followers) await cluster.server(id).restart();
    const newLeader = await waitForLeader(cluster);
    assert.notEqual(newLeader, oldLeader);
    const survivors = followers.map((id) => cluster.server(id).connectString).join(",");
    const writer = await Client.connect(survivors, { sessionTimeoutMs: 6_000, connectTimeoutMs: 30_000 });
    await createSurvivingFailover(writer, "/trunc/after", "written in the new epoch");
    await writer.close();

    const leaderLog = cluster.server(newLeader);
    const seen = syncModeLines(leaderLog.stderr).length;
    await cluster.server(oldLeader).restart();
    const sync = await waitFor(
      `leader ${newLeader} syncs the old leader`,
      () =>
        syncModeLines(leaderLog.stderr)
          .slice(seen)
          .find((l) => l.learner === oldLeader),
      30_000,
    );
    assert.equal(sync.mode, "TRUNC", JSON.stringify(sync));
    await waitFor("the old leader rejoined", () => (cluster.roles().get(oldLeader)?.role === "following" ? true : undefined), 30_000);

    const tree = await assertSameTreeEverywhere("/trunc", 2);
    assert.ok(tree.has("/trunc/after"));
    assert.ok(!tree.has("/trunc/lost"), "the truncated proposal reappeared");
  });
});
