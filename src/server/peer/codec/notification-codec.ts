/**
 * NotificationBatch frames (proto/peer.proto) to and from the election's notifications
 * (src/election/types.ts). The sender is not on the wire: the stream's authenticated peer is.
 *
 * A notification's configuration texts (proto fields `config` and `pending_config`) are the only
 * strings on the peer wires. Each is bounded on both sides (NOTIFICATION_CONFIG_BYTES_MAX: refused
 * when decoding, asserted when encoding) because any server that reaches the election port may
 * send one, and its UTF-8 is decoded leniently (bad bytes become U+FFFD): the host parses the text
 * and refuses what is not a configuration, so a stricter decoder here would only turn a bad text
 * into a dropped stream. Proto3 again: an empty text is not sent, and a notification decodes with
 * `config` only when it carried a non-empty text (its version defaulting to 0).
 */
import { assert } from "../../../common/assert.js";
import { varint32Size } from "../../../common/varint.js";
import type { Notification, ServerState } from "../../../election/types.js";
import { NOTIFICATION_CONFIG_BYTES_MAX } from "../peer-limits.js";
import { nested, PeerCodecError, ProtoReader, putHeader, putUint32Field, putUint53Field, uint32Field, uint53Field } from "./protobuf-wire.js";

/** Non-fatal (malformed bytes become U+FFFD, never an exception) and keeps a leading U+FEFF. */
const UTF8 = new TextDecoder("utf-8", { ignoreBOM: true });

const PEER_STATES: readonly ServerState[] = ["looking", "following", "leading", "observing"];
const PEER_STATE_NUMBER: Readonly<Record<ServerState, number>> = { looking: 0, following: 1, leading: 2, observing: 3 };

// -------------------------------------------------------------------------------------------------
// Sizes.

function voteSize(n: Notification): number {
  return uint32Field(n.vote.leader) + uint53Field(n.vote.zxid) + uint53Field(n.vote.peerEpoch);
}

/** A notification's configuration texts: the one in force (fields 4, 5) and the pending one (6, 7). */
type CarriedConfig = { version: number; text: string } | undefined;

/** UTF-8 bytes of a configuration's text, 0 when there is none (asserts the text's bound and the version). */
function configTextBytes(config: CarriedConfig): number {
  if (config === undefined) return 0;
  uint53Field(config.version);
  if (config.text.length === 0) return 0;
  const bytes = Buffer.byteLength(config.text, "utf8");
  if (bytes > NOTIFICATION_CONFIG_BYTES_MAX) assert(false, `configuration text of ${bytes} bytes, over ${NOTIFICATION_CONFIG_BYTES_MAX}`);
  return bytes;
}

/** Bytes of a configuration's version and text fields, its text taking `textBytes` (0: not sent). */
function configFieldsSize(config: CarriedConfig, textBytes: number): number {
  return textBytes === 0 ? 0 : uint53Field(config!.version) + 1 + varint32Size(textBytes) + textBytes;
}

/** Size of `n`'s Notification body, its configuration texts taking `configBytes` and `pendingBytes`. */
function notificationBodySize(n: Notification, state: number, configBytes: number, pendingBytes: number): number {
  return (
    (state === 0 ? 0 : 2) +
    nested(voteSize(n)) +
    uint53Field(n.round) +
    configFieldsSize(n.config, configBytes) +
    configFieldsSize(n.pending, pendingBytes) +
    (n.repairing === undefined ? 0 : uint32Field(n.repairing)) +
    uint53Field(n.applied ?? 0)
  );
}

/** Bytes `n` adds to a NotificationBatch frame (asserts its numbers fit, and its configuration texts' bound). */
export function notificationEntrySize(n: Notification): number {
  const state = PEER_STATE_NUMBER[n.state];
  if (state === undefined) assert(false, `peer state ${String(n.state)}`);
  return nested(notificationBodySize(n, state, configTextBytes(n.config), configTextBytes(n.pending)));
}

// -------------------------------------------------------------------------------------------------
// Writing.

/** A configuration's version and text fields at `p` of `frame`, when its text takes `textBytes` > 0. */
function putConfigFields(frame: Buffer, p: number, versionTag: number, textTag: number, config: CarriedConfig, textBytes: number): number {
  if (textBytes === 0) return p;
  p = putUint53Field(frame, p, versionTag, config!.version);
  p = putHeader(frame, p, textTag, textBytes);
  const written = frame.write(config!.text, p, textBytes, "utf8");
  if (written !== textBytes) assert(false, `configuration text sized ${textBytes} but wrote ${written}`);
  return p + written;
}

/** notifications[start, end) → one NotificationBatch frame. The sender is not on the wire. */
export function encodeNotificationBatch(notifications: readonly Notification[], start = 0, end = notifications.length): Buffer {
  let total = 0;
  for (let i = start; i < end; i++) total += notificationEntrySize(notifications[i]!);
  const frame = Buffer.allocUnsafe(total);
  let p = 0;
  for (let i = start; i < end; i++) {
    const n = notifications[i]!;
    const state = PEER_STATE_NUMBER[n.state];
    const configBytes = configTextBytes(n.config);
    const pendingBytes = configTextBytes(n.pending);
    p = putHeader(frame, p, 0x0a, notificationBodySize(n, state, configBytes, pendingBytes)); // NotificationBatch.notifications = 1
    p = putUint32Field(frame, p, 0x08, state);
    p = putHeader(frame, p, 0x12, voteSize(n));
    p = putUint32Field(frame, p, 0x08, n.vote.leader);
    p = putUint53Field(frame, p, 0x10, n.vote.zxid);
    p = putUint53Field(frame, p, 0x18, n.vote.peerEpoch);
    p = putUint53Field(frame, p, 0x18, n.round);
    p = putConfigFields(frame, p, 0x20, 0x2a, n.config, configBytes);
    p = putConfigFields(frame, p, 0x30, 0x3a, n.pending, pendingBytes);
    if (n.repairing !== undefined) p = putUint32Field(frame, p, 0x40, n.repairing);
    p = putUint53Field(frame, p, 0x48, n.applied ?? 0);
  }
  if (p !== total) assert(false, `notification batch sized ${total} but wrote ${p}`);
  return frame;
}

// -------------------------------------------------------------------------------------------------
// Reading.

function readNotification(r: ProtoReader, from: number, end: number): Notification {
  let state: ServerState = "looking";
  let leader = 0;
  let zxid = 0;
  let peerEpoch = 0;
  let round = 0;
  let configVersion = 0;
  let configText = "";
  let pendingVersion = 0;
  let pendingText = "";
  let repairing = 0;
  let applied = 0;
  while (r.pos < end) {
    const tag = r.tag(end);
    if (tag === 0x08) {
      const value = r.varint32(end);
      const s = PEER_STATES[value];
      if (s === undefined) throw new PeerCodecError(`peer state ${value}`);
      state = s;
    } else if (tag === 0x12) {
      const to = r.delimited(end);
      while (r.pos < to) {
        const t = r.tag(to);
        if (t === 0x08) leader = r.varint32(to);
        else if (t === 0x10) zxid = r.uint53(to);
        else if (t === 0x18) peerEpoch = r.uint53(to);
        else r.skip(t, to);
      }
    } else if (tag === 0x18) round = r.uint53(end);
    else if (tag === 0x20) configVersion = r.uint53(end);
    else if (tag === 0x2a) configText = readConfigText(r, end);
    else if (tag === 0x30) pendingVersion = r.uint53(end);
    else if (tag === 0x3a) pendingText = readConfigText(r, end);
    else if (tag === 0x40) repairing = r.varint32(end);
    else if (tag === 0x48) applied = r.uint53(end);
    else r.skip(tag, end);
  }
  const n: Notification = { from, state, vote: { leader, zxid, peerEpoch }, round };
  if (configText !== "") n.config = { version: configVersion, text: configText };
  if (pendingText !== "") n.pending = { version: pendingVersion, text: pendingText };
  if (repairing !== 0) n.repairing = repairing;
  if (applied !== 0) n.applied = applied;
  return n;
}

/** A configuration text field, refused when over NOTIFICATION_CONFIG_BYTES_MAX. */
function readConfigText(r: ProtoReader, end: number): string {
  const to = r.delimited(end);
  const from = r.pos;
  // Checked before anything is allocated for it.
  if (to - from > NOTIFICATION_CONFIG_BYTES_MAX) throw new PeerCodecError(`configuration text of ${to - from} bytes, over ${NOTIFICATION_CONFIG_BYTES_MAX}`);
  r.pos = to;
  return to === from ? "" : UTF8.decode(r.bytes.subarray(from, to));
}

/**
 * One NotificationBatch frame → its notifications, each tagged `from` = the stream's sender (the
 * wire does not carry it). Throws PeerCodecError on anything malformed.
 */
export function decodeNotificationBatch(frame: Uint8Array, from: number): Notification[] {
  const r = new ProtoReader(frame);
  const end = frame.length;
  const notifications: Notification[] = [];
  while (r.pos < end) {
    const tag = r.tag(end);
    if (tag === 0x0a) {
      const to = r.delimited(end);
      notifications.push(readNotification(r, from, to));
      r.pos = to;
    } else r.skip(tag, end);
  }
  return notifications;
}
