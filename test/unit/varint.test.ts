import assert from "node:assert/strict";
import { test } from "node:test";

import { varint32Size, varUintSize } from "../../src/common/varint.js";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { ByteWriter } from "../../src/store/bytes.js";

/** Every 7-bit boundary: the last value of one size and the first of the next, within range. */
function boundaries(max: number): number[] {
  const values = [0, 1];
  for (let bits = 7; 2 ** bits - 1 <= max; bits += 7) {
    values.push(2 ** bits - 1);
    if (2 ** bits <= max) values.push(2 ** bits);
  }
  values.push(max);
  return values;
}

test("varUintSize is the length ByteWriter writes, at every boundary up to 2^53 - 1", () => {
  for (const value of boundaries(Number.MAX_SAFE_INTEGER)) {
    const w = new ByteWriter(1);
    w.writeVarUint(value);
    assert.equal(varUintSize(value), w.length, `${value}`);
  }
});

test("varint32Size is the length protobuf's writer (the generated codec's) writes, at every boundary up to 2^32 - 1", () => {
  for (const value of boundaries(2 ** 32 - 1)) {
    assert.equal(varint32Size(value), new BinaryWriter().uint32(value).finish().length, `${value}`);
  }
});
