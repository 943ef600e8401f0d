/** ZooKeeper's dynamic-config text (QuorumMaj.toString) as src/common/membership.ts writes it. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ZkError } from "../../src/common/errors.js";
import { formatMembership, parseMember, parseMembership } from "../../src/common/membership.js";

test("one line per member in id order, the client part only when known, then the version in hex", () => {
  const text = formatMembership(
    [
      { serverId: 3, host: "10.0.0.3", quorumPort: 2888, electionPort: 3888, role: "observer" },
      { serverId: 1, host: "::1", quorumPort: 2889, electionPort: 3889, role: "participant", clientHost: "fe80::1", clientPort: 2181 },
      { serverId: 2, host: "zk2.example", quorumPort: 2890, electionPort: 3890, role: "participant", clientHost: "0.0.0.0", clientPort: 2182 },
    ],
    0x100000003n,
  );
  assert.equal(
    text,
    [
      "server.1=[::1]:2889:3889:participant;[fe80::1]:2181",
      "server.2=zk2.example:2890:3890:participant;0.0.0.0:2182",
      "server.3=10.0.0.3:2888:3888:observer",
      "version=100000003",
    ].join("\n"),
  );
});

test("a static configuration is version 0; a negative version prints as Java's unsigned hex", () => {
  assert.equal(formatMembership([], 0n), "version=0");
  assert.equal(formatMembership([], -1n), "version=ffffffffffffffff");
});

test("parseMembership reads back what formatMembership writes (IPv6 in brackets, roles, client parts, version)", () => {
  const members = [
    { serverId: 1, host: "::1", quorumPort: 2889, electionPort: 3889, role: "participant" as const, clientHost: "fe80::1", clientPort: 2181 },
    { serverId: 2, host: "zk2.example", quorumPort: 2890, electionPort: 3890, role: "participant" as const, clientHost: "0.0.0.0", clientPort: 2182 },
    { serverId: 3, host: "10.0.0.3", quorumPort: 2888, electionPort: 3888, role: "observer" as const },
  ];
  assert.deepEqual(parseMembership(formatMembership(members, 0x100000003n)), { members, version: 0x100000003n });
});

test("parseMember takes ZooKeeper's forms: no role is a participant, a bare client port listens on 0.0.0.0", () => {
  assert.deepEqual(parseMember("server.7", "127.0.0.1:2888:3888;2181"), {
    serverId: 7,
    host: "127.0.0.1",
    quorumPort: 2888,
    electionPort: 3888,
    role: "participant",
    clientHost: "0.0.0.0",
    clientPort: 2181,
  });
  assert.equal(parseMember("server.8", "h:1:2:observer").role, "observer");
  assert.equal(parseMember("server.8", "h:1:2").clientPort, undefined);
});

test("malformed members are BADARGUMENTS, never anything else", () => {
  const bad: [string, string, boolean][] = [
    ["server.x", "h:1:2", false],
    ["srv.1", "h:1:2", false],
    ["server.0", "h:1:2", false],
    ["server.1", "h:1", false],
    ["server.1", "h:1:2:3:4", false],
    ["server.1", "h:1:2:witness", false],
    ["server.1", "h:0:2", false],
    ["server.1", "h:1:70000", false],
    ["server.1", "h:1:2;h:3;4", false],
    ["server.1", "[::1:1:2", false],
    ["server.1", ":1:2", false],
    ["server.1", "h:1:2", true],
    ["server.1", "h:1:2;h:x", true],
    // Hosts gRPC could not dial (it throws on a carriage return or a line separator) and other non-hosts.
    ["server.1", "x\ry:1:2", false],
    ["server.1", "x\u2028y:1:2", false],
    ["server.1", "a b:1:2", false],
    ["server.1", "a/b:1:2", false],
    ["server.1", "h:1:2;x\ry:3", false],
    ["server.1", "[not v6]:1:2", false],
    ["server.1", "[1.2.3.4]:1:2", false],
    ["server.1", `${"a".repeat(254)}:1:2`, false],
  ];
  for (const [key, value, clientRequired] of bad) {
    assert.throws(
      () => parseMember(key, value, clientRequired),
      (error: unknown) => error instanceof ZkError && error.code === "BADARGUMENTS",
      `${key}=${value}`,
    );
  }
  for (const text of ["", "version=1", "some thing", "server.1=h:1:2\nserver.1=h:3:4", "server.1=h:1:2\nserver.2=h:1:5", "server.1=h:1:2\nversion=zz"]) {
    assert.throws(
      () => parseMembership(text),
      (error: unknown) => error instanceof ZkError && error.code === "BADARGUMENTS",
      JSON.stringify(text),
    );
  }
});
