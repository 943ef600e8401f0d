/**
 * The connection limits on real server processes. maxClientCnxns: past the bound, a new connection
 * from the same address is closed at accept without an answer (as ZooKeeper closes it), on the
 * ZooKeeper port and on the gRPC port alike (one count over every client port), counted as
 * connection_rejected; a connection that closes makes room again. The connection token bucket: a
 * ConnectRequest finding it empty is refused, its connection closed without a ConnectResponse.
 */
import assert from "node:assert/strict";
import { connect as connectTcp } from "node:net";
import { after, before, describe, test } from "node:test";
import { Client, ZkError } from "../../src/index.js";
import { ExistsRequest, OpCode } from "../../src/server/zk-wire/records.js";
import { JuteClient } from "../helpers/jute-client.js";
import { Scrape } from "../helpers/prometheus.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

/** Connects to the ZooKeeper port and sends nothing: resolves with the bytes the server sent before it closed the connection. */
function bytesBeforeClose(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let received = 0;
    const socket = connectTcp({ host: "127.0.0.1", port });
    socket.on("data", (chunk: Buffer) => (received += chunk.length));
    socket.on("error", reject);
    socket.on("close", () => resolve(received));
  });
}

describe("maxClientCnxns", () => {
  let server: ServerProcess;
  let removeDir: () => Promise<void>;

  before(async () => {
    const dir = await makeTempDir();
    removeDir = dir.remove;
    server = await ServerProcess.start({ dataDir: dir.path, zkPort: await freePort(), metricsPort: await freePort(), extraArgs: ["--max-client-cnxns", "2"] });
  });

  after(async () => {
    await server?.stop();
    await removeDir?.();
  });

  test("a connection past maxClientCnxns from one address is closed at accept on either port, counted, and a closed one makes room", async () => {
    const zkPort = server.options.zkPort!;
    const first = await JuteClient.connect(`127.0.0.1:${zkPort}`);
    const second = await JuteClient.connect(`127.0.0.1:${zkPort}`);

    // The third TCP connection is closed by the server with nothing sent.
    assert.equal(await bytesBeforeClose(zkPort), 0);
    // The gRPC port counts against the same bound: an SDK session cannot open either.
    await assert.rejects(Client.connect(server.connectString, { connectTimeoutMs: 1_500 }), (error: unknown) => error instanceof ZkError);
    const rejected = (await Scrape.of(server.metricsUrl)).value("connection_rejected");
    assert.ok(rejected >= 2, `connection_rejected is ${rejected}, expected the ZooKeeper port's refusal and at least one gRPC attempt`);
    assert.match(server.stderr, /Too many connections from 127\.0\.0\.1 - max is 2/);

    // The first two connections were never disturbed.
    const reply = await first.request(OpCode.exists, ExistsRequest, { path: "/", watch: false });
    assert.equal(reply.header.err, 0);
    await second.close();
    // Once the server has seen the close, a new session opens (it retries until then).
    const third = await waitFor("a connection accepted after one closed", () => JuteClient.connect(`127.0.0.1:${zkPort}`).catch(() => undefined));
    assert.notEqual(third.response?.sessionId ?? 0n, 0n);
    await Promise.all([first.close(), third.close()]);
  });
});

describe("the connection token bucket", () => {
  let server: ServerProcess;
  let removeDir: () => Promise<void>;

  before(async () => {
    const dir = await makeTempDir();
    removeDir = dir.remove;
    // Three tokens and no refill within the test (one token an hour).
    server = await ServerProcess.start({
      dataDir: dir.path,
      zkPort: await freePort(),
      metricsPort: await freePort(),
      extraArgs: ["--connection-throttle-tokens", "3", "--connection-throttle-fill-time-ms", "3600000"],
    });
  });

  after(async () => {
    await server?.stop();
    await removeDir?.();
  });

  test("connect requests past the bucket's tokens are refused on either port, counted, and the sessions let in keep working", async () => {
    const zkAddress = `127.0.0.1:${server.options.zkPort!}`;
    const admitted = [await JuteClient.connect(zkAddress), await JuteClient.connect(zkAddress)];
    const sdk = await Client.connect(server.connectString);
    // The bucket is empty: the next ConnectRequest gets no answer, only a closed connection.
    await assert.rejects(JuteClient.connect(zkAddress), /closed before the connect answer/);
    await assert.rejects(Client.connect(server.connectString, { connectTimeoutMs: 1_500 }), (error: unknown) => error instanceof ZkError);
    const rejected = (await Scrape.of(server.metricsUrl)).value("connection_rejected");
    assert.ok(rejected >= 2, `connection_rejected is ${rejected}`);
    for (const client of admitted) assert.equal((await client.request(OpCode.exists, ExistsRequest, { path: "/", watch: false })).header.err, 0);
    await sdk.create("/let-in", "yes");
    assert.equal(Buffer.from((await sdk.getData("/let-in")).data).toString(), "yes");
    await sdk.close();
    await Promise.all(admitted.map((client) => client.close()));
  });
});
