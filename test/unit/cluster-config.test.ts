/** The leader's reconfig plan (src/replica/cluster-config.ts): ZooKeeper's checks, in ZooKeeper's order. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ZkError } from "../../src/common/errors.js";
import type { MemberAddress, MemberRole } from "../../src/common/membership.js";
import { configText, planReconfig, quorumOf, type ClusterConfig, type ReconfigContext, type ReconfigRequestFields } from "../../src/replica/cluster-config.js";

function member(id: number, role: MemberRole = "participant"): MemberAddress {
  return { serverId: id, host: "127.0.0.1", quorumPort: 2000 + id, electionPort: 3000 + id, role, clientHost: "127.0.0.1", clientPort: 4000 + id };
}

const CURRENT: ClusterConfig = { version: 0x100000005, members: [member(1), member(2), member(3)] };
const CONTEXT: ReconfigContext = { enabled: true, current: CURRENT, inFlight: false, synced: [1, 2, 3] };
const NONE: ReconfigRequestFields = { joining: null, leaving: null, newMembers: null, fromConfig: -1n };
const ZXID = 0x100000009;

function refusal(request: Partial<ReconfigRequestFields>, context: Partial<ReconfigContext> = {}): string {
  try {
    planReconfig({ ...NONE, ...request }, { ...CONTEXT, ...context }, ZXID);
  } catch (error) {
    if (error instanceof ZkError) return error.code;
    throw error;
  }
  return "planned";
}

test("incremental: leaving first, then joining (a joiner may change a member's role or ports); the txn's zxid is the version", () => {
  const planned = planReconfig({ ...NONE, joining: "server.4=127.0.0.1:2004:3004:observer;127.0.0.1:4004", leaving: "2" }, CONTEXT, ZXID);
  assert.equal(planned.version, ZXID);
  assert.deepEqual(
    planned.members.map((m) => `${m.serverId}:${m.role}`),
    ["1:participant", "3:participant", "4:observer"],
  );
  assert.equal(
    configText(planned),
    [
      "server.1=127.0.0.1:2001:3001:participant;127.0.0.1:4001",
      "server.3=127.0.0.1:2003:3003:participant;127.0.0.1:4003",
      "server.4=127.0.0.1:2004:3004:observer;127.0.0.1:4004",
      "version=100000009",
    ].join("\n"),
  );
  const rerole = planReconfig({ ...NONE, joining: "server.3=127.0.0.1:2003:3003:observer;4003" }, CONTEXT, ZXID);
  assert.deepEqual([...quorumOf(rerole).voters], [1, 2]);
  assert.deepEqual([...quorumOf(rerole).observers], [3]);
});

test("non-incremental: the new member list, separated by commas or newlines", () => {
  const planned = planReconfig(
    { ...NONE, newMembers: "server.1=127.0.0.1:2001:3001;4001,server.5=127.0.0.1:2005:3005:participant;4005\nserver.6=127.0.0.1:2006:3006:observer;4006" },
    { ...CONTEXT, synced: [1, 5] },
    ZXID,
  );
  assert.deepEqual(
    planned.members.map((m) => `${m.serverId}:${m.role}`),
    ["1:participant", "5:participant", "6:observer"],
  );
});

test("ZooKeeper's order: disabled, in progress, version, arguments, voters, quorum", () => {
  // Each case is also refused by every later check: the earliest one must answer.
  const bad = { joining: "some thing", fromConfig: 7n };
  assert.equal(refusal(bad, { enabled: false, inFlight: true, synced: [] }), "RECONFIGDISABLED");
  assert.equal(refusal(bad, { inFlight: true, synced: [] }), "RECONFIGINPROGRESS");
  assert.equal(refusal(bad, { synced: [] }), "BADVERSION");
  assert.equal(refusal({ joining: "some thing" }, { synced: [] }), "BADARGUMENTS");
  assert.equal(refusal({ leaving: "2,3" }, { synced: [] }), "BADARGUMENTS", "fewer than two voters");
  assert.equal(refusal({ joining: "server.4=127.0.0.1:2004:3004;4004,server.5=127.0.0.1:2005:3005;4005" }, { synced: [1, 2] }), "NEWCONFIGNOQUORUM");
  assert.equal(refusal({ joining: "server.4=127.0.0.1:2004:3004;4004" }, { synced: [1, 2, 4] }), "planned");
  assert.equal(refusal({ fromConfig: 0x100000005n }), "planned", "the version in force is accepted");
});

test("what a client may send wrong is BADARGUMENTS: a joiner without a client port, a clashing address, a bad id", () => {
  assert.equal(refusal({ joining: "server.4=127.0.0.1:2004:3004" }), "BADARGUMENTS");
  assert.equal(refusal({ joining: "server.4=127.0.0.1:2001:3004;4004" }), "BADARGUMENTS", "server 1's quorum address");
  assert.equal(refusal({ leaving: "two" }), "BADARGUMENTS");
  assert.equal(refusal({ joining: "server.4=a=b" }), "BADARGUMENTS");
  assert.equal(refusal({ newMembers: "server.1=127.0.0.1:2001:3001;4001,server.1=127.0.0.1:2002:3002;4002" }), "BADARGUMENTS");
  assert.equal(refusal({ newMembers: "server.1=127.0.0.1:2001:3001:observer;4001" }), "BADARGUMENTS", "no voter at all");
  // Thousands of observers (no quorum needed for them) would make a text no notification can carry.
  const observers = Array.from({ length: 1_500 }, (_, i) => `server.${100 + i}=observer-host-${i}.example:${2000 + i}:${3000 + i}:observer;${4000 + i}`);
  assert.equal(refusal({ joining: observers.join(",") }), "BADARGUMENTS", "a configuration text over 64 KiB");
  assert.equal(refusal({ joining: observers.slice(0, 100).join(",") }), "planned", "a hundred observers fit");
});
