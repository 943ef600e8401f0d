/**
 * RecentLog against the plainest model of what it promises: keep every record; a snapshot is the
 * newest records at or below the applied zxid within the window's bound (at most `count` of them,
 * at most `bytes` together, at least one), then every record above it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import type { LogRecord } from "../../src/consensus/messages.js";
import { RecentLog } from "../../src/replica/recent-log.js";

/** Records of 1 to 5 bytes, so that the byte bound and the count bound each get to hold. */
const sizeOf = (zxid: number): number => (zxid % 5) + 1;
const record = (zxid: number): LogRecord => ({ zxid, record: new Uint8Array(sizeOf(zxid)) });

type Op =
  | { kind: "append"; gap: number }
  | { kind: "applied"; back: number }
  | { kind: "truncate"; back: number }
  | { kind: "reset"; gap: number }
  | { kind: "snapshot" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("append" as const), gap: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("applied" as const), back: fc.integer({ min: -2, max: 5 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("truncate" as const), back: fc.integer({ min: 0, max: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("reset" as const), gap: fc.integer({ min: 0, max: 5 }) }) },
  { weight: 2, arbitrary: fc.constant({ kind: "snapshot" as const }) },
);

test("snapshot() equals the model after any sequence of appends, applies, truncations and resets", () => {
  const bound = fc.record({ count: fc.integer({ min: 1, max: 6 }), bytes: fc.integer({ min: 1, max: 20 }) });
  fc.assert(
    fc.property(bound, fc.integer({ min: 0, max: 4 }), fc.array(opArb, { maxLength: 3_000 }), (window, tail, ops) => {
      const initial = Array.from({ length: tail }, (_, i) => record(11 + i));
      const log = new RecentLog(10, initial, window);
      let model = initial.map((r) => r.zxid);
      let appliedZxid = 10;
      let lastZxid = model.at(-1) ?? 10;
      const expected = (): number[] => {
        const applied = model.filter((z) => z <= appliedZxid);
        let drop = Math.max(0, applied.length - window.count);
        const bytesFrom = (i: number): number => applied.slice(i).reduce((sum, z) => sum + sizeOf(z), 0);
        while (drop < applied.length - 1 && bytesFrom(drop) > window.bytes) drop += 1;
        return [...applied.slice(drop), ...model.filter((z) => z > appliedZxid)];
      };
      for (const op of ops) {
        if (op.kind === "append") {
          lastZxid += op.gap;
          model.push(lastZxid);
          log.append(record(lastZxid));
        } else if (op.kind === "applied") {
          // The tree only moves forward, possibly past records not appended yet.
          appliedZxid = Math.max(appliedZxid, lastZxid - op.back);
          log.applied(appliedZxid);
        } else if (op.kind === "truncate") {
          // TRUNC cuts only what the tree has not applied.
          const to = Math.max(appliedZxid, lastZxid - op.back);
          model = model.filter((z) => z <= to);
          lastZxid = Math.max(to, model.at(-1) ?? to);
          log.truncateAfter(to);
        } else if (op.kind === "reset") {
          appliedZxid = lastZxid + op.gap;
          lastZxid = appliedZxid;
          model = [];
          log.reset(appliedZxid);
        } else {
          assert.deepEqual(
            log.snapshot().map((r) => r.zxid),
            expected(),
          );
        }
      }
      assert.deepEqual(
        log.snapshot().map((r) => r.zxid),
        expected(),
      );
    }),
    { numRuns: 300 },
  );
});

test("a long run keeps at most the window plus the compaction slack in memory", () => {
  const log = new RecentLog(0, [], { count: 100, bytes: 1_000_000 });
  for (let zxid = 1; zxid <= 50_000; zxid++) {
    log.append(record(zxid));
    log.applied(zxid);
  }
  const kept = log.snapshot().map((r) => r.zxid);
  assert.equal(kept.length, 100);
  assert.equal(kept[0], 49_901);
  // The records array inside its RecordWindow.
  const records = (log as unknown as { window: { records: unknown[] } }).window.records;
  assert.ok(records.length <= 100 + 2 * 1024 + 2, "dead records are compacted away");
});

test("records dropped from the window are let go at once, not when its array is next compacted", () => {
  const large = (zxid: number): LogRecord => ({ zxid, record: new Uint8Array(1000) });
  const log = new RecentLog(0, [], { count: 100, bytes: 2_500 });
  for (let zxid = 1; zxid <= 200; zxid++) {
    log.append(large(zxid));
    log.applied(zxid);
  }
  // The records array inside its RecordWindow: 198 dead slots, not yet compacted (under 1024).
  const records = (log as unknown as { window: { records: LogRecord[] } }).window.records;
  assert.equal(records.length, 200);
  const heldBytes = records.reduce((sum, r) => sum + r.record.byteLength, 0);
  assert.equal(heldBytes, 2_000, "only the two records kept hold their bytes");
});

test("a window of large records keeps only as many applied ones as fit its byte bound, and at least one", () => {
  const large = (zxid: number): LogRecord => ({ zxid, record: new Uint8Array(1000) });
  const log = new RecentLog(0, [], { count: 100, bytes: 2_500 });
  for (let zxid = 1; zxid <= 20; zxid++) {
    log.append(large(zxid));
    log.applied(zxid);
  }
  assert.deepEqual(
    log.snapshot().map((r) => r.zxid),
    [19, 20],
  );
  const alone = new RecentLog(0, [], { count: 100, bytes: 10 });
  alone.append(large(1));
  alone.applied(1);
  assert.deepEqual(
    alone.snapshot().map((r) => r.zxid),
    [1],
  );
});
