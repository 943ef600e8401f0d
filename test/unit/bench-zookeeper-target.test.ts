/**
 * The ZooKeeper bench adapter's own logic (bench/targets/zookeeper.ts), against a fake
 * callback-style client: which ZooKeeper errors mean "already there" / "not there", which are
 * failures, how they are labelled, and what is sent for each BenchConnection call.
 */
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { describe, it } from "node:test";
import * as zookeeper from "node-zookeeper-client";
import { errorLabel } from "../../bench/target.js";
import { asBenchError, ZooKeeperConnection, type ZooKeeperClientLike } from "../../bench/targets/zookeeper.js";

const { Exception } = zookeeper;

type Answer = { error?: number; value?: unknown };

/** Records every call and answers it from `answers` (by method name), asynchronously like the library. */
function fakeClient(answers: Record<string, Answer> = {}): { client: ZooKeeperClientLike; calls: unknown[][] } {
  const calls: unknown[][] = [];
  const emitter = new EventEmitter();
  const answer = (method: string, args: unknown[]): void => {
    calls.push([method, ...args]);
    const callback = args[args.length - 1] as (error: unknown, value?: unknown) => void;
    const { error, value } = answers[method] ?? {};
    setImmediate(() => (error === undefined ? callback(null, value) : callback(Exception.create(error))));
  };
  const client = {
    create: (...args: unknown[]) => answer("create", args),
    setData: (...args: unknown[]) => answer("setData", args),
    getData: (...args: unknown[]) => answer("getData", args),
    getChildren: (...args: unknown[]) => answer("getChildren", args),
    remove: (...args: unknown[]) => answer("remove", args),
    close: () => {
      calls.push(["close"]);
      setImmediate(() => emitter.emit("disconnected"));
    },
    once: (event: string, listener: () => void) => emitter.once(event, listener),
    getState: () => zookeeper.State.SYNC_CONNECTED,
  } as unknown as ZooKeeperClientLike;
  return { client, calls };
}

describe("bench zookeeper target", () => {
  it("labels node-zookeeper-client exceptions with ZooKeeper's error names, as corral's SDK spells them", () => {
    const cases: Array<[number, string]> = [
      [Exception.CONNECTION_LOSS, "CONNECTIONLOSS"],
      [Exception.NO_NODE, "NONODE"],
      [Exception.NODE_EXISTS, "NODEEXISTS"],
      [Exception.BAD_VERSION, "BADVERSION"],
      [Exception.SESSION_EXPIRED, "SESSIONEXPIRED"],
      [Exception.OPERATION_TIMEOUT, "OPERATIONTIMEOUT"],
      [Exception.NO_AUTH, "NOAUTH"],
    ];
    for (const [code, label] of cases) {
      const error = asBenchError(Exception.create(code));
      assert.equal(errorLabel(error), label);
      assert.equal((error as { zkCode?: number }).zkCode, code);
      assert.ok(error.cause instanceof Exception);
    }
    const other = new TypeError("not from ZooKeeper");
    assert.equal(asBenchError(other), other);
    assert.equal(errorLabel(asBenchError(other)), "TypeError");
  });

  it("create: true when made, false on NODEEXISTS, a labelled failure otherwise", async () => {
    const made = fakeClient({ create: { value: "/k" } });
    assert.equal(await new ZooKeeperConnection(made.client).create("/k", new Uint8Array([1, 2])), true);
    const [, path, data, acls, mode] = made.calls[0]!;
    assert.equal(path, "/k");
    assert.deepEqual(data, Buffer.from([1, 2]));
    assert.equal(acls, zookeeper.ACL.OPEN_ACL_UNSAFE);
    assert.equal(mode, zookeeper.CreateMode.PERSISTENT);

    assert.equal(await new ZooKeeperConnection(fakeClient({ create: { error: Exception.NODE_EXISTS } }).client).create("/k", new Uint8Array()), false);
    await assert.rejects(new ZooKeeperConnection(fakeClient({ create: { error: Exception.NO_NODE } }).client).create("/a/b", new Uint8Array()), (error) => {
      assert.equal(errorLabel(error), "NONODE");
      return true;
    });
  });

  it("createSequential asks for a persistent-sequential node and returns the server's name", async () => {
    const fake = fakeClient({ create: { value: "/seq/n-0000000007" } });
    assert.equal(await new ZooKeeperConnection(fake.client).createSequential("/seq/n-", new Uint8Array([9])), "/seq/n-0000000007");
    assert.equal(fake.calls[0]![4], zookeeper.CreateMode.PERSISTENT_SEQUENTIAL);
  });

  it("setData is unconditional (version -1); getData gives bytes, empty for the library's undefined", async () => {
    const set = fakeClient({ setData: { value: {} } });
    await new ZooKeeperConnection(set.client).setData("/k", new Uint8Array([7]));
    assert.deepEqual(set.calls[0], ["setData", "/k", Buffer.from([7]), -1, set.calls[0]![4]]);

    assert.deepEqual(await new ZooKeeperConnection(fakeClient({ getData: { value: Buffer.from("abc") } }).client).getData("/k"), Buffer.from("abc"));
    assert.deepEqual(await new ZooKeeperConnection(fakeClient({ getData: { value: undefined } }).client).getData("/k"), new Uint8Array(0));
    await assert.rejects(new ZooKeeperConnection(fakeClient({ getData: { error: Exception.CONNECTION_LOSS } }).client).getData("/k"), (error) => {
      assert.equal(errorLabel(error), "CONNECTIONLOSS");
      return true;
    });
  });

  it("children: [] on NONODE; delete: false on NONODE, any version", async () => {
    assert.deepEqual(await new ZooKeeperConnection(fakeClient({ getChildren: { value: ["a", "b"] } }).client).children("/d"), ["a", "b"]);
    assert.deepEqual(await new ZooKeeperConnection(fakeClient({ getChildren: { error: Exception.NO_NODE } }).client).children("/d"), []);
    const removed = fakeClient({ remove: {} });
    assert.equal(await new ZooKeeperConnection(removed.client).delete("/d/a"), true);
    assert.equal(removed.calls[0]![2], -1);
    assert.equal(await new ZooKeeperConnection(fakeClient({ remove: { error: Exception.NO_NODE } }).client).delete("/d/a"), false);
    await assert.rejects(new ZooKeeperConnection(fakeClient({ remove: { error: Exception.NOT_EMPTY } }).client).delete("/d"), (error) => {
      assert.equal(errorLabel(error), "NOTEMPTY");
      return true;
    });
  });

  it("close sends closeSession and waits for the connection to drop", async () => {
    const fake = fakeClient();
    await new ZooKeeperConnection(fake.client).close();
    assert.deepEqual(fake.calls, [["close"]]);
  });
});
