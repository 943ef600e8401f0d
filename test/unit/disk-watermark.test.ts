/**
 * The txn log's durable watermark (src/store/disk/durable-watermark.ts): raised with each durable
 * batch, lowered before a truncation, and checked by recovery, which calls a log that ends below
 * it damaged — what LevelDB does, without a word, to a cut-short or damaged write-ahead file.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { StorageDamagedError } from "../../src/store/disk/damage.js";
import { DurableWatermark, WATERMARK_FILE } from "../../src/store/disk/durable-watermark.js";
import { recover } from "../../src/store/disk/recovery.js";

const TIMEOUT = { timeout: 10_000 };

async function withDataDir(body: (dataDir: string) => Promise<void>): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), "corral-watermark-"));
  try {
    await body(dataDir);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

const record = (zxid: number) => new TextEncoder().encode(`txn-${zxid}`);

/** What the watermark file holds now. */
async function watermarkOf(dataDir: string): Promise<number | undefined> {
  const watermark = await DurableWatermark.open(join(dataDir, WATERMARK_FILE));
  await watermark.close();
  return watermark.atOpen;
}

/** Appends 1..last, truncates after `truncateAfter` if given, closes. */
async function writeLog(dataDir: string, last: number, truncateAfter?: number): Promise<void> {
  const state = await recover(dataDir);
  try {
    for (let zxid = 1; zxid <= last; zxid++) await state.log.append(zxid, record(zxid));
    if (truncateAfter !== undefined) await state.log.truncateAfter(truncateAfter);
  } finally {
    await state.log.close();
  }
}

test("the watermark follows the durable end of the log, up with appends and down with a truncation", TIMEOUT, async () => {
  await withDataDir(async (dataDir) => {
    await writeLog(dataDir, 40);
    assert.equal(await watermarkOf(dataDir), 40);
    await writeLog(dataDir, 0, 25);
    assert.equal(await watermarkOf(dataDir), 25);
    const state = await recover(dataDir);
    assert.equal(state.log.lastDurableZxid(), 25);
    await state.log.close();
  });
});

test("a log that opens ending below its watermark is damaged, naming the log and both zxids", TIMEOUT, async () => {
  await withDataDir(async (dataDir) => {
    await writeLog(dataDir, 40);
    // As if LevelDB had dropped records 31..40 from its write-ahead file.
    const watermark = await DurableWatermark.open(join(dataDir, WATERMARK_FILE));
    await watermark.set(50);
    await watermark.close();
    await assert.rejects(recover(dataDir), (error: unknown) => {
      assert.ok(error instanceof StorageDamagedError, String(error));
      assert.equal(error.file, join(dataDir, "log"));
      assert.match(error.reason, /the log ends at zxid 0x28 but records up to 0x32 were durable \(LOG-WATERMARK\)/);
      return true;
    });
  });
});

test("a snapshot at or past the watermark covers a log that ends below it", TIMEOUT, async () => {
  await withDataDir(async (dataDir) => {
    await writeLog(dataDir, 40);
    const state = await recover(dataDir);
    await state.snapshots.save(60, new TextEncoder().encode("tree@60"));
    await state.log.close();
    const watermark = await DurableWatermark.open(join(dataDir, WATERMARK_FILE));
    await watermark.set(60);
    await watermark.close();
    const again = await recover(dataDir);
    assert.equal(again.snapshot?.zxid, 60);
    await again.log.close();
  });
});

test("a watermark file that does not read back is damage; a missing one is made anew at 0", TIMEOUT, async () => {
  await withDataDir(async (dataDir) => {
    await writeLog(dataDir, 10);
    await writeFile(join(dataDir, WATERMARK_FILE), Buffer.alloc(16, 0xff));
    await assert.rejects(recover(dataDir), (error: unknown) => error instanceof StorageDamagedError && error.file === join(dataDir, WATERMARK_FILE));
    await rm(join(dataDir, WATERMARK_FILE));
    const state = await recover(dataDir);
    assert.equal(state.log.lastDurableZxid(), 10);
    await state.log.close();
    assert.equal(await watermarkOf(dataDir), 0);
  });
});
