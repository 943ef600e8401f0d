/**
 * A barrier and a double barrier across independent sessions, as separate processes would use them.
 * Run against `npm start`: node dist/examples/barrier.js [connectString]
 */
import { Client, Barrier, DoubleBarrier } from "../src/index.js";

const connectString = process.argv[2] ?? "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183";
const root = `/examples/barrier-${process.pid}`;
const connect = (): Promise<Client> => Client.connect(connectString, { sessionTimeoutMs: 10_000 });

const coordinator = await connect();
const workers = await Promise.all([connect(), connect(), connect()]);
try {
  // 1. Barrier: workers wait until the coordinator lowers it.
  const gate = new Barrier(coordinator, `${root}/gate`);
  await gate.set();
  const released = workers.map((client, i) => new Barrier(client, `${root}/gate`).wait({ timeoutMs: 10_000 }).then(() => console.log(`worker ${i} released`)));
  console.log("coordinator: removing the barrier");
  await gate.remove();
  await Promise.all(released);

  // 2. Double barrier: nobody starts before all three entered, nobody finishes before all three left.
  await Promise.all(
    workers.map(async (client, i) => {
      const round = new DoubleBarrier(client, `${root}/round`, workers.length);
      console.log(`worker ${i} entering`);
      await round.enter({ timeoutMs: 10_000 });
      console.log(`worker ${i} computing`);
      await round.leave({ timeoutMs: 10_000 });
      console.log(`worker ${i} left`);
    }),
  );
} finally {
  for (const node of [`${root}/round`, root, "/examples"]) await coordinator.delete(node).catch(() => undefined);
  await Promise.all([coordinator, ...workers].map((client) => client.close()));
}
