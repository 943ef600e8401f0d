/**
 * ZooKeeper's own data files, read and written by src/zookeeper-data, against files a real
 * ZooKeeper 3.8 wrote in this test: a standalone server per snapshot compression (none, gz, snappy)
 * runs the migration workload with a small snapCount (many snapshots, many log files, snapshots
 * taken while txns apply), its tree is read through its client port, and it is killed. What the
 * readers recover must be that tree, node by node; damage must be refused as ZooKeeper refuses it.
 */
import assert from "node:assert/strict";
import { cp, readdir, readFile, rm, truncate, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { NULL_DATA, OPEN_ACL_UNSAFE } from "../../src/common/znode.js";
import { clientStat, type DataTree } from "../../src/store/data-tree.js";
import { treeFromImage } from "../../src/store/tree-image.js";
import { adler32 } from "../../src/zookeeper-data/adler32.js";
import { corralImageOf, zookeeperImageOf } from "../../src/zookeeper-data/convert.js";
import { ZooKeeperDataError } from "../../src/zookeeper-data/errors.js";
import { zookeeperSessionPassword } from "../../src/zookeeper-data/session-password.js";
import { decodeSnappyJavaStream, snappyUncompress, SnappyError } from "../../src/zookeeper-data/snappy.js";
import { decodeZooKeeperSnapshot, encodeZooKeeperSnapshot } from "../../src/zookeeper-data/snapshot-file.js";
import { readZooKeeperTxnLog } from "../../src/zookeeper-data/txn-log-file.js";
import { recoverZooKeeperDataDir, zookeeperFiles, type SnapshotCompression } from "../../src/zookeeper-data/zookeeper-data-dir.js";
import { DIGEST_VERSION, ZooKeeperTree } from "../../src/zookeeper-data/zookeeper-tree.js";
import { long } from "../helpers/nzk.js";
import { RealZooKeeper } from "../helpers/real-zookeeper.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { readZnodes, runZooKeeperWorkload, SUPER_DIGEST, treeDifferences, type ZnodeView } from "../helpers/zookeeper-workload.js";

interface Fixture {
  /** A copy of the killed server's dataDir (tests damage copies of it). */
  dataDir: string;
  /** The tree ZooKeeper served just before it was killed. */
  served: Map<string, ZnodeView>;
  /** Open sessions at the kill: id and the password ZooKeeper gave the client. */
  sessions: { id: bigint; password: Buffer }[];
}

const fixtures = new Map<SnapshotCompression, Fixture>();
let scratch: { path: string; remove: () => Promise<void> };

/** Runs a real ZooKeeper 3.8 writing snapshots with `compression`, and keeps what it left. */
async function makeFixture(compression: SnapshotCompression, rounds: number): Promise<Fixture> {
  const zk = await RealZooKeeper.start({
    tickTimeMs: 3000,
    // Small preallocation (ZooKeeper pads each log file with zeros in steps of it): fast copies of the dir.
    configLines: ["snapCount=40", "preAllocSize=64"],
    systemProperties: {
      "zookeeper.extendedTypesEnabled": "true",
      "zookeeper.DigestAuthenticationProvider.superDigest": SUPER_DIGEST,
      ...(compression === "none" ? {} : { "zookeeper.snapshot.compression.method": compression }),
    },
  });
  try {
    const workload = await runZooKeeperWorkload([zk.connectString], rounds);
    const served = await readZnodes(zk.connectString);
    const sessions = workload.open.map((session) => ({ id: long(session.sessionId), password: session.client.getSessionPassword() }));
    await zk.kill();
    for (const session of workload.open) session.client.close();
    const dataDir = join(scratch.path, compression);
    await cp(zk.dataDir, dataDir, { recursive: true });
    return { dataDir, served, sessions };
  } finally {
    await zk.stop();
  }
}

before(async () => {
  scratch = await makeTempDir("corral-zkdata-");
  fixtures.set("none", await makeFixture("none", 10));
  fixtures.set("gz", await makeFixture("gz", 3));
  fixtures.set("snappy", await makeFixture("snappy", 3));
});

after(async () => {
  await scratch?.remove();
});

function fixture(compression: SnapshotCompression): Fixture {
  return fixtures.get(compression)!;
}

/** A corral tree as a ZooKeeper client reads it (the shape readZnodes gives). */
function viewOf(tree: DataTree): Map<string, ZnodeView> {
  const nodes = new Map<string, ZnodeView>();
  tree.walk((path, node) => {
    if (path === "/zookeeper/config") return;
    const stat = clientStat(node.stat);
    nodes.set(path, {
      data: node.data === NULL_DATA ? null : Buffer.from(node.data).toString("base64"),
      acl: node.acl.map((entry) => `${entry.id.scheme}:${entry.id.id}:${entry.perms}`),
      stat: {
        czxid: stat.czxid.toString(16),
        mzxid: stat.mzxid.toString(16),
        pzxid: stat.pzxid.toString(16),
        ctime: String(stat.ctime),
        mtime: String(stat.mtime),
        version: String(stat.version),
        cversion: String(stat.cversion),
        aversion: String(stat.aversion),
        ephemeralOwner: BigInt.asUintN(64, stat.ephemeralOwner).toString(16),
        dataLength: String(stat.dataLength),
        numChildren: String(stat.numChildren),
      },
    });
  });
  return nodes;
}

function corralTreeOf(tree: ZooKeeperTree): DataTree {
  const image = corralImageOf(tree);
  return treeFromImage(image.nodes, image.sessions, image.lastProcessedZxid);
}

/** A copy of a fixture's data dir to damage; its version-2 path. */
async function damageableCopy(compression: SnapshotCompression, name: string): Promise<{ dataDir: string; versionDir: string }> {
  const dataDir = join(scratch.path, `${compression}-${name}`);
  await rm(dataDir, { recursive: true, force: true });
  await cp(fixture(compression).dataDir, dataDir, { recursive: true });
  return { dataDir, versionDir: join(dataDir, "version-2") };
}

test("the tree recovered from ZooKeeper 3.8's files is the tree it served: every znode, its data, ACL and stat", async () => {
  const recovered = await recoverZooKeeperDataDir({ dataDir: fixture("none").dataDir });
  assert.deepEqual(treeDifferences(fixture("none").served, viewOf(corralTreeOf(recovered.tree))), []);
  assert.ok(fixture("none").served.has("/app/ttl/t0") && fixture("none").served.has("/app/containers/c0"), "the workload made TTL and container nodes");
});

test("every tree digest ZooKeeper recorded (snapshot and txns) matches the replayed tree", async () => {
  const recovered = await recoverZooKeeperDataDir({ dataDir: fixture("none").dataDir });
  assert.ok(recovered.tree.digestsCompared > 0, "ZooKeeper 3.8 records digests");
  assert.deepEqual(recovered.tree.digestMismatches, []);
});

test("replaying every txn log from ZooKeeper's first snapshot, through many fuzzy snapshots' worth, gives the same tree", async () => {
  const { dataDir, versionDir } = await damageableCopy("none", "replay-all");
  const snapshots = await zookeeperFiles(versionDir, "snapshot");
  assert.ok(snapshots.length >= 4, `several snapshots were written (${snapshots.length})`);
  for (const snapshot of snapshots.slice(1)) await unlink(join(versionDir, snapshot.name));
  const recovered = await recoverZooKeeperDataDir({ dataDir });
  assert.equal(recovered.snapshot?.zxid, 0n);
  assert.ok(recovered.logFiles.length >= 4 && recovered.txnsReplayed > 200, `${recovered.txnsReplayed} txns from ${recovered.logFiles.length} files`);
  assert.deepEqual(recovered.tree.digestMismatches, []);
  assert.deepEqual(treeDifferences(fixture("none").served, viewOf(corralTreeOf(recovered.tree))), []);
});

for (const compression of ["gz", "snappy"] as const) {
  test(`a ${compression} snapshot ZooKeeper 3.8 wrote is read and its tree is the one it served`, async () => {
    const recovered = await recoverZooKeeperDataDir({ dataDir: fixture(compression).dataDir });
    assert.equal(recovered.snapshot?.compression, compression);
    assert.deepEqual(recovered.tree.digestMismatches, []);
    assert.deepEqual(treeDifferences(fixture(compression).served, viewOf(corralTreeOf(recovered.tree))), []);
  });
}

test("a changed byte in a txn log record stops the read, naming the file and the record", async () => {
  const { dataDir, versionDir } = await damageableCopy("none", "flipped-log");
  const logs = await zookeeperFiles(versionDir, "log");
  const target = join(versionDir, logs[logs.length - 1]!.name);
  const contents = await readFile(target);
  const first = [...readZooKeeperTxnLog(contents, target)][0]!;
  contents[first.offset + 12 + 10]! ^= 0x40;
  await writeFile(target, contents);
  await assert.rejects(recoverZooKeeperDataDir({ dataDir }), (error: Error) => {
    assert.ok(error instanceof ZooKeeperDataError);
    assert.match(error.message, new RegExp(`${logs[logs.length - 1]!.name}: record at offset ${first.offset} fails its checksum`));
    return true;
  });
});

test("a txn log cut inside a record ends there, as ZooKeeper reads a torn write", async () => {
  const { dataDir, versionDir } = await damageableCopy("none", "torn-log");
  const logs = await zookeeperFiles(versionDir, "log");
  const target = join(versionDir, logs[logs.length - 1]!.name);
  const records = [...readZooKeeperTxnLog(await readFile(target), target)];
  const last = records[records.length - 1]!;
  await truncate(target, last.offset + 12 + Math.floor(last.bytes / 2));
  const complete = [...readZooKeeperTxnLog(await readFile(target), target)];
  assert.equal(complete.length, records.length - 1);
  const recovered = await recoverZooKeeperDataDir({ dataDir });
  // The tree stands at the last whole record, or at the snapshot when that is newer (it may be).
  // The torn record may be the only one in its file (the log rolls at each snapshot): the last whole
  // one is then in an earlier file.
  let lastWhole = 0n;
  for (const log of logs) {
    for (const record of readZooKeeperTxnLog(await readFile(join(versionDir, log.name)), log.name)) {
      if (record.header.zxid > lastWhole) lastWhole = record.header.zxid;
    }
  }
  const snapshotZxid = recovered.snapshot!.zxid;
  assert.equal(recovered.tree.zxid, lastWhole > snapshotZxid ? lastWhole : snapshotZxid);
});

test("a damaged newest snapshot is passed over for the one before it and the logs after, as ZooKeeper does", async () => {
  const { dataDir, versionDir } = await damageableCopy("none", "flipped-snapshot");
  const snapshots = await zookeeperFiles(versionDir, "snapshot");
  const newest = join(versionDir, snapshots[snapshots.length - 1]!.name);
  const contents = await readFile(newest);
  contents[Math.floor(contents.length / 2)]! ^= 0x01;
  await writeFile(newest, contents);
  const recovered = await recoverZooKeeperDataDir({ dataDir });
  assert.equal(recovered.skippedSnapshots.length, 1);
  assert.match(recovered.skippedSnapshots[0]!.reason, /checksum|damaged/);
  assert.equal(recovered.snapshot?.zxid, snapshots[snapshots.length - 2]!.zxid);
  assert.deepEqual(treeDifferences(fixture("none").served, viewOf(corralTreeOf(recovered.tree))), []);
});

test("a missing txn log file between the snapshot and the tail stops the read, naming the gap", async () => {
  const { dataDir, versionDir } = await damageableCopy("none", "missing-log");
  const snapshots = await zookeeperFiles(versionDir, "snapshot");
  for (const snapshot of snapshots.slice(1)) await unlink(join(versionDir, snapshot.name));
  const logs = await zookeeperFiles(versionDir, "log");
  await unlink(join(versionDir, logs[1]!.name));
  await assert.rejects(recoverZooKeeperDataDir({ dataDir }), /does not follow .*the txns between are missing/);
});

test("a dir without version-2 is refused as not ZooKeeper's", async () => {
  await assert.rejects(recoverZooKeeperDataDir({ dataDir: scratch.path }), /has no version-2\/ directory: not a ZooKeeper data dir/);
  await assert.rejects(recoverZooKeeperDataDir({ dataDir: join(scratch.path, "nowhere") }), /does not exist/);
});

test("a session taken over from ZooKeeper keeps the password ZooKeeper gave its client", () => {
  const sessions = fixture("none").sessions;
  assert.ok(sessions.length > 0);
  for (const { id, password } of sessions) assert.deepEqual(Buffer.from(zookeeperSessionPassword(id)), password);
});

test("an exported snapshot reads back to the same znodes, stats, sessions and digest", async () => {
  const recovered = await recoverZooKeeperDataDir({ dataDir: fixture("none").dataDir });
  const corral = corralTreeOf(recovered.tree);
  const image = zookeeperImageOf(corral);
  const decoded = decodeZooKeeperSnapshot(encodeZooKeeperSnapshot(image), "export");
  const reloaded = ZooKeeperTree.fromSnapshot(decoded, image.zxid, "export");
  assert.equal(reloaded.digestsCompared, 1);
  assert.deepEqual(reloaded.digestMismatches, []);
  assert.deepEqual(treeDifferences(viewOf(corral), viewOf(corralTreeOf(reloaded))), []);
  assert.deepEqual([...decoded.sessions.keys()].sort(), [...corral.sessions.keys()].sort());
});

test("a snapshot holding a txn ZooKeeper applied after the digest beside it is settled by that txn's digest, and damage is not", () => {
  // ZooKeeper records the digest of the last txn it finished; a txn applied while the snapshot was
  // written, and not yet finished, can be in the snapshot's nodes but not in that digest.
  const create = (zxid: bigint, path: string, data: number): Parameters<ZooKeeperTree["replay"]>[0] => ({
    header: { sessionId: 1n, cxid: Number(zxid), zxid, timeMs: 1_000n, opcode: 1 },
    txn: { type: "create", opcode: 1, path, data: new Uint8Array([data]), acl: [...OPEN_ACL_UNSAFE], ephemeral: false, parentCVersion: 1 },
    digest: undefined,
  });
  const served = ZooKeeperTree.empty();
  served.replay(create(1n, "/a", 1));
  const digestAt1 = served.digest;
  served.replay(create(2n, "/a/b", 2));
  const txn2 = { ...create(2n, "/a/b", 2), digest: { version: DIGEST_VERSION, treeDigest: served.digest } };
  const fuzzy = { ...zookeeperImageOf(corralTreeOf(served)), digest: { zxid: 1n, version: DIGEST_VERSION, digest: digestAt1 } };
  const load = (image: typeof fuzzy): ZooKeeperTree =>
    ZooKeeperTree.fromSnapshot(decodeZooKeeperSnapshot(encodeZooKeeperSnapshot(image), "fuzzy"), 1n, "fuzzy");

  const alone = load(fuzzy);
  assert.deepEqual(
    alone.digestMismatches.map((m) => m.zxid),
    [1n],
    "with no later txn to settle it, the difference stands",
  );
  const replayed = load(fuzzy);
  replayed.replay(txn2);
  assert.equal(replayed.digestsCompared, 2);
  assert.deepEqual(replayed.digestMismatches, [], "txn 2, replayed over the node it made, brings the tree to its own digest");

  const damagedNodes = [...fuzzy.nodes].map((node) => (node.path === "/a" ? { ...node, data: new Uint8Array([9]) } : node));
  const damaged = load({ ...fuzzy, nodes: damagedNodes });
  damaged.replay(txn2);
  assert.deepEqual(
    damaged.digestMismatches.map((m) => m.zxid),
    [2n],
    "a changed node is still a difference after the txn",
  );
});
test("when the digest beside a snapshot is for a later zxid than the snapshot's, a difference there is held until the txn after it", () => {
  // The snapshot is named for the zxid at which writing it began; the digest beside it is the one
  // of the txn finished last when it ended (2 here), and txn 3 was being applied then.
  const create = (zxid: bigint, path: string, parentCVersion: number): Parameters<ZooKeeperTree["replay"]>[0] => ({
    header: { sessionId: 1n, cxid: Number(zxid), zxid, timeMs: 1_000n, opcode: 1 },
    txn: { type: "create", opcode: 1, path, data: new Uint8Array([Number(zxid)]), acl: [...OPEN_ACL_UNSAFE], ephemeral: false, parentCVersion },
    digest: undefined,
  });
  const served = ZooKeeperTree.empty();
  served.replay(create(1n, "/a", 1));
  served.replay(create(2n, "/a/b", 1));
  const txn2 = { ...create(2n, "/a/b", 1), digest: { version: DIGEST_VERSION, treeDigest: served.digest } };
  served.replay(create(3n, "/a/c", 2));
  const txn3 = { ...create(3n, "/a/c", 2), digest: { version: DIGEST_VERSION, treeDigest: served.digest } };
  const image = { ...zookeeperImageOf(corralTreeOf(served)), digest: { zxid: 2n, version: DIGEST_VERSION, digest: txn2.digest.treeDigest } };
  const loaded = ZooKeeperTree.fromSnapshot(decodeZooKeeperSnapshot(encodeZooKeeperSnapshot(image), "fuzzy"), 1n, "fuzzy");
  loaded.replay(txn2);
  assert.deepEqual(
    loaded.digestMismatches.map((m) => m.zxid),
    [2n],
    "at txn 2 the tree holds txn 3's node, which neither digest of zxid 2 has",
  );
  loaded.replay(txn3);
  assert.equal(loaded.digestsCompared, 3);
  assert.deepEqual(loaded.digestMismatches, [], "txn 3 replayed: the tree is the one its digest names");
});

test("a snapshot whose node refers to an ACL the cache lacks, or comes before its parent, is refused", () => {
  const base = { sessions: new Map(), digest: undefined };
  const stat = { czxid: 1n, mzxid: 1n, ctime: 0n, mtime: 0n, version: 0, cversion: 0, aversion: 0, ephemeralOwner: 0n, pzxid: 1n };
  const root = { path: "", data: null, acl: [], stat };
  const orphan = encodeZooKeeperSnapshot({ ...base, nodes: [root, { path: "/a/b", data: null, acl: [], stat }] });
  assert.throws(() => ZooKeeperTree.fromSnapshot(decodeZooKeeperSnapshot(orphan, "f"), 1n, "f"), /\/a\/b comes before its parent/);
  const bytes = Buffer.from(
    encodeZooKeeperSnapshot({ ...base, nodes: [root, { path: "/a", data: null, acl: [{ perms: 1, id: { scheme: "world", id: "anyone" } }], stat }] }),
  );
  const decoded = decodeZooKeeperSnapshot(bytes, "f");
  decoded.acls.clear();
  assert.throws(() => ZooKeeperTree.fromSnapshot(decoded, 1n, "f"), /refers to ACL 1, which the ACL cache lacks/);
  assert.throws(() => decodeZooKeeperSnapshot(bytes.subarray(0, bytes.length - 9), "f"), /damaged or truncated snapshot/);
});

test("adler32 is java.util.zip.Adler32", () => {
  assert.equal(adler32(Buffer.from("Wikipedia")), 0x11e60398);
  assert.equal(adler32(Buffer.alloc(0)), 1);
  const long = Buffer.alloc(100_000, 0xff);
  assert.equal(adler32(long.subarray(50_000), adler32(long.subarray(0, 50_000))), adler32(long));
});

test("raw snappy: literals, near and far copies, and overlapping runs decode; bad input is refused", () => {
  // "abcdabcdabcd" + "xyz": 15 bytes; literal "abcd", copy (offset 4, length 8) with a 1-byte offset, literal "xyz".
  const block = Uint8Array.from([15, 3 << 2, 97, 98, 99, 100, ((8 - 4) << 2) | 1, 4, 2 << 2, 120, 121, 122]);
  assert.equal(Buffer.from(snappyUncompress(block, 100)).toString(), "abcdabcdabcdxyz");
  // A run: literal "a" then a 2-byte-offset copy of length 9 from offset 1.
  assert.equal(Buffer.from(snappyUncompress(Uint8Array.from([10, 0, 97, ((9 - 1) << 2) | 2, 1, 0]), 100)).toString(), "a".repeat(10));
  assert.throws(() => snappyUncompress(Uint8Array.from([10, 0, 97, ((9 - 1) << 2) | 2, 2, 0]), 100), SnappyError);
  assert.throws(() => snappyUncompress(Uint8Array.from([15, 3 << 2, 97]), 100), /literal runs past the end/);
  assert.throws(() => snappyUncompress(Uint8Array.from([200, 1]), 100), /more than the 100 allowed/);
  assert.throws(() => decodeSnappyJavaStream(Buffer.from("not snappy at all"), 100), /bad magic/);
});

test("the three fixtures hold what each method writes: snapshot files named by compression", async () => {
  for (const [compression, suffix] of [
    ["none", /^snapshot\.[0-9a-f]+$/],
    ["gz", /^snapshot\.[0-9a-f]+\.gz$/],
    ["snappy", /^snapshot\.[0-9a-f]+\.snappy$/],
  ] as const) {
    const names = (await readdir(join(fixture(compression).dataDir, "version-2"))).filter((name) => name.startsWith("snapshot."));
    assert.ok(names.length > 0 && names.every((name) => suffix.test(name)), `${compression}: ${names.join(" ")}`);
  }
});
