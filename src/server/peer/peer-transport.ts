/**
 * PeerTransport: the gRPC links between corral servers (docs/architecture.md §2–§4, §7;
 * proto/peer.proto), the production `PeerPort` of the replica (src/replica/ports.ts). It is a
 * small front over the parts that do the work, each in its own module:
 *
 * - election-links.ts: FastLeaderElection's notifications, one long-lived stream per voter with
 *   back-off, only the latest notification kept for a server that cannot be reached;
 * - quorum-links.ts (and quorum-stream.ts): Zab's ordered streams, a learner's to its leader and
 *   the leader's from each learner, batched under load and bounded when a peer falls behind;
 * - member-table.ts: who the members are, and what a reconfiguration changes;
 * - peer-calls.ts: identity and TLS on every call, both ways, and the calls of servers outside the
 *   member list;
 * - handler-dispatch.ts: how what arrives reaches the host's handlers, and when;
 * - peer-codec.ts (and codec/): the frames' bytes.
 *
 * What is left here is what touches several of them: the two gRPC servers and the lifecycle,
 * which incoming call goes to which links once admitted, and what a membership change means for
 * each kind of link.
 *
 * Membership changes (dynamic reconfiguration). `updateMembers` replaces the member table when a
 * configuration comes into force. A server that left is no longer dialled: its election link,
 * whatever waits for it and its clients are dropped at once, so no back-off timer keeps calling a
 * server that may be gone for good; one that joined is dialled on the first send, like any member;
 * one whose address or role changed gets a new link, carrying the last notification sent to it
 * (ZooKeeper re-sends its lastMessageSent on every new connection). Streams other servers opened
 * to this one are left alone (one from a server that left goes on as one from outside the member
 * list), and so is the quorum stream to a leader that left: the core, not the transport, decides
 * to stop following it.
 */
import * as grpc from "@grpc/grpc-js";
import type { Logger } from "pino";
import { assert } from "../../common/assert.js";
import type { MemberAddress } from "../../common/membership.js";
import type { QuorumMessage } from "../../consensus/messages.js";
import type { Notification } from "../../election/types.js";
import type { ClientAddressDirectory } from "../client-address-directory.js";
import { ElectionLinks } from "./election-links.js";
import { HandlerDispatch, type PeerTransportHandlers } from "./handler-dispatch.js";
import { formatAddress, MemberTable, type PeerMember } from "./member-table.js";
import { FlushScheduler } from "./microtasks.js";
import { PeerCalls, type PeerService, type PeerTransportSecurity, type ServerCall } from "./peer-calls.js";
import { newPeerTransportCounters, type PeerLinkContext, type PeerTransportCounters } from "./peer-context.js";
import { peerLimits, type PeerLimits } from "./peer-limits.js";
import { electionServiceDefinition, quorumServiceDefinition } from "./peer-wire.js";
import { QuorumLinks } from "./quorum-links.js";

export type { PeerMember } from "./member-table.js";
export type { PeerTransportHandlers } from "./handler-dispatch.js";
export type { PeerTransportSecurity } from "./peer-calls.js";
export type { PeerTransportCounters } from "./peer-context.js";

export interface PeerTransportOptions {
  myId: number;
  members: readonly PeerMember[];
  logger: Logger;
  handlers: PeerTransportHandlers;
  limits?: Partial<PeerLimits>;
  security?: PeerTransportSecurity;
  /**
   * Where each server's clients connect: this server's own address (`ownAddress`, read at every
   * call, so it may be set after start) goes out with every call and answer, and what peers send
   * is recorded in it. Absent: nothing is sent or recorded.
   */
  clientAddresses?: ClientAddressDirectory;
}

export class PeerTransport {
  readonly myId: number;
  readonly limits: PeerLimits;
  readonly counters: PeerTransportCounters = newPeerTransportCounters();

  private readonly logger: Logger;
  private readonly members: MemberTable;
  private readonly calls: PeerCalls;
  private readonly dispatch: HandlerDispatch;
  private readonly election: ElectionLinks;
  private readonly quorum: QuorumLinks;

  private phase: "new" | "starting" | "running" | "stopping" | "stopped" = "new";
  private stopping: Promise<void> | undefined;
  private electionServer: grpc.Server | undefined;
  private quorumServer: grpc.Server | undefined;

  constructor(options: PeerTransportOptions) {
    this.myId = options.myId;
    this.limits = peerLimits(options.limits);
    this.logger = options.logger.child({ component: "peer-transport", serverId: options.myId });
    this.members = new MemberTable(options.myId, options.members, this.logger);
    this.calls = new PeerCalls({
      myId: options.myId,
      members: this.members,
      limits: this.limits,
      counters: this.counters,
      logger: this.logger,
      security: options.security,
      clientAddresses: options.clientAddresses,
    });
    this.dispatch = new HandlerDispatch(options.handlers);
    const context: PeerLinkContext = {
      myId: this.myId,
      limits: this.limits,
      counters: this.counters,
      logger: this.logger,
      members: this.members,
      calls: this.calls,
      flusher: new FlushScheduler(),
      dispatch: this.dispatch,
      running: () => this.phase === "running",
    };
    this.election = new ElectionLinks(context);
    this.quorum = new QuorumLinks(context);
  }

  // ---------------------------------------------------------------------------------------------
  // Lifecycle.

  /** Binds the quorum service on this member's quorum port, and the election service on its election port if it votes. */
  async start(): Promise<void> {
    assert(this.phase === "new", `start() in phase ${this.phase}`);
    this.phase = "starting";
    const me = this.members.me;
    try {
      this.quorumServer = new grpc.Server(this.calls.connectionOptions("quorum"));
      this.quorumServer.addService(quorumServiceDefinition(), { Follow: (call: ServerCall) => this.acceptCall(call, "quorum") });
      await bind(this.quorumServer, formatAddress(me.host, me.quorumPort), this.calls.serverCredentials());
      if (me.role === "participant") {
        this.electionServer = new grpc.Server(this.calls.connectionOptions("election"));
        this.electionServer.addService(electionServiceDefinition(), { Notify: (call: ServerCall) => this.acceptCall(call, "election") });
        await bind(this.electionServer, formatAddress(me.host, me.electionPort), this.calls.serverCredentials());
      }
      // stop() while binding: it shut down whatever existed then; this finishes the job.
      if (this.phase !== "starting") throw new Error("peer transport stopped while starting");
    } catch (error) {
      this.electionServer?.forceShutdown();
      this.quorumServer?.forceShutdown();
      if (this.phase === "starting") this.phase = "stopped";
      throw error;
    }
    this.phase = "running";
    this.logger.info(
      {
        quorumAddress: formatAddress(me.host, me.quorumPort),
        electionAddress: me.role === "participant" ? formatAddress(me.host, me.electionPort) : null,
        members: this.members.ids(),
        tls: this.calls.tls,
      },
      "peer transport listening",
    );
  }

  /** Closes every stream, client and server; open calls get `stopGraceMs`, then are cut. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    this.phase = "stopping";
    this.quorum.stop();
    this.election.stop();
    this.calls.closeAll();
    await Promise.all([this.electionServer, this.quorumServer].map((server) => (server ? shutdown(server, this.limits.stopGraceMs) : Promise.resolve())));
    // Deliver the closes caused above, then nothing more.
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.dispatch.drain();
    this.dispatch.disable();
    this.phase = "stopped";
    this.logger.info("peer transport stopped");
  }

  /** An incoming call: admitted (peer-calls.ts), then handed to the links of its service. */
  private acceptCall(call: ServerCall, service: PeerService): void {
    const peer = this.calls.admit(call, service, this.phase === "running", () => this.unlistedCallers());
    if (peer === undefined) return;
    this.calls.noteClientAddress(peer, call.metadata);
    if (service === "election") this.election.accept(call, peer);
    else this.quorum.accept(call, peer);
  }

  /** Servers outside the member list with an election or quorum stream to this server. */
  private unlistedCallers(): Set<number> {
    const ids = new Set<number>();
    for (const id of this.election.callers()) if (!this.members.has(id)) ids.add(id);
    for (const id of this.quorum.connectedLearners()) if (!this.members.has(id)) ids.add(id);
    return ids;
  }

  // ---------------------------------------------------------------------------------------------
  // Election (election-links.ts).

  /** Sends `n` to server `to`, or loops it back to oneself; see ElectionLinks.send. */
  sendNotification(to: number, n: Notification): void {
    this.election.send(to, n);
  }

  /** Voters this server keeps an election link to (up, connecting or waiting out a back-off), in id order. */
  electionLinkPeers(): number[] {
    return this.election.linkPeers();
  }

  // ---------------------------------------------------------------------------------------------
  // Membership.

  /**
   * A reconfiguration came into force (PeerPort.updateMembers): `members` are the member table
   * from now on, with this server's own entry kept if they leave it out. Links to servers that
   * left are closed and not retried; servers that joined are dialled on the first send; a server
   * whose address or role changed is dialled afresh, its last notification re-sent there. Streams
   * other servers opened to this one are left alone, and so is the stream to the leader this
   * server follows.
   */
  updateMembers(members: readonly MemberAddress[]): void {
    const { added, removed, changed } = this.members.replace(members);
    for (const id of removed) {
      if (this.forgetPeer(id).undelivered) this.counters.notificationsDropped++;
    }
    for (const id of changed) {
      const { latest } = this.forgetPeer(id);
      if (latest !== undefined) this.election.send(id, latest);
    }
    this.quorum.membersChanged();
    const byId = (a: number, b: number): number => a - b;
    this.logger.info({ members: this.members.ids().sort(byId), added: added.sort(byId), removed, changed }, "peer members updated");
  }

  /** Drops everything this server keeps for calling `id`; see ElectionLinks.forget. */
  private forgetPeer(id: number): { latest: Notification | undefined; undelivered: boolean } {
    const forgotten = this.election.forget(id);
    this.calls.forget(id);
    return forgotten;
  }

  // ---------------------------------------------------------------------------------------------
  // Quorum (quorum-links.ts).

  /**
   * Follows `leaderId`: closes any stream to a previous (or the same) leader and opens one to this
   * leader's quorum port, reopened with back-off whenever it breaks, until the next
   * `followLeader` or `stopFollowing`.
   */
  followLeader(leaderId: number): void {
    this.quorum.follow(leaderId);
  }

  /** Closes the stream to the leader, if any, and stops reconnecting. */
  stopFollowing(): void {
    this.quorum.stopFollowing();
  }

  /** The leader this server follows (its link may be between streams), if any. */
  get followedLeader(): number | undefined {
    return this.quorum.followedLeader;
  }

  /** Queues `m` for the leader on the current stream; dropped when there is none. */
  sendToLeader(m: QuorumMessage): void {
    this.quorum.sendToLeader(m);
  }

  /** Queues `m` for learner `id` on its current stream; dropped when it has none. */
  sendToLearner(id: number, m: QuorumMessage): void {
    this.quorum.sendToLearner(id, m);
  }

  /** Ends learner `id`'s stream (it will reconnect, and resync, if it still follows this server). */
  closeLearner(id: number): void {
    this.quorum.closeLearner(id);
  }

  /** Learners with a stream to this server. */
  connectedLearners(): number[] {
    return this.quorum.connectedLearners();
  }
}

function bind(server: grpc.Server, address: string, credentials: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(address, credentials, (error, port) => (error ? reject(error) : resolve(port)));
  });
}

function shutdown(server: grpc.Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const force = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(force);
      resolve();
    });
  });
}
