/**
 * The bucket sketch behind the latency summaries: every value lands in a slot that reports it
 * within 1.6 %, quantiles come from the sliding window, _sum and _count from the whole life, and
 * prom-client renders the result in the text format.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import client from "prom-client";
import { slotOf, valueOfSlot, WindowedSummary } from "../../src/server/windowed-summary.js";

const registry = new client.Registry();
const summaries: WindowedSummary[] = [];
after(() => summaries.forEach((s) => s.close()));
let next = 0;
function summary(ageBuckets = 5): WindowedSummary {
  const made = new WindowedSummary({
    name: `test_summary_${next++}`,
    help: "a test summary",
    percentiles: [0.5, 0.9, 0.99],
    registers: [registry],
    ageBuckets,
  });
  summaries.push(made);
  return made;
}

test("a value is reported within 1/64 of itself, from a microsecond to days in ms, and slots ascend", () => {
  let previous = -1;
  for (let exponent = -19; exponent < 43; exponent += 0.37) {
    const value = 2 ** exponent;
    const slot = slotOf(value);
    assert.ok(slot >= previous, `slots ascend at ${value}`);
    previous = slot;
    const reported = valueOfSlot(slot);
    assert.ok(Math.abs(reported - value) / value <= 1 / 64, `${value} reported as ${reported}`);
  }
  assert.equal(slotOf(0), 0);
  assert.equal(valueOfSlot(slotOf(0)), 0);
  assert.equal(slotOf(1e-30), 0, "below the range: the zero slot");
  assert.ok(slotOf(1e300) > slotOf(2 ** 43), "above the range: the last slot");
});

test("quantiles of a known distribution, count and sum exact", () => {
  const s = summary();
  for (let i = 1; i <= 1000; i++) s.observe(i);
  for (const [q, expected] of [
    [0.5, 500],
    [0.9, 900],
    [0.99, 990],
  ] as const) {
    const got = s.quantile(q);
    assert.ok(Math.abs(got - expected) / expected <= 1 / 32, `q${q}: ${got}, expected about ${expected}`);
  }
  assert.equal(s.observations, 1000);
});

test("negative and NaN observations are dropped; an empty window reports NaN", () => {
  const s = summary();
  assert.ok(Number.isNaN(s.quantile(0.5)));
  s.observe(-1);
  s.observe(Number.NaN);
  assert.equal(s.observations, 0);
  s.observe(0);
  assert.equal(s.quantile(0.5), 0);
});

test("the window forgets what is older than its age buckets; _count and _sum do not", async () => {
  const s = summary(2);
  for (let i = 0; i < 100; i++) s.observe(1000);
  s.rotateWindow();
  for (let i = 0; i < 100; i++) s.observe(1);
  // The current window is the one cleared longest ago: it holds the 1000s and the 1s.
  assert.ok(s.quantile(0.25) < 1.1);
  assert.ok(s.quantile(0.75) > 900);
  s.rotateWindow();
  assert.ok(s.quantile(0.99) < 1.1, "after a full turn only the recent values remain");
  s.rotateWindow();
  assert.ok(Number.isNaN(s.quantile(0.5)), "and then nothing");
  const text = await registry.getSingleMetricAsString((s as unknown as { metricName: string }).metricName);
  assert.match(text, /_count 200$/m);
  assert.match(text, /_sum 100100$/m);
  assert.match(text, /# TYPE test_summary_\d+ summary/);
  assert.match(text, /\{quantile="0\.99"\} Nan$/m);
});
