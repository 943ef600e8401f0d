/**
 * Properties of prep over arbitrary requests, including garbage paths: it never throws (a client's
 * message must never crash a server), every txn it makes applies cleanly, and deciding against
 * in-flight changes gives exactly the txns that deciding against the applied tree would.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { ZkErrorCode } from "../../src/common/errors.js";
import { Prep } from "../../src/replica/prep.js";
import type { CreateRequest, MultiOpRequest, WriteRequest } from "../../src/replica/requests.js";
import { DataTree } from "../../src/store/data-tree.js";
import { Perms, type Acl, type CreateMode, type Id, type TxnBody } from "../../src/store/types.js";

const SESSIONS = [0x0100000000000001n, 0x0100000000000002n];
/** What each session's connection is authenticated as: ACL decisions must not depend on timing either. */
const AUTH: readonly Id[][] = [
  [
    { scheme: "ip", id: "10.0.0.1" },
    { scheme: "digest", id: "alice:hash" },
  ],
  [{ scheme: "ip", id: "192.168.0.1" }],
];
const aclList = fc.constantFrom<Acl[]>(
  [],
  [{ perms: Perms.ALL, id: { scheme: "world", id: "anyone" } }],
  [{ perms: Perms.READ, id: { scheme: "world", id: "anyone" } }],
  [{ perms: Perms.ALL, id: { scheme: "digest", id: "alice:hash" } }],
  [{ perms: Perms.ALL, id: { scheme: "auth", id: "" } }],
  [
    { perms: Perms.CREATE | Perms.DELETE, id: { scheme: "ip", id: "192.168.0.0/16" } },
    { perms: Perms.READ, id: { scheme: "world", id: "anyone" } },
  ],
  [{ perms: Perms.ALL, id: { scheme: "bogus", id: "x" } }],
);
const segment = fc.constantFrom("a", "b", "c", "", ".", "..", "zookeeper", "x\u0000", "q-");
const path = fc
  .tuple(fc.boolean(), fc.array(segment, { minLength: 0, maxLength: 3 }), fc.boolean())
  .map(([absolute, segments, trailing]) => (absolute ? "/" : "") + segments.join("/") + (trailing ? "/" : ""))
  .map((p) => (p === "" ? "/" : p));
const validPath = fc.array(fc.constantFrom("a", "b", "c"), { minLength: 1, maxLength: 3 }).map((s) => "/" + s.join("/"));
const anyPath = fc.oneof({ weight: 1, arbitrary: path }, { weight: 3, arbitrary: validPath });
const version = fc.constantFrom(-1, 0, 1, 2);
const mode = fc.constantFrom<CreateMode>("persistent", "ephemeral", "persistent-sequential", "ephemeral-sequential", "container", "persistent-with-ttl");
const data = fc.uint8Array({ maxLength: 4 });

const create = fc.record({ op: fc.constant("create" as const), path: anyPath, data, acl: aclList, mode, ttlMs: fc.constant(0) }) as fc.Arbitrary<CreateRequest>;
const del = fc.record({ op: fc.constant("delete" as const), path: anyPath, version });
const setData = fc.record({ op: fc.constant("setData" as const), path: anyPath, data, version });
const setAcl = fc.record({ op: fc.constant("setAcl" as const), path: anyPath, acl: aclList, version });
const check = fc.record({ op: fc.constant("check" as const), path: anyPath, version });
const multi = fc.record({
  op: fc.constant("multi" as const),
  ops: fc.array(fc.oneof(create, del, setData, check) as fc.Arbitrary<MultiOpRequest>, { maxLength: 4 }),
});
/** Creates, deletes and multis also as the ZooKeeper door sends them, checked in ZooKeeper's order. */
const zooKeeperDoor = fc.oneof(create, del, multi).map((r) => ({ ...r, zooKeeperChecks: true as const }));
const request = fc.oneof(create, create, del, setData, setAcl, multi, zooKeeperDoor) as fc.Arbitrary<WriteRequest>;
const step = fc.record({
  session: fc.constantFrom(0, 1),
  request: fc.oneof({ weight: 30, arbitrary: request }, { weight: 1, arbitrary: fc.constant<WriteRequest>({ op: "close" }) }),
  applyNow: fc.boolean(),
});

function freshTree(): DataTree {
  const tree = new DataTree();
  SESSIONS.forEach((sessionId, i) =>
    tree.apply({ header: { sessionId, cxid: 0, zxid: i + 1, timeMs: 1 }, body: { type: "createSession", timeoutMs: 1000, password: new Uint8Array(1) } }),
  );
  return tree;
}

test("prep never throws, its txns always apply, and in-flight decisions equal one-at-a-time decisions", () => {
  let refusedByAcl = 0;
  fc.assert(
    fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
      const serial = { tree: freshTree(), bodies: [] as TxnBody[] };
      const pipelined = { tree: freshTree(), bodies: [] as TxnBody[], queue: [] as { zxid: number; session: bigint; body: TxnBody }[] };
      const serialPrep = new Prep(serial.tree, { ttlNodesEnabled: false });
      const pipelinedPrep = new Prep(pipelined.tree, { ttlNodesEnabled: false });
      const closed = new Set<number>();
      let zxid = SESSIONS.length;
      const flush = () => {
        for (const t of pipelined.queue) {
          pipelined.tree.apply({ header: { sessionId: t.session, cxid: 1, zxid: t.zxid, timeMs: 5 }, body: t.body });
          pipelinedPrep.applied(t.zxid);
        }
        pipelined.queue.length = 0;
      };
      for (const s of steps) {
        if (closed.has(s.session)) continue;
        if (s.request.op === "close") closed.add(s.session);
        const session = SESSIONS[s.session]!;
        zxid += 1;
        const a = serialPrep.prepare(s.request, session, zxid, AUTH[s.session]!);
        serial.tree.apply({ header: { sessionId: session, cxid: 1, zxid, timeMs: 5 }, body: a });
        serialPrep.applied(zxid);
        serial.bodies.push(a);
        const b = pipelinedPrep.prepare(s.request, session, zxid, AUTH[s.session]!);
        pipelined.bodies.push(b);
        pipelined.queue.push({ zxid, session, body: b });
        if (s.applyNow) flush();
      }
      flush();
      refusedByAcl += serial.bodies.filter((body) =>
        JSON.stringify(body, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v)).includes(`"err":${ZkErrorCode.NOAUTH}`),
      ).length;
      assert.deepEqual(pipelined.bodies, serial.bodies);
      assert.equal(pipelined.tree.digest(), serial.tree.digest());
      assert.equal(serial.tree.digest(), serial.tree.recomputedDigest(), "the digest kept as the tree changed is the one a full walk gives");
      assert.equal(pipelinedPrep.inFlightChanges(), 0);
    }),
    { numRuns: 400 },
  );
  assert.ok(refusedByAcl > 0, "some requests were refused by an ACL");
});
