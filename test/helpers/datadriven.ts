/**
 * Scenario tests as scripts with golden output, side by side in one file under testdata/ (after
 * etcd's datadriven package). A file is a sequence of directives, each a command line, then a line
 * `----`, then the output that command must produce:
 *
 *     # comment lines, kept as they are
 *     start 1 2 3
 *     ----
 *     t=1 1 starts looking
 *
 * Output that holds a blank line is fenced by a doubled separator instead, and ends at the next
 * doubled separator:
 *
 *     states
 *     ----
 *     ----
 *     1 leading
 *
 *     2 following
 *     ----
 *     ----
 *
 * A command with no output still has its separator. Running a file hands every directive, in
 * order, to one handler that holds the scenario's state; the file is then rendered again with the
 * actual outputs and compared whole. With UPDATE_GOLDEN=1 the file is rewritten instead: review the
 * diff before committing it.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface Directive {
  /** The command line as written (trimmed). */
  readonly line: string;
  readonly command: string;
  readonly args: readonly string[];
  /** Where the command stands in its file, 1-based, for error messages. */
  readonly lineNumber: number;
}

interface Block {
  /** Comment and blank lines before the directive, kept verbatim. */
  readonly preamble: readonly string[];
  readonly directive: Directive;
  readonly expected: string;
}

interface ParsedFile {
  readonly blocks: readonly Block[];
  /** Comment and blank lines after the last directive. */
  readonly trailer: readonly string[];
}

const SEPARATOR = "----";

export function parseDataDriven(text: string, file = "<script>"): ParsedFile {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  const blocks: Block[] = [];
  let pending: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.trim() === "" || line.startsWith("#")) {
      pending.push(line);
      i += 1;
      continue;
    }
    const lineNumber = i + 1;
    const words = line.trim().split(/\s+/);
    i += 1;
    if (lines[i] !== SEPARATOR) throw new Error(`${file}:${lineNumber}: "${line}" is not followed by ${SEPARATOR}`);
    i += 1;
    const output: string[] = [];
    if (lines[i] === SEPARATOR) {
      i += 1;
      while (i < lines.length && !(lines[i] === SEPARATOR && lines[i + 1] === SEPARATOR)) output.push(lines[i++]!);
      if (i >= lines.length) throw new Error(`${file}:${lineNumber}: the output of "${line}" has no closing ${SEPARATOR} ${SEPARATOR}`);
      i += 2;
    } else {
      while (i < lines.length && lines[i]!.trim() !== "") output.push(lines[i++]!);
    }
    blocks.push({
      preamble: pending,
      directive: { line: line.trim(), command: words[0]!, args: words.slice(1), lineNumber },
      expected: output.join("\n"),
    });
    pending = [];
  }
  return { blocks, trailer: pending };
}

function render(parsed: ParsedFile, outputs: readonly string[]): string {
  const out: string[] = [];
  parsed.blocks.forEach((block, at) => {
    out.push(...block.preamble, block.directive.line, SEPARATOR);
    const output = outputs[at]!;
    const lines = output === "" ? [] : output.split("\n");
    if (lines.some((l) => l.trim() === "")) out.push(SEPARATOR, ...lines, SEPARATOR, SEPARATOR);
    else out.push(...lines);
  });
  out.push(...parsed.trailer);
  return out.join("\n") + "\n";
}

/**
 * Runs one golden file: `handle` answers each directive with its output (lines joined by "\n",
 * no trailing newline). Fails with the whole actual file beside the expected one, unless
 * UPDATE_GOLDEN=1, which rewrites the file.
 */
export function runDataDrivenFile(path: string, handle: (directive: Directive) => string): void {
  const text = readFileSync(path, "utf8");
  const parsed = parseDataDriven(text, path);
  const outputs = parsed.blocks.map((block) => {
    try {
      return handle(block.directive).replace(/\s+$/, "");
    } catch (error) {
      throw new Error(`${path}:${block.directive.lineNumber}: ${block.directive.line}: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
  });
  const actual = render(parsed, outputs);
  if (process.env.UPDATE_GOLDEN === "1") {
    if (actual !== text) writeFileSync(path, actual);
    return;
  }
  assert.equal(actual, text, `${path} differs from what the scenario produced (UPDATE_GOLDEN=1 rewrites it; review the diff)`);
}

/** The golden files of a testdata folder, by name without `.txt`, sorted. */
export function goldenFiles(dir: string): { name: string; path: string }[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith(".txt"))
    .sort()
    .map((name) => ({ name: name.slice(0, -".txt".length), path: join(dir, name) }));
}

/** The first comment line of a golden file without its `# `: what the scenario is about. */
export function aboutOf(path: string): string {
  const first = readFileSync(path, "utf8")
    .split("\n")
    .find((l) => l.startsWith("#"));
  return first === undefined ? "" : first.replace(/^#\s*/, "");
}

/** Integer arguments of a directive, each checked. */
export function intArgs(directive: Directive, from = 0): number[] {
  return directive.args.slice(from).map((a) => {
    const n = Number(a);
    if (!Number.isSafeInteger(n)) throw new Error(`"${a}" is not an integer`);
    return n;
  });
}
