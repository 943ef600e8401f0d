/**
 * zookeeperIdOrder against orders printed by ZooKeeper 3.8 itself: whoami after two digest
 * authentications on a live server, and a 16-id set (one table resize) walked by a
 * ConcurrentHashMap-backed set of org.apache.zookeeper.data.Id in a JVM.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { generateDigest } from "../../src/common/digest.js";
import { zookeeperIdOrder } from "../../src/replica/zookeeper-id-order.js";

test("whoami after addauth alice:secret and alice:wrong lists ids as ZooKeeper 3.8 did", () => {
  const secret = { scheme: "digest", id: generateDigest("alice:secret") };
  const wrong = { scheme: "digest", id: generateDigest("alice:wrong") };
  const ip = { scheme: "ip", id: "127.0.0.1" };
  assert.deepEqual(zookeeperIdOrder([ip, secret, wrong]), [secret, ip, wrong]);
  // A set: adding an id again changes nothing.
  assert.deepEqual(zookeeperIdOrder([ip, secret, wrong, secret]), [secret, ip, wrong]);
});

test("16 ids (past the resize at 12) come out in the JVM's ConcurrentHashMap order", () => {
  const ids = Array.from({ length: 16 }, (_, i) => (i % 3 === 0 ? { scheme: "ip", id: `10.0.0.${i}` } : { scheme: "digest", id: `u${i}:h${i * 7919}` }));
  const fromJava: [string, string][] = [
    ["digest", "u8:h63352"],
    ["ip", "10.0.0.12"],
    ["digest", "u11:h87109"],
    ["ip", "10.0.0.15"],
    ["ip", "10.0.0.9"],
    ["ip", "10.0.0.6"],
    ["digest", "u4:h31676"],
    ["digest", "u5:h39595"],
    ["digest", "u10:h79190"],
    ["ip", "10.0.0.3"],
    ["ip", "10.0.0.0"],
    ["digest", "u7:h55433"],
    ["digest", "u13:h102947"],
    ["digest", "u2:h15838"],
    ["digest", "u1:h7919"],
    ["digest", "u14:h110866"],
  ];
  assert.deepEqual(
    zookeeperIdOrder(ids).map((id) => [id.scheme, id.id]),
    fromJava,
  );
  assert.notDeepEqual(
    fromJava,
    ids.map((id) => [id.scheme, id.id]),
    "the order is not the insertion order",
  );
});
