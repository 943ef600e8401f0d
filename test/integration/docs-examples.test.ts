/**
 * Every runnable code block of README.md, CONTRIBUTING.md and docs/ (see test/helpers/doc-blocks.ts
 * for the marks), run as a reader would run it against the `npm start` cluster — here a live
 * three-voter cluster started through corral/embed on free ports. TypeScript blocks are compiled
 * together with tsc (strict, NodeNext, importing the package by its name, as a user's project
 * does) and each is run as its own process; shell blocks run with bash, `corral` being the CLI.
 *
 * The pages name the `npm start` addresses (gRPC 127.0.0.1:2181-2183, ZooKeeper protocol
 * 127.0.0.1:2281-2283); each is rewritten to the live member's port, and each block gets a chroot
 * of its own (`/docs-N` appended to its connect strings), so blocks that use the same paths do not
 * meet — except blocks marked `root`, which need the real root (quotas live under /zookeeper/quota,
 * which a chroot would move). docs/getting-started.md is not run here: test/integration/getting-started.test.ts follows
 * it on a fresh clone.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { chmod, mkdir, rm, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { Client } from "../../src/index.js";
import { startCluster, type EmbeddedCluster } from "../../src/embed/index.js";
import { blockName, blocksOf, documentationFiles, type DocBlock } from "../helpers/doc-blocks.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");
/** Inside the package, so that `import … from "corral"` resolves to it by name (a package may import itself). */
const WORK = join(ROOT, "dist", `doc-blocks-${process.pid}`);
const RUN_TIMEOUT_MS = 60_000;
/** The settings the pages' examples rely on: TTL nodes, and the super user `super:test`. */
const SUPER_DIGEST = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";
/** The pages' addresses: member i (0-based) of the `npm start` cluster. */
const DOCUMENTED_GRPC_BASE = 2181;
const DOCUMENTED_ZK_BASE = 2281;
const CONNECT_STRING = /127\.0\.0\.1:\d+(?:,127\.0\.0\.1:\d+)*(\/[\w/.-]*)?/g;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: RUN_TIMEOUT_MS, killSignal: "SIGKILL", maxBuffer: 16 << 20, ...options }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : null;
      resolve({ code, stdout, stderr });
    });
  });
}

function runnableBlocks(): DocBlock[] {
  return documentationFiles(ROOT)
    .filter((file) => file !== "docs/getting-started.md")
    .flatMap((file) => blocksOf(ROOT, file))
    .filter((block) => block.flags.has("runnable"));
}

/** The block's text with the documented addresses made the live cluster's, every connect string under `chroot`. */
function forCluster(block: DocBlock, cluster: EmbeddedCluster, chroot: string): string {
  const portOf = (documented: number): number => {
    for (const [base, address] of [
      [DOCUMENTED_GRPC_BASE, (i: number) => cluster.members[i]?.connectString],
      [DOCUMENTED_ZK_BASE, (i: number) => cluster.members[i]?.zkConnectString],
    ] as const) {
      const live = address(documented - base);
      if (documented >= base && live !== undefined) return Number(live.split(":")[1]);
    }
    throw new Error(`${blockName(block)}: 127.0.0.1:${documented} is not an address of the npm start cluster`);
  };
  return block.text.replace(CONNECT_STRING, (whole: string, path: string | undefined) => {
    const hosts = whole.slice(0, whole.length - (path?.length ?? 0));
    const live = hosts
      .split(",")
      .map((host) => `127.0.0.1:${portOf(Number(host.split(":")[1]))}`)
      .join(",");
    return `${live}${chroot}${path ?? ""}`;
  });
}

/** A file name that says where the block is: docs/recipes/lock.md:12 → docs_recipes_lock_md_L12. */
function fileNameOf(block: DocBlock): string {
  return `${block.file.replace(/[^A-Za-z0-9]/g, "_")}_L${block.line}`;
}

/** Where tsc writes the program compiled from `source` (the outDir mirrors the repository). */
function compiledPath(source: string): string {
  return join(WORK, "out", relative(ROOT, source).replace(/\.ts$/, ".js"));
}

function compile(files: string[]): Promise<Run> {
  return run(process.execPath, [
    TSC,
    "--strict",
    "--noUncheckedIndexedAccess",
    "--module",
    "nodenext",
    "--moduleResolution",
    "nodenext",
    "--target",
    "es2022",
    "--types",
    "node",
    "--skipLibCheck",
    // The package's own root: tsc resolves `corral` to it through its exports map.
    "--rootDir",
    ROOT,
    "--outDir",
    join(WORK, "out"),
    // The declarations the repository's own tests use for untyped packages (node-zookeeper-client).
    join(ROOT, "test", "types", "node-zookeeper-client.d.ts"),
    ...files,
  ]);
}

describe("the documentation's runnable blocks against a live three-voter cluster", { timeout: 900_000 }, () => {
  let cluster: EmbeddedCluster;
  let admin: Client;
  const blocks = runnableBlocks();

  before(async () => {
    await rm(WORK, { recursive: true, force: true });
    await mkdir(join(WORK, "bin"), { recursive: true });
    // `corral` as a reader has it on the PATH (npx corral in a project, the image's /usr/local/bin/corral).
    const shim = join(WORK, "bin", "corral");
    await writeFile(shim, `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, "dist", "src", "cli", "main.js")}" "$@"\n`);
    await chmod(shim, 0o755);
    cluster = await startCluster({ voters: 3, settings: { ttlNodesEnabled: true, superDigest: SUPER_DIGEST, logLevel: "error" } });
    admin = await Client.connect(cluster.connectString);
  });

  after(async () => {
    await admin?.close();
    await cluster?.stop();
    await rm(WORK, { recursive: true, force: true });
  });

  test("every runnable TypeScript block compiles, and every runnable block runs to exit 0", async (t) => {
    const unknown = blocks.filter((block) => block.language !== "ts" && block.language !== "sh");
    assert.deepEqual(unknown.map(blockName), [], "runnable blocks are ts or sh");
    const chrootOf = new Map(blocks.map((block, index) => [block, block.flags.has("root") ? "" : `/docs-${index}`]));
    const typescript = blocks.filter((block) => block.language === "ts");
    const sources = typescript.map((block) => join(WORK, `${fileNameOf(block)}.ts`));
    await Promise.all(typescript.map((block, i) => writeFile(sources[i]!, forCluster(block, cluster, chrootOf.get(block)!))));
    const compiled = await compile(sources);
    assert.equal(compiled.code, 0, `tsc refused a block (file names say where: docs_x_md_L12 is docs/x.md:12):\n${compiled.stdout}${compiled.stderr}`);

    const failures: string[] = [];
    for (const block of blocks) {
      const chroot = chrootOf.get(block)!;
      if (chroot !== "") await admin.create(chroot, "");
      const result =
        block.language === "ts"
          ? await run(process.execPath, [compiledPath(join(WORK, `${fileNameOf(block)}.ts`))], { cwd: ROOT })
          : await run("bash", ["-euo", "pipefail", "-c", forCluster(block, cluster, chroot)], {
              cwd: ROOT,
              env: { ...process.env, PATH: `${join(WORK, "bin")}:${process.env["PATH"] ?? ""}`, CORRAL_LOG_LEVEL: "warn" },
            });
      if (result.code !== 0) failures.push(`${blockName(block)} exited ${result.code}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`);
    }
    assert.deepEqual(failures, []);
    const files = new Set(blocks.map((block) => block.file));
    t.diagnostic(`ran ${blocks.length} runnable blocks (${typescript.length} TypeScript, ${blocks.length - typescript.length} shell) from ${files.size} files`);
    assert.ok(blocks.length > 0, "the pages have runnable blocks");
  });

  test("a broken block fails the doc test: a call the SDK does not have is refused by tsc, a failing request exits non-zero", async () => {
    const broken = join(WORK, "broken_L1.ts");
    await writeFile(broken, `import { Client } from "corral";\nconst zk = await Client.connect("${cluster.connectString}");\nawait zk.getDataa("/");\n`);
    const refused = await compile([broken]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stdout, /broken_L1\.ts.*Property 'getDataa' does not exist/);

    const failing = join(WORK, "failing_L1.ts");
    await writeFile(
      failing,
      `import { Client } from "corral";\nconst zk = await Client.connect("${cluster.connectString}");\ntry { await zk.getData("/no/such/node"); } finally { await zk.close(); }\n`,
    );
    assert.equal((await compile([failing])).code, 0);
    const result = await run(process.execPath, [compiledPath(failing)], { cwd: ROOT });
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /NONODE/);
  });
});
