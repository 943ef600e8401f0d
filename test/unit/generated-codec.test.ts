/**
 * gen/client.ts is generated from proto/client.proto (`npm run gen:proto`) and checked in. This
 * regenerates it into a temporary directory with the pinned ts-proto and buf, and fails when the
 * checked-in file differs: a .proto edited without regenerating, or a hand edit of generated code.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

test("gen/client.ts is what npm run gen:proto makes of proto/client.proto", () => {
  const out = mkdtempSync(join(tmpdir(), "corral-gen-check-"));
  try {
    const run = spawnSync(process.execPath, [join(ROOT, "proto", "generate.mjs"), out], { cwd: ROOT, encoding: "utf8" });
    assert.equal(run.status, 0, `proto/generate.mjs failed:\n${run.stderr}`);
    const fresh = readFileSync(join(out, "client.ts"), "utf8");
    const checkedIn = readFileSync(join(ROOT, "gen", "client.ts"), "utf8");
    assert.ok(fresh === checkedIn, "gen/client.ts is stale or was edited by hand: run `npm run gen:proto` and commit the result");
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test("the generated decoders carry corral's decoding policy: every lenient exit of ts-proto's was rewritten", () => {
  const text = readFileSync(join(ROOT, "gen", "client.ts"), "utf8");
  const messages = text.match(/^export const \w+: MessageFns<\w+> = \{$/gm)?.length ?? 0;
  assert.ok(messages >= 30, `expected the client protocol's messages, found ${messages}`);
  assert.equal(text.match(/throw new globalThis\.Error\("invalid tag"\)/g)?.length, messages);
  assert.equal(text.match(/throw new globalThis\.Error\("field runs past its message"\)/g)?.length, messages);
  const oneofMembers = text.match(/^ +message\.\w+ = \{ \$case: /gm)?.length ?? 0;
  assert.ok(oneofMembers >= 30, `expected the oneof members, found ${oneofMembers}`);
  assert.equal(text.match(/throw new globalThis\.Error\("a oneof with two members"\)/g)?.length, oneofMembers);
  assert.doesNotMatch(text, /tag === 0\) \{\n\s+break;/);
});
