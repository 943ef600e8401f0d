/**
 * A client connection for tests of the replica's client side (pipeline, sessions, opener): it
 * records the replies and events the server sends it, how it was ended, and when it was told of a
 * failed auth.
 */
import { initialAuthInfo } from "../../src/replica/auth.js";
import type { ClientConnection } from "../../src/replica/pipeline.js";
import type { Reply } from "../../src/replica/requests.js";
import type { Id, WatchEvent } from "../../src/store/types.js";

export class RecordingConnection implements ClientConnection {
  open = true;
  authInfo: readonly Id[];
  readonly replies = new Map<number, Reply>();
  readonly events: WatchEvent[] = [];
  endReason: "closed" | "expired" | "moved" | undefined;
  /** Replies sent when authFailed was called: the door learns of a failed auth before its answer goes out. */
  readonly authFailedAt: number[] = [];

  constructor(readonly remoteAddress = "127.0.0.1") {
    this.authInfo = initialAuthInfo(remoteAddress);
  }

  sendReply(xid: number, reply: Reply): void {
    this.replies.set(xid, reply);
  }

  sendEvent(event: WatchEvent): void {
    this.events.push(event);
  }

  end(reason: "closed" | "expired" | "moved"): void {
    this.open = false;
    this.endReason = reason;
  }

  authFailed(): void {
    this.authFailedAt.push(this.replies.size);
  }
}
