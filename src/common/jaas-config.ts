/**
 * The JAAS login configuration file ZooKeeper reads (java.security.auth.login.config), so that an
 * existing deployment's file works unchanged:
 *
 *     Server {
 *       org.apache.zookeeper.server.auth.DigestLoginModule required
 *       user_super="adminsecret"
 *       user_bob="bobsecret";
 *     };
 *
 * Sections by name, each a list of login module entries: class, flag (required, requisite,
 * sufficient, optional) and `key=value` options, the value a word or a double-quoted string
 * (backslash escapes the next character). Comments as Java's parser takes them: `//`, `/* … *\/`
 * and `#` to the end of the line. Pure: parses text, reads no file.
 */

export type JaasFlag = "required" | "requisite" | "sufficient" | "optional";
const FLAGS: ReadonlySet<string> = new Set<JaasFlag>(["required", "requisite", "sufficient", "optional"]);

export interface JaasEntry {
  loginModule: string;
  flag: JaasFlag;
  /** In file order; a repeated key keeps its last value, as Java's option map does. */
  options: ReadonlyMap<string, string>;
}

/** Section name → its entries. */
export type JaasConfig = ReadonlyMap<string, readonly JaasEntry[]>;

export class JaasSyntaxError extends Error {
  constructor(message: string, line: number) {
    super(`JAAS configuration, line ${line}: ${message}`);
    this.name = "JaasSyntaxError";
  }
}

type Token = { kind: "word" | "string"; text: string; line: number } | { kind: "punct"; text: "{" | "}" | ";" | "="; line: number };

/** Throws JaasSyntaxError naming the line of the first thing it cannot read. */
export function parseJaasConfig(text: string): JaasConfig {
  const tokens = tokenize(text);
  const sections = new Map<string, JaasEntry[]>();
  let at = 0;
  const next = (): Token | undefined => tokens[at++];
  const lineOf = (): number => tokens[Math.min(at, tokens.length - 1)]?.line ?? 1;
  const expect = (punct: string, what: string): void => {
    const token = next();
    if (token?.kind !== "punct" || token.text !== punct) throw new JaasSyntaxError(`expected ${what}`, token?.line ?? lineOf());
  };
  while (at < tokens.length) {
    const name = next()!;
    if (name.kind !== "word") throw new JaasSyntaxError("expected a section name", name.line);
    if (sections.has(name.text)) throw new JaasSyntaxError(`section ${name.text} appears twice`, name.line);
    expect("{", `"{" after ${name.text}`);
    const entries: JaasEntry[] = [];
    for (;;) {
      const first = next();
      if (first === undefined) throw new JaasSyntaxError(`section ${name.text} is not closed`, lineOf());
      if (first.kind === "punct" && first.text === "}") break;
      if (first.kind !== "word") throw new JaasSyntaxError("expected a login module class", first.line);
      const flag = next();
      if (flag?.kind !== "word" || !FLAGS.has(flag.text.toLowerCase())) {
        throw new JaasSyntaxError(`expected required, requisite, sufficient or optional after ${first.text}`, flag?.line ?? first.line);
      }
      const options = new Map<string, string>();
      for (;;) {
        const key = next();
        if (key?.kind === "punct" && key.text === ";") break;
        if (key?.kind !== "word") throw new JaasSyntaxError(`expected an option or ";" in ${first.text}'s entry`, key?.line ?? flag.line);
        expect("=", `"=" after ${key.text}`);
        const value = next();
        if (value?.kind !== "word" && value?.kind !== "string") throw new JaasSyntaxError(`expected a value for ${key.text}`, value?.line ?? key.line);
        options.set(key.text, value.text);
      }
      entries.push({ loginModule: first.text, flag: flag.text.toLowerCase() as JaasFlag, options });
    }
    expect(";", `";" after section ${name.text}'s "}"`);
    sections.set(name.text, entries);
  }
  return sections;
}

/** Characters that end a word (Java's StreamTokenizer set up as ConfigFile does). */
const SPECIAL = new Set(["{", "}", ";", "=", '"']);

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let line = 1;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === "\n") {
      line += 1;
      i += 1;
    } else if (/\s/.test(c)) {
      i += 1;
    } else if (c === "#" || text.startsWith("//", i)) {
      while (i < text.length && text[i] !== "\n") i += 1;
    } else if (text.startsWith("/*", i)) {
      const end = text.indexOf("*/", i + 2);
      if (end < 0) throw new JaasSyntaxError("a comment is not closed", line);
      for (let k = i; k < end; k++) if (text[k] === "\n") line += 1;
      i = end + 2;
    } else if (c === '"') {
      const start = line;
      let value = "";
      i += 1;
      for (;;) {
        if (i >= text.length) throw new JaasSyntaxError("a quoted string is not closed", start);
        const d = text[i]!;
        if (d === '"') break;
        if (d === "\\" && i + 1 < text.length) {
          i += 1;
          value += text[i];
        } else {
          value += d;
        }
        if (text[i] === "\n") line += 1;
        i += 1;
      }
      i += 1;
      tokens.push({ kind: "string", text: value, line: start });
    } else if (SPECIAL.has(c)) {
      tokens.push({ kind: "punct", text: c as "{" | "}" | ";" | "=", line });
      i += 1;
    } else {
      let word = "";
      while (i < text.length && !SPECIAL.has(text[i]!) && !/\s/.test(text[i]!) && !text.startsWith("//", i) && !text.startsWith("/*", i)) {
        word += text[i];
        i += 1;
      }
      tokens.push({ kind: "word", text: word, line });
    }
  }
  return tokens;
}
