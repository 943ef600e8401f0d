import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ZkError } from "../../src/common/errors.js";
import { counterOf, epochOf, formatZxid, makeZxid, ZXID_MAX, zxidFromBigInt, zxidFromString, zxidToBigInt } from "../../src/store/zxid.js";

describe("zxid", () => {
  const CASES: [epoch: number, counter: number, bigint: bigint, hex: string][] = [
    [0, 0, 0n, "0x0"],
    [0, 1, 1n, "0x1"],
    [1, 0, 0x1_0000_0000n, "0x100000000"],
    [1, 1, 0x1_0000_0001n, "0x100000001"],
    [5, 0xffff_ffff, 0x5_ffff_ffffn, "0x5ffffffff"],
    [2 ** 21 - 1, 0xffff_ffff, 0x1f_ffff_ffff_ffffn, "0x1fffffffffffff"],
  ];
  for (const [epoch, counter, big, hex] of CASES) {
    test(`epoch ${epoch} counter ${counter} is ${hex}, exactly, both ways`, () => {
      const zxid = makeZxid(epoch, counter);
      assert.equal(zxidToBigInt(zxid), big);
      assert.equal(epochOf(zxid), epoch);
      assert.equal(counterOf(zxid), counter);
      assert.equal(formatZxid(zxid), hex);
      assert.equal(zxidFromBigInt(big), zxid);
      assert.equal(zxidFromString(big.toString()), zxid);
      assert.equal(zxidFromString(hex), zxid);
    });
  }

  test("zxids order as (epoch, counter)", () => {
    assert.ok(makeZxid(1, 0xffff_ffff) < makeZxid(2, 0));
    assert.ok(makeZxid(2, 0) < makeZxid(2, 1));
  });

  test("the largest zxid is Number.MAX_SAFE_INTEGER", () => {
    assert.equal(ZXID_MAX, Number.MAX_SAFE_INTEGER);
  });

  const BAD_PARTS: [string, number, number][] = [
    ["epoch 2^21 would lose precision", 2 ** 21, 0],
    ["negative epoch", -1, 0],
    ["counter 2^32 overflows into the epoch", 0, 2 ** 32],
    ["fractional counter", 0, 1.5],
  ];
  for (const [name, epoch, counter] of BAD_PARTS) {
    test(`makeZxid asserts on ${name}`, () => {
      assert.throws(() => makeZxid(epoch, counter), /invariant violated/);
    });
  }

  const BAD_INPUT: [string, () => number][] = [
    ["a negative bigint", () => zxidFromBigInt(-1n)],
    ["a bigint beyond 2^53", () => zxidFromBigInt(1n << 53n)],
    ["an empty string", () => zxidFromString("")],
    ["a negative decimal", () => zxidFromString("-1")],
    ["words", () => zxidFromString("zxid")],
    ["a decimal beyond 2^53", () => zxidFromString("9007199254740992")],
  ];
  for (const [name, parse] of BAD_INPUT) {
    test(`external input: ${name} is BADARGUMENTS`, () => {
      assert.throws(parse, (error: unknown) => error instanceof ZkError && error.code === "BADARGUMENTS");
    });
  }
});
