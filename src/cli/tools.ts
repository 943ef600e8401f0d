/**
 * The offline tool commands, dispatched from main.ts: each one's flag table (what --help lists
 * and what the parser accepts) and the function that runs it.
 */
import { BACKUP_FLAGS, RESTORE_FLAGS, runBackup, runRestore } from "./backup.js";
import { DATA_DUMP_FLAGS, DATA_LOG_FLAGS, runDataDump, runDataLog } from "./data-inspect.js";
import { parseToolFlags, processIo, runTool, type FlagTable, type ToolIo } from "./tool-command.js";
import { EXPORT_FLAGS, IMPORT_FLAGS, runExport, runImport } from "./zookeeper-migration.js";

export interface ToolCommand {
  flags: FlagTable;
  run: (flags: Record<string, string>, io: ToolIo) => Promise<void>;
}

/** By the words that name them: "backup", …, "data dump", "data log". */
export const TOOL_COMMANDS: Readonly<Record<string, ToolCommand>> = {
  backup: { flags: BACKUP_FLAGS, run: runBackup },
  restore: { flags: RESTORE_FLAGS, run: runRestore },
  import: { flags: IMPORT_FLAGS, run: runImport },
  export: { flags: EXPORT_FLAGS, run: runExport },
  "data dump": { flags: DATA_DUMP_FLAGS, run: runDataDump },
  "data log": { flags: DATA_LOG_FLAGS, run: runDataLog },
};

/** Runs `corral <command> <args>` (for data, the first arg is the subcommand); answers the exit code. */
export async function runToolCommand(command: string, args: readonly string[], io: ToolIo = processIo): Promise<number> {
  let name = command;
  let rest = args;
  if (command === "data") {
    const sub = args[0];
    if (sub === "--help" || sub === "-h") {
      const { usage } = await import("./usage.js");
      io.out(`${usage("data")}\n`);
      return 0;
    }
    name = `data ${sub ?? ""}`.trim();
    rest = args.slice(1);
  }
  const tool = TOOL_COMMANDS[name];
  if (tool === undefined) {
    io.err(`corral ${name}: ${command === "data" ? "which? dump or log" : "unknown command"} (corral ${command} --help)\n`);
    return 2;
  }
  return runTool(name, io, async () => {
    const { flags, help } = parseToolFlags(rest, tool.flags);
    if (help) {
      const { usage } = await import("./usage.js");
      io.out(`${usage(name)}\n`);
      return;
    }
    await tool.run(flags, io);
  });
}
