/** ZooKeeper's dynamic-config text (QuorumMaj.toString) as src/common/membership.ts writes it. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { formatMembership } from "../../src/common/membership.js";

test("one line per member in id order, the client part only when known, then the version in hex", () => {
  const text = formatMembership(
    [
      { serverId: 3, host: "10.0.0.3", quorumPort: 2888, electionPort: 3888, type: "observer" },
      { serverId: 1, host: "::1", quorumPort: 2889, electionPort: 3889, type: "participant", clientHost: "fe80::1", clientPort: 2181 },
      { serverId: 2, host: "zk2.example", quorumPort: 2890, electionPort: 3890, type: "participant", clientHost: "0.0.0.0", clientPort: 2182 },
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
