import { pino, type Logger } from "pino";

export type { Logger };

/**
 * Structured logs, one line per event that matters, on stderr (stdout is left to what the CLI
 * prints for people). CORRAL_LOG_LEVEL overrides the level; tests set it to "silent" or "warn".
 */
export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  return pino({ level: process.env["CORRAL_LOG_LEVEL"] ?? level, base: { pid: process.pid, ...bindings } }, pino.destination(2));
}
