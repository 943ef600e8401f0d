/**
 * Heartbeat / progress reporting: a worker keeps an ephemeral status znode `path/<id>` and writes its
 * progress there; a monitor mirrors `path` and reports workers appearing, progressing and dying.
 * Liveness is the session itself (its pings): no clocks, no timestamps in the protocol.
 */
import { EventEmitter } from "node:events";
import type { Client } from "../client/client.js";
import type { Stat } from "../client/types.js";
import { ZkError } from "../common/errors.js";
import {
  childPath,
  type Deadline,
  deleteOwnEphemeral,
  isZkError,
  nameOf,
  retryOnConnectionLoss,
  type WaitOptions,
  waitUntilGone,
  withDeadline,
  isSessionEnd,
  sessionEndError,
} from "./common.js";
import { bindNode, checkNodeName } from "./naming-service.js";
import { TreeCache } from "./tree-cache.js";

/** A worker's progress, as `report` writes it and monitors read it. */
export interface Progress {
  /** 0..100. */
  percent: number;
  /** What the worker is doing. */
  message: string;
}

export function checkProgress(progress: Progress): void {
  if (typeof progress !== "object" || progress === null) throw new ZkError("BADARGUMENTS", "progress must be { percent, message }");
  if (typeof progress.percent !== "number" || !(progress.percent >= 0 && progress.percent <= 100)) {
    throw new ZkError("BADARGUMENTS", `progress.percent must be a number in 0..100, got ${progress.percent}`);
  }
  if (typeof progress.message !== "string") throw new ZkError("BADARGUMENTS", "progress.message must be a string");
}

export function encodeProgress(progress: Progress): string {
  return JSON.stringify({ percent: progress.percent, message: progress.message });
}

/** The progress a status node holds; data that is not a progress record reads as 0 % with no message. */
export function decodeProgress(data: Uint8Array): Progress {
  try {
    const value = JSON.parse(Buffer.from(data).toString("utf8")) as Partial<Progress> | null;
    if (value && typeof value.percent === "number" && typeof value.message === "string") return { percent: value.percent, message: value.message };
  } catch {
    // fall through
  }
  return { percent: 0, message: "" };
}

export interface HeartbeatStartOptions extends WaitOptions {
  /** The progress the status node starts with. Default { percent: 0, message: "" }. */
  progress?: Progress;
}

/** The events of a Heartbeat and their listeners' arguments. */
export interface HeartbeatEvents {
  /** The session expired: the status node is gone and monitors report this worker dead. */
  lost: [error: ZkError];
}

type HeartbeatPhase = "idle" | "alive" | "stopped" | "lost";

/**
 * A worker's liveness and progress: the ephemeral node `path/<id>` exists exactly as long as the
 * worker's session, and `report` writes its progress there. Reports are written in call order.
 *
 * `start` waits (herd-free, one exists watch) while a previous incarnation of the same id still
 * holds the node — e.g. a crashed process whose session has not timed out yet — then claims it. A
 * create retried after CONNECTIONLOSS recognises its own node by ephemeralOwner. Abandoned
 * (timeout, abort): a node it made is deleted.
 *
 * Session loss: the node is deleted by the cluster, `lost` is emitted and every later `report`
 * rejects with SESSIONEXPIRED; a new Heartbeat on a new session is needed.
 */
export class Heartbeat extends EventEmitter<HeartbeatEvents> {
  readonly node: string;
  private phase: HeartbeatPhase = "idle";
  /** The last report in flight: the next one starts after it, so progress lands in call order. */
  private reporting: Promise<unknown> = Promise.resolve();
  /** Why the session ended, once the phase is "lost". */
  private lostWith: ZkError | undefined;
  private readonly onState = (state: string): void => {
    if (!isSessionEnd(state)) return;
    this.client.off("state", this.onState);
    if (this.phase !== "alive") return;
    this.phase = "lost";
    const lost = sessionEndError(state, `heartbeat ${this.node}: session ${state}`, this.node);
    this.lostWith = lost;
    this.emit("lost", lost);
  };

  constructor(
    private readonly client: Client,
    readonly path: string,
    readonly id: string,
  ) {
    super();
    checkNodeName("worker id", id);
    this.node = childPath(path, id);
  }

  /** True from `start` until `stop` or the loss of the session. */
  get alive(): boolean {
    return this.phase === "alive";
  }

  /** Creates the status node (waiting while an earlier incarnation of the same id still holds it); resolves once alive. */
  async start(options: HeartbeatStartOptions = {}): Promise<void> {
    if (this.phase !== "idle") throw new ZkError("BADARGUMENTS", `heartbeat ${this.node} already started`);
    const progress = options.progress ?? { percent: 0, message: "" };
    checkProgress(progress);
    await withDeadline(`heartbeat ${this.node}`, options, this.client, async (deadline) => {
      try {
        for (;;) {
          try {
            await bindNode(this.client, this.node, encodeProgress(progress), "ephemeral", deadline);
            break;
          } catch (error) {
            if (!isZkError(error, "NODEEXISTS")) throw error;
          }
          // Another session (an earlier incarnation of this worker?) holds the id: wait for it to go.
          await waitUntilGone(this.client, this.node, deadline);
        }
        this.phase = "alive";
        this.client.on("state", this.onState);
        if (isSessionEnd(this.client.state)) this.onState(this.client.state);
      } catch (error) {
        if (isZkError(error, "OPERATIONTIMEOUT")) this.removeOwnNode().catch(() => undefined);
        throw error;
      }
    });
  }

  /** Writes `progress` to the status node; resolves with its Stat once it is committed. */
  report(progress: Progress, options: WaitOptions = {}): Promise<Stat> {
    checkProgress(progress);
    const written = withDeadline(`report ${this.node}`, options, this.client, (deadline) => this.reporting.then(() => this.write(progress, deadline)));
    this.reporting = written.catch(() => undefined);
    return written;
  }

  /** Deletes the status node (monitors report the worker dead) and stops. */
  async stop(options: WaitOptions = {}): Promise<void> {
    if (this.phase !== "alive") {
      this.phase = this.phase === "lost" ? "lost" : "stopped";
      return;
    }
    this.phase = "stopped";
    this.client.off("state", this.onState);
    await this.reporting;
    await withDeadline(`stop heartbeat ${this.node}`, options, this.client, (deadline) => this.removeOwnNode(deadline));
  }

  private async write(progress: Progress, deadline: Deadline): Promise<Stat> {
    if (this.phase === "lost") throw this.lostWith!;
    if (this.phase !== "alive") throw new ZkError("BADARGUMENTS", `heartbeat ${this.node} is not started`, this.node);
    // Unconditional setData: repeating it after a lost answer writes the same progress again.
    return retryOnConnectionLoss(this.client, deadline, () => this.client.setData(this.node, encodeProgress(progress)));
  }

  /** Deletes the status node if this session owns it (never another incarnation's). */
  private removeOwnNode(deadline?: Deadline): Promise<void> {
    return deleteOwnEphemeral(this.client, this.node, deadline);
  }
}

/** What a monitor knows of one live worker. */
export interface WorkerStatus {
  id: string;
  progress: Progress;
  /** The status node's data version: higher is newer. */
  version: number;
}

/** The events of a HeartbeatMonitor and their listeners' arguments. */
export interface HeartbeatMonitorEvents {
  /** A worker's status node appeared (workers alive at start are reported too). */
  alive: [worker: WorkerStatus];
  /** A worker reported progress (in order; intermediate reports may be coalesced). */
  progress: [worker: WorkerStatus];
  /** A worker's status node disappeared: its session ended (or it stopped). `last` is its last known status. */
  dead: [id: string, last: WorkerStatus];
  /** The monitor's own session is gone; it has stopped and knows no worker any more. */
  lost: [error: ZkError];
}

/**
 * Watches every worker under `path` (a TreeCache of depth 1: a child watch on `path`, a data watch
 * on each status node, re-armed on every event and re-read after every reconnect).
 *
 * Guarantees: `dead` is emitted once a worker's ephemeral node is gone, i.e. within the session
 * timeout of the worker's death (plus the delivery of one event); `progress` events of one worker
 * come in version order and end with its latest report; `alive` precedes a worker's progress.
 *
 * Session loss (the monitor's own): `lost` is emitted, `workers()` becomes empty and the monitor
 * stops — it can no longer tell the living from the dead. Make a new one on a new session.
 */
export class HeartbeatMonitor extends EventEmitter<HeartbeatMonitorEvents> {
  private readonly tree: TreeCache;

  constructor(
    client: Client,
    readonly path: string,
  ) {
    super();
    this.tree = new TreeCache(client, path, { maxDepth: 1 });
    this.tree.on("added", (node, { data, stat }) => {
      if (node !== path) this.emit("alive", statusOf(node, data, stat.version));
    });
    this.tree.on("updated", (node, { data, stat }) => {
      if (node !== path) this.emit("progress", statusOf(node, data, stat.version));
    });
    this.tree.on("removed", (node, last) => {
      if (node !== path) this.emit("dead", nameOf(node), statusOf(node, last.data, last.stat.version));
    });
    this.tree.on("lost", (error) => this.emit("lost", error));
  }

  /** Starts watching; resolves with the workers alive now. */
  async start(options: WaitOptions = {}): Promise<WorkerStatus[]> {
    await this.tree.start(options);
    return this.workers();
  }

  /** Every live worker as last seen, by id. */
  workers(): WorkerStatus[] {
    return this.tree.children(this.path).map((id) => {
      const { data, stat } = this.tree.get(childPath(this.path, id))!;
      return { id, progress: decodeProgress(data), version: stat.version };
    });
  }

  /** True from `start` until `close` or the loss of the session. */
  get running(): boolean {
    return this.tree.running;
  }

  /** Stops the monitor for good: what it mirrors is dropped, it emits nothing more, and a start still in progress rejects. */
  close(): void {
    this.tree.close();
  }
}

function statusOf(path: string, data: Uint8Array, version: number): WorkerStatus {
  return { id: nameOf(path), progress: decodeProgress(data), version };
}
