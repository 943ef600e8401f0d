/**
 * The frames one side of a client stream writes, sent as one batch frame where several are ready
 * together (protocol version 2): a burst of pipelined requests, or the answers to one, costs one
 * gRPC message instead of one each. A frame pushed to an idle stream leaves once the current run of
 * microtasks is over (with whatever else that run pushed), not a turn of the event loop later.
 *
 * One message is being written at a time: while grpc-js has not taken it (HTTP/2 flow control holds
 * it back when the peer stops reading), frames wait here as they were pushed, and the next message —
 * at most limits.frameBatchBytesMax, or a single larger frame — is made when that write completes.
 * Frames are encoded only then, so a caller that pipelines far more than the stream takes holds its
 * own requests, not encoded copies of them, and a burst of a thousand requests costs one batch's
 * encoding in its turn, not all of them (the event loop keeps running its timers and pings).
 */
import { limits } from "../common/constants.js";

export class FrameOutbox<T> {
  private waiting: T[] = [];
  private head = 0;
  /** The frame encoded for the last message that did not fit in it: it opens the next one. */
  private carried: Buffer | undefined;
  private scheduled = false;
  private writing = false;
  private flushing = false;
  private readonly written = (): void => {
    this.writing = false;
    // A write that completes at once (a dropped stream) is followed by the loop in flush, not by recursion.
    if (!this.flushing) this.flush();
  };

  constructor(
    /**
     * Writes one message to the stream (a single frame, or a batch) and calls `done` once the
     * stream has taken it — or at once, if it drops the message (the stream is gone). `frameBytes`:
     * the encoded frames it carries, for a caller that counts what it holds.
     */
    private readonly send: (message: Buffer, done: () => void, frameBytes: number) => void,
    /** Wraps several encoded frames into one batch frame. */
    private readonly batch: (frames: readonly Buffer[]) => Buffer,
    /** Encodes one frame (when its message is made). */
    private readonly encode: (frame: T) => Buffer,
  ) {}

  /** Frames waiting to be written. */
  get queued(): number {
    return this.waiting.length - this.head + (this.carried === undefined ? 0 : 1);
  }

  push(frame: T): void {
    this.waiting.push(frame);
    if (!this.scheduled && !this.writing) {
      this.scheduled = true;
      queueMicrotask(() => {
        this.scheduled = false;
        this.flush();
      });
    }
  }

  /** Writes the next message now, unless one is still being written (its completion writes the next). */
  flush(): void {
    if (this.writing || this.flushing) return;
    this.flushing = true;
    try {
      while (!this.writing) {
        const message = this.nextMessage();
        if (message === undefined) break;
        this.writing = true;
        this.send(message.bytes, this.written, message.frameBytes);
      }
    } finally {
      this.flushing = false;
    }
  }

  /** Writes everything waiting now, whatever is still being written (the stream is about to end). */
  flushAll(): void {
    for (let message = this.nextMessage(); message !== undefined; message = this.nextMessage()) this.send(message.bytes, () => {}, message.frameBytes);
  }

  /** The stream is gone: what waits is dropped unencoded. */
  discard(): void {
    this.waiting = [];
    this.head = 0;
    this.carried = undefined;
  }

  /** Encodes waiting frames in order until the next would take the message past the batch bound. */
  private nextMessage(): { bytes: Buffer; frameBytes: number } | undefined {
    const frames: Buffer[] = [];
    let bytes = 0;
    for (;;) {
      let frame = this.carried;
      this.carried = undefined;
      if (frame === undefined) {
        if (this.head === this.waiting.length) break;
        frame = this.encode(this.waiting[this.head]!);
        this.head += 1;
      }
      if (frames.length > 0 && bytes + frame.length > limits.frameBatchBytesMax) {
        this.carried = frame;
        break;
      }
      frames.push(frame);
      bytes += frame.length;
    }
    if (this.head === this.waiting.length) {
      this.waiting = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
    if (frames.length === 0) return undefined;
    return { bytes: frames.length === 1 ? frames[0]! : this.batch(frames), frameBytes: bytes };
  }
}
