/**
 * docs/architecture.md §2 as a test: the arrows between folders go one way, and the deterministic core
 * (src/store outside disk, src/election, src/consensus, src/replica) touches no clock, randomness,
 * socket, timer or file — nor does the SDK's session machine, which a simulator can run as the
 * real client.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const SRC = join(ROOT, "src");

function sourceFiles(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith(".ts") ? [path] : [];
  });
}

function imports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:import|export)[^"']*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g)].map((m) => (m[1] ?? m[2])!);
}

/** The folder under src/ an import lands in ("store/disk" kept apart from "store"), or "gen". */
function layerOf(file: string): string {
  // gen/ beside src/: the codec generated from proto/client.proto, a layer of its own.
  if (!relative(join(ROOT, "gen"), file).startsWith("..")) return "gen";
  const rel = relative(SRC, file).split("/");
  if (rel[0] === "store" && rel[1] === "disk") return "store/disk";
  return rel.length === 1 ? "index" : rel[0]!;
}

const ALLOWED: Record<string, string[]> = {
  common: ["common"],
  protocol: ["common", "gen", "protocol"],
  store: ["common", "store"],
  "store/disk": ["common", "store", "store/disk"],
  election: ["common", "store", "election"],
  consensus: ["common", "store", "consensus"],
  client: ["common", "gen", "protocol", "client"],
  recipes: ["common", "client", "recipes", "index"],
  // The whole server minus its I/O: what production and the simulator both run.
  replica: ["common", "store", "election", "consensus", "replica"],
  // The runtime: the replica's ports over gRPC, LevelDB, files and timers, and the process around it.
  server: ["common", "gen", "protocol", "store", "store/disk", "election", "consensus", "replica", "server"],
  // The web console is an application of the SDK that the admin port hosts: the CLI composes it
  // into the server (ServerHooks.adminExtension), so the server never depends on the client.
  console: ["common", "client", "server", "console"],
  // ZooKeeper's own data files (snapshots, txn logs) read and written for import and export; the
  // jute codec it shares with the ZooKeeper port lives in server/zk-wire.
  "zookeeper-data": ["common", "store", "store/disk", "server", "zookeeper-data"],
  cli: ["common", "protocol", "server", "cli", "client", "console", "index", "store", "store/disk", "zookeeper-data"],
  index: ["common", "client", "recipes"],
  // corral/embed: servers hosted in the caller's process, for tests and examples.
  embed: ["common", "server", "embed"],
};

test("imports between src folders follow the architecture's arrows", () => {
  const violations: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const from = layerOf(file);
    for (const spec of imports(file)) {
      if (!spec.startsWith(".")) continue;
      const target = layerOf(join(file, "..", spec));
      if (!(ALLOWED[from] ?? []).includes(target)) violations.push(`${relative(ROOT, file)} (${from}) imports ${spec} (${target})`);
    }
  }
  assert.deepEqual(violations, []);
});

const CORE_FORBIDDEN: [RegExp, string][] = [
  [/\bDate\.now\b|\bnew Date\(/, "a clock"],
  [/\bMath\.random\b|randomBytes|randomUUID|getRandomValues/, "randomness"],
  [/\bsetTimeout\b|\bsetInterval\b|\bsetImmediate\b|\bprocess\.hrtime\b|\bperformance\.now\b/, "timers"],
];
const CORE_FORBIDDEN_IMPORTS =
  /^(node:)?(fs|fs\/promises|net|dgram|http|https|http2|child_process|worker_threads|timers|crypto)$|^@grpc\/|^level$|^classic-level$/;

function nondeterminism(files: string[]): string[] {
  const violations: string[] = [];
  for (const file of files) {
    const code = readFileSync(file, "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");
    for (const [pattern, what] of CORE_FORBIDDEN) if (pattern.test(code)) violations.push(`${relative(ROOT, file)} uses ${what}`);
    for (const spec of imports(file)) if (CORE_FORBIDDEN_IMPORTS.test(spec)) violations.push(`${relative(ROOT, file)} imports ${spec}`);
  }
  return violations;
}

test("the deterministic core reads no clock, draws no random number, sets no timer and does no I/O", () => {
  const core = [join(SRC, "store"), join(SRC, "election"), join(SRC, "consensus"), join(SRC, "replica")];
  const files = core.flatMap(sourceFiles).filter((f) => layerOf(f) !== "store/disk");
  assert.ok(files.length > 0, "the core has source files to check");
  assert.deepEqual(nondeterminism(files), []);
});

/** Imports that exist when the module runs (`import type` and `export type` are erased). */
function runtimeImports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/^(?:import|export)\s+(?!type\s)[^"';]*?from\s*["']([^"']+)["']/gm)].map((m) => m[1]!);
}

/** `entries` and every source file they run, following relative imports. */
function withRuntimeImports(entries: string[]): string[] {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const spec of runtimeImports(file)) if (spec.startsWith(".")) visit(join(file, "..", spec.replace(/\.js$/, ".ts")));
  };
  entries.forEach(visit);
  return [...seen];
}

test("the SDK's session machine, and every module it runs, reads no clock, draws no random number, sets no timer and does no I/O", () => {
  const machine = [join(SRC, "client", "session-machine.ts"), join(SRC, "client", "session-io.ts")];
  const files = withRuntimeImports(machine);
  assert.ok(files.includes(join(SRC, "client", "fifo.ts")), "the machine's own imports are followed");
  assert.deepEqual(nondeterminism(files), []);
});
