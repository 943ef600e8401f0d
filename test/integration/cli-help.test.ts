/**
 * `--help` and `-h` on every command, run as a user runs them: the usage on stdout, exit 0, and it
 * lists exactly the flags the command's parser accepts — taken from the parser's own tables, and
 * each listed flag checked against the parser — so a flag cannot be added without its usage.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { CLUSTER_FLAGS, SHARED_FIELDS, parseClusterOptions } from "../../src/cli/cluster.js";
import { HEALTH_FLAGS } from "../../src/cli/health.js";
import { SHELL_FLAGS, parseShellArgs } from "../../src/cli/shell-commands.js";
import { FIELDS, flagName, loadConfig } from "../../src/server/config.js";
import { TOOL_COMMANDS } from "../../src/cli/tools.js";

const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, CORRAL_LOG_LEVEL: "warn" } });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The flags a usage lists as options: rows starting "  --flag", and "[--flag ...]" in a synopsis. */
function listedFlags(usage: string): Set<string> {
  const rows = [...usage.matchAll(/^ {2}--([a-z0-9-]+)/gm)].map((m) => m[1]!);
  const synopsis = [...usage.matchAll(/\[--([a-z0-9-]+)[ \]]/g)].map((m) => m[1]!);
  return new Set([...rows, ...synopsis]);
}

/** True unless the parser refuses `flag` as unknown (a refused value is fine: the flag is known). */
function accepts(parse: () => unknown): boolean {
  try {
    parse();
    return true;
  } catch (error) {
    return !/unknown option/.test((error as Error).message);
  }
}

const SERVER_FLAGS = ["config", ...Object.keys(FIELDS).map(flagName)];
const COMMANDS: Record<string, { accepted: string[]; parses: (flag: string) => boolean }> = {
  server: { accepted: SERVER_FLAGS, parses: (flag) => flag === "config" || accepts(() => loadConfig({ flags: { [flag]: "1" } })) },
  start: { accepted: SERVER_FLAGS, parses: (flag) => flag === "config" || accepts(() => loadConfig({ flags: { [flag]: "1" } })) },
  cluster: {
    accepted: [...Object.keys(CLUSTER_FLAGS), "config", ...SHARED_FIELDS.map(flagName)],
    parses: (flag) => flag === "config" || accepts(() => parseClusterOptions({ [flag]: "1" })),
  },
  health: { accepted: Object.keys(HEALTH_FLAGS), parses: (flag) => Object.hasOwn(HEALTH_FLAGS, flag) },
  shell: { accepted: Object.keys(SHELL_FLAGS), parses: (flag) => accepts(() => parseShellArgs([`--${flag}`, "1"])) },
  // The offline tools ("data dump" is two words): each parser reads its table.
  ...Object.fromEntries(
    Object.entries(TOOL_COMMANDS).map(([name, tool]) => [
      name,
      { accepted: Object.keys(tool.flags), parses: (flag: string) => Object.hasOwn(tool.flags, flag) },
    ]),
  ),
};

for (const [command, { accepted, parses }] of Object.entries(COMMANDS)) {
  test(`corral ${command} --help and -h print its usage with every flag it takes, and exit 0`, async () => {
    const words = command.split(" ");
    const help = await run([...words, "--help"]);
    assert.equal(help.code, 0, help.stderr);
    assert.equal(help.stderr, "");
    assert.match(help.stdout, new RegExp(`corral ${command} `));
    const listed = listedFlags(help.stdout);
    for (const flag of accepted) assert.ok(listed.has(flag), `corral ${command} --help lists --${flag}`);
    for (const flag of listed) assert.ok(parses(flag), `corral ${command} accepts --${flag}, which its usage lists`);
    assert.deepEqual(await run([...words, "-h"]), help);
    assert.deepEqual(await run(["help", ...words]), help);
  });
}

test("the cluster usage lists --zk-base-port, the base config and the members' shared settings, not the fields it sets", async () => {
  const { stdout } = await run(["cluster", "--help"]);
  for (const flag of [
    "zk-base-port",
    "config",
    "super-digest",
    "ttl-nodes-enabled",
    "enforce-quota",
    "four-letter-word-whitelist",
    "container-check-interval-ms",
    "container-max-per-minute",
  ]) {
    assert.match(stdout, new RegExp(`^ {2}--${flag} `, "m"), flag);
  }
  for (const flag of ["server-id", "client-port", "client-host", "zk-client-port", "servers"])
    assert.doesNotMatch(stdout, new RegExp(`^ {2}--${flag} `, "m"), flag);
});

test("corral --help, -h, help and no command print the overview naming every command; --help after other flags still wins", async () => {
  const overview = await run(["--help"]);
  assert.equal(overview.code, 0);
  for (const command of new Set([...Object.keys(COMMANDS).map((name) => name.split(" ")[0]!), "help"])) {
    assert.match(overview.stdout, new RegExp(`^ {2}${command} `, "m"), command);
  }
  for (const args of [["-h"], ["help"], []]) assert.deepEqual(await run(args), overview, args.join(" "));
  const late = await run(["server", "--client-port", "not-a-port", "--help"]);
  assert.equal(late.code, 0, late.stderr);
  assert.match(late.stdout, /^usage: corral server /);
  const unknown = await run(["help", "nope"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command nope/);
});

test("every usage names the documentation pages for its command, and each page (and anchor) exists", async () => {
  const root = fileURLToPath(new URL("../../../", import.meta.url));
  for (const command of [undefined, "server", "start", "cluster", "health", "shell", "backup", "restore", "import", "export", "data"]) {
    const { stdout } = await run(command === undefined ? ["--help"] : [command, "--help"]);
    const line = /^documentation: (.+)$/m.exec(stdout);
    assert.ok(line, `corral ${command ?? ""} --help names its documentation`);
    for (const target of line[1]!.split(", ")) {
      const [file, anchor] = target.split("#") as [string, string | undefined];
      const page = readFileSync(join(root, file), "utf8");
      if (anchor !== undefined) {
        const headings = [...page.matchAll(/^#+ (.+)$/gm)].map((m) =>
          m[1]!
            .toLowerCase()
            .replace(/[^a-z0-9 -]/g, "")
            .replace(/ /g, "-"),
        );
        assert.ok(headings.includes(anchor), `${file} has a heading for #${anchor}`);
      }
    }
  }
});
