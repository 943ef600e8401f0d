/**
 * The record of a chaos run: every operation a client invoked, with how it ended, in the order
 * the harness saw invocations and completions. Times are milliseconds since the run started, on
 * the harness's one monotonic clock; nothing compares them with a server's clock.
 *
 * Outcomes, as Jepsen names them: "ok" (the server answered success), "fail" (the server answered
 * an error that proves the operation did not take effect, e.g. BADVERSION, NODEEXISTS), "unknown"
 * (no answer that settles it: CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONEXPIRED while in flight, or
 * still pending when the run ended — the operation may or may not have happened).
 */

export type Outcome = "ok" | "fail" | "unknown";

interface OpBase {
  /** Unique within a history, increasing in invocation order. */
  id: number;
  /** The client worker that issued it; a worker issues one operation at a time. */
  process: number;
  /** The session it went through (hex id); a worker opens a new session after expiry. */
  session: string;
  invokedAt: number;
  /** Undefined when the run ended with the operation still pending (then outcome is "unknown"). */
  completedAt?: number;
  outcome: Outcome;
  /** The ZooKeeper error code name when the outcome is "fail" or "unknown" by error. */
  error?: string;
}

/** Register workload: one znode per key, value strings unique per key ("init" at version 0). */
export interface WriteOp extends OpBase {
  f: "write";
  key: string;
  value: string;
  /** setData(version -1) answer: the new version and mzxid (decimal string). */
  result?: { version: number; mzxid: string };
}

export interface CasOp extends OpBase {
  f: "cas";
  key: string;
  expectedVersion: number;
  value: string;
  /** setData(expectedVersion) answer on ok; a "fail" outcome carries error BADVERSION. */
  result?: { version: number; mzxid: string };
}

export interface ReadOp extends OpBase {
  f: "read";
  key: string;
  /** getData answer on ok. */
  result?: { value: string; version: number; mzxid: string };
}

/** Set workload: create of `/…/set/<element>`; elements are unique strings. */
export interface AddOp extends OpBase {
  f: "add";
  element: string;
}

/**
 * Unique-id workload: a persistent-sequential create of `<parent>/<tag>-` (the tag unique per op);
 * the id is the sequence number the server appended, `result.id` as the answer's path carried it.
 */
export interface TakeIdOp extends OpBase {
  f: "take-id";
  parent: string;
  tag: string;
  result?: { id: number };
}

/**
 * Lock workload. "acquire" ends ok with the fencing token (decimal string); "use" is one write to
 * the fenced resource made while the worker believed it held the lock (ok: accepted, fail:
 * refused as stale, error "FENCED"); "release" ends ok when the worker let the lock go.
 */
export interface AcquireOp extends OpBase {
  f: "acquire";
  token?: string;
}

export interface UseOp extends OpBase {
  f: "use";
  token: string;
}

export interface ReleaseOp extends OpBase {
  f: "release";
  token: string;
}

/**
 * Queue workload (ZooKeeper's queue recipe): "enqueue" is a persistent-sequential create under the
 * queue holding `item` (unique per op); "dequeue" is the delete of one child, `path`, whose data a
 * getData just before read as `item` — a take is the first dequeue that ends ok after a
 * getChildren, the lowest child first; NONODE (someone else took it) ends a dequeue as fail.
 */
export interface EnqueueOp extends OpBase {
  f: "enqueue";
  item: string;
}

export interface DequeueOp extends OpBase {
  f: "dequeue";
  path: string;
  item: string;
}

/**
 * Counter workload: one znode holding a decimal count, "0" at version 0. "increment" read
 * `expectedVersion` and wrote `expectedVersion + 1` only if the version was still that (so value
 * and version stay equal); "counter-read" is a sync then a getData.
 */
export interface IncrementOp extends OpBase {
  f: "increment";
  expectedVersion: number;
  result?: { value: number };
}

export interface CounterReadOp extends OpBase {
  f: "counter-read";
  result?: { value: number };
}

/**
 * Watch workload: one writer sets the watched key to `value` (unique per write); watchers read it
 * and keep a watch on it, "one-shot" (re-armed by the getData that reads each value) or
 * "persistent" (addWatch, read with a plain getData after each (re)registration). "watch-event"
 * records each NodeDataChanged a watcher was called with, "watch-lost" each time its connection
 * left the connected state (`state` the state it went to), both as they happened.
 */
export type WatchMode = "one-shot" | "persistent";

export interface WatchWriteOp extends OpBase {
  f: "watch-write";
  value: string;
  result?: { version: number; mzxid: string };
}

export interface WatchReadOp extends OpBase {
  f: "watch-read";
  mode: WatchMode;
  result?: { value: string; version: number; mzxid: string };
}

export interface WatchEventOp extends OpBase {
  f: "watch-event";
  mode: WatchMode;
  /** The zxid of the txn that fired it (decimal). */
  zxid: string;
}

export interface WatchLostOp extends OpBase {
  f: "watch-lost";
  mode: WatchMode;
  state: string;
}

export type Op =
  | WriteOp
  | CasOp
  | ReadOp
  | AddOp
  | TakeIdOp
  | AcquireOp
  | UseOp
  | ReleaseOp
  | EnqueueOp
  | DequeueOp
  | IncrementOp
  | CounterReadOp
  | WatchWriteOp
  | WatchReadOp
  | WatchEventOp
  | WatchLostOp;

/** The register key every register op names; keys start at version 0 holding INITIAL_VALUE. */
export const INITIAL_VALUE = "init";

/** What the set workload found at the end, per server, after a sync on each. */
export interface FinalSetRead {
  server: number;
  elements: string[];
}

/** What the unique-id workload found at the end on one server, after a sync: every node under every id parent. */
export interface FinalIdRead {
  server: number;
  /** `<parent>/<tag>-<id, ten digits>` */
  nodes: string[];
}

/** What the queue workload found at the end on one server: the items still queued, in queue order. */
export interface FinalQueueRead {
  server: number;
  items: string[];
}

/** The counter's value on one server at the end. */
export interface FinalCounterRead {
  server: number;
  value: number;
}

/** The watched key on one server at the end. */
export interface FinalWatchedRead {
  server: number;
  value: string;
  version: number;
  mzxid: string;
}

/** Everything read from the servers at the end. */
export interface FinalReads {
  sets: readonly FinalSetRead[];
  ids: readonly FinalIdRead[];
  queues: readonly FinalQueueRead[];
  counters: readonly FinalCounterRead[];
  watched: readonly FinalWatchedRead[];
}

/** One fault the nemesis injected, with when it started and (if healed) ended. */
export interface FaultRecord {
  kind: string;
  /** e.g. "partition {1,2} | {3}", "kill -9 server 2 (leader)", "SIGSTOP server 1". */
  description: string;
  startedAt: number;
  endedAt?: number;
}

/** A checker's judgement. `violations` lists human-readable findings; empty when valid. */
export interface Verdict {
  checker: string;
  valid: boolean | "unknown";
  violations: string[];
  /** Counts and measures worth reporting (ops checked, states explored, …). */
  stats: Record<string, number>;
}
