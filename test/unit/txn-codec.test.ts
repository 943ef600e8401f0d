import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ZkError } from "../../src/common/errors.js";
import { varUintSize } from "../../src/common/varint.js";
import { ByteReader, ByteWriter } from "../../src/store/bytes.js";
import { decodeTxn, encodeTxn, readTxn, TXN_FORMAT_VERSION, writeTxn } from "../../src/store/txn-codec.js";
import {
  CONTAINER_OWNER,
  OPEN_ACL_UNSAFE,
  ttlOwner,
  type Acl,
  type CheckTxn,
  type CreateTxn,
  type DeleteTxn,
  type ErrorTxn,
  type SetDataTxn,
  type Txn,
  type TxnBody,
} from "../../src/store/types.js";

/** fast-check 4 may build records without a prototype; deepStrictEqual would (rightly) tell them apart. */
const record = <T>(model: { [K in keyof T]: fc.Arbitrary<T[K]> }): fc.Arbitrary<T> => fc.record(model, { noNullPrototype: true });

function isMarshallingError(error: unknown): boolean {
  return error instanceof ZkError && error.code === "MARSHALLINGERROR";
}

// ------------------------------------------------------------------------------------------------
// Arbitraries: every TxnBody variant, with values at the edges of each field's range.

const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const int64 = fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n });
const text = fc.oneof(
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: "grapheme-ascii", minLength: 43, maxLength: 127 }),
  fc.string({ unit: "grapheme-ascii", minLength: 250, maxLength: 300 }),
  fc.string({ unit: "grapheme", minLength: 100, maxLength: 400 }),
);
const data = fc.oneof(
  { weight: 10, arbitrary: fc.uint8Array({ maxLength: 64 }) },
  // Large payloads (buffer growth, multi-byte lengths), built cheaply: a random head on a filled body.
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 60_000, max: 1024 * 1024 }), fc.integer({ min: 0, max: 255 }), fc.uint8Array({ maxLength: 16 }))
      .map(([size, fill, head]) => {
        const bytes = new Uint8Array(size).fill(fill);
        bytes.set(head);
        return bytes;
      }),
  },
);
const acl: fc.Arbitrary<Acl[]> = fc.oneof(
  fc.constant(OPEN_ACL_UNSAFE as Acl[]),
  fc.array(record({ perms: int32, id: record({ scheme: text, id: text }) }), { maxLength: 4 }),
);
const owner = fc.oneof(fc.constant(0n), fc.constant(CONTAINER_OWNER), fc.integer({ min: 0, max: 2 ** 40 - 1 }).map(ttlOwner), int64);
const create: fc.Arbitrary<CreateTxn> = record({
  type: fc.constant("create" as const),
  path: text,
  data,
  acl,
  ephemeralOwner: owner,
  parentCversion: int32,
});
const del: fc.Arbitrary<DeleteTxn> = record({ type: fc.constant("delete" as const), path: text });
const setData: fc.Arbitrary<SetDataTxn> = record({ type: fc.constant("setData" as const), path: text, data, version: int32 });
const check: fc.Arbitrary<CheckTxn> = record({ type: fc.constant("check" as const), path: text, version: int32 });
const error: fc.Arbitrary<ErrorTxn> = record({ type: fc.constant("error" as const), err: int32 });
const bodies: { [K in TxnBody["type"]]: fc.Arbitrary<TxnBody & { type: K }> } = {
  create,
  delete: del,
  setData,
  check,
  error,
  setAcl: record({ type: fc.constant("setAcl" as const), path: text, acl, aversion: int32 }),
  reconfig: record({ type: fc.constant("reconfig" as const), data: fc.uint8Array({ maxLength: 300 }) }),
  multi: record({ type: fc.constant("multi" as const), ops: fc.array(fc.oneof(create, del, setData, check, error), { maxLength: 6 }) }),
  createSession: record({
    type: fc.constant("createSession" as const),
    timeoutMs: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
    password: fc.uint8Array({ maxLength: 32 }),
  }),
  closeSession: fc.constant({ type: "closeSession" as const }),
};
const BODY_TYPES = Object.keys(bodies) as TxnBody["type"][];
const header = record({
  sessionId: int64,
  cxid: int32,
  zxid: fc.oneof(fc.integer({ min: 0, max: 2 ** 40 }), fc.constant(Number.MAX_SAFE_INTEGER)),
  timeMs: fc.oneof(fc.integer({ min: 0, max: 4_000_000_000_000 }), fc.integer({ min: -(2 ** 52), max: 2 ** 52 - 1 })),
});
const txnOf = (body: fc.Arbitrary<TxnBody>): fc.Arbitrary<Txn> => record({ header, body });
const txn: fc.Arbitrary<Txn> = txnOf(fc.oneof(...Object.values(bodies)));

describe("txn codec", () => {
  test("every txn round-trips", () => {
    fc.assert(
      fc.property(txn, (original) => {
        assert.deepStrictEqual(decodeTxn(encodeTxn(original)), original);
      }),
      { numRuns: 1000 },
    );
  });

  for (const type of BODY_TYPES) {
    test(`${type} txns round-trip`, () => {
      fc.assert(
        fc.property(txnOf(bodies[type]), (original) => assert.deepStrictEqual(decodeTxn(encodeTxn(original)), original)),
        { numRuns: 100 },
      );
    });
  }

  test("encodings never overlap: each stays intact after later encodes", () => {
    const txns = fc.sample(txn, { numRuns: 2000, seed: 42 });
    const encoded = txns.map(encodeTxn);
    for (let i = 0; i < txns.length; i++) assert.deepStrictEqual(decodeTxn(encoded[i]!), txns[i]);
    encoded[0]!.fill(0xee);
    assert.deepStrictEqual(decodeTxn(encoded[1]!), txns[1]);
  });

  test("decoding with shareInput gives equal txns whose data are views of the input", () => {
    const original: Txn = {
      header: { sessionId: 1n, cxid: 1, zxid: 2, timeMs: 3 },
      body: { type: "setData", path: "/a", data: new Uint8Array([1, 2, 3]), version: 1 },
    };
    const encoded = encodeTxn(original);
    const shared = decodeTxn(encoded, true);
    assert.deepStrictEqual(shared, original);
    assert.equal((shared.body as SetDataTxn).data.buffer, encoded.buffer);
    assert.notEqual((decodeTxn(encoded).body as SetDataTxn).data.buffer, encoded.buffer);
  });

  test("an ACL equal to OPEN_ACL_UNSAFE takes one byte and decodes to the shared frozen list", () => {
    const withOpen = encodeTxn({
      header: { sessionId: 0n, cxid: 0, zxid: 1, timeMs: 0 },
      body: { type: "setAcl", path: "/", acl: [{ perms: 31, id: { scheme: "world", id: "anyone" } }], aversion: 1 },
    });
    const decoded = decodeTxn(withOpen).body as { acl: Acl[] };
    assert.equal(decoded.acl, OPEN_ACL_UNSAFE);
    // version, sessionId(8), cxid, zxid, time, type, path(2), acl(1), aversion(1)
    assert.equal(withOpen.length, 1 + 8 + 1 + 1 + 1 + 1 + 2 + 1 + 1);
  });

  test("a typical create stays compact", () => {
    const encoded = encodeTxn({
      header: { sessionId: 0x0100_0000_0000_0001n, cxid: 12, zxid: 0x1_0000_0010, timeMs: 1_700_000_000_000 },
      body: {
        type: "create",
        path: "/app/locks/lock-0000000001",
        data: new Uint8Array(0),
        acl: OPEN_ACL_UNSAFE as Acl[],
        ephemeralOwner: 0x0100_0000_0000_0001n,
        parentCversion: 2,
      },
    });
    assert.ok(encoded.length <= 70, `${encoded.length} bytes`);
  });

  test("txns can be written back to back and read one by one", () => {
    fc.assert(
      fc.property(fc.array(txn, { maxLength: 5 }), (txns) => {
        const w = new ByteWriter(16);
        for (const t of txns) writeTxn(w, t);
        const r = new ByteReader(w.finish());
        for (const t of txns) assert.deepStrictEqual(readTxn(r), t);
        assert.equal(r.atEnd, true);
      }),
      { numRuns: 200 },
    );
  });

  test("every truncation of a valid encoding throws MARSHALLINGERROR", () => {
    fc.assert(
      fc.property(txn, fc.nat(), (original, cut) => {
        const encoded = encodeTxn(original);
        const prefix = encoded.subarray(0, cut % encoded.length);
        assert.throws(() => decodeTxn(prefix), isMarshallingError);
      }),
      { numRuns: 1000 },
    );
  });

  test("a trailing byte throws MARSHALLINGERROR", () => {
    fc.assert(
      fc.property(txn, fc.integer({ min: 0, max: 255 }), (original, extra) => {
        const encoded = encodeTxn(original);
        const longer = new Uint8Array(encoded.length + 1);
        longer.set(encoded);
        longer[encoded.length] = extra;
        assert.throws(() => decodeTxn(longer), isMarshallingError);
      }),
      { numRuns: 300 },
    );
  });

  test("garbage either decodes to a txn that re-encodes faithfully or throws MARSHALLINGERROR, nothing else", () => {
    const garbage = fc.oneof(
      fc.uint8Array({ maxLength: 80 }),
      fc.uint8Array({ maxLength: 80 }).map((bytes) => Uint8Array.of(TXN_FORMAT_VERSION, ...bytes)),
      // a valid txn with some bytes flipped
      fc.tuple(txn, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 })).map(([t, flips]) => {
        const bytes = encodeTxn(t);
        for (const [at, value] of flips) bytes[at % bytes.length] = value;
        return bytes;
      }),
    );
    fc.assert(
      fc.property(garbage, (bytes) => {
        let decoded: Txn;
        try {
          decoded = decodeTxn(bytes);
        } catch (error) {
          assert.ok(isMarshallingError(error), `unexpected ${String(error)}`);
          return;
        }
        assert.deepStrictEqual(decodeTxn(encodeTxn(decoded)), decoded);
      }),
      { numRuns: 3000 },
    );
  });

  const writeHeader = (w: ByteWriter, type: number): void => {
    w.writeUint8(TXN_FORMAT_VERSION);
    w.writeInt64(1n);
    w.writeVarInt(0);
    w.writeVarUint(1);
    w.writeVarInt(0);
    w.writeUint8(type & 0xff);
  };
  const MALFORMED: [string, (w: ByteWriter) => void][] = [
    ["empty input", () => {}],
    ["an unknown format version", (w) => w.writeUint8(99)],
    ["an unknown txn type", (w) => writeHeader(w, 42)],
    [
      "setAcl inside a multi",
      (w) => {
        writeHeader(w, 14);
        w.writeVarUint(1);
        w.writeUint8(7);
        w.writeString("/a");
        w.writeUint8(0);
        w.writeVarInt(1);
      },
    ],
    [
      "a multi inside a multi",
      (w) => {
        writeHeader(w, 14);
        w.writeVarUint(1);
        w.writeUint8(14);
        w.writeVarUint(0);
      },
    ],
    [
      "createSession inside a multi",
      (w) => {
        writeHeader(w, 14);
        w.writeVarUint(1);
        w.writeUint8(-10 & 0xff);
        w.writeVarUint(1);
        w.writeBytes(new Uint8Array(0));
      },
    ],
    [
      "a multi claiming more ops than bytes",
      (w) => {
        writeHeader(w, 14);
        w.writeVarUint(1_000_000);
        w.writeUint8(2);
      },
    ],
    [
      "an owner tag other than 0 or 1",
      (w) => {
        writeHeader(w, 1);
        w.writeString("/a");
        w.writeBytes(new Uint8Array(0));
        w.writeUint8(0);
        w.writeUint8(2);
        w.writeVarInt(1);
      },
    ],
    [
      "an ACL list claiming more entries than bytes",
      (w) => {
        writeHeader(w, 7);
        w.writeString("/a");
        w.writeVarUint(500_000);
      },
    ],
    [
      "invalid UTF-8 in a path",
      (w) => {
        writeHeader(w, 2);
        w.writeVarUint(2);
        w.writeRaw(Uint8Array.of(0xc3, 0x28));
      },
    ],
    [
      "a data length beyond the input",
      (w) => {
        writeHeader(w, 5);
        w.writeString("/a");
        w.writeVarUint(1 << 20);
      },
    ],
    [
      "a version beyond int32",
      (w) => {
        writeHeader(w, 13);
        w.writeString("/a");
        w.writeVarInt(2 ** 31);
      },
    ],
    [
      "a varint longer than 8 bytes",
      (w) => {
        writeHeader(w, 2);
        w.writeRaw(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01));
      },
    ],
    [
      "a zxid beyond 2^53",
      (w) => {
        w.writeUint8(TXN_FORMAT_VERSION);
        w.writeInt64(1n);
        w.writeVarInt(0);
        w.writeRaw(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f));
      },
    ],
  ];
  for (const [name, write] of MALFORMED) {
    test(`${name} throws MARSHALLINGERROR`, () => {
      const w = new ByteWriter();
      write(w);
      assert.throws(() => decodeTxn(w.finish()), isMarshallingError);
    });
  }
});

describe("ByteWriter / ByteReader", () => {
  const VARUINTS: [number, number][] = [
    [0, 1],
    [127, 1],
    [128, 2],
    [16_383, 2],
    [16_384, 3],
    [2 ** 28 - 1, 4],
    [2 ** 28, 5],
    [2 ** 32 - 1, 5],
    [2 ** 32, 5],
    [2 ** 35, 6],
    [2 ** 49, 8],
    [Number.MAX_SAFE_INTEGER, 8],
  ];
  for (const [value, size] of VARUINTS) {
    test(`varuint ${value} takes ${size} bytes and reads back`, () => {
      const w = new ByteWriter(1);
      w.writeVarUint(value);
      assert.equal(w.length, size);
      assert.equal(varUintSize(value), size);
      assert.equal(new ByteReader(w.finish()).readVarUint(), value);
    });
  }

  const VARINTS: [number, number][] = [
    [0, 0],
    [-1, 1],
    [1, 2],
    [-64, 127],
    [64, 128],
    [2 ** 31 - 1, 2 ** 32 - 2],
    [-(2 ** 31), 2 ** 32 - 1],
    [2 ** 31, 2 ** 32],
    [2 ** 52 - 1, 2 ** 53 - 2],
    [-(2 ** 52), 2 ** 53 - 1],
  ];
  for (const [value, zigzag] of VARINTS) {
    test(`zigzag varint ${value} is encoded as ${zigzag} and reads back`, () => {
      const w = new ByteWriter();
      w.writeVarInt(value);
      assert.equal(new ByteReader(w.finish()).readVarUint(), zigzag);
      assert.equal(new ByteReader(w.finish()).readVarInt(), value);
    });
  }

  const BIGINTS: [bigint, number][] = [
    [0n, 1],
    [-1n, 1],
    [1n << 31n, 5],
    [-(1n << 63n), 10],
    [(1n << 63n) - 1n, 10],
    [0x0100_0000_0000_0001n, 9],
  ];
  for (const [value, size] of BIGINTS) {
    test(`zigzag bigint varint ${value} takes ${size} bytes and reads back`, () => {
      const w = new ByteWriter(2);
      w.writeVarBigInt(value);
      assert.equal(w.length, size);
      assert.equal(new ByteReader(w.finish()).readVarBigInt(), value);
    });
  }

  test("bigint varints round-trip over the whole int64 range", () => {
    fc.assert(
      fc.property(int64, (value) => {
        const w = new ByteWriter(1);
        w.writeVarBigInt(value);
        const r = new ByteReader(w.finish());
        assert.equal(r.readVarBigInt(), value);
        assert.equal(r.atEnd, true);
      }),
    );
  });

  test("int32 and int64 are big-endian two's complement, as jute writes them", () => {
    const w = new ByteWriter(1);
    w.writeInt32(-2);
    w.writeInt64(0x0102_0304_0506_0708n);
    w.writeInt64Number(-1);
    w.writeInt64Number(0x1_0000_0002);
    assert.deepEqual([...w.finish()], [0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4, 5, 6, 7, 8, ...Array<number>(8).fill(0xff), 0, 0, 0, 1, 0, 0, 0, 2]);
    const r = new ByteReader(w.finish());
    assert.equal(r.readInt32(), -2);
    assert.equal(r.readInt64(), 0x0102_0304_0506_0708n);
    assert.equal(r.readInt64Number(), -1);
    assert.equal(r.readInt64Number(), 0x1_0000_0002);
  });

  const STRINGS: [string, string, number[] | null][] = [
    ["empty", "", [0]],
    ["ASCII", "/a", [2, 0x2f, 0x61]],
    ["two-byte UTF-8", "é", [2, 0xc3, 0xa9]],
    ["three-byte UTF-8", "日", [3, 0xe6, 0x97, 0xa5]],
    ["a surrogate pair", "😀", [4, 0xf0, 0x9f, 0x98, 0x80]],
    ["a leading BOM is kept", "\ufeffx", [4, 0xef, 0xbb, 0xbf, 0x78]],
    ["long mixed text (TextEncoder path)", "ab日é😀".repeat(80), null],
    ["ASCII whose length prefix shrinks from 2 bytes to 1", "x".repeat(50), [50, ...Array<number>(50).fill(0x78)]],
    ["long ASCII whose length prefix shrinks from 3 bytes to 2 (TextEncoder path)", "x".repeat(6000), [0xf0, 0x2e, ...Array<number>(6000).fill(0x78)]],
    ["long ASCII", "x".repeat(300), null],
  ];
  for (const [name, value, expected] of STRINGS) {
    test(`strings: ${name}`, () => {
      const w = new ByteWriter(1);
      w.writeString(value);
      w.writeUint8(0x5a);
      if (expected) assert.deepEqual([...w.finish()].slice(0, -1), expected);
      const r = new ByteReader(w.finish());
      assert.equal(r.readString(), value);
      assert.equal(r.readUint8(), 0x5a, "the next field follows the string exactly");
    });
  }

  test("a lone surrogate is written as U+FFFD, as TextEncoder does", () => {
    for (const value of ["\ud800", "a\udc00b", "x".repeat(300) + "\ud83d"]) {
      const w = new ByteWriter();
      w.writeString(value);
      assert.equal(new ByteReader(w.finish()).readString(), new TextDecoder().decode(new TextEncoder().encode(value)));
    }
  });

  test("strings of any Unicode round-trip", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 600 }), (value) => {
        const w = new ByteWriter(1);
        w.writeString(value);
        assert.equal(new ByteReader(w.finish()).readString(), value);
      }),
      { numRuns: 500 },
    );
  });

  test("a jute-style int32 length can be back-patched after writing raw UTF-8", () => {
    const w = new ByteWriter(1);
    const at = w.length;
    w.writeInt32(0);
    const written = w.writeUtf8("/zk/é");
    w.setInt32At(at, written);
    const r = new ByteReader(w.finish());
    assert.equal(r.readInt32(), 6);
    assert.equal(r.readUtf8(6), "/zk/é");
  });

  test("finishCopy is independent of the writer, finish is a view", () => {
    const w = new ByteWriter();
    w.writeUint8(1);
    const copy = w.finishCopy();
    const view = w.finish();
    w.reset();
    w.writeUint8(2);
    assert.deepEqual([...copy], [1]);
    assert.deepEqual([...view], [2]);
  });

  const READ_ERRORS: [string, number[], (r: ByteReader) => unknown][] = [
    ["readUint8 at the end", [], (r) => r.readUint8()],
    ["readInt32 with 3 bytes", [1, 2, 3], (r) => r.readInt32()],
    ["readInt64 with 7 bytes", [1, 2, 3, 4, 5, 6, 7], (r) => r.readInt64()],
    ["readInt64Number beyond 2^53", [0x00, 0x20, 0, 0, 0, 0, 0, 0], (r) => r.readInt64Number()],
    ["a truncated varint", [0x80], (r) => r.readVarUint()],
    ["readVarInt32 beyond int32", [0x80, 0x80, 0x80, 0x80, 0x10], (r) => r.readVarInt32()],
    ["a bigint varint beyond 64 bits", [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02], (r) => r.readVarBigInt()],
    ["a bigint varint longer than 10 bytes", Array<number>(11).fill(0x80), (r) => r.readVarBigInt()],
    ["bytes longer than the input", [5, 1, 2], (r) => r.readBytes()],
    ["a string with a stray continuation byte", [1, 0x80], (r) => r.readString()],
    ["a long string with invalid UTF-8", [70, ...Array<number>(69).fill(0x61), 0xff], (r) => r.readString()],
    ["a boolean byte of 2", [2], (r) => r.readBool()],
  ];
  for (const [name, input, read] of READ_ERRORS) {
    test(`reader: ${name} throws MARSHALLINGERROR`, () => {
      assert.throws(() => read(new ByteReader(Uint8Array.from(input))), isMarshallingError);
    });
  }

  test("writing out of range values is a bug", () => {
    const w = new ByteWriter();
    assert.throws(() => w.writeVarUint(-1), /invariant violated/);
    assert.throws(() => w.writeVarUint(2 ** 53), /invariant violated/);
    assert.throws(() => w.writeInt32(2 ** 31), /invariant violated/);
    assert.throws(() => w.writeVarBigInt(1n << 63n), /invariant violated/);
    assert.throws(() => w.writeVarInt(2 ** 52), /invariant violated/);
  });
});
