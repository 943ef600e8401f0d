/**
 * ACLs and authentication on a real three-voter cluster (separate server processes): writes sent
 * to a follower are judged by the leader with the ids of the client's connection, reads by the
 * server that answers them; the configured super user passes everything; credentials follow a
 * session to another server; bad ACLs and credentials get their ZooKeeper error and the session
 * goes on.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, CREATOR_ALL_ACL, generateDigest, Perms, READ_ACL_UNSAFE, ZkError, type Acl } from "../../src/index.js";
import { connectTo, waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");
const rejectsWith = (code: string) => (error: unknown) => error instanceof ZkError && error.code === code;
const ALICE_ID = generateDigest("alice:secret");

describe("ACLs on a three-voter cluster", () => {
  let cluster: ClusterProcess;
  let leader: number;
  let followers: number[];
  const clients: Client[] = [];
  const client = async (id: number): Promise<Client> => {
    const c = await connectTo(cluster, id);
    clients.push(c);
    return c;
  };

  before(async () => {
    cluster = await ClusterProcess.start({ voters: 3, tickMs: 100, initLimitTicks: 20, syncLimitTicks: 10, superDigest: generateDigest("super:test") });
    leader = await waitForLeader(cluster);
    followers = [1, 2, 3].filter((id) => id !== leader);
    const setup = await client(leader);
    await setup.create("/acl", "");
  });
  after(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await cluster?.stop();
  });

  test("a node alice made through a follower refuses everyone else on every server, and lets her in", async () => {
    const alice = await client(followers[0]!);
    await alice.addAuthInfo("digest", "alice:secret");
    await alice.create("/acl/alice", "hers", { acl: CREATOR_ALL_ACL });
    await alice.create("/acl/alice/child", "");
    assert.deepEqual((await alice.getACL("/acl/alice")).acl, [{ perms: Perms.ALL, id: { scheme: "digest", id: ALICE_ID } }], "auth became alice's digest");

    for (const id of [leader, ...followers]) {
      const stranger = await client(id);
      await stranger.sync("/acl/alice");
      const where = `through server ${id}`;
      await assert.rejects(stranger.getData("/acl/alice"), rejectsWith("NOAUTH"), `getData ${where}`);
      await assert.rejects(stranger.getChildren("/acl/alice"), rejectsWith("NOAUTH"), `getChildren ${where}`);
      await assert.rejects(stranger.getACL("/acl/alice"), rejectsWith("NOAUTH"), `getACL ${where}`);
      await assert.rejects(stranger.setData("/acl/alice", "mine"), rejectsWith("NOAUTH"), `setData ${where}`);
      await assert.rejects(stranger.create("/acl/alice/x", ""), rejectsWith("NOAUTH"), `create ${where}`);
      await assert.rejects(stranger.delete("/acl/alice/child"), rejectsWith("NOAUTH"), `delete ${where}`);
      await assert.rejects(stranger.setACL("/acl/alice", [...READ_ACL_UNSAFE]), rejectsWith("NOAUTH"), `setACL ${where}`);
      assert.ok(await stranger.exists("/acl/alice"), `exists needs no permission ${where}`);
      await stranger.addAuthInfo("digest", "alice:wrong");
      await assert.rejects(stranger.setData("/acl/alice", "mine"), rejectsWith("NOAUTH"), `a wrong password ${where}`);
    }

    const stat = await alice.setData("/acl/alice", "still hers");
    assert.equal(stat.version, 1, "nothing else changed it");
    assert.equal(text((await alice.getData("/acl/alice")).data), "still hers");
    await alice.setACL("/acl/alice", [{ perms: Perms.ALL, id: { scheme: "digest", id: ALICE_ID } }, ...READ_ACL_UNSAFE], { version: 0 });
    const reader = await client(followers[1]!);
    await reader.sync("/acl/alice");
    assert.equal(text((await reader.getData("/acl/alice")).data), "still hers", "READ for everyone now");
    assert.deepEqual((await reader.getACL("/acl/alice")).acl[0], { perms: Perms.ALL, id: { scheme: "digest", id: "alice:x" } }, "her hash hidden from readers");
    // In ZooKeeper's iteration order (its connection ids are a hash set), not the order they were added.
    assert.deepEqual(await alice.whoAmI(), [
      { authScheme: "digest", user: "alice" },
      { authScheme: "ip", user: "127.0.0.1" },
    ]);
  });

  test("the configured super user, authenticated through a follower, passes every check", async () => {
    const owner = await client(leader);
    await owner.addAuthInfo("digest", "owner:pw");
    await owner.create("/acl/owned", "x", { acl: CREATOR_ALL_ACL });
    await owner.create("/acl/owned/child", "");

    // Credentials without a colon are hashed whole, as ZooKeeper's generateDigest does: a digest id, not the super user.
    const impostor = await client(followers[1]!);
    await impostor.addAuthInfo("digest", "super");
    await impostor.sync("/acl/owned");
    await assert.rejects(impostor.getData("/acl/owned"), rejectsWith("NOAUTH"));

    const root = await client(followers[1]!);
    await root.addAuthInfo("digest", "super:test");
    assert.deepEqual(
      (await root.whoAmI()).map((info) => info.authScheme),
      ["super", "ip", "digest"],
    );
    await root.sync("/acl/owned");
    assert.equal(text((await root.getData("/acl/owned")).data), "x");
    assert.deepEqual(await root.getChildren("/acl/owned"), ["child"]);
    await root.setData("/acl/owned", "seized");
    await root.delete("/acl/owned/child");
    await root.setACL("/acl/owned", [...READ_ACL_UNSAFE]);
    assert.deepEqual((await root.getACL("/acl/owned")).acl, [...READ_ACL_UNSAFE]);
    await assert.rejects(owner.setData("/acl/owned", "back"), rejectsWith("NOAUTH"), "the owner lost it to the super user's setACL");
  });

  test("credentials follow the session to another server, sent before anything else", async () => {
    const [first, second] = followers as [number, number];
    const alice = await Client.connect(`${cluster.server(first).connectString},${cluster.server(second).connectString}`, {
      sessionTimeoutMs: 4_000,
      connectTimeoutMs: 30_000,
      shuffleHosts: false,
    });
    clients.push(alice);
    await alice.addAuthInfo("digest", "alice:secret");
    await alice.create("/acl/moving", "v0", { acl: CREATOR_ALL_ACL });
    const reconnected = new Promise<void>((resolve) => alice.on("state", (s) => s === "reconnected" && resolve()));
    await cluster.server(first).crash();
    try {
      await reconnected;
      // The first requests on the new connection: nothing may run before the credentials are back.
      const [write, read, who] = await Promise.all([alice.setData("/acl/moving", "v1"), alice.getData("/acl/moving"), alice.whoAmI()]);
      assert.equal(write.version, 1);
      assert.equal(text(read.data), "v1");
      assert.deepEqual(who, [
        { authScheme: "digest", user: "alice" },
        { authScheme: "ip", user: "127.0.0.1" },
      ]);
    } finally {
      await cluster.server(first).restart();
    }
  });

  test("bad ACLs are INVALIDACL, bad credentials AUTHFAILED, and the session goes on", async () => {
    const c = await client(followers[0]!);
    const bad: [string, Acl[]][] = [
      ["an unknown scheme", [{ perms: Perms.ALL, id: { scheme: "kerberos", id: "bob" } }]],
      ["a digest id without a colon", [{ perms: Perms.ALL, id: { scheme: "digest", id: "bob" } }]],
      ["an ip with too many bits", [{ perms: Perms.ALL, id: { scheme: "ip", id: "10.0.0.0/33" } }]],
      ["a malformed ip", [{ perms: Perms.ALL, id: { scheme: "ip", id: "10.0.0" } }]],
      ["world with another id", [{ perms: Perms.ALL, id: { scheme: "world", id: "everyone" } }]],
      ["auth from a session with no digest", [...CREATOR_ALL_ACL]],
    ];
    for (const [name, acl] of bad) {
      await assert.rejects(c.create("/acl/bad", "", { acl }), rejectsWith("INVALIDACL"), `create with ${name}`);
      await assert.rejects(c.setACL("/acl", acl), rejectsWith("INVALIDACL"), `setACL with ${name}`);
      await assert.rejects(
        c.multi([{ type: "create", path: "/acl/bad", data: new Uint8Array(), mode: "persistent", acl, ttlMs: undefined }]),
        rejectsWith("INVALIDACL"),
        `multi with ${name}`,
      );
    }
    for (const [scheme, auth] of [
      ["digest", `bob:${"pw".repeat(600)}`],
      ["kerberos", "bob:pw"],
      ["world", "anyone"],
      ["super", "test"],
    ]) {
      await assert.rejects(c.addAuthInfo(scheme!, auth!), rejectsWith("AUTHFAILED"), `addAuthInfo ${scheme} ${auth}`);
    }
    assert.equal(c.state, "connected");
    assert.deepEqual(await c.whoAmI(), [{ authScheme: "ip", user: "127.0.0.1" }], "no id was added");
    await c.create("/acl/good", "ok", { acl: [{ perms: Perms.ALL, id: { scheme: "ip", id: "127.0.0.0/8" } }] });
    assert.equal(text((await c.getData("/acl/good")).data), "ok", "the ip ACL matches the client's address");
    await c.setACL("/acl/good", [{ perms: Perms.ALL, id: { scheme: "ip", id: "10.0.0.0/8" } }]);
    await assert.rejects(c.getData("/acl/good"), rejectsWith("NOAUTH"), "another network's ip ACL does not");
    assert.equal((await c.getACL("/zookeeper")).acl.length, 1, "still answering");
  });
});
