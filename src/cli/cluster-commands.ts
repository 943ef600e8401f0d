/**
 * The commands a running `corral cluster` reads from its stdin, one a line: grow and shrink the
 * cluster live, list its members. Read one at a time, in order; a line typed while one runs waits.
 * The end of stdin only ends the commands: the cluster keeps running until SIGINT/SIGTERM (so it
 * may run without a terminal, e.g. under npm start with stdin closed).
 */
import type { MemberRole } from "../common/membership.js";
import { createInterface } from "node:readline";
import { SERVER_ID_MAX } from "./cluster-membership.js";

export type ClusterCommand = { name: "add"; role: MemberRole } | { name: "remove"; id: number } | { name: "members" } | { name: "help" };

/** A command line the launcher cannot run as typed; the cluster carries on. */
export class ClusterCommandError extends Error {
  constructor(
    readonly command: string,
    message: string,
    /** The change may or may not have happened (its answer was lost): nothing is undone. */
    readonly unknownOutcome = false,
  ) {
    super(message);
    this.name = "ClusterCommandError";
  }
}

export const COMMAND_HELP: readonly (readonly [string, string])[] = [
  ["add [participant|observer]", "start a server with the next id and ports, then reconfig it in (a participant by default)"],
  ["remove ID", "reconfig server ID out, then stop it (its data stays in DIR/ID)"],
  ["members", "the members, their roles and ports, and the configuration version in force"],
  ["help", "this list"],
];

export function commandHelp(): string {
  const width = Math.max(...COMMAND_HELP.map(([synopsis]) => synopsis.length));
  return COMMAND_HELP.map(([synopsis, meaning]) => `  ${synopsis.padEnd(width)}  ${meaning}\n`).join("");
}

/** One line → a command; undefined for a blank line or a comment (#). */
export function parseClusterCommand(line: string): ClusterCommand | undefined {
  const words = line.trim().split(/\s+/);
  const [name = "", ...args] = words;
  if (name === "" || name.startsWith("#")) return undefined;
  const arity = (max: number) => {
    if (args.length > max) throw new ClusterCommandError(name, `unexpected ${JSON.stringify(args[max])} (try help)`);
  };
  switch (name) {
    case "add": {
      arity(1);
      const role = args[0] ?? "participant";
      if (role !== "participant" && role !== "observer") throw new ClusterCommandError(name, `expected participant or observer, got ${JSON.stringify(role)}`);
      return { name, role };
    }
    case "remove": {
      arity(1);
      const text = args[0];
      if (text === undefined) throw new ClusterCommandError(name, "which server? remove ID (members lists them)");
      const id = /^\d{1,3}$/.test(text) ? Number(text) : NaN;
      if (!(id >= 1 && id <= SERVER_ID_MAX))
        throw new ClusterCommandError(name, `expected a server id within [1, ${SERVER_ID_MAX}], got ${JSON.stringify(text)}`);
      return { name, id };
    }
    case "members":
    case "help":
      arity(0);
      return { name };
    default:
      throw new ClusterCommandError(name, `unknown command ${JSON.stringify(name)} (try help)`);
  }
}

/**
 * Reads commands from `input` and runs each with `run`, one after another, until `input` ends or
 * `stop()` is called. A failure of one is reported by `report` and the next is read.
 */
export function readCommands(
  input: NodeJS.ReadableStream,
  run: (command: ClusterCommand) => Promise<void>,
  report: (error: unknown) => void,
  /** The input ended (not stop()): said once, since the cluster keeps running without commands. */
  ended: () => void,
): { stop: () => void; done: Promise<void> } {
  let stopped = false;
  const lines = createInterface({ input, crlfDelay: Infinity, terminal: false });
  // An unreadable stdin (closed underneath us, say) ends the commands, not the cluster.
  input.on("error", () => lines.close());
  const done = (async () => {
    try {
      for await (const line of lines) {
        try {
          const command = parseClusterCommand(line);
          if (command !== undefined) await run(command);
        } catch (error) {
          report(error);
        }
      }
    } catch (error) {
      report(error);
    }
    if (!stopped) ended();
  })();
  return {
    stop: () => {
      stopped = true;
      lines.close();
    },
    done,
  };
}
