/**
 * Data written as null (ZooKeeper's create/setData with null data) stays null through everything
 * that carries a znode's data: the txn log, snapshots and forwarded requests; empty data stays
 * empty. A ZooKeeper client reads the first back as null, the second as zero bytes.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { NULL_DATA, OPEN_ACL_UNSAFE } from "../../src/common/znode.js";
import { DataTree } from "../../src/store/data-tree.js";
import { decodeSnapshot, encodeSnapshot } from "../../src/store/snapshot-codec.js";
import { decodeTxn, encodeTxn } from "../../src/store/txn-codec.js";
import { decodeForwardedRequest, encodeForwardedRequest } from "../../src/replica/request-codec.js";
import type { Acl, Txn } from "../../src/store/types.js";

const acl = OPEN_ACL_UNSAFE as Acl[];
const header = (zxid: number) => ({ sessionId: 1n, cxid: zxid, zxid, timeMs: 1_000 });
/** The zxid-th create under "/" (fresh cversion -1): the parent's cversion becomes zxid - 1. */
const create = (zxid: number, path: string, data: Uint8Array): Txn => ({
  header: header(zxid),
  body: { type: "create", path, data, acl, ephemeralOwner: 0n, parentCversion: zxid - 1 },
});

test("the txn codec keeps null data null and empty data empty, copied or shared", () => {
  for (const shareInput of [false, true]) {
    const nullCreate = decodeTxn(encodeTxn(create(1, "/n", NULL_DATA)), shareInput);
    assert.equal(nullCreate.body.type === "create" && nullCreate.body.data, NULL_DATA);
    const emptyCreate = decodeTxn(encodeTxn(create(2, "/e", new Uint8Array(0))), shareInput);
    assert.ok(emptyCreate.body.type === "create" && emptyCreate.body.data !== NULL_DATA && emptyCreate.body.data.length === 0);
    const setNull = decodeTxn(encodeTxn({ header: header(3), body: { type: "setData", path: "/e", data: NULL_DATA, version: 1 } }), shareInput);
    assert.equal(setNull.body.type === "setData" && setNull.body.data, NULL_DATA);
  }
});

test("a snapshot keeps which nodes hold null data", () => {
  const tree = new DataTree();
  tree.apply(create(1, "/n", NULL_DATA));
  tree.apply(create(2, "/e", new Uint8Array(0)));
  tree.apply(create(3, "/d", new Uint8Array([1, 2])));
  const restored = decodeSnapshot(encodeSnapshot(tree));
  assert.equal(restored.getData("/n").data, NULL_DATA);
  assert.notEqual(restored.getData("/e").data, NULL_DATA);
  assert.deepEqual([...restored.getData("/d").data], [1, 2]);
  assert.equal(restored.getData("/n").stat.dataLength, 0);
  assert.equal(restored.digest(), tree.digest());
});

test("a forwarded create or setData keeps null data null", () => {
  const created = decodeForwardedRequest(encodeForwardedRequest({ op: "create", path: "/n", data: NULL_DATA, acl, mode: "persistent", ttlMs: 0 }, []));
  assert.equal(created.request.op === "create" && created.request.data, NULL_DATA);
  const set = decodeForwardedRequest(encodeForwardedRequest({ op: "setData", path: "/n", data: NULL_DATA, version: -1 }, []));
  assert.equal(set.request.op === "setData" && set.request.data, NULL_DATA);
  const empty = decodeForwardedRequest(encodeForwardedRequest({ op: "setData", path: "/n", data: new Uint8Array(0), version: -1 }, []));
  assert.ok(empty.request.op === "setData" && empty.request.data !== NULL_DATA);
});
