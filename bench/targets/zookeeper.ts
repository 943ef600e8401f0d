/**
 * Any server that speaks Apache ZooKeeper's client protocol — a real ZooKeeper, or corral's
 * ZooKeeper-protocol port — through node-zookeeper-client (npm, a dev dependency): one client,
 * hence one session, per connection, to exactly the `host:port` it is given.
 */
import * as zookeeper from "node-zookeeper-client";
import type { BenchConnection, BenchConnectOptions, BenchTarget } from "../target.js";

/** The part of node-zookeeper-client's Client the adapter calls (a fake in the unit tests). */
export type ZooKeeperClientLike = Pick<zookeeper.Client, "create" | "setData" | "getData" | "getChildren" | "remove" | "close" | "once" | "getState">;

/**
 * node-zookeeper-client rejects with an Exception whose `code` is ZooKeeper's number and whose
 * `name` is e.g. "NO_NODE". The driver labels errors by a string `code`: give it ZooKeeper's
 * own name as corral's SDK spells it ("NONODE", "CONNECTIONLOSS"), so both targets' error
 * counts read alike. Anything else is returned unchanged (so an Error stays an Error).
 */
export function asBenchError(error: Error): Error;
export function asBenchError(error: unknown): unknown;
export function asBenchError(error: unknown): unknown {
  if (error instanceof zookeeper.Exception && typeof error.name === "string" && /^[A-Z_]+$/.test(error.name)) {
    const labelled = new Error(error.message, { cause: error }) as Error & { code: string; zkCode: number };
    labelled.name = "ZooKeeperError";
    labelled.code = error.name.replaceAll("_", "");
    labelled.zkCode = error.code;
    return labelled;
  }
  return error;
}

function hasCode(error: unknown, code: number): boolean {
  return error instanceof zookeeper.Exception && error.code === code;
}

function call<T>(start: (callback: (error: Error | null | undefined, value: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => start((error, value) => (error ? reject(asBenchError(error)) : resolve(value))));
}

const EMPTY = new Uint8Array(0);

function toBuffer(value: Uint8Array): Buffer {
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

export class ZooKeeperConnection implements BenchConnection {
  constructor(private readonly client: ZooKeeperClientLike) {}

  createSequential(prefix: string, value: Uint8Array): Promise<string> {
    return call<string>((cb) => this.client.create(prefix, toBuffer(value), zookeeper.ACL.OPEN_ACL_UNSAFE, zookeeper.CreateMode.PERSISTENT_SEQUENTIAL, cb));
  }

  async setData(path: string, value: Uint8Array): Promise<void> {
    await call((cb) => this.client.setData(path, toBuffer(value), -1, cb));
  }

  async getData(path: string): Promise<Uint8Array> {
    // The library hands back `undefined` for a node whose data is empty (a -1 length).
    const data = await call<Buffer | undefined>((cb) => this.client.getData(path, cb));
    return data ?? EMPTY;
  }

  async create(path: string, value: Uint8Array): Promise<boolean> {
    try {
      await call((cb) => this.client.create(path, toBuffer(value), zookeeper.ACL.OPEN_ACL_UNSAFE, zookeeper.CreateMode.PERSISTENT, cb));
      return true;
    } catch (error) {
      if (hasCause(error, zookeeper.Exception.NODE_EXISTS)) return false;
      throw error;
    }
  }

  async children(path: string): Promise<string[]> {
    try {
      return await call<string[]>((cb) => this.client.getChildren(path, cb));
    } catch (error) {
      if (hasCause(error, zookeeper.Exception.NO_NODE)) return [];
      throw error;
    }
  }

  async delete(path: string): Promise<boolean> {
    try {
      await call<void>((cb) => this.client.remove(path, -1, (error) => cb(error, undefined)));
      return true;
    } catch (error) {
      if (hasCause(error, zookeeper.Exception.NO_NODE)) return false;
      throw error;
    }
  }

  /** Sends closeSession; resolves when the server has dropped the connection (or after 5 s). */
  close(): Promise<void> {
    const state = this.client.getState();
    if (state === zookeeper.State.DISCONNECTED || state === zookeeper.State.EXPIRED) {
      this.client.close();
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, 5_000);
      this.client.once("disconnected", () => {
        clearTimeout(timer);
        resolve();
      });
      this.client.close();
    });
  }
}

function hasCause(error: unknown, code: number): boolean {
  return hasCode(error, code) || (error instanceof Error && hasCode(error.cause, code));
}

/**
 * `spinDelayMs`: node-zookeeper-client waits a random 0..spinDelay ms before reconnecting to a
 * server it has already tried (with one host, before every reconnect); 1,000 ms by default, like
 * ZooKeeper's Java client. The failover measurement lowers it so that it times the servers rather
 * than the client's back-off.
 */
export function createZookeeperTarget(options: { spinDelayMs?: number } = {}): BenchTarget {
  return {
    name: "zookeeper",
    connect(host: string, connectOptions: BenchConnectOptions): Promise<BenchConnection> {
      // `host` is one "host:port[/chroot]": the library then has no other server to move to.
      const client = zookeeper.createClient(host, {
        sessionTimeout: connectOptions.sessionTimeoutMs,
        retries: 0,
        ...(options.spinDelayMs === undefined ? {} : { spinDelay: options.spinDelayMs }),
      });
      return new Promise((resolve, reject) => {
        const fail = (why: string) => () => {
          client.close();
          reject(new Error(`${host}: ${why}`));
        };
        client.once("connected", () => resolve(new ZooKeeperConnection(client)));
        client.once("expired", fail("session expired while connecting"));
        client.once("authenticationFailed", fail("authentication failed"));
        client.connect();
      });
    },
  };
}

export const zookeeperTarget: BenchTarget = createZookeeperTarget();
