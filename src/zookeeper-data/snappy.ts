/**
 * Decompression of the snapshots ZooKeeper 3.6+ writes with snapshot.compression.method=snappy:
 * snappy-java's SnappyOutputStream framing (a 16-byte header — the magic "\x82SNAPPY\0", then
 * version and oldest compatible version as big-endian ints — followed by blocks, each a big-endian
 * int length and that many bytes of raw snappy) around Google's raw snappy format (a varint of the
 * uncompressed length, then literals and back-references).
 *
 * Decoding only, on untrusted bytes: every length and offset is checked before it is used, and
 * the output is bounded, so a damaged file ends in a SnappyError, never in an oversized allocation.
 */
export class SnappyError extends Error {
  override readonly name = "SnappyError";
}

const STREAM_MAGIC = [0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00];
const STREAM_HEADER_BYTES = 16;

/** Whether `bytes` begins as a snappy-java stream does. */
export function isSnappyJavaStream(bytes: Uint8Array): boolean {
  return bytes.length >= STREAM_MAGIC.length && STREAM_MAGIC.every((byte, i) => bytes[i] === byte);
}

/** The bytes a snappy-java stream holds; `outputBytesMax` bounds the result. */
export function decodeSnappyJavaStream(stream: Uint8Array, outputBytesMax: number): Uint8Array {
  if (!isSnappyJavaStream(stream)) throw new SnappyError("not a snappy-java stream (bad magic)");
  if (stream.length < STREAM_HEADER_BYTES) throw new SnappyError("snappy-java header is truncated");
  const view = new DataView(stream.buffer, stream.byteOffset, stream.byteLength);
  const compatibleVersion = view.getInt32(12, false);
  if (compatibleVersion !== 1) throw new SnappyError(`snappy-java stream needs version ${compatibleVersion} (1 is known)`);
  const blocks: Uint8Array[] = [];
  let total = 0;
  let offset = STREAM_HEADER_BYTES;
  while (offset < stream.length) {
    // snappy-java concatenates streams as they come: a second header starts a new one.
    if (isSnappyJavaStream(stream.subarray(offset))) {
      offset += STREAM_HEADER_BYTES;
      continue;
    }
    if (stream.length - offset < 4) throw new SnappyError(`block length at offset ${offset} is truncated`);
    const length = view.getInt32(offset, false);
    offset += 4;
    if (length < 0 || length > stream.length - offset) throw new SnappyError(`block of ${length} bytes at offset ${offset} runs past the end`);
    const block = snappyUncompress(stream.subarray(offset, offset + length), outputBytesMax - total);
    offset += length;
    total += block.length;
    blocks.push(block);
  }
  const out = new Uint8Array(total);
  let position = 0;
  for (const block of blocks) {
    out.set(block, position);
    position += block.length;
  }
  return out;
}

/** One raw snappy block, uncompressed; `outputBytesMax` bounds what its preamble may claim. */
export function snappyUncompress(input: Uint8Array, outputBytesMax: number): Uint8Array {
  let ip = 0;
  let length = 0;
  for (let shift = 0; ; shift += 7) {
    if (ip >= input.length || shift > 28) throw new SnappyError("bad uncompressed length");
    const byte = input[ip++]!;
    length += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) break;
  }
  if (length > outputBytesMax) throw new SnappyError(`block claims ${length} bytes, more than the ${outputBytesMax} allowed`);
  const out = new Uint8Array(length);
  let op = 0;
  while (ip < input.length) {
    const tag = input[ip++]!;
    let copyLength: number;
    let copyOffset: number;
    switch (tag & 3) {
      case 0: {
        let literalLength = tag >>> 2;
        if (literalLength >= 60) {
          const extraBytes = literalLength - 59;
          if (ip + extraBytes > input.length) throw new SnappyError("literal length is truncated");
          literalLength = 0;
          for (let i = 0; i < extraBytes; i++) literalLength += input[ip++]! * 2 ** (8 * i);
        }
        literalLength += 1;
        if (ip + literalLength > input.length || op + literalLength > length) throw new SnappyError("literal runs past the end");
        out.set(input.subarray(ip, ip + literalLength), op);
        ip += literalLength;
        op += literalLength;
        continue;
      }
      case 1:
        if (ip + 1 > input.length) throw new SnappyError("copy is truncated");
        copyLength = 4 + ((tag >>> 2) & 7);
        copyOffset = ((tag >>> 5) << 8) | input[ip++]!;
        break;
      case 2:
        if (ip + 2 > input.length) throw new SnappyError("copy is truncated");
        copyLength = 1 + (tag >>> 2);
        copyOffset = input[ip]! | (input[ip + 1]! << 8);
        ip += 2;
        break;
      default:
        if (ip + 4 > input.length) throw new SnappyError("copy is truncated");
        copyLength = 1 + (tag >>> 2);
        copyOffset = (input[ip]! | (input[ip + 1]! << 8) | (input[ip + 2]! << 16) | (input[ip + 3]! << 24)) >>> 0;
        ip += 4;
    }
    if (copyOffset === 0 || copyOffset > op) throw new SnappyError(`copy from offset ${copyOffset} at ${op} reaches before the start`);
    if (op + copyLength > length) throw new SnappyError("copy runs past the end");
    // Byte by byte: a copy may overlap what it writes (a run).
    for (let i = 0; i < copyLength; i++, op++) out[op] = out[op - copyOffset]!;
  }
  if (op !== length) throw new SnappyError(`block holds ${op} bytes, its preamble says ${length}`);
  return out;
}
