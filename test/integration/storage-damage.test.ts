/**
 * Damaged files on real processes: one member of a three-voter cluster is killed, one of its files
 * is damaged (a flipped bit, a file cut short, a zeroed page, a torn tail) in each kind of file it
 * keeps — LevelDB's write-ahead .log, a LevelDB table (.ldb), its MANIFEST and CURRENT, a snapshot
 * — and it is started again. The cluster keeps serving meanwhile; the member either recovers by
 * itself or repairs from the leader's snapshot; and nothing any client reads from it afterwards is
 * data that was never written. One cluster serves every case: each case starts from a member that
 * serves, and ends with one.
 *
 * Then the cases where repair is impossible: a standalone server (the only copy) and a cluster with
 * too few good copies left for a quorum refuse to start with a message naming the damaged file.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, ZkError } from "../../src/index.js";
import { connectTo, waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { type Damage, damageFile, DAMAGES, FILE_KINDS, fileOf } from "../helpers/file-damage.js";
import { ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

const DATA_DAMAGED_EXIT_CODE = 65;
const KEYS = 64;
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

/**
 * Writes to /d/k-<n> through any member, remembering every value ever sent for each key (sent, not
 * just acknowledged: a write whose answer was lost may still be applied).
 */
class Workload {
  readonly sent = new Map<string, Set<string>>();
  private seq = 0;

  constructor(private readonly client: Client) {}

  async write(count: number): Promise<void> {
    const inFlight = 16;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < count) {
        next += 1;
        const seq = ++this.seq;
        const path = `/d/k-${seq % KEYS}`;
        const value = `v-${seq}-${"x".repeat(seq % 97)}`;
        const values = this.sent.get(path) ?? new Set<string>();
        values.add(value);
        this.sent.set(path, values);
        await this.retrying(() => this.client.setData(path, value));
      }
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
  }

  /** A write that survives the member it goes through being killed: its client moves and tries again. */
  private async retrying(write: () => Promise<unknown>): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await write();
        return;
      } catch (error) {
        if (!(error instanceof ZkError && (error.code === "CONNECTIONLOSS" || error.code === "OPERATIONTIMEOUT")) || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  }
}

/** Every /d/k-<n> as `client`'s server holds it after a sync. */
async function valuesAt(client: Client): Promise<Map<string, string>> {
  await client.sync("/d");
  const values = new Map<string, string>();
  for (let n = 0; n < KEYS; n++) values.set(`/d/k-${n}`, text((await client.getData(`/d/k-${n}`)).data));
  return values;
}

describe("storage damage in one member of a three-voter cluster", () => {
  let cluster: ClusterProcess;
  let writer: Client;
  let workload: Workload;

  before(async () => {
    cluster = await ClusterProcess.start({ voters: 3, tickMs: 100, initLimitTicks: 20, syncLimitTicks: 10, snapshotEveryTxns: 300, snapshotRetainCount: 2 });
    await waitForLeader(cluster);
    writer = await Client.connect(cluster.connectString, { sessionTimeoutMs: 6_000, connectTimeoutMs: 30_000 });
    await writer.create("/d", "");
    for (let n = 0; n < KEYS; n++) await writer.create(`/d/k-${n}`, "initial");
    workload = new Workload(writer);
    for (let n = 0; n < KEYS; n++) workload.sent.set(`/d/k-${n}`, new Set(["initial"]));
  });

  after(async () => {
    await writer?.close().catch(() => {});
    await cluster?.stop();
  });

  /** A member that is not the leader now: the one whose files are damaged. */
  async function pickVictim(): Promise<number> {
    const leader = await waitForLeader(cluster);
    return [3, 2, 1].find((id) => id !== leader)!;
  }

  async function waitServing(id: number, mark: number): Promise<void> {
    const server = cluster.server(id);
    await waitFor(
      `server ${id} serving again`,
      () => {
        if (!server.running) throw new Error(`server ${id} exited (code ${server.exitCode}): ${server.stderr.slice(mark).slice(-2_000)}`);
        return server.stderr.slice(mark).includes('"serving clients"') ? true : undefined;
      },
      90_000,
    );
  }

  for (const kind of FILE_KINDS) {
    for (const damage of DAMAGES) {
      test(`${damage} in a ${kind} file: the cluster keeps serving, the member recovers or repairs, and reads only written data`, async () => {
        const victimId = await pickVictim();
        const victim = cluster.server(victimId);
        await workload.write(400);
        if (kind === "leveldb table") {
          // LevelDB writes its first table when it reopens a database with a non-empty .log.
          await victim.stop();
          const mark = victim.stderr.length;
          await victim.restart();
          await waitServing(victimId, mark);
          await workload.write(100);
        }
        await victim.crash();
        const file = await fileOf(victim.options.dataDir, kind);
        const done = await damageFile(file, damage, victimId);
        // The other two are a quorum: the cluster serves while the damaged member is down.
        await workload.write(100);
        const mark = victim.stderr.length;
        await victim.restart().catch((error: unknown) => {
          throw new Error(`the damaged member did not start (${file}: ${done}): ${String(error)}\n${victim.stderr.slice(mark).slice(-3_000)}`);
        });
        await waitServing(victimId, mark);
        const log = victim.stderr.slice(mark);
        const repaired = log.includes('"repair finished: the leader\'s snapshot is installed"');
        if (repaired) assert.ok(log.includes("damaged files found"), "a repair says what it found damaged");

        // Nothing read from the member is data that was never written, and once the writes stop
        // every member holds the same values.
        await workload.write(50);
        const seen = await Promise.all(
          [victimId, ...[1, 2, 3].filter((id) => id !== victimId)].map(async (id) => {
            const client = await connectTo(cluster, id);
            try {
              return await valuesAt(client);
            } finally {
              await client.close();
            }
          }),
        );
        for (const [path, value] of seen[0]!) {
          assert.ok(workload.sent.get(path)?.has(value), `${path} reads ${JSON.stringify(value)} at the damaged member, never written (${file}: ${done})`);
        }
        assert.deepEqual(seen[0], seen[1], `the damaged member agrees with the others (${file}: ${done}; repaired: ${repaired})`);
        assert.deepEqual(seen[1], seen[2]);
      });
    }
  }
});

describe("damage that cannot be repaired", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  });

  /**
   * A standalone server that acknowledged `creates` creates (each only once its batch was durable),
   * killed -9, `damage` done to its newest LevelDB .log, started again: answers what it said as it
   * refused, having checked that it did refuse.
   */
  async function refusalAfter(creates: number, damage: Damage): Promise<string> {
    const dir = await makeTempDir();
    cleanups.push(dir.remove);
    const server = await ServerProcess.start({ dataDir: dir.path, tickMs: 100 });
    cleanups.push(() => server.stop());
    const zk = await Client.connect(server.connectString, { sessionTimeoutMs: 2_000 });
    await zk.create("/d", "");
    for (let i = 0; i < creates; i++) await zk.create(`/d/n-${i}`, "x".repeat(100));
    await zk.close();
    await server.crash();
    const done = await damageFile(await fileOf(dir.path, "leveldb .log"), damage);
    const mark = server.stderr.length;
    await assert.rejects(server.restart(), /server exited before listening/);
    assert.equal(await server.waitForExit(), DATA_DAMAGED_EXIT_CODE, `${done}: ${server.stderr.slice(mark).slice(-2_000)}`);
    const said = server.stderr.slice(mark);
    assert.match(said, /restore .* from a backup \(corral restore\)/);
    return said;
  }

  test("a standalone server with a damaged txn log refuses to start, naming the file and what to do", async () => {
    assert.match(await refusalAfter(2_000, "zeroedPage"), /refusing to start: the data in .* is damaged \(.*log: records missing between/);
  });

  for (const damage of ["tornTail", "truncation"] as const) {
    test(`a standalone server whose LevelDB .log lost its end (${damage}) refuses to start: the watermark says records were durable past it`, async () => {
      assert.match(
        await refusalAfter(300, damage),
        /refusing to start: the data in .* is damaged \(.*the log ends at zxid 0x[0-9a-f]+ but records up to 0x[0-9a-f]+ were durable \(LOG-WATERMARK\)/,
      );
    });
  }

  test("a member whose damage leaves too few good copies for a quorum refuses to start, naming the file", async () => {
    const cluster = await ClusterProcess.start({ voters: 3, tickMs: 100, initLimitTicks: 20, syncLimitTicks: 10 });
    cleanups.push(() => cluster.stop());
    const leader = await waitForLeader(cluster);
    const zk = await Client.connect(cluster.connectString, { sessionTimeoutMs: 4_000, connectTimeoutMs: 30_000 });
    await zk.create("/d", "");
    for (let i = 0; i < 1_500; i++) await zk.create(`/d/n-${i}`, "x".repeat(100));
    await zk.close();
    const damaged = [1, 2, 3].filter((id) => id !== leader);
    for (const id of damaged) {
      const server = cluster.server(id);
      await server.crash();
      await damageFile(await fileOf(server.options.dataDir, "leveldb .log"), "zeroedPage");
    }
    await Promise.all(
      damaged.map(async (id) => {
        const server = cluster.server(id);
        const mark = server.stderr.length;
        // It may refuse before its client port opens: the exit code is what counts.
        await server.restart().catch(() => {});
        const code = await server.waitForExit(60_000).catch((error: unknown) => {
          const lines = [...cluster.servers].map(
            ([sid, s]) =>
              `server ${sid}:\n` +
              s.stderr
                .split("\n")
                .filter((l) => /repair|damage|refus|notification|role changed/.test(l))
                .slice(-15)
                .join("\n"),
          );
          throw new Error(`${String(error)}: ${lines.join("\n")}`);
        });
        assert.equal(code, DATA_DAMAGED_EXIT_CODE, server.stderr.slice(mark).slice(-2_000));
        const said = server.stderr.slice(mark);
        assert.match(said, /cannot repair itself: of the 3 voters only 1 hold a good copy \(servers \d\), and a quorum needs 2/);
        assert.match(said, /log: records missing between/);
      }),
    );
  });
});
