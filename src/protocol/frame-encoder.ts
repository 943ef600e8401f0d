/**
 * Runs a generated encoder (gen/client.ts) into one reused BinaryWriter and hands the frame out as
 * a Buffer from Node's pool. BinaryWriter#finish() would copy it with Uint8Array#slice, a fresh
 * ArrayBuffer per frame that costs V8 about three times the encoding of a small frame; a new
 * writer per frame costs as much again. The writer's buffer and write position are private to
 * @bufbuild/protobuf (pinned), so they are reached through one cast, and
 * test/unit/frame-encoder.test.ts holds the result to what finish() returns.
 */
import { BinaryWriter } from "@bufbuild/protobuf/wire";

/** A writer that grew past this for one frame is dropped rather than kept holding the memory. */
const KEPT_BYTES_MAX = 64 * 1024;

interface WriterInternals {
  buffer: Uint8Array;
  pos: number;
  stackPos: number[];
}

let writer = new BinaryWriter();

/** A generated message type: ClientFrame, ServerFrame. */
interface Encodes<T> {
  encode(message: T, writer: BinaryWriter): BinaryWriter;
}

/** `message` encoded by `type`, as a Buffer of its own. Whatever the encoder throws passes through, and the next frame starts clean. */
export function encodeFrame<T>(type: Encodes<T>, message: T): Buffer {
  let state: WriterInternals;
  try {
    state = type.encode(message, writer) as unknown as WriterInternals;
  } catch (error) {
    writer = new BinaryWriter();
    throw error;
  }
  const frame = Buffer.from(state.buffer.subarray(0, state.pos));
  if (state.buffer.byteLength > KEPT_BYTES_MAX) writer = new BinaryWriter();
  else state.pos = 0;
  return frame;
}
