/**
 * The frames one side of a client stream writes, sent as one batch frame where several are ready
 * together (protocol version 2): a burst of pipelined requests, or the answers to one, costs one
 * gRPC message instead of one each. A frame pushed to an idle stream leaves once the current run of
 * microtasks is over (with whatever else that run pushed), not a turn of the event loop later; while
 * a message is still being written, frames queue and leave together when that write completes —
 * batching under load, no waiting when idle. Order is kept; a frame that would push the batch past
 * limits.frameBatchBytesMax first sends what is queued.
 */
import { limits } from "../common/constants.js";

export class FrameOutbox {
  private frames: Buffer[] = [];
  private bytes = 0;
  private scheduled = false;
  private writesPending = 0;
  private readonly written = (): void => {
    this.writesPending--;
    if (this.writesPending === 0) this.flush();
  };

  constructor(
    /**
     * Writes one message to the stream (a single frame, or a batch) and calls `done` once the
     * stream has taken it — or at once, if it drops the message (the stream is gone).
     */
    private readonly send: (message: Buffer, done: () => void) => void,
    /** Wraps several encoded frames into one batch frame. */
    private readonly batch: (frames: readonly Buffer[]) => Buffer,
  ) {}

  push(frame: Buffer): void {
    if (this.bytes + frame.length > limits.frameBatchBytesMax) this.flush();
    this.frames.push(frame);
    this.bytes += frame.length;
    if (!this.scheduled && this.writesPending === 0) {
      this.scheduled = true;
      queueMicrotask(() => {
        this.scheduled = false;
        if (this.writesPending === 0) this.flush();
      });
    }
  }

  flush(): void {
    const frames = this.frames;
    if (frames.length === 0) return;
    this.frames = [];
    this.bytes = 0;
    this.writesPending++;
    this.send(frames.length === 1 ? frames[0]! : this.batch(frames), this.written);
  }
}
