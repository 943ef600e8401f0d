/**
 * The leader's cleanup scan as a pure function of the tree and the time: which containers and TTL
 * nodes it picks, the grace period that spares a container emptied since the previous scan, the
 * per-scan limit, and the scan schedule.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { cleanupCandidates, cleanupKind, CleanupScanner } from "../../src/store/cleanup-scan.js";
import { zeroStat } from "../../src/store/data-tree.js";
import { CONTAINER_OWNER, ttlOwner, type Stat } from "../../src/store/types.js";
import { T, TxnScript } from "../helpers/store-txns.js";

const SESSION = 0x0100000000000001n;

describe("cleanupKind", () => {
  const stat = (fields: Partial<Stat>): Stat => ({ ...zeroStat(), ...fields });
  const cases: { name: string; stat: Stat; nowMs: number; kind: "container" | "ttl" | undefined }[] = [
    { name: "a container that has had a child and has none", stat: stat({ ephemeralOwner: CONTAINER_OWNER, cversion: 2 }), nowMs: 0, kind: "container" },
    { name: "a container that never had a child", stat: stat({ ephemeralOwner: CONTAINER_OWNER, cversion: 0 }), nowMs: 0, kind: undefined },
    { name: "a container with a child", stat: stat({ ephemeralOwner: CONTAINER_OWNER, cversion: 1, numChildren: 1 }), nowMs: 0, kind: undefined },
    { name: "a TTL node older than its TTL", stat: stat({ ephemeralOwner: ttlOwner(100), mtime: 1_000 }), nowMs: 1_101, kind: "ttl" },
    { name: "a TTL node exactly its TTL old", stat: stat({ ephemeralOwner: ttlOwner(100), mtime: 1_000 }), nowMs: 1_100, kind: undefined },
    {
      name: "an expired TTL node with a child",
      stat: stat({ ephemeralOwner: ttlOwner(100), mtime: 1_000, cversion: 1, numChildren: 1 }),
      nowMs: 9_000,
      kind: undefined,
    },
    { name: "a TTL node with a clock behind its mtime", stat: stat({ ephemeralOwner: ttlOwner(100), mtime: 5_000 }), nowMs: 1_000, kind: undefined },
    { name: "a persistent node", stat: stat({ cversion: 2 }), nowMs: 9_000, kind: undefined },
    { name: "an ephemeral node", stat: stat({ ephemeralOwner: SESSION, mtime: 0 }), nowMs: 9_000, kind: undefined },
  ];
  for (const c of cases) test(`${c.name} → ${c.kind ?? "kept"}`, () => assert.equal(cleanupKind(c.stat, c.nowMs), c.kind));
});

/** A tree with a container "/c" that had one child, now deleted (txn 3). */
function emptiedContainer(): TxnScript {
  const s = new TxnScript();
  s.create("/c", { owner: CONTAINER_OWNER });
  s.create("/c/child");
  s.delete("/c/child");
  return s;
}

describe("cleanupCandidates", () => {
  test("a container emptied before the previous scan is picked", () => {
    const s = emptiedContainer();
    assert.deepEqual(cleanupCandidates(s.tree, T(10), s.tree.lastProcessedZxid, 10), ["/c"]);
  });

  test("a container emptied since the previous scan is spared (grace period), and so is any container without a previous scan", () => {
    const s = new TxnScript();
    s.create("/c", { owner: CONTAINER_OWNER });
    s.create("/c/child");
    const previousScanZxid = s.tree.lastProcessedZxid;
    s.delete("/c/child");
    assert.deepEqual(cleanupCandidates(s.tree, T(10), previousScanZxid, 10), []);
    assert.deepEqual(cleanupCandidates(s.tree, T(10), undefined, 10), []);
  });

  test("a child created and deleted since the previous scan restarts the grace period", () => {
    const s = emptiedContainer();
    const previousScanZxid = s.tree.lastProcessedZxid;
    s.create("/c/again");
    s.delete("/c/again");
    assert.deepEqual(cleanupCandidates(s.tree, T(10), previousScanZxid, 10), []);
  });

  test("containers never used, or holding children, are never picked", () => {
    const s = new TxnScript();
    s.create("/fresh", { owner: CONTAINER_OWNER });
    s.create("/full", { owner: CONTAINER_OWNER });
    s.create("/full/child");
    assert.deepEqual(cleanupCandidates(s.tree, T(1_000_000), s.tree.lastProcessedZxid, 10), []);
  });

  test("a TTL node is picked once more than its TTL has passed since its mtime, without a grace period", () => {
    const s = new TxnScript();
    s.create("/t", { owner: ttlOwner(5_000) }); // mtime T(1)
    assert.deepEqual(cleanupCandidates(s.tree, T(1) + 5_000, undefined, 10), []);
    assert.deepEqual(cleanupCandidates(s.tree, T(1) + 5_001, undefined, 10), ["/t"]);
  });

  test("a setData moves a TTL node's deadline", () => {
    const s = new TxnScript();
    s.create("/t", { owner: ttlOwner(5_000) });
    s.setData("/t", new Uint8Array([1])); // mtime T(2)
    assert.deepEqual(cleanupCandidates(s.tree, T(1) + 5_001, undefined, 10), []);
    assert.deepEqual(cleanupCandidates(s.tree, T(2) + 5_001, undefined, 10), ["/t"]);
  });

  test("a TTL node with a child is not picked, however old", () => {
    const s = new TxnScript();
    s.create("/t", { owner: ttlOwner(1) });
    s.create("/t/child");
    assert.deepEqual(cleanupCandidates(s.tree, T(1_000), undefined, 10), []);
  });

  test("at most `limit` nodes are picked", () => {
    const s = new TxnScript();
    for (const name of ["a", "b", "c"]) {
      s.create(`/${name}`, { owner: CONTAINER_OWNER });
      s.create(`/${name}/x`);
      s.delete(`/${name}/x`);
    }
    s.create("/t", { owner: ttlOwner(1) });
    const all = cleanupCandidates(s.tree, T(100), s.tree.lastProcessedZxid, 10);
    assert.deepEqual([...all].sort(), ["/a", "/b", "/c", "/t"]);
    assert.equal(cleanupCandidates(s.tree, T(100), s.tree.lastProcessedZxid, 2).length, 2);
    assert.deepEqual(cleanupCandidates(s.tree, T(100), s.tree.lastProcessedZxid, 0), []);
  });
});

describe("CleanupScanner", () => {
  const INTERVAL = 1_000;

  test("the first poll only starts the schedule; a scan runs each interval after", () => {
    const s = emptiedContainer();
    const scanner = new CleanupScanner({ intervalMs: INTERVAL, maxPerMinute: 10_000 });
    const start = T(10);
    assert.deepEqual(scanner.poll(s.tree, start), [], "a new leader has not seen the container empty yet");
    assert.deepEqual(scanner.poll(s.tree, start + INTERVAL - 1), [], "not due yet");
    assert.deepEqual(scanner.poll(s.tree, start + INTERVAL), ["/c"], "found empty at the start and still empty");
    assert.deepEqual(scanner.poll(s.tree, start + INTERVAL + 1), [], "the next scan is an interval later");
  });

  test("a container emptied between two scans goes at the scan after the next one", () => {
    const s = new TxnScript();
    s.create("/c", { owner: CONTAINER_OWNER });
    s.create("/c/child");
    const scanner = new CleanupScanner({ intervalMs: INTERVAL, maxPerMinute: 10_000 });
    const start = T(10);
    scanner.poll(s.tree, start);
    s.delete("/c/child");
    assert.deepEqual(scanner.poll(s.tree, start + INTERVAL), [], "emptied since the last scan: spared");
    assert.deepEqual(scanner.poll(s.tree, start + 2 * INTERVAL), ["/c"]);
  });

  test("a TTL node is picked at the first due scan after it expires", () => {
    const s = new TxnScript();
    s.create("/t", { owner: ttlOwner(100) });
    const scanner = new CleanupScanner({ intervalMs: INTERVAL, maxPerMinute: 10_000 });
    assert.deepEqual(scanner.poll(s.tree, T(1)), []);
    assert.deepEqual(scanner.poll(s.tree, T(1) + INTERVAL), ["/t"]);
  });

  test("maxPerMinute is spread over the scans of a minute, at least one a scan", () => {
    assert.equal(new CleanupScanner({ intervalMs: 60_000, maxPerMinute: 10_000 }).perScanMax, 10_000);
    assert.equal(new CleanupScanner({ intervalMs: 1_000, maxPerMinute: 600 }).perScanMax, 10);
    assert.equal(new CleanupScanner({ intervalMs: 100, maxPerMinute: 1 }).perScanMax, 1);
    const s = new TxnScript();
    for (let i = 0; i < 5; i++) s.create(`/t${i}`, { owner: ttlOwner(1) });
    const scanner = new CleanupScanner({ intervalMs: 1_000, maxPerMinute: 120 });
    scanner.poll(s.tree, T(100));
    assert.equal(scanner.poll(s.tree, T(100) + 1_000).length, 2);
  });

  test("a clock stepped far back restarts the schedule instead of stalling it", () => {
    const s = new TxnScript();
    s.create("/t", { owner: ttlOwner(1) });
    const scanner = new CleanupScanner({ intervalMs: INTERVAL, maxPerMinute: 10_000 });
    scanner.poll(s.tree, T(100));
    const stepped = T(100) - 3_600_000;
    assert.deepEqual(scanner.poll(s.tree, stepped), []);
    assert.deepEqual(scanner.poll(s.tree, stepped + INTERVAL), [], "the TTL node is not expired by the stepped clock");
    assert.deepEqual(scanner.poll(s.tree, T(100) + INTERVAL), ["/t"], "the clock back where it was: scans go on");
  });
});
