import assert from "node:assert/strict";
import { copyFile, mkdtemp, readdir, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { crc32, tableCrc32 } from "../../src/store/disk/crc32.js";
import { InjectedWriteFault, type InjectedFaultTiming } from "../../src/store/disk/faults.js";
import { type InvalidSnapshot, SNAPSHOT_HEADER_BYTES, SnapshotStore, snapshotFileName } from "../../src/store/disk/snapshot-store.js";

/** A promise that never settles must fail its test, not hang the run. */
const TIMEOUT = { timeout: 10_000 };

async function withStore(body: (store: SnapshotStore, dir: string, invalid: InvalidSnapshot[]) => Promise<void>): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), "corral-snap-"));
  const invalid: InvalidSnapshot[] = [];
  try {
    const dir = join(root, "snapshots");
    const store = await SnapshotStore.open(dir, { onInvalid: (entry) => invalid.push(entry) });
    await body(store, dir, invalid);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

function body(zxid: number, bytes = 1000): Uint8Array {
  const out = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i += 1) out[i] = (zxid * 31 + i) & 0xff;
  return out;
}

async function flipByte(file: string, offset: number): Promise<void> {
  const contents = await readFile(file);
  contents[offset] = (contents[offset] ?? 0) ^ 0x01;
  await writeFile(file, contents);
}

test("crc32 is the IEEE CRC-32, and the built-in agrees with the table fallback", TIMEOUT, () => {
  const check = new TextEncoder().encode("123456789");
  assert.equal(tableCrc32(check), 0xcbf43926);
  assert.equal(crc32(check), 0xcbf43926);
  const random = body(7, 4096);
  assert.equal(crc32(random), tableCrc32(random));
  assert.equal(crc32(new Uint8Array(0)), 0);
});

test("save writes snapshot.<16 hex digits> and loadNewestValid returns the newest one's bytes", TIMEOUT, async () => {
  await withStore(async (store, dir) => {
    const zxids = [5, 2 ** 32 + 1, 2 ** 32 + 0x20];
    for (const zxid of zxids) await store.save(zxid, body(zxid));
    assert.deepEqual((await readdir(dir)).sort(), ["snapshot.0000000000000005", "snapshot.0000000100000001", "snapshot.0000000100000020"]);
    assert.deepEqual(await store.list(), [2 ** 32 + 0x20, 2 ** 32 + 1, 5]);
    const loaded = await store.loadNewestValid();
    assert.equal(loaded?.zxid, 2 ** 32 + 0x20);
    assert.deepEqual(Buffer.from(loaded.bytes), Buffer.from(body(2 ** 32 + 0x20)));
  });
});

test("an empty directory has no snapshot to load and nothing to purge", TIMEOUT, async () => {
  await withStore(async (store) => {
    assert.deepEqual(await store.list(), []);
    assert.equal(await store.loadNewestValid(), undefined);
    assert.equal(await store.purge(3), undefined);
  });
});

test("an empty body round-trips", TIMEOUT, async () => {
  await withStore(async (store) => {
    await store.save(9, new Uint8Array(0));
    const loaded = await store.loadNewestValid();
    assert.equal(loaded?.zxid, 9);
    assert.equal(loaded?.bytes.byteLength, 0);
  });
});

test("a newest snapshot with a flipped body byte is skipped, reported, and the previous one loaded", TIMEOUT, async () => {
  await withStore(async (store, dir, invalid) => {
    await store.save(10, body(10));
    await store.save(20, body(20));
    await flipByte(join(dir, snapshotFileName(20)), SNAPSHOT_HEADER_BYTES + 500);
    const loaded = await store.loadNewestValid();
    assert.equal(loaded?.zxid, 10);
    assert.deepEqual(Buffer.from(loaded.bytes), Buffer.from(body(10)));
    assert.equal(invalid.length, 1);
    assert.equal(invalid[0]?.zxid, 20);
    assert.match(invalid[0]?.reason ?? "", /body checksum/);
  });
});

test("a torn (truncated) newest snapshot is skipped", TIMEOUT, async () => {
  await withStore(async (store, dir, invalid) => {
    await store.save(10, body(10));
    await store.save(20, body(20));
    await truncate(join(dir, snapshotFileName(20)), SNAPSHOT_HEADER_BYTES + 999);
    assert.equal((await store.loadNewestValid())?.zxid, 10);
    assert.match(invalid[0]?.reason ?? "", /body is 999 bytes/);
  });
});

test("a snapshot whose header is cut or damaged is skipped", TIMEOUT, async () => {
  await withStore(async (store, dir, invalid) => {
    await store.save(10, body(10));
    await store.save(20, body(20));
    await store.save(30, body(30));
    await truncate(join(dir, snapshotFileName(30)), 12);
    await flipByte(join(dir, snapshotFileName(20)), 17); // the body length field
    assert.equal((await store.loadNewestValid())?.zxid, 10);
    assert.deepEqual(
      invalid.map((entry) => entry.zxid),
      [30, 20],
    );
    assert.match(invalid[0]?.reason ?? "", /short file/);
    assert.match(invalid[1]?.reason ?? "", /header checksum/);
  });
});

test("a valid snapshot file under another zxid's name is refused", TIMEOUT, async () => {
  await withStore(async (store, dir, invalid) => {
    await store.save(10, body(10));
    await copyFile(join(dir, snapshotFileName(10)), join(dir, snapshotFileName(11)));
    assert.equal((await store.loadNewestValid())?.zxid, 10);
    assert.match(invalid[0]?.reason ?? "", /differs from file name/);
  });
});

test("verify, which reads a file a piece at a time, judges every damage as load does", TIMEOUT, async () => {
  await withStore(async (store, dir) => {
    // 2.5 MB bodies span three of verify's 1 MB pieces; the flip lands in the last one.
    const big = 2.5 * 1024 * 1024;
    const damages: [number, (file: string) => Promise<void>][] = [
      [10, () => Promise.resolve()],
      [20, (file) => flipByte(file, SNAPSHOT_HEADER_BYTES + big - 3)],
      [30, (file) => truncate(file, SNAPSHOT_HEADER_BYTES + big - 1)],
      [40, (file) => truncate(file, 12)],
      [50, (file) => flipByte(file, 17)],
      [60, (file) => writeFile(file, Buffer.concat([Buffer.from(body(60, SNAPSHOT_HEADER_BYTES)), Buffer.from(body(60, big))]))],
    ];
    for (const [zxid, damage] of damages) {
      await store.save(zxid, body(zxid, big));
      await damage(join(dir, snapshotFileName(zxid)));
    }
    await store.save(70, new Uint8Array(0));
    for (const zxid of [...damages.map(([zxid]) => zxid), 70]) {
      const loaded = await store.load(zxid);
      const verified = await store.verify(zxid);
      assert.deepEqual(verified, loaded.ok ? { ok: true } : loaded, `snapshot ${zxid}`);
    }
    assert.deepEqual(
      (await Promise.all([10, 20, 30, 40, 50, 60].map((zxid) => store.verify(zxid)))).map((v) => (v.ok ? "ok" : v.reason)),
      ["ok", "body checksum mismatch", `body is ${big - 1} bytes, header says ${big}`, "short file (12 bytes)", "header checksum mismatch", "bad magic"],
    );
    const missing = await store.verify(99);
    assert.match(missing.ok ? "verified a file that is not there" : missing.reason, /^unreadable: /);
  });
});

test("purge keeps the newest N valid snapshots and answers the oldest kept zxid", TIMEOUT, async () => {
  await withStore(async (store, dir) => {
    for (const zxid of [10, 20, 30, 40, 50]) await store.save(zxid, body(zxid));
    assert.equal(await store.purge(3), 30);
    assert.deepEqual(await store.list(), [50, 40, 30]);
    assert.equal(await store.purge(1), 50);
    assert.deepEqual(await readdir(dir), [snapshotFileName(50)]);
  });
});

test("purge counts only valid snapshots, keeps newer invalid files, and removes leftover temp files", TIMEOUT, async () => {
  await withStore(async (store, dir) => {
    for (const zxid of [10, 20, 30, 40]) await store.save(zxid, body(zxid));
    await flipByte(join(dir, snapshotFileName(40)), SNAPSHOT_HEADER_BYTES);
    await writeFile(join(dir, `${snapshotFileName(50)}.tmp-1-1`), "half a snapshot");
    assert.deepEqual(await store.list(), [40, 30, 20, 10]);
    assert.equal(await store.purge(2), 20);
    assert.deepEqual(await store.list(), [40, 30, 20]);
    assert.equal(
      (await readdir(dir)).some((name) => name.includes(".tmp-")),
      false,
    );
  });
});

test("purge with fewer valid snapshots than asked keeps them all", TIMEOUT, async () => {
  await withStore(async (store) => {
    await store.save(10, body(10));
    await store.save(20, body(20));
    assert.equal(await store.purge(5), 10);
    assert.deepEqual(await store.list(), [20, 10]);
  });
});

test("saving the same zxid again replaces the file atomically", TIMEOUT, async () => {
  await withStore(async (store, dir) => {
    await store.save(10, body(1));
    await store.save(10, body(2));
    assert.deepEqual(Buffer.from((await store.loadNewestValid())!.bytes), Buffer.from(body(2)));
    assert.deepEqual(await readdir(dir), [snapshotFileName(10)]);
  });
});

test("an injected write or fsync fault rejects the save with EIO and leaves no file; the next save works", TIMEOUT, async () => {
  for (const timing of ["beforeWrite", "afterWrite"] as const satisfies readonly InjectedFaultTiming[]) {
    const root = await mkdtemp(join(tmpdir(), "corral-snap-"));
    try {
      const dir = join(root, "snapshots");
      let saves = 0;
      const store = await SnapshotStore.open(dir, { faults: { failWrite: (kind) => (kind === "snapshot" && ++saves === 1 ? timing : false) } });
      await assert.rejects(store.save(7, body(7)), (error: unknown) => error instanceof InjectedWriteFault && error.code === "EIO");
      assert.deepEqual(await readdir(dir), [], `${timing}: neither the snapshot nor its temp file is left`);
      await store.save(8, body(8));
      assert.equal((await store.loadNewestValid())?.zxid, 8);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  }
});
