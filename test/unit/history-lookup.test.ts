/**
 * The leader's history answers where a zxid falls (span, recordAfter, between) the same way
 * whatever the zxids look like: consecutive within an epoch (where its arithmetic shortcut holds),
 * with gaps (where it must not be trusted), across epoch changes, and after old records are trimmed.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { History } from "../../src/consensus/history.js";
import type { LogRecord } from "../../src/consensus/messages.js";

const zxidOf = (epoch: number, counter: number): number => epoch * 2 ** 32 + counter;

test("span, recordAfter and between agree with a scan of the records, across epochs and trimming", () => {
  fc.assert(
    fc.property(
      // Runs of counters, mostly consecutive, each run in a later epoch (a new epoch restarts the counter).
      fc.array(fc.array(fc.constantFrom(1, 1, 1, 2, 3), { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 6 }),
      fc.integer({ min: 1, max: 20 }),
      fc.array(fc.integer({ min: 0, max: 200 }), { minLength: 1, maxLength: 20 }),
      (runs, keep, probes) => {
        const records: LogRecord[] = [];
        runs.forEach((steps, epoch) => {
          let counter = 0;
          for (const step of steps) {
            counter += step;
            records.push({ zxid: zxidOf(epoch + 1, counter), record: new Uint8Array(counter) });
          }
        });
        const history = new History(0, [], { count: keep, bytes: 1 << 20 });
        for (const record of records) history.append(record);
        // Commit half of them: the applied ones beyond `keep` are trimmed.
        const committedAt = records[Math.floor(records.length / 2)]!.zxid;
        history.commitThrough(committedAt);
        const kept = records.filter((r) => r.zxid > history.baseZxid);
        const candidates = [...records.map((r) => r.zxid), ...records.map((r) => r.zxid - 1), ...records.map((r) => r.zxid + 1)].filter(
          (z) => z >= history.baseZxid,
        );
        for (const probe of probes) {
          const from = candidates[probe % candidates.length]!;
          const to = history.lastZxid;
          const inside = kept.filter((r) => r.zxid > from && r.zxid <= to);
          assert.deepEqual(history.span(from, to), { count: inside.length, bytes: inside.reduce((sum, r) => sum + r.record.byteLength, 0) });
          assert.deepEqual(
            history.between(from, to).map((r) => r.zxid),
            inside.map((r) => r.zxid),
          );
          const after = history.recordAfter(from);
          assert.equal(after === undefined || after === "trimmed" ? after : after.zxid, kept.find((r) => r.zxid > from)?.zxid);
        }
      },
    ),
    { numRuns: 300 },
  );
});
