/**
 * ACLs and authentication on the serving server (src/server/pipeline.ts): reads are checked as
 * ZooKeeper 3.8's FinalRequestProcessor checks them, addAuth changes the connection's ids for the
 * requests after it (and never ends the session), whoAmI reports them, and every write goes to
 * the broadcast with the ids its connection had when it arrived.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { generateDigest } from "../../src/common/digest.js";
import { ZkErrorCode } from "../../src/common/errors.js";
import type { RevalidationOutcome, WriteBroadcast } from "../../src/replica/broadcast.js";
import { RequestPipeline } from "../../src/replica/pipeline.js";
import { ClientSessions } from "../../src/replica/client-sessions.js";
import { Prep } from "../../src/replica/prep.js";
import type { ClientRequest, Reply, WriteRequest } from "../../src/replica/requests.js";
import { DataTree } from "../../src/store/data-tree.js";
import { Perms, type Acl, type Id, type TxnBody } from "../../src/store/types.js";
import { RecordingConnection } from "../helpers/recording-connection.js";

const SESSION = 0x0100000000000001n;
const bytes = (s: string) => new TextEncoder().encode(s);
const ALICE: Id = { scheme: "digest", id: generateDigest("alice:secret") };
const SUPER_DIGEST = generateDigest("super:test");
const ANYONE = (perms: number): Acl => ({ perms, id: { scheme: "world", id: "anyone" } });

/** Preps with the ids it is given and applies when `flush` is called (writes stay queued until then). */
class HeldBroadcast implements WriteBroadcast {
  readonly serving = true;
  readonly readOnly = false;
  readonly submitted: { request: WriteRequest; authInfo: readonly Id[] }[] = [];
  private readonly held: { sessionId: bigint; cxid: number; body: TxnBody }[] = [];
  private zxid = 0;
  sessions: ClientSessions | undefined;
  readonly prep: Prep;

  constructor(readonly tree: DataTree) {
    this.prep = new Prep(tree, { ttlNodesEnabled: false });
  }

  submitWrite(sessionId: bigint, cxid: number, request: WriteRequest, authInfo: readonly Id[]): void {
    this.submitted.push({ request, authInfo });
    this.held.push({ sessionId, cxid, body: this.prep.prepare(request, sessionId, this.zxid + this.held.length + 1, authInfo) });
  }
  submitCreateSession(sessionId: bigint, timeoutMs: number, password: Uint8Array): void {
    this.held.push({ sessionId, cxid: 0, body: { type: "createSession", timeoutMs, password } });
    this.flush();
  }
  touchSession(): void {}
  requestSync(ready: (zxid: number) => void): void {
    ready(this.zxid + this.held.length);
  }
  revalidateSession(_s: bigint, _t: number, done: (outcome: RevalidationOutcome) => void): void {
    done("valid");
  }

  /** Forget what is held (a test applies its own txn in its place). */
  heldDrop(): void {
    this.held.length = 0;
  }

  flush(): void {
    for (const { sessionId, cxid, body } of this.held.splice(0)) {
      const zxid = ++this.zxid;
      const txn = { header: { sessionId, cxid, zxid, timeMs: zxid }, body };
      const { result, deliveries } = this.tree.apply(txn);
      this.prep.applied(zxid);
      this.sessions!.applied(txn, result, deliveries);
    }
  }
}

/** One session on one connection from 10.1.2.3, over a tree where /locked is alice's alone. */
function fixture() {
  const tree = new DataTree();
  const broadcast = new HeldBroadcast(tree);
  const sessions = new ClientSessions({ state: { tree }, forget() {} });
  const pipeline = new RequestPipeline({ sessions, admission: broadcast, authOptions: { superDigest: SUPER_DIGEST } });
  broadcast.sessions = sessions;
  pipeline.createSession(SESSION, 4000, new Uint8Array(16), () => {});
  const connection = new RecordingConnection("10.1.2.3");
  pipeline.attach(SESSION, connection);
  let xid = 0;
  const send = (request: ClientRequest): number => {
    pipeline.submit(SESSION, connection, ++xid, request);
    return xid;
  };
  /** Sends, applies whatever is held, and gives the answer. */
  const call = (request: ClientRequest): Reply => {
    const sent = send(request);
    broadcast.flush();
    const reply = connection.replies.get(sent);
    assert.ok(reply, `request ${sent} (${request.op}) was answered`);
    return reply;
  };
  const setup = (request: WriteRequest, authInfo: readonly Id[] = [ALICE]) => {
    broadcast.submitWrite(SESSION, 0, request, authInfo);
    broadcast.flush();
  };
  setup({ op: "create", path: "/locked", data: bytes("secret"), acl: [{ perms: Perms.ALL, id: ALICE }], mode: "persistent", ttlMs: 0 });
  setup({ op: "create", path: "/locked/child", data: bytes(""), acl: [], mode: "persistent", ttlMs: 0 });
  return { tree, broadcast, sessions, pipeline, connection, send, call, setup };
}

const getData = (path: string, watch = false): ClientRequest => ({ op: "getData", path, watch });
const addAuth = (scheme: string, auth: string): ClientRequest => ({ op: "addAuth", scheme, auth: bytes(auth) });

describe("reads check READ on the node", () => {
  for (const op of ["getData", "getChildren"] as const) {
    test(`${op} without READ is NOAUTH, with READ alone it answers`, () => {
      const f = fixture();
      assert.equal(f.call({ op, path: "/locked", watch: false }).err, ZkErrorCode.NOAUTH);
      f.setup({ op: "setAcl", path: "/locked", acl: [ANYONE(Perms.READ)], version: -1 });
      assert.equal(f.call({ op, path: "/locked", watch: false }).err, 0);
    });

    test(`${op} of a missing node is NONODE, not NOAUTH`, () => {
      assert.equal(fixture().call({ op, path: "/locked/none", watch: false }).err, ZkErrorCode.NONODE);
    });
  }

  test("a refused read sets no watch", () => {
    const f = fixture();
    assert.equal(f.call(getData("/locked", true)).err, ZkErrorCode.NOAUTH);
    assert.equal(f.call({ op: "getChildren", path: "/locked", watch: true }).err, ZkErrorCode.NOAUTH);
    assert.equal(f.tree.watches.watchCountOf(SESSION), 0);
  });

  test("exists answers whatever the ACL (ZooKeeper up to 3.8.3)", () => {
    const f = fixture();
    const reply = f.call({ op: "exists", path: "/locked", watch: false });
    assert.equal(reply.err, 0);
    assert.equal(reply.body.kind, "stat");
  });

  test("getACL needs READ or ADMIN; with READ alone digest passwords are hidden", () => {
    const f = fixture();
    const getAcl: ClientRequest = { op: "getAcl", path: "/locked" };
    assert.equal(f.call(getAcl).err, ZkErrorCode.NOAUTH, "no permission at all");
    f.setup({ op: "setAcl", path: "/locked", acl: [{ perms: Perms.ADMIN | Perms.READ, id: ALICE }, ANYONE(Perms.WRITE)], version: -1 });
    assert.equal(f.call(getAcl).err, ZkErrorCode.NOAUTH, "WRITE does not let anyone read the ACL");
    f.setup({ op: "setAcl", path: "/locked", acl: [{ perms: Perms.ADMIN, id: ALICE }, ANYONE(Perms.READ)], version: -1 });
    const readOnly = f.call(getAcl);
    assert.equal(readOnly.err, 0);
    assert.deepEqual(readOnly.body.kind === "acl" && readOnly.body.acl, [{ perms: Perms.ADMIN, id: { scheme: "digest", id: "alice:x" } }, ANYONE(Perms.READ)]);
    assert.equal(f.call(addAuth("digest", "alice:secret")).err, 0);
    const admin = f.call(getAcl);
    assert.deepEqual(admin.body.kind === "acl" && admin.body.acl, [{ perms: Perms.ADMIN, id: ALICE }, ANYONE(Perms.READ)]);
    f.setup({ op: "setAcl", path: "/locked", acl: [{ perms: Perms.ADMIN, id: ALICE }], version: -1 });
    assert.equal(f.call(getAcl).err, 0, "ADMIN alone lets alice read the ACL");
  });
});

describe("reads, sync and watch requests with zooKeeperChecks validate no path, as ZooKeeper's FinalRequestProcessor", () => {
  const zk = <R extends ClientRequest>(request: R): R => ({ ...request, zooKeeperChecks: true });
  const BAD = ["/locked/", "/locked//child", "no-slash", "/locked/\u0001", "/a/../b"];
  for (const path of BAD) {
    test(`${JSON.stringify(path)}: reads are NONODE through the ZooKeeper door, BADARGUMENTS through the gRPC door`, () => {
      const f = fixture();
      const reads: ClientRequest[] = [
        getData(path),
        { op: "getChildren", path, watch: false },
        { op: "exists", path, watch: false },
        { op: "getAcl", path },
        { op: "getAllChildrenNumber", path },
      ];
      for (const read of reads) {
        assert.equal(f.call(zk(read)).err, ZkErrorCode.NONODE, `${read.op} through the ZooKeeper door`);
        assert.equal(f.call(read).err, ZkErrorCode.BADARGUMENTS, `${read.op} through the gRPC door`);
      }
      const multiRead = f.call(
        zk({
          op: "multiRead",
          ops: [
            { op: "getData", path },
            { op: "getChildren", path: "/locked" },
          ],
        }),
      );
      assert.deepEqual(multiRead.body.kind === "multiRead" && multiRead.body.results, [
        { type: "error", err: ZkErrorCode.NONODE },
        { type: "error", err: ZkErrorCode.NOAUTH },
      ]);
      const sync = f.call(zk({ op: "sync", path }));
      assert.deepEqual([sync.err, sync.body], [0, { kind: "path", path }], "sync answers any path, echoing it");
      assert.equal(f.call({ op: "sync", path }).err, ZkErrorCode.BADARGUMENTS);
      assert.equal(f.call(zk({ op: "removeWatches", path, watcherType: "any" })).err, ZkErrorCode.NOWATCHER);
      assert.equal(f.call(zk({ op: "addWatch", path, mode: "persistent" })).err, 0, "a watch on a path that can never exist, as ZooKeeper sets it");
      assert.equal(f.call(zk({ op: "removeWatches", path, watcherType: "persistent" })).err, 0, "and it can be removed");
      assert.equal(f.call({ op: "addWatch", path, mode: "persistent" }).err, ZkErrorCode.BADARGUMENTS);
    });
  }

  test("exists refuses NUL; checkWatches fails a path without a slash (ZooKeeper's watch lookup throws)", () => {
    const f = fixture();
    assert.equal(f.call(zk({ op: "exists", path: "/locked\u0000", watch: false })).err, ZkErrorCode.BADARGUMENTS);
    assert.equal(f.call(zk(getData("/locked\u0000"))).err, ZkErrorCode.NONODE);
    assert.equal(f.call(zk({ op: "checkWatches", path: "no-slash", watcherType: "any" })).err, ZkErrorCode.MARSHALLINGERROR);
    assert.equal(f.call(zk({ op: "checkWatches", path: "", watcherType: "any" })).err, ZkErrorCode.NOWATCHER);
    assert.equal(f.call(zk({ op: "checkWatches", path: "/a//b", watcherType: "data" })).err, ZkErrorCode.NOWATCHER);
  });

  test("setWatches takes any path: a data watch on one that cannot exist fires NodeDeleted at once, as ZooKeeper's does", () => {
    const f = fixture();
    const lists = {
      relativeZxid: 0,
      dataWatches: ["no-slash"],
      existWatches: ["/x//y"],
      childWatches: [],
      persistentWatches: [],
      persistentRecursiveWatches: [],
    };
    assert.equal(f.call({ op: "setWatches", ...lists }).err, ZkErrorCode.BADARGUMENTS);
    assert.equal(f.call(zk({ op: "setWatches", ...lists })).err, 0);
    assert.deepEqual(
      f.connection.events.map((e) => [e.type, e.path]),
      [[2, "no-slash"]],
    );
  });
});

describe("addAuth", () => {
  test("digest credentials open what the ACL names, for this connection's later requests", () => {
    const f = fixture();
    assert.equal(f.call(getData("/locked")).err, ZkErrorCode.NOAUTH);
    assert.equal(f.call(addAuth("digest", "alice:secret")).err, 0);
    const reply = f.call(getData("/locked"));
    assert.equal(reply.err, 0);
    assert.deepEqual(reply.body.kind === "data" && new TextDecoder().decode(reply.body.data), "secret");
    assert.equal(f.call({ op: "setData", path: "/locked", data: bytes("x"), version: -1 }).err, 0);
  });

  test("AUTHFAILED for a wrong scheme, and the session goes on", () => {
    const f = fixture();
    for (const [scheme, auth] of [
      ["bogus", "alice:secret"],
      ["world", "anyone"],
      ["super", "x"],
    ] as const) {
      assert.equal(f.call(addAuth(scheme, auth)).err, ZkErrorCode.AUTHFAILED, `${scheme} ${auth}`);
    }
    assert.equal(f.connection.open, true);
    assert.equal(f.call({ op: "create", path: "/after", data: bytes(""), acl: [], mode: "persistent", ttlMs: 0 }).err, 0);
    assert.deepEqual(f.connection.authInfo, [{ scheme: "ip", id: "10.1.2.3" }], "no id was added");
  });

  test("the connection hears of a failed auth when it arrives, before the answers queued ahead of it go out", () => {
    const f = fixture();
    const write = f.send({ op: "setData", path: "/locked/child", data: bytes("x"), version: -1 });
    const failed = f.send(addAuth("bogus", "x"));
    assert.deepEqual(f.connection.authFailedAt, [0], "told at once, while the write ahead of it is unanswered");
    f.broadcast.flush();
    assert.deepEqual([f.connection.replies.get(write)?.err, f.connection.replies.get(failed)?.err], [0, ZkErrorCode.AUTHFAILED], "answers still in order");
    assert.equal(f.call(addAuth("digest", "alice:secret")).err, 0);
    assert.equal(f.connection.authFailedAt.length, 1, "a successful auth tells nothing");
  });

  test("a wrong password authenticates as another digest, which the ACL does not name", () => {
    const f = fixture();
    assert.equal(f.call(addAuth("digest", "alice:wrong")).err, 0);
    assert.equal(f.call(getData("/locked")).err, ZkErrorCode.NOAUTH);
  });

  test("requests queued before it keep the ids they arrived with; writes carry them to the broadcast", () => {
    const f = fixture();
    const write = f.send({ op: "setData", path: "/locked", data: bytes("early"), version: -1 });
    const earlyRead = f.send(getData("/locked"));
    const auth = f.send(addAuth("digest", "alice:secret"));
    const lateRead = f.send(getData("/locked"));
    const lateWrite = f.send({ op: "setData", path: "/locked", data: bytes("late"), version: -1 });
    f.broadcast.flush();
    const err = (xid: number) => f.connection.replies.get(xid)?.err;
    assert.deepEqual([err(write), err(earlyRead), err(auth), err(lateRead), err(lateWrite)], [ZkErrorCode.NOAUTH, ZkErrorCode.NOAUTH, 0, 0, 0]);
    const carried = f.broadcast.submitted.slice(-2).map((s) => s.authInfo);
    assert.deepEqual(carried, [[{ scheme: "ip", id: "10.1.2.3" }], [{ scheme: "ip", id: "10.1.2.3" }, ALICE]]);
  });

  test("ip authentication adds nothing new: the connection already holds its address", () => {
    const f = fixture();
    assert.equal(f.call(addAuth("ip", "1.2.3.4")).err, 0);
    assert.deepEqual(f.connection.authInfo, [{ scheme: "ip", id: "10.1.2.3" }]);
  });

  test("the configured super digest passes every check", () => {
    const f = fixture();
    assert.equal(f.call(addAuth("digest", "super:test")).err, 0);
    assert.equal(f.call(getData("/locked")).err, 0);
    assert.equal(f.call({ op: "getAcl", path: "/locked" }).err, 0);
    assert.equal(f.call({ op: "delete", path: "/locked/child", version: -1 }).err, 0);
  });
});

test("whoAmI lists the connection's ids as ZooKeeper's ClientInfo, in ZooKeeper's iteration order (not the order they were added)", () => {
  const f = fixture();
  const who = () => {
    const reply = f.call({ op: "whoAmI" });
    return reply.body.kind === "whoAmI" ? reply.body.clientInfo : undefined;
  };
  assert.deepEqual(who(), [{ authScheme: "ip", user: "10.1.2.3" }]);
  f.call(addAuth("digest", "alice:secret"));
  f.call(addAuth("digest", "super:test"));
  assert.deepEqual(who(), [
    { authScheme: "digest", user: "alice" },
    { authScheme: "super", user: "" },
    { authScheme: "ip", user: "10.1.2.3" },
    { authScheme: "digest", user: "super" },
  ]);
});

describe("SESSIONMOVED is a connection-level error, as in ZooKeeper", () => {
  test("a write the leader refused as SESSIONMOVED ends its connection unanswered; the answers before it still go out", () => {
    const f = fixture();
    const before = f.send(getData("/locked/child"));
    // The leader's owner check turned this write into an error txn carrying SESSIONMOVED.
    f.pipeline.submit(SESSION, f.connection, 77, { op: "setData", path: "/locked/child", data: bytes("x"), version: -1 });
    f.broadcast.flush();
    assert.ok(f.connection.replies.has(before));
    assert.equal(f.connection.open, true, "not yet: the error txn has not been applied");
    const zxid = f.tree.lastProcessedZxid + 1;
    const txn = { header: { sessionId: SESSION, cxid: 78, zxid, timeMs: zxid }, body: { type: "error" as const, err: ZkErrorCode.SESSIONMOVED } };
    f.pipeline.submit(SESSION, f.connection, 78, { op: "setData", path: "/locked/child", data: bytes("y"), version: -1 });
    f.broadcast.heldDrop();
    const { result, deliveries } = f.tree.apply(txn);
    f.sessions.applied(txn, result, deliveries);
    assert.equal(f.connection.replies.has(78), false, "no SESSIONMOVED answer is sent");
    assert.equal(f.connection.open, false, "the connection is ended: the client reconnects and revalidates");
  });
});

describe("watches belong to the connection that set them", () => {
  test("a watched read left queued on a connection the session has left sets no watch on its next connection (found by the simulator)", () => {
    const f = fixture();
    f.setup({ op: "setAcl", path: "/locked", acl: [ANYONE(Perms.ALL)], version: -1 });
    // A write, then an exists with a watch behind it: the read waits for the write's commit.
    f.send({ op: "create", path: "/queued", data: bytes(""), acl: [], mode: "persistent", ttlMs: 0 });
    f.send({ op: "exists", path: "/later", watch: true });
    // The client gives up on this connection and resumes its session on a new one before the commit.
    f.connection.open = false;
    f.pipeline.detach(SESSION, f.connection);
    const next = new RecordingConnection("10.1.2.3");
    f.pipeline.attach(SESSION, next);
    f.broadcast.flush();
    assert.equal(f.tree.watches.watchCountOf(SESSION), 0, "the dead connection's read registered no watch");
    f.setup({ op: "create", path: "/later", data: bytes(""), acl: [], mode: "persistent", ttlMs: 0 });
    assert.deepEqual(next.events, [], "the new connection gets no event for a watch its client never set");
  });
});

describe("how a session's connection ends", () => {
  test("a close the client asked for ends its connection as closed, after answering it", () => {
    const f = fixture();
    assert.equal(f.call({ op: "close" }).err, 0);
    assert.equal(f.connection.endReason, "closed");
  });

  test("a closeSession the server decided (expiry) ends the connection as expired", () => {
    const f = fixture();
    f.setup({ op: "close" });
    assert.equal(f.connection.endReason, "expired");
  });
});
