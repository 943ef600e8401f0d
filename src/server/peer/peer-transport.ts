/**
 * PeerTransport: the gRPC links between corral servers (docs/architecture.md §2–§4, §7; proto/peer.proto).
 *
 * Election. Every voter serves `Election.Notify` on its election port. `sendNotification(to, n)`
 * writes to one long-lived stream this server keeps to each voter, opened on the first send and
 * reopened after a failure with capped exponential back-off. Nothing queues up for an unreachable
 * voter: only the latest notification for it is kept (older unsent ones are dropped), and it is
 * sent as soon as a stream is up again — also when it had been written to a stream that then
 * broke, as ZooKeeper's QuorumCnxManager re-sends its lastMessageSent. Observers serve nothing:
 * they call voters, and voters answer an observer on the response direction of the observer's
 * own stream (the latest one waiting for it if it has none yet). Notifications to oneself are
 * looped back.
 *
 * Quorum. Every server serves `Quorum.Follow` on its quorum port. A learner calls
 * `followLeader(id)` and keeps one stream to that leader, reopening it with back-off if it breaks,
 * until `followLeader(other)` or `stopFollowing()`; the leader side accepts one stream per learner
 * (a newer one from the same learner replaces the older). Order on a stream is preserved exactly;
 * nothing is carried over from one stream to the next (a learner's messages sent while it has no
 * stream are dropped: the core restarts its handshake on `quorumStreamOpened`).
 *
 * Membership changes (dynamic reconfiguration). `updateMembers` replaces the member table when a
 * configuration comes into force. A server that left is no longer dialled: its election link,
 * whatever waits for it and its clients are dropped at once, so no back-off timer keeps calling a
 * server that may be gone for good; one that joined is dialled on the first send, like any member;
 * one whose address or role changed gets a new link, carrying the last notification sent to it
 * (ZooKeeper re-sends its lastMessageSent on every new connection). This server's own entry stays
 * even when the list leaves it out: a removed server keeps running, and keeps its ports, until the
 * host stops it. The quorum stream to a leader that left is left alone: the core, not the
 * transport, decides to stop following it.
 *
 * Servers outside the member list. ZooKeeper lets a server that is not (yet) in a peer's view talk
 * to it: a joiner must hear the election and sync from the leader before the reconfiguration that
 * adds it commits, and a server just removed (or one whose peers missed the change) must learn
 * who leads and which configuration is in force, from the notifications it is answered with. So a
 * call from an id outside the member list is accepted: on the election port it is treated as an
 * observer's (its notifications go to the handler and it is answered on the response direction of
 * its own stream, since there is no address to dial), on the quorum port as any learner's (the
 * leader's core decides whether to keep it). A notification for such a server with no stream to
 * this one is dropped: it is the caller, and it calls again. The number of them with a stream at
 * once is bounded (`unlistedCallersMax`), so a flood of made-up ids cannot grow this server's
 * memory.
 *
 * Identity. Calls carry `corral-server-id` metadata; one's own id is refused with
 * PERMISSION_DENIED, and the answering server names itself in its response headers, which the
 * caller checks against the member it dialled. Both directions also carry the sender's corral
 * client address (`corral-client-address`) when the host gave a `clientAddresses` directory: what
 * an admitted caller or a confirmed callee says goes into it (a malformed value is ignored), so that
 * a server added by a reconfiguration is known to the clients' getMembers (client-address-directory.ts).
 *
 * Security (ZooKeeper's sslQuorum). With `security`, every link is mutual TLS: both ports ask for
 * and verify the caller's certificate, every call verifies the callee's, so a server whose
 * certificate the others' CAs do not verify cannot vote, lead or learn — and cannot hear them
 * either. `verifyCaller` can also bind a certificate to the member it claims to be (hostname
 * verification). A caller outside the member list has no member record to bind its certificate to:
 * it is accepted on the strength of the certificate the TLS layer verified (a call without one is
 * refused) and `verifyCaller` is not asked — the same trust mutual TLS gives any holder of a
 * certificate from the quorum CA. A link that fails its TLS handshake is logged once (warn) until
 * it works.
 *
 * Batching. A message sent to an idle stream leaves at the end of the current microtask run (with
 * whatever else the same run sent: the answers to one received frame travel together), not a turn
 * of the event loop later: a proposal, ack or commit must not wait for the loop. While a quorum
 * stream has a frame that grpc-js has not yet handed to its socket, what is sent meanwhile queues
 * and leaves as one frame (split at a byte bound) the moment that write completes — batching under
 * load, none when idle. When grpc-js pushes back (write() returns false) messages wait in a
 * per-stream queue until 'drain';
 * a quorum stream whose queue passes its bound is closed (the core resyncs that learner), an
 * election link over its bound drops notifications.
 *
 * Handlers. Every handler call comes from the transport's own dispatch (a microtask after the I/O
 * or API call that caused it), never from inside a PeerTransport method: the host may call any
 * method from a handler, and a handler never sees a half-finished call of its own. Per stream:
 * at most one `quorumStreamOpened`, then messages, then exactly one `quorumStreamClosed` — for
 * every stream, whichever side or cause ends it (including a learner's stream that never
 * connected, and every open stream at `stop()`). Nothing fires after `stop()` resolves.
 * Handlers must not throw.
 */
import * as grpc from "@grpc/grpc-js";
import type { PeerCertificate } from "node:tls";
import type { Logger } from "pino";
import { assert } from "../../common/assert.js";
import type { MemberAddress } from "../../common/membership.js";
import type { QuorumMessage } from "../../consensus/messages.js";
import type { Notification, PeerRole } from "../../election/types.js";
import {
  decodeNotificationBatch,
  decodeQuorumBatch,
  encodeNotificationBatch,
  encodeQuorumBatch,
  notificationEntrySize,
  PeerCodecError,
  quorumBodySize,
  quorumEntrySize,
} from "./peer-codec.js";
import { peerLimits, type PeerLimits } from "./peer-limits.js";
import {
  CLIENT_ADDRESS_METADATA,
  electionServiceDefinition,
  PEER_PROTOCOL_METADATA,
  PEER_PROTOCOL_VERSION,
  quorumServiceDefinition,
  SERVER_ID_METADATA,
} from "./peer-wire.js";
import type { ClientAddressDirectory } from "../client-address-directory.js";

export interface PeerMember {
  id: number;
  host: string;
  quorumPort: number;
  electionPort: number;
  role: PeerRole;
}

export interface PeerTransportHandlers {
  /** A notification from another server (`from` is the authenticated sender), or looped back. */
  notification(n: Notification): void;
  quorumMessage(from: number, m: QuorumMessage): void;
  /** A quorum stream with `peer` is up: on a learner, the leader accepted it; on the leader, a learner connected. */
  quorumStreamOpened(peer: number): void;
  /** A quorum stream with `peer` ended (exactly once per stream, whichever side or cause ended it). */
  quorumStreamClosed(peer: number): void;
}

/** Credentials for mutual TLS between servers; absent = plain text. */
export interface PeerTransportSecurity {
  /** For the quorum and election ports (called once per port). */
  serverCredentials(): grpc.ServerCredentials;
  /** For calls to other members (called once). */
  channelCredentials(): grpc.ChannelCredentials;
  /**
   * Whether the verified certificate of an incoming call may speak for `member` (the id its
   * metadata names): undefined if so, else why not (the call is refused with PERMISSION_DENIED).
   */
  verifyCaller?(member: PeerMember, certificate: PeerCertificate | undefined): string | undefined;
}

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

/** Running totals, for logs, metrics and tests. */
export interface PeerTransportCounters {
  quorumFramesSent: number;
  quorumFramesReceived: number;
  quorumMessagesSent: number;
  quorumMessagesReceived: number;
  /** Quorum messages given to a stream that was not there (no leader link, unknown learner, closed). */
  quorumMessagesDropped: number;
  /** Quorum streams closed because their queue passed its bound. */
  quorumStreamsOverflowed: number;
  notificationFramesSent: number;
  notificationFramesReceived: number;
  notificationsSent: number;
  notificationsReceived: number;
  /**
   * Notifications dropped: superseded by a newer one for the same server while it was unreachable,
   * over a stream's queue bound, or handed over while the transport was not running.
   */
  notificationsDropped: number;
  /** Frames that did not decode; each closed its stream. */
  malformedFrames: number;
  /** Incoming calls refused (own or missing server id, wrong protocol version, too many servers outside the member list). */
  refusedCalls: number;
  /** Outgoing election streams that failed or ended (each is retried after a back-off). */
  electionLinkFailures: number;
}

type ClientCall = grpc.ClientDuplexStream<Buffer, Buffer>;
type ServerCall = grpc.ServerDuplexStream<Buffer, Buffer>;
type AnyCall = ClientCall | ServerCall;

type StreamState = "pending" | "open" | "closed";

function formatAddress(host: string, port: number): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Whether a failed call's details tell of a peer certificate this server did not accept. */
function isCertificateRefused(details: string): boolean {
  return /certificate|ssl|tls|alert|handshake|self.signed|issuer/i.test(details);
}

/**
 * Whether they tell of a connection the peer dropped while it was being set up: with TLS, what a
 * server sees when the peer refuses its certificate (grpc-js gives no more detail).
 */
function isDroppedWhileConnecting(details: string): boolean {
  return /ECONNRESET|EPIPE|Failed to connect|socket closed|connection dropped/i.test(details);
}

function callerId(metadata: grpc.Metadata): number | undefined {
  const values = metadata.get(SERVER_ID_METADATA);
  if (values.length !== 1 || typeof values[0] !== "string" || !/^[0-9]{1,10}$/.test(values[0])) return undefined;
  return Number(values[0]);
}

type HandlerEvent =
  | { kind: "opened"; stream: QuorumStream }
  | { kind: "closed"; stream: QuorumStream }
  | { kind: "messages"; stream: QuorumStream; messages: QuorumMessage[] }
  | { kind: "notifications"; notifications: Notification[] };

/** Something with queued output, flushed once per event-loop turn. */
interface Flushable {
  flush(): void;
}

/** Runs `run` in a microtask: once, however many times it is asked for before that microtask runs. */
class MicrotaskOnce {
  private scheduled = false;

  constructor(private readonly run: () => void) {}

  request(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.run();
    });
  }
}

// -------------------------------------------------------------------------------------------------
// Quorum streams.

class QuorumStream implements Flushable {
  state: StreamState = "pending";
  /** Closed by this side: messages received but not yet delivered are dropped. */
  suppressed = false;
  private messages: QuorumMessage[] = [];
  private bodySizes: number[] = [];
  private entrySizes: number[] = [];
  private head = 0;
  private queuedBytes = 0;
  private blocked = false;
  /** A flush is scheduled (scheduleFlush). */
  private dirty = false;
  /** Frames handed to grpc-js whose write has not completed yet. */
  private writesPending = 0;
  private readonly writeCompleted = (): void => {
    this.writesPending--;
    if (this.writesPending === 0 && !this.blocked && this.queuedMessages > 0) this.flush();
  };

  constructor(
    private readonly transport: PeerTransport,
    readonly peer: number,
    /** "learner": this server dialled its leader; "leader": a learner dialled this server. */
    readonly side: "learner" | "leader",
    readonly call: AnyCall,
    readonly logger: Logger,
  ) {
    call.on("data", (frame: Buffer) => this.onFrame(frame));
    call.on("drain", () => {
      this.blocked = false;
      if (this.writesPending === 0) this.flush();
    });
  }

  /** Read through a getter so that TypeScript does not assume the state is unchanged across a write. */
  get isClosed(): boolean {
    return this.state === "closed";
  }

  get queuedMessages(): number {
    return this.messages.length - this.head;
  }

  send(m: QuorumMessage): void {
    if (this.state === "closed") {
      this.transport.counters.quorumMessagesDropped++;
      return;
    }
    const body = quorumBodySize(m);
    const entry = quorumEntrySize(m, body);
    const limits = this.transport.limits;
    if (entry > limits.quorumMessageBytesMax - 16) {
      this.logger.error(
        { type: m.type, bytes: entry, limit: limits.quorumMessageBytesMax },
        "quorum message larger than the quorum message bound: closing the stream",
      );
      this.transport.counters.quorumMessagesDropped++;
      this.close({ code: grpc.status.RESOURCE_EXHAUSTED, details: "message too large" });
      return;
    }
    this.messages.push(m);
    this.bodySizes.push(body);
    this.entrySizes.push(entry);
    this.queuedBytes += entry;
    if (this.blocked && this.overflowed()) return;
    // With a write pending, its completion flushes (writeCompleted): that is the batching.
    if (!this.dirty && this.writesPending === 0 && !this.blocked) {
      this.dirty = true;
      this.transport.scheduleFlush(this);
    }
  }

  flush(): void {
    this.dirty = false;
    if (this.state === "closed") return;
    const limits = this.transport.limits;
    const counters = this.transport.counters;
    const messages = this.messages;
    const entrySizes = this.entrySizes;
    // A write can end the stream under us (grpc-js reporting a failure synchronously): re-check.
    while (!this.blocked && !this.isClosed && this.head < messages.length) {
      const start = this.head;
      let end = start;
      let bytes = 0;
      while (end < messages.length) {
        const entry = entrySizes[end]!;
        if (end > start && bytes + entry > limits.quorumBatchBytesMax) break;
        bytes += entry;
        end++;
      }
      const frame = encodeQuorumBatch(messages, this.bodySizes, start, end);
      this.head = end;
      this.queuedBytes -= bytes;
      counters.quorumFramesSent++;
      counters.quorumMessagesSent += end - start;
      this.writesPending++;
      if (!this.call.write(frame, this.writeCompleted)) this.blocked = true;
    }
    if (this.isClosed) return;
    if (this.head === messages.length) {
      this.messages = [];
      this.bodySizes = [];
      this.entrySizes = [];
      this.head = 0;
    } else {
      if (this.head >= 4096 && this.head * 2 >= messages.length) {
        this.messages = messages.slice(this.head);
        this.bodySizes = this.bodySizes.slice(this.head);
        this.entrySizes = entrySizes.slice(this.head);
        this.head = 0;
      }
      this.overflowed();
    }
  }

  /** Closes the stream if its queue passed a bound; true if it did. */
  private overflowed(): boolean {
    const limits = this.transport.limits;
    const queued = this.queuedMessages;
    if (queued <= limits.quorumQueueMessagesMax && this.queuedBytes <= limits.quorumQueueBytesMax) return false;
    this.transport.counters.quorumStreamsOverflowed++;
    this.logger.warn(
      { queuedMessages: queued, queuedBytes: this.queuedBytes, messagesMax: limits.quorumQueueMessagesMax, bytesMax: limits.quorumQueueBytesMax },
      "peer is not keeping up: quorum queue over its bound, closing the stream",
    );
    this.close({ code: grpc.status.RESOURCE_EXHAUSTED, details: "peer queue over its bound" });
    return true;
  }

  /** The peer answered (learner side: the leader's response headers arrived). */
  markOpen(): void {
    if (this.state !== "pending") return;
    this.state = "open";
    this.transport.dispatch({ kind: "opened", stream: this });
  }

  private onFrame(frame: Buffer): void {
    if (this.state === "closed") return;
    let messages: QuorumMessage[];
    try {
      messages = decodeQuorumBatch(frame);
    } catch (error) {
      if (!(error instanceof PeerCodecError)) throw error;
      this.transport.counters.malformedFrames++;
      this.logger.warn({ err: error.message, frameBytes: frame.length }, "malformed quorum frame: closing the stream");
      this.close({ code: grpc.status.INVALID_ARGUMENT, details: error.message });
      return;
    }
    const counters = this.transport.counters;
    counters.quorumFramesReceived++;
    counters.quorumMessagesReceived += messages.length;
    if (messages.length > 0) this.transport.dispatch({ kind: "messages", stream: this, messages });
  }

  /**
   * Ends the stream from this side. With a status, the peer learns why (leader side: as the call's
   * status; learner side: the call is cancelled). Queued messages are dropped.
   */
  close(status?: { code: grpc.status; details: string }): void {
    if (this.state === "closed") return;
    this.suppressed = true;
    this.ended();
    if (this.side === "learner") {
      (this.call as ClientCall).cancel();
    } else {
      const call = this.call as ServerCall;
      if (status) call.emit("error", { code: status.code, details: status.details });
      else call.end();
    }
  }

  /** The stream is over, whoever ended it: drop everything and report it once. */
  ended(): void {
    if (this.state === "closed") return;
    this.state = "closed";
    this.messages = [];
    this.bodySizes = [];
    this.entrySizes = [];
    this.head = 0;
    this.queuedBytes = 0;
    this.transport.quorumStreamEnded(this);
  }
}

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

// -------------------------------------------------------------------------------------------------
// Election streams.

/**
 * A queue of notifications written to one stream (an outbound link's call, or an observer's
 * inbound one). An outbound link's queue holds its notifications until the callee has answered
 * (`markReady`), so nothing piles up inside grpc-js while a connection attempt is pending.
 */
class NotificationOutbox implements Flushable {
  private queue: Notification[] = [];
  private blocked = false;
  private dirty = false;
  private discarded = false;

  constructor(
    private readonly transport: PeerTransport,
    private readonly call: AnyCall,
    private ready: boolean,
  ) {
    call.on("drain", () => {
      this.blocked = false;
      this.flush();
    });
  }

  /** Queues `n` (its numbers checked now); false when the queue is full and `n` was dropped. */
  send(n: Notification): boolean {
    notificationEntrySize(n);
    if (this.discarded || this.queue.length >= this.transport.limits.electionQueueMessagesMax) return false;
    this.queue.push(n);
    if (this.ready && !this.blocked && !this.dirty) {
      this.dirty = true;
      this.transport.scheduleFlush(this);
    }
    return true;
  }

  flush(): void {
    this.dirty = false;
    const queue = this.queue;
    const counters = this.transport.counters;
    const batchBytesMax = this.transport.limits.electionBatchBytesMax;
    let start = 0;
    while (this.ready && !this.blocked && !this.discarded && start < queue.length) {
      let end = start;
      let bytes = 0;
      while (end < queue.length) {
        const entry = notificationEntrySize(queue[end]!);
        if (end > start && bytes + entry > batchBytesMax) break;
        bytes += entry;
        end++;
      }
      const frame = encodeNotificationBatch(queue, start, end);
      counters.notificationFramesSent++;
      counters.notificationsSent += end - start;
      start = end;
      if (!this.call.write(frame)) this.blocked = true;
    }
    if (this.discarded) return;
    this.queue = start === queue.length ? [] : queue.slice(start);
  }

  markReady(): void {
    if (this.ready) return;
    this.ready = true;
    this.flush();
  }

  /** The stream is gone: drops what is queued (returns how many) and refuses anything more. */
  discard(): number {
    const n = this.queue.length;
    this.discarded = true;
    this.queue = [];
    return n;
  }
}

/** This server's stream to one voter, for its notifications (and, to an observer's caller, answers). */
class ElectionLink {
  call: ClientCall | undefined;
  outbox: NotificationOutbox | undefined;
  /** The callee answered with the right id: the link works. */
  confirmed = false;
  /** No new call before this time (ms, Date.now()). */
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

// -------------------------------------------------------------------------------------------------

export class PeerTransport {
  readonly myId: number;
  readonly limits: PeerLimits;
  readonly counters: PeerTransportCounters = {
    quorumFramesSent: 0,
    quorumFramesReceived: 0,
    quorumMessagesSent: 0,
    quorumMessagesReceived: 0,
    quorumMessagesDropped: 0,
    quorumStreamsOverflowed: 0,
    notificationFramesSent: 0,
    notificationFramesReceived: 0,
    notificationsSent: 0,
    notificationsReceived: 0,
    notificationsDropped: 0,
    malformedFrames: 0,
    refusedCalls: 0,
    electionLinkFailures: 0,
  };

  /** This server as it was started: the addresses its services are bound to. */
  private readonly me: PeerMember;
  /** The member table: replaced by updateMembers, always holding this server. */
  private readonly members = new Map<number, PeerMember>();
  private readonly logger: Logger;
  private readonly handlers: PeerTransportHandlers;

  private phase: "new" | "starting" | "running" | "stopping" | "stopped" = "new";
  private stopping: Promise<void> | undefined;
  private electionServer: grpc.Server | undefined;
  private quorumServer: grpc.Server | undefined;
  private readonly electionClients = new Map<number, grpc.Client>();
  private readonly quorumClients = new Map<number, grpc.Client>();

  private readonly electionLinks = new Map<number, ElectionLink>();
  /** Election streams other servers opened to this one, members or not. */
  private readonly electionInbound = new Map<number, ElectionInbound>();
  /** The latest notification for each observer member that has no election stream to this server. */
  private readonly observerLatest = new Map<number, Notification>();
  private leaderLink: LeaderLink | undefined;
  /** Leader side: the current stream from each learner, member or not. */
  private readonly learnerStreams = new Map<number, QuorumStream>();
  /** Every quorum stream not yet ended (both sides), for stop(). */
  private readonly liveStreams = new Set<QuorumStream>();

  private readonly security: PeerTransportSecurity | undefined;
  private readonly clientAddresses: ClientAddressDirectory | undefined;
  private channelCredentials: grpc.ChannelCredentials | undefined;
  /** Links ("election 3", "quorum 1") whose TLS failure was logged, until they work again. */
  private readonly tlsFailuresLogged = new Set<string>();

  private readonly toFlush: Flushable[] = [];
  private readonly flushSoon = new MicrotaskOnce(() => this.flushAll());
  private readonly events: HandlerEvent[] = [];
  private readonly drainSoon = new MicrotaskOnce(() => this.drainEvents());
  private dispatchEnabled = true;

  constructor(options: PeerTransportOptions) {
    this.myId = options.myId;
    this.limits = peerLimits(options.limits);
    this.handlers = options.handlers;
    this.security = options.security;
    this.clientAddresses = options.clientAddresses;
    for (const member of options.members) {
      assert(Number.isSafeInteger(member.id) && member.id > 0 && member.id <= 0xffffffff, `server id ${member.id}`);
      assert(!this.members.has(member.id), `server id ${member.id} listed twice`);
      assert(member.role === "participant" || member.role === "observer", `role of server ${member.id}`);
      this.members.set(member.id, { ...member });
    }
    const me = this.members.get(options.myId);
    assert(me !== undefined, `server ${options.myId} is not among the members`);
    this.me = me;
    this.logger = options.logger.child({ component: "peer-transport", serverId: options.myId });
  }

  // ---------------------------------------------------------------------------------------------
  // Lifecycle.

  /** Binds the quorum service on this member's quorum port, and the election service on its election port if it votes. */
  async start(): Promise<void> {
    assert(this.phase === "new", `start() in phase ${this.phase}`);
    this.phase = "starting";
    try {
      this.quorumServer = new grpc.Server(this.connectionOptions("quorum"));
      this.quorumServer.addService(quorumServiceDefinition(), { Follow: (call: ServerCall) => this.acceptLearner(call) });
      await bind(this.quorumServer, formatAddress(this.me.host, this.me.quorumPort), this.serverCredentials());
      if (this.me.role === "participant") {
        this.electionServer = new grpc.Server(this.connectionOptions("election"));
        this.electionServer.addService(electionServiceDefinition(), { Notify: (call: ServerCall) => this.acceptElection(call) });
        await bind(this.electionServer, formatAddress(this.me.host, this.me.electionPort), this.serverCredentials());
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
        quorumAddress: formatAddress(this.me.host, this.me.quorumPort),
        electionAddress: this.me.role === "participant" ? formatAddress(this.me.host, this.me.electionPort) : null,
        members: [...this.members.keys()],
        tls: this.security !== undefined,
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
    this.stopFollowing();
    for (const stream of [...this.liveStreams]) stream.close({ code: grpc.status.UNAVAILABLE, details: "server stopping" });
    for (const link of this.electionLinks.values()) {
      clearTimeout(link.retryTimer);
      link.retryTimer = undefined;
      this.dropElectionLink(link);
    }
    for (const inbound of [...this.electionInbound.values()]) this.closeElectionInbound(inbound, { code: grpc.status.UNAVAILABLE, details: "server stopping" });
    for (const client of [...this.electionClients.values(), ...this.quorumClients.values()]) client.close();
    this.electionClients.clear();
    this.quorumClients.clear();
    await Promise.all([this.electionServer, this.quorumServer].map((server) => (server ? shutdown(server, this.limits.stopGraceMs) : Promise.resolve())));
    // Deliver the closes caused above, then nothing more.
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.drainEvents();
    this.dispatchEnabled = false;
    this.events.length = 0;
    this.phase = "stopped";
    this.logger.info("peer transport stopped");
  }

  private get running(): boolean {
    return this.phase === "running";
  }

  // ---------------------------------------------------------------------------------------------
  // Election.

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
  sendNotification(to: number, n: Notification): void {
    notificationEntrySize(n);
    if (!this.running) {
      this.counters.notificationsDropped++;
      return;
    }
    if (to === this.myId) {
      this.dispatch({ kind: "notifications", notifications: [{ ...n, from: this.myId }] });
      return;
    }
    const member = this.members.get(to);
    if (member?.role === "participant") return this.sendToVoter(member, n);
    const inbound = this.electionInbound.get(to);
    if (inbound && !inbound.closed) {
      if (!inbound.outbox.send(n)) this.counters.notificationsDropped++;
    } else if (member !== undefined) {
      if (this.observerLatest.has(to)) this.counters.notificationsDropped++;
      this.observerLatest.set(to, n);
    } else {
      this.counters.notificationsDropped++;
    }
  }

  /**
   * A reconfiguration came into force (PeerPort.updateMembers): `members` are the member table
   * from now on, with this server's own entry kept if they leave it out. Links to servers that
   * left are closed and not retried; servers that joined are dialled on the first send; a server
   * whose address or role changed is dialled afresh, its last notification re-sent there. Streams
   * other servers opened to this one are left alone (one from a server that left goes on as one
   * from outside the member list), and so is the stream to the leader this server follows.
   */
  updateMembers(members: readonly MemberAddress[]): void {
    const next = new Map<number, PeerMember>();
    for (const m of members) {
      assert(Number.isSafeInteger(m.serverId) && m.serverId > 0 && m.serverId <= 0xffffffff, `server id ${m.serverId}`);
      assert(!next.has(m.serverId), `server id ${m.serverId} listed twice`);
      assert(m.type === "participant" || m.type === "observer", `role of server ${m.serverId}`);
      next.set(m.serverId, { id: m.serverId, host: m.host, quorumPort: m.quorumPort, electionPort: m.electionPort, role: m.type });
    }
    const mine = next.get(this.myId);
    if (mine === undefined) {
      next.set(this.myId, this.members.get(this.myId)!);
    } else if (!samePeer(mine, this.me)) {
      // Its services stay bound where they are: the host restarts the transport to move them.
      this.logger.warn(
        { listed: describePeer(mine), bound: describePeer(this.me) },
        "this server's own peer address or role changed: its ports stay as they are until the transport restarts",
      );
    }
    const removed: number[] = [];
    const changed: number[] = [];
    for (const [id, old] of this.members) {
      if (id === this.myId) continue;
      const now = next.get(id);
      if (now === undefined) removed.push(id);
      else if (!samePeer(now, old)) changed.push(id);
    }
    const added = [...next.keys()].filter((id) => !this.members.has(id));
    this.members.clear();
    for (const [id, member] of next) this.members.set(id, member);

    for (const id of removed) {
      if (this.forgetPeer(id).undelivered) this.counters.notificationsDropped++;
    }
    for (const id of changed) {
      const { latest } = this.forgetPeer(id);
      if (latest !== undefined) this.sendNotification(id, latest);
    }
    const link = this.leaderLink;
    const leader = link && this.members.get(link.leaderId);
    if (link && leader) link.member = leader;
    this.logger.info({ members: [...this.members.keys()].sort((a, b) => a - b), added: added.sort((a, b) => a - b), removed, changed }, "peer members updated");
  }

  /**
   * Drops everything this server keeps for calling `id` (its election link and retry timer, a
   * notification waiting for it, its clients). Returns the last notification handed over for it,
   * if any, so that it can be sent to a new address, and whether that one may not have arrived.
   */
  private forgetPeer(id: number): { latest: Notification | undefined; undelivered: boolean } {
    let latest: Notification | undefined;
    let undelivered = false;
    const link = this.electionLinks.get(id);
    if (link) {
      this.electionLinks.delete(id);
      clearTimeout(link.retryTimer);
      link.retryTimer = undefined;
      const queued = this.dropElectionLink(link);
      latest = link.latest;
      undelivered = link.latestUnsure || queued > 0;
    }
    const waiting = this.observerLatest.get(id);
    if (waiting) {
      this.observerLatest.delete(id);
      latest = waiting;
      undelivered = true;
    }
    this.electionClients.get(id)?.close();
    this.electionClients.delete(id);
    // Closing a channel leaves its started calls running: the stream to a leader that moved goes
    // on, and the next one is dialled at the new address.
    this.quorumClients.get(id)?.close();
    this.quorumClients.delete(id);
    this.tlsFailuresLogged.delete(`election ${id}`);
    this.tlsFailuresLogged.delete(`quorum ${id}`);
    return { latest, undelivered };
  }

  /** Voters this server keeps an election link to (up, connecting or waiting out a back-off), in id order. */
  electionLinkPeers(): number[] {
    return [...this.electionLinks.keys()].sort((a, b) => a - b);
  }

  private sendToVoter(member: PeerMember, n: Notification): void {
    let link = this.electionLinks.get(member.id);
    if (!link) {
      link = new ElectionLink(member.id, this.limits.reconnectBackoffMsMin);
      this.electionLinks.set(member.id, link);
    }
    if (link.outbox) {
      link.latest = n;
      link.latestUnsure = false;
      if (!link.outbox.send(n)) this.counters.notificationsDropped++;
      return;
    }
    // No stream: keep only this one, and open a stream now or when the back-off allows.
    if (link.latestUnsure) this.counters.notificationsDropped++;
    link.latest = n;
    link.latestUnsure = true;
    this.retryElectionLink(link);
  }

  /** Opens a stream for `link`'s unsure latest notification now, or schedules it for when the back-off ends. */
  private retryElectionLink(link: ElectionLink): void {
    if (link.outbox || !link.latestUnsure || !this.running) return;
    const waitMs = link.retryAtMs - Date.now();
    if (waitMs > 0) {
      link.retryTimer ??= setTimeout(() => {
        link.retryTimer = undefined;
        this.retryElectionLink(link);
      }, waitMs);
      return;
    }
    const outbox = this.openElectionLink(link);
    link.latestUnsure = false;
    if (!outbox.send(link.latest!)) this.counters.notificationsDropped++;
  }

  /**
   * `peer` has just called us, so it is up whatever our last attempt toward it saw: a link of ours
   * waiting out its back-off is tried now, on a fresh channel (the old one's own reconnect back-off
   * may still run). Otherwise a restarted voter would hear our answer only a back-off later (up
   * to reconnectBackoffMsMax, twice over), and rejoin that much later.
   */
  private retryElectionLinkNow(peer: number): void {
    const link = this.electionLinks.get(peer);
    if (link === undefined || link.outbox !== undefined || !link.latestUnsure) return;
    clearTimeout(link.retryTimer);
    link.retryTimer = undefined;
    link.retryAtMs = 0;
    link.backoffMs = this.limits.reconnectBackoffMsMin;
    this.electionClients.get(peer)?.close();
    this.electionClients.delete(peer);
    this.retryElectionLink(link);
  }

  /** A new stream to voter `link.peer`; its outbox holds notifications until the callee answers. */
  private openElectionLink(link: ElectionLink): NotificationOutbox {
    const member = this.members.get(link.peer);
    // updateMembers forgets the link of a server that left or stopped voting.
    assert(member?.role === "participant", `election link to server ${link.peer}, which is no voting member`);
    const call = this.openCall(member, "election");
    const outbox = new NotificationOutbox(this, call, false);
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
        this.electionLinkFailed(link, call);
        return;
      }
      link.confirmed = true;
      this.noteClientAddress(member.id, metadata);
      link.backoffMs = this.limits.reconnectBackoffMsMin;
      this.tlsFailuresLogged.delete(`election ${member.id}`);
      logger.debug("election stream up");
      outbox.markReady();
    });
    call.on("data", (frame: Buffer) => {
      if (link.call !== call) return;
      this.onNotificationFrame(frame, member.id, () => this.electionLinkFailed(link, call));
    });
    // grpc-js ends every client call with 'status' ('error' first when it is not OK).
    call.on("error", (error: grpc.ServiceError) => {
      if (link.call !== call) return;
      logger.debug({ code: grpc.status[error.code], details: error.details }, "election stream failed");
      this.noteTlsFailure(logger, `election ${member.id}`, error.details);
      this.electionLinkFailed(link, call);
    });
    call.on("status", () => this.electionLinkFailed(link, call));
    return outbox;
  }

  private electionLinkFailed(link: ElectionLink, call: ClientCall): void {
    if (link.call !== call) return;
    this.counters.electionLinkFailures++;
    if (link.confirmed) {
      link.retryAtMs = Date.now() + this.limits.reconnectBackoffMsMin;
    } else {
      link.retryAtMs = Date.now() + link.backoffMs;
      link.backoffMs = Math.min(link.backoffMs * 2, this.limits.reconnectBackoffMsMax);
    }
    this.dropElectionLink(link);
    // Whatever was last sent may have been lost with the stream: send it again once a new one is up.
    if (link.latest !== undefined) {
      link.latestUnsure = true;
      this.retryElectionLink(link);
    }
  }

  /** Ends `link`'s stream; returns how many notifications were still queued on it (the last of them, `latest`, is kept). */
  private dropElectionLink(link: ElectionLink): number {
    const call = link.call;
    const outbox = link.outbox;
    link.call = undefined;
    link.outbox = undefined;
    link.confirmed = false;
    // What is still queued ends with `latest` (kept); the older ones are dropped.
    const discarded = outbox?.discard() ?? 0;
    if (discarded > 1) this.counters.notificationsDropped += discarded - 1;
    call?.cancel();
    return discarded;
  }

  private acceptElection(call: ServerCall): void {
    const peer = this.admit(call, "election");
    if (peer === undefined) return;
    this.noteClientAddress(peer, call.metadata);
    const previous = this.electionInbound.get(peer);
    if (previous) this.closeElectionInbound(previous, { code: grpc.status.CANCELLED, details: "replaced by a newer stream" });
    const inbound: ElectionInbound = { peer, call, outbox: new NotificationOutbox(this, call, true), closed: false };
    this.electionInbound.set(peer, inbound);
    this.retryElectionLinkNow(peer);
    call.sendMetadata(this.callMetadata());
    const waiting = this.observerLatest.get(peer);
    if (waiting) {
      this.observerLatest.delete(peer);
      inbound.outbox.send(waiting);
    }
    const gone = (): void => {
      if (inbound.closed) return;
      inbound.closed = true;
      inbound.outbox.discard();
      if (this.electionInbound.get(peer) === inbound) this.electionInbound.delete(peer);
    };
    call.on("data", (frame: Buffer) => {
      if (inbound.closed) return;
      this.onNotificationFrame(frame, peer, () => this.closeElectionInbound(inbound, { code: grpc.status.INVALID_ARGUMENT, details: "malformed frame" }));
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

  private closeElectionInbound(inbound: ElectionInbound, status: { code: grpc.status; details: string }): void {
    if (inbound.closed) return;
    inbound.closed = true;
    inbound.outbox.discard();
    if (this.electionInbound.get(inbound.peer) === inbound) this.electionInbound.delete(inbound.peer);
    inbound.call.emit("error", status);
  }

  private onNotificationFrame(frame: Buffer, from: number, malformed: () => void): void {
    let notifications: Notification[];
    try {
      notifications = decodeNotificationBatch(frame, from);
    } catch (error) {
      if (!(error instanceof PeerCodecError)) throw error;
      this.counters.malformedFrames++;
      this.logger.warn({ peer: from, err: error.message, frameBytes: frame.length }, "malformed election frame: closing the stream");
      malformed();
      return;
    }
    this.counters.notificationFramesReceived++;
    this.counters.notificationsReceived += notifications.length;
    if (notifications.length > 0) this.dispatch({ kind: "notifications", notifications });
  }

  // ---------------------------------------------------------------------------------------------
  // Quorum, learner side.

  /**
   * Follows `leaderId`: closes any stream to a previous (or the same) leader and opens one to this
   * leader's quorum port, reopened with back-off whenever it breaks, until the next
   * `followLeader` or `stopFollowing`.
   */
  followLeader(leaderId: number): void {
    const member = this.members.get(leaderId);
    assert(member !== undefined, `follow unknown server ${leaderId}`);
    assert(leaderId !== this.myId, "a server cannot follow itself");
    if (!this.running) return;
    this.stopFollowing();
    this.leaderLink = new LeaderLink(leaderId, member, this.limits.reconnectBackoffMsMin);
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
    if (!this.members.has(link.leaderId)) {
      this.quorumClients.get(link.leaderId)?.close();
      this.quorumClients.delete(link.leaderId);
    }
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
      this.counters.quorumMessagesDropped++;
      return;
    }
    stream.send(m);
  }

  private connectLeader(link: LeaderLink): void {
    link.timer = undefined;
    if (this.leaderLink !== link || !this.running) return;
    const member = link.member;
    const call = this.openCall(member, "quorum");
    const logger = this.logger.child({ peer: link.leaderId, stream: "quorum-learner" });
    const stream = new QuorumStream(this, link.leaderId, "learner", call, logger);
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
      this.noteClientAddress(link.leaderId, metadata);
      link.backoffMs = this.limits.reconnectBackoffMsMin;
      link.failures = 0;
      this.tlsFailuresLogged.delete(`quorum ${link.leaderId}`);
      logger.info("quorum stream to the leader open");
      stream.markOpen();
    });
    // grpc-js ends every client call with 'status' ('error' first when it is not OK).
    const done = (status: { code: grpc.status; details: string }): void => {
      if (stream.state === "closed") return;
      const wasOpen = stream.state === "open";
      const level = link.failures++ === 0 ? "info" : "debug";
      logger[level]({ code: grpc.status[status.code], details: status.details, wasOpen }, "quorum stream to the leader ended");
      this.noteTlsFailure(logger, `quorum ${link.leaderId}`, status.details);
      stream.ended();
    };
    call.on("error", done);
    call.on("status", done);
  }

  // ---------------------------------------------------------------------------------------------
  // Quorum, leader side.

  /** Queues `m` for learner `id` on its current stream; dropped when it has none. */
  sendToLearner(id: number, m: QuorumMessage): void {
    const stream = this.learnerStreams.get(id);
    if (!stream) {
      quorumBodySize(m);
      this.counters.quorumMessagesDropped++;
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

  private acceptLearner(call: ServerCall): void {
    const peer = this.admit(call, "quorum");
    if (peer === undefined) return;
    this.noteClientAddress(peer, call.metadata);
    const previous = this.learnerStreams.get(peer);
    if (previous) {
      this.logger.info({ peer }, "learner reconnected: replacing its previous quorum stream");
      previous.close({ code: grpc.status.CANCELLED, details: "replaced by a newer stream" });
    }
    const logger = this.logger.child({ peer, stream: "quorum-leader" });
    const stream = new QuorumStream(this, peer, "leader", call, logger);
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
    call.sendMetadata(this.callMetadata());
    logger.info({ address: call.getPeer() }, "learner connected");
    stream.markOpen();
  }

  // ---------------------------------------------------------------------------------------------
  // Shared plumbing.

  /**
   * Checks an incoming call's identity; refuses it (and returns undefined) unless it is another
   * server speaking our protocol — a member, or one outside the member list while there is room.
   */
  private admit(call: ServerCall, service: "election" | "quorum"): number | undefined {
    const refuse = (code: grpc.status, details: string): undefined => {
      this.counters.refusedCalls++;
      this.logger.warn({ service, peerAddress: call.getPeer(), details }, "peer call refused");
      call.on("error", () => {});
      call.emit("error", { code, details });
      return undefined;
    };
    if (!this.running) return refuse(grpc.status.UNAVAILABLE, "server not running");
    const id = callerId(call.metadata);
    if (id === undefined) return refuse(grpc.status.PERMISSION_DENIED, `missing or malformed ${SERVER_ID_METADATA}`);
    if (id === this.myId) return refuse(grpc.status.PERMISSION_DENIED, `server ${id} is this server`);
    const version = call.metadata.get(PEER_PROTOCOL_METADATA)[0];
    if (version !== String(PEER_PROTOCOL_VERSION))
      return refuse(grpc.status.FAILED_PRECONDITION, `peer protocol ${String(version)}, expected ${PEER_PROTOCOL_VERSION}`);
    const member = this.members.get(id);
    if (member !== undefined) {
      const refusal = this.security?.verifyCaller?.(member, call.getAuthContext().sslPeerCertificate);
      if (refusal !== undefined) return refuse(grpc.status.PERMISSION_DENIED, `server ${id}: ${refusal}`);
      return id;
    }
    // Outside the member list: no record to bind a certificate to, so the TLS layer's verification
    // of it is all there is (and mutual TLS already demands one; this only makes sure).
    if (this.security !== undefined && call.getAuthContext().sslPeerCertificate === undefined) {
      return refuse(grpc.status.PERMISSION_DENIED, `server ${id} is not a member and has no verified certificate`);
    }
    const unlisted = this.unlistedCallers();
    if (!unlisted.has(id) && unlisted.size >= this.limits.unlistedCallersMax) {
      return refuse(grpc.status.RESOURCE_EXHAUSTED, `server ${id} is not a member, and ${unlisted.size} such servers are connected already`);
    }
    this.logger.info({ peer: id, service, peerAddress: call.getPeer() }, "call from a server outside the member list accepted");
    return id;
  }

  /** Servers outside the member list with an election or quorum stream to this server. */
  private unlistedCallers(): Set<number> {
    const ids = new Set<number>();
    for (const id of this.electionInbound.keys()) if (!this.members.has(id)) ids.add(id);
    for (const id of this.learnerStreams.keys()) if (!this.members.has(id)) ids.add(id);
    return ids;
  }

  private serverCredentials(): grpc.ServerCredentials {
    return this.security?.serverCredentials() ?? grpc.ServerCredentials.createInsecure();
  }

  /**
   * With TLS, logs at warn (once, until the link works again) a link that failed because a
   * certificate was refused: the peer's by this server, or (most likely) this server's by the peer.
   */
  private noteTlsFailure(logger: Logger, link: string, details: string): void {
    if (this.security === undefined || this.tlsFailuresLogged.has(link)) return;
    if (isCertificateRefused(details)) {
      this.tlsFailuresLogged.add(link);
      logger.warn({ details }, "peer link failed its TLS handshake: this server does not accept the peer's certificate");
    } else if (isDroppedWhileConnecting(details)) {
      this.tlsFailuresLogged.add(link);
      logger.warn(
        { details },
        "peer link failed its TLS handshake: the peer dropped the connection, as it does when it does not accept this server's certificate",
      );
    }
  }

  private callMetadata(): grpc.Metadata {
    const metadata = new grpc.Metadata();
    metadata.set(SERVER_ID_METADATA, String(this.myId));
    metadata.set(PEER_PROTOCOL_METADATA, String(PEER_PROTOCOL_VERSION));
    const clientAddress = this.clientAddresses?.ownAddress;
    if (clientAddress !== undefined) metadata.set(CLIENT_ADDRESS_METADATA, clientAddress);
    return metadata;
  }

  /**
   * Records the client address server `peer` sent, once its identity is settled (an admitted
   * caller, a callee that named the member dialled). None is fine (an older peer); a malformed one
   * is ignored: it must not cost the link.
   */
  private noteClientAddress(peer: number, metadata: grpc.Metadata): void {
    const directory = this.clientAddresses;
    if (directory === undefined) return;
    const values = metadata.get(CLIENT_ADDRESS_METADATA);
    if (values.length === 0) return;
    if (values.length !== 1 || !directory.record(peer, values[0])) {
      this.logger.debug({ peer, values: values.length }, `ignoring a malformed ${CLIENT_ADDRESS_METADATA}`);
    }
  }

  /**
   * A new call to a peer's election service (Notify) or quorum service (Follow), on the one gRPC
   * client kept per peer and service. Frames pass as bytes: the peer codec reads and writes them.
   */
  private openCall(member: PeerMember, service: "election" | "quorum"): ClientCall {
    const cache = service === "quorum" ? this.quorumClients : this.electionClients;
    let client = cache.get(member.id);
    if (!client) {
      client = new grpc.Client(
        formatAddress(member.host, service === "quorum" ? member.quorumPort : member.electionPort),
        (this.channelCredentials ??= this.security?.channelCredentials() ?? grpc.credentials.createInsecure()),
        {
          ...this.connectionOptions(service),
          "grpc.initial_reconnect_backoff_ms": this.limits.reconnectBackoffMsMin,
          "grpc.max_reconnect_backoff_ms": this.limits.reconnectBackoffMsMax,
          // Connections of their own: no sharing with other PeerTransports in this process.
          "grpc.use_local_subchannel_pool": 1,
        },
      );
      cache.set(member.id, client);
    }
    const method = service === "quorum" ? quorumServiceDefinition()["Follow"]! : electionServiceDefinition()["Notify"]!;
    return client.makeBidiStreamRequest(
      method.path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      this.callMetadata(),
    );
  }

  /** The gRPC options both ends of a peer connection take: the service's message bound, and keepalive. */
  private connectionOptions(service: "election" | "quorum"): grpc.ChannelOptions {
    const messageBytesMax = service === "quorum" ? this.limits.quorumMessageBytesMax : this.limits.electionMessageBytesMax;
    return {
      "grpc.max_receive_message_length": messageBytesMax,
      "grpc.max_send_message_length": messageBytesMax,
      "grpc.keepalive_time_ms": this.limits.keepaliveTimeMs,
      "grpc.keepalive_timeout_ms": this.limits.keepaliveTimeoutMs,
      "grpc.keepalive_permit_without_calls": 1,
    };
  }

  /** @internal A quorum stream is over: forget it, report it, and (learner side) plan the next one. */
  quorumStreamEnded(stream: QuorumStream): void {
    this.liveStreams.delete(stream);
    if (stream.side === "leader") {
      if (this.learnerStreams.get(stream.peer) === stream) this.learnerStreams.delete(stream.peer);
    } else {
      const link = this.leaderLink;
      if (link && link.stream === stream) {
        link.stream = undefined;
        if (this.running) {
          const delayMs = link.backoffMs;
          link.backoffMs = Math.min(link.backoffMs * 2, this.limits.reconnectBackoffMsMax);
          link.timer = setTimeout(() => this.connectLeader(link), delayMs);
        }
      }
    }
    this.dispatch({ kind: "closed", stream });
  }

  /** @internal Flushes `target` once the current run of microtasks is over (with every other stream that has output). */
  scheduleFlush(target: Flushable): void {
    this.toFlush.push(target);
    this.flushSoon.request();
  }

  private flushAll(): void {
    // Targets queued while flushing (a drain) land in the same array and are flushed too.
    for (let i = 0; i < this.toFlush.length; i++) this.toFlush[i]!.flush();
    this.toFlush.length = 0;
  }

  /** @internal Queues a handler call for the transport's own microtask. */
  dispatch(event: HandlerEvent): void {
    if (!this.dispatchEnabled) return;
    this.events.push(event);
    this.drainSoon.request();
  }

  private drainEvents(): void {
    const events = this.events;
    try {
      while (events.length > 0 && this.dispatchEnabled) this.deliver(events.shift()!);
    } finally {
      // A handler threw (a bug in the host): the exception goes on, nothing is delivered twice,
      // and what is still queued is delivered in the next microtask.
      if (events.length > 0 && this.dispatchEnabled) this.drainSoon.request();
    }
  }

  private deliver(event: HandlerEvent): void {
    const handlers = this.handlers;
    switch (event.kind) {
      case "opened":
        handlers.quorumStreamOpened(event.stream.peer);
        return;
      case "messages": {
        // Messages the peer sent before it ended the stream are delivered; once this side closed
        // it (the host, an overflow, a malformed frame), the rest are not.
        const stream = event.stream;
        for (const m of event.messages) {
          if (stream.suppressed) return;
          handlers.quorumMessage(stream.peer, m);
        }
        return;
      }
      case "closed":
        handlers.quorumStreamClosed(event.stream.peer);
        return;
      case "notifications":
        for (const n of event.notifications) handlers.notification(n);
        return;
    }
  }
}

/** Whether two member records name the same addresses and role. */
function samePeer(a: PeerMember, b: PeerMember): boolean {
  return a.host === b.host && a.quorumPort === b.quorumPort && a.electionPort === b.electionPort && a.role === b.role;
}

function describePeer(m: PeerMember): string {
  return `${formatAddress(m.host, m.quorumPort)}:${m.electionPort}:${m.role}`;
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
