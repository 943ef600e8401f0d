import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { SessionTable } from "../../src/store/session-table.js";

describe("SessionTable buckets (ZooKeeper's roundToNextInterval)", () => {
  const ROUNDING: [nowMs: number, timeoutMs: number, intervalMs: number, bucketMs: number][] = [
    [0, 1000, 500, 1500], // exactly on a boundary: the next one
    [0, 999, 500, 1000],
    [1, 999, 500, 1500],
    [100, 1000, 1000, 2000],
    [12_345, 4000, 2000, 18_000],
    [0, 0, 2000, 2000],
  ];
  for (const [nowMs, timeoutMs, intervalMs, bucketMs] of ROUNDING) {
    test(`touched at ${nowMs} with timeout ${timeoutMs}, interval ${intervalMs}: bucket ${bucketMs}`, () => {
      const table = new SessionTable(intervalMs);
      assert.equal(table.touch(1n, timeoutMs, nowMs), bucketMs);
      assert.equal(table.expiryOf(1n), bucketMs);
      assert.equal(table.nextExpirationMs(), bucketMs);
    });
  }
});

describe("SessionTable", () => {
  test("a session expires exactly when its bucket time is reached", () => {
    const table = new SessionTable(1000);
    table.touch(7n, 3000, 500); // bucket 4000
    assert.deepEqual(table.expired(3999), []);
    assert.equal(table.has(7n), true);
    assert.deepEqual(table.expired(4000), [7n]);
    assert.equal(table.has(7n), false);
    assert.equal(table.size, 0);
    assert.deepEqual(table.expired(10_000), [], "an expired session is reported once");
  });

  test("touch moves a session to a later bucket, leaving the old one", () => {
    const table = new SessionTable(1000);
    table.touch(7n, 3000, 0); // 4000
    table.touch(8n, 3000, 0); // 4000
    assert.equal(table.touch(7n, 3000, 2500), 6000);
    assert.deepEqual(table.expired(4000), [8n]);
    assert.deepEqual(table.expired(5999), []);
    assert.deepEqual(table.expired(6000), [7n]);
  });

  test("expired returns exactly the due sessions, earliest bucket first, across several buckets", () => {
    const table = new SessionTable(1000);
    table.touch(1n, 5000, 0); // 6000
    table.touch(2n, 1000, 0); // 2000
    table.touch(3n, 3000, 0); // 4000
    table.touch(4n, 1000, 100); // 2000
    table.touch(5n, 9000, 0); // 10000
    assert.equal(table.nextExpirationMs(), 2000);
    assert.deepEqual(table.expired(6500), [2n, 4n, 3n, 1n]);
    assert.equal(table.has(5n), true);
    assert.equal(table.size, 1);
    assert.equal(table.nextExpirationMs(), 10_000);
  });

  test("a clock jump far ahead expires everything in one call", () => {
    const table = new SessionTable(2000);
    for (let id = 1n; id <= 50n; id++) table.touch(id, Number(id) * 1000, 0);
    assert.equal(table.expired(1e12).length, 50);
    assert.equal(table.nextExpirationMs(), undefined);
  });

  test("remove forgets a session: it never expires", () => {
    const table = new SessionTable(1000);
    table.touch(1n, 1000, 0);
    table.touch(2n, 1000, 0);
    assert.equal(table.remove(1n), true);
    assert.equal(table.remove(1n), false);
    assert.deepEqual(table.expired(5000), [2n]);
  });

  test("an emptied bucket no longer counts as the next expiration", () => {
    const table = new SessionTable(1000);
    table.touch(1n, 1000, 0); // 2000
    table.touch(2n, 5000, 0); // 6000
    table.touch(1n, 9000, 0); // moves to 10000
    assert.equal(table.nextExpirationMs(), 6000);
    table.remove(2n);
    assert.equal(table.nextExpirationMs(), 10_000);
  });

  test("touching within the same bucket changes nothing", () => {
    const table = new SessionTable(1000);
    table.touch(1n, 1000, 0);
    table.touch(2n, 1000, 0);
    table.touch(1n, 1000, 900); // still bucket 2000
    assert.deepEqual(table.expired(2000), [1n, 2n], "1 kept its place in the bucket");
  });

  test("the interval must be a positive integer", () => {
    assert.throws(() => new SessionTable(0), /invariant violated/);
  });
});
