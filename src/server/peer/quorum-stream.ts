/**
 * One quorum stream, either end: a learner's call to its leader, or the leader's side of a
 * learner's call. Order on a stream is preserved exactly; nothing is carried over from one stream
 * to the next.
 *
 * Batching. A message sent to an idle stream leaves at the end of the current microtask run (with
 * whatever else the same run sent), not a turn of the event loop later. While the stream has a
 * frame that grpc-js has not yet handed to its socket, what is sent meanwhile queues and leaves as
 * one frame (split at a byte bound) the moment that write completes — batching under load, none
 * when idle. When grpc-js pushes back (write() returns false) messages wait until 'drain'. The
 * cores bound what they send a stream (the leader's in-flight window per follower, a learner's
 * forwarded writes by its client doors' bounds), so the queue's own bound is a last line that a
 * correct server never reaches: a stream whose queue passes it is closed (the core resyncs).
 */
import * as grpc from "@grpc/grpc-js";
import type { Logger } from "pino";
import type { QuorumMessage } from "../../consensus/messages.js";
import type { Flushable } from "./microtasks.js";
import type { AnyCall, ClientCall, ServerCall } from "./peer-calls.js";
import { decodeQuorumBatch, encodeQuorumBatch, PeerCodecError, quorumBodySize, quorumEntrySize } from "./peer-codec.js";
import type { PeerLinkContext } from "./peer-context.js";

export class QuorumStream implements Flushable {
  state: "pending" | "open" | "closed" = "pending";
  /** Closed by this side: messages received but not yet delivered are dropped. */
  suppressed = false;
  private messages: QuorumMessage[] = [];
  private bodySizes: number[] = [];
  private entrySizes: number[] = [];
  private head = 0;
  private queuedBytes = 0;
  private blocked = false;
  /** A flush is scheduled (FlushScheduler). */
  private dirty = false;
  /** Frames handed to grpc-js whose write has not completed yet. */
  private writesPending = 0;
  private readonly writeCompleted = (): void => {
    this.writesPending--;
    if (this.writesPending === 0 && !this.blocked && this.queuedMessages > 0) this.flush();
  };

  constructor(
    private readonly ctx: PeerLinkContext,
    /** Called once when the stream is over, whoever ended it. */
    private readonly onEnded: (stream: QuorumStream) => void,
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
      this.ctx.counters.quorumMessagesDropped++;
      return;
    }
    const body = quorumBodySize(m);
    const entry = quorumEntrySize(m, body);
    const limits = this.ctx.limits;
    if (entry > limits.quorumMessageBytesMax - 16) {
      this.logger.error(
        { type: m.type, bytes: entry, limit: limits.quorumMessageBytesMax },
        "quorum message larger than the quorum message bound: closing the stream",
      );
      this.ctx.counters.quorumMessagesDropped++;
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
      this.ctx.flusher.schedule(this);
    }
  }

  flush(): void {
    this.dirty = false;
    if (this.state === "closed") return;
    const limits = this.ctx.limits;
    const counters = this.ctx.counters;
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
    const limits = this.ctx.limits;
    const queued = this.queuedMessages;
    if (queued <= limits.quorumQueueMessagesMax && this.queuedBytes <= limits.quorumQueueBytesMax) return false;
    this.ctx.counters.quorumStreamsOverflowed++;
    this.logger.error(
      { queuedMessages: queued, queuedBytes: this.queuedBytes, messagesMax: limits.quorumQueueMessagesMax, bytesMax: limits.quorumQueueBytesMax },
      "quorum stream queue over its bound (the core bounds what it sends, so this is a bug): closing the stream",
    );
    this.close({ code: grpc.status.RESOURCE_EXHAUSTED, details: "peer queue over its bound" });
    return true;
  }

  /** The peer answered (learner side: the leader's response headers arrived). */
  markOpen(): void {
    if (this.state !== "pending") return;
    this.state = "open";
    this.ctx.dispatch.post({ kind: "opened", stream: this });
  }

  private onFrame(frame: Buffer): void {
    if (this.state === "closed") return;
    let messages: QuorumMessage[];
    try {
      messages = decodeQuorumBatch(frame);
    } catch (error) {
      if (!(error instanceof PeerCodecError)) throw error;
      this.ctx.counters.malformedFrames++;
      this.logger.warn({ err: error.message, frameBytes: frame.length }, "malformed quorum frame: closing the stream");
      this.close({ code: grpc.status.INVALID_ARGUMENT, details: error.message });
      return;
    }
    const counters = this.ctx.counters;
    counters.quorumFramesReceived++;
    counters.quorumMessagesReceived += messages.length;
    if (messages.length > 0) this.ctx.dispatch.post({ kind: "messages", stream: this, messages });
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
    this.onEnded(this);
  }
}
