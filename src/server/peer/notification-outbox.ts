/**
 * The notifications waiting to be written to one election stream (an outbound link's call, or an
 * observer's inbound one), batched into frames as quorum messages are. The queue is bounded: over
 * its bound a notification is dropped, which is safe for the election, whose latest notification
 * for a server supersedes the older ones. An outbound link's queue holds its notifications until
 * the callee has answered (`markReady`), so nothing piles up inside grpc-js while a connection
 * attempt is pending.
 */
import type { Notification } from "../../election/types.js";
import type { Flushable } from "./microtasks.js";
import type { AnyCall } from "./peer-calls.js";
import { encodeNotificationBatch, notificationEntrySize } from "./peer-codec.js";
import type { PeerLinkContext } from "./peer-context.js";

export class NotificationOutbox implements Flushable {
  private queue: Notification[] = [];
  private blocked = false;
  private dirty = false;
  private discarded = false;

  constructor(
    private readonly ctx: PeerLinkContext,
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
    if (this.discarded || this.queue.length >= this.ctx.limits.electionQueueMessagesMax) return false;
    this.queue.push(n);
    if (this.ready && !this.blocked && !this.dirty) {
      this.dirty = true;
      this.ctx.flusher.schedule(this);
    }
    return true;
  }

  flush(): void {
    this.dirty = false;
    const queue = this.queue;
    const counters = this.ctx.counters;
    const batchBytesMax = this.ctx.limits.electionBatchBytesMax;
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

  /** The callee answered: what waited is written now. */
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
