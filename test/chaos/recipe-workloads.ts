/**
 * The chaos run's recipe workloads, each recording into the shared history as workloads.ts does:
 *
 * - queue: ZooKeeper's queue recipe. A producer creates a persistent-sequential child holding an
 *   item; a consumer takes by getChildren, then getData and delete of the lowest child, moving on
 *   to the next when another consumer deleted it first.
 * - counter: versioned increments of one znode (getData, then setData of count + 1 at the version
 *   read), and reads that sync first.
 * - watches: one writer sets a key again and again; watchers follow it, one-shot (each getData
 *   re-arms the watch on the value it reads) or persistent (addWatch once per session).
 */
import type { Client, WatchedEvent } from "../../src/index.js";
import type { Prng } from "../sim/prng.js";
import type { CounterReadOp, DequeueOp, EnqueueOp, IncrementOp, WatchEventOp, WatchLostOp, WatchMode, WatchReadOp, WatchWriteOp } from "./history.js";
import { COUNTER_PATH, isConnected, QUEUE_ROOT, sessionOf, sleep, stepWorker, text, WATCHED_PATH, type WorkerContext, WorkerSession } from "./workloads.js";

/** The watched key's value at version 0. */
export const WATCHED_INITIAL = "w-init";
/** How many of the lowest children one take tries before giving up for this step. */
const TAKE_TRIES = 5;

/** Creates the queue, the counter at "0" and the watched key; once, before the workers start. */
export async function setUpRecipeWorkloads(client: Client): Promise<void> {
  await client.create(QUEUE_ROOT, "");
  await client.create(COUNTER_PATH, "0");
  await client.create(WATCHED_PATH, WATCHED_INITIAL);
}

// ------------------------------------------------------------------------------------------------
// queue

export function queueWorker(process: number, context: WorkerContext, prng: Prng): Promise<void> {
  let counter = 0;
  return stepWorker(context, (client, session) => {
    if (prng.chance(0.5)) {
      const item = `i-${process}-${counter++}`;
      return context.history.run<EnqueueOp, string>({ process, session, f: "enqueue", item }, () =>
        client.create(`${QUEUE_ROOT}/q-`, item, { mode: "persistent-sequential" }),
      );
    }
    return take(process, context, client, session);
  });
}

/** The lowest child still there when its delete arrives; the reads before it are not recorded. */
async function take(process: number, context: WorkerContext, client: Client, session: string): Promise<void> {
  let children: string[];
  try {
    children = (await client.getChildren(QUEUE_ROOT)).sort();
  } catch {
    return;
  }
  for (const child of children.slice(0, TAKE_TRIES)) {
    const path = `${QUEUE_ROOT}/${child}`;
    let item: string;
    try {
      item = text((await client.getData(path)).data);
    } catch {
      continue; // taken meanwhile, or the connection went: try the next one
    }
    const taken = await context.history.run<DequeueOp, true>({ process, session, f: "dequeue", path, item }, () =>
      client.delete(path).then(() => true as const),
    );
    if (taken) return;
    // This worker's op just recorded (a worker has one op at a time): NONODE means someone else
    // took it, so try the next child; an unknown end may have taken it, so stop here.
    if (lastOutcomeOf(context, process) !== "fail") return;
  }
}

function lastOutcomeOf(context: WorkerContext, process: number): string | undefined {
  const { ops } = context.history;
  for (let i = ops.length - 1; i >= 0; i--) if (ops[i]!.process === process) return ops[i]!.outcome;
  return undefined;
}

// ------------------------------------------------------------------------------------------------
// counter

export function counterWorker(process: number, context: WorkerContext, prng: Prng): Promise<void> {
  return stepWorker(context, async (client, session) => {
    if (prng.chance(0.3)) {
      await context.history.run<CounterReadOp, number>(
        { process, session, f: "counter-read" },
        async () => {
          await client.sync(COUNTER_PATH);
          return Number(text((await client.getData(COUNTER_PATH)).data));
        },
        (op, value) => (op.result = { value }),
      );
      return;
    }
    let version: number;
    try {
      version = (await client.getData(COUNTER_PATH)).stat.version;
    } catch {
      return;
    }
    await context.history.run<IncrementOp, number>(
      { process, session, f: "increment", expectedVersion: version },
      async () => {
        await client.setData(COUNTER_PATH, String(version + 1), { version });
        return version + 1;
      },
      (op, value) => (op.result = { value }),
    );
  });
}

// ------------------------------------------------------------------------------------------------
// watches

/** Writes unique values to the watched key, a little slower than the other workers. */
export function watchWriter(process: number, context: WorkerContext): Promise<void> {
  let counter = 0;
  return stepWorker(context, async (client, session) => {
    const value = `w-${process}-${counter++}`;
    await context.history.run<WatchWriteOp, { version: number; mzxid: bigint }>(
      { process, session, f: "watch-write", value },
      () => client.setData(WATCHED_PATH, value),
      (op, stat) => (op.result = { version: stat.version, mzxid: stat.mzxid.toString() }),
    );
    await sleep(40);
  });
}

/** Records every NodeDataChanged of the watched key and every loss of a client's connection. */
class WatchRecorder {
  private readonly followed = new WeakSet<Client>();

  constructor(
    private readonly process: number,
    private readonly mode: WatchMode,
    private readonly context: WorkerContext,
  ) {}

  /** Starts recording `client`'s connection losses, once per client. */
  follow(client: Client): void {
    if (this.followed.has(client)) return;
    this.followed.add(client);
    const session = sessionOf(client);
    client.on("state", (state) => {
      if (isConnected(state)) return;
      this.context.history.instant<WatchLostOp>({ process: this.process, session, f: "watch-lost", mode: this.mode, state }, "ok");
    });
  }

  /** A watcher for `client` that records the events and then calls `then`. */
  watcher(client: Client, then: () => void = () => undefined): (event: WatchedEvent) => void {
    const session = sessionOf(client);
    return (event) => {
      if (event.type !== "NodeDataChanged") return;
      this.context.history.instant<WatchEventOp>({ process: this.process, session, f: "watch-event", mode: this.mode, zxid: event.zxid.toString() }, "ok");
      then();
    };
  }

  read(client: Client, watch?: (event: WatchedEvent) => void): Promise<unknown> {
    return this.context.history.run<WatchReadOp, { data: Uint8Array; stat: { version: number; mzxid: bigint } }>(
      { process: this.process, session: sessionOf(client), f: "watch-read", mode: this.mode },
      () => client.getData(WATCHED_PATH, watch === undefined ? {} : { watch }),
      (op, { data, stat }) => (op.result = { value: text(data), version: stat.version, mzxid: stat.mzxid.toString() }),
    );
  }
}

/** Reads the key with a watch, waits for the watch to fire (or the session to end), and again. */
export async function oneShotWatcher(process: number, context: WorkerContext): Promise<void> {
  const session = new WorkerSession(context);
  const recorder = new WatchRecorder(process, "one-shot", context);
  // One function per client, as for the persistent watcher: a read that failed may have set the
  // watch, and the next read must set the same one, not a second that fires for the same change.
  const watchers = new WeakMap<Client, (event: WatchedEvent) => void>();
  const watch = { fired: false };
  try {
    while (!context.stopping()) {
      const client = await session.ready();
      if (client === undefined) break;
      recorder.follow(client);
      let watcher = watchers.get(client);
      if (watcher === undefined) watchers.set(client, (watcher = recorder.watcher(client, () => (watch.fired = true))));
      watch.fired = false;
      const read = await recorder.read(client, watcher);
      if (read === undefined) {
        await sleep(context.thinkMs);
        continue;
      }
      // A watch set stays set across reconnects within the session (the client sets it again).
      while (!watch.fired && !context.stopping() && client.state !== "expired" && client.state !== "closed") await sleep(20);
    }
  } finally {
    await session.close();
  }
}

/** Registers a persistent watch once per session and reads the key now and then. */
export async function persistentWatcher(process: number, context: WorkerContext): Promise<void> {
  const session = new WorkerSession(context);
  const recorder = new WatchRecorder(process, "persistent", context);
  const registered = new WeakSet<Client>();
  // One function per client: an addWatch whose answer was lost may have registered it, and the
  // retry must add the same watch again, not a second one that records every event twice.
  const watchers = new WeakMap<Client, (event: WatchedEvent) => void>();
  try {
    while (!context.stopping()) {
      const client = await session.ready();
      if (client === undefined) break;
      recorder.follow(client);
      if (!registered.has(client)) {
        try {
          let watcher = watchers.get(client);
          if (watcher === undefined) watchers.set(client, (watcher = recorder.watcher(client)));
          await client.addWatch(WATCHED_PATH, watcher, "persistent");
          registered.add(client);
        } catch {
          await sleep(context.thinkMs);
          continue;
        }
      }
      await recorder.read(client);
      await sleep(250);
    }
  } finally {
    await session.close();
  }
}
