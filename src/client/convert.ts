/** Conversions between the SDK's types and the messages of proto/client.proto (gen/client.ts). */
import { ZkError } from "../common/errors.js";
import { limits } from "../common/constants.js";
import { TTL_MS_MAX } from "../common/znode.js";
import { ADD_WATCH_MODE_NUMBERS, WATCHER_TYPE_NUMBERS, type AddWatchMode, type WatcherType } from "../common/watch-modes.js";
import type { Acl as WireAcl, Stat as WireStat } from "../../gen/client.js";
import type { Acl, CreateMode, Data, NodeEventType, Stat } from "./types.js";
import { CREATE_MODE_FLAGS, isTtlMode } from "./types.js";

const encoder = new TextEncoder();
const EMPTY = new Uint8Array(0);

/** Data argument to bytes; strings are UTF-8. Over the data limit → BADARGUMENTS (the server would refuse it anyway). */
export function toBytes(data: Data | undefined | null): Uint8Array {
  if (data === undefined || data === null) return EMPTY;
  let bytes: Uint8Array;
  if (typeof data === "string") bytes = encoder.encode(data);
  else if (data instanceof Uint8Array) bytes = data;
  else throw new ZkError("BADARGUMENTS", "data must be a Uint8Array or a string");
  if (bytes.length > limits.dataBytesMax) {
    throw new ZkError("BADARGUMENTS", `data is ${bytes.length} bytes, more than the ${limits.dataBytesMax} allowed`);
  }
  return bytes;
}

/** A Stat the answer must carry (the codec decodes stats into the SDK's Stat). */
export function requireStat(stat: Stat | null | undefined): Stat {
  if (!stat) throw new ZkError("MARSHALLINGERROR", "response is missing its stat");
  return stat;
}

/** A decoded Stat → the SDK's Stat: the same fields, times as numbers (ms: exact far beyond any real date). */
export function statFromWire(wire: WireStat): Stat {
  return { ...wire, ctime: Number(wire.ctime), mtime: Number(wire.mtime) };
}

export function aclFromWire(wire: readonly WireAcl[]): Acl[] {
  return wire.map((a) => ({ perms: a.perms, id: { scheme: a.id?.scheme ?? "", id: a.id?.id ?? "" } }));
}

/** User ACL to wire; undefined → [] (the server's default). An explicitly empty list is INVALIDACL, as in ZooKeeper. */
export function aclToWire(acl: readonly Acl[] | undefined): WireAcl[] {
  if (acl === undefined) return [];
  if (!Array.isArray(acl) || acl.length === 0) throw new ZkError("INVALIDACL", "an ACL list must not be empty");
  // Array.isArray narrows to any[]; the list is the caller's Acl[] (each entry is checked below).
  const entries: readonly Acl[] = acl;
  return entries.map((a) => {
    if (!a || typeof a.perms !== "number" || !a.id || typeof a.id.scheme !== "string" || typeof a.id.id !== "string") {
      throw new ZkError("INVALIDACL", "an ACL entry needs perms and id { scheme, id }");
    }
    // perms is a uint32 on the wire; which bits mean something is the server's to judge.
    if (!Number.isInteger(a.perms) || a.perms < 0 || a.perms > 0xffffffff) throw new ZkError("INVALIDACL", `bad permissions ${a.perms}`);
    return { perms: a.perms, id: { scheme: a.id.scheme, id: a.id.id } };
  });
}

export function modeFlag(mode: CreateMode): number {
  const flag = (CREATE_MODE_FLAGS as Record<string, number | undefined>)[mode];
  if (flag === undefined) throw new ZkError("BADARGUMENTS", `unknown create mode ${JSON.stringify(mode)}`);
  return flag;
}

export { TTL_MS_MAX };

/** Validates the TTL against the mode; returns the wire value (0n when the mode has none). */
export function ttlToWire(mode: CreateMode, ttlMs: number | undefined): bigint {
  if (isTtlMode(mode)) {
    if (ttlMs === undefined || !Number.isInteger(ttlMs) || ttlMs <= 0 || ttlMs > TTL_MS_MAX) {
      throw new ZkError("BADARGUMENTS", `mode ${mode} needs ttlMs, an integer in 1..${TTL_MS_MAX}`);
    }
    return BigInt(ttlMs);
  }
  if (ttlMs !== undefined) throw new ZkError("BADARGUMENTS", `ttlMs is only valid with a TTL mode, not ${mode}`);
  return 0n;
}

export function checkVersion(version: number | undefined): number {
  if (version === undefined) return -1;
  if (!Number.isInteger(version) || version < -1 || version > 0x7fffffff) {
    throw new ZkError("BADARGUMENTS", `version must be an integer in -1..2^31-1, not ${String(version)}`);
  }
  return version;
}

/**
 * ZooKeeper's Watcher.Event.EventType numbers for the node events a server sends (the WatchRemoved
 * events are the SDK's own, never on the wire).
 */
export const EVENT_TYPE_NUMBERS: Readonly<Record<NodeEventType, number>> = Object.freeze({
  NodeCreated: 1,
  NodeDeleted: 2,
  NodeDataChanged: 3,
  NodeChildrenChanged: 4,
});

export function eventTypeName(type: number): NodeEventType | undefined {
  switch (type) {
    case 1:
      return "NodeCreated";
    case 2:
      return "NodeDeleted";
    case 3:
      return "NodeDataChanged";
    case 4:
      return "NodeChildrenChanged";
    default:
      return undefined;
  }
}

/** An addWatch mode to its wire number; anything else is BADARGUMENTS. */
export function addWatchModeNumber(mode: AddWatchMode): number {
  if (typeof mode !== "string" || !Object.hasOwn(ADD_WATCH_MODE_NUMBERS, mode))
    throw new ZkError("BADARGUMENTS", `unknown addWatch mode ${JSON.stringify(mode)}`);
  return ADD_WATCH_MODE_NUMBERS[mode];
}

/** A watcher type to its wire number; anything else is BADARGUMENTS. */
export function watcherTypeNumber(type: WatcherType): number {
  if (typeof type !== "string" || !Object.hasOwn(WATCHER_TYPE_NUMBERS, type)) throw new ZkError("BADARGUMENTS", `unknown watcher type ${JSON.stringify(type)}`);
  return WATCHER_TYPE_NUMBERS[type];
}
