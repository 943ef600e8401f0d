/**
 * The SDK against a tiny fake Corral server (real grpc-js on 127.0.0.1, scripted by each test):
 * xid matching, connection loss, resuming a session with its credentials and setWatches first, expiry, FAILED_PRECONDITION
 * failover, connect timeout, close, pings. No assertion depends on timing.
 */
import assert from "node:assert/strict";
import { CLIENT_PROTOCOL_VERSION } from "../../src/common/constants.js";
import { test } from "node:test";
import * as grpc from "@grpc/grpc-js";

import { Client, op, ZkError, ZkErrorCode, type ClientState, type WatchedEvent } from "../../src/index.js";
import { ZkMultiError } from "../../src/client/ops.js";
import { corralServiceDefinition } from "../../src/protocol/client-wire.js";
import type { ClientFrame, ConnectRequest, Encodable, Request, ServerFrame, WireStat } from "../helpers/proto-loader-wire.js";

const TIMEOUT = { timeout: 20_000 };
/** Long enough that no ping is due during a test, unless the test asks for one. */
const QUIET_TIMEOUT_MS = 60_000;

const STAT: Encodable<WireStat> = {
  czxid: "5",
  mzxid: "6",
  ctime: "1000",
  mtime: "2000",
  version: 1,
  cversion: 2,
  aversion: 0,
  ephemeralOwner: "0",
  dataLength: 3,
  numChildren: 0,
  pzxid: "5",
};

type ServerCall = grpc.ServerDuplexStream<ClientFrame, Encodable<ServerFrame>>;

/** One client stream as the fake server sees it. */
class FakeStream {
  /** Every message the client sent, as it arrived (a batch stays one entry here). */
  readonly messages: ClientFrame[] = [];
  private readonly frames: ClientFrame[] = [];
  private readonly waiters: ((frame: ClientFrame | undefined) => void)[] = [];
  private goneResolve!: () => void;
  /** Resolves when the stream is over (ended, cancelled or failed), from either side. */
  readonly gone = new Promise<void>((resolve) => (this.goneResolve = resolve));
  isGone = false;

  constructor(private readonly call: ServerCall) {
    const deliver = (frame: ClientFrame): void => {
      if (frame.frame === "batch") {
        for (const inner of frame.batch.frames) deliver(inner);
        return;
      }
      const waiter = this.waiters.shift();
      if (waiter) waiter(frame);
      else this.frames.push(frame);
    };
    call.on("data", (frame: ClientFrame) => {
      this.messages.push(frame);
      deliver(frame);
    });
    const onGone = (): void => {
      if (this.isGone) return;
      this.isGone = true;
      this.goneResolve();
      for (const waiter of this.waiters.splice(0)) waiter(undefined);
    };
    for (const event of ["end", "cancelled", "error", "close", "finish"]) call.on(event, onGone);
  }

  /** The next frame the client sent (pings included); rejects if the stream ends first. */
  async next(): Promise<ClientFrame> {
    const queued = this.frames.shift();
    if (queued) return queued;
    if (this.isGone) throw new Error("stream is gone");
    const frame = await new Promise<ClientFrame | undefined>((resolve) => this.waiters.push(resolve));
    if (!frame) throw new Error("stream is gone");
    return frame;
  }

  async nextConnect(): Promise<ConnectRequest> {
    const frame = await this.next();
    assert.equal(frame.frame, "connect");
    return frame.connect;
  }

  /** The next request, skipping pings. */
  async nextRequest(): Promise<Request> {
    for (;;) {
      const frame = await this.next();
      if (frame.frame === "ping") continue;
      assert.equal(frame.frame, "request", `expected a request, got ${frame.frame}`);
      return frame.request;
    }
  }

  send(frame: Encodable<ServerFrame>): void {
    this.call.write(frame);
  }

  /** Reads the connect frame and accepts it. */
  async accept(
    session: { sessionId?: string; password?: Uint8Array; timeoutMs?: number; protocolVersion?: number; readOnly?: boolean } = {},
  ): Promise<ConnectRequest> {
    const connect = await this.nextConnect();
    this.send({
      frame: "connect",
      connect: {
        protocolVersion: session.protocolVersion ?? 1,
        timeoutMs: session.timeoutMs ?? connect.timeoutMs,
        sessionId: session.sessionId ?? "77",
        password: session.password ?? new Uint8Array([1, 2, 3, 4]),
        err: 0,
        lastZxid: "0",
        serverId: 1,
        readOnly: session.readOnly ?? false,
      },
    });
    return connect;
  }

  reply(xid: number, fields: Encodable<Omit<ServerFrame & { frame: "response" }, "frame">["response"]> = {}): void {
    this.send({ frame: "response", response: { zxid: "1", err: 0, ...fields, xid } });
  }

  event(type: number, path: string, zxid: string): void {
    this.send({ frame: "event", event: { type, path, zxid } });
  }

  /** Ends the stream with status OK, as a server closing a connection. */
  end(): void {
    this.call.end();
  }

  /** Ends the stream with an error status. */
  fail(code: grpc.status, details = "test"): void {
    this.call.emit("error", { code, details });
  }
}

class FakeServer {
  private readonly streams: FakeStream[] = [];
  private readonly waiters: ((stream: FakeStream) => void)[] = [];
  readonly all: FakeStream[] = [];

  private constructor(
    private readonly server: grpc.Server,
    readonly port: number,
  ) {}

  static async start(): Promise<FakeServer> {
    const server = new grpc.Server();
    // Set once the server is bound; streams opened before then wait in `early`.
    let fake: FakeServer | undefined = undefined;
    const early: ServerCall[] = [];
    server.addService(corralServiceDefinition(), {
      Session: (call: ServerCall) => {
        if (fake) fake.onStream(call);
        else early.push(call);
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    fake = new FakeServer(server, port);
    for (const call of early) fake.onStream(call);
    return fake;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  private onStream(call: ServerCall): void {
    const stream = new FakeStream(call);
    this.all.push(stream);
    const waiter = this.waiters.shift();
    if (waiter) waiter(stream);
    else this.streams.push(stream);
  }

  /** The next stream a client opens. */
  nextStream(): Promise<FakeStream> {
    const queued = this.streams.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  stop(): void {
    this.server.forceShutdown();
  }
}

/** Connects a client through `server`'s first stream, which `script` then drives. */
async function connected(
  server: FakeServer,
  options: Parameters<typeof Client.connect>[1] = {},
  connectString = server.address,
): Promise<{ client: Client; stream: FakeStream; connect: ConnectRequest; states: ClientState[] }> {
  const clientPromise = Client.connect(connectString, { sessionTimeoutMs: QUIET_TIMEOUT_MS, ...options });
  const stream = await server.nextStream();
  const connect = await stream.accept();
  const client = await clientPromise;
  const states: ClientState[] = [];
  client.on("state", (s) => states.push(s));
  return { client, stream, connect, states };
}

function nextState(client: Client, wanted: ClientState): Promise<void> {
  return new Promise((resolve) => {
    const listener = (s: ClientState): void => {
      if (s !== wanted) return;
      client.off("state", listener);
      resolve();
    };
    client.on("state", listener);
  });
}

async function shutdown(client: Client | undefined, ...servers: FakeServer[]): Promise<void> {
  const closing = client?.close();
  for (const server of servers) server.stop();
  await closing;
}

async function rejectsWithCode(promise: Promise<unknown>, code: string): Promise<ZkError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof ZkError, `expected a ZkError, got ${String(err)}`);
    assert.equal(err.code, code);
    return err;
  }
  assert.fail(`expected ${code}, but it resolved`);
}

/** Marks a promise as handled now (it is awaited later, possibly after it rejected). */
function later<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array): string => new TextDecoder().decode(b);

test("a new session sends protocol version, zero session, zero zxid and the requested timeout", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, connect } = await connected(server, { sessionTimeoutMs: 12_345 });
  try {
    assert.equal(connect.protocolVersion, CLIENT_PROTOCOL_VERSION);
    assert.equal(connect.sessionId, "0");
    assert.equal(connect.lastZxidSeen, "0");
    assert.equal(connect.timeoutMs, 12_345);
    assert.equal(connect.password.length, 0);
    assert.equal(client.state, "connected");
    assert.equal(client.sessionId, 77n);
    assert.deepEqual([...client.sessionPassword], [1, 2, 3, 4]);
    assert.equal(client.negotiatedTimeoutMs, 12_345);
  } finally {
    await shutdown(client, server);
  }
});

test(
  "protocol 1 server: one message per frame; protocol 2: a burst of requests is one batch, and a batch of answers and events is handled in order",
  TIMEOUT,
  async () => {
    const server = await FakeServer.start();
    try {
      // The fake answers protocol 1 by default: no batches, ever.
      const old = await connected(server);
      await Promise.all([
        old.client.exists("/a"),
        old.client.exists("/b"),
        (async () => {
          for (let i = 0; i < 2; i++) old.stream.reply((await old.stream.nextRequest()).xid, { stat: STAT });
        })(),
      ]);
      assert.deepEqual(
        old.stream.messages.map((m) => m.frame),
        ["connect", "request", "request"],
      );
      const oldClosed = old.client.close();

      const clientPromise = Client.connect(server.address, { sessionTimeoutMs: QUIET_TIMEOUT_MS });
      const stream = await server.nextStream();
      await stream.accept({ protocolVersion: 2 });
      const client = await clientPromise;
      try {
        // Answers are recorded as the client settles them (a microtask later), watches as they fire:
        // what must hold is that the answer settled before the watch fired was processed first.
        const order: string[] = [];
        const settled = new Set<string>();
        const answers = ["/q0", "/q1", "/q2", "/q3", "/q4"].map((path) =>
          client.getData(path, { watch: (e) => order.push(`watch ${e.path} after ${[...settled].join(",")}`) }).then(() => settled.add(path)),
        );
        const requests = [];
        for (let i = 0; i < 5; i++) requests.push(await stream.nextRequest());
        const burst = stream.messages.filter((m) => m.frame !== "connect" && !(m.frame === "request" && m.request.op === "close"));
        assert.equal(burst.length, 1, "five requests made in one turn travel as one message");
        assert.equal(burst[0]!.frame, "batch");
        assert.deepEqual(
          requests.map((r) => (r.op === "getData" ? r.getData.path : r.op)),
          ["/q0", "/q1", "/q2", "/q3", "/q4"],
        );
        // Answers for q0..q2, then an event for q0 (its watch was set by the answer before it), then q3, q4: one message.
        const response = (xid: number) => ({ frame: "response" as const, response: { xid, zxid: "5", err: 0, data: new Uint8Array([1]), stat: STAT } });
        stream.send({
          frame: "batch",
          batch: {
            frames: [
              response(requests[0]!.xid),
              response(requests[1]!.xid),
              response(requests[2]!.xid),
              { frame: "event", event: { type: 3, path: "/q0", zxid: "6" } },
              response(requests[3]!.xid),
              response(requests[4]!.xid),
            ],
          },
        });
        await Promise.all(answers);
        assert.deepEqual(order, ["watch /q0 after "], "the event fired once, for the watch its answer set");
        assert.deepEqual([...settled], ["/q0", "/q1", "/q2", "/q3", "/q4"], "answers settle in order");
      } finally {
        await shutdown(client, server);
        await oldClosed;
      }
    } finally {
      server.stop();
    }
  },
);

test("responses are matched to requests by xid in order, xids counting up from 1", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server);
  try {
    const getData = client.getData("/a");
    const exists = client.exists("/b");
    const children = client.getChildren("/c");
    const created = client.create("/d", "x", { mode: "ephemeral-sequential" });
    const requests = [await stream.nextRequest(), await stream.nextRequest(), await stream.nextRequest(), await stream.nextRequest()];
    assert.deepEqual(
      requests.map((r) => r.xid),
      [1, 2, 3, 4],
    );
    assert.deepEqual(
      requests.map((r) => r.op),
      ["getData", "exists", "getChildren", "create"],
    );
    assert.deepEqual(requests[0]!.op === "getData" && requests[0]!.getData, { path: "/a", watch: false });
    const create = requests[3]!.op === "create" ? requests[3]!.create : assert.fail("not a create");
    assert.equal(create.path, "/d");
    assert.equal(create.mode, 3);
    assert.equal(text(create.data), "x");
    stream.reply(1, { zxid: "10", data: bytes("data-a"), stat: STAT });
    stream.reply(2, { zxid: "11", stat: { ...STAT, version: 9 } });
    stream.reply(3, { zxid: "12", children: ["x", "y"], stat: STAT });
    stream.reply(4, { zxid: "13", path: "/d0000000004", stat: STAT });
    const a = await getData;
    assert.equal(text(a.data), "data-a");
    assert.equal(a.stat.mzxid, 6n);
    assert.equal((await exists)?.version, 9);
    assert.deepEqual(await children, ["x", "y"]);
    assert.equal(await created, "/d0000000004");
    assert.equal(client.lastZxidSeen, 13n);
  } finally {
    await shutdown(client, server);
  }
});

test("server error codes become ZkErrors; exists on a missing node is null; a failed multi carries its results", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server);
  try {
    const created = later(client.create("/a"));
    const exists = client.exists("/missing");
    const multi = later(client.multi([op.create("/x"), op.check("/y", 3), op.delete("/z")]));
    const okMulti = client.multi([op.delete("/z")]);
    stream.reply((await stream.nextRequest()).xid, { err: ZkErrorCode.NODEEXISTS });
    stream.reply((await stream.nextRequest()).xid, { err: ZkErrorCode.NONODE });
    stream.reply((await stream.nextRequest()).xid, {
      err: ZkErrorCode.BADVERSION,
      results: [{ err: 0 }, { err: ZkErrorCode.BADVERSION }, { err: ZkErrorCode.RUNTIMEINCONSISTENCY }],
    });
    stream.reply((await stream.nextRequest()).xid, { results: [{ err: 0 }] });
    const err = await rejectsWithCode(created, "NODEEXISTS");
    assert.equal(err.path, "/a");
    assert.equal(await exists, null);
    const multiErr = await rejectsWithCode(multi, "BADVERSION");
    assert.ok(multiErr instanceof ZkMultiError);
    assert.equal(multiErr.failedIndex, 1);
    assert.deepEqual(
      multiErr.results.map((r) => (r.type === "error" ? r.code : r.type)),
      ["OK", "BADVERSION", "RUNTIMEINCONSISTENCY"],
    );
    assert.deepEqual(await okMulti, [{ type: "delete" }]);
  } finally {
    await shutdown(client, server);
  }
});

test("invalid paths fail fast with BADARGUMENTS and send nothing", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server);
  try {
    await rejectsWithCode(client.getData("no-slash"), "BADARGUMENTS");
    await rejectsWithCode(client.create("/a/"), "BADARGUMENTS");
    await rejectsWithCode(client.exists("/a//b"), "BADARGUMENTS");
    await rejectsWithCode(client.multi([op.delete("/ok"), op.delete("/bad/")]), "BADARGUMENTS");
    await rejectsWithCode(client.exists("/a", { watch: "nope" as never }), "BADARGUMENTS");
    // The first request the server sees is the valid one sent after, with xid 1.
    const sync = client.sync("/ok");
    const request = await stream.nextRequest();
    assert.equal(request.op, "sync");
    assert.equal(request.xid, 1);
    stream.reply(request.xid);
    await sync;
  } finally {
    await shutdown(client, server);
  }
});

test("a response with an unexpected xid fails the oldest request and drops the connection", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server);
  try {
    const first = later(client.getData("/a"));
    const disconnected = nextState(client, "disconnected");
    await stream.nextRequest();
    stream.reply(99, { stat: STAT });
    await rejectsWithCode(first, "CONNECTIONLOSS");
    await disconnected;
    await stream.gone;
  } finally {
    await shutdown(client, server);
  }
});

test("in-flight requests fail with CONNECTIONLOSS when the server drops the stream", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream, states } = await connected(server);
  try {
    const one = later(client.getData("/a"));
    const two = later(client.setData("/b", "v"));
    await stream.nextRequest();
    await stream.nextRequest();
    stream.fail(grpc.status.UNAVAILABLE, "going away");
    await rejectsWithCode(one, "CONNECTIONLOSS");
    await rejectsWithCode(two, "CONNECTIONLOSS");
    assert.equal(states[0], "disconnected");
  } finally {
    await shutdown(client, server);
  }
});

test("after a drop the client resumes its session with its last zxid and sends setWatches first", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server, {}, `${server.address}/app`);
  try {
    const fired: WatchedEvent[] = [];
    const dataWatch = (e: WatchedEvent): void => void fired.push(e);
    const existWatch = (e: WatchedEvent): void => void fired.push(e);
    const childWatch = (e: WatchedEvent): void => void fired.push(e);
    const unusedWatch = (e: WatchedEvent): void => void fired.push(e);

    const d = client.getData("/d", { watch: dataWatch });
    const e = client.exists("/e", { watch: existWatch });
    const c = client.getChildren("/c", { watch: childWatch });
    const refused = later(client.exists("/secret", { watch: unusedWatch }));
    const wirePaths: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await stream.nextRequest();
      wirePaths.push(r.op === "getData" ? r.getData.path : r.op === "exists" ? r.exists.path : r.op === "getChildren" ? r.getChildren.path : "?");
      assert.equal(r.op === "getData" ? r.getData.watch : r.op === "exists" ? r.exists.watch : r.op === "getChildren" ? r.getChildren.watch : false, true);
    }
    assert.deepEqual(wirePaths, ["/app/d", "/app/e", "/app/c", "/app/secret"]);
    stream.reply(1, { zxid: "10", stat: STAT, data: bytes("d") });
    stream.reply(2, { zxid: "11", err: ZkErrorCode.NONODE });
    stream.reply(3, { zxid: "12", children: [] });
    stream.reply(4, { zxid: "9", err: ZkErrorCode.NOAUTH });
    await d;
    assert.equal(await e, null);
    await c;
    await rejectsWithCode(refused, "NOAUTH");
    // An event nobody watches still advances lastZxidSeen.
    stream.event(3, "/app/elsewhere", "15");
    const sync = client.sync("/");
    const syncRequest = await stream.nextRequest();
    assert.equal(syncRequest.op === "sync" && syncRequest.sync.path, "/app");
    stream.reply(syncRequest.xid, { zxid: "14" });
    await sync;
    assert.equal(client.lastZxidSeen, 15n);

    const disconnected = nextState(client, "disconnected");
    const reconnected = nextState(client, "reconnected");
    let sentFromListener: Promise<void> | undefined;
    client.on("state", (s) => {
      if (s === "reconnected") sentFromListener = client.sync("/after");
    });
    stream.end();
    await disconnected;

    const second = await server.nextStream();
    const resume = await second.accept({ sessionId: "77", password: new Uint8Array([1, 2, 3, 4]) });
    assert.equal(resume.sessionId, "77");
    assert.deepEqual([...resume.password], [1, 2, 3, 4]);
    assert.equal(resume.lastZxidSeen, "15");
    await reconnected;
    assert.equal(client.state, "reconnected");

    const setWatches = await second.nextRequest();
    assert.equal(setWatches.op, "setWatches");
    assert.deepEqual(setWatches.op === "setWatches" && setWatches.setWatches, {
      relativeZxid: "15",
      dataWatches: ["/app/d"],
      existWatches: ["/app/e"],
      childWatches: ["/app/c"],
      persistentWatches: [],
      persistentRecursiveWatches: [],
    });
    const afterRequest = await second.nextRequest();
    assert.equal(afterRequest.op === "sync" && afterRequest.sync.path, "/app/after");
    assert.ok(afterRequest.xid > setWatches.xid);
    second.reply(setWatches.xid, { zxid: "15" });
    second.reply(afterRequest.xid, { zxid: "15" });
    await sentFromListener;

    // The re-registered watches still fire, with chroot-stripped paths, once.
    second.event(3, "/app/d", "16");
    second.event(1, "/app/e", "17");
    second.event(4, "/app/c", "18");
    second.event(4, "/app/c", "19");
    const sync2 = client.sync("/");
    second.reply((await second.nextRequest()).xid, { zxid: "19" });
    await sync2;
    assert.deepEqual(fired, [
      { type: "NodeDataChanged", path: "/d", zxid: 16n },
      { type: "NodeCreated", path: "/e", zxid: 17n },
      { type: "NodeChildrenChanged", path: "/c", zxid: 18n },
    ]);
  } finally {
    await shutdown(client, server);
  }
});

test("a watch event is delivered before the answer of a request sent after it", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server);
  try {
    const order: string[] = [];
    const first = client.getData("/a", { watch: (e) => order.push(`event ${e.type}`) });
    stream.reply((await stream.nextRequest()).xid, { stat: STAT });
    await first;
    const second = client.getData("/a").then(() => order.push("answer"));
    const request = await stream.nextRequest();
    stream.event(3, "/a", "20");
    stream.reply(request.xid, { zxid: "20", stat: STAT });
    await second;
    assert.deepEqual(order, ["event NodeDataChanged", "answer"]);
  } finally {
    await shutdown(client, server);
  }
});

test("a throwing watcher does not break the session and is reported on 'error'", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server);
  try {
    const errors: unknown[] = [];
    client.on("error", (err) => errors.push(err));
    const fired: string[] = [];
    const a = client.exists("/a", {
      watch: () => {
        throw new Error("boom");
      },
    });
    const b = client.exists("/a", { watch: (e) => fired.push(e.path) });
    stream.reply((await stream.nextRequest()).xid, { stat: STAT });
    stream.reply((await stream.nextRequest()).xid, { stat: STAT });
    await Promise.all([a, b]);
    stream.event(2, "/a", "30");
    const after = client.sync("/");
    stream.reply((await stream.nextRequest()).xid, { zxid: "30" });
    await after;
    assert.deepEqual(fired, ["/a"]);
    assert.equal(errors.length, 1);
    assert.equal((errors[0] as Error).message, "boom");
    assert.equal(client.state, "connected");
  } finally {
    await shutdown(client, server);
  }
});

test("requests made while disconnected fail at once with CONNECTIONLOSS and are never sent", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server);
  try {
    const disconnected = nextState(client, "disconnected");
    stream.fail(grpc.status.UNAVAILABLE);
    await disconnected;
    const second = await server.nextStream();
    const connect = await second.nextConnect(); // held: not answered yet
    assert.equal(connect.sessionId, "77");
    await rejectsWithCode(client.getData("/while-down"), "CONNECTIONLOSS");
    const reconnected = nextState(client, "reconnected");
    second.send({ frame: "connect", connect: { timeoutMs: QUIET_TIMEOUT_MS, sessionId: "77", password: new Uint8Array([1, 2, 3, 4]) } });
    await reconnected;
    const ok = client.getData("/after");
    const request = await second.nextRequest();
    assert.equal(request.op === "getData" && request.getData.path, "/after");
    second.reply(request.xid, { stat: STAT });
    await ok;
  } finally {
    await shutdown(client, server);
  }
});

test("SESSIONEXPIRED on reconnect expires the client for good and drops its watchers", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream, states } = await connected(server);
  try {
    let fired = 0;
    const watched = client.getData("/w", { watch: () => fired++ });
    stream.reply((await stream.nextRequest()).xid, { stat: STAT });
    await watched;
    const expired = nextState(client, "expired");
    stream.fail(grpc.status.UNAVAILABLE);
    const second = await server.nextStream();
    await second.nextConnect();
    second.send({ frame: "connect", connect: { err: ZkErrorCode.SESSIONEXPIRED } });
    await expired;
    assert.deepEqual(states, ["disconnected", "expired"]);
    assert.equal(client.state, "expired");
    await rejectsWithCode(client.getData("/w"), "SESSIONEXPIRED");
    await rejectsWithCode(client.create("/x"), "SESSIONEXPIRED");
    await second.gone;
    // No further attempts: the next stream the server sees would be a bug. close() still works.
    await client.close();
    assert.equal(server.all.length, 2);
    assert.equal(fired, 0);
  } finally {
    await shutdown(client, server);
  }
});

test("Client.connect resuming an unknown session rejects with SESSIONEXPIRED", TIMEOUT, async () => {
  const server = await FakeServer.start();
  try {
    const attempt = Client.connect(server.address, { sessionId: 1234n, password: new Uint8Array([9]), sessionTimeoutMs: QUIET_TIMEOUT_MS });
    const stream = await server.nextStream();
    const connect = await stream.nextConnect();
    assert.equal(connect.sessionId, "1234");
    assert.deepEqual([...connect.password], [9]);
    stream.send({ frame: "connect", connect: { err: ZkErrorCode.SESSIONEXPIRED } });
    await rejectsWithCode(attempt, "SESSIONEXPIRED");
  } finally {
    server.stop();
  }
});

test("Client.connect resumes a session whose id has the top bit set, sent as the same signed 64-bit id", TIMEOUT, async () => {
  const server = await FakeServer.start();
  try {
    const sessionId = -(2n ** 63n) + 5n;
    const attempt = later(Client.connect(server.address, { sessionId, password: new Uint8Array([9]), sessionTimeoutMs: QUIET_TIMEOUT_MS }));
    const stream = await server.nextStream();
    const connect = await stream.nextConnect();
    assert.equal(connect.sessionId, "-9223372036854775803");
    stream.send({ frame: "connect", connect: { err: ZkErrorCode.SESSIONEXPIRED } });
    await rejectsWithCode(attempt, "SESSIONEXPIRED");
  } finally {
    server.stop();
  }
});

test("Client.connect refuses a sessionId outside 64 bits with BADARGUMENTS", async () => {
  const password = new Uint8Array([9]);
  await rejectsWithCode(Client.connect("127.0.0.1:1", { sessionId: 2n ** 63n, password }), "BADARGUMENTS");
  await rejectsWithCode(Client.connect("127.0.0.1:1", { sessionId: -(2n ** 63n) - 1n, password }), "BADARGUMENTS");
});

test("FAILED_PRECONDITION from a server behind the client moves on to the next host", TIMEOUT, async () => {
  const behind = await FakeServer.start();
  const current = await FakeServer.start();
  let client: Client | undefined;
  try {
    const attempt = Client.connect(`${behind.address},${current.address}`, { shuffleHosts: false, sessionTimeoutMs: QUIET_TIMEOUT_MS });
    const refused = await behind.nextStream();
    await refused.nextConnect();
    refused.fail(grpc.status.FAILED_PRECONDITION, "client has seen a newer zxid");
    const stream = await current.nextStream();
    await stream.accept();
    client = await attempt;
    assert.equal(client.state, "connected");
    const sync = client.sync("/");
    stream.reply((await stream.nextRequest()).xid);
    await sync;

    // Reconnecting: round-robin wraps to the refusing host, then the good one, same session.
    const states: ClientState[] = [];
    client.on("state", (s) => states.push(s));
    const reconnected = nextState(client, "reconnected");
    stream.fail(grpc.status.UNAVAILABLE);
    const again = await behind.nextStream();
    const refusedResume = await again.nextConnect();
    assert.equal(refusedResume.sessionId, "77");
    again.fail(grpc.status.FAILED_PRECONDITION, "still behind");
    const resumed = await current.nextStream();
    const resume = await resumed.accept();
    assert.equal(resume.sessionId, "77");
    await reconnected;
    assert.deepEqual(states, ["disconnected", "reconnected"]);
  } finally {
    await shutdown(client, behind, current);
  }
});

test("connect rejects with CONNECTIONLOSS when no server answers in time, and cleans up its stream", TIMEOUT, async () => {
  const server = await FakeServer.start();
  try {
    const attempt = Client.connect(server.address, { sessionTimeoutMs: 60_000, connectTimeoutMs: 300 });
    const stream = await server.nextStream();
    await stream.nextConnect(); // never answered
    await rejectsWithCode(attempt, "CONNECTIONLOSS");
    await stream.gone;
  } finally {
    server.stop();
  }
});

test("close answers in-flight requests first, then the session ends and later requests fail SESSIONEXPIRED", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream, states } = await connected(server);
  try {
    const before = client.getData("/a");
    const closing = client.close();
    await rejectsWithCode(client.getData("/b"), "SESSIONEXPIRED");
    const first = await stream.nextRequest();
    const closeRequest = await stream.nextRequest();
    assert.equal(first.op, "getData");
    assert.equal(closeRequest.op, "close");
    stream.reply(first.xid, { stat: STAT, data: bytes("last") });
    stream.reply(closeRequest.xid);
    stream.end();
    assert.equal(text((await before).data), "last");
    await closing;
    assert.deepEqual(states, ["closed"]);
    assert.equal(client.state, "closed");
    await stream.gone;
    await rejectsWithCode(client.exists("/c"), "SESSIONEXPIRED");
    await client.close(); // idempotent
  } finally {
    await shutdown(client, server);
  }
});

test("an idle client pings, and a server that goes silent is abandoned for a new stream", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server, { sessionTimeoutMs: 600 });
  try {
    const ping = await stream.next();
    assert.equal(ping.frame, "ping");
    // The server never answers: within 2/3 of the timeout the client gives up on this stream...
    const disconnected = nextState(client, "disconnected");
    await disconnected;
    await stream.gone;
    // ...and resumes the session elsewhere (here: the same server, a new stream).
    const second = await server.nextStream();
    const resume = await second.nextConnect();
    assert.equal(resume.sessionId, "77");
  } finally {
    await shutdown(client, server);
  }
});

test("a pong keeps an idle connection alive", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream, states } = await connected(server, { sessionTimeoutMs: 1_200 });
  try {
    // Answer three pings: more than a full session timeout of idleness without a disconnect.
    for (let i = 0; i < 3; i++) {
      const frame = await stream.next();
      assert.equal(frame.frame, "ping");
      stream.send({ frame: "pong", pong: { zxid: "0" } });
    }
    assert.deepEqual(states, []);
    assert.equal(stream.isGone, false);
  } finally {
    await shutdown(client, server);
  }
});

// ---------------------------------------------------------------------------------------------
// Persistent watches, removeWatches, removeAllWatches (ZooKeeper's addWatch and WatchDeregistration).

/** Sends a request, answers it with `fields`, and returns the request as the server saw it. */
async function answered<T>(
  stream: FakeStream,
  call: Promise<T>,
  fields: Parameters<FakeStream["reply"]>[1] = {},
): Promise<{ request: Request; result: PromiseSettledResult<T> }> {
  const request = await stream.nextRequest();
  stream.reply(request.xid, fields);
  const [result] = await Promise.allSettled([call]);
  return { request, result };
}

/** A sync round trip: every frame the server sent before its answer has been handled. */
async function flush(client: Client, stream: FakeStream): Promise<void> {
  const sync = client.sync("/");
  stream.reply((await stream.nextRequest()).xid, {});
  await sync;
}

function recorder(): { events: string[]; watcher: (e: WatchedEvent) => void } {
  const events: string[] = [];
  return { events, watcher: (e) => void events.push(`${e.type} ${e.path} ${e.zxid}`) };
}

test("addWatch sends the chrooted path and ZooKeeper's mode number, and registers only once the server said yes", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server, {}, `${server.address}/app`);
  try {
    const refused = recorder();
    const { request: first, result } = await answered(stream, client.addWatch("/r", refused.watcher, "persistent-recursive"), { err: ZkErrorCode.NOAUTH });
    assert.deepEqual(first.op === "addWatch" && first.addWatch, { path: "/app/r", mode: 1 });
    assert.equal(result.status === "rejected" && (result.reason as ZkError).code, "NOAUTH");
    const p = recorder();
    const { request: second } = await answered(stream, client.addWatch("/p", p.watcher, "persistent"));
    assert.deepEqual(second.op === "addWatch" && second.addWatch, { path: "/app/p", mode: 0 });
    stream.event(1, "/app/r/x", "20");
    stream.event(3, "/app/p", "21");
    await flush(client, stream);
    assert.deepEqual(refused.events, []);
    assert.deepEqual(p.events, ["NodeDataChanged /p 21"]);
  } finally {
    await shutdown(client, server);
  }
});

test("a persistent watch fires on every event of its node; a recursive one on its subtree, never for NodeChildrenChanged", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server);
  try {
    const p = recorder();
    const r = recorder();
    await answered(stream, client.addWatch("/p", p.watcher, "persistent"));
    await answered(stream, client.addWatch("/r", r.watcher, "persistent-recursive"));
    stream.event(3, "/p", "10");
    stream.event(4, "/p", "11");
    stream.event(3, "/p", "12");
    stream.event(1, "/p/below", "13");
    stream.event(1, "/r", "14");
    stream.event(1, "/r/a/b", "15");
    stream.event(4, "/r/a", "16");
    stream.event(2, "/r/a/b", "17");
    stream.event(3, "/rx", "18");
    await flush(client, stream);
    assert.deepEqual(p.events, ["NodeDataChanged /p 10", "NodeChildrenChanged /p 11", "NodeDataChanged /p 12"]);
    assert.deepEqual(r.events, ["NodeCreated /r 14", "NodeCreated /r/a/b 15", "NodeDeleted /r/a/b 17"]);
  } finally {
    await shutdown(client, server);
  }
});

test("after a drop, setWatches carries the persistent and recursive watches with the last zxid seen", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server, {}, `${server.address}/app`);
  try {
    await answered(
      stream,
      client.addWatch("/p", () => {}, "persistent"),
    );
    await answered(
      stream,
      client.addWatch("/r", () => {}, "persistent-recursive"),
      { zxid: "40" },
    );
    const reconnected = nextState(client, "reconnected");
    stream.end();
    const second = await server.nextStream();
    const resume = await second.accept({ sessionId: "77" });
    assert.equal(resume.lastZxidSeen, "40");
    await reconnected;
    const setWatches = await second.nextRequest();
    assert.deepEqual(setWatches.op === "setWatches" && setWatches.setWatches, {
      relativeZxid: "40",
      dataWatches: [],
      existWatches: [],
      childWatches: [],
      persistentWatches: ["/app/p"],
      persistentRecursiveWatches: ["/app/r"],
    });
    second.reply(setWatches.xid, {});
  } finally {
    await shutdown(client, server);
  }
});

test("removeWatches asks the server with checkWatches; the callback gets its removal event before the call resolves, and nothing after", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server, { sessionTimeoutMs: QUIET_TIMEOUT_MS }, `${server.address}/app`);
  try {
    const order: string[] = [];
    const gone = (e: WatchedEvent): void => void order.push(`gone: ${e.type} ${e.path} ${e.zxid}`);
    const kept = recorder();
    await answered(stream, client.addWatch("/p", gone, "persistent-recursive"));
    await answered(stream, client.addWatch("/p", kept.watcher, "persistent-recursive"));
    const removal = client.removeWatches("/p", gone, "persistent-recursive").then(() => order.push("resolved"));
    const request = await stream.nextRequest();
    assert.deepEqual(request.op === "checkWatches" && request.checkWatches, { path: "/app/p", type: 5 });
    // The answer and a later event in one message: the event must not reach the removed callback.
    stream.send({
      frame: "batch",
      batch: {
        frames: [
          { frame: "response", response: { xid: request.xid, zxid: "50", err: 0 } },
          { frame: "event", event: { type: 3, path: "/app/p/x", zxid: "51" } },
        ],
      },
    });
    await removal;
    assert.deepEqual(order, ["gone: PersistentWatchRemoved /p -1", "resolved"]);
    assert.deepEqual(kept.events, ["NodeDataChanged /p/x 51"]);
  } finally {
    await shutdown(client, server);
  }
});

test("removeAllWatches sends ZooKeeper's removeWatches opcode and tells every callback, one event per kind it lost", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server);
  try {
    const a = recorder();
    const b = recorder();
    await answered(stream, client.getChildren("/n", { watch: a.watcher }), { stat: STAT, children: [] });
    await answered(stream, client.getData("/n", { watch: a.watcher }), { stat: STAT });
    await answered(stream, client.addWatch("/n", b.watcher, "persistent"));
    await answered(stream, client.addWatch("/n/below", b.watcher, "persistent"));
    const { request, result } = await answered(stream, client.removeAllWatches("/n", "any"));
    assert.deepEqual(request.op === "removeWatches" && request.removeWatches, { path: "/n", type: 3 });
    assert.equal(result.status, "fulfilled");
    assert.deepEqual(a.events, ["ChildWatchRemoved /n -1", "DataWatchRemoved /n -1"]);
    assert.deepEqual(b.events, ["PersistentWatchRemoved /n -1"]);
    stream.event(2, "/n", "60");
    stream.event(3, "/n/below", "61");
    await flush(client, stream);
    assert.deepEqual(a.events.length, 2);
    assert.deepEqual(b.events, ["PersistentWatchRemoved /n -1", "NodeDataChanged /n/below 61"]);
  } finally {
    await shutdown(client, server);
  }
});

test("a removal of what this client does not hold is NOWATCHER, asked of nobody", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server);
  try {
    const w = recorder();
    await answered(stream, client.getData("/d", { watch: w.watcher }), { stat: STAT });
    await rejectsWithCode(client.removeWatches("/d", w.watcher, "children"), "NOWATCHER");
    await rejectsWithCode(
      client.removeWatches("/d", () => {}, "data"),
      "NOWATCHER",
    );
    await rejectsWithCode(client.removeAllWatches("/other", "any"), "NOWATCHER");
    await rejectsWithCode(client.removeWatches("/d", w.watcher, "persistent"), "NOWATCHER");
    // The next frame the server sees is this sync: none of the above was sent.
    const sync = client.sync("/");
    const next = await stream.nextRequest();
    assert.equal(next.op, "sync");
    stream.reply(next.xid, {});
    await sync;
  } finally {
    await shutdown(client, server);
  }
});

test("a server error fails a removal and keeps the watch; with local the watch goes anyway", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server);
  try {
    const w = recorder();
    await answered(stream, client.addWatch("/p", w.watcher, "persistent"));
    const { result } = await answered(stream, client.removeWatches("/p", w.watcher, "any"), { err: ZkErrorCode.NOWATCHER });
    assert.equal(result.status === "rejected" && (result.reason as ZkError).code, "NOWATCHER");
    assert.deepEqual(w.events, []);
    stream.event(3, "/p", "70");
    await flush(client, stream);
    assert.deepEqual(w.events, ["NodeDataChanged /p 70"], "still armed");
    const local = await answered(stream, client.removeWatches("/p", w.watcher, "any", true), { err: ZkErrorCode.NOWATCHER });
    assert.equal(local.result.status, "fulfilled");
    assert.deepEqual(w.events, ["NodeDataChanged /p 70", "PersistentWatchRemoved /p -1"]);
  } finally {
    await shutdown(client, server);
  }
});

test("without a connection a removal fails CONNECTIONLOSS, or with local removes here; a lost answer counts as no connection", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server);
  try {
    const w = recorder();
    await answered(stream, client.addWatch("/p", w.watcher, "persistent"));
    await answered(stream, client.getData("/d", { watch: w.watcher }), { stat: STAT });
    // In flight when the connection drops.
    const inFlight = client.removeWatches("/d", w.watcher, "data", true);
    await stream.nextRequest();
    const disconnected = nextState(client, "disconnected");
    stream.end();
    await inFlight;
    await disconnected;
    assert.deepEqual(w.events, ["DataWatchRemoved /d -1"]);
    // Not connected at all.
    await rejectsWithCode(client.removeAllWatches("/p", "persistent"), "CONNECTIONLOSS");
    await client.removeAllWatches("/p", "persistent", true);
    assert.deepEqual(w.events, ["DataWatchRemoved /d -1", "PersistentWatchRemoved /p -1"]);
    // Nothing is left to set again on the next stream.
    const second = await server.nextStream();
    const reconnected = nextState(client, "reconnected");
    await second.accept({ sessionId: "77" });
    await reconnected;
    const sync = client.sync("/");
    const next = await second.nextRequest();
    assert.equal(next.op, "sync", "no setWatches: this client holds no watch");
    second.reply(next.xid, {});
    await sync;
  } finally {
    await shutdown(client, server);
  }
});

test("addWatch, removeWatches and removeAllWatches refuse bad arguments with BADARGUMENTS before sending anything", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server);
  try {
    const w = (): void => {};
    await rejectsWithCode(client.addWatch("bad", w, "persistent"), "BADARGUMENTS");
    await rejectsWithCode(client.addWatch("/a/", w, "persistent"), "BADARGUMENTS");
    await rejectsWithCode(client.addWatch("/a", w, "recursive" as never), "BADARGUMENTS");
    await rejectsWithCode(client.addWatch("/a", w, "toString" as never), "BADARGUMENTS");
    await rejectsWithCode(client.addWatch("/a", undefined as never, "persistent"), "BADARGUMENTS");
    await rejectsWithCode(client.removeWatches("/a", w, "all" as never), "BADARGUMENTS");
    await rejectsWithCode(client.removeWatches("/a", "w" as never, "any"), "BADARGUMENTS");
    await rejectsWithCode(client.removeWatches("/a", w, "any", "yes" as never), "BADARGUMENTS");
    await rejectsWithCode(client.removeAllWatches("a", "any"), "BADARGUMENTS");
    const sync = client.sync("/");
    const next = await stream.nextRequest();
    assert.equal(next.op, "sync");
    stream.reply(next.xid, {});
    await sync;
  } finally {
    await shutdown(client, server);
  }
});

test("addAuthInfo, whoAmI, getACL and setACL travel as ZooKeeper's calls; AUTHFAILED keeps the session", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server, {}, `${server.address}/app`);
  try {
    const auth = client.addAuthInfo("digest", "bob:secret");
    const authRequest = await stream.nextRequest();
    assert.deepEqual(authRequest.op === "addAuth" && { scheme: authRequest.addAuth.scheme, auth: text(authRequest.addAuth.auth) }, {
      scheme: "digest",
      auth: "bob:secret",
    });
    stream.reply(authRequest.xid);
    await auth;

    const refused = later(client.addAuthInfo("bogus", bytes("x")));
    stream.reply((await stream.nextRequest()).xid, { err: ZkErrorCode.AUTHFAILED });
    await rejectsWithCode(refused, "AUTHFAILED");
    assert.equal(client.state, "connected");

    const who = client.whoAmI();
    const whoRequest = await stream.nextRequest();
    assert.equal(whoRequest.op, "whoAmI");
    stream.reply(whoRequest.xid, {
      clientInfo: [
        { authScheme: "ip", user: "127.0.0.1" },
        { authScheme: "digest", user: "bob" },
      ],
    });
    assert.deepEqual(await who, [
      { authScheme: "ip", user: "127.0.0.1" },
      { authScheme: "digest", user: "bob" },
    ]);

    const acl = [{ perms: 31, id: { scheme: "auth", id: "" } }];
    const set = client.setACL("/n", acl, { version: 3 });
    const setRequest = await stream.nextRequest();
    assert.deepEqual(setRequest.op === "setAcl" && setRequest.setAcl, { path: "/app/n", acl, version: 3 });
    stream.reply(setRequest.xid, { stat: { ...STAT, aversion: 4 } });
    assert.equal((await set).aversion, 4);
    const get = client.getACL("/n");
    const getRequest = await stream.nextRequest();
    assert.equal(getRequest.op === "getAcl" && getRequest.getAcl.path, "/app/n");
    stream.reply(getRequest.xid, { stat: STAT, acl: [{ perms: 31, id: { scheme: "digest", id: "bob:x" } }] });
    assert.deepEqual((await get).acl, [{ perms: 31, id: { scheme: "digest", id: "bob:x" } }]);
    const denied = later(client.getACL("/n"));
    stream.reply((await stream.nextRequest()).xid, { err: ZkErrorCode.NOAUTH });
    await rejectsWithCode(denied, "NOAUTH");
  } finally {
    await shutdown(client, server);
  }
});

test("after a drop the accepted credentials are sent again, in order, before setWatches and anything else", TIMEOUT, async () => {
  const server = await FakeServer.start();
  const { client, stream } = await connected(server);
  try {
    const accepted = async (scheme: string, auth: string, err = 0): Promise<void> => {
      const promise = later(client.addAuthInfo(scheme, auth));
      stream.reply((await stream.nextRequest()).xid, { err });
      await promise.catch(() => undefined);
    };
    await accepted("digest", "bob:secret");
    await accepted("bogus", "refused", ZkErrorCode.AUTHFAILED);
    await accepted("digest", "alice:pw");
    await accepted("digest", "bob:secret");
    const watched = client.getData("/w", { watch: () => {} });
    stream.reply((await stream.nextRequest()).xid, { stat: STAT });
    await watched;

    const reconnected = nextState(client, "reconnected");
    let sentFromListener: Promise<unknown> | undefined;
    client.on("state", (s) => {
      if (s === "reconnected") sentFromListener = client.exists("/after");
    });
    stream.end();
    const second = await server.nextStream();
    await second.accept({ sessionId: "77", password: new Uint8Array([1, 2, 3, 4]) });
    await reconnected;
    const sent: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await second.nextRequest();
      sent.push(r.op === "addAuth" ? `${r.addAuth.scheme} ${text(r.addAuth.auth)}` : r.op);
      second.reply(r.xid, { stat: STAT });
    }
    assert.deepEqual(sent, ["digest bob:secret", "digest alice:pw", "setWatches", "exists"], "refused and repeated credentials are not sent again");
    await sentFromListener;
  } finally {
    await shutdown(client, server);
  }
});

test(
  "canBeReadOnly: a read-only server's session reads, its writes fail with the server's NOTREADONLY, and a read-write server found by a probe takes over with a new session",
  TIMEOUT,
  async () => {
    const readOnly = await FakeServer.start();
    const readWrite = await FakeServer.start();
    let client: Client | undefined;
    try {
      const attempt = Client.connect(`${readOnly.address},${readWrite.address}`, {
        shuffleHosts: false,
        sessionTimeoutMs: QUIET_TIMEOUT_MS,
        canBeReadOnly: true,
      });
      const stream = await readOnly.nextStream();
      const connect = await stream.accept({ sessionId: "77", readOnly: true });
      assert.equal(connect.readOnlyAllowed, true);
      client = await attempt;
      assert.equal(client.state, "connected");
      assert.equal(client.readOnly, true);
      const states: ClientState[] = [];
      client.on("state", (s) => states.push(s));
      const watched: WatchedEvent[] = [];

      const read = client.getData("/a", { watch: (e) => watched.push(e) });
      stream.reply((await stream.nextRequest()).xid, { data: bytes("x"), stat: STAT });
      assert.equal(text((await read).data), "x");
      const create = client.create("/b", "y");
      const request = await stream.nextRequest();
      assert.equal(request.op, "create", "the client sends the write: only the server knows it is read-only");
      stream.reply(request.xid, { err: ZkErrorCode.NOTREADONLY });
      await rejectsWithCode(create, "NOTREADONLY");

      // The probe: a connect to the other host that does not accept read-only, for a new session.
      const reconnected = nextState(client, "reconnected");
      const probe = await readWrite.nextStream();
      const probeConnect = await probe.accept({ sessionId: "90", readOnly: false });
      assert.equal(probeConnect.readOnlyAllowed, false);
      assert.equal(probeConnect.sessionId, "0", "a session only a read-only server knew is not resumed");
      await reconnected;
      await stream.gone;
      assert.deepEqual(states, ["disconnected", "reconnected"]);
      assert.equal(client.readOnly, false);
      assert.equal(client.sessionId, 90n);
      const setWatches = await probe.nextRequest();
      assert.equal(setWatches.op, "setWatches");
      assert.ok(setWatches.op === "setWatches" && setWatches.setWatches.dataWatches.includes("/a"));
      probe.reply(setWatches.xid);
      const write = client.create("/b", "y");
      const sent = await probe.nextRequest();
      assert.equal(sent.op, "create");
      probe.reply(sent.xid, { path: "/b" });
      assert.equal(await write, "/b");
    } finally {
      await shutdown(client, readOnly, readWrite);
    }
  },
);

test("Client.connect refuses a canBeReadOnly that is not a boolean with BADARGUMENTS", async () => {
  await rejectsWithCode(Client.connect("127.0.0.1:1", { canBeReadOnly: "yes" as unknown as boolean }), "BADARGUMENTS");
});
