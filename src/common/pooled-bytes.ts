/**
 * `length` uninitialised bytes as a plain Uint8Array, carved out of Node's shared Buffer pool when
 * small (Buffer.allocUnsafe's rule: under 4 KiB) instead of getting a backing store of its own.
 * Every ArrayBuffer born in the young generation costs the scavenger a sweep, and a write used to
 * allocate several on each hop (encoders, frame copies); fewer of them means fewer and shorter
 * pauses. Callers must write every byte they expose, and should not keep a small one for long:
 * it keeps its whole 8 KiB pool slab alive.
 */
export function pooledBytes(length: number): Uint8Array {
  const buffer = Buffer.allocUnsafe(length);
  return new Uint8Array(buffer.buffer, buffer.byteOffset, length);
}
