/**
 * ZooKeeper's client framing: a 4-byte big-endian length, then that many bytes of record.
 * The server refuses a length below 0 or above jute.maxbuffer (NIOServerCnxn.readLength).
 *
 * FrameSplitter turns a TCP byte stream, cut anywhere, into whole frames. It holds at most one
 * partial frame, allocates a frame's buffer only after its length passed the checks, and after
 * one bad length it stays failed (the connection is to be closed).
 *
 * Pure: no sockets, no server state.
 */
import { assert } from "../../common/assert.js";
import { pooledBytes } from "../../common/pooled-bytes.js";
import { JUTE_MAX_BUFFER_BYTES, JuteError } from "./jute.js";

export const FRAME_LENGTH_PREFIX_BYTES = 4;
/** The largest length a frame's signed 32-bit prefix can carry. */
const FRAME_LENGTH_MAX_BYTES = 0x7fffffff;

/**
 * Prefixes a record with its length. jute.maxbuffer bounds what a server reads, not what it
 * writes: ZooKeeper sends a reply of any size and leaves it to the client's own jute.maxbuffer
 * whether to take it. Only the length field's range is a limit here.
 */
export function encodeFrame(record: Uint8Array): Uint8Array {
  if (record.byteLength > FRAME_LENGTH_MAX_BYTES)
    throw new JuteError("length-over-limit", `a record of ${record.byteLength} bytes does not fit a frame's length`);
  const frame = pooledBytes(FRAME_LENGTH_PREFIX_BYTES + record.byteLength);
  new DataView(frame.buffer, frame.byteOffset, FRAME_LENGTH_PREFIX_BYTES).setInt32(0, record.byteLength, false);
  frame.set(record, FRAME_LENGTH_PREFIX_BYTES);
  return frame;
}

/** Checks a frame's length prefix the way ZooKeeper's server does. */
export function checkFrameLength(length: number, frameMaxBytes = JUTE_MAX_BUFFER_BYTES): void {
  if (length < 0) throw new JuteError("negative-length", `frame length ${length}`);
  if (length > frameMaxBytes) throw new JuteError("length-over-limit", `frame length ${length} above ${frameMaxBytes}`);
}

export class FrameSplitter {
  private readonly header = new Uint8Array(FRAME_LENGTH_PREFIX_BYTES);
  private headerFilled = 0;
  /** The frame being filled, allocated once its length is known and checked. */
  private body: Uint8Array | null = null;
  private bodyFilled = 0;
  private failure: JuteError | null = null;

  constructor(private readonly frameMaxBytes = JUTE_MAX_BUFFER_BYTES) {
    assert(Number.isInteger(frameMaxBytes) && frameMaxBytes >= 0 && frameMaxBytes <= 0x7fffffff, "frameMaxBytes must fit a jute int");
  }

  /** Bytes held from a frame not yet complete. */
  get pendingBytes(): number {
    return this.headerFilled + this.bodyFilled;
  }

  /**
   * Feeds the next chunk of the stream; returns the frames it completed, in order.
   * Throws JuteError on a bad length, and again on every later call.
   */
  push(chunk: Uint8Array): Uint8Array[] {
    if (this.failure !== null) throw this.failure;
    const frames: Uint8Array[] = [];
    let at = 0;
    while (at < chunk.byteLength) {
      if (this.body === null) {
        const take = Math.min(FRAME_LENGTH_PREFIX_BYTES - this.headerFilled, chunk.byteLength - at);
        this.header.set(chunk.subarray(at, at + take), this.headerFilled);
        this.headerFilled += take;
        at += take;
        if (this.headerFilled < FRAME_LENGTH_PREFIX_BYTES) break;
        const length = new DataView(this.header.buffer).getInt32(0, false);
        try {
          checkFrameLength(length, this.frameMaxBytes);
        } catch (error) {
          this.failure = error as JuteError;
          throw error;
        }
        // Filled completely before it is handed on.
        this.body = pooledBytes(length);
        this.bodyFilled = 0;
      }
      const take = Math.min(this.body.byteLength - this.bodyFilled, chunk.byteLength - at);
      this.body.set(chunk.subarray(at, at + take), this.bodyFilled);
      this.bodyFilled += take;
      at += take;
      if (this.bodyFilled === this.body.byteLength) {
        frames.push(this.body);
        this.body = null;
        this.bodyFilled = 0;
        this.headerFilled = 0;
      }
    }
    return frames;
  }
}
