/**
 * The ZooKeeper port's mapping between jute records and the server's own requests and replies
 * (src/server/zk-wire/zk-requests.ts): what each opcode becomes, what ZooKeeper 3.8 refuses before
 * prep, and the response record each opcode gets back.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { NULL_DATA } from "../../src/common/znode.js";
import type { Stat } from "../../src/store/types.js";
import type { Reply } from "../../src/replica/requests.js";
import { JuteReader } from "../../src/server/zk-wire/jute.js";
import * as jute from "../../src/server/zk-wire/records.js";
import { OpCode } from "../../src/server/zk-wire/records.js";
import { encodeZkReply, toClientRequest } from "../../src/server/zk-wire/zk-requests.js";

const OPEN: jute.ACL[] = [{ perms: 31, id: { scheme: "world", id: "anyone" } }];
const data = (text: string) => new TextEncoder().encode(text);
const stat: Stat = {
  czxid: 5,
  mzxid: 6,
  ctime: 7,
  mtime: 8,
  version: 1,
  cversion: 2,
  aversion: 3,
  ephemeralOwner: 9n,
  dataLength: 4,
  numChildren: 0,
  pzxid: 10,
};

function request(type: number, body: unknown) {
  const mapped = toClientRequest(type, body);
  assert.ok("request" in mapped, `opcode ${type} refused with ${"reject" in mapped ? mapped.reject : "?"}`);
  return mapped.request;
}

function refusal(type: number, body: unknown): number {
  const mapped = toClientRequest(type, body);
  assert.ok("reject" in mapped, `opcode ${type} was not refused`);
  return mapped.reject;
}

/** Decodes a reply frame's header and the record after it. */
function reply<T>(bytes: Uint8Array, codec?: jute.JuteCodec<T>): { header: jute.ReplyHeader; body: T | undefined; rest: number } {
  const reader = new JuteReader(bytes);
  const header = jute.ReplyHeader.read(reader);
  const body = codec?.read(reader);
  return { header, body, rest: reader.remainingBytes };
}

describe("jute requests → corral requests", () => {
  test("creates: flags name the mode, createTTL carries its ttl, null data stays null", () => {
    assert.deepEqual(request(OpCode.create, { path: "/a", data: data("x"), acl: OPEN, flags: 3 }), {
      op: "create",
      path: "/a",
      data: data("x"),
      acl: OPEN,
      mode: "ephemeral-sequential",
      ttlMs: 0,
      zooKeeperChecks: true,
    });
    const ttl = request(OpCode.createTTL, { path: "/t", data: null, acl: OPEN, flags: 6, ttl: 5_000n });
    assert.ok(ttl.op === "create");
    assert.equal(ttl.mode, "persistent-sequential-with-ttl");
    assert.equal(ttl.ttlMs, 5_000);
    assert.equal(ttl.data, NULL_DATA);
    assert.equal((request(OpCode.createContainer, { path: "/c", data: null, acl: OPEN, flags: 4 }) as { mode: string }).mode, "container");
    // A TTL mode without a ttl reaches prep as "no ttl", which it refuses (UNIMPLEMENTED or BADARGUMENTS, as ZooKeeper).
    assert.equal((request(OpCode.create, { path: "/t", data: null, acl: OPEN, flags: 5 }) as { ttlMs: number }).ttlMs, 0);
  });

  test("an empty or null ACL list goes to prep, which refuses it INVALIDACL after the path checks ZooKeeper makes first", () => {
    for (const acl of [[], null]) {
      const create = request(OpCode.create, { path: "x", data: null, acl, flags: 0 });
      assert.ok(create.op === "create");
      assert.deepEqual([create.acl, create.zooKeeperChecks], [[], true], "an empty list that prep will not take for the default ACL");
      assert.deepEqual(request(OpCode.setACL, { path: "x", acl, version: -1 }), { op: "setAcl", path: "x", acl: [], version: -1 });
    }
    const multi = request(OpCode.multi, { ops: [{ type: OpCode.create, request: { path: "/m", data: null, acl: [], flags: 0 } }] });
    assert.ok(multi.op === "multi");
    assert.equal(multi.zooKeeperChecks, true, "a multi's creates are checked ZooKeeper's way too");
  });

  test("creates and deletes are checked ZooKeeper's way in prep; a null path there is ZooKeeper's NullPointerException", () => {
    assert.deepEqual(request(OpCode.delete, { path: "/a//b", version: 2 }), { op: "delete", path: "/a//b", version: 2, zooKeeperChecks: true });
    assert.equal(refusal(OpCode.delete, { path: null, version: -1 }), -5, "a delete's null path: MARSHALLINGERROR");
    assert.equal(refusal(OpCode.create, { path: null, data: null, acl: OPEN, flags: 0 }), -5, "a create's null path: MARSHALLINGERROR");
    assert.equal(refusal(OpCode.create, { path: null, data: null, acl: OPEN, flags: 7 }), -8, "after the create mode: BADARGUMENTS first");
    // setData's path is validated first, and PathUtils refuses null: BADARGUMENTS in prep.
    assert.deepEqual(request(OpCode.setData, { path: null, data: null, version: -1 }), { op: "setData", path: "", data: NULL_DATA, version: -1 });
  });

  test("refused before prep as ZooKeeper refuses them", () => {
    assert.equal(refusal(OpCode.create, { path: "/a", data: null, acl: OPEN, flags: 7 }), -8, "unknown flags: BADARGUMENTS");
    assert.equal(refusal(OpCode.createTTL, { path: "/a", data: null, acl: OPEN, flags: 0, ttl: 10n }), -8, "a ttl on a non-TTL mode");
    assert.equal(refusal(OpCode.removeWatches, { path: "/a", type: 9 }), -5, "unknown watcher type: WatcherType.fromInt's RuntimeException");
    assert.equal(refusal(OpCode.checkWatches, { path: "/a", type: 0 }), -5, "unknown watcher type");
    assert.equal(refusal(OpCode.addWatch, { path: "/a", mode: 2 }), -5, "unknown addWatch mode: WatcherMode.fromZooDef's IllegalArgumentException");
    assert.equal(refusal(OpCode.check, { path: "/a", version: 1 }), -6, "a lone check");
    assert.equal(refusal(OpCode.multi, { ops: [{ type: OpCode.getData, request: { path: "/a", watch: false } }] }), -5, "a read in a write multi");
    assert.equal(refusal(OpCode.multiRead, { ops: [{ type: OpCode.delete, request: { path: "/a", version: -1 } }] }), -5, "a write in a multiRead");
  });

  test("opcodes no client of corral's runs: each as ZooKeeper 3.8 answers it", () => {
    const shapeOf = (type: number, body?: unknown) => {
      const mapped = toClientRequest(type, body);
      assert.ok("reject" in mapped);
      return [mapped.reject, mapped.shape.closeAfter === true];
    };
    // reconfig runs: the leader decides (RECONFIGDISABLED unless reconfigEnabled), its nulls kept as nulls.
    assert.deepEqual(toClientRequest(OpCode.reconfig, { joiningServers: null, leavingServers: "3", newMembers: null, curConfigId: -1n }), {
      request: { op: "reconfig", joining: null, leaving: "3", newMembers: null, fromConfig: -1n },
      shape: { type: OpCode.reconfig },
    });
    assert.deepEqual(shapeOf(OpCode.deleteContainer, { path: "/c" }), [-8, false], "deleteContainer: BADARGUMENTS");
    assert.deepEqual(shapeOf(OpCode.check, { path: "/a", version: 1 }), [-6, false], "a lone check: UNIMPLEMENTED");
    assert.deepEqual(shapeOf(OpCode.createSession), [-6, false]);
    for (const type of [99, 0, OpCode.notification, 4242, -3]) {
      assert.deepEqual(shapeOf(type), [-6, true], `opcode ${type}: UNIMPLEMENTED, then the connection closes`);
    }
  });

  test("auth: digest credentials written as null are AUTHFAILED, ending the connection; the ip provider never reads them", () => {
    const digest = toClientRequest(OpCode.auth, { type: 0, scheme: "digest", auth: null });
    assert.deepEqual(digest, { reject: -115, shape: { type: OpCode.auth, closeAfter: true } });
    assert.deepEqual(request(OpCode.auth, { type: 0, scheme: "ip", auth: null }), { op: "addAuth", scheme: "ip", auth: new Uint8Array(0) });
    assert.deepEqual(request(OpCode.auth, { type: 0, scheme: "digest", auth: new Uint8Array(0) }), {
      op: "addAuth",
      scheme: "digest",
      auth: new Uint8Array(0),
    });
    assert.deepEqual(
      request(OpCode.auth, { type: 0, scheme: null, auth: data("x") }),
      { op: "addAuth", scheme: "", auth: data("x") },
      "no provider: AUTHFAILED in the pipeline",
    );
  });

  test("null strings in an ACL entry as ZooKeeper's fixupACL meets them", () => {
    const entry = (scheme: string | null, id: string | null) => [{ perms: 31, id: { scheme, id } }];
    // kazoo's CREATOR_ALL_ACL: auth with its empty id written as null; fixupACL never reads it.
    assert.deepEqual((request(OpCode.create, { path: "/a", data: null, acl: entry("auth", null), flags: 0 }) as { acl: unknown }).acl, [
      { perms: 31, id: { scheme: "auth", id: "" } },
    ]);
    assert.deepEqual((request(OpCode.setACL, { path: "/a", acl: entry("auth", null), version: -1 }) as { acl: unknown }).acl, [
      { perms: 31, id: { scheme: "auth", id: "" } },
    ]);
    // A null scheme names no provider: prep's fixupAcl answers INVALIDACL in ZooKeeper's order.
    assert.deepEqual((request(OpCode.create, { path: "/a", data: null, acl: entry(null, "x"), flags: 0 }) as { acl: unknown }).acl, [
      { perms: 31, id: { scheme: "", id: "x" } },
    ]);
    for (const scheme of ["world", "digest", "ip"]) {
      assert.equal(
        refusal(OpCode.create, { path: "/a", data: null, acl: entry(scheme, null), flags: 0 }),
        -5,
        `${scheme}:null is ZooKeeper's NPE, MARSHALLINGERROR`,
      );
    }
  });

  test("the rest map one to one", () => {
    assert.deepEqual(request(OpCode.getChildren2, { path: "/a", watch: true }), { op: "getChildren", path: "/a", watch: true, zooKeeperChecks: true });
    assert.deepEqual(request(OpCode.exists, { path: "/a", watch: false }), { op: "exists", path: "/a", watch: false, zooKeeperChecks: true });
    assert.deepEqual(request(OpCode.setData, { path: "/a", data: null, version: 3 }), { op: "setData", path: "/a", data: NULL_DATA, version: 3 });
    assert.deepEqual(request(OpCode.removeWatches, { path: "/a", type: 5 }), {
      op: "removeWatches",
      path: "/a",
      watcherType: "persistent-recursive",
      zooKeeperChecks: true,
    });
    assert.deepEqual(request(OpCode.addWatch, { path: "/a", mode: 1 }), { op: "addWatch", path: "/a", mode: "persistent-recursive", zooKeeperChecks: true });
    assert.deepEqual(request(OpCode.auth, { type: 0, scheme: "digest", auth: data("u:p") }), { op: "addAuth", scheme: "digest", auth: data("u:p") });
    assert.deepEqual(request(OpCode.setWatches, { relativeZxid: 12n, dataWatches: ["/d"], existWatches: [], childWatches: null }), {
      op: "setWatches",
      relativeZxid: 12,
      dataWatches: ["/d"],
      existWatches: [],
      childWatches: [],
      persistentWatches: [],
      persistentRecursiveWatches: [],
      zooKeeperChecks: true,
    });
    assert.deepEqual(request(OpCode.closeSession, {}), { op: "close" });
    const multi = toClientRequest(OpCode.multi, {
      ops: [
        { type: OpCode.setData, request: { path: "/m", data: null, version: 1 } },
        { type: OpCode.check, request: { path: "/m", version: 0 } },
      ],
    });
    assert.ok("request" in multi);
    assert.deepEqual(multi.shape.opTypes, [OpCode.setData, OpCode.check]);
  });

  test('reads look their path up unvalidated, as ZooKeeper does: null is MARSHALLINGERROR, "" is the root (without a watch)', () => {
    for (const type of [OpCode.getData, OpCode.getChildren, OpCode.getChildren2, OpCode.exists]) {
      assert.equal(refusal(type, { path: null, watch: false }), -5, `opcode ${type}`);
      assert.deepEqual(request(type, { path: "", watch: true }), {
        op: type === OpCode.exists ? "exists" : type === OpCode.getData ? "getData" : "getChildren",
        path: "/",
        watch: false,
        zooKeeperChecks: true,
      });
      assert.deepEqual(request(type, { path: "no//slash/", watch: true }), {
        op: type === OpCode.exists ? "exists" : type === OpCode.getData ? "getData" : "getChildren",
        path: "no//slash/",
        watch: true,
        zooKeeperChecks: true,
      });
    }
    assert.equal(refusal(OpCode.getACL, { path: null }), -5);
    assert.deepEqual(request(OpCode.getACL, { path: "" }), { op: "getAcl", path: "/", zooKeeperChecks: true });
    assert.equal(refusal(OpCode.getAllChildrenNumber, { path: null }), -5);
    const number = toClientRequest(OpCode.getAllChildrenNumber, { path: "" });
    assert.ok("request" in number);
    assert.deepEqual(
      [number.request, number.shape],
      [
        { op: "getAllChildrenNumber", path: "/", zooKeeperChecks: true },
        { type: OpCode.getAllChildrenNumber, rootKeyCounted: true },
      ],
    );
    const counted = reply(encodeZkReply(1, number.shape, { err: 0, zxid: 1, body: { kind: "number", number: 7 } }), jute.GetAllChildrenNumberResponse);
    assert.equal(counted.body?.totalNumber, 8, 'ZooKeeper counts the root\'s own key for ""');
    const multiRead = request(OpCode.multiRead, {
      ops: [
        { type: OpCode.getData, request: { path: "", watch: false } },
        { type: OpCode.getChildren, request: { path: "x", watch: false } },
      ],
    });
    assert.deepEqual(multiRead, {
      op: "multiRead",
      ops: [
        { op: "getData", path: "/" },
        { op: "getChildren", path: "x" },
      ],
      zooKeeperChecks: true,
    });
    assert.equal(
      refusal(OpCode.multiRead, {
        ops: [
          { type: OpCode.getData, request: { path: "/a", watch: false } },
          { type: OpCode.getData, request: { path: null, watch: false } },
        ],
      }),
      -5,
    );
  });

  test("sync answers any path, echoing it, null as null; watch requests take any path", () => {
    assert.deepEqual(request(OpCode.sync, { path: "no-slash" }), { op: "sync", path: "no-slash", zooKeeperChecks: true });
    const nullSync = toClientRequest(OpCode.sync, { path: null });
    assert.ok("request" in nullSync);
    assert.deepEqual(nullSync.shape, { type: OpCode.sync, nullPath: true });
    const echoed = reply(encodeZkReply(2, nullSync.shape, { err: 0, zxid: 1, body: { kind: "path", path: "" } }), jute.SyncResponse);
    assert.deepEqual([echoed.body, echoed.rest], [{ path: null }, 0]);
    assert.equal(refusal(OpCode.checkWatches, { path: null, type: 1 }), -5, "checkWatches dereferences its path");
    assert.deepEqual(request(OpCode.removeWatches, { path: null, type: 1 }), { op: "removeWatches", path: "", watcherType: "children", zooKeeperChecks: true });
    assert.deepEqual(request(OpCode.addWatch, { path: null, mode: 0 }), { op: "addWatch", path: "", mode: "persistent", zooKeeperChecks: true });
  });

  test("a multi's ops as ZooKeeper's MultiOperationRecord reads them: a create's flags, not its header, pick its opcode", () => {
    const create = (type: number, flags: number, ttl?: bigint) => ({
      type,
      request: { path: "/m", data: null, acl: OPEN, flags, ...(ttl === undefined ? {} : { ttl }) },
    });
    const mapped = (...ops: unknown[]) => toClientRequest(OpCode.multi, { ops });
    const opTypes = (...ops: unknown[]) => {
      const m = mapped(...ops);
      assert.ok("request" in m, `refused with ${"reject" in m ? m.reject : "?"}`);
      return m.shape.opTypes;
    };
    // The result record follows: create answers without a stat, the others with one.
    assert.deepEqual(opTypes(create(OpCode.create2, 0), create(OpCode.create, 4), create(OpCode.createContainer, 2), create(OpCode.createTTL, 5, 100n)), [
      OpCode.create,
      OpCode.createContainer,
      OpCode.create,
      OpCode.createTTL,
    ]);
    // A createTTL op with a non-TTL mode is a plain create: its ttl is dropped, not refused.
    const plain = mapped(create(OpCode.createTTL, 0, 100n));
    assert.ok("request" in plain && plain.request.op === "multi");
    assert.deepEqual(plain.request.ops[0], { op: "create", path: "/m", data: NULL_DATA, acl: OPEN, mode: "persistent", ttlMs: 0 });
    // Unknown flags fail that op alone, BADARGUMENTS (prep's first check refuses a ttl on a persistent create).
    const unknown = mapped(create(OpCode.create, 7), create(OpCode.createTTL, 9, 5n));
    assert.ok("request" in unknown && unknown.request.op === "multi");
    assert.deepEqual(
      unknown.request.ops.map((op) => op.op === "create" && [op.mode, op.ttlMs]),
      [
        ["persistent", 1],
        ["persistent", 1],
      ],
    );
    assert.deepEqual(unknown.shape.opTypes, [OpCode.create, OpCode.create]);
    // A TTL mode under a header without a ttl field fails the whole multi (ZooKeeper's ClassCastException).
    assert.equal(refusal(OpCode.multi, { ops: [create(OpCode.create, 5)] }), -5);
    // A null path in any op fails the whole multi before any op runs (ZooKeeper's NullPointerException).
    for (const op of [
      { type: OpCode.create, request: { path: null, data: null, acl: OPEN, flags: 0 } },
      { type: OpCode.delete, request: { path: null, version: -1 } },
      { type: OpCode.setData, request: { path: null, data: null, version: -1 } },
      { type: OpCode.check, request: { path: null, version: -1 } },
    ]) {
      assert.equal(refusal(OpCode.multi, { ops: [{ type: OpCode.check, request: { path: "/m", version: 9 } }, op] }), -5, `a null path in a ${op.type}`);
    }
  });
});

describe("corral replies → jute responses", () => {
  const ok = (body: Reply["body"]): Reply => ({ err: 0, zxid: 42, body });

  test("create answers with the path, create2/createTTL/createContainer with the path and the stat", () => {
    const created = ok({ kind: "create", path: "/a", stat });
    assert.deepEqual(reply(encodeZkReply(3, { type: OpCode.create }, created), jute.CreateResponse), {
      header: { xid: 3, zxid: 42n, err: 0 },
      body: { path: "/a" },
      rest: 0,
    });
    for (const type of [OpCode.create2, OpCode.createTTL, OpCode.createContainer]) {
      const decoded = reply(encodeZkReply(3, { type }, created), jute.Create2Response);
      assert.equal(decoded.body?.path, "/a");
      assert.equal(decoded.body?.stat.pzxid, 10n);
      assert.equal(decoded.rest, 0);
    }
  });

  test("an error is the header alone", () => {
    assert.deepEqual(reply(encodeZkReply(4, { type: OpCode.getData }, { err: -101, zxid: 42, body: { kind: "empty" } })), {
      header: { xid: 4, zxid: 42n, err: -101 },
      body: undefined,
      rest: 0,
    });
  });

  test("getData gives null for null data; getChildren has no stat, getChildren2 has one; exists and setData a stat", () => {
    assert.equal(reply(encodeZkReply(1, { type: OpCode.getData }, ok({ kind: "data", data: NULL_DATA, stat })), jute.GetDataResponse).body?.data, null);
    assert.deepEqual(
      reply(encodeZkReply(1, { type: OpCode.getData }, ok({ kind: "data", data: new Uint8Array(0), stat })), jute.GetDataResponse).body?.data,
      new Uint8Array(0),
    );
    const children = ok({ kind: "children", children: ["x", "y"], stat });
    assert.deepEqual(reply(encodeZkReply(1, { type: OpCode.getChildren }, children), jute.GetChildrenResponse), {
      header: { xid: 1, zxid: 42n, err: 0 },
      body: { children: ["x", "y"] },
      rest: 0,
    });
    assert.equal(reply(encodeZkReply(1, { type: OpCode.getChildren2 }, children), jute.GetChildren2Response).rest, 0);
    assert.equal(reply(encodeZkReply(1, { type: OpCode.exists }, ok({ kind: "stat", stat })), jute.ExistsResponse).body?.stat.version, 1);
  });

  test("a multi's results follow its ops' opcodes; a failed one travels in the results with err 0 in the header", () => {
    const shape = { type: OpCode.multi, opTypes: [OpCode.create, OpCode.createContainer, OpCode.setData, OpCode.delete] };
    const done = reply(
      encodeZkReply(
        8,
        shape,
        ok({
          kind: "multi",
          results: [{ type: "create", path: "/a", stat }, { type: "create", path: "/c", stat }, { type: "setData", stat }, { type: "delete" }],
        }),
      ),
      jute.MultiResponse,
    );
    assert.deepEqual(
      done.body?.results.map((r) => r.type),
      [OpCode.create, OpCode.create2, OpCode.setData, OpCode.delete],
    );
    const failed = reply(
      encodeZkReply(8, shape, {
        err: -101,
        zxid: 42,
        body: {
          kind: "multi",
          results: [
            { type: "error", err: 0 },
            { type: "error", err: -101 },
            { type: "error", err: -2 },
            { type: "error", err: -2 },
          ],
        },
      }),
      jute.MultiResponse,
    );
    assert.equal(failed.header.err, 0);
    assert.deepEqual(failed.body?.results, [
      { type: -1, err: 0 },
      { type: -1, err: -101 },
      { type: -1, err: -2 },
      { type: -1, err: -2 },
    ]);
  });
});
