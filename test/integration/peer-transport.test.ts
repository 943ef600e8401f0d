/**
 * PeerTransport over real gRPC on 127.0.0.1: several instances in one process, each with its own
 * ports, connections and handlers. No timing assertions; every wait is bounded.
 */
import type { MemberRole } from "../../src/common/membership.js";
import assert from "node:assert/strict";
import { after, test } from "node:test";
import * as grpc from "@grpc/grpc-js";

import type { QuorumMessage } from "../../src/consensus/messages.js";
import type { Notification } from "../../src/election/types.js";
import { encodeQuorumBatch } from "../../src/server/peer/peer-codec.js";
import type { PeerLimits } from "../../src/server/peer/peer-limits.js";
import type { PeerMember } from "../../src/server/peer/peer-transport.js";
import { electionServiceDefinition, quorumServiceDefinition } from "../../src/server/peer/peer-wire.js";
import { membersOf, startNode, stopAllNodes, stopNode, type Node } from "../helpers/peer-nodes.js";
import { waitFor } from "../helpers/wait.js";

const WAIT_MS = 15_000;

after(stopAllNodes);

/** Starts every member; if another process took one of the ports meanwhile, starts over on fresh ones. */
async function startCluster(roles: MemberRole[], limits?: Partial<PeerLimits>): Promise<{ members: PeerMember[]; nodes: Node[] }> {
  for (let attempt = 1; ; attempt++) {
    const members = await membersOf(roles);
    const started = await Promise.allSettled(members.map((m) => startNode(m.id, members, limits === undefined ? {} : { limits })));
    const nodes = started.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    if (nodes.length === members.length) return { members, nodes };
    await Promise.all(nodes.map(stopNode));
    const failure = started.find((r) => r.status === "rejected") as PromiseRejectedResult;
    if (attempt === 5 || !/EADDRINUSE/.test(String(failure.reason))) throw failure.reason;
  }
}

const notificationsOf = (node: Node): Notification[] => node.events.flatMap((e) => (e.kind === "notification" ? [e.n] : []));
const messagesFrom = (node: Node, from: number): QuorumMessage[] => node.events.flatMap((e) => (e.kind === "message" && e.from === from ? [e.m] : []));
const streamEvents = (node: Node, peer: number): string[] =>
  node.events.flatMap((e) => ((e.kind === "opened" || e.kind === "closed") && e.peer === peer ? [e.kind] : []));
const count = (node: Node, kind: "opened" | "closed", peer: number): number => streamEvents(node, peer).filter((k) => k === kind).length;

/** Stream events for one peer are a sequence of streams, each: at most one opened, then one closed. */
function assertWellFormedStreamEvents(node: Node, peer: number): void {
  const kinds = streamEvents(node, peer);
  for (let i = 1; i < kinds.length; i++) {
    assert.ok(!(kinds[i] === "opened" && kinds[i - 1] === "opened"), `server ${node.id}: two opened for ${peer} without a close: ${kinds.join(",")}`);
  }
}

function vote(from: number, round: number): Notification {
  return { from, state: "looking", vote: { leader: from, zxid: 2 ** 32 * 3 + from, peerEpoch: 3 }, round };
}

function record(i: number, bytes = 100): Uint8Array {
  const r = new Uint8Array(bytes);
  for (let j = 0; j < bytes; j++) r[j] = (i + j) & 0xff;
  return r;
}

/** A follows B, and both sides have seen the stream open. */
async function follow(learner: Node, leader: Node): Promise<void> {
  const learnerOpened = count(learner, "opened", leader.id);
  const leaderOpened = count(leader, "opened", learner.id);
  learner.transport.followLeader(leader.id);
  await waitFor(
    "the quorum stream to open on both sides",
    () => (count(learner, "opened", leader.id) > learnerOpened && count(leader, "opened", learner.id) > leaderOpened ? true : undefined),
    WAIT_MS,
  );
}

/** A raw gRPC call to a peer service, as some other program would make it. */
function rawCall(port: number, service: "quorum" | "election", metadata: Record<string, string>) {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  for (const [key, value] of Object.entries(metadata)) md.set(key, value);
  const path = service === "quorum" ? quorumServiceDefinition()["Follow"]!.path : electionServiceDefinition()["Notify"]!.path;
  const call = client.makeBidiStreamRequest(
    path,
    (b: Buffer) => b,
    (b: Buffer) => b,
    md,
  );
  call.on("error", () => {});
  const status = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
  return { client, call, status };
}

test("notifications reach every voter tagged with the sender's id, and one's own come back", async () => {
  const { nodes } = await startCluster(["participant", "participant", "participant"]);
  for (const from of nodes) for (const to of nodes) from.transport.sendNotification(to.id, vote(from.id, 1));
  for (const node of nodes) {
    await waitFor(`server ${node.id} to hear from everyone`, () => (notificationsOf(node).length >= 3 ? true : undefined), WAIT_MS);
    const heard = notificationsOf(node).sort((a, b) => a.from - b.from);
    assert.deepStrictEqual(
      heard,
      nodes.map((n) => vote(n.id, 1)),
    );
  }
  // Several notifications in one turn arrive in order.
  for (let round = 2; round <= 20; round++) nodes[0]!.transport.sendNotification(2, vote(1, round));
  await waitFor("rounds 2..20 at server 2", () => (notificationsOf(nodes[1]!).length >= 3 + 19 ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(
    notificationsOf(nodes[1]!)
      .filter((n) => n.from === 1)
      .map((n) => n.round),
    Array.from({ length: 20 }, (_, i) => i + 1),
  );
  await Promise.all(nodes.map(stopNode));
});

test("the latest notification for a voter that is down is delivered once it is back, older ones dropped", async () => {
  const { members, nodes } = await startCluster(["participant", "participant", "participant"]);
  const [one, two, three] = nodes as [Node, Node, Node];
  await stopNode(one);
  for (let round = 1; round <= 3; round++) two.transport.sendNotification(1, vote(2, round));
  await waitFor("the attempt to fail", () => (two.transport.counters.notificationsDropped >= 2 ? true : undefined), WAIT_MS);
  const restarted = await startNode(1, members);
  await waitFor("the kept notification to arrive without another send", () => (notificationsOf(restarted).length > 0 ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(notificationsOf(restarted)[0], vote(2, 3));
  assert.ok(notificationsOf(restarted).every((n) => n.round === 3));
  await Promise.all([restarted, two, three].map(stopNode));
});

test("a voter that comes back and calls is answered at once, not a back-off later", async () => {
  // A back-off far longer than the wait below: only the call of the returning voter can end it.
  const slow = { reconnectBackoffMsMin: 60_000, reconnectBackoffMsMax: 60_000 };
  const { members, nodes } = await startCluster(["participant", "participant", "participant"], slow);
  const [one, two, three] = nodes as [Node, Node, Node];
  await stopNode(one);
  two.transport.sendNotification(1, vote(2, 7));
  await waitFor("the attempt toward the stopped voter to fail", () => (two.transport.counters.electionLinkFailures >= 1 ? true : undefined), WAIT_MS);
  const restarted = await startNode(1, members, { limits: slow });
  restarted.transport.sendNotification(2, vote(1, 1));
  await waitFor(
    "the kept notification to reach the voter that called",
    () => (notificationsOf(restarted).some((n) => n.from === 2) ? true : undefined),
    WAIT_MS,
  );
  assert.deepStrictEqual(
    notificationsOf(restarted).filter((n) => n.from === 2),
    [vote(2, 7)],
  );
  await Promise.all([restarted, two, three].map(stopNode));
});

test("an observer's notifications reach voters and their answers come back on its own stream", async () => {
  const { nodes } = await startCluster(["participant", "participant", "observer"]);
  const [voter, , observer] = nodes as [Node, Node, Node];
  // Said to the observer before it has a stream to this voter: kept until it has one.
  const early: Notification = { from: 1, state: "looking", vote: { leader: 1, zxid: 2 ** 32 + 5, peerEpoch: 1 }, round: 3 };
  voter.transport.sendNotification(3, early);
  const observing: Notification = { from: 3, state: "looking", vote: { leader: 1, zxid: 0, peerEpoch: 0 }, round: 1 };
  observer.transport.sendNotification(1, observing);
  await waitFor("the voter to hear the observer", () => (notificationsOf(voter).length > 0 ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(notificationsOf(voter), [observing]);
  const answer: Notification = { from: 1, state: "leading", vote: { leader: 1, zxid: 2 ** 32 + 5, peerEpoch: 1 }, round: 4 };
  voter.transport.sendNotification(3, answer);
  await waitFor("the observer to hear both", () => (notificationsOf(observer).length >= 2 ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(notificationsOf(observer), [early, answer]);
  await Promise.all(nodes.map(stopNode));
});

test("a quorum stream carries messages in order both ways", async () => {
  const { nodes } = await startCluster(["participant", "participant", "participant"]);
  const [leader, learner] = nodes as [Node, Node, Node];
  await follow(learner, leader);
  const up: QuorumMessage[] = [
    { type: "learnerInfo", sid: 2, role: "participant", acceptedEpoch: 3, lastZxid: 2 ** 32 * 3 + 9, protocolVersion: 1 },
    { type: "ackEpoch", currentEpoch: 3, lastZxid: 2 ** 32 * 3 + 9 },
    { type: "request", sessionId: -(2n ** 60n) + 3n, cxid: 17, request: record(1, 40) },
    { type: "ping", touches: [{ sessionId: 72057594037927937n, timeoutMs: 4000 }] },
    { type: "sync", syncId: 5 },
    { type: "ack", zxid: 2 ** 32 * 4 + 1 },
  ];
  const down: QuorumMessage[] = [
    { type: "leaderInfo", newEpoch: 4, protocolVersion: 1 },
    { type: "diff", lastZxid: 2 ** 32 * 3 + 9 },
    { type: "syncTxns", txns: [{ zxid: 2 ** 32 * 3 + 10, record: record(2) }], committed: true },
    { type: "newLeader", zxid: 2 ** 32 * 4 },
    { type: "upToDate" },
    { type: "proposal", zxid: 2 ** 32 * 4 + 1, record: record(3) },
    { type: "commit", zxid: 2 ** 32 * 4 + 1 },
    { type: "syncDone", syncId: 5, zxid: 2 ** 32 * 4 + 1 },
  ];
  // Interleave sends across turns and within a turn.
  for (const m of up.slice(0, 3)) learner.transport.sendToLeader(m);
  for (const m of down.slice(0, 4)) leader.transport.sendToLearner(2, m);
  await new Promise((resolve) => setImmediate(resolve));
  for (const m of up.slice(3)) learner.transport.sendToLeader(m);
  for (const m of down.slice(4)) leader.transport.sendToLearner(2, m);
  await waitFor(
    "both directions delivered",
    () => (messagesFrom(leader, 2).length >= up.length && messagesFrom(learner, 1).length >= down.length ? true : undefined),
    WAIT_MS,
  );
  assert.deepStrictEqual(messagesFrom(leader, 2), up);
  assert.deepStrictEqual(messagesFrom(learner, 1), down);
  assert.deepStrictEqual(leader.transport.connectedLearners(), [2]);

  // Stopping reports the open stream closed, once, on each side.
  await stopNode(learner);
  await waitFor("the leader to see the learner go", () => (count(leader, "closed", 2) === 1 ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(streamEvents(learner, 1), ["opened", "closed"]);
  assert.deepStrictEqual(streamEvents(leader, 2), ["opened", "closed"]);
  await Promise.all([leader, nodes[2]!].map(stopNode));
});

test("10,000 proposals sent in one burst arrive in order, in far fewer frames than messages", async () => {
  const { nodes } = await startCluster(["participant", "participant", "participant"]);
  const [leader, learner] = nodes as [Node, Node, Node];
  await follow(learner, leader);
  const burst = 10_000;
  const framesBefore = learner.transport.counters.quorumFramesReceived;
  const sentFramesBefore = leader.transport.counters.quorumFramesSent;
  const proposals: QuorumMessage[] = [];
  for (let i = 1; i <= burst; i++) proposals.push({ type: "proposal", zxid: 2 ** 32 * 5 + i, record: record(i) });
  for (const p of proposals) leader.transport.sendToLearner(2, p);
  await waitFor("the burst to arrive", () => (messagesFrom(learner, 1).length >= burst ? true : undefined), WAIT_MS);
  const received = messagesFrom(learner, 1);
  assert.equal(received.length, burst);
  for (let i = 0; i < burst; i++) {
    const m = received[i]!;
    assert.ok(m.type === "proposal" && m.zxid === 2 ** 32 * 5 + i + 1, `message ${i} is proposal ${i + 1}`);
    assert.deepStrictEqual(Buffer.from(m.record), Buffer.from(record(i + 1)));
  }
  const frames = learner.transport.counters.quorumFramesReceived - framesBefore;
  assert.equal(leader.transport.counters.quorumFramesSent - sentFramesBefore, frames);
  assert.ok(frames * 100 <= burst, `${burst} proposals took ${frames} frames`);

  // And the acks coming back in one burst, too.
  const ackFramesBefore = leader.transport.counters.quorumFramesReceived;
  for (let i = 1; i <= burst; i++) learner.transport.sendToLeader({ type: "ack", zxid: 2 ** 32 * 5 + i });
  await waitFor("the acks to arrive", () => (messagesFrom(leader, 2).length >= burst ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(
    messagesFrom(leader, 2).map((m) => (m.type === "ack" ? m.zxid : -1)),
    Array.from({ length: burst }, (_, i) => 2 ** 32 * 5 + i + 1),
  );
  assert.ok((leader.transport.counters.quorumFramesReceived - ackFramesBefore) * 100 <= burst);
  await Promise.all(nodes.map(stopNode));
});

test("a 16 MiB SNAP crosses the quorum stream intact, in order with what follows it", async () => {
  const { nodes } = await startCluster(["participant", "participant", "participant"]);
  const [leader, learner] = nodes as [Node, Node, Node];
  await follow(learner, leader);
  const snapshot = new Uint8Array(16 * 1024 * 1024);
  for (let i = 0; i < snapshot.length; i += 4096) snapshot[i] = (i / 4096) & 0xff;
  snapshot[snapshot.length - 1] = 0xee;
  const sent: QuorumMessage[] = [
    { type: "leaderInfo", newEpoch: 9, protocolVersion: 1 },
    { type: "snap", zxid: 2 ** 32 * 8 + 77, snapshot },
    { type: "newLeader", zxid: 2 ** 32 * 9 },
    { type: "upToDate" },
  ];
  for (const m of sent) leader.transport.sendToLearner(2, m);
  await waitFor("the snapshot and what follows", () => (messagesFrom(learner, 1).length >= sent.length ? true : undefined), WAIT_MS);
  const received = messagesFrom(learner, 1);
  assert.deepStrictEqual(
    received.map((m) => m.type),
    ["leaderInfo", "snap", "newLeader", "upToDate"],
  );
  const snap = received[1]!;
  assert.ok(snap.type === "snap" && snap.zxid === 2 ** 32 * 8 + 77);
  assert.ok(Buffer.from(snap.snapshot.buffer, snap.snapshot.byteOffset, snap.snapshot.byteLength).equals(snapshot), "snapshot bytes intact");
  assert.deepStrictEqual(streamEvents(learner, 1), ["opened"]);
  await Promise.all(nodes.map(stopNode));
});

test("closeLearner ends the stream on both sides once, and a learner still following reconnects", async () => {
  const { nodes } = await startCluster(["participant", "participant", "participant"]);
  const [leader, learner] = nodes as [Node, Node, Node];
  await follow(learner, leader);
  leader.transport.closeLearner(2);
  leader.transport.sendToLearner(2, { type: "upToDate" });
  assert.equal(leader.transport.counters.quorumMessagesDropped, 1);
  await waitFor("the learner to reconnect", () => (count(learner, "opened", 1) === 2 && count(leader, "opened", 2) === 2 ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(streamEvents(leader, 2), ["opened", "closed", "opened"]);
  assert.deepStrictEqual(streamEvents(learner, 1), ["opened", "closed", "opened"]);
  assert.deepStrictEqual(messagesFrom(learner, 1), []);
  await Promise.all(nodes.map(stopNode));
});

test("a restarted leader is reconnected automatically; closed and opened fire once per stream", async () => {
  const { members, nodes } = await startCluster(["participant", "participant", "participant"]);
  const [, learner, third] = nodes as [Node, Node, Node];
  let leader = nodes[0]!; // replaced by the restarted server below
  await follow(learner, leader);
  learner.transport.sendNotification(1, vote(2, 1));
  await waitFor("an election stream to server 1", () => (notificationsOf(leader).length > 0 ? true : undefined), WAIT_MS);

  await stopNode(leader);
  await waitFor("the learner to see its leader go", () => (count(learner, "closed", 1) >= 1 ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(streamEvents(leader, 2), ["opened", "closed"]);

  leader = await startNode(1, members);
  await waitFor(
    "the learner to reconnect by itself",
    () => (count(learner, "opened", 1) === 2 && count(leader, "opened", 2) === 1 ? true : undefined),
    WAIT_MS,
  );
  assertWellFormedStreamEvents(learner, 1);
  assert.deepStrictEqual(streamEvents(learner, 1).at(-1), "opened");

  learner.transport.sendToLeader({ type: "ack", zxid: 7 });
  leader.transport.sendToLearner(2, { type: "commit", zxid: 7 });
  await waitFor(
    "messages on the new stream",
    () => (messagesFrom(leader, 2).length === 1 && messagesFrom(learner, 1).length === 1 ? true : undefined),
    WAIT_MS,
  );
  assert.deepStrictEqual(messagesFrom(learner, 1), [{ type: "commit", zxid: 7 }]);

  // The election link to the restarted server recovers too: the last notification sent on the
  // stream that broke is sent again once the server is back, with no new send.
  await waitFor("the last notification to be re-sent to the restarted server", () => (notificationsOf(leader).length > 0 ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(notificationsOf(leader)[0], vote(2, 1));
  learner.transport.sendNotification(1, vote(2, 2));
  await waitFor("a new notification on the new stream", () => (notificationsOf(leader).some((n) => n.round === 2) ? true : undefined), WAIT_MS);
  await Promise.all([leader, learner, third].map(stopNode));
});

test("a restarted learner's new stream is accepted; the leader sees the old one close once", async () => {
  const { members, nodes } = await startCluster(["participant", "participant", "participant"]);
  const [leader, , third] = nodes as [Node, Node, Node];
  let learner = nodes[1]!; // replaced by the restarted server below
  await follow(learner, leader);
  await stopNode(learner);
  await waitFor("the leader to see the learner go", () => (count(leader, "closed", 2) === 1 ? true : undefined), WAIT_MS);
  learner = await startNode(2, members);
  await follow(learner, leader);
  assert.deepStrictEqual(streamEvents(leader, 2), ["opened", "closed", "opened"]);
  leader.transport.sendToLearner(2, { type: "upToDate" });
  await waitFor("a message on the new stream", () => (messagesFrom(learner, 1).length === 1 ? true : undefined), WAIT_MS);
  await Promise.all([leader, learner, third].map(stopNode));
});

test("following a leader that is not up yet connects once it starts, and follow switches leaders", async () => {
  const members = await membersOf(["participant", "participant", "participant"]);
  const learner = await startNode(2, members);
  learner.transport.followLeader(1);
  await waitFor("a failed attempt to be reported", () => (count(learner, "closed", 1) >= 1 ? true : undefined), WAIT_MS);
  assert.equal(count(learner, "opened", 1), 0);
  const leader = await startNode(1, members);
  await waitFor("the stream to open once the leader is up", () => (count(learner, "opened", 1) === 1 ? true : undefined), WAIT_MS);

  // Switching to another leader closes the first stream (once) and opens the next.
  const other = await startNode(3, members);
  learner.transport.followLeader(3);
  await waitFor("the switch", () => (count(learner, "opened", 3) === 1 && count(leader, "closed", 2) === 1 ? true : undefined), WAIT_MS);
  assert.deepStrictEqual(streamEvents(learner, 1).at(-2), "opened");
  assert.deepStrictEqual(streamEvents(learner, 1).at(-1), "closed");
  assert.equal(learner.transport.followedLeader, 3);
  learner.transport.sendToLeader({ type: "ack", zxid: 1 });
  await waitFor("a message to the new leader", () => (messagesFrom(other, 2).length === 1 ? true : undefined), WAIT_MS);
  assert.equal(messagesFrom(leader, 2).length, 0);

  learner.transport.stopFollowing();
  await waitFor("stopFollowing to close the stream", () => (count(learner, "closed", 3) === 1 && count(other, "closed", 2) === 1 ? true : undefined), WAIT_MS);
  assertWellFormedStreamEvents(learner, 1);
  await Promise.all([learner, leader, other].map(stopNode));
});

// A server outside the member table (one about to be added) is heard: test/unit/peer-transport.test.ts.
test("calls from unnamed servers, or naming this server, are refused with PERMISSION_DENIED", async () => {
  const members = await membersOf(["participant", "participant", "participant"]);
  const node = await startNode(1, members);
  const me = members[0]!;
  const attempts: [number, "quorum" | "election", Record<string, string>][] = [
    [me.quorumPort, "quorum", { "corral-peer-protocol": "1" }],
    [me.electionPort, "election", { "corral-server-id": "two", "corral-peer-protocol": "1" }],
    [me.quorumPort, "quorum", { "corral-server-id": "1", "corral-peer-protocol": "1" }],
  ];
  for (const [port, service, metadata] of attempts) {
    const { client, call, status } = rawCall(port, service, metadata);
    call.write(encodeQuorumBatch([{ type: "ack", zxid: 1 }]));
    assert.equal((await status).code, grpc.status.PERMISSION_DENIED, JSON.stringify(metadata));
    client.close();
  }
  const wrongVersion = rawCall(me.quorumPort, "quorum", { "corral-server-id": "2", "corral-peer-protocol": "9" });
  assert.equal((await wrongVersion.status).code, grpc.status.FAILED_PRECONDITION);
  wrongVersion.client.close();
  assert.equal(node.transport.counters.refusedCalls, attempts.length + 1);
  assert.deepStrictEqual(node.events, []);
  await stopNode(node);
});

test("a garbage frame closes only the stream that carried it", async () => {
  const { members, nodes } = await startCluster(["participant", "participant", "participant"]);
  const [leader, learner] = nodes as [Node, Node, Node];
  await follow(learner, leader);

  // Server 3's id, but someone else's bytes: a quorum frame that is not a QuorumBatch.
  const rogue = rawCall(members[0]!.quorumPort, "quorum", { "corral-server-id": "3", "corral-peer-protocol": "1" });
  rogue.call.write(Buffer.from([0x0a, 0x05, 0xff, 0xff]));
  assert.equal((await rogue.status).code, grpc.status.INVALID_ARGUMENT);
  rogue.client.close();
  await waitFor("the rogue stream to be reported closed", () => (count(leader, "closed", 3) === 1 ? true : undefined), WAIT_MS);
  assert.equal(leader.transport.counters.malformedFrames, 1);

  // The same on the election service.
  const rogueVoter = rawCall(members[0]!.electionPort, "election", { "corral-server-id": "3", "corral-peer-protocol": "1" });
  rogueVoter.call.write(Buffer.from([0x0a, 0x02, 0x08, 0x09]));
  assert.equal((await rogueVoter.status).code, grpc.status.INVALID_ARGUMENT);
  rogueVoter.client.close();
  assert.equal(leader.transport.counters.malformedFrames, 2);

  // The real learner's stream, and election traffic, are untouched.
  learner.transport.sendToLeader({ type: "ack", zxid: 11 });
  leader.transport.sendToLearner(2, { type: "commit", zxid: 11 });
  learner.transport.sendNotification(1, vote(2, 9));
  await waitFor(
    "traffic on the healthy streams",
    () => (messagesFrom(leader, 2).length === 1 && messagesFrom(learner, 1).length === 1 && notificationsOf(leader).length === 1 ? true : undefined),
    WAIT_MS,
  );
  assert.deepStrictEqual(streamEvents(leader, 2), ["opened"]);
  assert.deepStrictEqual(streamEvents(learner, 1), ["opened"]);
  await Promise.all(nodes.map(stopNode));
});

test("a learner that stops reading is cut off once its queue passes the bound", async () => {
  const members = await membersOf(["participant", "participant", "participant"]);
  const leader = await startNode(1, members, { limits: { quorumBatchBytesMax: 4096, quorumQueueBytesMax: 256 * 1024, quorumQueueMessagesMax: 5_000 } });
  // A learner (server 3's id) that opens its stream and then never reads from it.
  const stalled = rawCall(members[0]!.quorumPort, "quorum", { "corral-server-id": "3", "corral-peer-protocol": "1" });
  await waitFor("the stalled learner's stream to open", () => (count(leader, "opened", 3) === 1 ? true : undefined), WAIT_MS);
  for (let round = 0; round < 200 && count(leader, "closed", 3) === 0; round++) {
    for (let i = 0; i < 1000; i++) leader.transport.sendToLearner(3, { type: "proposal", zxid: round * 1000 + i + 1, record: record(i, 1000) });
    await new Promise((resolve) => setImmediate(resolve));
  }
  await waitFor("the stream to be cut", () => (count(leader, "closed", 3) === 1 ? true : undefined), WAIT_MS);
  assert.equal(leader.transport.counters.quorumStreamsOverflowed, 1);
  assert.deepStrictEqual(leader.transport.connectedLearners(), []);
  stalled.call.cancel();
  stalled.client.close();
  await stopNode(leader);
});

test("stop() ends every stream and nothing fires after it resolves", async () => {
  const { nodes } = await startCluster(["participant", "participant", "observer"]);
  const [leader, follower, observer] = nodes as [Node, Node, Node];
  await follow(follower, leader);
  await follow(observer, leader);
  observer.transport.sendNotification(1, vote(3, 1));
  await waitFor("an observer election stream", () => (notificationsOf(leader).length === 1 ? true : undefined), WAIT_MS);
  await stopNode(leader);
  assert.deepStrictEqual(streamEvents(leader, 2), ["opened", "closed"]);
  assert.deepStrictEqual(streamEvents(leader, 3), ["opened", "closed"]);
  const seen = leader.events.length;
  leader.transport.sendToLearner(2, { type: "upToDate" });
  leader.transport.sendNotification(2, vote(1, 1));
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(leader.events.length, seen);
  await Promise.all([follower, observer].map(stopNode));
});
