/**
 * ServiceDiscovery: service instances register themselves as ephemeral znodes carrying JSON,
 * `path/<service>/<id>`; clients list them once or keep a ServiceCache of them.
 */
import { EventEmitter } from "node:events";
import type { Client } from "../client/client.js";
import type { Stat } from "../client/types.js";
import { ZkError } from "../common/errors.js";
import {
  childPath,
  deleteOwnEphemeral,
  isZkError,
  orIfNoNode,
  retryOnConnectionLoss,
  withDeadline,
  type WaitOptions,
  isSessionEnd,
  sessionEndError,
} from "./common.js";
import { bindNode, checkNodeName } from "./naming-service.js";
import { type CachedNode, TreeCache } from "./tree-cache.js";

/** One instance of a service, as stored (JSON) in its znode. */
export interface ServiceInstance {
  id: string;
  address: string;
  port: number;
  /** Anything JSON; an object payload may carry `load` (a number) for the least-loaded balancer. */
  payload?: unknown;
}

/** The JSON a registration writes. */
export function encodeInstance(instance: ServiceInstance): string {
  const record: ServiceInstance = { id: instance.id, address: instance.address, port: instance.port };
  if (instance.payload !== undefined) record.payload = instance.payload;
  return JSON.stringify(record);
}

/** The instance a znode describes, or undefined if its data is not a valid instance record. */
export function decodeInstance(data: Uint8Array): ServiceInstance | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(data).toString("utf8"));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const record = value as Record<string, unknown>;
  if (typeof record["id"] !== "string" || typeof record["address"] !== "string" || typeof record["port"] !== "number") return undefined;
  const instance: ServiceInstance = { id: record["id"], address: record["address"], port: record["port"] };
  if (record["payload"] !== undefined) instance.payload = record["payload"];
  return instance;
}

function checkInstance(instance: ServiceInstance): void {
  checkNodeName("instance id", instance.id);
  if (typeof instance.address !== "string" || instance.address.length === 0) throw new ZkError("BADARGUMENTS", "instance address must be a non-empty string");
  if (!Number.isInteger(instance.port) || instance.port < 0 || instance.port > 65535)
    throw new ZkError("BADARGUMENTS", `instance port must be 0..65535, got ${instance.port}`);
}

/** The events of a ServiceDiscovery and their listeners' arguments. */
export interface ServiceDiscoveryEvents {
  /** The session expired: every registration of this object is gone from the cluster. */
  lost: [error: ZkError, lost: { service: string; id: string }[]];
}

/**
 * Registers and lists service instances under `path`.
 *
 * Guarantees: an instance is an ephemeral node of the registering session, so it disappears from
 * every list and cache once that session ends (closed, or expired — within the session timeout of
 * its process dying). A registration retried after CONNECTIONLOSS recognises its own node by its
 * ephemeralOwner (never a second node, never another session's); an id held by another live
 * session is refused with NODEEXISTS.
 *
 * Session loss: the registrations are gone with the session; `lost` lists them. Register again
 * with a new ServiceDiscovery on a new session.
 */
export class ServiceDiscovery extends EventEmitter<ServiceDiscoveryEvents> {
  private readonly registered = new Map<string, { service: string; id: string }>();
  private readonly onState = (state: string): void => {
    if (!isSessionEnd(state)) return;
    this.client.off("state", this.onState);
    const lost = [...this.registered.values()];
    this.registered.clear();
    if (lost.length > 0) this.emit("lost", sessionEndError(state, `service discovery ${this.path}: session ${state}`), lost);
  };

  constructor(
    private readonly client: Client,
    readonly path: string,
  ) {
    super();
    client.on("state", this.onState);
  }

  /** Registers `instance` of `service` (ephemeral, this session); resolves with its Stat. */
  async register(service: string, instance: ServiceInstance, options: WaitOptions = {}): Promise<Stat> {
    checkNodeName("service", service);
    checkInstance(instance);
    const key = `${service}/${instance.id}`;
    const path = this.instanceNode(service, instance.id);
    return withDeadline(`register ${key}`, options, this.client, async (deadline) => {
      try {
        const stat = await bindNode(this.client, path, encodeInstance(instance), "ephemeral", deadline);
        this.registered.set(key, { service, id: instance.id });
        return stat;
      } catch (error) {
        // Abandoned mid-registration: remove the node if this call made it (not an earlier registration).
        if (isZkError(error, "OPERATIONTIMEOUT") && !this.registered.has(key)) deleteOwnEphemeral(this.client, path).catch(() => undefined);
        throw error;
      }
    });
  }

  /** Removes this session's registration of `service`/`id` (nothing to do if it is gone). */
  async unregister(service: string, id: string, options: WaitOptions = {}): Promise<void> {
    checkNodeName("service", service);
    checkNodeName("instance id", id);
    const path = this.instanceNode(service, id);
    await withDeadline(`unregister ${service}/${id}`, options, this.client, async (deadline) => {
      // Only our own node: an id re-registered by another session is not ours to remove.
      await deleteOwnEphemeral(this.client, path, deadline);
      this.registered.delete(`${service}/${id}`);
    });
  }

  /**
   * Sets `payload.load` of this session's instance (read-modify-write with a version check,
   * repeated on conflict). A payload that is not an object becomes `{ load }`.
   */
  async updateLoad(service: string, id: string, load: number, options: WaitOptions = {}): Promise<Stat> {
    checkNodeName("service", service);
    checkNodeName("instance id", id);
    if (typeof load !== "number" || !Number.isFinite(load)) throw new ZkError("BADARGUMENTS", `load must be a finite number, got ${load}`);
    const path = this.instanceNode(service, id);
    return withDeadline(`updateLoad ${service}/${id}`, options, this.client, async (deadline) => {
      for (;;) {
        const { data, stat } = await retryOnConnectionLoss(this.client, deadline, () => this.client.getData(path));
        const instance = decodeInstance(data);
        if (instance === undefined) throw new ZkError("BADARGUMENTS", `${path} does not hold a service instance`, path);
        const payload = typeof instance.payload === "object" && instance.payload !== null && !Array.isArray(instance.payload) ? instance.payload : {};
        const updated = encodeInstance({ ...instance, payload: { ...payload, load } });
        try {
          // Repeating the same versioned write after a lost answer fails with BADVERSION if it
          // did happen; the loop then reads it back and writes the same record again: harmless.
          return await retryOnConnectionLoss(this.client, deadline, () => this.client.setData(path, updated, { version: stat.version }));
        } catch (error) {
          if (!isZkError(error, "BADVERSION")) throw error;
        }
      }
    });
  }

  /** The registered instances of `service` now (after a sync), sorted by id. */
  async instances(service: string, options: WaitOptions = {}): Promise<ServiceInstance[]> {
    checkNodeName("service", service);
    const parent = childPath(this.path, service);
    return withDeadline(`instances ${service}`, options, this.client, (deadline) =>
      retryOnConnectionLoss(this.client, deadline, async () => {
        await this.client.sync(parent);
        const children = await orIfNoNode(this.client.getChildren(parent), []);
        const reads = children.sort().map((child) =>
          orIfNoNode(
            this.client.getData(childPath(parent, child)).then(({ data }) => decodeInstance(data)),
            undefined,
          ),
        );
        return (await Promise.all(reads)).filter((instance): instance is ServiceInstance => instance !== undefined);
      }),
    );
  }

  /** A ServiceCache of `service` on this session (call `start()` on it). */
  cache(service: string): ServiceCache {
    return new ServiceCache(this.client, this.path, service);
  }

  private instanceNode(service: string, id: string): string {
    return childPath(childPath(this.path, service), id);
  }
}

/** The events of a ServiceCache and their listeners' arguments. */
export interface ServiceCacheEvents {
  /** The instance list changed (an instance appeared, left, or changed its data). */
  changed: [instances: ServiceInstance[]];
  /** The session is gone: the list is empty from now on and the cache has stopped. */
  lost: [error: ZkError];
}

/**
 * The current instances of one service, kept by a child watch on `path/<service>` and a data watch
 * on every instance (a TreeCache of depth 1), re-armed on every event and re-read after every
 * reconnect. Once registrations stop changing, `instances()` equals a fresh `instances(service)`.
 *
 * Session loss: `instances()` becomes empty (never a stale list), `lost` is emitted and the cache
 * stops; make a new one on a new session.
 */
export class ServiceCache extends EventEmitter<ServiceCacheEvents> {
  private readonly tree: TreeCache;
  private readonly servicePath: string;
  private list: ServiceInstance[] = [];

  constructor(
    client: Client,
    path: string,
    readonly service: string,
  ) {
    super();
    checkNodeName("service", service);
    this.servicePath = childPath(path, service);
    this.tree = new TreeCache(client, this.servicePath, { maxDepth: 1 });
    const onChange = (changed: string): void => {
      if (changed === this.servicePath) return;
      this.list = this.readList();
      this.emit("changed", this.instances());
    };
    this.tree.on("added", onChange);
    this.tree.on("updated", onChange);
    this.tree.on("removed", onChange);
    this.tree.on("lost", (error) => {
      this.list = [];
      this.emit("lost", error);
    });
  }

  /** Starts following; resolves with the instances as first read. */
  async start(options: WaitOptions = {}): Promise<ServiceInstance[]> {
    await this.tree.start(options);
    return this.instances();
  }

  /** The instances as last seen, sorted by id (a copy). */
  instances(): ServiceInstance[] {
    return [...this.list];
  }

  /** True from `start` until `close` or the loss of the session. */
  get running(): boolean {
    return this.tree.running;
  }

  /** Stops the cache for good: what it mirrors is dropped, it emits nothing more, and a start still in progress rejects. */
  close(): void {
    this.tree.close();
    this.list = [];
  }

  private readList(): ServiceInstance[] {
    const list: ServiceInstance[] = [];
    for (const name of this.tree.children(this.servicePath)) {
      const node: CachedNode | undefined = this.tree.get(childPath(this.servicePath, name));
      const instance = node && decodeInstance(node.data);
      if (instance !== undefined) list.push(instance);
    }
    return list;
  }
}
