import assert from "node:assert/strict";
import { test } from "node:test";
import { growthOf, judgeSoak, RSS_ALLOWANCE, type ProcessSample } from "../chaos/soak-judge.js";

const MIB = 1024 * 1024;

function series(count: number, at: (i: number) => Partial<ProcessSample>, pid = 100): ProcessSample[] {
  return Array.from({ length: count }, (_, i) => ({
    atMs: i * 1000,
    serverId: 1,
    pid,
    rssBytes: 200 * MIB,
    fds: 40,
    sessions: 4,
    watches: 30,
    ephemerals: 4,
    ...at(i),
  }));
}

const baseline = new Map([[1, series(1, () => ({ sessions: 0, watches: 0, ephemerals: 0 }))[0]!]]);
const settled = new Map([[1, series(1, () => ({ sessions: 0, watches: 0, ephemerals: 0 }))[0]!]]);

test("a level series with noise has not grown; a steady climb has", () => {
  const level = Array.from({ length: 40 }, (_, i) => 200 * MIB + ((i * 7919) % 13) * MIB);
  assert.equal(growthOf(level, RSS_ALLOWANCE)?.grew, false);
  const climbing = Array.from({ length: 40 }, (_, i) => 200 * MIB + i * 8 * MIB);
  assert.equal(growthOf(climbing, RSS_ALLOWANCE)?.grew, true);
  assert.equal(growthOf(climbing.slice(0, 7), RSS_ALLOWANCE), undefined, "seven samples are not a trend");
});

test("a soak whose server leaks memory, descriptors or watches fails on that resource alone", () => {
  const flat = judgeSoak({ steady: series(40, () => ({})), baseline, settled, windows: [] }, { judgeLatency: false });
  assert.ok(
    flat.every((v) => v.valid === true),
    JSON.stringify(flat),
  );
  for (const [check, leak] of [
    ["RSS stays flat", (i: number) => ({ rssBytes: 200 * MIB + i * 10 * MIB })],
    ["open file descriptors stay flat", (i: number) => ({ fds: 40 + i })],
    ["watches stay flat under the load", (i: number) => ({ watches: 30 + i * 10 })],
    ["sessions stay flat under the load", (i: number) => ({ sessions: 4 + i * 5 })],
  ] as const) {
    const verdicts = judgeSoak({ steady: series(40, leak), baseline, settled, windows: [] }, { judgeLatency: false });
    assert.deepEqual(
      verdicts.filter((v) => v.valid !== true).map((v) => v.check),
      [check],
    );
  }
});

test("a restarted process starts its own series, judged after its own warm-up: its fresh RSS is not growth", () => {
  const before = series(20, () => ({ rssBytes: 100 * MIB }), 100);
  // Restarted at 20 s: 60 MiB while it loads, then 140 MiB for good.
  const after = series(40, (i) => ({ rssBytes: i < 10 ? 60 * MIB : 140 * MIB }), 200).map((s) => ({ ...s, atMs: s.atMs + 20_000 }));
  const verdicts = judgeSoak({ steady: [...before, ...after], baseline, settled, windows: [] }, { judgeLatency: false });
  assert.equal(verdicts.find((v) => v.check === "RSS stays flat")?.valid, true, JSON.stringify(verdicts));
  const leaking = series(40, (i) => ({ rssBytes: 140 * MIB + i * 10 * MIB }), 200).map((s) => ({ ...s, atMs: s.atMs + 20_000 }));
  assert.equal(
    judgeSoak({ steady: [...before, ...leaking], baseline, settled, windows: [] }, { judgeLatency: false }).find((v) => v.check === "RSS stays flat")?.valid,
    false,
  );
});

test("sessions, watches or ephemerals left once the load stopped fail the soak", () => {
  const leftover = new Map([[1, series(1, () => ({ sessions: 0, watches: 3, ephemerals: 0 }))[0]!]]);
  const verdict = judgeSoak({ steady: series(40, () => ({})), baseline, settled: leftover, windows: [] }, { judgeLatency: false }).find((v) =>
    v.check.startsWith("sessions, watches"),
  );
  assert.equal(verdict?.valid, false);
  assert.match(verdict.detail, /server 1: 3 watches more than before the load/);
  const missing = judgeSoak({ steady: [], baseline, settled: new Map(), windows: [] }, { judgeLatency: false });
  assert.equal(missing.find((v) => v.check.startsWith("sessions, watches"))?.valid, false);
  assert.equal(missing.find((v) => v.check === "RSS stays flat")?.valid, "too short");
});

test("latency is judged only when asked, and drift is caught", () => {
  const windows = (p99: (i: number) => number) =>
    Array.from({ length: 40 }, (_, i) => ({ startMs: i * 1000, ok: 100, failed: 0, p50Ms: 1, p99Ms: p99(i), faulted: false }));
  const steadyLatency = judgeSoak({ steady: series(40, () => ({})), baseline, settled, windows: windows(() => 10) }, { judgeLatency: true });
  assert.equal(steadyLatency.find((v) => v.check === "latency does not drift")?.valid, true);
  const drifting = judgeSoak({ steady: series(40, () => ({})), baseline, settled, windows: windows((i) => 10 + i * 2) }, { judgeLatency: true });
  assert.equal(drifting.find((v) => v.check === "latency does not drift")?.valid, false);
  const slowOnlyInFaults = windows((i) => (i > 30 ? 500 : 10)).map((w, i) => ({ ...w, faulted: i > 30 || i % 5 === 0 }));
  assert.equal(
    judgeSoak({ steady: series(40, () => ({})), baseline, settled, windows: slowOnlyInFaults }, { judgeLatency: true }).find(
      (v) => v.check === "latency does not drift",
    )?.valid,
    true,
  );
  assert.equal(judgeSoak({ steady: series(40, () => ({})), baseline, settled, windows: windows((i) => 10 + i * 2) }, { judgeLatency: false }).length, 5);
});
