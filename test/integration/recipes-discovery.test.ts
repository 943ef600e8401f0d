/**
 * Configuration, NamingService, ServiceDiscovery (+ LoadBalancer), Heartbeat and the Node/Tree
 * caches on a live three-voter cluster, each with several independent sessions competing, a
 * session forced to expire, and the leader killed mid-operation.
 */
import assert from "node:assert/strict";
import type { EventEmitter } from "node:events";
import { after, before, describe, test } from "node:test";
import { Client, type Stat, ZkError } from "../../src/index.js";
import { ConfigPublisher, ConfigSubscriber, type ConfigValue } from "../../src/recipes/configuration.js";
import { Heartbeat, HeartbeatMonitor, type WorkerStatus } from "../../src/recipes/heartbeat.js";
import { LoadBalancer } from "../../src/recipes/load-balancer.js";
import { NamingService, nextId } from "../../src/recipes/naming-service.js";
import { NodeCache } from "../../src/recipes/node-cache.js";
import { ServiceDiscovery, type ServiceCache, type ServiceInstance } from "../../src/recipes/service-discovery.js";
import { type CachedNode, TreeCache } from "../../src/recipes/tree-cache.js";
import { syncedChildren } from "../helpers/cluster-client.js";
import { RecipeCluster } from "../helpers/recipe-cluster.js";
import { waitFor } from "../helpers/wait.js";

const LIMIT_MS = 60_000;
const text = (bytes: Uint8Array): string => Buffer.from(bytes).toString("utf8");
const isCode = (error: unknown, code: string): boolean => error instanceof ZkError && error.code === code;

/**
 * Resolves once `check()` holds, testing it now and after each of `events` on `emitter`; rejects on
 * `lost` or after `limitMs` (a bound, not a timing assertion).
 */
function until(emitter: EventEmitter, events: string[], check: () => boolean, what: string, limitMs = LIMIT_MS): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: Error): void => {
      clearTimeout(timer);
      for (const event of events) emitter.off(event, probe);
      emitter.off("lost", onLost);
      if (error) reject(error);
      else resolve();
    };
    const probe = (): void => {
      if (check()) done();
    };
    const onLost = (error: Error): void => done(new Error(`${what}: lost (${error.message})`));
    const timer = setTimeout(() => done(new Error(`gave up waiting for ${what}`)), limitMs);
    for (const event of events) emitter.on(event, probe);
    emitter.on("lost", onLost);
    probe();
  });
}

/** Resolves with the next `event` of `emitter` whose arguments satisfy `accept`. */
function nextOf<A extends unknown[]>(emitter: EventEmitter, event: string, accept: (...args: A) => boolean = () => true, limitMs = LIMIT_MS): Promise<A> {
  return new Promise((resolve, reject) => {
    const listener = (...args: unknown[]): void => {
      if (!accept(...(args as A))) return;
      clearTimeout(timer);
      emitter.off(event, listener);
      resolve(args as A);
    };
    const timer = setTimeout(() => {
      emitter.off(event, listener);
      reject(new Error(`gave up waiting for ${event}`));
    }, limitMs);
    emitter.on(event, listener);
  });
}

/** Resolves once `path`'s children satisfy `accept` (a child watch re-armed until they do). */
async function untilChildren(client: Client, path: string, accept: (children: string[]) => boolean): Promise<string[]> {
  const deadline = Date.now() + LIMIT_MS;
  for (;;) {
    let fired!: () => void;
    const changed = new Promise<void>((resolve) => (fired = resolve));
    const children = await client.getChildren(path, { watch: () => fired() });
    if (accept(children)) return children;
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`gave up waiting on the children of ${path}: ${children.join(",")}`);
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise(
      (_, reject) => (timer = setTimeout(() => reject(new Error(`gave up waiting on the children of ${path}: ${children.join(",")}`)), left)),
    );
    await Promise.race([changed, limit]);
    clearTimeout(timer);
  }
}

/** `promise`, or a rejection after LIMIT_MS: no raw SDK call in these tests may wait forever. */
async function bounded<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`gave up waiting for ${what}`)), LIMIT_MS)));
  try {
    return await Promise.race([promise, limit]);
  } finally {
    clearTimeout(timer);
  }
}

/** A fresh read of a subtree, after a sync: path → { data, stat }. */
async function readSubtree(client: Client, root: string): Promise<Map<string, CachedNode>> {
  await client.sync(root);
  const out = new Map<string, CachedNode>();
  const walk = async (path: string): Promise<void> => {
    let node: CachedNode;
    let children: string[];
    try {
      node = await client.getData(path);
      children = await client.getChildren(path);
    } catch (error) {
      if (isCode(error, "NONODE")) return;
      throw error;
    }
    out.set(path, node);
    await Promise.all(children.map((child) => walk(`${path}/${child}`)));
  };
  await walk(root);
  return out;
}

/** What a mirror must agree on with a fresh read (the child counters are compared separately). */
const describeNode = (node: CachedNode): string => `${text(node.data)}|v${node.stat.version}|c${node.stat.czxid}|m${node.stat.mzxid}`;
const describeChildren = (node: CachedNode): string => `n${node.stat.numChildren}|cv${node.stat.cversion}|p${node.stat.pzxid}`;

function describeTree(nodes: Map<string, CachedNode>, describe: (node: CachedNode) => string = describeNode): string[] {
  return [...nodes].map(([path, node]) => `${path}=${describe(node)}`).sort();
}

/** A small seeded PRNG (mulberry32), so that a failing random schedule can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every path the random writers may touch under `root`: three levels of short names. */
function candidatePaths(root: string): string[] {
  const paths: string[] = [];
  for (const a of ["a", "b", "c"]) {
    paths.push(`${root}/${a}`);
    for (const b of ["x", "y", "z"]) {
      paths.push(`${root}/${a}/${b}`);
      for (const c of ["1", "2"]) paths.push(`${root}/${a}/${b}/${c}`);
    }
  }
  return paths;
}

/**
 * Three sessions make `total` successful random changes (create, setData, delete) under `root`,
 * concurrently; `onChange(count)` after each. Failures a concurrent writer causes (NODEEXISTS,
 * NONODE, NOTEMPTY) are expected and skipped.
 */
async function randomChanges(writers: Client[], root: string, total: number, seed: number, onChange: (count: number) => void = () => undefined): Promise<void> {
  const random = prng(seed);
  const paths = candidatePaths(root);
  let made = 0;
  let attempts = 0;
  await Promise.all(
    writers.map(async (client, w) => {
      while (made < total) {
        assert.ok(++attempts < total * 50, `seed ${seed}: too many failed attempts`);
        const path = paths[Math.floor(random() * paths.length)]!;
        const roll = random();
        try {
          const change: Promise<unknown> =
            roll < 0.4 ? client.create(path, `w${w}-${attempts}`) : roll < 0.8 ? client.setData(path, `w${w}-${attempts}`) : client.delete(path);
          await bounded(change, `writer ${w}: change of ${path}`);
        } catch (error) {
          if (isCode(error, "NODEEXISTS") || isCode(error, "NONODE") || isCode(error, "NOTEMPTY")) continue;
          if (isCode(error, "CONNECTIONLOSS")) {
            // Whether it happened is unknown: either way the mirror must match the tree. Wait to reconnect.
            await bounded(
              new Promise<void>((resolve) => {
                const listener = (state: string): void => {
                  if (state !== "reconnected") return;
                  client.off("state", listener);
                  resolve();
                };
                client.on("state", listener);
                if (client.connected) {
                  client.off("state", listener);
                  resolve();
                }
              }),
              `writer ${w}: reconnect`,
            );
            continue;
          }
          throw error;
        }
        made += 1;
        onChange(made);
      }
    }),
  );
}

/** Records a TreeCache's events into a shadow map, failing on any event inconsistent with it. */
function shadowOf(cache: TreeCache): { shadow: Map<string, CachedNode>; faults: string[] } {
  const shadow = new Map<string, CachedNode>();
  const faults: string[] = [];
  cache.on("added", (path, node) => {
    if (shadow.has(path)) faults.push(`added ${path} twice`);
    shadow.set(path, node);
  });
  cache.on("updated", (path, node, previous) => {
    const before = shadow.get(path);
    if (before === undefined) faults.push(`updated ${path} before added`);
    else if (before.stat.mzxid !== previous.stat.mzxid) faults.push(`updated ${path}: previous is not what was reported`);
    else if (node.stat.czxid === before.stat.czxid && node.stat.mzxid <= before.stat.mzxid) faults.push(`updated ${path} went back`);
    shadow.set(path, node);
  });
  cache.on("removed", (path) => {
    if (!shadow.delete(path)) faults.push(`removed ${path} that was not there`);
    for (const key of shadow.keys()) if (key.startsWith(`${path}/`)) faults.push(`removed ${path} before its child ${key}`);
  });
  return { shadow, faults };
}

describe("discovery recipes on a live three-voter cluster", () => {
  let cluster: RecipeCluster;

  before(async () => {
    cluster = await RecipeCluster.start();
  });

  after(async () => {
    await cluster?.stop();
  });

  /** On a failed failover test: each server's role and last log lines, to tell a recipe bug from a server one. */
  function printServerLogs(): void {
    for (const [id, server] of cluster.cluster.servers) {
      const lines = server.stderr.split("\n").filter((line) => line.length > 0 && !line.includes("client stream rejected"));
      console.error(`--- server ${id} (${server.connectString}, ${server.running ? "running" : "down"})\n${lines.slice(-20).join("\n")}`);
    }
  }

  /**
   * Restarts every server that is down — the killed leader, and any server that died on its own
   * (reported: a crash is a failure of the test that caused it, not of the next one) — then waits
   * for an agreed leader.
   */
  async function restartAndSettle(killed?: number): Promise<void> {
    const down = [...cluster.cluster.servers].filter(([, server]) => !server.running).map(([id]) => id);
    const crashed = down.filter((id) => id !== killed);
    for (const id of down) await cluster.restart(id);
    await cluster.leader();
    await everyServerCaughtUp();
    assert.deepEqual(crashed, [], "no server died on its own");
  }

  /**
   * Waits until every server has applied a fresh write (a sync through each one), so that a
   * restarted server is not still catching up when the next test resumes a session there.
   */
  async function everyServerCaughtUp(): Promise<void> {
    const writer = await cluster.client();
    const marker = await bounded(writer.create("/discovery-caught-up-", "", { mode: "persistent-sequential" }), "a marker write");
    for (const server of cluster.cluster.servers.values()) {
      const direct = await Client.connect(server.connectString, { sessionTimeoutMs: 2_000, connectTimeoutMs: LIMIT_MS });
      try {
        await bounded(direct.sync(marker), `a sync through ${server.connectString}`);
        assert.ok(await bounded(direct.exists(marker), `a read on ${server.connectString}`), `${server.connectString} has caught up`);
      } finally {
        await direct.close();
      }
    }
    await bounded(writer.delete(marker), "the marker's delete");
    await writer.close();
  }

  /**
   * Runs `work`, which calls `kill()` at its midpoint: the leader is then killed (-9) while the work
   * goes on. Whatever happens, the cluster is brought back whole afterwards.
   */
  async function withLeaderKilled<T>(work: (kill: () => void) => Promise<T>): Promise<T> {
    let fire!: () => void;
    const half = new Promise<void>((resolve) => (fire = resolve));
    const killed = half.then(() => cluster.killLeader());
    let result: T;
    try {
      result = await work(fire);
    } catch (error) {
      printServerLogs();
      throw error;
    } finally {
      fire();
      await restartAndSettle(await killed);
    }
    return result;
  }

  // -------------------------------------------------------------------------------------------
  describe("configuration", () => {
    /**
     * Two publishers make `count` successful compare-and-set publishes between them (re-reading on
     * BADVERSION); returns every success with the Stat it was answered with.
     */
    async function publishBurst(publishers: Client[], path: string, count: number, onSuccess: (n: number) => void = () => undefined) {
      const successes: { data: string; stat: Stat }[] = [];
      let conflicts = 0;
      await Promise.all(
        publishers.map(async (client, p) => {
          while (successes.length < count) {
            // A plain read is enough for compare-and-set: a stale version only costs a BADVERSION.
            const current = await bounded(readVersion(client, path), "a read of the config");
            const data = `publisher${p}-${successes.length}-${conflicts}`;
            try {
              const stat = await ConfigPublisher.publish(client, path, data, { expectedVersion: current, timeoutMs: LIMIT_MS });
              successes.push({ data, stat });
              onSuccess(successes.length);
            } catch (error) {
              if (!isCode(error, "BADVERSION")) throw error;
              conflicts += 1;
            }
          }
        }),
      );
      return successes;
    }

    /** The config node's version, waiting out a lost connection. */
    async function readVersion(client: Client, path: string): Promise<number> {
      for (;;) {
        try {
          return (await client.getData(path)).stat.version;
        } catch (error) {
          if (!isCode(error, "CONNECTIONLOSS")) throw error;
          if (!client.connected) await nextOf(client, "state", (state: string) => state === "reconnected" || state === "connected");
        }
      }
    }

    async function subscribers(path: string, count: number) {
      return Promise.all(
        Array.from({ length: count }, async () => {
          const subscriber = new ConfigSubscriber(await cluster.client(), path);
          const seen: number[] = [];
          subscriber.on("changed", (value: ConfigValue | null) => seen.push(value === null ? -1 : value.version));
          await subscriber.start({ timeoutMs: LIMIT_MS });
          return { subscriber, seen };
        }),
      );
    }

    async function assertConverged(
      reader: Client,
      path: string,
      subs: { subscriber: ConfigSubscriber; seen: number[] }[],
      successes: { data: string; stat: Stat }[],
    ) {
      const final = await ConfigPublisher.read(reader, path);
      assert.ok(final !== null);
      const last = successes.reduce((a, b) => (b.stat.version > a.stat.version ? b : a));
      assert.equal(final.version, last.stat.version, "the final version is the last publish anyone was told succeeded");
      assert.equal(text(final.data), last.data, "and holds its data");
      for (const [i, { subscriber, seen }] of subs.entries()) {
        await until(subscriber, ["changed"], () => subscriber.current?.version === final.version, `subscriber ${i} at version ${final.version}`);
        assert.equal(text(subscriber.current!.data), text(final.data), `subscriber ${i} holds the final data`);
        assert.deepEqual(
          seen,
          [...seen].sort((a, b) => a - b),
          `subscriber ${i} saw versions in increasing order`,
        );
        assert.equal(new Set(seen).size, seen.length, `subscriber ${i} saw no version twice`);
      }
    }

    test("3 subscribers converge to the final version after 50 compare-and-set publishes from 2 publishers", async () => {
      const path = "/config/burst";
      const publishers = [await cluster.client(), await cluster.client()];
      let disconnections = 0;
      for (const publisher of publishers) publisher.on("state", (state) => (disconnections += state === "disconnected" ? 1 : 0));
      await ConfigPublisher.publish(publishers[0]!, path, "initial");
      const subs = await subscribers(path, 3);
      for (const { subscriber } of subs) assert.equal(text(subscriber.current!.data), "initial");
      const initial = (await ConfigPublisher.read(publishers[0]!, path))!.version;
      const successes = await publishBurst(publishers, path, 50);
      // Both publishers may be in flight when the 50th lands: 50 or 51 successes.
      assert.ok(successes.length >= 50 && successes.length <= 51, `${successes.length} successes`);
      const versions = successes.map((s) => s.stat.version).sort((a, b) => a - b);
      assert.equal(new Set(versions).size, successes.length, "no two successes claim the same version");
      assert.ok(versions[0]! > initial);
      // With no answer lost, every write is a reported success: the versions are exactly the next ones.
      if (disconnections === 0)
        assert.deepEqual(
          versions,
          Array.from({ length: successes.length }, (_, i) => initial + i + 1),
          "each success made exactly one version",
        );
      await assertConverged(publishers[0]!, path, subs, successes);
      for (const { subscriber } of subs) subscriber.close();
    });

    test("subscribers still converge when the leader is killed in the middle of the burst", async () => {
      const path = "/config/failover";
      const publishers = [await cluster.client(), await cluster.client()];
      await ConfigPublisher.publish(publishers[0]!, path, "initial");
      const subs = await subscribers(path, 3);
      const successes = await withLeaderKilled((kill) => publishBurst(publishers, path, 50, (n) => n === 20 && kill()));
      await assertConverged(publishers[0]!, path, subs, successes);
      for (const { subscriber } of subs) {
        assert.equal(subscriber.running, true, "no subscriber lost its session");
        subscriber.close();
      }
    });

    test("a subscriber whose session expires emits lost and stops; a new one on a new session sees the latest", async () => {
      const path = "/config/expiry";
      const publisher = await cluster.client();
      await ConfigPublisher.publish(publisher, path, "one");
      const doomedClient = await cluster.client();
      const doomed = new ConfigSubscriber(doomedClient, path);
      assert.equal(text((await doomed.start())!.data), "one");
      const lost = nextOf<[ZkError]>(doomed, "lost");
      await cluster.expire(doomedClient);
      const [error] = await lost;
      assert.equal(error.code, "SESSIONEXPIRED");
      assert.equal(doomed.current, null, "a lost subscriber claims no configuration");
      await ConfigPublisher.publish(publisher, path, "two");
      const fresh = new ConfigSubscriber(await cluster.client(), path);
      assert.equal(text((await fresh.start())!.data), "two");
      fresh.close();
    });

    test("a compare-and-set publish on a stale version fails with BADVERSION, on a missing node with NONODE", async () => {
      const client = await cluster.client();
      const first = await ConfigPublisher.publish(client, "/config/cas/a", "v1");
      await ConfigPublisher.publish(client, "/config/cas/a", "v2", { expectedVersion: first.version });
      await assert.rejects(ConfigPublisher.publish(client, "/config/cas/a", "v3", { expectedVersion: first.version }), (e) => isCode(e, "BADVERSION"));
      await assert.rejects(ConfigPublisher.publish(client, "/config/cas/missing", "v1", { expectedVersion: 0 }), (e) => isCode(e, "NONODE"));
      assert.equal(text((await ConfigPublisher.read(client, "/config/cas/a"))!.data), "v2");
    });
  });

  // -------------------------------------------------------------------------------------------
  describe("naming service", () => {
    async function drawIds(clients: Client[], path: string, perSession: number, onId: (n: number) => void = () => undefined): Promise<number[][]> {
      let drawn = 0;
      return Promise.all(
        clients.map(async (client) => {
          const ids: number[] = [];
          for (let i = 0; i < perSession; i++) {
            ids.push(await nextId(client, path, { timeoutMs: LIMIT_MS }));
            onId(++drawn);
          }
          return ids;
        }),
      );
    }

    function assertUniqueAndIncreasing(perSession: number[][], total: number): void {
      const all = perSession.flat();
      assert.equal(all.length, total);
      assert.equal(new Set(all).size, total, "no id was handed out twice");
      for (const [s, ids] of perSession.entries()) {
        for (let i = 1; i < ids.length; i++) assert.ok(ids[i]! > ids[i - 1]!, `session ${s}: ids increase (${ids[i - 1]} then ${ids[i]})`);
      }
    }

    test("5 sessions × 40 nextId give 200 distinct ids, increasing per session, and leave no node behind", async () => {
      const clients = await Promise.all(Array.from({ length: 5 }, () => cluster.client()));
      const perSession = await drawIds(clients, "/naming/ids", 40);
      assertUniqueAndIncreasing(perSession, 200);
      assert.deepEqual(await syncedChildren(clients[0]!, "/naming/ids"), []);
    });

    test("no id is duplicated when the leader is killed mid-way", async () => {
      const clients = await Promise.all(Array.from({ length: 5 }, () => cluster.client()));
      const perSession = await withLeaderKilled((kill) => drawIds(clients, "/naming/failover-ids", 40, (n) => n === 80 && kill()));
      assertUniqueAndIncreasing(perSession, 200);
      await untilChildren(clients[0]!, "/naming/failover-ids", (children) => children.length === 0);
    });

    test("a nextId abandoned mid-create removes the node it made", async () => {
      const client = await cluster.client();
      await nextId(client, "/naming/abandoned");
      const controller = new AbortController();
      const drawing = nextId(client, "/naming/abandoned", { signal: controller.signal });
      controller.abort();
      await assert.rejects(drawing, (e) => isCode(e, "OPERATIONTIMEOUT"));
      await untilChildren(client, "/naming/abandoned", (children) => children.length === 0);
    });

    test("names resolve from every session; an ephemeral binding vanishes when its session expires", async () => {
      const [owner, other, reader] = [await cluster.client(), await cluster.client(), await cluster.client()];
      const ownerNames = new NamingService(owner, "/naming/registry");
      const otherNames = new NamingService(other, "/naming/registry");
      const readerNames = new NamingService(reader, "/naming/registry");

      await ownerNames.register("db", "10.0.0.1:5432");
      assert.equal(await readerNames.resolve("db"), "10.0.0.1:5432");
      await otherNames.register("db", "10.0.0.2:5432");
      assert.equal(await readerNames.resolve("db"), "10.0.0.2:5432", "a persistent name is rebound");
      await readerNames.unregister("db");
      assert.equal(await readerNames.resolve("db"), null);

      await ownerNames.register("leader", "10.0.0.7:80", { ephemeral: true });
      await ownerNames.register("leader", "10.0.0.8:80", { ephemeral: true });
      await assert.rejects(otherNames.register("leader", "10.0.0.9:80", { ephemeral: true }), (e) => isCode(e, "NODEEXISTS"));
      assert.equal(await readerNames.resolve("leader"), "10.0.0.8:80");
      await cluster.expire(owner);
      assert.equal(await readerNames.resolve("leader"), null, "the binding died with its session");
      await otherNames.register("leader", "10.0.0.9:80", { ephemeral: true });
      assert.equal(await readerNames.resolve("leader"), "10.0.0.9:80");
      assert.equal(await readerNames.resolve("nobody"), null);
    });
  });

  // -------------------------------------------------------------------------------------------
  describe("service discovery", () => {
    const ids = (instances: ServiceInstance[]): string[] => instances.map((i) => i.id).sort();

    async function caches(path: string, service: string, count: number): Promise<ServiceCache[]> {
      return Promise.all(
        Array.from({ length: count }, async () => {
          const cache = new ServiceDiscovery(await cluster.client(), path).cache(service);
          await cache.start({ timeoutMs: LIMIT_MS });
          return cache;
        }),
      );
    }

    async function allSee(all: ServiceCache[], expected: string[], what: string): Promise<void> {
      await Promise.all(all.map((cache, i) => until(cache, ["changed"], () => ids(cache.instances()).join() === expected.join(), `cache ${i}: ${what}`)));
    }

    test("registered instances appear in every cache and leave it on unregister", async () => {
      const path = "/services";
      const [first, second] = [new ServiceDiscovery(await cluster.client(), path), new ServiceDiscovery(await cluster.client(), path)];
      await first.register("api", { id: "api-1", address: "10.0.0.1", port: 8080 });
      const all = await caches(path, "api", 3);
      for (const cache of all) assert.deepEqual(ids(cache.instances()), ["api-1"]);
      await first.register("api", { id: "api-2", address: "10.0.0.2", port: 8080, payload: { zone: "b" } });
      await second.register("api", { id: "api-3", address: "10.0.0.3", port: 8080 });
      await allSee(all, ["api-1", "api-2", "api-3"], "three instances");
      assert.deepEqual(all[0]!.instances().find((i) => i.id === "api-2")?.payload, { zone: "b" });
      assert.deepEqual(ids(await second.instances("api")), ["api-1", "api-2", "api-3"]);
      await assert.rejects(
        second.register("api", { id: "api-1", address: "10.9.9.9", port: 1 }),
        (e) => isCode(e, "NODEEXISTS"),
        "another session's id is refused",
      );
      await first.unregister("api", "api-2");
      await allSee(all, ["api-1", "api-3"], "api-2 gone");
      for (const cache of all) cache.close();
    });

    test("an instance whose session expires disappears from every cache; its registrar reports lost", async () => {
      const path = "/services";
      const doomedClient = await cluster.client();
      const doomed = new ServiceDiscovery(doomedClient, path);
      const survivor = new ServiceDiscovery(await cluster.client(), path);
      await doomed.register("worker", { id: "w-doomed", address: "10.0.1.1", port: 9000 });
      await survivor.register("worker", { id: "w-survivor", address: "10.0.1.2", port: 9000 });
      const all = await caches(path, "worker", 3);
      await allSee(all, ["w-doomed", "w-survivor"], "both instances");
      const lost = nextOf<[ZkError, { service: string; id: string }[]]>(doomed, "lost");
      await cluster.expire(doomedClient);
      const [error, registrations] = await lost;
      assert.equal(error.code, "SESSIONEXPIRED");
      assert.deepEqual(registrations, [{ service: "worker", id: "w-doomed" }]);
      await allSee(all, ["w-survivor"], "the expired instance gone");
      assert.deepEqual(ids(await survivor.instances("worker")), ["w-survivor"]);
      for (const cache of all) cache.close();
    });

    test("a registration abandoned mid-create leaves no instance behind", async () => {
      const client = await cluster.client();
      const discovery = new ServiceDiscovery(client, "/services");
      await discovery.register("abandoned", { id: "keeper", address: "10.0.4.1", port: 1 });
      const controller = new AbortController();
      const registering = discovery.register("abandoned", { id: "quitter", address: "10.0.4.2", port: 1 }, { signal: controller.signal });
      controller.abort();
      await assert.rejects(registering, (e) => isCode(e, "OPERATIONTIMEOUT"));
      assert.deepEqual(await untilChildren(client, "/services/abandoned", (children) => !children.includes("quitter")), ["keeper"]);
    });

    test("caches follow registrations made while the leader is killed", async () => {
      const path = "/services";
      const registrars = await Promise.all(Array.from({ length: 3 }, async () => new ServiceDiscovery(await cluster.client(), path)));
      const all = await caches(path, "failover", 3);
      await withLeaderKilled((kill) =>
        Promise.all(
          registrars.map(async (registrar, r) => {
            for (let i = 0; i < 6; i++) {
              await registrar.register("failover", { id: `r${r}-${i}`, address: `10.0.2.${r}`, port: 7000 + i }, { timeoutMs: LIMIT_MS });
              if (r === 0 && i === 2) kill();
              if (i % 2 === 1) await registrar.unregister("failover", `r${r}-${i - 1}`, { timeoutMs: LIMIT_MS });
            }
          }),
        ),
      );
      const expected = ids(await registrars[0]!.instances("failover"));
      assert.deepEqual(expected, ["r0-1", "r0-3", "r0-5", "r1-1", "r1-3", "r1-5", "r2-1", "r2-3", "r2-5"]);
      await allSee(all, expected, "the registrations after failover");
      for (const cache of all) cache.close();
    });

    test("balancers over a live cache: round-robin visits every instance, least-loaded follows updateLoad", async () => {
      const path = "/services";
      const registrars = await Promise.all(Array.from({ length: 3 }, async () => new ServiceDiscovery(await cluster.client(), path)));
      for (const [r, registrar] of registrars.entries())
        await registrar.register("balanced", { id: `b${r}`, address: `10.0.3.${r}`, port: 80, payload: { load: 10 + r } });
      const [cache] = await caches(path, "balanced", 1);
      await until(cache!, ["changed"], () => cache!.instances().length === 3, "three instances");
      const roundRobin = new LoadBalancer(cache!, { strategy: "round-robin" });
      assert.deepEqual(
        Array.from({ length: 6 }, () => roundRobin.next()!.id),
        ["b0", "b1", "b2", "b0", "b1", "b2"],
      );
      const leastLoaded = new LoadBalancer(cache!, { strategy: "least-loaded" });
      assert.equal(leastLoaded.next()!.id, "b0");
      await registrars[0]!.updateLoad("balanced", "b0", 50);
      await until(cache!, ["changed"], () => leastLoaded.next()?.id === "b1", "b1 least loaded");
      await registrars[2]!.updateLoad("balanced", "b2", 1);
      await until(cache!, ["changed"], () => leastLoaded.next()?.id === "b2", "b2 least loaded");
      const random = new LoadBalancer(cache!, { strategy: "random", random: () => 0.99 });
      assert.equal(random.next()!.id, "b2");
      cache!.close();
      assert.equal(roundRobin.next(), null, "a closed cache hands out nothing");
    });
  });

  // -------------------------------------------------------------------------------------------
  describe("heartbeat", () => {
    function record(monitor: HeartbeatMonitor): { events: string[]; progress: Map<string, number[]> } {
      const events: string[] = [];
      const progress = new Map<string, number[]>();
      monitor.on("alive", (w: WorkerStatus) => {
        events.push(`alive ${w.id}`);
        progress.set(w.id, [w.progress.percent]);
      });
      monitor.on("progress", (w: WorkerStatus) => progress.get(w.id)?.push(w.progress.percent));
      monitor.on("dead", (id: string) => events.push(`dead ${id}`));
      return { events, progress };
    }

    test("a monitor sees a worker come alive, its progress in order, and its clean stop", async () => {
      const monitor = new HeartbeatMonitor(await cluster.client(), "/heartbeat/ordered");
      const { events, progress } = record(monitor);
      await monitor.start();
      const worker = new Heartbeat(await cluster.client(), "/heartbeat/ordered", "worker-1");
      await worker.start();
      for (let percent = 5; percent <= 100; percent += 5) await worker.report({ percent, message: `step ${percent}` });
      await until(monitor, ["progress"], () => monitor.workers()[0]?.progress.percent === 100, "100 %");
      assert.equal(monitor.workers()[0]!.progress.message, "step 100");
      const seen = progress.get("worker-1")!;
      assert.deepEqual(
        seen,
        [...seen].sort((a, b) => a - b),
        "progress in order",
      );
      assert.equal(new Set(seen).size, seen.length, "no report twice");
      assert.equal(seen.at(-1), 100);
      const dead = nextOf<[string, WorkerStatus]>(monitor, "dead");
      await worker.stop();
      const [id, last] = await dead;
      assert.equal(id, "worker-1");
      assert.deepEqual(last.progress, { percent: 100, message: "step 100" }, "dead carries the last progress");
      assert.deepEqual(events, ["alive worker-1", "dead worker-1"]);
      monitor.close();
    });

    test("a worker whose session expires is reported dead; the other worker stays alive", async () => {
      const path = "/heartbeat/expiry";
      const monitors = await Promise.all(Array.from({ length: 2 }, async () => new HeartbeatMonitor(await cluster.client(), path)));
      const recorded = monitors.map(record);
      for (const monitor of monitors) await monitor.start();
      const doomedClient = await cluster.client();
      const doomed = new Heartbeat(doomedClient, path, "doomed");
      const survivor = new Heartbeat(await cluster.client(), path, "survivor");
      await doomed.start({ progress: { percent: 10, message: "started" } });
      await survivor.start();
      await Promise.all(monitors.map((m) => until(m, ["alive"], () => m.workers().length === 2, "two workers")));
      const deaths = monitors.map((m) => nextOf<[string, WorkerStatus]>(m, "dead"));
      const lost = nextOf<[ZkError]>(doomed, "lost");
      await cluster.expire(doomedClient);
      assert.equal((await lost)[0].code, "SESSIONEXPIRED");
      for (const death of deaths) {
        const [id, last] = await death;
        assert.equal(id, "doomed");
        assert.deepEqual(last.progress, { percent: 10, message: "started" });
      }
      await assert.rejects(doomed.report({ percent: 20, message: "too late" }), (e) => isCode(e, "SESSIONEXPIRED"));
      await survivor.report({ percent: 50, message: "half" });
      for (const [i, m] of monitors.entries()) {
        await until(m, ["progress"], () => m.workers()[0]?.progress.percent === 50, `monitor ${i} sees the survivor at 50 %`);
        assert.deepEqual(
          m.workers().map((w) => w.id),
          ["survivor"],
        );
        assert.deepEqual(
          recorded[i]!.events.filter((e) => e.startsWith("dead")),
          ["dead doomed"],
        );
        m.close();
      }
      await survivor.stop();
    });

    test("a worker restarted under the same id waits for its previous incarnation's session to end", async () => {
      const path = "/heartbeat/incarnations";
      const oldClient = await cluster.client();
      const old = new Heartbeat(oldClient, path, "w");
      await old.start({ progress: { percent: 70, message: "old" } });
      const newClient = await cluster.client();
      await assert.rejects(new Heartbeat(newClient, path, "w").start({ timeoutMs: 300 }), (e) => isCode(e, "OPERATIONTIMEOUT"));
      const fresh = new Heartbeat(newClient, path, "w");
      const starting = fresh.start({ progress: { percent: 0, message: "new" }, timeoutMs: LIMIT_MS });
      await cluster.expire(oldClient);
      await starting;
      const stat = await newClient.exists(`${path}/w`);
      assert.equal(stat?.ephemeralOwner, newClient.sessionId, "the new incarnation holds the id");
      await fresh.stop();
    });

    test("reports keep flowing while the leader is killed; the monitor ends at the last report", async () => {
      const path = "/heartbeat/failover";
      const monitor = new HeartbeatMonitor(await cluster.client(), path);
      const { events, progress } = record(monitor);
      await monitor.start();
      const workerClient = await cluster.client();
      let workerExpired = false;
      workerClient.on("state", (state) => (workerExpired ||= state === "expired"));
      const worker = new Heartbeat(workerClient, path, "steady");
      await worker.start();
      await withLeaderKilled(async (kill) => {
        for (let percent = 2; percent <= 100; percent += 2) {
          await worker.report({ percent, message: `at ${percent}` }, { timeoutMs: LIMIT_MS });
          if (percent === 40) kill();
        }
      });
      await until(monitor, ["progress"], () => monitor.workers()[0]?.progress.percent === 100, "100 %");
      const seen = progress.get("steady")!;
      assert.deepEqual(
        seen,
        [...seen].sort((a, b) => a - b),
        "progress in order across the failover",
      );
      assert.equal(workerExpired, false, "the worker's session survived the failover");
      assert.deepEqual(events, ["alive steady"], "no false death");
      await worker.stop();
      monitor.close();
    });
  });

  // -------------------------------------------------------------------------------------------
  describe("node and tree caches", () => {
    async function mirrors(root: string, nodePath: string) {
      await (await cluster.client()).create(root, "root");
      const tree = new TreeCache(await cluster.client(), root);
      const { shadow, faults } = shadowOf(tree);
      const node = new NodeCache(await cluster.client(), nodePath);
      let nodeWentBack = false;
      let lastNode: CachedNode | null = null;
      node.on("changed", (current) => {
        if (current && lastNode && current.stat.czxid === lastNode.stat.czxid && current.stat.mzxid <= lastNode.stat.mzxid) nodeWentBack = true;
        lastNode = current;
      });
      const initialized = nextOf(tree, "initialized");
      await tree.start({ timeoutMs: LIMIT_MS });
      await initialized;
      await node.start({ timeoutMs: LIMIT_MS });
      return { tree, node, shadow, faults, nodeWentBack: () => nodeWentBack };
    }

    async function assertMirrorsMatch(reader: Client, root: string, nodePath: string, m: Awaited<ReturnType<typeof mirrors>>): Promise<void> {
      const expected = await bounded(readSubtree(reader, root), `a fresh read of ${root}`);
      const want = describeTree(expected);
      await until(
        m.tree,
        ["added", "updated", "removed"],
        () => describeTree(m.tree.snapshot()).join() === want.join(),
        "the tree cache equal to a fresh read",
      );
      assert.deepEqual(describeTree(m.tree.snapshot()), want);
      // Child counters change without a data event: a bounded poll until the children reads land.
      await waitFor(
        "child counters",
        () => (describeTree(m.tree.snapshot(), describeChildren).join() === describeTree(expected, describeChildren).join() ? true : undefined),
        LIMIT_MS,
      );
      assert.deepEqual(describeTree(m.shadow), want, "the events replay to the same tree");
      assert.deepEqual(m.faults, []);
      const expectedNode = expected.get(nodePath);
      const wantNode = expectedNode ? describeNode(expectedNode) : "null";
      await until(m.node, ["changed"], () => (m.node.current ? describeNode(m.node.current) : "null") === wantNode, "the node cache equal to a fresh read");
      assert.equal(m.nodeWentBack(), false, "the node cache never went back");
    }

    test("NodeCache and TreeCache equal a fresh read after 100 random concurrent changes from 3 sessions", async () => {
      const root = "/caches-random";
      const seed = 1234;
      const m = await mirrors(root, `${root}/a`);
      const writers = await Promise.all(Array.from({ length: 3 }, () => cluster.client()));
      await randomChanges(writers, root, 100, seed);
      await assertMirrorsMatch(writers[0]!, root, `${root}/a`, m);
      assert.ok(m.tree.size > 1, `seed ${seed}: the tree has grown`);
      m.tree.close();
      m.node.close();
    });

    test("NodeCache and TreeCache equal a fresh read after 100 random changes across a leader kill", async () => {
      const root = "/caches-failover";
      const seed = 98765;
      const m = await mirrors(root, `${root}/b`);
      const writers = await Promise.all(Array.from({ length: 3 }, () => cluster.client()));
      await withLeaderKilled((kill) => randomChanges(writers, root, 100, seed, (n) => n === 40 && kill()));
      await assertMirrorsMatch(writers[0]!, root, `${root}/b`, m);
      assert.equal(m.tree.running && m.node.running, true, "no session was lost");
      m.tree.close();
      m.node.close();
    });

    test("a TreeCache of a missing root sees it created and deleted with its subtree", async () => {
      const client = await cluster.client();
      const tree = new TreeCache(await cluster.client(), "/caches-late/root");
      const { shadow, faults } = shadowOf(tree);
      await tree.start();
      assert.equal(tree.size, 0);
      await client.create("/caches-late", "");
      await client.create("/caches-late/root", "r");
      await client.create("/caches-late/root/child", "c");
      await client.create("/caches-late/root/child/leaf", "l");
      await until(tree, ["added"], () => tree.size === 3, "three nodes");
      assert.equal(text(tree.get("/caches-late/root/child/leaf")!.data), "l");
      assert.deepEqual(tree.children("/caches-late/root"), ["child"]);
      const removed: string[] = [];
      tree.on("removed", (path) => removed.push(path));
      await client.delete("/caches-late/root/child/leaf");
      await client.delete("/caches-late/root/child");
      await client.delete("/caches-late/root");
      await until(tree, ["removed"], () => tree.size === 0, "all gone");
      assert.deepEqual(removed, ["/caches-late/root/child/leaf", "/caches-late/root/child", "/caches-late/root"]);
      await client.create("/caches-late/root", "again");
      await until(tree, ["added"], () => tree.size === 1, "the root is back");
      assert.equal(text(tree.get("/caches-late/root")!.data), "again");
      assert.deepEqual(faults, []);
      assert.equal(shadow.size, 1);
      tree.close();
    });

    test("on session expiry both caches emit lost, clear themselves and stop", async () => {
      const root = "/caches-expiry";
      const writer = await cluster.client();
      await writer.create(root, "r");
      await writer.create(`${root}/x`, "x");
      const client = await cluster.client();
      const tree = new TreeCache(client, root);
      const node = new NodeCache(client, `${root}/x`);
      await tree.start();
      await node.start();
      assert.equal(tree.size, 2);
      assert.equal(text(node.current!.data), "x");
      const lost = [nextOf<[ZkError]>(tree, "lost"), nextOf<[ZkError]>(node, "lost")];
      await cluster.expire(client);
      for (const [error] of await Promise.all(lost)) assert.equal(error.code, "SESSIONEXPIRED");
      assert.equal(tree.size, 0, "a lost tree cache holds nothing");
      assert.equal(node.current, null, "a lost node cache holds nothing");
      assert.equal(tree.running || node.running, false);
      await assert.rejects(new TreeCache(client, root).start(), (e) => isCode(e, "SESSIONEXPIRED"));
    });
  });
});
