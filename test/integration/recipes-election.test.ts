/**
 * LeaderElection, Master/Worker, GroupMembership and TwoPhaseCommit on a live three-voter cluster,
 * with independent sessions competing: exactly one leader at a time, herd-free hand-over, every
 * task recorded done exactly once across failovers, membership lists that converge, and one
 * identical 2PC outcome for everyone — also when a session is forced to expire mid-operation and
 * when the leader server is killed.
 */
import assert from "node:assert/strict";
import type { EventEmitter } from "node:events";
import { after, afterEach, before, describe, test } from "node:test";
import { type Client, ZkError } from "../../src/index.js";
import { Deadline, retryOnConnectionLoss } from "../../src/recipes/common.js";
import { GroupMembership, type Member } from "../../src/recipes/group-membership.js";
import { candidatesInOrder, LeaderElection } from "../../src/recipes/leader-election.js";
import { DONE, Master, MasterWorker, Worker, type TaskContext } from "../../src/recipes/master-worker.js";
import { JOINED, TwoPhaseCommit, type TwoPhaseOutcome } from "../../src/recipes/two-phase-commit.js";
import { OverlapDetector, RecipeCluster } from "../helpers/recipe-cluster.js";

const TEST_TIMEOUT_MS = 180_000;
/** Upper bound on any single wait for a cluster event (never a timing assertion). */
const EVENT_WAIT_MS = 60_000;
const WAIT = { timeoutMs: EVENT_WAIT_MS };

const text = (bytes: Uint8Array): string => Buffer.from(bytes).toString("utf8");
const isCode = (error: unknown, code: string): boolean => error instanceof ZkError && error.code === code;

let rc: RecipeCluster;
let pathCount = 0;
const freshPath = (name: string): string => `/recipes-election/${name}-${++pathCount}`;

before(async () => {
  rc = await RecipeCluster.start();
});

after(async () => {
  await rc?.stop();
});

/**
 * A server that died by itself (tests restart the ones they kill) is a server bug, not a recipe's:
 * fail the test that saw it with the server's last words, and bring the server back so the tests
 * after it still run on three voters instead of timing out on a lost quorum.
 */
afterEach(async (t) => {
  const crashed = [...rc.cluster.servers].filter(([, server]) => !server.running);
  for (const [id] of crashed) await rc.restart(id);
  if (crashed.length === 0) return;
  const lastWords = (stderr: string): string =>
    stderr
      .split("\n")
      .filter((line) => line.length > 0 && !line.startsWith("{"))
      .slice(-12)
      .join("\n");
  const report = crashed.map(([id, server]) => `server ${id} died during this test:\n${lastWords(server.stderr)}`).join("\n");
  // Also as a diagnostic: when the test itself failed first (e.g. a wait outlasting the lost quorum), this is its cause.
  if ("diagnostic" in t) t.diagnostic(report);
  throw new Error(report);
});

function sessions(count: number): Promise<Client[]> {
  return Promise.all(Array.from({ length: count }, () => rc.client()));
}

async function closeAll(clients: readonly Client[]): Promise<void> {
  await Promise.allSettled(clients.map((c) => c.close()));
}

/** A raw SDK call that rides out a lost connection (after a server was killed), bounded. */
async function retrying<T>(client: Client, what: string, attempt: () => Promise<T>): Promise<T> {
  const deadline = new Deadline(what, WAIT, client);
  try {
    return await retryOnConnectionLoss(client, deadline, attempt);
  } finally {
    deadline.dispose();
  }
}

/** Resolves once `path`'s children (none if it does not exist) satisfy `accept`; woken by watches, no polling. */
async function untilChildren(client: Client, path: string, accept: (children: string[]) => boolean): Promise<void> {
  for (;;) {
    let fired!: () => void;
    const changed = new Promise<void>((resolve) => (fired = resolve));
    const children = await retrying(client, "children", async () => {
      if ((await client.exists(path, { watch: () => fired() })) === null) return [];
      return client.getChildren(path, { watch: () => fired() }).catch((error: unknown) => {
        if (isCode(error, "NONODE")) return [];
        throw error;
      });
    });
    if (accept(children)) return;
    await bounded(changed, `a change under ${path}`);
  }
}

/** `promise`, or a rejection after EVENT_WAIT_MS: a bound on a wait, never a timing assertion. */
async function bounded<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`gave up waiting for ${what}`)), EVENT_WAIT_MS)));
  try {
    return await Promise.race([promise, limit]);
  } finally {
    clearTimeout(timer);
  }
}

/** Deletes `path` and everything under it. */
async function removeTree(path: string): Promise<void> {
  const admin = await rc.client();
  const remove = async (node: string): Promise<void> => {
    let children: string[];
    try {
      children = await retrying(admin, "children", () => admin.getChildren(node));
    } catch (error) {
      if (isCode(error, "NONODE")) return;
      throw error;
    }
    for (const child of children) await remove(`${node}/${child}`);
    await retrying(admin, "delete", () => admin.delete(node)).catch((error: unknown) => {
      if (!isCode(error, "NONODE")) throw error;
    });
  };
  try {
    await remove(path);
  } finally {
    await admin.close();
  }
}

/**
 * Resolves with `probe()`'s first non-undefined value, evaluated now and after every one of
 * `events` on `emitters` (no polling); bounded by EVENT_WAIT_MS.
 */
function until<T>(what: string, emitters: readonly EventEmitter[], events: readonly string[], probe: () => T | undefined): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const finish = (): void => {
      clearTimeout(timer);
      for (const emitter of emitters) for (const event of events) emitter.off(event, check);
    };
    const check = (): void => {
      const value = probe();
      if (value === undefined) return;
      finish();
      resolve(value);
    };
    const timer = setTimeout(() => {
      finish();
      reject(new Error(`gave up waiting for ${what}`));
    }, EVENT_WAIT_MS);
    for (const emitter of emitters) for (const event of events) emitter.on(event, check);
    check();
  });
}

/** One candidate with its history; `elected`/`revoked` drive the overlap detector. */
class Candidate {
  elected = 0;
  tokens: bigint[] = [];
  readonly revoked: string[] = [];
  readonly lost: string[] = [];
  /** Every event in order ("elected", "revoked:<reason>", "lost:<reason>"). */
  readonly events: string[] = [];
  /** Set while a fault stands for this candidate's process being paused: the detector ignores it. */
  paused = false;

  constructor(
    readonly name: string,
    readonly client: Client,
    readonly election: LeaderElection,
    detector: OverlapDetector,
  ) {
    election.on("elected", (token) => {
      this.elected += 1;
      this.tokens.push(token);
      this.events.push("elected");
      if (!this.paused) detector.enter(name);
    });
    election.on("revoked", (reason) => {
      this.revoked.push(reason);
      this.events.push(`revoked:${reason}`);
      if (!this.paused) detector.exit(name);
    });
    election.on("lost", (reason) => {
      this.lost.push(reason);
      this.events.push(`lost:${reason}`);
    });
  }
}

async function candidates(path: string, count: number, detector: OverlapDetector): Promise<Candidate[]> {
  const clients = await sessions(count);
  return clients.map((client, i) => new Candidate(`c${i}`, client, new LeaderElection(client, path, { id: `c${i}` }), detector));
}

const leaders = (all: readonly Candidate[]): Candidate[] => all.filter((c) => c.election.isLeader);
const exactlyOneLeader = (all: readonly Candidate[]): Candidate | undefined => {
  const now = leaders(all);
  return now.length === 1 ? now[0] : undefined;
};
const electionEvents = ["elected", "revoked", "lost"];

describe("LeaderElection", { timeout: TEST_TIMEOUT_MS }, () => {
  test("five competing candidates: exactly one leader at any moment, and each resignation hands over to the next candidate", async () => {
    const path = freshPath("election");
    const detector = new OverlapDetector();
    const all = await candidates(path, 5, detector);
    try {
      await Promise.all(all.map((c) => c.election.start(WAIT)));
      const order = candidatesInOrder(all.map((c) => c.election.candidatePath!.split("/").pop()!));
      const bySequence = order.map((node) => all.find((c) => c.election.candidatePath!.endsWith(node))!);
      const tokens: bigint[] = [];
      for (let i = 0; i < bySequence.length; i++) {
        const leader = await until(
          "exactly one leader",
          all.map((c) => c.election),
          electionEvents,
          () => exactlyOneLeader(all),
        );
        assert.equal(leader, bySequence[i], "the lowest remaining candidate leads");
        // Another session's view: sync first, or a lagging server may still show the resigned leader's node.
        await bySequence[4]!.client.sync(path);
        assert.equal(await bySequence[4]!.election.leaderId(WAIT), leader.name, "leaderId names the leader");
        tokens.push(leader.election.fencingToken!);
        await leader.election.resign(WAIT);
        assert.equal(leader.election.isLeader, false);
        assert.deepEqual(leader.revoked, ["resigned"]);
      }
      assert.deepEqual(detector.violations, []);
      assert.equal(detector.entries, 5, "every candidate led exactly once");
      for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, "fencing tokens grow with each leadership");
      assert.equal(await all[0]!.election.leaderId(WAIT), undefined, "nobody leads once all resigned");
    } finally {
      await closeAll(all.map((c) => c.client));
      await removeTree(path);
    }
  });

  test("herd-free: a resignation delivers a watch event to the leader's successor only", async () => {
    const path = freshPath("herd");
    const detector = new OverlapDetector();
    const all = await candidates(path, 5, detector);
    try {
      // Started one after another, so sequence order is c0 < c1 < … < c4.
      for (const c of all) await c.election.start(WAIT);
      assert.equal(exactlyOneLeader(all), all[0]);
      for (let round = 0; round < 3; round++) {
        const before = all.map((c) => c.election.watchEventsReceived);
        await all[round]!.election.resign(WAIT);
        await until("the successor's election", [all[round + 1]!.election], ["elected"], () => (all[round + 1]!.election.isLeader ? true : undefined));
        // A watch event reaches a session before any read that can see its change: after this
        // sync and read, any event the deletion caused has been delivered to every candidate.
        await Promise.all(
          all.map(async (c) => {
            await c.client.sync(path);
            await c.client.getChildren(path);
          }),
        );
        const delta = all.map((c, i) => c.election.watchEventsReceived - before[i]!);
        const expected = all.map((_, i) => (i === round + 1 ? 1 : 0));
        assert.deepEqual(delta, expected, `round ${round}: only c${round + 1} is woken`);
      }
      assert.deepEqual(detector.violations, []);
    } finally {
      await closeAll(all.map((c) => c.client));
      await removeTree(path);
    }
  });

  test("the leader's session expiring revokes it and elects the next candidate; the expired candidate never leads again", async () => {
    const path = freshPath("expiry");
    const detector = new OverlapDetector();
    const all = await candidates(path, 3, detector);
    try {
      for (const c of all) await c.election.start(WAIT);
      const [old, next, last] = all as [Candidate, Candidate, Candidate];
      assert.equal(exactlyOneLeader(all), old);
      const oldToken = old.election.fencingToken!;
      // The forced expiry stands for a process paused past its session timeout: from this moment
      // the cluster no longer counts it as leader (its node is deleted), so neither does the
      // detector. (The harness's twin session may even let it reconnect once before the close
      // lands.) What the recipe must show is that it finds out (revoked, lost) and never leads again.
      old.paused = true;
      detector.exit(old.name);
      await rc.expire(old.client);
      await until("the old leader's loss", [old.election], electionEvents, () => (old.lost.length > 0 ? true : undefined));
      assert.ok(old.revoked.length > 0, "revoked was emitted for the expired leader");
      assert.deepEqual(old.lost, ["expired"]);
      assert.equal(old.election.status, "lost");
      assert.equal(old.election.isLeader, false);
      assert.equal(old.election.fencingToken, undefined);
      await assert.rejects(old.election.awaitLeadership(WAIT), (error: unknown) => isCode(error, "SESSIONEXPIRED"));

      const successor = await until(
        "a new leader",
        all.map((c) => c.election),
        electionEvents,
        () => exactlyOneLeader(all),
      );
      assert.equal(successor, next);
      assert.ok(next.election.fencingToken! > oldToken, "the new leader's fencing token is larger");
      const nextToken = next.election.fencingToken!;
      await next.election.resign(WAIT);
      const lastToken = await last.election.awaitLeadership(WAIT);
      assert.equal(lastToken, last.election.fencingToken, "awaitLeadership resolves with the leadership's fencing token");
      assert.ok(lastToken > nextToken, "every later leadership has a larger token");
      const afterLoss = old.events.slice(old.events.indexOf("lost:expired"));
      assert.ok(!afterLoss.includes("elected"), `the expired candidate never led after its loss: ${old.events.join(" ")}`);
      assert.equal(old.events.at(-1), "lost:expired");
      assert.deepEqual(detector.violations, []);
    } finally {
      await closeAll(all.map((c) => c.client));
      await removeTree(path);
    }
  });

  test("awaitLeadership times out without leaving the election, and an abandoned start leaves no node", async () => {
    const path = freshPath("await");
    const detector = new OverlapDetector();
    const [first, second] = await candidates(path, 2, detector);
    try {
      await first!.election.start(WAIT);
      await second!.election.start(WAIT);
      await assert.rejects(second!.election.awaitLeadership({ timeoutMs: 200 }), (error: unknown) => isCode(error, "OPERATIONTIMEOUT"));
      assert.equal(second!.election.status, "candidate", "a timed-out wait stays a candidate");
      const aborted = new AbortController();
      aborted.abort();
      const third = new LeaderElection(first!.client, path, { id: "third" });
      await assert.rejects(third.start({ signal: aborted.signal }), (error: unknown) => isCode(error, "OPERATIONTIMEOUT"));
      await first!.election.resign(WAIT);
      await second!.election.awaitLeadership(WAIT);
      const children = await second!.client.getChildren(path);
      assert.equal(children.length, 1, "only the remaining candidate's node is left");
      assert.deepEqual(detector.violations, []);
    } finally {
      await closeAll([first!.client, second!.client]);
      await removeTree(path);
    }
  });

  test("the leader server killed mid-election: still exactly one leader afterwards, and hand-over keeps working", async () => {
    const path = freshPath("kill");
    const detector = new OverlapDetector();
    const all = await candidates(path, 5, detector);
    let killed: number | undefined;
    try {
      const starts = all.map((c) => c.election.start({ timeoutMs: EVENT_WAIT_MS }));
      killed = await rc.killLeader();
      const results = await Promise.allSettled(starts);
      for (const result of results) {
        // A start either succeeds or reports the session lost; never a silent double candidacy.
        if (result.status === "rejected") assert.ok(isCode(result.reason, "SESSIONEXPIRED"), String(result.reason));
      }
      const live = (): Candidate[] => all.filter((c) => c.election.status === "candidate" || c.election.status === "leader");
      const leader = await until(
        "exactly one leader after the kill",
        all.map((c) => c.election),
        electionEvents,
        () => exactlyOneLeader(live()),
      );
      assert.equal(leaders(all).length, 1);
      for (const c of live()) {
        await retrying(c.client, "sync", () => c.client.sync(path));
        assert.equal(await c.election.leaderId(WAIT), leader.name, `${c.name} agrees on the leader`);
      }
      await rc.restart(killed);
      killed = undefined;
      await leader.election.resign(WAIT);
      const successor = await until(
        "a successor",
        all.map((c) => c.election),
        electionEvents,
        () => exactlyOneLeader(live()),
      );
      assert.notEqual(successor, leader);
      assert.deepEqual(detector.violations, []);
      // The cluster holds one node per live candidate: no duplicate from a create retried across the failover.
      await retrying(successor.client, "sync", () => successor.client.sync(path));
      assert.equal((await retrying(successor.client, "children", () => successor.client.getChildren(path))).length, live().length);
    } finally {
      if (killed !== undefined) await rc.restart(killed);
      await closeAll(all.map((c) => c.client));
      await removeTree(path);
    }
  });
});

/** A gate the test opens; tasks wait on it so that they are in flight when faults are injected. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** Per task, who recorded it finished (a worker's `completed` event means its completion multi succeeded). */
class Completions {
  readonly byTask = new Map<string, string[]>();
  readonly started = new Map<string, string[]>();

  track(name: string, worker: Worker): void {
    worker.on("completed", (task) => this.byTask.set(task, [...(this.byTask.get(task) ?? []), name]));
    worker.on("started", (task) => this.started.set(task, [...(this.started.get(task) ?? []), name]));
  }
}

describe("Master and Worker", { timeout: TEST_TIMEOUT_MS }, () => {
  test("awaitStatus abandoned by abort or timeout rejects with OPERATIONTIMEOUT and leaves the tree as it was", async () => {
    const path = freshPath("mw-await-abandon");
    const [submitter, waiter] = (await sessions(2)) as [Client, Client];
    /** Every node under `path` (after a sync), with its data: nothing may be added, removed or changed. */
    const tree = async (): Promise<string[]> => {
      const out: string[] = [];
      const walk = async (node: string): Promise<void> => {
        const { data } = await submitter.getData(node);
        out.push(`${node}=${text(data)}`);
        for (const child of (await submitter.getChildren(node)).sort()) await walk(`${node}/${child}`);
      };
      await submitter.sync(path);
      await walk(path);
      return out;
    };
    try {
      // No master runs: the task is never assigned, so its status never comes.
      const task = await MasterWorker.submit(submitter, path, "job", WAIT);
      const before = await tree();

      await assert.rejects(MasterWorker.awaitStatus(waiter, path, task, { timeoutMs: 300 }), (error: unknown) => isCode(error, "OPERATIONTIMEOUT"));
      assert.deepEqual(await tree(), before);

      const aborted = new AbortController();
      const waiting = MasterWorker.awaitStatus(waiter, path, task, { signal: aborted.signal });
      for (let i = 0; i < 3; i++) await waiter.exists(path); // the wait's exists-watch is registered before these answers
      aborted.abort();
      await assert.rejects(waiting, (error: unknown) => isCode(error, "OPERATIONTIMEOUT"));
      assert.deepEqual(await tree(), before);
    } finally {
      await closeAll([submitter, waiter]);
      await removeTree(path);
    }
  });

  test("failover with tasks in flight: a worker's and then the master's session expire, and every task is still recorded done exactly once", async () => {
    const path = freshPath("mw");
    const [m1c, m2c, w1c, w2c, w3c, submitter] = (await sessions(6)) as [Client, Client, Client, Client, Client, Client];
    const detector = new OverlapDetector();
    const { opened, open } = gate();
    const completions = new Completions();
    const execute = async (task: TaskContext): Promise<void> => {
      await task.progress("running 40%");
      await opened;
      await task.progress("running 90%");
    };
    const masters = [new Master(m1c, path, "m1"), new Master(m2c, path, "m2")];
    const paused = new Set<string>();
    for (const m of masters) {
      m.on("elected", () => paused.has(m.id) || detector.enter(m.id));
      m.on("revoked", () => paused.has(m.id) || detector.exit(m.id));
    }
    const [m1, m2] = masters as [Master, Master];
    const workers = [new Worker(w1c, path, "w1", execute), new Worker(w2c, path, "w2", execute), new Worker(w3c, path, "w3", execute)];
    const [w1] = workers as [Worker, Worker, Worker];
    workers.forEach((w) => completions.track(w.id, w));
    try {
      assert.equal(await m1.runForMaster(WAIT), "active");
      assert.equal(await m2.runForMaster(WAIT), "backup");
      for (const w of workers) await w.start(WAIT);
      const tasks: string[] = [];
      for (let i = 0; i < 9; i++) tasks.push(await MasterWorker.submit(submitter, path, `job ${i}`, WAIT));

      // Every worker is inside a task (blocked on the gate) before the faults.
      await until("every worker running a task", workers, ["started"], () =>
        workers.every((w) => [...completions.started.values()].some((names) => names.includes(w.id))) ? true : undefined,
      );
      const w1Task = [...completions.started].find(([, names]) => names.includes("w1"))![0];
      assert.equal(await MasterWorker.status(submitter, path, w1Task, WAIT), "running 40%");

      // A worker's session expires mid-task: the master moves its tasks to the other workers.
      const w1Lost = until("w1 lost", [w1], ["lost"], () => (w1.status === "lost" ? true : undefined));
      await rc.expire(w1c);
      await w1Lost;
      const moved = await MasterWorker.awaitStatus(submitter, path, w1Task, { ...WAIT, accept: (s) => s.startsWith("assigned ") && s !== "assigned w1" });
      assert.match(moved, /^assigned w[23]$/);
      // One fault at a time: the master has moved everything w1 held before it is hit itself.
      await untilChildren(submitter, `${path}/assign/w1`, (children) => children.length === 0);

      // The master's session expires with tasks in flight: the backup takes over from the znodes.
      // The fault stands for a paused master: from now on it does not act (see the election expiry test).
      paused.add("m1");
      detector.exit("m1");
      await rc.expire(m1c);
      await m2.awaitActive(WAIT);
      assert.equal(m1.status, "lost");
      for (let i = 9; i < 12; i++) tasks.push(await MasterWorker.submit(submitter, path, `job ${i}`, WAIT));

      open();
      const statuses = await Promise.all(tasks.map((task) => MasterWorker.awaitStatus(submitter, path, task, WAIT)));
      assert.deepEqual(
        statuses,
        tasks.map(() => DONE),
      );
      // The submitter can see a task done (through its own server) before the worker that did it has
      // its multi's answer and reports "completed": wait for every report, then count them.
      await until("every task reported completed", workers, ["completed"], () => (tasks.every((task) => completions.byTask.has(task)) ? true : undefined));
      for (const task of tasks) assert.equal(completions.byTask.get(task)?.length, 1, `${task} recorded done exactly once`);
      assert.ok(!(completions.byTask.get(w1Task) ?? []).includes("w1"), "the expired worker could not finish its task");
      await submitter.sync(path);
      assert.deepEqual(await submitter.getChildren(`${path}/tasks`), [], "no unfinished task is left");
      for (const worker of await submitter.getChildren(`${path}/assign`)) {
        assert.deepEqual(await submitter.getChildren(`${path}/assign/${worker}`).catch(() => []), [], `no assignment left for ${worker}`);
      }
      assert.deepEqual(detector.violations, []);
    } finally {
      open();
      await closeAll([m1c, m2c, w1c, w2c, w3c, submitter]);
      await removeTree(path);
    }
  });

  test("the leader server killed while tasks run: every task still ends done exactly once", async () => {
    const path = freshPath("mw-kill");
    const [mc, bc, w1c, w2c, submitter] = (await sessions(5)) as [Client, Client, Client, Client, Client];
    const completions = new Completions();
    const execute = async (task: TaskContext): Promise<void> => {
      await task.progress("running 40%");
      await task.progress("running 80%");
    };
    const master = new Master(mc, path, "m1");
    const backup = new Master(bc, path, "m2");
    const workers = [new Worker(w1c, path, "w1", execute), new Worker(w2c, path, "w2", execute)];
    workers.forEach((w) => completions.track(w.id, w));
    let killed: number | undefined;
    try {
      await master.runForMaster(WAIT);
      await backup.runForMaster(WAIT);
      for (const w of workers) await w.start(WAIT);
      const tasks: string[] = [];
      for (let i = 0; i < 6; i++) tasks.push(await MasterWorker.submit(submitter, path, `job ${i}`, WAIT));
      await until("a task started", workers, ["started"], () => (completions.started.size > 0 ? true : undefined));
      killed = await rc.killLeader();
      for (let i = 6; i < 10; i++) tasks.push(await MasterWorker.submit(submitter, path, `job ${i}`, WAIT));
      await rc.restart(killed);
      killed = undefined;
      const statuses = await Promise.all(tasks.map((task) => MasterWorker.awaitStatus(submitter, path, task, WAIT)));
      assert.deepEqual(
        statuses,
        tasks.map(() => DONE),
      );
      for (const task of tasks) assert.equal(completions.byTask.get(task)?.length, 1, `${task} recorded done exactly once`);
      await until("one active master", [master, backup], ["elected", "revoked"], () =>
        [master, backup].filter((m) => m.isActive).length === 1 ? true : undefined,
      );
    } finally {
      if (killed !== undefined) await rc.restart(killed);
      await closeAll([mc, bc, w1c, w2c, submitter]);
      await removeTree(path);
    }
  });
});

const describeMembers = (members: readonly Member[]): string[] => members.map((m) => text(m.data));

/** Follows a GroupMembership's `changed` events; `latest` is the last list it reported. */
class Watcher {
  latest: Member[] = [];

  constructor(readonly group: GroupMembership) {
    group.on("changed", (members) => (this.latest = members));
  }

  async watch(): Promise<void> {
    this.latest = await this.group.watch(WAIT);
  }
}

/** Waits until every watcher's list is `expected` (in join order, or in any order for concurrent joins). */
async function allSee(watchers: readonly Watcher[], expected: readonly string[], order: "join order" | "any order" = "join order"): Promise<void> {
  const normal = (list: readonly string[]): string => (order === "any order" ? [...list].sort() : list).join(",");
  try {
    await until(
      `every watcher to see ${expected.join(",")}`,
      watchers.map((w) => w.group),
      ["changed"],
      () => (watchers.every((w) => normal(describeMembers(w.latest)) === normal(expected)) ? true : undefined),
    );
  } catch (error) {
    const seen = watchers.map((w) => `[${describeMembers(w.latest).join(",")}]`).join(" ");
    throw new Error(`${(error as Error).message}; they see ${seen}`, { cause: error });
  }
}

describe("GroupMembership", { timeout: TEST_TIMEOUT_MS }, () => {
  test("every member sees joins and leaves, and a member whose session expired disappears from everyone's list", async () => {
    const path = freshPath("group");
    const clients = await sessions(4);
    const groups = clients.map((client) => new GroupMembership(client, path));
    const [a, b, c, observer] = groups as [GroupMembership, GroupMembership, GroupMembership, GroupMembership];
    const watchers = groups.map((g) => new Watcher(g));
    try {
      for (const w of watchers) await w.watch();
      await a.join("a", WAIT);
      await b.join("b", WAIT);
      await c.join("c", WAIT);
      await allSee(watchers, ["a", "b", "c"]);
      assert.deepEqual(describeMembers(await observer.members(WAIT)), ["a", "b", "c"]);
      assert.ok(a.memberId!.startsWith("member-"));

      await b.leave(WAIT);
      assert.equal(b.isMember, false);
      await allSee(watchers, ["a", "c"]);

      const cLost = until("c lost", [c], ["lost"], () => (c.isMember ? undefined : true));
      await rc.expire(clients[2]!);
      await cLost;
      const survivors = watchers.filter((w) => w.group !== c);
      await allSee(survivors, ["a"]);
      await assert.rejects(c.members(WAIT), (error: unknown) => isCode(error, "SESSIONEXPIRED"));

      await b.join("b again", WAIT);
      await allSee(survivors, ["a", "b again"]);
    } finally {
      await closeAll(clients);
      await removeTree(path);
    }
  });

  test("the leader server killed while members join: lists converge and no member is created twice", async () => {
    const path = freshPath("group-kill");
    const clients = await sessions(4);
    const groups = clients.map((client) => new GroupMembership(client, path));
    const watchers = groups.map((g) => new Watcher(g));
    let killed: number | undefined;
    try {
      for (const w of watchers) await w.watch();
      await groups[0]!.join("m0", WAIT);
      const joins = groups.slice(1).map((g, i) => g.join(`m${i + 1}`, WAIT));
      killed = await rc.killLeader();
      const outcomes = await Promise.allSettled(joins);
      const joined = ["m0", ...outcomes.flatMap((o, i) => (o.status === "fulfilled" ? [`m${i + 1}`] : []))];
      for (const o of outcomes) if (o.status === "rejected") assert.ok(isCode(o.reason, "SESSIONEXPIRED"), String(o.reason));
      await rc.restart(killed);
      killed = undefined;
      const live = watchers.filter((w) => w.group.isMember);
      await allSee(live, joined, "any order");
      assert.equal(new Set(live.map((w) => describeMembers(w.latest).join(","))).size, 1, "everyone lists the members in the same (join) order");
      const reader = clients[0]!;
      await retrying(reader, "sync", () => reader.sync(path));
      assert.equal((await retrying(reader, "children", () => reader.getChildren(path))).length, joined.length, "one node per member");
    } finally {
      if (killed !== undefined) await rc.restart(killed);
      await closeAll(clients);
      await removeTree(path);
    }
  });
});

describe("TwoPhaseCommit", { timeout: TEST_TIMEOUT_MS }, () => {
  const SITES = ["a", "b", "c"];

  async function participants(): Promise<{ coordinator: Client; sites: Client[] }> {
    const [coordinator, ...sites] = await sessions(1 + SITES.length);
    return { coordinator: coordinator!, sites };
  }

  const outcomes = (path: string, txId: string, clients: readonly Client[]): Promise<TwoPhaseOutcome[]> =>
    Promise.all(clients.map((client) => TwoPhaseCommit.outcome(client, path, txId, WAIT)));

  test("all sites vote commit: everyone learns commit", async () => {
    const path = freshPath("2pc");
    const { coordinator, sites } = await participants();
    try {
      const decided = TwoPhaseCommit.coordinate(coordinator, path, "tx1", SITES, WAIT);
      await Promise.all(sites.map((client, i) => TwoPhaseCommit.join(client, path, "tx1", SITES[i]!, WAIT)));
      await Promise.all(sites.map((client, i) => TwoPhaseCommit.vote(client, path, "tx1", SITES[i]!, "commit", WAIT)));
      assert.equal(await decided, "commit");
      assert.deepEqual(await outcomes(path, "tx1", [coordinator, ...sites]), ["commit", "commit", "commit", "commit"]);
      // Deciding again finds the recorded outcome: it can be decided only once.
      assert.equal(await TwoPhaseCommit.coordinate(sites[0]!, path, "tx1", SITES, WAIT), "commit");
    } finally {
      await closeAll([coordinator, ...sites]);
      await removeTree(path);
    }
  });

  test("one abort vote aborts for everyone at once, before the other sites vote", async () => {
    const path = freshPath("2pc");
    const { coordinator, sites } = await participants();
    try {
      const decided = TwoPhaseCommit.coordinate(coordinator, path, "tx2", SITES, WAIT);
      await Promise.all(sites.map((client, i) => TwoPhaseCommit.join(client, path, "tx2", SITES[i]!, WAIT)));
      await TwoPhaseCommit.vote(sites[1]!, path, "tx2", "b", "abort", WAIT);
      assert.equal(await decided, "abort");
      assert.deepEqual(await outcomes(path, "tx2", [coordinator, ...sites]), ["abort", "abort", "abort", "abort"]);
      for (const site of ["a", "c"]) {
        assert.equal(text((await coordinator.getData(`${path}/tx2/${site}`)).data), JOINED, `${site} had not voted when abort was decided`);
      }
      // A late commit vote changes nothing.
      await TwoPhaseCommit.vote(sites[0]!, path, "tx2", "a", "commit", WAIT);
      assert.equal(await TwoPhaseCommit.outcome(sites[0]!, path, "tx2", WAIT), "abort");
      await assert.rejects(TwoPhaseCommit.vote(sites[1]!, path, "tx2", "b", "commit", WAIT), (error: unknown) => isCode(error, "BADVERSION"));
    } finally {
      await closeAll([coordinator, ...sites]);
      await removeTree(path);
    }
  });

  test("a site whose session expires after joining and before voting aborts the transaction for everyone", async () => {
    const path = freshPath("2pc");
    const { coordinator, sites } = await participants();
    try {
      const decided = TwoPhaseCommit.coordinate(coordinator, path, "tx3", SITES, WAIT);
      await Promise.all(sites.map((client, i) => TwoPhaseCommit.join(client, path, "tx3", SITES[i]!, WAIT)));
      await TwoPhaseCommit.vote(sites[0]!, path, "tx3", "a", "commit", WAIT);
      await rc.expire(sites[2]!);
      assert.equal(await decided, "abort");
      assert.deepEqual(await outcomes(path, "tx3", [coordinator, sites[0]!, sites[1]!]), ["abort", "abort", "abort"]);
      await assert.rejects(TwoPhaseCommit.outcome(sites[2]!, path, "tx3", WAIT), (error: unknown) => isCode(error, "SESSIONEXPIRED"));
    } finally {
      await closeAll([coordinator, ...sites]);
      await removeTree(path);
    }
  });

  test("an abandoned coordinator decides abort, so no participant waits forever", async () => {
    const path = freshPath("2pc");
    const { coordinator, sites } = await participants();
    try {
      const decided = TwoPhaseCommit.coordinate(coordinator, path, "tx4", SITES, { timeoutMs: 500 });
      await TwoPhaseCommit.join(sites[0]!, path, "tx4", "a", WAIT);
      await assert.rejects(decided, (error: unknown) => isCode(error, "OPERATIONTIMEOUT"));
      assert.equal(await TwoPhaseCommit.outcome(sites[0]!, path, "tx4", WAIT), "abort");
    } finally {
      await closeAll([coordinator, ...sites]);
      await removeTree(path);
    }
  });

  test("the leader server killed mid-protocol: everyone still learns one identical outcome", async () => {
    const path = freshPath("2pc");
    const { coordinator, sites } = await participants();
    const expired = new Set<Client>();
    for (const client of [coordinator, ...sites]) client.on("state", (s) => s === "expired" && expired.add(client));
    let killed: number | undefined;
    try {
      const decided = TwoPhaseCommit.coordinate(coordinator, path, "tx5", SITES, WAIT);
      decided.catch(() => undefined); // awaited below unless the coordinator's session was lost
      await Promise.all(sites.map((client, i) => TwoPhaseCommit.join(client, path, "tx5", SITES[i]!, WAIT)));
      await TwoPhaseCommit.vote(sites[0]!, path, "tx5", "a", "commit", WAIT);
      killed = await rc.killLeader();
      const votes = await Promise.allSettled(sites.slice(1).map((client, i) => TwoPhaseCommit.vote(client, path, "tx5", SITES[i + 1]!, "commit", WAIT)));
      await rc.restart(killed);
      killed = undefined;
      const alive = [coordinator, ...sites].filter((c) => !expired.has(c));
      const learned = await outcomes(path, "tx5", alive);
      assert.equal(new Set(learned).size, 1, `one outcome for everyone: ${learned.join(",")}`);
      if (!expired.has(coordinator)) assert.equal(await decided, learned[0]);
      if (expired.size === 0) {
        assert.ok(votes.every((v) => v.status === "fulfilled"));
        assert.equal(learned[0], "commit", "no session was lost, every site voted commit");
      }
    } finally {
      if (killed !== undefined) await rc.restart(killed);
      await closeAll([coordinator, ...sites]);
      await removeTree(path);
    }
  });
});
