/**
 * The package as users get it: `npm pack`, the tarball installed into an empty project, then
 * `npx corral start`, `npx corral shell` and `import { Client } from "corral"` (ESM, and its types
 * under TypeScript's node16 resolution), and `corral/embed` running a cluster inside a user's script. Dependencies come from npm's cache where it has them
 * (`npm ci` filled it), the registry otherwise.
 */
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { freePort, portIsFree } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");
const NPM_QUIET = ["--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"];

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let project: string;

before(async () => {
  dir = await makeTempDir("corral-package-");
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", dir.path], { cwd: ROOT });
  const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  assert.ok(packed, "npm pack reported its tarball");
  assert.ok(
    packed.files.some((file) => file.path === "dist/src/console/static/index.html"),
    "the console's page is in the package",
  );
  assert.ok(
    packed.files.some((file) => file.path === "proto/client.proto"),
    "the wire contract is in the package",
  );
  assert.ok(!packed.files.some((file) => file.path.startsWith("dist/test/")), "tests are not shipped");
  project = join(dir.path, "app");
  await run("mkdir", ["-p", project]);
  await writeFile(join(project, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", private: true, type: "module" }));
  await run("npm", ["install", ...NPM_QUIET, join(dir.path, packed.filename)], { cwd: project, timeout: 300_000 });
});

after(async () => {
  await dir?.remove();
});

test("npx corral start serves, npx corral shell and an ESM import of the package talk to it, and the types resolve", { timeout: 180_000 }, async () => {
  const port = await freePort();
  const server = spawn("npx", ["--no-install", "corral", "start", "--client-port", String(port), "--data-dir", join(project, "data"), "--log-level", "warn"], {
    cwd: project,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let out = "";
  server.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  server.stderr.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  try {
    await waitFor("the standalone banner", () => (out.includes(`serving on 127.0.0.1:${port}`) ? true : undefined), 60_000);

    const shell = await run("npx", ["--no-install", "corral", "shell", "--connect", `127.0.0.1:${port}`, "create", "/from-shell", "hello"], { cwd: project });
    assert.match(shell.stdout, /Created \/from-shell/);

    const script = join(project, "use.mjs");
    await writeFile(
      script,
      `import { Client, op, ZkError } from "corral";\n` +
        `const zk = await Client.connect("127.0.0.1:${port}");\n` +
        `const { data } = await zk.getData("/from-shell");\n` +
        `await zk.multi([op.create("/from-esm", "x")]);\n` +
        `let code; try { await zk.create("/from-esm", ""); } catch (e) { code = e instanceof ZkError ? e.code : "not a ZkError"; }\n` +
        `console.log(JSON.stringify({ data: new TextDecoder().decode(data), code }));\n` +
        `await zk.close();\n`,
    );
    const esm = await run(process.execPath, [script], { cwd: project });
    assert.deepEqual(JSON.parse(esm.stdout), { data: "hello", code: "NODEEXISTS" });

    const typed = join(project, "typed.ts");
    await writeFile(
      typed,
      `import { Client, type Stat } from "corral";\n` +
        `export async function size(connectString: string): Promise<number> {\n` +
        `  const zk: Client = await Client.connect(connectString, { sessionTimeoutMs: 5_000 });\n` +
        `  const stat: Stat | null = await zk.exists("/");\n` +
        `  await zk.close();\n` +
        `  return stat?.numChildren ?? 0;\n` +
        `}\n` +
        `// @ts-expect-error: the SDK's types are checked, not any\n` +
        `export const wrong: string = Client.connect;\n`,
    );
    await run(
      process.execPath,
      [TSC, "--noEmit", "--strict", "--module", "node16", "--moduleResolution", "node16", "--target", "es2022", "--skipLibCheck", typed],
      { cwd: project },
    );
  } finally {
    try {
      process.kill(-server.pid!, "SIGINT");
    } catch {
      // already gone
    }
    await new Promise((resolve) => server.once("close", resolve));
  }
});

test(
  "corral/embed in a user's script: a three-member cluster starts, grants a lock, stops, and leaves no process, port or file behind",
  { timeout: 180_000 },
  async () => {
    // The script's temporary files go to a directory of its own, so that "nothing left" can be seen.
    const scratchTmp = join(project, "tmp");
    await mkdir(scratchTmp);
    const script = join(project, "embed.mjs");
    await writeFile(
      script,
      `import { startCluster } from "corral/embed";\n` +
        `import { Client, Lock } from "corral";\n` +
        `const cluster = await startCluster({ voters: 3 });\n` +
        `const ports = cluster.members.flatMap((m) => [m.connectString, m.zkConnectString]).map((a) => Number(a.split(":")[1]));\n` +
        `const zk = await Client.connect(cluster.connectString);\n` +
        `const lock = new Lock(zk, "/locks/embedded");\n` +
        `const token = await lock.acquire({ timeoutMs: 10_000 });\n` +
        `const holders = await zk.getChildren("/locks/embedded");\n` +
        `await lock.release();\n` +
        `await zk.close();\n` +
        `await cluster.stop();\n` +
        `console.log(JSON.stringify({ members: cluster.members.length, roles: cluster.members.map((m) => m.role), token: String(token), holders: holders.length, dataDir: cluster.dataDir, ports }));\n`,
    );
    // No process.exit in the script: it must end by itself, so every socket, timer and file handle is closed.
    const { stdout } = await run(process.execPath, [script], { cwd: project, timeout: 120_000, env: { ...process.env, TMPDIR: scratchTmp } });
    const result = JSON.parse(stdout) as { members: number; roles: string[]; token: string; holders: number; dataDir: string; ports: number[] };
    assert.equal(result.members, 3);
    assert.deepEqual(result.roles, ["participant", "participant", "participant"]);
    assert.ok(BigInt(result.token) > 0n, `a fencing token: ${result.token}`);
    assert.equal(result.holders, 1, "the lock node existed while held");
    assert.ok(result.dataDir.startsWith(scratchTmp), `the data lived under TMPDIR: ${result.dataDir}`);
    assert.deepEqual(await readdir(scratchTmp), [], "the data directory is removed");
    assert.equal(result.ports.length, 6);
    for (const port of result.ports) assert.ok(await portIsFree(port), `port ${port} is free again`);

    const typed = join(project, "embed-typed.ts");
    await writeFile(
      typed,
      `import { startServer, type EmbeddedServer } from "corral/embed";\n` +
        `export async function serve(): Promise<EmbeddedServer> {\n` +
        `  return startServer({ settings: { ttlNodesEnabled: true } });\n` +
        `}\n` +
        `// @ts-expect-error: settings are typed\n` +
        `export const wrong = () => startServer({ settings: { ttlNodesEnabled: "yes" } });\n`,
    );
    await run(
      process.execPath,
      [TSC, "--noEmit", "--strict", "--module", "node16", "--moduleResolution", "node16", "--target", "es2022", "--skipLibCheck", typed],
      { cwd: project },
    );
  },
);
