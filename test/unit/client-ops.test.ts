import assert from "node:assert/strict";
import { test } from "node:test";

import {
  aclFromWire,
  aclToWire,
  checkVersion,
  EVENT_TYPE_NUMBERS,
  eventTypeName,
  modeFlag,
  statFromWire,
  toBytes,
  requireStat,
  ttlToWire,
} from "../../src/client/convert.js";
import { Fifo } from "../../src/client/fifo.js";
import { multiErrorFromWire, multiResultsFromWire, op, opsToWire, ZkMultiError } from "../../src/client/ops.js";
import { nextXid, reconnectDelayMs } from "../../src/client/client.js";
import { CREATE_MODE_FLAGS, type CreateMode, type Op } from "../../src/client/types.js";
import { limits } from "../../src/common/constants.js";
import { ZkError, ZkErrorCode } from "../../src/common/errors.js";
import type { MultiOp, Stat as WireStat } from "../../gen/client.js";

const EMPTY = Buffer.alloc(0);
import { CREATE_MODE_FLAGS as STORE_CREATE_MODE_FLAGS, WatchEventType } from "../../src/store/types.js";

function rejectsWith(code: string, fn: () => unknown): void {
  assert.throws(fn, (err: unknown) => err instanceof ZkError && err.code === code);
}

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

const WIRE_STAT: WireStat = {
  czxid: 4294967297n,
  mzxid: 9007199254740993n, // above 2^53: must survive exactly
  ctime: 1700000000000n,
  mtime: 1700000000123n,
  version: 3,
  cversion: 4,
  aversion: 5,
  ephemeralOwner: -72057594037927935n,
  dataLength: 6,
  numChildren: 7,
  pzxid: 12n,
};

test("a wire Stat keeps zxids and ephemeralOwner as exact bigints and turns times to numbers", () => {
  assert.deepEqual(statFromWire(WIRE_STAT), {
    czxid: 4294967297n,
    mzxid: 9007199254740993n,
    pzxid: 12n,
    ctime: 1700000000000,
    mtime: 1700000000123,
    version: 3,
    cversion: 4,
    aversion: 5,
    ephemeralOwner: -72057594037927935n,
    dataLength: 6,
    numChildren: 7,
  });
});

test("a response without a Stat where one is due is a MARSHALLINGERROR", () => {
  rejectsWith("MARSHALLINGERROR", () => requireStat(null));
  rejectsWith("MARSHALLINGERROR", () => requireStat(undefined));
  const stat = statFromWire(WIRE_STAT);
  assert.equal(requireStat(stat), stat);
  // A create result without its stat.
  rejectsWith("MARSHALLINGERROR", () => multiResultsFromWire([op.create("/a")], [{ err: 0, path: "/a", stat: null, data: EMPTY, children: [] }], undefined));
});

test("create mode names map to ZooKeeper's flag numbers 0..6, the same table the server uses", () => {
  const expected: [CreateMode, number][] = [
    ["persistent", 0],
    ["ephemeral", 1],
    ["persistent-sequential", 2],
    ["ephemeral-sequential", 3],
    ["container", 4],
    ["persistent-with-ttl", 5],
    ["persistent-sequential-with-ttl", 6],
  ];
  for (const [mode, flag] of expected) assert.equal(modeFlag(mode), flag);
  assert.deepEqual({ ...CREATE_MODE_FLAGS }, { ...STORE_CREATE_MODE_FLAGS });
  rejectsWith("BADARGUMENTS", () => modeFlag("sequential" as CreateMode));
});

test("event type numbers are ZooKeeper's, as the store emits them", () => {
  for (const [name, number] of Object.entries(EVENT_TYPE_NUMBERS)) {
    assert.equal(WatchEventType[name as keyof typeof WatchEventType], number);
    assert.equal(eventTypeName(number), name);
  }
  assert.equal(eventTypeName(WatchEventType.None), undefined);
  assert.equal(eventTypeName(WatchEventType.DataWatchRemoved), undefined);
});

test("data arguments: strings are UTF-8, bytes pass through, absent is empty, oversized is BADARGUMENTS", () => {
  assert.deepEqual(toBytes("héllo"), new Uint8Array([0x68, 0xc3, 0xa9, 0x6c, 0x6c, 0x6f]));
  const raw = new Uint8Array([1, 2, 3]);
  assert.equal(toBytes(raw), raw);
  assert.equal(toBytes(undefined).length, 0);
  assert.equal(toBytes(new Uint8Array(limits.dataBytesMax)).length, limits.dataBytesMax);
  rejectsWith("BADARGUMENTS", () => toBytes(new Uint8Array(limits.dataBytesMax + 1)));
  rejectsWith("BADARGUMENTS", () => toBytes(42 as unknown as string));
});

test("versions default to -1 and must be int32 integers ≥ -1", () => {
  assert.equal(checkVersion(undefined), -1);
  assert.equal(checkVersion(0), 0);
  assert.equal(checkVersion(2 ** 31 - 1), 2 ** 31 - 1);
  for (const bad of [-2, 1.5, 2 ** 31, Number.NaN]) rejectsWith("BADARGUMENTS", () => checkVersion(bad));
});

test("TTL modes need a positive ttlMs; other modes refuse one", () => {
  assert.equal(ttlToWire("persistent-with-ttl", 5000), 5000n);
  assert.equal(ttlToWire("persistent-sequential-with-ttl", 1), 1n);
  assert.equal(ttlToWire("persistent", undefined), 0n);
  rejectsWith("BADARGUMENTS", () => ttlToWire("persistent-with-ttl", undefined));
  rejectsWith("BADARGUMENTS", () => ttlToWire("persistent-with-ttl", 0));
  rejectsWith("BADARGUMENTS", () => ttlToWire("persistent-with-ttl", 2 ** 40));
  rejectsWith("BADARGUMENTS", () => ttlToWire("ephemeral", 1000));
});

test("ACLs: absent means the server default, an empty list or perms no uint32 holds is INVALIDACL, entries convert both ways", () => {
  assert.deepEqual(aclToWire(undefined), []);
  rejectsWith("INVALIDACL", () => aclToWire([]));
  rejectsWith("INVALIDACL", () => aclToWire([{ perms: 31 } as never]));
  for (const perms of [-1, 1.5, 2 ** 32, Number.NaN]) rejectsWith("INVALIDACL", () => aclToWire([{ perms, id: { scheme: "world", id: "anyone" } }]));
  assert.deepEqual(
    aclToWire([{ perms: 2 ** 32 - 1, id: { scheme: "world", id: "anyone" } }])[0]?.perms,
    2 ** 32 - 1,
    "what the wire carries is the server's to judge",
  );
  const acl = [{ perms: 31, id: { scheme: "world", id: "anyone" } }];
  assert.deepEqual(aclToWire(acl), acl);
  assert.deepEqual(
    aclFromWire([
      { perms: 1, id: { scheme: "digest", id: "u:h" } },
      { perms: 2, id: undefined },
    ]),
    [
      { perms: 1, id: { scheme: "digest", id: "u:h" } },
      { perms: 2, id: { scheme: "", id: "" } },
    ],
  );
});

test("op builders fill defaults", () => {
  assert.deepEqual(op.create("/a"), { type: "create", path: "/a", data: new Uint8Array(0), mode: "persistent", acl: undefined, ttlMs: undefined });
  assert.deepEqual(op.create("/q/", "x", { mode: "persistent-sequential-with-ttl", ttlMs: 9 }), {
    type: "create",
    path: "/q/",
    data: bytes("x"),
    mode: "persistent-sequential-with-ttl",
    acl: undefined,
    ttlMs: 9,
  });
  assert.deepEqual(op.delete("/a"), { type: "delete", path: "/a", version: -1 });
  assert.deepEqual(op.delete("/a", { version: 4 }), { type: "delete", path: "/a", version: 4 });
  assert.deepEqual(op.setData("/a", "v"), { type: "setData", path: "/a", data: bytes("v"), version: -1 });
  assert.deepEqual(op.check("/a", 2), { type: "check", path: "/a", version: 2 });
});

test("ops become wire MultiOps with chrooted paths and ZooKeeper numbers", () => {
  const ops = [
    op.create("/a", "1", { mode: "ephemeral-sequential" }),
    op.create("/t", undefined, { mode: "persistent-with-ttl", ttlMs: 100, acl: [{ perms: 1, id: { scheme: "world", id: "anyone" } }] }),
    op.check("/b", 3),
    op.setData("/c", "2", { version: 7 }),
    op.delete("/d"),
  ];
  const expected: MultiOp[] = [
    { op: { $case: "create", create: { path: "/root/a", data: bytes("1"), acl: [], mode: 3, ttlMs: 0n } } },
    {
      op: {
        $case: "create",
        create: { path: "/root/t", data: new Uint8Array(0), acl: [{ perms: 1, id: { scheme: "world", id: "anyone" } }], mode: 5, ttlMs: 100n },
      },
    },
    { op: { $case: "check", check: { path: "/root/b", version: 3 } } },
    { op: { $case: "setData", setData: { path: "/root/c", data: bytes("2"), version: 7 } } },
    { op: { $case: "delete", delete: { path: "/root/d", version: -1 } } },
  ];
  assert.deepEqual(opsToWire(ops, "/root"), expected);
  assert.deepEqual(opsToWire([op.delete("/x")], undefined), [{ op: { $case: "delete", delete: { path: "/x", version: -1 } } }]);
});

test("a sequential create may end with / ; other ops may not", () => {
  assert.equal(opsToWire([op.create("/q/", "", { mode: "persistent-sequential" })], undefined).length, 1);
  rejectsWith("BADARGUMENTS", () => opsToWire([op.create("/q/")], undefined));
  rejectsWith("BADARGUMENTS", () => opsToWire([op.delete("/q/")], undefined));
});

test("invalid ops fail the whole multi with BADARGUMENTS before anything is sent", () => {
  rejectsWith("BADARGUMENTS", () => opsToWire([op.check("/ok", 1), op.delete("relative")], undefined));
  rejectsWith("BADARGUMENTS", () => opsToWire([op.check("/ok", 1.5)], undefined));
  rejectsWith("BADARGUMENTS", () => opsToWire([{ type: "nope", path: "/a" } as unknown as Op], undefined));
  rejectsWith("BADARGUMENTS", () =>
    opsToWire(
      Array.from({ length: limits.multiOpsMax + 1 }, () => op.check("/a", 1)),
      undefined,
    ),
  );
  const big = new Uint8Array(limits.dataBytesMax);
  rejectsWith("BADARGUMENTS", () => opsToWire([op.setData("/a", big), op.setData("/b", big)], undefined));
});

test("a successful multi's results follow the ops' types, with create paths stripped of the chroot", () => {
  const ops = [op.create("/a"), op.delete("/b"), op.setData("/c", "x"), op.check("/d", 1)];
  const stat = statFromWire(WIRE_STAT);
  const results = multiResultsFromWire(
    ops,
    [
      { err: 0, path: "/root/a", stat, data: EMPTY, children: [] },
      { err: 0, path: "", stat: null, data: EMPTY, children: [] },
      { err: 0, path: "", stat, data: EMPTY, children: [] },
      { err: 0, path: "", stat: null, data: EMPTY, children: [] },
    ],
    "/root",
  );
  assert.deepEqual(results, [{ type: "create", path: "/a", stat }, { type: "delete" }, { type: "setData", stat }, { type: "check" }]);
  rejectsWith("MARSHALLINGERROR", () => multiResultsFromWire(ops, [], undefined));
});

test("a failed multi is a ZkMultiError naming the first failing op, with every op's result", () => {
  const ops = [op.create("/a"), op.check("/b", 9), op.delete("/c")];
  const err = multiErrorFromWire(ZkErrorCode.BADVERSION, ops, [
    { err: 0, path: "", stat: null, data: EMPTY, children: [] },
    { err: ZkErrorCode.BADVERSION, path: "", stat: null, data: EMPTY, children: [] },
    { err: ZkErrorCode.RUNTIMEINCONSISTENCY, path: "", stat: null, data: EMPTY, children: [] },
  ]);
  assert.ok(err instanceof ZkMultiError);
  assert.ok(err instanceof ZkError);
  assert.equal(err.code, "BADVERSION");
  assert.equal(err.failedIndex, 1);
  assert.equal(err.path, "/b");
  assert.deepEqual(err.results, [
    { type: "error", err: 0, code: "OK" },
    { type: "error", err: ZkErrorCode.BADVERSION, code: "BADVERSION" },
    { type: "error", err: ZkErrorCode.RUNTIMEINCONSISTENCY, code: "RUNTIMEINCONSISTENCY" },
  ]);
});

test("a failed multi without per-op results is a plain ZkError", () => {
  const err = multiErrorFromWire(ZkErrorCode.BADARGUMENTS, [op.check("/a", 1)], []);
  assert.equal(err.code, "BADARGUMENTS");
  assert.ok(!(err instanceof ZkMultiError));
});

test("xids count up from 1 and wrap to 1, never 0 or negative", () => {
  assert.equal(nextXid(0), 1);
  assert.equal(nextXid(41), 42);
  assert.equal(nextXid(2 ** 31 - 2), 2 ** 31 - 1);
  assert.equal(nextXid(2 ** 31 - 1), 1);
});

test("reconnect back-off: at once, then 50 ms doubling, capped at 1 s", () => {
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 50].map(reconnectDelayMs), [0, 50, 100, 200, 400, 800, 1000, 1000]);
});

test("the FIFO hands items back in order across growth, compaction and drain", () => {
  const fifo = new Fifo<number>();
  let next = 0;
  let expected = 0;
  for (let round = 0; round < 50; round++) {
    for (let i = 0; i < 100; i++) fifo.push(next++);
    for (let i = 0; i < 60; i++) assert.equal(fifo.shift(), expected++);
  }
  assert.equal(fifo.length, next - expected);
  assert.equal(fifo.peek(), expected);
  const rest = fifo.drain();
  assert.deepEqual(
    rest,
    Array.from({ length: next - expected }, (_, i) => expected + i),
  );
  assert.equal(fifo.length, 0);
  assert.equal(fifo.shift(), undefined);
});
