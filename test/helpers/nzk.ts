/**
 * Promise wrappers over node-zookeeper-client (an independently written, callback-style
 * ZooKeeper client from npm), for tests that drive a server through ZooKeeper's own wire
 * protocol. Nothing here reimplements the protocol: every request goes through the library.
 */
import * as zookeeper from "node-zookeeper-client";
import type { ACL, Client, Exception, Stat, TransactionResult, Watcher } from "node-zookeeper-client";

export { zookeeper };

/**
 * A connected node-zookeeper-client session. `connect()` rejects after `connectTimeoutMs` when no
 * server answered the connect handshake (the library itself retries forever).
 */
export class Nzk {
  private closed = false;

  private constructor(readonly client: Client) {}

  static async connect(connectString: string, options: { sessionTimeoutMs?: number; connectTimeoutMs?: number; spinDelayMs?: number } = {}): Promise<Nzk> {
    const client = zookeeper.createClient(connectString, {
      sessionTimeout: options.sessionTimeoutMs ?? 10_000,
      spinDelay: options.spinDelayMs ?? 100,
      retries: 0,
    });
    const limitMs = options.connectTimeoutMs ?? 20_000;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        client.close();
        reject(new Error(`node-zookeeper-client: no session with ${connectString} within ${limitMs} ms`));
      }, limitMs);
      client.once("connected", () => {
        clearTimeout(timer);
        resolve();
      });
      client.connect();
    });
    return new Nzk(client);
  }

  get sessionId(): Buffer {
    return this.client.getSessionId();
  }

  /** Sends closeSession and waits until the server has answered it and dropped the connection. */
  async close(limitMs = 10_000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const state = this.client.getState();
    if (state === zookeeper.State.DISCONNECTED || state === zookeeper.State.EXPIRED) {
      this.client.close();
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, limitMs);
      this.client.once("disconnected", () => {
        clearTimeout(timer);
        resolve();
      });
      this.client.close();
    });
  }

  create(path: string, data: Buffer | null = null, options: { acls?: ACL[]; mode?: number } = {}): Promise<string> {
    return new Promise((resolve, reject) =>
      this.client.create(path, data, options.acls ?? zookeeper.ACL.OPEN_ACL_UNSAFE, options.mode ?? zookeeper.CreateMode.PERSISTENT, (error, created) =>
        error ? reject(error) : resolve(created),
      ),
    );
  }

  remove(path: string, version = -1): Promise<void> {
    return new Promise((resolve, reject) => this.client.remove(path, version, (error) => (error ? reject(error) : resolve())));
  }

  exists(path: string, watcher?: Watcher): Promise<Stat | null> {
    return new Promise((resolve, reject) => {
      const callback = (error: Error | null | undefined, stat: Stat | null): void => (error ? reject(error) : resolve(stat));
      if (watcher) this.client.exists(path, watcher, callback);
      else this.client.exists(path, callback);
    });
  }

  getData(path: string, watcher?: Watcher): Promise<{ data: Buffer | undefined; stat: Stat }> {
    return new Promise((resolve, reject) => {
      const callback = (error: Error | null | undefined, data: Buffer | undefined, stat: Stat): void => (error ? reject(error) : resolve({ data, stat }));
      if (watcher) this.client.getData(path, watcher, callback);
      else this.client.getData(path, callback);
    });
  }

  setData(path: string, data: Buffer | null, version = -1): Promise<Stat> {
    return new Promise((resolve, reject) => this.client.setData(path, data, version, (error, stat) => (error ? reject(error) : resolve(stat))));
  }

  getChildren(path: string, watcher?: Watcher): Promise<{ children: string[]; stat: Stat }> {
    return new Promise((resolve, reject) => {
      const callback = (error: Error | null | undefined, children: string[], stat: Stat): void => (error ? reject(error) : resolve({ children, stat }));
      if (watcher) this.client.getChildren(path, watcher, callback);
      else this.client.getChildren(path, callback);
    });
  }

  getACL(path: string): Promise<{ acls: ACL[]; stat: Stat }> {
    return new Promise((resolve, reject) => this.client.getACL(path, (error, acls, stat) => (error ? reject(error) : resolve({ acls, stat }))));
  }

  setACL(path: string, acls: ACL[], version = -1): Promise<Stat> {
    return new Promise((resolve, reject) => this.client.setACL(path, acls, version, (error, stat) => (error ? reject(error) : resolve(stat))));
  }

  addAuthInfo(scheme: string, auth: string): void {
    this.client.addAuthInfo(scheme, Buffer.from(auth));
  }

  /**
   * Commits a transaction built by `build`; resolves with the library's view of the outcome:
   * the first failed op's error (if any) and every op's result as it decoded them.
   */
  multi(
    build: (txn: zookeeper.Transaction) => zookeeper.Transaction,
  ): Promise<{ error: Exception | Error | undefined; results: TransactionResult[] | undefined }> {
    return new Promise((resolve) => build(this.client.transaction()).commit((error, results) => resolve({ error: error ?? undefined, results })));
  }

  /**
   * node-zookeeper-client has no sync(). A multi holding one `check` of "/" is a write-path
   * request: the server forwards it to the leader and answers it only once it has applied its
   * txn, i.e. after every write committed before it was sent — the same guarantee sync gives.
   */
  async syncBarrier(): Promise<void> {
    const { error } = await this.multi((txn) => txn.check("/"));
    if (error) throw error;
  }

  /**
   * host:port of the server this session is connected to right now. The library has no public
   * accessor for it; this reads its ConnectionManager's socket (node-zookeeper-client 1.1.3).
   */
  connectedTo(): string | undefined {
    const socket = (this.client as unknown as { connectionManager?: { socket?: { remoteAddress?: string; remotePort?: number } } }).connectionManager?.socket;
    if (socket?.remoteAddress === undefined || socket.remotePort === undefined) return undefined;
    return `${socket.remoteAddress}:${socket.remotePort}`;
  }
}

/** Resolves with the next event a one-time watcher sees; `watcher` is what to pass to the read. */
export function watchOnce(): { watcher: Watcher; event: Promise<zookeeper.Event>; fired: () => number } {
  let count = 0;
  let resolveEvent!: (event: zookeeper.Event) => void;
  const event = new Promise<zookeeper.Event>((resolve) => (resolveEvent = resolve));
  const watcher: Watcher = (e) => {
    count += 1;
    resolveEvent(e);
  };
  return { watcher, event, fired: () => count };
}

/** The ZooKeeper error code of a rejection from the library (a number such as -101). */
export async function codeOf(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === "number") return code;
    throw error;
  }
  throw new Error("expected a ZooKeeper error, the request succeeded");
}

/** A jute long (8-byte big-endian Buffer) as a bigint. */
export function long(buffer: Buffer): bigint {
  return buffer.readBigInt64BE(0);
}
