import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { limits } from "../../src/common/constants.js";
import { ZkError } from "../../src/common/errors.js";
import { decodeForwardedRequest, encodeForwardedRequest, type ForwardedRequest } from "../../src/replica/request-codec.js";
import type { CreateMode } from "../../src/store/types.js";

const path = fc.string({ maxLength: 20 });
const bytes = fc.uint8Array({ maxLength: 16 });
const version = fc.integer({ min: -1, max: 2 ** 31 - 1 });
const acl = fc.array(
  fc.record({ perms: fc.integer({ min: 0, max: 31 }), id: fc.record({ scheme: fc.constantFrom("world", "digest", "ip"), id: fc.string({ maxLength: 8 }) }) }),
  { maxLength: 3 },
);
const mode = fc.constantFrom<CreateMode>(
  "persistent",
  "ephemeral",
  "persistent-sequential",
  "ephemeral-sequential",
  "container",
  "persistent-with-ttl",
  "persistent-sequential-with-ttl",
);
const create = fc.record({ op: fc.constant("create" as const), path, data: bytes, acl, mode, ttlMs: fc.integer({ min: 0, max: 2 ** 40 }) });
const del = fc.record({ op: fc.constant("delete" as const), path, version });
const setData = fc.record({ op: fc.constant("setData" as const), path, data: bytes, version });
const check = fc.record({ op: fc.constant("check" as const), path, version });
const request: fc.Arbitrary<ForwardedRequest> = fc.oneof(
  create,
  del,
  setData,
  fc.record({ op: fc.constant("setAcl" as const), path, acl, version }),
  fc.record({ op: fc.constant("multi" as const), ops: fc.array(fc.oneof(create, del, setData, check), { maxLength: 5 }) }),
  fc.constant({ op: "close" as const }),
  fc.record({ op: fc.constant("createSession" as const), timeoutMs: fc.integer({ min: 0, max: 2 ** 31 - 1 }), password: bytes }),
);

const authInfo = fc.array(fc.record({ scheme: fc.constantFrom("ip", "digest", "super"), id: fc.string({ maxLength: 40 }) }), {
  maxLength: limits.authIdsPerConnectionMax,
});

test("a ZooKeeper-door write keeps its zooKeeperChecks across the forward; other requests never carry it", () => {
  const ids = [{ scheme: "ip", id: "10.0.0.1" }];
  const requests: ForwardedRequest[] = [
    { op: "create", path: "/a", data: new Uint8Array(0), acl: [], mode: "persistent", ttlMs: 0, zooKeeperChecks: true },
    { op: "delete", path: "/a/", version: -1, zooKeeperChecks: true },
    { op: "multi", ops: [{ op: "create", path: "/m", data: new Uint8Array(0), acl: [], mode: "persistent", ttlMs: 0 }], zooKeeperChecks: true },
  ];
  for (const r of requests) {
    for (const authInfo of [ids, []]) assert.deepEqual(decodeForwardedRequest(encodeForwardedRequest(r, authInfo)), { request: r, authInfo });
  }
  // The tag before a request that cannot carry it is a malformed forward.
  const setData = encodeForwardedRequest({ op: "setData", path: "/a", data: new Uint8Array(0), version: -1 }, []);
  const tagged = new Uint8Array([setData[0]!, 10, ...setData.subarray(1)]);
  assert.throws(
    () => decodeForwardedRequest(tagged),
    (e: unknown) => e instanceof ZkError && e.code === "MARSHALLINGERROR",
  );
});

test("every forwarded request survives the round trip with the ids of its connection", () => {
  fc.assert(
    fc.property(request, authInfo, (r, ids) =>
      assert.deepEqual(decodeForwardedRequest(encodeForwardedRequest(r, ids)), { request: structuredClone(r), authInfo: structuredClone(ids) }),
    ),
  );
});

test("more ids than a connection may hold are MARSHALLINGERROR", () => {
  const ids = Array.from({ length: limits.authIdsPerConnectionMax + 1 }, (_, i) => ({ scheme: "digest", id: `u${i}:h` }));
  assert.throws(
    () => decodeForwardedRequest(encodeForwardedRequest({ op: "close" }, ids)),
    (e: unknown) => e instanceof ZkError && e.code === "MARSHALLINGERROR",
  );
});

test("truncated or garbage bytes are MARSHALLINGERROR, never another exception", () => {
  fc.assert(
    fc.property(request, authInfo, fc.nat(), fc.uint8Array({ maxLength: 40 }), (r, ids, cut, garbage) => {
      const encoded = encodeForwardedRequest(r, ids);
      for (const input of [encoded.subarray(0, cut % Math.max(1, encoded.length)), garbage]) {
        try {
          decodeForwardedRequest(input);
        } catch (error) {
          assert.ok(error instanceof ZkError && error.code === "MARSHALLINGERROR", String(error));
        }
      }
    }),
  );
});

test("a check outside a multi is refused", () => {
  const bytesOfCheck = encodeForwardedRequest({ op: "multi", ops: [{ op: "check", path: "/a", version: 1 }] }, []);
  // Strip the multi header (tag + count) so the check stands alone after the version byte.
  const alone = new Uint8Array([bytesOfCheck[0]!, ...bytesOfCheck.subarray(3)]);
  assert.throws(
    () => decodeForwardedRequest(alone),
    (e: unknown) => e instanceof ZkError && e.code === "MARSHALLINGERROR",
  );
});
