/**
 * The error every configuration source and check throws: it names the field (a flag, a variable,
 * `servers[2].host`), so that the operator knows what to fix. Kept on its own because both the
 * server's configuration (config.ts) and the servers list (cluster-servers.ts) read values with it.
 */

export class ConfigError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`invalid configuration: ${field}: ${message}`);
    this.name = "ConfigError";
  }
}

/** An integer from a JSON number or a string of one; anything else is a ConfigError for `field`. */
export function coerceInt(field: string, raw: unknown): number {
  const value = typeof raw === "string" && raw.trim() !== "" ? Number(raw) : raw;
  if (typeof value !== "number" || !Number.isSafeInteger(value)) throw new ConfigError(field, `expected an integer, got ${JSON.stringify(raw)}`);
  return value;
}
