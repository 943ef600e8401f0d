/**
 * getMembers end to end on the server side: the gRPC door decodes it into a pipeline read, and the
 * pipeline answers it in its place in the session's order (a client reads answers strictly in
 * order) with the configuration in force read when its turn comes — UNIMPLEMENTED where the
 * replica was built without a members source.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ClientFrame, ServerFrame } from "../../gen/client.js";
import { ZkErrorCode } from "../../src/common/errors.js";
import type { WriteBroadcast } from "../../src/replica/broadcast.js";
import { RequestPipeline, type ClientConnection } from "../../src/replica/pipeline.js";
import { ClientSessions } from "../../src/replica/client-sessions.js";
import type { ClusterMembersReply, Reply } from "../../src/replica/requests.js";
import { decodeClientFrame, encodeResponseFrame } from "../../src/server/client-frame-codec.js";
import { DataTree } from "../../src/store/data-tree.js";
import type { Id, WatchEvent } from "../../src/store/types.js";

const SESSION = 0x0100000000000005n;
const MEMBERS: ClusterMembersReply = {
  version: 0x100000004,
  members: [
    { serverId: 1, role: "participant", clientAddress: { host: "127.0.0.1", port: 2181 } },
    { serverId: 4, role: "observer" },
  ],
};

class Connection implements ClientConnection {
  open = true;
  authInfo: readonly Id[] = [];
  readonly remoteAddress = "127.0.0.1";
  readonly answered: [number, Reply][] = [];
  sendReply(xid: number, reply: Reply): void {
    this.answered.push([xid, reply]);
  }
  sendEvent(_event: WatchEvent): void {}
  end(): void {
    this.open = false;
  }
}

/** A pipeline over one session whose syncs wait until the test releases them. */
function pipelineWith(members: (() => ClusterMembersReply) | undefined) {
  const tree = new DataTree();
  const syncs: ((zxid: number) => void)[] = [];
  const sessions = new ClientSessions({ state: { tree }, forget() {}, ...(members === undefined ? {} : { members }) });
  const broadcast: WriteBroadcast = {
    serving: true,
    readOnly: false,
    submitWrite: () => assert.fail("no writes here"),
    submitCreateSession: (sessionId, timeoutMs, password) => {
      const txn = { header: { sessionId, cxid: 0, zxid: 1, timeMs: 1 }, body: { type: "createSession" as const, timeoutMs, password } };
      const { result, deliveries } = tree.apply(txn);
      sessions.applied(txn, result, deliveries);
    },
    touchSession: () => {},
    requestSync: (ready) => syncs.push(ready),
    revalidateSession: (_sessionId, _timeoutMs, done) => done("valid"),
  };
  const pipeline = new RequestPipeline({ sessions, admission: broadcast, authOptions: { superDigest: "" } });
  pipeline.createSession(SESSION, 4000, new Uint8Array(16), () => {});
  const connection = new Connection();
  pipeline.attach(SESSION, connection);
  return { pipeline, connection, releaseSync: () => syncs.shift()!(tree.lastProcessedZxid) };
}

test("the door decodes getMembers into a pipeline read, and encodes the members reply", () => {
  const frame = decodeClientFrame(
    ClientFrame.encode({ frame: { $case: "request", request: { xid: 7, op: { $case: "getMembers", getMembers: {} } } } }).finish(),
  );
  assert.deepEqual(frame, { frame: "request", xid: 7, request: { op: "getMembers" } });
  const encoded = ServerFrame.decode(encodeResponseFrame(7, { err: 0, zxid: 9, body: { kind: "members", ...MEMBERS } }));
  assert.equal(encoded.frame?.$case, "response");
  assert.deepEqual(encoded.frame.$case === "response" ? encoded.frame.response.members : undefined, {
    configVersion: 0x100000004n,
    members: [
      { serverId: 1, observer: false, clientHost: "127.0.0.1", clientPort: 2181 },
      { serverId: 4, observer: true, clientHost: "", clientPort: 0 },
    ],
  });
});

test("getMembers behind a request the pipeline holds is answered after it, with the members read at its turn", () => {
  let reads = 0;
  const { pipeline, connection, releaseSync } = pipelineWith(() => {
    reads++;
    return MEMBERS;
  });
  pipeline.submit(SESSION, connection, 1, { op: "sync", path: "/" });
  pipeline.submit(SESSION, connection, 2, { op: "getMembers" });
  assert.equal(connection.answered.length, 0, "nothing goes ahead of the sync's answer");
  assert.equal(reads, 0);
  releaseSync();
  assert.deepEqual(
    connection.answered.map(([xid, reply]) => [xid, reply.err, reply.body.kind]),
    [
      [1, 0, "path"],
      [2, 0, "members"],
    ],
  );
  assert.deepEqual(connection.answered[1]![1].body, { kind: "members", ...MEMBERS });
  assert.equal(reads, 1);
});

test("a replica without a members source answers getMembers UNIMPLEMENTED, in order", () => {
  const { pipeline, connection } = pipelineWith(undefined);
  pipeline.submit(SESSION, connection, 1, { op: "getMembers" });
  assert.deepEqual(
    connection.answered.map(([xid, reply]) => [xid, reply.err]),
    [[1, ZkErrorCode.UNIMPLEMENTED]],
  );
});
