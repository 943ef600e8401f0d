/**
 * What both sides of SASL GSSAPI (RFC 4752 section 3.1) say once the Kerberos context is
 * established: the server offers security layers and its largest receive buffer, the client
 * answers the layer it chose, its buffer, and an optional authorization id — each message wrapped
 * by the context. corral offers and chooses only "no security layer" (QOP auth).
 */

/** The security layer bit for "no security layer". */
export const SASL_GSSAPI_LAYER_NONE = 1;
/** A GSSAPI token larger than this is refused before the library sees it (a Kerberos AP-REQ is a few KiB). */
export const GSSAPI_TOKEN_BYTES_MAX = 64 * 1024;

export interface LayerMessage {
  /** The layers' bit mask (offered by the server; the one chosen by the client). */
  layers: number;
  /** The largest message its sender takes in a security layer (3 bytes; 0 without one). */
  maxMessageBytes: number;
  /** The client's authorization id; "" for none. */
  authorizationId: string;
}

export function encodeLayerMessage(message: LayerMessage): Uint8Array {
  const id = Buffer.from(message.authorizationId, "utf8");
  const bytes = new Uint8Array(4 + id.byteLength);
  bytes[0] = message.layers;
  bytes[1] = (message.maxMessageBytes >>> 16) & 0xff;
  bytes[2] = (message.maxMessageBytes >>> 8) & 0xff;
  bytes[3] = message.maxMessageBytes & 0xff;
  bytes.set(id, 4);
  return bytes;
}

/** The unwrapped message, or a string saying why it is not one. */
export function decodeLayerMessage(bytes: Uint8Array): LayerMessage | string {
  if (bytes.byteLength < 4) return `a GSSAPI layer message of ${bytes.byteLength} bytes`;
  return {
    layers: bytes[0]!,
    maxMessageBytes: (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!,
    authorizationId: Buffer.from(bytes.subarray(4)).toString("utf8"),
  };
}
