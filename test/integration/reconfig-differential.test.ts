/**
 * Issue 15 acceptance: zkCli.sh's `reconfig -add` / `-remove` (and `config`) against a real
 * ZooKeeper 3.8 ensemble and against a three-voter corral cluster, both with reconfigEnabled and
 * the super user "super:test": the normalised transcripts must be equal. Ports differ between the
 * two and are named by server (<server N> for a member's addresses); configuration versions (zxids)
 * are numbered by first appearance, as stats' zxids are.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { generateDigest } from "../../src/common/digest.js";
import { waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { freePort } from "../helpers/server-process.js";
import { normaliseZkCli, runZkCli } from "../helpers/zk-cli-tools.js";
import { ZooKeeperEnsemble } from "../helpers/zookeeper-ensemble.js";

const SUPER = "super:test";

/**
 * Server lines' addresses and configuration versions named, so that both sides can be compared;
 * and the configuration's length, which depends on how many digits the ports have.
 */
function normaliseConfig(lines: string[]): string[] {
  const versions = new Map<string, string>();
  return lines.map((line) =>
    line
      .replace(/^out: dataLength = \d+$/, "out: dataLength = <length>")
      .replace(
        /server\.(\d+)=127\.0\.0\.1:\d+:\d+:(participant|observer);127\.0\.0\.1:\d+/g,
        (_m, id: string, role: string) => `server.${id}=<server ${id}>:${role}`,
      )
      .replace(/version=([0-9a-f]+)/g, (_m, hex: string) => {
        if (!versions.has(hex)) versions.set(hex, `<version#${versions.size + 1}>`);
        return `version=${versions.get(hex)!}`;
      }),
  );
}

describe("zkCli's reconfig against ZooKeeper 3.8 and corral", () => {
  let ensemble: ZooKeeperEnsemble;
  let cluster: ClusterProcess;
  before(async () => {
    [ensemble, cluster] = await Promise.all([
      ZooKeeperEnsemble.start({ servers: 3, reconfigEnabled: true, superDigest: generateDigest(SUPER), tickTimeMs: 500 }),
      ClusterProcess.start({ voters: 3, superDigest: generateDigest(SUPER), config: { reconfigEnabled: true } }),
    ]);
    await waitForLeader(cluster);
  });
  after(async () => {
    await Promise.allSettled([ensemble?.stop(), cluster?.stop()]);
  });

  test("the same transcript: refused without the super user, then add and remove an observer, bad input, a stale version", async () => {
    const [p1, p2, p3] = [await freePort(), await freePort(), await freePort()];
    const observer = `server.100=127.0.0.1:${p1}:${p2}:observer;127.0.0.1:${p3}`;
    const script = [
      "config",
      `reconfig -add ${observer}`,
      "addauth digest super:test",
      `reconfig -add ${observer}`,
      "config",
      "reconfig -remove 100",
      "reconfig -add some_thing",
      "reconfig -remove 1,2",
      "reconfig -remove 100 -v 1",
      "config -s",
    ];
    const zk = normaliseConfig(normaliseZkCli(await runZkCli(ensemble.connectString(1), script)));
    const corral = normaliseConfig(normaliseZkCli(await runZkCli(cluster.server(1).zkConnectString, script)));
    assert.ok(zk.includes("out: Committed new configuration:"), "the script reconfigured ZooKeeper");
    assert.deepEqual(corral, zk);
  });
});
