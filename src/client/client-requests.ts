/**
 * How a Client call becomes a request on the session: client.ts has the calls, the session machine
 * the connection. A call's arguments are checked while its request is built, in their order, and
 * a refused argument comes back as the call's rejection with nothing sent. A request is submitted
 * only while the session is connected; otherwise the call fails at once, CONNECTIONLOSS while the
 * session may come back and SESSIONEXPIRED (AUTHFAILED after a refused SASL login) once it is over. A removal of watches is settled here,
 * as ZooKeeper's WatchDeregistration does it.
 */
import { ZkError } from "../common/errors.js";
import { validatePath } from "../common/paths.js";
import type { RequestOp } from "./codec.js";
import { prependChroot } from "./connect-string.js";
import type { KindValue, Pending } from "./pending-request.js";
import type { SessionLifecycle } from "./session-io.js";
import type { SessionMachine } from "./session-machine.js";
import type { Watcher, WatchedEventType, WatcherType } from "./types.js";
import type { RemovedWatchers, WatchRegistry } from "./watch-registry.js";

export class ClientRequests {
  constructor(
    private readonly session: SessionMachine<Pending>,
    private readonly registry: WatchRegistry,
    private readonly chroot: string | undefined,
    /** A user callback threw: the client reports it, and the session goes on. */
    private readonly reportCallbackError: (err: unknown) => void,
  ) {}

  /** A node path of a call, checked and under the chroot. */
  serverPath(path: string, sequential = false): string {
    if (typeof path !== "string") throw new ZkError("BADARGUMENTS", "path must be a string");
    validatePath(path, sequential);
    return prependChroot(this.chroot, path);
  }

  /**
   * Sends one request of `kind` for the user's `path`. `build` checks the call's arguments, in
   * their order, and returns the request, filling in what the answer will need: `serverPath`
   * (blank for requests without a node), `watcher` to register, `ops` to read the results by. A
   * throw there — a refused argument — comes back as this call's rejection, never as a throw, and
   * nothing is sent. `removing` is the watcher type of a removal of watches (see `sendRemoval`).
   */
  send<T>(kind: KindValue, path: string | undefined, build: (p: Pending) => RequestOp, removing?: WatcherType, local = false): Promise<T> {
    const pending: Pending = { kind, path, serverPath: "", watcher: undefined, ops: undefined, resolve: unsettled, reject: unsettled };
    let request: RequestOp;
    try {
      request = build(pending);
    } catch (err) {
      return refused(err);
    }
    // build accepted the watcher type, so `removing` is set exactly for removeWatches and removeAllWatches.
    if (removing !== undefined) return this.sendRemoval(request, pending, removing, local) as Promise<T>;
    const lifecycle = this.session.lifecycle;
    if (lifecycle !== "active") return Promise.reject(sessionOver(lifecycle, path));
    if (!this.session.connected) {
      return Promise.reject(new ZkError("CONNECTIONLOSS", "CONNECTIONLOSS: not connected", path));
    }
    return new Promise<T>((resolve, reject) => {
      pending.resolve = resolve;
      pending.reject = reject;
      this.session.submit(request, pending);
    });
  }

  /**
   * A removal of watches, settled as ZooKeeper's WatchDeregistration: nothing held here → NOWATCHER;
   * a failure (no connection, or the server's error) → that error, unless `local`; otherwise the
   * watches go and their callbacks are told. It settles while the answer is read, so no frame after
   * the answer reaches a removed callback.
   */
  private sendRemoval(request: RequestOp, removal: Pending, type: WatcherType, local: boolean): Promise<void> {
    const { kind, serverPath, watcher } = removal;
    // A removal always names a node: send() gets the user's path for both kinds.
    const path = removal.path!;
    if (!this.registry.contains(serverPath, watcher, type)) return Promise.reject(new ZkError("NOWATCHER", undefined, path));
    return new Promise<void>((resolve, reject) => {
      const settle = (err: ZkError | undefined): void => {
        // An event may have spent a one-time watch while the request was out.
        if (!this.registry.contains(serverPath, watcher, type)) return reject(new ZkError("NOWATCHER", undefined, path));
        if (err !== undefined && !local) return reject(err);
        this.notifyRemoved(this.registry.remove(serverPath, watcher, type)!, path);
        resolve();
      };
      const lifecycle = this.session.lifecycle;
      if (lifecycle !== "active") return settle(sessionOver(lifecycle, path));
      if (!this.session.connected) return settle(new ZkError("CONNECTIONLOSS", "CONNECTIONLOSS: not connected", path));
      this.session.submit(request, { kind, path, serverPath, watcher: undefined, ops: undefined, resolve: () => settle(undefined), reject: settle });
    });
  }

  /** Tells removed callbacks, one event per kind of watch each lost (ZooKeeper's order: child, data, persistent). */
  private notifyRemoved(removed: RemovedWatchers, path: string): void {
    const groups: [Set<Watcher>, WatchedEventType][] = [
      [removed.child, "ChildWatchRemoved"],
      [removed.data, "DataWatchRemoved"],
      [removed.persistent, "PersistentWatchRemoved"],
    ];
    for (const [watchers, type] of groups) {
      for (const watcher of watchers) {
        try {
          watcher({ type, path, zxid: -1n });
        } catch (err) {
          this.reportCallbackError(err);
        }
      }
    }
  }
}

/**
 * The promise of a call whose arguments were refused before anything was sent. The checks throw
 * ZkErrors (BADARGUMENTS, INVALIDACL); an argument no check foresaw fails with the TypeError that
 * reading it raised. Either way an Error, which the promise rejects with unchanged.
 */
export function refused<T>(err: unknown): Promise<T> {
  const error = err as Error;
  return Promise.reject(error);
}

/** The failure of a call on a session that is over: AUTHFAILED once its SASL login was refused, SESSIONEXPIRED otherwise. */
export function sessionOver(lifecycle: Exclude<SessionLifecycle, "active">, path?: string): ZkError {
  if (lifecycle === "authFailed") return new ZkError("AUTHFAILED", "AUTHFAILED: the session's SASL login was refused", path);
  return new ZkError("SESSIONEXPIRED", `SESSIONEXPIRED: ${lifecycle === "expired" ? "session expired" : "client closed"}`, path);
}

/** A Pending's resolve and reject until `send` hands it the promise's own. */
function unsettled(): void {
  // never called: nothing can answer a request before it is submitted
}
