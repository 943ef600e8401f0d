/**
 * globalUnsentBytesMax (src/replica/outbound-budget.ts): at the bound a read waits in its session's
 * queue instead of running, and the sessions waiting run in the order they came as the doors write
 * their bytes out; a connection that goes away stops counting. And what a session's queue holds
 * of requests already answered.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { WriteBroadcast } from "../../src/replica/broadcast.js";
import { ClientSessions } from "../../src/replica/client-sessions.js";
import { OutboundBudget, type ConnectionOutbound } from "../../src/replica/outbound-budget.js";
import { RequestPipeline } from "../../src/replica/pipeline.js";
import type { Reply } from "../../src/replica/requests.js";
import { DataTree } from "../../src/store/data-tree.js";
import { RecordingConnection } from "../helpers/recording-connection.js";

const BOUND = 1000;

/** Applies a new session at once; these tests send reads only. */
function broadcastOver(tree: DataTree, sessions: () => ClientSessions): WriteBroadcast {
  let zxid = 0;
  return {
    serving: true,
    readOnly: false,
    submitWrite: () => assert.fail("no writes here"),
    submitCreateSession(sessionId, timeoutMs, password) {
      zxid += 1;
      const txn = { header: { sessionId, cxid: 0, zxid, timeMs: zxid }, body: { type: "createSession" as const, timeoutMs, password } };
      const { result, deliveries } = tree.apply(txn);
      sessions().applied(txn, result, deliveries);
    },
    touchSession() {},
    requestSync: (ready) => ready(zxid),
    revalidateSession: (_sessionId, _timeoutMs, done) => done("valid"),
  };
}

/** A connection whose every answer queues `answerBytes` in the server's total, as a door's would. */
class CountingConnection extends RecordingConnection {
  readonly account: ConnectionOutbound;
  readonly order: string[];

  constructor(
    budget: OutboundBudget,
    readonly name: string,
    order: string[],
    private readonly answerBytes: number,
  ) {
    super();
    this.account = budget.connection();
    this.order = order;
  }

  override sendReply(xid: number, reply: Reply): void {
    super.sendReply(xid, reply);
    this.order.push(`${this.name}:${xid}`);
    this.account.add(this.answerBytes);
  }
}

function fixture(answerBytes: number, turns?: { turnBytesMax: number; nextTurn: (run: () => void) => void }) {
  const tree = new DataTree();
  const budget = new OutboundBudget({ bytesMax: BOUND, turnBytesMax: turns?.turnBytesMax ?? Number.MAX_SAFE_INTEGER }, turns?.nextTurn);
  const sessions: ClientSessions = new ClientSessions({ state: { tree }, forget() {}, outbound: budget });
  const pipeline = new RequestPipeline({ sessions, admission: broadcastOver(tree, () => sessions), authOptions: { superDigest: "" } });
  const order: string[] = [];
  let nextSession = 1n;
  const connect = (name: string): { connection: CountingConnection; read: (xid: number) => void; sessionId: bigint } => {
    const sessionId = nextSession++;
    pipeline.createSession(sessionId, 4000, new Uint8Array(16), () => {});
    const connection = new CountingConnection(budget, name, order, answerBytes);
    pipeline.attach(sessionId, connection);
    return { connection, sessionId, read: (xid) => pipeline.submit(sessionId, connection, xid, { op: "exists", path: "/", watch: false }) };
  };
  return { budget, order, connect, sessions };
}

describe("reads at the server's outbound bound", () => {
  test("a read at the bound waits unanswered and runs once the doors write out under it", () => {
    const { budget, connect, order } = fixture(10);
    const stalled = budget.connection();
    stalled.add(BOUND);
    const reader = connect("reader");
    reader.read(1);
    reader.read(2);
    assert.deepEqual(order, [], "nothing answered at the bound");
    assert.equal(budget.readsWaited, 1);
    stalled.add(-BOUND);
    assert.deepEqual(order, ["reader:1", "reader:2"], "both answered, in order, once under the bound");
  });

  test("sessions waiting run in the order they came, each only while the total is under the bound", () => {
    const { budget, connect, order } = fixture(BOUND);
    const stalled = budget.connection();
    stalled.add(BOUND);
    const first = connect("first");
    const second = connect("second");
    first.read(1);
    second.read(1);
    assert.equal(budget.readsWaited, 2);
    stalled.add(-BOUND);
    assert.deepEqual(order, ["first:1"], "the first answer takes the total back to the bound: the second waits");
    assert.ok(budget.bytes <= 2 * BOUND, "at most the bound plus one answer");
    first.connection.account.add(-BOUND);
    assert.deepEqual(order, ["first:1", "second:1"]);
  });

  test("past the bytes one turn may queue, reads wait for the next turn even under the bound", () => {
    const turns: (() => void)[] = [];
    const { budget, connect, order } = fixture(100, { turnBytesMax: 150, nextTurn: (run) => turns.push(run) });
    const reader = connect("reader");
    for (const xid of [1, 2, 3]) reader.read(xid);
    assert.deepEqual(order, ["reader:1", "reader:2"], "the second answer passes the turn's bytes: the third waits");
    assert.ok(budget.bytes < BOUND);
    assert.equal(turns.length, 1, "one next turn asked for");
    turns.shift()!();
    assert.deepEqual(order, ["reader:1", "reader:2", "reader:3"]);
  });

  test("the bytes one turn may queue count that turn's answers only, not those of turns before it", () => {
    const turns: (() => void)[] = [];
    const { budget, connect, order } = fixture(100, { turnBytesMax: 250, nextTurn: (run) => turns.push(run) });
    const reader = connect("reader");
    const endTurn = (): void => {
      reader.connection.account.add(-budget.bytes); // the doors wrote everything out
      while (turns.length > 0) turns.shift()!();
    };
    reader.read(1);
    endTurn();
    // A turn of three answers: 300 bytes, the third read starting at 200 (under 250).
    for (const xid of [2, 3, 4]) reader.read(xid);
    assert.deepEqual(order, ["reader:1", "reader:2", "reader:3", "reader:4"]);
    assert.equal(budget.readsWaited, 0, "no read waited: the turn had queued 200 bytes when the last one ran");
  });

  test("a connection that goes away stops counting, and what it writes later is not counted again", () => {
    const { budget } = fixture(0);
    const gone = budget.connection();
    gone.add(BOUND + 5);
    assert.equal(budget.open, false);
    gone.release();
    assert.equal(budget.bytes, 0);
    assert.equal(budget.open, true);
    gone.add(-5);
    gone.add(7);
    assert.equal(budget.bytes, 0);
    assert.equal(budget.peakBytes, BOUND + 5);
  });
});

describe("a session's queue", () => {
  test("holds nothing of the requests it has answered while later ones still wait", () => {
    const { budget, connect, sessions } = fixture(BOUND / 2);
    const stalled = budget.connection();
    stalled.add(BOUND);
    const reader = connect("reader");
    for (const xid of [1, 2, 3]) reader.read(xid);
    stalled.add(-BOUND);
    const session = sessions.get(reader.sessionId)!;
    assert.equal(session.head, 2, "two answered; the third waits at the bound");
    assert.ok(budget.bytes >= BOUND);
    assert.deepEqual(session.queue.slice(0, session.head), [undefined, undefined]);
    assert.equal(session.queued(), 1);
  });
});
