/**
 * An SDK storm on real processes (docs/architecture.md §7b): clients pipelining far past the
 * servers' inbound bounds are held back by HTTP/2 flow control, not dropped — they keep their
 * sessions and every write is acknowledged — and a bystander's session beside them is never lost.
 * Outcomes are counted; nothing here depends on how long anything takes.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { limits } from "../../src/common/constants.js";
import { Client, type ClientState } from "../../src/index.js";
import { waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";

const STORM_CLIENTS = 4;
const STORM_WRITES_PER_CLIENT = 64;
const VALUE_BYTES = 256 * 1024;
const BYSTANDER_WRITES = 20;

let cluster: ClusterProcess;
const clients: Client[] = [];

before(async () => {
  cluster = await ClusterProcess.start({
    voters: 3,
    // Sessions of at most 4 s (20 ticks): a stream held unread for long would cost them.
    tickMs: 200,
    // The smallest bounds allowed: each storm client pipelines 16 MiB against 1 MiB.
    config: { connectionOutstandingBytesMax: limits.messageBytesMax, globalOutstandingBytesMax: 2 * limits.messageBytesMax },
  });
});

after(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await cluster?.stop();
});

async function connect(connectString: string): Promise<{ client: Client; states: ClientState[] }> {
  const client = await Client.connect(connectString, { sessionTimeoutMs: 4_000, connectTimeoutMs: 20_000 });
  clients.push(client);
  const states: ClientState[] = [];
  client.on("state", (state: ClientState) => states.push(state));
  return { client, states };
}

test("SDK clients pipelining far past the inbound bounds keep their sessions and get every write acknowledged, and a bystander keeps its session", async () => {
  const leader = await waitForLeader(cluster);
  const follower = cluster.server(leader === 1 ? 2 : 1);
  const storm = await Promise.all(Array.from({ length: STORM_CLIENTS }, () => connect(follower.connectString)));
  const bystander = await connect(follower.connectString);
  const sessionIds = [...storm, bystander].map(({ client }) => client.sessionId);
  await storm[0]!.client.create("/storm", "");
  await bystander.client.create("/bystander", "");

  const value = new Uint8Array(VALUE_BYTES).fill(0x61);
  const outcomes = new Map<string, number>();
  const count = (label: string) => outcomes.set(label, (outcomes.get(label) ?? 0) + 1);
  const stormDone = Promise.all(
    storm.flatMap(({ client }) =>
      // Every write of a client is asked for at once: the whole backlog is pipelined.
      Array.from({ length: STORM_WRITES_PER_CLIENT }, () =>
        client.setData("/storm", value).then(
          () => count("ok"),
          (error: { code?: string }) => count(error.code ?? "other"),
        ),
      ),
    ),
  );
  let bystanderOk = 0;
  for (let i = 0; i < BYSTANDER_WRITES; i++) {
    await bystander.client.setData("/bystander", String(i));
    bystanderOk += 1;
  }
  await stormDone;

  assert.deepEqual(Object.fromEntries(outcomes), { ok: STORM_CLIENTS * STORM_WRITES_PER_CLIENT });
  assert.equal(bystanderOk, BYSTANDER_WRITES);
  assert.deepEqual(
    [...storm, bystander].map(({ client }) => client.sessionId),
    sessionIds,
  );
  // No session saw its connection lost, let alone expired.
  assert.deepEqual(
    [...storm, bystander].map(({ states }) => states),
    Array.from({ length: STORM_CLIENTS + 1 }, () => []),
  );
  const { data } = await bystander.client.getData("/bystander");
  assert.equal(Buffer.from(data).toString(), String(BYSTANDER_WRITES - 1));
});
