/**
 * The hand-written peer codec must speak exactly proto/peer.proto: what it encodes, proto-loader
 * decodes to the same messages; what proto-loader encodes, it decodes to the same messages; and
 * its own frames round-trip. Garbage never escapes as anything but PeerCodecError.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as fc from "fast-check";

import { AssertionError } from "../../src/common/assert.js";
import type { LogRecord, QuorumMessage, SessionTouch } from "../../src/consensus/messages.js";
import type { Notification, ServerState } from "../../src/election/types.js";
import {
  decodeNotificationBatch,
  decodeQuorumBatch,
  encodeNotificationBatch,
  encodeQuorumBatch,
  notificationEntrySize,
  PeerCodecError,
  quorumBodySize,
  quorumEntrySize,
} from "../../src/server/peer/peer-codec.js";
import { NOTIFICATION_BYTES_MAX, NOTIFICATION_CONFIG_BYTES_MAX } from "../../src/server/peer/peer-limits.js";
import { referenceMethods } from "../../src/server/peer/peer-wire.js";

const { notify, follow } = referenceMethods();
const loaderEncodeQuorum = (batch: object): Buffer => follow.requestSerialize(batch);
const loaderDecodeQuorum = (bytes: Buffer): LoaderQuorumBatch => follow.requestDeserialize(bytes) as LoaderQuorumBatch;
const loaderEncodeNotifications = (batch: object): Buffer => notify.requestSerialize(batch);
const loaderDecodeNotifications = (bytes: Buffer): LoaderNotificationBatch => notify.requestDeserialize(bytes) as LoaderNotificationBatch;

// ---- arbitraries

const uint53 = fc.oneof(
  fc.constantFrom(0, 1, 127, 128, 16383, 16384, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 35, 2 ** 53 - 1),
  fc.nat(),
  fc.maxSafeNat(),
);
/** epoch << 32 | counter, as the cores make them. */
const zxid = fc.oneof(
  uint53,
  fc.tuple(fc.integer({ min: 0, max: 0x1fffff }), fc.integer({ min: 0, max: 2 ** 32 - 1 })).map(([e, c]) => e * 2 ** 32 + c),
);
const uint32 = fc.oneof(fc.constantFrom(0, 1, 127, 128, 2 ** 31, 2 ** 32 - 1), fc.integer({ min: 0, max: 2 ** 32 - 1 }));
const int32 = fc.oneof(fc.constantFrom(0, 1, -1, -2, 2 ** 31 - 1, -(2 ** 31)), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }));
const int64 = fc.oneof(
  fc.constantFrom(0n, 1n, -1n, 2n ** 56n + 5n, BigInt.asIntN(64, 254n << 56n), -(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n, -(2n ** 53n)),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
);
/** Byte strings, some of them views at an offset into a larger buffer (as txn-codec's slab hands them out). */
const bytes = fc.oneof(
  fc.constant(new Uint8Array(0)),
  fc.uint8Array({ maxLength: 150 }),
  fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 300 }), fc.nat(), fc.nat()).map(([b, x, y]) => {
    const from = x % b.length;
    return b.subarray(from, from + (y % (b.length - from + 1)));
  }),
);
const logRecord: fc.Arbitrary<LogRecord> = fc.record({ zxid, record: bytes });
const touch: fc.Arbitrary<SessionTouch> = fc.record({ sessionId: int64, timeoutMs: uint32 });

/** A tree digest as DataTree.digest writes it: 16 lower-case hex digits. */
const treeDigest = fc.uint8Array({ minLength: 8, maxLength: 8 }).map((b) => Buffer.from(b).toString("hex"));

const quorumMessage: fc.Arbitrary<QuorumMessage> = fc.oneof(
  fc.record(
    {
      type: fc.constant("learnerInfo" as const),
      sid: uint32,
      role: fc.constantFrom("participant" as const, "observer" as const),
      acceptedEpoch: uint53,
      lastZxid: zxid,
      protocolVersion: uint32,
      repairing: fc.constant(true),
    },
    { requiredKeys: ["type", "sid", "role", "acceptedEpoch", "lastZxid", "protocolVersion"] },
  ),
  fc.record({ type: fc.constant("treeDigest" as const), zxid, digest: treeDigest }),
  fc.record({ type: fc.constant("leaderInfo" as const), newEpoch: uint53, protocolVersion: uint32 }),
  fc.record({ type: fc.constant("ackEpoch" as const), currentEpoch: uint53, lastZxid: zxid }),
  fc.record({ type: fc.constant("diff" as const), lastZxid: zxid }),
  fc.record({ type: fc.constant("trunc" as const), zxid }),
  fc.record({ type: fc.constant("snap" as const), zxid, snapshot: fc.oneof(bytes, fc.uint8Array({ minLength: 1000, maxLength: 5000 })) }),
  fc.record({ type: fc.constant("syncTxns" as const), txns: fc.array(logRecord, { maxLength: 5 }), committed: fc.boolean() }),
  fc.record({ type: fc.constant("newLeader" as const), zxid }),
  fc.constant({ type: "upToDate" as const }),
  fc.record({ type: fc.constant("proposal" as const), zxid, record: bytes }),
  fc.record({ type: fc.constant("ack" as const), zxid }),
  fc.record({ type: fc.constant("commit" as const), zxid }),
  fc.record({ type: fc.constant("inform" as const), zxid, record: bytes }),
  fc.record({ type: fc.constant("ping" as const), touches: fc.array(touch, { maxLength: 5 }) }),
  fc.record({ type: fc.constant("request" as const), sessionId: int64, cxid: int32, request: bytes }),
  fc.record({ type: fc.constant("sync" as const), syncId: uint53 }),
  fc.record({ type: fc.constant("syncDone" as const), syncId: uint53, zxid }),
  fc.record({ type: fc.constant("revalidate" as const), sessionId: int64, timeoutMs: uint32 }),
  fc.record({ type: fc.constant("revalidated" as const), sessionId: int64, valid: fc.boolean() }),
);
const quorumBatch = fc.array(quorumMessage, { maxLength: 12 });

const peerState = fc.constantFrom<ServerState>("looking", "following", "leading", "observing");
/** ZooKeeper's dynamic-configuration text, as a sender's configuration in force reads. */
const membershipText = fc
  .tuple(
    fc.uniqueArray(fc.integer({ min: 1, max: 254 }), { minLength: 1, maxLength: 7 }),
    fc.constantFrom("127.0.0.1", "zk-3.corral.internal", "::1"),
    fc.constantFrom("participant", "observer"),
    zxid,
  )
  .map(
    ([ids, host, role, version]) =>
      ids.map((id) => `server.${id}=${host.includes(":") ? `[${host}]` : host}:${2000 + id}:${3000 + id}:${role};0.0.0.0:${4000 + id}\n`).join("") +
      `version=${version.toString(16)}`,
  );
/** Non-empty texts: an empty one is not sent (proto3), so it could not round-trip. Any code point but half surrogates. */
const configText = fc.oneof(membershipText, fc.string({ unit: "binary", minLength: 1, maxLength: 200 }), fc.constant("\ufeffstarts with a BOM"));
const notificationFrom = (from: number): fc.Arbitrary<Notification> =>
  fc.record(
    {
      from: fc.constant(from),
      state: peerState,
      vote: fc.record({ leader: uint32, zxid, peerEpoch: uint53 }, { noNullPrototype: true }),
      round: uint53,
      config: fc.record({ version: zxid, text: configText }, { noNullPrototype: true }),
      pending: fc.record({ version: zxid, text: configText }, { noNullPrototype: true }),
      // Zero is not sent (proto3), so an absent `applied` stands for it.
      applied: uint53.filter((z) => z > 0),
      repairing: fc.integer({ min: 1, max: 0xffffffff }),
    },
    { noNullPrototype: true, requiredKeys: ["from", "state", "vote", "round"] },
  );
const notificationBatch = fc.array(notificationFrom(7), { maxLength: 8 });

// ---- proto-loader's object shapes (longs as strings, enums as names, oneof discriminator)

type LoaderQuorumBatch = { messages: ({ message: string } & Record<string, unknown>)[] };
type LoaderNotificationBatch = {
  notifications: {
    state: string;
    vote: { leader: number; zxid: string; peerEpoch: string } | null;
    round: string;
    configVersion: string;
    config: string;
    pendingConfigVersion: string;
    pendingConfig: string;
    appliedZxid: string;
    repairing: number;
  }[];
};

const STATE_NAMES: Record<ServerState, string> = { looking: "LOOKING", following: "FOLLOWING", leading: "LEADING", observing: "OBSERVING" };

/** A QuorumMessage as the object proto-loader encodes (its oneof member set). */
function toLoader(m: QuorumMessage): Record<string, unknown> {
  const z = (n: number): string => String(n);
  switch (m.type) {
    case "learnerInfo":
      return {
        learnerInfo: {
          sid: m.sid,
          role: m.role === "observer" ? "OBSERVER" : "PARTICIPANT",
          acceptedEpoch: z(m.acceptedEpoch),
          lastZxid: z(m.lastZxid),
          protocolVersion: m.protocolVersion,
          repairing: m.repairing === true,
        },
      };
    case "treeDigest":
      return { treeDigest: { zxid: z(m.zxid), digest: Buffer.from(m.digest, "hex") } };
    case "leaderInfo":
      return { leaderInfo: { newEpoch: z(m.newEpoch), protocolVersion: m.protocolVersion } };
    case "ackEpoch":
      return { ackEpoch: { currentEpoch: z(m.currentEpoch), lastZxid: z(m.lastZxid) } };
    case "diff":
      return { diff: { lastZxid: z(m.lastZxid) } };
    case "trunc":
      return { trunc: { zxid: z(m.zxid) } };
    case "snap":
      return { snap: { zxid: z(m.zxid), snapshot: Buffer.from(m.snapshot) } };
    case "syncTxns":
      return { syncTxns: { txns: m.txns.map((t) => ({ zxid: z(t.zxid), record: Buffer.from(t.record) })), committed: m.committed } };
    case "newLeader":
      return { newLeader: { zxid: z(m.zxid) } };
    case "upToDate":
      return { upToDate: {} };
    case "proposal":
      return { proposal: { zxid: z(m.zxid), record: Buffer.from(m.record) } };
    case "ack":
      return { ack: { zxid: z(m.zxid) } };
    case "commit":
      return { commit: { zxid: z(m.zxid) } };
    case "inform":
      return { inform: { zxid: z(m.zxid), record: Buffer.from(m.record) } };
    case "ping":
      return { ping: { touches: m.touches.map((t) => ({ sessionId: t.sessionId.toString(), timeoutMs: t.timeoutMs })) } };
    case "request":
      return { request: { sessionId: m.sessionId.toString(), cxid: m.cxid, request: Buffer.from(m.request) } };
    case "sync":
      return { sync: { syncId: z(m.syncId) } };
    case "syncDone":
      return { syncDone: { syncId: z(m.syncId), zxid: z(m.zxid) } };
    case "revalidate":
      return { revalidate: { sessionId: m.sessionId.toString(), timeoutMs: m.timeoutMs } };
    case "revalidated":
      return { revalidated: { sessionId: m.sessionId.toString(), valid: m.valid } };
  }
}

/** What proto-loader decoded, back in corral's shape. */
function fromLoader(entry: { message: string } & Record<string, unknown>): QuorumMessage {
  const body = entry[entry.message] as Record<string, unknown>;
  const n = (key: string): number => Number(body[key]);
  const b = (key: string): Uint8Array => new Uint8Array(body[key] as Buffer);
  switch (entry.message) {
    case "learnerInfo":
      return {
        type: "learnerInfo",
        sid: body["sid"] as number,
        role: body["role"] === "OBSERVER" ? "observer" : "participant",
        acceptedEpoch: n("acceptedEpoch"),
        lastZxid: n("lastZxid"),
        protocolVersion: body["protocolVersion"] as number,
        ...(body["repairing"] === true ? { repairing: true } : {}),
      };
    case "treeDigest":
      return { type: "treeDigest", zxid: n("zxid"), digest: (body["digest"] as Buffer).toString("hex") };
    case "leaderInfo":
      return { type: "leaderInfo", newEpoch: n("newEpoch"), protocolVersion: body["protocolVersion"] as number };
    case "ackEpoch":
      return { type: "ackEpoch", currentEpoch: n("currentEpoch"), lastZxid: n("lastZxid") };
    case "diff":
      return { type: "diff", lastZxid: n("lastZxid") };
    case "trunc":
      return { type: "trunc", zxid: n("zxid") };
    case "snap":
      return { type: "snap", zxid: n("zxid"), snapshot: b("snapshot") };
    case "syncTxns":
      return {
        type: "syncTxns",
        txns: (body["txns"] as { zxid: string; record: Buffer }[]).map((t) => ({ zxid: Number(t.zxid), record: new Uint8Array(t.record) })),
        committed: body["committed"] as boolean,
      };
    case "newLeader":
      return { type: "newLeader", zxid: n("zxid") };
    case "upToDate":
      return { type: "upToDate" };
    case "proposal":
      return { type: "proposal", zxid: n("zxid"), record: b("record") };
    case "ack":
      return { type: "ack", zxid: n("zxid") };
    case "commit":
      return { type: "commit", zxid: n("zxid") };
    case "inform":
      return { type: "inform", zxid: n("zxid"), record: b("record") };
    case "ping":
      return {
        type: "ping",
        touches: (body["touches"] as { sessionId: string; timeoutMs: number }[]).map((t) => ({ sessionId: BigInt(t.sessionId), timeoutMs: t.timeoutMs })),
      };
    case "request":
      return { type: "request", sessionId: BigInt(body["sessionId"] as string), cxid: body["cxid"] as number, request: b("request") };
    case "sync":
      return { type: "sync", syncId: n("syncId") };
    case "syncDone":
      return { type: "syncDone", syncId: n("syncId"), zxid: n("zxid") };
    case "revalidate":
      return { type: "revalidate", sessionId: BigInt(body["sessionId"] as string), timeoutMs: body["timeoutMs"] as number };
    case "revalidated":
      return { type: "revalidated", sessionId: BigInt(body["sessionId"] as string), valid: body["valid"] as boolean };
    default:
      throw new Error(`proto-loader decoded an unexpected member ${entry.message}`);
  }
}

/**
 * A proto-loader object without its proto3 default scalars: protobufjs writes a field it is handed
 * even when it holds the default, where proto3 (and the codec) leave it out.
 */
function withoutDefaults(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutDefaults);
  if (value === null || typeof value !== "object" || Buffer.isBuffer(value)) return value;
  const isDefault = (v: unknown): boolean =>
    v === 0 || v === "0" || v === "" || v === false || v === "PARTICIPANT" || v === "LOOKING" || (Buffer.isBuffer(v) && v.length === 0);
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => !isDefault(v))
      .map(([k, v]) => [k, withoutDefaults(v)]),
  );
}

/** Uint8Arrays (views, Buffers, copies) compared by content. */
function plain(value: unknown): unknown {
  if (value instanceof Uint8Array) return { bytes: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("hex") };
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

// ---- quorum frames

test("quorum batches round-trip through the hand-written codec", () => {
  fc.assert(
    fc.property(quorumBatch, (messages) => {
      assert.deepStrictEqual(plain(decodeQuorumBatch(encodeQuorumBatch(messages))), plain(messages));
    }),
    { numRuns: 3000 },
  );
});

test("what the codec encodes, proto-loader decodes to the same quorum messages", () => {
  fc.assert(
    fc.property(quorumBatch, (messages) => {
      const decoded = loaderDecodeQuorum(encodeQuorumBatch(messages)).messages.map(fromLoader);
      assert.deepStrictEqual(plain(decoded), plain(messages));
    }),
    { numRuns: 3000 },
  );
});

test("what proto-loader encodes, the codec decodes to the same quorum messages", () => {
  fc.assert(
    fc.property(quorumBatch, (messages) => {
      const encoded = loaderEncodeQuorum({ messages: messages.map(toLoader) });
      assert.deepStrictEqual(plain(decodeQuorumBatch(encoded)), plain(messages));
    }),
    { numRuns: 3000 },
  );
});

test("the codec's quorum frames are byte-identical to proto-loader's", () => {
  fc.assert(
    fc.property(quorumBatch, (messages) => {
      assert.deepStrictEqual(encodeQuorumBatch(messages), loaderEncodeQuorum({ messages: messages.map((m) => withoutDefaults(toLoader(m))) }));
    }),
    { numRuns: 1000 },
  );
});

test("precomputed body sizes and a sub-range encode the same frame as encoding that range alone", () => {
  fc.assert(
    fc.property(quorumBatch, fc.nat(), fc.nat(), (messages, a, b) => {
      const start = messages.length === 0 ? 0 : a % messages.length;
      const end = start + (messages.length === 0 ? 0 : b % (messages.length - start + 1));
      const sizes = messages.map(quorumBodySize);
      assert.deepStrictEqual(encodeQuorumBatch(messages, sizes, start, end), encodeQuorumBatch(messages.slice(start, end)));
      const total = messages.slice(start, end).reduce((sum, m, i) => sum + quorumEntrySize(m, sizes[start + i]!), 0);
      assert.equal(encodeQuorumBatch(messages, sizes, start, end).length, total);
    }),
    { numRuns: 500 },
  );
});

test("decoded record and snapshot bytes are views of the frame, not copies", () => {
  const frame = encodeQuorumBatch([
    { type: "proposal", zxid: 5, record: new Uint8Array([1, 2, 3]) },
    { type: "snap", zxid: 6, snapshot: new Uint8Array(1000).fill(7) },
  ]);
  const [proposal, snap] = decodeQuorumBatch(frame);
  assert.ok(proposal?.type === "proposal" && snap?.type === "snap");
  assert.equal(proposal.record.buffer, frame.buffer);
  assert.equal(snap.snapshot.buffer, frame.buffer);
  assert.deepStrictEqual([...proposal.record], [1, 2, 3]);
});

test("unknown fields in a quorum frame are skipped at every level", () => {
  // Unknown fields: 15 varint, 30 length-delimited, 31 fixed64, 29 fixed32 — appended to the
  // batch, to the QuorumMessage wrapper and to the Proposal body.
  const junk = Buffer.from([15 << 3, 7, 0xf2, 0x01, 3, 0x78, 0x79, 0x7a, 0xf9, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 0xed, 0x01, 1, 2, 3, 4]);
  const body = Buffer.concat([Buffer.from([0x08, 42, 0x12, 2, 9, 9]), junk]);
  const wrapper = Buffer.concat([Buffer.from([0x0a, body.length]), body, junk]);
  const frame = Buffer.concat([junk, Buffer.from([0x0a, wrapper.length]), wrapper, junk]);
  assert.deepStrictEqual(plain(decodeQuorumBatch(frame)), plain([{ type: "proposal", zxid: 42, record: new Uint8Array([9, 9]) }]));
});

test("a truncated one-message quorum frame is refused with PeerCodecError at every cut", () => {
  const messages: QuorumMessage[] = [
    { type: "proposal", zxid: 2 ** 40 + 7, record: new Uint8Array(100).fill(1) },
    { type: "request", sessionId: -(2n ** 62n), cxid: -5, request: new Uint8Array([1, 2]) },
    { type: "syncTxns", txns: [{ zxid: 9, record: new Uint8Array([3]) }], committed: true },
    { type: "learnerInfo", sid: 3, role: "observer", acceptedEpoch: 4, lastZxid: 2 ** 33, protocolVersion: 1 },
    { type: "ping", touches: [{ sessionId: 5n, timeoutMs: 4000 }] },
  ];
  for (const m of messages) {
    const frame = encodeQuorumBatch([m]);
    for (let cut = 1; cut < frame.length; cut++) {
      assert.throws(() => decodeQuorumBatch(frame.subarray(0, cut)), PeerCodecError, `${m.type} cut at ${cut}`);
    }
  }
});

test("a truncated quorum frame decodes to a prefix of its messages or is refused", () => {
  fc.assert(
    fc.property(quorumBatch, fc.nat(), (messages, n) => {
      const frame = encodeQuorumBatch(messages);
      if (frame.length === 0) return;
      const cut = n % frame.length;
      let decoded: QuorumMessage[];
      try {
        decoded = decodeQuorumBatch(frame.subarray(0, cut));
      } catch (error) {
        assert.ok(error instanceof PeerCodecError, String(error));
        return;
      }
      assert.deepStrictEqual(plain(decoded), plain(messages.slice(0, decoded.length)));
      assert.ok(decoded.length < messages.length);
    }),
    { numRuns: 2000 },
  );
});

test("random bytes decode or are refused with PeerCodecError, never anything else", () => {
  const check = (frame: Uint8Array): void => {
    for (const decode of [() => decodeQuorumBatch(frame), () => decodeNotificationBatch(frame, 1)]) {
      try {
        decode();
      } catch (error) {
        assert.ok(error instanceof PeerCodecError, `${String(error)} for ${Buffer.from(frame).toString("hex")}`);
      }
    }
  };
  fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), check), { numRuns: 5000 });
  // Valid frames with a few bytes flipped: garbage that gets further into the decoder.
  fc.assert(
    fc.property(quorumBatch, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }), (messages, flips) => {
      const frame = Buffer.from(encodeQuorumBatch(messages));
      if (frame.length === 0) return;
      for (const [at, value] of flips) frame[at % frame.length] = value;
      check(frame);
    }),
    { numRuns: 3000 },
  );
});

test("malformed quorum frames are refused with a reason", () => {
  const cases: [string, number[], RegExp][] = [
    ["no member", [0x0a, 0], /no known member/],
    ["two members", [0x0a, 4, 0x12, 0, 0x1a, 0], /two members/],
    ["unknown member only", [0x0a, 2, 0x5a, 0], /no known member/],
    ["zxid above 2^53", [0x0a, 12, 0x12, 10, 0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10], /2\^53/],
    ["learner role 2", [0x0a, 5, 0x82, 0x01, 2, 0x10, 2], /learner role/],
    ["wire type 3", [0x0b], /wire type/],
    ["field 0", [0x02, 0], /field number 0/],
    ["length past the end", [0x0a, 5, 0x12, 0], /length beyond/],
    ["eleven-byte varint", [0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], /longer than 10/],
    ["eleven-byte zxid", [0x0a, 14, 0x12, 12, 0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00], /longer than 10/],
    ["truncated zxid", [0x0a, 8, 0x12, 6, 0x08, 0x80, 0x80, 0x80, 0x80, 0x80], /truncated/],
  ];
  for (const [what, bytesOf, reason] of cases) {
    assert.throws(
      () => decodeQuorumBatch(Uint8Array.from(bytesOf)),
      (e: unknown) => e instanceof PeerCodecError && reason.test(e.message),
      what,
    );
  }
});

test("encoding a number outside its wire type is an assertion, not a silent truncation", () => {
  const bad: QuorumMessage[] = [
    { type: "ack", zxid: -1 },
    { type: "ack", zxid: 2 ** 53 },
    { type: "commit", zxid: 1.5 },
    { type: "request", sessionId: 2n ** 63n, cxid: 0, request: new Uint8Array() },
    { type: "request", sessionId: 0n, cxid: 2 ** 31, request: new Uint8Array() },
    { type: "learnerInfo", sid: -1, role: "participant", acceptedEpoch: 0, lastZxid: 0, protocolVersion: 1 },
    { type: "ping", touches: [{ sessionId: 1n, timeoutMs: 2 ** 32 }] },
  ];
  for (const m of bad)
    assert.throws(
      () => encodeQuorumBatch([m]),
      AssertionError,
      JSON.stringify(m, (_, v: unknown) => (typeof v === "bigint" ? String(v) : v)),
    );
  assert.throws(() => notificationEntrySize({ from: 1, state: "looking", vote: { leader: 1, zxid: -3, peerEpoch: 0 }, round: 1 }), AssertionError);
});

// ---- notification frames

test("notification batches round-trip, tagged with the stream's sender", () => {
  fc.assert(
    fc.property(notificationBatch, (notifications) => {
      assert.deepStrictEqual(decodeNotificationBatch(encodeNotificationBatch(notifications), 7), notifications);
    }),
    { numRuns: 2000 },
  );
});

test("notification frames cross-check with proto-loader both ways and byte for byte", () => {
  const toLoaderNotification = (n: Notification) => ({
    state: STATE_NAMES[n.state],
    vote: { leader: n.vote.leader, zxid: String(n.vote.zxid), peerEpoch: String(n.vote.peerEpoch) },
    round: String(n.round),
    configVersion: String(n.config?.version ?? 0),
    config: n.config?.text ?? "",
    pendingConfigVersion: String(n.pending?.version ?? 0),
    pendingConfig: n.pending?.text ?? "",
    appliedZxid: String(n.applied ?? 0),
    repairing: n.repairing ?? 0,
  });
  fc.assert(
    fc.property(notificationBatch, (notifications) => {
      const ours = encodeNotificationBatch(notifications);
      const decoded = loaderDecodeNotifications(ours).notifications.map((n) => ({
        from: 7,
        state: (Object.keys(STATE_NAMES) as ServerState[]).find((s) => STATE_NAMES[s] === n.state),
        vote: { leader: n.vote!.leader, zxid: Number(n.vote!.zxid), peerEpoch: Number(n.vote!.peerEpoch) },
        round: Number(n.round),
        ...(n.config === "" ? {} : { config: { version: Number(n.configVersion), text: n.config } }),
        ...(n.pendingConfig === "" ? {} : { pending: { version: Number(n.pendingConfigVersion), text: n.pendingConfig } }),
        ...(n.appliedZxid === "0" ? {} : { applied: Number(n.appliedZxid) }),
        ...(n.repairing === 0 ? {} : { repairing: n.repairing }),
      }));
      assert.deepStrictEqual(decoded, notifications);
      const theirs = loaderEncodeNotifications({ notifications: notifications.map(toLoaderNotification) });
      assert.deepStrictEqual(decodeNotificationBatch(theirs, 7), notifications);
      assert.deepStrictEqual(ours, loaderEncodeNotifications(withoutDefaults({ notifications: notifications.map(toLoaderNotification) }) as object));
    }),
    { numRuns: 2000 },
  );
});

test("a notification without a vote decodes with the default vote; an unknown state is refused", () => {
  assert.deepStrictEqual(decodeNotificationBatch(Uint8Array.from([0x0a, 2, 0x08, 2]), 3), [
    { from: 3, state: "leading", vote: { leader: 0, zxid: 0, peerEpoch: 0 }, round: 0 },
  ]);
  assert.throws(() => decodeNotificationBatch(Uint8Array.from([0x0a, 2, 0x08, 9]), 3), PeerCodecError);
});

// ---- the sender's configuration on a notification

const CONFIG_TEXT = "server.1=10.0.0.1:2888:3888:participant;0.0.0.0:2181\nserver.2=10.0.0.2:2888:3888:participant;0.0.0.0:2181\nversion=300000002";

test("a notification carries its sender's configuration; one without it decodes without it", () => {
  const withConfig: Notification = {
    from: 4,
    state: "following",
    vote: { leader: 2, zxid: 2 ** 32 * 3 + 2, peerEpoch: 3 },
    round: 9,
    config: { version: 2 ** 32 * 3 + 2, text: CONFIG_TEXT },
  };
  const staticConfig: Notification = {
    from: 4,
    state: "looking",
    vote: { leader: 4, zxid: 0, peerEpoch: 0 },
    round: 1,
    config: { version: 0, text: CONFIG_TEXT },
  };
  const without: Notification = { from: 4, state: "looking", vote: { leader: 4, zxid: 7, peerEpoch: 0 }, round: 2 };
  const withPending: Notification = { ...staticConfig, pending: { version: 2 ** 32 * 3 + 7, text: CONFIG_TEXT.replace("300000002", "300000007") } };
  const decoded = decodeNotificationBatch(encodeNotificationBatch([withConfig, staticConfig, without, withPending]), 4);
  assert.deepStrictEqual(decoded, [withConfig, staticConfig, without, withPending]);
  assert.ok(!("config" in decoded[2]!), "no config key at all on a notification that carried none");
  assert.ok(!("pending" in decoded[0]!), "no pending key at all on a notification that carried none");
});

test("notificationEntrySize is exactly what each notification adds to its frame", () => {
  fc.assert(
    fc.property(notificationBatch, (notifications) => {
      for (const n of notifications) assert.equal(encodeNotificationBatch([n]).length, notificationEntrySize(n));
      const total = notifications.reduce((sum, n) => sum + notificationEntrySize(n), 0);
      assert.equal(encodeNotificationBatch(notifications).length, total);
    }),
    { numRuns: 1000 },
  );
});

test("an empty configuration text is not sent, and a version without a text decodes as no configuration", () => {
  const base: Notification = { from: 3, state: "leading", vote: { leader: 3, zxid: 5, peerEpoch: 1 }, round: 2 };
  assert.deepStrictEqual(encodeNotificationBatch([{ ...base, config: { version: 9, text: "" } }]), encodeNotificationBatch([base]));
  // Field 4 alone; then field 4 with an empty field 5, as protobufjs writes a "" it is handed.
  assert.deepStrictEqual(decodeNotificationBatch(Uint8Array.from([0x0a, 4, 0x08, 2, 0x20, 9]), 3), [
    { ...base, vote: { leader: 0, zxid: 0, peerEpoch: 0 }, round: 0 },
  ]);
  assert.deepStrictEqual(decodeNotificationBatch(Uint8Array.from([0x0a, 6, 0x08, 2, 0x20, 9, 0x2a, 0]), 3), [
    { ...base, vote: { leader: 0, zxid: 0, peerEpoch: 0 }, round: 0 },
  ]);
  // A text without a version: version 0.
  assert.deepStrictEqual(decodeNotificationBatch(Uint8Array.from([0x0a, 3, 0x2a, 1, 0x41]), 3), [
    { from: 3, state: "looking", vote: { leader: 0, zxid: 0, peerEpoch: 0 }, round: 0, config: { version: 0, text: "A" } },
  ]);
});

test("configuration text is bounded: refused when decoding, asserted when encoding, and the largest fits a notification frame", () => {
  const base: Notification = { from: 2, state: "observing", vote: { leader: 2 ** 32 - 1, zxid: 2 ** 53 - 1, peerEpoch: 2 ** 53 - 1 }, round: 2 ** 53 - 1 };
  const largestText = "x".repeat(NOTIFICATION_CONFIG_BYTES_MAX);
  const largest: Notification = { ...base, config: { version: 2 ** 53 - 1, text: largestText }, pending: { version: 2 ** 53 - 1, text: largestText } };
  assert.deepStrictEqual(decodeNotificationBatch(encodeNotificationBatch([largest]), 2), [largest]);
  assert.ok(notificationEntrySize(largest) <= NOTIFICATION_BYTES_MAX, `${notificationEntrySize(largest)} bytes`);

  // The bound is on UTF-8 bytes, not UTF-16 code units.
  const overBytes = "\u00e9".repeat(NOTIFICATION_CONFIG_BYTES_MAX / 2 + 1);
  for (const text of ["x".repeat(NOTIFICATION_CONFIG_BYTES_MAX + 1), overBytes]) {
    assert.throws(() => notificationEntrySize({ ...base, config: { version: 1, text } }), AssertionError);
    assert.throws(() => encodeNotificationBatch([{ ...base, config: { version: 1, text } }]), AssertionError);
    assert.throws(() => encodeNotificationBatch([{ ...base, pending: { version: 1, text } }]), AssertionError);
    // What some other encoder would send.
    for (const notification of [
      { state: "LOOKING", round: "1", config: text },
      { state: "LOOKING", round: "1", pendingConfig: text },
    ]) {
      assert.throws(
        () => decodeNotificationBatch(loaderEncodeNotifications({ notifications: [notification] }), 2),
        (e: unknown) => e instanceof PeerCodecError && /configuration text/.test(e.message),
      );
    }
  }
  assert.throws(() => notificationEntrySize({ ...base, config: { version: -1, text: "a" } }), AssertionError);
  assert.throws(() => notificationEntrySize({ ...base, config: { version: 2 ** 53, text: "a" } }), AssertionError);
});

test("malformed UTF-8 in a configuration text decodes to replacement characters, never an exception", () => {
  // 0xff (never valid), 0xc0 (overlong lead), "A", 0xe2 (truncated three-byte sequence).
  assert.deepStrictEqual(decodeNotificationBatch(Uint8Array.from([0x0a, 6, 0x2a, 4, 0xff, 0xc0, 0x41, 0xe2]), 5), [
    { from: 5, state: "looking", vote: { leader: 0, zxid: 0, peerEpoch: 0 }, round: 0, config: { version: 0, text: "\ufffd\ufffdA\ufffd" } },
  ]);
  // Flipped bytes in frames with configurations: decoded or PeerCodecError, nothing else.
  fc.assert(
    fc.property(notificationBatch, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }), (notifications, flips) => {
      const frame = Buffer.from(encodeNotificationBatch(notifications));
      if (frame.length === 0) return;
      for (const [at, value] of flips) frame[at % frame.length] = value;
      try {
        decodeNotificationBatch(frame, 7);
      } catch (error) {
        assert.ok(error instanceof PeerCodecError, `${String(error)} for ${frame.toString("hex")}`);
      }
    }),
    { numRuns: 2000 },
  );
});
