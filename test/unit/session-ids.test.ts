/**
 * Session ids are ZooKeeper's: the server id in the top byte and a counter seeded from the clock.
 * A server restarted after its clock went back starts that counter where it started before, among
 * the ids of sessions that are still alive. Two clients must never share one session: the opener
 * skips ids its tree holds, and a createSession the leader refuses answers only the connect that
 * waits on it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ZkErrorCode } from "../../src/common/errors.js";
import type { RevalidationOutcome, WriteBroadcast } from "../../src/replica/broadcast.js";
import { ClientSessions } from "../../src/replica/client-sessions.js";
import { RequestPipeline } from "../../src/replica/pipeline.js";
import { SessionIdGenerator, SessionOpener } from "../../src/replica/session-opener.js";
import { DataTree } from "../../src/store/data-tree.js";
import { RecordingConnection } from "../helpers/recording-connection.js";

const SERVER_ID = 3;
const PASSWORD = new Uint8Array(16).fill(7);

/** A serving broadcast that records the session ids it was asked to create. */
class RecordingBroadcast implements WriteBroadcast {
  serving = true;
  readOnly = false;
  readonly created: bigint[] = [];
  readonly writes: string[] = [];
  submitWrite(_s: bigint, _c: number, request: { op: string }): void {
    this.writes.push(request.op);
  }
  submitCreateSession(sessionId: bigint): void {
    this.created.push(sessionId);
  }
  touchSession(): void {}
  requestSync(): void {}
  revalidateSession(_s: bigint, _t: number, done: (outcome: RevalidationOutcome) => void): void {
    done("valid");
  }
}

function fixture() {
  const tree = new DataTree();
  const broadcast = new RecordingBroadcast();
  const sessions = new ClientSessions({ state: { tree }, forget() {} });
  const pipeline = new RequestPipeline({ sessions, admission: broadcast, authOptions: { superDigest: "" } });
  // The clock read 0 at this start, as it did at the start before (it went back in between).
  const firstId = new SessionIdGenerator(SERVER_ID, 0).take();
  const opener = new SessionOpener({
    state: { tree },
    pipeline,
    broadcast,
    sessionIds: new SessionIdGenerator(SERVER_ID, 0),
    entropy: { bytes: (count) => new Uint8Array(count).fill(9) },
    negotiateTimeoutMs: (requested) => requested,
  });
  const outcomes: string[] = [];
  const openNew = () =>
    opener.open(
      { sessionId: 0n, password: new Uint8Array(16), requestedTimeoutMs: 6000, lastZxidSeen: 0n, readOnlyAllowed: false },
      {
        waiting: () => true,
        established: (sessionId) => outcomes.push(`established ${sessionId}`),
        expired: () => outcomes.push("expired"),
        refused: (reason) => outcomes.push(`refused ${reason}`),
      },
    );
  return { tree, broadcast, sessions, pipeline, firstId, openNew, outcomes };
}

test("a new session never gets the id of a session the server's tree holds, even when the id counter starts over", () => {
  const { tree, broadcast, firstId, openNew } = fixture();
  // The session this server made at its previous start, under the same first id, is alive.
  tree.apply({ header: { sessionId: firstId, cxid: 0, zxid: 1, timeMs: 1 }, body: { type: "createSession", timeoutMs: 4000, password: PASSWORD } });
  openNew();
  assert.equal(broadcast.created.length, 1);
  assert.notEqual(broadcast.created[0], firstId, "the live session's id was given out again");
  assert.equal(broadcast.created[0], firstId + 1n);
});

test("a createSession the leader refused answers the waiting connect as not created, and no request of the live session with that id", () => {
  const { tree, broadcast, sessions, pipeline, firstId, openNew, outcomes } = fixture();
  // The live session, connected here with a write in flight (its first request, xid 1).
  tree.apply({ header: { sessionId: firstId, cxid: 0, zxid: 1, timeMs: 1 }, body: { type: "createSession", timeoutMs: 4000, password: PASSWORD } });
  const live = new RecordingConnection();
  pipeline.attach(firstId, live);
  pipeline.submit(firstId, live, 1, { op: "setData", path: "/", data: new Uint8Array(), version: -1 });
  assert.deepEqual(broadcast.writes, ["setData"]);
  // A connect waiting on a createSession under the same id, which the tree did not yet hold when
  // it was asked for (the opener could not know): the leader refuses it with an error txn.
  const waiting: boolean[] = [];
  sessions.awaitCreated(firstId, (accepted) => waiting.push(accepted));
  const refusal = { header: { sessionId: firstId, cxid: 0, zxid: 2, timeMs: 2 }, body: { type: "error" as const, err: ZkErrorCode.SESSIONEXPIRED } };
  sessions.applied(refusal, tree.apply(refusal).result, []);
  assert.deepEqual(waiting, [false], "the waiting connect is told the session was not created");
  assert.equal(live.replies.size, 0, "the live session's write is not answered by the refusal");
  assert.equal(live.open, true);
  assert.deepEqual(outcomes, []);
  // A new connect afterwards gets a fresh id.
  openNew();
  assert.notEqual(broadcast.created.at(-1), firstId);
});
