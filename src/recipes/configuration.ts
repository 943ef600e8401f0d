/**
 * Configuration: publish/subscribe of one config znode. Publishers write versioned data (optionally
 * compare-and-set on the version they read); subscribers mirror it through a re-armed data watch.
 */
import { EventEmitter } from "node:events";
import type { Client } from "../client/client.js";
import type { Data, Stat } from "../client/types.js";
import { ZkError } from "../common/errors.js";
import { type Deadline, ensurePath, isZkError, orIfNoNode, parentOf, retryOnConnectionLoss, withDeadline, type WaitOptions } from "./common.js";
import { NodeCache } from "./node-cache.js";

/** One published configuration: its bytes and the znode version that carries them. */
export interface ConfigValue {
  data: Uint8Array;
  version: number;
}

export interface PublishOptions extends WaitOptions {
  /**
   * Compare-and-set: write only if the node is still at this version (else ZkError BADVERSION;
   * NONODE if the node does not exist). Absent: write whatever the version, creating the node.
   */
  expectedVersion?: number;
}

const toBytes = (data: Data): Uint8Array => (typeof data === "string" ? Buffer.from(data, "utf8") : data);

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);

/**
 * Writes configuration. `publish` is a versioned setData that creates the node (and its parents)
 * when it is missing and no expectedVersion is given.
 *
 * Connection loss: an unconditional publish is simply repeated (same data). A compare-and-set
 * publish whose answer was lost is settled by `sync` + a read: still at expectedVersion → it did
 * not happen and is retried; moved on and holding our bytes → it happened (or someone published the
 * very same bytes) and its Stat is returned; moved on with other bytes → BADVERSION, exactly as if
 * another publisher had won (which also covers ours having landed and been overwritten since:
 * either way a value newer than ours is current). Never a false success. Session expiry rejects
 * with SESSIONEXPIRED.
 */
export class ConfigPublisher {
  /** Writes `data` as the configuration at `path`; resolves with its Stat once committed. With `expectedVersion`, BADVERSION unless the node is at that version. */
  static async publish(client: Client, path: string, data: Data, options: PublishOptions = {}): Promise<Stat> {
    const bytes = toBytes(data);
    return withDeadline(`publish ${path}`, options, client, (deadline) =>
      options.expectedVersion === undefined
        ? retryOnConnectionLoss(client, deadline, () => writeOrCreate(client, path, bytes))
        : compareAndSet(client, path, bytes, options.expectedVersion, deadline),
    );
  }

  /** The configuration as the connected server has it (after a sync), or null if none. */
  static async read(client: Client, path: string, options: WaitOptions = {}): Promise<ConfigValue | null> {
    return withDeadline(`read config ${path}`, options, client, (deadline) =>
      retryOnConnectionLoss(client, deadline, async () => {
        await client.sync(path);
        const node = await orIfNoNode(client.getData(path), null);
        return node && { data: node.data, version: node.stat.version };
      }),
    );
  }
}

/** Unconditional write; creates the node when missing. Safe to repeat. */
async function writeOrCreate(client: Client, path: string, bytes: Uint8Array): Promise<Stat> {
  for (;;) {
    const written = await orIfNoNode(client.setData(path, bytes), null);
    if (written !== null) return written;
    await ensurePath(client, parentOf(path));
    try {
      return (await client.createWithStat(path, bytes)).stat;
    } catch (error) {
      if (!isZkError(error, "NODEEXISTS")) throw error;
    }
  }
}

async function compareAndSet(client: Client, path: string, bytes: Uint8Array, expectedVersion: number, deadline: Deadline): Promise<Stat> {
  for (;;) {
    try {
      return await deadline.race(client.setData(path, bytes, { version: expectedVersion }));
    } catch (error) {
      if (!isZkError(error, "CONNECTIONLOSS")) throw error;
    }
    // Did the lost write happen? Sync first: the server we reconnected to may not have applied it yet.
    const now = await retryOnConnectionLoss(client, deadline, async () => {
      await client.sync(path);
      return client.getData(path);
    });
    if (now.stat.version === expectedVersion) continue;
    if (sameBytes(now.data, bytes)) return now.stat;
    throw new ZkError("BADVERSION", `publish ${path}: version is ${now.stat.version}, expected ${expectedVersion}`, path);
  }
}

/** The events of a ConfigSubscriber and their listeners' arguments. */
export interface ConfigSubscriberEvents {
  /** A newer configuration (or null: the node was deleted). */
  changed: [value: ConfigValue | null];
  /** The session is gone; the subscriber has stopped (make a new one on a new session). */
  lost: [error: ZkError];
}

/**
 * Follows one config node. Guarantees: its data watch is re-armed after every event and re-read
 * after every reconnect, so after a burst of publishes `current` converges to the final version (no
 * lost update); `changed` reports versions in increasing order, possibly skipping intermediate ones
 * (one-time watches coalesce), never an older one. A node deleted and created again starts its
 * versions over; the subscriber follows the new node.
 *
 * Session loss: on expiry the subscriber emits `lost`, `current` becomes null and it stops for good
 * — it cannot know what it missed. The application must create a new subscriber on a new session.
 */
export class ConfigSubscriber extends EventEmitter<ConfigSubscriberEvents> {
  private readonly cache: NodeCache;
  private value: ConfigValue | null = null;
  /** czxid of the node `value` came from: a recreated node starts its versions again. */
  private czxid = -1n;

  constructor(
    client: Client,
    readonly path: string,
  ) {
    super();
    this.cache = new NodeCache(client, path);
    this.cache.on("changed", (node) => {
      if (node === null) {
        if (this.value === null) return;
        this.value = null;
        this.czxid = -1n;
        this.emit("changed", null);
        return;
      }
      if (this.value !== null && node.stat.czxid === this.czxid && node.stat.version <= this.value.version) return;
      this.value = { data: node.data, version: node.stat.version };
      this.czxid = node.stat.czxid;
      this.emit("changed", this.value);
    });
    this.cache.on("lost", (error) => {
      this.value = null;
      this.emit("lost", error);
    });
  }

  /** Starts following; resolves with the configuration as first read (null if none yet). */
  async start(options: WaitOptions = {}): Promise<ConfigValue | null> {
    await this.cache.start(options);
    return this.value;
  }

  /** The latest configuration seen, or null (none published, not started, stopped or lost). */
  get current(): ConfigValue | null {
    return this.value;
  }

  /** Whether it is following (started, not closed, session alive). */
  get running(): boolean {
    return this.cache.running;
  }

  /** Stops the subscriber for good: what it mirrors is dropped, it emits nothing more, and a start still in progress rejects. */
  close(): void {
    this.cache.close();
    this.value = null;
  }
}
