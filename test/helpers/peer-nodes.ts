/** What the PeerTransport tests share: the events a node's handlers record, and member tables on free ports. */
import type { MemberRole } from "../../src/common/membership.js";
import { createServer } from "node:net";
import * as grpc from "@grpc/grpc-js";
import type { QuorumMessage } from "../../src/consensus/messages.js";
import type { Notification } from "../../src/election/types.js";
import { pino } from "pino";
import type { PeerLimits } from "../../src/server/peer/peer-limits.js";
import { PeerTransport, type PeerMember, type PeerTransportHandlers, type PeerTransportSecurity } from "../../src/server/peer/peer-transport.js";
import type { ClientAddressDirectory } from "../../src/server/client-address-directory.js";
import { CLIENT_ADDRESS_METADATA, electionServiceDefinition } from "../../src/server/peer/peer-wire.js";

export type Event =
  | { kind: "opened"; peer: number }
  | { kind: "closed"; peer: number }
  | { kind: "message"; from: number; m: QuorumMessage }
  | { kind: "notification"; n: Notification };

export interface Node {
  id: number;
  transport: PeerTransport;
  events: Event[];
}

/**
 * Free ports below Linux's ephemeral range (32768+), so that no outgoing connection — these tests
 * make many — can take one between the check and the bind, as it can with port-0 picks.
 */
export async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!ports.has(port) && (await portIsFree(port))) ports.add(port);
  }
  return [...ports];
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** Members 1..n with these roles on 127.0.0.1, each on two free ports. */
export async function membersOf(roles: MemberRole[]): Promise<PeerMember[]> {
  const ports = await distinctFreePorts(roles.length * 2);
  return roles.map((role, i) => ({ id: i + 1, host: "127.0.0.1", quorumPort: ports[2 * i]!, electionPort: ports[2 * i + 1]!, role }));
}

/** Handlers that record what a node hears, in order. */
export function recordingHandlers(events: Event[]): PeerTransportHandlers {
  return {
    notification: (n) => events.push({ kind: "notification", n }),
    quorumMessage: (from, m) => events.push({ kind: "message", from, m }),
    quorumStreamOpened: (peer) => events.push({ kind: "opened", peer }),
    quorumStreamClosed: (peer) => events.push({ kind: "closed", peer }),
  };
}

const logger = pino({ level: process.env["PEER_TEST_LOG"] ?? "silent" });
/** Every transport started and not stopped yet: a test file's after() stops them (stopAllNodes). */
const running = new Set<PeerTransport>();

/** Server `id` with this member table, its handlers recording what it hears. */
export async function startNode(
  id: number,
  members: PeerMember[],
  options: { limits?: Partial<PeerLimits>; security?: PeerTransportSecurity; clientAddresses?: ClientAddressDirectory } = {},
): Promise<Node> {
  const events: Event[] = [];
  const transport = new PeerTransport({ myId: id, members, logger, ...options, handlers: recordingHandlers(events) });
  await transport.start();
  running.add(transport);
  return { id, transport, events };
}

export async function stopNode(node: Node): Promise<void> {
  await node.transport.stop();
  running.delete(node.transport);
}

export async function stopAllNodes(): Promise<void> {
  await Promise.all([...running].map((t) => t.stop()));
  running.clear();
}

/**
 * A raw election call to `port` naming itself `id` (with these client-address values, if any):
 * `headers` resolves with the callee's response headers, or undefined if the call ended without
 * them; `accepted` whether the callee answered with its own id.
 */
export function rawElectionCall(port: number, id: number, clientAddresses: readonly string[] = []) {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  md.set("corral-server-id", String(id));
  md.set("corral-peer-protocol", "1");
  for (const value of clientAddresses) md.add(CLIENT_ADDRESS_METADATA, value);
  const call = client.makeBidiStreamRequest(
    electionServiceDefinition()["Notify"]!.path,
    (b: Buffer) => b,
    (b: Buffer) => b,
    md,
  );
  call.on("error", () => {});
  call.on("data", () => {});
  const status = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
  const headers = new Promise<grpc.Metadata | undefined>((resolve) => {
    call.on("metadata", resolve);
    void status.then(() => resolve(undefined));
  });
  const accepted = headers.then((metadata) => metadata !== undefined && metadata.get("corral-server-id").length === 1);
  return { client, call, status, headers, accepted };
}
