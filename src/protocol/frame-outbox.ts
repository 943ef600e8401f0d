/**
 * The frames one side of a client stream writes during one turn of the event loop, sent as one
 * batch frame when the turn ends (protocol version 2): a burst of pipelined requests, or the
 * answers to one, costs one gRPC message instead of one each. Order is kept; a frame that would
 * push the batch past limits.frameBatchBytesMax first sends what is queued.
 */
import { limits } from "../common/constants.js";

export class FrameOutbox {
  private frames: Buffer[] = [];
  private bytes = 0;
  private scheduled = false;

  constructor(
    /** Writes one message to the stream (a single frame, or a batch). */
    private readonly send: (message: Buffer) => void,
    /** Wraps several encoded frames into one batch frame. */
    private readonly batch: (frames: readonly Buffer[]) => Buffer,
  ) {}

  push(frame: Buffer): void {
    if (this.bytes + frame.length > limits.frameBatchBytesMax) this.flush();
    this.frames.push(frame);
    this.bytes += frame.length;
    if (!this.scheduled) {
      this.scheduled = true;
      // setImmediate, not a microtask: after every I/O callback of this turn, so the burst is whole.
      setImmediate(() => {
        this.scheduled = false;
        this.flush();
      });
    }
  }

  flush(): void {
    const frames = this.frames;
    if (frames.length === 0) return;
    this.frames = [];
    this.bytes = 0;
    this.send(frames.length === 1 ? frames[0]! : this.batch(frames));
  }
}
