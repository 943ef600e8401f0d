/**
 * MembershipFollower against a scripted client: what prompts it (connection, reconnection, the
 * /zookeeper/config watch), that it acts only on a new configuration version, runs one at a time,
 * keeps the chroot, never throws, and stops on close or expiry.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MembershipFollower, type FollowedClient } from "../../src/client/membership-follower.js";
import type { ClusterConfiguration, ClusterMembers, Stat, Watcher } from "../../src/client/types.js";
import { ZkError } from "../../src/common/errors.js";

const STAT = {} as Stat;
const A = "127.0.0.1:2181";
const B = "127.0.0.1:2182";
const C = "127.0.0.1:2183";

/** A client whose answers the test sets; it counts the calls and keeps the watch. */
class ScriptedClient implements FollowedClient {
  version = 0n;
  membersVersion: bigint | undefined;
  addresses = [A, B];
  list = [A, B];
  chroot: string | undefined = "/app";
  configFailure: ZkError | undefined;
  membersFailure: ZkError | undefined;
  /** While set, getConfig waits for it. */
  gate: Promise<void> | undefined;
  configReads = 0;
  membersReads = 0;
  readonly updates: string[] = [];
  watch: Watcher | undefined;

  async getConfig(options: { watch?: Watcher }): Promise<ClusterConfiguration> {
    this.configReads++;
    if (this.gate) await this.gate;
    if (this.configFailure) throw this.configFailure;
    this.watch = options.watch;
    return { text: "", version: this.version, stat: STAT };
  }
  getMembers(): Promise<ClusterMembers> {
    this.membersReads++;
    if (this.membersFailure) return Promise.reject(this.membersFailure);
    return Promise.resolve({
      version: this.membersVersion ?? this.version,
      members: this.addresses.map((clientAddress, i) => ({ serverId: i + 1, role: "participant", clientAddress })),
    });
  }
  updateServerList(connectString: string): Promise<void> {
    this.updates.push(connectString);
    this.list = connectString.replace(/\/.*$/, "").split(",");
    return Promise.resolve();
  }
  servers(): readonly string[] {
    return this.list;
  }
  connected() {
    return { serverId: 1, address: A };
  }
  log(): void {}
}

/** Lets every pending promise and microtask run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

test("once connected it makes the members its server list, keeping the chroot", async () => {
  const client = new ScriptedClient();
  client.addresses = [A, B, C];
  new MembershipFollower(client).onState("connected");
  await settle();
  assert.deepEqual(client.updates, [`${A},${B},${C}/app`]);
  assert.ok(client.watch, "the read set a watch on /zookeeper/config");
});

test("a reconnection with the configuration unchanged asks nothing more; a new version does", async () => {
  const client = new ScriptedClient();
  const follower = new MembershipFollower(client);
  follower.onState("connected");
  await settle();
  assert.equal(client.membersReads, 1);
  follower.onState("reconnected");
  await settle();
  assert.equal(client.configReads, 2, "it reads the configuration again (and sets its watch again)");
  assert.equal(client.membersReads, 1, "the same version is not followed twice");

  client.version = 0x100000005n;
  client.addresses = [A, B, C];
  client.watch!({ type: "NodeDataChanged", path: "/zookeeper/config", zxid: 0x100000005n });
  await settle();
  assert.equal(client.membersReads, 2);
  assert.deepEqual(client.updates, [`${A},${B},${C}/app`]);
});

test("failures never reach the user; the next prompt tries again", async () => {
  const client = new ScriptedClient();
  client.addresses = [A, B, C];
  client.configFailure = new ZkError("CONNECTIONLOSS");
  const follower = new MembershipFollower(client);
  follower.onState("connected");
  await settle();
  assert.deepEqual(client.updates, []);
  client.configFailure = undefined;
  client.membersFailure = new ZkError("CONNECTIONLOSS");
  follower.onState("reconnected");
  await settle();
  assert.deepEqual(client.updates, []);
  client.membersFailure = undefined;
  follower.onState("reconnected");
  await settle();
  assert.deepEqual(client.updates, [`${A},${B},${C}/app`]);
});

test("prompts during a run make one more run, not one each", async () => {
  const client = new ScriptedClient();
  let open!: () => void;
  client.gate = new Promise((resolve) => (open = resolve));
  const follower = new MembershipFollower(client);
  follower.refresh();
  for (let i = 0; i < 100; i++) follower.refresh();
  client.gate = undefined;
  open();
  await settle();
  assert.equal(client.configReads, 2);
});

test("a server that cannot answer getMembers is not asked again until the configuration changes", async () => {
  const client = new ScriptedClient();
  client.membersFailure = new ZkError("UNIMPLEMENTED");
  const follower = new MembershipFollower(client);
  follower.onState("connected");
  await settle();
  follower.onState("reconnected");
  await settle();
  assert.equal(client.membersReads, 1);
  client.version = 7n;
  follower.onState("reconnected");
  await settle();
  assert.equal(client.membersReads, 2);
});

test("an answer older than the configuration read is not taken as followed", async () => {
  const client = new ScriptedClient();
  client.version = 9n;
  client.membersVersion = 8n;
  client.addresses = [A, B, C];
  const follower = new MembershipFollower(client);
  follower.onState("connected");
  await settle();
  assert.deepEqual(client.updates, [], "a server behind its own /zookeeper/config is not followed");
  client.membersVersion = undefined;
  follower.onState("reconnected");
  await settle();
  assert.deepEqual(client.updates, [`${A},${B},${C}/app`]);
});

test("after close or expiry nothing prompts it any more", async () => {
  for (const end of ["closed", "expired"] as const) {
    const client = new ScriptedClient();
    const follower = new MembershipFollower(client);
    follower.onState("connected");
    await settle();
    const reads = client.configReads;
    follower.onState(end);
    follower.onState("reconnected");
    client.version = 3n;
    client.watch!({ type: "NodeDataChanged", path: "/zookeeper/config", zxid: 3n });
    await settle();
    assert.equal(client.configReads, reads, end);
  }
});
