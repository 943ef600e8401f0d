/**
 * One chaos run: a cluster with a proxy on every link, the workloads' clients recording a history,
 * the nemesis injecting faults for the run's length, then everything healed, the final state read
 * from every server, and the history judged by the checkers.
 */
import { performance } from "node:perf_hooks";
import { Client } from "../../src/index.js";
import { Prng } from "../sim/prng.js";
import { waitFor } from "../helpers/wait.js";
import { ChaosCluster } from "./chaos-cluster.js";
import { checkAll, firstProgressAfter, liveness, type Workload } from "./checkers/index.js";
import type { FaultRecord, FinalCounterRead, FinalIdRead, FinalQueueRead, FinalReads, FinalSetRead, FinalWatchedRead, Op, Verdict } from "./history.js";
import { clusterNeeds, Nemesis, type NemesisName, type PartitionShape } from "./nemesis.js";
import { counterWorker, oneShotWatcher, persistentWatcher, queueWorker, setUpRecipeWorkloads, WATCHED_INITIAL, watchWriter } from "./recipe-workloads.js";
import { summarize, writeReport } from "./report.js";
import {
  COUNTER_PATH,
  FencedResource,
  HistoryRecorder,
  IDS_ROOT,
  idParents,
  idWorker,
  lockWorker,
  type NodeRing,
  QUEUE_ROOT,
  REGISTER_ROOT,
  registerKeys,
  registerWorker,
  ROOT,
  LOCK_ROOT,
  SET_ROOT,
  setDirectories,
  setWorker,
  text,
  WATCHED_PATH,
  type WorkerContext,
  withLimit,
} from "./workloads.js";

export interface ChaosRunOptions {
  voters: number;
  observers?: number;
  timeMs: number;
  nemeses: readonly NemesisName[];
  seed: number;
  /** Where the report goes; no report is written without it. */
  outDir?: string;
  tickMs?: number;
  /** Extra environment for every server (the broken-server test's switch). */
  serverEnv?: Record<string, string>;
  partitionShapes?: readonly PartitionShape[];
  faultMs?: readonly [number, number];
  quietMs?: readonly [number, number];
  registerWorkers?: number;
  setWorkers?: number;
  idWorkers?: number;
  lockWorkers?: number;
  queueWorkers?: number;
  counterWorkers?: number;
  /** Watchers of the watched key, one-shot and persistent in turn; with any, one writer too. */
  watchWorkers?: number;
  /** Operations per register key before the workers move on to a fresh key. */
  opsPerKey?: number;
  /** Set elements per directory, ids per id parent (one getChildren answer must hold either). */
  elementsPerDir?: number;
  /** Progress lines (fault log, phases); silent when absent. */
  log?: (line: string) => void;
}

export interface ChaosRunResult {
  valid: boolean | "inconclusive";
  verdicts: Verdict[];
  paragraph: string;
  ops: readonly Op[];
  faults: readonly FaultRecord[];
  files: string[];
}

/** How long the healed cluster gets to agree on a leader before the run reports it as a failure. */
const RECOVERY_LIMIT_MS = 120_000;
/**
 * How long after the final heal every workload gets to make progress again. Far beyond the
 * longest session timeout (20 ticks), so a lock held by a session that died in a fault has
 * been freed by expiry well before: only a lock that is never granted again misses it.
 */
const LIVENESS_LIMIT_MS = 60_000;
/** How long one server may take to answer the final reads once the cluster has recovered. */
const FINAL_READ_LIMIT_MS = 45_000;

export async function runChaos(options: ChaosRunOptions): Promise<ChaosRunResult> {
  const log = options.log ?? (() => undefined);
  const tickMs = options.tickMs ?? 100;
  const cluster = await ChaosCluster.start({
    voters: options.voters,
    observers: options.observers ?? 0,
    tickMs,
    ...(options.serverEnv === undefined ? {} : { env: options.serverEnv }),
    ...clusterNeeds(options.nemeses),
  });
  const started = performance.now();
  const now = () => Math.round((performance.now() - started) * 10) / 10;
  const history = new HistoryRecorder(now);
  const extraVerdicts: Verdict[] = [];
  let finals: FinalReads;
  let nemesis: Nemesis | undefined;
  let workloadEnd: number;
  try {
    log(`cluster up: ${cluster.ids.length} servers (${options.voters} voters), seed ${options.seed}`);
    await waitFor("a leader", () => cluster.agreedLeader(), RECOVERY_LIMIT_MS);
    const keys = registerKeys(options.opsPerKey ?? 200);
    const directories = setDirectories(options.elementsPerDir ?? 1_000);
    const parents = idParents(options.elementsPerDir ?? 1_000);
    await setUp(cluster.connectString, [keys, directories, parents]);

    let stopping = false;
    const context: WorkerContext = {
      connectString: cluster.connectString,
      sessionTimeoutMs: 20 * tickMs,
      history,
      stopping: () => stopping,
      thinkMs: 10,
    };
    const prng = new Prng(options.seed);
    const workers: Promise<void>[] = [];
    let process = 0;
    const counts = workerCounts(options);
    for (let i = 0; i < counts.register; i++) workers.push(registerWorker(process++, context, keys, prng.fork()));
    for (let i = 0; i < counts.set; i++) workers.push(setWorker(process++, context, directories));
    for (let i = 0; i < counts.ids; i++) workers.push(idWorker(process++, context, parents));
    const resource = new FencedResource();
    for (let i = 0; i < counts.lock; i++) workers.push(lockWorker(process++, context, resource, prng.fork()));
    for (let i = 0; i < counts.queue; i++) workers.push(queueWorker(process++, context, prng.fork()));
    for (let i = 0; i < counts.counter; i++) workers.push(counterWorker(process++, context, prng.fork()));
    if (counts.watches > 0) workers.push(watchWriter(process++, context));
    for (let i = 0; i < counts.watches; i++) workers.push((i % 2 === 0 ? oneShotWatcher : persistentWatcher)(process++, context));

    nemesis = new Nemesis(cluster, {
      nemeses: options.nemeses,
      seed: prng.nextUint32(),
      now,
      onFault: (fault) =>
        log(
          fault.endedAt === undefined
            ? `${(fault.startedAt / 1000).toFixed(1)} s  fault: ${fault.description}`
            : `${(fault.endedAt / 1000).toFixed(1)} s  healed: ${fault.description}`,
        ),
      ...(options.partitionShapes === undefined ? {} : { partitionShapes: options.partitionShapes }),
      ...(options.faultMs === undefined ? {} : { faultMs: options.faultMs }),
      ...(options.quietMs === undefined ? {} : { quietMs: options.quietMs }),
    });
    const faults = nemesis.run();
    await new Promise((resolve) => setTimeout(resolve, options.timeMs));
    nemesis.stop();
    await faults;
    log(`${(now() / 1000).toFixed(1)} s  nemesis stopped, everything healed; waiting for the cluster to recover`);

    const recovered = await waitFor("recovery", () => cluster.quorumLeader(), RECOVERY_LIMIT_MS).then(
      () => true,
      () => false,
    );
    // The workers run on against the healed cluster until every workload has made progress again
    // (a register op, a set add, an id, a lock grant), and at least a few seconds.
    const healedAt = now();
    const workloads = (Object.keys(counts) as Workload[]).filter((w) => counts[w] > 0);
    const progressed = () => workloads.every((w) => firstProgressAfter(history.ops, w, healedAt) !== undefined);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    if (recovered) await waitFor("every workload's progress", () => progressed() || undefined, LIVENESS_LIMIT_MS).catch(() => undefined);
    stopping = true;
    await Promise.all(workers);
    workloadEnd = now();
    const okAfterHeal = history.ops.filter((op) => op.outcome === "ok" && op.invokedAt >= healedAt).length;
    extraVerdicts.push({
      checker: "recovery",
      valid: recovered && okAfterHeal > 0,
      violations: recovered
        ? okAfterHeal > 0
          ? []
          : ["no operation succeeded after the cluster healed"]
        : [`no leader followed by a quorum within ${RECOVERY_LIMIT_MS / 1000} s of healing`],
      stats: { okAfterHeal },
    });
    extraVerdicts.push(liveness(history.ops, workloads, healedAt));
    const dead = cluster.ids.filter((id) => !cluster.isRunning(id));
    extraVerdicts.push({
      checker: "servers-alive",
      valid: dead.length === 0,
      violations: dead.map((id) => `server ${id} exited on its own; its last log lines:\n${lastLines(cluster.server(id).stderr, 8)}`),
      stats: { servers: cluster.ids.length, dead: dead.length },
    });
    log(`${(now() / 1000).toFixed(1)} s  workers stopped; reading the final state from every server`);
    const final = await readFinalState(
      cluster,
      cluster.ids.filter((id) => cluster.isRunning(id)),
    );
    finals = { sets: final.sets, ids: final.ids, queues: final.queues, counters: final.counters, watched: final.watched };
    extraVerdicts.push(convergence(final.registers, final.unreadable));
  } finally {
    if (options.outDir !== undefined) await cluster.saveLogs(options.outDir).catch(() => undefined);
    await cluster.stop();
  }

  const verdicts = [...checkAll(history.ops, finals, { watchedInitial: WATCHED_INITIAL }), ...extraVerdicts];
  const faults = nemesis?.faults ?? [];
  const run = {
    durationMs: workloadEnd > 0 ? workloadEnd : now(),
    nemeses: [...options.nemeses],
    servers: cluster.voterIds.length,
    observers: cluster.ids.length - cluster.voterIds.length,
    ops: history.ops,
    faults,
    verdicts,
  };
  let paragraph: string;
  let files: string[] = [];
  if (options.outDir !== undefined) {
    const written = await writeReport(options.outDir, { ...run, title: `corral chaos — ${options.nemeses.join(", ")} — seed ${options.seed}` });
    paragraph = written.paragraph;
    files = written.files;
  } else {
    paragraph = summarize(run).paragraph;
  }
  const invalid = verdicts.some((v) => v.valid === false);
  const unknown = verdicts.some((v) => v.valid === "unknown");
  return { valid: invalid ? false : unknown ? "inconclusive" : true, verdicts, paragraph, ops: history.ops, faults, files };
}

/** How many workers each workload runs (the defaults when the options say nothing). */
function workerCounts(options: ChaosRunOptions): Record<Workload, number> {
  return {
    register: options.registerWorkers ?? 5,
    set: options.setWorkers ?? 2,
    ids: options.idWorkers ?? 2,
    lock: options.lockWorkers ?? 3,
    queue: options.queueWorkers ?? 2,
    counter: options.counterWorkers ?? 2,
    watches: options.watchWorkers ?? 4,
  };
}

async function setUp(connectString: string, rings: readonly NodeRing[]): Promise<void> {
  const client = await Client.connect(connectString, { connectTimeoutMs: 30_000 });
  try {
    for (const path of [ROOT, REGISTER_ROOT, SET_ROOT, IDS_ROOT, LOCK_ROOT]) await client.create(path, "");
    for (const ring of rings) await ring.init(client);
    await setUpRecipeWorkloads(client);
  } finally {
    await client.close();
  }
}

interface FinalState {
  sets: FinalSetRead[];
  ids: FinalIdRead[];
  queues: FinalQueueRead[];
  counters: FinalCounterRead[];
  watched: FinalWatchedRead[];
  /** Per server: key → "version:value". */
  registers: Map<number, Map<string, string>>;
  unreadable: string[];
}

/** Every live server's view, each read through a direct connection after a sync. */
async function readFinalState(cluster: ChaosCluster, serverIds: readonly number[]): Promise<FinalState> {
  const sets: FinalSetRead[] = [];
  const ids: FinalIdRead[] = [];
  const queues: FinalQueueRead[] = [];
  const counters: FinalCounterRead[] = [];
  const watched: FinalWatchedRead[] = [];
  const registers = new Map<number, Map<string, string>>();
  const unreadable: string[] = [];
  for (const id of serverIds) {
    try {
      const view = await withRetries(() => readServer(cluster.directConnectString(id)));
      sets.push({ server: id, elements: view.elements });
      ids.push({ server: id, nodes: view.idNodes });
      queues.push({ server: id, items: view.queued });
      counters.push({ server: id, value: view.count });
      watched.push({ server: id, ...view.watched });
      registers.set(id, view.registers);
    } catch (error) {
      unreadable.push(`server ${id} could not be read after the run: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return { sets, ids, queues, counters, watched, registers, unreadable };
}

function lastLines(text: string, count: number): string {
  return text.trimEnd().split("\n").slice(-count).join("\n");
}

interface ServerView {
  elements: string[];
  idNodes: string[];
  registers: Map<string, string>;
  /** The queue's items, lowest child first. */
  queued: string[];
  count: number;
  watched: { value: string; version: number; mzxid: string };
}

async function readServer(connectString: string): Promise<ServerView> {
  const client = await Client.connect(connectString, { connectTimeoutMs: 10_000 });
  try {
    await client.sync(ROOT);
    const elements: string[] = [];
    for (const directory of await client.getChildren(SET_ROOT)) elements.push(...(await client.getChildren(`${SET_ROOT}/${directory}`)));
    elements.sort();
    const idNodes: string[] = [];
    for (const parent of await client.getChildren(IDS_ROOT)) {
      for (const name of await client.getChildren(`${IDS_ROOT}/${parent}`)) idNodes.push(`${IDS_ROOT}/${parent}/${name}`);
    }
    idNodes.sort();
    const registers = new Map<string, string>();
    const keys = (await client.getChildren(REGISTER_ROOT)).sort();
    for (let i = 0; i < keys.length; i += 100) {
      const chunk = keys.slice(i, i + 100);
      const reads = await Promise.all(chunk.map((key) => client.getData(`${REGISTER_ROOT}/${key}`)));
      chunk.forEach((key, j) => registers.set(key, `${reads[j]!.stat.version}:${Buffer.from(reads[j]!.data).toString("utf8")}`));
    }
    const queued: string[] = [];
    for (const child of (await client.getChildren(QUEUE_ROOT)).sort()) {
      // A child listed here is still there: nothing deletes while the final state is read.
      queued.push(text((await client.getData(`${QUEUE_ROOT}/${child}`)).data));
    }
    const count = Number(text((await client.getData(COUNTER_PATH)).data));
    const { data, stat } = await client.getData(WATCHED_PATH);
    return { elements, idNodes, registers, queued, count, watched: { value: text(data), version: stat.version, mzxid: stat.mzxid.toString() } };
  } finally {
    await client.close();
  }
}

/** Attempts for up to FINAL_READ_LIMIT_MS, each bounded: a server that never answers must not hang the run. */
async function withRetries<T>(read: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + FINAL_READ_LIMIT_MS;
  for (;;) {
    try {
      return await withLimit(read(), 15_000, "final read");
    } catch (error) {
      if (Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

/** Every server ends with the same register values and versions, and every server can be read. */
function convergence(registers: Map<number, Map<string, string>>, unreadable: readonly string[]): Verdict {
  const violations: string[] = [...unreadable];
  const [first, ...rest] = [...registers];
  if (first !== undefined) {
    const [firstId, reference] = first;
    for (const [id, view] of rest) {
      for (const key of new Set([...reference.keys(), ...view.keys()])) {
        if (reference.get(key) !== view.get(key) && violations.length < 20) {
          violations.push(`key ${key}: server ${firstId} has ${reference.get(key) ?? "nothing"}, server ${id} has ${view.get(key) ?? "nothing"}`);
        }
      }
    }
  }
  return { checker: "convergence", valid: violations.length === 0, violations, stats: { servers: registers.size, keys: first?.[1].size ?? 0 } };
}
