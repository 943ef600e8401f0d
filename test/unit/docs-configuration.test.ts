/**
 * docs/operations/configuration.md's table of settings is the generated one: a field added to the
 * configuration (with its --help line) without `npm run docs` fails here.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { FIELDS } from "../../src/server/config.js";
import { configurationTable, PAGE, withTable } from "../../scripts/docs/configuration-reference.js";

test("the configuration page lists every server setting, as npm run docs generates it", () => {
  const page = readFileSync(PAGE, "utf8");
  assert.equal(page, withTable(page, configurationTable()), "docs/operations/configuration.md is stale: run npm run docs");
  for (const field of Object.keys(FIELDS)) assert.match(page, new RegExp(`^\\| \`${field}\` \\|`, "m"));
});
