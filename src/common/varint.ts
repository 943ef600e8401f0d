/**
 * Varint sizes and the one 32-bit varint writer, for every binary format that sizes its buffer before writing it: the client
 * protocol's frame batches (src/protocol/frame-batch.ts), the peer codec (src/server/peer) and the
 * store's own records (src/store/bytes).
 * Unrolled rather than looped: zxids are above 2^32, so the long branches are the common ones.
 */

/** Bytes of the varint of an unsigned 32-bit integer. */
export function varint32Size(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  return 5;
}

/** Bytes of the varint of a non-negative safe integer (at most 2^53 - 1: eight bytes). */
export function varUintSize(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  if (value < 0x800000000) return 5;
  if (value < 0x40000000000) return 6;
  if (value < 0x2000000000000) return 7;
  return 8;
}

/** Writes the varint of an unsigned 32-bit integer at `pos` of `out`; returns the position after it. */
export function putVarint32(out: Uint8Array, pos: number, value: number): number {
  while (value > 0x7f) {
    out[pos++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  out[pos++] = value;
  return pos;
}
