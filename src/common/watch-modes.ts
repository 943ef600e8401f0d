/**
 * The watch vocabulary shared by the server and the SDK, with ZooKeeper's own numbers as they
 * travel on the wire: the modes of `addWatch` (ZooDefs.AddWatchModes) and the watcher types that
 * `removeWatches` / `checkWatches` name (Watcher.WatcherType).
 */

/** A watch that stays after it fires: on one node, or on a node and everything below it. */
export type AddWatchMode = "persistent" | "persistent-recursive";

export const ADD_WATCH_MODE_NUMBERS: Readonly<Record<AddWatchMode, number>> = Object.freeze({
  persistent: 0,
  "persistent-recursive": 1,
});

/**
 * Which watches a removal or a check is about: "children" the one-time getChildren watches, "data"
 * the one-time getData / exists watches, "persistent" and "persistent-recursive" the addWatch ones,
 * "any" all of them.
 */
export type WatcherType = "children" | "data" | "any" | "persistent" | "persistent-recursive";

export const WATCHER_TYPE_NUMBERS: Readonly<Record<WatcherType, number>> = Object.freeze({
  children: 1,
  data: 2,
  any: 3,
  persistent: 4,
  "persistent-recursive": 5,
});

const MODES_BY_NUMBER = new Map<number, AddWatchMode>((Object.entries(ADD_WATCH_MODE_NUMBERS) as [AddWatchMode, number][]).map(([mode, n]) => [n, mode]));
const TYPES_BY_NUMBER = new Map<number, WatcherType>((Object.entries(WATCHER_TYPE_NUMBERS) as [WatcherType, number][]).map(([type, n]) => [n, type]));

/** The mode a wire number names, or undefined for a number ZooKeeper does not define. */
export function addWatchModeOf(n: number): AddWatchMode | undefined {
  return MODES_BY_NUMBER.get(n);
}

/** The watcher type a wire number names, or undefined for a number ZooKeeper does not define. */
export function watcherTypeOf(n: number): WatcherType | undefined {
  return TYPES_BY_NUMBER.get(n);
}
