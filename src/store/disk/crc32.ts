import * as zlib from "node:zlib";

/**
 * CRC-32 (IEEE 802.3, as zlib and gzip compute it). Node >= 20.15 has it built in. `previous`
 * continues a running checksum: crc32(b, crc32(a)) is the checksum of a followed by b.
 */
export const crc32: (data: Uint8Array, previous?: number) => number =
  typeof (zlib as { crc32?: unknown }).crc32 === "function" ? (data, previous = 0) => zlib.crc32(data, previous) : tableCrc32;

let table: Uint32Array | undefined;

/** The portable fallback, and the reference the built-in is tested against. */
export function tableCrc32(data: Uint8Array, previous = 0): number {
  if (table === undefined) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n += 1) {
      let c = n;
      for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  let crc = (previous ^ 0xffffffff) >>> 0;
  for (let i = 0; i < data.length; i += 1) {
    crc = (table[(crc ^ (data[i] as number)) & 0xff] as number) ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
}
