/**
 * throttledOpWaitTimeMs on a real server process (ZooKeeper's throttled_op_wait_time): writes that
 * waited at the leader longer than it for room in the flow-control window are answered THROTTLEDOP
 * and not applied; the others are applied; the session lives on; throttled_ops counts them.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { limits } from "../../src/common/constants.js";
import { Client } from "../../src/index.js";
import { Scrape } from "../helpers/prometheus.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";

const WRITES = 64;
const VALUE_BYTES = 512 * 1024;

let server: ServerProcess;
let removeDir: () => Promise<void>;
let client: Client | undefined;

before(async () => {
  const dir = await makeTempDir();
  removeDir = dir.remove;
  // The smallest window (two of these writes) and a 1 ms wait: the last of 64 writes asked for at
  // once waits for at least 31 durable commits before its turn, far past 1 ms.
  server = await ServerProcess.start({
    dataDir: dir.path,
    metricsPort: await freePort(),
    extraArgs: ["--throttled-op-wait-time-ms", "1", "--proposal-bytes-in-flight-max", String(limits.messageBytesMax)],
  });
});

after(async () => {
  await client?.close().catch(() => undefined);
  await server?.stop();
  await removeDir?.();
});

test("writes that waited at the leader past throttledOpWaitTimeMs are answered THROTTLEDOP and not applied, and the session lives on", async () => {
  client = await Client.connect(server.connectString);
  const sessionId = client.sessionId;
  await client.create("/throttled", "");
  const value = new Uint8Array(VALUE_BYTES);
  const outcomes = await Promise.all(
    Array.from({ length: WRITES }, () =>
      client!.setData("/throttled", value).then(
        () => "ok",
        (error: { code?: string }) => error.code ?? "other",
      ),
    ),
  );
  const ok = outcomes.filter((outcome) => outcome === "ok").length;
  const throttled = outcomes.filter((outcome) => outcome === "THROTTLEDOP").length;
  assert.equal(ok + throttled, WRITES, `outcomes: ${outcomes.join(",")}`);
  assert.ok(throttled > 0, "the writes at the back of the queue waited past 1 ms");
  assert.ok(ok > 0, "the writes at the front went in their turn");
  // Only the acknowledged writes were applied.
  assert.equal((await client.exists("/throttled"))?.version, ok);
  assert.equal(client.sessionId, sessionId);
  assert.equal((await Scrape.of(server.metricsUrl)).value("throttled_ops"), throttled);
});
