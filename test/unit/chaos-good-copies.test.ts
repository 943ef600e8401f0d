/**
 * The damage budget the chaos run's corrupt and reconfiguration nemeses share, over stand-in
 * servers: a damaged voter counts against the quorum of good copies until its log shows it serving
 * again, and its decisions run one at a time.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { RoleLine } from "../helpers/cluster-process.js";
import { GoodCopies, type ServersSeen, votersOf } from "../chaos/good-copies.js";

class StandIns implements ServersSeen {
  readonly logs = new Map<number, { stderr: string }>();
  readonly running = new Set<number>();
  readonly roleOf = new Map<number, RoleLine>();

  constructor(ids: readonly number[]) {
    for (const id of ids) {
      this.logs.set(id, { stderr: "" });
      this.running.add(id);
      this.roleOf.set(id, { role: "following", leader: 1 });
    }
  }

  isRunning(id: number): boolean {
    return this.running.has(id);
  }

  roles(): Map<number, RoleLine> {
    return new Map([...this.roleOf].filter(([id]) => this.running.has(id)));
  }

  server(id: number): { readonly stderr: string } {
    return this.logs.get(id)!;
  }

  log(id: number, line: object): void {
    this.logs.get(id)!.stderr += `${JSON.stringify(line)}\n`;
  }
}

const SERVING = { level: 30, msg: "serving clients" };

test("three voters with one damaged copy may not lose another, five may", () => {
  const servers = new StandIns([1, 2, 3, 4, 5]);
  const copies = new GoodCopies(servers);
  copies.markDamaged(3);
  assert.match(copies.shortfall([1, 2, 3], 2) ?? "", /keep 1 good copies, below their quorum of 2; 3 not yet proved repaired/);
  assert.equal(copies.shortfall([1, 2, 3, 4, 5], 2), undefined);
  copies.markDamaged(2);
  assert.notEqual(copies.shortfall([1, 2, 3, 4, 5], 4), undefined);
});

test("a damaged server proves its repair only by serving after it was started on its damaged files", () => {
  const servers = new StandIns([1, 2, 3]);
  const copies = new GoodCopies(servers);
  servers.log(3, SERVING);
  copies.markDamaged(3);
  // Down: its earlier "serving clients" line says nothing of the damaged copy.
  servers.running.delete(3);
  assert.deepEqual(copies.unproved(), [3]);
  servers.running.add(3);
  copies.startedDamaged(3, servers.server(3).stderr.length);
  servers.roleOf.set(3, { role: "looking" });
  assert.deepEqual(copies.unproved(), [3]);
  servers.roleOf.set(3, { role: "following", leader: 1 });
  assert.deepEqual(copies.unproved(), [3], "following, but not yet serving");
  servers.log(3, SERVING);
  assert.deepEqual(copies.unproved(), []);
  assert.equal(copies.shortfall([1, 2, 3], 1), undefined);
});

test("a server that refuses its damaged files stays unproved", () => {
  const servers = new StandIns([1, 2, 3]);
  const copies = new GoodCopies(servers);
  copies.markDamaged(2);
  copies.startedDamaged(2, 0);
  servers.running.delete(2);
  servers.log(2, SERVING);
  assert.deepEqual(copies.unproved(), [2]);
  assert.notEqual(copies.shortfall([1, 2, 3], 1), undefined);
});

test("the budget's decisions run one at a time, in the order asked", async () => {
  const copies = new GoodCopies(new StandIns([1]));
  const order: string[] = [];
  const slow = copies.exclusive(async () => {
    order.push("first starts");
    await new Promise((resolve) => setTimeout(resolve, 20));
    order.push("first ends");
    throw new Error("a failed decision frees the lock all the same");
  });
  const next = copies.exclusive(() => {
    order.push("second");
    return Promise.resolve(2);
  });
  await assert.rejects(slow);
  assert.equal(await next, 2);
  assert.deepEqual(order, ["first starts", "first ends", "second"]);
});

test("votersOf lists the participants in id order", () => {
  assert.deepEqual(
    votersOf(
      new Map([
        [5, "participant"],
        [6, "observer"],
        [1, "participant"],
      ]),
    ),
    [1, 5],
  );
});
