/**
 * The chaos run's clients: workers that issue operations through the SDK, one at a time each, and
 * record every invocation and completion in the shared history.
 *
 * - register: read / write / compare-and-set (getData then setData with the version read) on one
 *   znode per key; keys are retired after a few hundred operations so that every key's history
 *   stays small enough to check exhaustively.
 * - set: creates of unique nodes (spread over directories), read back from every server at the end.
 * - ids: sequential creates, each node named by a tag unique to its create; the sequence number the
 *   server appends is the id (spread over parents, each parent's ids its own sequence).
 * - lock: the Lock recipe guarding a fenced resource that refuses a token lower than one it has
 *   seen; a holder that lost its lock without noticing keeps writing with its old token.
 */
import { Client, type ClientState, type Stat, ZkError } from "../../src/index.js";
import { Lock } from "../../src/recipes/lock.js";
import type { Prng } from "../sim/prng.js";
import type { AcquireOp, AddOp, CasOp, Op, ReadOp, ReleaseOp, TakeIdOp, UseOp, WriteOp } from "./history.js";
import { INITIAL_VALUE } from "./history.js";

export const ROOT = "/chaos";
export const REGISTER_ROOT = `${ROOT}/register`;
export const SET_ROOT = `${ROOT}/set`;
export const LOCK_ROOT = `${ROOT}/lock`;
export const IDS_ROOT = `${ROOT}/ids`;
export const QUEUE_ROOT = `${ROOT}/queue`;
export const COUNTER_PATH = `${ROOT}/counter`;
export const WATCHED_PATH = `${ROOT}/watched`;

/** Errors that prove an operation did not take effect. Anything else leaves it unknown. */
const DEFINITE_FAILURES = new Set(["BADVERSION", "NONODE", "NODEEXISTS", "NOTEMPTY", "BADARGUMENTS", "NOCHILDRENFOREPHEMERALS", "NOAUTH", "INVALIDACL"]);

/** A harness-side bound on one operation: past it the outcome is unknown and the worker moves on. */
const OPERATION_LIMIT_MS = 15_000;

export const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
export const isConnected = (state: ClientState) => state === "connected" || state === "reconnected";

export type OpInput<T extends Op> = Omit<T, "id" | "invokedAt" | "completedAt" | "outcome" | "error" | "result" | (T extends AcquireOp ? "token" : never)>;

/** The shared history: operations appended at invocation, completed in place. */
export class HistoryRecorder {
  readonly ops: Op[] = [];
  private nextId = 0;

  constructor(readonly now: () => number) {}

  /**
   * Records `op`, runs it, and completes the record from how it ended: ok (then `onOk` fills in
   * what the answer said), fail on an error that proves it did not happen, unknown otherwise.
   * Resolves with the answer (undefined unless ok); never rejects.
   */
  async run<T extends Op, R>(input: OpInput<T>, action: () => Promise<R>, onOk?: (op: T, value: R) => void): Promise<R | undefined> {
    const op = { ...input, id: this.nextId++, invokedAt: this.now(), outcome: "unknown" } as T;
    this.ops.push(op);
    try {
      const value = await withLimit(action(), OPERATION_LIMIT_MS, op.f);
      op.completedAt = this.now();
      op.outcome = "ok";
      onOk?.(op, value);
      return value;
    } catch (error) {
      op.completedAt = this.now();
      const code = error instanceof ZkError ? error.code : error instanceof OperationLimitError ? "OPERATIONTIMEOUT" : "UNEXPECTED";
      op.outcome = DEFINITE_FAILURES.has(code) ? "fail" : "unknown";
      op.error = code === "UNEXPECTED" ? `UNEXPECTED ${error instanceof Error ? error.message : String(error)}` : code;
      return undefined;
    }
  }

  /** Records an operation that completes at once with a known outcome (the fenced resource's answers). */
  instant<T extends Op>(input: OpInput<T>, outcome: "ok" | "fail", error?: string): void {
    const at = this.now();
    const op = { ...input, id: this.nextId++, invokedAt: at, completedAt: at, outcome, ...(error === undefined ? {} : { error }) } as T;
    this.ops.push(op);
  }
}

/** What `withLimit` rejects with when the bound passes first. */
export class OperationLimitError extends Error {}

/** `promise`, or an OperationLimitError after `ms` (the promise itself runs on, unobserved). */
export function withLimit<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new OperationLimitError(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

export interface WorkerContext {
  connectString: string;
  sessionTimeoutMs: number;
  history: HistoryRecorder;
  /** True once the run asks workers to finish. */
  stopping: () => boolean;
  /** Pause between one worker's operations, ms (keeps the history a checkable size). */
  thinkMs: number;
}

/**
 * One worker's session: a fresh one after expiry (guarantees are per session, and the history
 * names the session each operation went through).
 */
export class WorkerSession {
  private client: Client | undefined;
  /** Clients this session ever opened, all closed at the end. */
  private readonly opened: Client[] = [];

  constructor(private readonly context: WorkerContext) {}

  /** A connected client, or undefined if the run is stopping before one could be had. */
  async ready(): Promise<Client | undefined> {
    while (!this.context.stopping()) {
      const client = this.client;
      if (client === undefined || client.state === "expired" || client.state === "closed") {
        this.client = undefined;
        if (client !== undefined) void client.close().catch(() => undefined);
        try {
          this.client = await Client.connect(this.context.connectString, { sessionTimeoutMs: this.context.sessionTimeoutMs, connectTimeoutMs: 5_000 });
          this.opened.push(this.client);
        } catch {
          await sleep(200);
        }
        continue;
      }
      if (isConnected(client.state)) return client;
      await waitForState(client, 500);
    }
    return undefined;
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.opened.map((c) => c.close()));
  }
}

function waitForState(client: Client, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      client.off("state", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    client.on("state", done);
  });
}

export const sessionOf = (client: Client) => client.sessionId.toString(16);

// ------------------------------------------------------------------------------------------------
// register

/**
 * Hands out nodes under `root` (register keys, set directories), moving every worker to a fresh
 * node once the current one has had `usesPerNode` uses: register keys stay small enough to check
 * exhaustively, set directories small enough to list in one answer.
 */
export class NodeRing {
  private index = 0;
  private used = 0;
  private creating: Promise<void> | undefined;

  constructor(
    readonly root: string,
    private readonly prefix: string,
    private readonly data: string,
    private readonly usesPerNode: number,
  ) {}

  /** Creates the first node; call once before the workers start. */
  async init(client: Client): Promise<void> {
    await this.create(client, this.name(0));
  }

  /** The current node's name (a register key, a set directory). */
  get current(): string {
    return this.name(this.index);
  }

  path(name: string): string {
    return `${this.root}/${name}`;
  }

  /** The node to use now; starts creating the next one once this one has had its share. */
  take(client: Client): string {
    this.used += 1;
    if (this.used >= this.usesPerNode && this.creating === undefined) {
      this.creating = this.create(client, this.name(this.index + 1)).then(
        () => {
          this.index += 1;
          this.used = 0;
          this.creating = undefined;
        },
        () => {
          this.creating = undefined; // the next take tries again
        },
      );
    }
    return this.current;
  }

  private name(index: number): string {
    return `${this.prefix}${String(index).padStart(5, "0")}`;
  }

  /** Creates a node, surviving a lost answer (NODEEXISTS means it is there). */
  private async create(client: Client, name: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await client.create(this.path(name), this.data);
        return;
      } catch (error) {
        if (error instanceof ZkError && error.code === "NODEEXISTS") return;
        if (attempt >= 20) throw error;
        await sleep(250);
      }
    }
  }
}

/** Register keys: znodes holding INITIAL_VALUE at version 0, retired after `opsPerKey` operations. */
export function registerKeys(opsPerKey: number): NodeRing {
  return new NodeRing(REGISTER_ROOT, "k", INITIAL_VALUE, opsPerKey);
}

/** Set directories: the set's elements are spread over directories of `elementsPerDir` children. */
export function setDirectories(elementsPerDir: number): NodeRing {
  return new NodeRing(SET_ROOT, "d", "", elementsPerDir);
}

/** Id parents: each hands out `idsPerParent` ids before the workers move on to a fresh one. */
export function idParents(idsPerParent: number): NodeRing {
  return new NodeRing(IDS_ROOT, "p", "", idsPerParent);
}

export async function registerWorker(process: number, context: WorkerContext, keys: NodeRing, prng: Prng): Promise<void> {
  const session = new WorkerSession(context);
  const { history } = context;
  let counter = 0;
  try {
    while (!context.stopping()) {
      const client = await session.ready();
      if (client === undefined) break;
      const key = keys.take(client);
      const path = keys.path(key);
      const base = { process, session: sessionOf(client), key };
      const roll = prng.int(10); // 0-2 write, 3-5 read, 6-9 read then compare-and-set
      const value = `p${process}-${counter++}`;
      const written = (op: WriteOp | CasOp, stat: Stat) => {
        op.result = { version: stat.version, mzxid: stat.mzxid.toString() };
      };
      if (roll < 3) {
        await history.run<WriteOp, Stat>({ ...base, f: "write", value }, () => client.setData(path, value), written);
      } else {
        const read = await history.run<ReadOp, { data: Uint8Array; stat: Stat }>(
          { ...base, f: "read" },
          () => client.getData(path),
          (op, { data, stat }) => {
            op.result = { value: text(data), version: stat.version, mzxid: stat.mzxid.toString() };
          },
        );
        if (read !== undefined && roll >= 6) {
          const expectedVersion = read.stat.version;
          await history.run<CasOp, Stat>(
            { ...base, f: "cas", expectedVersion, value },
            () => client.setData(path, value, { version: expectedVersion }),
            written,
          );
        }
      }
      await sleep(context.thinkMs);
    }
  } finally {
    await session.close();
  }
}

// ------------------------------------------------------------------------------------------------
// set

/** A worker whose every operation is one `step` through a ready client, a think pause after each, until the run stops. */
export async function stepWorker(context: WorkerContext, step: (client: Client, session: string) => Promise<unknown>): Promise<void> {
  const session = new WorkerSession(context);
  try {
    while (!context.stopping()) {
      const client = await session.ready();
      if (client === undefined) break;
      await step(client, sessionOf(client));
      await sleep(context.thinkMs);
    }
  } finally {
    await session.close();
  }
}

export function setWorker(process: number, context: WorkerContext, directories: NodeRing): Promise<void> {
  let counter = 0;
  return stepWorker(context, (client, session) => {
    const element = `e-${process}-${counter++}`;
    return context.history.run<AddOp, string>({ process, session, f: "add", element }, () =>
      client.create(directories.path(`${directories.take(client)}/${element}`), ""),
    );
  });
}

// ------------------------------------------------------------------------------------------------
// ids

export function idWorker(process: number, context: WorkerContext, parents: NodeRing): Promise<void> {
  let counter = 0;
  return stepWorker(context, (client, session) => {
    const parent = parents.path(parents.take(client));
    const tag = `t${process}.${counter++}`;
    return context.history.run<TakeIdOp, string>(
      { process, session, f: "take-id", parent, tag },
      () => client.create(`${parent}/${tag}-`, "", { mode: "persistent-sequential" }),
      (op, path) => {
        op.result = { id: Number(path.slice(path.lastIndexOf("-") + 1)) };
      },
    );
  });
}

// ------------------------------------------------------------------------------------------------
// lock

/**
 * A resource guarded by fencing tokens, as a storage service would guard itself: it accepts a
 * write only with a token at least as large as any it has accepted. It lives in the harness, so
 * it is always reachable — exactly the case where a holder paused past its session expiry would
 * otherwise corrupt it.
 */
export class FencedResource {
  private highest = -1n;

  use(token: bigint): boolean {
    if (token < this.highest) return false;
    this.highest = token;
    return true;
  }
}

const USES_PER_GRANT = 3;
/** One grant in this many stalls: its session is ended behind its back while it goes on writing. */
const STALL_ONE_IN = 8;
const STALLED_USE_GAP_MS = 300;

export async function lockWorker(process: number, context: WorkerContext, resource: FencedResource, prng: Prng): Promise<void> {
  const session = new WorkerSession(context);
  const { history } = context;
  try {
    while (!context.stopping()) {
      const client = await session.ready();
      if (client === undefined) break;
      const lock = new Lock(client, LOCK_ROOT);
      lock.on("lost", () => undefined); // the worker deliberately carries on: the resource must fence it
      const sessionHex = sessionOf(client);
      const token = await history.run<AcquireOp, bigint>(
        { process, session: sessionHex, f: "acquire" },
        () => lock.acquire({ timeoutMs: 5_000 }),
        (op, granted) => {
          op.token = granted.toString();
        },
      );
      if (token === undefined) {
        await sleep(context.thinkMs);
        continue;
      }
      // A holder stalled past its session timeout (a GC pause, a stopped VM): the cluster ends its
      // session and grants the lock to the next waiter while this worker, unaware, keeps writing
      // with its old token. Ending the session from a second connection makes that happen on cue.
      const stalled = prng.int(STALL_ONE_IN) === 0 && (await endSessionBehindItsBack(context.connectString, client));
      for (let i = 0; i < USES_PER_GRANT && !context.stopping(); i++) {
        const accepted = resource.use(token);
        history.instant<UseOp>({ process, session: sessionHex, f: "use", token: token.toString() }, accepted ? "ok" : "fail", accepted ? undefined : "FENCED");
        await sleep(stalled ? STALLED_USE_GAP_MS : context.thinkMs);
      }
      await history.run<ReleaseOp, void>({ process, session: sessionHex, f: "release", token: token.toString() }, () => lock.release());
      await sleep(context.thinkMs);
    }
  } finally {
    await session.close();
  }
}

/** Closes `client`'s session through a second connection; false if that could not be done. */
async function endSessionBehindItsBack(connectString: string, client: Client): Promise<boolean> {
  try {
    const twin = await Client.connect(connectString, { sessionId: client.sessionId, password: client.sessionPassword, connectTimeoutMs: 5_000 });
    await twin.close();
    return true;
  } catch {
    return false;
  }
}
