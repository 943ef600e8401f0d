/**
 * The rules by which a client following the membership changes its server list (nextServerList),
 * and the wire form of getMembers' answer.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { membersFromWire, nextServerList } from "../../src/client/membership-follow.js";
import type { ClusterMember, ClusterMembers } from "../../src/client/types.js";
import { ZkError } from "../../src/common/errors.js";

const A = "127.0.0.1:2181";
const B = "127.0.0.1:2182";
const C = "127.0.0.1:2183";
const D = "127.0.0.1:2184";

const member = (serverId: number, clientAddress?: string): ClusterMember => ({ serverId, role: "participant", ...(clientAddress ? { clientAddress } : {}) });
const answer = (...members: ClusterMember[]): ClusterMembers => ({ version: 0x100000002n, members });
const on = (serverId: number, address: string) => ({ serverId, address });

test("a member added is added to the list, one removed leaves it", () => {
  assert.deepEqual(nextServerList([A, B, C], answer(member(1, A), member(2, B), member(3, C), member(4, D)), on(1, A)), {
    kind: "update",
    servers: [A, B, C, D],
  });
  assert.deepEqual(nextServerList([A, B, C, D], answer(member(1, A), member(2, B), member(4, D)), on(2, B)), { kind: "update", servers: [A, B, D] });
});

test("the same servers in another order are no change", () => {
  assert.equal(nextServerList([C, A, B], answer(member(1, A), member(2, B), member(3, C)), on(1, A)).kind, "keep");
});

test("a member whose address the server does not know adds the known ones and removes nothing", () => {
  assert.deepEqual(nextServerList([A, B, C], answer(member(1, A), member(2, B), member(4, D), member(5)), on(1, A)), {
    kind: "update",
    servers: [A, B, C, D],
  });
  assert.equal(nextServerList([A, B, C], answer(member(1, A), member(2, B), member(5)), on(1, A)).kind, "keep");
});

test("a server that advertises another address than the one dialled (load balancer, NAT, port mapping) changes nothing", () => {
  const decision = nextServerList(["lb.example:2181"], answer(member(1, A), member(2, B)), on(1, "lb.example:2181"));
  assert.equal(decision.kind, "keep");
  assert.match(decision.kind === "keep" ? decision.reason : "", /advertises 127\.0\.0\.1:2181/);
  assert.equal(nextServerList([A], answer(member(1), member(2, B)), on(1, A)).kind, "keep", "it advertises none");
});

test("not connected, or connected to a server outside the configuration it reports, changes nothing", () => {
  assert.equal(nextServerList([A], answer(member(1, A), member(2, B)), undefined).kind, "keep");
  assert.equal(nextServerList([C], answer(member(1, A), member(2, B)), on(3, C)).kind, "keep");
});

test("getMembers' wire answer: roles, addresses as a connect string writes them, unknown ones absent", () => {
  const decoded = membersFromWire({
    configVersion: 0x100000002n,
    members: [
      { serverId: 1, observer: false, clientHost: "127.0.0.1", clientPort: 2181 },
      { serverId: 2, observer: true, clientHost: "::1", clientPort: 2182 },
      { serverId: 3, observer: false, clientHost: "", clientPort: 0 },
      { serverId: 4, observer: false, clientHost: "h", clientPort: 70_000 },
    ],
  });
  assert.deepEqual(decoded, {
    version: 0x100000002n,
    members: [
      { serverId: 1, role: "participant", clientAddress: A },
      { serverId: 2, role: "observer", clientAddress: "[::1]:2182" },
      { serverId: 3, role: "participant" },
      { serverId: 4, role: "participant" },
    ],
  });
  assert.throws(
    () => membersFromWire(undefined),
    (e: unknown) => e instanceof ZkError && e.code === "MARSHALLINGERROR",
  );
});
