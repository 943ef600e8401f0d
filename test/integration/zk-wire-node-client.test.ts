/**
 * Issue 7 acceptance: corral's ZooKeeper-protocol port driven only by node-zookeeper-client
 * (npm), an independently written ZooKeeper client. Every expectation here was first checked
 * against a real ZooKeeper 3.8.0 ensemble (three servers on 127.0.0.1) with the same client, so
 * what is asserted is ZooKeeper's behaviour as this client reports it: values, Stat fields,
 * error codes, watch event types and paths, multi results.
 *
 * Three voters; each test works under a fresh root of its own.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { codeOf, long, Nzk, watchOnce, zookeeper } from "../helpers/nzk.js";
import { waitFor } from "../helpers/wait.js";

const { ACL, CreateMode, Event, Exception, Id, Permission } = zookeeper;

/** What the tests need of a running ensemble; the servers are numbered from 1. */
interface Ensemble {
  readonly ids: number[];
  /** host:port of server `id`'s ZooKeeper-protocol port. */
  address(id: number): string;
  /** Stops server `id` (its sessions stay alive on the rest of the ensemble). */
  stop(id: number): Promise<void>;
  restart(id: number): Promise<void>;
  close(): Promise<void>;
}

async function startCorral(): Promise<Ensemble> {
  const cluster = await ClusterProcess.start({ voters: 3 });
  await waitFor("an agreed leader", () => cluster.agreedLeader(), 60_000);
  return {
    ids: [...cluster.servers.keys()].sort((a, b) => a - b),
    address: (id) => cluster.server(id).zkConnectString,
    stop: async (id) => {
      await cluster.server(id).stop();
    },
    restart: (id) => cluster.server(id).restart(),
    close: () => cluster.stop(),
  };
}

const startEnsemble: () => Promise<Ensemble> = startCorral;

const SESSION_TIMEOUT_MS = 10_000;

function digestOf(userPassword: string): string {
  const user = userPassword.slice(0, userPassword.indexOf(":"));
  return `${user}:${createHash("sha1").update(userPassword).digest("base64")}`;
}

function sorted(names: string[]): string[] {
  return [...names].sort();
}

const ZERO_LONG = Buffer.alloc(8);

describe("ZooKeeper wire protocol through node-zookeeper-client", () => {
  let ensemble: Ensemble;
  const sessions: Nzk[] = [];

  before(async () => {
    ensemble = await startEnsemble();
  });
  after(async () => {
    await Promise.allSettled(sessions.map((s) => s.close(2_000)));
    await ensemble?.close();
  });

  /** A session with one server (`id`) or, without `id`, with the whole ensemble. */
  async function connect(id?: number): Promise<Nzk> {
    const connectString = id === undefined ? ensemble.ids.map((i) => ensemble.address(i)).join(",") : ensemble.address(id);
    const session = await Nzk.connect(connectString, { sessionTimeoutMs: SESSION_TIMEOUT_MS });
    sessions.push(session);
    return session;
  }

  function freshRoot(name: string): string {
    return `/nzk-${name}-${randomBytes(4).toString("hex")}`;
  }

  test("create, getData, setData, exists and delete: values, Stat fields, versions and error codes", async () => {
    const zk = await connect(1);
    const root = freshRoot("crud");

    assert.equal(await zk.create(root, Buffer.from("hello")), root);
    const { data, stat } = await zk.getData(root);
    assert.equal(data?.toString(), "hello");
    assert.equal(stat.version, 0);
    assert.equal(stat.cversion, 0);
    assert.equal(stat.aversion, 0);
    assert.equal(stat.dataLength, 5);
    assert.equal(stat.numChildren, 0);
    assert.deepEqual(stat.ephemeralOwner, ZERO_LONG, "a persistent node has no owner");
    assert.deepEqual(stat.mzxid, stat.czxid);
    assert.deepEqual(stat.pzxid, stat.czxid, "a new node's pzxid is its czxid");
    assert.deepEqual(stat.mtime, stat.ctime);
    assert.ok(long(stat.czxid) > 0n);
    const ctime = Number(long(stat.ctime));
    assert.ok(Math.abs(ctime - Date.now()) < 24 * 3600_000, `ctime ${ctime} is milliseconds since the epoch`);

    // exists answers the same Stat as getData.
    assert.deepEqual(await zk.exists(root), stat);
    assert.equal(await zk.exists(`${root}/missing`), null);

    // Errors on create.
    assert.equal(await codeOf(zk.create(root)), Exception.NODE_EXISTS);
    assert.equal(await codeOf(zk.create(`${root}/no/parent`)), Exception.NO_NODE);

    // setData: versions.
    const set1 = await zk.setData(root, Buffer.from("hello, world"), 0);
    assert.equal(set1.version, 1);
    assert.equal(set1.dataLength, 12);
    assert.deepEqual(set1.czxid, stat.czxid);
    assert.ok(long(set1.mzxid) > long(stat.mzxid));
    assert.deepEqual(set1.pzxid, stat.pzxid, "setData leaves pzxid alone");
    assert.equal(await codeOf(zk.setData(root, Buffer.from("stale"), 0)), Exception.BAD_VERSION);
    const set2 = await zk.setData(root, Buffer.from("any"), -1);
    assert.equal(set2.version, 2);
    assert.equal((await zk.getData(root)).data?.toString(), "any");
    assert.equal(await codeOf(zk.setData(`${root}/missing`, Buffer.from("x"))), Exception.NO_NODE);
    assert.equal(await codeOf(zk.getData(`${root}/missing`)), Exception.NO_NODE);

    // A node made without data has no bytes. (ZooKeeper 3.8 keeps it null and sends length -1,
    // which this client hands back as undefined; an empty buffer is accepted as the same thing.)
    const empty = await zk.create(`${root}/empty`);
    const emptyRead = await zk.getData(empty);
    assert.equal(emptyRead.stat.dataLength, 0);
    assert.equal(emptyRead.data?.length ?? 0, 0);

    // The parent's Stat follows its children.
    const child = await zk.create(`${root}/child`, Buffer.from("c"));
    const childStat = (await zk.exists(child))!;
    const parentStat = (await zk.exists(root))!;
    assert.equal(parentStat.numChildren, 2);
    assert.equal(parentStat.cversion, 2);
    assert.equal(parentStat.version, 2, "children do not change the parent's version");
    assert.deepEqual(parentStat.pzxid, childStat.czxid, "pzxid is the last child change");

    // delete: versions, NotEmpty, NoNode.
    assert.equal(await codeOf(zk.remove(root)), Exception.NOT_EMPTY);
    assert.equal(await codeOf(zk.remove(child, 3)), Exception.BAD_VERSION);
    await zk.remove(child, 0);
    await zk.remove(empty);
    assert.equal(await codeOf(zk.remove(child)), Exception.NO_NODE);
    const afterDeletes = (await zk.exists(root))!;
    assert.equal(afterDeletes.numChildren, 0);
    assert.equal(afterDeletes.cversion, 4, "a delete bumps the parent's cversion too");
    assert.ok(long(afterDeletes.pzxid) > long(childStat.czxid));
    assert.equal(await codeOf(zk.remove(root, 1)), Exception.BAD_VERSION);
    await zk.remove(root, 2);
    assert.equal(await zk.exists(root), null);
  });

  test("getChildren: names, the parent's Stat, NoNode", async () => {
    const zk = await connect(2);
    const root = freshRoot("children");
    await zk.create(root);
    const none = await zk.getChildren(root);
    assert.deepEqual(none.children, []);
    assert.equal(none.stat.numChildren, 0);
    for (const name of ["b", "a", "c"]) await zk.create(`${root}/${name}`, Buffer.from(name));
    const three = await zk.getChildren(root);
    assert.deepEqual(sorted(three.children), ["a", "b", "c"]);
    assert.equal(three.stat.numChildren, 3);
    assert.equal(three.stat.cversion, 3);
    assert.deepEqual(three.stat, await zk.exists(root));
    assert.equal(await codeOf(zk.getChildren(`${root}/missing`)), Exception.NO_NODE);
    assert.deepEqual((await zk.getChildren(`${root}/a`)).children, []);
  });

  test("persistent, ephemeral, sequential, ephemeral-sequential; ephemerals end with their session", async () => {
    const owner = await connect(1);
    const other = await connect(3);
    const root = freshRoot("modes");
    await owner.create(root);

    const persistent = await owner.create(`${root}/persistent`, Buffer.from("p"), { mode: CreateMode.PERSISTENT });
    const ephemeral = await owner.create(`${root}/ephemeral`, Buffer.from("e"), { mode: CreateMode.EPHEMERAL });
    const seq0 = await owner.create(`${root}/seq-`, Buffer.from("s0"), { mode: CreateMode.PERSISTENT_SEQUENTIAL });
    const seq1 = await owner.create(`${root}/seq-`, Buffer.from("s1"), { mode: CreateMode.PERSISTENT_SEQUENTIAL });
    const eseq = await owner.create(`${root}/eseq-`, Buffer.from("es"), { mode: CreateMode.EPHEMERAL_SEQUENTIAL });
    assert.equal(persistent, `${root}/persistent`);
    assert.equal(ephemeral, `${root}/ephemeral`);
    // One counter per parent, shared by every sequential mode; 10 digits, zero-padded. The
    // parent's first two children were not sequential: ZooKeeper numbers from the parent's
    // cversion, so the first sequential child is ...0000000002.
    assert.equal(seq0, `${root}/seq-0000000002`);
    assert.equal(seq1, `${root}/seq-0000000003`);
    assert.equal(eseq, `${root}/eseq-0000000004`);

    const sessionId = owner.sessionId;
    assert.notDeepEqual(sessionId, ZERO_LONG);
    for (const path of [ephemeral, eseq]) {
      assert.deepEqual((await owner.exists(path))!.ephemeralOwner, sessionId, `${path} is owned by the session`);
    }
    for (const path of [persistent, seq0, seq1]) assert.deepEqual((await owner.exists(path))!.ephemeralOwner, ZERO_LONG);
    assert.equal(await codeOf(owner.create(`${ephemeral}/child`)), Exception.NO_CHILDREN_FOR_EPHEMERALS);

    // Seen from another session on another server.
    await other.syncBarrier();
    assert.deepEqual(
      sorted((await other.getChildren(root)).children),
      sorted(["persistent", "ephemeral", "seq-0000000002", "seq-0000000003", "eseq-0000000004"]),
    );
    assert.deepEqual((await other.getData(eseq)).stat.ephemeralOwner, sessionId);

    await owner.close();
    await other.syncBarrier();
    assert.equal(await other.exists(ephemeral), null, "the ephemeral went with its session");
    assert.equal(await other.exists(eseq), null, "the ephemeral-sequential went with its session");
    assert.deepEqual(sorted((await other.getChildren(root)).children), ["persistent", "seq-0000000002", "seq-0000000003"]);

    const parent = (await other.exists(root))!;
    assert.equal(parent.numChildren, 3);
    assert.equal(parent.cversion, 7, "five creates, and the two deletes of the session's close");

    // The counter never goes back, whoever creates next. (ZooKeeper 3.8 answers ...0000000005
    // here although cversion is 7: the leader's prep state does not count closeSession's deletes.
    // Only the order is asserted.)
    const next = await other.create(`${root}/seq-`, null, { mode: CreateMode.PERSISTENT_SEQUENTIAL });
    const suffix = /^.*\/seq-(\d{10})$/.exec(next)?.[1];
    assert.ok(suffix !== undefined && Number(suffix) > 4, `${next} comes after ${eseq}`);
  });

  test("one-time watches: data changed, deleted, children changed, created (exists)", async () => {
    const watcher = await connect(2);
    const writer = await connect(3);
    const root = freshRoot("watches");
    await writer.create(root);
    await writer.create(`${root}/data`, Buffer.from("v0"));
    await writer.create(`${root}/gone`);
    await watcher.syncBarrier();

    // NODE_DATA_CHANGED on a getData watch.
    const dataWatch = watchOnce();
    assert.equal((await watcher.getData(`${root}/data`, dataWatch.watcher)).data?.toString(), "v0");
    await writer.setData(`${root}/data`, Buffer.from("v1"));
    const changed = await dataWatch.event;
    assert.equal(changed.getType(), Event.NODE_DATA_CHANGED);
    assert.equal(changed.getName(), "NODE_DATA_CHANGED");
    assert.equal(changed.getPath(), `${root}/data`);
    // One-time: a second change does not fire it again (an event would arrive before the read's answer).
    await writer.setData(`${root}/data`, Buffer.from("v2"));
    await watcher.syncBarrier();
    assert.equal((await watcher.getData(`${root}/data`)).data?.toString(), "v2");
    assert.equal(dataWatch.fired(), 1);

    // NODE_DELETED on a getData watch and on an exists watch of an existing node.
    const deleteWatch = watchOnce();
    const existsDeleteWatch = watchOnce();
    await watcher.getData(`${root}/gone`, deleteWatch.watcher);
    assert.ok(await watcher.exists(`${root}/gone`, existsDeleteWatch.watcher));
    await writer.remove(`${root}/gone`);
    for (const deleted of [await deleteWatch.event, await existsDeleteWatch.event]) {
      assert.equal(deleted.getType(), Event.NODE_DELETED);
      assert.equal(deleted.getPath(), `${root}/gone`);
    }

    // NODE_CHILDREN_CHANGED on a getChildren watch, for a create and (re-armed) for a delete.
    const childWatch = watchOnce();
    assert.deepEqual((await watcher.getChildren(root, childWatch.watcher)).children, ["data"]);
    await writer.create(`${root}/kid`);
    const childrenChanged = await childWatch.event;
    assert.equal(childrenChanged.getType(), Event.NODE_CHILDREN_CHANGED);
    assert.equal(childrenChanged.getPath(), root);
    await writer.setData(`${root}/kid`, Buffer.from("not a child change"));
    const rearmed = watchOnce();
    await watcher.getChildren(root, rearmed.watcher);
    await writer.remove(`${root}/kid`);
    assert.equal((await rearmed.event).getType(), Event.NODE_CHILDREN_CHANGED);
    await watcher.syncBarrier();
    await watcher.getChildren(root);
    assert.equal(childWatch.fired(), 1);

    // NODE_CREATED through an exists watch on a missing node.
    const createWatch = watchOnce();
    assert.equal(await watcher.exists(`${root}/later`, createWatch.watcher), null);
    await writer.create(`${root}/later`, Buffer.from("here"));
    const created = await createWatch.event;
    assert.equal(created.getType(), Event.NODE_CREATED);
    assert.equal(created.getPath(), `${root}/later`);

    // A child watch sees its own node deleted as NODE_DELETED.
    const parentGone = watchOnce();
    await watcher.getChildren(`${root}/later`, parentGone.watcher);
    await writer.remove(`${root}/later`);
    const parentDeleted = await parentGone.event;
    assert.equal(parentDeleted.getType(), Event.NODE_DELETED);
    assert.equal(parentDeleted.getPath(), `${root}/later`);

    // The session's own writes fire its own watches too.
    const own = watchOnce();
    await watcher.getData(`${root}/data`, own.watcher);
    await watcher.setData(`${root}/data`, Buffer.from("mine"));
    assert.equal((await own.event).getType(), Event.NODE_DATA_CHANGED);
  });

  test("transaction (multi): every op's result on success; on a BadVersion in the middle, nothing applied", async () => {
    const zk = await connect(1);
    const root = freshRoot("multi");
    await zk.create(root);
    await zk.create(`${root}/v`, Buffer.from("0"));
    await zk.setData(`${root}/v`, Buffer.from("1")); // version 1 (the library sends a version of 0 as -1)

    const ok = await zk.multi((txn) =>
      txn
        .create(`${root}/a`, Buffer.from("a"))
        .create(`${root}/s-`, Buffer.from("s"), CreateMode.PERSISTENT_SEQUENTIAL)
        .setData(`${root}/v`, Buffer.from("2"), 1)
        .check(`${root}/v`, 2)
        .remove(`${root}/a`, -1),
    );
    assert.equal(ok.error, undefined);
    const results = ok.results!;
    assert.equal(results.length, 5);
    assert.deepEqual(results[0], { type: 1, path: `${root}/a` });
    assert.deepEqual(results[1], { type: 1, path: `${root}/s-0000000002` });
    assert.equal(results[2]!.type, 5);
    assert.equal(results[2]!.stat!.version, 2);
    assert.equal(results[2]!.stat!.dataLength, 1);
    assert.deepEqual(results[3], { type: 13 });
    assert.deepEqual(results[4], { type: 2 });
    // One txn: the setData and the creates share a zxid.
    const sStat = (await zk.exists(`${root}/s-0000000002`))!;
    assert.deepEqual(results[2]!.stat!.mzxid, sStat.czxid);
    assert.equal(await zk.exists(`${root}/a`), null);
    assert.equal((await zk.getData(`${root}/v`)).data?.toString(), "2");

    const before = (await zk.exists(root))!;
    const failed = await zk.multi((txn) =>
      txn.create(`${root}/x`, Buffer.from("x")).setData(`${root}/v`, Buffer.from("3"), 7).create(`${root}/y`).remove(`${root}/s-0000000002`),
    );
    assert.ok(failed.error instanceof Exception, String(failed.error));
    assert.equal(failed.error.getCode(), Exception.BAD_VERSION);
    // ZooKeeper 3.8: ops before the failure report OK, the failed op its error, the ones after
    // RuntimeInconsistency — all as error results (type -1).
    assert.deepEqual(failed.results, [
      { type: -1, err: Exception.OK },
      { type: -1, err: Exception.BAD_VERSION },
      { type: -1, err: Exception.RUNTIME_INCONSISTENCY },
      { type: -1, err: Exception.RUNTIME_INCONSISTENCY },
    ]);
    assert.equal(await zk.exists(`${root}/x`), null);
    assert.equal(await zk.exists(`${root}/y`), null);
    assert.ok(await zk.exists(`${root}/s-0000000002`));
    assert.equal((await zk.getData(`${root}/v`)).stat.version, 2);
    assert.deepEqual(await zk.exists(root), before, "a failed multi leaves the parent untouched");

    // A failing first op: NodeExists, the rest RuntimeInconsistency.
    const exists = await zk.multi((txn) => txn.create(`${root}/v`).check(`${root}/v`, 2));
    assert.equal((exists.error as InstanceType<typeof Exception>).getCode(), Exception.NODE_EXISTS);
    assert.deepEqual(exists.results, [
      { type: -1, err: Exception.NODE_EXISTS },
      { type: -1, err: Exception.RUNTIME_INCONSISTENCY },
    ]);
  });

  test("ACL: digest ACLs, NoAuth without auth, addAuthInfo, getACL and setACL", async () => {
    const alice = await connect(1);
    const stranger = await connect(2);
    const root = freshRoot("acl");
    await alice.create(root);
    alice.addAuthInfo("digest", "alice:secret");
    const aliceId = digestOf("alice:secret");

    // An explicit digest ACL.
    const privatePath = await alice.create(`${root}/private`, Buffer.from("secret data"), {
      acls: [new ACL(Permission.ALL, new Id("digest", aliceId))],
    });
    // CREATOR_ALL_ACL ("auth" scheme) becomes the creator's authenticated ids.
    const creatorPath = await alice.create(`${root}/creator`, Buffer.from("c"), { acls: ACL.CREATOR_ALL_ACL });
    const creatorAcl = await alice.getACL(creatorPath);
    assert.deepEqual(
      creatorAcl.acls.map((a) => ({ perms: a.permission, scheme: a.id.scheme, id: a.id.id })),
      [{ perms: Permission.ALL, scheme: "digest", id: aliceId }],
    );
    assert.equal(creatorAcl.stat.aversion, 0);
    assert.equal((await alice.getData(privatePath)).data?.toString(), "secret data");

    // Without auth: reads and writes are refused, exists is not checked.
    await stranger.syncBarrier();
    assert.equal(await codeOf(stranger.getData(privatePath)), Exception.NO_AUTH);
    assert.equal(await codeOf(stranger.setData(privatePath, Buffer.from("x"))), Exception.NO_AUTH);
    assert.equal(await codeOf(stranger.getChildren(privatePath)), Exception.NO_AUTH);
    assert.equal(await codeOf(stranger.create(`${privatePath}/child`)), Exception.NO_AUTH);
    assert.equal(await codeOf(stranger.setACL(privatePath, ACL.OPEN_ACL_UNSAFE)), Exception.NO_AUTH);
    assert.equal(await codeOf(stranger.getACL(privatePath)), Exception.NO_AUTH, "getACL needs READ or ADMIN");
    assert.equal((await stranger.exists(privatePath))!.dataLength, 11);
    // A wrong password is not refused (digest auth adds whatever id it computes), it just matches nothing.
    stranger.addAuthInfo("digest", "alice:wrong");
    assert.equal(await codeOf(stranger.getData(privatePath)), Exception.NO_AUTH);
    // A session without a matching id cannot create with the "auth" scheme... only with ids it has.
    const anonymous = await connect(3);
    assert.equal(await codeOf(anonymous.create(`${root}/nobody`, null, { acls: ACL.CREATOR_ALL_ACL })), Exception.INVALID_ACL);

    // With the right credentials.
    stranger.addAuthInfo("digest", "alice:secret");
    assert.equal((await stranger.getData(privatePath)).data?.toString(), "secret data");
    await stranger.setData(privatePath, Buffer.from("by stranger"));

    // getACL / setACL with versions. Alice's server may not have applied the stranger's setData
    // yet (a read is local): sync first, as ZooKeeper requires.
    await alice.syncBarrier();
    const got = await alice.getACL(privatePath);
    assert.deepEqual(
      got.acls.map((a) => ({ perms: a.permission, scheme: a.id.scheme, id: a.id.id })),
      [{ perms: Permission.ALL, scheme: "digest", id: aliceId }],
    );
    assert.equal(got.stat.aversion, 0);
    assert.equal(got.stat.version, 1);
    const readable = [new ACL(Permission.ALL, new Id("digest", aliceId)), new ACL(Permission.READ, Id.ANYONE_ID_UNSAFE)];
    const setStat = await alice.setACL(privatePath, readable, 0);
    assert.equal(setStat.aversion, 1);
    assert.equal(setStat.version, 1, "setACL leaves the data version alone");
    assert.equal(await codeOf(alice.setACL(privatePath, readable, 0)), Exception.BAD_VERSION);
    const full = await alice.getACL(privatePath);
    assert.deepEqual(
      full.acls.map((a) => ({ perms: a.permission, scheme: a.id.scheme, id: a.id.id })),
      [
        { perms: Permission.ALL, scheme: "digest", id: aliceId },
        { perms: Permission.READ, scheme: "world", id: "anyone" },
      ],
    );
    assert.equal(full.stat.aversion, 1);
    // A caller with READ but not ADMIN gets digest ids with the hash replaced by "x".
    await anonymous.syncBarrier();
    const redacted = await anonymous.getACL(privatePath);
    assert.deepEqual(
      redacted.acls.map((a) => ({ perms: a.permission, scheme: a.id.scheme, id: a.id.id })),
      [
        { perms: Permission.ALL, scheme: "digest", id: "alice:x" },
        { perms: Permission.READ, scheme: "world", id: "anyone" },
      ],
    );
    assert.deepEqual(redacted.stat, full.stat);
    await anonymous.syncBarrier();
    assert.equal((await anonymous.getData(privatePath)).data?.toString(), "by stranger");
    assert.equal(await codeOf(anonymous.setData(privatePath, Buffer.from("no"))), Exception.NO_AUTH);

    // delete is checked against the parent's ACL: no DELETE on the node's parent, no delete;
    // DELETE on the parent (the open root), the node goes whatever its own ACL says.
    await alice.create(`${privatePath}/kid`);
    await anonymous.syncBarrier();
    assert.equal(await codeOf(anonymous.remove(`${privatePath}/kid`)), Exception.NO_AUTH);
    await alice.remove(`${privatePath}/kid`);
    await anonymous.syncBarrier();
    await anonymous.remove(privatePath);
    assert.equal(await anonymous.exists(privatePath), null);
  });

  test("writes through one server are visible from a session on another after a sync barrier", async () => {
    const [first, second, third] = ensemble.ids;
    const writer = await connect(first);
    const readers = [await connect(second), await connect(third)];
    const root = freshRoot("visible");
    await writer.create(root, Buffer.from("0"));
    for (let round = 1; round <= 20; round++) {
      const stat = await writer.setData(root, Buffer.from(String(round)));
      for (const reader of readers) {
        await reader.syncBarrier();
        const read = await reader.getData(root);
        assert.equal(read.data?.toString(), String(round));
        assert.deepEqual(read.stat.mzxid, stat.mzxid);
        assert.equal(read.stat.version, round);
      }
    }
    // And the other way round: a create through the last server, seen at the first.
    await readers[1]!.create(`${root}/from-${third}`);
    await writer.syncBarrier();
    assert.deepEqual((await writer.getChildren(root)).children, [`from-${third}`]);
  });

  test("a session resumed on another server keeps its ephemerals and watches", async () => {
    const zk = await connect();
    const home = ensemble.ids.find((id) => ensemble.address(id) === zk.connectedTo());
    assert.ok(home !== undefined, `connected to ${zk.connectedTo()}, one of ${ensemble.ids.map((id) => ensemble.address(id)).join(",")}`);
    const observer = await connect(ensemble.ids.find((id) => id !== home));
    const root = freshRoot("resume");
    await zk.create(root);
    await zk.create(`${root}/watched`, Buffer.from("before"));
    const ephemeral = await zk.create(`${root}/eph-`, Buffer.from("mine"), { mode: CreateMode.EPHEMERAL_SEQUENTIAL });
    const sessionId = zk.sessionId;
    const dataWatch = watchOnce();
    const childWatch = watchOnce();
    const createWatch = watchOnce();
    await zk.getData(`${root}/watched`, dataWatch.watcher);
    await zk.getChildren(root, childWatch.watcher);
    assert.equal(await zk.exists(`${root}/later`, createWatch.watcher), null);

    let disconnects = 0;
    zk.client.on("disconnected", () => (disconnects += 1));
    const reconnected = new Promise<void>((resolve) => zk.client.once("disconnected", () => zk.client.once("connected", () => resolve())));
    await ensemble.stop(home);
    try {
      // A change right after the kill (whether the session has moved yet or not, the watch must
      // fire: a resumed session re-registers its watches with its last zxid), and one after.
      await observer.setData(`${root}/watched`, Buffer.from("during"));
      await reconnected;
      assert.ok(disconnects >= 1);
      const now = zk.connectedTo();
      assert.notEqual(now, ensemble.address(home), "moved to another server");
      assert.deepEqual(zk.sessionId, sessionId, "the same session");

      const changed = await dataWatch.event;
      assert.equal(changed.getType(), Event.NODE_DATA_CHANGED);
      assert.equal(changed.getPath(), `${root}/watched`);
      await observer.create(`${root}/later`, Buffer.from("x"));
      const created = await createWatch.event;
      assert.equal(created.getType(), Event.NODE_CREATED);
      assert.equal(created.getPath(), `${root}/later`);
      const children = await childWatch.event;
      assert.equal(children.getType(), Event.NODE_CHILDREN_CHANGED);
      assert.equal(children.getPath(), root);

      // Its ephemeral is still there, still its own, seen from another session.
      await observer.syncBarrier();
      const eph = await observer.exists(ephemeral);
      assert.ok(eph, "the ephemeral survived the move");
      assert.deepEqual(eph.ephemeralOwner, sessionId);
      // And the session works where it is now.
      assert.equal((await zk.getData(`${root}/watched`)).data?.toString(), "during");
      await zk.setData(ephemeral, Buffer.from("still mine"));
      await observer.syncBarrier();
      assert.equal((await observer.getData(ephemeral)).data?.toString(), "still mine");

      await zk.close();
      await observer.syncBarrier();
      assert.equal(await observer.exists(ephemeral), null, "gone once the session closes");
    } finally {
      await ensemble.restart(home);
    }
  });
});
