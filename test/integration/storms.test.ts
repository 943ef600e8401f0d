/**
 * The storms beside the write storm, on real server processes, each held by the bounds the server
 * already has (counts, never times):
 * - a connection storm from one address: maxClientCnxns and the connection token bucket hold, and
 *   the sessions already open keep working;
 * - the watch fan-out: many sessions each watching one znode that then changes all get the event;
 * - a recursive watch on "/" whose client stops reading during a write storm: the server ends that
 *   connection at connectionUnsentBytesMax instead of holding its events without bound, on either
 *   door, while a watcher that reads gets every event;
 * - many clients listing a parent of many children at once all get the whole list, with no
 *   election; and with a small globalUnsentBytesMax a server holds at most that bound plus one
 *   answer unwritten;
 * - many sessions expiring in the same tick: no election, and the leader keeps answering.
 *
 * The sizes here keep each storm within seconds on a 2-core machine; `npm run bench:storms` runs the
 * same file at the sizes of the overload issue (STORM_SCALE=full).
 */
import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client, op } from "../../src/index.js";
import { Perms } from "../../src/common/znode.js";
import {
  AddWatchRequest,
  CreateRequest,
  decodeRecord,
  ExistsRequest,
  GetChildrenRequest,
  GetChildrenResponse,
  OpCode,
} from "../../src/server/zk-wire/records.js";
import { connectTo, waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { JuteClient } from "../helpers/jute-client.js";
import { Scrape } from "../helpers/prometheus.js";
import { RawStream } from "../helpers/raw-session.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

const FULL = process.env["STORM_SCALE"] === "full";
/**
 * Full: the overload issue's sizes. The fan-out's 100,000 sessions do not fit one door on this kind
 * of machine: each ZooKeeper-port session is a TCP connection, and a process may hold 20,000
 * descriptors. So 15,000 of them come through the ZooKeeper port (from this process) and 85,000
 * through the gRPC door, whose sessions are streams that share one HTTP/2 connection per server.
 */
const SIZES = FULL
  ? { connectAttempts: 10_000, zkWatchers: 15_000, grpcWatchers: 85_000, writesMax: 200_000, listers: 100, children: 1_000_000, expiring: 10_000 }
  : { connectAttempts: 2_000, zkWatchers: 300, grpcWatchers: 300, writesMax: 40_000, listers: 100, children: 10_000, expiring: 600 };

/**
 * The SDK sessions this process keeps through a storm: the writer that triggers each storm and the
 * wide listing's clients. This process also opens the storm's own connections in the same event
 * loop (100,000 of them at full size), so its pings may wait seconds; a 4 s session would expire
 * for the generator's sake, not the server's. Within the cluster's maxSessionTimeoutMs.
 */
const CLIENT_SESSION_TIMEOUT_MS = 30_000;

/**
 * The wide listing's clients. Their sessions share three HTTP/2 connections, one per server, and
 * HTTP/2 divides each connection among every answer in transfer (up to globalUnsentBytesMax of
 * them, about 17 answers of 15 MB at full size), so each answer arrives near the end of all of
 * them, about 30 s here. The SDK takes only a whole frame as a sign of life (ZooKeeper's clients
 * take any byte), so a lister's session must outlast that. Within the cluster's maxSessionTimeoutMs.
 */
const LISTER_SESSION_TIMEOUT_MS = FULL ? 120_000 : CLIENT_SESSION_TIMEOUT_MS;

const OPEN_ACL = [{ perms: Perms.ALL, id: { scheme: "world", id: "anyone" } }];

/** Runs `task` over `items`, `width` at a time. */
async function inBatches<T, R>(items: readonly T[], width: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += width) results.push(...(await Promise.all(items.slice(i, i + width).map(task))));
  return results;
}

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/**
 * The raw clients here send no pings: their sessions ask for the longest timeout the server grants,
 * so that none expires while a storm is being set up (an expired session frees its connection).
 */
const SESSION_TIMEOUT_MS = FULL ? 600_000 : 60_000; // full: 100,000 fan-out sessions take minutes to open

/** Opens a TCP connection and sends a ConnectRequest: whether the server answered it, and whether the connection is still open. */
async function connectAttempt(port: number): Promise<{ answered: boolean; open: () => boolean; client?: JuteClient }> {
  let client: JuteClient;
  try {
    client = await JuteClient.open(`127.0.0.1:${port}`);
  } catch {
    return { answered: false, open: () => false };
  }
  let closed = false;
  void client.closed.then(() => (closed = true));
  const answered = await client.handshake({ timeoutMs: SESSION_TIMEOUT_MS }).then(
    () => true,
    () => false,
  );
  return { answered, open: () => !closed, client };
}

/**
 * A standalone server with a ZooKeeper port and metrics, for the tests of the describe that calls
 * this: started before them with `extraArgs` (its raw clients' long sessions granted), stopped and
 * its data dir removed after them.
 */
function standaloneServer(extraArgs: readonly string[]): { readonly server: ServerProcess } {
  let started: ServerProcess | undefined;
  let removeDir: (() => Promise<void>) | undefined;
  before(async () => {
    const dir = await makeTempDir();
    removeDir = dir.remove;
    started = await ServerProcess.start({
      dataDir: dir.path,
      zkPort: await freePort(),
      metricsPort: await freePort(),
      extraArgs: [...extraArgs, "--max-session-timeout-ms", String(SESSION_TIMEOUT_MS)],
    });
  });
  after(async () => {
    await started?.stop();
    await removeDir?.();
  });
  return {
    get server(): ServerProcess {
      if (started === undefined) throw new Error("the server is started before the tests");
      return started;
    },
  };
}

describe("a connection storm from one address", () => {
  const MAX_CLIENT_CNXNS = 40;
  const TOKENS = 200;
  // The bucket refills one token a second: within the storm it is the bound, not the refill.
  const standalone = standaloneServer([
    ...["--max-client-cnxns", String(MAX_CLIENT_CNXNS)],
    ...["--connection-throttle-tokens", String(TOKENS), "--connection-throttle-fill-time-ms", "1000", "--connection-throttle-fill-count", "1"],
  ]);

  test("maxClientCnxns and the token bucket hold, and the sessions already open keep working", async () => {
    const server = standalone.server;
    const zkPort = server.options.zkPort!;
    const bystanders = await Promise.all(range(4).map(() => JuteClient.connect(`127.0.0.1:${zkPort}`, { timeoutMs: SESSION_TIMEOUT_MS })));
    const sdk = await Client.connect(server.connectString);
    await sdk.create("/bystander", "0");

    // Every attempt is held open until the storm is over, so that maxClientCnxns counts them all.
    const attempts = await inBatches(range(SIZES.connectAttempts), 500, () => connectAttempt(zkPort));
    const answered = attempts.filter((attempt) => attempt.answered).length;
    const held = attempts.filter((attempt) => attempt.answered && attempt.open()).length;
    // The SDK's stream counts too while it is open (under the full storm it may drop and come back).
    const sdkStreams = sdk.connected ? 1 : 0;
    assert.ok(
      held + bystanders.length + sdkStreams <= MAX_CLIENT_CNXNS,
      `${held} storm sessions open beside ${bystanders.length + sdkStreams} bystander connections (maxClientCnxns ${MAX_CLIENT_CNXNS})`,
    );
    assert.ok(held >= 1, "the storm was let in up to the bound");
    const rejected = (await Scrape.of(server.metricsUrl)).value("connection_rejected");
    assert.ok(rejected >= SIZES.connectAttempts - answered - TOKENS, `connection_rejected ${rejected} of ${SIZES.connectAttempts} attempts`);
    await Promise.all(attempts.flatMap((attempt) => (attempt.client === undefined ? [] : [attempt.client.close()])));

    // The bystanders' sessions are the ones they had, and they are answered.
    for (const bystander of bystanders) {
      const reply = await bystander.request(OpCode.exists, ExistsRequest, { path: "/bystander", watch: false });
      assert.equal(reply.header.err, 0);
    }
    const sessionId = sdk.sessionId;
    await sdk.setData("/bystander", "1");
    assert.equal(sdk.sessionId, sessionId);
    assert.ok(server.running);
    await sdk.close();
    await Promise.all(bystanders.map((bystander) => bystander.close()));
  });
});

describe("wide listings at the server's outbound bound", () => {
  const GLOBAL_UNSENT_BYTES_MAX = 1024 * 1024;
  const CHILDREN = 100_000;
  const LISTERS_PER_DOOR = 12;
  const standalone = standaloneServer(["--global-unsent-bytes-max", String(GLOBAL_UNSENT_BYTES_MAX)]);

  test("many clients listing a wide parent at once through both doors all get every child, and the server holds at most its bound plus one answer", async () => {
    const server = standalone.server;
    const writer = await Client.connect(server.connectString);
    await writer.create("/wide", "");
    for (let at = 0; at < CHILDREN; at += 1000) {
      await writer.multi(range(1000).map((i) => op.create(`/wide/child-${String(at + i).padStart(7, "0")}`, "")));
    }
    const sdkListers = await Promise.all(range(LISTERS_PER_DOOR).map(() => Client.connect(server.connectString)));
    const zkListers = await Promise.all(
      range(LISTERS_PER_DOOR).map(() => JuteClient.connect(`127.0.0.1:${server.options.zkPort!}`, { timeoutMs: SESSION_TIMEOUT_MS })),
    );
    try {
      const answerBytes: number[] = [];
      const listThroughZk = async (lister: JuteClient): Promise<number> => {
        const reply = await lister.request(OpCode.getChildren, GetChildrenRequest, { path: "/wide", watch: false });
        assert.equal(reply.header.err, 0);
        answerBytes.push(reply.body.byteLength);
        return (decodeRecord(GetChildrenResponse, reply.body).children ?? []).length;
      };
      const counts = await Promise.all([...sdkListers.map(async (lister) => (await lister.getChildren("/wide")).length), ...zkListers.map(listThroughZk)]);
      assert.deepEqual(
        counts,
        range(2 * LISTERS_PER_DOOR).map(() => CHILDREN),
        "every lister got every child",
      );
      const scrape = await Scrape.of(server.metricsUrl);
      // The jute answer is the larger encoding of the two doors' (4 bytes of length a name against
      // protobuf's 2); a little room for the pongs and connect answers that never wait.
      const oneAnswer = Math.max(...answerBytes) + 64 * 1024;
      const peak = scrape.value("corral_outbound_unsent_bytes_peak");
      assert.ok(peak <= GLOBAL_UNSENT_BYTES_MAX + oneAnswer, `at most the bound plus one answer held unwritten: ${peak} bytes`);
      assert.ok(scrape.value("corral_outbound_reads_waited") >= 1, "listings waited for their turn at the bound");
      assert.equal(scrape.value("corral_outbound_unsent_bytes"), 0, "everything was written out");
      assert.ok(server.running);
    } finally {
      await Promise.all([...sdkListers.map((lister) => lister.close()), ...zkListers.map((lister) => lister.close()), writer.close()]);
    }
  });
});

describe("storms on a three-voter cluster", () => {
  let cluster: ClusterProcess;
  let leader: number;
  let writer: Client;
  /** What the writer's client said (state changes, its log lines), kept with the servers' logs on a failure. */
  const writerSaid: string[] = [];
  const UNSENT_BYTES_MAX = 256 * 1024;

  before(async () => {
    cluster = await ClusterProcess.start({
      voters: 3,
      // A short tick for the mass expiry's short sessions; syncLimit stays at its default span
      // (10 s), so that a second's stall while 33,000 streams end at once is no reason for an election,
      // as it would not be in a production cluster.
      tickMs: 200,
      syncLimitTicks: 50,
      httpPorts: true,
      config: { maxClientCnxns: 0, connectionUnsentBytesMax: UNSENT_BYTES_MAX, minSessionTimeoutMs: 400, maxSessionTimeoutMs: SESSION_TIMEOUT_MS },
    });
    leader = await waitForLeader(cluster);
    // Every server serves before a storm is aimed at it (a follower still syncing refuses connects).
    for (const id of [1, 2, 3]) await (await connectTo(cluster, id)).close();
    const heard = (level: string) => (obj: object, msg?: string) =>
      writerSaid.push(`${new Date().toISOString()} writer ${level} ${msg ?? ""} ${JSON.stringify(obj)}`);
    writer = await Client.connect(cluster.server(leader).connectString, {
      sessionTimeoutMs: CLIENT_SESSION_TIMEOUT_MS,
      connectTimeoutMs: 30_000,
      logger: { debug: heard("debug"), info: heard("info"), warn: heard("warn"), error: heard("error") },
    });
    writer.on("state", (state: string) => writerSaid.push(`${new Date().toISOString()} writer state ${state}`));
  });

  after(async () => {
    await writer?.close();
    await cluster?.stop();
  });

  const zkAddresses = (): string[] => [1, 2, 3].map((id) => cluster.server(id).zkConnectString);

  /** Writes each server's log and the clients' own account to a directory that outlives the test, and names it. */
  const keepLogs = async (storm: string, clients: readonly string[]): Promise<string> => {
    const dir = await mkdtemp(join(tmpdir(), `corral-storm-${storm}-`));
    for (const id of [1, 2, 3]) await writeFile(join(dir, `server-${id}.log`), cluster.server(id).stderr);
    await writeFile(join(dir, "clients.log"), [...writerSaid, ...clients].join("\n") + "\n");
    return dir;
  };
  /** A storm test's body, whose failure keeps the servers' logs and names their directory. */
  const keepingLogs = (storm: string, body: () => Promise<void>) => async (): Promise<void> => {
    try {
      await body();
    } catch (err) {
      const kept = await keepLogs(storm, []);
      if (err instanceof Error) err.message += ` (servers' logs kept in ${kept})`;
      throw err;
    }
  };

  /** Each server's role line (role, leader, epoch) and looking_count: what a storm that starts no election leaves as it was. */
  const electionState = async () => ({
    roles: cluster.roles(),
    looking: await Promise.all([1, 2, 3].map((id) => Scrape.of(cluster.server(id).metricsUrl).then((scrape) => scrape.value("looking_count")))),
  });
  const assertNoElectionSince = async (before: Awaited<ReturnType<typeof electionState>>): Promise<void> => {
    const after = await electionState();
    for (const id of [1, 2, 3]) {
      assert.ok(cluster.server(id).running, `server ${id} is up`);
      assert.deepEqual(after.roles.get(id), before.roles.get(id), `server ${id} kept its role, leader and epoch`);
    }
    assert.deepEqual(after.looking, before.looking, "no server went looking");
  };

  test(
    "the watch fan-out through both doors: every session watching a znode gets its event when it changes",
    keepingLogs("fan-out", async () => {
      await writer.create("/fan", "0");
      const addresses = zkAddresses();
      const zkWatchers: JuteClient[] = [];
      const grpcWatchers: RawStream[] = [];
      try {
        await inBatches(range(SIZES.zkWatchers), 200, async (i) => {
          const client = await JuteClient.connect(addresses[i % 3]!, { timeoutMs: SESSION_TIMEOUT_MS });
          zkWatchers.push(client);
          const reply = await client.request(OpCode.exists, ExistsRequest, { path: "/fan", watch: true });
          assert.equal(reply.header.err, 0);
        });
        // RawStream.open makes a channel per stream; grpc-js shares one connection among equal channels.
        const grpcEvents = await inBatches(range(SIZES.grpcWatchers), 500, async (i) => {
          const stream = RawStream.open(cluster.server((i % 3) + 1).connectString);
          grpcWatchers.push(stream);
          await stream.connect({ timeoutMs: SESSION_TIMEOUT_MS });
          assert.equal((await stream.request({ exists: { path: "/fan", watch: true } })).err, 0);
          return { event: stream.next() }; // wrapped: the batch must not wait for the event
        });
        await writer.setData("/fan", "1");
        await waitFor("every ZooKeeper-port watcher's event", () => (zkWatchers.every((w) => w.events.length > 0) ? true : undefined), 120_000);
        for (const watcher of zkWatchers) assert.deepEqual(watcher.events, [{ type: 3, state: 3, path: "/fan" }], "one NodeDataChanged each");
        for (const frame of await Promise.all(grpcEvents.map((watcher) => watcher.event))) {
          assert.equal(frame?.frame, "event");
          if (frame?.frame === "event") assert.deepEqual([frame.event.type, frame.event.path], [3, "/fan"], "a NodeDataChanged for /fan");
        }
        for (const id of [1, 2, 3]) assert.ok(cluster.server(id).running, `server ${id} is up`);
      } finally {
        await inBatches(zkWatchers, 200, (watcher) => watcher.close());
        for (const stream of grpcWatchers) stream.end();
      }
    }),
  );

  test(
    "a recursive watch on / that stops reading is ended at connectionUnsentBytesMax on either door; a reading one gets every event",
    keepingLogs("recursive-watch", async () => {
      // Long paths make each event about 3 KiB, so that the socket buffers fill within the storm.
      const name = "x".repeat(3000);
      const paths = range(16).map((i) => `/r${i}-${name}`);
      await writer.multi(paths.map((path) => op.create(path, "")));

      const stalledZk = await JuteClient.connect(cluster.server(leader).zkConnectString);
      assert.equal((await stalledZk.request(OpCode.addWatch, AddWatchRequest, { path: "/", mode: 1 })).header.err, 0);
      const stalledGrpc = RawStream.open(cluster.server(leader).connectString);
      await stalledGrpc.connect({ timeoutMs: 10_000 });
      assert.equal((await stalledGrpc.request({ xid: 1, addWatch: { path: "/", mode: 1 } })).err, 0);
      stalledGrpc.pauseReading();
      stalledZk.pauseReading();

      let received = 0;
      const reader = await connectTo(cluster, leader);
      await reader.addWatch("/", () => (received += 1), "persistent-recursive");

      // Written in rounds until the leader has ended both stalled connections (a client that does not
      // read sees that only once it reads again): how many writes that takes depends on the kernel's
      // socket buffers, which take several MiB on loopback before the server's own count grows.
      const leaderLog = () => cluster.server(leader).stderr;
      const endedBoth = () =>
        leaderLog().includes('"details":"the client does not read its answers"') && leaderLog().includes('"reason":"the client does not read its answers"');
      let acknowledged = 0;
      try {
        while (!endedBoth() && acknowledged < SIZES.writesMax) {
          await inBatches(range(500), 50, (i) => writer.setData(paths[(acknowledged + i) % paths.length]!, "w"));
          acknowledged += 500;
        }
        assert.ok(endedBoth(), `the leader ended both stalled connections within ${acknowledged} writes`);
        stalledGrpc.resumeReading();
        stalledZk.resumeReading();
        assert.equal((await stalledGrpc.status).details, "the client does not read its answers");
        await stalledZk.closed;
      } finally {
        stalledGrpc.abandon();
        await stalledZk.close();
      }
      await waitFor("the reading watcher's events", () => (received >= acknowledged ? true : undefined), 60_000);
      assert.equal(received, acknowledged, "one event per write, none lost, none doubled");
      for (const id of [1, 2, 3]) assert.ok(cluster.server(id).running, `server ${id} is up`);
      await reader.close();
    }),
  );

  test(
    "many clients listing a parent of many children at once all get the whole list, and no election",
    keepingLogs("wide-listing", async () => {
      await writer.create("/wide", "");
      for (let at = 0; at < SIZES.children; at += 1000) {
        await writer.multi(range(Math.min(1000, SIZES.children - at)).map((i) => op.create(`/wide/child-${String(at + i).padStart(7, "0")}`, "")));
      }
      // What each lister's client says (state changes, its own warnings), kept with the servers' logs
      // when a listing fails: a lister that lost its connection is told apart from one a server dropped.
      const started = Date.now();
      const said: string[] = [];
      const listers = await Promise.all(
        range(SIZES.listers).map(async (i) => {
          const heard = (level: string) => (obj: object, msg?: string) =>
            said.push(`${Date.now() - started} ms lister ${i} ${level} ${msg ?? ""} ${JSON.stringify(obj)}`);
          const lister = await Client.connect(cluster.server((i % 3) + 1).connectString, {
            sessionTimeoutMs: LISTER_SESSION_TIMEOUT_MS,
            connectTimeoutMs: 30_000,
            logger: { debug: () => {}, info: heard("info"), warn: heard("warn"), error: heard("error") },
          });
          lister.on("state", (state: string) => said.push(`${Date.now() - started} ms lister ${i} state ${state}`));
          return lister;
        }),
      );
      try {
        await Promise.all(listers.map((lister) => lister.sync("/wide")));
        const before = await electionState();
        const counts = await Promise.all(
          listers.map(async (lister, i) => {
            try {
              return (await lister.getChildren("/wide")).length;
            } catch (err) {
              said.push(`${Date.now() - started} ms lister ${i} getChildren failed: ${String(err)}`);
              return -1;
            }
          }),
        );
        if (!counts.every((count) => count === SIZES.children)) {
          const kept = await keepLogs("wide-listing-clients", said);
          assert.fail(`${counts.filter((count) => count !== SIZES.children).length} of ${counts.length} listers did not get every child; logs kept in ${kept}`);
        }
        await assertNoElectionSince(before);
      } finally {
        // Closed whatever happens: a client left open keeps reconnecting, and the test process with it.
        await Promise.all(listers.map((lister) => lister.close()));
      }
    }),
  );

  test(
    "many sessions expiring in the same tick: no election, and the leader keeps answering",
    keepingLogs("mass-expiry", async () => {
      await writer.create("/expiring", "");
      const before = await electionState();
      const addresses = zkAddresses();
      const doomed = await inBatches(range(SIZES.expiring), 200, async (i) => {
        const client = await JuteClient.connect(addresses[i % 3]!, { timeoutMs: 400 });
        const reply = await client.request(OpCode.create, CreateRequest, { path: `/expiring/e-${i}`, data: new Uint8Array(0), acl: OPEN_ACL, flags: 1 });
        assert.equal(reply.header.err, 0);
        return client;
      });
      // Dropped together, without closing: their sessions expire in the same tick or two.
      await Promise.all(doomed.map((client) => client.close()));
      await waitFor("every ephemeral gone", async () => ((await writer.getChildren("/expiring")).length === 0 ? true : undefined), 60_000);
      await writer.setData("/expiring", "still answering");
      await assertNoElectionSince(before);
    }),
  );
});
