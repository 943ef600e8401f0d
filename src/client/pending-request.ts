/**
 * A request's user-facing half, and how the server's answer settles it. Client (client.ts) checks
 * a call's arguments and builds its request; what the answer turns into — the result a call
 * resolves with, the error it rejects with, the watch it leaves registered — is decided here, per
 * kind of request, in one place.
 */
import { ZkError, ZkErrorCode } from "../common/errors.js";
import type { DecodedResponse } from "./codec.js";
import { aclFromWire, requireStat } from "./convert.js";
import { membersFromWire } from "./membership-follow.js";
import { multiErrorFromWire, multiResultsFromWire, readResultsFromWire } from "./ops.js";
import { stripChroot } from "./connect-string.js";
import type { ClusterConfiguration, Op, ReadOp, Stat, Watcher } from "./types.js";
import type { WatchKind, WatchRegistry } from "./watch-registry.js";

/** What a pending request turns its answer into. */
export const Kind = {
  create: 0,
  createWithStat: 1,
  delete: 2,
  exists: 3,
  getData: 4,
  setData: 5,
  getChildren: 6,
  getChildrenWithStat: 7,
  multi: 8,
  sync: 9,
  getAcl: 10,
  setAcl: 11,
  addAuth: 12,
  whoAmI: 13,
  addWatchPersistent: 14,
  addWatchRecursive: 15,
  removeWatches: 16,
  checkWatches: 17,
  getEphemerals: 18,
  getAllChildrenNumber: 19,
  multiRead: 20,
  reconfig: 21,
  getConfig: 22,
  getMembers: 23,
} as const;
export type KindValue = (typeof Kind)[keyof typeof Kind];

/** A request's user-facing half: the session machine hands it back with the answer or failure. */
export interface Pending {
  kind: KindValue;
  /** The user's path (for error messages). */
  path: string | undefined;
  /** The server's path (for watch registration). */
  serverPath: string;
  watcher: Watcher | undefined;
  ops: Op[] | ReadOp[] | undefined;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- one Pending holds the resolve of every kind's Promise<T>; `kind` picks T, which no type here can tie to it
  resolve: (value: any) => void;
  reject: (err: ZkError) => void;
}

/**
 * Settles `p` with the server's answer `r`: resolves it with its result (the chroot stripped from
 * paths, the watcher registered once the whole answer is read) or rejects it with the answer's error.
 * Throws (MARSHALLINGERROR) when the answer lacks what its kind needs; the caller rejects `p` then.
 */
export function settle(p: Pending, r: DecodedResponse, chroot: string | undefined, registry: WatchRegistry): void {
  const err = r.err;
  if (err !== 0) {
    switch (p.kind) {
      case Kind.exists:
        if (err === ZkErrorCode.NONODE) {
          resolveWatched(registry, p, "exist", null);
          return;
        }
        break;
      case Kind.multi:
        p.reject(multiErrorFromWire(err, p.ops as Op[], r.results));
        return;
    }
    p.reject(ZkError.fromErrno(err, p.path));
    return;
  }
  switch (p.kind) {
    case Kind.create:
      p.resolve(stripChroot(chroot, r.path));
      return;
    case Kind.createWithStat:
      p.resolve({ path: stripChroot(chroot, r.path), stat: requireStat(r.stat) });
      return;
    case Kind.delete:
    case Kind.sync:
    case Kind.addAuth:
    case Kind.removeWatches:
    case Kind.checkWatches:
      p.resolve(undefined);
      return;
    case Kind.addWatchPersistent:
    case Kind.addWatchRecursive:
      resolveWatched(registry, p, p.kind === Kind.addWatchPersistent ? "persistent" : "persistent-recursive", undefined);
      return;
    case Kind.whoAmI:
      p.resolve(r.clientInfo.map((info) => ({ authScheme: info.authScheme, user: info.user })));
      return;
    case Kind.exists:
      resolveWatched(registry, p, "data", requireStat(r.stat));
      return;
    case Kind.getData:
      resolveWatched(registry, p, "data", { data: r.data, stat: requireStat(r.stat) });
      return;
    case Kind.getConfig:
      resolveWatched(registry, p, "data", configurationOf(r.data, requireStat(r.stat)));
      return;
    case Kind.reconfig:
      p.resolve(configurationOf(r.data, requireStat(r.stat)));
      return;
    case Kind.getMembers:
      p.resolve(membersFromWire(r.members));
      return;
    case Kind.setData:
    case Kind.setAcl:
      p.resolve(requireStat(r.stat));
      return;
    case Kind.getChildren:
      resolveWatched(registry, p, "child", r.children);
      return;
    case Kind.getChildrenWithStat:
      resolveWatched(registry, p, "child", { children: r.children, stat: requireStat(r.stat) });
      return;
    case Kind.getAcl:
      p.resolve({ acl: aclFromWire(r.acl), stat: requireStat(r.stat) });
      return;
    case Kind.multi:
      p.resolve(multiResultsFromWire(p.ops as Op[], r.results, chroot));
      return;
    case Kind.getEphemerals: {
      const paths = chroot === undefined ? r.children : r.children.filter((path) => path.startsWith(chroot + "/"));
      p.resolve(paths.map((path) => stripChroot(chroot, path)));
      return;
    }
    case Kind.getAllChildrenNumber:
      p.resolve(r.number);
      return;
    case Kind.multiRead:
      p.resolve(readResultsFromWire(p.ops as ReadOp[], r.results));
      return;
  }
}

/**
 * Resolves a request that may set a watch. The registry holds only watches a whole answer
 * confirmed: callers build `value` first, so an answer `requireStat` refuses adds none.
 */
function resolveWatched(registry: WatchRegistry, p: Pending, kind: WatchKind, value: unknown): void {
  if (p.watcher) registry.add(kind, p.serverPath, p.watcher);
  p.resolve(value);
}

/** Where the configuration in force is read (getConfig), whatever the client's chroot. */
export const CONFIG_NODE = "/zookeeper/config";

/** The configuration text's "version=<hex>" line (0 when it has none, as a standalone server's empty node). */
function configurationOf(data: Uint8Array, stat: Stat): ClusterConfiguration {
  const text = new TextDecoder().decode(data);
  const version = /(?:^|\n)version=([0-9a-fA-F]{1,16})\s*$/.exec(text)?.[1];
  return { text, version: version === undefined ? 0n : BigInt("0x" + version), stat };
}
