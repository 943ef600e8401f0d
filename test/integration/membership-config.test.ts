/**
 * /zookeeper/config on a real cluster (issue 15, item 1's first part): every member writes the
 * membership into it in ZooKeeper's dynamic-config text, as ZooKeeper 3.8 does with a static
 * configuration (version 0, dataVersion -1, world-readable only). zkCli.sh's
 * `config` prints it; the SDK reads it; the `conf` four-letter word ends with the same lines.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, test } from "node:test";
import { Client } from "../../src/index.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { fourLetterWord } from "../helpers/four-letter-word.js";
import { waitFor } from "../helpers/wait.js";
import { withCode } from "../helpers/zk-error.js";
import { assertCliToolsInstalled, runZkCli } from "../helpers/zk-cli-tools.js";

let cluster: ClusterProcess;
let expected: string;

before(async () => {
  assertCliToolsInstalled();
  cluster = await ClusterProcess.start({ voters: 3, observers: 1, config: { fourLetterWordWhitelist: "*" } });
  await waitFor("an agreed leader", () => cluster.agreedLeader(), 60_000);
  const { servers } = JSON.parse(await readFile(cluster.configFile, "utf8")) as {
    servers: { id: number; host: string; quorumPort: number; electionPort: number; role: string; zkClientPort: number }[];
  };
  expected = [...servers.map((s) => `server.${s.id}=${s.host}:${s.quorumPort}:${s.electionPort}:${s.role};${s.host}:${s.zkClientPort}`), "version=0"].join(
    "\n",
  );
});

after(async () => {
  await cluster?.stop();
});

test("zkCli's config prints the membership, one line per member and the version", { timeout: 120_000 }, async () => {
  const run = await runZkCli(cluster.zkConnectString, ["config", "getAcl /zookeeper/config"]);
  const [config, acl] = run.segments.slice(1);
  assert.deepEqual(config?.out, expected.split("\n"));
  assert.deepEqual(acl?.out, ["'world,'anyone", ": r"]);
});

test("every member holds the same node: the SDK reads it anywhere; it writes nothing under /zookeeper", async () => {
  for (const id of cluster.servers.keys()) {
    const zk = await Client.connect(cluster.server(id).connectString);
    try {
      const { data, stat } = await zk.getData("/zookeeper/config");
      assert.equal(new TextDecoder().decode(data), expected, `server ${id}`);
      assert.deepEqual([stat.version, stat.aversion, stat.mzxid, stat.dataLength], [-1, -1, 0n, data.byteLength]);
      await assert.rejects(zk.setData("/zookeeper/config", "server.9=x:1:2:participant"), withCode("BADARGUMENTS"));
    } finally {
      await zk.close();
    }
  }
});

test("conf ends with the same membership", async () => {
  const port = Number(cluster.server(1).zkConnectString.split(":")[1]);
  const conf = await fourLetterWord(port, "conf");
  assert.ok(conf.endsWith(`membership: \n${expected}`), conf);
});
