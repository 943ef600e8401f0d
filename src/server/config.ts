/**
 * Server configuration: one typed, validated object. Sources, later ones winning: defaults, a
 * JSON file (`--config`), environment variables (CORRAL_<FIELD> in upper snake case, for
 * containers), command-line flags (--field-name). Anything invalid is a ConfigError naming the field.
 */
import { readFileSync } from "node:fs";
import { limits } from "../common/constants.js";

export interface ServerConfig {
  /** 1..254, unique in a cluster (ZooKeeper's myid; 255 would collide with TTL owner tags). */
  serverId: number;
  dataDir: string;
  clientHost: string;
  clientPort: number;
  /** ZooKeeper's tickTime: the unit of session timeouts and, later, of initLimit/syncLimit. */
  tickMs: number;
  minSessionTimeoutMs: number;
  maxSessionTimeoutMs: number;
  /** Take a snapshot after this many applied txns. */
  snapshotEveryTxns: number;
  /** Snapshots kept on disk; log records older than the oldest kept one are purged. */
  snapshotRetainCount: number;
  ttlNodesEnabled: boolean;
  logLevel: string;
}

export class ConfigError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`invalid configuration: ${field}: ${message}`);
    this.name = "ConfigError";
  }
}

type FieldKind = "int" | "string" | "bool";
const FIELDS: Record<keyof ServerConfig, FieldKind> = {
  serverId: "int",
  dataDir: "string",
  clientHost: "string",
  clientPort: "int",
  tickMs: "int",
  minSessionTimeoutMs: "int",
  maxSessionTimeoutMs: "int",
  snapshotEveryTxns: "int",
  snapshotRetainCount: "int",
  ttlNodesEnabled: "bool",
  logLevel: "string",
};

const LOG_LEVELS = new Set(["fatal", "error", "warn", "info", "debug", "trace", "silent"]);

export function defaultConfig(): Omit<ServerConfig, "minSessionTimeoutMs" | "maxSessionTimeoutMs"> {
  return {
    serverId: 1,
    dataDir: "./data",
    clientHost: "127.0.0.1",
    clientPort: 2181,
    tickMs: 2000,
    snapshotEveryTxns: 100_000,
    snapshotRetainCount: 3,
    ttlNodesEnabled: false,
    logLevel: "info",
  };
}

/** kebab-case flag or UPPER_SNAKE env name → field name. */
function fieldFromFlag(flag: string): keyof ServerConfig | undefined {
  const camel = flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
  return camel in FIELDS ? (camel as keyof ServerConfig) : undefined;
}
function envName(field: string): string {
  return "CORRAL_" + field.replace(/[A-Z]/g, (c) => "_" + c).toUpperCase();
}

function coerce(field: keyof ServerConfig, raw: unknown): unknown {
  const kind = FIELDS[field];
  if (kind === "int") {
    const value = typeof raw === "string" && raw.trim() !== "" ? Number(raw) : raw;
    if (typeof value !== "number" || !Number.isSafeInteger(value)) throw new ConfigError(field, `expected an integer, got ${JSON.stringify(raw)}`);
    return value;
  }
  if (kind === "bool") {
    if (raw === true || raw === "true") return true;
    if (raw === false || raw === "false") return false;
    throw new ConfigError(field, `expected true or false, got ${JSON.stringify(raw)}`);
  }
  if (typeof raw !== "string") throw new ConfigError(field, `expected a string, got ${JSON.stringify(raw)}`);
  return raw;
}

export interface ConfigSources {
  file?: string;
  /** Parsed flags: kebab-case name → value. */
  flags?: Record<string, string>;
  env?: NodeJS.ProcessEnv;
}

export function loadConfig(sources: ConfigSources): ServerConfig {
  const merged: Record<string, unknown> = { ...defaultConfig() };
  if (sources.file) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(sources.file, "utf8"));
    } catch (error) {
      throw new ConfigError("config", `cannot read ${sources.file}: ${(error as Error).message}`);
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new ConfigError("config", "the file must hold a JSON object");
    for (const [key, value] of Object.entries(parsed)) {
      if (!(key in FIELDS)) throw new ConfigError(key, "unknown field");
      merged[key] = coerce(key as keyof ServerConfig, value);
    }
  }
  const env = sources.env ?? {};
  for (const field of Object.keys(FIELDS) as (keyof ServerConfig)[]) {
    const value = env[envName(field)];
    if (value !== undefined) merged[field] = coerce(field, value);
  }
  for (const [flag, value] of Object.entries(sources.flags ?? {})) {
    const field = fieldFromFlag(flag);
    if (!field) throw new ConfigError(flag, "unknown option");
    merged[field] = coerce(field, value);
  }
  const tickMs = merged["tickMs"] as number;
  merged["minSessionTimeoutMs"] ??= tickMs * limits.sessionTimeoutTicksMin;
  merged["maxSessionTimeoutMs"] ??= tickMs * limits.sessionTimeoutTicksMax;
  return validateConfig(merged as unknown as ServerConfig);
}

export function validateConfig(config: ServerConfig): ServerConfig {
  const range = (field: keyof ServerConfig, min: number, max: number): void => {
    const value = config[field] as number;
    if (value < min || value > max) throw new ConfigError(field, `must be within [${min}, ${max}], got ${value}`);
  };
  range("serverId", 1, 254);
  range("clientPort", 0, 65535);
  range("tickMs", 1, 60_000);
  range("snapshotEveryTxns", 1, 100_000_000);
  range("snapshotRetainCount", 1, 1000);
  range("minSessionTimeoutMs", 1, config.maxSessionTimeoutMs);
  range("maxSessionTimeoutMs", config.minSessionTimeoutMs, 24 * 3600 * 1000);
  if (config.dataDir.trim() === "") throw new ConfigError("dataDir", "must not be empty");
  if (config.clientHost.trim() === "") throw new ConfigError("clientHost", "must not be empty");
  if (!LOG_LEVELS.has(config.logLevel)) throw new ConfigError("logLevel", `one of ${[...LOG_LEVELS].join(", ")}`);
  return config;
}
