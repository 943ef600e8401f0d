/**
 * A connection lost in the middle of a create, after the server applied it: the recipe must find
 * the node it already made instead of making a second one. A live cluster cannot lose a reply on
 * demand, so these run on an in-memory fake of the Client (only what the recipes call) whose next
 * matching write is applied and then answered with CONNECTIONLOSS, as a connection cut between
 * the server's commit and the client reading the reply would do.
 *
 * Which recipes go through createProtected (the protected-name retry): Lock (and every
 * SequentialLock, via createOwnedNode), LeaderElection.start (via createProtectedOrCleanUp) and
 * DoubleBarrier.enter. DistributedQueue.offer does not: it writes the element and an ephemeral
 * receipt in one multi and, after CONNECTIONLOSS, looks for the receipt (commitOnce), since an
 * element may be consumed before a producer could look for it by name.
 */
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { describe, test } from "node:test";
import type { Client } from "../../src/client/client.js";
import { ZkMultiError } from "../../src/client/ops.js";
import type { ClientState, CreateMode, Data, Op, OpResult, Stat, WatchedEvent, Watcher } from "../../src/client/types.js";
import { ZkError } from "../../src/common/errors.js";
import { createProtected, Deadline, protectedPrefixOf } from "../../src/recipes/common.js";
import { DoubleBarrier } from "../../src/recipes/double-barrier.js";
import { LeaderElection } from "../../src/recipes/leader-election.js";
import { Lock } from "../../src/recipes/lock.js";
import { DistributedQueue } from "../../src/recipes/queue.js";

interface FakeNode {
  data: Uint8Array;
  ephemeralOwner: bigint;
  czxid: bigint;
  mzxid: bigint;
  version: number;
  cversion: number;
  /** The next sequence number for a sequential child. */
  nextSequence: number;
}

type Kind = "create" | "multi";

const toBytes = (data: Data | undefined): Uint8Array => (typeof data === "string" ? new TextEncoder().encode(data) : (data ?? new Uint8Array()));
const parentOf = (path: string): string => path.slice(0, path.lastIndexOf("/")) || "/";
const isSequential = (mode: CreateMode): boolean => mode.includes("sequential");

/** Runs `body` at once, as an async method does: what it returns resolves, what it throws rejects. */
function asAsync<T>(body: () => T): Promise<T> {
  return new Promise((resolve) => resolve(body()));
}

/**
 * One session on a one-server in-memory tree. Writes are applied at once; watches fire on a later
 * turn, as a server's notifications arrive after its answers. `loseReplyOnce` makes the next write
 * of a kind that matches be applied and then fail with CONNECTIONLOSS, the session going
 * "disconnected" and, a turn later, "reconnected" (the session survives, as after a quick reconnect).
 */
class FakeClient extends EventEmitter {
  state: ClientState = "connected";
  readonly sessionId = 0x1234n;
  private zxid = 0n;
  private readonly nodes = new Map<string, FakeNode>([["/", this.fresh(new Uint8Array(), 0n)]]);
  private readonly dataWatches = new Map<string, Set<Watcher>>();
  private readonly childWatches = new Map<string, Set<Watcher>>();
  private readonly losses: { kind: Kind; matches: (path: string) => boolean }[] = [];
  /** Every write call made, for the record: kind and path (a multi's first op's path). */
  readonly writes: { kind: Kind | "delete"; path: string }[] = [];
  repliesLost = 0;

  get connected(): boolean {
    return this.state === "connected" || this.state === "reconnected";
  }

  loseReplyOnce(kind: Kind, matches: (path: string) => boolean): void {
    this.losses.push({ kind, matches });
  }

  /** The children of `path` now, straight from the tree (the test's view, not the recipe's). */
  childrenNow(path: string): string[] {
    const prefix = path === "/" ? "/" : `${path}/`;
    return [...this.nodes.keys()].filter((p) => p !== "/" && p.startsWith(prefix) && !p.slice(prefix.length).includes("/")).map((p) => p.slice(prefix.length));
  }

  dataNow(path: string): string | undefined {
    const node = this.nodes.get(path);
    return node === undefined ? undefined : new TextDecoder().decode(node.data);
  }

  // --- the Client surface the recipes use ---------------------------------------------------

  create(path: string, data?: Data, options: { mode?: CreateMode } = {}): Promise<string> {
    return asAsync(() => {
      this.requireConnected();
      this.writes.push({ kind: "create", path });
      const made = this.applyCreate(path, toBytes(data), options.mode ?? "persistent");
      this.flushEvents();
      this.maybeLoseReply("create", path);
      return made;
    });
  }

  delete(path: string, options: { version?: number } = {}): Promise<void> {
    return asAsync(() => {
      this.requireConnected();
      this.writes.push({ kind: "delete", path });
      this.applyDelete(path, options.version ?? -1);
      this.flushEvents();
    });
  }

  setData(path: string, data: Data, options: { version?: number } = {}): Promise<Stat> {
    return asAsync(() => {
      this.requireConnected();
      const node = this.applySetData(path, toBytes(data), options.version ?? -1);
      this.flushEvents();
      return this.statOf(path, node);
    });
  }

  multi(ops: readonly Op[]): Promise<OpResult[]> {
    return asAsync(() => {
      this.requireConnected();
      this.writes.push({ kind: "multi", path: ops[0]?.path ?? "" });
      const before = new Map([...this.nodes].map(([p, n]) => [p, { ...n }]));
      const pending = this.pendingEvents.length;
      const results: OpResult[] = [];
      for (const [index, one] of ops.entries()) {
        try {
          if (one.type === "create") {
            const made = this.applyCreate(one.path, one.data, one.mode);
            results.push({ type: "create", path: made, stat: this.statOf(made, this.nodes.get(made)!) });
          } else if (one.type === "delete") {
            this.applyDelete(one.path, one.version);
            results.push({ type: "delete" });
          } else if (one.type === "setData") {
            const node = this.applySetData(one.path, one.data, one.version);
            results.push({ type: "setData", stat: this.statOf(one.path, node) });
          } else {
            const node = this.existing(one.path);
            if (one.version !== -1 && node.version !== one.version) throw new ZkError("BADVERSION", undefined, one.path);
            results.push({ type: "check" });
          }
        } catch (error) {
          // All or nothing: undo every op applied so far, and their watch events.
          this.nodes.clear();
          for (const [p, n] of before) this.nodes.set(p, n);
          this.pendingEvents.length = pending;
          const code = (error as ZkError).code;
          const errors: OpResult[] = ops.map((_, i) => ({ type: "error", err: 0, code: i < index ? "OK" : i === index ? code : "RUNTIMEINCONSISTENCY" }));
          throw new ZkMultiError(code, errors, index, one.path);
        }
      }
      this.flushEvents();
      this.maybeLoseReply("multi", ops[0]?.path ?? "");
      return results;
    });
  }

  sync(_path: string): Promise<void> {
    return asAsync(() => {
      this.requireConnected();
    });
  }

  exists(path: string, options: { watch?: Watcher } = {}): Promise<Stat | null> {
    return asAsync(() => {
      this.requireConnected();
      if (options.watch) this.watch(this.dataWatches, path, options.watch);
      const node = this.nodes.get(path);
      return node === undefined ? null : this.statOf(path, node);
    });
  }

  getData(path: string, options: { watch?: Watcher } = {}): Promise<{ data: Uint8Array; stat: Stat }> {
    return asAsync(() => {
      this.requireConnected();
      const node = this.existing(path);
      if (options.watch) this.watch(this.dataWatches, path, options.watch);
      return { data: node.data, stat: this.statOf(path, node) };
    });
  }

  getChildren(path: string, options: { watch?: Watcher } = {}): Promise<string[]> {
    return asAsync(() => {
      this.requireConnected();
      this.existing(path);
      if (options.watch) this.watch(this.childWatches, path, options.watch);
      return this.childrenNow(path);
    });
  }

  close(): Promise<void> {
    return asAsync(() => {
      this.state = "closed";
      this.emit("state", "closed");
    });
  }

  // --- the tree ------------------------------------------------------------------------------

  private readonly pendingEvents: (() => void)[] = [];

  private fresh(data: Uint8Array, owner: bigint): FakeNode {
    this.zxid += 1n;
    return { data, ephemeralOwner: owner, czxid: this.zxid, mzxid: this.zxid, version: 0, cversion: 0, nextSequence: 0 };
  }

  private existing(path: string): FakeNode {
    const node = this.nodes.get(path);
    if (node === undefined) throw new ZkError("NONODE", undefined, path);
    return node;
  }

  private applyCreate(path: string, data: Uint8Array, mode: CreateMode): string {
    const parentPath = parentOf(path);
    const parent = this.nodes.get(parentPath);
    if (parent === undefined) throw new ZkError("NONODE", undefined, path);
    if (parent.ephemeralOwner !== 0n) throw new ZkError("NOCHILDRENFOREPHEMERALS", undefined, path);
    const made = isSequential(mode) ? `${path}${String(parent.nextSequence++).padStart(10, "0")}` : path;
    if (this.nodes.has(made)) throw new ZkError("NODEEXISTS", undefined, made);
    this.nodes.set(made, this.fresh(data, mode.startsWith("ephemeral") ? this.sessionId : 0n));
    parent.cversion += 1;
    this.queueEvent(this.dataWatches, made, "NodeCreated");
    this.queueEvent(this.childWatches, parentPath, "NodeChildrenChanged");
    return made;
  }

  private applyDelete(path: string, version: number): void {
    const node = this.existing(path);
    if (version !== -1 && node.version !== version) throw new ZkError("BADVERSION", undefined, path);
    if (this.childrenNow(path).length > 0) throw new ZkError("NOTEMPTY", undefined, path);
    this.nodes.delete(path);
    this.nodes.get(parentOf(path))!.cversion += 1;
    this.queueEvent(this.dataWatches, path, "NodeDeleted");
    this.queueEvent(this.childWatches, path, "NodeDeleted");
    this.queueEvent(this.childWatches, parentOf(path), "NodeChildrenChanged");
  }

  private applySetData(path: string, data: Uint8Array, version: number): FakeNode {
    const node = this.existing(path);
    if (version !== -1 && node.version !== version) throw new ZkError("BADVERSION", undefined, path);
    this.zxid += 1n;
    node.data = data;
    node.mzxid = this.zxid;
    node.version += 1;
    this.queueEvent(this.dataWatches, path, "NodeDataChanged");
    return node;
  }

  private statOf(path: string, node: FakeNode): Stat {
    return {
      czxid: node.czxid,
      mzxid: node.mzxid,
      pzxid: node.czxid,
      ctime: 0,
      mtime: 0,
      version: node.version,
      cversion: node.cversion,
      aversion: 0,
      ephemeralOwner: node.ephemeralOwner,
      dataLength: node.data.length,
      numChildren: this.childrenNow(path).length,
    };
  }

  private watch(table: Map<string, Set<Watcher>>, path: string, watcher: Watcher): void {
    let set = table.get(path);
    if (set === undefined) table.set(path, (set = new Set()));
    set.add(watcher);
  }

  /** One-shot watches: taken off now, delivered on a later turn. */
  private queueEvent(table: Map<string, Set<Watcher>>, path: string, type: WatchedEvent["type"]): void {
    const watchers = table.get(path);
    if (watchers === undefined) return;
    table.delete(path);
    const event = { type, state: "SyncConnected", path } as unknown as WatchedEvent;
    this.pendingEvents.push(() => {
      for (const watcher of watchers) watcher(event);
    });
  }

  private flushEvents(): void {
    const events = this.pendingEvents.splice(0);
    if (events.length > 0) setImmediate(() => events.forEach((deliver) => deliver()));
  }

  private requireConnected(): void {
    if (this.state === "expired" || this.state === "closed") throw new ZkError("SESSIONEXPIRED");
    if (!this.connected) throw new ZkError("CONNECTIONLOSS");
  }

  /** Called after a write was applied: if it was to lose its reply, the connection drops now. */
  private maybeLoseReply(kind: Kind, path: string): void {
    const at = this.losses.findIndex((loss) => loss.kind === kind && loss.matches(path));
    if (at < 0) return;
    this.losses.splice(at, 1);
    this.repliesLost += 1;
    this.setState("disconnected");
    setImmediate(() => this.setState("reconnected"));
    throw new ZkError("CONNECTIONLOSS", `${kind} ${path}: connection lost before the reply`);
  }

  private setState(state: ClientState): void {
    this.state = state;
    this.emit("state", state);
  }
}

const asClient = (fake: FakeClient): Client => fake as unknown as Client;
const WAIT = { timeoutMs: 10_000 };

describe("a create applied by the server whose reply is lost (CONNECTIONLOSS)", () => {
  test("createProtected finds the node it made by its protected prefix and returns that path; no second node", async () => {
    const fake = new FakeClient();
    await fake.create("/p", "");
    fake.loseReplyOnce("create", (path) => path.startsWith("/p/"));
    const deadline = new Deadline("test", WAIT, asClient(fake));
    try {
      const path = await createProtected(asClient(fake), "/p", "x-", "data", "ephemeral-sequential", deadline);
      assert.equal(fake.repliesLost, 1, "the reply was lost");
      const children = fake.childrenNow("/p");
      assert.equal(children.length, 1, `exactly one node: ${children.join(", ")}`);
      assert.equal(path, `/p/${children[0]}`);
      assert.ok(protectedPrefixOf(children[0]!) !== undefined, "the node carries a protected prefix");
      assert.equal(fake.writes.filter((w) => w.kind === "create" && w.path.startsWith("/p/")).length, 1, "the create was not sent again");
    } finally {
      deadline.dispose();
    }
  });

  test("createProtected does the same for a plain (non-sequential) protected node", async () => {
    const fake = new FakeClient();
    await fake.create("/p", "");
    fake.loseReplyOnce("create", (path) => path.startsWith("/p/"));
    const deadline = new Deadline("test", WAIT, asClient(fake));
    try {
      const path = await createProtected(asClient(fake), "/p", "member", "", "ephemeral", deadline);
      assert.deepEqual(
        fake.childrenNow("/p").map((c) => `/p/${c}`),
        [path],
      );
    } finally {
      deadline.dispose();
    }
  });

  test("Lock.acquire holds by the one node made, and release leaves none", async () => {
    const fake = new FakeClient();
    fake.loseReplyOnce("create", (path) => path.startsWith("/lock/"));
    const lock = new Lock(asClient(fake), "/lock");
    await lock.acquire(WAIT);
    assert.equal(fake.repliesLost, 1);
    const children = fake.childrenNow("/lock");
    assert.equal(children.length, 1, `exactly one contender node: ${children.join(", ")}`);
    assert.equal(lock.node, `/lock/${children[0]}`);
    assert.equal(lock.isHeld, true);
    await lock.release();
    assert.deepEqual(fake.childrenNow("/lock"), []);
  });

  test("a second Lock behind the first is not blocked by a phantom node of its own", async () => {
    // With a duplicate node, the waiter would queue behind its own orphan and never be granted.
    const fake = new FakeClient();
    const first = new Lock(asClient(fake), "/lock2");
    await first.acquire(WAIT);
    fake.loseReplyOnce("create", (path) => path.startsWith("/lock2/"));
    const second = new Lock(asClient(fake), "/lock2");
    const acquiring = second.acquire(WAIT);
    await new Promise((resolve) => setImmediate(resolve));
    await first.release();
    await acquiring;
    assert.equal(fake.repliesLost, 1);
    assert.deepEqual(
      fake.childrenNow("/lock2").map((c) => `/lock2/${c}`),
      [second.node],
    );
    await second.release();
    assert.deepEqual(fake.childrenNow("/lock2"), []);
  });

  test("LeaderElection.start: one candidate node, and this candidate leads by it", async () => {
    const fake = new FakeClient();
    fake.loseReplyOnce("create", (path) => path.startsWith("/election/"));
    const election = new LeaderElection(asClient(fake), "/election", { id: "alice" });
    await election.start(WAIT);
    await election.awaitLeadership(WAIT);
    assert.equal(fake.repliesLost, 1);
    const children = fake.childrenNow("/election");
    assert.equal(children.length, 1, `exactly one candidate node: ${children.join(", ")}`);
    assert.equal(election.candidatePath, `/election/${children[0]}`);
    assert.equal(fake.dataNow(election.candidatePath), "alice");
    assert.equal(election.isLeader, true);
    await election.resign(WAIT);
    assert.deepEqual(fake.childrenNow("/election"), []);
  });

  test("DoubleBarrier.enter: one member node, so a one-participant barrier is entered and left", async () => {
    const fake = new FakeClient();
    await fake.create("/barrier", "");
    fake.loseReplyOnce("create", (path) => path.startsWith("/barrier/") && path.includes("member-"));
    const barrier = new DoubleBarrier(asClient(fake), "/barrier", 1);
    await barrier.enter(WAIT);
    assert.equal(fake.repliesLost, 1);
    const members = fake.childrenNow("/barrier").filter((c) => c !== "ready");
    assert.equal(members.length, 1, `exactly one member node: ${members.join(", ")}`);
    assert.equal(barrier.ourPath, `/barrier/${members[0]}`);
    await barrier.leave(WAIT);
    assert.deepEqual(fake.childrenNow("/barrier"), []);
  });

  test("DistributedQueue.offer (a multi with a receipt, not createProtected): exactly one element, taken once", async () => {
    const fake = new FakeClient();
    const queue = new DistributedQueue(asClient(fake), "/queue");
    await queue.offer("job-1", WAIT);
    fake.loseReplyOnce("multi", (path) => path.startsWith("/queue/"));
    await queue.offer("job-2", WAIT);
    assert.equal(fake.repliesLost, 1);
    const elements = fake.childrenNow("/queue").filter((c) => c !== "receipts");
    assert.equal(elements.length, 2, `one element per offer: ${elements.join(", ")}`);
    assert.deepEqual(fake.childrenNow("/queue/receipts"), [], "the receipt is removed");
    assert.equal(Buffer.from((await queue.poll())!).toString(), "job-1");
    assert.equal(Buffer.from((await queue.poll())!).toString(), "job-2");
    assert.equal(await queue.poll(), null);
  });
});
