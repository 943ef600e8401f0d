/** The shipped command line: `corral start` serves and stops cleanly; a bad config names its field. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { Client } from "../../src/index.js";
import { freePort } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";

const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

function run(args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, CORRAL_LOG_LEVEL: "warn", ...env } });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, exit, out: () => stdout, err: () => stderr };
}

test("corral start prints its connect string, serves clients and exits 0 on Ctrl-C", async () => {
  const dir = await makeTempDir();
  try {
    const port = await freePort();
    const started = run(["start", "--client-port", String(port), "--data-dir", join(dir.path, "data")]);
    while (!started.out().includes("connect with")) {
      assert.equal(started.child.exitCode, null, started.err());
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.match(started.out(), new RegExp(`127\\.0\\.0\\.1:${port}`));
    const zk = await Client.connect(`127.0.0.1:${port}`);
    await zk.create("/hello", "world");
    await zk.close();
    started.child.kill("SIGINT");
    assert.equal(await started.exit, 0);
  } finally {
    await dir.remove();
  }
});

test("an invalid configuration exits with code 2 and names the field", async () => {
  const dir = await makeTempDir();
  try {
    const flag = run(["server", "--client-port", "not-a-port", "--data-dir", dir.path]);
    assert.equal(await flag.exit, 2);
    assert.match(flag.err(), /clientPort/);

    const file = join(dir.path, "corral.json");
    await writeFile(file, JSON.stringify({ serverId: 1, tickMs: 0, dataDir: dir.path }));
    const fromFile = run(["server", "--config", file]);
    assert.equal(await fromFile.exit, 2);
    assert.match(fromFile.err(), /tickMs/);

    await writeFile(file, JSON.stringify({ serverId: 1, sessionTimeout: 5 }));
    const unknown = run(["server", "--config", file]);
    assert.equal(await unknown.exit, 2);
    assert.match(unknown.err(), /sessionTimeout: unknown field/);

    const fromEnv = run(["server", "--data-dir", dir.path], { CORRAL_SERVER_ID: "999" });
    assert.equal(await fromEnv.exit, 2);
    assert.match(fromEnv.err(), /serverId/);
  } finally {
    await dir.remove();
  }
});
