/**
 * Durability (docs/architecture.md §1 item 5) on one server: a write is answered only once it is fsynced, so
 * kill -9 loses nothing that was acknowledged; recovery is the newest valid snapshot plus the log
 * after it; a write that was rejected never reappears.
 */
import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { Client, op, ZkError } from "../../src/index.js";
import { ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

type Outcome = "ok" | "rejected" | "unknown";

/**
 * One session keeps `inFlight` creates of /d/n-<i> outstanding; every tenth slot instead sends a
 * write the server must reject (a stale setData and a multi whose check fails). Stops issuing once
 * `stopAfterAcks` creates are acknowledged, then `onStop` (the crash) runs with everything still in flight.
 */
async function loadThenCrash(zk: Client, inFlight: number, stopAfterAcks: number, onStop: () => Promise<void>) {
  const outcomes = new Map<number, Outcome>();
  let acked = 0;
  let next = 0;
  let stopped = false;
  let stopping: Promise<void> | undefined;
  const all: Promise<void>[] = [];
  const issue = (): void => {
    if (stopped) return;
    const i = next++;
    let write: Promise<unknown>;
    if (i % 10 === 9) {
      write =
        i % 20 === 19 ? zk.setData("/d/guard", `REJECTED-${i}`, { version: 999 }) : zk.multi([op.create(`/d/rejected-${i}`, "x"), op.check("/d/guard", 999)]);
    } else {
      write = zk.create(`/d/n-${String(i).padStart(6, "0")}`, `value-${i}`);
    }
    all.push(
      write.then(
        () => {
          outcomes.set(i, i % 10 === 9 ? "unknown" : "ok");
          if (i % 10 !== 9) acked += 1;
          if (acked >= stopAfterAcks && !stopping) {
            stopped = true;
            stopping = onStop();
          }
          issue();
        },
        (error: unknown) => {
          assert.ok(error instanceof ZkError, String(error));
          outcomes.set(i, error.code === "CONNECTIONLOSS" || error.code === "SESSIONEXPIRED" ? "unknown" : "rejected");
          if (error.code !== "CONNECTIONLOSS" && error.code !== "SESSIONEXPIRED") issue();
        },
      ),
    );
  };
  for (let k = 0; k < inFlight; k++) issue();
  await waitUntil(() => stopping !== undefined);
  await stopping;
  await Promise.allSettled(all);
  return { outcomes, issued: next };
}

async function waitUntil(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setTimeout(r, 10));
}

async function verifyAfterRestart(zk: Client, outcomes: Map<number, Outcome>, issued: number) {
  const children = new Set(await zk.getChildren("/d"));
  let lastPresent = -1;
  let ackedCount = 0;
  for (let i = 0; i < issued; i++) {
    const name = `n-${String(i).padStart(6, "0")}`;
    const outcome = outcomes.get(i) ?? "unknown";
    if (i % 10 === 9) {
      assert.ok(!children.has(`rejected-${i}`), `rejected multi ${i} left /d/rejected-${i}`);
      assert.notEqual(outcome, "ok", `write ${i} should have been rejected`);
      continue;
    }
    if (outcome === "ok") {
      ackedCount += 1;
      assert.ok(children.has(name), `acknowledged create ${i} lost`);
      assert.equal(text((await zk.getData(`/d/${name}`)).data), `value-${i}`);
    }
    if (children.has(name)) lastPresent = i;
  }
  // One session's writes take effect in order: everything before the last present write is there too.
  for (let i = 0; i < lastPresent; i++) {
    if (i % 10 !== 9) assert.ok(children.has(`n-${String(i).padStart(6, "0")}`), `write ${i} missing before present write ${lastPresent}`);
  }
  assert.equal(text((await zk.getData("/d/guard")).data), "guard", "no rejected setData took effect");
  for (const child of children) assert.match(child, /^(n-\d{6}|guard)$/, `unexpected node ${child}`);
  return ackedCount;
}

describe("durability", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  });

  test("every acknowledged write survives kill -9 with 1,000 writes in flight, and no rejected write appears", async () => {
    const dir = await makeTempDir();
    cleanups.push(dir.remove);
    const server = await ServerProcess.start({ dataDir: dir.path, tickMs: 100 });
    cleanups.push(() => server.stop());
    const zk = await Client.connect(server.connectString, { sessionTimeoutMs: 2_000 });
    cleanups.push(() => zk.close());
    await zk.create("/d", "");
    await zk.create("/d/guard", "guard");
    const { outcomes, issued } = await loadThenCrash(zk, 1_000, 3_000, () => server.crash());
    const unknown = [...outcomes.values()].filter((o) => o === "unknown").length + (issued - outcomes.size);
    // How many of the 1,000 are still unanswered at the kill depends on the machine (CI saw 492);
    // the point is that the crash lands with a large batch in flight, not an exact share of it.
    assert.ok(unknown >= 100, `the crash must catch writes in flight (unknown outcomes: ${unknown})`);
    await zk.close().catch(() => {});

    await server.restart();
    const check = await Client.connect(server.connectString, { sessionTimeoutMs: 2_000 });
    cleanups.push(() => check.close());
    const acked = await verifyAfterRestart(check, outcomes, issued);
    assert.ok(acked >= 3_000);
    await check.close();
  });

  test("recovery from a snapshot taken mid-load plus the log after it restores every acknowledged write", async () => {
    const dir = await makeTempDir();
    cleanups.push(dir.remove);
    const server = await ServerProcess.start({ dataDir: dir.path, tickMs: 100, snapshotEveryTxns: 700, snapshotRetainCount: 2, logLevel: "info" });
    cleanups.push(() => server.stop());
    const zk = await Client.connect(server.connectString, { sessionTimeoutMs: 2_000 });
    cleanups.push(() => zk.close());
    await zk.create("/d", "");
    await zk.create("/d/guard", "guard");
    const { outcomes, issued } = await loadThenCrash(zk, 200, 3_000, () => server.crash());
    await zk.close().catch(() => {});
    const snapshots = (await readdir(join(dir.path, "snapshots"))).filter((f) => f.startsWith("snapshot."));
    // Retention runs after each new snapshot is saved: a kill -9 between the two leaves one extra.
    assert.ok(snapshots.length >= 1 && snapshots.length <= 3, `retention keeps at most 2 snapshots (+1 caught mid-purge): ${snapshots.join(",")}`);

    server.stderr = "";
    await server.restart();
    const recovered = server.stderr
      .split("\n")
      .filter((line) => line.includes('"database recovered"'))
      .map((line) => JSON.parse(line) as { snapshotZxid: string; replayedTxns: number });
    assert.equal(recovered.length, 1);
    assert.notEqual(recovered[0]!.snapshotZxid, "0x0", "recovery started from a snapshot");
    assert.ok(recovered[0]!.replayedTxns > 0, "and replayed the log after it");
    const check = await Client.connect(server.connectString, { sessionTimeoutMs: 2_000 });
    cleanups.push(() => check.close());
    await verifyAfterRestart(check, outcomes, issued);
    await check.close();
  });
});
