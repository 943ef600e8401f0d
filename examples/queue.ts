/**
 * A distributed FIFO queue between two sessions, as two processes would use it.
 * Run against `npm start`: node dist/examples/queue.js [connectString]
 */
import { Client, DistributedQueue } from "../src/index.js";

const connectString = process.argv[2] ?? "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183";
const path = `/examples/queue-${process.pid}`;

const producer = await Client.connect(connectString, { sessionTimeoutMs: 10_000 });
const consumer = await Client.connect(connectString, { sessionTimeoutMs: 10_000 });
try {
  const jobs = new DistributedQueue(producer, path);
  const worker = new DistributedQueue(consumer, path);

  // The consumer blocks until something arrives (a children watch, no polling).
  const first = worker.take({ timeoutMs: 10_000 });
  for (const job of ["resize photo-1", "resize photo-2", "resize photo-3"]) {
    await jobs.offer(job);
    console.log(`offered  ${job}`);
  }
  console.log(`took     ${Buffer.from(await first).toString()}`);
  console.log(`peek     ${Buffer.from((await worker.peek()) ?? new Uint8Array()).toString()}`);
  for (let data = await worker.poll(); data !== null; data = await worker.poll()) {
    console.log(`polled   ${Buffer.from(data).toString()}`);
  }
  console.log(`empty    ${(await worker.poll()) === null}`);
} finally {
  // The queue and its receipts node are persistent: remove them, then end both sessions.
  for (const node of [`${path}/receipts`, path, "/examples"]) await producer.delete(node).catch(() => undefined);
  await Promise.all([producer.close(), consumer.close()]);
}
