/**
 * corral's ZooKeeper port on a real server process, driven with raw jute frames (test/helpers/
 * jute-client.ts): one session whichever door opened it, ZooKeeper 3.8's answers where they are
 * easy to get wrong (failed multi result lists, refusals before prep, expired resumes, auth
 * failure), four-letter words behind the whitelist, and a fuzz run of random and truncated frames
 * that must neither crash the server nor disturb the sessions beside them.
 */
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { Client } from "../../src/index.js";
import { encodeFrame } from "../../src/server/zk-wire/frames.js";
import {
  AddWatchRequest,
  AuthPacket,
  ConnectRequest,
  CreateRequest,
  Create2Response,
  CreateResponse,
  decodeRecord,
  DeleteRequest,
  encodeRecord,
  ErrorResponse,
  GetDataRequest,
  GetDataResponse,
  GetSASLRequest,
  MultiRequest,
  MultiResponse,
  OpCode,
  ReconfigRequest,
  RequestHeader,
  SetDataRequest,
  SetSASLResponse,
  Xid,
  type ACL,
} from "../../src/server/zk-wire/records.js";
import { JuteWriter } from "../../src/server/zk-wire/jute.js";
import { fourLetterWord } from "../helpers/four-letter-word.js";
import { JuteClient } from "../helpers/jute-client.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

const OPEN_ACL: ACL[] = [{ perms: 31, id: { scheme: "world", id: "anyone" } }];
const bytes = (text: string) => new TextEncoder().encode(text);
const text = (data: Uint8Array | null) => (data === null ? null : new TextDecoder().decode(data));

function create(client: JuteClient, path: string, data: string, flags = 0, acl: ACL[] | null = OPEN_ACL, type: number = OpCode.create) {
  return client.request(type, CreateRequest, { path, data: bytes(data), acl, flags });
}

function getData(client: JuteClient, path: string, watch = false) {
  return client.request(OpCode.getData, GetDataRequest, { path, watch });
}

describe("the ZooKeeper port of a standalone server", () => {
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let server: ServerProcess;

  before(async () => {
    dir = await makeTempDir("corral-zk-wire-");
    server = await ServerProcess.start({
      dataDir: dir.path,
      zkPort: await freePort(),
      tickMs: 100,
      extraArgs: ["--four-letter-word-whitelist", "ruok,mntr,cons"],
    });
  });

  after(async () => {
    await server?.stop();
    await dir?.remove();
  });

  const zkPort = () => Number(server.zkConnectString.split(":")[1]);

  test("a session is one session through either door: an ephemeral made over jute is the gRPC client's to see, and goes when the session expires", async () => {
    const jute = await JuteClient.connect(server.zkConnectString, { timeoutMs: 400 });
    const sessionId = jute.response!.sessionId;
    assert.notEqual(sessionId, 0n);
    const created = await create(jute, "/zk-wire-eph", "mine", 1);
    assert.equal(created.header.err, 0);
    assert.equal(decodeRecord(CreateResponse, created.body).path, "/zk-wire-eph");

    const grpc = await Client.connect(server.connectString);
    try {
      const stat = await grpc.exists("/zk-wire-eph");
      assert.equal(stat?.ephemeralOwner, sessionId);
      // The jute client goes silent without closing its session: it expires like any other.
      await jute.close();
      await waitFor("the ephemeral to go with its expired session", async () => ((await grpc.exists("/zk-wire-eph")) === null ? true : undefined), 30_000);
      // Resuming it now is refused as ZooKeeper does: a ConnectResponse with timeout 0, then close.
      const late = await JuteClient.open(server.zkConnectString);
      const answer = await late.handshake({ resume: { sessionId, password: jute.response!.passwd! } });
      assert.equal(answer.timeOut, 0);
      assert.equal(answer.sessionId, 0n);
      await late.closed;
    } finally {
      await grpc.close();
    }
  });

  test("a gRPC SDK session resumed on the ZooKeeper port keeps its ephemerals, and the SDK's stream is ended", async () => {
    const grpc = await Client.connect(server.connectString, { sessionTimeoutMs: 10_000 });
    await grpc.create("/zk-wire-resumed", "x", { mode: "ephemeral" });
    const states: string[] = [];
    grpc.on("state", (state) => states.push(state));
    const jute = await JuteClient.connect(server.zkConnectString, {
      resume: { sessionId: grpc.sessionId, password: grpc.sessionPassword },
      lastZxidSeen: grpc.lastZxidSeen,
    });
    try {
      assert.equal(jute.response!.sessionId, grpc.sessionId);
      const read = await getData(jute, "/zk-wire-resumed");
      assert.equal(read.header.err, 0);
      assert.equal(decodeRecord(GetDataResponse, read.body).stat.ephemeralOwner, grpc.sessionId);
      await waitFor("the SDK to see its stream end", () => (states.includes("disconnected") ? true : undefined), 10_000);
    } finally {
      // The SDK may already have taken its session back (it resumes it when its stream ends):
      // whichever holds it, closing both ends it.
      await jute.close();
      await grpc.close().catch(() => undefined);
    }
  });

  test("pipelined requests are answered in order, each seeing the writes sent before it", async () => {
    const jute = await JuteClient.connect(server.zkConnectString);
    try {
      await create(jute, "/zk-wire-order", "0");
      const replies = await Promise.all([
        jute.request(OpCode.setData, SetDataRequest, { path: "/zk-wire-order", data: bytes("1"), version: -1 }),
        getData(jute, "/zk-wire-order"),
        jute.request(OpCode.setData, SetDataRequest, { path: "/zk-wire-order", data: bytes("2"), version: 0 }),
        getData(jute, "/zk-wire-order"),
        jute.request(OpCode.delete, DeleteRequest, { path: "/zk-wire-order", version: 2 }),
        getData(jute, "/zk-wire-order"),
      ]);
      assert.deepEqual(
        replies.map((r) => r.header.err),
        [0, 0, -103, 0, -103, 0],
      );
      assert.equal(text(decodeRecord(GetDataResponse, replies[1].body).data), "1");
      assert.equal(text(decodeRecord(GetDataResponse, replies[3].body).data), "1");
      const zxids = replies.map((r) => r.header.zxid);
      assert.deepEqual(
        [...zxids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
        zxids,
        "zxids never go back",
      );
    } finally {
      await jute.close();
    }
  });

  test('data written as null reads back as null (zkCli prints "null"), empty data as zero bytes, and the gRPC SDK sees both as empty', async () => {
    const jute = await JuteClient.connect(server.zkConnectString);
    const grpc = await Client.connect(server.connectString);
    try {
      assert.equal((await jute.request(OpCode.create, CreateRequest, { path: "/zk-wire-null", data: null, acl: OPEN_ACL, flags: 0 })).header.err, 0);
      await create(jute, "/zk-wire-empty", "");
      const nullRead = decodeRecord(GetDataResponse, (await getData(jute, "/zk-wire-null")).body);
      assert.equal(nullRead.data, null);
      assert.equal(nullRead.stat.dataLength, 0);
      assert.deepEqual(decodeRecord(GetDataResponse, (await getData(jute, "/zk-wire-empty")).body).data, new Uint8Array(0));
      assert.equal((await grpc.getData("/zk-wire-null")).data.length, 0);
      await jute.request(OpCode.setData, SetDataRequest, { path: "/zk-wire-empty", data: null, version: -1 });
      assert.equal(decodeRecord(GetDataResponse, (await getData(jute, "/zk-wire-empty")).body).data, null);
    } finally {
      await jute.close();
      await grpc.close();
    }
  });

  test("a failed multi answers with ZooKeeper 3.8's result list and changes nothing; a good one answers each op as its opcode", async () => {
    const jute = await JuteClient.connect(server.zkConnectString);
    try {
      await create(jute, "/zk-wire-multi", "");
      const failed = await jute.request(OpCode.multi, MultiRequest, {
        ops: [
          { type: OpCode.create, request: { path: "/zk-wire-multi/a", data: bytes("a"), acl: OPEN_ACL, flags: 0 } },
          { type: OpCode.setData, request: { path: "/zk-wire-multi/missing", data: bytes("x"), version: -1 } },
          { type: OpCode.create, request: { path: "/zk-wire-multi/b", data: bytes("b"), acl: OPEN_ACL, flags: 0 } },
        ],
      });
      assert.equal(failed.header.err, 0, "ZooKeeper sends a failed multi's errors in its results");
      assert.deepEqual(decodeRecord(MultiResponse, failed.body).results, [
        { type: OpCode.error, err: 0 },
        { type: OpCode.error, err: -101 },
        { type: OpCode.error, err: -2 },
      ]);
      assert.equal((await getData(jute, "/zk-wire-multi/a")).header.err, -101, "nothing of the failed multi was applied");

      const done = await jute.request(OpCode.multi, MultiRequest, {
        ops: [
          { type: OpCode.create, request: { path: "/zk-wire-multi/a", data: bytes("a"), acl: OPEN_ACL, flags: 0 } },
          { type: OpCode.create2, request: { path: "/zk-wire-multi/s-", data: bytes("s"), acl: OPEN_ACL, flags: 2 } },
          { type: OpCode.setData, request: { path: "/zk-wire-multi/a", data: bytes("a2"), version: 0 } },
          { type: OpCode.check, request: { path: "/zk-wire-multi/a", version: 1 } },
          { type: OpCode.delete, request: { path: "/zk-wire-multi/a", version: 1 } },
        ],
      });
      assert.equal(done.header.err, 0);
      const results = decodeRecord(MultiResponse, done.body).results;
      // A create2 op with a plain mode answers as a create, without a stat, as in ZooKeeper 3.8.
      assert.deepEqual(
        results.map((r) => r.type),
        [OpCode.create, OpCode.create, OpCode.setData, OpCode.check, OpCode.delete],
      );
      assert.deepEqual(results[0], { type: OpCode.create, path: "/zk-wire-multi/a" });
      assert.deepEqual(results[1], { type: OpCode.create, path: "/zk-wire-multi/s-0000000001" });
    } finally {
      await jute.close();
    }
  });

  test("what ZooKeeper refuses before running it gets its code, and the session stays usable", async () => {
    const jute = await JuteClient.connect(server.zkConnectString);
    try {
      assert.equal((await create(jute, "/zk-wire-noacl", "", 0, [])).header.err, -114, "an empty ACL is INVALIDACL");
      assert.equal((await create(jute, "/zk-wire-badmode", "", 9)).header.err, -8, "an unknown create mode is BADARGUMENTS");
      assert.equal((await create(jute, "/zk-wire-ttl", "", 5)).header.err, -6, "a TTL mode while TTL nodes are off is UNIMPLEMENTED");
      assert.equal(
        (
          await jute.request(OpCode.reconfig, ReconfigRequest, {
            joiningServers: "server.9=127.0.0.1:1:2",
            leavingServers: null,
            newMembers: null,
            curConfigId: -1n,
          })
        ).header.err,
        -123,
        "reconfig is RECONFIGDISABLED",
      );
      const sasl = await jute.request(OpCode.sasl, GetSASLRequest, { token: new Uint8Array([1, 2]) });
      assert.deepEqual(
        [sasl.header, decodeRecord(SetSASLResponse, sasl.body)],
        [{ xid: sasl.header.xid, zxid: 0n, err: 0 }, { token: null }],
        "sasl: OK without a token, as from a ZooKeeper without SASL",
      );
      assert.equal((await getData(jute, "no-slash")).header.err, -101, "a read's path is looked up unvalidated: NONODE, as in ZooKeeper");
      const container = await create(jute, "/zk-wire-container", "c", 4, OPEN_ACL, OpCode.createContainer);
      assert.equal(container.header.err, 0);
      assert.equal(decodeRecord(Create2Response, container.body).stat.ephemeralOwner, 0n);
      const watch = await jute.request(OpCode.addWatch, AddWatchRequest, { path: "/zk-wire-container", mode: 1 });
      assert.equal(watch.header.err, 0);
      assert.equal(decodeRecord(ErrorResponse, watch.body).err, 0);
      await create(jute, "/zk-wire-container/child", "");
      await waitFor(
        "the recursive watch's event",
        () => (jute.events.some((e) => e.path === "/zk-wire-container/child" && e.type === 1) ? true : undefined),
        10_000,
      );
      assert.deepEqual(jute.events.at(-1), { type: 1, state: 3, path: "/zk-wire-container/child" });
    } finally {
      await jute.close();
    }
  });

  test("an unknown opcode is answered UNIMPLEMENTED and the connection closed; what followed it is not run", async () => {
    const jute = await JuteClient.connect(server.zkConnectString);
    const unknown = jute.request(4242, undefined, undefined);
    const after = jute
      .request(OpCode.create, CreateRequest, { path: "/zk-wire-after-unknown", data: null, acl: OPEN_ACL, flags: 0 })
      .catch((error: Error) => error);
    assert.equal((await unknown).header.err, -6);
    await jute.closed;
    assert.ok((await after) instanceof Error, "the create sent after it got no answer");
    const other = await JuteClient.connect(server.zkConnectString);
    try {
      assert.equal((await getData(other, "/zk-wire-after-unknown")).header.err, -101, "and was not run");
    } finally {
      await other.close();
    }
  });

  test("a failed auth packet is answered AUTHFAILED on xid -4 and the connection is closed, as ZooKeeper does", async () => {
    const jute = await JuteClient.connect(server.zkConnectString);
    const good = await jute.request(OpCode.auth, AuthPacket, { type: 0, scheme: "digest", auth: bytes("user:secret") }, Xid.auth);
    assert.deepEqual(good.header, { xid: Xid.auth, zxid: 0n, err: 0 });
    const bad = await jute.request(OpCode.auth, AuthPacket, { type: 0, scheme: "kerberos-of-my-own", auth: bytes("x") }, Xid.auth);
    assert.deepEqual(bad.header, { xid: Xid.auth, zxid: 0n, err: -115 });
    await jute.closed;
  });

  test("nothing sent after a failed auth packet is run; digest credentials written as null fail, as in ZooKeeper", async () => {
    for (const [scheme, auth] of [
      ["kerberos-of-my-own", bytes("x")],
      ["digest", null],
    ] as const) {
      const jute = await JuteClient.connect(server.zkConnectString);
      const path = `/zk-wire-after-auth-${scheme}`;
      const auth_ = jute.request(OpCode.auth, AuthPacket, { type: 0, scheme, auth }, Xid.auth);
      const after = jute.request(OpCode.create, CreateRequest, { path, data: null, acl: OPEN_ACL, flags: 0 }).catch((error: Error) => error);
      assert.deepEqual((await auth_).header, { xid: Xid.auth, zxid: 0n, err: -115 }, scheme);
      await jute.closed;
      assert.ok((await after) instanceof Error, "the create sent after it got no answer");
      const other = await JuteClient.connect(server.zkConnectString);
      try {
        assert.equal((await getData(other, path)).header.err, -101, "and was not run");
      } finally {
        await other.close();
      }
    }
  });

  test("four-letter words: whitelisted ones answer, srvr always does, others are refused with ZooKeeper's text", async () => {
    assert.equal(await fourLetterWord(zkPort(), "ruok"), "imok");
    const mntr = await fourLetterWord(zkPort(), "mntr");
    assert.match(mntr, /^zk_version\t3\.8\.0-corral-/);
    assert.match(mntr, /\nzk_server_state\tstandalone\n/);
    assert.match(mntr, /\nzk_znode_count\t\d+\n/);
    assert.match(await fourLetterWord(zkPort(), "srvr"), /^Zookeeper version: 3\.8\.0-corral-.*\nLatency min\/avg\/max: /);
    assert.equal(await fourLetterWord(zkPort(), "stat"), "stat is not executed because it is not in the whitelist.\n");
    assert.equal(await fourLetterWord(zkPort(), "dump"), "dump is not executed because it is not in the whitelist.\n");
    // cons lists a live session with its id.
    const jute = await JuteClient.connect(server.zkConnectString);
    try {
      const cons = await fourLetterWord(zkPort(), "cons");
      assert.ok(cons.includes(`sid=0x${jute.response!.sessionId.toString(16)}`), cons);
    } finally {
      await jute.close();
    }
  });

  test("fuzz: random and truncated frames close only their own connection; the server and the sessions beside it keep working", async () => {
    const bystander = await JuteClient.connect(server.zkConnectString);
    const grpc = await Client.connect(server.connectString);
    await create(bystander, "/zk-wire-fuzz", "steady");
    let garbageConnections = 0;
    try {
      const validRequest = (() => {
        const writer = new JuteWriter();
        RequestHeader.write(writer, { xid: 7, type: OpCode.create });
        CreateRequest.write(writer, { path: "/zk-wire-fuzz/x", data: bytes("x"), acl: OPEN_ACL, flags: 0 });
        return writer.toBytes();
      })();
      const connectFrame = encodeFrame(
        encodeRecord(ConnectRequest, { protocolVersion: 0, lastZxidSeen: 0n, timeOut: 4000, sessionId: 0n, passwd: new Uint8Array(16), readOnly: false }),
      );
      const stream = fc.oneof(
        // Anything at all, first thing on the connection.
        fc.uint8Array({ maxLength: 300 }).map((b) => [b]),
        // A lying length: negative, huge, or longer than what follows.
        fc.tuple(fc.integer({ min: -0x80000000, max: 0x7fffffff }), fc.uint8Array({ maxLength: 64 })).map(([length, rest]) => {
          const frame = new Uint8Array(4 + rest.byteLength);
          new DataView(frame.buffer).setInt32(0, length, false);
          frame.set(rest, 4);
          return [frame];
        }),
        // A good connect, then a valid request cut short, or with bytes flipped.
        fc.tuple(fc.nat(validRequest.byteLength), fc.uint8Array({ minLength: 1, maxLength: 8 })).map(([cut, noise]) => {
          const truncated = validRequest.slice(0, cut);
          const framed = encodeFrame(truncated);
          const mangled = encodeFrame(validRequest).slice();
          for (const [i, b] of noise.entries()) {
            const at = 4 + ((b * 7 + i) % validRequest.byteLength);
            mangled[at] = mangled[at]! ^ (b | 1);
          }
          return [connectFrame, framed, mangled];
        }),
      );
      await fc.assert(
        fc.asyncProperty(stream, async (chunks) => {
          garbageConnections += 1;
          await sendAndHangUp(server.zkConnectString, chunks);
          // The bystanders are untouched after every case.
          const read = await getData(bystander, "/zk-wire-fuzz");
          assert.equal(read.header.err, 0);
          assert.equal(text(decodeRecord(GetDataResponse, read.body).data), "steady");
        }),
        { numRuns: 300, seed: 20261122 },
      );
      assert.equal(text((await grpc.getData("/zk-wire-fuzz")).data), "steady");
      assert.ok(server.running, "the server is still up");
      assert.equal(server.exitCode, null);
    } finally {
      await bystander.close();
      await grpc.close();
    }
    assert.equal(garbageConnections, 300);
    assert.doesNotMatch(server.stderr, /"level":(50|60)/, "no error or fatal line");
  });
});

/** Writes `chunks` on a fresh connection, half-closes it, and waits until the server has closed its side. */
async function sendAndHangUp(address: string, chunks: Uint8Array[]): Promise<void> {
  const [host, port] = address.split(":") as [string, string];
  await new Promise<void>((resolve, reject) => {
    const socket = connect({ host, port: Number(port) }, () => {
      for (const chunk of chunks) socket.write(chunk);
      socket.end();
    });
    socket.on("data", () => undefined);
    socket.on("error", (error: NodeJS.ErrnoException) => (error.code === "ECONNRESET" || error.code === "EPIPE" ? resolve() : reject(error)));
    socket.on("close", () => resolve());
  });
}
