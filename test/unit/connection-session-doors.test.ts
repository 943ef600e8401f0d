/**
 * The server's connection session (src/replica/connection-session.ts) under each door's codec, against a
 * recording pipeline and session opener: what is held behind a connect, what ends reading, how a
 * refusal and an expired session end the connection, enforce.auth and SASL, and the ZooKeeper
 * door's record shapes (the readOnly byte, auth and sasl answers, unknown opcodes), and the
 * inbound bounds (when a connection stops being read, and when it reads again). The simulator and the integration tests
 * check the same session against the whole server; these name each door policy on its own.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { decodeServerFrame, encodeClientFrame } from "../../src/client/codec.js";
import { limits } from "../../src/common/constants.js";
import { ZkErrorCode } from "../../src/common/errors.js";
import { InboundBudget, type InboundLimits } from "../../src/replica/inbound-budget.js";
import { ConnectionSession, type ConnectionSessionDeps, type ConnectionRefusal, type SaslOutcome } from "../../src/replica/connection-session.js";
import type { ClientConnection, RequestPipeline } from "../../src/replica/pipeline.js";
import { EMPTY_BODY, type ClientRequest, type Reply } from "../../src/replica/requests.js";
import type { SessionDoor, SessionOpener, SessionRequest } from "../../src/replica/session-opener.js";
import type { DataTree } from "../../src/store/data-tree.js";
import { decodeClientFrame, MALFORMED, type DecodedClientFrame } from "../../src/server/client-frame-codec.js";
import { GrpcSessionCodec, receiveClientFrame } from "../../src/server/grpc-session-codec.js";
import { FrameSplitter } from "../../src/server/zk-wire/frames.js";
import { JuteReader, JuteWriter } from "../../src/server/zk-wire/jute.js";
import * as jute from "../../src/server/zk-wire/records.js";
import { OpCode, Xid } from "../../src/server/zk-wire/records.js";
import { JuteSessionCodec } from "../../src/server/zk-wire/zk-session-codec.js";

const SERVER_ID = 4;
const TREE_ZXID = 77;
const EMPTY_REPLY: Reply = { err: 0, zxid: TREE_ZXID, body: EMPTY_BODY };

/** Bounds no test reaches unless it means to. */
const WIDE_INBOUND: InboundLimits = {
  globalOutstandingLimit: 1_000,
  globalOutstandingBytesMax: 1 << 30,
  connectionOutstandingMax: 1_000,
  connectionOutstandingBytesMax: 1 << 30,
};

/** A pipeline and session opener that record what the session asks of them. */
function fakeReplica(inbound: InboundBudget = new InboundBudget(WIDE_INBOUND)) {
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
  const deps: ConnectionSessionDeps = {
    serverId: SERVER_ID,
    state: { tree: { lastProcessedZxid: TREE_ZXID } as DataTree },
    pipeline: pipeline as unknown as RequestPipeline,
    sessions: sessions as unknown as SessionOpener,
    inbound,
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
  /** SASL tokens handed to the door, each with the callback that answers it. */
  const tokens: { token: Uint8Array; done: (outcome: SaslOutcome) => void }[] = [];
  /** Whether the door reads from the client (pauseReading / resumeReading). */
  let reading = true;
  return {
    written,
    tokens,
    get ended() {
      return ended;
    },
    get reading() {
      return reading;
    },
    pauseReading: () => void (reading = false),
    resumeReading: () => void (reading = true),
    write: (frame: Out) => void written.push(frame),
    refuse: (refused: ConnectionRefusal, detail: string) => void (ended = { refused, detail }),
    finish: (finished: string) => void (ended = { finished }),
    authenticate: (token: Uint8Array, done: (outcome: SaslOutcome) => void) => void tokens.push({ token, done }),
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

function juteSession(enforcedSchemes?: ReadonlySet<string>) {
  const replica = fakeReplica();
  const stream = recordingStream<Uint8Array>();
  const deps = enforcedSchemes === undefined ? replica.deps : { ...replica.deps, enforcedSchemes };
  const session = new ConnectionSession(deps, new JuteSessionCodec(), stream, "10.0.0.1", [], [{ scheme: "ip", id: "10.0.0.1" }]);
  return { replica, stream, session };
}

function establish(session: { receive(frame: Uint8Array): void }, replica: ReturnType<typeof fakeReplica>, readOnly = false, connect = connectFrame()): void {
  session.receive(connect);
  replica.opening.door.established(0x1234n, 4_000, new Uint8Array(16).fill(7), readOnly);
}

describe("the server's connection session under the ZooKeeper door's codec", () => {
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

  test("a sasl packet's token goes to the door; what follows waits for its answer (zxid 0), and runs with the ids it gave", () => {
    const { replica, stream, session } = juteSession();
    establish(session, replica);
    session.receive(requestFrame(6, OpCode.sasl, jute.GetSASLRequest, { token: new Uint8Array([1]) }));
    session.receive(requestFrame(7, OpCode.sync, jute.SyncRequest, { path: "/" }));
    assert.deepEqual(
      stream.tokens.map((t) => [...t.token]),
      [[1]],
    );
    assert.equal(replica.submitted.length, 0, "nothing after the sasl packet runs before its answer");
    stream.tokens[0]!.done({ err: 0, token: new Uint8Array([9]), ids: [{ scheme: "sasl", id: "alice" }], close: false });
    const reader = new JuteReader(unframe(stream.written[1]!));
    assert.deepEqual(jute.ReplyHeader.read(reader), { xid: 6, zxid: 0n, err: 0 });
    assert.deepEqual(jute.SetSASLResponse.read(reader), { token: new Uint8Array([9]) });
    assert.deepEqual(
      replica.submitted.map((s) => s.xid),
      [7],
    );
    assert.ok(session.authInfo.some((id) => id.scheme === "sasl" && id.id === "alice"));
  });

  test("a SASL step that fails and closes is the last answer, and one without a token closes the connection unanswered", () => {
    const { replica, stream, session } = juteSession();
    establish(session, replica);
    session.receive(requestFrame(6, OpCode.sasl, jute.GetSASLRequest, { token: new Uint8Array([1]) }));
    session.receive(requestFrame(7, OpCode.sync, jute.SyncRequest, { path: "/" }));
    stream.tokens[0]!.done({ err: ZkErrorCode.AUTHFAILED, token: new Uint8Array([9]), ids: [], close: true });
    const reader = new JuteReader(unframe(stream.written[1]!));
    assert.deepEqual(jute.ReplyHeader.read(reader), { xid: 6, zxid: 0n, err: ZkErrorCode.AUTHFAILED });
    assert.deepEqual(jute.SetSASLResponse.read(reader), { token: null }, "a failure carries no token");
    assert.deepEqual(stream.ended, { finished: "closed" });
    assert.equal(replica.submitted.length, 0);

    const other = juteSession();
    establish(other.session, other.replica);
    other.session.receive(requestFrame(8, OpCode.sasl, jute.GetSASLRequest, { token: null }));
    assert.deepEqual(other.stream.ended, { refused: "invalid", detail: "a sasl packet without a token" });
    assert.equal(other.stream.written.length, 1);
  });

  test("enforce.auth: without an id of an enforced scheme, a request or a ping is answered SESSIONCLOSEDREQUIRESASLAUTH (zxid 0) and the connection ends; auth packets pass", () => {
    for (const frame of [requestFrame(9, OpCode.getData, jute.GetDataRequest, { path: "/a", watch: false }), requestFrame(Xid.ping, OpCode.ping)]) {
      const { replica, stream, session } = juteSession(new Set(["sasl"]));
      establish(session, replica);
      session.receive(frame);
      const xid = jute.RequestHeader.read(new JuteReader(frame)).xid;
      assert.deepEqual(replyHeader(stream.written[1]!), { xid, zxid: 0n, err: ZkErrorCode.SESSIONCLOSEDREQUIRESASLAUTH });
      assert.deepEqual(stream.ended, { finished: "unauthenticated" });
      assert.equal(replica.submitted.length, 0);
    }
    const { replica, stream, session } = juteSession(new Set(["digest"]));
    establish(session, replica);
    session.receive(requestFrame(Xid.auth, OpCode.auth, jute.AuthPacket, { type: 0, scheme: "digest", auth: new TextEncoder().encode("a:b") }));
    assert.deepEqual(
      replica.submitted.map((s) => s.xid),
      [Xid.auth],
    );
    assert.equal(stream.ended, undefined);
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

describe("the server's connection session under the gRPC door's codec", () => {
  function grpcSession() {
    const replica = fakeReplica();
    const stream = recordingStream<Buffer>();
    const batchable: boolean[] = [];
    const session = new ConnectionSession(
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

  test("a SaslRequest's token goes to the door; what follows waits for its answer (zxid 0, the token in sasl_token), and a failure ends the stream", () => {
    const { replica, stream, session } = grpcSession();
    session.receive(connect(2));
    replica.opening.door.established(1n, 4_000, new Uint8Array(16), false);
    const sasl = decodeClientFrame(
      encodeClientFrame({ frame: { $case: "request", request: { xid: 6, op: { $case: "sasl", sasl: { token: new Uint8Array([1]) } } } } }),
    );
    receiveClientFrame(session, sasl);
    session.receive({ frame: "request", xid: 7, request: { op: "sync", path: "/" } });
    assert.deepEqual(
      stream.tokens.map((t) => [...t.token]),
      [[1]],
    );
    assert.equal(replica.submitted.length, 0, "nothing after the token runs before its answer");
    stream.tokens[0]!.done({ err: 0, token: new Uint8Array([9]), ids: [{ scheme: "sasl", id: "alice" }], close: false });
    const answer = decodeServerFrame(stream.written[1]!);
    assert.ok(answer.frame === "response");
    assert.deepEqual([answer.response.xid, answer.response.zxid, answer.response.err, [...answer.response.saslToken]], [6, 0n, 0, [9]]);
    assert.deepEqual(
      replica.submitted.map((r) => r.xid),
      [7],
    );
    assert.ok(session.authInfo.some((id) => id.scheme === "sasl" && id.id === "alice"));

    receiveClientFrame(session, sasl);
    stream.tokens[1]!.done({ err: ZkErrorCode.AUTHFAILED, token: new Uint8Array([9]), ids: [], close: true });
    const refused = decodeServerFrame(stream.written[2]!);
    assert.ok(refused.frame === "response");
    assert.deepEqual([refused.response.err, refused.response.saslToken.byteLength], [ZkErrorCode.AUTHFAILED, 0], "a failure carries no token");
    assert.deepEqual(stream.ended, { finished: "closed" });
  });

  test("enforce.auth: a request is answered SESSIONCLOSEDREQUIRESASLAUTH and a ping unanswered, and the stream ends", () => {
    for (const [frame, answered] of [
      [{ frame: "request", xid: 3, request: { op: "sync", path: "/" } }, true],
      [{ frame: "ping" }, false],
    ] as const) {
      const replica = fakeReplica();
      const stream = recordingStream<Buffer>();
      const session = new ConnectionSession({ ...replica.deps, enforcedSchemes: new Set(["sasl"]) }, new GrpcSessionCodec(), stream, "10.0.0.1", [], []);
      session.receive(connect(2));
      replica.opening.door.established(1n, 4_000, new Uint8Array(16), false);
      session.receive(frame);
      assert.equal(stream.written.length, answered ? 2 : 1);
      if (answered) {
        const answer = decodeServerFrame(stream.written[1]!);
        assert.ok(answer.frame === "response");
        assert.deepEqual([answer.response.xid, answer.response.err, answer.response.zxid], [3, ZkErrorCode.SESSIONCLOSEDREQUIRESASLAUTH, 0n]);
      }
      assert.deepEqual(stream.ended, { finished: "unauthenticated" });
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

describe("the inbound bounds: a connection at a bound stops being read, nobody is dropped", () => {
  /** An answer every request may have (a header alone). */
  const NONODE_REPLY: Reply = { ...EMPTY_REPLY, err: ZkErrorCode.NONODE };
  const getData = (xid: number) => requestFrame(xid, OpCode.getData, jute.GetDataRequest, { path: "/a", watch: false });

  function boundedSession(inbound: InboundBudget) {
    const replica = fakeReplica(inbound);
    const stream = recordingStream<Uint8Array>();
    const session = new ConnectionSession(replica.deps, new JuteSessionCodec(), stream, "10.0.0.1", [], [{ scheme: "ip", id: "10.0.0.1" }]);
    establish(session, replica);
    return { replica, stream, session };
  }

  test("a connection at its own outstanding count stops being read, holds what its door had already read, and reads on as its answers go out", () => {
    const inbound = new InboundBudget({ ...WIDE_INBOUND, connectionOutstandingMax: 2 });
    const { replica, stream, session } = boundedSession(inbound);
    session.receive(getData(1));
    assert.equal(stream.reading, true, "one outstanding, under the bound of two");
    session.receive(getData(2));
    assert.equal(stream.reading, false, "two outstanding: the door stops reading");
    assert.equal(inbound.pausedConnections, 1);
    session.receive(getData(3)); // the rest of the door's last read
    assert.deepEqual(
      replica.submitted.map((s) => s.xid),
      [1, 2],
      "the third is held, not run",
    );
    session.sendReply(1, NONODE_REPLY);
    assert.deepEqual(
      replica.submitted.map((s) => s.xid),
      [1, 2, 3],
      "an answer brought it under the bound: the held frame ran, in order",
    );
    assert.equal(stream.reading, false, "which brought it back to the bound");
    session.sendReply(2, NONODE_REPLY);
    assert.equal(stream.reading, true, "the next answer lets the door read again");
    assert.equal(stream.ended, undefined, "nobody was dropped");
    assert.equal(inbound.pausedConnections, 0);
  });

  test("a connection stops being read at its own byte bound", () => {
    const inbound = new InboundBudget({ ...WIDE_INBOUND, connectionOutstandingBytesMax: 100_000 });
    const { stream, session } = boundedSession(inbound);
    const big = new Uint8Array(60_000);
    session.receive(requestFrame(1, OpCode.setData, jute.SetDataRequest, { path: "/a", data: big, version: -1 }));
    assert.equal(stream.reading, true, "60 kB outstanding");
    session.receive(requestFrame(2, OpCode.setData, jute.SetDataRequest, { path: "/a", data: big, version: -1 }));
    assert.equal(stream.reading, false, "120 kB outstanding, past 100 kB");
    assert.equal(session.outstanding.count, 2);
    assert.ok(session.outstanding.bytes >= 120_000);
  });

  test("at the server's total bound (ZooKeeper's globalOutstandingLimit), a connection holding its fair share stops being read and one below it is still read", () => {
    const inbound = new InboundBudget({ ...WIDE_INBOUND, globalOutstandingLimit: 6 });
    const storm = boundedSession(inbound);
    const bystander = boundedSession(inbound);
    for (const xid of [1, 2, 3, 4, 5, 6]) storm.session.receive(getData(xid));
    assert.equal(storm.stream.reading, false, "the storm's connection reached the total alone and stopped being read");
    bystander.session.receive(getData(1));
    bystander.session.receive(getData(2));
    assert.deepEqual(
      bystander.replica.submitted.map((s) => s.xid),
      [1, 2],
      "the bystander's requests were read beyond the total: two is below its share of six over two connections",
    );
    assert.equal(bystander.stream.reading, true);
    bystander.session.receive(getData(3));
    assert.equal(bystander.stream.reading, false, "at three it holds its share, and waits for an answer");
    bystander.session.sendReply(1, NONODE_REPLY);
    assert.equal(bystander.stream.reading, true);
    assert.equal(storm.stream.reading, false, "the storm's connection, over its share, waits for its own answers");
    storm.session.sendReply(1, NONODE_REPLY);
    storm.session.sendReply(2, NONODE_REPLY);
    storm.session.sendReply(3, NONODE_REPLY);
    assert.equal(storm.stream.reading, true, "below the total again");
    assert.equal(inbound.count, 5);
  });

  test("the sessions of the connections not being read are listed, for the replica to keep alive while their pings wait unread", () => {
    const inbound = new InboundBudget({ ...WIDE_INBOUND, connectionOutstandingMax: 2 });
    const { session } = boundedSession(inbound);
    session.receive(getData(1));
    assert.deepEqual(inbound.pausedSessionIds(), []);
    session.receive(getData(2));
    assert.deepEqual(inbound.pausedSessionIds(), [0x1234n]);
    session.sendReply(1, NONODE_REPLY);
    assert.deepEqual(inbound.pausedSessionIds(), []);
  });

  test("a connection that ends no longer counts against the server's total", () => {
    const inbound = new InboundBudget(WIDE_INBOUND);
    const { session } = boundedSession(inbound);
    session.receive(getData(1));
    session.receive(getData(2));
    assert.equal(inbound.count, 2);
    session.gone();
    assert.equal(inbound.count, 0);
    assert.equal(inbound.bytes, 0);
  });
});
