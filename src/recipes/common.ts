/**
 * What every recipe shares (public SDK only): blocking calls bounded by an AbortSignal and a
 * timeout, protected creates that survive a lost connection, sequential-name ordering, one-shot
 * waits on a node's deletion, parent paths made on demand, deletes of this session's nodes, and
 * the serialized background jobs and blocked callers of the long-running recipes.
 */
import { randomUUID } from "node:crypto";
import type { EventEmitter } from "node:events";
import type { Client } from "../client/client.js";
import type { ClientState, CreateMode, Data, WatchedEvent } from "../client/types.js";
import { ZkError, type ZkErrorName } from "../common/errors.js";

/** Every blocking recipe call takes these. */
export interface WaitOptions {
  /** Abandons the call: it rejects with ZkError OPERATIONTIMEOUT ("aborted") and cleans up its nodes. */
  signal?: AbortSignal;
  /** Gives up after this long: ZkError OPERATIONTIMEOUT, nodes cleaned up. */
  timeoutMs?: number;
}

/**
 * The bound on one blocking call. `race` rejects with ZkError OPERATIONTIMEOUT as soon as the
 * deadline passes or the signal aborts, and with the session's end (sessionEndError) as soon as
 * `client`'s session is gone: a waiter never waits on a session that can no longer be answered.
 * `dispose` must be called when the call ends (withDeadline does it).
 */
export class Deadline {
  private timer: NodeJS.Timeout | undefined;
  private readonly failed: Promise<never>;
  private fail!: (error: ZkError) => void;
  private reason: ZkError | undefined;
  private readonly onAbort = (): void => this.stop(new ZkError("OPERATIONTIMEOUT", `${this.what}: aborted`));
  private readonly onState = (state: string): void => {
    if (isSessionEnd(state)) this.stop(sessionEndError(state, `${this.what}: session ${state}`));
  };

  constructor(
    private readonly what: string,
    private readonly options: WaitOptions = {},
    private readonly client?: Client,
  ) {
    this.failed = new Promise<never>((_, reject) => (this.fail = reject));
    this.failed.catch(() => undefined);
    if (client) {
      client.on("state", this.onState);
      this.onState(client.state);
    }
    if (options.signal?.aborted) this.onAbort();
    else options.signal?.addEventListener("abort", this.onAbort, { once: true });
    if (options.timeoutMs !== undefined && this.reason === undefined) {
      this.timer = setTimeout(() => this.stop(new ZkError("OPERATIONTIMEOUT", `${what}: timed out after ${options.timeoutMs} ms`)), options.timeoutMs);
    }
  }

  /** Whether the call has been abandoned (timed out or aborted). */
  get expired(): boolean {
    return this.reason !== undefined;
  }

  /** Throws the abandonment error if the call has been abandoned. */
  check(): void {
    if (this.reason) throw this.reason;
  }

  /** `promise`, unless the call is abandoned first. */
  race<T>(promise: Promise<T>): Promise<T> {
    if (this.reason) {
      promise.catch(() => undefined);
      return Promise.reject(this.reason);
    }
    return Promise.race([promise, this.failed]);
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.options.signal?.removeEventListener("abort", this.onAbort);
    this.client?.off("state", this.onState);
  }

  private stop(error: ZkError): void {
    if (this.reason) return;
    this.reason = error;
    this.dispose();
    this.fail(error);
  }
}

/**
 * Runs `work` bounded by a new Deadline of `what`, `options` and `client`, and disposes the
 * deadline once `work` has settled, whichever way.
 */
export async function withDeadline<T>(what: string, options: WaitOptions, client: Client, work: (deadline: Deadline) => Promise<T>): Promise<T> {
  const deadline = new Deadline(what, options, client);
  try {
    return await work(deadline);
  } finally {
    deadline.dispose();
  }
}

/** A per-attempt unique name prefix (Curator's "protected" names): `_c_<uuid>-`. */
export function protectedPrefix(): string {
  return `_c_${randomUUID()}-`;
}

/** The protected prefix a node name carries, if any. */
export function protectedPrefixOf(name: string): string | undefined {
  const match = /^_c_[0-9a-f-]{36}-/.exec(name);
  return match?.[0];
}

/** A node name without its protected prefix ("_c_…-lock-0000000003" → "lock-0000000003"). */
export function withoutProtectedPrefix(name: string): string {
  const prefix = protectedPrefixOf(name);
  return prefix === undefined ? name : name.slice(prefix.length);
}

/** The sequence number ZooKeeper appended to a sequential node's name (its last 10 digits). */
export function sequenceOf(name: string): number {
  const match = /(\d{10})$/.exec(name);
  if (!match) throw new ZkError("BADARGUMENTS", `not a sequential node name: ${name}`);
  return Number(match[1]);
}

/** Sequential node names in sequence order (the protected prefix does not count). */
export function sortBySequence(names: readonly string[]): string[] {
  return [...names].sort((a, b) => sequenceOf(a) - sequenceOf(b));
}

/** Creates `path` and any missing ancestors as empty persistent nodes; existing ones are fine. */
export async function ensurePath(client: Client, path: string): Promise<void> {
  if (path === "/") return;
  if (await client.exists(path)) return;
  const parts = path.split("/").filter((p) => p.length > 0);
  let current = "";
  for (const part of parts) {
    current += `/${part}`;
    try {
      await client.create(current, "");
    } catch (error) {
      if (!isZkError(error, "NODEEXISTS")) throw error;
    }
  }
}

/** Waits for the client to be connected again (or fails with its session). */
function reconnected(client: Client, deadline: Deadline): Promise<void> {
  if (client.state === "connected" || client.state === "reconnected") return Promise.resolve();
  return deadline.race(
    new Promise<void>((resolve, reject) => {
      const listener = (state: string): void => {
        if (state === "connected" || state === "reconnected") {
          client.off("state", listener);
          resolve();
        } else if (isSessionEnd(state)) {
          client.off("state", listener);
          reject(sessionEndError(state, `session ${state} while waiting to reconnect`));
        }
      };
      client.on("state", listener);
    }),
  );
}

/**
 * Runs `attempt` until it does not fail with CONNECTIONLOSS, waiting for the session to reconnect
 * between tries. Only for operations that are safe to repeat (reads, or writes made idempotent).
 */
export async function retryOnConnectionLoss<T>(client: Client, deadline: Deadline, attempt: () => Promise<T>): Promise<T> {
  for (;;) {
    deadline.check();
    try {
      return await deadline.race(attempt());
    } catch (error) {
      if (!isZkError(error, "CONNECTIONLOSS")) throw error;
      await reconnected(client, deadline);
    }
  }
}

/**
 * Creates a sequential (or plain) node under `parent` named `<protected prefix><name>`, surviving
 * a connection lost mid-create: after CONNECTIONLOSS it looks among `parent`'s children for its
 * prefix, so a create that did happen is found instead of made twice. Returns the full path.
 */
export async function createProtected(client: Client, parent: string, name: string, data: Data, mode: CreateMode, deadline: Deadline): Promise<string> {
  const prefix = protectedPrefix();
  const path = `${parent}/${prefix}${name}`;
  for (;;) {
    deadline.check();
    try {
      return await deadline.race(client.create(path, data, { mode }));
    } catch (error) {
      if (isZkError(error, "NONODE")) {
        await ensurePath(client, parent);
        continue;
      }
      if (!isZkError(error, "CONNECTIONLOSS")) throw error;
      await reconnected(client, deadline);
      // sync first: the server we reconnected to may not have applied our create yet, and
      // missing it here would make a second node.
      const children = await retryOnConnectionLoss(client, deadline, async () => {
        await client.sync(parent);
        return client.getChildren(parent);
      });
      const mine = children.find((child) => child.startsWith(prefix));
      if (mine !== undefined) return `${parent}/${mine}`;
    }
  }
}

/**
 * Resolves once `path` does not exist (at once if it is already gone). One exists-watch, no
 * polling; a watch lost to a reconnect is re-registered by the SDK, and the check is repeated.
 */
export async function waitUntilGone(client: Client, path: string, deadline: Deadline): Promise<void> {
  for (;;) {
    deadline.check();
    let fired!: (event: WatchedEvent) => void;
    const event = new Promise<WatchedEvent>((resolve) => (fired = resolve));
    const stat = await retryOnConnectionLoss(client, deadline, () => client.exists(path, { watch: (e) => fired(e) }));
    if (stat === null) return;
    const seen = await deadline.race(event);
    if (seen.type === "NodeDeleted") return;
  }
}

/** Deletes `path`, treating "already gone" as success and retrying across a lost connection. */
export async function deleteIfExists(client: Client, path: string, deadline: Deadline = new Deadline("delete", {}, client)): Promise<void> {
  try {
    await retryOnConnectionLoss(client, deadline, () => orIfNoNode(client.delete(path), undefined));
  } finally {
    deadline.dispose();
  }
}

/**
 * Deletes `node`, one this session made under a name of its own (a contender, a candidate), so
 * no ownership check is needed: deleteIfExists, except that a session that is gone counts as
 * success too, since its ephemerals went with it. `deadline` is disposed, as by deleteIfExists.
 */
export async function removeOwnedNode(client: Client, node: string, deadline: Deadline = new Deadline(`delete ${node}`, {}, client)): Promise<void> {
  try {
    await deleteIfExists(client, node, deadline);
  } catch (error) {
    if (!isSessionEndError(error)) throw error;
  }
}

/** Whether `error` is a ZkError with `code`. */
export function isZkError(error: unknown, code: ZkErrorName): boolean {
  return error instanceof ZkError && error.code === code;
}

/** What `work` resolves with, or `fallback` if it fails with NONODE (the node is not there). */
export async function orIfNoNode<T, F>(work: Promise<T>, fallback: F): Promise<T | F> {
  try {
    return await work;
  } catch (error) {
    if (isZkError(error, "NONODE")) return fallback;
    throw error;
  }
}

const utf8Decoder = new TextDecoder();

/** Znode data as text. */
export function textOf(data: Uint8Array): string {
  return utf8Decoder.decode(data);
}

/** The last segment of a znode path. */
export function nameOf(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/** "/a/b" → "/a"; "/a" and the root itself → "/". */
export function parentOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash <= 0 ? "/" : path.slice(0, slash);
}

/** The path of child `name` of `parent` ("/" and "a" → "/a"). */
export function childPath(parent: string, name: string): string {
  return parent === "/" ? `/${name}` : `${parent}/${name}`;
}

/**
 * Waits for `work` bounded by `deadline`, while `work` itself runs bounded only by the session: a
 * write whose outcome is unknown when the caller gives up still lands (or is found after a lost
 * connection), and what it made is then handed to `undo`, so an abandoned call leaves nothing
 * behind. The rejection waits for the undo as long as `awaitUndo` does (by default not at all:
 * the undo finishes in the background).
 */
export async function settleOrUndo<T>(
  client: Client,
  what: string,
  deadline: Deadline,
  work: (sessionBound: Deadline) => Promise<T>,
  undo: (landed: T) => Promise<void>,
  awaitUndo?: (undoing: Promise<void>) => Promise<void>,
): Promise<T> {
  const sessionBound = new Deadline(what, {}, client);
  const landing = work(sessionBound);
  landing.then(
    () => sessionBound.dispose(),
    () => sessionBound.dispose(),
  );
  try {
    return await deadline.race(landing);
  } catch (error) {
    const undoing = landing.then(
      (landed) => undo(landed).catch(() => undefined),
      () => undefined,
    );
    if (awaitUndo) await awaitUndo(undoing);
    throw error;
  }
}

/**
 * createProtected, bounded by `deadline`, that never leaves a node behind when the caller gives
 * up (settleOrUndo deletes a node whose create lands after that). A caller whose rejection must
 * mean "no node is left" passes `awaitCleanUp`, as settleOrUndo's `awaitUndo`.
 */
export function createProtectedOrCleanUp(
  client: Client,
  parent: string,
  name: string,
  data: Data,
  mode: CreateMode,
  deadline: Deadline,
  awaitCleanUp?: (cleaning: Promise<void>) => Promise<void>,
): Promise<string> {
  return settleOrUndo(
    client,
    `create ${parent}/${name}`,
    deadline,
    (sessionBound) => createProtected(client, parent, name, data, mode, sessionBound),
    (path) => deleteIfExists(client, path),
    awaitCleanUp,
  );
}

/**
 * Deletes `path` if it is an ephemeral of this session, for a fixed name another session may hold
 * (never another session's node: the delete is conditional on the version just seen as ours, and a
 * node changed since it was looked at is looked at again), retrying across a lost connection. A
 * session that is gone counts as success: its ephemerals went with it. Bounded by `deadline`
 * (which the caller disposes), else only by the session.
 */
export async function deleteOwnEphemeral(client: Client, path: string, deadline?: Deadline): Promise<void> {
  if (deadline === undefined) return withDeadline(`delete ${path}`, {}, client, (bound) => deleteOwnEphemeral(client, path, bound));
  try {
    for (;;) {
      const stat = await retryOnConnectionLoss(client, deadline, () => client.exists(path));
      if (stat === null || stat.ephemeralOwner !== client.sessionId) return;
      try {
        await retryOnConnectionLoss(client, deadline, () => orIfNoNode(client.delete(path, { version: stat.version }), undefined));
        return;
      } catch (error) {
        if (!isZkError(error, "BADVERSION")) throw error;
      }
    }
  } catch (error) {
    if (!isSessionEndError(error)) throw error;
  }
}

/**
 * The callers blocked until a recipe reaches a state (elected, active): each waits bounded by its
 * own deadline, and all are released together when the state is reached or can no longer be.
 */
export class Waiters {
  private readonly waiting = new Set<{ resolve: () => void; reject: (error: ZkError) => void }>();

  /**
   * Resolves at the next `resolveAll`; rejects at the next `rejectAll`, or as a Deadline of
   * `what`, `options` and `client` does (timeout, abort, session gone).
   */
  async wait(what: string, options: WaitOptions, client: Client): Promise<void> {
    let waiter!: { resolve: () => void; reject: (error: ZkError) => void };
    const released = new Promise<void>((resolve, reject) => (waiter = { resolve, reject }));
    this.waiting.add(waiter);
    try {
      await withDeadline(what, options, client, (deadline) => deadline.race(released));
    } finally {
      this.waiting.delete(waiter);
    }
  }

  resolveAll(): void {
    for (const waiter of this.waiting) waiter.resolve();
    this.waiting.clear();
  }

  rejectAll(error: ZkError): void {
    for (const waiter of this.waiting) waiter.reject(error);
    this.waiting.clear();
  }
}

/** How a session ends for good: expired, closed, or its SASL login refused on a new connection (ZooKeeper's AUTH_FAILED). */
export type SessionEnd = "expired" | "closed" | "authFailed";

export function isSessionEnd(state: string): state is SessionEnd {
  return state === "expired" || state === "closed" || state === "authFailed";
}

/**
 * What a recipe's callers get once its session ended `how`: AUTHFAILED after a refused SASL login
 * (the client will not reconnect, so retrying cannot help), SESSIONEXPIRED otherwise.
 */
export function sessionEndError(how: SessionEnd, message: string, path?: string): ZkError {
  return new ZkError(how === "authFailed" ? "AUTHFAILED" : "SESSIONEXPIRED", message, path);
}

/** Whether `error` says the session is over (SESSIONEXPIRED, or AUTHFAILED after a refused login). */
export function isSessionEndError(error: unknown): boolean {
  return isZkError(error, "SESSIONEXPIRED") || isZkError(error, "AUTHFAILED");
}

/** The events every recipe bound to its session emits, beside its own. */
export interface SessionBoundEvents {
  /** The session is gone: the recipe does nothing more, and a new one on a new session must be made. */
  lost: [reason: SessionEnd];
  /** A background job failed (its SerialJob reports it here). */
  error: [error: unknown];
}

/** What a long-running recipe does as its session goes through disconnection, reconnection and its end. */
export interface SessionStages {
  disconnected?(): void;
  reconnected(): void;
  /** Called once; the follower has stopped by then. */
  ended(reason: SessionEnd): void;
}

/** Feeds `client`'s state changes to `stages` between `start` and `stop` (or the session's end). */
export class SessionFollower {
  private following = false;
  private readonly onState = (state: ClientState): void => {
    if (state === "disconnected") {
      this.stages.disconnected?.();
    } else if (state === "reconnected") {
      this.stages.reconnected();
    } else if (isSessionEnd(state)) {
      this.stop();
      this.stages.ended(state);
    }
  };

  constructor(
    private readonly client: Client,
    private readonly stages: SessionStages,
  ) {}

  start(): void {
    if (this.following) return;
    this.following = true;
    this.client.on("state", this.onState);
  }

  stop(): void {
    this.following = false;
    this.client.off("state", this.onState);
  }
}

/**
 * A serialized background job of a long-running recipe (a check, a scan): requests made while one
 * run is queued share it. A run's failure is reported on `owner`'s "error" event, except a lost
 * connection (retried on reconnect) and a lost session (the owner reports that itself).
 */
export class SerialJob {
  private queued = false;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly run: () => Promise<void>,
    private readonly owner: EventEmitter,
  ) {}

  request(): Promise<void> {
    if (this.queued) return this.chain;
    this.queued = true;
    this.chain = this.chain.then(async () => {
      this.queued = false;
      try {
        await this.run();
      } catch (error) {
        if (!isZkError(error, "CONNECTIONLOSS") && !isSessionEndError(error)) reportError(this.owner, error);
      }
    });
    return this.chain;
  }
}

/** Calls `emitter.emit("error", error)` only when someone listens (an unheard "error" would throw). */
export function reportError(emitter: EventEmitter, error: unknown): void {
  if (emitter.listenerCount("error") > 0) emitter.emit("error", error);
}
