/**
 * `corral cluster`'s live membership without processes: the commands typed on its stdin, the next
 * member's id and ports, which removals would leave no quorum, the member line a reconfig adds, the
 * members a configuration text lists, cluster.json and launch.json across a restart, and the super
 * user the launcher makes for itself.
 */
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { ClusterCommandError, parseClusterCommand } from "../../src/cli/cluster-commands.js";
import { memberLine, membersInConfig, nextMemberId, removalRefusal } from "../../src/cli/cluster-membership.js";
import { setUpSuperUser } from "../../src/cli/cluster-super.js";
import { clusterServers, memberEntry, parseClusterOptions, recordMembership, writeClusterConfig } from "../../src/cli/cluster.js";
import { generateDigest } from "../../src/common/digest.js";
import { parseMember } from "../../src/common/membership.js";
import type { ServerEntry } from "../../src/server/cluster-servers.js";
import { ConfigError } from "../../src/server/config-error.js";
import { loadConfig } from "../../src/server/config.js";

const dir = mkdtempSync(join(tmpdir(), "corral-cluster-membership-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const refusedAs = (field: string) => (error: unknown) => error instanceof ConfigError && error.field === field;

test("commands: add [participant|observer], remove ID, members, help; blank lines and comments are nothing", () => {
  assert.deepEqual(parseClusterCommand("add"), { name: "add", role: "participant" });
  assert.deepEqual(parseClusterCommand("  add   observer "), { name: "add", role: "observer" });
  assert.deepEqual(parseClusterCommand("remove 12"), { name: "remove", id: 12 });
  assert.deepEqual(parseClusterCommand("members"), { name: "members" });
  assert.deepEqual(parseClusterCommand("help"), { name: "help" });
  assert.equal(parseClusterCommand(""), undefined);
  assert.equal(parseClusterCommand("   # a comment"), undefined);
  for (const bad of ["add voter", "add participant now", "remove", "remove 0", "remove 255", "remove two", "remove 1 2", "members all", "grow"]) {
    assert.throws(() => parseClusterCommand(bad), ClusterCommandError, bad);
  }
});

const options = parseClusterOptions({ voters: "3", "base-port": "40000", "data-dir": join(dir, "layout") });

test("a new member's ports follow the layout: base + id - 1 in every range", () => {
  const entry = memberEntry(options, 6, "observer");
  assert.deepEqual(
    [entry.id, entry.role, entry.clientPort, entry.quorumPort, entry.electionPort, entry.zkClientPort, entry.metricsPort, entry.adminPort],
    [6, "observer", 40005, 40712, 41712, 40105, 44824, 45904],
  );
  assert.deepEqual(memberEntry(options, 2, "participant"), clusterServers(options)[1]);
});

test("the next id is past every member and every DIR/<id> directory, so a removed member's data is never reused", () => {
  const dataDir = join(dir, "ids");
  const servers = clusterServers(options);
  assert.equal(nextMemberId(servers, dataDir), 4, "no data dir yet");
  mkdirSync(join(dataDir, "7"), { recursive: true });
  mkdirSync(join(dataDir, "not-an-id"), { recursive: true });
  assert.equal(nextMemberId(servers, dataDir), 8);
  assert.equal(nextMemberId([...servers, memberEntry(options, 9, "participant")], dataDir), 10);
});

test("a removal is refused when it would leave fewer than two voters, or no running quorum before or after", () => {
  const entries = (voters: number[], observers: number[] = []) => [
    ...voters.map((id) => memberEntry(options, id, "participant")),
    ...observers.map((id) => memberEntry(options, id, "observer")),
  ];
  const running = (...ids: number[]) => new Set(ids);
  assert.equal(removalRefusal(entries([1, 2, 3]), 3, running(1, 2, 3)), undefined);
  assert.equal(removalRefusal(entries([1, 2, 3]), 3, running(1, 2)), undefined, "a dead voter can be removed");
  assert.match(removalRefusal(entries([1, 2, 3]), 4, running(1, 2, 3))!, /server 4 is not a member \(members: 1, 2, 3\)/);
  assert.match(removalRefusal(entries([1, 2]), 2, running(1, 2))!, /would leave 1 voter: a cluster keeps at least 2/);
  assert.match(removalRefusal(entries([1, 2, 3, 4, 5]), 5, running(1, 2, 5))!, /the remaining voters \(1, 2, 3, 4\) need 3 running/);
  assert.match(removalRefusal(entries([1, 2, 3]), 1, running(1))!, /the voters now \(1, 2, 3\) need 2 running to commit the change, and only 1 is \(1\)/);
  assert.equal(removalRefusal(entries([1, 2], [3]), 3, running(1, 2)), undefined, "an observer goes freely");
});

test("the member line a reconfig adds names the quorum, election and ZooKeeper client ports, and parses as ZooKeeper's", () => {
  const entry = memberEntry(options, 4, "participant");
  assert.equal(memberLine(entry), "server.4=127.0.0.1:40710:41710:participant;127.0.0.1:40103");
  const [key, value] = memberLine(entry).split("=") as [string, string];
  assert.deepEqual(parseMember(key, value, true), {
    serverId: 4,
    host: "127.0.0.1",
    quorumPort: 40710,
    electionPort: 41710,
    role: "participant",
    clientHost: "127.0.0.1",
    clientPort: 40103,
  });
  // Without a ZooKeeper-protocol port a joiner still names a client port (a reconfig requires one).
  const { zkClientPort: _none, ...plain } = entry;
  assert.match(memberLine(plain), /;127\.0\.0\.1:40003$/);
});

test("the members a configuration lists, with its roles; ids the launcher did not start are set apart", () => {
  const known = clusterServers(options);
  const text = [
    "server.1=127.0.0.1:40707:41707:participant;127.0.0.1:40100",
    "server.3=127.0.0.1:40709:41709:observer;127.0.0.1:40102",
    "server.8=h:1:2;3",
    "version=100000004",
  ].join("\n");
  const { servers, unknown } = membersInConfig(text, known);
  assert.deepEqual(
    servers.map((s) => [s.id, s.role, s.clientPort]),
    [
      [1, "participant", 40000],
      [3, "observer", 40002],
    ],
  );
  assert.deepEqual(unknown, [8]);
});

test("restarted with the flags it was launched with, the launcher keeps the members add and remove left; other flags are refused", () => {
  const dataDir = join(dir, "restart");
  const launched = parseClusterOptions({ voters: "3", "base-port": "41000", "data-dir": dataDir });
  assert.equal(writeClusterConfig(launched).changedLive, false);
  // add 4 and 5, then remove 1: what cluster-reconfig.ts records.
  const live: ServerEntry[] = [2, 3, 4, 5].map((id) => memberEntry(launched, id, "participant"));
  recordMembership(launched, live);
  for (const id of [2, 5]) {
    const config = loadConfig({ file: join(dataDir, "cluster.json"), flags: { "server-id": String(id) } });
    assert.deepEqual(
      config.servers.map((s) => s.id),
      [2, 3, 4, 5],
      "every member (a hand-restarted one too) reads the members in force",
    );
  }
  const again = writeClusterConfig({ ...launched, shared: { tickMs: 300 } });
  assert.deepEqual([again.reused, again.changedLive, again.servers.map((s) => s.id)], [true, true, [2, 3, 4, 5]]);
  assert.equal(loadConfig({ file: again.path, flags: { "server-id": "4" } }).tickMs, 300, "shared settings still follow the flags");
  // Other flags are another cluster: the message says how it was launched.
  assert.throws(
    () => writeClusterConfig(parseClusterOptions({ voters: "5", "base-port": "41000", "data-dir": dataDir })),
    (error: unknown) => refusedAs("data-dir")(error) && /changed live .* launched as 1=127\.0\.0\.1:41000/.test((error as Error).message),
  );
  assert.throws(() => writeClusterConfig(parseClusterOptions({ voters: "3", "base-port": "42000", "data-dir": dataDir })), refusedAs("data-dir"));
  // Without a launch record a different membership is refused as before.
  rmSync(join(dataDir, "launch.json"));
  assert.throws(() => writeClusterConfig(launched), refusedAs("data-dir"));
});

test("the launcher's super user: a random password in DIR/super-auth (0600), reused; the digest is what ZooKeeper computes", () => {
  const dataDir = join(dir, "super");
  const made = setUpSuperUser(dataDir, "", undefined);
  assert.ok(made.credential?.generated);
  const file = join(dataDir, "super-auth");
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(readFileSync(file, "utf8"), `${made.credential.auth}\n`);
  assert.equal(made.digest, generateDigest(made.credential.auth));
  const again = setUpSuperUser(dataDir, "", undefined);
  assert.deepEqual([again.credential?.auth, again.credential?.generated, again.digest], [made.credential.auth, false, made.digest]);
  assert.notEqual(setUpSuperUser(join(dir, "super-2"), "", undefined).credential?.auth, made.credential.auth);
  // A password others can read is refused rather than used.
  chmodSync(file, 0o644);
  assert.throws(
    () => setUpSuperUser(dataDir, "", undefined),
    (error: unknown) => refusedAs("data-dir")(error) && /chmod 600/.test((error as Error).message),
  );
});

test("a superDigest of the user's: the launcher needs its password (--super-auth-file), which must match", () => {
  const digest = generateDigest("super:letmein");
  assert.deepEqual(setUpSuperUser(join(dir, "given"), digest, undefined), { digest, credential: undefined });
  const file = join(dir, "auth");
  writeFileSync(file, "super:letmein\n", { mode: 0o600 });
  assert.equal(setUpSuperUser(join(dir, "given"), digest, file).credential?.auth, "super:letmein");
  assert.throws(() => setUpSuperUser(join(dir, "given"), generateDigest("super:other"), file), refusedAs("super-auth-file"));
  writeFileSync(file, "alice:letmein\n");
  assert.throws(() => setUpSuperUser(join(dir, "given"), digest, file), refusedAs("super-auth-file"));
  // The flag is for add and remove only.
  assert.throws(() => parseClusterOptions({ voters: "3", "super-auth-file": file }), refusedAs("super-auth-file"));
  assert.equal(parseClusterOptions({ voters: "3", "reconfig-enabled": "true", "super-auth-file": "auth" }, { cwd: dir }).superAuthFile, file);
});
