/**
 * How what the peer links receive reaches the host. Every handler call comes from this dispatch
 * (a microtask after the I/O or API call that caused it), never from inside a PeerTransport
 * method: the host may call any method from a handler, and a handler never sees a half-finished
 * call of its own. Per quorum stream: at most one `quorumStreamOpened`, then messages, then
 * exactly one `quorumStreamClosed` — for every stream, whichever side or cause ends it (including
 * a learner's stream that never connected, and every open stream at `stop()`). Nothing fires
 * after `stop()` resolves. Handlers must not throw.
 */
import type { QuorumMessage } from "../../consensus/messages.js";
import type { Notification } from "../../election/types.js";
import { MicrotaskOnce } from "./microtasks.js";

export interface PeerTransportHandlers {
  /** A notification from another server (`from` is the authenticated sender), or looped back. */
  notification(n: Notification): void;
  quorumMessage(from: number, m: QuorumMessage): void;
  /** A quorum stream with `peer` is up: on a learner, the leader accepted it; on the leader, a learner connected. */
  quorumStreamOpened(peer: number): void;
  /** A quorum stream with `peer` ended (exactly once per stream, whichever side or cause ended it). */
  quorumStreamClosed(peer: number): void;
}

/** A quorum stream as the dispatch needs it. */
interface DispatchedStream {
  readonly peer: number;
  /** Closed by this side: messages received but not yet delivered are dropped. */
  readonly suppressed: boolean;
}

export type HandlerEvent =
  | { kind: "opened"; stream: DispatchedStream }
  | { kind: "closed"; stream: DispatchedStream }
  | { kind: "messages"; stream: DispatchedStream; messages: QuorumMessage[] }
  | { kind: "notifications"; notifications: Notification[] };

export class HandlerDispatch {
  private readonly events: HandlerEvent[] = [];
  private readonly drainSoon = new MicrotaskOnce(() => this.drain());
  private enabled = true;

  constructor(private readonly handlers: PeerTransportHandlers) {}

  /** Queues a handler call for the dispatch's own microtask. */
  post(event: HandlerEvent): void {
    if (!this.enabled) return;
    this.events.push(event);
    this.drainSoon.request();
  }

  /** Delivers everything queued now. */
  drain(): void {
    const events = this.events;
    try {
      while (events.length > 0 && this.enabled) this.deliver(events.shift()!);
    } finally {
      // A handler threw (a bug in the host): the exception goes on, nothing is delivered twice,
      // and what is still queued is delivered in the next microtask.
      if (events.length > 0 && this.enabled) this.drainSoon.request();
    }
  }

  /** Nothing more is delivered, queued or not. */
  disable(): void {
    this.enabled = false;
    this.events.length = 0;
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
