/**
 * updateServerList in the SDK's session machine (ZooKeeper's StaticHostProvider.updateServerList,
 * ZOOKEEPER-1355), driven purely with a scripted random source: whether a session stays or moves,
 * the probabilities of the move, the order in which reconfig mode tries the servers, and — over
 * many simulated clients with a seeded PRNG — that the clients end up spread evenly over the new list.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { ZkErrorCode } from "../../src/common/errors.js";
import type { Request } from "../../gen/client.js";
import type { DecodedConnectResponse, DecodedServerFrame, RequestOp } from "../../src/client/codec.js";
import { shuffled, type HostPort } from "../../src/client/connect-string.js";
import type { SessionEffect } from "../../src/client/session-io.js";
import { SessionMachine, type SessionOptions } from "../../src/client/session-machine.js";
import { emptyWatchPaths } from "../../src/client/watch-registry.js";
import { Prng } from "../sim/prng.js";

type Effect = SessionEffect<string>;

const TIMEOUT_MS = 12_000;
const SYNC: RequestOp = { $case: "sync", sync: { path: "/" } };
const LOST = { serverBehind: false, message: undefined };

/** One server a letter: "abc" is three servers a, b and c, in that order. */
function servers(names: string): HostPort[] {
  return [...names].map((name) => ({ host: name, port: 2181 }));
}

/** A random source that hands out `draws` in order, and fails the test on a draw nobody expected. */
function scripted(draws: number[]): { random: () => number; left: () => number } {
  const queue = draws.slice();
  const random = (): number => {
    const draw = queue.shift();
    if (draw === undefined) throw new Error("a random draw the test did not expect");
    return draw;
  };
  return { random, left: () => queue.length };
}

function connectAnswer(fields: Partial<DecodedConnectResponse> = {}): DecodedServerFrame {
  return {
    frame: "connect",
    connect: {
      protocolVersion: 1,
      timeoutMs: TIMEOUT_MS,
      sessionId: 77n,
      password: Buffer.from([1, 2]),
      err: 0,
      lastZxid: 0n,
      serverId: 1,
      readOnly: false,
      ...fields,
    },
  };
}

function opened(effects: Effect[]): { connection: number; host: string }[] {
  return effects.flatMap((e) => (e.type === "open" ? [{ connection: e.connection, host: e.host.host }] : []));
}

function closed(effects: Effect[]): number[] {
  return effects.flatMap((e) => (e.type === "close" ? [e.connection] : []));
}

function states(effects: Effect[]): string[] {
  return effects.flatMap((e) => (e.type === "state" ? [e.state] : []));
}

function requests(effects: Effect[]): Request[] {
  return effects.flatMap((e) => (e.type === "send" && e.frame.frame?.$case === "request" ? [e.frame.frame.request] : []));
}

function connectSessionIds(effects: Effect[]): bigint[] {
  return effects.flatMap((e) => (e.type === "send" && e.frame.frame?.$case === "connect" ? [e.frame.frame.connect.sessionId] : []));
}

/**
 * A session on `hosts` (tried in that order) that the first of them accepted as session 77, its
 * random source scripted with `draws`; effects so far discarded.
 */
function session(hosts: string, draws: number[], options: Partial<SessionOptions> = {}, answer: Partial<DecodedConnectResponse> = {}) {
  const source = scripted(draws);
  const effects: Effect[] = [];
  const machine = new SessionMachine<string>(
    {
      hosts: servers(hosts),
      sessionTimeoutMs: TIMEOUT_MS,
      connectTimeoutMs: 30_000,
      sessionId: 0n,
      password: new Uint8Array(0),
      watchedPaths: emptyWatchPaths,
      random: source.random,
      ...options,
    },
    (effect) => effects.push(effect),
  );
  machine.start();
  machine.receive(1, connectAnswer(answer));
  const take = (): Effect[] => effects.splice(0).filter((e) => e.type !== "log");
  take();
  return { machine, take, drawsLeft: source.left };
}

/** The servers of the next `count` attempts, each one failing before it is answered. */
function attempts(machine: SessionMachine<string>, take: () => Effect[], count: number): string[] {
  const tried: string[] = [];
  for (let i = 0; i < count; i++) {
    machine.timerFired("reconnect");
    const [attempt] = opened(take());
    assert.ok(attempt !== undefined, "a reconnect opens a connection");
    tried.push(attempt.host);
    machine.lost(attempt.connection, LOST);
  }
  return tried;
}

/** The servers of the next `count` read-write probes, each one failing. */
function probes(machine: SessionMachine<string>, take: () => Effect[], count: number): string[] {
  const probed: string[] = [];
  for (let i = 0; i < count; i++) {
    machine.timerFired("probe");
    const [probe] = opened(take());
    assert.ok(probe !== undefined, "a probe opens a connection");
    probed.push(probe.host);
    machine.lost(probe.connection, LOST);
  }
  return probed;
}

test("a client whose server is in a list of the same size stays, draws nothing, and goes on round robin from its server's place in the new list", () => {
  const { machine, take, drawsLeft } = session("abc", []);
  assert.equal(machine.updateServerList(servers("cad")), false);
  const effects = take();
  assert.deepEqual(closed(effects), []);
  assert.deepEqual(states(effects), []);
  assert.equal(machine.connectedHost?.host, "a");
  machine.lost(1, LOST);
  take();
  assert.deepEqual(attempts(machine, take, 4), ["d", "c", "a", "d"], "b is gone, d is tried");
  assert.equal(drawsLeft(), 0);
});

test("a client whose server is in a smaller list stays", () => {
  const { machine, take } = session("abcde", []);
  assert.equal(machine.updateServerList(servers("ba")), false);
  assert.deepEqual(closed(take()), []);
  assert.equal(machine.connected, true);
  machine.lost(1, LOST);
  take();
  assert.deepEqual(attempts(machine, take, 3), ["b", "a", "b"]);
});

test("a client whose server left moves: the connection ends as a lost one, and the same session is resumed on a new server with its watches", () => {
  const { machine, take, drawsLeft } = session("abc", [], {
    watchedPaths: () => ({ ...emptyWatchPaths(), dataWatches: ["/w"] }),
  });
  machine.submit(SYNC, "in flight");
  take();
  // b and c stay, d is new: the old servers already hold a third each, so every mover goes to d.
  assert.equal(machine.updateServerList(servers("bcd")), true);
  const effects = take();
  assert.deepEqual(closed(effects), [1]);
  assert.deepEqual(
    effects.flatMap((e) => (e.type === "failed" ? [`${e.token} ${e.code}`] : [])),
    ["in flight CONNECTIONLOSS"],
  );
  assert.deepEqual(states(effects), ["disconnected"]);
  assert.equal(machine.connected, false);
  machine.timerFired("reconnect");
  const attempt = take();
  assert.deepEqual(opened(attempt), [{ connection: 2, host: "d" }]);
  assert.deepEqual(connectSessionIds(attempt), [77n], "the session is resumed");
  machine.receive(2, connectAnswer());
  const after = take();
  assert.deepEqual(states(after), ["reconnected"]);
  assert.deepEqual(
    requests(after).map((r) => (r.op?.$case === "setWatches" ? r.op.setWatches.dataWatches : [])),
    [["/w"]],
  );
  assert.equal(machine.connectedHost?.host, "d");
  assert.equal(machine.sessionId, 77n);
  assert.equal(drawsLeft(), 0);
});

test("3 → 5 servers: a client whose server stays moves with probability 1 − 3/5 = 0.4", () => {
  const moving = session("abc", [0.39]);
  assert.equal(moving.machine.updateServerList(servers("cdaeb")), true);
  assert.deepEqual(states(moving.take()), ["disconnected"]);
  assert.deepEqual(attempts(moving.machine, moving.take, 1), ["d"], "to a new server");

  const staying = session("abc", [0.41]);
  assert.equal(staying.machine.updateServerList(servers("cdaeb")), false);
  assert.deepEqual(staying.take(), []);
  assert.equal(staying.machine.connectedHost?.host, "a");
  assert.equal(moving.drawsLeft() + staying.drawsLeft(), 0);
});

test("reconfig mode tries each new server, then each old one, in the new list's order, then falls back to round robin over the whole list", () => {
  const { machine, take, drawsLeft } = session("abc", [0.1]);
  assert.equal(machine.updateServerList(servers("cdaeb")), true);
  take();
  // probNew is 1: no draw between the sets; d and e are new, c, a and b old; round robin goes on after b.
  assert.deepEqual(attempts(machine, take, 8), ["d", "e", "c", "a", "b", "c", "d", "a"]);
  assert.equal(drawsLeft(), 0);
});

test("a client whose server left a list that grew goes to the new servers first, without a draw", () => {
  const { machine, take, drawsLeft } = session("abc", []);
  assert.equal(machine.updateServerList(servers("bdce")), true);
  take();
  assert.deepEqual(attempts(machine, take, 5), ["d", "e", "b", "c", "e"]);
  assert.equal(drawsLeft(), 0);
});

test("5 → 3 servers, one of them new: a client whose server left takes an old server with probability 2·(5 − 3) / (3·(5 − 2)) = 4/9", () => {
  // probNew = 5/9 = 0.5555…: 0.55 takes the new server f, then the old ones in order without a draw.
  const toNew = session("abcde", [0.55]);
  assert.equal(toNew.machine.updateServerList(servers("bfc")), true);
  toNew.take();
  assert.deepEqual(attempts(toNew.machine, toNew.take, 5), ["f", "b", "c", "b", "f"]);
  assert.equal(toNew.drawsLeft(), 0);

  // 0.56 takes the old b; 0.9 then the old c over f; f comes last, with no choice left to draw.
  const toOld = session("abcde", [0.56, 0.9]);
  assert.equal(toOld.machine.updateServerList(servers("bfc")), true);
  toOld.take();
  assert.deepEqual(attempts(toOld.machine, toOld.take, 5), ["b", "c", "f", "c", "b"]);
  assert.equal(toOld.drawsLeft(), 0);
});

test("once a server takes the moving session, reconfig mode is over: the next loss goes round robin from that server", () => {
  const { machine, take, drawsLeft } = session("abc", []);
  machine.updateServerList(servers("bcd"));
  machine.timerFired("reconnect");
  machine.receive(2, connectAnswer());
  take();
  machine.lost(2, LOST);
  take();
  assert.deepEqual(attempts(machine, take, 3), ["b", "c", "d"]);
  assert.equal(drawsLeft(), 0);
});

test("an update during a connection attempt judges the server being tried, and one during the back-off the server tried last", () => {
  const trying = session("abc", []);
  trying.machine.lost(1, LOST);
  trying.machine.timerFired("reconnect");
  assert.deepEqual(opened(trying.take()), [{ connection: 2, host: "b" }]);
  assert.equal(trying.machine.updateServerList(servers("acd")), true, "b left");
  const effects = trying.take();
  assert.deepEqual(closed(effects), [2]);
  assert.deepEqual(states(effects), [], "already disconnected");
  assert.deepEqual(attempts(trying.machine, trying.take, 1), ["d"]);

  const waiting = session("abc", []);
  waiting.machine.lost(1, LOST);
  waiting.take();
  assert.equal(waiting.machine.updateServerList(servers("bcd")), true, "a left");
  assert.deepEqual(waiting.take(), [], "nothing to close: the armed back-off leads to the next attempt");
  assert.deepEqual(attempts(waiting.machine, waiting.take, 1), ["d"]);

  const stays = session("abc", []);
  stays.machine.lost(1, LOST);
  stays.take();
  assert.equal(stays.machine.updateServerList(servers("dca")), false, "a stays");
  assert.deepEqual(attempts(stays.machine, stays.take, 2), ["d", "c"], "round robin from a's place");
});

test("a read-only client that stays probes the servers of the new list, from the one after its own", () => {
  const { machine, take } = session("abc", [], { canBeReadOnly: true }, { readOnly: true });
  assert.equal(machine.updateServerList(servers("dae")), false);
  assert.deepEqual(take(), []);
  assert.deepEqual(probes(machine, take, 3), ["e", "d", "e"], "its own server a is skipped");
});

test("a probe out to a server that left the list is called off, and the next one asks the new list", () => {
  const { machine, take } = session("abc", [], { canBeReadOnly: true }, { readOnly: true });
  machine.timerFired("probe");
  assert.deepEqual(opened(take()), [{ connection: 2, host: "b" }]);
  assert.equal(machine.updateServerList(servers("acd")), false);
  const effects = take();
  assert.deepEqual(closed(effects), [2]);
  assert.equal(machine.readOnly, true);
  assert.deepEqual(probes(machine, take, 2), ["c", "d"]);
});

test("a read-only client that moves drops its probe with its connection", () => {
  const { machine, take } = session("abc", [], { canBeReadOnly: true }, { readOnly: true });
  machine.timerFired("probe");
  take();
  assert.equal(machine.updateServerList(servers("bcd")), true);
  const effects = take();
  assert.deepEqual(closed(effects).sort(), [1, 2]);
  assert.deepEqual(states(effects), ["disconnected"]);
  assert.deepEqual(attempts(machine, take, 1), ["d"]);
});

test("a probe's success after an update moves round robin on from the new list", () => {
  const { machine, take } = session("abc", [], { canBeReadOnly: true, sessionId: 77n, password: Buffer.from([1, 2]) }, { readOnly: true });
  assert.equal(machine.updateServerList(servers("dac")), false);
  machine.timerFired("probe");
  assert.deepEqual(opened(take()), [{ connection: 2, host: "c" }]);
  machine.receive(2, connectAnswer());
  assert.equal(machine.connectedHost?.host, "c");
  assert.equal(machine.readOnly, false);
  take();
  machine.lost(2, LOST);
  take();
  assert.deepEqual(attempts(machine, take, 2), ["d", "a"]);
});

test("an expired session answer during a move ends the session as usual", () => {
  const { machine, take } = session("abc", []);
  machine.updateServerList(servers("bcd"));
  machine.timerFired("reconnect");
  machine.receive(2, connectAnswer({ err: ZkErrorCode.SESSIONEXPIRED }));
  assert.deepEqual(states(take()), ["disconnected", "expired"]);
  assert.equal(machine.lifecycle, "expired");
});

/**
 * `clients` sessions, each on `before` shuffled by the seeded PRNG and connected to the first host
 * of its order (so spread evenly over `before`), get `after`, shuffled likewise; those that move
 * connect to the first server they try. The share of the clients each server of `after` ends with.
 */
function spread(before: string, after: string, clients: number, seed: number): Map<string, number> {
  const prng = new Prng(seed);
  const random = (): number => prng.float();
  const counts = new Map<string, number>([...after].map((name) => [name, 0]));
  for (let i = 0; i < clients; i++) {
    const effects: Effect[] = [];
    const machine = new SessionMachine<string>(
      {
        hosts: shuffled(servers(before), random),
        sessionTimeoutMs: TIMEOUT_MS,
        connectTimeoutMs: 30_000,
        sessionId: 0n,
        password: new Uint8Array(0),
        watchedPaths: emptyWatchPaths,
        random,
      },
      (effect) => effects.push(effect),
    );
    machine.start();
    machine.receive(1, connectAnswer());
    if (machine.updateServerList(shuffled(servers(after), random))) {
      machine.timerFired("reconnect");
      machine.receive(2, connectAnswer());
    }
    const host = machine.connectedHost?.host;
    assert.ok(host !== undefined && counts.has(host), `client ${i} ends on a server of the new list, not ${host}`);
    counts.set(host, counts.get(host)! + 1);
  }
  return new Map([...counts].map(([name, count]) => [name, count / clients]));
}

/**
 * Each client lands on a server independently, so a server's count is binomial(n, p) with p its
 * expected share: its share has standard deviation σ = √(p(1 − p)/n), 0.004 for p = 1/5 and
 * n = 10 000. Five σ leaves a correct implementation a chance under 10⁻⁶ per server of failing,
 * for this seed or any other, while a wrong formula moves shares by far more (moving with
 * probability 3/5 instead of 2/5 on 3 → 5 leaves the old servers 0.133 instead of 0.2: 17σ).
 * The seed is fixed, so the run is the same every time.
 */
function assertEvenSpread(before: string, after: string): void {
  const clients = 10_000;
  const expected = 1 / after.length;
  const tolerance = 5 * Math.sqrt((expected * (1 - expected)) / clients);
  for (const [name, share] of spread(before, after, clients, 0x5eed)) {
    assert.ok(Math.abs(share - expected) <= tolerance, `${before} → ${after}: server ${name} holds ${share}, not ${expected} ± ${tolerance.toFixed(4)}`);
  }
}

test("3 → 5 servers: 10 000 clients end up holding a fifth each", () => {
  assertEvenSpread("abc", "abcde");
});

test("5 → 3 servers: 10 000 clients end up holding a third each", () => {
  assertEvenSpread("abcde", "abc");
});

test("5 → 3 servers, one of them new: 10 000 clients end up holding a third each", () => {
  assertEvenSpread("abcde", "abf");
});

test("3 → 4 servers, two of the old ones gone: 10 000 clients end up holding a quarter each", () => {
  assertEvenSpread("abc", "cdef");
});
