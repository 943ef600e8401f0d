/**
 * The shape every offline tool command shares (backup, restore, import, export, data): flags from
 * a table (which --help lists, so none is accepted unlisted), switches that take no value, and
 * errors as one line on stderr with exit 2 when the input is at fault (a missing or wrong file, a
 * damaged backup, a data dir in use) and 1 when something else failed.
 */
import { ConfigError } from "../server/config-error.js";

/** flag → [value shown in the usage ("" for a switch), meaning]. */
export type FlagTable = Readonly<Record<string, readonly [string, string]>>;

export interface ToolIo {
  out: (text: string) => void;
  err: (text: string) => void;
}

export const processIo: ToolIo = { out: (t) => void process.stdout.write(t), err: (t) => void process.stderr.write(t) };

/**
 * `--name value` and `--name=value` pairs in order, `--name` alone for the flags `isSwitch` names
 * (their value "true"); `--help` or `-h` where a flag may stand asks for the usage.
 */
export function readFlags(args: readonly string[], isSwitch: (name: string) => boolean): { pairs: [string, string][]; help: boolean } {
  const pairs: [string, string][] = [];
  let help = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--help" || arg === "-h") {
      help = true;
      continue;
    }
    if (!arg.startsWith("--")) throw new ConfigError(arg, "unexpected argument");
    const [name, inline] = arg.slice(2).split("=", 2) as [string, string | undefined];
    if (isSwitch(name)) {
      if (inline !== undefined) throw new ConfigError(name, "takes no value");
      pairs.push([name, "true"]);
      continue;
    }
    const value = inline ?? args[++i];
    if (value === undefined) throw new ConfigError(name, "missing value");
    pairs.push([name, value]);
  }
  return { pairs, help };
}

/** readFlags with every flag checked against `table` (a value of "" there marks a switch). */
export function parseToolFlags(args: readonly string[], table: FlagTable): { flags: Record<string, string>; help: boolean } {
  const { pairs, help } = readFlags(args, (name) => {
    if (!Object.hasOwn(table, name)) throw new ConfigError(name, "unknown option");
    return table[name]![0] === "";
  });
  return { flags: Object.fromEntries(pairs), help };
}

/** The value of a flag the command cannot do without. */
export function required(flags: Record<string, string>, name: string): string {
  const value = flags[name];
  if (value === undefined || value === "") throw new ConfigError(name, "required");
  return value;
}

/** Errors whose fault is the input (the user can fix it): exit 2. Each has a `code` naming its kind. */
const INPUT_ERROR_CODES = new Set(["BACKUP_INVALID", "ZOOKEEPER_DATA_INVALID", "DATA_DIR_UNUSABLE", "MARSHALLINGERROR"]);

/** Runs a tool command; answers its exit code (0, 1 or 2) after printing any failure as one line. */
export async function runTool(command: string, io: ToolIo, body: () => Promise<void>): Promise<number> {
  try {
    await body();
    return 0;
  } catch (error) {
    const message = (error as Error).message?.replace(/\s*\n\s*/g, " ") ?? String(error);
    if (error instanceof ConfigError) {
      io.err(`corral ${command}: ${message.replace(/^invalid configuration: /, "--")}\n`);
      return 2;
    }
    if (INPUT_ERROR_CODES.has((error as { code?: string }).code ?? "")) {
      io.err(`corral ${command}: ${message}\n`);
      return 2;
    }
    io.err(`corral ${command}: ${message}\n`);
    return 1;
  }
}
