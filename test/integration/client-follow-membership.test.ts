/**
 * An SDK client follows the cluster's membership on real server processes (ConnectOptions.followMembership):
 * started with servers 1..3 in its connect string, it comes to list a spare once a reconfig adds
 * it — at the spare's corral client address, which /zookeeper/config does not name and the servers
 * learned from the spare over their peer links — and drops a member a reconfig removes. A client
 * without the option keeps the list it was given. getMembers reports the members with those
 * addresses. Every wait polls the condition itself under a generous deadline.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, generateDigest, ZkError, type ClusterMembers } from "../../src/index.js";
import { connectTo, waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { waitFor } from "../helpers/wait.js";

const SUPER = "super:test";
const WAIT_MS = 60_000;

const sorted = (addresses: readonly string[]): string[] => [...addresses].sort();

describe("followMembership on a live cluster", () => {
  let cluster: ClusterProcess;
  const clients: Client[] = [];
  const connect = async (connectString: string, followMembership: boolean): Promise<Client> => {
    const client = await Client.connect(connectString, { followMembership, sessionTimeoutMs: 10_000, connectTimeoutMs: 30_000 });
    clients.push(client);
    return client;
  };
  const address = (id: number): string => cluster.server(id).connectString;

  before(async () => {
    cluster = await ClusterProcess.start({ voters: 3, spares: 1, superDigest: generateDigest(SUPER), config: { reconfigEnabled: true } });
    await waitForLeader(cluster);
  });
  after(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await cluster?.stop();
  });

  test("a following client gains a server a reconfig adds and loses one it removes; a client not following keeps its list", { timeout: 240_000 }, async () => {
    const leader = await waitForLeader(cluster);
    const initial = [1, 2, 3].map(address);
    const following = await connect(initial.join(","), true);
    const fixed = await connect(initial.join(","), false);
    assert.deepEqual(sorted(following.servers), sorted(initial));

    const before: ClusterMembers = await following.getMembers();
    assert.equal(before.version, 0n, "the configuration the servers started with");
    assert.deepEqual(
      before.members,
      [1, 2, 3].map((id) => ({ serverId: id, role: "participant", clientAddress: address(id) })),
    );

    const admin = await connectTo(cluster, leader);
    clients.push(admin);
    await admin.addAuthInfo("digest", SUPER);
    const grown = await admin.reconfig({ joining: [cluster.memberLine(4)] });
    await waitFor("the following client to list server 4", () => (following.servers.includes(address(4)) ? true : undefined), WAIT_MS);
    assert.deepEqual(sorted(following.servers), sorted([...initial, address(4)]));
    const members = await waitFor(
      "the following client's server to run with the grown configuration",
      async () => {
        // A grown list may move the client to the new server, to even the load as ZooKeeper's
        // clients do: a request sent during that move is answered CONNECTIONLOSS, and asked again.
        const answer = await following.getMembers().catch((error: unknown) => {
          if (error instanceof ZkError && error.code === "CONNECTIONLOSS") return undefined;
          throw error;
        });
        return answer?.version === grown.version ? answer : undefined;
      },
      WAIT_MS,
    );
    assert.deepEqual(
      members.members,
      [1, 2, 3, 4].map((id) => ({ serverId: id, role: "participant", clientAddress: address(id) })),
    );

    const removed = [1, 2, 3].find((id) => id !== leader)!;
    const shrunk = await admin.reconfig({ leaving: [removed], fromConfig: grown.version });
    const remaining = [1, 2, 3, 4].filter((id) => id !== removed).map(address);
    await waitFor(`the following client to drop server ${removed}`, () => (!following.servers.includes(address(removed)) ? true : undefined), WAIT_MS);
    assert.deepEqual(sorted(following.servers), sorted(remaining));
    // The same session goes on, on a server of the new list.
    const sessionId = following.sessionId;
    await waitFor(
      "the following client on a remaining server",
      () => (following.connected && remaining.includes(following.connectedHost ?? "") ? true : undefined),
      WAIT_MS,
    );
    assert.equal((await following.getConfig()).version, shrunk.version);
    assert.equal(following.sessionId, sessionId);

    assert.deepEqual(sorted(fixed.servers), sorted(initial), "a client not following keeps the servers it was given");
  });
});
