/** corral: the package entry (DESIGN.md §6). */
export { Client } from "./client/client.js";
export { op, ZkMultiError } from "./client/ops.js";
export { CREATE_MODE_FLAGS, OPEN_ACL_UNSAFE, Perms } from "./client/types.js";
export type {
  Acl,
  ClientLogger,
  ClientState,
  ConnectOptions,
  CreateMode,
  CreateOptions,
  Data,
  Id,
  Op,
  OpResult,
  Stat,
  VersionOptions,
  WatchedEvent,
  WatchedEventType,
  WatchOptions,
  Watcher,
} from "./client/types.js";
export { ZkError, ZkErrorCode, zkErrorName } from "./common/errors.js";
export type { ZkErrorName } from "./common/errors.js";
