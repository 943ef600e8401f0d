/**
 * The election links: how FastLeaderElection's notifications travel between servers. Every voter
 * serves `Election.Notify` on its election port. A notification for a voter is written to one
 * long-lived stream this server keeps to it, opened on the first send and reopened after a failure
 * with capped exponential back-off. Nothing queues up for an unreachable voter: only the latest
 * notification for it is kept (older unsent ones are dropped), and it is sent as soon as a stream
 * is up again — also when it had been written to a stream that then broke, as ZooKeeper's
 * QuorumCnxManager re-sends its lastMessageSent.
 *
 * Observers serve nothing: they call voters, and voters answer an observer on the response
 * direction of the observer's own stream (the latest notification waiting for it if it has none
 * yet). A server outside the member list is answered the same way, as there is no address to dial;
 * a notification for one with no stream to this server is dropped: it is the caller, and it calls
 * again. Notifications to oneself are looped back.
 */
import { performance } from "node:perf_hooks";
import * as grpc from "@grpc/grpc-js";
import type { Logger } from "pino";
import { assert } from "../../common/assert.js";
import type { Notification } from "../../election/types.js";
import { formatAddress, type PeerMember } from "./member-table.js";
import { NotificationOutbox } from "./notification-outbox.js";
import { callerId, type ClientCall, type ServerCall } from "./peer-calls.js";
import { decodeNotificationBatch, notificationEntrySize, PeerCodecError } from "./peer-codec.js";
import type { PeerLinkContext } from "./peer-context.js";

/** This server's stream to one voter, for its notifications (and, to an observer's caller, answers). */
class ElectionLink {
  call: ClientCall | undefined;
  outbox: NotificationOutbox | undefined;
  /** The callee answered with the right id: the link works. */
  confirmed = false;
  /** No new call before this time (ms, performance.now(): a change to the system clock moves no backoff). */
  retryAtMs = 0;
  backoffMs: number;
  /**
   * The last notification handed over for this peer, and whether it may not have arrived (sent
   * while the link was down, or written to a stream that then failed). Such a one is sent again
   * as soon as a new stream is up — ZooKeeper's QuorumCnxManager does the same with its
   * lastMessageSent — and the link is retried until then.
   */
  latest: Notification | undefined;
  latestUnsure = false;
  retryTimer: NodeJS.Timeout | undefined;
  constructor(
    readonly peer: number,
    backoffMs: number,
  ) {
    this.backoffMs = backoffMs;
  }
}

/** A stream another server opened to this server's election service. */
interface ElectionInbound {
  peer: number;
  call: ServerCall;
  outbox: NotificationOutbox;
  closed: boolean;
}

export class ElectionLinks {
  private readonly logger: Logger;
  private readonly outbound = new Map<number, ElectionLink>();
  /** Election streams other servers opened to this one, members or not. */
  private readonly inbound = new Map<number, ElectionInbound>();
  /** The latest notification for each observer member that has no election stream to this server. */
  private readonly observerLatest = new Map<number, Notification>();

  constructor(private readonly ctx: PeerLinkContext) {
    this.logger = ctx.logger;
  }

  /**
   * Sends `n` to server `to`: over this server's stream to `to` when `to` votes, over `to`'s
   * stream to this server when `to` is an observer or not a member. A notification to oneself is
   * looped back.
   *
   * Nothing piles up for an unreachable server: only the latest notification for it is kept (an
   * older one not yet sent is dropped and counted), the link is retried with back-off, and that
   * latest notification is sent when a stream is up again — also when it was written to a stream
   * that then failed, so a lost notification is re-sent once the link comes back, as ZooKeeper
   * does. For an observer without a stream to this server the latest one waits for its stream;
   * for a server outside the member list without one it is dropped (and counted).
   */
  send(to: number, n: Notification): void {
    notificationEntrySize(n);
    const counters = this.ctx.counters;
    if (!this.ctx.running()) {
      counters.notificationsDropped++;
      return;
    }
    if (to === this.ctx.myId) {
      this.ctx.dispatch.post({ kind: "notifications", notifications: [{ ...n, from: this.ctx.myId }] });
      return;
    }
    const member = this.ctx.members.get(to);
    if (member?.role === "participant") return this.sendToVoter(member, n);
    const inbound = this.inbound.get(to);
    if (inbound && !inbound.closed) {
      if (!inbound.outbox.send(n)) counters.notificationsDropped++;
    } else if (member !== undefined) {
      if (this.observerLatest.has(to)) counters.notificationsDropped++;
      this.observerLatest.set(to, n);
    } else {
      counters.notificationsDropped++;
    }
  }

  /**
   * Drops everything kept for calling `id` (its link and retry timer, a notification waiting for
   * it). Returns the last notification handed over for it, if any, so that it can be sent to a new
   * address, and whether that one may not have arrived.
   */
  forget(id: number): { latest: Notification | undefined; undelivered: boolean } {
    let latest: Notification | undefined;
    let undelivered = false;
    const link = this.outbound.get(id);
    if (link) {
      this.outbound.delete(id);
      clearTimeout(link.retryTimer);
      link.retryTimer = undefined;
      const queued = this.dropLink(link);
      latest = link.latest;
      undelivered = link.latestUnsure || queued > 0;
    }
    const waiting = this.observerLatest.get(id);
    if (waiting) {
      this.observerLatest.delete(id);
      latest = waiting;
      undelivered = true;
    }
    return { latest, undelivered };
  }

  /** Voters this server keeps a link to (up, connecting or waiting out a back-off), in id order. */
  linkPeers(): number[] {
    return [...this.outbound.keys()].sort((a, b) => a - b);
  }

  /** Servers with an election stream to this one. */
  callers(): IterableIterator<number> {
    return this.inbound.keys();
  }

  /** Takes the stream server `peer` opened (its call admitted already), replacing any older one. */
  accept(call: ServerCall, peer: number): void {
    const previous = this.inbound.get(peer);
    if (previous) this.closeInbound(previous, { code: grpc.status.CANCELLED, details: "replaced by a newer stream" });
    const inbound: ElectionInbound = { peer, call, outbox: new NotificationOutbox(this.ctx, call, true), closed: false };
    this.inbound.set(peer, inbound);
    this.retryNow(peer);
    call.sendMetadata(this.ctx.calls.metadata());
    const waiting = this.observerLatest.get(peer);
    if (waiting) {
      this.observerLatest.delete(peer);
      inbound.outbox.send(waiting);
    }
    const gone = (): void => {
      if (inbound.closed) return;
      inbound.closed = true;
      inbound.outbox.discard();
      if (this.inbound.get(peer) === inbound) this.inbound.delete(peer);
    };
    call.on("data", (frame: Buffer) => {
      if (inbound.closed) return;
      this.onFrame(frame, peer, () => this.closeInbound(inbound, { code: grpc.status.INVALID_ARGUMENT, details: "malformed frame" }));
    });
    call.on("end", () => {
      if (inbound.closed) return;
      gone();
      call.end();
    });
    call.on("cancelled", gone);
    call.on("error", gone);
    call.on("close", gone);
  }

  /** The transport is stopping: ends every link and stream; nothing is retried (the transport no longer runs). */
  stop(): void {
    for (const link of this.outbound.values()) {
      clearTimeout(link.retryTimer);
      link.retryTimer = undefined;
      this.dropLink(link);
    }
    for (const inbound of [...this.inbound.values()]) this.closeInbound(inbound, { code: grpc.status.UNAVAILABLE, details: "server stopping" });
  }

  private sendToVoter(member: PeerMember, n: Notification): void {
    let link = this.outbound.get(member.id);
    if (!link) {
      link = new ElectionLink(member.id, this.ctx.limits.reconnectBackoffMsMin);
      this.outbound.set(member.id, link);
    }
    if (link.outbox) {
      link.latest = n;
      link.latestUnsure = false;
      if (!link.outbox.send(n)) this.ctx.counters.notificationsDropped++;
      return;
    }
    // No stream: keep only this one, and open a stream now or when the back-off allows.
    if (link.latestUnsure) this.ctx.counters.notificationsDropped++;
    link.latest = n;
    link.latestUnsure = true;
    this.retry(link);
  }

  /** Opens a stream for `link`'s unsure latest notification now, or schedules it for when the back-off ends. */
  private retry(link: ElectionLink): void {
    if (link.outbox || !link.latestUnsure || !this.ctx.running()) return;
    const waitMs = link.retryAtMs - performance.now();
    if (waitMs > 0) {
      link.retryTimer ??= setTimeout(() => {
        link.retryTimer = undefined;
        this.retry(link);
      }, waitMs);
      return;
    }
    const outbox = this.open(link);
    link.latestUnsure = false;
    if (!outbox.send(link.latest!)) this.ctx.counters.notificationsDropped++;
  }

  /**
   * `peer` has just called us, so it is up whatever our last attempt toward it saw: a link of ours
   * waiting out its back-off is tried now, on a fresh channel (the old one's own reconnect back-off
   * may still run). Otherwise a restarted voter would hear our answer only a back-off later (up
   * to reconnectBackoffMsMax, twice over), and rejoin that much later.
   */
  private retryNow(peer: number): void {
    const link = this.outbound.get(peer);
    if (link === undefined || link.outbox !== undefined || !link.latestUnsure) return;
    clearTimeout(link.retryTimer);
    link.retryTimer = undefined;
    link.retryAtMs = 0;
    link.backoffMs = this.ctx.limits.reconnectBackoffMsMin;
    this.ctx.calls.closeClient("election", peer);
    this.retry(link);
  }

  /** A new stream to voter `link.peer`; its outbox holds notifications until the callee answers. */
  private open(link: ElectionLink): NotificationOutbox {
    const { calls, limits } = this.ctx;
    const member = this.ctx.members.get(link.peer);
    // updateMembers forgets the link of a server that left or stopped voting.
    assert(member?.role === "participant", `election link to server ${link.peer}, which is no voting member`);
    const call = calls.open(member, "election");
    const outbox = new NotificationOutbox(this.ctx, call, false);
    link.call = call;
    link.confirmed = false;
    link.outbox = outbox;
    const logger = this.logger.child({ peer: member.id, stream: "election-out" });
    call.on("metadata", (metadata: grpc.Metadata) => {
      if (link.call !== call) return;
      const id = callerId(metadata);
      if (id === undefined) return;
      if (id !== member.id) {
        logger.error({ answeredAs: id, address: formatAddress(member.host, member.electionPort) }, "election port answered by another server");
        this.linkFailed(link, call);
        return;
      }
      link.confirmed = true;
      calls.noteClientAddress(member.id, metadata);
      link.backoffMs = limits.reconnectBackoffMsMin;
      calls.linkWorks("election", member.id);
      logger.debug("election stream up");
      outbox.markReady();
    });
    call.on("data", (frame: Buffer) => {
      if (link.call !== call) return;
      this.onFrame(frame, member.id, () => this.linkFailed(link, call));
    });
    // grpc-js ends every client call with 'status' ('error' first when it is not OK).
    call.on("error", (error: grpc.ServiceError) => {
      if (link.call !== call) return;
      logger.debug({ code: grpc.status[error.code], details: error.details }, "election stream failed");
      calls.noteTlsFailure(logger, "election", member.id, error.details);
      this.linkFailed(link, call);
    });
    call.on("status", () => this.linkFailed(link, call));
    return outbox;
  }

  private linkFailed(link: ElectionLink, call: ClientCall): void {
    if (link.call !== call) return;
    const limits = this.ctx.limits;
    this.ctx.counters.electionLinkFailures++;
    if (link.confirmed) {
      link.retryAtMs = performance.now() + limits.reconnectBackoffMsMin;
    } else {
      link.retryAtMs = performance.now() + link.backoffMs;
      link.backoffMs = Math.min(link.backoffMs * 2, limits.reconnectBackoffMsMax);
    }
    this.dropLink(link);
    // Whatever was last sent may have been lost with the stream: send it again once a new one is up.
    if (link.latest !== undefined) {
      link.latestUnsure = true;
      this.retry(link);
    }
  }

  /** Ends `link`'s stream; returns how many notifications were still queued on it (the last of them, `latest`, is kept). */
  private dropLink(link: ElectionLink): number {
    const call = link.call;
    const outbox = link.outbox;
    link.call = undefined;
    link.outbox = undefined;
    link.confirmed = false;
    // What is still queued ends with `latest` (kept); the older ones are dropped.
    const discarded = outbox?.discard() ?? 0;
    if (discarded > 1) this.ctx.counters.notificationsDropped += discarded - 1;
    call?.cancel();
    return discarded;
  }

  private closeInbound(inbound: ElectionInbound, status: { code: grpc.status; details: string }): void {
    if (inbound.closed) return;
    inbound.closed = true;
    inbound.outbox.discard();
    if (this.inbound.get(inbound.peer) === inbound) this.inbound.delete(inbound.peer);
    inbound.call.emit("error", status);
  }

  private onFrame(frame: Buffer, from: number, malformed: () => void): void {
    const counters = this.ctx.counters;
    let notifications: Notification[];
    try {
      notifications = decodeNotificationBatch(frame, from);
    } catch (error) {
      if (!(error instanceof PeerCodecError)) throw error;
      counters.malformedFrames++;
      this.logger.warn({ peer: from, err: error.message, frameBytes: frame.length }, "malformed election frame: closing the stream");
      malformed();
      return;
    }
    counters.notificationFramesReceived++;
    counters.notificationsReceived += notifications.length;
    if (notifications.length > 0) this.ctx.dispatch.post({ kind: "notifications", notifications });
  }
}
