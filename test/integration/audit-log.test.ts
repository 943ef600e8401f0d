/**
 * Issue 30's audit log acceptance: a real ZooKeeper 3.8 (Debian's, its audit log on through zoo.cfg
 * and routed to its own file by log4j) and a corral server with auditEnable get the same operations
 * from the same clients — node-zookeeper-client for creates of each mode (with and without ACLs),
 * setData, delete, setAcl, multi, failures, an unauthenticated and a digest-authenticated session,
 * a closed session's ephemerals; the bare jute client for a container and a TTL create, which that
 * library cannot send — and their audit files are compared line by line, field by field.
 *
 * Normalised, and only this:
 *  - the time and the logger name at the head of each line (corral writes UTC ISO 8601 and
 *    `corral.audit`; ZooKeeper its local time and the Java class). The level is compared.
 *  - session ids, replaced by their order of first appearance: each server makes its own (ZooKeeper
 *    from its start time and server id).
 *  - the order of the ephemerals one closeSession deletes (sorted by path within that run of
 *    lines): ZooKeeper's is the iteration order of a clone of a Java HashSet of the paths, which
 *    depends on their hash codes and on the set's history; corral deletes them in its closeSession
 *    txn's order. Which ephemerals, and every field of their lines, are compared.
 * Nothing in an audit line depends on a zxid, so nothing else is normalised: sequential suffixes,
 * users, addresses, modes and ACLs must be equal as written.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { generateDigest } from "../../src/common/digest.js";
import { hex64 } from "../../src/common/hex.js";
import { Client } from "../../src/index.js";
import { CreateRequest, CreateTTLRequest, OpCode } from "../../src/server/zk-wire/records.js";
import { JuteClient } from "../helpers/jute-client.js";
import { codeOf, Nzk, zookeeper } from "../helpers/nzk.js";
import { RealZooKeeper } from "../helpers/real-zookeeper.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";

const { ACL, Id, Permission, CreateMode } = zookeeper;
const BOB = generateDigest("bob:secret");
const OPEN = [new ACL(Permission.ALL, new Id("world", "anyone"))];

/** The same operations, in the same order, against the ZooKeeper port at `address`. */
async function workload(address: string): Promise<void> {
  const anonymous = await Nzk.connect(address);
  const bob = await Nzk.connect(address);
  bob.addAuthInfo("digest", "bob:secret");
  await anonymous.create("/audit");
  await anonymous.create("/audit/e", null, { mode: CreateMode.EPHEMERAL });
  await anonymous.create("/audit/s-", null, { mode: CreateMode.PERSISTENT_SEQUENTIAL });
  await anonymous.create("/audit/es-", null, { mode: CreateMode.EPHEMERAL_SEQUENTIAL });
  assert.equal(await codeOf(anonymous.create("/audit")), -110, "NODEEXISTS");
  await anonymous.setData("/audit", Buffer.from("v1"));
  assert.equal(await codeOf(anonymous.setData("/audit/missing", Buffer.from("v1"))), -101, "NONODE");
  await anonymous.create("/audit/acl", null, { acls: [new ACL(Permission.ALL, new Id("digest", BOB)), new ACL(Permission.READ, new Id("world", "anyone"))] });
  assert.equal(await codeOf(anonymous.setACL("/audit/acl", OPEN)), -102, "NOAUTH: setAcl needs ADMIN");
  await bob.create("/audit/mine", null, { acls: [new ACL(Permission.ALL, new Id("auth", ""))] });
  await bob.setACL("/audit/acl", [new ACL(Permission.READ | Permission.ADMIN, new Id("digest", BOB)), ...OPEN]);
  const succeeded = await anonymous.multi((txn) =>
    txn
      .create("/audit/m", null, OPEN)
      .create("/audit/m/s-", null, OPEN, CreateMode.PERSISTENT_SEQUENTIAL)
      .check("/audit", 1)
      .setData("/audit/m", Buffer.from("x"))
      .remove("/audit/s-0000000001"),
  );
  assert.equal(succeeded.error, undefined);
  const failed = await anonymous.multi((txn) => txn.create("/audit/never", null, OPEN).remove("/audit/missing"));
  assert.ok(failed.error, "the second multi fails");
  await bob.remove("/audit/acl");
  assert.equal(await codeOf(bob.remove("/audit/missing")), -101, "NONODE");

  // The modes node-zookeeper-client cannot ask for, through the bare jute client.
  const jute = await JuteClient.connect(address);
  const container = await jute.request(OpCode.createContainer, CreateRequest, { path: "/audit/c", data: null, acl: OPEN.map(toJuteAcl), flags: 4 });
  assert.equal(container.header.err, 0);
  const ttl = await jute.request(OpCode.createTTL, CreateTTLRequest, { path: "/audit/t", data: null, acl: OPEN.map(toJuteAcl), flags: 5, ttl: 60_000n });
  assert.equal(ttl.header.err, 0);
  await jute.close();

  // Its close deletes the session's two ephemerals.
  await anonymous.close();
  await bob.close();
}

function toJuteAcl(acl: zookeeper.ACL): { perms: number; id: { scheme: string; id: string } } {
  return { perms: acl.permission, id: { scheme: acl.id.scheme, id: acl.id.id } };
}

interface AuditLine {
  level: string;
  fields: [string, string][];
}

/** Each line's level and fields, session ids numbered by first appearance (the file note says why). */
function normalise(text: string): AuditLine[] {
  const sessions = new Map<string, string>();
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => {
      // ZooKeeper: "2026-11-28 05:40:00,123 INFO audit.Slf4jAuditLogger: …"; corral: "2026-11-28T05:40:00.123Z INFO corral.audit: …".
      const head = /^(?:\S+ \S+|\S+) (INFO|ERROR|WARN) \S+: (.*)$/.exec(line);
      assert.ok(head, `an audit line: ${JSON.stringify(line)}`);
      const fields = head[2]!.split("\t").map((pair): [string, string] => {
        const at = pair.indexOf("=");
        const [key, value] = [pair.slice(0, at), pair.slice(at + 1)];
        if (key !== "session") return [key, value];
        if (!sessions.has(value)) sessions.set(value, `session#${sessions.size + 1}`);
        return [key, sessions.get(value)!];
      });
      return { level: head[1]!, fields };
    })
    .reduce<AuditLine[]>((lines, line) => {
      // A run of one session's ephemeral deletions is compared sorted by path (the file note says why).
      const key = (l: AuditLine) => (isEphemeralDeletion(l) ? l.fields.find(([k]) => k === "session")![1] : undefined);
      let at = lines.length;
      while (at > 0 && key(line) !== undefined && key(lines[at - 1]!) === key(line) && znodeOf(lines[at - 1]!) > znodeOf(line)) at -= 1;
      lines.splice(at, 0, line);
      return lines;
    }, []);
}

function isEphemeralDeletion(line: AuditLine): boolean {
  return line.fields.some(([key, value]) => key === "operation" && value === "ephemeralZNodeDeletionOnSessionCloseOrExpire");
}

function znodeOf(line: AuditLine): string {
  return line.fields.find(([key]) => key === "znode")?.[1] ?? "";
}

let zk: RealZooKeeper;
let corral: ServerProcess;
let corralDir: { path: string; remove: () => Promise<void> };
let zkLines: AuditLine[];
let corralLines: AuditLine[];
let corralRaw: string;
let grpcSession: bigint;

before(async () => {
  zk = await RealZooKeeper.start({ auditLog: true, systemProperties: { "zookeeper.extendedTypesEnabled": "true" } });
  corralDir = await makeTempDir("corral-audit-");
  corral = await ServerProcess.start({
    dataDir: join(corralDir.path, "data"),
    zkPort: await freePort(),
    tickMs: 2000,
    extraArgs: ["--audit-enable", "true", "--audit-log-file", join(corralDir.path, "audit.log"), "--ttl-nodes-enabled", "true"],
  });
  await workload(zk.connectString);
  await workload(corral.zkConnectString);
  // corral's own door: the same audit log, for a session ZooKeeper has no counterpart of.
  const sdk = await Client.connect(corral.connectString);
  grpcSession = sdk.sessionId;
  await sdk.create("/grpc", "x", { mode: "ephemeral" });
  await sdk.close();
  await zk.terminate();
  assert.equal(await corral.stop(), 0);
  zkLines = normalise(await readFile(zk.auditLogFile, "utf8"));
  corralRaw = await readFile(join(corralDir.path, "audit.log"), "utf8");
  corralLines = normalise(
    corralRaw
      .split("\n")
      .filter((line) => !line.includes(`session=${hex64(grpcSession)}\t`))
      .join("\n"),
  );
});

after(async () => {
  await zk?.stop();
  await corral?.stop();
  await corralDir?.remove();
});

test("ZooKeeper's audit log shows what the workload is for, so two empty or broken logs cannot agree", () => {
  const text = zkLines.map((line) => line.fields.map(([key, value]) => `${key}=${value}`).join(" "));
  for (const expected of [
    /^user=\S+ operation=serverStart result=success$/,
    /^session=session#1 user=127\.0\.0\.1 ip=127\.0\.0\.1 operation=create znode=\/audit\/s-0000000001 znode_type=persistent_sequential result=success$/,
    /operation=create znode=\/audit znode_type=persistent result=failure$/,
    /operation=setAcl znode=\/audit\/acl acl=world:anyone:cdrwa result=failure$/,
    /user=bob,127\.0\.0\.1 ip=127\.0\.0\.1 operation=setAcl znode=\/audit\/acl acl=digest:bob:\S+:raworld:anyone:cdrwa result=success$/,
    /operation=multiOperation result=failure$/,
    /operation=create znode=\/audit\/c znode_type=container result=success$/,
    /operation=ephemeralZNodeDeletionOnSessionCloseOrExpire znode=\/audit\/e result=success$/,
    /^user=\S+ operation=serverStop result=invoked$/,
  ]) {
    assert.ok(
      text.some((line) => expected.test(line)),
      `ZooKeeper wrote a line matching ${expected}:\n${text.join("\n")}`,
    );
  }
  assert.ok(!text.some((line) => line.includes("/audit/t")), "ZooKeeper 3.8 does not audit a TTL create");
});

test("corral's audit log equals ZooKeeper 3.8's for the same operations, line by line and field by field", () => {
  const show = (lines: AuditLine[]) => lines.map((line) => `${line.level} ${line.fields.map(([key, value]) => `${key}=${value}`).join("\t")}`);
  assert.deepEqual(show(corralLines), show(zkLines));
});

test("a write through corral's gRPC door is audited the same way, and so is its session's ephemeral", () => {
  const session = `session=${hex64(grpcSession)}`;
  const lines = corralRaw.split("\n").filter((line) => line.includes(`${session}\t`));
  assert.deepEqual(
    lines.map((line) => line.slice(line.indexOf(": ") + 2)),
    [
      `${session}\tuser=127.0.0.1\tip=127.0.0.1\toperation=create\tznode=/grpc\tznode_type=ephemeral\tresult=success`,
      `${session}\tuser=${/user=(\S+)\toperation=serverStart/.exec(corralRaw)![1]}\toperation=ephemeralZNodeDeletionOnSessionCloseOrExpire\tznode=/grpc\tresult=success`,
    ],
  );
});
