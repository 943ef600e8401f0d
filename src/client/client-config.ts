/**
 * The options of `Client.connect` checked (BADARGUMENTS) and resolved into what a session runs
 * with: hosts in the order to try them, chroot, timeouts, the session to resume, the channels.
 */
import type * as grpc from "@grpc/grpc-js";
import { ZkError } from "../common/errors.js";
import { parseConnectString, shuffled, type HostPort } from "./connect-string.js";
import { grpcChannelSettings, type GrpcChannelSettings } from "./grpc-transport.js";
import type { ClientLogger, ConnectOptions, SaslOptions } from "./types.js";

export const DEFAULT_SESSION_TIMEOUT_MS = 10_000;

export interface ClientConfig {
  hosts: HostPort[];
  chroot: string | undefined;
  sessionTimeoutMs: number;
  connectTimeoutMs: number;
  sessionId: bigint;
  password: Uint8Array;
  canBeReadOnly: boolean;
  /** Shuffle the hosts of a connect string (this one's, and updateServerList's). */
  shuffleHosts: boolean;
  logger: ClientLogger | undefined;
  channel: GrpcChannelSettings;
  /** Make the members of the configuration in force the server list (ConnectOptions.followMembership). */
  followMembership: boolean;
  /** Log in with SASL on every connection (ConnectOptions.sasl). */
  sasl: SaslOptions | undefined;
}

const EMPTY_BYTES = new Uint8Array(0);

function positiveInteger(value: unknown, name: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0 || value > 0x7fffffff) {
    throw new ZkError("BADARGUMENTS", `${name} must be a positive integer number of ms, not ${String(value)}`);
  }
  return value;
}

export function configFrom(connectString: string, options: ConnectOptions & { credentials?: grpc.ChannelCredentials }): ClientConfig {
  const parsed = parseConnectString(connectString);
  const sessionTimeoutMs = positiveInteger(options.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS, "sessionTimeoutMs");
  const connectTimeoutMs = positiveInteger(options.connectTimeoutMs ?? sessionTimeoutMs, "connectTimeoutMs");
  if ((options.sessionId === undefined) !== (options.password === undefined)) {
    throw new ZkError("BADARGUMENTS", "resuming a session needs both sessionId and password");
  }
  if (options.sessionId !== undefined && (typeof options.sessionId !== "bigint" || BigInt.asIntN(64, options.sessionId) !== options.sessionId)) {
    throw new ZkError("BADARGUMENTS", "sessionId must be a bigint of 64 bits, as a session's id is");
  }
  if (options.password !== undefined && !(options.password instanceof Uint8Array)) {
    throw new ZkError("BADARGUMENTS", "password must be a Uint8Array");
  }
  if (options.canBeReadOnly !== undefined && typeof options.canBeReadOnly !== "boolean") throw new ZkError("BADARGUMENTS", "canBeReadOnly must be a boolean");
  if (options.followMembership !== undefined && typeof options.followMembership !== "boolean") {
    throw new ZkError("BADARGUMENTS", "followMembership must be a boolean");
  }
  if (options.tls !== undefined && options.credentials !== undefined) throw new ZkError("BADARGUMENTS", "give tls or credentials, not both");
  return {
    // Drawn here, as updateServerList's draws are in Client, so that the session machine stays deterministic.
    hosts: options.shuffleHosts === false ? parsed.hosts : shuffled(parsed.hosts, Math.random),
    chroot: parsed.chroot,
    sessionTimeoutMs,
    connectTimeoutMs,
    sessionId: options.sessionId ?? 0n,
    password: options.password ?? EMPTY_BYTES,
    canBeReadOnly: options.canBeReadOnly ?? false,
    shuffleHosts: options.shuffleHosts !== false,
    logger: options.logger,
    channel: grpcChannelSettings(options.tls, options.credentials),
    followMembership: options.followMembership ?? false,
    sasl: options.sasl === undefined ? undefined : checkSasl(options.sasl),
  };
}

/** SASL options a mechanism of this client takes; BADARGUMENTS otherwise. */
function checkSasl(sasl: SaslOptions): SaslOptions {
  if (typeof sasl !== "object" || sasl === null || (sasl.mechanism !== "DIGEST-MD5" && sasl.mechanism !== "GSSAPI")) {
    throw new ZkError("BADARGUMENTS", "sasl.mechanism must be DIGEST-MD5 or GSSAPI");
  }
  const name = (field: string, value: unknown): void => {
    if (value !== undefined && (typeof value !== "string" || value === "")) throw new ZkError("BADARGUMENTS", `sasl.${field} must be a non-empty string`);
  };
  name("serviceName", sasl.serviceName);
  if (sasl.mechanism === "DIGEST-MD5") {
    for (const field of ["username", "password"] as const) {
      if (typeof sasl[field] !== "string") throw new ZkError("BADARGUMENTS", `sasl.${field} must be a string`);
    }
    return { ...sasl };
  }
  for (const field of ["principal", "ticketCache", "keyTab", "serverPrincipal"] as const) name(field, sasl[field]);
  for (const field of ["useTicketCache", "useKeyTab"] as const) {
    if (sasl[field] !== undefined && typeof sasl[field] !== "boolean") throw new ZkError("BADARGUMENTS", `sasl.${field} must be a boolean`);
  }
  if (sasl.useTicketCache !== true && sasl.useKeyTab !== true) {
    throw new ZkError("BADARGUMENTS", "a GSSAPI login takes its tickets from a ticket cache (useTicketCache) or a keytab (useKeyTab)");
  }
  if (sasl.useKeyTab === true && sasl.useTicketCache !== true && sasl.principal === undefined) {
    throw new ZkError("BADARGUMENTS", "a GSSAPI login with a keytab alone names its principal");
  }
  return { ...sasl };
}
