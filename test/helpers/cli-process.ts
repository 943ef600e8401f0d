/**
 * The shipped CLI (or another script) as a child process for tests, with its output collected,
 * and consecutive free port ranges for `corral cluster`'s base ports.
 */
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:net";
import { fileURLToPath } from "node:url";
import { TEST_PORT_MAX, TEST_PORT_MIN } from "./server-process.js";

export const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

/** Runs `script args` (logs at warn unless `env` says otherwise); its output is read as it comes. */
export function runScript(script: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [script, ...args], { env: { ...process.env, CORRAL_LOG_LEVEL: "warn", ...env } });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const exit = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  return { child, exit, out: () => stdout, err: () => stderr };
}

/** `corral shell ARGS` with `script` on stdin (dates in UTC); its exit code and output. */
export async function runShell(args: string[], script: string, env: Record<string, string> = {}) {
  const run = runScript(CLI, ["shell", ...args], { TZ: "UTC", ...env });
  run.child.stdin.end(script);
  const code = await run.exit;
  return { code, stdout: run.out(), stderr: run.err() };
}

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

/** The first of `count` consecutive ports, all free right now, none in `taken` (which gains them). */
export async function freeRange(count: number, taken: Set<number>): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const base = TEST_PORT_MIN + Math.floor(Math.random() * (TEST_PORT_MAX - TEST_PORT_MIN - count));
    const ports = Array.from({ length: count }, (_, i) => base + i);
    if (ports.some((p) => taken.has(p))) continue;
    const held: Server[] = [];
    try {
      for (const port of ports) held.push(await listen(port));
      for (const port of ports) taken.add(port);
      return base;
    } catch {
      // one of them is in use: try elsewhere
    } finally {
      await Promise.all(held.map((s) => new Promise((resolve) => s.close(resolve))));
    }
  }
  throw new Error("no free port range found");
}
