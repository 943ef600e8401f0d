/**
 * Adler-32 (RFC 1950) as java.util.zip.Adler32 computes it: ZooKeeper's checksum of every txn log
 * record and of a snapshot's stream up to each of its seals.
 */
const MODULUS = 65521;
/** The most bytes summed before a reduction keeps both sums below 2^32 (zlib's NMAX). */
const BYTES_PER_REDUCTION = 5552;

/** The checksum of `bytes`, continuing from `previous` (1 starts afresh); an unsigned 32-bit value. */
export function adler32(bytes: Uint8Array, previous = 1): number {
  let a = previous & 0xffff;
  let b = previous >>> 16;
  let i = 0;
  while (i < bytes.length) {
    const end = Math.min(i + BYTES_PER_REDUCTION, bytes.length);
    for (; i < end; i++) {
      a += bytes[i]!;
      b += a;
    }
    a %= MODULUS;
    b %= MODULUS;
  }
  return ((b << 16) | a) >>> 0;
}
