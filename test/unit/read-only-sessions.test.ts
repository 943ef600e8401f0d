/**
 * Read-only mode at the replica's client side (session-opener.ts and pipeline.ts), over a tree and
 * a broadcast that says whether the server serves read-write, read-only or not at all: who may
 * open a session, what a read-only session may do, and that nothing it does reaches the broadcast.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ZkErrorCode } from "../../src/common/errors.js";
import type { RevalidationOutcome, WriteBroadcast } from "../../src/replica/broadcast.js";
import { RequestPipeline } from "../../src/replica/pipeline.js";
import { ClientSessions } from "../../src/replica/client-sessions.js";
import type { ClientRequest, Reply } from "../../src/replica/requests.js";
import { SessionIdGenerator, SessionOpener, type SessionRequest } from "../../src/replica/session-opener.js";
import { DataTree } from "../../src/store/data-tree.js";
import { RecordingConnection } from "../helpers/recording-connection.js";

const bytes = (s: string) => new TextEncoder().encode(s);
const GLOBAL = 0x0100000000000007n;
const GLOBAL_PASSWORD = new Uint8Array(16).fill(7);

/** A broadcast that orders nothing: what reaches it is recorded, so a test can see that nothing did. */
class SwitchedBroadcast implements WriteBroadcast {
  serving = false;
  readOnly = true;
  readonly reached: string[] = [];
  submitWrite(_s: bigint, _c: number, request: { op: string }): void {
    this.reached.push(request.op);
  }
  submitCreateSession(): void {
    this.reached.push("createSession");
  }
  touchSession(): void {}
  requestSync(): void {
    this.reached.push("sync");
  }
  revalidateSession(_s: bigint, _t: number, done: (outcome: RevalidationOutcome) => void): void {
    this.reached.push("revalidate");
    done("unavailable");
  }
}

type Opened = { kind: "established"; sessionId: bigint; readOnly: boolean; password: Uint8Array } | { kind: "expired" } | { kind: "refused"; detail: string };

function fixture() {
  const tree = new DataTree();
  // A session the quorum made before this server was cut off, and a node to read.
  tree.apply({ header: { sessionId: GLOBAL, cxid: 0, zxid: 1, timeMs: 1 }, body: { type: "createSession", timeoutMs: 4000, password: GLOBAL_PASSWORD } });
  tree.apply({
    header: { sessionId: GLOBAL, cxid: 1, zxid: 2, timeMs: 2 },
    body: {
      type: "create",
      path: "/a",
      data: bytes("x"),
      acl: [{ perms: 31, id: { scheme: "world", id: "anyone" } }],
      ephemeralOwner: 0n,
      parentCversion: tree.getData("/").stat.cversion + 1,
    },
  });
  const broadcast = new SwitchedBroadcast();
  const sessions = new ClientSessions({ state: { tree }, forget() {} });
  const pipeline = new RequestPipeline({ sessions, admission: broadcast, authOptions: { superDigest: "" } });
  const opener = new SessionOpener({
    state: { tree },
    pipeline,
    broadcast,
    sessionIds: new SessionIdGenerator(3, 0),
    entropy: { bytes: (count) => new Uint8Array(count).fill(9) },
    negotiateTimeoutMs: (requested) => requested,
  });
  const open = (request: Partial<SessionRequest>): Opened => {
    let opened: Opened | undefined;
    opener.open(
      { sessionId: 0n, password: new Uint8Array(16), requestedTimeoutMs: 6000, lastZxidSeen: 0n, readOnlyAllowed: true, ...request },
      {
        waiting: () => true,
        established: (sessionId, _timeoutMs, password, readOnly) => (opened = { kind: "established", sessionId, readOnly, password }),
        expired: () => (opened = { kind: "expired" }),
        refused: (_reason, detail) => (opened = { kind: "refused", detail }),
      },
    );
    assert.ok(opened, "the opener answered at once");
    return opened;
  };
  let xid = 0;
  /** Attaches `sessionId` to a new connection and sends it `request`; the answer, if one came at once. */
  const call = (sessionId: bigint, connection: RecordingConnection, request: ClientRequest): Reply | undefined => {
    pipeline.submit(sessionId, connection, ++xid, request);
    return connection.replies.get(xid);
  };
  return { tree, broadcast, sessions, pipeline, open, call };
}

const established = (opened: Opened) => {
  assert.equal(
    opened.kind,
    "established",
    JSON.stringify(opened, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v)),
  );
  return opened;
};

describe("read-only mode: opening sessions", () => {
  test("a client that does not accept read-only is refused, naming why", () => {
    const f = fixture();
    const opened = f.open({ readOnlyAllowed: false });
    assert.deepEqual(opened, { kind: "refused", detail: "server is read-only and the client does not accept that" });
  });

  test("a new session is opened here alone: no createSession reaches the broadcast", () => {
    const f = fixture();
    const session = established(f.open({}));
    assert.equal(session.readOnly, true);
    assert.deepEqual(f.broadcast.reached, []);
    assert.equal(f.tree.sessions.has(session.sessionId), false, "the replicated tree does not learn of it");
    f.pipeline.attach(session.sessionId, new RecordingConnection());
    // Resumed with its password on a new connection while read-only: the same session.
    assert.deepEqual(established(f.open({ sessionId: session.sessionId, password: session.password })).sessionId, session.sessionId);
  });

  test("a session the quorum made resumes read-only without asking a leader; a wrong password is expiry", () => {
    const f = fixture();
    const resumed = established(f.open({ sessionId: GLOBAL, password: GLOBAL_PASSWORD }));
    assert.deepEqual([resumed.sessionId, resumed.readOnly], [GLOBAL, true]);
    assert.deepEqual(f.broadcast.reached, [], "no revalidation is asked for");
    assert.deepEqual(f.open({ sessionId: GLOBAL, password: new Uint8Array(16) }), { kind: "expired" });
  });

  test("a client that has seen more than this server is refused, read-only or not", () => {
    const f = fixture();
    assert.equal(f.open({ lastZxidSeen: 3n }).kind, "refused");
  });

  test("when read-only mode ends, the sessions it opened are gone: a resume is expiry", () => {
    const f = fixture();
    const session = established(f.open({}));
    const connection = new RecordingConnection();
    f.pipeline.attach(session.sessionId, connection);
    f.sessions.reset();
    assert.equal(connection.endReason, "closed");
    f.broadcast.readOnly = false;
    f.broadcast.serving = true;
    assert.deepEqual(f.open({ sessionId: session.sessionId, password: session.password }), { kind: "expired" });
  });
});

describe("read-only mode: requests", () => {
  test("reads answer from the tree; writes and syncs are NOTREADONLY and reach nothing", () => {
    const f = fixture();
    const session = established(f.open({}));
    const connection = new RecordingConnection();
    f.pipeline.attach(session.sessionId, connection);
    const read = f.call(session.sessionId, connection, { op: "getData", path: "/a", watch: true });
    assert.equal(read?.err, 0);
    assert.deepEqual(read?.body.kind === "data" ? new TextDecoder().decode(read.body.data) : read?.body, "x");
    const refused: ClientRequest[] = [
      { op: "create", path: "/b", data: bytes(""), acl: [], mode: "persistent", ttlMs: 0 },
      { op: "setData", path: "/a", data: bytes("y"), version: -1 },
      { op: "delete", path: "/a", version: -1 },
      { op: "multi", ops: [{ op: "check", path: "/a", version: 0 }] },
      { op: "sync", path: "/a" },
    ];
    for (const request of refused) assert.equal(f.call(session.sessionId, connection, request)?.err, ZkErrorCode.NOTREADONLY, request.op);
    assert.deepEqual(f.broadcast.reached, []);
    assert.equal(connection.open, true, "a refused write does not end the session");
  });

  test("close is answered here and ends the session: no txn is made for it", () => {
    const f = fixture();
    const session = established(f.open({}));
    const connection = new RecordingConnection();
    f.pipeline.attach(session.sessionId, connection);
    assert.equal(f.call(session.sessionId, connection, { op: "close" })?.err, 0);
    assert.equal(connection.endReason, "closed");
    assert.deepEqual(f.broadcast.reached, []);
    assert.deepEqual(f.open({ sessionId: session.sessionId, password: session.password }), { kind: "expired" });
  });

  test("a read-only session silent past its timeout is ended here", () => {
    const f = fixture();
    const session = established(f.open({}));
    const connection = new RecordingConnection();
    f.pipeline.attach(session.sessionId, connection);
    f.sessions.endLocally(session.sessionId);
    assert.equal(connection.endReason, "expired");
    assert.deepEqual(f.open({ sessionId: session.sessionId, password: session.password }), { kind: "expired" });
  });

  test("serving read-write again, the same requests go to the broadcast", () => {
    const f = fixture();
    f.broadcast.readOnly = false;
    f.broadcast.serving = true;
    const connection = new RecordingConnection();
    f.pipeline.attach(GLOBAL, connection);
    f.call(GLOBAL, connection, { op: "setData", path: "/a", data: bytes("y"), version: -1 });
    f.call(GLOBAL, connection, { op: "sync", path: "/a" });
    assert.deepEqual(f.broadcast.reached, ["setData", "sync"]);
  });
});
