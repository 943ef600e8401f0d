/**
 * ZooKeeper 3.6+'s audit log, decided here: which answered writes become audit events and with
 * which fields (ZooKeeper's AuditHelper, ZKAuditProvider and AuditEvent, as 3.8 has them). Pure:
 * the events go out through the AuditPort, and the server writes them to their own file
 * (src/server/audit-log.ts). Only the server the client is connected to audits a client's write, at
 * the point it answers it; the ephemerals a closeSession deletes are audited by every server that
 * applies it, as ZooKeeper's DataTree does.
 *
 * ZooKeeper's choices kept as they are, because tools read its audit log:
 *  - a create's znode is the path created (with its sequential suffix), a failed one's the path asked
 *    for; znode_type is the create mode, lower case with underscores;
 *  - a create in a TTL mode is never audited (ZooKeeper's switch has no createTTL case), though a TTL
 *    create inside a multi is (as a create, without znode_type);
 *  - only setAcl has an acl field: the ACL asked for, entries written scheme:id:perms one after
 *    another with nothing between them;
 *  - a multi that succeeds is one event per create, delete and setData in it (a create's znode_type
 *    only where the path created is the path asked for, so not for a sequential one); a multi that
 *    fails is one multiOperation event without a znode;
 *  - a failed reconfig has no znode; a successful one's is /zookeeper/config;
 *  - user is the user name of each of the connection's ids, in the order ZooKeeper's set of them
 *    iterates, comma-separated (the ip id's name is the address itself; `super` has none).
 */
import { hex64 } from "../common/hex.js";
import { permString, type Acl, type CreateMode, type Id } from "../common/znode.js";
import type { TxnResult } from "../store/types.js";
import { clientInfoOf } from "./acl.js";
import type { MultiRequest, WriteRequest } from "./requests.js";
import { zookeeperIdOrder } from "./zookeeper-id-order.js";

/** ZooKeeper's AuditEvent.Result: invoked is the stop, written before the server has stopped. */
export type AuditResult = "success" | "failure" | "invoked";

/** The operations ZooKeeper audits (AuditConstants), by its names. */
export type AuditOperation =
  "serverStart" | "serverStop" | "create" | "delete" | "setData" | "setAcl" | "multiOperation" | "reconfig" | "ephemeralZNodeDeletionOnSessionCloseOrExpire";

/** One audit event; an absent field is left out of the line, as ZooKeeper leaves out a null one. */
export interface AuditEvent {
  session?: string;
  user?: string;
  ip?: string;
  operation: AuditOperation;
  znode?: string;
  znodeType?: string;
  acl?: string;
  result: AuditResult;
}

/** Where audit events go (the server's audit log file); absent when audit.enable is off. */
export interface AuditPort {
  /** The server's own user, for the operations the server does itself (ZooKeeper's getZKUser). */
  readonly systemUser: string;
  record(event: AuditEvent): void;
}

/** The connection a write came through, as the audit log names it. */
export interface AuditedConnection {
  sessionId: bigint;
  /** The connection's ids when the write arrived. */
  authInfo: readonly Id[];
  /** The client's address ("" when unknown: no ip field). */
  remoteAddress: string;
}

/** The audit events of one answered write: none for a write ZooKeeper does not audit (close). */
export function auditEventsOfWrite(request: WriteRequest, result: TxnResult, connection: AuditedConnection): AuditEvent[] {
  const failed = result.type === "error";
  const event = (operation: AuditOperation, fields: Partial<AuditEvent>, succeeded = !failed): AuditEvent => ({
    ...connectionFields(connection),
    operation,
    ...fields,
    result: succeeded ? "success" : "failure",
  });
  switch (request.op) {
    case "create":
      if (isTtlMode(request.mode)) return [];
      return [event("create", { znode: result.type === "create" ? result.path : request.path, znodeType: znodeTypeOf(request.mode) })];
    case "delete":
      return [event("delete", { znode: request.path })];
    case "setData":
      return [event("setData", { znode: request.path })];
    case "setAcl":
      return [event("setAcl", { znode: request.path, acl: aclText(request.acl) })];
    case "reconfig":
      return [event("reconfig", failed ? {} : { znode: "/zookeeper/config" })];
    case "multi":
      return multiEvents(request, result, event);
    case "close":
      return [];
  }
}

/** The ephemerals a closeSession deleted: done by the server itself, so its user and no ip. */
export function ephemeralDeletionEvents(sessionId: bigint, deletedPaths: readonly string[], systemUser: string): AuditEvent[] {
  const session = hex64(sessionId);
  return deletedPaths.map((znode) => ({
    session,
    user: systemUser,
    operation: "ephemeralZNodeDeletionOnSessionCloseOrExpire",
    znode,
    result: "success",
  }));
}

function multiEvents(
  request: MultiRequest,
  result: TxnResult,
  event: (operation: AuditOperation, fields: Partial<AuditEvent>, succeeded?: boolean) => AuditEvent,
): AuditEvent[] {
  if (result.type !== "multi" || result.results.some((op) => op.type === "error")) return [event("multiOperation", {}, false)];
  // ZooKeeper looks a create's mode up by the path created, in a table keyed by the paths asked for.
  const modeOfPath = new Map<string, CreateMode>();
  for (const op of request.ops) if (op.op === "create" && !isTtlMode(op.mode)) modeOfPath.set(op.path, op.mode);
  const events: AuditEvent[] = [];
  result.results.forEach((opResult, index) => {
    const op = request.ops[index];
    if (op === undefined) return;
    if (opResult.type === "create") {
      const mode = modeOfPath.get(opResult.path);
      events.push(event("create", { znode: opResult.path, ...(mode === undefined ? {} : { znodeType: znodeTypeOf(mode) }) }));
    } else if (opResult.type === "delete" || opResult.type === "setData") {
      events.push(event(opResult.type, { znode: op.path }));
    }
  });
  return events;
}

function connectionFields(connection: AuditedConnection): Pick<AuditEvent, "session" | "user" | "ip"> {
  const user = auditUser(connection.authInfo);
  return {
    session: hex64(connection.sessionId),
    ...(user === undefined ? {} : { user }),
    ...(connection.remoteAddress === "" ? {} : { ip: connection.remoteAddress }),
  };
}

/** ZooKeeper's AuthUtil.getUsers: each id's user name, blank ones skipped; undefined when none is left. */
export function auditUser(authInfo: readonly Id[]): string | undefined {
  const users = zookeeperIdOrder(authInfo)
    .map((id) => clientInfoOf(id).user)
    .filter((user) => !isJavaBlank(user));
  return users.length === 0 ? undefined : users.join(",");
}

/** ZooKeeper's ZKUtil.aclToString: scheme:id:perms per entry, with no separator between entries. */
export function aclText(acl: readonly Acl[]): string {
  return acl.map((entry) => `${entry.id.scheme}:${entry.id.id}:${permString(entry.perms)}`).join("");
}

/** CreateMode.toString().toLowerCase(): persistent_sequential, container... */
function znodeTypeOf(mode: CreateMode): string {
  return mode.replaceAll("-", "_");
}

function isTtlMode(mode: CreateMode): boolean {
  return mode === "persistent-with-ttl" || mode === "persistent-sequential-with-ttl";
}

/** Java's `s.trim().isEmpty()`: nothing but characters up to U+0020. */
function isJavaBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x20) return false;
  return true;
}
