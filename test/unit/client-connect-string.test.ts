import assert from "node:assert/strict";
import { test } from "node:test";

import { DEFAULT_PORT, parseConnectString, prependChroot, shuffled, stripChroot } from "../../src/client/connect-string.js";
import { ZkError } from "../../src/common/errors.js";

function badArguments(fn: () => unknown): void {
  assert.throws(fn, (err: unknown) => err instanceof ZkError && err.code === "BADARGUMENTS");
}

test("a connect string lists hosts with ports, in order, without a chroot", () => {
  assert.deepEqual(parseConnectString("127.0.0.1:2181,10.0.0.2:2182,zk3.example:3000"), {
    hosts: [
      { host: "127.0.0.1", port: 2181 },
      { host: "10.0.0.2", port: 2182 },
      { host: "zk3.example", port: 3000 },
    ],
    chroot: undefined,
  });
});

test("a host without a port gets ZooKeeper's default port", () => {
  assert.deepEqual(parseConnectString("localhost").hosts, [{ host: "localhost", port: DEFAULT_PORT }]);
  assert.equal(DEFAULT_PORT, 2181);
});

test("the chroot starts at the first slash and applies to every host", () => {
  assert.deepEqual(parseConnectString("h1:1,h2:2/app/tenant"), {
    hosts: [
      { host: "h1", port: 1 },
      { host: "h2", port: 2 },
    ],
    chroot: "/app/tenant",
  });
});

test("a chroot of / means no chroot", () => {
  assert.equal(parseConnectString("h1:1/").chroot, undefined);
});

test("spaces around hosts are ignored", () => {
  assert.deepEqual(parseConnectString(" h1:1 , h2:2").hosts, [
    { host: "h1", port: 1 },
    { host: "h2", port: 2 },
  ]);
});

test("bracketed IPv6 literals parse with and without a port", () => {
  assert.deepEqual(parseConnectString("[::1]:2300,[fe80::2]").hosts, [
    { host: "::1", port: 2300 },
    { host: "fe80::2", port: DEFAULT_PORT },
  ]);
});

test("invalid connect strings fail with BADARGUMENTS", () => {
  for (const bad of [
    "",
    "   ",
    "/chroot-only",
    "h1:1,,h2:2",
    "h1:1,",
    ":2181",
    "h1:",
    "h1:abc",
    "h1:0",
    "h1:65536",
    "h1:-5",
    "h1:1/app/",
    "h1:1/app//x",
    "h1:1/app/./x",
    "::1:2181",
    "[::1",
    "[]:1",
    "[::1]x",
  ]) {
    badArguments(() => parseConnectString(bad));
  }
});

test("prependChroot maps user paths into the chroot; / is the chroot itself", () => {
  assert.equal(prependChroot(undefined, "/a/b"), "/a/b");
  assert.equal(prependChroot("/app", "/a/b"), "/app/a/b");
  assert.equal(prependChroot("/app", "/"), "/app");
});

test("stripChroot maps server paths back and leaves paths outside the chroot alone", () => {
  assert.equal(stripChroot(undefined, "/a"), "/a");
  assert.equal(stripChroot("/app", "/app"), "/");
  assert.equal(stripChroot("/app", "/app/a/b"), "/a/b");
  assert.equal(stripChroot("/app", "/application/x"), "/application/x");
  assert.equal(stripChroot("/app", "/other"), "/other");
});

test("chroot add and strip round-trip", () => {
  for (const path of ["/", "/a", "/a/b/c", "/queue/q-0000000001"]) {
    assert.equal(stripChroot("/x/y", prependChroot("/x/y", path)), path);
  }
});

test("shuffled returns a permutation and leaves its input alone", () => {
  const hosts = [1, 2, 3, 4, 5, 6];
  let seed = 7;
  const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const out = shuffled(hosts, random);
  assert.deepEqual(hosts, [1, 2, 3, 4, 5, 6]);
  assert.deepEqual([...out].sort(), [1, 2, 3, 4, 5, 6]);
  // With random() always just below 1 every element stays put; always 0 rotates: proves it permutes.
  assert.deepEqual(
    shuffled([1, 2, 3], () => 0),
    [2, 3, 1],
  );
  assert.deepEqual(
    shuffled([1, 2, 3], () => 0.999),
    [1, 2, 3],
  );
});
