/**
 * A write storm on real processes, through each client door (docs/architecture.md §7b): clients
 * pipelining far past the servers' inbound bounds are held back by TCP or HTTP/2 flow control, not
 * dropped — they keep their sessions and every write is acknowledged — and a bystander session on
 * a follower keeps its session and gets every one of its writes acknowledged meanwhile. Load alone
 * starts no election, and a session opened after the storm reads the bystander's last write.
 * Outcomes are counted; nothing here depends on how long anything takes.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { limits } from "../../src/common/constants.js";
import { Client } from "../../src/index.js";
import { waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { Nzk } from "../helpers/nzk.js";

const STORM_CLIENTS = 4;
const STORM_WRITES_PER_CLIENT = 48;
const VALUE_BYTES = 256 * 1024;
const BYSTANDER_WRITES = 20;
/** Sessions of at most 4 s (20 ticks of 200 ms): a connection held unread for long would cost them. */
const SESSION_TIMEOUT_MS = 4_000;

/** One session through one door, as the storm and the bystander use it. */
interface DoorSession {
  setData(path: string, value: Uint8Array): Promise<void>;
  getData(path: string): Promise<string>;
  create(path: string): Promise<void>;
  /** Its id, read again at the end: a session that expired and was replaced would show. */
  sessionId(): string;
  /** Connection losses and expiries it reported. */
  readonly lost: string[];
  close(): Promise<void>;
}

interface Door {
  name: string;
  connect(server: number): Promise<DoorSession>;
}

let cluster: ClusterProcess;
const sessions: DoorSession[] = [];

const sdkDoor: Door = {
  name: "gRPC (SDK)",
  async connect(server) {
    const client = await Client.connect(cluster.server(server).connectString, { sessionTimeoutMs: SESSION_TIMEOUT_MS, connectTimeoutMs: 20_000 });
    const lost: string[] = [];
    client.on("state", (state) => lost.push(state));
    return {
      setData: async (path, value) => void (await client.setData(path, value)),
      getData: async (path) => Buffer.from((await client.getData(path)).data).toString(),
      create: async (path) => void (await client.create(path, "")),
      sessionId: () => String(client.sessionId),
      lost,
      close: () => client.close(),
    };
  },
};

const zooKeeperDoor: Door = {
  name: "ZooKeeper (node-zookeeper-client)",
  async connect(server) {
    const nzk = await Nzk.connect(cluster.server(server).zkConnectString, { sessionTimeoutMs: SESSION_TIMEOUT_MS, connectTimeoutMs: 20_000 });
    const lost: string[] = [];
    for (const event of ["disconnected", "expired"] as const) nzk.client.on(event, () => lost.push(event));
    return {
      setData: async (path, value) => void (await nzk.setData(path, Buffer.from(value))),
      getData: async (path) => (await nzk.getData(path)).data?.toString() ?? "",
      create: async (path) => void (await nzk.create(path)),
      sessionId: () => nzk.sessionId.toString("hex"),
      lost,
      close: () => nzk.close(),
    };
  },
};

before(async () => {
  cluster = await ClusterProcess.start({
    voters: 3,
    tickMs: 200,
    // The smallest bounds allowed: each storm client pipelines 12 MiB against 1 MiB per connection.
    config: { connectionOutstandingBytesMax: limits.messageBytesMax, globalOutstandingBytesMax: 2 * limits.messageBytesMax },
  });
});

after(async () => {
  await Promise.allSettled(sessions.map((s) => s.close()));
  await cluster?.stop();
});

/** Lines each server has logged about changing role: an election shows on every server. */
function roleChanges(): number[] {
  return [...cluster.servers.values()].map((server) => server.stderr.split('"role changed"').length - 1);
}

async function stormWithBystander(door: Door, root: string): Promise<void> {
  const leader = await waitForLeader(cluster);
  const follower = leader === 1 ? 2 : 1;
  const rolesBefore = roleChanges();
  const connect = async (server: number) => {
    const session = await door.connect(server);
    sessions.push(session);
    return session;
  };
  // Half the storm on the leader, half on the bystander's follower (whose writes go through its forward queue).
  const storm = await Promise.all(Array.from({ length: STORM_CLIENTS }, (_, i) => connect(i % 2 === 0 ? leader : follower)));
  const bystander = await connect(follower);
  const idsBefore = [...storm, bystander].map((s) => s.sessionId());
  await bystander.create(root);
  await bystander.create(`${root}/storm`);
  await bystander.create(`${root}/bystander`);

  const value = new Uint8Array(VALUE_BYTES).fill(0x61);
  const outcomes = new Map<string, number>();
  const count = (label: string) => outcomes.set(label, (outcomes.get(label) ?? 0) + 1);
  const stormDone = Promise.all(
    storm.flatMap((session) =>
      // Every write of a client is asked for at once: the whole backlog is pipelined.
      Array.from({ length: STORM_WRITES_PER_CLIENT }, () =>
        session.setData(`${root}/storm`, value).then(
          () => count("ok"),
          (error: unknown) => count(error instanceof Error ? error.message : "not an Error"),
        ),
      ),
    ),
  );
  let bystanderOk = 0;
  for (let i = 0; i < BYSTANDER_WRITES; i++) {
    await bystander.setData(`${root}/bystander`, new TextEncoder().encode(String(i)));
    bystanderOk += 1;
  }
  await stormDone;

  assert.deepEqual(Object.fromEntries(outcomes), { ok: STORM_CLIENTS * STORM_WRITES_PER_CLIENT }, "every storm write acknowledged");
  assert.equal(bystanderOk, BYSTANDER_WRITES, "every bystander write acknowledged");
  assert.deepEqual(
    [...storm, bystander].map((s) => s.sessionId()),
    idsBefore,
    "every session kept",
  );
  assert.deepEqual(
    [...storm, bystander].map((s) => s.lost),
    Array.from({ length: STORM_CLIENTS + 1 }, () => []),
    "no session lost its connection, let alone expired",
  );
  assert.deepEqual(roleChanges(), rolesBefore, "no server changed role: no election");
  const latecomer = await connect(follower);
  assert.equal(await latecomer.getData(`${root}/bystander`), String(BYSTANDER_WRITES - 1), "a new session reads the bystander's last write");
}

test("through the ZooKeeper port, a storm far past the bounds is held back, not dropped, and a bystander on a follower keeps its session and every write", async () => {
  await stormWithBystander(zooKeeperDoor, "/zk-door");
});

test("through the gRPC port, a storm far past the bounds is held back, not dropped, and a bystander on a follower keeps its session and every write", async () => {
  await stormWithBystander(sdkDoor, "/sdk-door");
});
