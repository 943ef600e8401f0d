/**
 * The peer port in memory (hashicorp/raft's InmemTransport, with faults): election notifications
 * are datagram-like — delayed, lost, duplicated, reordered — but a lost one breaks the link and the
 * link resends its last notification when it comes back (ZooKeeper's QuorumCnxManager keeps
 * lastMessageSent per peer for this); quorum traffic rides FIFO streams, learner to leader, that a
 * partition, a crash or bad luck breaks, noisily (both ends told) or silently (only timeouts tell).
 * Partitions may be one-way. Its contract is PeerTransport's: a learner's stream is accepted by any
 * running member, whatever its role; a newer stream from the same learner replaces the older one;
 * every end of a stream that closes under it is told (the learner then leaves its term).
 */
import type { QuorumMessage } from "../../../src/consensus/messages.js";
import type { Notification } from "../../../src/election/types.js";
import type { PeerPort } from "../../../src/replica/ports.js";
import type { Prng } from "../prng.js";
import type { Scheduler } from "./scheduler.js";

/** Where a member's inbound peer traffic goes (its Replica). */
export interface PeerEndpoint {
  onNotification(notification: Notification): void;
  onQuorumMessage(from: number, message: QuorumMessage): void;
  onQuorumStreamClosed(peer: number): void;
}

export interface NetworkFaults {
  netDelayMsMax: number;
  /** Election datagrams: loss and duplication probabilities. */
  electionLoss: number;
  electionDuplicate: number;
  /** Zab streams: the chance that a message breaks its stream. */
  streamBreak: number;
  /**
   * The chance that a partition or a crash breaks a stream silently (its ends are not told; only
   * their timeouts tell), else noisily; a half unless set. Scripted tests set 0 or 1 so that what
   * they show does not hang on how many draws came before.
   */
  silentBreak?: number;
}

interface Stream {
  learner: number;
  leader: number;
  state: "pending" | "open" | "closed";
  /** The leader's term (termOf) when it accepted the stream. */
  leaderTerm: number;
  /** What the learner sent before the stream opened. */
  queued: QuorumMessage[];
  /** The last scheduled arrival per direction, to keep each direction FIFO. */
  lastArrivalToLeader: number;
  lastArrivalToLearner: number;
}

/** An election notification on its way, until it is delivered or lost. */
export interface NotificationInFlight {
  from: number;
  to: number;
  notification: Notification;
}

interface Member {
  endpoint: PeerEndpoint;
  /** The stream this member follows its leader on. */
  leaderStream: Stream | undefined;
  /** Leader side: the current stream of each learner. */
  learnerStreams: Map<number, Stream>;
}

export class SimNetwork {
  private readonly members = new Map<number, Member>();
  private readonly blocked = new Set<string>();
  private readonly lastNotification = new Map<string, Notification>();
  /** Notifications scheduled for delivery, in send order (a scripted test may lose them). */
  private readonly notificationsInFlight = new Set<NotificationInFlight>();
  /** Told of every quorum message as it is sent, with the term the leader accepted its stream in (the simulator's ack checker). */
  onQuorumSend: ((from: number, to: number, message: QuorumMessage, leaderTerm: number) => void) | undefined;
  /** A member's current term, as the simulator counts them. */
  termOf: (id: number) => number = () => 0;

  constructor(
    private readonly scheduler: Scheduler,
    private readonly prng: Prng,
    readonly faults: NetworkFaults,
    private readonly trace: (line: string) => void,
    private readonly memberIds: readonly number[],
  ) {}

  /** A member's process (re)started: its peer port. Peers resend their last notification to it. */
  attach(id: number, endpoint: PeerEndpoint): PeerPort {
    const member: Member = { endpoint, leaderStream: undefined, learnerStreams: new Map() };
    this.members.set(id, member);
    for (const peer of this.memberIds) {
      this.lastNotification.delete(`${id}>${peer}`);
      if (peer !== id) this.scheduler.at(this.delay(), () => this.resend(peer, id));
    }
    return {
      sendNotification: (to, notification) => this.sendNotification(id, to, notification),
      followLeader: (leaderId) => this.follow(member, id, leaderId),
      stopFollowing: () => {
        const stream = member.leaderStream;
        member.leaderStream = undefined;
        if (stream) this.close(stream, "learner stopped following", true, "leader");
      },
      sendToLeader: (message) => {
        const stream = member.leaderStream;
        if (stream?.state === "pending") stream.queued.push(message);
        else if (stream?.state === "open") this.transmit(stream, true, message);
      },
      sendToLearner: (learnerId, message) => {
        const stream = member.learnerStreams.get(learnerId);
        if (stream?.state === "open") this.transmit(stream, false, message);
      },
      closeLearner: (learnerId) => {
        const stream = member.learnerStreams.get(learnerId);
        if (stream) this.close(stream, "leader dropped learner", true, "learner");
      },
    };
  }

  /** A member's process died: its streams break, noisily or (half the time) silently. */
  detach(id: number): void {
    const member = this.members.get(id);
    if (!member) return;
    this.members.delete(id);
    const silent = this.prng.chance(this.silentBreakChance);
    if (member.leaderStream) this.close(member.leaderStream, "crash", !silent);
    for (const stream of member.learnerStreams.values()) this.close(stream, "crash", !silent);
  }

  block(from: number, to: number): void {
    this.blocked.add(`${from}>${to}`);
  }

  isBlocked(from: number, to: number): boolean {
    return this.blocked.has(`${from}>${to}`);
  }

  /** Every partition heals; each link that was cut resends its last notification. */
  healAll(): void {
    for (const link of this.blocked) {
      const [from, to] = link.split(">").map(Number) as [number, number];
      this.scheduler.at(this.delay(), () => this.resend(from, to));
    }
    this.blocked.clear();
  }

  /**
   * A scripted test's loss: every election notification in flight is lost, and returned in send
   * order. Unlike a loss the network draws itself, no link breaks, so none resends: what the
   * senders do about it is the election's own business (its resend on tick). The simulator never
   * calls this.
   */
  loseNotificationsInFlight(): NotificationInFlight[] {
    const lost = [...this.notificationsInFlight];
    this.notificationsInFlight.clear();
    return lost;
  }

  // ---- election

  private sendNotification(from: number, to: number, notification: Notification): void {
    this.lastNotification.set(`${from}>${to}`, notification);
    if (this.isBlocked(from, to)) return;
    if (this.prng.chance(this.faults.electionLoss)) {
      this.scheduler.at(100 + this.prng.int(400), () => this.resend(from, to));
      return;
    }
    this.deliverNotification(from, to, notification);
    if (this.prng.chance(this.faults.electionDuplicate)) this.deliverNotification(from, to, notification);
  }

  private deliverNotification(from: number, to: number, notification: Notification): void {
    const flight: NotificationInFlight = { from, to, notification };
    this.notificationsInFlight.add(flight);
    this.scheduler.at(
      this.delay(),
      () => {
        if (this.notificationsInFlight.delete(flight)) this.members.get(to)?.endpoint.onNotification(notification);
      },
      to,
    );
  }

  private resend(from: number, to: number): void {
    const notification = this.lastNotification.get(`${from}>${to}`);
    if (notification === undefined || !this.members.has(from) || !this.members.has(to)) return;
    this.sendNotification(from, to, notification);
  }

  // ---- quorum streams

  private follow(member: Member, learner: number, leader: number): void {
    if (member.leaderStream) this.close(member.leaderStream, "learner follows anew", true, "leader");
    const stream: Stream = { learner, leader, state: "pending", leaderTerm: -1, queued: [], lastArrivalToLeader: 0, lastArrivalToLearner: 0 };
    member.leaderStream = stream;
    this.scheduler.at(this.delay(), () => {
      if (stream.state !== "pending") return;
      const target = this.members.get(leader);
      if (!target || this.isBlocked(learner, leader) || this.isBlocked(leader, learner)) {
        this.close(stream, target ? "connect blocked" : "connect refused", true);
        return;
      }
      const previous = target.learnerStreams.get(learner);
      if (previous) this.close(previous, "replaced by a newer stream", true, "leader");
      target.learnerStreams.set(learner, stream);
      stream.state = "open";
      stream.leaderTerm = this.termOf(leader);
      const queued = stream.queued;
      stream.queued = [];
      for (const message of queued) this.transmit(stream, true, message);
    });
  }

  private transmit(stream: Stream, toLeader: boolean, message: QuorumMessage): void {
    const from = toLeader ? stream.learner : stream.leader;
    const to = toLeader ? stream.leader : stream.learner;
    this.onQuorumSend?.(from, to, message, stream.leaderTerm);
    if (this.isBlocked(from, to)) {
      // A partition stalls the stream: both ends learn at once, or only timeouts tell. (Drawn as the
      // chance of the former, as ever, so that recorded seeds replay.)
      this.close(stream, "partitioned", this.prng.chance(1 - this.silentBreakChance));
      return;
    }
    if (this.prng.chance(this.faults.streamBreak)) {
      this.close(stream, "stream broke", true);
      return;
    }
    const arrival = Math.max(this.scheduler.nowMs + this.delay(), toLeader ? stream.lastArrivalToLeader : stream.lastArrivalToLearner);
    if (toLeader) stream.lastArrivalToLeader = arrival;
    else stream.lastArrivalToLearner = arrival;
    this.scheduler.at(
      arrival - this.scheduler.nowMs,
      () => {
        if (stream.state !== "open") return;
        this.members.get(to)?.endpoint.onQuorumMessage(from, message);
      },
      to,
    );
  }

  /**
   * Ends a stream. `notify` tells its ends (after a delay; `only` limits it to one end, the one that
   * did not close it itself); otherwise only their timeouts will tell.
   */
  private close(stream: Stream, why: string, notify: boolean, only?: "leader" | "learner"): void {
    if (stream.state === "closed") return;
    stream.state = "closed";
    this.trace(`stream ${stream.learner}→${stream.leader} closed: ${why}${notify ? "" : " (silently)"}`);
    const leaderSide = this.members.get(stream.leader);
    const isLeaderCurrent = leaderSide?.learnerStreams.get(stream.learner) === stream;
    if (isLeaderCurrent) leaderSide.learnerStreams.delete(stream.learner);
    const learnerSide = this.members.get(stream.learner);
    const isLearnerCurrent = learnerSide?.leaderStream === stream;
    if (isLearnerCurrent) learnerSide.leaderStream = undefined;
    if (!notify) return;
    if (only !== "learner" && isLeaderCurrent) this.tellClosed(stream.leader, leaderSide, stream.learner);
    if (only !== "leader" && isLearnerCurrent) this.tellClosed(stream.learner, learnerSide, stream.leader);
  }

  private tellClosed(id: number, member: Member, peer: number): void {
    this.scheduler.at(
      this.delay(),
      () => {
        if (this.members.get(id) === member) member.endpoint.onQuorumStreamClosed(peer);
      },
      id,
    );
  }

  private get silentBreakChance(): number {
    return this.faults.silentBreak ?? 0.5;
  }

  private delay(): number {
    return 1 + this.prng.int(this.faults.netDelayMsMax);
  }
}
