/**
 * `corral cluster` grows and shrinks the cluster it runs, live, as a user drives it: `add` and
 * `remove ID` typed on its stdin. Three voters become five and then three again (two of the
 * original three removed) under a steady SDK write load: no acknowledged write fails or is lost,
 * each remaining member has every one of them, and the configuration in force (getConfig) and
 * cluster.json list exactly the members asked for. The launcher made its own super user for the
 * reconfigurations (a private credential file); a refused command leaves the cluster running, and
 * so does the end of its stdin.
 */
import assert from "node:assert/strict";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { probe } from "../../src/cli/health.js";
import { parseMembership } from "../../src/common/membership.js";
import { Client } from "../../src/index.js";
import { CLI, freeRange, runScript } from "../helpers/cli-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";
import { WriteLoad } from "../helpers/write-load.js";

const LOAD_ROOT = "/load";
/** Generous: a member is started, synced and reconfigured in; CI machines are slow. */
const STEP_MS = 120_000;

/** Ranges for ids 1..5: gRPC, quorum, election and ZooKeeper-protocol ports (no metrics or admin ports). */
async function portFlags(ids: number): Promise<{ flags: string[]; base: number }> {
  const taken = new Set<number>();
  const [base, quorum, election, zk] = [await freeRange(ids, taken), await freeRange(ids, taken), await freeRange(ids, taken), await freeRange(ids, taken)];
  return {
    base,
    flags: [
      ...["--base-port", String(base), "--quorum-base-port", String(quorum), "--election-base-port", String(election), "--zk-base-port", String(zk)],
      ...["--metrics-base-port", "0", "--admin-base-port", "0"],
    ],
  };
}

/** The voters and observers a configuration text lists, by id. */
function roles(text: string): { voters: number[]; observers: number[] } {
  const members = parseMembership(text).members;
  const ids = (type: string) =>
    members
      .filter((m) => m.role === type)
      .map((m) => m.serverId)
      .sort((a, b) => a - b);
  return { voters: ids("participant"), observers: ids("observer") };
}

describe("corral cluster: add and remove on a live cluster", () => {
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let launcher: ReturnType<typeof runScript>;
  let base: number;
  let ports: Awaited<ReturnType<typeof portFlags>>;
  /** Writes acknowledged by the first test's load. */
  let acked = 0;
  const clients: Client[] = [];
  const dataDir = () => join(dir.path, "data");
  const connect = async (connectString: string): Promise<Client> => {
    const client = await Client.connect(connectString, { sessionTimeoutMs: 10_000, connectTimeoutMs: 30_000 });
    clients.push(client);
    return client;
  };
  const clientAddress = (id: number) => `127.0.0.1:${base + id - 1}`;
  /** Sends one command line; resolves once the launcher printed `done` (or fails on the command's error line). */
  const command = async (line: string, done: RegExp): Promise<void> => {
    const errBefore = launcher.err().length;
    launcher.child.stdin.write(line + "\n");
    const verb = line.split(" ")[0]!;
    await waitFor(
      `"${line}" to finish`,
      () => {
        assert.equal(launcher.child.exitCode, null, `corral cluster exited:\n${launcher.err()}`);
        const failure = new RegExp(`^corral cluster: ${verb}: .*$`, "m").exec(launcher.err().slice(errBefore));
        assert.equal(failure, null, `"${line}" failed`);
        return done.test(launcher.out()) ? true : undefined;
      },
      STEP_MS,
    );
  };
  const clusterFile = () => (JSON.parse(readFileSync(join(dataDir(), "cluster.json"), "utf8")) as { servers: { id: number; role: string }[] }).servers;

  before(async () => {
    dir = await makeTempDir("corral-cluster-grow-");
    ports = await portFlags(5);
    base = ports.base;
    launcher = runScript(CLI, ["cluster", ...["--voters", "3", "--data-dir", dataDir(), "--tick-ms", "200", "--reconfig-enabled", "true"], ...ports.flags]);
    await waitFor(
      "the cluster to serve",
      () => {
        assert.equal(launcher.child.exitCode, null, `corral cluster exited early:\n${launcher.out()}\n${launcher.err()}`);
        return /^press Ctrl-C to stop$/m.test(launcher.out()) ? true : undefined;
      },
      STEP_MS,
    );
  });

  after(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    if (launcher.child.exitCode === null) {
      launcher.child.kill("SIGINT");
      await launcher.exit;
    }
    await dir.remove();
  });

  test("3 → 5 → 3 voters under a write load: every acknowledged write is on every remaining member, the membership is the one asked for", async (t) => {
    // The launcher's own super user: a credential only its owner can read, its digest in cluster.json.
    const superAuth = join(dataDir(), "super-auth");
    assert.equal(statSync(superAuth).mode & 0o777, 0o600);
    assert.match(readFileSync(superAuth, "utf8"), /^super:\S{20,}\n$/);

    const writer = await connect([1, 2, 3].map(clientAddress).join(","));
    await writer.create(LOAD_ROOT, "");
    const load = new WriteLoad(writer, LOAD_ROOT);
    const progress = async (what: string) => {
      const from = load.acked.length;
      await waitFor(`writes ${what}`, () => (load.acked.length >= from + 30 ? true : undefined), STEP_MS);
    };
    await progress("before any change");

    await command("add", /server 4 added/);
    await progress("with four voters");
    await command("add participant", /server 5 added/);
    await progress("with five voters");
    const reader = await connect(clientAddress(4));
    await reader.sync("/");
    const grown = await reader.getConfig();
    assert.deepEqual(roles(grown.text), { voters: [1, 2, 3, 4, 5], observers: [] }, grown.text);
    assert.deepEqual(
      clusterFile().map((s) => [s.id, s.role]),
      [1, 2, 3, 4, 5].map((id) => [id, "participant"]),
    );

    // A command the cluster cannot take is refused, and changes nothing.
    const errBefore = launcher.err().length;
    launcher.child.stdin.write("remove 9\n");
    await waitFor("the refusal", () => (/corral cluster: remove: server 9 is not a member/.test(launcher.err().slice(errBefore)) ? true : undefined));

    await command("remove 1", /server 1 removed/);
    await progress("after removing server 1");
    await command("remove 2", /server 2 removed/);
    await progress("with three voters again");
    await load.stop();
    acked = load.acked.length;

    const survivor = await connect(clientAddress(5));
    await survivor.sync("/");
    const shrunk = await survivor.getConfig();
    assert.ok(shrunk.version > grown.version);
    assert.deepEqual(roles(shrunk.text), { voters: [3, 4, 5], observers: [] }, shrunk.text);
    assert.deepEqual(
      clusterFile().map((s) => [s.id, s.role]),
      [3, 4, 5].map((id) => [id, "participant"]),
      "cluster.json lists the members in force",
    );

    assert.deepEqual(load.failed, [], "no write failed other than by a lost connection");
    t.diagnostic(
      `${load.acked.length} writes acknowledged; configurations ${grown.version.toString(16)} (5 voters), ${shrunk.version.toString(16)} (3 voters)`,
    );
    for (const id of [3, 4, 5]) {
      const member = await connect(clientAddress(id));
      await member.sync(LOAD_ROOT);
      const present = new Set((await member.getChildren(LOAD_ROOT)).map((name) => `${LOAD_ROOT}/${name}`));
      assert.deepEqual(
        load.acked.filter((path) => !present.has(path)),
        [],
        `server ${id} has every acknowledged write (${load.acked.length})`,
      );
    }
    // The removed servers were stopped: their client ports take no session.
    for (const id of [1, 2]) await assert.rejects(probe(clientAddress(id), 2_000), `server ${id} is stopped`);
  });

  test("the end of stdin ends the commands, not the cluster; Ctrl-C then stops every member cleanly", async () => {
    launcher.child.stdin.end();
    await waitFor("the launcher to notice", () => (/stdin ended: no more commands; the cluster keeps running/.test(launcher.out()) ? true : undefined));
    const client = await connect([3, 4, 5].map(clientAddress).join(","));
    await client.create("/after-eof", "still serving");
    assert.equal(launcher.child.exitCode, null);
    launcher.child.kill("SIGINT");
    assert.equal(await launcher.exit, 0, launcher.err());
  });

  test("run again with the same flags, the launcher comes back with the members add and remove left, and they serve every write", async () => {
    launcher = runScript(CLI, [
      "cluster",
      ...["--voters", "3", "--data-dir", dataDir(), "--tick-ms", "200", "--reconfig-enabled", "true", "--start-timeout-ms", "30000"],
      ...ports.flags,
    ]);
    await waitFor(
      "the cluster to serve again",
      () => {
        assert.equal(launcher.child.exitCode, null, `corral cluster exited:\n${launcher.out()}\n${launcher.err()}`);
        return /^press Ctrl-C to stop$/m.test(launcher.out()) ? true : undefined;
      },
      STEP_MS,
    );
    assert.match(launcher.out(), /the members are the ones add and remove left \(3, 4, 5\)/);
    assert.match(launcher.out(), new RegExp(`connect with: Client\\.connect\\("${[3, 4, 5].map(clientAddress).join(",")}"\\)`));
    const client = await connect([3, 4, 5].map(clientAddress).join(","));
    await client.sync(LOAD_ROOT);
    assert.ok((await client.getChildren(LOAD_ROOT)).length >= acked, "the writes are there");
    assert.deepEqual(roles((await client.getConfig()).text), { voters: [3, 4, 5], observers: [] });
    launcher.child.kill("SIGINT");
    assert.equal(await launcher.exit, 0, launcher.err());
  });
});
