/**
 * ClientAddressDirectory: what a peer says its client address is, checked (bounded length, a host,
 * a port 1..65535) and bounded (one entry per possible server id); what a server advertises of
 * itself; and getMembers' join of the configuration in force with it (cluster-config.ts).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  advertisedClientAddress,
  CLIENT_ADDRESS_CHARS_MAX,
  ClientAddressDirectory,
  directoryFromConfig,
  parseClientAddress,
  SERVER_ID_MAX,
} from "../../src/server/client-address-directory.js";
import type { ServerEntry } from "../../src/server/cluster-servers.js";
import type { MemberRole } from "../../src/common/membership.js";
import { membersReply } from "../../src/replica/cluster-config.js";

test("a client address is host:port or [ipv6]:port with a port in 1..65535", () => {
  const good: [string, { host: string; port: number }][] = [
    ["127.0.0.1:2181", { host: "127.0.0.1", port: 2181 }],
    ["corral-0.corral.default.svc:1", { host: "corral-0.corral.default.svc", port: 1 }],
    ["[::1]:65535", { host: "::1", port: 65535 }],
    ["[fe80::1]:7000", { host: "fe80::1", port: 7000 }],
    [`${"a".repeat(CLIENT_ADDRESS_CHARS_MAX - 6)}:12345`, { host: "a".repeat(CLIENT_ADDRESS_CHARS_MAX - 6), port: 12345 }],
  ];
  for (const [text, expected] of good) assert.deepEqual(parseClientAddress(text), expected, text);
});

test("anything else is refused, never thrown: too long, no host, no port, a port out of range, stray characters", () => {
  const bad: unknown[] = [
    "",
    "127.0.0.1",
    ":2181",
    "127.0.0.1:",
    "127.0.0.1:0",
    "127.0.0.1:65536",
    "127.0.0.1:123456",
    "127.0.0.1:-1",
    "127.0.0.1:21 81",
    " 127.0.0.1:2181",
    "::1:2181",
    "[::1]",
    "[]:2181",
    "[example.com]:2181",
    "host name:2181",
    "host/path:2181",
    "host\n:2181",
    `${"a".repeat(CLIENT_ADDRESS_CHARS_MAX - 5)}:12345`,
    undefined,
    2181,
    Buffer.from("127.0.0.1:2181"),
  ];
  for (const text of bad) assert.equal(parseClientAddress(text), undefined, JSON.stringify(String(text)));
});

test("a record from a peer replaces the static config's seed; a malformed one changes nothing", () => {
  const directory = new ClientAddressDirectory(1, [
    { serverId: 1, address: "10.0.0.1:2181" },
    { serverId: 2, address: "10.0.0.2:2181" },
  ]);
  assert.deepEqual(directory.addressOf(2), { host: "10.0.0.2", port: 2181 });
  assert.equal(directory.record(2, "node-2.example:3000"), true);
  assert.deepEqual(directory.addressOf(2), { host: "node-2.example", port: 3000 });
  assert.equal(directory.record(2, "node-2.example:0"), false);
  assert.deepEqual(directory.addressOf(2), { host: "node-2.example", port: 3000 }, "a bad value leaves the last good one");
  assert.equal(directory.record(3, "[::1]:4000"), true);
  assert.deepEqual(directory.addressOf(3), { host: "::1", port: 4000 });
  assert.equal(directory.addressOf(4), undefined);
});

test("no peer can speak for this server: its own address changes only by advertise", () => {
  const directory = new ClientAddressDirectory(1, [{ serverId: 1, address: "10.0.0.1:2181" }]);
  assert.equal(directory.ownAddress, undefined, "a seed is not an advertisement");
  assert.equal(directory.record(1, "evil:1"), false);
  assert.deepEqual(directory.addressOf(1), { host: "10.0.0.1", port: 2181 });
  assert.equal(directory.advertise("[::1]:2182"), true);
  assert.equal(directory.ownAddress, "[::1]:2182");
  assert.deepEqual(directory.addressOf(1), { host: "::1", port: 2182 });
  assert.equal(directory.advertise("nonsense"), false);
  assert.equal(directory.ownAddress, "[::1]:2182");
});

test("the directory holds at most one entry per possible server id, whatever ids peers claim", () => {
  const directory = new ClientAddressDirectory(1);
  for (let id = -5; id < 100_000; id += 7) directory.record(id, `10.0.0.1:${(id % 60_000) + 100}`);
  for (const id of [0, SERVER_ID_MAX + 1, 0xffffffff, 1.5, Number.NaN]) assert.equal(directory.record(id, "10.0.0.1:1"), false, String(id));
  assert.ok(directory.size <= SERVER_ID_MAX, `${directory.size} entries`);
  assert.equal(directory.record(SERVER_ID_MAX, "10.0.0.1:1"), true);
});

const entry = (id: number, host: string, clientPort: number): ServerEntry => ({
  id,
  host,
  clientPort,
  quorumPort: 3000 + id,
  electionPort: 4000 + id,
  role: "participant",
});

test("a server advertises its clientHost, or for a wildcard bind its servers entry's host (loopback when standalone)", () => {
  const servers = [entry(1, "node-1.example", 2181), entry(2, "node-2.example", 2181)];
  assert.equal(advertisedClientAddress({ serverId: 1, clientHost: "10.1.2.3", servers }, 2181), "10.1.2.3:2181");
  assert.equal(advertisedClientAddress({ serverId: 2, clientHost: "0.0.0.0", servers }, 2181), "node-2.example:2181");
  assert.equal(advertisedClientAddress({ serverId: 2, clientHost: "::", servers }, 5000), "node-2.example:5000");
  assert.equal(advertisedClientAddress({ serverId: 1, clientHost: "0.0.0.0", servers: [] }, 2181), "127.0.0.1:2181");
  assert.equal(advertisedClientAddress({ serverId: 1, clientHost: "::", servers: [] }, 2181), "[::1]:2181");
  assert.equal(advertisedClientAddress({ serverId: 1, clientHost: "fe80::2", servers: [] }, 2181), "[fe80::2]:2181");
});

test("a server's directory starts with its static members and itself; a port 0 is advertised once bound", () => {
  const servers = [entry(1, "127.0.0.1", 2181), entry(2, "127.0.0.1", 2182)];
  const clustered = directoryFromConfig({ serverId: 2, clientHost: "127.0.0.1", clientPort: 2182, servers });
  assert.equal(clustered.ownAddress, "127.0.0.1:2182");
  assert.deepEqual(clustered.addressOf(1), { host: "127.0.0.1", port: 2181 });
  const standalone = directoryFromConfig({ serverId: 1, clientHost: "127.0.0.1", clientPort: 0, servers: [] });
  assert.equal(standalone.ownAddress, undefined);
  standalone.advertise(advertisedClientAddress({ serverId: 1, clientHost: "127.0.0.1", servers: [] }, 40_123));
  assert.equal(standalone.ownAddress, "127.0.0.1:40123");
});

test("getMembers answers every member of the configuration in force in id order, with the addresses known", () => {
  const directory = new ClientAddressDirectory(1, [
    { serverId: 1, address: "127.0.0.1:2181" },
    { serverId: 2, address: "127.0.0.1:2182" },
    { serverId: 9, address: "127.0.0.1:2189" },
  ]);
  const member = (serverId: number, role: MemberRole) => ({ serverId, role, host: "h", quorumPort: 1, electionPort: 2 });
  const answer = membersReply({ version: 0x100000003, members: [member(4, "observer"), member(2, "participant"), member(1, "participant")] }, (id) =>
    directory.addressOf(id),
  );
  assert.deepEqual(answer, {
    version: 0x100000003,
    members: [
      { serverId: 1, role: "participant", clientAddress: { host: "127.0.0.1", port: 2181 } },
      { serverId: 2, role: "participant", clientAddress: { host: "127.0.0.1", port: 2182 } },
      { serverId: 4, role: "observer" },
    ],
  });
});
