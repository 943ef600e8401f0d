/**
 * The SDK's session machine driven purely: inputs in, effects recorded, no socket, no timer, no
 * clock. Each test is one behaviour of a session's life (connect, FIFO answers, loss and resume,
 * credentials and watches first on a new connection, expiry, pings, back-off, close, read-only
 * sessions and the probes for a read-write server).
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { CLIENT_PROTOCOL_VERSION } from "../../src/common/constants.js";
import { ZkErrorCode } from "../../src/common/errors.js";
import type { ClientFrame, ConnectRequest, Request } from "../../gen/client.js";
import type { DecodedConnectResponse, DecodedResponse, DecodedServerFrame, RequestOp } from "../../src/client/codec.js";
import type { SessionEffect, SessionTimer } from "../../src/client/session-io.js";
import { SessionMachine, type SessionOptions } from "../../src/client/session-machine.js";
import { emptyWatchPaths, type WatchPaths } from "../../src/client/watch-registry.js";

type Effect = SessionEffect<string>;

const HOSTS = [
  { host: "10.0.0.1", port: 2181 },
  { host: "10.0.0.2", port: 2181 },
  { host: "10.0.0.3", port: 2181 },
];
const TIMEOUT_MS = 12_000;
const PASSWORD = Buffer.from([1, 2, 3, 4]);
const SYNC: RequestOp = { $case: "sync", sync: { path: "/" } };

/** A machine whose effects land in `effects`; `onEffect` may call back in, as a user's listener does. */
function harness(options: Partial<SessionOptions> = {}, onEffect: (effect: Effect, machine: SessionMachine<string>) => void = () => {}) {
  const effects: Effect[] = [];
  const machine: SessionMachine<string> = new SessionMachine<string>(
    {
      hosts: HOSTS,
      sessionTimeoutMs: TIMEOUT_MS,
      connectTimeoutMs: 30_000,
      sessionId: 0n,
      password: new Uint8Array(0),
      watchedPaths: emptyWatchPaths,
      ...options,
    },
    (effect) => {
      effects.push(effect);
      onEffect(effect, machine);
    },
  );
  /** The effects since the last call, logs left out. */
  const take = (): Effect[] => effects.splice(0).filter((e) => e.type !== "log");
  return { machine, effects, take };
}

function connectAnswer(fields: Partial<DecodedConnectResponse> = {}): DecodedServerFrame {
  return {
    frame: "connect",
    connect: { protocolVersion: 1, timeoutMs: TIMEOUT_MS, sessionId: 77n, password: PASSWORD, err: 0, lastZxid: 0n, serverId: 1, readOnly: false, ...fields },
  };
}

function response(xid: number, zxid: bigint, err = 0): DecodedServerFrame {
  const answer: DecodedResponse = {
    xid,
    zxid,
    err,
    path: "",
    stat: null,
    data: Buffer.alloc(0),
    children: [],
    results: [],
    acl: [],
    number: 0,
    clientInfo: [],
    members: undefined,
    saslToken: Buffer.alloc(0),
  };
  return { frame: "response", response: answer };
}

function frames(effects: Effect[]): ClientFrame[] {
  return effects.flatMap((e) => (e.type === "send" ? [e.frame] : []));
}

function requests(effects: Effect[]): Request[] {
  return frames(effects).flatMap((f) => (f.frame?.$case === "request" ? [f.frame.request] : []));
}

function connectFrame(effects: Effect[]): ConnectRequest {
  const frame = frames(effects).find((f) => f.frame?.$case === "connect")?.frame;
  assert.ok(frame?.$case === "connect", "a connect frame was sent");
  return frame.connect;
}

function opened(effects: Effect[]): { connection: number; host: string }[] {
  return effects.flatMap((e) => (e.type === "open" ? [{ connection: e.connection, host: e.host.host }] : []));
}

function states(effects: Effect[]): string[] {
  return effects.flatMap((e) => (e.type === "state" ? [e.state] : []));
}

function armed(effects: Effect[], timer: SessionTimer): number[] {
  return effects.flatMap((e) => (e.type === "armTimer" && e.timer === timer ? [e.delayMs] : []));
}

function outcomes(effects: Effect[]): string[] {
  return effects.flatMap((e) => (e.type === "answered" ? [`answered ${e.token}`] : e.type === "failed" ? [`failed ${e.token} ${e.code}`] : []));
}

/** Loses `connection`, reconnects on the next one and answers its connect: the requests the machine sends first. */
function reconnectFrom(machine: SessionMachine<string>, take: () => Effect[], connection: number): Request[] {
  machine.lost(connection, { serverBehind: false, message: undefined });
  machine.timerFired("reconnect");
  machine.receive(connection + 1, connectAnswer());
  return requests(take());
}

/** Started and accepted by the first host as session 77; effects so far discarded. */
function openSession(options: Partial<SessionOptions> = {}, onEffect?: (effect: Effect, machine: SessionMachine<string>) => void) {
  const h = harness(options, onEffect);
  h.machine.start();
  h.machine.receive(1, connectAnswer());
  h.take();
  return h;
}

test("start opens a connection to the first host and sends a connect frame for a new session", () => {
  const { machine, take } = harness();
  machine.start();
  const effects = take();
  assert.deepEqual(opened(effects), [{ connection: 1, host: "10.0.0.1" }]);
  assert.deepEqual(armed(effects, "connect"), [30_000]);
  assert.deepEqual(armed(effects, "attempt"), [4_000], "session timeout / hosts");
  assert.deepEqual(connectFrame(effects), {
    protocolVersion: CLIENT_PROTOCOL_VERSION,
    lastZxidSeen: 0n,
    timeoutMs: TIMEOUT_MS,
    sessionId: 0n,
    password: new Uint8Array(0),
    readOnlyAllowed: false,
  });
  assert.equal(machine.connected, false);
});

test("a connect answer opens the session: connected state, its id, password and timeout, the tick armed and the connect timers cancelled", () => {
  const { machine, take } = harness();
  machine.start();
  take();
  machine.receive(1, connectAnswer({ timeoutMs: 6_000 }));
  const effects = take();
  assert.deepEqual(states(effects), ["connected"]);
  assert.equal(machine.connected, true);
  assert.equal(machine.sessionId, 77n);
  assert.deepEqual([...machine.password], [1, 2, 3, 4]);
  assert.equal(machine.negotiatedTimeoutMs, 6_000);
  assert.deepEqual(armed(effects, "tick"), [500], "12 ticks per negotiated timeout");
  const cancelled = effects.flatMap((e) => (e.type === "cancelTimer" ? [e.timer] : []));
  assert.deepEqual(cancelled.sort(), ["attempt", "connect"]);
});

test("requests get xids counting up from 1 and answers are handed back in FIFO order, raising the last zxid seen", () => {
  const { machine, take } = openSession();
  machine.submit(SYNC, "a");
  machine.submit({ $case: "exists", exists: { path: "/x", watch: false } }, "b");
  machine.submit(SYNC, "c");
  assert.deepEqual(
    requests(take()).map((r) => [r.xid, r.op?.$case]),
    [
      [1, "sync"],
      [2, "exists"],
      [3, "sync"],
    ],
  );
  machine.receive(1, response(1, 10n));
  machine.receive(1, { frame: "batch", frames: [response(2, 12n), response(3, 11n)] });
  assert.deepEqual(outcomes(take()), ["answered a", "answered b", "answered c"]);
  assert.equal(machine.lastZxidSeen, 12n);
});

test("a watch event is handed on and raises the last zxid seen", () => {
  const { machine, take } = openSession();
  machine.receive(1, { frame: "event", event: { type: 3, path: "/w", zxid: 40n } });
  assert.deepEqual(take(), [{ type: "event", event: { type: 3, path: "/w", zxid: 40n } }]);
  assert.equal(machine.lastZxidSeen, 40n);
});

test("a response whose xid is not the oldest in flight is a protocol error: every request in flight fails CONNECTIONLOSS and the connection closes", () => {
  const { machine, take } = openSession();
  machine.submit(SYNC, "a");
  machine.submit(SYNC, "b");
  take();
  machine.receive(1, { frame: "batch", frames: [response(2, 5n), response(1, 5n)] });
  const effects = take();
  assert.deepEqual(outcomes(effects), ["failed a CONNECTIONLOSS", "failed b CONNECTIONLOSS"], "the frame after the bad one is never read");
  assert.ok(effects.some((e) => e.type === "close" && e.connection === 1));
  assert.deepEqual(states(effects), ["disconnected"]);
  assert.equal(machine.connected, false);
});

test("a frame of no kind this client knows is a protocol error: every request in flight fails CONNECTIONLOSS and the connection closes", () => {
  const { machine, take } = openSession();
  machine.submit(SYNC, "a");
  take();
  machine.receive(1, { frame: undefined });
  const effects = take();
  assert.deepEqual(outcomes(effects), ["failed a CONNECTIONLOSS"]);
  assert.ok(effects.some((e) => e.type === "close" && e.connection === 1));
  assert.deepEqual(states(effects), ["disconnected"]);
});

test("a response or event before the connect answer is a protocol error that drops the attempt", () => {
  const { machine, take } = harness();
  machine.start();
  take();
  machine.receive(1, response(1, 1n));
  const effects = take();
  assert.ok(effects.some((e) => e.type === "close" && e.connection === 1));
  assert.deepEqual(states(effects), [], "never open, so never disconnected");
  assert.deepEqual(armed(effects, "reconnect"), [0]);
});

test("on connection loss every request in flight fails CONNECTIONLOSS, and the next attempt resumes the session on the next host with its id, password and last zxid seen", () => {
  const { machine, take } = openSession();
  machine.submit(SYNC, "a");
  machine.receive(1, response(1, 21n));
  machine.submit(SYNC, "b");
  machine.submit(SYNC, "c");
  take();
  machine.lost(1, { serverBehind: false, message: "going away" });
  const lost = take();
  assert.deepEqual(outcomes(lost), ["failed b CONNECTIONLOSS", "failed c CONNECTIONLOSS"]);
  assert.deepEqual(states(lost), ["disconnected"]);
  assert.deepEqual(armed(lost, "reconnect"), [0], "the first retry is at once");
  machine.timerFired("reconnect");
  const attempt = take();
  assert.deepEqual(opened(attempt), [{ connection: 2, host: "10.0.0.2" }]);
  const resume = connectFrame(attempt);
  assert.equal(resume.sessionId, 77n);
  assert.deepEqual([...resume.password], [1, 2, 3, 4]);
  assert.equal(resume.lastZxidSeen, 21n);
  machine.receive(2, connectAnswer());
  assert.deepEqual(states(take()), ["reconnected"]);
});

test("on reconnect the accepted credentials go out first, then setWatches with the last zxid, before what a reconnected listener sends", () => {
  const watches: WatchPaths = { ...emptyWatchPaths(), dataWatches: ["/d"], persistentWatches: ["/p"] };
  const { machine, take } = openSession({ watchedPaths: () => watches }, (effect, m) => {
    if (effect.type === "state" && effect.state === "reconnected") m.submit(SYNC, "after");
  });
  const addAuth = (scheme: string, auth: string, token: string, err = 0): void => {
    machine.submit({ $case: "addAuth", addAuth: { scheme, auth: Buffer.from(auth) } }, token);
    const [request] = requests(take());
    machine.receive(1, response(request!.xid, 30n, err));
  };
  addAuth("digest", "bob:secret", "bob");
  addAuth("bogus", "refused", "bogus", ZkErrorCode.AUTHFAILED);
  addAuth("digest", "alice:pw", "alice");
  addAuth("digest", "bob:secret", "bob again");
  take();
  machine.lost(1, { serverBehind: false, message: undefined });
  machine.timerFired("reconnect");
  machine.receive(2, connectAnswer());
  const sent = requests(take()).map(({ op }) =>
    op?.$case === "addAuth"
      ? `addAuth ${op.addAuth.scheme} ${Buffer.from(op.addAuth.auth).toString()}`
      : op?.$case === "setWatches"
        ? `setWatches ${op.setWatches.relativeZxid} ${op.setWatches.dataWatches.join(",")} ${op.setWatches.persistentWatches.join(",")}`
        : op?.$case,
  );
  assert.deepEqual(sent, ["addAuth digest bob:secret", "addAuth digest alice:pw", "setWatches 30 /d /p", "sync"]);
});

test("credentials and setWatches sent on reconnect are answered inside the machine, never handed to the caller", () => {
  const watches: WatchPaths = { ...emptyWatchPaths(), childWatches: ["/c"] };
  const { machine, take } = openSession({ watchedPaths: () => watches });
  machine.submit({ $case: "addAuth", addAuth: { scheme: "digest", auth: Buffer.from("bob:pw") } }, "auth");
  machine.receive(1, response(1, 1n));
  take();
  const [auth, setWatches] = reconnectFrom(machine, take, 1);
  machine.receive(2, response(auth!.xid, 1n));
  machine.receive(2, response(setWatches!.xid, 1n, ZkErrorCode.NOAUTH));
  assert.deepEqual(outcomes(take()), []);
  assert.equal(machine.connected, true, "a failed setWatches keeps the connection");
});

test("a replayed credential's answer does not raise the last zxid seen, so a setWatches cut off before its answer asks again from the same zxid", () => {
  // Simulator seed 12252: the credential's answer carried the server's newer zxid, the stream broke
  // before the setWatches' event arrived, and the next setWatches asked only for later changes.
  const watches: WatchPaths = { ...emptyWatchPaths(), dataWatches: ["/k"] };
  const { machine, take } = openSession({ watchedPaths: () => watches });
  machine.submit({ $case: "addAuth", addAuth: { scheme: "digest", auth: Buffer.from("bob:pw") } }, "auth");
  machine.receive(1, response(1, 30n));
  take();
  const reconnect = (connection: number): Request[] => reconnectFrom(machine, take, connection);
  const [auth, setWatches] = reconnect(1);
  assert.equal(setWatches?.op?.$case === "setWatches" && setWatches.op.setWatches.relativeZxid, 30n);
  machine.receive(2, response(auth!.xid, 90n));
  assert.equal(machine.lastZxidSeen, 30n);
  const [, again] = reconnect(2);
  assert.equal(again?.op?.$case === "setWatches" && again.op.setWatches.relativeZxid, 30n);
});

test("events fired by a setWatches do not raise the last zxid seen until its answer; then the highest of them does", () => {
  // Simulator seed 11126: one of the re-registered watches' events arrived, the stream broke before
  // the others and the setWatches' answer, and the next setWatches asked only for later changes.
  const watches: WatchPaths = { ...emptyWatchPaths(), dataWatches: ["/a", "/b"] };
  const { machine, take } = openSession({ watchedPaths: () => watches });
  machine.submit(SYNC, "s");
  machine.receive(1, response(1, 30n));
  take();
  const event = (zxid: bigint): DecodedServerFrame => ({ frame: "event", event: { type: 3, path: "/a", zxid } });
  const [first] = reconnectFrom(machine, take, 1);
  machine.receive(2, event(80n));
  assert.equal(machine.lastZxidSeen, 30n, "held back while the setWatches is unanswered");
  const [again] = reconnectFrom(machine, take, 2);
  assert.equal(first?.op?.$case === "setWatches" && again?.op?.$case === "setWatches" && again.op.setWatches.relativeZxid, 30n);
  machine.receive(3, event(80n));
  machine.receive(3, event(90n));
  machine.receive(3, response(again!.xid, 85n));
  assert.equal(machine.lastZxidSeen, 90n, "the answer completes the set: the highest zxid seen counts");
});

test("a credential the new server refuses is not sent on later connections", () => {
  const { machine, take } = openSession();
  machine.submit({ $case: "addAuth", addAuth: { scheme: "digest", auth: Buffer.from("bob:pw") } }, "auth");
  machine.receive(1, response(1, 1n));
  const reconnect = (connection: number): Request[] => reconnectFrom(machine, take, connection);
  take();
  const [replayed] = reconnect(1);
  assert.equal(replayed?.op?.$case, "addAuth");
  machine.receive(2, response(replayed.xid, 1n, ZkErrorCode.AUTHFAILED));
  assert.deepEqual(reconnect(2), []);
});

test("a SESSIONEXPIRED connect answer after a drop expires the session for good: expired state, no more attempts, requests refused", () => {
  const { machine, take } = openSession();
  machine.lost(1, { serverBehind: false, message: undefined });
  machine.timerFired("reconnect");
  take();
  machine.receive(2, connectAnswer({ err: ZkErrorCode.SESSIONEXPIRED }));
  const effects = take();
  assert.deepEqual(states(effects), ["expired"]);
  assert.ok(effects.some((e) => e.type === "close" && e.connection === 2));
  assert.deepEqual(armed(effects, "reconnect"), []);
  assert.equal(machine.lifecycle, "expired");
  assert.throws(() => machine.submit(SYNC, "late"), /submit only while connected/);
});

test("resuming a session that is gone fails the connect with SESSIONEXPIRED and announces nothing", () => {
  const { machine, take } = harness({ sessionId: 1234n, password: new Uint8Array([9]) });
  machine.start();
  assert.equal(connectFrame(take()).sessionId, 1234n);
  machine.receive(1, connectAnswer({ err: ZkErrorCode.SESSIONEXPIRED }));
  const effects = take();
  const failed = effects.find((e) => e.type === "connectFailed");
  assert.ok(failed?.type === "connectFailed");
  assert.equal(failed.state, "expired");
  assert.equal(failed.error.code, "SESSIONEXPIRED");
  assert.deepEqual(states(effects), []);
});

test("a server that answers another session id on resume is treated as expiry", () => {
  const { machine, take } = openSession();
  machine.lost(1, { serverBehind: false, message: undefined });
  machine.timerFired("reconnect");
  take();
  machine.receive(2, connectAnswer({ sessionId: 78n }));
  assert.deepEqual(states(take()), ["expired"]);
  assert.equal(machine.sessionId, 77n);
});

test("a refused connect answer or a server behind us moves on to the next host", () => {
  const { machine, take } = harness();
  machine.start();
  machine.receive(1, connectAnswer({ err: ZkErrorCode.NOTREADONLY }));
  machine.timerFired("reconnect");
  machine.lost(2, { serverBehind: true, message: "client has seen a newer zxid" });
  machine.timerFired("reconnect");
  const effects = take();
  assert.deepEqual(
    opened(effects).map((o) => o.host),
    ["10.0.0.1", "10.0.0.2", "10.0.0.3"],
  );
  assert.deepEqual(armed(effects, "reconnect"), [0, 50]);
});

test("an attempt that gets no answer in time is dropped for the next host", () => {
  const { machine, take } = harness({ hosts: HOSTS.slice(0, 1), sessionTimeoutMs: 600 });
  machine.start();
  assert.deepEqual(armed(take(), "attempt"), [600], "one host: the whole timeout, but at least min(timeout, 1 s)");
  machine.timerFired("attempt");
  const effects = take();
  assert.ok(effects.some((e) => e.type === "close" && e.connection === 1));
  assert.deepEqual(armed(effects, "reconnect"), [0]);
});

test("an idle connection pings after 4 ticks without sending and is dropped after 8 ticks without receiving", () => {
  const { machine, take } = openSession();
  const pingsPerTick: number[] = [];
  for (let tick = 1; tick <= 8; tick++) {
    machine.timerFired("tick");
    pingsPerTick.push(frames(take()).filter((f) => f.frame?.$case === "ping").length);
  }
  // Tick 1 clears the "sent/received since" marks of the connect exchange; idleness counts from tick 2.
  assert.deepEqual(pingsPerTick, [0, 0, 0, 0, 1, 0, 0, 0]);
  assert.equal(machine.connected, true);
  machine.timerFired("tick");
  const effects = take();
  assert.deepEqual(states(effects), ["disconnected"]);
  assert.ok(effects.some((e) => e.type === "close" && e.connection === 1));
});

test("a pong keeps an idle connection alive, and each tick arms the next", () => {
  const { machine, take } = openSession();
  for (let tick = 0; tick < 20; tick++) {
    machine.receive(1, { frame: "pong", pong: { zxid: 0n } });
    machine.timerFired("tick");
    assert.deepEqual(armed(take(), "tick"), [1_000]);
  }
  assert.equal(machine.connected, true);
});

test("back-off delays grow from 0 by doubling from 50 ms, cap at 1 s, and start over after a successful connect", () => {
  const { machine, take } = harness();
  machine.start();
  const delays: number[] = [];
  for (let connection = 1; connection <= 8; connection++) {
    machine.lost(connection, { serverBehind: false, message: undefined });
    delays.push(...armed(take(), "reconnect"));
    machine.timerFired("reconnect");
  }
  assert.deepEqual(delays, [0, 50, 100, 200, 400, 800, 1_000, 1_000]);
  machine.receive(9, connectAnswer());
  machine.lost(9, { serverBehind: false, message: undefined });
  assert.deepEqual(armed(take(), "reconnect"), [0]);
});

test("the connect timeout before any server answered gives up: connect fails CONNECTIONLOSS, the attempt closes, nothing is retried", () => {
  const { machine, take } = harness();
  machine.start();
  take();
  machine.timerFired("connect");
  const effects = take();
  const failed = effects.find((e) => e.type === "connectFailed");
  assert.ok(failed?.type === "connectFailed");
  assert.equal(failed.state, "closed");
  assert.equal(failed.error.code, "CONNECTIONLOSS");
  assert.ok(effects.some((e) => e.type === "close" && e.connection === 1));
  assert.equal(machine.lifecycle, "closed");
  machine.timerFired("reconnect");
  assert.deepEqual(take(), [], "a stale timer does nothing");
});

test("close sends the close request after those in flight and finishes on its answer; the rest of the connection is ignored", () => {
  const { machine, take } = openSession();
  machine.submit(SYNC, "before");
  machine.close();
  const sent = take();
  assert.deepEqual(
    requests(sent).map((r) => [r.xid, r.op?.$case]),
    [
      [1, "sync"],
      [2, "close"],
    ],
  );
  assert.deepEqual(armed(sent, "close"), [TIMEOUT_MS]);
  assert.equal(machine.lifecycle, "closing");
  machine.receive(1, response(1, 3n));
  machine.receive(1, response(2, 4n));
  const effects = take();
  assert.deepEqual(outcomes(effects), ["answered before"]);
  assert.deepEqual(
    effects.filter((e) => e.type === "closed"),
    [{ type: "closed", announce: true }],
  );
  assert.ok(effects.some((e) => e.type === "close" && e.connection === 1));
  assert.equal(machine.lifecycle, "closed");
  machine.receive(1, { frame: "event", event: { type: 1, path: "/late", zxid: 9n } });
  machine.lost(1, { serverBehind: false, message: undefined });
  assert.deepEqual(take(), []);
});

test("close without an answer finishes when the session timeout passes, and close while disconnected finishes at once", () => {
  const open = openSession();
  open.machine.close();
  open.take();
  open.machine.timerFired("close");
  assert.deepEqual(
    open.take().filter((e) => e.type === "closed"),
    [{ type: "closed", announce: true }],
  );

  const down = openSession();
  down.machine.lost(1, { serverBehind: false, message: undefined });
  down.take();
  down.machine.close();
  const effects = down.take();
  assert.deepEqual(requests(effects), []);
  assert.ok(effects.some((e) => e.type === "cancelTimer" && e.timer === "reconnect"));
  assert.deepEqual(
    effects.filter((e) => e.type === "closed"),
    [{ type: "closed", announce: true }],
  );
});

test("a protocol 2 server gets the frames after its connect answer as batchable; a protocol 1 server never", () => {
  const v1 = openSession();
  v1.machine.submit(SYNC, "a");
  assert.deepEqual(
    v1.take().flatMap((e) => (e.type === "send" ? [e.batchable] : [])),
    [false],
  );
  const v2 = harness();
  v2.machine.start();
  v2.machine.receive(1, connectAnswer({ protocolVersion: 2 }));
  v2.machine.submit(SYNC, "a");
  assert.deepEqual(
    v2.take().flatMap((e) => (e.type === "send" ? [e.batchable] : [])),
    [false, true],
  );
});

test("the same inputs give the same effects", () => {
  const run = (): Effect[] => {
    const { machine, effects } = harness();
    machine.start();
    machine.receive(1, connectAnswer());
    machine.submit(SYNC, "a");
    machine.timerFired("tick");
    machine.lost(1, { serverBehind: false, message: undefined });
    machine.timerFired("reconnect");
    machine.receive(2, connectAnswer());
    machine.close();
    return effects;
  };
  assert.deepEqual(run(), run());
});

// ---- read-only sessions (canBeReadOnly)

/** The connect frames sent on `connection`, as [connection, frame]. */
function connectFramesOn(effects: Effect[]): { connection: number; connect: ConnectRequest }[] {
  return effects.flatMap((e) =>
    e.type === "send" && e.frame.frame?.$case === "connect" ? [{ connection: e.connection, connect: e.frame.frame.connect }] : [],
  );
}

function closed(effects: Effect[]): number[] {
  return effects.flatMap((e) => (e.type === "close" ? [e.connection] : []));
}

/** A canBeReadOnly session the first host served read-only as session 77; effects so far discarded. */
function readOnlySession(options: Partial<SessionOptions> = {}, onEffect?: (effect: Effect, machine: SessionMachine<string>) => void) {
  const h = harness({ canBeReadOnly: true, ...options }, onEffect);
  h.machine.start();
  h.machine.receive(1, connectAnswer({ readOnly: true }));
  h.take();
  return h;
}

test("a client that allows read-only says so in its connect frame, and one that does not never does", () => {
  const allowing = harness({ canBeReadOnly: true });
  allowing.machine.start();
  assert.equal(connectFrame(allowing.take()).readOnlyAllowed, true);
  const plain = harness();
  plain.machine.start();
  assert.equal(connectFrame(plain.take()).readOnlyAllowed, false);
});

test("a read-only answer connects the session read-only: connected state, requests taken, a probe for a read-write server armed", () => {
  const { machine, take } = harness({ canBeReadOnly: true });
  machine.start();
  take();
  machine.receive(1, connectAnswer({ readOnly: true }));
  const effects = take();
  assert.deepEqual(states(effects), ["connected"]);
  assert.equal(machine.connected, true);
  assert.equal(machine.readOnly, true);
  assert.equal(machine.sessionId, 77n);
  assert.deepEqual(armed(effects, "probe"), [100]);
  assert.equal(machine.submit(SYNC, "a"), 1, "the server, not the client, refuses what read-only mode cannot do");
});

test("a read-write answer arms no probe", () => {
  const { machine, take } = harness({ canBeReadOnly: true });
  machine.start();
  machine.receive(1, connectAnswer());
  assert.equal(machine.readOnly, false);
  assert.deepEqual(armed(take(), "probe"), []);
});

test("a session only ever served read-only asks for a new session on its next connection, and takes the new id without expiry", () => {
  const { machine, take } = readOnlySession();
  machine.lost(1, { serverBehind: false, message: undefined });
  machine.timerFired("reconnect");
  const attempt = take();
  assert.deepEqual(opened(attempt), [{ connection: 2, host: "10.0.0.2" }]);
  const connect = connectFrame(attempt);
  assert.equal(connect.sessionId, 0n, "the read-only server alone knew session 77");
  assert.deepEqual([...connect.password], []);
  assert.equal(connect.readOnlyAllowed, true);
  machine.receive(2, connectAnswer({ sessionId: 90n }));
  const effects = take();
  assert.deepEqual(states(effects), ["reconnected"]);
  assert.equal(machine.lifecycle, "active");
  assert.equal(machine.sessionId, 90n);
  assert.equal(machine.readOnly, false);
});

test("a session that has been read-write is resumed after a read-only spell, with its id and password", () => {
  const { machine, take } = openSession({ canBeReadOnly: true });
  machine.lost(1, { serverBehind: false, message: undefined });
  machine.timerFired("reconnect");
  machine.receive(2, connectAnswer({ readOnly: true }));
  assert.equal(machine.readOnly, true);
  take();
  machine.lost(2, { serverBehind: false, message: undefined });
  machine.timerFired("reconnect");
  const connect = connectFrame(take());
  assert.equal(connect.sessionId, 77n);
  assert.deepEqual([...connect.password], [1, 2, 3, 4]);
});

test("a session given to connect is resumed even before any server has answered for it", () => {
  const { machine, take } = harness({ canBeReadOnly: true, sessionId: 1234n, password: new Uint8Array([9]) });
  machine.start();
  machine.receive(1, connectAnswer({ sessionId: 1234n, readOnly: true }));
  machine.lost(1, { serverBehind: false, message: undefined });
  machine.timerFired("reconnect");
  assert.equal(connectFramesOn(take()).at(-1)?.connect.sessionId, 1234n);
});

test("a probe asks the next host, without accepting read-only, for the session; a refusal closes it and the next probe backs off to another host", () => {
  const { machine, take } = readOnlySession();
  machine.timerFired("probe");
  const first = take();
  assert.deepEqual(opened(first), [{ connection: 2, host: "10.0.0.2" }]);
  const probe = connectFramesOn(first);
  assert.deepEqual(
    probe.map((p) => [p.connection, p.connect.sessionId, p.connect.readOnlyAllowed]),
    [[2, 0n, false]],
  );
  assert.deepEqual(armed(first, "probe"), [4_000], "the wait for its answer");
  assert.equal(machine.readOnly, true, "the read-only connection serves on meanwhile");

  machine.lost(2, { serverBehind: false, message: "server is read-only and the client does not accept that" });
  const refused = take();
  assert.deepEqual(closed(refused), [2]);
  assert.deepEqual(armed(refused, "probe"), [200]);
  assert.deepEqual(states(refused), []);
  machine.timerFired("probe");
  assert.deepEqual(opened(take()), [{ connection: 3, host: "10.0.0.3" }]);
  machine.timerFired("probe");
  assert.deepEqual(armed(take(), "probe"), [400], "a probe that gets no answer in time counts as a refusal");
  machine.timerFired("probe");
  assert.deepEqual(opened(take()), [{ connection: 4, host: "10.0.0.2" }], "the read-only server itself is skipped");
});

test("probe delays double from 100 ms up to a minute", () => {
  const { machine, take } = readOnlySession();
  const delays: number[] = [100];
  for (let connection = 2; connection <= 13; connection++) {
    machine.timerFired("probe");
    take();
    machine.lost(connection, { serverBehind: false, message: undefined });
    delays.push(...armed(take(), "probe"));
  }
  assert.deepEqual(delays, [100, 200, 400, 800, 1_600, 3_200, 6_400, 12_800, 25_600, 51_200, 60_000, 60_000, 60_000]);
});

test("a probe answered read-write moves the session there: the read-only connection closes, its reads fail CONNECTIONLOSS, and the session goes on read-write", () => {
  const watches: WatchPaths = { ...emptyWatchPaths(), dataWatches: ["/d"] };
  const { machine, take } = readOnlySession({ watchedPaths: () => watches });
  machine.submit({ $case: "getData", getData: { path: "/d", watch: false } }, "read");
  machine.timerFired("probe");
  take();
  machine.receive(2, connectAnswer({ sessionId: 90n, protocolVersion: 2 }));
  const effects = take();
  assert.deepEqual(closed(effects), [1]);
  assert.deepEqual(outcomes(effects), ["failed read CONNECTIONLOSS"]);
  assert.deepEqual(states(effects), ["disconnected", "reconnected"]);
  assert.deepEqual(
    requests(effects).map((r) => r.op?.$case),
    ["setWatches"],
    "watches are set again on the new connection",
  );
  assert.ok(effects.every((e) => e.type !== "send" || e.connection === 2));
  assert.deepEqual(armed(effects, "probe"), []);
  assert.equal(machine.readOnly, false);
  assert.equal(machine.sessionId, 90n);
  assert.equal(machine.submit(SYNC, "after"), 3);
  assert.ok(
    take().every((e) => e.type !== "send" || e.connection === 2),
    "requests go to the read-write server",
  );
  // Later connections resume the session a quorum now holds.
  machine.lost(2, { serverBehind: false, message: undefined });
  machine.timerFired("reconnect");
  const next = take();
  assert.deepEqual(opened(next), [{ connection: 3, host: "10.0.0.3" }], "reconnects go on from the host after the one that took the session");
  assert.equal(connectFrame(next).sessionId, 90n);
});

test("after a move the frames batched behind the probe's connect answer are the session's", () => {
  const { machine, take } = readOnlySession();
  machine.timerFired("probe");
  take();
  machine.receive(2, { frame: "batch", frames: [connectAnswer({ sessionId: 90n }), { frame: "event", event: { type: 1, path: "/x", zxid: 40n } }] });
  const effects = take();
  assert.deepEqual(states(effects), ["disconnected", "reconnected"]);
  assert.ok(effects.some((e) => e.type === "event"));
  assert.equal(machine.lastZxidSeen, 40n);
});

test("a probe of a session a quorum held resumes it, and its expiry there expires the session", () => {
  const { machine, take } = openSession({ canBeReadOnly: true });
  machine.lost(1, { serverBehind: false, message: undefined });
  machine.timerFired("reconnect");
  machine.receive(2, connectAnswer({ readOnly: true }));
  machine.timerFired("probe");
  const probe = take();
  assert.deepEqual(
    connectFramesOn(probe).map((p) => [p.connection, p.connect.sessionId, p.connect.readOnlyAllowed]),
    [
      [2, 77n, true],
      [3, 77n, false],
    ],
  );
  machine.receive(3, connectAnswer({ err: ZkErrorCode.SESSIONEXPIRED, timeoutMs: 0 }));
  const effects = take();
  assert.deepEqual(states(effects), ["expired"]);
  assert.deepEqual(closed(effects).sort(), [2, 3]);
  assert.equal(machine.lifecycle, "expired");
});

test("a probe answered read-only, or for another session, is no move", () => {
  const { machine, take } = openSession({ canBeReadOnly: true });
  machine.lost(1, { serverBehind: false, message: undefined });
  machine.timerFired("reconnect");
  machine.receive(2, connectAnswer({ readOnly: true }));
  machine.timerFired("probe");
  take();
  machine.receive(3, connectAnswer({ readOnly: true }));
  machine.timerFired("probe");
  machine.receive(4, connectAnswer({ sessionId: 78n }));
  const effects = take();
  assert.deepEqual(states(effects), []);
  assert.deepEqual(closed(effects), [3, 4]);
  assert.equal(machine.readOnly, true);
  assert.equal(machine.sessionId, 77n);
});

test("losing the read-only connection ends its probe and reconnects as usual, read-only allowed", () => {
  const { machine, take } = readOnlySession();
  machine.timerFired("probe");
  take();
  machine.lost(1, { serverBehind: false, message: undefined });
  const lost = take();
  assert.deepEqual(closed(lost).sort(), [1, 2]);
  assert.deepEqual(states(lost), ["disconnected"]);
  machine.receive(2, connectAnswer());
  assert.deepEqual(states(take()), [], "a late answer to the ended probe is ignored");
  machine.timerFired("reconnect");
  assert.equal(connectFrame(take()).readOnlyAllowed, true);
});

test("closing a read-only session ends its probe and arms no more", () => {
  const { machine, take } = readOnlySession();
  machine.timerFired("probe");
  take();
  machine.close();
  const effects = take();
  assert.deepEqual(closed(effects), [2]);
  assert.deepEqual(
    requests(effects).map((r) => r.op?.$case),
    ["close"],
  );
  machine.timerFired("probe");
  assert.deepEqual(opened(take()), []);
});

test("a disconnected listener that closes the session during a move stops it there", () => {
  const { machine, take } = readOnlySession({}, (effect, m) => {
    if (effect.type === "state" && effect.state === "disconnected") m.close();
  });
  machine.timerFired("probe");
  take();
  machine.receive(2, connectAnswer({ sessionId: 90n }));
  const effects = take();
  assert.deepEqual(states(effects), ["disconnected"]);
  assert.deepEqual(closed(effects).sort(), [1, 2]);
  assert.equal(machine.lifecycle, "closed");
});

test("a lone host is probed itself", () => {
  const { machine, take } = readOnlySession({ hosts: HOSTS.slice(0, 1) });
  machine.timerFired("probe");
  assert.deepEqual(opened(take()), [{ connection: 2, host: "10.0.0.1" }]);
});

/** The sasl answer to `xid`: OK with `token`, or `err`. */
function saslAnswer(xid: number, token: Uint8Array, err = 0): DecodedServerFrame {
  const frame = response(xid, 0n, err);
  assert.ok(frame.frame === "response");
  return { frame: "response", response: { ...frame.response, saslToken: Buffer.from(token) } };
}

function saslSteps(effects: Effect[]): (string | null)[] {
  return effects.flatMap((e) => (e.type === "saslStep" ? [e.challenge === null ? null : Buffer.from(e.challenge).toString()] : []));
}

test("with SASL, a connection logs in before it opens: each token is answered before the next, and nothing else is sent meanwhile", () => {
  const { machine, take } = harness({ sasl: true });
  machine.start();
  take();
  machine.receive(1, connectAnswer());
  let effects = take();
  assert.deepEqual(states(effects), [], "not connected before the login");
  assert.deepEqual(saslSteps(effects), [null], "the host is asked for the initial response");
  assert.equal(machine.connected, false);
  assert.equal(machine.sessionId, 77n, "the session exists: a reconnect would resume it");

  machine.saslEvaluated(1, { token: new Uint8Array(0), complete: false });
  const [initial] = requests(take());
  assert.equal(initial?.op?.$case, "sasl");
  machine.receive(1, saslAnswer(initial.xid, Buffer.from("challenge")));
  assert.deepEqual(saslSteps(take()), ["challenge"]);
  machine.saslEvaluated(1, { token: Buffer.from("response"), complete: false });
  const [second] = requests(take());
  assert.ok(second?.op?.$case === "sasl" && Buffer.from(second.op.sasl.token).toString() === "response");
  machine.receive(1, saslAnswer(second.xid, Buffer.from("rspauth")));
  assert.deepEqual(saslSteps(take()), ["rspauth"]);
  machine.saslEvaluated(1, { token: null, complete: true });
  effects = take();
  assert.deepEqual(states(effects), ["connected"]);
  assert.equal(machine.connected, true);
  const cancelled = effects.flatMap((e) => (e.type === "cancelTimer" ? [e.timer] : []));
  assert.ok(cancelled.includes("attempt"), "the attempt's timer ran through the login");
});

test("a mechanism complete with a last token (GSSAPI's layer choice) ends the login when that token is answered OK", () => {
  const { machine, take } = harness({ sasl: true });
  machine.start();
  machine.receive(1, connectAnswer());
  take();
  machine.saslEvaluated(1, { token: Buffer.from("last"), complete: true });
  const [last] = requests(take());
  machine.receive(1, saslAnswer(last!.xid, new Uint8Array(0)));
  const effects = take();
  assert.deepEqual(saslSteps(effects), [], "nothing more is asked of the mechanism");
  assert.deepEqual(states(effects), ["connected"]);
});

test("a refused SASL login fails the connect with AUTHFAILED; the session does not reconnect and is over (authFailed)", () => {
  for (const refuse of [
    (machine: SessionMachine<string>, xid: number) => machine.receive(1, saslAnswer(xid, new Uint8Array(0), ZkErrorCode.AUTHFAILED)),
    (machine: SessionMachine<string>, xid: number) => machine.receive(1, saslAnswer(xid, new Uint8Array(0), ZkErrorCode.SESSIONCLOSEDREQUIRESASLAUTH)),
    (machine: SessionMachine<string>) => machine.saslEvaluated(1, { failed: "the server's rspauth is wrong" }),
  ]) {
    const { machine, take } = harness({ sasl: true });
    machine.start();
    machine.receive(1, connectAnswer());
    machine.saslEvaluated(1, { token: new Uint8Array(0), complete: false });
    const [initial] = requests(take());
    refuse(machine, initial!.xid);
    const effects = take();
    const failed = effects.find((e) => e.type === "connectFailed");
    assert.ok(failed?.type === "connectFailed" && failed.state === "authFailed" && failed.error.code === "AUTHFAILED");
    assert.deepEqual(armed(effects, "reconnect"), [], "no reconnect");
    assert.equal(machine.lifecycle, "authFailed");
    assert.ok(effects.some((e) => e.type === "close" && e.connection === 1));
  }
});

test("after a session has connected, a refused login on a new connection is the authFailed state", () => {
  const { machine, take } = harness({ sasl: true });
  machine.start();
  machine.receive(1, connectAnswer());
  machine.saslEvaluated(1, { token: null, complete: true });
  assert.deepEqual(states(take()), ["connected"]);
  machine.lost(1, { serverBehind: false, message: undefined });
  machine.timerFired("reconnect");
  machine.receive(2, connectAnswer());
  assert.deepEqual(saslSteps(take()), [null], "the new connection logs in again, before priming");
  machine.saslEvaluated(2, { failed: "refused" });
  assert.deepEqual(states(take()), ["authFailed"]);
  assert.equal(machine.lifecycle, "authFailed");
});

test("a SASL step for a connection that is gone is ignored", () => {
  const { machine, take } = harness({ sasl: true });
  machine.start();
  machine.receive(1, connectAnswer());
  machine.lost(1, { serverBehind: false, message: undefined });
  take();
  machine.saslEvaluated(1, { token: Buffer.from("late"), complete: false });
  assert.deepEqual(requests(take()), []);
  assert.equal(machine.lifecycle, "active");
});
