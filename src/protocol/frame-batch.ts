/**
 * A batch frame (ClientFrame.batch or ServerFrame.batch, protocol version 2) around frames that
 * are already encoded: `repeated <Frame> frames = 1` written from their bytes, with no decode and
 * re-encode of each frame through the generated code. Sized once, written into one buffer.
 */
import { putVarint32, varint32Size } from "../common/varint.js";

const WIRE_LEN = 2;

/** The batch member `batchField` of a frame, holding `frames` in order. */
export function encodeFrameBatch(batchField: number, frames: readonly Uint8Array[]): Buffer {
  let inner = 0;
  for (const frame of frames) inner += 1 + varint32Size(frame.length) + frame.length;
  const batchTag = (batchField << 3) | WIRE_LEN;
  const out = Buffer.allocUnsafe(varint32Size(batchTag) + varint32Size(inner) + inner);
  let pos = putVarint32(out, 0, batchTag);
  pos = putVarint32(out, pos, inner);
  for (const frame of frames) {
    out[pos++] = (1 << 3) | WIRE_LEN;
    pos = putVarint32(out, pos, frame.length);
    out.set(frame, pos);
    pos += frame.length;
  }
  return out;
}
