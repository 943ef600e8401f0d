/**
 * Two sessions taking turns on one Lock, each printing the fencing token it was granted.
 *
 *   npm start                                   # a three-voter cluster, in another terminal
 *   npm run build && node dist/examples/lock.js [connectString]
 *
 * Each turn's token (the czxid of the holder's lock node) is larger than the one before: a
 * resource guarded by the lock can refuse any write carrying a smaller token than it has seen.
 */
import { Client, Lock } from "../src/index.js";

const connectString = process.argv[2] ?? "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183";
const LOCK_PATH = "/examples/lock";
const TURNS_EACH = 3;

async function worker(name: string, zk: Client): Promise<void> {
  const lock = new Lock(zk, LOCK_PATH);
  lock.on("lost", (error) => console.log(`${name}: lost the lock (${error.code})`));
  for (let turn = 1; turn <= TURNS_EACH; turn++) {
    await lock.acquire({ timeoutMs: 30_000 });
    try {
      console.log(`${name}: holds the lock, turn ${turn}, fencing token ${lock.fencingToken}`);
      await new Promise((resolve) => setTimeout(resolve, 100)); // the "work"
    } finally {
      await lock.release();
    }
  }
}

async function main(): Promise<void> {
  const alice = await Client.connect(connectString, { sessionTimeoutMs: 10_000 });
  const bob = await Client.connect(connectString, { sessionTimeoutMs: 10_000 });
  try {
    await Promise.all([worker("alice", alice), worker("bob", bob)]);
  } finally {
    await Promise.allSettled([alice.close(), bob.close()]);
  }
}

// Closed sessions leave nothing running: the process ends by itself.
main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
