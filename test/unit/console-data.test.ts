/** How the web console shows znode data and reads what the page sends (src/console/console-data.ts). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ZkError } from "../../src/common/errors.js";
import { dataFromInput, pathFromInput, versionFromInput, viewOfData } from "../../src/console/console-data.js";

const bytes = (text: string) => new TextEncoder().encode(text);

test("text data is shown as text, JSON objects and arrays also pretty-printed", () => {
  assert.deepEqual(viewOfData(bytes("hello")), { size: 5, text: "hello", hex: "68656c6c6f", hexTruncated: false });
  assert.equal(viewOfData(bytes('{"a":[1,2]}')).json, '{\n  "a": [\n    1,\n    2\n  ]\n}');
  assert.equal(viewOfData(bytes("{not json")).json, undefined);
  assert.equal(viewOfData(bytes("42")).json, undefined);
});

test("binary data (invalid UTF-8 or control characters) is hex only, cut at 64 KiB", () => {
  const view = viewOfData(new Uint8Array([0, 1, 2, 0xff]));
  assert.equal(view.text, undefined);
  assert.equal(view.hex, "000102ff");
  const big = viewOfData(new Uint8Array(70 * 1024).fill(0xfe));
  assert.equal(big.hexTruncated, true);
  assert.equal(big.hex.length, 64 * 1024 * 2);
});

test("data from the page is UTF-8 text or hex; anything else is BADARGUMENTS", () => {
  assert.deepEqual(dataFromInput("hé", undefined), bytes("hé"));
  assert.deepEqual(dataFromInput("00 ff\n10", "hex"), new Uint8Array([0, 0xff, 0x10]));
  assert.deepEqual(dataFromInput(undefined, "text"), new Uint8Array(0));
  for (const [data, encoding] of [
    ["zz", "hex"],
    ["abc", "hex"],
    ["x", "base64"],
    [5, "text"],
  ] as const) {
    assert.throws(
      () => dataFromInput(data, encoding),
      (e: unknown) => e instanceof ZkError && e.code === "BADARGUMENTS",
    );
  }
});

test("versions are integers from -1 up, absent meaning any; paths are required", () => {
  assert.equal(versionFromInput(undefined), -1);
  assert.equal(versionFromInput(""), -1);
  assert.equal(versionFromInput(" 3 "), 3);
  assert.equal(versionFromInput(0), 0);
  for (const bad of ["abc", "1.5", -2, 2 ** 31, "1e3x"]) {
    assert.throws(
      () => versionFromInput(bad),
      (e: unknown) => e instanceof ZkError && e.code === "BADARGUMENTS",
      String(bad),
    );
  }
  assert.throws(
    () => pathFromInput(""),
    (e: unknown) => e instanceof ZkError && e.code === "BADARGUMENTS",
  );
  assert.throws(
    () => pathFromInput(7),
    (e: unknown) => e instanceof ZkError && e.code === "BADARGUMENTS",
  );
  assert.equal(pathFromInput("/a"), "/a");
});
