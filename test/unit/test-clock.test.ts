/**
 * The test clock the chaos clock nemesis skews (src/server/test-clock.ts): what its file may say,
 * and how far each skew moves the clock.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { parseClockSkew, skewAt, skewedClock } from "../../src/server/test-clock.js";
import { waitFor } from "../helpers/wait.js";

test("a clock file holds a jump, a strobe or nothing; anything else is not a skew", () => {
  assert.deepEqual(parseClockSkew('{"offsetMs": -45000}'), { kind: "offset", offsetMs: -45000 });
  assert.deepEqual(parseClockSkew('{"strobe": {"deltaMs": 30000, "periodMs": 200}}'), { kind: "strobe", deltaMs: 30000, periodMs: 200 });
  assert.deepEqual(parseClockSkew("{}"), { kind: "none" });
  for (const bad of ["", "{", "null", "7", '{"offsetMs": "5"}', '{"offsetMs": 1e12}', '{"strobe": {"deltaMs": 5, "periodMs": 0}}']) {
    assert.equal(parseClockSkew(bad), undefined, bad);
  }
});

test("a jump moves the clock by its offset; a strobe by its delta every other period", () => {
  assert.equal(skewAt({ kind: "none" }, 123), 0);
  assert.equal(skewAt({ kind: "offset", offsetMs: -5_000 }, 123), -5_000);
  const strobe = { kind: "strobe", deltaMs: 30_000, periodMs: 200 } as const;
  assert.deepEqual(
    [0, 199, 200, 399, 400].map((t) => skewAt(strobe, t)),
    [0, 0, 30_000, 30_000, 0],
  );
});

test("the skewed clock's wall reading follows its file, its monotonic one never does, and a file half written changes nothing", async () => {
  const dir = await mkdtemp(join(tmpdir(), "corral-test-clock-"));
  try {
    const file = join(dir, "clock.json");
    await writeFile(file, '{"offsetMs": 3600000}');
    const clock = skewedClock(file);
    await waitFor("the jump", () => (clock.wallMs() - Date.now() > 3_000_000 ? true : undefined), 5_000);
    assert.ok(Math.abs(clock.nowMs() - Date.now()) < 60_000, "the monotonic reading did not jump");
    await writeFile(file, '{"offsetMs": ');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.ok(clock.wallMs() - Date.now() > 3_000_000, "the half-written file changed nothing");
    await writeFile(file, "{}");
    await waitFor("the jump undone", () => (Math.abs(clock.wallMs() - Date.now()) < 1_000 ? true : undefined), 5_000);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
