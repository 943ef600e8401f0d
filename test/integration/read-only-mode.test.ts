/**
 * Read-only mode (ZooKeeper's readonlymode.enabled) on real server processes: a member cut off from
 * its quorum (the other two paused with SIGSTOP) serves sessions whose client allows read-only —
 * reads from its tree, NOTREADONLY for writes and syncs — refuses every other client, and reports
 * "ro" (isro) and "read-only" (srvr); once the quorum is back it ends its read-only connections and
 * its clients carry on read-write. The client here is the raw jute client, for exact frames;
 * kazoo's own read-only test runs in the kazoo gate.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Client } from "../../src/index.js";
import { ZkErrorCode } from "../../src/common/errors.js";
import {
  CreateRequest,
  decodeRecord,
  GetChildrenRequest,
  GetChildrenResponse,
  GetDataRequest,
  GetDataResponse,
  MultiRequest,
  OpCode,
  SetDataRequest,
  SyncRequest,
  type ACL,
} from "../../src/server/zk-wire/records.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { fourLetterWord } from "../helpers/four-letter-word.js";
import { JuteClient } from "../helpers/jute-client.js";
import { waitFor } from "../helpers/wait.js";

const OPEN_ACL: ACL[] = [{ perms: 31, id: { scheme: "world", id: "anyone" } }];
const text = (value: string) => new TextEncoder().encode(value);
const zkPort = (cluster: ClusterProcess, id: number) => Number(cluster.server(id).zkConnectString.split(":")[1]);

async function getData(client: JuteClient, path: string): Promise<{ err: number; data: string | undefined }> {
  const reply = await client.request(OpCode.getData, GetDataRequest, { path, watch: false });
  if (reply.header.err !== 0) return { err: reply.header.err, data: undefined };
  const { data } = decodeRecord(GetDataResponse, reply.body);
  return { err: 0, data: new TextDecoder().decode(data ?? new Uint8Array(0)) };
}

test("a member cut off from its quorum serves read-only sessions, refuses writes, then rejoins", { timeout: 180_000 }, async () => {
  const cluster = await ClusterProcess.start({ voters: 3, config: { readOnlyModeEnabled: true, fourLetterWordWhitelist: "*" } });
  const clients: JuteClient[] = [];
  const connect = async (options: Parameters<typeof JuteClient.connect>[1]) => {
    const client = await JuteClient.connect(cluster.server(3).zkConnectString, options);
    clients.push(client);
    return client;
  };
  try {
    await waitFor("an agreed leader", () => cluster.agreedLeader(), 60_000);
    const writer = await Client.connect(cluster.connectString);
    try {
      await writer.create("/ro", "before the partition");
      await writer.sync("/ro");
    } finally {
      await writer.close();
    }
    // A read-write session at server 3, by a client that would accept read-only later.
    const resumable = await connect({ readOnly: true });
    assert.equal(resumable.response?.readOnly, false, "a serving member answers read-write");
    const session = { sessionId: resumable.response.sessionId, password: resumable.response.passwd! };
    await waitFor("server 3 has the node", async () => ((await getData(resumable, "/ro")).data === "before the partition" ? true : undefined));

    // Cut server 3 off: the other two stop answering.
    cluster.server(1).pause();
    cluster.server(2).pause();
    await resumable.closed; // leaving the quorum ends every connection
    await waitFor("server 3 read-only", async () => ((await fourLetterWord(zkPort(cluster, 3), "isro")) === "ro" ? true : undefined), 60_000);
    assert.match(await fourLetterWord(zkPort(cluster, 3), "srvr"), /^Mode: read-only$/m);

    // A client that does not accept read-only is turned away without an answer, as ZooKeeper does.
    await assert.rejects(connect({}), /closed before the connect answer/);

    // A new read-only session: reads answer from the tree; writes and syncs are NOTREADONLY.
    const readOnly = await connect({ readOnly: true });
    assert.equal(readOnly.response?.readOnly, true);
    assert.notEqual(readOnly.response?.sessionId, 0n);
    assert.deepEqual(await getData(readOnly, "/ro"), { err: 0, data: "before the partition" });
    const children = await readOnly.request(OpCode.getChildren, GetChildrenRequest, { path: "/", watch: true });
    assert.equal(children.header.err, 0);
    assert.ok(decodeRecord(GetChildrenResponse, children.body).children?.includes("ro"));
    const refused = [
      await readOnly.request(OpCode.create, CreateRequest, { path: "/ro/child", data: text("x"), acl: OPEN_ACL, flags: 0 }),
      await readOnly.request(OpCode.setData, SetDataRequest, { path: "/ro", data: text("x"), version: -1 }),
      await readOnly.request(OpCode.sync, SyncRequest, { path: "/ro" }),
      await readOnly.request(OpCode.multi, MultiRequest, { ops: [{ type: OpCode.delete, request: { path: "/ro", version: -1 } }] }),
    ];
    assert.deepEqual(
      refused.map((reply) => reply.header.err),
      [ZkErrorCode.NOTREADONLY, ZkErrorCode.NOTREADONLY, ZkErrorCode.NOTREADONLY, ZkErrorCode.NOTREADONLY],
    );
    assert.deepEqual(await getData(readOnly, "/ro"), { err: 0, data: "before the partition" }, "the session still serves after its refused writes");
    const readOnlySession = { sessionId: readOnly.response.sessionId, password: readOnly.response.passwd! };

    // The read-write session resumes here read-only: same session, nothing to create.
    const resumed = await connect({ readOnly: true, resume: session });
    assert.deepEqual([resumed.response?.sessionId, resumed.response?.readOnly], [session.sessionId, true]);
    assert.deepEqual(await getData(resumed, "/ro"), { err: 0, data: "before the partition" });

    // The quorum is back: read-only connections end, and the cluster serves server 3's clients again.
    cluster.server(1).resume();
    cluster.server(2).resume();
    await Promise.all([readOnly.closed, resumed.closed]);
    await waitFor("server 3 read-write", async () => ((await fourLetterWord(zkPort(cluster, 3), "isro")) === "rw" ? true : undefined), 60_000);
    await waitFor("an agreed leader again", () => cluster.agreedLeader(), 60_000);

    const back = await connect({ readOnly: true, resume: session });
    assert.deepEqual([back.response?.sessionId, back.response?.readOnly], [session.sessionId, false], "the read-write session lives on");
    const created = await back.request(OpCode.create, CreateRequest, { path: "/ro/after", data: text("y"), acl: OPEN_ACL, flags: 0 });
    assert.equal(created.header.err, 0);
    // A session a read-only server opened alone is unknown to the quorum: the client must start over.
    const gone = await connect({ readOnly: true, resume: readOnlySession });
    assert.equal(gone.response?.timeOut, 0, "an unknown session is answered with timeout 0 (expired)");
  } finally {
    for (const client of clients) await client.close();
    cluster.server(1).resume();
    cluster.server(2).resume();
    await cluster.stop();
  }
});
