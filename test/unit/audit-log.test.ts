/**
 * The audit log: which answered writes become which events (ZooKeeper 3.8's AuditHelper), how an
 * event is written (its AuditEvent.toString and log level), and the file writer's bound when the
 * disk falls behind. The same lines are compared with a real ZooKeeper's in
 * test/integration/audit-log.test.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { generateDigest } from "../../src/common/digest.js";
import { Perms } from "../../src/common/znode.js";
import { aclText, auditEventsOfWrite, auditUser, ephemeralDeletionEvents, type AuditEvent } from "../../src/replica/audit.js";
import type { WriteRequest } from "../../src/replica/requests.js";
import { AuditLog, auditLine, auditMessage, openAuditLogFile, type AppendBytes } from "../../src/server/audit-log.js";
import { ConfigError } from "../../src/server/config-error.js";
import { resolveConfig } from "../../src/server/config.js";
import type { Stat, TxnResult } from "../../src/store/types.js";
import { createLogger } from "../../src/server/log.js";

const STAT = {} as Stat;
const IP = { scheme: "ip", id: "127.0.0.1" };
const connection = { sessionId: 0x1000abcn, authInfo: [IP], remoteAddress: "127.0.0.1" };
const who = { session: "0x1000abc", user: "127.0.0.1", ip: "127.0.0.1" };
const create = (path: string, mode: Extract<WriteRequest, { op: "create" }>["mode"]): Extract<WriteRequest, { op: "create" }> => ({
  op: "create",
  path,
  data: new Uint8Array(),
  acl: [],
  mode,
  ttlMs: mode.includes("ttl") ? 1000 : 0,
});
const NODEEXISTS: TxnResult = { type: "error", err: -110 };

test("a create is audited with the path created and its mode; a failed one with the path asked for", () => {
  assert.deepEqual(auditEventsOfWrite(create("/a/s-", "persistent-sequential"), { type: "create", path: "/a/s-0000000003", stat: STAT }, connection), [
    { ...who, operation: "create", znode: "/a/s-0000000003", znodeType: "persistent_sequential", result: "success" },
  ]);
  assert.deepEqual(auditEventsOfWrite(create("/a", "container"), NODEEXISTS, connection), [
    { ...who, operation: "create", znode: "/a", znodeType: "container", result: "failure" },
  ]);
});

test("a create in a TTL mode is not audited, as ZooKeeper's switch has no createTTL", () => {
  assert.deepEqual(auditEventsOfWrite(create("/t", "persistent-with-ttl"), { type: "create", path: "/t", stat: STAT }, connection), []);
  assert.deepEqual(auditEventsOfWrite(create("/t", "persistent-sequential-with-ttl"), NODEEXISTS, connection), []);
});

test("setAcl carries the ACL asked for, entries run together as ZKUtil.aclToString writes them", () => {
  const acl = [
    { perms: Perms.ALL, id: { scheme: "world", id: "anyone" } },
    { perms: Perms.READ | Perms.ADMIN, id: { scheme: "digest", id: "bob:hash=" } },
  ];
  assert.equal(aclText(acl), "world:anyone:cdrwadigest:bob:hash=:ra");
  assert.deepEqual(auditEventsOfWrite({ op: "setAcl", path: "/a", acl, version: -1 }, { type: "setAcl", stat: STAT }, connection), [
    { ...who, operation: "setAcl", znode: "/a", acl: "world:anyone:cdrwadigest:bob:hash=:ra", result: "success" },
  ]);
});

test("a successful multi is one event per create, delete and setData; a create's type only where the path is the one asked for", () => {
  const request: WriteRequest = {
    op: "multi",
    ops: [
      create("/m", "persistent"),
      create("/m/s-", "ephemeral-sequential"),
      { op: "check", path: "/m", version: 0 },
      { op: "setData", path: "/m", data: new Uint8Array(), version: -1 },
      { op: "delete", path: "/old", version: -1 },
    ],
  };
  const result: TxnResult = {
    type: "multi",
    results: [
      { type: "create", path: "/m", stat: STAT },
      { type: "create", path: "/m/s-0000000000", stat: STAT },
      { type: "check" },
      { type: "setData", stat: STAT },
      { type: "delete" },
    ],
  };
  assert.deepEqual(auditEventsOfWrite(request, result, connection), [
    { ...who, operation: "create", znode: "/m", znodeType: "persistent", result: "success" },
    { ...who, operation: "create", znode: "/m/s-0000000000", result: "success" },
    { ...who, operation: "setData", znode: "/m", result: "success" },
    { ...who, operation: "delete", znode: "/old", result: "success" },
  ]);
});

test("a failed multi is one multiOperation failure without a znode", () => {
  const request: WriteRequest = { op: "multi", ops: [create("/m", "persistent"), { op: "delete", path: "/missing", version: -1 }] };
  const result: TxnResult = {
    type: "multi",
    results: [
      { type: "error", err: 0 },
      { type: "error", err: -101 },
    ],
  };
  assert.deepEqual(auditEventsOfWrite(request, result, connection), [{ ...who, operation: "multiOperation", result: "failure" }]);
});

test("reconfig names /zookeeper/config when it succeeds and no znode when it fails; a close is not audited", () => {
  const reconfig: WriteRequest = { op: "reconfig", joining: null, leaving: "3", newMembers: null, fromConfig: -1n };
  assert.deepEqual(auditEventsOfWrite(reconfig, { type: "reconfig", data: new Uint8Array(), stat: STAT }, connection), [
    { ...who, operation: "reconfig", znode: "/zookeeper/config", result: "success" },
  ]);
  assert.deepEqual(auditEventsOfWrite(reconfig, { type: "error", err: -123 }, connection), [{ ...who, operation: "reconfig", result: "failure" }]);
  assert.deepEqual(auditEventsOfWrite({ op: "close" }, { type: "closeSession", deletedPaths: [] }, connection), []);
});

test("user is each id's user name in ZooKeeper's set order; super has none; no ids and no address leave both fields out", () => {
  const bob = { scheme: "digest", id: generateDigest("bob:secret") };
  // ZooKeeper 3.8 printed user=bob,127.0.0.1 for this connection (see the integration test).
  assert.equal(auditUser([IP, bob]), "bob,127.0.0.1");
  assert.equal(auditUser([IP, { scheme: "super", id: "" }]), "127.0.0.1");
  assert.equal(auditUser([]), undefined);
  const [event] = auditEventsOfWrite({ op: "delete", path: "/a", version: -1 }, { type: "delete" }, { sessionId: 1n, authInfo: [], remoteAddress: "" });
  assert.deepEqual(event, { session: "0x1", operation: "delete", znode: "/a", result: "success" });
});

test("ephemerals deleted by a closeSession are the server's own operation: its user, no ip", () => {
  assert.deepEqual(ephemeralDeletionEvents(0x10n, ["/e"], "zookeeper"), [
    { session: "0x10", user: "zookeeper", operation: "ephemeralZNodeDeletionOnSessionCloseOrExpire", znode: "/e", result: "success" },
  ]);
});

test("a line is ZooKeeper's layout: time, level (ERROR for a failure), logger, then tab-separated fields in ZooKeeper's order", () => {
  const time = new Date(Date.UTC(2026, 10, 28, 5, 40, 0, 123));
  const event: AuditEvent = { result: "failure", acl: "world:anyone:r", znode: "/a", operation: "setAcl", ip: "127.0.0.1", user: "u", session: "0x1" };
  assert.equal(
    auditLine(time, event),
    "2026-11-28T05:40:00.123Z ERROR corral.audit: session=0x1\tuser=u\tip=127.0.0.1\toperation=setAcl\tznode=/a\tacl=world:anyone:r\tresult=failure\n",
  );
  assert.equal(
    auditLine(time, { user: "u", operation: "serverStop", result: "invoked" }),
    "2026-11-28T05:40:00.123Z INFO corral.audit: user=u\toperation=serverStop\tresult=invoked\n",
  );
});

test("a client cannot forge a field or a line: control characters in a value are written escaped", () => {
  assert.equal(
    auditMessage({ user: "eve\tresult=success\nfake", operation: "delete", result: "failure" }),
    "user=eve\\tresult=success\\nfake\toperation=delete\tresult=failure",
  );
  assert.equal(auditMessage({ user: "a\u0001b", operation: "delete", result: "success" }), "user=a\\u0001b\toperation=delete\tresult=success");
});

/** A disk whose writes complete only when the test says so. */
function stalledDisk(): { append: AppendBytes; writes: string[]; complete: () => void } {
  const writes: string[] = [];
  const pending: (() => void)[] = [];
  return {
    writes,
    append: (bytes, done) => {
      writes.push(Buffer.from(bytes).toString("utf8"));
      pending.push(() => done());
    },
    complete: () => pending.shift()?.(),
  };
}

test("while a write is in flight events queue up and go out together in the next write", () => {
  const disk = stalledDisk();
  const log = new AuditLog(disk.append, { systemUser: "u", logger: createLogger("silent") });
  for (const znode of ["/1", "/2", "/3"]) log.record({ operation: "delete", znode, result: "success" });
  assert.equal(disk.writes.length, 1, "one write in flight at a time");
  assert.match(disk.writes[0]!, /znode=\/1\t/);
  disk.complete();
  assert.equal(disk.writes.length, 2);
  assert.deepEqual(
    disk.writes[1]!.split("\n")
      .filter(Boolean)
      .map((line) => /znode=(\S+)/.exec(line)![1]),
    ["/2", "/3"],
  );
});

test("a disk that falls behind costs audit lines, not memory: the queue stops at its bound, and the next write says how many were dropped", () => {
  const disk = stalledDisk();
  const dropped: number[] = [];
  const line = auditLine(new Date(0), { operation: "delete", znode: "/x", result: "success" });
  const bound = Buffer.byteLength(line) * 10;
  const log = new AuditLog(disk.append, {
    systemUser: "u",
    logger: createLogger("silent"),
    queuedBytesMax: bound,
    now: () => new Date(0),
    onDropped: (n) => dropped.push(n),
  });
  for (let i = 0; i < 1000; i++) log.record({ operation: "delete", znode: "/x", result: "success" });
  // The first went to the disk at once; ten fit the queue behind it; the rest were dropped.
  assert.equal(log.queuedLineCount, 10);
  disk.complete();
  assert.deepEqual(dropped, [989]);
  const batch = disk.writes[1]!.split("\n").filter(Boolean);
  assert.equal(batch[0], "1970-01-01T00:00:00.000Z WARN corral.audit: 989 audit events dropped: the audit log could not keep up");
  assert.equal(batch.length, 11);
  disk.complete();
  log.record({ operation: "delete", znode: "/y", result: "success" });
  assert.doesNotMatch(disk.writes[2]!, /dropped/, "the drop is told once");
});

test("close writes what is still queued, after the write in flight, and records nothing after", async () => {
  const disk = stalledDisk();
  const log = new AuditLog(disk.append, { systemUser: "u", logger: createLogger("silent") });
  log.record({ operation: "delete", znode: "/1", result: "success" });
  log.record({ operation: "delete", znode: "/2", result: "success" });
  const closed = log.close();
  log.record({ operation: "delete", znode: "/late", result: "success" });
  disk.complete();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(disk.writes.length, 2);
  assert.match(disk.writes[1]!, /znode=\/2\t/);
  disk.complete();
  await closed;
  assert.doesNotMatch(disk.writes.join(""), /late/);
});

test("the audit file is zookeeper_audit.log in the data dir unless auditLogFile says otherwise, {id} becoming the server id", () => {
  assert.equal(resolveConfig({ serverId: 2, dataDir: "/var/lib/corral/{id}" }).auditLogFile, "/var/lib/corral/2/zookeeper_audit.log");
  assert.equal(resolveConfig({ serverId: 3, auditLogFile: "/var/log/corral/audit-{id}.log" }).auditLogFile, "/var/log/corral/audit-3.log");
  assert.equal(resolveConfig({}).auditEnable, false, "off by default");
});

test("an audit file that cannot be opened is a ConfigError naming auditLogFile", () => {
  assert.throws(
    () => openAuditLogFile("/nonexistent-dir-for-audit/zookeeper_audit.log", { systemUser: "u", logger: createLogger("silent") }),
    (error: unknown) => error instanceof ConfigError && error.message.includes("auditLogFile"),
  );
});
