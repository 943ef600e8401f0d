/**
 * UTF-8 decoding for the hand-written protobuf readers (the SDK's and the server's): paths and
 * names are short and almost always ASCII, where a JS loop beats the native call's fixed cost.
 */
const ASCII_LOOP_MAX = 64;

/** The UTF-8 text in buf[start, end). */
export function decodeUtf8(buf: Buffer, start: number, end: number): string {
  if (end - start <= ASCII_LOOP_MAX) {
    let s = "";
    for (let i = start; i < end; i++) {
      const c = buf[i] as number;
      if (c >= 0x80) return buf.toString("utf8", start, end);
      s += String.fromCharCode(c);
    }
    return s;
  }
  return buf.toString("utf8", start, end);
}
