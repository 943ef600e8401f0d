/** corral: the package entry (docs/architecture.md §6). */
export { Client } from "./client/client.js";
export type { ClientEvents } from "./client/client.js";
export { op, ZkMultiError } from "./client/ops.js";
export { deleteQuota, listQuota, setQuota } from "./client/quotas.js";
export type { QuotaLimits, QuotaReport } from "./client/quotas.js";
export type { QuotaFigures } from "./common/quota.js";
export { CREATE_MODE_FLAGS, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, Perms, READ_ACL_UNSAFE } from "./client/types.js";
export { generateDigest } from "./common/digest.js";
export { DEFAULT_JAAS_CLIENT_SECTION, saslFromJaasFile } from "./client/jaas-login.js";
export type { JaasClientOptions } from "./client/jaas-login.js";
export type {
  Acl,
  AddWatchMode,
  ClientInfo,
  ClusterConfiguration,
  ClusterMember,
  ClusterMembers,
  ReconfigChange,
  ClientLogger,
  ClientState,
  ClientTlsOptions,
  ConnectOptions,
  CreateMode,
  CreateOptions,
  Data,
  Id,
  NodeEventType,
  Op,
  OpResult,
  Pem,
  ReadOp,
  ReadOpResult,
  SaslOptions,
  DigestMd5SaslOptions,
  GssapiSaslOptions,
  Stat,
  VersionOptions,
  WatchedEvent,
  WatchedEventType,
  WatchOptions,
  Watcher,
  WatcherType,
} from "./client/types.js";
export { ZkError, ZkErrorCode, zkErrorName } from "./common/errors.js";
export type { ZkErrorName } from "./common/errors.js";

// Recipes (src/recipes/): built on the public SDK only.
export type { SessionEnd, WaitOptions } from "./recipes/common.js";
export { Lock } from "./recipes/lock.js";
export { SequentialLock } from "./recipes/lock-core.js";
export { ReadWriteLock } from "./recipes/read-write-lock.js";
export { RevocableLock, REVOKE_REQUEST } from "./recipes/revocable-lock.js";
export type { RevocationHandler, RevokeOptions, RevokeOutcome } from "./recipes/revocable-lock.js";
export { Semaphore, Lease } from "./recipes/semaphore.js";
export type { LeaseEvents } from "./recipes/semaphore.js";
export { LeaderElection } from "./recipes/leader-election.js";
export type { LeaderElectionOptions, LeaderElectionStatus, RevokedReason } from "./recipes/leader-election.js";
export type { LeaderElectionEvents } from "./recipes/leader-election.js";
export { Master, MasterWorker, Worker, DONE } from "./recipes/master-worker.js";
export type { MasterStatus, TaskContext, TaskExecutor, WorkerStatus } from "./recipes/master-worker.js";
export type { MasterEvents, MasterRevokedReason, WorkerEvents } from "./recipes/master-worker.js";
export { GroupMembership } from "./recipes/group-membership.js";
export type { Member } from "./recipes/group-membership.js";
export type { GroupMembershipEvents } from "./recipes/group-membership.js";
export { TwoPhaseCommit } from "./recipes/two-phase-commit.js";
export type { TwoPhaseOutcome, TwoPhaseVote } from "./recipes/two-phase-commit.js";
export { Barrier } from "./recipes/barrier.js";
export { DoubleBarrier } from "./recipes/double-barrier.js";
export { DistributedQueue } from "./recipes/queue.js";
export { DistributedPriorityQueue } from "./recipes/priority-queue.js";
export { SharedCounter } from "./recipes/shared-counter.js";
export { ConfigPublisher, ConfigSubscriber } from "./recipes/configuration.js";
export type { ConfigValue, PublishOptions } from "./recipes/configuration.js";
export type { ConfigSubscriberEvents } from "./recipes/configuration.js";
export { NamingService, nextId } from "./recipes/naming-service.js";
export type { RegisterOptions } from "./recipes/naming-service.js";
export { ServiceDiscovery, ServiceCache } from "./recipes/service-discovery.js";
export type { ServiceInstance } from "./recipes/service-discovery.js";
export type { ServiceCacheEvents, ServiceDiscoveryEvents } from "./recipes/service-discovery.js";
export { LoadBalancer } from "./recipes/load-balancer.js";
export type { BalancingStrategy, InstanceSource, LoadBalancerOptions } from "./recipes/load-balancer.js";
export { Heartbeat, HeartbeatMonitor } from "./recipes/heartbeat.js";
export type { HeartbeatStartOptions, Progress, WorkerStatus as HeartbeatWorkerStatus } from "./recipes/heartbeat.js";
export type { HeartbeatEvents, HeartbeatMonitorEvents } from "./recipes/heartbeat.js";
export { NodeCache } from "./recipes/node-cache.js";
export type { NodeCacheEvents } from "./recipes/node-cache.js";
export { TreeCache } from "./recipes/tree-cache.js";
export type { CachedNode, TreeCacheOptions } from "./recipes/tree-cache.js";
export type { TreeCacheEvents } from "./recipes/tree-cache.js";
