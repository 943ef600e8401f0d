import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { limits } from "../../src/common/constants.js";
import { ZkError } from "../../src/common/errors.js";
import { baseName, isReservedPath, joinPath, parentOf, pathProblem, validatePath } from "../../src/common/paths.js";

const VALID: [string, string][] = [
  ["root", "/"],
  ["one segment", "/a"],
  ["nested", "/a/b/c"],
  ["dots inside a name", "/a.b/..c/c../.d./...."],
  ["a name starting with a dot", "/.hidden"],
  ["spaces and punctuation", "/a b/c-d_e:f@g"],
  ["non-ASCII letters", "/café/日本"],
  ["U+F900, just past the rejected private-use range", "/\uf900"],
  ["U+FFEF, just below the rejected specials", "/\uffef"],
  ["U+00A0, just past the C1 controls", "/\u00a0"],
  ["the longest accepted path", "/" + "x".repeat(limits.pathLengthMax - 1)],
];

const INVALID: [string, string, RegExp][] = [
  ["empty", "", /must not be empty/],
  ["relative", "a/b", /must start with \//],
  ["relative dot", "./a", /must start with \//],
  ["trailing slash", "/a/", /must not end with \//],
  ["empty segment", "/a//b", /empty node name/],
  ["double slash root", "//", /must not end with \/|empty node name/],
  ["dot segment", "/a/./b", /relative paths/],
  ["dot-dot segment", "/a/../b", /relative paths/],
  ["final dot", "/a/.", /relative paths/],
  ["final dot-dot", "/a/..", /relative paths/],
  ["only a dot", "/.", /relative paths/],
  ["NUL", "/a\u0000b", /null character/],
  ["U+0001", "/a\u0001", /invalid character/],
  ["U+001F", "/a\u001f", /invalid character/],
  ["tab", "/a\tb", /invalid character/],
  ["DEL U+007F", "/a\u007f", /invalid character/],
  ["C1 control U+009F", "/a\u009f", /invalid character/],
  ["a surrogate (ZooKeeper rejects U+D800-U+F8FF)", "/a\ud83d\ude00", /invalid character/],
  ["private use U+E000", "/\ue000", /invalid character/],
  ["U+F8FF", "/\uf8ff", /invalid character/],
  ["U+FFF0", "/\ufff0", /invalid character/],
  ["U+FFFF", "/\uffff", /invalid character/],
  ["one character too long", "/" + "x".repeat(limits.pathLengthMax), /longer than/],
];

describe("validatePath", () => {
  for (const [name, path] of VALID) {
    test(`accepts ${name}`, () => {
      assert.doesNotThrow(() => validatePath(path));
      assert.equal(pathProblem(path), undefined);
    });
  }

  for (const [name, path, reason] of INVALID) {
    test(`rejects ${name} with BADARGUMENTS`, () => {
      assert.throws(
        () => validatePath(path),
        (error: unknown) => error instanceof ZkError && error.code === "BADARGUMENTS" && error.path === path && reason.test(error.message),
      );
    });
  }
});

describe("validatePath for sequential creates (checked as path + '1')", () => {
  const SEQUENTIAL: [string, string, boolean][] = [
    ["a trailing slash is allowed", "/locks/", true],
    ["the root is allowed", "/", true],
    ["a name prefix", "/locks/lock-", true],
    ["a final dot becomes '.1', a valid name", "/a/.", true],
    ["a final dot-dot becomes '..1', a valid name", "/a/..", true],
    ["an empty segment is still rejected", "/a//", false],
    ["a relative path is still rejected", "locks/", false],
    ["the empty string is rejected", "", false],
    ["a dot segment before the end is still rejected", "/a/./b", false],
    ["NUL is still rejected", "/a\u0000/", false],
    ["room must remain for the 10-digit suffix", "/" + "x".repeat(limits.pathLengthMax - 10), false],
    ["the longest sequential prefix", "/" + "x".repeat(limits.pathLengthMax - 11), true],
  ];
  for (const [name, path, valid] of SEQUENTIAL) {
    test(name, () => {
      if (valid) assert.doesNotThrow(() => validatePath(path, true));
      else
        assert.throws(
          () => validatePath(path, true),
          (error: unknown) => error instanceof ZkError && error.code === "BADARGUMENTS",
        );
    });
  }

  test("a trailing slash stays invalid without the sequential flag", () => {
    assert.throws(() => validatePath("/locks/"), ZkError);
  });
});

describe("path helpers", () => {
  const PARENTS: [string, string][] = [
    ["/a", "/"],
    ["/a/b", "/a"],
    ["/a/b/c", "/a/b"],
  ];
  for (const [path, parent] of PARENTS) {
    test(`parentOf(${path}) is ${parent}`, () => assert.equal(parentOf(path), parent));
  }

  test("parentOf the root is a bug", () => {
    assert.throws(() => parentOf("/"), /invariant violated/);
  });

  const NAMES: [string, string][] = [
    ["/", ""],
    ["/a", "a"],
    ["/a/bc", "bc"],
  ];
  for (const [path, name] of NAMES) {
    test(`baseName(${path}) is ${JSON.stringify(name)}`, () => assert.equal(baseName(path), name));
  }

  test("joinPath does not double the root's slash", () => {
    assert.equal(joinPath("/", "a"), "/a");
    assert.equal(joinPath("/a", "b"), "/a/b");
  });

  test("the /zookeeper subtree is reserved, lookalikes are not", () => {
    assert.equal(isReservedPath("/zookeeper"), true);
    assert.equal(isReservedPath("/zookeeper/quota"), true);
    assert.equal(isReservedPath("/zookeeperish"), false);
    assert.equal(isReservedPath("/a/zookeeper"), false);
  });
});
