/**
 * The server's client session (src/replica/client-session.ts) under each door's codec, against a
 * recording pipeline and session opener: what is held behind a connect, what ends reading, how a
 * refusal and an expired session end the connection, and the ZooKeeper door's record shapes (the
 * readOnly byte, auth and sasl answers, unknown opcodes). The simulator and the integration tests
 * check the same session against the whole server; these name each door policy on its own.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { limits } from "../../src/common/constants.js";
import { ZkErrorCode } from "../../src/common/errors.js";
import { ClientSession, type ClientSessionDeps, type ConnectionRefusal } from "../../src/replica/client-session.js";
import type { ClientConnection, RequestPipeline } from "../../src/replica/pipeline.js";
import { EMPTY_BODY, type ClientRequest, type Reply } from "../../src/replica/requests.js";
import type { SessionDoor, SessionOpener, SessionRequest } from "../../src/replica/session-opener.js";
import type { DataTree } from "../../src/store/data-tree.js";
import { MALFORMED, type DecodedClientFrame } from "../../src/server/client-frame-codec.js";
import { GrpcSessionCodec, receiveClientFrame } from "../../src/server/grpc-session-codec.js";
import { FrameSplitter } from "../../src/server/zk-wire/frames.js";
import { JuteReader, JuteWriter } from "../../src/server/zk-wire/jute.js";
import * as jute from "../../src/server/zk-wire/records.js";
import { OpCode, Xid } from "../../src/server/zk-wire/records.js";
import { JuteSessionCodec } from "../../src/server/zk-wire/zk-session-codec.js";

const SERVER_ID = 4;
const TREE_ZXID = 77;
const EMPTY_REPLY: Reply = { err: 0, zxid: TREE_ZXID, body: EMPTY_BODY };

/** A pipeline and session opener that record what the session asks of them. */
function fakeReplica() {
  const submitted: { xid: number; request?: ClientRequest; err?: number }[] = [];
  const touched: bigint[] = [];
  let opening: { request: SessionRequest; door: SessionDoor } | undefined;
  const pipeline = {
    attach: () => undefined,
    detach: () => undefined,
    touch: (sessionId: bigint) => void touched.push(sessionId),
    submit: (_sessionId: bigint, _connection: ClientConnection, xid: number, request: ClientRequest) => void submitted.push({ xid, request }),
    submitRejected: (_sessionId: bigint, _connection: ClientConnection, xid: number, err: number) => void submitted.push({ xid, err }),
  };
  const sessions = { open: (request: SessionRequest, door: SessionDoor) => void (opening = { request, door }) };
  const deps: ClientSessionDeps = {
    serverId: SERVER_ID,
    state: { tree: { lastProcessedZxid: TREE_ZXID } as DataTree },
    pipeline: pipeline as unknown as RequestPipeline,
    sessions: sessions as unknown as SessionOpener,
  };
  return {
    deps,
    submitted,
    touched,
    get opening() {
      assert.ok(opening, "the session asked the opener");
      return opening;
    },
  };
}

/** A connection under the session: what it wrote, and how it ended. */
function recordingStream<Out>() {
  const written: Out[] = [];
  let ended: { refused: ConnectionRefusal; detail: string } | { finished: string } | undefined;
  return {
    written,
    get ended() {
      return ended;
    },
    write: (frame: Out) => void written.push(frame),
    refuse: (refused: ConnectionRefusal, detail: string) => void (ended = { refused, detail }),
    finish: (finished: string) => void (ended = { finished }),
  };
}

// ---- the ZooKeeper door's frames, as a client writes and reads them

function connectFrame(fields: Partial<jute.ConnectRequest> = {}): Uint8Array {
  return jute.encodeRecord(jute.ConnectRequest, { protocolVersion: 0, lastZxidSeen: 0n, timeOut: 4_000, sessionId: 0n, passwd: new Uint8Array(16), ...fields });
}

function requestFrame<T>(xid: number, type: number, codec?: jute.JuteCodec<T>, body?: T): Uint8Array {
  const writer = new JuteWriter();
  jute.RequestHeader.write(writer, { xid, type });
  if (codec !== undefined) codec.write(writer, body as T);
  return writer.toBytes();
}

/** The one record a written frame holds (its length prefix checked by the real splitter). */
function unframe(frame: Uint8Array): Uint8Array {
  const records = new FrameSplitter().push(frame);
  assert.equal(records.length, 1);
  return records[0]!;
}

function replyHeader(frame: Uint8Array): jute.ReplyHeader {
  return jute.ReplyHeader.read(new JuteReader(unframe(frame)));
}

function juteSession() {
  const replica = fakeReplica();
  const stream = recordingStream<Uint8Array>();
  const session = new ClientSession(replica.deps, new JuteSessionCodec(), stream, "10.0.0.1", [], []);
  return { replica, stream, session };
}

function establish(session: { receive(frame: Uint8Array): void }, replica: ReturnType<typeof fakeReplica>, readOnly = false, connect = connectFrame()): void {
  session.receive(connect);
  replica.opening.door.established(0x1234n, 4_000, new Uint8Array(16).fill(7), readOnly);
}

describe("the server's client session under the ZooKeeper door's codec", () => {
  test("frames pipelined behind the connect are held, then run in order once the connect is answered", () => {
    const { replica, stream, session } = juteSession();
    session.receive(connectFrame());
    session.receive(requestFrame(1, OpCode.getData, jute.GetDataRequest, { path: "/a", watch: false }));
    session.receive(requestFrame(2, OpCode.sync, jute.SyncRequest, { path: "/" }));
    assert.equal(replica.submitted.length, 0, "nothing runs before the session exists");
    replica.opening.door.established(0x1234n, 4_000, new Uint8Array(16), false);
    assert.deepEqual(
      replica.submitted.map((s) => s.xid),
      [1, 2],
    );
    assert.equal(jute.decodeRecord(jute.ConnectResponse, unframe(stream.written[0]!)).sessionId, 0x1234n, "the connect answer goes first");
  });

  test("more frames behind the connect than the bound refuse the connection", () => {
    const { stream, session } = juteSession();
    session.receive(connectFrame());
    for (let xid = 1; xid <= limits.framesHeldBeforeConnectMax; xid++) session.receive(requestFrame(xid, OpCode.ping));
    assert.equal(stream.ended, undefined);
    session.receive(requestFrame(0, OpCode.ping));
    assert.deepEqual(stream.ended, { refused: "exhausted", detail: "too many frames before the connect answer" });
  });

  test("the connect answer carries the readOnly byte only when the client's connect had one", () => {
    for (const readOnly of [undefined, false, true]) {
      const { replica, stream, session } = juteSession();
      establish(session, replica, readOnly === true, connectFrame({ readOnly }));
      const answer = jute.decodeRecord(jute.ConnectResponse, unframe(stream.written[0]!));
      assert.equal(answer.readOnly, readOnly);
      assert.equal(replica.opening.request.readOnlyAllowed, readOnly === true);
    }
  });

  test("a negative last zxid is taken as none seen", () => {
    const { replica, session } = juteSession();
    session.receive(connectFrame({ lastZxidSeen: -5n }));
    assert.equal(replica.opening.request.lastZxidSeen, 0n);
  });

  test("a resume of a session that is gone is answered with timeout 0, and the connection ends after it", () => {
    const { replica, stream, session } = juteSession();
    session.receive(connectFrame({ sessionId: 0x99n }));
    replica.opening.door.expired();
    const answer = jute.decodeRecord(jute.ConnectResponse, unframe(stream.written[0]!));
    assert.deepEqual([answer.timeOut, answer.sessionId, answer.passwd], [0, 0n, new Uint8Array(16)]);
    assert.deepEqual(stream.ended, { finished: "expired" });
  });

  test("a connect the server refuses closes the connection without an answer", () => {
    const { replica, stream, session } = juteSession();
    session.receive(connectFrame({ lastZxidSeen: 1_000n }));
    replica.opening.door.refused("behind", "the client is ahead");
    assert.deepEqual(stream.written, []);
    assert.deepEqual(stream.ended, { refused: "behind", detail: "the client is ahead" });
  });

  test("a ping is answered at once with the tree's zxid, and touches the session", () => {
    const { replica, stream, session } = juteSession();
    establish(session, replica);
    session.receive(requestFrame(1, OpCode.getData, jute.GetDataRequest, { path: "/a", watch: false }));
    session.receive(requestFrame(Xid.ping, OpCode.ping));
    const pong = replyHeader(stream.written[1]!);
    assert.deepEqual(pong, { xid: Xid.ping, zxid: BigInt(TREE_ZXID), err: 0 });
    assert.deepEqual(replica.touched, [0x1234n]);
  });

  test("an auth packet is answered with zxid 0; a failed one stops reading and is the last answer", () => {
    const { replica, stream, session } = juteSession();
    establish(session, replica);
    session.receive(requestFrame(Xid.auth, OpCode.auth, jute.AuthPacket, { type: 0, scheme: "digest", auth: new TextEncoder().encode("a:b") }));
    session.sendReply(Xid.auth, EMPTY_REPLY);
    assert.deepEqual(replyHeader(stream.written[1]!), { xid: Xid.auth, zxid: 0n, err: 0 });
    session.receive(requestFrame(Xid.auth, OpCode.auth, jute.AuthPacket, { type: 0, scheme: "digest", auth: new TextEncoder().encode("c:d") }));
    session.authFailed();
    session.receive(requestFrame(5, OpCode.sync, jute.SyncRequest, { path: "/" }));
    assert.deepEqual(
      replica.submitted.map((s) => s.xid),
      [Xid.auth, Xid.auth],
      "nothing after the failed auth is read",
    );
    session.sendReply(Xid.auth, { ...EMPTY_REPLY, err: ZkErrorCode.AUTHFAILED });
    assert.deepEqual(replyHeader(stream.written[2]!), { xid: Xid.auth, zxid: 0n, err: ZkErrorCode.AUTHFAILED });
    assert.deepEqual(stream.ended, { finished: "closed" });
  });

  test("an opcode ZooKeeper does not know is answered UNIMPLEMENTED, is the last frame read, and ends the connection", () => {
    const { replica, stream, session } = juteSession();
    establish(session, replica);
    session.receive(requestFrame(3, 999));
    session.receive(requestFrame(4, OpCode.sync, jute.SyncRequest, { path: "/" }));
    assert.deepEqual(replica.submitted, [{ xid: 3, err: ZkErrorCode.UNIMPLEMENTED }]);
    session.sendReply(3, { ...EMPTY_REPLY, err: ZkErrorCode.UNIMPLEMENTED });
    assert.deepEqual(replyHeader(stream.written[1]!), { xid: 3, zxid: BigInt(TREE_ZXID), err: ZkErrorCode.UNIMPLEMENTED });
    assert.deepEqual(stream.ended, { finished: "closed" });
  });

  test("a sasl packet is answered as by a server without SASL, and one without a token closes the connection", () => {
    const { replica, stream, session } = juteSession();
    establish(session, replica);
    session.receive(requestFrame(6, OpCode.sasl, jute.GetSASLRequest, { token: new Uint8Array(1) }));
    session.sendReply(6, EMPTY_REPLY);
    const reader = new JuteReader(unframe(stream.written[1]!));
    assert.deepEqual(jute.ReplyHeader.read(reader), { xid: 6, zxid: 0n, err: 0 });
    assert.deepEqual(jute.SetSASLResponse.read(reader), { token: null });
    session.receive(requestFrame(7, OpCode.sasl, jute.GetSASLRequest, { token: null }));
    assert.deepEqual(stream.ended, { refused: "invalid", detail: "a sasl packet without a token" });
  });

  test("each reply takes the record of its own request's opcode, found by its xid", () => {
    const { replica, stream, session } = juteSession();
    establish(session, replica);
    session.receive(requestFrame(8, OpCode.exists, jute.ExistsRequest, { path: "/a", watch: false }));
    session.receive(requestFrame(9, OpCode.sync, jute.SyncRequest, { path: "/b" }));
    session.sendReply(9, { err: 0, zxid: TREE_ZXID, body: { kind: "path", path: "/b" } });
    session.sendReply(42, EMPTY_REPLY);
    const reader = new JuteReader(unframe(stream.written[1]!));
    assert.equal(jute.ReplyHeader.read(reader).xid, 9);
    assert.deepEqual(jute.SyncResponse.read(reader), { path: "/b" });
    assert.equal(stream.written.length, 2, "a reply to a request this connection never read writes nothing");
  });

  test("a request that does not decode closes the connection without an answer", () => {
    const { replica, stream, session } = juteSession();
    establish(session, replica);
    session.receive(requestFrame(10, OpCode.getData).subarray(0, 5));
    assert.equal(stream.ended && "refused" in stream.ended ? stream.ended.refused : undefined, "invalid");
    assert.equal(stream.written.length, 1);
  });
});

describe("the server's client session under the gRPC door's codec", () => {
  function grpcSession() {
    const replica = fakeReplica();
    const stream = recordingStream<Buffer>();
    const batchable: boolean[] = [];
    const session = new ClientSession(
      replica.deps,
      new GrpcSessionCodec(),
      { ...stream, write: (frame: Buffer, batch: boolean) => (stream.write(frame), void batchable.push(batch)) },
      "10.0.0.1",
      [],
      [],
    );
    return { replica, stream, session, batchable };
  }
  const connect = (protocolVersion: number, lastZxidSeen = 0n): DecodedClientFrame => ({
    frame: "connect",
    protocolVersion,
    lastZxidSeen,
    timeoutMs: 4_000,
    sessionId: 0n,
    password: new Uint8Array(0),
    readOnlyAllowed: false,
  });

  test("answers may share a message from protocol version 2, and never before the connect is answered", () => {
    for (const [version, batches] of [
      [1, false],
      [2, true],
    ] as const) {
      const { replica, session, batchable } = grpcSession();
      session.receive(connect(version));
      replica.opening.door.established(1n, 4_000, new Uint8Array(16), false);
      session.receive({ frame: "ping" });
      assert.deepEqual(batchable, [batches, batches], `protocol ${version}`);
    }
    const { replica, session, batchable } = grpcSession();
    session.receive(connect(2, 5n));
    replica.opening.door.expired();
    assert.deepEqual(batchable, [false], "the expired answer goes alone");
  });

  test("a negative last zxid, a first frame that is not a connect, and a malformed message refuse the stream as invalid", () => {
    const refusals = [
      (s: ReturnType<typeof grpcSession>["session"]) => s.receive(connect(2, -1n)),
      (s: ReturnType<typeof grpcSession>["session"]) => s.receive({ frame: "ping" }),
      (s: ReturnType<typeof grpcSession>["session"]) => receiveClientFrame(s, MALFORMED),
    ];
    for (const refuse of refusals) {
      const { stream, session } = grpcSession();
      refuse(session);
      assert.equal(stream.ended && "refused" in stream.ended ? stream.ended.refused : undefined, "invalid");
    }
  });

  test("a failed addAuth leaves the session reading", () => {
    const { replica, session } = grpcSession();
    session.receive(connect(2));
    replica.opening.door.established(1n, 4_000, new Uint8Array(16), false);
    session.authFailed();
    session.receive({ frame: "request", xid: 1, request: { op: "sync", path: "/" } });
    assert.deepEqual(
      replica.submitted.map((s) => s.xid),
      [1],
    );
  });
});
