/**
 * Servers tell each other where their clients connect: every peer call carries the caller's
 * advertised client address and every answer the callee's (`corral-client-address`), and each side
 * records what it hears in its ClientAddressDirectory — also from a server outside its member table,
 * as a joiner is before a reconfiguration adds it. A missing or malformed value is ignored and costs
 * nothing. Real gRPC on 127.0.0.1; every wait bounded, no timing assertions.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";

import { ClientAddressDirectory } from "../../src/server/client-address-directory.js";
import { CLIENT_ADDRESS_METADATA } from "../../src/server/peer/peer-wire.js";
import { membersOf, rawElectionCall, startNode, stopAllNodes, stopNode } from "../helpers/peer-nodes.js";
import { waitFor } from "../helpers/wait.js";

const WAIT_MS = 15_000;

after(stopAllNodes);

function directory(id: number, own: string): ClientAddressDirectory {
  const d = new ClientAddressDirectory(id);
  d.advertise(own);
  return d;
}

test("both ends of a peer link record the other's client address", async () => {
  const members = await membersOf(["participant", "participant"]);
  const one = directory(1, "node-1.example:2181");
  const two = directory(2, "[::1]:2182");
  const a = await startNode(1, members, { clientAddresses: one });
  const b = await startNode(2, members, { clientAddresses: two });
  // Server 1 calls server 2: 2 hears 1's address with the call, 1 hears 2's with the answer.
  a.transport.sendNotification(2, { from: 1, state: "looking", vote: { leader: 1, zxid: 0, peerEpoch: 0 }, round: 1 });
  await waitFor("server 2 to know server 1's client address", () => two.addressOf(1), WAIT_MS);
  await waitFor("server 1 to know server 2's client address", () => one.addressOf(2), WAIT_MS);
  assert.deepEqual(two.addressOf(1), { host: "node-1.example", port: 2181 });
  assert.deepEqual(one.addressOf(2), { host: "::1", port: 2182 });
  await stopNode(a);
  await stopNode(b);
});

test("a server outside the member table is recorded when it calls; a missing or malformed address is ignored, the call accepted", async () => {
  const members = await membersOf(["participant"]);
  const own = directory(1, "127.0.0.1:2181");
  const node = await startNode(1, members, { clientAddresses: own });
  const port = members[0]!.electionPort;
  const calls = [
    rawElectionCall(port, 40, ["127.0.0.1:2240"]),
    rawElectionCall(port, 41, []),
    rawElectionCall(port, 42, ["127.0.0.1:0"]),
    rawElectionCall(port, 43, ["x".repeat(4000) + ":1"]),
    rawElectionCall(port, 44, ["127.0.0.1:2244", "127.0.0.1:2245"]),
    rawElectionCall(port, 45, ["no port"]),
  ];
  for (const call of calls) {
    const headers = await call.headers;
    assert.ok(headers !== undefined, "every call is accepted");
    // The answer names the callee's own address.
    assert.deepEqual(headers.get(CLIENT_ADDRESS_METADATA), ["127.0.0.1:2181"]);
  }
  assert.deepEqual(own.addressOf(40), { host: "127.0.0.1", port: 2240 });
  for (const id of [41, 42, 43, 44, 45]) assert.equal(own.addressOf(id), undefined, `server ${id}`);
  // A caller cannot speak for the callee itself.
  assert.deepEqual(own.addressOf(1), { host: "127.0.0.1", port: 2181 });
  for (const call of calls) {
    call.call.cancel();
    call.client.close();
  }
  await stopNode(node);
});

test("without a directory nothing is advertised", async () => {
  const members = await membersOf(["participant"]);
  const node = await startNode(1, members);
  const call = rawElectionCall(members[0]!.electionPort, 40, ["127.0.0.1:2240"]);
  const headers = await call.headers;
  assert.ok(headers !== undefined);
  assert.deepEqual(headers.get(CLIENT_ADDRESS_METADATA), []);
  call.call.cancel();
  call.client.close();
  await stopNode(node);
});
