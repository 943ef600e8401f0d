/**
 * The quorum links: Zab's streams between a leader and its learners. Every server serves
 * `Quorum.Follow` on its quorum port. A learner calls `follow(id)` and keeps one stream to that
 * leader, reopening it with back-off if it breaks, until `follow(other)` or `stopFollowing()`; the
 * leader side accepts one stream per learner (a newer one from the same learner replaces the
 * older), members or not — the leader's core decides whether to keep one. A learner's messages sent
 * while it has no stream are dropped: the core restarts its handshake on `quorumStreamOpened`.
 *
 * A leader that leaves the member list is not dropped here: the core, not the transport, decides
 * to stop following it, and until then its link keeps the address it had.
 */
import * as grpc from "@grpc/grpc-js";
import { assert } from "../../common/assert.js";
import type { QuorumMessage } from "../../consensus/messages.js";
import { formatAddress, type PeerMember } from "./member-table.js";
import { callerId, type ServerCall } from "./peer-calls.js";
import { quorumBodySize } from "./peer-codec.js";
import type { PeerLinkContext } from "./peer-context.js";
import { QuorumStream } from "./quorum-stream.js";

/** A learner's relation to the leader it follows: the current stream, reopened with back-off. */
class LeaderLink {
  stream: QuorumStream | undefined;
  timer: NodeJS.Timeout | undefined;
  backoffMs: number;
  /** Streams that ended since one last opened (the first failure is logged at info, the rest at debug). */
  failures = 0;
  constructor(
    readonly leaderId: number,
    /** Where the leader is: kept here so that it stays reachable if a reconfiguration removes it. */
    public member: PeerMember,
    backoffMs: number,
  ) {
    this.backoffMs = backoffMs;
  }
}

export class QuorumLinks {
  private leaderLink: LeaderLink | undefined;
  /** Leader side: the current stream from each learner, member or not. */
  private readonly learnerStreams = new Map<number, QuorumStream>();
  /** Every quorum stream not yet ended (both sides), for stop(). */
  private readonly liveStreams = new Set<QuorumStream>();
  private readonly streamEnded = (stream: QuorumStream): void => this.onStreamEnded(stream);

  constructor(private readonly ctx: PeerLinkContext) {}

  // ---------------------------------------------------------------------------------------------
  // Learner side.

  /**
   * Follows `leaderId`: closes any stream to a previous (or the same) leader and opens one to this
   * leader's quorum port, reopened with back-off whenever it breaks, until the next `follow` or
   * `stopFollowing`.
   */
  follow(leaderId: number): void {
    const member = this.ctx.members.get(leaderId);
    assert(member !== undefined, `follow unknown server ${leaderId}`);
    assert(leaderId !== this.ctx.myId, "a server cannot follow itself");
    if (!this.ctx.running()) return;
    this.stopFollowing();
    this.leaderLink = new LeaderLink(leaderId, member, this.ctx.limits.reconnectBackoffMsMin);
    this.connectLeader(this.leaderLink);
  }

  /** Closes the stream to the leader, if any, and stops reconnecting. */
  stopFollowing(): void {
    const link = this.leaderLink;
    if (!link) return;
    this.leaderLink = undefined;
    clearTimeout(link.timer);
    link.stream?.close();
    // A leader that left the member list is not dialled again: its client goes too.
    if (!this.ctx.members.has(link.leaderId)) this.ctx.calls.closeClient("quorum", link.leaderId);
  }

  /** The leader this server follows (its link may be between streams), if any. */
  get followedLeader(): number | undefined {
    return this.leaderLink?.leaderId;
  }

  /** Queues `m` for the leader on the current stream; dropped when there is none. */
  sendToLeader(m: QuorumMessage): void {
    const stream = this.leaderLink?.stream;
    if (!stream || stream.state === "closed") {
      quorumBodySize(m);
      this.ctx.counters.quorumMessagesDropped++;
      return;
    }
    stream.send(m);
  }

  /** The member table changed: the leader followed, if still a member, is dialled where it now is. */
  membersChanged(): void {
    const link = this.leaderLink;
    const leader = link && this.ctx.members.get(link.leaderId);
    if (link && leader) link.member = leader;
  }

  private connectLeader(link: LeaderLink): void {
    link.timer = undefined;
    if (this.leaderLink !== link || !this.ctx.running()) return;
    const { calls, limits } = this.ctx;
    const member = link.member;
    const call = calls.open(member, "quorum");
    const logger = this.ctx.logger.child({ peer: link.leaderId, stream: "quorum-learner" });
    const stream = new QuorumStream(this.ctx, this.streamEnded, link.leaderId, "learner", call, logger);
    link.stream = stream;
    this.liveStreams.add(stream);
    call.on("metadata", (metadata: grpc.Metadata) => {
      if (stream.state !== "pending") return;
      const id = callerId(metadata);
      // No id: not an acceptance (a refusal's trailers-only answer); its status follows.
      if (id === undefined) return;
      if (id !== link.leaderId) {
        logger.error({ answeredAs: id ?? null, address: formatAddress(member.host, member.quorumPort) }, "quorum port answered by another server");
        stream.close();
        return;
      }
      calls.noteClientAddress(link.leaderId, metadata);
      link.backoffMs = limits.reconnectBackoffMsMin;
      link.failures = 0;
      calls.linkWorks("quorum", link.leaderId);
      logger.info("quorum stream to the leader open");
      stream.markOpen();
    });
    // grpc-js ends every client call with 'status' ('error' first when it is not OK).
    const done = (status: { code: grpc.status; details: string }): void => {
      if (stream.state === "closed") return;
      const wasOpen = stream.state === "open";
      const level = link.failures++ === 0 ? "info" : "debug";
      logger[level]({ code: grpc.status[status.code], details: status.details, wasOpen }, "quorum stream to the leader ended");
      calls.noteTlsFailure(logger, "quorum", link.leaderId, status.details);
      stream.ended();
    };
    call.on("error", done);
    call.on("status", done);
  }

  // ---------------------------------------------------------------------------------------------
  // Leader side.

  /** Queues `m` for learner `id` on its current stream; dropped when it has none. */
  sendToLearner(id: number, m: QuorumMessage): void {
    const stream = this.learnerStreams.get(id);
    if (!stream) {
      quorumBodySize(m);
      this.ctx.counters.quorumMessagesDropped++;
      return;
    }
    stream.send(m);
  }

  /** Ends learner `id`'s stream (it will reconnect, and resync, if it still follows this server). */
  closeLearner(id: number): void {
    this.learnerStreams.get(id)?.close();
  }

  /** Learners with a stream to this server. */
  connectedLearners(): number[] {
    return [...this.learnerStreams.keys()];
  }

  /** Takes the stream learner `peer` opened (its call admitted already), replacing any older one. */
  accept(call: ServerCall, peer: number): void {
    const previous = this.learnerStreams.get(peer);
    if (previous) {
      this.ctx.logger.info({ peer }, "learner reconnected: replacing its previous quorum stream");
      previous.close({ code: grpc.status.CANCELLED, details: "replaced by a newer stream" });
    }
    const logger = this.ctx.logger.child({ peer, stream: "quorum-leader" });
    const stream = new QuorumStream(this.ctx, this.streamEnded, peer, "leader", call, logger);
    this.learnerStreams.set(peer, stream);
    this.liveStreams.add(stream);
    const gone = (how: string): void => {
      if (stream.state === "closed") return;
      logger.info({ how }, "learner's quorum stream ended");
      stream.ended();
    };
    call.on("end", () => {
      // The learner half-closed: finish our side too.
      if (stream.state === "closed") return;
      logger.info({ how: "half-closed" }, "learner's quorum stream ended");
      stream.close();
    });
    call.on("cancelled", () => gone("cancelled"));
    call.on("error", () => gone("error"));
    call.on("close", () => gone("closed"));
    call.sendMetadata(this.ctx.calls.metadata());
    logger.info({ address: call.getPeer() }, "learner connected");
    stream.markOpen();
  }

  // ---------------------------------------------------------------------------------------------
  // Both sides.

  /** The transport is stopping: stops following, and closes every stream still open. */
  stop(): void {
    this.stopFollowing();
    for (const stream of [...this.liveStreams]) stream.close({ code: grpc.status.UNAVAILABLE, details: "server stopping" });
  }

  /** A quorum stream is over: forget it, report it, and (learner side) plan the next one. */
  private onStreamEnded(stream: QuorumStream): void {
    this.liveStreams.delete(stream);
    if (stream.side === "leader") {
      if (this.learnerStreams.get(stream.peer) === stream) this.learnerStreams.delete(stream.peer);
    } else {
      const link = this.leaderLink;
      if (link && link.stream === stream) {
        link.stream = undefined;
        if (this.ctx.running()) {
          const delayMs = link.backoffMs;
          link.backoffMs = Math.min(link.backoffMs * 2, this.ctx.limits.reconnectBackoffMsMax);
          link.timer = setTimeout(() => this.connectLeader(link), delayMs);
        }
      }
    }
    this.ctx.dispatch.post({ kind: "closed", stream });
  }
}
