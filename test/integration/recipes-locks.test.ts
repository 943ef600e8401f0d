/**
 * The lock recipes (Lock, ReadWriteLock, RevocableLock, Semaphore) on a live three-voter cluster,
 * each session an independent Client as separate processes would have: the contract under
 * competition, a holder's session forced to expire, and the leader server killed mid-operation.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { after, before, describe, test } from "node:test";
import type { Client } from "../../src/index.js";
import { ZkError } from "../../src/index.js";
import { Lock } from "../../src/recipes/lock.js";
import { ReadWriteLock } from "../../src/recipes/read-write-lock.js";
import { RevocableLock } from "../../src/recipes/revocable-lock.js";
import { Semaphore, type Lease } from "../../src/recipes/semaphore.js";
import { OverlapDetector, RecipeCluster } from "../helpers/recipe-cluster.js";
import { waitFor } from "../helpers/wait.js";

/**
 * One round trip to the cluster from inside a critical section (it gives others a chance to barge
 * in). A leader kill may cut it with CONNECTIONLOSS, which says nothing about the recipe under test.
 */
async function roundTrip(client: Client, path: string): Promise<void> {
  try {
    await client.exists(path);
  } catch (error) {
    if (!(error instanceof ZkError && error.code === "CONNECTIONLOSS")) throw error;
  }
}

/** Bound on any single wait in these tests; generous, as the machine is shared. */
const WAIT_MS = 60_000;

let cluster: RecipeCluster;

before(async () => {
  cluster = await RecipeCluster.start();
});

after(async () => {
  await cluster?.stop();
});

function sessions(count: number): Promise<Client[]> {
  return Promise.all(Array.from({ length: count }, () => cluster.client()));
}

async function closeAll(clients: readonly Client[]): Promise<void> {
  await Promise.allSettled(clients.map((c) => c.close()));
}

/** The children of `path` as of now (after a sync), [] if it does not exist. */
/** The children after a sync; waits out a reconnection (a test may just have killed the leader). */
async function childrenOf(client: Client, path: string): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.sync(path);
      return await client.getChildren(path);
    } catch (error) {
      if (error instanceof ZkError && error.code === "NONODE") return [];
      if (!(error instanceof ZkError && error.code === "CONNECTIONLOSS") || attempt >= 100) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

function waitForChildren(client: Client, path: string, count: number): Promise<string[]> {
  return waitFor(
    `${count} children of ${path}`,
    async () => {
      const children = await childrenOf(client, path);
      return children.length === count ? children : undefined;
    },
    WAIT_MS,
  );
}

function isCode(code: string): (error: unknown) => boolean {
  return (error) => error instanceof ZkError && error.code === code;
}

/** Readers may share; a writer must be alone. */
class ReadWriteChecker {
  private readonly readers = new Set<string>();
  private readonly writers = new Set<string>();
  readonly violations: string[] = [];
  readersTogetherMax = 0;

  enterRead(who: string): void {
    if (this.writers.size > 0) this.violations.push(`reader ${who} entered while writer ${[...this.writers].join(",")} inside`);
    this.readers.add(who);
    this.readersTogetherMax = Math.max(this.readersTogetherMax, this.readers.size);
  }

  enterWrite(who: string): void {
    if (this.writers.size + this.readers.size > 0) this.violations.push(`writer ${who} entered while ${[...this.writers, ...this.readers].join(",")} inside`);
    this.writers.add(who);
  }

  exit(who: string): void {
    this.readers.delete(who);
    this.writers.delete(who);
  }
}

/** Counts lease holders; more than `limit` at once is a violation. */
class LeaseCounter {
  private readonly inside = new Set<string>();
  readonly violations: string[] = [];
  maxInside = 0;
  entries = 0;

  constructor(private readonly limit: number) {}

  enter(who: string): void {
    this.inside.add(who);
    this.entries += 1;
    this.maxInside = Math.max(this.maxInside, this.inside.size);
    if (this.inside.size > this.limit) this.violations.push(`${[...this.inside].join(",")} hold leases together`);
  }

  exit(who: string): void {
    this.inside.delete(who);
  }
}

/**
 * A blocked acquire made by `contender()` on `path`, where `holderName` holds: abandoned once by
 * an AbortSignal and once by timeoutMs, each rejects with OPERATIONTIMEOUT and leaves no node of
 * its own behind (only the holder's node remains, read after a sync from `observer`).
 */
async function assertAbandonedAcquiresCleanUp(
  observer: Client,
  path: string,
  holderName: string,
  contender: () => { acquire(options: { signal?: AbortSignal; timeoutMs?: number }): Promise<unknown>; readonly waitingFor: string | undefined },
): Promise<void> {
  const aborted = new AbortController();
  const abandoning = contender();
  const abandoned = abandoning.acquire({ signal: aborted.signal });
  await waitForChildren(observer, path, 2);
  await waitFor("the abandoning acquire to wait", () => (abandoning.waitingFor !== undefined ? true : undefined), WAIT_MS);
  aborted.abort();
  await assert.rejects(abandoned, isCode("OPERATIONTIMEOUT"));
  assert.deepEqual(await childrenOf(observer, path), [holderName], "the aborted acquire's node is gone");

  await assert.rejects(contender().acquire({ timeoutMs: 300 }), isCode("OPERATIONTIMEOUT"));
  assert.deepEqual(await childrenOf(observer, path), [holderName], "the timed-out acquire's node is gone");
}

describe("Lock", () => {
  test("five sessions taking several turns each never overlap, and fencing tokens grow with every grant", async () => {
    const clients = await sessions(5);
    const path = "/lock-exclusion";
    const detector = new OverlapDetector();
    const tokens: bigint[] = [];
    await Promise.all(
      clients.map(async (client, index) => {
        const lock = new Lock(client, path);
        for (let round = 0; round < 4; round++) {
          const token = await lock.acquire({ timeoutMs: WAIT_MS });
          detector.enter(`session-${index}`);
          assert.equal(token, lock.fencingToken, "acquire resolves with the grant's fencing token");
          tokens.push(token);
          await roundTrip(client, path); // a round trip inside the critical section gives others a chance to barge in
          detector.exit(`session-${index}`);
          await lock.release();
        }
      }),
    );
    assert.deepEqual(detector.violations, []);
    assert.equal(detector.entries, 20);
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `token ${i} (${tokens[i]}) > token ${i - 1} (${tokens[i - 1]})`);
    assert.deepEqual(await childrenOf(clients[0]!, path), []);
    await closeAll(clients);
  });

  test("the holding instance re-acquires by counting up, and holds until released as often", async () => {
    const [a, b] = (await sessions(2)) as [Client, Client];
    const path = "/lock-reentrant";
    const mine = new Lock(a, path);
    const theirs = new Lock(b, path);
    const token = await mine.acquire();
    assert.equal(await mine.acquire(), token, "a reentrant acquire returns the same token");
    assert.equal(await mine.tryAcquire(), true);
    assert.equal((await childrenOf(a, path)).length, 1, "one node for all three acquires");
    assert.equal(mine.fencingToken, token);
    await mine.release();
    await mine.release();
    assert.equal(mine.isHeld, true);
    assert.equal(await theirs.tryAcquire(), false);
    await mine.release();
    assert.equal(mine.isHeld, false);
    assert.equal(mine.fencingToken, undefined);
    assert.equal(await theirs.tryAcquire(), true);
    await mine.release(); // not held: nothing to do
    await theirs.release();
    assert.deepEqual(await childrenOf(a, path), []);
    await closeAll([a, b]);
  });

  test("tryAcquire never waits and leaves no node behind when the lock is taken", async () => {
    const [a, b] = (await sessions(2)) as [Client, Client];
    const path = "/lock-try";
    const holder = new Lock(a, path);
    assert.equal(await holder.tryAcquire(), true);
    const other = new Lock(b, path);
    assert.equal(await other.tryAcquire(), false);
    assert.equal(other.isHeld, false);
    assert.deepEqual(await childrenOf(b, path), [holder.node!.slice(path.length + 1)]);
    await holder.release();
    assert.equal(await other.tryAcquire(), true);
    await other.release();
    await closeAll([a, b]);
  });

  test("an acquire abandoned by abort or timeout removes its node, and the queue closes up behind it", async () => {
    const clients = await sessions(4);
    const [a, b, c, d] = clients as [Client, Client, Client, Client];
    const path = "/lock-abandon";
    const holder = new Lock(a, path);
    await holder.acquire();
    const holderName = holder.node!.slice(path.length + 1);

    const aborted = new AbortController();
    const abandoning = new Lock(b, path);
    const abandoned = abandoning.acquire({ signal: aborted.signal });
    await waitForChildren(a, path, 2);
    const behind = new Lock(c, path);
    const behindAcquired = behind.acquire({ timeoutMs: WAIT_MS });
    await waitForChildren(a, path, 3);
    await waitFor("the last waiter watching the abandoning one", () => (behind.waitingFor !== undefined ? true : undefined), WAIT_MS);
    aborted.abort();
    await assert.rejects(abandoned, isCode("OPERATIONTIMEOUT"));
    assert.equal((await childrenOf(a, path)).length, 2, "the aborted acquire's node is gone");

    await assert.rejects(new Lock(d, path).acquire({ timeoutMs: 200 }), isCode("OPERATIONTIMEOUT"));
    assert.equal((await childrenOf(a, path)).length, 2, "the timed-out acquire's node is gone");
    const preAborted = new AbortController();
    preAborted.abort();
    await assert.rejects(new Lock(d, path).acquire({ signal: preAborted.signal }), isCode("OPERATIONTIMEOUT"));
    assert.equal((await childrenOf(a, path)).length, 2);
    assert.ok((await childrenOf(a, path)).includes(holderName));

    await holder.release();
    await behindAcquired;
    assert.equal(behind.isHeld, true);
    await behind.release();
    assert.deepEqual(await childrenOf(a, path), []);
    await closeAll(clients);
  });

  test("a holder whose session expires emits lost, the next waiter gets the lock with a larger fencing token", async () => {
    const clients = await sessions(3);
    const [a, b, c] = clients as [Client, Client, Client];
    const path = "/lock-expiry";
    const holder = new Lock(a, path);
    await holder.acquire();
    const oldToken = holder.fencingToken!;
    const lost = once(holder, "lost") as Promise<[ZkError]>;
    const next = new Lock(b, path);
    const nextAcquired = next.acquire({ timeoutMs: WAIT_MS });
    await waitForChildren(b, path, 2); // next in line before the third contender queues
    const doomedWaiter = new Lock(c, path);
    const doomedAcquire = doomedWaiter.acquire({ timeoutMs: WAIT_MS }).then(
      () => "acquired",
      (error: unknown) => error,
    );
    await waitForChildren(b, path, 3);

    await cluster.expire(a);
    const [error] = await lost;
    assert.equal(error.code, "SESSIONEXPIRED");
    assert.equal(holder.isHeld, false);
    assert.equal(holder.fencingToken, undefined);
    await holder.release(); // a no-op after the loss

    await nextAcquired;
    assert.equal(next.isHeld, true);
    assert.ok(next.fencingToken! > oldToken, `${next.fencingToken} > ${oldToken}`);

    // A waiter whose session expires is told so, and its node goes with the session.
    await cluster.expire(c);
    assert.ok(isCode("SESSIONEXPIRED")(await doomedAcquire));
    assert.equal(doomedWaiter.isHeld, false);
    assert.equal((await childrenOf(b, path)).length, 1);
    await next.release();
    await closeAll(clients);
  });

  test("with the leader server killed while waiters are queued, every waiter acquires exactly once and none overlap", async () => {
    const clients = await sessions(5);
    const path = "/lock-leader-killed";
    const holder = new Lock(clients[0]!, path);
    await holder.acquire();
    const detector = new OverlapDetector();
    detector.enter("holder");
    const grants = new Map<number, number>();
    const waiters = clients.slice(1).map(async (client, index) => {
      const lock = new Lock(client, path);
      await lock.acquire({ timeoutMs: WAIT_MS });
      grants.set(index, (grants.get(index) ?? 0) + 1);
      detector.enter(`waiter-${index}`);
      await roundTrip(client, path);
      detector.exit(`waiter-${index}`);
      await lock.release();
    });
    await waitForChildren(clients[0]!, path, 5);
    const killed = await cluster.killLeader();
    try {
      detector.exit("holder");
      await holder.release();
      await Promise.all(waiters);
    } finally {
      await cluster.restart(killed);
    }
    assert.deepEqual(detector.violations, []);
    assert.deepEqual(
      [...grants.entries()].sort(),
      [0, 1, 2, 3].map((i) => [i, 1]),
    );
    assert.deepEqual(await childrenOf(clients[0]!, path), []);
    await closeAll(clients);
  });

  test("herd: a release wakes exactly one of 50 queued waiters, and each waiter is woken once over the whole hand-off", async () => {
    const path = "/lock-herd";
    const holderClient = await cluster.client();
    const holder = new Lock(holderClient, path);
    await holder.acquire();
    const waiterClients = await sessions(50);
    const waiters = waiterClients.map((client) => new Lock(client, path));
    const granted: number[] = [];
    let firstGranted!: () => void;
    const firstGrant = new Promise<void>((resolve) => (firstGranted = resolve));
    let countingDone!: () => void;
    const counted = new Promise<void>((resolve) => (countingDone = resolve));
    const tasks = waiters.map(async (lock, index) => {
      await lock.acquire({ timeoutMs: 120_000 });
      granted.push(index);
      if (granted.length === 1) {
        firstGranted();
        await counted;
      }
      await lock.release();
    });
    try {
      await waitFor("every waiter watching its predecessor", () => (waiters.every((w) => w.waitingFor !== undefined) ? true : undefined), 120_000);
      const watched = new Set(waiters.map((w) => w.waitingFor));
      assert.equal(watched.size, 50, "each waiter watches a different node");
      assert.ok(watched.has(holder.node), "one of them watches the holder");
      assert.equal(
        waiters.reduce((sum, w) => sum + w.watchEventsReceived, 0),
        0,
      );

      await holder.release();
      await firstGrant;
      // Any event the release caused reaches a session before the answer to a later sync.
      await Promise.all(waiterClients.map((client) => client.sync(path)));
      const next = waiters[granted[0]!]!;
      assert.equal(next.isHeld, true);
      assert.equal(next.watchEventsReceived, 1);
      assert.equal(
        waiters.reduce((sum, w) => sum + w.watchEventsReceived, 0),
        1,
        "exactly one waiter was woken",
      );
    } finally {
      countingDone();
    }
    await Promise.all(tasks);
    await Promise.all(waiterClients.map((client) => client.sync(path)));
    assert.equal(granted.length, 50);
    // One wake-up for its turn, plus its own node's deletion when it released.
    assert.deepEqual(
      waiters.map((w) => w.watchEventsReceived),
      waiters.map(() => 2),
    );
    await closeAll([holderClient, ...waiterClients]);
  });
});

describe("ReadWriteLock", () => {
  test("readers hold together; a writer waits for all earlier readers and holds alone, and later readers wait for it", async () => {
    const clients = await sessions(4);
    const path = "/rw-basic";
    const [r1, r2, w, r3] = clients.map((c) => new ReadWriteLock(c, path)) as [ReadWriteLock, ReadWriteLock, ReadWriteLock, ReadWriteLock];
    await r1.readLock().acquire();
    await r2.readLock().acquire();
    assert.equal(r1.readLock().isHeld && r2.readLock().isHeld, true, "two readers at once");
    const writing = w.writeLock().acquire({ timeoutMs: WAIT_MS });
    await waitForChildren(clients[0]!, path, 3);
    const lateReading = r3.readLock().acquire({ timeoutMs: WAIT_MS });
    await waitForChildren(clients[0]!, path, 4);
    await waitFor("the late reader watching the writer", () => (r3.readLock().waitingFor !== undefined ? true : undefined), WAIT_MS);
    assert.match(r3.readLock().waitingFor!, /write-\d{10}$/);
    assert.equal(w.writeLock().isHeld, false);

    await r1.readLock().release();
    assert.equal(w.writeLock().isHeld, false, "the second reader still holds");
    await r2.readLock().release();
    await writing;
    assert.equal(w.writeLock().isHeld, true);
    assert.equal(r3.readLock().isHeld, false);
    assert.equal(await r1.writeLock().tryAcquire(), false);
    assert.equal(await r1.readLock().tryAcquire(), false);

    await w.writeLock().release();
    await lateReading;
    assert.equal(r3.readLock().isHeld, true);
    assert.equal(await r1.readLock().tryAcquire(), true, "a reader joins a reader");
    await r1.readLock().release();
    await r3.readLock().release();
    assert.deepEqual(await childrenOf(clients[0]!, path), []);
    await closeAll(clients);
  });

  test("a read acquire and a write acquire abandoned by abort or timeout reject with OPERATIONTIMEOUT and leave no node behind", async () => {
    const clients = await sessions(3);
    const [a, b, c] = clients as [Client, Client, Client];

    const readPath = "/rw-abandon-read";
    const writer = new ReadWriteLock(a, readPath).writeLock();
    await writer.acquire();
    await assertAbandonedAcquiresCleanUp(c, readPath, writer.node!.slice(readPath.length + 1), () => new ReadWriteLock(b, readPath).readLock());
    await writer.release();

    const writePath = "/rw-abandon-write";
    const reader = new ReadWriteLock(a, writePath).readLock();
    await reader.acquire();
    await assertAbandonedAcquiresCleanUp(c, writePath, reader.node!.slice(writePath.length + 1), () => new ReadWriteLock(b, writePath).writeLock());
    // The readers' side is still open, and a writer after the abandoned ones gets its turn.
    const next = new ReadWriteLock(b, writePath).writeLock();
    const nextAcquired = next.acquire({ timeoutMs: WAIT_MS });
    await reader.release();
    await nextAcquired;
    assert.equal(next.isHeld, true);
    await next.release();
    assert.deepEqual(await childrenOf(c, readPath), []);
    assert.deepEqual(await childrenOf(c, writePath), []);
    await closeAll(clients);
  });

  test("under competition of readers and writers a writer is always alone", async () => {
    const clients = await sessions(6);
    const path = "/rw-competition";
    const checker = new ReadWriteChecker();
    let writes = 0;
    let reads = 0;
    await Promise.all(
      clients.map(async (client, index) => {
        const rw = new ReadWriteLock(client, path);
        const writer = index < 2;
        const lock = writer ? rw.writeLock() : rw.readLock();
        for (let round = 0; round < 3; round++) {
          await lock.acquire({ timeoutMs: WAIT_MS });
          if (writer) {
            checker.enterWrite(`writer-${index}`);
            writes += 1;
          } else {
            checker.enterRead(`reader-${index}`);
            reads += 1;
          }
          await roundTrip(client, path);
          checker.exit(writer ? `writer-${index}` : `reader-${index}`);
          await lock.release();
        }
      }),
    );
    assert.deepEqual(checker.violations, []);
    assert.equal(writes, 6);
    assert.equal(reads, 12);
    assert.deepEqual(await childrenOf(clients[0]!, path), []);
    await closeAll(clients);
  });

  test("a writer whose session expires loses the lock and the readers queued behind it proceed", async () => {
    const clients = await sessions(3);
    const path = "/rw-expiry";
    const [writerSide, reader1, reader2] = clients.map((c) => new ReadWriteLock(c, path)) as [ReadWriteLock, ReadWriteLock, ReadWriteLock];
    await writerSide.writeLock().acquire();
    const lost = once(writerSide.writeLock(), "lost") as Promise<[ZkError]>;
    const reading = [reader1.readLock().acquire({ timeoutMs: WAIT_MS }), reader2.readLock().acquire({ timeoutMs: WAIT_MS })];
    await waitForChildren(clients[1]!, path, 3);
    await cluster.expire(clients[0]!);
    const [error] = await lost;
    assert.equal(error.code, "SESSIONEXPIRED");
    assert.equal(writerSide.writeLock().isHeld, false);
    await Promise.all(reading);
    assert.equal(reader1.readLock().isHeld && reader2.readLock().isHeld, true);
    await reader1.readLock().release();
    await reader2.readLock().release();
    await closeAll(clients);
  });

  test("with the leader server killed mid-queue, every reader and writer gets its turn and a writer is always alone", async () => {
    const clients = await sessions(5);
    const path = "/rw-leader-killed";
    const checker = new ReadWriteChecker();
    const first = new ReadWriteLock(clients[0]!, path).writeLock();
    await first.acquire();
    checker.enterWrite("first");
    let turns = 0;
    const queued = clients.slice(1).map(async (client, index) => {
      const rw = new ReadWriteLock(client, path);
      const writer = index % 2 === 1;
      const lock = writer ? rw.writeLock() : rw.readLock();
      await lock.acquire({ timeoutMs: WAIT_MS });
      if (writer) checker.enterWrite(`writer-${index}`);
      else checker.enterRead(`reader-${index}`);
      turns += 1;
      await roundTrip(client, path);
      checker.exit(writer ? `writer-${index}` : `reader-${index}`);
      await lock.release();
    });
    await waitForChildren(clients[0]!, path, 5);
    const killed = await cluster.killLeader();
    try {
      checker.exit("first");
      await first.release();
      await Promise.all(queued);
    } finally {
      await cluster.restart(killed);
    }
    assert.deepEqual(checker.violations, []);
    assert.equal(turns, 4);
    assert.deepEqual(await childrenOf(clients[0]!, path), []);
    await closeAll(clients);
  });
});

describe("RevocableLock", () => {
  test("a holder asked to release by requestRevoke runs its handler, releases, and the waiter gets the lock", async () => {
    const clients = await sessions(3);
    const [a, b, c] = clients as [Client, Client, Client];
    const path = "/revocable-cooperative";
    let handlerCalls = 0;
    const holder = new RevocableLock(a, path, {
      revocationHandler: async (lock) => {
        handlerCalls += 1;
        await lock.release();
      },
    });
    const requested = once(holder, "revocationRequested");
    await holder.acquire();
    const waiter = new RevocableLock(b, path);
    const waiting = waiter.acquire({ timeoutMs: WAIT_MS });
    await waitForChildren(c, path, 2);

    // The holder may see the request and release before c's own answer arrives: compare with the node it held.
    const heldNode = holder.node;
    const node = await RevocableLock.requestRevoke(c, path);
    assert.equal(node, heldNode);
    await requested;
    await waiting;
    assert.equal(waiter.isHeld, true);
    assert.equal(holder.isHeld, false);
    assert.equal(handlerCalls, 1);

    // revoke() with a grace period that the holder meets ends as "released".
    waiter.setRevocationHandler((lock) => lock.release());
    assert.equal(await RevocableLock.revoke(c, path, { graceMs: WAIT_MS }), "released");
    assert.equal(waiter.isHeld, false);
    assert.equal(await RevocableLock.revoke(c, path, { graceMs: 100 }), "none", "nobody holds it");
    assert.equal(await RevocableLock.requestRevoke(c, path), undefined);
    await closeAll(clients);
  });

  test("an acquire abandoned by abort or timeout rejects with OPERATIONTIMEOUT and leaves no node behind", async () => {
    const clients = await sessions(3);
    const [a, b, c] = clients as [Client, Client, Client];
    const path = "/revocable-abandon";
    const holder = new RevocableLock(a, path);
    await holder.acquire();
    await assertAbandonedAcquiresCleanUp(c, path, holder.node!.slice(path.length + 1), () => new RevocableLock(b, path));
    assert.equal(holder.isHeld, true);
    await holder.release();
    assert.deepEqual(await childrenOf(c, path), []);
    await closeAll(clients);
  });

  test("a holder that ignores the request is revoked by force after the grace period and learns of it by its node's deletion", async () => {
    const clients = await sessions(3);
    const [a, b, c] = clients as [Client, Client, Client];
    const path = "/revocable-forced";
    const holder = new RevocableLock(a, path); // no handler: it will not release
    await holder.acquire();
    const oldToken = holder.fencingToken!;
    const revoked = once(holder, "revoked");
    const lost = once(holder, "lost") as Promise<[ZkError]>;
    const waiter = new RevocableLock(b, path);
    const waiting = waiter.acquire({ timeoutMs: WAIT_MS });
    await waitForChildren(c, path, 2);

    assert.equal(await RevocableLock.revoke(c, path, { graceMs: 300 }), "forced");
    await revoked;
    const [error] = await lost;
    assert.equal(error.code, "NONODE");
    assert.equal(holder.isHeld, false);
    await waiting;
    assert.equal(waiter.isHeld, true);
    assert.ok(waiter.fencingToken! > oldToken);
    await holder.release(); // nothing to do
    await waiter.release();
    assert.deepEqual(await childrenOf(c, path), []);
    await closeAll(clients);
  });

  test("a revocable holder whose session expires reports lost, not revoked, and the waiter proceeds", async () => {
    const clients = await sessions(2);
    const path = "/revocable-expiry";
    const holder = new RevocableLock(clients[0]!, path);
    await holder.acquire();
    let revokedEvents = 0;
    holder.on("revoked", () => (revokedEvents += 1));
    const lost = once(holder, "lost") as Promise<[ZkError]>;
    const waiter = new RevocableLock(clients[1]!, path);
    const waiting = waiter.acquire({ timeoutMs: WAIT_MS });
    await waitForChildren(clients[1]!, path, 2);
    await cluster.expire(clients[0]!);
    assert.equal((await lost)[0].code, "SESSIONEXPIRED");
    assert.equal(revokedEvents, 0);
    await waiting;
    assert.equal(waiter.isHeld, true);
    await waiter.release();
    await closeAll(clients);
  });

  test("with the leader server killed, a revocation request still reaches the holder and the lock changes hands", async () => {
    const clients = await sessions(3);
    const [a, b, c] = clients as [Client, Client, Client];
    const path = "/revocable-leader-killed";
    const holder = new RevocableLock(a, path, { revocationHandler: (lock) => lock.release() });
    await holder.acquire();
    const waiter = new RevocableLock(b, path);
    const waiting = waiter.acquire({ timeoutMs: WAIT_MS });
    await waitForChildren(c, path, 2);
    const killed = await cluster.killLeader();
    try {
      assert.equal(await RevocableLock.revoke(c, path, { graceMs: WAIT_MS }), "released");
      await waiting;
    } finally {
      await cluster.restart(killed);
    }
    assert.equal(holder.isHeld, false);
    assert.equal(waiter.isHeld, true);
    await waiter.release();
    await closeAll(clients);
  });
});

describe("Semaphore", () => {
  test("six sessions competing for two leases never hold more than two at once", async () => {
    const clients = await sessions(6);
    const path = "/semaphore-competition";
    const counter = new LeaseCounter(2);
    await Promise.all(
      clients.map(async (client, index) => {
        const semaphore = new Semaphore(client, path, 2);
        for (let round = 0; round < 3; round++) {
          const lease = await semaphore.acquire({ timeoutMs: WAIT_MS });
          counter.enter(`session-${index}`);
          await roundTrip(client, path);
          await roundTrip(client, path);
          counter.exit(`session-${index}`);
          await lease.release();
        }
      }),
    );
    assert.deepEqual(counter.violations, []);
    assert.equal(counter.entries, 18);
    assert.ok(counter.maxInside <= 2);
    assert.deepEqual(await childrenOf(clients[0]!, `${path}/leases`), []);
    assert.deepEqual(await childrenOf(clients[0]!, `${path}/locks`), []);
    await closeAll(clients);
  });

  test("an acquire abandoned by timeout or abort removes its lease node and its place in the internal lock", async () => {
    const clients = await sessions(3);
    const [a, b, c] = clients as [Client, Client, Client];
    const path = "/semaphore-abandon";
    const held = await new Semaphore(a, path, 1).acquire();
    await assert.rejects(new Semaphore(b, path, 1).acquire({ timeoutMs: 300 }), isCode("OPERATIONTIMEOUT"));
    assert.equal((await childrenOf(a, `${path}/leases`)).length, 1);
    assert.deepEqual(await childrenOf(a, `${path}/locks`), []);

    const aborted = new AbortController();
    const abandoned = new Semaphore(b, path, 1).acquire({ signal: aborted.signal });
    const queued = new Semaphore(c, path, 1).acquire({ timeoutMs: WAIT_MS });
    await waitForChildren(a, `${path}/locks`, 2);
    aborted.abort();
    await assert.rejects(abandoned, isCode("OPERATIONTIMEOUT"));
    await held.release();
    const lease = await queued;
    assert.equal(lease.isHeld, true);
    await lease.release();
    assert.deepEqual(await childrenOf(a, `${path}/leases`), []);
    assert.deepEqual(await childrenOf(a, `${path}/locks`), []);
    await closeAll(clients);
  });

  test("a lease holder whose session expires reports lost, its lease is handed on, and never more than two are held", async () => {
    const clients = await sessions(4);
    const path = "/semaphore-expiry";
    const counter = new LeaseCounter(2);
    const leases: Lease[] = [];
    for (const [index, client] of clients.slice(0, 2).entries()) {
      leases.push(await new Semaphore(client, path, 2).acquire());
      counter.enter(`holder-${index}`);
    }
    const lost = once(leases[0]!, "lost") as Promise<[ZkError]>;
    const waiting = clients.slice(2).map(async (client, index) => {
      const lease = await new Semaphore(client, path, 2).acquire({ timeoutMs: WAIT_MS });
      counter.enter(`waiter-${index}`);
      return lease;
    });
    await waitForChildren(clients[0]!, `${path}/leases`, 3); // the first waiter, holding the internal lock, has its lease node

    // The expired holder is counted out when its session is made to die: from then on it must
    // not act as a holder, and the recipe tells it so ("lost") as soon as its client learns.
    counter.exit("holder-0");
    await cluster.expire(clients[0]!);
    assert.equal((await lost)[0].code, "SESSIONEXPIRED");
    assert.equal(leases[0]!.isHeld, false);
    const [firstWaiter] = await Promise.race(waiting.map((p, i) => p.then((lease) => [lease, i] as const)));
    assert.equal(firstWaiter.isHeld, true);
    assert.equal(counter.maxInside, 2);

    counter.exit("holder-1");
    await leases[1]!.release();
    const all = await Promise.all(waiting);
    assert.deepEqual(counter.violations, []);
    for (const [index, lease] of all.entries()) {
      counter.exit(`waiter-${index}`);
      await lease.release();
    }
    assert.deepEqual(await childrenOf(clients[1]!, `${path}/leases`), []);
    await closeAll(clients);
  });

  test("with the leader server killed mid-competition, every acquirer gets its leases and never more than two are held", async () => {
    const clients = await sessions(5);
    const path = "/semaphore-leader-killed";
    const counter = new LeaseCounter(2);
    let leaderKill: Promise<number> | undefined;
    await Promise.all(
      clients.map(async (client, index) => {
        const semaphore = new Semaphore(client, path, 2);
        for (let round = 0; round < 2; round++) {
          const lease = await semaphore.acquire({ timeoutMs: WAIT_MS });
          counter.enter(`session-${index}`);
          if (leaderKill === undefined && counter.entries === 3) leaderKill = cluster.killLeader();
          await roundTrip(client, path);
          counter.exit(`session-${index}`);
          await lease.release();
        }
      }),
    ).finally(async () => {
      if (leaderKill !== undefined) await cluster.restart(await leaderKill);
    });
    assert.ok(leaderKill !== undefined);
    assert.deepEqual(counter.violations, []);
    assert.equal(counter.entries, 10);
    assert.deepEqual(await childrenOf(clients[0]!, `${path}/leases`), []);
    await closeAll(clients);
  });
});
