/**
 * A write that reaches the leader after the leader expired its session must not take effect
 * (ZooKeeper's checkSession in PrepRequestProcessor). The race, made on real processes: a client's
 * follower is paused (SIGSTOP, as a long GC pause) while the client's ephemeral create sits in that
 * follower's socket; the leader hears nothing of the session for longer than its timeout and
 * expires it; the follower resumes and forwards the create. Before the fix the leader prepared it
 * after the closeSession, and the ephemeral outlived its session for good (8 rounds out of 8).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Client } from "../../src/index.js";
import { CreateRequest, OpCode } from "../../src/server/zk-wire/records.js";
import { waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { JuteClient } from "../helpers/jute-client.js";

const ROUNDS = 3;
const EPHEMERAL = 1;

let cluster: ClusterProcess;
let observer: Client;

before(async () => {
  // syncLimit far above the pause: the follower stays a follower, only the session expires.
  cluster = await ClusterProcess.start({ voters: 3, tickMs: 100, syncLimitTicks: 40, initLimitTicks: 40 });
});

after(async () => {
  await observer?.close().catch(() => undefined);
  await cluster?.stop();
});

test("an ephemeral create held by a paused follower past its session's expiry never outlives the session", async () => {
  const leader = await waitForLeader(cluster);
  const follower = cluster.server(leader === 1 ? 2 : 1);
  observer = await Client.connect(cluster.server(leader).connectString);
  for (let round = 0; round < ROUNDS; round++) {
    // The shortest timeout the servers negotiate (two ticks): the leader expires it during the pause.
    const client = await JuteClient.connect(follower.zkConnectString, { timeoutMs: 200 });
    const path = `/held-ephemeral-${round}`;
    follower.pause();
    try {
      const reply = client
        .request(OpCode.create, CreateRequest, { path, data: new Uint8Array(0), acl: [{ perms: 31, id: { scheme: "world", id: "anyone" } }], flags: EPHEMERAL })
        .catch(() => undefined);
      // Long enough for the leader to expire the session (not an assertion: a shorter pause only
      // makes the race less likely, and the check below holds either way).
      await sleep(1_000);
      follower.resume();
      await reply;
    } finally {
      follower.resume();
    }
    // The follower ends the connection once it applies the session's closeSession.
    await Promise.race([client.closed, sleep(30_000).then(() => assert.fail(`round ${round}: the expired session's connection stayed open`))]);
    await observer.sync("/");
    const stat = await observer.exists(path);
    assert.equal(
      stat,
      null,
      `round ${round}: ${path} outlived session 0x${client.response!.sessionId.toString(16)} (owner 0x${stat?.ephemeralOwner.toString(16)})`,
    );
  }
});
