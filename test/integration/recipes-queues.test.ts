/**
 * Barrier, DoubleBarrier, DistributedQueue, DistributedPriorityQueue and SharedCounter on a live
 * three-voter cluster, with independent sessions competing: nobody passes a barrier early, queue
 * elements are delivered exactly once and in order, counter increments are never lost or doubled —
 * also when a session is forced to expire mid-operation and when the leader server is killed.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, test } from "node:test";
import { type Client, ZkError } from "../../src/index.js";
import { Barrier } from "../../src/recipes/barrier.js";
import { DoubleBarrier } from "../../src/recipes/double-barrier.js";
import { DistributedPriorityQueue } from "../../src/recipes/priority-queue.js";
import { DistributedQueue } from "../../src/recipes/queue.js";
import { SharedCounter } from "../../src/recipes/shared-counter.js";
import { sequenceOf } from "../../src/recipes/common.js";
import { syncedChildren } from "../helpers/cluster-client.js";
import { RecipeCluster } from "../helpers/recipe-cluster.js";

const TEST_TIMEOUT_MS = 180_000;
/** Upper bound on any single wait for a cluster event in these tests (never a timing assertion). */
const EVENT_WAIT_MS = 60_000;

const text = (bytes: Uint8Array | null): string | null => (bytes === null ? null : Buffer.from(bytes).toString("utf8"));
const isCode = (error: unknown, code: string): boolean => error instanceof ZkError && error.code === code;
const rejectsWith = (promise: Promise<unknown>, code: string): Promise<void> =>
  assert.rejects(promise, (error: unknown) => {
    assert.ok(isCode(error, code), `expected ZkError ${code}, got ${String(error)}`);
    return true;
  });

let rc: RecipeCluster;
let pathCount = 0;
/** A fresh znode path per test. */
const freshPath = (name: string): string => `/recipes-queues/${name}-${++pathCount}`;

before(async () => {
  rc = await RecipeCluster.start();
});

after(async () => {
  await rc?.stop();
});

// A server process that died on its own (not one a test killed and restarted) fails the test that
// was running, with the server's last error lines, and is restarted so later tests are not blamed.
afterEach(async () => {
  const died = [...rc.cluster.servers].filter(([, server]) => !server.running);
  if (died.length === 0) return;
  const report = died.map(
    ([id, server]) =>
      `server ${id}: ${server.stderr
        .split("\n")
        .filter((line) => /Error|invariant/.test(line))
        .slice(-4)
        .join(" | ")}`,
  );
  await Promise.all(died.map(([id]) => rc.restart(id)));
  throw new Error(`servers died during the test: ${report.join("; ")}`);
});

async function sessions(count: number): Promise<Client[]> {
  return Promise.all(Array.from({ length: count }, () => rc.client()));
}

async function closeAll(clients: readonly Client[]): Promise<void> {
  await Promise.allSettled(clients.map((c) => c.close()));
}

/** Rejects after `ms`: a bound on a wait, so a broken recipe fails the test instead of hanging it. */
function bounded<T>(promise: Promise<T>, what: string, ms = EVENT_WAIT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`gave up waiting for ${what}`)), ms)));
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

/** Resolves with `path`'s children once `accept` holds for them, woken by children watches (no polling). */
async function untilChildren(client: Client, path: string, accept: (children: string[]) => boolean, what: string): Promise<string[]> {
  const wait = async (): Promise<string[]> => {
    for (;;) {
      let fired!: () => void;
      const changed = new Promise<void>((resolve) => (fired = resolve));
      let children: string[];
      try {
        children = await client.getChildren(path, { watch: () => fired() });
      } catch (error) {
        if (isCode(error, "CONNECTIONLOSS")) continue;
        if (!isCode(error, "NONODE")) throw error;
        if ((await client.exists(path, { watch: () => fired() })) !== null) continue;
        children = [];
      }
      if (accept(children)) return children;
      await changed;
    }
  };
  return bounded(wait(), what);
}

/** Deletes `path` and everything under it. */
async function removeTree(client: Client, path: string): Promise<void> {
  let children: string[];
  try {
    children = await read(client, () => client.getChildren(path));
  } catch (error) {
    if (isCode(error, "NONODE")) return;
    throw error;
  }
  for (const child of children) await removeTree(client, `${path}/${child}`);
  try {
    await read(client, () => client.delete(path));
  } catch (error) {
    if (!isCode(error, "NONODE")) throw error;
  }
}

/** Runs `act` on `client`, or on a fresh session if `client`'s expired (allowed in failover tests). */
async function onLiveSession<T>(client: Client, act: (client: Client) => Promise<T>): Promise<T> {
  if (client.state !== "expired") {
    try {
      return await act(client);
    } catch (error) {
      if (!isCode(error, "SESSIONEXPIRED")) throw error;
    }
  }
  const fresh = await rc.client();
  try {
    return await act(fresh);
  } finally {
    await fresh.close();
  }
}

/** Settles `promise` into a value to inspect later, so an early rejection is never unhandled. */
function outcome<T>(promise: Promise<T>): Promise<{ value: T } | { error: unknown }> {
  return promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

async function assertRejectedWith(settled: Promise<{ value: unknown } | { error: unknown }>, code: string): Promise<void> {
  const result = await bounded(settled, `a rejection with ${code}`);
  assert.ok("error" in result, `expected ZkError ${code}, but the call succeeded`);
  assert.ok(isCode(result.error, code), `expected ZkError ${code}, got ${String(result.error)}`);
}

/** A plain read by the test itself, retried while `client` reconnects after a failover. */
async function read<T>(client: Client, attempt: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (!isCode(error, "CONNECTIONLOSS")) throw error;
      await bounded(
        new Promise<void>((resolve) => {
          if (client.connected) return resolve();
          const listener = (state: string): void => {
            if (state !== "connected" && state !== "reconnected") return;
            client.off("state", listener);
            resolve();
          };
          client.on("state", listener);
        }),
        "the test's session to reconnect",
      );
    }
  }
}

describe("Barrier", () => {
  test("waiters are released only after the barrier is removed, and all of them are", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("barrier");
    const [setter, ...waiters] = await sessions(4);
    try {
      const barrier = new Barrier(setter!, path);
      await barrier.set();
      await barrier.set(); // idempotent
      assert.equal(await barrier.isSet(), true);
      const events: string[] = [];
      // A waiter's server may not have applied the set yet: it would see no barrier and pass at once.
      await Promise.all(waiters.map((client) => client.sync(path)));
      const waits = waiters.map((client, i) => new Barrier(client, path).wait().then(() => events.push(`released ${i}`)));
      // Each waiter's exists-watch went out before this read on the same session, so it is registered.
      await Promise.all(waiters.map((client) => client.exists(path)));
      assert.equal(events.length, 0, "nobody is released while the barrier is up");
      events.push("removed");
      await barrier.remove();
      await bounded(Promise.all(waits), "waiters released");
      assert.equal(events[0], "removed");
      assert.equal(events.length, 4);
      assert.equal(await barrier.isSet(), false);
      await bounded(new Barrier(waiters[0]!, path).wait(), "a wait on a barrier that is down");
    } finally {
      await removeTree(setter!, path);
      await closeAll([setter!, ...waiters]);
    }
  });

  test("a waiter whose session expires is told SESSIONEXPIRED; the others are still released", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("barrier-expire");
    const [setter, doomed, survivor] = await sessions(3);
    try {
      const barrier = new Barrier(setter!, path);
      await barrier.set();
      await Promise.all([doomed!.sync(path), survivor!.sync(path)]);
      const doomedWait = outcome(new Barrier(doomed!, path).wait());
      const survivorWait = new Barrier(survivor!, path).wait();
      await Promise.all([doomed!.exists(path), survivor!.exists(path)]);
      await rc.expire(doomed!);
      await assertRejectedWith(doomedWait, "SESSIONEXPIRED");
      await barrier.remove();
      await bounded(survivorWait, "the surviving waiter released");
    } finally {
      await removeTree(setter!, path);
      await closeAll([setter!, doomed!, survivor!]);
    }
  });

  test("an abandoned wait rejects with OPERATIONTIMEOUT and leaves the barrier as it was", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("barrier-abandon");
    const [client] = await sessions(1);
    try {
      const barrier = new Barrier(client!, path);
      await barrier.set();
      await rejectsWith(barrier.wait({ timeoutMs: 150 }), "OPERATIONTIMEOUT");
      const controller = new AbortController();
      const waiting = barrier.wait({ signal: controller.signal });
      await client!.exists(path);
      controller.abort();
      await rejectsWith(waiting, "OPERATIONTIMEOUT");
      assert.equal(await barrier.isSet(), true);
      assert.deepEqual(await client!.getChildren(path), []);
    } finally {
      await removeTree(client!, path);
      await closeAll([client!]);
    }
  });

  test("with the leader server killed while waiters wait, removing the barrier still releases them", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("barrier-leader");
    const [setter, ...waiters] = await sessions(4);
    let killed: number | undefined;
    try {
      await new Barrier(setter!, path).set();
      const events: string[] = [];
      // A waiter's server may not have applied the set yet: it would see no barrier and pass at once.
      await Promise.all(waiters.map((client) => client.sync(path)));
      const waits = waiters.map((client, i) => outcome(new Barrier(client, path).wait().then(() => void events.push(`released ${i}`))));
      await Promise.all(waiters.map((client) => client.exists(path)));
      killed = await rc.killLeader();
      assert.equal(events.length, 0, "nobody is released before the barrier is removed");
      events.push("removed");
      await onLiveSession(setter!, (client) => new Barrier(client, path).remove());
      const results = await bounded(Promise.all(waits), "waiters released after failover");
      assert.equal(events[0], "removed");
      // A waiter whose session did not survive the failover must have been told so.
      for (const result of results) if ("error" in result) assert.ok(isCode(result.error, "SESSIONEXPIRED"), String(result.error));
      assert.equal(events.length - 1, results.filter((result) => !("error" in result)).length);
    } finally {
      if (killed !== undefined) await rc.restart(killed);
      await onLiveSession(setter!, (client) => removeTree(client, path));
      await closeAll([setter!, ...waiters]);
    }
  });
});

describe("DoubleBarrier", () => {
  test("with five sessions nobody returns from enter before all five entered, and leave completes for all", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("double");
    const clients = await sessions(6);
    const observer = clients.pop()!;
    try {
      const barriers = clients.map((client) => new DoubleBarrier(client, path, 5));
      const log: string[] = [];
      const enters: Promise<void>[] = [];
      for (let i = 0; i < 5; i++) {
        log.push(`entered ${i}`);
        enters.push(barriers[i]!.enter().then(() => void log.push(`returned ${i}`)));
        if (i < 4) {
          // Let this participant's node appear (it is then blocked on ready) before the next one comes.
          await untilChildren(observer, path, (children) => children.filter((c) => c.includes("member-")).length === i + 1, `${i + 1} members`);
          assert.ok(!log.some((entry) => entry.startsWith("returned")), `nobody returned with only ${i + 1} entered`);
        }
      }
      await bounded(Promise.all(enters), "all five enter");
      const lastEntered = log.indexOf("entered 4");
      for (let i = 0; i < 5; i++) assert.ok(log.indexOf(`returned ${i}`) > lastEntered, `participant ${i} returned after all five entered: ${log.join(", ")}`);
      await bounded(Promise.all(barriers.map((b) => b.leave())), "all five leave");
      assert.deepEqual(await syncedChildren(observer, path), [], "no member nodes and no ready node are left");
      assert.ok(barriers.every((b) => b.ourPath === undefined));
    } finally {
      await removeTree(observer, path);
      await closeAll([...clients, observer]);
    }
  });

  test("a participant whose session expires before the barrier fills does not count as entered", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("double-expire-enter");
    const [doomed, b, c, d, observer] = await sessions(5);
    const members = (children: string[]): number => children.filter((child) => child.includes("member-")).length;
    try {
      const log: string[] = [];
      const doomedEnter = outcome(new DoubleBarrier(doomed!, path, 3).enter());
      const entering = [b, c, d].map((client) => new DoubleBarrier(client!, path, 3));
      log.push("entered b");
      const enterB = entering[0]!.enter().then(() => void log.push("returned b"));
      await untilChildren(observer!, path, (children) => members(children) === 2, "doomed and b are members");
      // Both creates were applied, so they were sent before these reads: once answered, doomed has no write in flight.
      await Promise.all([doomed!.exists(path), b!.exists(path)]);
      await rc.expire(doomed!);
      await assertRejectedWith(doomedEnter, "SESSIONEXPIRED");
      log.push("entered c");
      const enterC = entering[1]!.enter().then(() => void log.push("returned c"));
      // doomed's node went with its session: b and c are two members of three.
      await untilChildren(observer!, path, (children) => members(children) === 2 && !children.includes("ready"), "b and c are members");
      assert.ok(!log.some((entry) => entry.startsWith("returned")), `nobody returned with two live members: ${log.join(", ")}`);
      log.push("entered d");
      const enterD = entering[2]!.enter().then(() => void log.push("returned d"));
      await bounded(Promise.all([enterB, enterC, enterD]), "b, c, d enter");
      const lastEntered = log.indexOf("entered d");
      assert.ok(
        log.filter((entry) => entry.startsWith("returned")).every((entry) => log.indexOf(entry) > lastEntered),
        log.join(", "),
      );
      await bounded(Promise.all(entering.map((barrier) => barrier.leave())), "b, c, d leave");
      assert.deepEqual(await syncedChildren(observer!, path), []);
    } finally {
      await removeTree(observer!, path);
      await closeAll([doomed!, b!, c!, d!, observer!]);
    }
  });

  test("a participant whose session expires mid-barrier counts as having left: the others' leave completes", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("double-expire-leave");
    const clients = await sessions(5);
    const observer = clients.pop()!;
    try {
      const barriers = clients.map((client) => new DoubleBarrier(client, path, 4));
      await bounded(Promise.all(barriers.map((barrier) => barrier.enter())), "all four enter");
      // The lowest member waits for the highest: make the highest the one whose session dies.
      const bySequence = [...barriers].sort((x, y) => sequenceOf(x.ourPath!) - sequenceOf(y.ourPath!));
      const doomed = bySequence[3]!;
      const lowest = bySequence[0]!;
      const leaving = bySequence.slice(0, 3).map((barrier) => barrier.leave());
      // Everyone but the lowest deletes itself before waiting: then only the lowest and the doomed remain.
      const highestName = doomed.ourPath!.slice(path.length + 1);
      const lowestName = lowest.ourPath!.slice(path.length + 1);
      await untilChildren(
        observer,
        path,
        (children) =>
          children
            .filter((c) => c.includes("member-"))
            .sort()
            .join() === [highestName, lowestName].sort().join(),
        "only lowest and highest remain",
      );
      await rc.expire(doomed.client);
      await bounded(Promise.all(leaving), "the others leave");
      await rejectsWith(doomed.leave(), "SESSIONEXPIRED");
      assert.equal(doomed.ourPath, undefined, "the expired participant no longer believes it is entered");
      assert.deepEqual(await syncedChildren(observer, path), []);
    } finally {
      await removeTree(observer, path);
      await closeAll([...clients, observer]);
    }
  });

  test("an abandoned enter rejects with OPERATIONTIMEOUT and removes its node", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("double-abandon");
    const [client, other] = await sessions(2);
    try {
      await rejectsWith(new DoubleBarrier(client!, path, 3).enter({ timeoutMs: 300 }), "OPERATIONTIMEOUT");
      assert.deepEqual(await client!.getChildren(path), []);
      const controller = new AbortController();
      const entering = new DoubleBarrier(other!, path, 3).enter({ signal: controller.signal });
      await untilChildren(client!, path, (children) => children.length === 1, "the member node");
      controller.abort();
      await rejectsWith(entering, "OPERATIONTIMEOUT");
      await untilChildren(client!, path, (children) => children.length === 0, "the abandoned member node removed");
    } finally {
      await removeTree(client!, path);
      await closeAll([client!, other!]);
    }
  });

  test(
    "an abandoned leave (abort or timeout) rejects with OPERATIONTIMEOUT and removes its own node; the others still leave",
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      for (const how of ["abort", "timeout"] as const) {
        const path = freshPath(`double-leave-abandon-${how}`);
        const clients = await sessions(3);
        const [observer] = clients;
        try {
          const barriers = clients.slice(1).map((client) => new DoubleBarrier(client, path, 2));
          await Promise.all(barriers.map((barrier) => barrier.enter({ timeoutMs: EVENT_WAIT_MS })));
          // The lowest member's leave waits for the highest to go, its own node still in place.
          const [lowest, highest] = [...barriers].sort((a, b) => sequenceOf(a.ourPath!) - sequenceOf(b.ourPath!)) as [DoubleBarrier, DoubleBarrier];
          const highestName = highest.ourPath!.slice(path.length + 1);
          const controller = new AbortController();
          const leaving = lowest.leave(how === "abort" ? { signal: controller.signal } : { timeoutMs: 300 });
          if (how === "abort") {
            // The leave's reads (members, then the exists-watch on the highest) go first on its session.
            for (let i = 0; i < 3; i++) await lowest.client.exists(path);
            controller.abort();
          }
          await rejectsWith(leaving, "OPERATIONTIMEOUT");
          assert.equal(lowest.ourPath, undefined);
          await observer!.sync(path);
          assert.deepEqual(
            (await observer!.getChildren(path)).filter((name) => name !== "ready"),
            [highestName],
            "only the other member's node is left",
          );
          await highest.leave({ timeoutMs: EVENT_WAIT_MS });
          await observer!.sync(path);
          assert.deepEqual(await observer!.getChildren(path), []);
        } finally {
          await removeTree(observer!, path);
          await closeAll(clients);
        }
      }
    },
  );

  test("with the leader server killed mid-barrier, enter and leave still complete for everyone", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("double-leader");
    const [first, second, third, observer] = await sessions(4);
    let killed: number | undefined;
    const log: string[] = [];
    /** One participant; if its session does not survive the failover (reported as SESSIONEXPIRED), a replacement enters. */
    const participate = async (client: Client, label: string): Promise<DoubleBarrier> => {
      for (;;) {
        const barrier = new DoubleBarrier(client, path, 3);
        log.push(`entered ${label}`);
        try {
          await barrier.enter({ timeoutMs: EVENT_WAIT_MS });
          log.push(`returned ${label}`);
          return barrier;
        } catch (error) {
          if (!isCode(error, "SESSIONEXPIRED")) throw error;
          log.push(`lost ${label}`);
          client = await rc.client();
          label = `${label}'`;
        }
      }
    };
    try {
      const entering = [participate(first!, "0"), participate(second!, "1")];
      await untilChildren(observer!, path, (children) => children.filter((c) => c.includes("member-")).length === 2, "two members");
      killed = await rc.killLeader();
      assert.ok(!log.some((entry) => entry.startsWith("returned")));
      entering.push(participate(third!, "2"));
      const barriers = await bounded(Promise.all(entering), "all three enter after failover");
      const thirdEntered = log.indexOf("entered 2");
      assert.ok(
        log.filter((entry) => entry.startsWith("returned")).every((entry) => log.indexOf(entry) > thirdEntered),
        log.join(", "),
      );
      const leaving = await bounded(Promise.all(barriers.map((barrier) => outcome(barrier.leave({ timeoutMs: EVENT_WAIT_MS })))), "all three leave");
      for (const result of leaving) if ("error" in result) assert.ok(isCode(result.error, "SESSIONEXPIRED"), String(result.error));
      const checker = await rc.client();
      await untilChildren(checker, path, (children) => children.length === 0, "no member and no ready node left");
      await closeAll([checker]);
    } finally {
      if (killed !== undefined) await rc.restart(killed);
      await onLiveSession(observer!, (client) => removeTree(client, path));
      await closeAll([first!, second!, third!, observer!]);
    }
  });
});

interface Consumers {
  perConsumer: string[][];
  finished: Promise<void>;
  stop: () => void;
  /** Consumers whose session expired (only when started with tolerateExpiry). */
  lost: number;
}

/** Ends consumers a failed test left running, so nothing outlives the test. */
async function stopConsumers(consumers: Consumers | undefined): Promise<void> {
  consumers?.stop();
  await consumers?.finished.catch(() => undefined);
}

/**
 * Consumers taking until `done()` holds (or stop()); each records what it got, in order. With
 * `tolerateExpiry` (failover tests) a consumer whose session expires stops and is counted as lost
 * instead of failing the test: the recipe reported the loss, as its contract says.
 */
function startConsumers(
  queues: readonly { take(options: { signal: AbortSignal }): Promise<Uint8Array> }[],
  received: string[],
  done: () => boolean,
  tolerateExpiry = false,
): Consumers {
  const stopper = new AbortController();
  const perConsumer = queues.map(() => [] as string[]);
  const consumers: Consumers = { perConsumer, finished: Promise.resolve(), stop: () => stopper.abort(), lost: 0 };
  consumers.finished = Promise.all(
    queues.map(async (queue, i) => {
      for (;;) {
        if (stopper.signal.aborted) return;
        let data: Uint8Array;
        try {
          data = await queue.take({ signal: stopper.signal });
        } catch (error) {
          if (stopper.signal.aborted && isCode(error, "OPERATIONTIMEOUT")) return;
          if (tolerateExpiry && isCode(error, "SESSIONEXPIRED")) {
            consumers.lost += 1;
            return;
          }
          throw error;
        }
        const element = text(data)!;
        received.push(element);
        perConsumer[i]!.push(element);
        if (done()) stopper.abort();
      }
    }),
  ).then(() => undefined);
  return consumers;
}

/** Waits (children watches) until no element is queued at `path`, then stops the consumers and waits for them. */
async function drainThenStop(observer: Client, path: string, consumers: Consumers): Promise<void> {
  await untilChildren(observer, path, (children) => children.every((child) => child === "receipts"), "the queue drained");
  // A claim in flight when the queue emptied still completes and is recorded: an abort never drops an element.
  consumers.stop();
  await bounded(consumers.finished, "consumers to stop");
}

/**
 * Exactly-once for a failover run: never a duplicate, nothing that was not offered; every
 * acknowledged offer delivered, except — only if a consumer's session expired — at most one per lost
 * consumer (the element whose claim was in flight when its session died: its outcome is unknown).
 */
function assertDeliveredOnce(received: readonly string[], acknowledged: readonly string[], unacknowledged: readonly string[], lostConsumers: number): void {
  const seen = new Set<string>();
  for (const element of received) {
    assert.ok(!seen.has(element), `${element} delivered twice`);
    seen.add(element);
  }
  const offered = new Set([...acknowledged, ...unacknowledged]);
  for (const element of received) assert.ok(offered.has(element), `${element} was never offered`);
  const missing = acknowledged.filter((element) => !seen.has(element));
  assert.ok(missing.length <= lostConsumers, `acknowledged but never delivered: ${missing.join(", ")} (${lostConsumers} consumers lost)`);
}

/** Whether any of these sessions expired (allowed during a failover, with 2 s sessions under load). */
const anyExpired = (clients: readonly Client[]): boolean => clients.some((client) => client.state === "expired");

/** Each consumer saw each producer's elements in the order that producer offered them. */
function assertPerProducerOrder(perConsumer: readonly string[][]): void {
  for (const seen of perConsumer) {
    const last = new Map<string, number>();
    for (const element of seen) {
      const [producer, index] = element.split(":") as [string, string];
      const previous = last.get(producer) ?? -1;
      assert.ok(Number(index) > previous, `${producer}:${index} delivered after ${producer}:${previous}`);
      last.set(producer, Number(index));
    }
  }
}

function assertExactlyOnce(received: readonly string[], offered: readonly string[]): void {
  const counts = new Map<string, number>();
  for (const element of received) counts.set(element, (counts.get(element) ?? 0) + 1);
  const duplicates = [...counts].filter(([, count]) => count > 1).map(([element]) => element);
  assert.deepEqual(duplicates, [], "no element delivered twice");
  assert.deepEqual([...received].sort(), [...offered].sort(), "every element delivered");
}

describe("DistributedQueue", () => {
  test("one consumer receives elements in offer order; peek shows the head without taking it", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("queue-order");
    const [producer, consumer] = await sessions(2);
    try {
      const queue = new DistributedQueue(consumer!, path);
      assert.equal(await queue.poll(), null);
      assert.equal(await queue.peek(), null);
      const offering = new DistributedQueue(producer!, path);
      for (let i = 0; i < 20; i++) await offering.offer(`e${i}`);
      await consumer!.sync(path); // the consumer may be on another server: see every offer made so far
      assert.equal(text(await queue.peek()), "e0");
      assert.equal(await queue.size(), 20);
      const got: (string | null)[] = [];
      for (let i = 0; i < 10; i++) got.push(text(await queue.poll()));
      for (let i = 10; i < 20; i++) got.push(text(await queue.take({ timeoutMs: EVENT_WAIT_MS })));
      assert.deepEqual(
        got,
        Array.from({ length: 20 }, (_, i) => `e${i}`),
      );
      assert.equal(await queue.poll(), null);
      assert.deepEqual(await consumer!.getChildren(`${path}/receipts`), [], "no receipt left behind");
    } finally {
      await removeTree(producer!, path);
      await closeAll([producer!, consumer!]);
    }
  });

  test("three producers and four consumers: 300 elements, each delivered exactly once, per-producer order kept", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("queue-many");
    const producers = await sessions(3);
    const consumers = await sessions(4);
    let consuming: Consumers | undefined;
    try {
      const offered: string[] = [];
      const received: string[] = [];
      consuming = startConsumers(
        consumers.map((c) => new DistributedQueue(c, path)),
        received,
        () => received.length >= 300,
      );
      await Promise.all(
        producers.map(async (client, p) => {
          const queue = new DistributedQueue(client, path);
          for (let i = 0; i < 100; i++) {
            await queue.offer(`p${p}:${i}`);
            offered.push(`p${p}:${i}`);
          }
        }),
      );
      await bounded(consuming.finished, "300 elements consumed");
      assertExactlyOnce(received, offered);
      assertPerProducerOrder(consuming.perConsumer);
      await producers[0]!.sync(path);
      assert.equal(await new DistributedQueue(producers[0]!, path).size(), 0);
      assert.deepEqual(await syncedChildren(producers[0]!, `${path}/receipts`), [], "no receipt left behind");
    } finally {
      await stopConsumers(consuming);
      await removeTree(producers[0]!, path);
      await closeAll([...producers, ...consumers]);
    }
  });

  test("an abandoned take (timeout or abort) leaves nothing behind and steals nothing later", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("queue-abandon");
    const [quitter, producer, consumer] = await sessions(3);
    try {
      const abandoned = new DistributedQueue(quitter!, path);
      await rejectsWith(abandoned.take({ timeoutMs: 200 }), "OPERATIONTIMEOUT");
      const controller = new AbortController();
      const taking = abandoned.take({ signal: controller.signal });
      await quitter!.exists(path); // the take's children watch is registered before this answer
      controller.abort();
      await rejectsWith(taking, "OPERATIONTIMEOUT");
      assert.deepEqual(await quitter!.getChildren(path), ["receipts"]);
      assert.deepEqual(await quitter!.getChildren(`${path}/receipts`), []);
      await new DistributedQueue(producer!, path).offer("after");
      assert.equal(text(await new DistributedQueue(consumer!, path).take({ timeoutMs: EVENT_WAIT_MS })), "after");
      assert.equal(await abandoned.poll(), null);
    } finally {
      await removeTree(producer!, path);
      await closeAll([quitter!, producer!, consumer!]);
    }
  });

  test("a consumer whose session expires while taking is told SESSIONEXPIRED; the others get every element once", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("queue-expire");
    const [doomed, producer, ...consumers] = await sessions(4);
    let consuming: Consumers | undefined;
    try {
      // The queue exists before doomed uses it, so doomed sends only reads: no write of it is in flight at expiry.
      await new DistributedQueue(producer!, path).size();
      const doomedQueue = new DistributedQueue(doomed!, path);
      const doomedTake = outcome(doomedQueue.take());
      await doomed!.exists(path);
      await rc.expire(doomed!);
      await assertRejectedWith(doomedTake, "SESSIONEXPIRED");
      await rejectsWith(doomedQueue.take(), "SESSIONEXPIRED");
      const received: string[] = [];
      const offered = Array.from({ length: 30 }, (_, i) => `p0:${i}`);
      consuming = startConsumers(
        consumers.map((c) => new DistributedQueue(c, path)),
        received,
        () => received.length >= offered.length,
      );
      const queue = new DistributedQueue(producer!, path);
      for (const element of offered) await queue.offer(element);
      await bounded(consuming.finished, "30 elements consumed");
      assertExactlyOnce(received, offered);
      assertPerProducerOrder(consuming.perConsumer);
    } finally {
      await stopConsumers(consuming);
      await removeTree(producer!, path);
      await closeAll([doomed!, producer!, ...consumers]);
    }
  });

  test(
    "with the leader server killed during produce and consume, every acknowledged offer is delivered exactly once",
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const path = freshPath("queue-leader");
      const producers = await sessions(2);
      const consumers = await sessions(3);
      let consuming: Consumers | undefined;
      let killed: number | undefined;
      let observer: Client | undefined;
      try {
        const acknowledged: string[] = [];
        const unacknowledged: string[] = [];
        const received: string[] = [];
        let killing: Promise<number> | undefined;
        await new DistributedQueue(producers[0]!, path).size();
        consuming = startConsumers(
          consumers.map((c) => new DistributedQueue(c, path)),
          received,
          () => {
            if (received.length === 30) killing ??= rc.killLeader();
            return false;
          },
          true,
        );
        await Promise.all(
          producers.map(async (client, p) => {
            const queue = new DistributedQueue(client, path);
            for (let i = 0; i < 60; i++) {
              try {
                await queue.offer(`p${p}:${i}`, { timeoutMs: EVENT_WAIT_MS });
                acknowledged.push(`p${p}:${i}`);
              } catch (error) {
                // Only a lost session may fail an offer (outcome unknown); this producer is done.
                assert.ok(isCode(error, "SESSIONEXPIRED"), String(error));
                unacknowledged.push(`p${p}:${i}`);
                return;
              }
            }
          }),
        );
        observer = await rc.client();
        await drainThenStop(observer, path, consuming);
        killed = await killing;
        assert.ok(killed !== undefined, "the leader was killed mid-run");
        assertDeliveredOnce(received, acknowledged, unacknowledged, consuming.lost);
        if (!anyExpired([...producers, ...consumers])) assertExactlyOnce(received, acknowledged);
        assertPerProducerOrder(consuming.perConsumer);
      } finally {
        await stopConsumers(consuming);
        if (killed !== undefined) await rc.restart(killed);
        if (observer) await removeTree(observer, path);
        await closeAll([...producers, ...consumers, ...(observer ? [observer] : [])]);
      }
    },
  );
});

describe("DistributedPriorityQueue", () => {
  test("elements come out by priority, lowest value first, then in offer order", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("pq-order");
    const [producer, consumer] = await sessions(2);
    try {
      const offering = new DistributedPriorityQueue(producer!, path);
      const offers: [string, number][] = [
        ["a", 5],
        ["b", 1],
        ["c", 5],
        ["d", 0],
        ["e", 1],
        ["f", 9],
        ["g", 0],
      ];
      for (const [data, priority] of offers) await offering.offer(data, priority);
      await rejectsWith(offering.offer("bad", -1), "BADARGUMENTS");
      const queue = new DistributedPriorityQueue(consumer!, path);
      await consumer!.sync(path);
      assert.equal(text(await queue.peek()), "d");
      assert.equal(await queue.size(), 7);
      const got: (string | null)[] = [];
      for (let i = 0; i < 4; i++) got.push(text(await queue.poll()));
      for (let i = 0; i < 3; i++) got.push(text(await queue.take({ timeoutMs: EVENT_WAIT_MS })));
      assert.deepEqual(got, ["d", "g", "b", "e", "a", "c", "f"]);
      assert.equal(await queue.poll(), null);
    } finally {
      await removeTree(producer!, path);
      await closeAll([producer!, consumer!]);
    }
  });

  test(
    "an abandoned take (abort or timeout) rejects with OPERATIONTIMEOUT, leaves nothing behind and steals nothing later",
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const path = freshPath("pq-abandon");
      const [quitter, producer, consumer] = await sessions(3);
      try {
        const abandoned = new DistributedPriorityQueue(quitter!, path);
        await rejectsWith(abandoned.take({ timeoutMs: 300 }), "OPERATIONTIMEOUT");
        await producer!.sync(path);
        assert.deepEqual(await producer!.getChildren(path), ["receipts"]);
        const controller = new AbortController();
        const taking = abandoned.take({ signal: controller.signal });
        await quitter!.exists(path); // the take's children watch is registered before this answer
        controller.abort();
        await rejectsWith(taking, "OPERATIONTIMEOUT");
        await producer!.sync(path);
        assert.deepEqual(await producer!.getChildren(path), ["receipts"]);
        assert.deepEqual(await producer!.getChildren(`${path}/receipts`), []);
        await new DistributedPriorityQueue(producer!, path).offer("after", 3);
        assert.equal(text(await new DistributedPriorityQueue(consumer!, path).take({ timeoutMs: EVENT_WAIT_MS })), "after");
        await quitter!.sync(path);
        assert.equal(await abandoned.poll(), null);
      } finally {
        await removeTree(producer!, path);
        await closeAll([quitter!, producer!, consumer!]);
      }
    },
  );

  test("competing consumers take every element exactly once, each in priority order", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("pq-many");
    const producers = await sessions(2);
    const consumers = await sessions(3);
    let consuming: Consumers | undefined;
    try {
      const offered: string[] = [];
      const priorityOf = (p: number, i: number): number => (i * 7 + p * 3) % 5;
      await Promise.all(
        producers.map(async (client, p) => {
          const queue = new DistributedPriorityQueue(client, path);
          for (let i = 0; i < 40; i++) {
            await queue.offer(`${priorityOf(p, i)}/p${p}:${i}`, priorityOf(p, i));
            offered.push(`${priorityOf(p, i)}/p${p}:${i}`);
          }
        }),
      );
      const received: string[] = [];
      consuming = startConsumers(
        consumers.map((c) => new DistributedPriorityQueue(c, path)),
        received,
        () => received.length >= offered.length,
      );
      await bounded(consuming.finished, "80 elements consumed");
      assertExactlyOnce(received, offered);
      // Everything was queued before consumption began, so each consumer's takes never go back in priority.
      for (const seen of consuming.perConsumer) {
        const priorities = seen.map((element) => Number(element.split("/")[0]));
        assert.deepEqual(
          priorities,
          [...priorities].sort((a, b) => a - b),
        );
      }
      // Within one priority, each producer's elements keep their order (the key before ":" is priority/producer).
      assertPerProducerOrder(consuming.perConsumer);
    } finally {
      await stopConsumers(consuming);
      await removeTree(producers[0]!, path);
      await closeAll([...producers, ...consumers]);
    }
  });

  test("a consumer whose session expires while taking is told SESSIONEXPIRED; the others get every element once", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("pq-expire");
    const [doomed, producer, ...consumers] = await sessions(4);
    let consuming: Consumers | undefined;
    try {
      await new DistributedPriorityQueue(producer!, path).size();
      const doomedTake = outcome(new DistributedPriorityQueue(doomed!, path).take());
      await doomed!.exists(path);
      await rc.expire(doomed!);
      await assertRejectedWith(doomedTake, "SESSIONEXPIRED");
      const received: string[] = [];
      const offered = Array.from({ length: 20 }, (_, i) => `p0:${i}`);
      consuming = startConsumers(
        consumers.map((c) => new DistributedPriorityQueue(c, path)),
        received,
        () => received.length >= offered.length,
      );
      const queue = new DistributedPriorityQueue(producer!, path);
      for (const element of offered) await queue.offer(element, 3);
      await bounded(consuming.finished, "20 elements consumed");
      assertExactlyOnce(received, offered);
      assertPerProducerOrder(consuming.perConsumer);
    } finally {
      await stopConsumers(consuming);
      await removeTree(producer!, path);
      await closeAll([doomed!, producer!, ...consumers]);
    }
  });

  test("with the leader server killed mid-consume, every element is delivered exactly once", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("pq-leader");
    const [producer, ...consumers] = await sessions(3);
    let consuming: Consumers | undefined;
    let killed: number | undefined;
    let observer: Client | undefined;
    try {
      const offered = Array.from({ length: 60 }, (_, i) => `p0:${i}`);
      const queue = new DistributedPriorityQueue(producer!, path);
      for (const element of offered) await queue.offer(element, 2);
      const received: string[] = [];
      let killing: Promise<number> | undefined;
      let killStarted!: () => void;
      const started = new Promise<void>((resolve) => (killStarted = resolve));
      consuming = startConsumers(
        consumers.map((c) => new DistributedPriorityQueue(c, path)),
        received,
        () => {
          if (received.length === 15) {
            killing ??= rc.killLeader();
            killStarted();
          }
          return false;
        },
        true,
      );
      await bounded(started, "15 elements taken and the kill started");
      killed = await killing;
      observer = await rc.client();
      await drainThenStop(observer, path, consuming);
      assertDeliveredOnce(received, offered, [], consuming.lost);
      if (!anyExpired(consumers)) assertExactlyOnce(received, offered);
      assertPerProducerOrder(consuming.perConsumer);
    } finally {
      await stopConsumers(consuming);
      if (killed !== undefined) await rc.restart(killed);
      if (observer) await removeTree(observer, path);
      await closeAll([producer!, ...consumers, ...(observer ? [observer] : [])]);
    }
  });
});

describe("SharedCounter", () => {
  test("add, increment, compareAndSet and get agree on one value", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("counter-basic");
    const [a, b] = await sessions(2);
    try {
      const counter = new SharedCounter(a!, path);
      assert.equal(await counter.get(), 0);
      assert.equal(await counter.add(10), 10);
      assert.equal(await counter.add(-3), 7);
      assert.equal(await counter.increment(), 8);
      const other = new SharedCounter(b!, path);
      await b!.sync(path);
      assert.equal(await other.get(), 8);
      assert.equal(await other.compareAndSet(8, 100), true);
      assert.equal(await counter.compareAndSet(8, 5), false);
      await a!.sync(path);
      assert.equal(await counter.get(), 100);
      assert.equal(Buffer.from((await a!.getData(path)).data).toString("utf8"), "100", "stored as a decimal string");
      assert.deepEqual(await a!.getChildren(path), [], "no receipt left behind");
    } finally {
      await removeTree(a!, path);
      await closeAll([a!, b!]);
    }
  });

  test("five sessions incrementing 50 times each count exactly 250", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("counter-250");
    const clients = await sessions(5);
    try {
      await Promise.all(
        clients.map(async (client) => {
          const counter = new SharedCounter(client, path);
          for (let i = 0; i < 50; i++) await counter.increment();
        }),
      );
      await clients[0]!.sync(path);
      assert.equal(await new SharedCounter(clients[0]!, path).get(), 250);
    } finally {
      await removeTree(clients[0]!, path);
      await closeAll(clients);
    }
  });

  test("with the leader server killed mid-way, five sessions × 50 increments still count exactly 250", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("counter-leader");
    const clients = await sessions(5);
    let killed: number | undefined;
    try {
      let acknowledged = 0;
      /** Increments whose session expired in flight (allowed in a failover): their outcome is unknown. */
      let unknown = 0;
      let killing: Promise<number> | undefined;
      await Promise.all(
        clients.map(async (first) => {
          let client = first;
          for (let done = 0; done < 50;) {
            try {
              await new SharedCounter(client, path).increment({ timeoutMs: EVENT_WAIT_MS });
            } catch (error) {
              if (!isCode(error, "SESSIONEXPIRED")) throw error;
              unknown += 1;
              client = await rc.client();
              continue;
            }
            done += 1;
            if (++acknowledged === 100) killing = rc.killLeader();
          }
        }),
      );
      killed = await killing;
      assert.ok(killed !== undefined);
      const checker = await rc.client();
      await checker.sync(path);
      const value = await new SharedCounter(checker, path).get();
      if (unknown === 0) assert.equal(value, 250);
      else assert.ok(value >= 250 && value <= 250 + unknown, `${value} with ${unknown} increments of unknown outcome`);
      await untilChildren(checker, path, (children) => children.length === 0, "no receipt left behind");
      await removeTree(checker, path);
      await closeAll([checker]);
    } finally {
      if (killed !== undefined) await rc.restart(killed);
      await closeAll(clients);
    }
  });
  test("a session that expires mid-way is told SESSIONEXPIRED; every acknowledged increment is counted once", { timeout: TEST_TIMEOUT_MS }, async () => {
    const path = freshPath("counter-expire");
    const [doomed, ...others] = await sessions(4);
    try {
      const doomedCounter = new SharedCounter(doomed!, path);
      for (let i = 0; i < 20; i++) await doomedCounter.increment();
      const othersCounting = others.map(async (client) => {
        const counter = new SharedCounter(client, path);
        for (let i = 0; i < 50; i++) await counter.increment();
      });
      await rc.expire(doomed!);
      await rejectsWith(doomedCounter.increment(), "SESSIONEXPIRED");
      await Promise.all(othersCounting);
      await others[0]!.sync(path);
      assert.equal(await new SharedCounter(others[0]!, path).get(), 20 + 3 * 50);
    } finally {
      await removeTree(others[0]!, path);
      await closeAll([doomed!, ...others]);
    }
  });
});
