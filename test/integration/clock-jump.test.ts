/**
 * Setting a server's wall clock moves no deadline (as ZooKeeper measures them on a monotonic
 * clock): a server whose clock jumps ten minutes ahead, and then back, stamps its txns with the
 * time it reads but expires no session. The jump comes from the server's test clock
 * (CORRAL_TEST_CLOCK_FILE, src/server/test-clock.ts), the chaos clock nemesis's tool.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Client } from "../../src/index.js";
import { TEST_CLOCK_ENV } from "../../src/server/test-clock.js";
import { ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

const JUMP_MS = 600_000;
/** The longest a tick of 1 s allows (20 ticks): the client pings about every 7 s. */
const SESSION_TIMEOUT_MS = 20_000;
const TICK_MS = 1_000;

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let server: ServerProcess;
let clockFile: string;

before(async () => {
  dir = await makeTempDir("corral-clock-jump-");
  clockFile = join(dir.path, "clock.json");
  await writeFile(clockFile, "{}");
  server = await ServerProcess.start({ dataDir: join(dir.path, "data"), tickMs: TICK_MS, env: { [TEST_CLOCK_ENV]: clockFile } });
});

after(async () => {
  await server?.stop();
  await dir?.remove();
});

let nodes = 0;
/** The server's wall clock as its txns stamp it: the ctime of a node created now. */
async function stampedTime(client: Client): Promise<number> {
  const path = await client.create(`/n-${nodes++}`, "");
  return Number((await client.exists(path))!.ctime);
}

/** Until the server stamps txns with a time that `fits`; asked through `probe`, so other sessions stay idle. */
function clockReads(probe: Client, what: string, fits: (stamped: number) => boolean): Promise<number> {
  return waitFor(what, async () => {
    const stamped = await stampedTime(probe);
    return fits(stamped) ? stamped : undefined;
  });
}

test("a clock jumping ten minutes ahead and back stamps txns with its time and expires no idle session", async () => {
  const idle = await Client.connect(server.connectString, { sessionTimeoutMs: SESSION_TIMEOUT_MS });
  const probe = await Client.connect(server.connectString, { sessionTimeoutMs: SESSION_TIMEOUT_MS });
  try {
    const sessionId = idle.sessionId;
    const before = await stampedTime(idle);
    await writeFile(clockFile, JSON.stringify({ offsetMs: JUMP_MS }));
    const ahead = await clockReads(probe, "the server's clock to jump", (stamped) => stamped - before > JUMP_MS / 2);
    // Ticks pass on the jumped clock while `idle` sends nothing but its pings: with deadlines on
    // the wall clock, the first of them would have expired it (its deadline was 20 s away).
    await new Promise((resolve) => setTimeout(resolve, 3 * TICK_MS));
    await writeFile(clockFile, "{}");
    const back = await clockReads(probe, "the server's clock to come back", (stamped) => stamped < ahead);
    await new Promise((resolve) => setTimeout(resolve, 3 * TICK_MS));
    assert.ok((await idle.exists("/n-0")) !== null, "the idle session still answers");
    assert.equal(idle.sessionId, sessionId, "the same session");
    assert.ok(back - before < JUMP_MS / 2, "txns are stamped with the clock as it reads again");
  } finally {
    await Promise.allSettled([idle.close(), probe.close()]);
  }
});
