/**
 * Contract item 8 (docs/architecture.md §1): bad input never hurts anyone else. Invalid paths, oversized data,
 * wrong versions, unknown or expired sessions, wrong passwords and malformed frames each get a
 * typed answer — a ZooKeeper error code in Response.err / ConnectResponse.err, or a gRPC status
 * that ends only the offending stream — and the server keeps serving everyone else.
 *
 * One server process for the whole file. A "bystander" SDK session stays connected throughout;
 * after every test it must still read and write, and at the very end every write it got
 * acknowledged must be present. The server's own validation is exercised with RawStream, which
 * bypasses the SDK's client-side checks.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { Client, ZkError, ZkErrorCode, ZkMultiError, op, type ClientState } from "../../src/index.js";
import { CLIENT_PROTOCOL_VERSION } from "../../src/common/constants.js";
import { generateDigest } from "../../src/common/digest.js";
import { zookeeperIdOrder } from "../../src/replica/zookeeper-id-order.js";
import { corralServiceDefinition } from "../../src/protocol/client-wire.js";
import type { ConnectResponse, Encodable, Request, Response } from "../helpers/proto-loader-wire.js";
import { RawStream } from "../helpers/raw-session.js";
import { ServerProcess } from "../helpers/server-process.js";
import { TcpProxy } from "../helpers/tcp-proxy.js";
import { makeTempDir } from "../helpers/temp-dir.js";

const ONE_MIB = 1024 * 1024;
const WAIT_LIMIT_MS = 20_000;
const ROOT = "/bad-input";
const BYSTANDER = "/bystander";

let server: ServerProcess;
let removeDir: (() => Promise<void>) | undefined;
let bystander: Client;
const bystanderStates: ClientState[] = [];
let bystanderSessionId = 0n;
let bystanderEphemeral = "";
/** Every write the bystander got acknowledged: path → the data it holds. */
const acknowledged = new Map<string, string>();
let bystanderWrites = 0;
let lastBystanderData = "";

const rawStreams: RawStream[] = [];
const sdkClients: Client[] = [];
let nextXid = 1;

// ---------------------------------------------------------------------------------------------
// Helpers

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");
const bytesOf = (s: string) => new Uint8Array(Buffer.from(s, "utf8"));

/** Poll `probe` until it returns something other than undefined; bounded, never a timing assertion. */
async function waitUntil<T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + WAIT_LIMIT_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** `promise`, or an error naming `what` if it has not settled within the wait limit (a hang guard, not a timing check). */
async function bounded<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer for ${what}`)), WAIT_LIMIT_MS);
  });
  try {
    return await Promise.race([promise, limit]);
  } finally {
    clearTimeout(timer);
  }
}

function openRaw(): RawStream {
  const stream = RawStream.open(server.connectString);
  rawStreams.push(stream);
  return stream;
}

function openRawBytes(): RawStream {
  const stream = RawStream.openBytes(server.connectString);
  rawStreams.push(stream);
  return stream;
}

/** A new raw session, connected; asserts the connect answer is a success. */
async function rawSession(timeoutMs = 2_000): Promise<{ stream: RawStream; connect: ConnectResponse }> {
  const stream = openRaw();
  const connect = await bounded("connect", stream.connect({ timeoutMs }));
  assert.equal(connect.err, 0, "a new session is accepted");
  return { stream, connect };
}

/** Send one request with a fresh xid and return its answer, checking the xid matches. */
async function call(stream: RawStream, request: Encodable<Request>): Promise<Response> {
  const xid = nextXid++;
  const response = await bounded(`xid ${xid}`, stream.request({ ...request, xid }));
  assert.equal(response.xid, xid, "the answer carries the request's xid");
  return response;
}

async function connectSdk(connectString = server.connectString, sessionTimeoutMs = 2_000): Promise<Client> {
  const client = await Client.connect(connectString, { sessionTimeoutMs, connectTimeoutMs: WAIT_LIMIT_MS, shuffleHosts: false });
  sdkClients.push(client);
  return client;
}

function isZkError(code: ZkError["code"]) {
  return (error: unknown) => {
    assert.ok(error instanceof ZkError, `expected a ZkError ${code}, got ${String(error)}`);
    assert.equal(error.code, code);
    return true;
  };
}

/** The status a stream ended with (bounded). */
function endStatus(stream: RawStream, what: string): Promise<grpc.StatusObject> {
  return bounded(`end of ${what}`, stream.status);
}

/** Serialize a client frame as the real encoder would, for streams opened with openBytes. */
function encodeFrame(frame: object): Buffer {
  return corralServiceDefinition()["Session"]!.requestSerialize(frame);
}

/** The bystander reads and writes as if nothing happened; each acknowledged write is remembered. */
async function assertBystanderStillServed(label: string): Promise<void> {
  const data = `${label} #${++bystanderWrites}`;
  const child = await bystander.create(`${BYSTANDER}/w-`, data, { mode: "persistent-sequential" });
  acknowledged.set(child, data);
  const stat = await bystander.setData(BYSTANDER, data);
  lastBystanderData = data;
  assert.equal(stat.version, bystanderWrites, "every bystander setData so far applied, exactly once");
  const read = await bystander.getData(BYSTANDER);
  assert.equal(text(read.data), data, "the bystander reads its own write");
  assert.equal(text((await bystander.getData(child)).data), data);
  const eph = await bystander.exists(bystanderEphemeral);
  assert.ok(eph, "the bystander's ephemeral is still there");
  assert.equal(eph.ephemeralOwner, bystanderSessionId);
  assert.equal(bystander.sessionId, bystanderSessionId, "the bystander kept its session");
  assert.ok(!bystanderStates.includes("expired"), "the bystander's session never expired");
}

/**
 * One contract-8 test: runs `body`, then checks the bystander was not hurt. If the test failed
 * because the server process died, the failure says so (with the process's last words) and the
 * server is restarted on its data dir, so one crash fails one test rather than every later one.
 */
function badInputTest(name: string, body: () => Promise<void>): void {
  test(name, async () => {
    try {
      await body();
      await assertBystanderStillServed(name);
    } catch (error) {
      await reviveIfDead(error);
      throw error;
    }
  });
}

let stderrSeen = 0;

async function reviveIfDead(cause: unknown): Promise<void> {
  if (await serverAnswers()) return;
  const lastWords = server.stderr.slice(stderrSeen).slice(-3_000);
  await server.stop(); // reaps the dead process (a no-op if it is already gone)
  const mark = server.stderr.length;
  try {
    await server.restart();
  } catch (restartError) {
    const recovery = server.stderr.slice(mark).slice(-2_000);
    throw new Error(
      `the server process died and could not be restarted (${String(restartError)}); its stderr ends:\n${lastWords}\n` + `restart attempt:\n${recovery}`,
      // eslint-disable-next-line preserve-caught-error -- the cause is the failure that killed the server; the restart's error is quoted in the message
      { cause },
    );
  }
  stderrSeen = server.stderr.length;
  await waitUntil("the bystander to reconnect after the restart", () => (bystander.connected ? true : undefined));
  throw new Error(`the server process died (restarted for the remaining tests); its stderr ends:\n${lastWords}`, { cause });
}

/** Whether a fresh connection gets a session right now. */
async function serverAnswers(): Promise<boolean> {
  const stream = openRaw();
  try {
    return await Promise.race([
      stream.connect().then((answer) => answer.err === 0),
      stream.status.then(() => false),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5_000).unref()),
    ]);
  } catch {
    return false;
  } finally {
    stream.abandon();
  }
}

/** A node `path` created (persistent) through a raw stream. */
async function createNode(stream: RawStream, path: string, data = ""): Promise<void> {
  const response = await call(stream, { create: { path, data: bytesOf(data) } });
  assert.equal(response.err, 0, `setup create ${path}`);
}

// ---------------------------------------------------------------------------------------------
// Lifecycle

before(async () => {
  const dir = await makeTempDir("corral-bad-input-");
  removeDir = dir.remove;
  server = await ServerProcess.start({ dataDir: dir.path, tickMs: 100 });
  bystander = await connectSdk();
  bystander.on("state", (state) => bystanderStates.push(state));
  bystanderSessionId = bystander.sessionId;
  await bystander.create(BYSTANDER, "start");
  bystanderEphemeral = await bystander.create("/bystander-session", "alive", { mode: "ephemeral" });
  await bystander.create(ROOT, "");
});

after(async () => {
  for (const stream of rawStreams) {
    try {
      stream.abandon();
    } catch {
      // already gone
    }
  }
  await Promise.allSettled(sdkClients.map((client) => client.close()));
  await server?.stop();
  await removeDir?.();
});

// ---------------------------------------------------------------------------------------------
// 1. Paths

badInputTest("invalid paths sent raw are answered BADARGUMENTS by every operation", async () => {
  const { stream } = await rawSession();
  const base = `${ROOT}/paths`;
  await createNode(stream, base, "base");
  await createNode(stream, `${base}/x`, "x");
  const badPaths = [
    "a", // relative
    `${base.slice(1)}/x`, // relative, naming an existing node
    "", // empty
    `${base}//x`, // empty segment
    `${base}/./x`, // "." segment
    `${base}/../x`, // ".." segment
    `${base}/.`,
    `${base}/..`,
    `${base}/x/`, // trailing slash
    `${base}/`, // trailing slash on an existing node
    `${base}/x\u0000y`, // NUL inside
    `${base}/x\u0000`,
  ];
  const BAD = ZkErrorCode.BADARGUMENTS;
  for (const path of badPaths) {
    const label = JSON.stringify(path);
    const answers: [string, Response][] = [
      ["create", await call(stream, { create: { path, data: bytesOf("nope") } })],
      ["setData", await call(stream, { setData: { path, data: bytesOf("nope"), version: -1 } })],
      ["getData", await call(stream, { getData: { path } })],
      ["exists", await call(stream, { exists: { path } })],
      ["delete", await call(stream, { delete: { path, version: -1 } })],
      ["getChildren", await call(stream, { getChildren: { path } })],
      ["getAcl", await call(stream, { getAcl: { path } })],
      ["setAcl", await call(stream, { setAcl: { path, acl: [], version: -1 } })],
      ["sync", await call(stream, { sync: { path } })],
    ];
    for (const [name, response] of answers) assert.equal(response.err, BAD, `${name} ${label}`);
    const multi = await call(stream, { multi: { ops: [{ check: { path, version: -1 } }] } });
    assert.equal(multi.err, BAD, `multi check ${label}`);
    assert.deepEqual(
      multi.results.map((r) => r.err),
      [BAD],
      `multi check ${label} results`,
    );
  }
  // Nothing was created or changed by any of them.
  const children = await call(stream, { getChildren: { path: base } });
  assert.equal(children.err, 0);
  assert.deepEqual(children.children, ["x"]);
  const x = await call(stream, { getData: { path: `${base}/x` } });
  assert.equal(x.err, 0);
  assert.equal(text(x.data), "x");
  assert.equal(x.stat?.version, 0);
  // The session that sent them still works.
  assert.equal((await call(stream, { exists: { path: base } })).err, 0);
});

// 2. Data size

badInputTest("data over 1 MiB is refused BADARGUMENTS on create and setData; exactly 1 MiB is accepted", async () => {
  const { stream } = await rawSession();
  const base = `${ROOT}/data`;
  await createNode(stream, base);
  const tooBig = new Uint8Array(ONE_MIB + 1).fill(0x41);
  const exact = new Uint8Array(ONE_MIB).fill(0x42);
  const exact2 = new Uint8Array(ONE_MIB).fill(0x43);

  const bigCreate = await call(stream, { create: { path: `${base}/big`, data: tooBig } });
  assert.equal(bigCreate.err, ZkErrorCode.BADARGUMENTS, "create with 1 MiB + 1");
  assert.equal((await call(stream, { exists: { path: `${base}/big` } })).err, ZkErrorCode.NONODE, "nothing created");
  const bigMulti = await call(stream, { multi: { ops: [{ create: { path: `${base}/big`, data: tooBig } }] } });
  assert.equal(bigMulti.err, ZkErrorCode.BADARGUMENTS, "multi create with 1 MiB + 1");
  assert.equal((await call(stream, { exists: { path: `${base}/big` } })).err, ZkErrorCode.NONODE, "nothing created by the multi");

  const created = await call(stream, { create: { path: `${base}/exact`, data: exact } });
  assert.equal(created.err, 0, "create with exactly 1 MiB");
  assert.equal(created.path, `${base}/exact`);
  let read = await call(stream, { getData: { path: `${base}/exact` } });
  assert.equal(read.err, 0);
  assert.ok(Buffer.from(read.data).equals(Buffer.from(exact)), "the 1 MiB payload reads back intact");

  const bigSet = await call(stream, { setData: { path: `${base}/exact`, data: tooBig, version: -1 } });
  assert.equal(bigSet.err, ZkErrorCode.BADARGUMENTS, "setData with 1 MiB + 1");
  read = await call(stream, { getData: { path: `${base}/exact` } });
  assert.equal(read.stat?.version, 0, "the refused setData changed nothing");
  assert.ok(Buffer.from(read.data).equals(Buffer.from(exact)));

  const set = await call(stream, { setData: { path: `${base}/exact`, data: exact2, version: 0 } });
  assert.equal(set.err, 0, "setData with exactly 1 MiB");
  assert.equal(set.stat?.version, 1);
  assert.equal(set.stat?.dataLength, ONE_MIB);
  read = await call(stream, { getData: { path: `${base}/exact` } });
  assert.ok(Buffer.from(read.data).equals(Buffer.from(exact2)));
});

// 3. NOTEMPTY

badInputTest("deleting a node that has children is refused NOTEMPTY, raw and through the SDK", async () => {
  const { stream } = await rawSession();
  const parent = `${ROOT}/notempty`;
  await createNode(stream, parent, "p");
  await createNode(stream, `${parent}/child`, "c");

  assert.equal((await call(stream, { delete: { path: parent, version: -1 } })).err, ZkErrorCode.NOTEMPTY);
  assert.equal((await call(stream, { delete: { path: parent, version: 0 } })).err, ZkErrorCode.NOTEMPTY, "right version, still not empty");

  const sdk = await connectSdk();
  await assert.rejects(sdk.delete(parent), isZkError("NOTEMPTY"));
  await assert.rejects(sdk.delete(parent, { version: 0 }), isZkError("NOTEMPTY"));

  const stat = await sdk.exists(parent);
  assert.ok(stat, "the parent is still there");
  assert.equal(stat.numChildren, 1);
  assert.ok(await sdk.exists(`${parent}/child`), "the child is still there");
  // Once empty, the same delete works.
  await sdk.delete(`${parent}/child`);
  await sdk.delete(parent);
  assert.equal(await sdk.exists(parent), null);
});

// 4. NOCHILDRENFOREPHEMERALS

badInputTest("creating a child under an ephemeral is refused NOCHILDRENFOREPHEMERALS", async () => {
  const { stream } = await rawSession();
  const base = `${ROOT}/ephemeral-parent`;
  await createNode(stream, base);
  const eph = `${base}/eph`;
  assert.equal((await call(stream, { create: { path: eph, mode: 1 } })).err, 0, "the ephemeral is created");

  for (const mode of [0, 1, 2, 3]) {
    const answer = await call(stream, { create: { path: `${eph}/child`, mode } });
    assert.equal(answer.err, ZkErrorCode.NOCHILDRENFOREPHEMERALS, `child of mode ${mode} from the owner`);
  }
  const multi = await call(stream, { multi: { ops: [{ create: { path: `${eph}/child` } }] } });
  assert.equal(multi.err, ZkErrorCode.NOCHILDRENFOREPHEMERALS, "inside a multi");

  const sdk = await connectSdk();
  await assert.rejects(sdk.create(`${eph}/child`, "x"), isZkError("NOCHILDRENFOREPHEMERALS"));
  await assert.rejects(sdk.create(`${eph}/seq-`, "x", { mode: "persistent-sequential" }), isZkError("NOCHILDRENFOREPHEMERALS"));

  const stat = await sdk.exists(eph);
  assert.ok(stat);
  assert.equal(stat.numChildren, 0, "no child was created");
  assert.deepEqual(await sdk.getChildren(eph), []);
});

// 5. BADVERSION

badInputTest("wrong versions are refused BADVERSION on setData, delete and a multi check, and the multi applies nothing", async () => {
  const { stream } = await rawSession();
  const base = `${ROOT}/versions`;
  await createNode(stream, base);
  await createNode(stream, `${base}/a`, "a0");
  await createNode(stream, `${base}/c`, "c0");

  assert.equal((await call(stream, { setData: { path: `${base}/a`, data: bytesOf("a1"), version: 7 } })).err, ZkErrorCode.BADVERSION);
  assert.equal((await call(stream, { delete: { path: `${base}/a`, version: 7 } })).err, ZkErrorCode.BADVERSION);

  const multi = await call(stream, {
    multi: {
      ops: [
        { create: { path: `${base}/new`, data: bytesOf("n") } },
        { setData: { path: `${base}/a`, data: bytesOf("a-multi"), version: -1 } },
        { check: { path: `${base}/a`, version: 99 } },
        { delete: { path: `${base}/c`, version: -1 } },
      ],
    },
  });
  assert.equal(multi.err, ZkErrorCode.BADVERSION);
  assert.deepEqual(
    multi.results.map((r) => r.err),
    [0, 0, ZkErrorCode.BADVERSION, ZkErrorCode.RUNTIMEINCONSISTENCY],
    "ZooKeeper's result list: 0 before the failed op, its code, RUNTIMEINCONSISTENCY after",
  );

  // Nothing of the failed multi (nor of the refused setData/delete) was applied.
  assert.equal((await call(stream, { exists: { path: `${base}/new` } })).err, ZkErrorCode.NONODE, "the multi's create was not applied");
  const a = await call(stream, { getData: { path: `${base}/a` } });
  assert.equal(text(a.data), "a0", "the multi's setData was not applied");
  assert.equal(a.stat?.version, 0);
  assert.equal((await call(stream, { exists: { path: `${base}/c` } })).err, 0, "the multi's delete was not applied");

  // Through the SDK: typed errors, and the multi's per-op results.
  const sdk = await connectSdk();
  await assert.rejects(sdk.setData(`${base}/a`, "a1", { version: 3 }), isZkError("BADVERSION"));
  await assert.rejects(sdk.delete(`${base}/a`, { version: 3 }), isZkError("BADVERSION"));
  await assert.rejects(sdk.multi([op.create(`${base}/new`, "n"), op.check(`${base}/a`, 5), op.delete(`${base}/c`)]), (error: unknown) => {
    assert.ok(error instanceof ZkMultiError, `expected ZkMultiError, got ${String(error)}`);
    assert.equal(error.code, "BADVERSION");
    assert.equal(error.failedIndex, 1);
    assert.deepEqual(
      error.results.map((r) => (r.type === "error" ? r.code : r.type)),
      ["OK", "BADVERSION", "RUNTIMEINCONSISTENCY"],
    );
    return true;
  });
  assert.equal(await sdk.exists(`${base}/new`), null);
  assert.ok(await sdk.exists(`${base}/c`));
  // The right version works.
  assert.equal((await sdk.setData(`${base}/a`, "a1", { version: 0 })).version, 1);
});

// 6. Expired sessions

badInputTest("resuming an expired session is answered SESSIONEXPIRED on the wire and by the SDK", async () => {
  const setup = await rawSession();
  const base = `${ROOT}/raw-expire`;
  await createNode(setup.stream, base);
  setup.stream.end();

  const { stream, connect } = await rawSession(200);
  const eph = `${base}/eph`;
  assert.equal((await call(stream, { create: { path: eph, mode: 1 } })).err, 0);
  const stat = await bystander.exists(eph);
  assert.equal(stat?.ephemeralOwner, BigInt(connect.sessionId), "the ephemeral belongs to the raw session");

  stream.abandon(); // no close: only expiry can end the session
  await waitUntil("the expired session's ephemeral to be deleted", async () => ((await bystander.exists(eph)) === null ? true : undefined));

  const resume = openRaw();
  const answer = await bounded("resume", resume.connect({ sessionId: connect.sessionId, password: connect.password }));
  assert.equal(answer.err, ZkErrorCode.SESSIONEXPIRED, "resume of an expired session");
  assert.equal(answer.timeoutMs, 0, "no session was granted");
  await endStatus(resume, "the refused resume");

  await assert.rejects(
    Client.connect(server.connectString, {
      sessionId: BigInt(connect.sessionId),
      password: connect.password,
      connectTimeoutMs: WAIT_LIMIT_MS,
    }),
    isZkError("SESSIONEXPIRED"),
  );
});

badInputTest("an SDK client whose session expired reports expired and fails its operations with SESSIONEXPIRED", async () => {
  const proxy = await TcpProxy.start(server.port);
  try {
    const client = await connectSdk(proxy.address, 200);
    const states: ClientState[] = [];
    client.on("state", (state) => states.push(state));
    const sessionId = client.sessionId;
    const base = `${ROOT}/sdk-expire`;
    await client.create(base, "");
    const eph = await client.create(`${base}/eph`, "x", { mode: "ephemeral" });
    assert.equal((await bystander.exists(eph))?.ephemeralOwner, sessionId);

    proxy.cut(true); // the client can reach no server until healed
    await waitUntil("the cut-off session's ephemeral to be deleted", async () => ((await bystander.exists(eph)) === null ? true : undefined));
    proxy.heal();
    await waitUntil("the client to learn its session expired", () => (client.state === "expired" ? true : undefined));

    assert.ok(states.includes("disconnected"), `states seen: ${states.join(", ")}`);
    assert.equal(states.at(-1), "expired");
    await assert.rejects(client.getData(base), isZkError("SESSIONEXPIRED"));
    await assert.rejects(client.exists(base), isZkError("SESSIONEXPIRED"));
    await assert.rejects(client.create(`${base}/after`, "x"), isZkError("SESSIONEXPIRED"));
    await assert.rejects(client.setData(base, "x"), isZkError("SESSIONEXPIRED"));
    await assert.rejects(client.delete(base), isZkError("SESSIONEXPIRED"));
    assert.equal(await bystander.exists(`${base}/after`), null);
    await client.close();
  } finally {
    await proxy.close();
  }
});

// 7. Unknown session

badInputTest("resuming an unknown session id is answered SESSIONEXPIRED", async () => {
  let id = 0n;
  while (id === 0n) id = BigInt.asIntN(64, randomBytes(8).readBigUInt64BE());
  const stream = openRaw();
  const answer = await bounded("resume of an unknown id", stream.connect({ sessionId: id.toString(), password: randomBytes(16) }));
  assert.equal(answer.err, ZkErrorCode.SESSIONEXPIRED);
  assert.equal(answer.timeoutMs, 0);
  await endStatus(stream, "the refused resume");

  await assert.rejects(
    Client.connect(server.connectString, { sessionId: id, password: new Uint8Array(randomBytes(16)), connectTimeoutMs: WAIT_LIMIT_MS }),
    isZkError("SESSIONEXPIRED"),
  );
});

// 8. Wrong password

badInputTest("resuming a live session with a wrong password is answered SESSIONEXPIRED and leaves its owner alone", async () => {
  const owner = await rawSession();
  const base = `${ROOT}/password`;
  await createNode(owner.stream, base);
  const eph = `${base}/eph`;
  assert.equal((await call(owner.stream, { create: { path: eph, mode: 1, data: bytesOf("v0") } })).err, 0);

  const password = Buffer.from(owner.connect.password);
  const flipped = Buffer.from(password);
  flipped[0] = flipped[0]! ^ 0xff;
  const wrongPasswords = [flipped, Buffer.alloc(0), Buffer.concat([password, Buffer.from([0])]), password.subarray(1)];
  for (const wrong of wrongPasswords) {
    const intruder = openRaw();
    const answer = await bounded("wrong-password resume", intruder.connect({ sessionId: owner.connect.sessionId, password: wrong }));
    assert.equal(answer.err, ZkErrorCode.SESSIONEXPIRED, `password of ${wrong.length} bytes`);
    await endStatus(intruder, "the refused resume");
  }
  await assert.rejects(
    Client.connect(server.connectString, {
      sessionId: BigInt(owner.connect.sessionId),
      password: new Uint8Array(flipped),
      connectTimeoutMs: WAIT_LIMIT_MS,
    }),
    isZkError("SESSIONEXPIRED"),
  );

  // The owner's connection and session are untouched: same stream, ephemeral intact, writes work.
  const exists = await call(owner.stream, { exists: { path: eph } });
  assert.equal(exists.err, 0);
  assert.equal(exists.stat?.ephemeralOwner, owner.connect.sessionId);
  assert.equal((await call(owner.stream, { setData: { path: eph, data: bytesOf("v1"), version: 0 } })).err, 0);
  assert.equal((await call(owner.stream, { close: {} })).err, 0, "the owner closes its session normally");
  assert.equal(await bystander.exists(eph), null, "closing deleted the ephemeral");
});

// 9. Garbage frames

badInputTest("garbage bytes as the first frame end that stream with INVALID_ARGUMENT", async () => {
  const garbage = [
    Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]), // field 1, length far past the end
    Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), // a tag varint that never ends
    Buffer.from([0x0f, 0x01]), // wire type 7
    Buffer.alloc(0), // decodes, but carries no frame
    Buffer.from([0x78, 0x01]), // only an unknown field
  ];
  for (const bytes of garbage) {
    const stream = openRawBytes();
    stream.send(bytes);
    const status = await endStatus(stream, `garbage ${bytes.toString("hex")}`);
    assert.equal(status.code, grpc.status.INVALID_ARGUMENT, `garbage ${bytes.toString("hex")}: ${status.details}`);
    assert.equal(await stream.next(), undefined, "nothing was answered");
  }
});

badInputTest("garbage after a valid connect ends only that stream with INVALID_ARGUMENT", async () => {
  const stream = openRawBytes();
  stream.send(
    encodeFrame({
      connect: { protocolVersion: CLIENT_PROTOCOL_VERSION, timeoutMs: 2_000, sessionId: "0", password: Buffer.alloc(0), lastZxidSeen: "0" },
    }),
  );
  const first = await bounded("connect answer", stream.next());
  assert.equal(first?.frame, "connect");
  const connect = first.connect;
  assert.equal(connect.err, 0);
  stream.send(encodeFrame({ request: { xid: 1, exists: { path: "/" } } }));
  const answer = await bounded("exists answer", stream.next());
  assert.equal(answer?.frame, "response", "the stream works before the garbage");

  stream.send(Buffer.from([0x12, 0x7f, 0x01])); // field 2 (request), length 127, then nothing
  const status = await endStatus(stream, "the garbage stream");
  assert.equal(status.code, grpc.status.INVALID_ARGUMENT, status.details);

  // Only the stream ended: its session lives on and can be resumed.
  const resumed = openRaw();
  const again = await bounded("resume", resumed.connect({ sessionId: connect.sessionId, password: connect.password }));
  assert.equal(again.err, 0, "the session survives a bad frame on its stream");
  assert.equal((await call(resumed, { exists: { path: "/" } })).err, 0);
  assert.equal((await call(resumed, { close: {} })).err, 0);
});

// 10. Request before connect

badInputTest("a request or ping before connect ends the stream with INVALID_ARGUMENT", async () => {
  const early = [{ request: { xid: 1, exists: { path: "/" } } }, { request: { xid: 1, create: { path: `${ROOT}/before-connect` } } }, { ping: {} }];
  for (const frame of early) {
    const stream = openRaw();
    stream.send(frame);
    const status = await endStatus(stream, JSON.stringify(frame));
    assert.equal(status.code, grpc.status.INVALID_ARGUMENT, `${JSON.stringify(frame)}: ${status.details}`);
    assert.equal(await stream.next(), undefined, "nothing was answered");
  }
  assert.equal(await bystander.exists(`${ROOT}/before-connect`), null, "the early create was not applied");
});

// 11. A request with no operation

badInputTest("a request with no operation is answered UNIMPLEMENTED for its xid and the session keeps working", async () => {
  const { stream } = await rawSession();
  // Pipelined: the empty request is answered in its place in the session's order.
  const emptyXid = nextXid++;
  const nextOne = nextXid++;
  stream.send({ request: { xid: emptyXid } });
  stream.send({ request: { xid: nextOne, exists: { path: "/" } } });
  const first = await bounded("answer to the empty request", stream.next());
  const second = await bounded("answer to the following request", stream.next());
  assert.equal(first?.frame, "response");
  assert.equal(second?.frame, "response");
  const r1 = first.response;
  const r2 = second.response;
  assert.equal(r1.xid, emptyXid);
  assert.equal(r1.err, ZkErrorCode.UNIMPLEMENTED);
  assert.equal(r2.xid, nextOne);
  assert.equal(r2.err, 0);

  // A multi op with no operation is a bad argument, also answered in place.
  const multi = await call(stream, { multi: { ops: [{}] } });
  assert.equal(multi.err, ZkErrorCode.BADARGUMENTS);

  const path = `${ROOT}/after-empty-request`;
  const created = await call(stream, { create: { path, data: bytesOf("ok") } });
  assert.equal(created.err, 0, "the session still writes");
  assert.equal(text((await call(stream, { getData: { path } })).data), "ok");
});

// 12. Create modes and ACLs

badInputTest("an unknown create mode is BADARGUMENTS and an ACL with an unknown scheme is INVALIDACL", async () => {
  const { stream } = await rawSession();
  const base = `${ROOT}/modes`;
  await createNode(stream, base);

  for (const mode of [42, 7, 0xffffffff]) {
    assert.equal((await call(stream, { create: { path: `${base}/m`, mode } })).err, ZkErrorCode.BADARGUMENTS, `mode ${mode}`);
  }
  const multiMode = await call(stream, { multi: { ops: [{ create: { path: `${base}/m`, mode: 42 } }] } });
  assert.equal(multiMode.err, ZkErrorCode.BADARGUMENTS, "mode 42 inside a multi");

  const bogusAcl = [{ perms: 31, id: { scheme: "bogus", id: "x" } }];
  assert.equal((await call(stream, { create: { path: `${base}/acl`, acl: bogusAcl } })).err, ZkErrorCode.INVALIDACL, "create");
  assert.equal((await call(stream, { create: { path: `${base}/acl`, acl: [{ perms: 31 }] } })).err, ZkErrorCode.INVALIDACL, "entry without an id");
  assert.equal((await call(stream, { setAcl: { path: base, acl: bogusAcl, version: -1 } })).err, ZkErrorCode.INVALIDACL, "setAcl");
  const multiAcl = await call(stream, { multi: { ops: [{ create: { path: `${base}/acl`, acl: bogusAcl } }] } });
  assert.equal(multiAcl.err, ZkErrorCode.INVALIDACL, "inside a multi");

  const sdk = await connectSdk();
  await assert.rejects(sdk.create(`${base}/acl`, "x", { acl: bogusAcl }), isZkError("INVALIDACL"));

  assert.deepEqual(await sdk.getChildren(base), [], "nothing was created");
  const acl = await sdk.getAcl(base);
  assert.deepEqual(acl.acl, [{ perms: 31, id: { scheme: "world", id: "anyone" } }], "the refused setAcl changed nothing");
  assert.equal(acl.stat.aversion, 0);
});

// 12b. Credentials and ACL ids

badInputTest("raw credentials the server cannot use are AUTHFAILED, malformed ACL ids INVALIDACL, and the session keeps its ids and its work", async () => {
  const { stream } = await rawSession();
  const base = `${ROOT}/auth`;
  await createNode(stream, base);
  const refused: [string, Uint8Array][] = [
    ["digest", new Uint8Array(2048).fill(0x3a)],
    ["", bytesOf("a:b")],
    ["sasl", bytesOf("bob:pw")],
  ];
  for (const [scheme, auth] of refused) {
    assert.equal((await call(stream, { addAuth: { scheme, auth } })).err, ZkErrorCode.AUTHFAILED, `addAuth ${JSON.stringify(scheme)} of ${auth.length} bytes`);
  }
  // Invalid UTF-8 is decoded with replacement characters, as Java's new String(bytes) does: a digest like any other.
  assert.equal((await call(stream, { addAuth: { scheme: "digest", auth: new Uint8Array([0xff, 0x3a, 0xfe]) } })).err, 0);
  // Credentials without a colon, even none, are hashed whole, as ZooKeeper's generateDigest does ("blah" → "blah:<hash>").
  assert.equal((await call(stream, { addAuth: { scheme: "digest", auth: bytesOf("no-colon") } })).err, 0);
  assert.equal((await call(stream, { addAuth: { scheme: "digest", auth: new Uint8Array(0) } })).err, 0);
  const who = await call(stream, { whoAmI: {} });
  assert.equal(who.err, 0);
  // In ZooKeeper's iteration order (its connection ids are a hash set), not the order they were added.
  assert.deepEqual(
    who.clientInfo.map((info) => `${info.authScheme}:${info.user}`),
    zookeeperIdOrder([
      { scheme: "ip", id: "127.0.0.1" },
      { scheme: "digest", id: generateDigest("\ufffd:\ufffd") },
      { scheme: "digest", id: generateDigest("no-colon") },
      { scheme: "digest", id: generateDigest("") },
    ]).map((id) => `${id.scheme}:${id.id.split(":")[0]}`),
  );

  const malformed = [
    { perms: 31, id: { scheme: "digest", id: "" } },
    { perms: 31, id: { scheme: "digest", id: "a:b:c" } },
    { perms: 31, id: { scheme: "ip", id: "300.0.0.1" } },
    { perms: 31, id: { scheme: "ip", id: "10.0.0.1/" } },
    { perms: 31, id: { scheme: "super", id: "" } },
    { perms: 64, id: { scheme: "world", id: "anyone" } },
  ];
  for (const entry of malformed) {
    const label = JSON.stringify(entry);
    assert.equal((await call(stream, { create: { path: `${base}/x`, acl: [entry] } })).err, ZkErrorCode.INVALIDACL, `create ${label}`);
    assert.equal((await call(stream, { setAcl: { path: base, acl: [entry], version: -1 } })).err, ZkErrorCode.INVALIDACL, `setAcl ${label}`);
  }
  assert.equal((await call(stream, { setAcl: { path: base, acl: [], version: -1 } })).err, ZkErrorCode.INVALIDACL, "setAcl with no entry");
  const acl = await call(stream, { getAcl: { path: base } });
  assert.deepEqual([acl.acl.length, acl.stat?.aversion], [1, 0], "nothing changed the ACL");
  assert.equal((await call(stream, { create: { path: `${base}/after`, data: bytesOf("ok") } })).err, 0, "the session still writes");
});

// 13. Going back in time

badInputTest("addWatch, removeWatches and checkWatches: bad paths, modes and watcher types are BADARGUMENTS, no watch is NOWATCHER", async () => {
  const { stream } = await rawSession();
  const base = `${ROOT}/watches`;
  await createNode(stream, base);
  const { BADARGUMENTS, NOWATCHER } = ZkErrorCode;
  for (const path of ["a", "", `${base}/`, `${base}//x`, `${base}/../x`, `${base}/x\u0000`]) {
    const label = JSON.stringify(path);
    assert.equal((await call(stream, { addWatch: { path, mode: 1 } })).err, BADARGUMENTS, `addWatch ${label}`);
    assert.equal((await call(stream, { removeWatches: { path, type: 3 } })).err, BADARGUMENTS, `removeWatches ${label}`);
    assert.equal((await call(stream, { checkWatches: { path, type: 3 } })).err, BADARGUMENTS, `checkWatches ${label}`);
  }
  for (const mode of [-1, 2, 1_000_000]) {
    assert.equal((await call(stream, { addWatch: { path: base, mode } })).err, BADARGUMENTS, `addWatch mode ${mode}`);
  }
  for (const type of [-1, 0, 6]) {
    assert.equal((await call(stream, { removeWatches: { path: base, type } })).err, BADARGUMENTS, `removeWatches type ${type}`);
    assert.equal((await call(stream, { checkWatches: { path: base, type } })).err, BADARGUMENTS, `checkWatches type ${type}`);
  }
  // None of them set a watch.
  assert.equal((await call(stream, { checkWatches: { path: base, type: 3 } })).err, NOWATCHER);
  assert.equal((await call(stream, { removeWatches: { path: base, type: 3 } })).err, NOWATCHER);
  // The session still sets, finds and removes watches.
  assert.equal((await call(stream, { addWatch: { path: base, mode: 1 } })).err, 0);
  assert.equal((await call(stream, { checkWatches: { path: base, type: 5 } })).err, 0);
  assert.equal((await call(stream, { checkWatches: { path: base, type: 4 } })).err, NOWATCHER, "recursive is not persistent");
  assert.equal((await call(stream, { removeWatches: { path: base, type: 5 } })).err, 0);
  assert.equal((await call(stream, { checkWatches: { path: base, type: 5 } })).err, NOWATCHER);
  // Through the SDK a bad path never leaves the client, and the session goes on.
  const client = await connectSdk();
  await assert.rejects(
    client.addWatch("no-slash", () => {}, "persistent"),
    isZkError("BADARGUMENTS"),
  );
  await assert.rejects(client.removeAllWatches(base, "any"), isZkError("NOWATCHER"));
  await client.addWatch(base, () => {}, "persistent");
  await client.removeAllWatches(base, "persistent");
});

badInputTest("a client that has seen a zxid ahead of the server is refused with FAILED_PRECONDITION", async () => {
  const probe = await rawSession();
  const serverZxid = BigInt(probe.connect.lastZxid);
  probe.stream.end();

  // The next epoch, and the largest zxid a JS number holds exactly. (Not serverZxid + 1: sessions
  // left by earlier tests may expire meanwhile and move the server's zxid.)
  const ahead = [serverZxid + (1n << 32n), BigInt(Number.MAX_SAFE_INTEGER)];
  for (const zxid of ahead) {
    const stream = openRaw();
    stream.send({
      connect: { protocolVersion: CLIENT_PROTOCOL_VERSION, timeoutMs: 2_000, sessionId: "0", lastZxidSeen: zxid.toString() },
    });
    const status = await endStatus(stream, `lastZxidSeen 0x${zxid.toString(16)}`);
    assert.equal(status.code, grpc.status.FAILED_PRECONDITION, `lastZxidSeen 0x${zxid.toString(16)}: ${status.details}`);
    assert.equal(await stream.next(), undefined, "no session was granted");
  }
  // A client exactly as far as the server is accepted (the refusal is about the zxid, not the field).
  const same = openRaw();
  const ok = await bounded("connect at the server's zxid", same.connect({ lastZxidSeen: serverZxid.toString() }));
  assert.equal(ok.err, 0);
  assert.equal((await call(same, { close: {} })).err, 0);
});

badInputTest("a lastZxidSeen beyond 2^53 (a well-formed 64-bit zxid) is refused as FAILED_PRECONDITION, not as malformed", async () => {
  for (const zxid of [(1n << 63n) - 1n, 1n << 53n, (0x7fffffffn << 32n) | 1n]) {
    const stream = openRaw();
    stream.send({
      connect: { protocolVersion: CLIENT_PROTOCOL_VERSION, timeoutMs: 2_000, sessionId: "0", lastZxidSeen: zxid.toString() },
    });
    const status = await endStatus(stream, `lastZxidSeen 0x${zxid.toString(16)}`);
    assert.equal(status.code, grpc.status.FAILED_PRECONDITION, `lastZxidSeen 0x${zxid.toString(16)}: ${status.details}`);
  }
});

// 14. A second connect

badInputTest("a second connect frame on an established stream ends it with INVALID_ARGUMENT", async () => {
  const { stream, connect } = await rawSession();
  assert.equal((await call(stream, { exists: { path: "/" } })).err, 0);
  stream.send({
    connect: { protocolVersion: CLIENT_PROTOCOL_VERSION, timeoutMs: 2_000, sessionId: connect.sessionId, password: connect.password },
  });
  const status = await endStatus(stream, "the stream with two connects");
  assert.equal(status.code, grpc.status.INVALID_ARGUMENT, status.details);

  // Only that stream ended: the session can be resumed.
  const resumed = openRaw();
  const again = await bounded("resume", resumed.connect({ sessionId: connect.sessionId, password: connect.password }));
  assert.equal(again.err, 0);
  assert.equal((await call(resumed, { close: {} })).err, 0);
});

// Beyond the brief's list: the root. ZooKeeper answers NODEEXISTS for create("/") (its prep finds
// the root already there); corral's SDK lets "/" through, so any client can send it.

badInputTest("creating the root is answered NODEEXISTS and the server keeps serving", async () => {
  const { stream } = await rawSession();
  const answer = await call(stream, { create: { path: "/", data: bytesOf("root") } });
  assert.equal(answer.err, ZkErrorCode.NODEEXISTS);
  const multi = await call(stream, { multi: { ops: [{ create: { path: "/" } }] } });
  assert.equal(multi.err, ZkErrorCode.NODEEXISTS, "inside a multi");
  const sdk = await connectSdk();
  await assert.rejects(sdk.create("/", "root"), isZkError("NODEEXISTS"));
  assert.equal((await sdk.getData("/")).data.length, 0, "the root is unchanged");
});

// ---------------------------------------------------------------------------------------------
// The end: nothing the bystander was told is lost.

test("every write the bystander got acknowledged is present at the end", async () => {
  assert.ok(acknowledged.size > 0);
  const children = await bystander.getChildren(BYSTANDER);
  for (const [path, data] of acknowledged) {
    const name = path.slice(BYSTANDER.length + 1);
    assert.ok(children.includes(name), `${path} is listed`);
    const read = await bystander.getData(path);
    assert.equal(text(read.data), data, `${path} holds its acknowledged data`);
  }
  assert.equal(children.length, acknowledged.size, "no acknowledged create lost, none duplicated");
  const main = await bystander.getData(BYSTANDER);
  assert.equal(text(main.data), lastBystanderData);
  assert.equal(main.stat.version, bystanderWrites, "every acknowledged setData applied exactly once");
  assert.ok(await bystander.exists(bystanderEphemeral), "the bystander's session is alive");
  assert.equal(bystander.sessionId, bystanderSessionId);
  assert.ok(!bystanderStates.includes("expired"));
});
