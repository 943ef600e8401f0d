/**
 * The session contract (docs/architecture.md §1 items 2, 6, 7) against a real server process over gRPC.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, type ClientState, type WatchedEvent } from "../../src/index.js";
import { ServerProcess } from "../helpers/server-process.js";
import { RawStream } from "../helpers/raw-session.js";
import { TcpProxy } from "../helpers/tcp-proxy.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

describe("session contract", () => {
  let server: ServerProcess;
  let removeDir: () => Promise<void>;
  const clients: Client[] = [];

  async function connect(connectString = server.connectString, sessionTimeoutMs = 2_000): Promise<Client> {
    const client = await Client.connect(connectString, { sessionTimeoutMs, connectTimeoutMs: 20_000 });
    clients.push(client);
    return client;
  }

  before(async () => {
    const dir = await makeTempDir();
    removeDir = dir.remove;
    server = await ServerProcess.start({ dataDir: dir.path, tickMs: 100 });
  });

  after(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await server?.stop();
    await removeDir?.();
  });

  test("a session's pipelined writes and reads are answered in the order sent, each read seeing the writes before it", async () => {
    const zk = await connect();
    await zk.create("/order", "init");
    const completions: number[] = [];
    const pending: Promise<unknown>[] = [];
    const reads: { index: number; expected: string; version: number; promise: Promise<{ data: Uint8Array; stat: { version: number } }> }[] = [];
    let index = 0;
    for (let i = 0; i < 300; i++) {
      const writeIndex = index++;
      pending.push(zk.setData("/order", `v${i}`).then(() => completions.push(writeIndex)));
      const readIndex = index++;
      const read = zk.getData("/order");
      reads.push({ index: readIndex, expected: `v${i}`, version: i + 1, promise: read });
      pending.push(read.then(() => completions.push(readIndex)));
    }
    await Promise.all(pending);
    assert.deepEqual(completions, [...Array(index).keys()], "answers come back in request order");
    for (const read of reads) {
      const { data, stat } = await read.promise;
      assert.equal(text(data), read.expected);
      assert.equal(stat.version, read.version);
    }
  });

  test("a watch event reaches the client before any read that can see the change", async () => {
    const watcher = await connect();
    const writer = await connect();
    await writer.create("/wbd", "0");
    for (let round = 1; round <= 25; round++) {
      const arrivals: string[] = [];
      await watcher.getData("/wbd", { watch: (e) => arrivals.push(`event:${e.type}`) });
      const write = writer.setData("/wbd", String(round));
      // Read until the new value shows; the event must already be there when it does.
      for (;;) {
        const { data } = await watcher.getData("/wbd");
        if (text(data) === String(round)) {
          arrivals.push("read:new");
          break;
        }
        arrivals.push("read:old");
      }
      await write;
      const firstNew = arrivals.indexOf("read:new");
      const event = arrivals.indexOf("event:NodeDataChanged");
      assert.ok(event >= 0 && event < firstNew, `round ${round}: ${arrivals.join(",")}`);
    }
  });

  test("a sync makes the next read see every write committed before it", async () => {
    const reader = await connect();
    const writer = await connect();
    await writer.create("/synced", "0");
    for (let i = 1; i <= 20; i++) {
      await writer.setData("/synced", String(i));
      await reader.sync("/synced");
      assert.equal(text((await reader.getData("/synced")).data), String(i));
    }
  });

  test("watches are one-time triggers with ZooKeeper's event types", async () => {
    const zk = await connect();
    const other = await connect();
    const seen: WatchedEvent[] = [];
    const record = (e: WatchedEvent) => seen.push(e);
    await zk.create("/w1", "");
    assert.equal(await zk.exists("/w1/child", { watch: record }), null);
    await zk.getChildren("/w1", { watch: record });
    await zk.getData("/w1", { watch: record });
    await other.create("/w1/child", "");
    await other.setData("/w1", "x");
    await other.setData("/w1", "y");
    await other.delete("/w1/child");
    await zk.sync("/w1");
    assert.deepEqual(
      seen.map((e) => `${e.type} ${e.path}`),
      ["NodeCreated /w1/child", "NodeChildrenChanged /w1", "NodeDataChanged /w1"],
      "each watch fired once: the second setData and the delete fire nothing",
    );
  });

  test("an expired session's ephemerals are deleted in one transaction and other sessions' watches fire", async () => {
    const observer = await connect(server.connectString, 2_000);
    await observer.create("/exp", "");
    await observer.create("/exp/survivor", "", { mode: "ephemeral" });
    const doomed = RawStream.open(server.connectString);
    const answer = await doomed.connect({ timeoutMs: 200 });
    assert.equal(answer.err, 0);
    for (const name of ["a", "b"]) {
      const response = await doomed.request({ xid: 1, create: { path: `/exp/${name}`, data: Buffer.from("x"), mode: 1 } });
      assert.equal(response.err, 0);
    }
    const events: WatchedEvent[] = [];
    assert.ok(await observer.exists("/exp/a", { watch: (e) => events.push(e) }));
    assert.ok(await observer.exists("/exp/b", { watch: (e) => events.push(e) }));
    await observer.getChildren("/exp", { watch: (e) => events.push(e) });

    doomed.abandon(); // no close: only expiry can end this session
    await waitFor("both NodeDeleted events", () => (events.filter((e) => e.type === "NodeDeleted").length === 2 ? true : undefined));
    const deleted = events.filter((e) => e.type === "NodeDeleted");
    assert.deepEqual(deleted.map((e) => e.path).sort(), ["/exp/a", "/exp/b"]);
    assert.equal(deleted[0]!.zxid, deleted[1]!.zxid, "both ephemerals go in the same closeSession txn");
    assert.ok(events.some((e) => e.type === "NodeChildrenChanged" && e.path === "/exp"));
    assert.equal(await observer.exists("/exp/a"), null);
    assert.deepEqual(await observer.getChildren("/exp"), ["survivor"], "a session that keeps in touch does not expire");
    const resumed = RawStream.open(server.connectString);
    const refused = await resumed.connect({ sessionId: answer.sessionId, password: answer.password });
    assert.equal(refused.err, -112, "the expired session cannot be resumed");
    resumed.end();
  });

  test("a client resumes its session after its connection drops, keeps its ephemerals and gets the events it missed", async () => {
    const writer = await connect();
    await writer.create("/resume", "");
    await writer.create("/resume/x", "0");
    const proxy = await TcpProxy.start(server.port);
    try {
      const zk = await connect(proxy.address, 2_000);
      const states: ClientState[] = [];
      zk.on("state", (s) => states.push(s));
      const sessionId = zk.sessionId;
      await zk.create("/resume/mine", "", { mode: "ephemeral" });
      const events: WatchedEvent[] = [];
      await zk.getData("/resume/x", { watch: (e) => events.push(e) });
      assert.equal(await zk.exists("/resume/later", { watch: (e) => events.push(e) }), null);

      proxy.cut(true);
      await waitFor("disconnected", () => (states.includes("disconnected") ? true : undefined));
      await writer.setData("/resume/x", "1");
      await writer.create("/resume/later", "");
      proxy.heal();

      await waitFor("reconnected", () => (states.includes("reconnected") ? true : undefined));
      assert.equal(zk.sessionId, sessionId);
      await waitFor("missed events", () => (events.length === 2 ? true : undefined));
      assert.deepEqual(events.map((e) => `${e.type} ${e.path}`).sort(), ["NodeCreated /resume/later", "NodeDataChanged /resume/x"]);
      const mine = await writer.exists("/resume/mine");
      assert.equal(mine?.ephemeralOwner, sessionId, "the ephemeral outlived the dropped connection");
      assert.equal(text((await zk.getData("/resume/x")).data), "1");
    } finally {
      await proxy.close();
    }
  });

  test("requests pipelined right behind connect are held and answered after the session exists", async () => {
    const stream = RawStream.open(server.connectString);
    stream.send({ connect: { protocolVersion: 1, timeoutMs: 2_000, sessionId: "0", lastZxidSeen: "0" } });
    stream.send({ request: { xid: 1, create: { path: "/pipelined-behind-connect", data: Buffer.from("x") } } });
    stream.send({ request: { xid: 2, getData: { path: "/pipelined-behind-connect" } } });
    const frames = [await stream.next(), await stream.next(), await stream.next()];
    assert.deepEqual(
      frames.map((f) => f?.frame),
      ["connect", "response", "response"],
    );
    assert.equal(frames[0]?.frame === "connect" && frames[0].connect.err, 0);
    assert.equal(frames[1]?.frame === "response" && frames[1].response.path, "/pipelined-behind-connect");
    assert.equal(frames[2]?.frame === "response" && Buffer.from(frames[2].response.data).toString(), "x");
    stream.send({ request: { xid: 3, close: {} } });
    stream.end();
  });

  test("the session timeout is negotiated within [2, 20] ticks", async () => {
    // tickMs is 100 for this server.
    for (const [requested, negotiated] of [
      [1, 200],
      [150, 200],
      [700, 700],
      [2_000, 2_000],
      [1_000_000, 2_000],
    ] as const) {
      const stream = RawStream.open(server.connectString);
      const answer = await stream.connect({ timeoutMs: requested });
      assert.equal(answer.err, 0);
      assert.equal(answer.timeoutMs, negotiated, `requested ${requested} ms`);
      stream.send({ request: { xid: 1, close: {} } });
      stream.end();
    }
  });

  test("closing a session deletes its ephemerals at once", async () => {
    const observer = await connect();
    const zk = await Client.connect(server.connectString, { sessionTimeoutMs: 2_000 });
    const path = await zk.create("/closing-", "", { mode: "ephemeral-sequential" });
    assert.ok(await observer.exists(path));
    await zk.close();
    assert.equal(zk.state, "closed");
    await observer.sync("/");
    assert.equal(await observer.exists(path), null);
  });
});
