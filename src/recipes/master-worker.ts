/**
 * Master-worker (the "ZooKeeper: Distributed Process Coordination" example). Layout under `path`:
 *   master          ephemeral: the active master's id (the simple election form)
 *   workers/<id>    ephemeral: a live worker
 *   tasks/<task>    persistent-sequential, protected `task-` name: an unfinished task, data = payload
 *   assign/<w>/<t>  persistent: task t is assigned to worker w (data = payload)
 *   status/<t>      "assigned <w>" → the worker's progress ("running 40%") → "done" | "failed: …"
 *
 * Every transition is one multi, so the znodes alone say where each task is: a new master after
 * failover needs no memory of the old one. Assigning compare-and-sets status/<t>'s version, so two
 * masters (one of them deposed but not yet aware) can never both assign a task; a worker's progress
 * and completion check that the assignment is still its own, so a deposed worker cannot finish a
 * task that was given to someone else.
 */
import { EventEmitter } from "node:events";
import type { Client } from "../client/client.js";
import { op } from "../client/ops.js";
import type { Data, Op } from "../client/types.js";
import { ZkError } from "../common/errors.js";
import {
  type Deadline,
  ensurePath,
  retryOnConnectionLoss,
  sequenceOf,
  waitUntilGone,
  withoutProtectedPrefix,
  type WaitOptions,
  sessionEndError,
  isSessionEndError,
} from "./common.js";
import {
  createProtectedOrCleanUp,
  deleteOwnEphemeral,
  isZkError,
  nameOf,
  orIfNoNode,
  reportError,
  SerialJob,
  type SessionBoundEvents,
  type SessionEnd,
  SessionFollower,
  settleOrUndo,
  textOf,
  Waiters,
  withDeadline,
} from "./common.js";

/** The status a task gets once its executor resolved; a failed one gets `failed: <message>`. */
export const DONE = "done";

// ---------------------------------------------------------------------------------------------
// Pure assignment policy (unit-tested).

/** What the master reads before deciding: live workers, unfinished tasks, and every assignment dir. */
export interface AssignmentView {
  liveWorkers: readonly string[];
  tasks: readonly string[];
  /** assign/<worker> → the tasks in it, for every worker dir (live or dead). */
  assignments: ReadonlyMap<string, readonly string[]>;
}

export type AssignmentAction =
  /** An unassigned task goes to a live worker. */
  | { kind: "assign"; task: string; worker: string }
  /** A dead worker's unfinished task moves to a live worker. */
  | { kind: "reassign"; task: string; from: string; worker: string }
  /** A dead worker's assignment whose task no longer exists is deleted. */
  | { kind: "drop"; task: string; from: string }
  /** A dead worker's empty assignment dir is deleted. */
  | { kind: "removeDir"; worker: string };

/** Task names in submission (sequence) order; names without a sequence sort last, by name. */
export function tasksInOrder(tasks: Iterable<string>): string[] {
  const seq = (name: string): number => (/\d{10}$/.test(name) ? sequenceOf(withoutProtectedPrefix(name)) : Number.MAX_SAFE_INTEGER);
  return [...tasks].sort((a, b) => seq(a) - seq(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * The master's plan: move dead workers' unfinished tasks, then assign unassigned ones, oldest
 * first, each to the live worker with the fewest assignments (ties: by name). Assignments of live
 * workers are never touched. Without live workers only the clean-up actions remain.
 */
export function planAssignments(view: AssignmentView): AssignmentAction[] {
  const live = new Set(view.liveWorkers);
  const unfinished = new Set(view.tasks);
  const load = new Map<string, number>([...live].sort().map((w) => [w, 0]));
  const heldByLive = new Set<string>();
  for (const [worker, tasks] of view.assignments) {
    if (!live.has(worker)) continue;
    for (const task of tasks) heldByLive.add(task);
    load.set(worker, tasks.length);
  }
  const pick = (): string | undefined => {
    let best: string | undefined;
    for (const [worker, count] of load) if (best === undefined || count < load.get(best)!) best = worker;
    if (best !== undefined) load.set(best, load.get(best)! + 1);
    return best;
  };
  const actions: AssignmentAction[] = [];
  const orphaned = new Map<string, string>();
  for (const [worker, tasks] of view.assignments) {
    if (live.has(worker)) continue;
    if (tasks.length === 0) actions.push({ kind: "removeDir", worker });
    for (const task of tasks) {
      if (!unfinished.has(task) || heldByLive.has(task) || orphaned.has(task)) actions.push({ kind: "drop", task, from: worker });
      else orphaned.set(task, worker);
    }
  }
  for (const task of tasksInOrder(orphaned.keys())) {
    const worker = pick();
    if (worker === undefined) break;
    actions.push({ kind: "reassign", task, from: orphaned.get(task)!, worker });
  }
  const assigned = new Set([...heldByLive, ...orphaned.keys()]);
  for (const task of tasksInOrder(view.tasks)) {
    if (assigned.has(task)) continue;
    const worker = pick();
    if (worker === undefined) break;
    actions.push({ kind: "assign", task, worker });
  }
  return actions;
}

// ---------------------------------------------------------------------------------------------

const paths = (path: string) => ({
  master: `${path}/master`,
  workers: `${path}/workers`,
  tasks: `${path}/tasks`,
  assign: `${path}/assign`,
  status: `${path}/status`,
});

async function ensureLayout(client: Client, path: string, deadline: Deadline): Promise<void> {
  const p = paths(path);
  for (const dir of [p.workers, p.tasks, p.assign, p.status]) await retryOnConnectionLoss(client, deadline, () => ensurePath(client, dir));
}

/** Conflicts meaning "the znodes moved under this plan": plan again from a fresh read. */
const isConflict = (error: unknown): boolean =>
  isZkError(error, "NODEEXISTS") || isZkError(error, "NONODE") || isZkError(error, "BADVERSION") || isZkError(error, "NOTEMPTY");

/** idle: not running · backup: waiting for the active master to go · active: assigning tasks · lost: session gone. */
export type MasterStatus = "idle" | "backup" | "active" | "lost";
/** Why a master stopped being active: it resigned, its session was disconnected, expired or closed, or another master took over (superseded). */
export type MasterRevokedReason = "resigned" | "disconnected" | SessionEnd | "superseded";

/** The events of a Master and their listeners' arguments. */
export interface MasterEvents extends SessionBoundEvents {
  elected: [];
  revoked: [reason: MasterRevokedReason];
}

/**
 * A master candidate for the master-worker layout under `path`, the simple election form: the
 * active master is whoever created the ephemeral `path/master`; backups watch that node and run
 * again when it is deleted (every backup wakes then — fine for the few backups this form is for;
 * use LeaderElection for many candidates).
 *
 * While active it assigns every unassigned task to the least-loaded live worker and moves a dead
 * worker's unfinished tasks to live ones, re-reading the znodes on every change (workers and tasks
 * child watches), so it resumes exactly where any previous master stopped.
 *
 * On disconnection an active master stops assigning (`revoked("disconnected")`) and resumes once
 * reconnected if `path/master` is still its own. On session expiry it emits `revoked` (if active)
 * and `lost`, and never acts again; a new Master on a new session must be run.
 */
export class Master extends EventEmitter<MasterEvents> {
  private statusValue: MasterStatus = "idle";
  /** How the session ended, once the status is "lost". */
  private ended: SessionEnd = "expired";
  private round = 0;
  private readonly p: ReturnType<typeof paths>;
  private readonly checks = new SerialJob(() => this.check(this.round), this);
  private readonly reconciles = new SerialJob(() => this.reconcile(this.round), this);
  private readonly waiters = new Waiters();
  private readonly session: SessionFollower;
  private readonly onMasterEvent = (): void => void this.checks.request();
  private readonly onLayoutEvent = (): void => void this.reconciles.request();
  private actionsApplied = 0;

  constructor(
    private readonly client: Client,
    readonly path: string,
    readonly id: string,
  ) {
    super();
    this.session = new SessionFollower(client, {
      disconnected: () => this.deactivate("disconnected"),
      reconnected: () => void this.checks.request(),
      ended: (reason) => this.lose(reason),
    });
    this.p = paths(path);
  }

  /** Where this master stands (see `MasterStatus`). */
  get status(): MasterStatus {
    return this.statusValue;
  }

  /** True while this master is the active one. */
  get isActive(): boolean {
    return this.statusValue === "active";
  }

  /** Assignment transitions this master has written (read-only, for monitoring). */
  get assignmentsWritten(): number {
    return this.actionsApplied;
  }

  /**
   * Runs for master: creates the ephemeral `path/master`; if it exists (NODEEXISTS) becomes a
   * backup watching it. Resolves "active" or "backup"; a backup takes over by itself later.
   * Abandoned (timeout/abort), it withdraws (deleting `path/master` if it got it).
   */
  async runForMaster(options: WaitOptions = {}): Promise<"active" | "backup"> {
    if (this.statusValue === "backup" || this.statusValue === "active") throw new ZkError("BADARGUMENTS", `master ${this.path}: already running`);
    const round = ++this.round;
    this.statusValue = "backup";
    this.session.start();
    return withDeadline(`master ${this.path}: run for master`, options, this.client, async (deadline) => {
      try {
        await ensureLayout(this.client, this.path, deadline);
        await deadline.race(this.checks.request());
        deadline.check();
        return this.isActive ? "active" : "backup";
      } catch (error) {
        if (round === this.round) await this.resign().catch(() => undefined);
        throw error;
      }
    });
  }

  /** Resolves once this master is active; OPERATIONTIMEOUT on timeout/abort (it stays a backup), SESSIONEXPIRED if the session is gone. */
  async awaitActive(options: WaitOptions = {}): Promise<void> {
    if (this.statusValue === "active") return;
    if (this.statusValue === "lost") throw sessionEndError(this.ended, `master ${this.path}: session ${this.ended}`);
    if (this.statusValue === "idle") throw new ZkError("BADARGUMENTS", `master ${this.path}: not running`);
    await this.waiters.wait(`master ${this.path}: await active`, options, this.client);
  }

  /** Steps down (an active master deletes `path/master`, so a backup takes over) and stops watching. */
  async resign(options: WaitOptions = {}): Promise<void> {
    if (this.statusValue === "idle" || this.statusValue === "lost") return;
    const wasActive = this.statusValue === "active";
    this.round += 1;
    this.statusValue = "idle";
    this.session.stop();
    if (wasActive) this.emit("revoked", "resigned");
    this.waiters.rejectAll(new ZkError("BADARGUMENTS", `master ${this.path}: resigned`));
    await this.deleteMasterNodeIfOwn(options);
  }

  private async deleteMasterNodeIfOwn(options: WaitOptions = {}): Promise<void> {
    await withDeadline(`master ${this.path}: step down`, options, this.client, (deadline) => deleteOwnEphemeral(this.client, this.p.master, deadline));
  }

  /** Reads `path/master` (watching it) and acts: take it if free, become active if it is ours, else back up. */
  private async check(round: number): Promise<void> {
    if (round !== this.round || (this.statusValue !== "backup" && this.statusValue !== "active") || !this.client.connected) return;
    const stat = await this.client.exists(this.p.master, { watch: this.onMasterEvent });
    if (round !== this.round) return;
    if (stat === null) {
      try {
        await this.client.create(this.p.master, this.id, { mode: "ephemeral" });
      } catch (error) {
        // Someone else was faster, or our create's answer was lost: the next check reads whose it is.
        if (!isZkError(error, "NODEEXISTS")) throw error;
        void this.checks.request();
        return;
      }
      if (round !== this.round) {
        // Resigned while creating.
        await this.deleteMasterNodeIfOwn().catch(() => undefined);
        return;
      }
      this.activate();
      return;
    }
    if (stat.ephemeralOwner === this.client.sessionId) {
      this.activate();
      return;
    }
    this.deactivate("superseded");
  }

  private activate(): void {
    // Act only while connected: a disconnected master cannot know its session still lives.
    if (this.statusValue !== "backup" || !this.client.connected) return;
    this.statusValue = "active";
    this.emit("elected");
    this.waiters.resolveAll();
    void this.reconciles.request();
  }

  /** An active master goes back to being a backup; a backup is left as it is. */
  private deactivate(reason: MasterRevokedReason): void {
    if (this.statusValue !== "active") return;
    this.statusValue = "backup";
    this.emit("revoked", reason);
  }

  /** One pass of the assignment loop: read the whole layout (watching workers and tasks), plan, apply. */
  private async reconcile(round: number): Promise<void> {
    const stillActive = (): boolean => round === this.round && this.statusValue === "active";
    if (!stillActive() || !this.client.connected) return;
    const liveWorkers = await this.client.getChildren(this.p.workers, { watch: this.onLayoutEvent });
    const tasks = await this.client.getChildren(this.p.tasks, { watch: this.onLayoutEvent });
    const assignments = new Map<string, string[]>();
    for (const worker of await this.client.getChildren(this.p.assign)) {
      const assigned = await orIfNoNode(this.client.getChildren(`${this.p.assign}/${worker}`), null);
      if (assigned !== null) assignments.set(worker, assigned);
    }
    for (const action of planAssignments({ liveWorkers, tasks, assignments })) {
      if (!stillActive()) return;
      try {
        await this.apply(action);
        this.actionsApplied += 1;
      } catch (error) {
        if (!isConflict(error)) throw error;
        // The znodes moved under this plan (a task finished, a worker left): plan again.
        void this.reconciles.request();
        return;
      }
    }
  }

  private async apply(action: AssignmentAction): Promise<void> {
    const client = this.client;
    if (action.kind === "removeDir") {
      await client.delete(`${this.p.assign}/${action.worker}`);
      return;
    }
    if (action.kind === "drop") {
      await client.delete(`${this.p.assign}/${action.from}/${action.task}`);
      return;
    }
    const { data } = await client.getData(`${this.p.tasks}/${action.task}`);
    await ensurePath(client, `${this.p.assign}/${action.worker}`);
    const statusPath = `${this.p.status}/${action.task}`;
    const status = await client.exists(statusPath);
    const mark = `assigned ${action.worker}`;
    const ops: Op[] = [];
    if (action.kind === "reassign") ops.push(op.delete(`${this.p.assign}/${action.from}/${action.task}`));
    ops.push(
      op.check(`${this.p.tasks}/${action.task}`, -1),
      op.create(`${this.p.assign}/${action.worker}/${action.task}`, data),
      // The compare-and-set that makes a task assignable once, whoever else thinks it is master.
      status === null ? op.create(statusPath, mark) : op.setData(statusPath, mark, { version: status.version }),
    );
    await client.multi(ops);
  }

  private lose(reason: SessionEnd): void {
    if (this.statusValue !== "backup" && this.statusValue !== "active") return;
    const wasActive = this.statusValue === "active";
    this.round += 1;
    this.statusValue = "lost";
    this.ended = reason;
    if (wasActive) this.emit("revoked", reason);
    this.emit("lost", reason);
    this.waiters.rejectAll(sessionEndError(reason, `master ${this.path}: session ${reason}`));
  }
}

// ---------------------------------------------------------------------------------------------

/** One task as its executor sees it. */
export interface TaskContext {
  /** The task's node name under `path/tasks` (also its name under `path/status`). */
  name: string;
  data: Uint8Array;
  /** Writes a progress report into `path/status/<task>`; fails (NONODE) once the task is no longer this worker's. */
  progress(text: string): Promise<void>;
}

/** Runs one task; resolving marks it "done", throwing marks it "failed: <message>". */
export type TaskExecutor = (task: TaskContext) => Promise<void>;

/** idle: not started or stopped · running: registered and taking tasks · lost: session gone. */
export type WorkerStatus = "idle" | "running" | "lost";

/** The events of a Worker and their listeners' arguments. */
export interface WorkerEvents extends SessionBoundEvents {
  started: [task: string];
  completed: [task: string, status: string];
  abandoned: [task: string, error: unknown];
}

/**
 * A worker of the master-worker layout under `path`: registers the ephemeral `path/workers/<id>`,
 * watches `path/assign/<id>` and runs each task assigned to it, one at a time, oldest first,
 * through `execute`, writing progress into `path/status/<task>`.
 *
 * A task is recorded finished at most once: completion is one multi that deletes the assignment
 * and the task and writes "done" (or "failed: …") — it fails if the assignment is no longer this
 * worker's. `completed` is emitted only when that multi succeeded; `abandoned` when it could not.
 * Execution itself is at-least-once: a worker whose session dies mid-task loses the task to another
 * worker. On session expiry the worker emits `lost`, its running task's progress and completion
 * fail, and it takes no further task.
 */
export class Worker extends EventEmitter<WorkerEvents> {
  private statusValue: WorkerStatus = "idle";
  /** How the session ended, once the status is "lost". */
  private ended: SessionEnd = "expired";
  private round = 0;
  private readonly p: ReturnType<typeof paths>;
  private readonly mine: string;
  private readonly queue: string[] = [];
  private readonly seen = new Set<string>();
  private running: Promise<void> | undefined;
  private readonly scans = new SerialJob(() => this.scan(this.round), this);
  private readonly session: SessionFollower;
  private readonly onAssignEvent = (): void => void this.scans.request();

  constructor(
    private readonly client: Client,
    readonly path: string,
    readonly id: string,
    private readonly execute: TaskExecutor,
  ) {
    super();
    this.session = new SessionFollower(client, {
      reconnected: () => void this.scans.request(),
      ended: (reason) => this.lose(reason),
    });
    if (id.length === 0 || id.includes("/")) throw new ZkError("BADARGUMENTS", `bad worker id: ${JSON.stringify(id)}`);
    this.p = paths(path);
    this.mine = `${this.p.assign}/${id}`;
  }

  /** Where this worker stands (see `WorkerStatus`). */
  get status(): WorkerStatus {
    return this.statusValue;
  }

  /**
   * Registers (`path/workers/<id>`, ephemeral) and starts taking tasks. If another live session
   * holds that id, waits until it is gone. Abandoned (timeout/abort), no registration is left behind.
   */
  async start(options: WaitOptions = {}): Promise<void> {
    if (this.statusValue === "running") throw new ZkError("BADARGUMENTS", `worker ${this.id}: already running`);
    if (this.statusValue === "lost") throw sessionEndError(this.ended, `worker ${this.id}: session ${this.ended}`);
    const round = ++this.round;
    await withDeadline(`worker ${this.id}: start`, options, this.client, async (deadline) => {
      try {
        await ensureLayout(this.client, this.path, deadline);
        await retryOnConnectionLoss(this.client, deadline, () => ensurePath(this.client, this.mine));
        const registration = `${this.p.workers}/${this.id}`;
        while (!(await createOwnEphemeral(this.client, registration, this.id, deadline))) {
          await waitUntilGone(this.client, registration, deadline);
        }
        if (round !== this.round) return;
        this.statusValue = "running";
        this.session.start();
        await deadline.race(this.scans.request());
      } catch (error) {
        // Abandoned after registering: unregister (the master moves anything assigned meanwhile).
        if (round === this.round && this.statusValue === "running") await this.stop().catch(() => undefined);
        throw error;
      }
    });
  }

  /**
   * Stops taking tasks, lets the running one finish (bounded by `options`), then unregisters: the
   * master moves any task still assigned here to another worker.
   */
  async stop(options: WaitOptions = {}): Promise<void> {
    if (this.statusValue !== "running") return;
    this.round += 1;
    this.statusValue = "idle";
    this.session.stop();
    this.queue.length = 0;
    await withDeadline(`worker ${this.id}: stop`, options, this.client, async (deadline) => {
      if (this.running) await deadline.race(this.running).catch(() => undefined);
      await deleteOwnEphemeral(this.client, `${this.p.workers}/${this.id}`, deadline);
    });
  }

  /** Reads this worker's assignment dir (watching it) and queues the tasks not seen yet. */
  private async scan(round: number): Promise<void> {
    if (round !== this.round || this.statusValue !== "running" || !this.client.connected) return;
    const assigned = await orIfNoNode(this.client.getChildren(this.mine, { watch: this.onAssignEvent }), null);
    if (assigned === null) {
      // The dir was removed meanwhile (the master re-creates it before assigning): wait for it.
      if ((await this.client.exists(this.mine, { watch: this.onAssignEvent })) !== null) void this.scans.request();
      return;
    }
    if (round !== this.round) return;
    for (const task of tasksInOrder(assigned)) {
      if (this.seen.has(task)) continue;
      this.seen.add(task);
      this.queue.push(task);
    }
    // Forget finished tasks so the set stays as small as the assignment dir.
    const present = new Set(assigned);
    for (const task of this.seen) if (!present.has(task) && !this.queue.includes(task)) this.seen.delete(task);
    this.pump();
  }

  private pump(): void {
    if (this.running || this.statusValue !== "running") return;
    const task = this.queue.shift();
    if (task === undefined) return;
    this.running = this.runTask(task, this.round)
      .catch((error: unknown) => reportError(this, error))
      .finally(() => {
        this.running = undefined;
        this.pump();
      });
  }

  private async runTask(task: string, round: number): Promise<void> {
    const assignment = `${this.mine}/${task}`;
    const statusPath = `${this.p.status}/${task}`;
    await withDeadline(`worker ${this.id}: task ${task}`, {}, this.client, async (sessionBound) => {
      try {
        const assigned = await retryOnConnectionLoss(this.client, sessionBound, () => orIfNoNode(this.client.getData(assignment), null));
        if (assigned === null || round !== this.round) return; // no longer ours, or stopped
        const { data } = assigned;
        this.emit("started", task);
        const progress = (text: string): Promise<void> =>
          retryOnConnectionLoss(this.client, sessionBound, () => this.client.multi([op.check(assignment, -1), op.setData(statusPath, text)])).then(
            () => undefined,
          );
        let outcome = DONE;
        try {
          await this.execute({ name: task, data, progress });
        } catch (error) {
          if (this.statusValue === "lost" || isSessionEndError(error)) {
            this.emit("abandoned", task, error);
            return;
          }
          outcome = `failed: ${error instanceof Error ? error.message : String(error)}`;
        }
        if (await this.complete(task, outcome, sessionBound)) this.emit("completed", task, outcome);
        else this.emit("abandoned", task, new ZkError("NONODE", `task ${task} is no longer assigned to worker ${this.id}`));
      } catch (error) {
        this.emit("abandoned", task, error);
      }
    });
  }

  /**
   * Records the task finished: deletes the assignment and the task, writes the outcome — one
   * multi, so it happens at most once. True if it was this call's multi (or an earlier attempt of it
   * whose answer a lost connection swallowed) that did it.
   */
  private async complete(task: string, outcome: string, deadline: Deadline): Promise<boolean> {
    const assignment = `${this.mine}/${task}`;
    const statusPath = `${this.p.status}/${task}`;
    const ops = [op.delete(assignment), op.setData(statusPath, outcome), op.delete(`${this.p.tasks}/${task}`)];
    let uncertain = false;
    for (;;) {
      deadline.check();
      try {
        await deadline.race(this.client.multi(ops));
        return true;
      } catch (error) {
        if (isZkError(error, "CONNECTIONLOSS")) {
          uncertain = true;
          await retryOnConnectionLoss(this.client, deadline, () => this.client.exists(assignment));
          continue;
        }
        if (!isZkError(error, "NONODE")) throw error;
      }
      // NONODE: an earlier attempt whose answer was lost may have done it — the assignment is
      // gone and the status says so; only this live session could have removed its assignment.
      const still = await retryOnConnectionLoss(this.client, deadline, () => this.client.exists(assignment));
      if (still !== null) {
        // The task or its status was removed by someone (withdrawn): drop the assignment.
        await retryOnConnectionLoss(this.client, deadline, () => this.client.delete(assignment)).catch(() => undefined);
        return false;
      }
      if (!uncertain) return false;
      const status = await retryOnConnectionLoss(this.client, deadline, () => readText(this.client, statusPath));
      return status === outcome;
    }
  }

  private lose(reason: SessionEnd): void {
    this.round += 1;
    this.statusValue = "lost";
    this.ended = reason;
    this.queue.length = 0;
    this.emit("lost", reason);
  }
}

// ---------------------------------------------------------------------------------------------

/** Client-side helpers of the master-worker layout: submit tasks and follow their status. */
export class MasterWorker {
  private constructor() {}

  /**
   * Submits a task (a protected persistent-sequential `task-` node under `path/tasks`); resolves
   * with its name. Abandoned (timeout/abort), the task node is withdrawn.
   */
  static async submit(client: Client, path: string, data: Data, options: WaitOptions = {}): Promise<string> {
    const node = await withDeadline(`master-worker ${path}: submit`, options, client, (deadline) =>
      createProtectedOrCleanUp(client, paths(path).tasks, "task-", data, "persistent-sequential", deadline),
    );
    return nameOf(node);
  }

  /** The task's status text ("assigned w1", "running 40%", "done", …), or undefined before it is assigned. */
  static async status(client: Client, path: string, task: string, options: WaitOptions = {}): Promise<string | undefined> {
    return withDeadline(`master-worker ${path}: status`, options, client, (deadline) =>
      retryOnConnectionLoss(client, deadline, () => readText(client, `${paths(path).status}/${task}`)),
    );
  }

  /** Resolves with the task's status once `accept` holds for it (default: "done" or "failed: …"); one data watch at a time. */
  static async awaitStatus(client: Client, path: string, task: string, options: WaitOptions & { accept?: (status: string) => boolean } = {}): Promise<string> {
    const accept = options.accept ?? ((status: string) => status === DONE || status.startsWith("failed:"));
    const statusPath = `${paths(path).status}/${task}`;
    return withDeadline(`master-worker ${path}: await status of ${task}`, options, client, async (deadline) => {
      for (;;) {
        deadline.check();
        let fired: () => void = () => undefined;
        const event = new Promise<void>((resolve) => (fired = resolve));
        const status = await retryOnConnectionLoss(client, deadline, async () => {
          const stat = await client.exists(statusPath, { watch: () => fired() });
          return stat === null ? undefined : readText(client, statusPath);
        });
        if (status !== undefined && accept(status)) return status;
        await deadline.race(event);
      }
    });
  }
}

async function readText(client: Client, path: string): Promise<string | undefined> {
  const node = await orIfNoNode(client.getData(path), undefined);
  return node && textOf(node.data);
}

/**
 * Creates the ephemeral `path` unless another session holds it: true if this session owns it
 * (also when a create whose answer was lost did land). Abandoned, a create still in flight is
 * undone once it lands.
 */
function createOwnEphemeral(client: Client, path: string, data: Data, deadline: Deadline): Promise<boolean> {
  return settleOrUndo(
    client,
    `create ${path}`,
    deadline,
    (sessionBound) =>
      retryOnConnectionLoss(client, sessionBound, async () => {
        for (;;) {
          try {
            await client.create(path, data, { mode: "ephemeral" });
            return true;
          } catch (error) {
            if (!isZkError(error, "NODEEXISTS")) throw error;
          }
          const stat = await client.exists(path);
          if (stat !== null) return stat.ephemeralOwner === client.sessionId;
          // Gone between the two calls: create again.
        }
      }),
    (mine) => (mine ? deleteOwnEphemeral(client, path) : Promise.resolve()),
  );
}
