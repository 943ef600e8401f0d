import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ZkError } from "../../src/common/errors.js";
import { ByteWriter } from "../../src/store/bytes.js";
import { DataTree } from "../../src/store/data-tree.js";
import { decodeSnapshot, encodeSnapshot, SNAPSHOT_FORMAT_VERSION, SnapshotEncoder } from "../../src/store/snapshot-codec.js";
import { Perms, type Acl } from "../../src/store/types.js";
import { applyIntent, bytes, TxnScript, type Intent } from "../helpers/store-txns.js";

/** fast-check 4 may build records without a prototype; deepStrictEqual would (rightly) tell them apart. */
const record = <T>(model: { [K in keyof T]: fc.Arbitrary<T[K]> }): fc.Arbitrary<T> => fc.record(model, { noNullPrototype: true });

const intent: fc.Arbitrary<Intent> = record({
  kind: fc.constantFrom<Intent["kind"]>(
    "create",
    "create",
    "create",
    "createEphemeral",
    "createContainer",
    "createTtl",
    "delete",
    "setData",
    "setAcl",
    "createSession",
    "closeSession",
    "multi",
    "failedMulti",
    "error",
  ),
  pick: fc.nat(),
  name: fc.constantFrom("a", "b", "c", "d", "lock-0000000001", "é", "x.y"),
  data: fc.uint8Array({ maxLength: 40 }),
  session: fc.nat(),
});

function isMarshallingError(error: unknown): boolean {
  return error instanceof ZkError && error.code === "MARSHALLINGERROR";
}

/** Every node's (path, data, acl, raw stat, children), for structural comparison. */
function contents(tree: DataTree): unknown[] {
  const out: unknown[] = [];
  tree.walk((path, node) => out.push([path, [...node.data], node.acl, { ...node.stat }, [...node.children].sort()]));
  return out;
}

function scriptFrom(intents: Intent[]): TxnScript {
  const script = new TxnScript();
  for (const step of intents) applyIntent(script, step);
  return script;
}

describe("snapshot codec", () => {
  test("a fresh tree round-trips", () => {
    const tree = new DataTree();
    const decoded = decodeSnapshot(encodeSnapshot(tree));
    assert.equal(decoded.digest(), tree.digest());
    assert.deepEqual(contents(decoded), contents(tree));
  });

  test("a tree built from random txns round-trips to an equal digest, contents and indexes", () => {
    fc.assert(
      fc.property(fc.array(intent, { minLength: 1, maxLength: 120 }), (intents) => {
        const tree = scriptFrom(intents).tree;
        const decoded = decodeSnapshot(encodeSnapshot(tree));
        assert.equal(decoded.digest(), tree.digest());
        assert.deepEqual(contents(decoded), contents(tree));
        assert.equal(decoded.nodeCount(), tree.nodeCount());
        assert.equal(decoded.lastProcessedZxid, tree.lastProcessedZxid);
        assert.deepEqual(decoded.sessions, tree.sessions);
        for (const sessionId of tree.sessions.keys()) {
          assert.deepEqual([...decoded.ephemeralsOf(sessionId)].sort(), [...tree.ephemeralsOf(sessionId)].sort());
        }
        assert.deepEqual([...decoded.containerPaths()].sort(), [...tree.containerPaths()].sort());
        assert.deepEqual([...decoded.ttlPaths()].sort(), [...tree.ttlPaths()].sort());
        assert.equal(decoded.watches.watchCount(), 0);
      }),
      { numRuns: 150 },
    );
  });

  test("a restored tree goes on exactly like the original (same txns, same digests, same results)", () => {
    fc.assert(
      fc.property(fc.array(intent, { maxLength: 80 }), fc.array(intent, { minLength: 1, maxLength: 40 }), (before, after) => {
        const original = scriptFrom(before);
        const restored = new TxnScript(decodeSnapshot(encodeSnapshot(original.tree)));
        restored.count = original.count;
        for (const step of after) {
          const a = applyIntent(original, step);
          const b = applyIntent(restored, step);
          assert.deepEqual(b.result, a.result);
          assert.equal(restored.tree.digest(), original.tree.digest());
        }
      }),
      { numRuns: 100 },
    );
  });

  test("a snapshot encoded in slices while txns go on is exactly the tree as of the moment it began", () => {
    fc.assert(
      fc.property(
        fc.array(intent, { maxLength: 80 }),
        fc.array(intent, { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 4 }),
        fc.nat({ max: 59 }),
        (before, during, sliceNodes, nestedAt) => {
          const script = scriptFrom(before);
          const expected = encodeSnapshot(script.tree);
          const encoder = new SnapshotEncoder(script.tree);
          assert.equal(encoder.zxid, script.tree.lastProcessedZxid);
          const chunks: Uint8Array[] = [];
          during.forEach((step, i) => {
            const chunk = encoder.next(sliceNodes);
            if (chunk !== undefined) chunks.push(chunk);
            applyIntent(script, step);
            // A second capture while the first is open (the leader's SNAP for a learner during a
            // background snapshot) sees the tree as it is then.
            if (i === nestedAt) assert.equal(decodeSnapshot(encodeSnapshot(script.tree)).digest(), script.tree.digest());
          });
          for (let chunk = encoder.next(sliceNodes); chunk !== undefined; chunk = encoder.next(sliceNodes)) chunks.push(chunk);
          assert.deepEqual(Buffer.concat(chunks), Buffer.from(expected));
        },
      ),
      { numRuns: 200 },
    );
  });

  test("a capture sees quota usage, ACLs and deleted-then-recreated nodes as they were", () => {
    const script = new TxnScript();
    script.create("/app", { data: bytes("v1") });
    script.create("/app/x", { data: bytes("12345") });
    script.create("/zookeeper/quota/app");
    script.create("/zookeeper/quota/app/zookeeper_limits", { data: bytes("count=10,bytes=-1") });
    script.create("/zookeeper/quota/app/zookeeper_stats", { data: bytes("count=0,bytes=0") });
    const statsBefore = Buffer.from(script.tree.getNode("/zookeeper/quota/app/zookeeper_stats")!.data).toString();
    const expected = encodeSnapshot(script.tree);
    const encoder = new SnapshotEncoder(script.tree);
    const first = encoder.next(1)!;
    script.create("/app/y", { data: bytes("more") });
    script.delete("/app/x");
    script.create("/app/x", { data: bytes("recreated") });
    script.setData("/app", bytes("v2"));
    script.setAcl("/app", [{ perms: Perms.READ, id: { scheme: "world", id: "anyone" } }]);
    assert.notEqual(Buffer.from(script.tree.getNode("/zookeeper/quota/app/zookeeper_stats")!.data).toString(), statsBefore);
    const chunks = [first];
    for (let chunk = encoder.next(2); chunk !== undefined; chunk = encoder.next(2)) chunks.push(chunk);
    assert.deepEqual(Buffer.concat(chunks), Buffer.from(expected));
  });

  test("an encoder releases its capture when it ends or is aborted, and then gives nothing more", () => {
    const script = new TxnScript();
    script.create("/a");
    const aborted = new SnapshotEncoder(script.tree);
    aborted.next(1);
    assert.equal(script.tree.openCaptureCount(), 1);
    aborted.abort();
    assert.equal(script.tree.openCaptureCount(), 0);
    assert.equal(aborted.next(10), undefined);
    const done = new SnapshotEncoder(script.tree);
    while (done.next(1) !== undefined);
    assert.equal(script.tree.openCaptureCount(), 0);
    assert.equal(done.next(1), undefined);
    script.setData("/a", bytes("x"));
    // Both captures are released: a fresh one reads the tree as it is now.
    assert.equal(decodeSnapshot(encodeSnapshot(script.tree)).getNode("/a")!.data.length, 1);
  });

  test("equal trees encode to equal bytes, and re-encoding a decoded snapshot is stable", () => {
    fc.assert(
      fc.property(fc.array(intent, { maxLength: 60 }), (intents) => {
        const encoded = encodeSnapshot(scriptFrom(intents).tree);
        assert.deepEqual(encodeSnapshot(scriptFrom(intents).tree), encoded);
        assert.deepEqual(encodeSnapshot(decodeSnapshot(encoded)), encoded);
      }),
      { numRuns: 60 },
    );
  });

  test("equal ACL lists are stored once and shared, frozen, after decoding", () => {
    const script = new TxnScript();
    const acl = (): Acl[] => [{ perms: Perms.READ, id: { scheme: "digest", id: "user:hash" } }];
    script.create("/a", { acl: acl() });
    script.create("/b", { acl: acl() });
    script.create("/c", { acl: acl() });
    const decoded = decodeSnapshot(encodeSnapshot(script.tree));
    const shared = decoded.getNode("/a")!.acl;
    assert.equal(decoded.getNode("/b")!.acl, shared);
    assert.equal(decoded.getNode("/c")!.acl, shared);
    assert.equal(Object.isFrozen(shared), true);
    assert.deepEqual(decoded.getAcl("/b").acl, acl());
  });

  test("data is copied out of the snapshot bytes", () => {
    const script = new TxnScript();
    script.create("/a", { data: bytes("hello") });
    const encoded = encodeSnapshot(script.tree);
    const decoded = decodeSnapshot(encoded);
    encoded.fill(0);
    assert.deepEqual(decoded.getData("/a").data, bytes("hello"));
  });

  test("every truncation of a snapshot throws MARSHALLINGERROR", () => {
    const encoded = encodeSnapshot(scriptFrom(fc.sample(fc.array(intent, { minLength: 30, maxLength: 30 }), { numRuns: 1, seed: 7 })[0]!).tree);
    for (let length = 0; length < encoded.length; length++) {
      assert.throws(() => decodeSnapshot(encoded.subarray(0, length)), isMarshallingError, `cut at ${length}`);
    }
  });

  test("flipped bytes either decode to a valid tree or throw MARSHALLINGERROR, nothing else", () => {
    fc.assert(
      fc.property(
        fc.array(intent, { maxLength: 30 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 3 }),
        (intents, flips) => {
          const encoded = encodeSnapshot(scriptFrom(intents).tree).slice();
          for (const [at, value] of flips) encoded[at % encoded.length] = value;
          let decoded: DataTree;
          try {
            decoded = decodeSnapshot(encoded);
          } catch (error) {
            assert.ok(isMarshallingError(error), `unexpected ${String(error)}`);
            return;
          }
          assert.equal(decodeSnapshot(encodeSnapshot(decoded)).digest(), decoded.digest());
        },
      ),
      { numRuns: 500 },
    );
  });

  // Hand-written snapshots: nodes in pre-order as [name, childCount, owner tag, acl ref].
  type HandNode = { name: string; children: number; ephemeralOwner?: bigint; aclRef?: number };
  function handSnapshot(nodes: HandNode[], options: { nodeCount?: number; magic?: number[]; version?: number; trailing?: boolean } = {}): Uint8Array {
    const w = new ByteWriter();
    for (const byte of options.magic ?? [0x43, 0x52, 0x53, 0x4e]) w.writeUint8(byte);
    w.writeUint8(options.version ?? SNAPSHOT_FORMAT_VERSION);
    w.writeVarUint(5); // lastProcessedZxid
    w.writeVarUint(0); // sessions
    w.writeVarUint(options.nodeCount ?? nodes.length);
    let aclsDefined = 0;
    for (const node of nodes) {
      w.writeString(node.name);
      w.writeBytes(new Uint8Array(0));
      const ref = node.aclRef ?? 0;
      w.writeVarUint(ref);
      if (ref === aclsDefined) {
        w.writeUint8(0); // OPEN_ACL_UNSAFE
        aclsDefined++;
      }
      for (let i = 0; i < 3; i++) w.writeVarUint(1); // czxid, mzxid, pzxid
      for (let i = 0; i < 5; i++) w.writeVarInt(0); // ctime, mtime, version, cversion, aversion
      if (node.ephemeralOwner === undefined) w.writeUint8(0);
      else {
        w.writeUint8(1);
        w.writeInt64(node.ephemeralOwner);
      }
      w.writeVarUint(node.children);
    }
    if (options.trailing) w.writeUint8(0);
    return w.finish();
  }

  test("a hand-written snapshot of / and /a decodes", () => {
    const tree = decodeSnapshot(
      handSnapshot([
        { name: "", children: 1 },
        { name: "a", children: 0 },
      ]),
    );
    assert.deepEqual(tree.getChildren("/").children, ["a"]);
    assert.equal(tree.lastProcessedZxid, 5);
    assert.equal(tree.getNode("/")!.stat.numChildren, 1);
  });

  const MALFORMED: [string, Uint8Array][] = [
    ["empty input", new Uint8Array(0)],
    ["a wrong magic", handSnapshot([{ name: "", children: 0 }], { magic: [0x43, 0x52, 0x53, 0x4f] })],
    ["an unknown version", handSnapshot([{ name: "", children: 0 }], { version: 9 })],
    ["no nodes at all", handSnapshot([], { nodeCount: 0 })],
    ["a root with a name", handSnapshot([{ name: "x", children: 0 }])],
    ["an ephemeral root", handSnapshot([{ name: "", children: 0, ephemeralOwner: 5n }])],
    [
      "a child named with a slash",
      handSnapshot([
        { name: "", children: 1 },
        { name: "a/b", children: 0 },
      ]),
    ],
    [
      "a child with an empty name",
      handSnapshot([
        { name: "", children: 1 },
        { name: "", children: 0 },
      ]),
    ],
    [
      "a child named ..",
      handSnapshot([
        { name: "", children: 1 },
        { name: "..", children: 0 },
      ]),
    ],
    [
      "a child named with a NUL",
      handSnapshot([
        { name: "", children: 1 },
        { name: "a\u0000", children: 0 },
      ]),
    ],
    [
      "the same child twice",
      handSnapshot([
        { name: "", children: 2 },
        { name: "a", children: 0 },
        { name: "a", children: 0 },
      ]),
    ],
    [
      "an ephemeral with children",
      handSnapshot([
        { name: "", children: 1 },
        { name: "e", children: 1, ephemeralOwner: 5n },
        { name: "x", children: 0 },
      ]),
    ],
    [
      "more nodes than the tree has room for",
      handSnapshot([
        { name: "", children: 0 },
        { name: "a", children: 0 },
      ]),
    ],
    [
      "children announced but missing",
      handSnapshot(
        [
          { name: "", children: 2 },
          { name: "a", children: 0 },
        ],
        { nodeCount: 2 },
      ),
    ],
    ["an ACL reference never defined", handSnapshot([{ name: "", children: 0, aclRef: 3 }])],
    ["a trailing byte", handSnapshot([{ name: "", children: 0 }], { trailing: true })],
    ["a node count beyond the input", handSnapshot([{ name: "", children: 0 }], { nodeCount: 1_000_000 })],
  ];
  for (const [name, input] of MALFORMED) {
    test(`${name} throws MARSHALLINGERROR`, () => {
      assert.throws(() => decodeSnapshot(input), isMarshallingError);
    });
  }
});
