/**
 * The fenced code blocks of the documentation (README.md, CONTRIBUTING.md, docs/), read as the doc
 * tests run them. A block is runnable when its info string says so after the language:
 *
 *   ```ts runnable             a complete TypeScript program, compiled and run against a cluster
 *   ```sh runnable             shell commands, run with bash against a cluster
 *   ```ts runnable root        (either language) run at the tree's root instead of a chroot of its own
 *   ```sh runnable background ready="TEXT"
 *                              (Getting started) a command left running, like `npm start` in a
 *                              terminal of its own; the next step waits until it printed TEXT
 *   ```js file=NAME            (Getting started) a file the reader creates: written to NAME
 *   ```text output             (Getting started) what the runnable block before it prints: each
 *                              line must appear in its output, "…" standing for any text
 *
 * Everything else (configuration files, transcripts, fragments) is shown, not run.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

export interface DocBlock {
  /** The file, relative to the repository root. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  language: string;
  /** The words after the language: `runnable`, `background`, `output`. */
  flags: Set<string>;
  /** key="value" or key=value attributes: `file`, `ready`. */
  attributes: Map<string, string>;
  text: string;
}

/** README.md, CONTRIBUTING.md and every Markdown file under docs/, relative to `root`. */
export function documentationFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir)
      .sort()
      .flatMap((name) => {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) return walk(path);
        return name.endsWith(".md") ? [path] : [];
      });
  return ["README.md", "CONTRIBUTING.md", ...walk(join(root, "docs")).map((path) => relative(root, path))];
}

const FENCE = /^(`{3,}|~{3,})(.*)$/;
const ATTRIBUTE = /^([a-z]+)=(?:"([^"]*)"|(\S+))/;

/** Splits an info string into its language, its bare words and its key=value attributes. */
function parseInfo(info: string): Pick<DocBlock, "language" | "flags" | "attributes"> {
  const flags = new Set<string>();
  const attributes = new Map<string, string>();
  let rest = info.trim();
  const language = /^\S*/.exec(rest)![0];
  rest = rest.slice(language.length).trim();
  while (rest.length > 0) {
    const attribute = ATTRIBUTE.exec(rest);
    if (attribute) {
      attributes.set(attribute[1]!, attribute[2] ?? attribute[3]!);
      rest = rest.slice(attribute[0].length).trim();
      continue;
    }
    const word = /^\S+/.exec(rest)![0];
    flags.add(word);
    rest = rest.slice(word.length).trim();
  }
  return { language, flags, attributes };
}

/** Every fenced block of one Markdown file, in order. An unclosed fence is an error. */
export function blocksOf(root: string, file: string): DocBlock[] {
  const lines = readFileSync(join(root, file), "utf8").split("\n");
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const fence = open[1]!;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !(lines[j]!.startsWith(fence) && lines[j]!.trim() === fence)) body.push(lines[j++]!);
    if (j === lines.length) throw new Error(`${file}:${i + 1}: a code fence is never closed`);
    blocks.push({ file, line: i + 1, ...parseInfo(open[2]!), text: body.join("\n") + "\n" });
    i = j;
  }
  return blocks;
}

/** A short name for a block in messages: docs/x.md:12. */
export function blockName(block: DocBlock): string {
  return `${block.file}:${block.line}`;
}

/**
 * Whether `output` shows each line of `expected` (blank lines ignored), in order; "…" in an
 * expected line matches any text.
 */
export function showsLines(output: string, expected: string): string | undefined {
  const lines = output.split("\n");
  let from = 0;
  for (const want of expected.split("\n").filter((line) => line.trim() !== "")) {
    const pattern = new RegExp(`^${want.split("…").map(escapeRegExp).join(".*")}$`);
    const found = lines.findIndex((line, index) => index >= from && pattern.test(line));
    if (found < 0) return want;
    from = found + 1;
  }
  return undefined;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
