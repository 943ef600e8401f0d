/**
 * docs/getting-started.md followed literally on a fresh clone: the repository at HEAD is cloned
 * into a temporary folder, and the page's steps run there in order — `npm install && npm start`
 * left running as in a terminal of its own, each later command in a second "terminal", each file
 * the reader is asked to create written as shown, each printed output checked against the page —
 * then Ctrl-C (SIGINT to the foreground process group) stops the cluster.
 *
 * `npm start` is the documented three-voter cluster on its documented ports (2181-2183, 2281-2283,
 * 2888-2890, 3888-3890, 7000-7002, 8080-8082), all below the range other tests pick ports from;
 * the test fails at once, naming the port, if something else on the machine holds one of them.
 * npm installs from its cache where it can (CI's `npm ci` filled it), the registry otherwise.
 */
import assert from "node:assert/strict";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { blockName, blocksOf, showsLines } from "../helpers/doc-blocks.js";
import { portIsFree } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

const execFileAsync = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const PAGE = "docs/getting-started.md";
const DOCUMENTED_PORTS = [2181, 2281, 2888, 3888, 7000, 8080].flatMap((base) => [base, base + 1, base + 2]);
/** npm install and the first build, on a busy 2-core machine. */
const BACKGROUND_READY_MS = 600_000;
const STEP_TIMEOUT_MS = 120_000;
const NPM_ENV = { npm_config_prefer_offline: "true", npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" };

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let clone: string;
const background: { child: ChildProcess; output: () => string }[] = [];

before(async () => {
  dir = await makeTempDir("corral-getting-started-");
  clone = join(dir.path, "corral");
  const { stdout: head } = await execFileAsync("git", ["rev-parse", "HEAD"], { cwd: ROOT });
  await execFileAsync("git", ["clone", "--quiet", "--no-checkout", ROOT, clone]);
  await execFileAsync("git", ["checkout", "--quiet", head.trim()], { cwd: clone });
});

after(async () => {
  for (const { child } of background) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
      await new Promise((resolve) => child.once("close", resolve));
    }
  }
  await dir?.remove();
});

function bash(script: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    execFile(
      "bash",
      ["-euo", "pipefail", "-c", script],
      { cwd: clone, env: { ...process.env, ...NPM_ENV }, timeout: STEP_TIMEOUT_MS, killSignal: "SIGKILL" },
      (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, output: stdout + stderr });
      },
    );
  });
}

test("Getting started, followed literally on a fresh clone, starts a cluster, runs every step and stops on Ctrl-C", { timeout: 1_200_000 }, async (t) => {
  for (const port of DOCUMENTED_PORTS) assert.ok(await portIsFree(port), `port ${port}, which npm start uses, is taken on this machine`);
  const blocks = blocksOf(ROOT, PAGE);
  let lastOutput: () => string = () => "";
  let steps = 0;
  for (const block of blocks) {
    const where = blockName(block);
    if (block.language === "sh" && block.flags.has("runnable") && block.flags.has("background")) {
      const ready = block.attributes.get("ready");
      assert.ok(ready, `${where}: a background step says what it prints once ready`);
      let output = "";
      const child = spawn("bash", ["-euo", "pipefail", "-c", block.text], { cwd: clone, env: { ...process.env, ...NPM_ENV }, detached: true });
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
      background.push({ child, output: () => output });
      await waitFor(
        `${where} to print ${JSON.stringify(ready)}`,
        () => {
          if (child.exitCode !== null) throw new Error(`${where} exited ${child.exitCode}:\n${output.slice(-4_000)}`);
          return output.includes(ready) ? true : undefined;
        },
        BACKGROUND_READY_MS,
      );
      lastOutput = () => output;
      steps++;
    } else if (block.language === "sh" && block.flags.has("runnable")) {
      const result = await bash(block.text);
      assert.equal(result.code, 0, `${where} exited ${result.code}:\n${result.output}`);
      lastOutput = () => result.output;
      steps++;
    } else if (block.attributes.has("file")) {
      await writeFile(join(clone, block.attributes.get("file")!), block.text);
      steps++;
    } else if (block.flags.has("output")) {
      const missing = showsLines(lastOutput(), block.text);
      assert.equal(missing, undefined, `${where}: the output shown has ${JSON.stringify(missing)}, the command printed:\n${lastOutput()}`);
    }
  }
  assert.equal(background.length, 1, "the page starts the cluster once");
  // Ctrl-C: the terminal sends SIGINT to the whole foreground process group.
  const [{ child, output }] = background as [(typeof background)[0]];
  const closed = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  process.kill(-child.pid!, "SIGINT");
  const code = await closed;
  for (const port of DOCUMENTED_PORTS) assert.ok(await portIsFree(port), `port ${port} is free once npm start stopped:\n${output().slice(-2_000)}`);
  assert.doesNotMatch(output(), /exited unexpectedly/, "no server died on its own");
  t.diagnostic(`followed ${steps} steps of ${PAGE}; npm start exited ${code} on Ctrl-C`);
});
