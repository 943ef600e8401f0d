/**
 * The defects foreign ZooKeeper clients found, on a real server process (issue: "Real ZooKeeper
 * clients"): a reply above jute.maxbuffer ended the whole process through the ZooKeeper port and
 * failed with CONNECTIONLOSS on every retry through the gRPC door; an `auth` ACL entry written with
 * a null id (kazoo's CREATOR_ALL_ACL) was INVALIDACL; digest credentials without a colon were
 * AUTHFAILED and closed the connection. ZooKeeper 3.8 answers all of them.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Client } from "../../src/index.js";
import { JUTE_MAX_BUFFER_BYTES } from "../../src/server/zk-wire/jute.js";
import {
  AuthPacket,
  CreateRequest,
  decodeRecord,
  GetACLRequest,
  GetACLResponse,
  GetChildrenRequest,
  GetChildrenResponse,
  GetDataRequest,
  GetDataResponse,
  OpCode,
  WhoAmIResponse,
  type ACL,
} from "../../src/server/zk-wire/records.js";
import { JuteClient } from "../helpers/jute-client.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";

const OPEN_ACL: ACL[] = [{ perms: 31, id: { scheme: "world", id: "anyone" } }];
const LONG_NAME = "n".repeat(2_000);
const BYSTANDER_SESSION_MS = 30_000;
/** The largest data whose create request still fits ZooKeeper's 1 MiB − 1 request frame. */
const LARGE_DATA_BYTES = 1_048_500;

function create(
  client: JuteClient,
  path: string,
  data: Uint8Array,
  acl: (ACL | { perms: number; id: { scheme: string | null; id: string | null } })[] = OPEN_ACL,
) {
  return client.request(OpCode.create, CreateRequest, { path, data, acl, flags: 0 });
}

async function children(client: JuteClient, path: string): Promise<string[]> {
  const reply = await client.request(OpCode.getChildren, GetChildrenRequest, { path, watch: false });
  assert.equal(reply.header.err, 0);
  return decodeRecord(GetChildrenResponse, reply.body).children as string[];
}

/** Creates `count` children of `parent` with 2,000-character names, pipelined on one session. */
async function createLongNamedChildren(client: JuteClient, parent: string, count: number): Promise<void> {
  assert.equal((await create(client, parent, new Uint8Array(0))).header.err, 0);
  const replies = await Promise.all(Array.from({ length: count }, (_, i) => create(client, `${parent}/${LONG_NAME}${i}`, new Uint8Array(0))));
  assert.ok(replies.every((reply) => reply.header.err === 0));
}

describe("what foreign ZooKeeper clients found, on a live server", () => {
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let server: ServerProcess;
  /** A session that must keep reading and writing whatever happens to the others. */
  let bystander: Client;
  let bystanderWrites = 0;

  before(async () => {
    dir = await makeTempDir("corral-zk-foreign-");
    // The test servers' tick of 100 ms caps sessions at 2 s. The bystander must outlive this test
    // process decoding 20 MB answers on its own event loop on a loaded machine, which can hold its
    // pings back past 2 s: its session is long so that only the server can fail it.
    server = await ServerProcess.start({ dataDir: dir.path, zkPort: await freePort(), extraArgs: ["--max-session-timeout-ms", String(BYSTANDER_SESSION_MS)] });
    bystander = await Client.connect(server.connectString, { sessionTimeoutMs: BYSTANDER_SESSION_MS });
    await bystander.create("/bystander", "0");
  });

  after(async () => {
    await bystander?.close().catch(() => undefined);
    await server?.stop();
    await dir?.remove();
  });

  async function assertStillServing(): Promise<void> {
    assert.ok(server.running, `the server process exited:\n${server.stderr.slice(-2_000)}`);
    bystanderWrites += 1;
    await bystander.setData("/bystander", String(bystanderWrites));
    assert.equal(new TextDecoder().decode((await bystander.getData("/bystander")).data), String(bystanderWrites));
  }

  test("getData of a 1,048,500-byte node answers a 1,048,588-byte frame through the ZooKeeper port, and the server lives", async () => {
    const client = await JuteClient.connect(server.zkConnectString);
    try {
      const data = new Uint8Array(LARGE_DATA_BYTES).map((_, i) => i % 251);
      assert.equal((await create(client, "/large", data)).header.err, 0);
      const reply = await client.request(OpCode.getData, GetDataRequest, { path: "/large", watch: false });
      assert.equal(reply.header.err, 0);
      assert.ok(reply.body.byteLength + 16 > JUTE_MAX_BUFFER_BYTES, "the reply is above jute.maxbuffer");
      assert.deepEqual(decodeRecord(GetDataResponse, reply.body).data, data);
    } finally {
      await client.close();
    }
    await assertStillServing();
    // The node stays in the tree: the next reader, through either door, gets it as well.
    assert.equal((await bystander.getData("/large")).data.byteLength, LARGE_DATA_BYTES);
  });

  test("getChildren of 530 children with 2,000-character names (1.06 MB) through the ZooKeeper port", async () => {
    const client = await JuteClient.connect(server.zkConnectString);
    try {
      await createLongNamedChildren(client, "/wide", 530);
      const names = await children(client, "/wide");
      assert.equal(names.length, 530);
      assert.ok(names.every((name) => name.startsWith(LONG_NAME)));
    } finally {
      await client.close();
    }
    await assertStillServing();
  });

  test("getChildren of 10,000 such children (20 MB) through both doors", async () => {
    const client = await JuteClient.connect(server.zkConnectString);
    try {
      await createLongNamedChildren(client, "/wider", 10_000);
      assert.equal((await children(client, "/wider")).length, 10_000);
    } finally {
      await client.close();
    }
    const names = await bystander.getChildren("/wider");
    assert.equal(names.length, 10_000);
    assert.deepEqual(new Set(names), new Set(Array.from({ length: 10_000 }, (_, i) => `${LONG_NAME}${i}`)));
    await assertStillServing();
  });

  test("an auth ACL entry with a null id (kazoo's CREATOR_ALL_ACL) expands to the caller's digest id", async () => {
    const client = await JuteClient.connect(server.zkConnectString);
    try {
      const auth = await client.request(OpCode.auth, AuthPacket, { type: 0, scheme: "digest", auth: new TextEncoder().encode("kazoo:secret") });
      assert.equal(auth.header.err, 0);
      const created = await create(client, "/creator-all", new Uint8Array(0), [{ perms: 31, id: { scheme: "auth", id: null } }]);
      assert.equal(created.header.err, 0, "ZooKeeper's fixupACL never reads an auth entry's id");
      const acl = decodeRecord(GetACLResponse, (await client.request(OpCode.getACL, GetACLRequest, { path: "/creator-all" })).body).acl;
      assert.deepEqual(acl, [{ perms: 31, id: { scheme: "digest", id: `kazoo:${createHash("sha1").update("kazoo:secret").digest("base64")}` } }]);
    } finally {
      await client.close();
    }
    await assertStillServing();
  });

  test("digest credentials without a colon authenticate as user:<base64 SHA-1 of the whole string>, and the connection stays", async () => {
    const client = await JuteClient.connect(server.zkConnectString);
    try {
      const auth = await client.request(OpCode.auth, AuthPacket, { type: 0, scheme: "digest", auth: new TextEncoder().encode("blah") });
      assert.equal(auth.header.err, 0, "ZooKeeper 3.8's addauth digest blah succeeds");
      const who = decodeRecord(WhoAmIResponse, (await client.request(OpCode.whoAmI, undefined, undefined)).body).clientInfo;
      assert.ok(
        who?.some((info) => info.authScheme === "digest" && info.user === "blah"),
        JSON.stringify(who),
      );
      const created = await create(client, "/blah-only", new Uint8Array(0), [{ perms: 31, id: { scheme: "auth", id: "" } }]);
      assert.equal(created.header.err, 0);
      const acl = decodeRecord(GetACLResponse, (await client.request(OpCode.getACL, GetACLRequest, { path: "/blah-only" })).body).acl;
      assert.deepEqual(acl, [{ perms: 31, id: { scheme: "digest", id: `blah:${createHash("sha1").update("blah").digest("base64")}` } }]);
    } finally {
      await client.close();
    }
    await assertStillServing();
  });
});
