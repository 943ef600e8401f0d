/**
 * PeerTransport and membership changes, over real gRPC on 127.0.0.1: servers outside a member
 * table are heard and answered, and `updateMembers` makes new members reachable and forgets the
 * ones that left. Helpers shared with test/integration/peer-transport.test.ts (test/helpers/peer-nodes.ts). No timing assertions;
 * every wait is bounded.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import * as grpc from "@grpc/grpc-js";

import type { MemberAddress } from "../../src/common/membership.js";
import type { QuorumMessage } from "../../src/consensus/messages.js";
import type { Notification } from "../../src/election/types.js";
import type { PeerMember, PeerTransportSecurity } from "../../src/server/peer/peer-transport.js";
import { makeTestPki } from "../helpers/certificates.js";
import { distinctFreePorts, membersOf, type Node, rawElectionCall, startNode, stopAllNodes, stopNode } from "../helpers/peer-nodes.js";
import { waitFor } from "../helpers/wait.js";

const WAIT_MS = 15_000;

after(stopAllNodes);

/** A member table entry as a reconfiguration hands it over (PeerPort.updateMembers). */
function address(m: PeerMember): MemberAddress {
  return { serverId: m.id, host: m.host, quorumPort: m.quorumPort, electionPort: m.electionPort, role: m.role };
}

const notificationsFrom = (node: Node, from: number): Notification[] =>
  node.events.flatMap((e) => (e.kind === "notification" && e.n.from === from ? [e.n] : []));
const messagesFrom = (node: Node, from: number): QuorumMessage[] => node.events.flatMap((e) => (e.kind === "message" && e.from === from ? [e.m] : []));
const opened = (node: Node, peer: number): number => node.events.filter((e) => e.kind === "opened" && e.peer === peer).length;

function vote(from: number, round: number): Notification {
  return { from, state: "looking", vote: { leader: from, zxid: 2 ** 32 * 3 + from, peerEpoch: 3 }, round };
}

test("a server outside the member table is heard, and answered on its own stream", async () => {
  const members = await membersOf(["participant", "participant", "participant"]);
  const [m1, m2] = members as [PeerMember, PeerMember, PeerMember];
  const one = await startNode(1, [m1, m2]);
  const three = await startNode(3, members);

  // Before 3 has called, 1 has nowhere to send to 3: dropped, not thrown.
  one.transport.sendNotification(3, vote(1, 1));
  assert.equal(one.transport.counters.notificationsDropped, 1);

  three.transport.sendNotification(1, vote(3, 1));
  await waitFor("1 to hear 3", () => (notificationsFrom(one, 3).length > 0 ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(notificationsFrom(one, 3), [vote(3, 1)]);

  const answer: Notification = { from: 1, state: "leading", vote: { leader: 1, zxid: 2 ** 32 * 3 + 9, peerEpoch: 3 }, round: 1 };
  one.transport.sendNotification(3, answer);
  await waitFor("3 to hear the answer", () => (notificationsFrom(three, 1).length > 0 ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(notificationsFrom(three, 1), [answer]);
  // Over 3's own stream: 1 has no link to a server it has no address for.
  assert.deepStrictEqual(one.transport.electionLinkPeers(), []);
  assert.equal(one.transport.counters.refusedCalls, 0);
  await Promise.all([one, three].map(stopNode));
});

test("a server added by updateMembers is dialled over this server's own link", async () => {
  const members = await membersOf(["participant", "participant", "participant"]);
  const [m1, m2] = members as [PeerMember, PeerMember, PeerMember];
  const one = await startNode(1, [m1, m2]);
  // 3 never calls 1, so whatever 3 hears from 1 came over a link 1 opened.
  const three = await startNode(3, members);
  one.transport.sendNotification(3, vote(1, 1));
  assert.equal(one.transport.counters.notificationsDropped, 1);

  one.transport.updateMembers(members.map(address));
  one.transport.sendNotification(3, vote(1, 2));
  await waitFor("3 to hear 1", () => (notificationsFrom(three, 1).length > 0 ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(notificationsFrom(three, 1), [vote(1, 2)]);
  assert.deepStrictEqual(one.transport.electionLinkPeers(), [3]);
  await Promise.all([one, three].map(stopNode));
});

test("a server removed by updateMembers is no longer dialled: its link goes, and sends to it are dropped", async () => {
  const members = await membersOf(["participant", "participant", "participant"]);
  const [m1, , m3] = members as [PeerMember, PeerMember, PeerMember];
  const one = await startNode(1, members);
  let two = await startNode(2, members);
  const three = await startNode(3, members);
  one.transport.sendNotification(2, vote(1, 1));
  await waitFor("2 to hear 1", () => (notificationsFrom(two, 1).length > 0 ? true : undefined), WAIT_MS);

  // 2 goes away: 1's link to it fails and keeps retrying the notification it may have lost.
  await stopNode(two);
  const failures = one.transport.counters.electionLinkFailures;
  one.transport.sendNotification(2, vote(1, 2));
  await waitFor("the link to 2 to fail", () => (one.transport.counters.electionLinkFailures > failures ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(one.transport.electionLinkPeers(), [2]);

  one.transport.updateMembers([m1, m3].map(address));
  assert.deepStrictEqual(one.transport.electionLinkPeers(), []);
  // Something new listening at 2's old election port would hear any call 1 still made there.
  two = await startNode(2, members);
  const dropped = one.transport.counters.notificationsDropped;
  one.transport.sendNotification(2, vote(1, 3));
  one.transport.sendNotification(3, vote(1, 3));
  assert.equal(one.transport.counters.notificationsDropped, dropped + 1);
  await waitFor("3 to hear 1", () => (notificationsFrom(three, 1).length > 0 ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(notificationsFrom(two, 1), []);
  assert.deepStrictEqual(one.transport.electionLinkPeers(), [3]);
  await Promise.all([one, two, three].map(stopNode));
});

test("a member whose address changed is dialled at the new one, and hears the last notification again", async () => {
  const members = await membersOf(["participant", "participant"]);
  const [m1, m2] = members as [PeerMember, PeerMember];
  const one = await startNode(1, members);
  const oldTwo = await startNode(2, members);
  one.transport.sendNotification(2, vote(1, 4));
  await waitFor("2 to hear 1", () => (notificationsFrom(oldTwo, 1).length > 0 ? true : undefined), WAIT_MS);
  await stopNode(oldTwo);

  const [quorumPort, electionPort] = await distinctFreePorts(2);
  const moved: PeerMember = { ...m2, quorumPort: quorumPort!, electionPort: electionPort! };
  const newTwo = await startNode(2, [m1, moved]);
  one.transport.updateMembers([m1, moved].map(address));
  await waitFor(
    "the moved server to hear 1's last notification, with no new send",
    () => (notificationsFrom(newTwo, 1).length > 0 ? true : undefined),
    WAIT_MS,
  );
  assert.deepStrictEqual(notificationsFrom(newTwo, 1), [vote(1, 4)]);
  await Promise.all([one, newTwo].map(stopNode));
});

test("a quorum stream from a server outside the member table reaches the leader, both ways", async () => {
  const members = await membersOf(["participant", "participant", "participant"]);
  const [m1, m2] = members as [PeerMember, PeerMember, PeerMember];
  const leader = await startNode(1, [m1, m2]);
  const joiner = await startNode(3, members);
  joiner.transport.followLeader(1);
  await waitFor("the stream to open on both sides", () => (opened(joiner, 1) === 1 && opened(leader, 3) === 1 ? true : undefined), WAIT_MS);
  const info: QuorumMessage = { type: "learnerInfo", sid: 3, role: "participant", acceptedEpoch: 3, lastZxid: 2 ** 32 * 3 + 9, protocolVersion: 1 };
  joiner.transport.sendToLeader(info);
  await waitFor("the leader to hear the joiner", () => (messagesFrom(leader, 3).length > 0 ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(messagesFrom(leader, 3), [info]);
  assert.deepStrictEqual(leader.transport.connectedLearners(), [3]);
  leader.transport.sendToLearner(3, { type: "leaderInfo", newEpoch: 4, protocolVersion: 1 });
  await waitFor("the joiner to hear the leader", () => (messagesFrom(joiner, 1).length > 0 ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(messagesFrom(joiner, 1), [{ type: "leaderInfo", newEpoch: 4, protocolVersion: 1 }]);
  await Promise.all([leader, joiner].map(stopNode));
});

test("servers outside the member table are accepted up to a bound; one's own id never", async () => {
  const members = await membersOf(["participant", "participant"]);
  const node = await startNode(1, members, { limits: { unlistedCallersMax: 2 } });
  const port = members[0]!.electionPort;
  const a = rawElectionCall(port, 50);
  const b = rawElectionCall(port, 51);
  assert.equal(await a.accepted, true);
  assert.equal(await b.accepted, true);
  const c = rawElectionCall(port, 52);
  assert.equal((await c.status).code, grpc.status.RESOURCE_EXHAUSTED);
  // One already held may call again (its new stream replaces the old).
  const again = rawElectionCall(port, 50);
  assert.equal(await again.accepted, true);
  const self = rawElectionCall(port, 1);
  assert.equal((await self.status).code, grpc.status.PERMISSION_DENIED);
  // A member is not counted against the bound.
  const member = rawElectionCall(port, 2);
  assert.equal(await member.accepted, true);

  // Once one of them hangs up, there is room again.
  b.call.end();
  const calls = [a, b, c, again, self, member];
  const retry = async (): Promise<boolean | undefined> => {
    const d = rawElectionCall(port, 52);
    calls.push(d);
    return (await d.accepted) ? true : undefined;
  };
  await waitFor("room for another server outside the member table", retry, WAIT_MS);
  assert.ok(node.transport.counters.refusedCalls >= 2);
  for (const call of calls) {
    call.call.cancel();
    call.client.close();
  }
  await stopNode(node);
});

test("with mutual TLS, a server outside the member table is accepted on its verified certificate, without verifyCaller", async () => {
  const pki = await makeTestPki();
  try {
    const cert = await pki.trusted.issue({ subject: "/CN=corral peer", name: "peer" });
    const asked: number[] = [];
    const security: PeerTransportSecurity = {
      serverCredentials: () => grpc.ServerCredentials.createSsl(pki.trusted.ca, [{ private_key: cert.key, cert_chain: cert.cert }], true),
      channelCredentials: () => grpc.credentials.createSsl(pki.trusted.ca, cert.key, cert.cert),
      verifyCaller: (member) => {
        asked.push(member.id);
        return undefined;
      },
    };
    const members = await membersOf(["participant", "participant", "participant"]);
    const [m1, m2] = members as [PeerMember, PeerMember, PeerMember];
    const one = await startNode(1, [m1, m2], { security });
    const three = await startNode(3, members, { security });
    three.transport.sendNotification(1, vote(3, 1));
    await waitFor("1 to hear 3 over TLS", () => (notificationsFrom(one, 3).length > 0 ? true : undefined), WAIT_MS);
    one.transport.sendNotification(3, vote(1, 1));
    await waitFor("3 to hear 1's answer", () => (notificationsFrom(three, 1).length > 0 ? true : undefined), WAIT_MS);
    assert.deepStrictEqual(asked, []);
    await Promise.all([one, three].map(stopNode));
  } finally {
    await pki.remove();
  }
});
