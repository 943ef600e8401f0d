/**
 * The table of server settings in docs/operations/configuration.md, generated from the tables the
 * server and `corral --help` read: each field's value and meaning (src/cli/usage.ts's FIELD_HELP),
 * its default (src/server/config.ts), its flag and its CORRAL_* variable. `npm run docs` rewrites
 * the table in place; with `--check` it only fails when the page is stale (a unit test does too).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { FIELD_HELP } from "../../src/cli/usage.js";
import { formatServers } from "../../src/server/cluster-servers.js";
import { FIELDS, defaultConfig, envName, flagName, type ServerConfig } from "../../src/server/config.js";

export const PAGE = fileURLToPath(new URL("../../../docs/operations/configuration.md", import.meta.url));
const BEGIN = /<!-- configuration-fields:[^\n]*-->\n/;
const END = "<!-- end configuration-fields -->";

/** A default as the JSON file would hold it; derived ones (session timeouts) as --help says them. */
function shownDefault(field: keyof ServerConfig): string {
  const defaults: Partial<ServerConfig> = defaultConfig();
  const value = defaults[field];
  if (value === undefined) return "see meaning";
  if (Array.isArray(value)) return value.length === 0 ? "`[]` (standalone)" : `\`${formatServers(value)}\``;
  if (value === "") return "none";
  return `\`${JSON.stringify(value)}\``;
}

/** The generated Markdown table: one row per field of the configuration, in FIELDS' order. */
export function configurationTable(): string {
  const rows = (Object.keys(FIELDS) as (keyof ServerConfig)[]).map((field) => {
    const [value, meaning] = FIELD_HELP[field];
    const cell = (text: string): string => text.replaceAll("|", "\\|").replaceAll("<", "&lt;");
    return `| \`${field}\` | \`--${flagName(field)} ${cell(value)}\`, \`${envName(field)}\` | ${shownDefault(field)} | ${cell(meaning)} |`;
  });
  return ["| field | flag, variable | default | meaning |", "|---|---|---|---|", ...rows].join("\n") + "\n";
}

/** The page with its generated table replaced by `table`. */
export function withTable(page: string, table: string): string {
  const begin = BEGIN.exec(page);
  const end = page.indexOf(END);
  if (!begin || end < begin.index) throw new Error(`${PAGE}: the configuration-fields markers are missing`);
  return page.slice(0, begin.index + begin[0].length) + table + page.slice(end);
}

function main(check: boolean): void {
  const page = readFileSync(PAGE, "utf8");
  const updated = withTable(page, configurationTable());
  if (updated === page) return;
  if (check) {
    process.stderr.write(`${PAGE} is stale: npm run docs regenerates its configuration table\n`);
    process.exit(1);
  }
  writeFileSync(PAGE, updated);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main(process.argv.includes("--check"));
