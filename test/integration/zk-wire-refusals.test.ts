/**
 * The ZooKeeper port refuses what ZooKeeper 3.8 refuses, with the same code, in the same order of
 * checks: the same raw requests — bad paths, empty and malformed ACLs, locked parents, missing
 * nodes, wrong versions, odd flags and opcodes, odd credentials — go to a real ZooKeeper 3.8
 * started here and to corral's ZooKeeper port, and each must be answered the same (its error code,
 * a multi's per-op codes and result records, whether the connection is closed after it). The
 * differences left on purpose are listed in README.md ("Where the ZooKeeper port differs from
 * ZooKeeper 3.8") and are not sent here.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  AuthPacket,
  CheckWatchesRequest,
  CreateRequest,
  CreateTTLRequest,
  decodeRecord,
  DeleteContainerRequest,
  DeleteRequest,
  ExistsRequest,
  GetACLRequest,
  GetAllChildrenNumberRequest,
  GetChildren2Request,
  GetChildrenRequest,
  GetDataRequest,
  GetSASLRequest,
  MultiRequest,
  MultiResponse,
  OpCode,
  ReconfigRequest,
  RemoveWatchesRequest,
  AddWatchRequest,
  SetACLRequest,
  SetDataRequest,
  SetWatches,
  SyncRequest,
  SyncResponse,
  Xid,
  type ACL,
  type JuteCodec,
  type MultiOp,
} from "../../src/server/zk-wire/records.js";
import { JuteClient } from "../helpers/jute-client.js";
import { RealZooKeeper } from "../helpers/real-zookeeper.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { freshRoot } from "../helpers/zk-diff-scripts.js";

const R = freshRoot("zkdiff-refusals");
const bytes = (text: string) => new TextEncoder().encode(text);
const anyone = (perms: number): ACL[] => [{ perms, id: { scheme: "world", id: "anyone" } }];
const OPEN = anyone(31);
const NOBODY: ACL[] = [{ perms: 31, id: { scheme: "world", id: "nobody" } }];
const create = (path: string | null, acl: ACL[] | null = OPEN, flags = 0) => ({ path, data: bytes("x"), acl, flags });

interface Case {
  name: string;
  type: number;
  codec: JuteCodec<unknown> | undefined;
  body: unknown;
  xid?: number;
  /** The connection may be closed after it: sent on a connection of its own. */
  closes?: true;
}
const cases: Case[] = [];
const add = (name: string, type: number, codec: JuteCodec<unknown> | undefined, body: unknown, extra: Partial<Case> = {}) =>
  cases.push({ name, type, codec, body, ...extra });

// create: flags and ttl, then a slash and NUL, then the ACL, the parent, its ACL, the whole path, the node, an ephemeral parent
for (const [name, path, acl, flags] of [
  ["no slash, empty ACL", "nopath", [], 0],
  ["NUL, empty ACL", `${R}/a\u0000b`, [], 0],
  ["empty path, empty ACL", "", [], 0],
  ["empty segment, empty ACL", `${R}/a//b`, [], 0],
  ["null ACL list", `${R}/z1`, null, 0],
  ["empty segment", `${R}/a//b`, OPEN, 0],
  ['a "." parent that does not exist', `${R}/missing/./x`, OPEN, 0],
  ['"." under an existing parent', `${R}/a/.`, OPEN, 0],
  ['"." under a parent without CREATE', `${R}/ro/.`, OPEN, 0],
  ["a trailing slash", `${R}/a/`, OPEN, 0],
  ["a trailing slash under a missing parent", `${R}/missing/`, OPEN, 0],
  ["a bad character under an existing parent", `${R}/a/\u0001`, OPEN, 0],
  ["a bad character under a parent without CREATE", `${R}/noc/\u0001`, OPEN, 0],
  ["relative with a slash", "a/b", OPEN, 0],
  ["the root", "/", OPEN, 0],
  ["under a parent without CREATE", `${R}/ro/x`, OPEN, 0],
  ["below an ephemeral", `${R}/eph/x`, OPEN, 0],
  ["an existing node", `${R}/a`, OPEN, 0],
  ["an existing node under a parent without CREATE", `${R}/ro/kid`, OPEN, 0],
  ["world:nobody", `${R}/a/y`, NOBODY, 0],
  ["a bad ACL under a missing parent", `${R}/missing/x`, NOBODY, 0],
  ["a bad ACL under a parent without CREATE", `${R}/ro/x`, NOBODY, 0],
  ["auth without a digest id", `${R}/a/au`, [{ perms: 31, id: { scheme: "auth", id: "" } }], 0],
  ["ip bits 33", `${R}/a/ip`, [{ perms: 31, id: { scheme: "ip", id: "1.2.3.4/33" } }], 0],
  ["digest without a colon", `${R}/a/dg`, [{ perms: 31, id: { scheme: "digest", id: "nocolon" } }], 0],
  ["a super ACL", `${R}/a/su`, [{ perms: 31, id: { scheme: "super", id: "" } }], 0],
  ["a null scheme", `${R}/a/ns`, [{ perms: 31, id: { scheme: null, id: "x" } }], 0],
  ["unknown flags", `${R}/f7`, OPEN, 7],
  ["unknown flags, no slash", "x", OPEN, 7],
  ["unknown flags, empty ACL", `${R}/f7`, [], 7],
  ["a TTL mode while TTL nodes are off, no slash", "x", OPEN, 5],
  ["a TTL mode while TTL nodes are off", `${R}/t5`, OPEN, 5],
  ["a null path", null, OPEN, 0],
  ["a null path, unknown flags", null, OPEN, 7],
  ["perms 0", `${R}/p0`, anyone(0), 0],
  ["a sequential name under a trailing slash", `${R}/a/`, OPEN, 2],
] as const) {
  add(`create: ${name}`, OpCode.create, CreateRequest, create(path, acl === null ? null : [...acl], flags));
}
add("createTTL: a plain mode with ttl 0", OpCode.createTTL, CreateTTLRequest, { ...create(`${R}/tt0`), ttl: 0n });
add("createTTL: a plain mode with a ttl, no slash", OpCode.createTTL, CreateTTLRequest, { ...create("x"), ttl: 5n });
add("createTTL: while TTL nodes are off", OpCode.createTTL, CreateTTLRequest, { ...create(`${R}/tt5`, OPEN, 5), ttl: 100n });
add("createContainer: a plain mode", OpCode.createContainer, CreateRequest, create(`${R}/cc0`));
add("create2: a container mode", OpCode.create2, CreateRequest, create(`${R}/c24`, OPEN, 4));

// delete: a slash, NUL and ZooKeeper's own nodes; the parent, its ACL, the node, the version, children
for (const [name, path, version] of [
  ["empty segment", `${R}/a//b`, -1],
  ["a trailing slash", `${R}/a/`, -1],
  ['"." under a parent without DELETE', `${R}/nod/.`, -1],
  ["a bad character", `${R}/a/\u0001`, -1],
  ["the root", "/", -1],
  ["/zookeeper", "/zookeeper", -1],
  ["/zookeeper/quota", "/zookeeper/quota", -1],
  ["/zookeeper/config", "/zookeeper/config", -1],
  ["no slash", "x", -1],
  ["an empty path", "", -1],
  ["a null path", null, -1],
  ["under a parent without DELETE", `${R}/nod/c`, -1],
  ["a missing node under a parent without DELETE", `${R}/nod/missing`, -1],
  ["a wrong version of a node with children", `${R}/a`, 5],
  ["under a missing parent", `${R}/missing/x`, -1],
] as const) {
  add(`delete: ${name}`, OpCode.delete, DeleteRequest, { path, version });
}

// setData and setACL: the whole path first
for (const [name, path, version] of [
  ["empty segment", `${R}/a//b`, -1],
  ["an empty path", "", -1],
  ["a null path", null, -1],
  ["a wrong version without WRITE", `${R}/ro`, 5],
  ["a missing node", `${R}/missing`, -1],
  ["a wrong version", `${R}/a`, 5],
] as const) {
  add(`setData: ${name}`, OpCode.setData, SetDataRequest, { path, data: bytes("s"), version });
}
for (const [name, path, acl, version] of [
  ["a bad path, empty ACL", `${R}/a//b`, [], -1],
  ["no slash, empty ACL", "x", [], -1],
  ["a missing node, empty ACL", `${R}/missing`, [], -1],
  ["a missing node, null ACL", `${R}/missing`, null, -1],
  ["a missing node, bad ACL", `${R}/missing`, NOBODY, -1],
  ["a wrong version without ADMIN", `${R}/noadmin`, OPEN, 5],
  ["a wrong version", `${R}/a`, OPEN, 5],
  ["a null path", null, OPEN, -1],
] as const) {
  add(`setACL: ${name}`, OpCode.setACL, SetACLRequest, { path, acl: acl === null ? null : [...acl], version });
}

// reads: no path validation; a missing node before its ACL
const READS: [string, number, JuteCodec<unknown>][] = [
  ["getData", OpCode.getData, GetDataRequest],
  ["getChildren", OpCode.getChildren, GetChildrenRequest],
  ["getChildren2", OpCode.getChildren2, GetChildren2Request],
  ["exists", OpCode.exists, ExistsRequest],
];
for (const [op, type, codec] of READS) {
  for (const [name, path] of [
    ["a trailing slash", `${R}/a/`],
    ["the empty path", ""],
    ["a null path", null],
    ["NUL", `${R}/a\u0000`],
    ["an empty segment", `${R}//a`],
    ["no slash", "x"],
    ["a node without READ", `${R}/none`],
    ["a node with READ alone", `${R}/ro`],
    ["/zookeeper", "/zookeeper"],
  ] as const) {
    add(`${op}: ${name}`, type, codec, { path, watch: false });
  }
}
for (const [name, path] of [
  ["a trailing slash", `${R}/a/`],
  ["the empty path", ""],
  ["a null path", null],
  ["a node without READ", `${R}/none`],
  ["a node with READ alone", `${R}/ro`],
] as const) {
  add(`getACL: ${name}`, OpCode.getACL, GetACLRequest, { path });
  add(`getAllChildrenNumber: ${name}`, OpCode.getAllChildrenNumber, GetAllChildrenNumberRequest, { path });
}
for (const [name, path] of [
  ["no slash", "x"],
  ["the empty path", ""],
  ["a null path", null],
  ["an empty segment", "//"],
  ["a missing node", `${R}/missing`],
] as const) {
  add(`sync: ${name}`, OpCode.sync, SyncRequest, { path });
}

// watch requests
add("checkWatches: an unknown type", OpCode.checkWatches, CheckWatchesRequest, { path: `${R}/a`, type: 7 });
add("checkWatches: no slash", OpCode.checkWatches, CheckWatchesRequest, { path: "x", type: 1 });
add("checkWatches: the empty path", OpCode.checkWatches, CheckWatchesRequest, { path: "", type: 1 });
add("checkWatches: a null path", OpCode.checkWatches, CheckWatchesRequest, { path: null, type: 1 });
add("checkWatches: no watch", OpCode.checkWatches, CheckWatchesRequest, { path: `${R}/a`, type: 3 });
add("removeWatches: an unknown type", OpCode.removeWatches, RemoveWatchesRequest, { path: `${R}/a`, type: 0 });
add("removeWatches: no slash", OpCode.removeWatches, RemoveWatchesRequest, { path: "x", type: 3 });
add("removeWatches: a null path", OpCode.removeWatches, RemoveWatchesRequest, { path: null, type: 1 });
add("addWatch: an unknown mode", OpCode.addWatch, AddWatchRequest, { path: `${R}/a`, mode: 5 });
add("addWatch: no slash", OpCode.addWatch, AddWatchRequest, { path: "x", mode: 0 });
add("addWatch: a missing node", OpCode.addWatch, AddWatchRequest, { path: `${R}/missing`, mode: 1 });
add("setWatches: bad paths", OpCode.setWatches, SetWatches, { relativeZxid: 0n, dataWatches: ["x"], existWatches: ["y//"], childWatches: [] });

// multiRead and multi: per-op codes, result records, and what fails the whole request
const getData = (path: string | null): MultiOp => ({ type: OpCode.getData, request: { path, watch: false } });
const op = (type: number, request: unknown): MultiOp => ({ type, request }) as MultiOp;
const check = (path: string, version = -1) => op(OpCode.check, { path, version });
for (const [name, ops] of [
  ["bad paths, a locked node, the root's other key", [getData("x"), op(OpCode.getChildren, { path: `${R}/none`, watch: false }), getData("")]],
  ["a write among the reads", [getData(`${R}/a`), check(`${R}/a`)]],
  ["a null path", [getData(`${R}/a`), getData(null)]],
] as const) {
  add(`multiRead: ${name}`, OpCode.multiRead, MultiRequest, { ops });
}
for (const [name, ops] of [
  ["unknown flags, then a check", [op(OpCode.create, create(`${R}/m7`, OPEN, 7)), check(`${R}/a`)]],
  ["a check, then a create with an empty ACL", [check(`${R}/a`), op(OpCode.create, create(`${R}/me`, []))]],
  ["a create with no slash", [op(OpCode.create, create("x"))]],
  ["a create with an empty segment", [op(OpCode.create, create(`${R}/a//b`))]],
  ["a create2 with a plain mode", [op(OpCode.create2, create(`${R}/mc2`))]],
  ["a create with a container mode", [op(OpCode.create, create(`${R}/mc4`, OPEN, 4))]],
  ["a createContainer with a plain mode", [op(OpCode.createContainer, create(`${R}/mcc0`))]],
  ["a create with a TTL mode", [op(OpCode.create, create(`${R}/mt5`, OPEN, 5))]],
  ["a createTTL with a plain mode", [op(OpCode.createTTL, { ...create(`${R}/mtt0`), ttl: 100n })]],
  ["a check without READ and a wrong version", [check(`${R}/none`, 5)]],
  ["a check of a bad path", [check(`${R}//`)]],
  ["a read among the writes", [check(`${R}/a`), getData(`${R}/a`)]],
  ["a read alone", [getData(`${R}/a`)]],
  ["no op", []],
  ["a null ACL id", [op(OpCode.create, create(`${R}/mni`, [{ perms: 31, id: { scheme: "world", id: null } }]))]],
] as const) {
  add(`multi: ${name}`, OpCode.multi, MultiRequest, { ops });
}

// opcodes no client of corral's runs
add("reconfig", OpCode.reconfig, ReconfigRequest, { joiningServers: null, leavingServers: null, newMembers: null, curConfigId: -1n });
add("deleteContainer", OpCode.deleteContainer, DeleteContainerRequest, { path: `${R}/cc0` });
add("an unknown opcode", 99, undefined, {}, { closes: true });
add("opcode 0 (notification)", 0, undefined, {}, { closes: true });
add("sasl", OpCode.sasl, GetSASLRequest, { token: new Uint8Array([1, 2]) });
add("sasl without a token", OpCode.sasl, GetSASLRequest, { token: null }, { closes: true });

// auth packets
for (const [name, scheme, auth] of [
  ["digest, null credentials", "digest", null],
  ["digest, no credentials", "digest", new Uint8Array(0)],
  ["digest without a colon", "digest", bytes("blah")],
  ["ip", "ip", bytes("whatever")],
  ["ip, null credentials", "ip", null],
  ["sasl", "sasl", bytes("x")],
  ["super", "super", bytes("x")],
  ["world", "world", bytes("anyone")],
  ["a null scheme", null, bytes("x")],
  ["an unknown scheme", "nope", bytes("x")],
] as const) {
  add(`auth: ${name}`, OpCode.auth, AuthPacket, { type: 0, scheme, auth }, { xid: Xid.auth, closes: true });
}
add("auth: on an xid of its own", OpCode.auth, AuthPacket, { type: 0, scheme: "digest", auth: bytes("a:b") }, { xid: 7, closes: true });

/** What a server answered: its code, a multi's results or a sync's echo, and whether it then closed the connection. */
async function answer(client: JuteClient, c: Case, xid: number): Promise<string> {
  let out: string;
  try {
    const reply = await Promise.race([
      client.request(c.type, c.codec, c.body, c.xid ?? xid),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("no answer")), 5_000)),
    ]);
    out = `err ${reply.header.err}${c.type === OpCode.auth || c.type === OpCode.sasl ? ` zxid ${reply.header.zxid}` : ""}`;
    if ((c.type === OpCode.multi || c.type === OpCode.multiRead) && reply.header.err === 0) {
      const results = decodeRecord(MultiResponse, reply.body).results;
      out += ` [${results.map((r) => (r.type === OpCode.error ? `error ${r.err}` : `${r.type}${"stat" in r ? "+stat" : ""}`)).join(", ")}]`;
    }
    if (c.type === OpCode.sync && reply.header.err === 0) out += ` ${JSON.stringify(decodeRecord(SyncResponse, reply.body).path)}`;
    if (c.type === OpCode.sasl) out += ` ${Buffer.from(reply.body).toString("hex")}`;
  } catch (error) {
    out = (error as Error).message.replace(/ to xid.*/, "");
  }
  if (c.closes) {
    const closed = await Promise.race([client.closed.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 300))]);
    out += closed ? ", connection closed" : "";
  }
  return out;
}

/** The nodes the cases run against, made the same on both servers; the returned session owns the ephemeral. */
async function setUp(address: string): Promise<JuteClient> {
  const client = await JuteClient.connect(address, { timeoutMs: 30_000 });
  const make = async (path: string, acl = OPEN, flags = 0) => {
    const reply = await client.request(OpCode.create, CreateRequest, { path, data: bytes("d"), acl, flags });
    assert.equal(reply.header.err, 0, `create ${path}`);
  };
  await make(R);
  await make(`${R}/a`);
  await make(`${R}/a/child`);
  await make(`${R}/ro`);
  await make(`${R}/ro/kid`);
  await client.request(OpCode.setACL, SetACLRequest, { path: `${R}/ro`, acl: anyone(1), version: -1 });
  await make(`${R}/noc`, anyone(31 - 4));
  await make(`${R}/nod`);
  await make(`${R}/nod/c`);
  await client.request(OpCode.setACL, SetACLRequest, { path: `${R}/nod`, acl: anyone(31 - 8), version: -1 });
  await make(`${R}/noadmin`, anyone(31 - 16));
  await make(`${R}/none`, anyone(16));
  await make(`${R}/eph`, OPEN, 1);
  return client;
}

/** Runs every case in order on one server: those that may close their connection on one of their own. */
async function run(address: string): Promise<Map<string, string>> {
  const owner = await setUp(address);
  const shared = await JuteClient.connect(address, { timeoutMs: 30_000 });
  const answers = new Map<string, string>();
  try {
    let xid = 100;
    for (const c of cases) {
      if (c.closes) {
        const own = await JuteClient.connect(address, { timeoutMs: 30_000 });
        answers.set(c.name, await answer(own, c, 1));
        await own.close();
      } else {
        answers.set(c.name, await answer(shared, c, ++xid));
      }
    }
  } finally {
    await shared.close();
    await owner.close();
  }
  return answers;
}

describe("the ZooKeeper port refuses as ZooKeeper 3.8 does, code for code and in the same order", () => {
  let real: RealZooKeeper | undefined;
  let corral: ServerProcess | undefined;
  let corralDir: { path: string; remove: () => Promise<void> } | undefined;

  before(async () => {
    const starting = [
      RealZooKeeper.start().then((zk) => (real = zk)),
      makeTempDir("corral-zkrefusals-").then(async (dir) => {
        corralDir = dir;
        corral = await ServerProcess.start({ dataDir: dir.path, zkPort: await freePort(), tickMs: 1_000 });
      }),
    ];
    const failed = (await Promise.allSettled(starting)).find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
  });

  after(async () => {
    await Promise.allSettled([real?.stop(), corral?.stop()]);
    await corralDir?.remove();
  });

  test("every case is answered the same by both servers", async () => {
    const want = await run(real!.connectString);
    const got = await run(corral!.zkConnectString);
    // The real server's answers must show what the cases are for, so two broken runs cannot agree.
    for (const [name, answer] of [
      ["create: empty segment, empty ACL", "err -114"],
      ["create: no slash, empty ACL", "err -8"],
      ['create: "." under a parent without CREATE', "err -102"],
      ["delete: a trailing slash", "err -101"],
      ["setACL: a bad path, empty ACL", "err -8"],
      ["getData: no slash", "err -101"],
      ["getData: the empty path", "err 0"],
      ["sync: a null path", "err 0 null"],
      ["multi: unknown flags, then a check", "err 0 [error -8, error -2]"],
      ["multi: a create2 with a plain mode", "err 0 [1]"],
      ["an unknown opcode", "err -6, connection closed"],
      ["auth: digest, null credentials", "err -115 zxid 0, connection closed"],
      ["auth: ip", "err 0 zxid 0"],
    ] as const) {
      assert.equal(want.get(name), answer, `ZooKeeper 3.8's answer to ${name}`);
    }
    const differences = cases
      .filter((c) => got.get(c.name) !== want.get(c.name))
      .map((c) => `${c.name}: ZooKeeper ${want.get(c.name)}, corral ${got.get(c.name)}`);
    assert.deepEqual(differences, []);
  });
});
