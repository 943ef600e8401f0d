import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, connect, type Socket } from "node:net";
import { test } from "node:test";
import { systemClock } from "../../src/server/runtime-ports.js";

test("after the process was held up, a tick runs only once what peers sent meanwhile has been read", async () => {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  assert.ok(address !== null && typeof address === "object");
  const accepted = once(server, "connection") as Promise<[Socket]>;
  const sender = connect(address.port, "127.0.0.1");
  await once(sender, "connect");
  const [receiver] = await accepted;

  const seen: string[] = [];
  let holdUp = false;
  receiver.on("data", () => seen.push("data"));
  const stop = systemClock.every(10, () => {
    if (holdUp) seen.push("tick");
  });
  try {
    // Let a tick pass unheld, then: the peer's bytes reach the kernel, and this turn runs past
    // several tick intervals before the loop sees either the data or the due timer.
    await new Promise((resolve) => setTimeout(resolve, 30));
    holdUp = true;
    sender.write("ping");
    const until = performance.now() + 100;
    while (performance.now() < until) {
      // held up
    }
    while (seen.length < 2) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(seen.slice(0, 2), ["data", "tick"], "the peer's message is read before the tick that would judge its silence");
  } finally {
    stop();
    sender.destroy();
    receiver.destroy();
    server.close();
  }
});

test("a stopped tick never runs again, even when it was already due", async () => {
  let runs = 0;
  const stop = systemClock.every(5, () => runs++);
  const until = performance.now() + 20;
  while (performance.now() < until) {
    // the interval falls due while this turn runs
  }
  await new Promise((resolve) => setTimeout(resolve, 0));
  // The timers phase has now queued the tick for after the poll; stopping must cancel it.
  stop();
  const before = runs;
  await new Promise((resolve) => setTimeout(resolve, 30));
  assert.equal(runs, before);
});
