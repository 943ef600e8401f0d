/**
 * The runnable scripts in examples/ (lock, election, queue, barrier), each run as its own process
 * against a live three-voter cluster, as a user would run them against `npm start`: each takes the
 * connect string as its first argument, exits 0 and prints what it promises.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { waitFor } from "../helpers/wait.js";

/** Each script's own waits are bounded by 10–30 s; this bounds the whole process. */
const RUN_TIMEOUT_MS = 60_000;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function runExample(name: string, connectString: string): Promise<Run> {
  const script = fileURLToPath(new URL(`../../examples/${name}.js`, import.meta.url));
  return new Promise((resolve) => {
    execFile(process.execPath, [script, connectString], { timeout: RUN_TIMEOUT_MS, killSignal: "SIGKILL" }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : null;
      resolve({ code, signal: error?.signal ?? null, stdout, stderr });
    });
  });
}

function assertSucceeded(run: Run): void {
  assert.equal(run.code, 0, `exit ${run.code} signal ${run.signal}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`);
}

/** The numbers following `label` in each matching line, in output order. */
function numbersAfter(output: string, label: RegExp): number[] {
  return [...output.matchAll(label)].map((m) => Number(m[1]));
}

describe("examples/ against a live three-voter cluster", { timeout: 300_000 }, () => {
  let cluster: ClusterProcess;

  before(async () => {
    cluster = await ClusterProcess.start({ voters: 3 });
    await waitFor("an agreed leader", () => cluster.agreedLeader(), 30_000);
  });

  after(async () => {
    await cluster?.stop();
  });

  test("lock.js: alice and bob each hold the lock three times, with increasing fencing tokens", async () => {
    const run = await runExample("lock", cluster.connectString);
    assertSucceeded(run);
    for (const name of ["alice", "bob"]) {
      for (let turn = 1; turn <= 3; turn++) assert.match(run.stdout, new RegExp(`^${name}: holds the lock, turn ${turn}, fencing token \\d+$`, "m"));
    }
    const tokens = numbersAfter(run.stdout, /fencing token (\d+)/g);
    assert.equal(tokens.length, 6);
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `tokens not increasing: ${tokens.join(", ")}`);
    assert.doesNotMatch(run.stdout, /lost the lock/);
  });

  test("election.js: alice, bob and carol lead in turn, each with a larger fencing token", async () => {
    const run = await runExample("election", cluster.connectString);
    assertSucceeded(run);
    const elected = [...run.stdout.matchAll(/^(\w+): elected \(fencing token (\d+)\)$/gm)];
    assert.deepEqual(
      elected.map((m) => m[1]),
      ["alice", "bob", "carol"],
      run.stdout,
    );
    const tokens = elected.map((m) => Number(m[2]));
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `tokens not increasing: ${tokens.join(", ")}`);
    for (const name of ["alice", "bob", "carol"]) assert.match(run.stdout, new RegExp(`^${name}: leads; the leader is ${name}; resigning$`, "m"));
  });

  test("queue.js: the three jobs come out once each, in the order offered", async () => {
    const run = await runExample("queue", cluster.connectString);
    assertSucceeded(run);
    const out = [...run.stdout.matchAll(/^(?:took|polled) +(.+)$/gm)].map((m) => m[1]);
    assert.deepEqual(out, ["resize photo-1", "resize photo-2", "resize photo-3"], run.stdout);
    assert.match(run.stdout, /^peek +resize photo-2$/m);
    assert.match(run.stdout, /^empty +true$/m);
  });

  test("barrier.js: every worker is released by the barrier, and nobody computes before all entered or leaves early", async () => {
    const run = await runExample("barrier", cluster.connectString);
    assertSucceeded(run);
    const lines = run.stdout.split("\n");
    const removing = lines.indexOf("coordinator: removing the barrier");
    assert.ok(removing >= 0, run.stdout);
    for (let i = 0; i < 3; i++) {
      assert.ok(lines.indexOf(`worker ${i} released`) > removing, run.stdout);
    }
    const lastEntering = Math.max(...[0, 1, 2].map((i) => lines.indexOf(`worker ${i} entering`)));
    const firstComputing = Math.min(...[0, 1, 2].map((i) => lines.indexOf(`worker ${i} computing`)));
    const lastComputing = Math.max(...[0, 1, 2].map((i) => lines.indexOf(`worker ${i} computing`)));
    const firstLeft = Math.min(...[0, 1, 2].map((i) => lines.indexOf(`worker ${i} left`)));
    assert.ok(firstComputing > lastEntering && firstComputing >= 0, run.stdout);
    assert.ok(firstLeft > lastComputing, run.stdout);
  });
});
