/**
 * The documentation site builds: TypeDoc, as `npm run docs` runs it (typedoc.json), with every
 * warning an error — a link between pages to a missing file or anchor, or an exported name without
 * a doc comment, fails here and so fails `npm test`. Built into a temporary folder.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { makeTempDir } from "../helpers/temp-dir.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const TYPEDOC = join(ROOT, "node_modules", "typedoc", "bin", "typedoc");

let dir: Awaited<ReturnType<typeof makeTempDir>>;
before(async () => (dir = await makeTempDir("corral-docs-site-")));
after(async () => await dir?.remove());

test("npm run docs's TypeDoc build passes with warnings as errors: no broken link between pages, no undocumented export", { timeout: 300_000 }, async () => {
  const out = join(dir.path, "site");
  const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
    execFile(process.execPath, [TYPEDOC, "--out", out], { cwd: ROOT, timeout: 280_000, maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, output: stdout + stderr }),
    );
  });
  assert.equal(result.code, 0, result.output);
  for (const page of ["index.html", "documents/Getting_started.html", "documents/Recipes.Lock.html", "modules/embed.html", "classes/index.Client.html"]) {
    assert.ok(existsSync(join(out, page)), `the site has ${page}`);
  }
});
