/**
 * The pure parts of the discovery recipes: balancing policies, instance and progress records,
 * znode name and path helpers.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { decodeProgress, encodeProgress, checkProgress } from "../../src/recipes/heartbeat.js";
import { LoadBalancer, loadOf, pickLeastLoaded, pickRandom, pickRoundRobin } from "../../src/recipes/load-balancer.js";
import { checkNodeName } from "../../src/recipes/naming-service.js";
import { decodeInstance, encodeInstance, type ServiceInstance } from "../../src/recipes/service-discovery.js";
import { childPath, parentOf } from "../../src/recipes/common.js";

const instance = (id: string, load?: number): ServiceInstance => ({
  id,
  address: `10.0.0.${id.length}`,
  port: 8000,
  ...(load === undefined ? {} : { payload: { load } }),
});
const list = (...instances: ServiceInstance[]) => ({ instances: () => instances });
const bytes = (text: string) => Buffer.from(text, "utf8");
const codeOf = (code: string) => (error: unknown) => (error as { code?: string }).code === code;

describe("load balancer", () => {
  test("round-robin cycles through every instance in id order, whatever order the source lists them", () => {
    const balancer = new LoadBalancer(list(instance("c"), instance("a"), instance("b")), { strategy: "round-robin" });
    const picks = Array.from({ length: 7 }, () => balancer.next()!.id);
    assert.deepEqual(picks, ["a", "b", "c", "a", "b", "c", "a"]);
  });

  test("round-robin follows a source whose list changes", () => {
    let current = [instance("a"), instance("b")];
    const balancer = new LoadBalancer({ instances: () => current }, { strategy: "round-robin" });
    assert.equal(balancer.next()!.id, "a");
    current = [instance("b")];
    assert.equal(balancer.next()!.id, "b");
    current = [];
    assert.equal(balancer.next(), null);
  });

  test("least-loaded picks the instance with the minimum load", () => {
    const balancer = new LoadBalancer(list(instance("a", 5), instance("b", 1), instance("c", 3)), { strategy: "least-loaded" });
    assert.deepEqual([balancer.next()!.id, balancer.next()!.id], ["b", "b"]);
  });

  test("least-loaded takes ties in turn and counts a missing load as 0", () => {
    const balancer = new LoadBalancer(list(instance("a", 2), instance("b"), instance("c", 0)), { strategy: "least-loaded" });
    assert.deepEqual(
      Array.from({ length: 4 }, () => balancer.next()!.id),
      ["b", "c", "b", "c"],
    );
    assert.equal(loadOf({ id: "x", address: "h", port: 1, payload: { load: "high" } }), 0);
    assert.equal(loadOf({ id: "x", address: "h", port: 1, payload: 7 }), 0);
  });

  test("random uses the injected function to index the id-ordered list", () => {
    const draws = [0.9, 0, 0.5, 0.34];
    const balancer = new LoadBalancer(list(instance("c"), instance("b"), instance("a")), { strategy: "random", random: () => draws.shift()! });
    assert.deepEqual(
      Array.from({ length: 4 }, () => balancer.next()!.id),
      ["c", "a", "b", "b"],
    );
    assert.equal(draws.length, 0, "one draw per pick");
  });

  test("random refuses a draw outside [0, 1)", () => {
    assert.throws(() => pickRandom([instance("a")], 1), codeOf("BADARGUMENTS"));
    assert.throws(() => pickRandom([instance("a")], Number.NaN), codeOf("BADARGUMENTS"));
  });

  test("every strategy answers null for no instances, without drawing", () => {
    let drawn = 0;
    for (const strategy of ["round-robin", "random", "least-loaded"] as const) {
      const balancer = new LoadBalancer(list(), { strategy, random: () => (drawn++, 0) });
      assert.equal(balancer.next(), null);
    }
    assert.equal(drawn, 0);
    assert.equal(pickRoundRobin([], 3), null);
    assert.equal(pickLeastLoaded([], 3), null);
  });

  test("an unknown strategy is refused", () => {
    assert.throws(() => new LoadBalancer(list(), { strategy: "fastest" as never }), codeOf("BADARGUMENTS"));
  });
});

describe("service instance records", () => {
  test("an instance survives encode and decode, payload included", () => {
    const original: ServiceInstance = { id: "i-1", address: "10.1.2.3", port: 9090, payload: { load: 0.5, zone: "b" } };
    assert.deepEqual(decodeInstance(bytes(encodeInstance(original))), original);
    assert.deepEqual(decodeInstance(bytes(encodeInstance({ id: "i-2", address: "h", port: 1 }))), { id: "i-2", address: "h", port: 1 });
  });

  test("data that is not an instance record decodes to undefined", () => {
    for (const text of ["", "not json", "null", "[]", '{"id":"a","address":"h"}', '{"id":1,"address":"h","port":1}']) {
      assert.equal(decodeInstance(bytes(text)), undefined, text);
    }
  });
});

describe("progress records", () => {
  test("progress survives encode and decode; anything else reads as 0 % with no message", () => {
    assert.deepEqual(decodeProgress(bytes(encodeProgress({ percent: 42, message: "copying" }))), { percent: 42, message: "copying" });
    assert.deepEqual(decodeProgress(bytes("garbage")), { percent: 0, message: "" });
    assert.deepEqual(decodeProgress(bytes('{"percent":"x"}')), { percent: 0, message: "" });
  });

  test("progress outside 0..100 or without a message is refused", () => {
    assert.throws(() => checkProgress({ percent: 101, message: "" }), codeOf("BADARGUMENTS"));
    assert.throws(() => checkProgress({ percent: -1, message: "" }), codeOf("BADARGUMENTS"));
    assert.throws(() => checkProgress({ percent: Number.NaN, message: "" }), codeOf("BADARGUMENTS"));
    assert.throws(() => checkProgress({ percent: 5 } as never), codeOf("BADARGUMENTS"));
    checkProgress({ percent: 0, message: "" });
    checkProgress({ percent: 100, message: "done" });
  });
});

describe("znode names and paths", () => {
  test("names, service ids and worker ids must be one znode name", () => {
    for (const bad of ["", "a/b", ".", "..", "x\u0000"]) assert.throws(() => checkNodeName("name", bad), codeOf("BADARGUMENTS"), JSON.stringify(bad));
    checkNodeName("name", "db-primary");
  });

  test("parentOf and childPath agree at the root and below", () => {
    assert.equal(parentOf("/a"), "/");
    assert.equal(parentOf("/a/b/c"), "/a/b");
    assert.equal(childPath("/", "a"), "/a");
    assert.equal(childPath("/a/b", "c"), "/a/b/c");
  });
});
