/**
 * The chaos harness's LinkProxy: a blocked direction holds traffic back (nothing lost, order
 * kept) until the block lifts, the other direction keeps flowing, a close behind a block is
 * reported only after it, and a delay keeps order.
 */
import assert from "node:assert/strict";
import { connect, createServer, type Server, type Socket } from "node:net";
import { after, before, test } from "node:test";
import { LinkProxy } from "../chaos/link-proxy.js";
import { freePort } from "../helpers/server-process.js";

let server: Server;
let serverPort: number;
const accepted: Socket[] = [];

before(async () => {
  server = createServer((socket) => accepted.push(socket));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  serverPort = (server.address() as { port: number }).port;
});

after(async () => {
  for (const socket of accepted) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Collects what arrives on `socket` as text; `until(text)` resolves once `text` has arrived in full. */
function reader(socket: Socket): { received: () => string; until: (expected: string) => Promise<void>; ended: Promise<void> } {
  let received = "";
  const waiters: { expected: string; resolve: () => void }[] = [];
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    received += chunk;
    for (const waiter of [...waiters]) {
      if (received.includes(waiter.expected)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  });
  const ended = new Promise<void>((resolve) => socket.on("close", () => resolve()));
  return {
    received: () => received,
    until: (expected) => (received.includes(expected) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ expected, resolve }))),
    ended,
  };
}

async function connectThrough(proxy: LinkProxy): Promise<{ client: Socket; upstream: Socket }> {
  const before = accepted.length;
  const client = connect({ host: "127.0.0.1", port: proxy.port });
  await new Promise<void>((resolve) => client.once("connect", () => resolve()));
  while (accepted.length === before) await new Promise((resolve) => setTimeout(resolve, 5));
  return { client, upstream: accepted[accepted.length - 1]! };
}

test("a blocked direction holds its bytes until healed, in order; the other direction flows", async () => {
  const proxy = await LinkProxy.start("test", await freePort(), serverPort);
  try {
    const { client, upstream } = await connectThrough(proxy);
    const atServer = reader(upstream);
    const atClient = reader(client);
    client.write("before;");
    await atServer.until("before;");

    proxy.setBlocked(true, false);
    client.write("held-1;");
    client.write("held-2;");
    upstream.write("answer;");
    await atClient.until("answer;"); // the backward direction still flows
    // A round trip through the open direction gives held bytes every chance to leak through.
    upstream.write("ping;");
    await atClient.until("ping;");
    assert.equal(atServer.received(), "before;", "nothing crosses a blocked direction");

    proxy.setBlocked(false, false);
    await atServer.until("held-2;");
    assert.equal(atServer.received(), "before;held-1;held-2;", "held bytes arrive whole and in order");
    client.destroy();
  } finally {
    await proxy.close();
  }
});

test("a close behind a block reaches the other side only once the block lifts", async () => {
  const proxy = await LinkProxy.start("test", await freePort(), serverPort);
  try {
    const { client, upstream } = await connectThrough(proxy);
    const atServer = reader(upstream);
    proxy.setBlocked(true, true);
    client.end("last words;");
    let closed = false;
    void atServer.ended.then(() => (closed = true));
    // A leak would show within this wait; the wait cannot make a correct proxy fail.
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(closed, false, "the upstream side has not heard of the close");
    assert.equal(atServer.received(), "");
    proxy.setBlocked(false, false);
    await atServer.ended;
    assert.equal(atServer.received(), "last words;");
  } finally {
    await proxy.close();
  }
});

test("a delayed link still delivers everything in order", async () => {
  const proxy = await LinkProxy.start("test", await freePort(), serverPort);
  try {
    const { client, upstream } = await connectThrough(proxy);
    const atServer = reader(upstream);
    proxy.setDelay(30);
    const expected = Array.from({ length: 50 }, (_, i) => `m${i};`).join("");
    for (let i = 0; i < 50; i++) client.write(`m${i};`);
    await atServer.until("m49;");
    assert.equal(atServer.received(), expected);
    client.destroy();
  } finally {
    await proxy.close();
  }
});
