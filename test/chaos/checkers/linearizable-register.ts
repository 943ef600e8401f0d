/**
 * Linearizability of the register workload's writes ("write" = setData(-1), "cas" =
 * setData(expectedVersion)). Reads are left out: ZooKeeper serves them from the connected
 * server's replica, so they are only sequentially consistent (read-consistency.ts judges them).
 *
 * Keys are independent registers, and a history is linearizable iff each key's sub-history is
 * (linearizability is compositional), so each key is searched on its own: smaller searches, and a
 * violation names its key.
 *
 * The model's state is the znode's version; values play no part, because every write is pinned by
 * the version it was answered with. The search is the just-in-time linearization of Wing & Gong as
 * refined by Lowe: walk the call/return events in time order, linearize a pending call whenever the
 * model accepts it, backtrack when a return is reached whose op is still unlinearized, and remember
 * every (set of linearized ops, version) configuration already explored so no configuration is
 * searched twice.
 *
 * An op with an unknown outcome has no return bound: it may take effect at any point after its
 * invocation, or never, so the search succeeds once every op with a definite outcome is linearized.
 * Unknown ops are the costly part of the search, and `checkKey` explains the two reductions that
 * keep them cheap.
 */
import type { CasOp, Op, Verdict, WriteOp } from "../history.js";
import { describeOp, Findings } from "./format.js";

export const REGISTER_CHECKER = "linearizable-register";

export interface RegisterCheckOptions {
  /** Configurations one key may explore before its verdict becomes "unknown" instead of hanging. */
  budgetStates?: number;
}

export const DEFAULT_BUDGET_STATES = 2_000_000;

type RegisterOp = WriteOp | CasOp;

/**
 * How an op may change the version (the rule `stepFrom` applies):
 * - write-ok: answered with version v, so the version was v-1 and becomes v;
 * - cas-ok: answered with expectedVersion+1, so the version was expectedVersion;
 * - cas-ok-self-contradicting: an ok cas whose answer is not expectedVersion+1, which no state explains;
 * - cas-refused: BADVERSION, so the version was not expectedVersion, and stays;
 * - write-unknown: may bump the version at any point after its invocation, or never;
 * - cas-unknown: may bump it at a point after its invocation where it equals expectedVersion, or never.
 */
type Step = "write-ok" | "cas-ok" | "cas-ok-self-contradicting" | "cas-refused" | "write-unknown" | "cas-unknown";

interface PreparedOp {
  op: RegisterOp;
  step: Step;
  /** The version the op needs just before it (write-ok, cas-ok, cas-unknown) or must not see (cas-refused). */
  version: number;
  definite: boolean;
}

type KeyResult = { kind: "linearizable"; explored: number } | { kind: "violation"; explored: number; message: string } | { kind: "budget"; explored: number };

export function checkRegisterLinearizable(ops: readonly Op[], options: RegisterCheckOptions = {}): Verdict {
  const budget = options.budgetStates ?? DEFAULT_BUDGET_STATES;
  const findings = new Findings();
  const byKey = new Map<string, PreparedOp[]>();
  let opsChecked = 0;
  let unknownOps = 0;
  let ignoredOps = 0;
  let malformed = false;

  for (const op of ops) {
    if (op.f !== "write" && op.f !== "cas") continue;
    const prepared = prepare(op);
    if (typeof prepared === "string") {
      malformed = true;
      findings.add(`history malformed: ${prepared}: ${describeOp(op)}`);
      continue;
    }
    if (prepared === undefined) {
      ignoredOps++;
      continue;
    }
    opsChecked++;
    if (!prepared.definite) unknownOps++;
    let list = byKey.get(op.key);
    if (list === undefined) byKey.set(op.key, (list = []));
    list.push(prepared);
  }

  let explored = 0;
  let violatingKeys = 0;
  const undecidedKeys: string[] = [];
  for (const [key, list] of [...byKey].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const result = checkKey(key, list, budget);
    explored += result.explored;
    if (result.kind === "violation") {
      violatingKeys++;
      findings.add(result.message);
    } else if (result.kind === "budget") {
      undecidedKeys.push(key);
      findings.add(`key ${JSON.stringify(key)}: undecided, the search gave up after exploring ${result.explored} configurations (budget ${budget})`);
    }
  }

  return {
    checker: REGISTER_CHECKER,
    valid: malformed || violatingKeys > 0 ? false : undecidedKeys.length > 0 ? "unknown" : true,
    violations: findings.list(),
    stats: {
      opsChecked,
      keys: byKey.size,
      exploredConfigurations: explored,
      unknownOps,
      ignoredOps,
      violatingKeys,
      undecidedKeys: undecidedKeys.length,
    },
  };
}

/** The op's step rule; undefined for ops that provably did nothing; a string says why it is malformed. */
function prepare(op: RegisterOp): PreparedOp | undefined | string {
  const base = { op };
  if (op.outcome !== "unknown" && op.completedAt === undefined) return `${op.outcome} op without completedAt`;
  if (op.outcome === "unknown") {
    return op.f === "write"
      ? { ...base, step: "write-unknown", version: -1, definite: false }
      : { ...base, step: "cas-unknown", version: op.expectedVersion, definite: false };
  }
  if (op.outcome === "fail") {
    // A refused setData(-1) and a cas refused for any reason but the version (NONODE, …) changed
    // nothing and say nothing about the version; only BADVERSION constrains the state.
    // The history format documents a cas "fail" as BADVERSION, so a missing code means that.
    if (op.f === "cas" && (op.error === undefined || op.error === "BADVERSION")) {
      return { ...base, step: "cas-refused", version: op.expectedVersion, definite: true };
    }
    return undefined;
  }
  if (op.result === undefined) return "ok op without result";
  if (op.f === "write") return { ...base, step: "write-ok", version: op.result.version - 1, definite: true };
  if (op.result.version !== op.expectedVersion + 1) {
    return { ...base, step: "cas-ok-self-contradicting", version: op.expectedVersion, definite: true };
  }
  return { ...base, step: "cas-ok", version: op.expectedVersion, definite: true };
}

/** The version after `p` at `version`, or -1 when the model refuses it there (versions are ≥ 0). */
function stepFrom(p: PreparedOp, version: number): number {
  switch (p.step) {
    case "write-ok":
    case "cas-ok":
    case "cas-unknown":
      return version === p.version ? version + 1 : -1;
    case "cas-refused":
      return version !== p.version ? version : -1;
    case "write-unknown":
      return version + 1;
    case "cas-ok-self-contradicting":
      return -1;
  }
}

function requirement(p: PreparedOp): string {
  switch (p.step) {
    case "write-ok":
    case "cas-ok":
      return `it needs version ${p.version} just before it`;
    case "cas-refused":
      return `it needs a version other than ${p.version} at some point in its interval`;
    case "cas-ok-self-contradicting":
      return `its own answer is impossible: a cas on version ${p.version} must produce version ${p.version + 1}`;
    case "write-unknown":
    case "cas-unknown":
      return "it is unknown";
  }
}

const MAX_OPS_LISTED = 20;
const MAX_EARLIER_LISTED = 6;
const MAX_VERSIONS_LISTED = 8;

/** Where the search is within one configuration's candidates, tried in this order. */
const SCAN_LIST = 0;
const TRY_UNKNOWN_CAS = 1;
const TRY_UNKNOWN_WRITE = 2;
const EXHAUSTED = 3;

/** What a stack frame linearized. */
const FRAME_DEFINITE = 0;
const FRAME_UNKNOWN_CAS = 1;
const FRAME_UNKNOWN_WRITE = 2;

function checkKey(key: string, prepared: PreparedOp[], budget: number): KeyResult {
  // Invocation order (ties by id) is the order in which interchangeable unknown ops are used.
  prepared.sort((a, b) => a.op.invokedAt - b.op.invokedAt || a.op.id - b.op.id);
  const opCount = prepared.length;

  interface Event {
    time: number;
    isCall: boolean;
    op: number;
  }
  const events: Event[] = [];
  prepared.forEach((p, i) => {
    events.push({ time: p.op.invokedAt, isCall: true, op: i });
    // Unknown ops have no return event: their completion bound is +infinity.
    if (p.definite) events.push({ time: p.op.completedAt!, isCall: false, op: i });
  });
  // Calls before returns at equal times: intervals that touch count as concurrent, the permissive
  // reading of a millisecond clock that cannot order them.
  events.sort((a, b) => a.time - b.time || Number(b.isCall) - Number(a.isCall) || prepared[a.op]!.op.id - prepared[b.op]!.op.id);

  // Events are numbered 1..m in time order. A doubly linked list between a head (0) and a tail
  // (m+1) sentinel threads the definite ops' events. Lifting an op unlinks its events but leaves
  // their own links intact, so undoing lifts in reverse order relinks them exactly (the stack
  // guarantees that order).
  const eventCount = events.length;
  const tail = eventCount + 1;
  const next = new Int32Array(eventCount + 2);
  const prev = new Int32Array(eventCount + 2);
  const eventOp = new Int32Array(eventCount + 2);
  const eventIsCall = new Uint8Array(eventCount + 2);
  const callEventOf = new Int32Array(opCount);
  const returnEventOf = new Int32Array(opCount);
  let last = 0;
  events.forEach((ev, index) => {
    const e = index + 1;
    eventOp[e] = ev.op;
    eventIsCall[e] = ev.isCall ? 1 : 0;
    if (ev.isCall) callEventOf[ev.op] = e;
    else returnEventOf[ev.op] = e;
    if (!prepared[ev.op]!.definite) return;
    next[last] = e;
    prev[e] = last;
    last = e;
  });
  next[last] = tail;
  prev[tail] = last;
  const unlink = (e: number): void => {
    next[prev[e]!] = next[e]!;
    prev[next[e]!] = prev[e]!;
  };
  const relink = (e: number): void => {
    next[prev[e]!] = e;
    prev[next[e]!] = e;
  };

  // Unknown ops stay off the list. Those with the same effect and precondition are interchangeable
  // once invoked (none has a return bound), so only the earliest-invoked pending one of each kind
  // is ever a candidate; and as the version only grows, an unknown cas can only ever fire at the
  // one version it expects. Each configuration so has at most two unknown candidates, looked up
  // directly: scanning every pending unknown op made long histories quadratic, and letting any of
  // them fire made the configurations explode combinatorially.
  const unknownWrites: number[] = [];
  const unknownCasByVersion = new Map<number, { ops: number[]; fired: number }>();
  prepared.forEach((p, i) => {
    if (p.step === "write-unknown") unknownWrites.push(i);
    if (p.step !== "cas-unknown") return;
    let group = unknownCasByVersion.get(p.version);
    if (group === undefined) unknownCasByVersion.set(p.version, (group = { ops: [], fired: 0 }));
    group.ops.push(i);
  });
  let unknownWritesFired = 0;

  const linearized = new LinearizedSet(opCount);
  const cache = new ConfigCache(linearized.words.length);
  const stackKind: number[] = [];
  const stackRef: number[] = [];
  const stackVersion: number[] = [];
  const stackFirstReturn: number[] = [];
  let remainingDefinite = prepared.filter((p) => p.definite).length;
  let version = 0;
  let phase = SCAN_LIST;
  let event = next[0]!;
  /** The first return event still on the list: ops invoked after it cannot be linearized yet. */
  let firstReturn = tail;

  /** Linearizes op `i` into a configuration not explored before; false if it was. */
  const tryLinearize = (i: number, after: number): boolean => {
    linearized.add(i);
    if (cache.addIfAbsent(linearized, after)) return true;
    linearized.remove(i);
    return false;
  };
  const push = (kind: number, ref: number): void => {
    stackKind.push(kind);
    stackRef.push(ref);
    stackVersion.push(version);
    stackFirstReturn.push(firstReturn);
  };

  // Diagnosis: the furthest return event any branch reached marks the shortest prefix of the history
  // that cannot be linearized; the versions seen there say what its op would have had to accept.
  let furthestBlocked = -1;
  const versionsAtFurthest = new Set<number>();
  let moreVersionsAtFurthest = false;

  while (remainingDefinite > 0) {
    if (cache.size > budget) return { kind: "budget", explored: cache.size };

    if (phase === SCAN_LIST) {
      if (eventIsCall[event] === 1) {
        const i = eventOp[event]!;
        const after = stepFrom(prepared[i]!, version);
        if (after >= 0 && tryLinearize(i, after)) {
          push(FRAME_DEFINITE, event);
          unlink(event);
          unlink(returnEventOf[i]!);
          remainingDefinite--;
          version = after;
          event = next[0]!;
          continue;
        }
        event = next[event]!;
        continue;
      }
      firstReturn = event;
      phase = TRY_UNKNOWN_CAS;
    }

    if (phase === TRY_UNKNOWN_CAS) {
      const group = unknownCasByVersion.get(version);
      const candidate = group?.ops[group.fired];
      if (group !== undefined && candidate !== undefined && callEventOf[candidate]! < firstReturn) {
        if (tryLinearize(candidate, stepFrom(prepared[candidate]!, version))) {
          push(FRAME_UNKNOWN_CAS, candidate);
          group.fired++;
          version++;
          phase = SCAN_LIST;
          event = next[0]!;
          continue;
        }
        // Firing the cas rather than a pending unknown write leaves that write free to fire later,
        // while the cas could never fire again: the write's branch can do nothing the cas's cannot.
        phase = EXHAUSTED;
      } else {
        phase = TRY_UNKNOWN_WRITE;
      }
    }

    if (phase === TRY_UNKNOWN_WRITE) {
      // Failing here exhausts the configuration: the code below backtracks and sets the next phase.
      const candidate = unknownWrites[unknownWritesFired];
      if (candidate !== undefined && callEventOf[candidate]! < firstReturn && tryLinearize(candidate, stepFrom(prepared[candidate]!, version))) {
        push(FRAME_UNKNOWN_WRITE, candidate);
        unknownWritesFired++;
        version++;
        phase = SCAN_LIST;
        event = next[0]!;
        continue;
      }
    }

    // Every candidate of this configuration failed: a return was reached with its op pending.
    if (firstReturn !== tail) {
      if (firstReturn > furthestBlocked) {
        furthestBlocked = firstReturn;
        versionsAtFurthest.clear();
        moreVersionsAtFurthest = false;
      }
      if (firstReturn === furthestBlocked && !versionsAtFurthest.has(version)) {
        if (versionsAtFurthest.size < MAX_VERSIONS_LISTED) versionsAtFurthest.add(version);
        else moreVersionsAtFurthest = true;
      }
    }
    const kind = stackKind.pop();
    if (kind === undefined) {
      const blocked = furthestBlocked > 0 ? prepared[eventOp[furthestBlocked]!] : undefined;
      return { kind: "violation", explored: cache.size, message: explainViolation(key, prepared, blocked, versionsAtFurthest, moreVersionsAtFurthest) };
    }
    const ref = stackRef.pop()!;
    version = stackVersion.pop()!;
    firstReturn = stackFirstReturn.pop()!;
    if (kind === FRAME_DEFINITE) {
      const i = eventOp[ref]!;
      linearized.remove(i);
      relink(returnEventOf[i]!);
      relink(ref);
      remainingDefinite++;
      phase = SCAN_LIST;
      event = next[ref]!;
    } else if (kind === FRAME_UNKNOWN_CAS) {
      linearized.remove(ref);
      unknownCasByVersion.get(version)!.fired--;
      phase = EXHAUSTED;
    } else {
      linearized.remove(ref);
      unknownWritesFired--;
      // The unknown write is the last candidate of a configuration.
      phase = EXHAUSTED;
    }
  }
  return { kind: "linearizable", explored: cache.size };
}

function explainViolation(key: string, prepared: PreparedOp[], blocked: PreparedOp | undefined, versions: Set<number>, moreVersions: boolean): string {
  // Unreachable while every definite op has a return event, which a branch must meet before the end.
  if (blocked === undefined) return `key ${JSON.stringify(key)}: not linearizable`;
  const start = blocked.op.invokedAt;
  const end = blocked.op.completedAt!;
  const overlapping = prepared.filter((p) => p !== blocked && p.op.invokedAt <= end && (!p.definite || p.op.completedAt! >= start));
  // Unknown ops overlap everything after their invocation; list the definite ones first and the
  // most recent unknown ones after, or old lost writes would crowd out the ops that matter.
  const concurrent = [...overlapping.filter((p) => p.definite), ...overlapping.filter((p) => !p.definite).reverse()];
  const earlier = prepared
    .filter((p) => p.definite && p.op.completedAt! < start)
    .sort((a, b) => a.op.completedAt! - b.op.completedAt!)
    .slice(-MAX_EARLIER_LISTED);
  const listed = [...earlier, ...concurrent.slice(0, MAX_OPS_LISTED - 1 - earlier.length)];
  const omitted = concurrent.length + earlier.length - listed.length;
  const seen = [...versions].sort((a, b) => a - b).join(" or ") + (moreVersions ? " or others" : "");
  return [
    `key ${JSON.stringify(key)}: not linearizable; no order of its writes reaches the completion of ${describeOp(blocked.op)}`,
    `  ${requirement(blocked)}, but the version could only be ${seen} when it completed`,
    `  the last ops before it and those concurrent with it (intervals that touch count as concurrent):`,
    ...listed.map((p) => `    ${describeOp(p.op)}`),
    ...(omitted > 0 ? [`    … and ${omitted} more concurrent ops`] : []),
  ].join("\n");
}

/**
 * The set of linearized ops as a bitset, with a Zobrist hash (a fixed random word per op, XORed in
 * and out) so hashing a configuration costs O(1) rather than O(ops).
 */
class LinearizedSet {
  readonly words: Uint32Array;
  hash = 0;
  private readonly zobrist: Uint32Array;

  constructor(opCount: number) {
    this.words = new Uint32Array(Math.max(1, Math.ceil(opCount / 32)));
    this.zobrist = new Uint32Array(opCount);
    // A fixed seed keeps runs reproducible; the values only need to be well mixed.
    let seed = 0x2545f491;
    for (let i = 0; i < opCount; i++) {
      seed = (seed + 0x9e3779b9) | 0;
      this.zobrist[i] = mix32(seed);
    }
  }

  add(i: number): void {
    this.words[i >>> 5]! |= 1 << (i & 31);
    this.hash ^= this.zobrist[i]!;
  }

  remove(i: number): void {
    this.words[i >>> 5]! &= ~(1 << (i & 31));
    this.hash ^= this.zobrist[i]!;
  }
}

function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/**
 * The configurations already explored, exact (a hash collision must not prune a branch, or the
 * checker could report a violation that is not there). Bitsets live in one pooled array rather than
 * one object each: the budget allows millions of entries.
 */
class ConfigCache {
  size = 0;
  private capacity = 1024;
  private bits: Uint32Array;
  private versions: Int32Array;
  private hashes: Uint32Array;
  private chain: Int32Array;
  private buckets: Int32Array;

  constructor(private readonly words: number) {
    this.bits = new Uint32Array(this.capacity * words);
    this.versions = new Int32Array(this.capacity);
    this.hashes = new Uint32Array(this.capacity);
    this.chain = new Int32Array(this.capacity);
    this.buckets = new Int32Array(2 * this.capacity).fill(-1);
  }

  /** Records the configuration; false when it was already there. */
  addIfAbsent(set: LinearizedSet, version: number): boolean {
    const hash = mix32(set.hash ^ Math.imul(version + 1, 0x9e3779b1));
    for (let e = this.buckets[hash & (this.buckets.length - 1)]!; e !== -1; e = this.chain[e]!) {
      if (this.hashes[e] === hash && this.versions[e] === version && this.sameBits(e, set.words)) return false;
    }
    if (this.size === this.capacity) this.grow();
    const e = this.size++;
    this.bits.set(set.words, e * this.words);
    this.versions[e] = version;
    this.hashes[e] = hash;
    const bucket = hash & (this.buckets.length - 1);
    this.chain[e] = this.buckets[bucket]!;
    this.buckets[bucket] = e;
    return true;
  }

  private sameBits(e: number, words: Uint32Array): boolean {
    const base = e * this.words;
    for (let w = 0; w < this.words; w++) if (this.bits[base + w] !== words[w]) return false;
    return true;
  }

  private grow(): void {
    this.capacity *= 2;
    const bits = new Uint32Array(this.capacity * this.words);
    bits.set(this.bits);
    this.bits = bits;
    const versions = new Int32Array(this.capacity);
    versions.set(this.versions);
    this.versions = versions;
    const hashes = new Uint32Array(this.capacity);
    hashes.set(this.hashes);
    this.hashes = hashes;
    this.chain = new Int32Array(this.capacity);
    // Twice as many buckets as entries keeps chains short; rebuild them all.
    this.buckets = new Int32Array(2 * this.capacity).fill(-1);
    for (let e = 0; e < this.size; e++) {
      const bucket = this.hashes[e]! & (this.buckets.length - 1);
      this.chain[e] = this.buckets[bucket]!;
      this.buckets[bucket] = e;
    }
  }
}
